"""`app.py open PATH...`: what each path is, and everything recognized imported (docs/FORMATS.md, "Opening
folders").

A path is a file, a folder (walked) or a zipped folder (extracted with the items zip's safety rules, then
walked). Each file is recognized by its name, its first bytes or its header row: an Inspect AI log, a VLMEvalKit
prediction table in its work-dir layout (`outputs/<model>/[T<date>_G<commit>/]<model>_<dataset>.xlsx`), a
dataset TSV, lmms-eval samples (`*samples_<task>*.jsonl`, the model named by the `*results*.json` beside them),
an items JSONL / zip / Hugging Face file, or Crosscheck's own predictions file; anything else is skipped with the
reason. Items files come first (each becomes a benchmark named after its file, a VLMEvalKit dataset TSV after
its dataset), then the logs (a benchmark per task, from the log's samples), then the prediction files (a run each,
named from its model, and its dataset where the model has several, and the file's work folder where one model
and dataset have several). A VLMEvalKit table's dataset TSV is looked up among the files opened, in the
`data_dirs` given and in `$LMUData`, as VLMEvalKit keeps it (`<LMUData>/<dataset>.tsv`).

Every file goes through the importers' own path (db.import_items, db.import_predictions, db.inspect_log), one
transaction each: a file that is refused is named with its first problem and writes nothing, while the others are
still imported. A file whose content (SHA-256) the store's imports log already holds is skipped, so opening the
same paths again adds nothing.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from core.errors import CrosscheckError, ImportRefused
from core.foreign import inspect_log as inspect_reader
from core.foreign import lmms_eval
from core.report import Report
from db import inspect_log
from db.import_common import refuse
from db.import_items import extract_zip, import_items, write_items
from db.import_predictions import import_prediction_lines, import_predictions
from db.store import Store, now

WORK_FOLDER = re.compile(r"^T\d{8}_G[0-9A-Za-z]+$")  # VLMEvalKit run.py: f"T{timestr('day')}_G{githash(digits=8)}"
LMMS_SAMPLES = re.compile(r"^(?:.*_)?samples_(?P<task>.+?)(?:_\d{4}-\d{2}-\d{2}T[\d.:-]+)?\.jsonl$")
SKIP_NAMES = ("__MACOSX", ".DS_Store")
# the last word of the files VLMEvalKit's evaluations write beside a prediction table (<model>_<dataset>_..._<word>)
EVALUATION_WORDS = ("result", "acc", "score", "rating", "tmp", "judge", "extract", "auxmatch", "metrics", "fine")
IMAGES = (".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp")
ITEM_KINDS = ("items", "dataset")  # the kinds of files that make benchmarks, imported first


@dataclass(slots=True)
class Found:
    """One file `open` recognized: what it is, its display path, and (for predictions) the model, the benchmark
    it belongs to and what tells it apart from other files of the same model and benchmark."""

    path: Path
    shown: str
    kind: str  # items | dataset | inspect | vlmevalkit | lmms-eval | predictions
    model: str | None = None
    benchmark: str | None = None
    tag: str | None = None
    sha: str = ""


@dataclass(slots=True)
class OpenResult:
    """What `open` did, the object `open --json` prints."""

    benchmarks: list[dict[str, Any]] = field(default_factory=list)
    runs: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    refused: list[dict[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("warnings")
        return out

    def skip(self, shown: str, reason: str) -> None:
        self.skipped.append({"path": shown, "reason": reason})


# ---- walking and recognizing --------------------------------------------------------------------------------


def _walk(paths: Iterable[Path], stack: ExitStack, result: OpenResult) -> Iterator[tuple[Path, str]]:
    """(file, display path) of every file under `paths`, folders walked in name order, a zipped folder extracted
    into a temporary folder (kept until `stack` closes) and walked."""
    for path in paths:
        if not path.exists():
            result.refused.append({"path": str(path), "reason": "no such file or folder"})
            continue
        if path.is_dir():
            for sub in sorted(path.rglob("*")):
                rel = sub.relative_to(path)
                if sub.is_file() and not any(p.startswith(".") or p in SKIP_NAMES for p in rel.parts):
                    yield sub, str(path / rel)
            continue
        if path.suffix.lower() == ".zip" and _zipped_folder(path):
            report = Report()
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="crosscheck-open-")))
            if not extract_zip(path, tmp, report):
                result.refused.append({"path": str(path), "reason": report.summary()})
                continue
            for sub, shown in _walk([tmp], stack, result):
                yield sub, f"{path}:{Path(shown).relative_to(tmp)}"
            continue
        yield path, str(path)


def _zipped_folder(path: Path) -> bool:
    """A zip that is neither an Inspect log nor an items zip (one .jsonl and its images) is a zipped folder."""
    import zipfile

    if inspect_reader.looks_like_log(path):
        return False
    try:
        with zipfile.ZipFile(path) as zf:
            names = [n for n in zf.namelist() if not n.endswith("/") and "__MACOSX" not in n]
    except (zipfile.BadZipFile, OSError):
        return False
    data = [n for n in names if Path(n).suffix.lower() in (".jsonl", ".eval", ".json", ".xlsx", ".tsv", ".csv",
                                                              ".parquet", ".arrow", ".zip")]
    return not (len(data) == 1 and data[0].lower().endswith(".jsonl"))


def _head_line(path: Path) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.readline(1 << 16).decode("utf-8-sig", errors="replace").rstrip("\r\n")
    except OSError:
        return ""


def _first_json(path: Path) -> Any:
    import orjson

    try:
        with open(path, "rb") as fh:
            for raw in fh:
                if raw.strip():
                    return orjson.loads(raw)
                if fh.tell() > 1 << 20:
                    break
    except (OSError, orjson.JSONDecodeError):
        return None
    return None


def _vlmevalkit_names(path: Path) -> tuple[str | None, str | None, str | None]:
    """(model, dataset, work folder) of a prediction table in VLMEvalKit's layout: `<model>/<model>_<dataset>.xlsx`
    or `<model>/T<date>_G<commit>/<model>_<dataset>.xlsx`; (None, None, None) outside it."""
    folder = path.parent
    tag = None
    if WORK_FOLDER.match(folder.name):
        tag, folder = folder.name, folder.parent
    model = folder.name
    if model and path.stem.startswith(model + "_") and len(path.stem) > len(model) + 1:
        return model, path.stem[len(model) + 1:], tag
    return None, None, None


def recognize(path: Path, shown: str) -> Found | str:
    """What a file is (a Found), or why it is skipped (a str)."""
    suffix = path.suffix.lower()
    if inspect_reader.looks_like_log(path):
        return Found(path, shown, "inspect")
    if suffix in (".xlsx", ".tsv", ".csv"):
        return _table(path, shown, suffix)
    if suffix == ".jsonl":
        return _json_lines(path, shown)
    if suffix == ".json":
        first = _first_json(path) if path.stat().st_size < 1 << 20 else None
        if isinstance(first, dict) and "results" in first and ("config" in first or "model_name" in first):
            return "an lmms-eval results summary (its samples files are imported; it names their model)"
        return "a .json file that is not an Inspect log"
    if suffix in (".zip", ".parquet", ".arrow"):
        return Found(path, shown, "items", benchmark=path.stem)
    if suffix in IMAGES:
        return "an image (items files name the images they show)"
    return f"not a format Crosscheck reads ({suffix or 'no extension'})"


def _table(path: Path, shown: str, suffix: str) -> Found | str:
    """An .xlsx, .tsv or .csv: a VLMEvalKit prediction table, a dataset TSV or a predictions CSV, by its columns."""
    cols = [] if suffix == ".xlsx" else _head_line(path).split("\t" if suffix == ".tsv" else ",")
    if suffix == ".xlsx" or ("index" in cols and "prediction" in cols):
        model, dataset, tag = _vlmevalkit_names(path)
        if model is None:
            return ("a prediction table outside VLMEvalKit's layout (outputs/<model>/<model>_<dataset>.xlsx): "
                    "import it with `app.py import-predictions FILE --run NAME`")
        return Found(path, shown, "vlmevalkit", model, dataset, tag)
    if suffix == ".tsv" and {"index", "question", "answer"} <= set(cols):
        return Found(path, shown, "dataset", benchmark=path.stem)
    if suffix == ".csv" and "item_id" in cols:
        return Found(path, shown, "predictions")
    return f"a {suffix} file without the columns of a dataset TSV or a prediction table (evaluation output?)"


def _json_lines(path: Path, shown: str) -> Found | str:
    """A .jsonl: lmms-eval samples, a predictions file or an items file, by its first line (and its name)."""
    first = _first_json(path)
    m = LMMS_SAMPLES.match(path.name)
    if lmms_eval.looks_like_samples(first) or (m and isinstance(first, dict) and "doc_id" in first):
        return Found(path, shown, "lmms-eval", _lmms_model(path), m.group("task") if m else path.stem)
    if isinstance(first, dict) and "item_id" in first:
        return Found(path, shown, "predictions") if "response" in first else Found(path, shown, "items",
                                                                                   benchmark=path.stem)
    return "a .jsonl file whose first line is neither an item, a prediction nor an lmms-eval sample"


def _lmms_model(samples: Path) -> str:
    """The model of an lmms-eval samples file: `model_name` of a results JSON beside it (the evaluation
    tracker's), else the folder's name (lmms-eval writes into `<output>/<model_name_sanitized>/`)."""
    import orjson

    for res in sorted(samples.parent.glob("*results*.json"), reverse=True):
        try:
            doc = orjson.loads(res.read_bytes()) if res.stat().st_size < 64 << 20 else None
        except (OSError, orjson.JSONDecodeError):
            continue
        if isinstance(doc, dict):
            name = doc.get("model_name") or (doc.get("config") or {}).get("model_name")
            if isinstance(name, str) and name:
                return name
    return samples.parent.name


# ---- run names ----------------------------------------------------------------------------------------------


def _run_names(store: Store, found: list[Found]) -> dict[int, str]:
    """A run name for each predictions file (by index in `found`): its model; `/<benchmark>` where the model has
    files of several benchmarks; `@<tag>` where one model and benchmark have several files; `-2`, `-3`... where
    the store already has a run of that name."""
    benches = defaultdict(set)
    per_pair: Counter[tuple[str, str]] = Counter()
    for f in found:
        benches[f.model or ""].add(f.benchmark or "")
        per_pair[(f.model or "", f.benchmark or "")] += 1
    tags: dict[tuple[str, str], Counter[str | None]] = defaultdict(Counter)
    for f in found:
        tags[(f.model or "", f.benchmark or "")][f.tag] += 1
    taken = {r["name"] for r in store.runs(with_counts=False)}
    names = {}
    for k, f in enumerate(found):
        model, bench = f.model or f.path.stem, f.benchmark or ""
        name = model
        if len(benches[f.model or ""]) > 1 and bench:
            name += f"/{bench}"
        if per_pair[(f.model or "", bench)] > 1:  # the tag where it tells the files apart, else the file's name
            unique = f.tag and tags[(f.model or "", bench)][f.tag] == 1
            name += f"@{f.tag if unique else f.path.stem}"
        base, n = name, 1
        while name in taken:
            n += 1
            name = f"{base}-{n}"
        taken.add(name)
        names[k] = name
    return names


# ---- importing ----------------------------------------------------------------------------------------------


def file_sha(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, hashlib.sha256).hexdigest()


def _imported(store: Store, sha: str) -> str | None:
    """What the imports log says a file of this content became (a benchmark or a run), or None."""
    row = store.conn.execute("SELECT kind, target FROM imports WHERE sha256 = ? ORDER BY id LIMIT 1", (sha,)).fetchone()
    return None if row is None else f"{'run' if row[0] == 'predictions' else 'benchmark'} {row[1]!r}"


def _log_file(store: Store, f: Found, target: str, rows: int) -> None:
    """The items file's content hash in the imports log (the items import logs the items' own signature), so a
    second `open` knows the file."""
    with store.write() as conn:
        conn.execute("INSERT INTO imports (kind, file, sha256, target, rows, created) VALUES ('file', ?, ?, ?, ?, ?)",
                     (f.path.name, f.sha, target, rows, now()))


def _dataset_tsv(name: str, found: list[Found], data_dirs: list[Path]) -> Path | None:
    for f in found:
        if f.kind == "dataset" and f.benchmark == name:
            return f.path
    for folder in [*data_dirs, *([Path(os.environ["LMUData"])] if os.environ.get("LMUData") else [])]:
        tsv = folder / f"{name}.tsv"
        if tsv.is_file():
            return tsv
    return None


def _has_benchmark(store: Store, name: str) -> bool:
    return store.conn.execute("SELECT 1 FROM benchmarks WHERE name = ?", (name,)).fetchone() is not None


class _Progress:
    """An overall bar over the files and one per file for the samples of a log (tqdm, on stderr, shown only for
    work over a second and only on a terminal)."""

    def __init__(self, total: int, enabled: bool) -> None:
        from tqdm import tqdm

        self._tqdm = tqdm
        self.enabled = enabled
        self.bar = tqdm(total=total, unit="file", desc="open", delay=1.0, disable=None if enabled else True,
                        file=sys.stderr, position=0)

    def file(self, shown: str, total: int | None = None) -> Any:
        self.bar.set_postfix_str(Path(shown).name[-40:], refresh=False)
        return self._tqdm(total=total, unit="sample", desc=Path(shown).name[-30:], delay=1.0, leave=False,
                          disable=None if self.enabled else True, file=sys.stderr, position=1)

    def close(self) -> None:
        self.bar.close()


def open_paths(store: Store, paths: Iterable[str | os.PathLike[str]], *, data_dirs: Iterable[str | os.PathLike[str]] = (),
               group_by: str | None = None, family: str | None = None, progress: bool = True) -> OpenResult:
    """Import everything recognized under `paths` (see the module's docstring); never raises for one file's
    problem: each refused file is in `refused` with its reason."""
    result = OpenResult()
    dirs = [Path(d) for d in data_dirs]
    with ExitStack() as stack:
        found: list[Found] = []  # the files to import
        recognized: list[Found] = []  # every file recognized, imported before or not
        seen: dict[str, str] = {}
        for path, shown in _walk([Path(p) for p in paths], stack, result):
            got = recognize(path, shown)
            if isinstance(got, str):
                result.skip(shown, got)
                continue
            recognized.append(got)
            try:
                got.sha = file_sha(path)
            except OSError as exc:
                result.refused.append({"path": shown, "reason": f"cannot be read ({exc.strerror})"})
                continue
            if got.sha in seen:
                result.skip(shown, f"the same content as {seen[got.sha]}")
                continue
            seen[got.sha] = shown
            before = _imported(store, got.sha)
            if before is not None:
                result.skip(shown, f"already imported (same content as {before})")
                continue
            found.append(got)
        bar = _Progress(len(found), progress)
        try:
            _import_all(store, found, recognized, dirs, group_by, family, result, bar)
        finally:
            bar.close()
    return result


def _import_all(store: Store, found: list[Found], recognized: list[Found], dirs: list[Path], group_by: str | None,
                family: str | None, result: OpenResult, bar: _Progress) -> None:
    items = [f for f in found if f.kind in ITEM_KINDS]
    logs = [f for f in found if f.kind == "inspect"]
    preds = [f for f in found if f.kind not in ITEM_KINDS and f.kind != "inspect"]
    for f in items:
        _guard(result, f, _import_items_file, store, f, family, result)
        bar.bar.update()
    log_reads: list[tuple[Found, tuple[inspect_log.LogRead, Report]]] = []
    for f in logs:  # read first: the runs' names depend on every log's model and task
        report = Report()
        with bar.file(f.shown) as sub:
            read = inspect_log.read_log(f.path, report, family, group_by, progress=sub.update)
        if read is None or not report.ok:
            result.refused.append({"path": f.shown, "reason": report.summary()})
            bar.bar.update()
            continue
        f.model, f.benchmark = read.model or "inspect-model", read.task
        f.tag = str(read.header.eval.get("created") or "")[:19].replace(":", "-") or None
        log_reads.append((f, (read, report)))
    for f in preds:
        if not _benchmark_ready(store, f, found, recognized, dirs, family, result) and f.kind != "skipped":
            f.kind = "refused"
    preds = [f for f in preds if f.kind != "skipped"]  # evaluation outputs take no part in the runs' names
    # the log with the most items of a task first: a cancelled or --limit log of it then lands on its benchmark
    log_reads.sort(key=lambda fr: -len(fr[1][0].items))
    named = [f for f, _r in log_reads] + preds  # names from every file recognized, refused ones too: stable names
    names = _run_names(store, named)
    for k, (f, (read, report)) in enumerate(log_reads):
        _guard(result, f, _import_log, store, f, read, report, names[k], result)
        bar.bar.update()
    for k, f in enumerate(preds, start=len(log_reads)):
        if f.kind != "refused":
            _guard(result, f, _import_predictions_file, store, f, names[k], result)
        bar.bar.update()


def _benchmark_ready(store: Store, f: Found, found: list[Found], recognized: list[Found], dirs: list[Path],
                     family: str | None, result: OpenResult) -> bool:
    """Whether the benchmark of a VLMEvalKit table or lmms-eval samples is in the store, a VLMEvalKit dataset's TSV
    imported from --data or $LMUData where needed; False with the reason in `refused`, or in `skipped` (kind
    "skipped") for a VLMEvalKit evaluation's output."""
    if f.kind not in ("vlmevalkit", "lmms-eval") or not f.benchmark or _has_benchmark(store, f.benchmark):
        return True
    if f.kind == "lmms-eval":
        result.refused.append({"path": f.shown, "reason": f"no benchmark {f.benchmark!r}: lmms-eval samples do "
                               "not carry the options; open or import the task's items under that name first"})
        return False
    tsv = _dataset_tsv(f.benchmark, found, dirs)
    if tsv is not None and all(g.path != tsv for g in found):  # in --data or $LMUData: imported now
        data = Found(tsv, str(tsv), "dataset", benchmark=f.benchmark, sha=file_sha(tsv))
        _guard(result, data, _import_items_file, store, data, family, result)
    if _has_benchmark(store, f.benchmark):
        return True
    of = _evaluated_table(f, recognized) if tsv is None else None
    if of is not None:
        result.skip(f.shown, f"VLMEvalKit's evaluation output for {f.path.parent.name}/{f.model}_{of}.xlsx (its "
                    "predictions are read from that table)")
        f.kind = "skipped"
        return False
    why = ("its dataset TSV was refused" if tsv is not None else f"its dataset TSV {f.benchmark}.tsv is not among "
           "the files opened, in --data DIR or in $LMUData")
    result.refused.append({"path": f.shown, "reason": f"no benchmark {f.benchmark!r}: {why}"})
    return False


def _evaluated_table(f: Found, found: list[Found]) -> str | None:
    """VLMEvalKit's evaluation writes `<model>_<dataset>_<judge>_result.xlsx` (and `_acc`, `_score`, `_rating`,
    ... files) beside the prediction table `<model>_<dataset>.xlsx`: a table with no dataset of its own, named as
    another table of its folder plus `_..._<one of those words>`, is that evaluation's output (a dataset such as
    MMBench_DEV_EN_V11 beside MMBench_DEV_EN is not). Returns the other table's dataset."""
    name = f.benchmark or ""
    if name.rsplit("_", 1)[-1].lower() not in EVALUATION_WORDS:
        return None
    return next((g.benchmark for g in found if g.kind == "vlmevalkit" and g.path.parent == f.path.parent
                 and g.benchmark and g.benchmark != name and name.startswith(g.benchmark + "_")), None)


def _guard(result: OpenResult, f: Found, step: Callable[..., None], *args: Any) -> None:
    """`step(*args)`, one file's import; its refusal (or any product error) goes to `refused` as one line."""
    try:
        step(*args)
    except ImportRefused as exc:
        result.refused.append({"path": f.shown, "reason": str(exc)})
    except CrosscheckError as exc:
        result.refused.append({"path": f.shown, "reason": str(exc)})
    except OSError as exc:  # a file that went away or cannot be read while the others are imported
        result.refused.append({"path": f.shown, "reason": f"cannot be read ({exc.strerror or exc})"})


def _import_items_file(store: Store, f: Found, family: str | None, result: OpenResult) -> None:
    opts: dict[str, Any] = {"family": family} if family and f.kind == "dataset" else {}
    got = import_items(store, f.path, name=f.benchmark, **opts)
    c = got.report.counts
    result.benchmarks.append({"name": got.target, "family": store.benchmark(got.target)["family"],
                              "items": c.get("items") or c.get("unchanged", 0), "created": not got.unchanged,
                              "source": f.shown})
    _warnings(result, got.report)
    _log_file(store, f, got.target, got.rows)


def _import_log(store: Store, f: Found, read: inspect_log.LogRead, report: Report, run: str,
                result: OpenResult) -> None:
    refuse(report)
    bench = read.task
    assert read.family is not None  # a log read without problems has its family
    got = write_items(store, bench, f.path.name, read.family, read.items, read.images, report, subset=True)
    if not got.unchanged:
        result.benchmarks.append({"name": bench, "family": read.family, "items": len(read.items), "created": True,
                                  "source": f.shown})
    config = read.header.run_config()
    done = import_prediction_lines(store, f.path, read.lines, report, run, read.model, config, bench, False,
                                   after=inspect_log.sources_writer(store, bench, read))
    entry = _run_entry(run, bench, read.model, f, done.report)
    entry["inspect"] = _agreement(store, run, bench, read)
    result.runs.append(entry)
    _warnings(result, done.report)


def _import_predictions_file(store: Store, f: Found, run: str, result: OpenResult) -> None:
    fmt = {"vlmevalkit": "vlmevalkit", "lmms-eval": "lmms-eval"}.get(f.kind, "auto")
    done = import_predictions(store, f.path, run, model=f.model, benchmark=f.benchmark, fmt=fmt)
    bench = f.benchmark or store.run(run)["benchmark"]
    result.runs.append(_run_entry(run, bench, f.model, f, done.report))
    _warnings(result, done.report)


def _run_entry(run: str, bench: str, model: str | None, f: Found, report: Report) -> dict[str, Any]:
    c = report.counts
    return {"name": run, "benchmark": bench, "model": model, "source": f.shown, "predictions": c.get("predictions", 0),
            "ok": c.get("ok", 0), "invalid": c.get("invalid", 0), "api_error": c.get("api_error", 0)}


def _warnings(result: OpenResult, report: Report) -> None:
    result.warnings.extend(str(w) for w in report.warnings)


def _agreement(store: Store, run: str, bench: str, read: inspect_log.LogRead) -> dict[str, Any]:
    """Inspect's score beside Crosscheck's reading of the same samples: how many each counts correct and the
    samples where they differ (the first 20)."""
    hits = read.hits()
    gold = {it.item_id: it.answer for it in store.items(bench)}
    preds = store.run_data(run).preds
    mine = {(str(i), int(r)): bool(s == "ok" and a == gold.get(str(i)))
            for i, r, s, a in zip(preds["item_id"], preds["repeat"], preds["status"], preds["answer"], strict=True)}
    both = [k for k in hits if k in mine]
    differ = [{"item_id": k[0], "epoch": k[1] + 1, "inspect": hits[k], "crosscheck": mine[k]}
              for k in both if hits[k] != mine[k]]
    return {"scored": len(both), "inspect_correct": sum(hits[k] for k in both),
            "crosscheck_correct": sum(mine[k] for k in both), "differ": len(differ), "first_differences": differ[:20]}
