"""The Compare tab (SPEC §8, issue 6): two runs of one benchmark side by side: item turnover (newly correct /
newly incorrect, 000 §6.2), the group-level transition table, the paired cluster-bootstrap CI of each metric's
difference, and the groups that changed, each opening its group view."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import gradio as gr
import pandas as pd

from core import comparison, families, stats
from core import groups as core_groups
from core.catalogue import Column, placed
from core.errors import CrosscheckError, NotFound
from core.report_tables import fmt_signed, signed_interval
from core.schema import Rate
from db import browse as dbb
from ui import compare_diff
from ui.context import Ctx
from ui.glossary import header_tip
from ui.handlers import user_error
from ui.links import View, from_request, landed
from ui.metrics import CLUSTER_CHOICES, clusterings_of, union_field_choices
from ui.tables import verdict, with_verdicts
from ui.templating import macro
from ui.views import cache, render_group
from ui.views.common import ZOOM_JS, run_label, text

CHANGE_FILTERS = [("All changed groups", "changed"), ("Newly wrong somewhere", "lost"),
                  ("Newly right somewhere", "gained"), *[(t, t) for t in core_groups.TRANSITIONS]]


def metric_label(col: Column) -> str:
    """How the tab names a paired metric: its declaration's name in prose ("tasks.NP" -> "NP task")."""
    at = placed(col)
    return at.metric.title(*at.keys)


def _pct(rate: object) -> dict[str, str]:
    """A rate as the table shows it: text ("61.2%"), k/n, or why it is n/a (`na`)."""
    if isinstance(rate, Rate):
        if rate.value is None:
            return {"na": text(rate.reason), "text": "", "kn": ""}
        return {"na": "", "text": f"{rate.value * 100:.1f}%",
                "kn": f"{rate.k}/{rate.n}" if rate.k is not None and rate.n else ""}
    return {"na": "", "text": text(rate), "kn": ""}


def _diff(rate: Rate, lower_is_better: bool = False) -> dict[str, str]:
    """A difference: its text in points, coloured by whether it is better (`cls`), and its interval."""
    if rate.value is None:
        return {"na": text(rate.reason), "cls": "", "text": "", "ci": ""}
    better = -rate.value if lower_is_better else rate.value
    ci = ""
    if rate.ci:
        lo, hi = rate.ci
        ci = f"{signed_interval((lo, hi))}{' *' if lo > 0 or hi < 0 else ''}"
    return {"na": "", "cls": "cc-correct" if better > 0 else ("cc-wrong" if better < 0 else ""),
            "text": f"{fmt_signed(rate.value * 100)} pts", "ci": ci}


# The resample counts W (draws x clusters) every comparison of a benchmark's split draws: the same for every pair
# of runs (core.stats.DrawCache), so the server draws them once and keeps the latest two (184 MB each for 2,298
# stems and 20,000 draws); each comparison then resamples its columns with one product instead of drawing again.
# DrawCache's shared dict is not thread safe, so comparisons take turns on it (each is a few products once W is
# kept). The numbers are those of a comparison without it (core.stats.ScoringContext).
_WEIGHTS: dict[tuple[int, int, int], Any] = {}
_WEIGHTS_LOCK = threading.Lock()


def compare_runs(store: Any, bench: str, run_a: str, run_b: str, split: str | None = "test",
                 draws: int = stats.DEFAULT_DRAWS, clustering: stats.Clustering | None = None) -> dict[str, Any]:
    """Everything the tab shows, as data: turnover A -> B, transitions (per group), counts, and the paired
    differences of core.comparison with B as this run and A as the other (B − A = `score --run B --compare A`)."""
    bd = cache.bench(store, bench)
    loaded = cache.run_data(store, [run_a, run_b])
    for name in (run_a, run_b):
        if name not in loaded:
            raise NotFound(f"no run named {name!r} in benchmark {bench!r}")
    rda, rdb = loaded[run_a], loaded[run_b]
    full = cache.full_items(store, bench)
    split_v = split or None
    items = full if split_v is None else full[full["split"] == split_v]
    trans = core_groups.group_transitions(bd.family, items, rda, rdb)
    clustered = clustering if families.get(bd.family).capabilities.clusterings else None
    with _WEIGHTS_LOCK, stats.ScoringContext(draws=stats.DrawCache(weights=_WEIGHTS)).active():
        result = comparison.compare(full, rdb, rda, split=split_v, draws=draws, clustering=clustered)
    return {
        "family": bd.family,
        "turnover": comparison.turnover(full, rda, rdb, split=split_v),
        "transitions": trans,
        "counts": core_groups.transition_counts(trans),
        "comparison": result,
        "differences": result.get("metrics", {}),
        "clusters": clustered.label if clustered is not None else "groups",
    }


def _kpi(label: str, rate: object, cls: str = "") -> tuple[str, str, str, str]:
    """(label, value, the line under it, class) of one turnover number."""
    if isinstance(rate, Rate):
        val = "n/a" if rate.k is None else str(rate.k)
        sub = f"of {rate.n} items" if rate.n else text(rate.reason)
    else:
        val, sub = (f"{rate:+d}" if isinstance(rate, int) else text(rate)), "items"
    return label, val, sub, cls


def summary_html(store: Any, bench: str, run_a: str, run_b: str, res: dict[str, Any], draws: int) -> str:
    recs = {r["name"]: r for r in dbb.run_records(store, bench)}
    t = res["turnover"]
    kpis = [_kpi("newly correct", t["newly_correct"], "cc-up"), _kpi("newly incorrect", t["newly_incorrect"], "cc-down"),
            _kpi("net", t["net"]), _kpi("both correct", t["both_correct"]), _kpi("both wrong", t["both_wrong"])]
    return macro("compare.html", "summary")(
        a=run_label(recs[run_a]), b=run_label(recs[run_b]), turnover_tip=header_tip("Turnover 000 §6.2"), kpis=kpis,
        dis=_disagreement(res), counts=res["counts"], n_groups=len(res["transitions"]),
        n_changed=int(res["transitions"]["changed"].sum()), diffs=_differences(res, draws))


def _disagreement(res: dict[str, Any]) -> tuple[str, str] | None:
    """Cross-run disagreement (000 App. A): the share of items whose answer letters differ, with its interval."""
    rate = res.get("comparison", {}).get("disagreement")
    if not isinstance(rate, Rate):
        return None
    if rate.value is None:
        return "n/a", text(rate.reason)
    ci = f"95% CI [{rate.ci[0] * 100:.1f}, {rate.ci[1] * 100:.1f}]% over {res.get('clusters', 'groups')}" \
        if rate.ci else ""
    return f"{rate.value * 100:.1f}%", f"{rate.k} of {rate.n} items; {ci}"


@dataclass(slots=True, frozen=True)
class DiffRow:
    """One metric of the differences table: its label and glossary tip, A (other), B (this), B − A."""

    label: str
    tip: str
    other: dict[str, str]
    this: dict[str, str]
    diff: dict[str, str]


@dataclass(slots=True, frozen=True)
class Differences:
    """The differences table (a reason when the comparison is undefined) and its bootstrap's settings."""

    reason: str
    rows: list[DiffRow]
    ci_tip: str
    clusters: str
    draws: str
    seed: int


def _differences(res: dict[str, Any], draws: int) -> Differences:
    columns = res.get("comparison", {}).get("columns", {})  # each difference's declaration (core.catalogue)
    rows = [DiffRow(metric_label(columns[m]), header_tip(metric_label(columns[m])), _pct(d["other"]), _pct(d["this"]),
                    _diff(d["difference"], placed(columns[m]).metric.lower_is_better))
            for m, d in res["differences"].items()]
    return Differences(text(res.get("comparison", {}).get("reason")), rows, header_tip("95% CI"),
                       text(res.get("clusters", "groups")), f"{draws:,}", stats.DEFAULT_SEED)


def differences_html(res: dict[str, Any], draws: int) -> str:
    """The metric differences: A, B, B − A (this − other, B being this run) and the paired interval."""
    return macro("compare.html", "differences")(_differences(res, draws))


def changed_table(trans: pd.DataFrame, which: str | None) -> pd.DataFrame:
    t = trans[trans["changed"]]
    if which == "lost":
        t = t[t["newly_incorrect"] > 0]
    elif which == "gained":
        t = t[t["newly_correct"] > 0]
    elif which in core_groups.TRANSITIONS:
        t = trans[(trans["transition"] == which) & trans["changed"]]
    return pd.DataFrame({
        "group": list(t.index), "A correct": [verdict(a, n) for a, n in zip(t["k_a"], t["n_items"], strict=True)],
        "B correct": [verdict(b, n) for b, n in zip(t["k_b"], t["n_items"], strict=True)],
        "newly correct": t["newly_correct"].to_numpy(), "newly wrong": t["newly_incorrect"].to_numpy(),
        "group transition": t["transition"].to_numpy(),
    })


# --------------------------------------------------------------------------- handlers (plain functions)


def bench_choices(store: Any, bench: str | None, runs: list[str] | None) -> tuple[Any, Any, Any]:
    """Run A / run B / split pickers for a benchmark: the header's selected runs first."""
    if not bench:
        return gr.update(choices=[], value=None), gr.update(choices=[], value=None), gr.update(choices=[])
    recs = dbb.run_records(store, bench)
    choices = [(r["name"] + (" (synthetic)" if r["synthetic"] else ""), r["name"]) for r in recs]
    names = [r["name"] for r in recs]
    chosen = [r for r in (runs or []) if r in names] + [n for n in names if n not in (runs or [])]
    splits = cache.bench(store, bench).splits
    return (gr.update(choices=choices, value=chosen[0] if chosen else None),
            gr.update(choices=choices, value=chosen[1] if len(chosen) > 1 else None),
            gr.update(choices=[(s, s) for s in splits] + [("all splits", "")],
                      value="test" if "test" in splits else (splits[0] if splits else "")))


def cluster_controls(store: Any, bench: str | None, chosen: list[str] | None) -> tuple[Any, Any]:
    """The bootstrap-cluster row, shown for a family whose intervals may resample other clusters."""
    shown = bool(bench and families.get(cache.bench(store, bench).family).capabilities.clusterings)
    choices = union_field_choices(store, bench) if bench and shown else []
    kept = [f for f in (chosen or []) if f in choices] or [f for f in stats.DEFAULT_UNION_FIELDS if f in choices]
    return gr.update(visible=shown), gr.update(choices=choices, value=kept)


def run_compare(store: Any, bench: str | None, a: str | None, b: str | None, split_v: str | None,
                which_v: str | None, cluster_v: str | None = None, fields_v: list[str] | None = None
                ) -> tuple[str, pd.DataFrame, dict[str, Any], str]:
    """The Compare button: summary HTML, changed-groups table, the state the table's clicks read, an empty view."""
    if not bench or not a or not b:
        raise user_error("pick a benchmark and two runs")
    if a == b:
        raise user_error("pick two different runs")
    try:
        picked = clusterings_of([cluster_v] if cluster_v else [], fields_v)
        res = compare_runs(store, bench, a, b, split_v, clustering=picked[0] if picked else None)
    except CrosscheckError as exc:
        raise user_error(str(exc)) from exc
    return (summary_html(store, bench, a, b, res, stats.DEFAULT_DRAWS),
            with_verdicts(changed_table(res["transitions"], which_v)),
            {"bench": bench, "a": a, "b": b, "transitions": res["transitions"]}, "")


def filter_changed(st: dict[str, Any] | None, which_v: str | None) -> Any:
    """The changed-groups table for `which_v` (a Styler: its verdict cells green / red)."""
    if not st:
        return pd.DataFrame({"group": []})
    return with_verdicts(changed_table(st["transitions"], which_v))


def open_changed(store: Any, st: dict[str, Any] | None, row: list[Any] | None) -> str:
    """The view of the clicked changed group, with both runs' answers (B in detail)."""
    if not st:
        return ""
    gid = str(row[0]) if row else None
    view = render_group(store, st["bench"], gid, [st["a"], st["b"]], st["b"])
    return compare_diff.side_by_side(store, st["bench"], gid, st["a"], st["b"]) + view


def linked_pickers(store: Any, bench: str | None, runs: list[str] | None, link: View | None) -> tuple[Any, Any, Any]:
    """(run A, run B, split) pickers for the header's benchmark and runs, on the pair a link of this benchmark
    names."""
    a, b, splits = bench_choices(store, bench, runs)
    if link is not None and link.benchmark == bench and link.a and link.b:  # the pair a link names
        a, b = {**a, "value": link.a}, {**b, "value": link.b}
    return a, b, splits


def compare_link(store: Any, link: View | None, which_v: str | None, cluster_v: str | None,
                 fields_v: list[str] | None) -> Any:
    """A link to Compare with a pair (ui.links): the comparison, as the Compare button makes it (on the test
    split where the benchmark has one); nothing for any other link."""
    if link is None or not link.benchmark or link.tab != "compare" or not (link.a and link.b):
        return gr.skip(), gr.skip(), gr.skip(), gr.skip()
    splits = cache.bench(store, link.benchmark).splits
    return run_compare(store, link.benchmark, link.a, link.b, "test" if "test" in splits else "", which_v,
                       cluster_v, fields_v)


# --------------------------------------------------------------------------- layout


def build_compare(ctx: Ctx) -> None:
    """The tab's layout; its events are wired by _wire to the plain handlers above."""
    gr.Markdown("Two runs of the benchmark picked in the header: what turned right, what turned wrong, and whether "
                "the metric differences are larger than resampling noise.", elem_classes=["cc-muted"])
    with gr.Row():
        run_a = gr.Dropdown(label="Run A (before; the other run)", choices=[], scale=3, elem_id="cc-compare-a",
                            info="the baseline: differences are B − A, as score --run B --compare A")
        run_b = gr.Dropdown(label="Run B (after; this run)", choices=[], scale=3, elem_id="cc-compare-b")
        split = gr.Dropdown(label="Split", choices=[], scale=1, elem_id="cc-compare-split")
        go = gr.Button("Compare", variant="primary", scale=0, elem_id="cc-compare-go")
    # FrameEvidence: which clusters the paired bootstrap resamples (000 App. A, D.6)
    with gr.Row(visible=False) as cluster_row:
        cluster = gr.Dropdown(label="Bootstrap clusters", choices=CLUSTER_CHOICES, value="group", scale=2,
                              elem_id="cc-compare-cluster")
        fields = gr.Dropdown(label="Scene / union clusters link groups sharing a value of",
                             choices=list(stats.DEFAULT_UNION_FIELDS), value=list(stats.DEFAULT_UNION_FIELDS),
                             multiselect=True, allow_custom_value=True, scale=3, elem_id="cc-compare-cluster-fields")
    out = gr.HTML(macro("compare.html", "muted")("Pick two runs and press Compare."), elem_id="cc-compare-summary")
    with gr.Row():
        which = gr.Dropdown(label="Changed groups", choices=CHANGE_FILTERS, value="changed", scale=1,
                            elem_id="cc-compare-filter")
        gr.HTML(macro("compare.html", "muted")("Click a row to open the group with both runs' answers."))
    table = gr.Dataframe(interactive=False, max_height=320, elem_id="cc-compare-changed", show_label=False)
    view = gr.HTML(elem_id="cc-compare-view", js_on_load=ZOOM_JS)
    _wire(ctx, {"a": run_a, "b": run_b, "split": split, "go": go, "cluster_row": cluster_row, "cluster": cluster,
                "fields": fields, "out": out, "which": which, "table": table, "view": view, "state": gr.State(None)})


def _wire(ctx: Ctx, c: dict[str, Any]) -> None:
    """The Compare tab's events: the run and cluster pickers follow the header (on page load, the view of its
    link), Compare compares, a link naming a pair compares it once the page has landed (ctx.parts["compare.show"],
    ui.links), the filter and a row click show the changed groups."""
    store = ctx.store
    pickers = [c["a"], c["b"], c["split"]]
    cluster_outputs = [c["cluster_row"], c["fields"]]
    compared = [c["out"], c["table"], c["state"], c["view"]]

    def on_bench(bench: str | None, runs: list[str] | None, link: dict[str, Any] | None,
                 request: gr.Request) -> tuple[Any, Any, Any]:
        if link is None:  # the page load: the benchmark of the page's link, if any (ui.links.landed)
            bench, runs = landed(store, bench, runs, request)
            link = (from_request(store, request) or View()).as_dict()
        return linked_pickers(store, bench, runs, View.of(link))

    def linked_compare(link: dict[str, Any] | None, which_v: str | None, cluster_v: str | None,
                       fields_v: list[str] | None) -> Any:
        return compare_link(store, View.of(link), which_v, cluster_v, fields_v)

    def on_clusters(bench: str | None, chosen: list[str] | None) -> tuple[Any, Any]:
        return cluster_controls(store, bench, chosen)

    def on_clusters_landing(bench: str | None, chosen: list[str] | None, request: gr.Request) -> tuple[Any, Any]:
        return cluster_controls(store, landed(store, bench, None, request)[0], chosen)

    def do_compare(bench, a, b, split_v, which_v, cluster_v=None, fields_v=None):  # type: ignore[no-untyped-def]
        return run_compare(store, bench, a, b, split_v, which_v, cluster_v, fields_v)

    def on_select(st: dict[str, Any] | None, evt: gr.SelectData) -> str:
        return open_changed(store, st, evt.row_value or [])

    for trig in (ctx.benchmark.change, ctx.refresh.click, ctx.runs.change):
        trig(on_bench, [ctx.benchmark, ctx.runs, ctx.link], pickers, api_visibility="private")
    for trig in (ctx.benchmark.change, ctx.refresh.click):
        trig(on_clusters, [ctx.benchmark, c["fields"]], cluster_outputs, api_visibility="private")
    ctx.page.load(on_bench, [ctx.benchmark, ctx.runs, ctx.link], pickers, api_visibility="private")
    ctx.page.load(on_clusters_landing, [ctx.benchmark, c["fields"]], cluster_outputs, api_visibility="private")
    c["go"].click(do_compare, [ctx.benchmark, *pickers, c["which"], c["cluster"], c["fields"]], compared,
                  api_visibility="private")  # scripts call ui.api's `compare`
    c["which"].input(filter_changed, [c["state"], c["which"]], c["table"], api_visibility="private")
    ctx.parts.update({"compare.a": c["a"], "compare.b": c["b"],
                      "compare.show": (linked_compare, [c["which"], c["cluster"], c["fields"]], compared)})
    c["table"].select(on_select, c["state"], c["view"], api_visibility="private")
