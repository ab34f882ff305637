"""Crosscheck: command-line entry. No subcommand launches the UI; `python app.py --help` lists the rest.

Thin by design (STYLE 10): it parses arguments, opens the store, calls db/ and core/, and turns the
product's named errors into one-line messages with exit status 2. `demo` (the Gradio Blocks) is built on
first access, so importing this module touches no network and loads no model.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from core.errors import CrosscheckError, ImportRefused


def _store(args: argparse.Namespace):  # noqa: ANN202 - db.store.Store, imported lazily
    from db.store import Store, default_db_path

    return Store(args.db or default_db_path())


def _print_report(result: Any, verbose: bool) -> None:
    for issue in result.report.warnings[: None if verbose else 5]:
        print(f"warning: {issue}", file=sys.stderr)
    hidden = len(result.report.warnings) - 5
    if not verbose and hidden > 0:
        print(f"warning: ... and {hidden} more warnings (use -v to list them)", file=sys.stderr)


def cmd_import(args: argparse.Namespace) -> int:
    from db.importers import import_items

    result = import_items(_store(args), args.path, name=args.name, fmt=args.format, family=args.family,
                          mapping=args.map, preset=args.preset)
    _print_report(result, args.verbose)
    if result.unchanged:
        print(f"benchmark {result.target!r}: unchanged (already imported from identical items)")
    else:
        c = result.report.counts
        print(f"benchmark {result.target!r}: imported {c['items']} items in {c['groups']} groups, {c['images']} images")
    return 0


def cmd_import_predictions(args: argparse.Namespace) -> int:
    from db.importers import import_predictions

    config = json.loads(args.config) if args.config else None
    result = import_predictions(_store(args), args.path, args.run, model=args.model, config=config,
                                benchmark=args.benchmark, replace=args.replace, fmt=args.format, key=args.key)
    _print_report(result, args.verbose)
    c = result.report.counts
    print(f"run {args.run!r}: {c['predictions']} predictions written ({c['ok']} ok, {c['invalid']} invalid, "
          f"{c['api_error']} api_error), {c['unchanged']} unchanged")
    return 0


def cmd_import_labels(args: argparse.Namespace) -> int:
    from db.importers import import_labels

    result = import_labels(_store(args), args.path, args.run)
    _print_report(result, args.verbose)
    c = result.report.counts
    print(f"run {args.run!r}: {c['labels']} labels written, {c['unchanged']} unchanged")
    return 0


def cmd_score(args: argparse.Namespace) -> int:
    from core.scoring import score_all, split_arg
    from db.frames import load_for_scoring, score_extras

    store = _store(args)
    if args.all:
        return _score_all(store, args)
    if not args.run:
        raise CrosscheckError("score needs --run NAME (or --all)")
    row = store.run(args.run)
    items, runs = load_for_scoring(store, row["benchmark"])
    if (args.split or "").strip() == "test" and not (items["split"] == "test").any():  # asked for, not defaulted
        known = ", ".join(sorted(map(str, items["split"].unique()))) or "none"
        raise CrosscheckError(f"benchmark {row['benchmark']!r} has no items in split 'test' (splits: {known})")
    compare = None
    if args.compare:  # a run of another benchmark is refused by score_all (MetricUndefined)
        compare = runs.get(args.compare) or store.run_data(args.compare)
    extras = score_extras(store, args.run, row["family"], judge=args.judge)
    if args.shortcut_model or args.shortcut_pool:
        if row["family"] != "spur":
            raise CrosscheckError("--shortcut-model / --shortcut-pool apply to SPUR benchmarks (001 §2.3)")
        extras.update(shortcut_model=args.shortcut_model, shortcut_pool=bool(args.shortcut_pool))
    clusterings = _clusterings(args, row["family"])
    if clusterings:
        extras["clusterings"] = clusterings
    result = score_all(items, runs, names=[args.run], compare=compare, split=split_arg(args.split),
                       **extras)[args.run]
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=None if args.compact else 2))
    else:
        _print_metrics(result["metrics"])
    return 0


def _clusterings(args: argparse.Namespace, family: str) -> tuple[Any, ...]:
    """The --cluster / --cluster-field choice as core.stats.Clustering objects (empty: the defaults)."""
    from core import families
    from core.stats import Clustering

    if not args.cluster and not args.cluster_field:
        return ()
    if not families.get(family).CLUSTERINGS:
        raise CrosscheckError(f"--cluster / --cluster-field apply to FrameEvidence runs (000 App. A, D.6); a "
                              f"{family} run's intervals cluster by group")
    names = [n.strip() for n in (args.cluster or "group,union").split(",") if n.strip()]
    if not names:
        raise CrosscheckError("--cluster needs one or more of group, image, union (comma-separated)")
    if args.cluster_field and "union" not in names:
        raise CrosscheckError("--cluster-field names the fields of the union clustering: add union to --cluster")
    chosen = tuple(Clustering.parse(n, args.cluster_field) for n in names)
    if len({c.name for c in chosen}) < len(chosen):
        raise CrosscheckError(f"--cluster {args.cluster!r} names a clustering twice")
    return chosen


def _score_all(store: Any, args: argparse.Namespace) -> int:
    """score --all: every run (of --benchmark, or of every benchmark), one result per run."""
    from core.scoring import split_arg
    from db.bulk import score_benchmarks

    if args.compare or args.judge or args.shortcut_model or args.shortcut_pool:
        raise CrosscheckError("score --all takes neither --compare, --judge nor --shortcut-model / --shortcut-pool "
                              "(each run uses its latest judge run and the default shortcut filter)")
    if args.cluster or args.cluster_field:
        raise CrosscheckError("score --all uses the default clusterings (groups and union components by "
                              "meta.scene); pass --cluster with --run NAME")
    benchmarks = [args.benchmark] if args.benchmark else None
    results = score_benchmarks(store, benchmarks, jobs=args.jobs, split=split_arg(args.split))
    for per_run in results.values():
        for result in per_run.values():
            if args.json:  # JSON lines: one result per line
                print(json.dumps(result, ensure_ascii=False))
            else:
                print(f"== {result['benchmark']} / {result['run']}")
                _print_metrics(result["metrics"])
    return 0


def _print_metrics(metrics: dict[str, Any], prefix: str = "") -> None:
    for key, val in metrics.items():
        name = f"{prefix}{key}"
        if isinstance(val, dict) and "value" in val:
            if val["value"] is None:
                print(f"{name:<40} n/a  ({val.get('reason', 'undefined')})")
            else:
                kn = f"  ({val['k']}/{val['n']})" if "k" in val and "n" in val else ""
                ci = f"  [{val['ci'][0]:.4f}, {val['ci'][1]:.4f}]" if val.get("ci") else ""
                print(f"{name:<40} {val['value']:.4f}{kn}{ci}")
        elif isinstance(val, dict):
            _print_metrics(val, prefix=f"{name}.")
        else:
            print(f"{name:<40} {val}")


def cmd_export(args: argparse.Namespace) -> int:
    from db.exporters import PRED_EXPORT_FIELDS, item_records, prediction_records, write_records

    store = _store(args)
    if args.what == "leaderboard":
        return _export_leaderboard(store, args)
    if args.format == "xlsx":
        raise CrosscheckError(f"export {args.what} writes jsonl, csv or vlmevalkit; xlsx is for export leaderboard")
    args.format = args.format or "jsonl"
    if args.what == "items":
        bench = args.benchmark or (store.run(args.run)["benchmark"] if args.run else None)
        if bench is None:
            raise CrosscheckError("export items needs --benchmark NAME (or --run NAME)")
        if args.format == "vlmevalkit":
            from db.foreign_export import write_vlmevalkit_items

            write_vlmevalkit_items(store, bench, sys.stdout)
        else:
            write_records(item_records(store, bench), sys.stdout, args.format)
    else:
        if not args.run:
            raise CrosscheckError("export predictions needs --run NAME")
        if args.format == "vlmevalkit":
            from db.foreign_export import write_vlmevalkit_predictions

            write_vlmevalkit_predictions(store, args.run, sys.stdout)
        else:
            write_records(prediction_records(store, args.run), sys.stdout, args.format, PRED_EXPORT_FIELDS)
    return 0


def _export_leaderboard(store: Any, args: argparse.Namespace) -> int:
    from db.exporters import LEADERBOARD_FORMATS, leaderboard_frame, write_leaderboard

    fmt = args.format or "csv"
    if not args.benchmark or fmt not in LEADERBOARD_FORMATS:
        raise CrosscheckError("export leaderboard needs --benchmark NAME and --format csv or xlsx")
    if fmt == "xlsx" and sys.stdout.isatty():
        raise CrosscheckError("export leaderboard --format xlsx writes a binary workbook: redirect it to a file")
    write_leaderboard(leaderboard_frame(store, args.benchmark, args.split), sys.stdout.buffer, fmt, args.benchmark)
    sys.stdout.buffer.flush()
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from ui.report import cmd_report as report

    return report(args, _store(args))


def cmd_demo(args: argparse.Namespace) -> int:
    from db.demo import build_demo_store

    summary = build_demo_store(_store(args), seed=args.seed, progress=lambda m: print(m, flush=True))
    print(f"demo store ready at {_store(args).path} in {summary.get('seconds', 0):.1f} s")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from core.runners.engine import run_from_args

    summary = run_from_args(_store(args), args, notify=lambda m: print(f"warning: {m}", file=sys.stderr, flush=True))
    print(summary.get("line", json.dumps(summary, default=str)))
    return 0 if summary.get("status", "done") in ("done", "cancelled") else 1


def cmd_hash_password(args: argparse.Namespace) -> int:
    from ui.auth import hash_password_main

    return int(hash_password_main(args.user, from_stdin=args.stdin) or 0)


def cmd_judge(args: argparse.Namespace) -> int:
    from db.judge_cli import run_judge

    return int(run_judge(_store(args), args) or 0)


def cmd_calibration(args: argparse.Namespace) -> int:
    from db.judge_cli import run_calibration

    return int(run_calibration(_store(args), args) or 0)


def cmd_serve(args: argparse.Namespace) -> int:
    import os

    os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"  # before gradio is imported: no usage statistics sent
    from ui.auth import load_auth

    auth = load_auth(args.auth) if args.auth else None  # a missing or bad file stops here: one line, exit 2
    from ui.serving import cache_pruning
    from ui.shell import launch

    cache_pruning()  # a malformed CROSSCHECK_GRADIO_CACHE stops here too, before any store is opened

    store = _store(args)
    if store.counts()["benchmarks"] == 0 and not getattr(args, "no_demo", False):
        try:
            from db.demo import build_demo_store
        except ImportError:
            print("the store is empty; import a benchmark with `python app.py import ITEMS.jsonl`")
        else:
            print(f"empty store at {store.path}: building the embedded demo (synthetic data) ...", flush=True)
            build_demo_store(store, progress=lambda m: print(m, flush=True))
    if args.host not in ("127.0.0.1", "localhost", "::1") and not args.auth:
        print(f"WARNING: serving on {args.host} without --auth: anyone who can reach this port can read the store. "
              "Pass --auth FILE (see README, 'Host it for your lab').", file=sys.stderr)
    launch(store, host=args.host, port=args.port, auth=auth)
    return 0


def _subcommand(sub: Any, name: str, func: Any, help_: str) -> argparse.ArgumentParser:
    """A subcommand with the options every command takes (--db, -v)."""
    p: argparse.ArgumentParser = sub.add_parser(name, help=help_, description=help_)
    p.add_argument("--db", type=Path, help="the store file (default: $CROSSCHECK_DB or the user's data folder)")
    p.add_argument("-v", "--verbose", action="store_true", help="list every warning and every error")
    p.set_defaults(func=func)
    return p


def _import_arguments(sub: Any) -> None:
    """`import`, `import-predictions` and `import-labels`."""
    p = _subcommand(sub, "import", cmd_import, "import a benchmark's items (JSONL, a zip of the JSONL and its "
                    "images, a VLMEvalKit TSV, or a Hugging Face parquet / arrow dataset)")
    p.add_argument("path", type=Path)
    p.add_argument("--name", help="the benchmark's name (default: the file name without extension)")
    p.add_argument("--format", choices=("auto", "jsonl", "vlmevalkit", "hf"), default="auto",
                   help="auto: .tsv is VLMEvalKit; .parquet, .arrow or a folder is Hugging Face; else JSONL")
    p.add_argument("--family", help="VLMEvalKit / Hugging Face files: the family (default: generic)")
    p.add_argument("--map", help="Hugging Face files: FIELD=COLUMN,... (see docs/FORMATS.md)")
    p.add_argument("--preset", help="Hugging Face files: force a known layout (mmmu, blink, muirbench, mmbench)")

    p = _subcommand(sub, "import-predictions", cmd_import_predictions,
                    "import predictions (JSONL or CSV) into a named run")
    p.add_argument("path", type=Path)
    p.add_argument("--run", required=True)
    p.add_argument("--model", help="the model id to record with the run")
    p.add_argument("--benchmark", help="the benchmark (default: the run's, or the one holding the items)")
    p.add_argument("--config", help="run settings as a JSON object (e.g. '{\"input_mode\": \"text\"}')")
    p.add_argument("--replace", action="store_true", help="overwrite predictions that differ from stored ones")
    p.add_argument("--format", choices=("auto", "jsonl", "csv", "vlmevalkit", "lmms-eval"), default="auto",
                   help="auto: by extension and columns (VLMEvalKit .xlsx/.tsv/.json, lmms-eval samples JSONL)")
    p.add_argument("--key", help="lmms-eval: the sample field naming the item (default: doc.index, doc.idx, "
                   "doc.id, doc.question_id, else doc_id as a position)")

    p = _subcommand(sub, "import-labels", cmd_import_labels,
                    "import stage labels (JSONL) for the traces of a run")
    p.add_argument("path", type=Path)
    p.add_argument("--run", required=True)


def _score_arguments(sub: Any) -> None:
    """`score`."""
    p = _subcommand(sub, "score", cmd_score, "compute a run's metrics (or every run's, with --all)")
    p.add_argument("--run")
    p.add_argument("--all", action="store_true", help="score every run (of --benchmark, or of all benchmarks); "
                   "with --json, one JSON line per run")
    p.add_argument("--benchmark", help="with --all: only this benchmark's runs")
    p.add_argument("--jobs", type=int, help="with --all: worker processes (default: one per CPU)")
    p.add_argument("--json", action="store_true", help="print {benchmark, run, metrics} as JSON")
    p.add_argument("--compact", action="store_true", help="one-line JSON")
    p.add_argument("--compare", metavar="OTHER_RUN", help="add paired differences with bootstrap CIs")
    p.add_argument("--split", help="the split to score, every family (default: test; 'all': every split)")
    p.add_argument("--cluster", metavar="NAME[,NAME]", help="FrameEvidence: bootstrap clusterings, side by side "
                   "in repeat_intervals (Table 13), the first also for --compare: group (matched groups), image "
                   "(exact-image components: groups sharing an image by content hash), union (groups linked by a "
                   "shared image or a shared --cluster-field value); default group,union (--compare: group)")
    p.add_argument("--cluster-field", metavar="FIELD[,FIELD]", help="the meta field(s) whose shared values link "
                   "groups in the union clustering (default: scene), e.g. scene,template")
    p.add_argument("--judge", metavar="JUDGE_RUN", help="StemBind: the judge run whose trace judgements feed L2 "
                   "StepAcc (default: the most recent one)")
    p.add_argument("--shortcut-model", metavar="ID", help="SPUR: the text-only model (config model) whose "
                   "randomized trials flag shortcut items (001 §2.3; default: the only one)")
    p.add_argument("--shortcut-pool", action="store_true", help="SPUR: pool every text-only model's trials "
                   "(labelled as pooled)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="app.py", description="Crosscheck: a diagnostic workbench for "
                                     "vision-language benchmarks with matched groups.")
    sub = parser.add_subparsers(dest="command")

    def add(name: str, func: Any, help_: str) -> argparse.ArgumentParser:
        return _subcommand(sub, name, func, help_)

    p = add("serve", cmd_serve, "launch the web UI")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=7860)
    p.add_argument("--auth", type=Path, help="file of user:password-hash lines; turns on login")
    p.add_argument("--no-demo", action="store_true", help="do not build the demo store when the store is empty")

    p = add("hash-password", cmd_hash_password, "print a user:password-hash line for the --auth file")
    p.add_argument("user")
    p.add_argument("--stdin", action="store_true", help="read the password from the first line of stdin")

    _import_arguments(sub)
    _score_arguments(sub)

    p = add("export", cmd_export, "export items, predictions or a benchmark's leaderboard to standard output")
    p.add_argument("what", choices=("items", "predictions", "leaderboard"))
    p.add_argument("--run")
    p.add_argument("--benchmark")
    p.add_argument("--format", choices=("jsonl", "csv", "vlmevalkit", "xlsx"),
                   help="items / predictions: jsonl (default), csv, or vlmevalkit (a dataset TSV or a prediction "
                   "TSV VLMEvalKit loads); leaderboard: csv (default) or xlsx")
    p.add_argument("--split", help="leaderboard: the split to score, as score --split (default: test)")

    p = add("report", cmd_report, "write the one-file HTML report of a benchmark's runs (opens offline)")
    from ui.report import add_arguments as report_arguments

    report_arguments(p)

    p = add("demo", cmd_demo, "build the embedded demo store (synthetic benchmarks and runs)")
    p.add_argument("--seed", type=int, default=0)

    from db.judge_cli import add_calibration_arguments, add_judge_arguments

    p = add("judge", cmd_judge, "judge a run's F traces stage by stage (lexical, openai or transformers judge)")
    add_judge_arguments(p)
    p = add("calibration", cmd_calibration, "judge-human agreement; --draw-sample NAME draws a frozen sample")
    add_calibration_arguments(p)

    p = add("run", cmd_run, "run a model or baseline on a benchmark; resumable")
    try:
        from core.runners.cli import add_arguments
    except ImportError:  # pragma: no cover - only while the runners package is missing
        pass
    else:
        add_arguments(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["serve", *(argv or [])])
    t0 = time.perf_counter()
    try:
        return int(args.func(args) or 0)
    except ImportRefused as exc:
        report = exc.report
        errors = sorted(report.errors, key=lambda i: i.line) if report is not None else []  # type: ignore[attr-defined]
        print(f"error: {exc}", file=sys.stderr)
        if len(errors) > 1:  # then every problem (the first 20 unless -v), in line order
            shown = errors if getattr(args, "verbose", False) else errors[:20]
            for issue in shown:
                print(f"  {issue}", file=sys.stderr)
            if len(errors) > len(shown):
                print(f"  ... and {len(errors) - len(shown)} more (use -v to list them)", file=sys.stderr)
        print("nothing was written", file=sys.stderr)
        return 2
    except CrosscheckError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `... | head`: the reader left; not an error
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print(f"\ninterrupted after {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        return 130


def __getattr__(name: str) -> Any:
    """`app.demo`: the Gradio Blocks over the default store, built on first access."""
    if name == "demo":
        from db.store import Store, default_db_path
        from ui.shell import build

        return build(Store(default_db_path()))
    raise AttributeError(name)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
