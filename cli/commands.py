"""The handlers of `python app.py COMMAND`: open the store, call db/ and core/, print.

Every import of db/, core/ or ui/ sits inside the handler that uses it, so parsing the command line imports
none of them (#27); the import handlers take their own module (db.import_items, db.import_predictions,
db.import_labels), not db.importers, which loads all three. A handler raises the product's named errors; cli.main turns them into one line, exit 2.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from core.errors import CrosscheckError

# the commands that may create a store where none is; every other one refuses a missing store (and creates nothing)
CREATES_STORE = ("import", "demo", "serve", "open")


def store_path(args: argparse.Namespace) -> Path:
    """The store file: --db, else $CROSSCHECK_DB, else the user's data folder (db.store.default_db_path)."""
    from db.store import default_db_path

    return Path(args.db or default_db_path()).expanduser()


def _store(args: argparse.Namespace):  # noqa: ANN202 - db.store.Store, imported lazily
    """The store of --db. Only `import`, `demo` and `serve` create one; any other command refuses a missing
    store in one line and creates nothing (not even its folder)."""
    path = store_path(args)
    if args.command not in CREATES_STORE and not path.is_file():
        raise CrosscheckError(f"no store at {path} (create one with `python app.py import ITEMS` or "
                              "`python app.py demo`, or pass --db PATH)")
    from db.store import Store

    return Store(path)


def _print_report(result: Any, verbose: bool) -> None:
    for issue in result.report.warnings[: None if verbose else 5]:
        print(f"warning: {issue}", file=sys.stderr)
    hidden = len(result.report.warnings) - 5
    if not verbose and hidden > 0:
        print(f"warning: ... and {hidden} more warnings (use -v to list them)", file=sys.stderr)


def cmd_import(args: argparse.Namespace) -> int:
    from db.import_items import import_items

    result = import_items(_store(args), args.path, name=args.name, fmt=args.format, family=args.family,
                          mapping=args.map, preset=args.preset, group_by=args.group_by)
    _print_report(result, args.verbose)
    if result.unchanged:
        print(f"benchmark {result.target!r}: unchanged (already imported from identical items)")
    else:
        c = result.report.counts
        print(f"benchmark {result.target!r}: imported {c['items']} items in {c['groups']} groups, {c['images']} images")
    return 0


def cmd_open(args: argparse.Namespace) -> int:
    """`open PATH...`: import everything recognized (db.open), print what was done, then serve the UI on it unless
    --no-serve / --json. Exit status 1 when any file was refused (after the server stops, when it serves)."""
    from db.open import open_paths

    if not args.paths:  # `open` alone: the store as it is, the demo built when it is empty (as `serve`)
        if args.json or args.no_serve:
            raise CrosscheckError("open needs a PATH with --json or --no-serve")
        args.no_demo = False
        return cmd_serve(args)
    store = _store(args)
    result = open_paths(store, args.paths, data_dirs=args.data, group_by=args.group_by, family=args.family,
                        progress=not args.json)
    if args.json:
        for w in result.warnings:  # the object has the four lists; the warnings go where the CLI's always go
            print(f"warning: {w}", file=sys.stderr)
        print(json.dumps(result.to_json(), ensure_ascii=False))
    else:
        _print_opened(result, args.verbose)
    status = 1 if result.refused else 0
    if args.json or args.no_serve:
        return status
    args.no_demo = True
    cmd_serve(args)
    return status


def _print_opened(result: Any, verbose: bool) -> None:
    for w in result.warnings[: None if verbose else 10]:
        print(f"warning: {w}", file=sys.stderr)
    for b in result.benchmarks:
        what = "created" if b["created"] else "found"
        print(f"benchmark {b['name']!r} ({b['family']}): {what}, {b['items']} items, from {b['source']}")
    for r in result.runs:
        line = (f"run {r['name']!r} on {r['benchmark']!r}: {r['predictions']} predictions ({r['ok']} ok, "
                f"{r['invalid']} invalid, {r['api_error']} api_error), from {r['source']}")
        print(line)
        inspect = r.get("inspect")
        if inspect and inspect["scored"]:
            print(f"  Inspect's score: {inspect['inspect_correct']}/{inspect['scored']} correct; Crosscheck reads "
                  f"{inspect['crosscheck_correct']}/{inspect['scored']}"
                  + (f"; they differ on {inspect['differ']} samples, e.g. "
                     + ", ".join(f"{d['item_id']} epoch {d['epoch']} (Inspect {'correct' if d['inspect'] else 'wrong'})"
                                 for d in inspect["first_differences"][:3]) if inspect["differ"] else ""))
    for s in result.skipped[: None if verbose else 20]:
        print(f"skipped {s['path']}: {s['reason']}")
    if not verbose and len(result.skipped) > 20:
        print(f"... and {len(result.skipped) - 20} more skipped (use -v to list them)")
    for r in result.refused:
        print(f"refused {r['path']}: {r['reason']}", file=sys.stderr)
    print(f"{len(result.benchmarks)} benchmarks, {len(result.runs)} runs imported; {len(result.skipped)} files "
          f"skipped, {len(result.refused)} refused")


def cmd_import_predictions(args: argparse.Namespace) -> int:
    from db.import_predictions import import_predictions

    config = json.loads(args.config) if args.config else None
    store = _store(args)
    result = import_predictions(store, args.path, args.run, model=args.model, config=config,
                                benchmark=args.benchmark, replace=args.replace, fmt=args.format, key=args.key)
    store.close()
    _print_report(result, args.verbose)
    c = result.report.counts
    print(f"run {args.run!r}: {c['predictions']} predictions written ({c['ok']} ok, {c['invalid']} invalid, "
          f"{c['api_error']} api_error), {c['unchanged']} unchanged")
    return 0


def cmd_import_labels(args: argparse.Namespace) -> int:
    from db.import_labels import import_labels

    result = import_labels(_store(args), args.path, args.run)
    _print_report(result, args.verbose)
    c = result.report.counts
    print(f"run {args.run!r}: {c['labels']} labels written, {c['unchanged']} unchanged")
    return 0


def cmd_score(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from core.families.protocol import ScoreOptions
    from core.scoring import score_all, split_arg
    from db.frames import load_for_scoring, score_extras

    store = _store(args)
    if args.all:
        if args.set_aside_marked:
            raise CrosscheckError("--set-aside-marked applies to score --run NAME (the Metrics tab sets aside for "
                                  "the runs it shows)")
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
    options = ScoreOptions(split=split_arg(args.split), clusterings=_clusterings(args, row["family"]))
    if args.set_aside_marked:
        from db.gold_reviews import set_aside

        options = replace(options, set_aside=set_aside(store, row["benchmark"]))
    if args.shortcut_model or args.shortcut_pool:  # the shortcut filter's model: a family control's ScoreOptions
        from core import families

        takers = families.controls_for("shortcut_model")
        if row["family"] not in takers:
            raise CrosscheckError("--shortcut-model / --shortcut-pool apply to "
                                  + " or ".join(c.scope for c in takers.values()))
        options = replace(options, shortcut_model=args.shortcut_model, shortcut_pool=bool(args.shortcut_pool))
    result = score_all(items, runs, names=[args.run], compare=compare, options=options,
                       per_run={args.run: extras})[args.run]
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=None if args.compact else 2))
    else:
        _print_metrics(result["metrics"])
    return 0


def cmd_slices(args: argparse.Namespace) -> int:
    """Where a run fails: every stratum's value against the rest of the split (core.slices)."""
    from core.scoring import split_arg
    from core.slices import slices_of_run
    from db.frames import load_for_scoring
    from db.tags import tag_fields

    store = _store(args)
    row = store.run(args.run)
    if args.benchmark and args.benchmark != row["benchmark"]:
        raise CrosscheckError(f"run {args.run!r} is a run of {row['benchmark']!r}, not of {args.benchmark!r}")
    names = [args.run] + ([args.compare] if args.compare else [])
    items, runs = load_for_scoring(store, row["benchmark"], names=names)
    other = None
    if args.compare:
        other = runs.get(args.compare) or store.run_data(args.compare)
    by = [f.strip() for f in args.by.split(",") if f.strip()] if args.by else None
    extra = tag_fields(store, row["benchmark"], items["group_id"])
    label, found = slices_of_run(items, runs[args.run], other=other, split=split_arg(args.split), by=by,
                                 depth=args.depth, min_groups=args.min_groups, draws=args.draws, extra=extra)
    if args.json:
        print(json.dumps({"benchmark": row["benchmark"], "run": args.run, "compare": args.compare, "split": label,
                          "slices": [s.to_json() for s in found]}, ensure_ascii=False))
        return 0
    _print_slices(found, args.run, args.compare, label)
    return 0


def _print_slices(found: list[Any], run: str, other: str | None, split: str) -> None:
    def pct(x: float | None) -> str:
        return "    -" if x is None else f"{100 * x:5.1f}"

    def signed(x: float | None) -> str:
        return "-" if x is None else f"{100 * x:+.1f}"

    vs = f"{run} - {other}" if other else "slice - rest"
    print(f"{len(found)} slices of {run!r} on split {split!r} ({vs}, 95% cluster-bootstrap CI, BH q), worst first")
    print(f"{'field = value':<40} {'groups':>6} {'items':>6} {'acc %':>6} {'vs %':>6} {'diff':>7} "
          f"{'95% CI':>17} {'q':>7}")
    for s in found:
        vs_rate = s.other if s.other is not None else s.rest
        ci = f"[{signed(s.ci[0])}, {signed(s.ci[1])}]" if s.ci else "-"
        q = "-" if s.q is None else f"{s.q:.3g}"
        print(f"{(s.field + ' = ' + s.value)[:40]:<40} {s.n_groups:>6} {s.n_items:>6} {pct(s.accuracy.value):>6} "
              f"{pct(vs_rate.value):>6} {signed(s.diff):>7} {ci:>17} {q:>7}")


def cmd_failure_modes(args: argparse.Namespace) -> int:
    """Why a run fails: its failing outputs grouped into modes (core.failure_modes through db.diagnosis)."""
    from core.scoring import split_arg
    from db.diagnosis import failure_modes_of

    found = failure_modes_of(_store(args), args.run, args.compare, split_arg(args.split), args.benchmark)
    if args.json:
        print(json.dumps(found.json(), ensure_ascii=False, allow_nan=False))
        return 0
    _print_modes(found)
    return 0


def _signed(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.1f}"


def _print_modes(found: Any) -> None:
    vs = f"the items it lost against {found.compare!r}" if found.compare else "its failing items"
    print(f"{len(found.modes)} modes of {found.run!r} on split {found.split!r} ({vs}: {found.n_failing} failing, "
          f"{found.n_passing} passing documents; share among failing - share among passing, 95% cluster-bootstrap "
          "CI, BH q; most failure-heavy first)")
    if found.note:
        print(found.note)
    print(f"{'id':>3} {'mode':<44} {'fail %':>6} {'pass %':>6} {'diff':>6} {'95% CI':>15} {'q':>7} {'stab':>5} "
          f"{'groups':>6}  examples")
    for m in found.modes:
        ci = f"[{_signed(m.ci[0])}, {_signed(m.ci[1])}]" if m.ci else "-"
        q = "-" if m.q is None else f"{m.q:.3g}"
        print(f"{m.id:>3} {m.label[:44]:<44} {100 * m.share_failing:6.1f} {100 * m.share_passing:6.1f} "
              f"{_signed(m.diff):>6} {ci:>15} {q:>7} {m.stability:5.2f} {len(m.groups):>6}  {', '.join(m.examples)}")
    if found.terms:
        print("distinctive terms (failing vs passing documents; log-odds z, BH q):")
        for t in found.terms[:20]:
            print(f"  {t.term:<32} failing {t.failing:>6}  passing {t.passing:>6}  z {t.z:6.2f}  q {t.q:.3g}")


def cmd_item_health(args: argparse.Namespace) -> int:
    """The benchmark's items read through every run (core.item_health through db.diagnosis), with a progress bar
    on stderr when it takes more than a second."""
    from tqdm import tqdm

    from core.scoring import split_arg
    from db.diagnosis import item_health_of
    from db.gold_reviews import reviews

    store = _store(args)
    bar = tqdm(total=100, unit="%", desc="item-health", delay=1.0, file=sys.stderr, leave=False,
               bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}")

    def progress(what: str, done: float) -> None:
        bar.set_description_str(f"item-health: {what}", refresh=False)
        bar.update(round(100 * done) - bar.n)

    try:
        health = item_health_of(store, args.benchmark, split_arg(args.split), progress)
    finally:
        bar.close()
    marks = reviews(store, args.benchmark)
    if args.json:
        out = health.json()
        out["reviews"] = [{"item_id": r.item_id, "group_id": r.group_id, "verdict": r.verdict, "note": r.note,
                           "by": r.by, "created": r.created} for r in marks]
        print(json.dumps(out, ensure_ascii=False, allow_nan=False))
        return 0
    _print_health(health, marks, args.top)
    return 0


def _print_health(h: Any, marks: list[Any], top: int) -> None:
    print(f"item health of {h.benchmark!r}: {h.n_items} items read through {h.n_runs} runs")
    rows = {
        "suspect gold (Dawid-Skene consensus on another letter)": [
            f"{s.item_id} ({s.group_id}): gold {s.gold}, consensus {s.consensus} (support {s.support:.2f}, "
            f"{len(s.runs)} of {s.n_runs} runs)" for s in h.suspect_gold],
        "unstable (flips across repeats beyond the runs' own noise)": [
            f"{u.item_id} ({u.group_id}): {u.flips} of {u.n_runs} runs flipped (expected {u.expected:.1f}), "
            f"p {u.p:.3g}, q {u.q:.3g}" for u in h.unstable],
        "ambiguous (runs split between two letters)": [
            f"{a.item_id} ({a.group_id}): {a.letters[0]} {100 * a.shares[0]:.0f}% / {a.letters[1]} "
            f"{100 * a.shares[1]:.0f}% of {a.n_runs} runs, gold {a.gold}" for a in h.ambiguous],
        "negative discrimination (strong runs wrong, weak runs right)": [
            f"{n.item_id} ({n.group_id}): r {n.r:+.2f} over {n.n_runs} runs, p {n.p:.3g}, q {n.q:.3g}"
            for n in h.negative_discrimination],
        "duplicate images across groups": [
            f"{', '.join(d.groups)}: {len(d.images)} image(s), distance {d.distance}"
            + (f", across splits {', '.join(d.splits)}" if d.cross_split else "") for d in h.duplicates],
    }
    for (title, lines), key in zip(rows.items(), ("suspect_gold", "unstable", "ambiguous",
                                                  "negative_discrimination", "duplicates"), strict=True):
        print(f"\n{title}: {h.counts.get(key, len(lines))}")
        for line in lines[:top]:
            print(f"  {line}")
    print(f"\naccuracy on split {h.split!r} with and without the {h.counts.get('suspect_gold', 0)} suspects "
          "(95% cluster-bootstrap CI; what the suspects cost first):")
    for a in h.accuracy_without_suspects[:top]:
        ci = f"[{_signed(a.ci[0])}, {_signed(a.ci[1])}]" if a.ci else "-"
        acc = "-" if a.accuracy.value is None else f"{100 * a.accuracy.value:.1f}"
        wo = "-" if a.without.value is None else f"{100 * a.without.value:.1f}"
        print(f"  {a.run:<40} {acc:>6} -> {wo:>6}  {_signed(a.diff):>6} {ci}")
    if marks:
        print(f"\nreviewed: {len(marks)} item(s)")
        for r in marks[:top]:
            print(f"  {r.item_id}: gold is {r.verdict} ({r.by}, {r.created})" + (f": {r.note}" if r.note else ""))


def cmd_search(args: argparse.Namespace) -> int:
    """Full-text search of responses, traces, item texts and notes (db/search.py); one line per hit."""
    from db.search import parse_fields, search

    store = _store(args)
    runs = [r.strip() for part in (args.run or []) for r in part.split(",") if r.strip()] or None
    hits = search(store, args.query, benchmark=args.benchmark, runs=runs, fields=parse_fields(args.fields),
                  limit=args.limit or None)
    for h in hits:
        if args.json:
            print(json.dumps(h.to_json(), ensure_ascii=False))
        else:
            where = f"{h.benchmark} {h.group_id}" + (f" {h.item_id}" if h.item_id else "") + (f" [{h.run}]" if h.run else "")
            print(f"{where} {h.field}: {' '.join(h.snippet.split())}")
    if args.limit and len(hits) == args.limit:
        print(f"(the first {args.limit} hits; --limit 0 lists all)", file=sys.stderr)
    return 0


def cmd_tag(args: argparse.Namespace) -> int:
    """Tag a group (or take a tag off, or list the benchmark's tags)."""
    from db.tags import remove_tag, set_tag, tags_frame

    store = _store(args)
    if args.list:
        frame = tags_frame(store, args.benchmark)
        for r in frame.itertuples(index=False):
            print(f"{r.group_id}\t{r.tag}\t{r.note or ''}\t{r.by}\t{r.created}")
        return 0
    if not args.group or not args.tag:
        raise CrosscheckError("tag needs --group G and a TAG (or --list)")
    if args.remove:
        if not remove_tag(store, args.benchmark, args.group, args.tag):
            raise CrosscheckError(f"group {args.group!r} has no tag {args.tag!r}")
        print(f"group {args.group!r}: tag {args.tag!r} removed")
    else:
        set_tag(store, args.benchmark, args.group, args.tag, note=args.note, by=args.by or "cli")
        print(f"group {args.group!r}: tagged {args.tag!r}")
    return 0


def _clusterings(args: argparse.Namespace, family: str) -> tuple[Any, ...]:
    """The --cluster / --cluster-field choice as core.stats.Clustering objects (empty: the defaults)."""
    from core import families
    from core.stats import Clustering

    if not args.cluster and not args.cluster_field:
        return ()
    if not families.get(family).capabilities.clusterings:
        raise CrosscheckError(f"--cluster / --cluster-field apply to FrameEvidence runs (000 App. A, D.6); a "
                              f"{family} run's intervals cluster by group")
    names = [n.strip() for n in (args.cluster or "group,union").split(",") if n.strip()]
    if not names:
        raise CrosscheckError("--cluster needs one or more of group, image, scene, union (comma-separated)")
    if args.cluster_field and not {"scene", "union"} & set(names):
        raise CrosscheckError("--cluster-field names the fields of the scene / union clustering: add scene or union "
                              "to --cluster")
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


def export_format(args: argparse.Namespace) -> str:
    """export's --format, whose default depends on what is exported: csv for a leaderboard, else jsonl."""
    if args.what == "leaderboard":
        return str(args.format or "csv")
    if args.format == "xlsx":
        raise CrosscheckError(f"export {args.what} writes jsonl, csv or vlmevalkit; xlsx is for export leaderboard")
    return str(args.format or "jsonl")


def cmd_export(args: argparse.Namespace) -> int:
    from db.exporters import PRED_EXPORT_FIELDS, item_records, prediction_records, write_records

    fmt = export_format(args)
    store = _store(args)
    if args.what == "leaderboard":
        return _export_leaderboard(store, args, fmt)
    if args.what == "items":
        bench = args.benchmark or (store.run(args.run)["benchmark"] if args.run else None)
        if bench is None:
            raise CrosscheckError("export items needs --benchmark NAME (or --run NAME)")
        if fmt == "vlmevalkit":
            from db.foreign_export import write_vlmevalkit_items

            write_vlmevalkit_items(store, bench, sys.stdout)
        else:
            write_records(item_records(store, bench), sys.stdout, fmt)
    else:
        if not args.run:
            raise CrosscheckError("export predictions needs --run NAME")
        if fmt == "vlmevalkit":
            from db.foreign_export import write_vlmevalkit_predictions

            write_vlmevalkit_predictions(store, args.run, sys.stdout)
        else:
            write_records(prediction_records(store, args.run), sys.stdout, fmt, PRED_EXPORT_FIELDS)
    return 0


def _export_leaderboard(store: Any, args: argparse.Namespace, fmt: str) -> int:
    from db.exporters import LEADERBOARD_FORMATS, leaderboard_frame, write_leaderboard

    if not args.benchmark or fmt not in LEADERBOARD_FORMATS:
        raise CrosscheckError("export leaderboard needs --benchmark NAME and --format csv or xlsx")
    if fmt == "xlsx" and sys.stdout.isatty():
        raise CrosscheckError("export leaderboard --format xlsx writes a binary workbook: redirect it to a file")
    write_leaderboard(leaderboard_frame(store, args.benchmark, args.split), sys.stdout.buffer, fmt, args.benchmark)
    sys.stdout.buffer.flush()
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """`report`: the one-file HTML report (ui.report.write.write_report), written through a temporary file."""
    from ui.report.collect import BadReportRequest
    from ui.report.write import write_report

    t0 = time.perf_counter()
    names = [n.strip() for n in (args.runs or "").split(",") if n.strip()] or None
    if args.output.suffix.lower() not in (".html", ".htm"):
        raise BadReportRequest(f"-o {args.output}: the report is one HTML file; name it FILE.html")
    command = shlex.join(["python", "app.py", *sys.argv[1:]]) if sys.argv[1:2] == ["report"] else "app.py report"
    out = write_report(_store(args), args.output, args.benchmark, names, args.split, args.groups, command,
                       set_aside=args.set_aside_marked)
    size = out.stat().st_size / 1e6
    print(f"report of {args.benchmark!r} written to {out} ({size:.1f} MB, {time.perf_counter() - t0:.1f} s)")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from db.demo import build_demo_store

    summary = build_demo_store(_store(args), seed=args.seed, progress=lambda m: print(m, flush=True))
    print(f"demo store ready at {_store(args).path} in {summary.get('seconds', 0):.1f} s")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """`run`: the run engine (core.runners.engine.run) over the settings the options give (RunSettings' fields
    by name, a strategy's own option (its StrategyOption) into `options`; an option left out keeps the default)."""
    import dataclasses

    from core.prompts import strategies
    from core.runners.engine import RunSettings, run

    given = {k: v for k, v in vars(args).items() if v is not None}
    names = {f.name for f in dataclasses.fields(RunSettings)}
    options = {s.option.key: given[s.option.key] for s in strategies() if s.option and s.option.key in given}
    settings = RunSettings(**{k: v for k, v in given.items() if k in names}, options=options)
    summary = run(_store(args), settings, notify=lambda m: print(f"warning: {m}", file=sys.stderr, flush=True))
    print(summary.get("line", json.dumps(summary, default=str)))
    return 0 if summary.get("status", "done") in ("done", "cancelled") else 1


def cmd_hash_password(args: argparse.Namespace) -> int:
    """`hash-password USER`: prompt for the password (twice, no echo) or read one line of stdin (--stdin), print
    the auth-file line (ui.auth.auth_line)."""
    import getpass

    from ui.auth import auth_line

    if args.stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        try:
            password = getpass.getpass(f"password for {args.user}: ")
            again = getpass.getpass("again: ")
        except EOFError:
            raise CrosscheckError("no password given (type it at the prompt, or pass --stdin)") from None
        if again != password:
            raise CrosscheckError("the two passwords differ")
    if not password:
        raise CrosscheckError("empty password refused")
    print(auth_line(args.user, password))
    return 0


def cmd_judge(args: argparse.Namespace) -> int:
    """`judge`: judge the traces of --run into the judge run --judge-run (db.judge_runs.judge_run); exit 1 when a
    call failed (api_error: the same command asks those again)."""
    from core.judge import JudgeSpec, make_judge
    from db.judge_runs import judge_run

    store = _store(args)
    judge = make_judge(JudgeSpec(
        runner=args.judge_runner, threshold=args.threshold, base_url=args.base_url, model=args.model,
        api_key_env=args.api_key_env, concurrency=args.concurrency, timeout=args.timeout,
        max_retries=args.max_retries, max_tokens=args.max_tokens, batch_size=args.batch_size,
        chat_template=args.chat_template))
    t0 = time.perf_counter()
    s = judge_run(store, args.run, args.judge_run, judge, sample=args.sample, limit=args.limit)
    print(f"judge run {args.judge_run!r} on {args.run!r}: {s['n']} traces judged in {time.perf_counter() - t0:.1f} s "
          f"({s['ok']} ok, {s['malformed']} malformed, {s['api_error']} api_error; {s['inconsistent']} with "
          f"inconsistent flags), {s['skipped_already_judged']} already judged")
    ff = ", ".join(f"{k} {v}" for k, v in s["first_failure"].items())
    print(f"first failure: {ff}")
    return 0 if s["api_error"] == 0 else 1


def cmd_calibration(args: argparse.Namespace) -> int:
    """`calibration`: draw and freeze a sample (--draw-sample NAME, db.judge_runs.draw_sample), or print the
    judge-human agreement of --run (db.judging.calibration_report; --json: the report as JSON)."""
    from core import calibration as cal
    from core.schema import to_jsonable
    from db.judging import calibration_report

    store = _store(args)
    if args.draw_sample:
        from db.judge_runs import draw_sample

        res = draw_sample(store, args.run, args.draw_sample, args.per_operation, args.seed)
        if args.json:
            print(json.dumps(res, ensure_ascii=False, indent=2))
        else:
            _print_sample(res)
        return 0
    rep = to_jsonable(calibration_report(store, args.run, sample=args.sample, judge=args.judge,
                                         second=args.second_judge, ceiling=cal.parse_pairs(args.ceiling),
                                         consensus_of=cal.parse_names(args.consensus)))
    if args.json:
        print(json.dumps(rep, ensure_ascii=False, indent=2))
    else:
        _print_calibration(rep)
    sys.stdout.flush()
    return 0


def _print_sample(res: dict[str, Any]) -> None:
    verb = "already frozen with the same traces" if res["status"] == "unchanged" else "drawn and frozen"
    print(f"calibration sample {res['name']!r}: {res['n']} traces {verb}")
    for row in res["table"]:
        print("  " + "  ".join(f"{k}={v}" for k, v in row.items()))


def _print_calibration(rep: dict[str, Any]) -> None:
    """The calibration report as text: the labelers, kappa (with the interval, prevalence and notes the
    Calibration tab shows) and agreement per pair and stage, the human ceiling and consensus, and the first
    failure under the judge against the consensus."""
    from core.report_tables import signed_interval

    print(f"run {rep['run']!r}" + (f", sample {rep['sample']!r} ({rep['n_sample']} traces)" if rep["sample"] else "")
          + f": {rep['n_traces']} labeled traces")
    for lab in rep["labelers"]:
        print(f"  {lab['kind']:<6} {lab['name']}: {lab['n']} labels")
    print(f"{'pair':<44} {'stage':<5} {'kappa':>7} {'95% CI':>18} {'agree':>7} {'n':>5} {'prev.':>5}")
    for p in rep["pairs"]:
        k = "n/a" if p["kappa"] is None else f"{p['kappa']:.3f}"
        ci = "n/a" if not p.get("kappa_ci") else signed_interval(p["kappa_ci"], scale=1, digits=3)  # as the tab
        a = "n/a" if p["agreement"] is None else f"{p['agreement']:.3f}"
        prev = "n/a" if p.get("prevalence") is None else f"{100 * p['prevalence']:.0f}%"
        why = f"  ({p['reason']})" if p["reason"] else ""
        print(f"{p['a'] + ' vs ' + p['b']:<44.44} {p['stage']:<5} {k:>7} {ci:>18} {a:>7} {p['n']:>5} {prev:>5}{why}")
        for note in (p.get("kappa_note"), p.get("small_n")):
            if note:
                print(f"    {note}")
    ceil = rep["human_ceiling"]
    used = "; ".join(f"{a}-{b}" for a, b in rep["ceiling_pairs"]) or "none"
    print(f"human ceiling ({rep['ceiling_rule']}: {used}): " + ", ".join(
        f"{s} {'n/a' if c['kappa'] is None else format(c['kappa'], '.3f')}" for s, c in ceil.items()))
    print(f"human consensus ({rep['consensus_rule']}): majority of {', '.join(rep['consensus_of']) or 'none'}")
    ff = rep["first_failure"]
    if "reason" in ff:
        print(f"first failure: n/a ({ff['reason']})")
    else:
        print(f"first failure ({ff['scope']}, n={ff['n']}): judge {ff['judge_name']}: " + ", ".join(
            f"{k} {v['k']}" for k, v in ff["judge"].items()) + " | consensus: " + ", ".join(
            f"{k} {v['k']}" for k, v in ff["human"].items()))


def cmd_serve(args: argparse.Namespace) -> int:
    import os

    os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"  # before gradio is imported: no usage statistics sent
    from ui.auth import load_auth

    auth = load_auth(args.auth) if args.auth else None  # a missing or bad file stops here: one line, exit 2
    from ui.serving import cache_pruning

    cache_pruning()  # a malformed CROSSCHECK_GRADIO_CACHE stops here too, before any store is opened

    store = _store(args)
    if not store.benchmarks() and not args.no_demo:  # counts() would scan every prediction
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
    from ui.scores import start_scoring_workers_soon

    start_scoring_workers_soon(store)  # in the background, while gradio is imported and the page is built
    from ui.shell import launch

    launch(store, host=args.host, port=args.port, auth=auth)
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    """The store's benchmarks (family, splits with item counts) and runs (benchmark, model, status,
    predictions); --json: one object {"store", "benchmarks": [...], "runs": [...]}."""
    store = _store(args)
    splits = store.split_counts()
    benchmarks = [{"name": b["name"], "family": b["family"], "items": b["n_items"],
                   "splits": splits.get(b["name"], {})} for b in store.benchmarks()]
    runs = [{"name": r["name"], "benchmark": r["benchmark"], "model": r["model"], "runner": r["runner"],
             "status": r["status"], "predictions": r["n_predictions"]} for r in store.runs()]
    if args.json:
        print(json.dumps({"store": str(store.path), "benchmarks": benchmarks, "runs": runs}, ensure_ascii=False))
        return 0
    print(f"store {store.path}: {len(benchmarks)} benchmarks, {len(runs)} runs")
    print(f"\n{'benchmark':<32} {'family':<14} {'items':>7}  splits")
    for b in benchmarks:
        split_text = ", ".join(f"{k} {v}" for k, v in b["splits"].items()) or "-"
        print(f"{b['name']:<32} {b['family']:<14} {b['items']:>7}  {split_text}")
    print(f"\n{'run':<32} {'benchmark':<32} {'model':<28} {'status':<10} {'predictions':>11}")
    for r in runs:
        print(f"{r['name']:<32} {r['benchmark']:<32} {str(r['model'] or '-'):<28} {r['status']:<10} "
              f"{r['predictions']:>11}")
    return 0
