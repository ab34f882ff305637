"""The scripting API (docs/HOSTING.md): the Browse list (with its search), a group view, Compare, the extraction
audit's list and apply, and the calibration report as endpoints (`gr.api`) beside the Metrics tab's `metrics`,
for gradio_client and plain HTTP.

The tabs' own events take their values from pickers, and Gradio checks a picker's value against the choices it
was built with (the first benchmark's runs), so a script could not name another benchmark's run through them.
These endpoints take plain values instead and check every name against the store (db.catalog.runs_named): any
benchmark and run of the store works, and a name it lacks is one error naming it. They call the tabs' handlers,
so a script reads what the tab shows.
"""

from __future__ import annotations

import json
from typing import Any

import gradio as gr

from core import families, stats
from core import groups as core_groups
from core.errors import CrosscheckError, NotFound
from core.schema import to_jsonable
from core.scoring import DEFAULT_SPLIT
from db.catalog import runs_named
from db.store import Store
from ui import audit, browse, compare
from ui.handlers import bind
from ui.views import cache, render_group


class BadApiRequest(CrosscheckError, ValueError):
    """An API call's option cannot apply to the benchmark it names."""


def _one_of(what: str, value: str, known: list[str], benchmark: str) -> str:
    """`value` ("" for every one) when the benchmark has it, else NotFound listing what it has."""
    if value and value not in known:
        raise NotFound(f"no {what} {value!r} in benchmark {benchmark!r} ({what}s: {', '.join(known) or 'none'})")
    return value


def browse_list(store: Store, benchmark: str, runs: list[str], split: str = "", kind: str = "", field: str = "",
                value: str = "", pattern: str = "", query: str = "", page: int = 1) -> dict[str, Any]:
    """One page (50 groups) of the Browse list: {benchmark, runs, page, pages, total, n_groups, counts, columns,
    rows}; each row a dict by column (group, split, kind, items, the stratum `field` when given, one column per
    run: ✓ / ✗ k/n ⚠ as in the tab, question). Filters as the tab's: `split`, `kind`, a meta `field` and its
    `value`, a failure `pattern` (a key of `counts`) matched in any named run, and `query` (the search box:
    words of the group id, item ids or question). Empty means no filter."""
    names = [r["name"] for r in runs_named(store, benchmark, list(runs or []))]
    bd = cache.bench(store, benchmark)
    _one_of("split", split, bd.splits, benchmark)
    _one_of("kind", kind, bd.kinds, benchmark)
    _one_of("field", field, list(bd.strata), benchmark)
    if value and not field:
        raise BadApiRequest("value filters the groups on a meta field: name the field too")
    _one_of("pattern", pattern, [key for key, _ in core_groups.patterns(bd.family)], benchmark)
    res = browse.list_groups(store, benchmark, names, split, kind, field, value, pattern, query, page)
    table = res["table"]
    return {"benchmark": benchmark, "runs": names, "page": res["page"], "pages": res["pages"], "total": res["total"],
            "n_groups": res["n_groups"], "counts": res["counts"], "columns": [str(c) for c in table.columns],
            "rows": json.loads(table.to_json(orient="records", force_ascii=False))}


def open_group(store: Store, benchmark: str, runs: list[str], group: str, detail: str = "",
               boxes: bool = True) -> str:
    """The group view's HTML (as the Browse tab shows it) with every named run's answers, `detail` (one of
    `runs`; empty: the first) in detail; `boxes`: SPUR's panel boxes."""
    names = [r["name"] for r in runs_named(store, benchmark, list(runs or []))]
    if detail and detail not in names:
        raise BadApiRequest(f"detail {detail!r} is not one of the runs named ({', '.join(names) or 'none'})")
    if group not in cache.bench(store, benchmark).index.frame.index:
        raise NotFound(f"no group {group!r} in benchmark {benchmark!r}")
    return render_group(store, benchmark, group, names, detail or (names[0] if names else None), bool(boxes))


_CHANGED = ("n_items", "k_a", "k_b", "newly_correct", "newly_incorrect", "transition")  # the columns a row lists


def compare_runs(store: Store, benchmark: str, run_a: str, run_b: str, split: str = "", cluster: str = "",
                 cluster_fields: list[str] | None = None) -> dict[str, Any]:
    """The Compare tab as data, B = `run_b` against A = `run_a` (B − A = `score --run B --compare A`):
    {benchmark, family, a, b, split, clusters, turnover, group_transitions, differences, reason, changed}.
    `split`: empty for test (every split when the benchmark has none), "all", or a split; `cluster` /
    `cluster_fields`: the bootstrap clusters where the family offers others than groups (FrameEvidence)."""
    if run_a == run_b:
        raise BadApiRequest("name two different runs")
    runs_named(store, benchmark, [run_a, run_b])
    bd = cache.bench(store, benchmark)
    if split not in ("", "all"):
        _one_of("split", split, bd.splits, benchmark)
    chosen = split or (DEFAULT_SPLIT if DEFAULT_SPLIT in bd.splits else "all")
    clustering = None
    if cluster or cluster_fields:
        if not families.get(bd.family).capabilities.clusterings:
            raise BadApiRequest(f"benchmark {benchmark!r} ({bd.family}) resamples groups only: leave cluster empty")
        clustering = stats.Clustering.parse(cluster or "union", tuple(cluster_fields or ()) or None)
    res = compare.compare_runs(store, benchmark, run_a, run_b, None if chosen == "all" else chosen,
                               clustering=clustering)
    t = res["transitions"]
    changed = t[t["changed"]]
    return {"benchmark": benchmark, "family": res["family"], "a": run_a, "b": run_b, "split": chosen,
            "clusters": res["clusters"], "turnover": to_jsonable(res["turnover"]),
            "group_transitions": to_jsonable(res["counts"]), "differences": to_jsonable(res["differences"]),
            "reason": res["comparison"].get("reason"),
            "changed": [{"group": str(g), "n_items": int(n), "k_a": int(ka), "k_b": int(kb), "newly_correct": int(up),
                         "newly_incorrect": int(down), "transition": str(tr)}
                        for g, n, ka, kb, up, down, tr in zip(changed.index, *(changed[c].tolist() for c in _CHANGED),
                                                              strict=True)]}


_STATUSES = [value for _, value in audit.STATUS_CHOICES]
_METHODS = [value for _, value in audit.METHOD_CHOICES]


def audit_list(store: Store, benchmark: str, run: str, status: str = "invalid") -> dict[str, Any]:
    """The extraction audit of one run (the Browse tab's accordion): {benchmark, run, status, keys, listing,
    history}: `keys` the predictions with `status` ("invalid", "api_error" or "both") as
    `item_id · r<rotation>/rep<repeat>` (what audit_apply takes), `listing` and `history` the HTML the tab shows."""
    runs_named(store, benchmark, [run])
    _one_of("status", status, _STATUSES, benchmark)
    listing, keys = audit.problems_html(store, run, status or "invalid")
    return {"benchmark": benchmark, "run": run, "status": status or "invalid", "keys": keys, "listing": listing,
            "history": audit.history_html(store, run)}


def audit_apply(store: Store, benchmark: str, run: str, key: str, method: str = "parser:letter", letter: str = "",
                status: str = "invalid", request: gr.Request | None = None) -> dict[str, Any]:
    """Records an override of one prediction of `run` (by the signed-in user, else "local"), as the tab's Apply:
    `key` as audit_list gives it, `method` "parser:letter", "parser:tag" or "manual" (with `letter`). Returns
    audit_list's answer after it, with `result` (the tab's line saying what changed)."""
    runs_named(store, benchmark, [run])
    _one_of("method", method, _METHODS, benchmark)
    _one_of("status", status, _STATUSES, benchmark)
    result, *_ = audit.do_apply(store, run, key, method, letter or None, status or "invalid", request)
    return {**audit_list(store, benchmark, run, status), "result": result}


def calibration(store: Store, benchmark: str, run: str, sample: str = "", judge: str = "", second: str = "",
                ceiling: list[str] | None = None, consensus: list[str] | None = None) -> dict[str, Any]:
    """The Calibration tab's report of a traces run as JSON (what `calibration --json` prints): `sample` a
    calibration sample of the run (empty: every trace), `judge` / `second` its judge runs (empty: the first),
    `ceiling` annotator pairs ("A2,A3"), `consensus` annotators (empty: all)."""
    from db import judging

    runs_named(store, benchmark, [run])
    traced = [r["name"] for r in judging.trace_runs(store, benchmark)]
    _one_of("traces run", run, traced, benchmark)
    _one_of("calibration sample", sample, [s["name"] for s in judging.samples(store, run)], benchmark)
    judges = judging.judge_runs_of(store, run)
    _one_of("judge run", judge, judges, benchmark)
    _one_of("judge run", second, judges, benchmark)
    from ui.calibration import on_compute

    report: dict[str, Any] = on_compute(store, run, sample, judge, second, list(ceiling or []),
                                        list(consensus or []))[-1]
    return report


def build_api(store: Store) -> None:
    """The endpoints, inside the app's gr.Blocks (the Metrics tab registers `metrics` itself)."""
    gr.api(bind(browse_list, store), api_name="browse_list")
    gr.api(bind(open_group, store), api_name="open_group")
    gr.api(bind(compare_runs, store), api_name="compare", concurrency_limit=4, concurrency_id="compare-api")
    gr.api(bind(audit_list, store), api_name="audit_list")
    gr.api(bind(audit_apply, store), api_name="audit_apply", concurrency_id="audit-api")
    gr.api(bind(calibration, store), api_name="calibration")
