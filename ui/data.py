"""The Data tab: upload items / predictions / labels, read the validation report, then commit; export
items, predictions, metrics and labels (SPEC §3, §8, §11).

Validate runs the real importer as a dry run (db/validate.py: the same rules, rolled back), so the report
names every bad line before anything is written; Import runs the importer for real, which re-checks the
file and writes all of it or nothing. Upload size is capped by `max_file_size` in ui/shell.py.
"""

from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path
from typing import Any

import gradio as gr

from core.errors import CrosscheckError, ImportRefused
from core.report import Report
from core.scoring import score_run
from db import importers, validate
from db import labels as dbl
from db.catalog import catalog_signature
from db.exporters import PRED_EXPORT_FIELDS, item_records, prediction_records, write_records
from db.store import Store
from ui.context import Ctx, benchmark_choices, keep, refreshed, run_choices
from ui.handlers import bind
from ui.tables import safe_name
from ui.templating import macro, style

KINDS = [("Items (benchmark JSONL or zip)", "items"), ("Predictions (JSONL or CSV) into a run", "predictions"),
         ("Stage labels (JSONL) for a run's traces", "labels"),
         ("A log or a zipped folder (Inspect .eval, VLMEvalKit outputs, lmms-eval output), opened as app.py open "
          "opens a path", "open")]
EXPORTS = [("Items (JSONL)", "items-jsonl"), ("Items (CSV)", "items-csv"), ("Predictions of a run (JSONL)",
           "predictions-jsonl"), ("Predictions of a run (CSV)", "predictions-csv"),
           ("Metrics of a run (score --json)", "metrics"), ("Stage labels of a run (JSONL)", "labels")]

CSS = """
.cc-report { font-size: 0.88rem; }
.cc-report .cc-ok { color: #2d7a45; font-weight: 600; }
.cc-report .cc-bad { color: #b8423a; font-weight: 600; }
.cc-report table { border-collapse: collapse; margin-top: 6px; }
.cc-report td, .cc-report th { padding: 2px 10px; border-bottom: 1px solid #e4e4e4; text-align: left;
  vertical-align: top; }
.cc-report td.cc-line { font-variant-numeric: tabular-nums; text-align: right; }
.cc-report tr.cc-error td:first-child { color: #b8423a; }
.cc-report tr.cc-warning td:first-child { color: #a07a1f; }
"""


def report_html(report: Report, title: str, committed: bool = False, limit: int = 200, file: str = "") -> str:
    """The validation report: a verdict line, counts, then every error and warning with its line number. The
    verdict says what it is of (data-file, data-committed: a dry run or the import), so a verdict left from an
    earlier step is never read as this one's."""
    errs = sorted(report.errors, key=lambda i: i.line)
    issues = [*errs, *sorted(report.warnings, key=lambda i: i.line)]
    return macro("data.html", "report")(
        title=title, file=file, committed=int(committed), errors=len(errs),
        counts=", ".join(f"{k}: {v}" for k, v in (report.counts or {}).items()),
        issues=[(i.severity, i.line or "—", i.field, i.message, i.file) for i in issues[:limit]],
        more=len(issues) - limit)


def _path(upload: Any) -> Path:
    if upload is None:
        raise CrosscheckError("choose a file to upload first")
    return Path(upload if isinstance(upload, str) else getattr(upload, "name", upload))


def _config(text: str | None) -> dict[str, Any] | None:
    if not text or not text.strip():
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CrosscheckError(f"run settings: not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(value, dict):
        raise CrosscheckError("run settings: expected a JSON object, e.g. {\"input_mode\": \"text\"}")
    return value


def dry_run(store: Store, kind: str, path: Path, name: str, run: str, model: str, bench: str | None,
            config: str) -> Report:
    if kind == "open":  # each file of it is checked as it is opened, one transaction a file
        report = Report()
        report.warn(path.name, 0, "(file)", "a log or folder is checked file by file as it is opened: press Import")
        return report
    if kind == "items":
        return validate.validate_items(store, path, name.strip() or None)
    if not run.strip():
        raise CrosscheckError("name the run the file belongs to")
    if kind == "predictions":
        return validate.validate_predictions(store, path, run.strip(), model=model.strip() or None,
                                             config=_config(config), benchmark=bench or None)
    return validate.validate_labels(store, path, run.strip())


def commit(store: Store, kind: str, path: Path, name: str, run: str, model: str, bench: str | None,
           config: str) -> tuple[Report, str]:
    """Import for real; returns the report and the benchmark the header should show."""
    if kind == "open":
        return opened(store, path, bench)
    if kind == "items":
        result = importers.import_items(store, path, name=name.strip() or None)
        return result.report, result.target
    if kind == "predictions":
        result = importers.import_predictions(store, path, run.strip(), model=model.strip() or None,
                                              config=_config(config), benchmark=bench or None)
        return result.report, store.run(run.strip())["benchmark"]
    result = importers.import_labels(store, path, run.strip())
    return result.report, store.run(run.strip())["benchmark"]


def opened(store: Store, path: Path, bench: str | None) -> tuple[Report, str]:
    """`app.py open` on a dropped log or zipped folder (db.open): the report lists each refused and each skipped
    file with its reason (the others are imported all the same, one transaction a file); the header shows the
    first benchmark it made or used. Refused when nothing in it was imported."""
    from db.open import open_paths

    result = open_paths(store, [path], progress=False)
    report = Report(counts={"benchmarks": len(result.benchmarks), "runs": len(result.runs),
                            "skipped": len(result.skipped), "refused": len(result.refused)})
    for r in result.refused:
        report.warn(r["path"], 0, "(file)", f"refused, nothing of it written: {r['reason']}")
    for s in result.skipped:
        report.warn(s["path"], 0, "(file)", f"skipped: {s['reason']}")
    for w in result.warnings:  # e.g. a cancelled eval's log: what it held was imported
        report.warn(path.name, 0, "(note)", w)
    target = next((b["name"] for b in result.benchmarks), None) or next((r["benchmark"] for r in result.runs), None)
    if target is None:
        failed = Report()
        for issue in report.warnings:
            failed.error(issue.file, 0, issue.field, issue.message)
        if not failed.errors:
            failed.error(path.name, 0, "(file)", "nothing in it was recognized")
        raise ImportRefused(failed.summary(), failed)
    return report, target


def export_file(store: Store, what: str, bench: str | None, run: str | None) -> Path:
    """Write one export to a fresh temporary file and return its path."""
    out = Path(tempfile.mkdtemp(prefix="crosscheck-export-"))
    buf = io.StringIO()
    if what.startswith("items"):
        if not bench:
            raise CrosscheckError("pick a benchmark in the header first")
        fmt = what.split("-")[1]
        write_records(item_records(store, bench), buf, fmt)
        target = out / f"{safe_name(bench)}_items.{fmt}"
    else:
        if not run:
            raise CrosscheckError("pick the run to export")
        if what.startswith("predictions"):
            fmt = what.split("-")[1]
            write_records(prediction_records(store, run), buf, fmt, PRED_EXPORT_FIELDS)
            target = out / f"{safe_name(run)}_predictions.{fmt}"
        elif what == "metrics":
            rd = store.run_data(run)
            items = store.items_frame(rd.benchmark)
            others = [store.run_data(r["name"]) for r in store.runs(rd.benchmark) if r["name"] != run]
            buf.write(json.dumps(score_run(items, rd, others), ensure_ascii=False, indent=2) + "\n")
            target = out / f"{safe_name(run)}_metrics.json"
        else:
            recs = list(dbl.records(store, run))
            if not recs:
                raise CrosscheckError(f"run {run!r} has no stage labels yet")
            write_records(iter(recs), buf, "jsonl")
            target = out / f"{safe_name(run)}_labels.jsonl"
    target.write_text(buf.getvalue(), encoding="utf-8")
    return target


def header_after_import(store: Store, target: str, bench: str | None, selected: list[str] | None,
                        new_run: str | None) -> tuple[Any, Any]:
    """The header after an import into benchmark `target`: it shows `target`; when that is the benchmark
    already shown, the selected runs stay and an imported run joins them (on another benchmark the header's
    own change handler picks that benchmark's runs). Every value is one of its picker's choices."""
    runs = run_choices(store, target)
    names = [v for _, v in runs]
    if target == bench:
        value = [r for r in (selected or []) if r in names]
        if new_run in names and new_run not in value:
            value.append(new_run)
    else:
        value = names[:2]
    return gr.update(choices=benchmark_choices(store), value=target), gr.update(choices=runs, value=value)


# --------------------------------------------------------------------------- handlers


def on_kind(k: str) -> tuple[Any, ...]:
    """Which fields the kind of file needs; a new kind needs a new validation before Import."""
    return (gr.update(visible=k == "items"), gr.update(visible=k in ("predictions", "labels")),
            gr.update(visible=k == "predictions"), gr.update(visible=k == "predictions"),
            gr.update(interactive=False), "")


def on_upload(up: Any) -> tuple[Any, str]:
    """A new file needs a new validation before Import: Import is disabled and the report says the file is in
    (its data-file tells a test, or a script, that this step is done before it asks for the validation)."""
    if up is None:
        return gr.update(interactive=False), ""
    return gr.update(interactive=False), macro("data.html", "uploaded")(_path(up).name)


def on_validate(store: Store, k: str, up: Any, nm: str | None, rn: str | None, md: str | None, bench: str | None,
                cfg: str | None) -> tuple[str, Any]:
    """The dry run's report; Import is enabled only for a file without errors."""
    path = _path(up)
    rep = dry_run(store, k, path, nm or "", rn or "", md or "", bench, cfg or "")
    return report_html(rep, f"Validation of {path.name}", file=path.name), gr.update(interactive=rep.ok)


def on_import(store: Store, k: str, up: Any, nm: str | None, rn: str | None, md: str | None, bench: str | None,
              cfg: str | None, selected: list[str] | None) -> tuple[Any, ...]:
    """Import for real: the report, Import disabled again, the header's pickers and the catalog signature
    (a refused file leaves the header and the store as they were)."""
    path = _path(up)
    try:
        rep, target = commit(store, k, path, nm or "", rn or "", md or "", bench, cfg or "")
    except ImportRefused as exc:
        rep = exc.report if isinstance(exc.report, Report) else Report()
        if not rep.errors:
            rep.error("(import)", 0, "(file)", str(exc))
        return (report_html(rep, "Import refused", committed=True, file=path.name), gr.update(interactive=False), gr.update(),
                gr.update(), gr.update())
    bench_up, runs_up = header_after_import(store, target, bench, selected, (rn or "").strip()
                                            if k == "predictions" else None)
    return (report_html(rep, f"Imported {path.name}", committed=True, file=path.name), gr.update(interactive=False),
            bench_up, runs_up, catalog_signature(store))


def on_export(store: Store, w: str, bench: str | None, rn: str | None) -> str:
    return str(export_file(store, w, bench, rn))


def runs_of(store: Store, bench: str | None) -> Any:
    choices = run_choices(store, bench)
    return gr.update(choices=choices, value=choices[0][1] if choices else None)


def refresh_runs(store: Store, bench: str | None, current: str | None) -> Any:
    choices = run_choices(store, bench)
    return refreshed(current, choices, keep(current, choices, choices[0][1] if choices else None))


# --------------------------------------------------------------------------- the layout


def build_data(ctx: Ctx) -> None:
    gr.HTML(style(CSS))
    with gr.Row():
        with gr.Column(scale=3):
            imp = _import_column()
        with gr.Column(scale=2):
            exp = _export_column()
    store = ctx.store
    inputs = [imp["kind"], imp["upload"], imp["name"], imp["run"], imp["model"], ctx.benchmark, imp["config"]]
    imp["kind"].change(on_kind, imp["kind"], [imp[k] for k in ("name", "run", "model", "config", "import", "report")],
                       queue=False)
    imp["upload"].change(on_upload, imp["upload"], [imp["import"], imp["report"]], queue=False)
    imp["validate"].click(bind(on_validate, store), inputs, [imp["report"], imp["import"]], concurrency_id="data",
                          concurrency_limit=2)
    imp["import"].click(bind(on_import, store), [*inputs, ctx.runs],
                        [imp["report"], imp["import"], ctx.benchmark, ctx.runs, ctx.changed], concurrency_id="data")
    exp["make"].click(bind(on_export, store), [exp["what"], ctx.benchmark, exp["run"]], exp["download"],
                      concurrency_id="data")
    ctx.benchmark.change(bind(runs_of, store), ctx.benchmark, exp["run"], queue=False)
    ctx.on_refresh(bind(refresh_runs, store), [ctx.benchmark, exp["run"]], [exp["run"]])


def _import_column() -> dict[str, Any]:
    c: dict[str, Any] = {}
    gr.Markdown("### Import\nUpload a file, **Validate** to see every problem with its line number, then "
                "**Import**. A file with any bad line writes nothing; re-importing the same file changes "
                "nothing. Formats: docs/FORMATS.md.")
    c["kind"] = gr.Radio(KINDS, value="items", label="What the file holds", elem_id="cc-data-kind")
    c["upload"] = gr.File(label="File (.jsonl, .zip, .csv; VLMEvalKit .tsv / .xlsx, lmms-eval samples, parquet; "
                          "an Inspect .eval log)",
                          file_types=[".jsonl", ".zip", ".csv", ".json", ".tsv", ".xlsx", ".parquet", ".arrow", ".eval"],
                          type="filepath", elem_id="cc-data-upload")
    with gr.Row():
        c["name"] = gr.Textbox(label="Benchmark name (items; default: the file name)", elem_id="cc-data-name")
        c["run"] = gr.Textbox(label="Run name (predictions / labels)", visible=False, elem_id="cc-data-run")
        c["model"] = gr.Textbox(label="Model id (predictions)", visible=False, elem_id="cc-data-model")
    c["config"] = gr.Textbox(label="Run settings as JSON (predictions; optional)", visible=False,
                             placeholder='{"input_mode": "text", "strategy": "thinking"}', elem_id="cc-data-config")
    with gr.Row():
        c["validate"] = gr.Button("Validate", variant="secondary", elem_id="cc-data-validate")
        c["import"] = gr.Button("Import", variant="primary", interactive=False, elem_id="cc-data-import")
    c["report"] = gr.HTML("", elem_id="cc-data-report")
    return c


def _export_column() -> dict[str, Any]:
    gr.Markdown("### Export\nFiles in the import formats (an export re-imports unchanged); metrics as "
                "`score --json` prints them.")
    return {"what": gr.Radio(EXPORTS, value="items-jsonl", label="Export", elem_id="cc-data-export-what"),
            "run": gr.Dropdown([], label="Run (predictions, metrics, labels)", elem_id="cc-data-export-run"),
            "make": gr.Button("Prepare download", elem_id="cc-data-export"),
            "download": gr.File(label="Download", interactive=False, height=110, elem_id="cc-data-download")}
