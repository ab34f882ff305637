"""The Compare tab (SPEC §8, issue 6): two runs of one benchmark side by side: item turnover (newly correct /
newly incorrect, 000 §6.2), the group-level transition table, the paired cluster-bootstrap CI of each metric's
difference, and the groups that changed, each opening its group view."""

from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd

from core import groups as core_groups
from core import stats
from core.errors import CrosscheckError, NotFound
from core.schema import Rate
from db import browse as dbb
from ui.context import Ctx
from ui.metrics import CLUSTER_CHOICES, clusterings_of, union_field_choices
from ui.tables import verdict, with_verdicts
from ui.views import cache, render_group
from ui.views.common import ZOOM_JS, esc, run_label_html

METRIC_LABELS = {
    "accuracy": "accuracy", "macro_f1": "macro F1", "fq1_gem": "FQ1 group exact match", "nts": "NTS",
    "dis": "DIS", "p_accuracy": "P accuracy", "r_accuracy": "R accuracy", "f_accuracy": "F accuracy",
    "perception": "perception", "understanding": "understanding", "reasoning": "reasoning",
    "group_exact_match": "group exact match",
}
CHANGE_FILTERS = [("All changed groups", "changed"), ("Newly wrong somewhere", "lost"),
                  ("Newly right somewhere", "gained"), *[(t, t) for t in core_groups.TRANSITIONS]]


def _pct(rate: Any) -> str:
    if isinstance(rate, Rate):
        if rate.value is None:
            return f'<span class="cc-muted" title="{esc(rate.reason)}">n/a ({esc(rate.reason)})</span>'
        kn = f' <span class="cc-muted">{rate.k}/{rate.n}</span>' if rate.k is not None and rate.n else ""
        return f"{rate.value * 100:.1f}%{kn}"
    return esc(rate)


def _diff(rate: Rate) -> tuple[str, str]:
    if rate.value is None:
        return f'<span class="cc-muted">n/a ({esc(rate.reason)})</span>', ""
    cls = "cc-correct" if rate.value > 0 else ("cc-wrong" if rate.value < 0 else "")
    ci = ""
    if rate.ci:
        lo, hi = rate.ci
        sig = " *" if lo > 0 or hi < 0 else ""
        ci = f"[{lo * 100:+.1f}, {hi * 100:+.1f}]{sig}"
    return f'<span class="{cls}">{rate.value * 100:+.1f} pts</span>', ci


def compare_runs(store: Any, bench: str, run_a: str, run_b: str, split: str | None = "test",
                 draws: int = stats.DEFAULT_DRAWS, clustering: stats.Clustering | None = None) -> dict[str, Any]:
    """Everything the tab shows, as data: turnover, transitions (per group), counts, paired differences."""
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
    return {
        "family": bd.family,
        "turnover": core_groups.turnover(bd.family, full, rda, rdb, split=split_v),
        "transitions": trans,
        "counts": core_groups.transition_counts(trans),
        "differences": core_groups.paired_differences(bd.family, full, rda, rdb, split=split_v, draws=draws,
                                                      clustering=clustering if bd.family == "frameevidence" else None),
        "clusters": clustering.label if clustering is not None and bd.family == "frameevidence" else "groups",
    }


def summary_html(store: Any, bench: str, run_a: str, run_b: str, res: dict[str, Any], draws: int) -> str:
    recs = {r["name"]: r for r in dbb.run_records(store, bench)}
    a, b = run_label_html(recs[run_a]), run_label_html(recs[run_b])
    t = res["turnover"]

    def kpi(label: str, rate: Any, cls: str = "") -> str:
        if isinstance(rate, Rate):
            val = "n/a" if rate.k is None else str(rate.k)
            sub = f"of {rate.n} items" if rate.n else esc(rate.reason or "")
        else:
            val, sub = (f"{rate:+d}" if isinstance(rate, int) else esc(rate)), "items"
        return f'<div class="cc-kpi {cls}"><span class="cc-muted">{esc(label)}</span><b>{val}</b>' \
               f'<span class="cc-muted">{sub}</span></div>'

    kpis = (kpi("newly correct", t["newly_correct"], "cc-up") + kpi("newly incorrect", t["newly_incorrect"], "cc-down")
            + kpi("net", t["net"]) + kpi("both correct", t["both_correct"]) + kpi("both wrong", t["both_wrong"]))
    c = res["counts"]
    grid = ('<table class="cc-answers-table cc-transitions"><thead><tr><th>groups</th><th>B all correct</th>'
            '<th>B not all correct</th></tr></thead><tbody>'
            f'<tr><th>A all correct</th><td>{c["correct → correct"]}</td><td class="cc-wrong">{c["correct → wrong"]}</td></tr>'
            f'<tr><th>A not all correct</th><td class="cc-correct">{c["wrong → correct"]}</td><td>{c["wrong → wrong"]}</td>'
            '</tr></tbody></table>')
    rows = []
    for m, d in res["differences"].items():
        if isinstance(d, Rate):
            rows.append(f'<tr><th>{esc(METRIC_LABELS.get(m, m))}</th><td colspan="4">{_pct(d)}</td></tr>')
            continue
        diff, ci = _diff(d["difference"])
        rows.append(f'<tr><th>{esc(METRIC_LABELS.get(m, m))}</th><td class="cc-num">{_pct(d["a"])}</td>'
                    f'<td class="cc-num">{_pct(d["b"])}</td><td class="cc-num">{diff}</td><td class="cc-num">{ci}</td></tr>')
    diffs = ('<table class="cc-answers-table cc-ci-table"><thead><tr><th>metric</th><th>A</th><th>B</th><th>B − A</th>'
             f'<th>95% CI (paired)</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
             f'<div class="cc-muted">Percentile cluster bootstrap over {esc(res.get("clusters", "groups"))}, both '
             f'runs resampled with the same clusters in each of {draws:,} draws (seed {stats.DEFAULT_SEED}); * = the '
             'interval excludes 0.</div>')
    n_changed = int(res["transitions"]["changed"].sum())
    return (f'<div class="cc-view"><div class="cc-view-head"><div class="cc-view-title">A = {a} &nbsp;→&nbsp; B = {b}'
            f'</div></div><div class="cc-section-title">Item turnover (000 §6.2)</div><div class="cc-kpis">{kpis}</div>'
            f'<div class="cc-cols cc-cols-2"><div><div class="cc-section-title">Group transitions (every item of the '
            f'group correct?)</div>{grid}<div class="cc-muted">{len(res["transitions"])} groups answered by both runs; '
            f'{n_changed} with at least one item changing correctness.</div></div><div><div class="cc-section-title">'
            f'Metric differences</div>{diffs}</div></div></div>')


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


def build_compare(ctx: Ctx) -> None:
    store = ctx.store
    gr.Markdown("Two runs of the benchmark picked in the header: what turned right, what turned wrong, and whether "
                "the metric differences are larger than resampling noise.", elem_classes=["cc-muted"])
    with gr.Row():
        run_a = gr.Dropdown(label="Run A (before)", choices=[], scale=3, elem_id="cc-compare-a")
        run_b = gr.Dropdown(label="Run B (after)", choices=[], scale=3, elem_id="cc-compare-b")
        split = gr.Dropdown(label="Split", choices=[], scale=1, elem_id="cc-compare-split")
        go = gr.Button("Compare", variant="primary", scale=0, elem_id="cc-compare-go")
    # FrameEvidence: which clusters the paired bootstrap resamples (000 App. A, D.6)
    with gr.Row(visible=False) as cluster_row:
        cluster = gr.Dropdown(label="Bootstrap clusters", choices=CLUSTER_CHOICES, value="group", scale=2,
                              elem_id="cc-compare-cluster")
        fields = gr.Dropdown(label="Union links groups sharing an image or a value of",
                             choices=list(stats.DEFAULT_UNION_FIELDS), value=list(stats.DEFAULT_UNION_FIELDS),
                             multiselect=True, allow_custom_value=True, scale=3, elem_id="cc-compare-cluster-fields")
    out = gr.HTML('<div class="cc-muted">Pick two runs and press Compare.</div>', elem_id="cc-compare-summary")
    with gr.Row():
        which = gr.Dropdown(label="Changed groups", choices=CHANGE_FILTERS, value="changed", scale=1,
                            elem_id="cc-compare-filter")
        gr.HTML('<div class="cc-muted">Click a row to open the group with both runs\' answers.</div>')
    table = gr.Dataframe(interactive=False, max_height=320, elem_id="cc-compare-changed", show_label=False)
    view = gr.HTML(elem_id="cc-compare-view", js_on_load=ZOOM_JS)
    state = gr.State(None)

    def on_bench(bench, runs):
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

    def cluster_controls(bench, chosen):
        is_fe = bool(bench) and cache.bench(store, bench).family == "frameevidence"
        choices = union_field_choices(store, bench) if is_fe else []
        kept = [f for f in (chosen or []) if f in choices] or [f for f in stats.DEFAULT_UNION_FIELDS if f in choices]
        return gr.update(visible=is_fe), gr.update(choices=choices, value=kept)

    def do_compare(bench, a, b, split_v, which_v, cluster_v=None, fields_v=None):
        if not bench or not a or not b:
            raise gr.Error("pick a benchmark and two runs")
        if a == b:
            raise gr.Error("pick two different runs")
        try:
            picked = clusterings_of([cluster_v] if cluster_v else [], fields_v)
            res = compare_runs(store, bench, a, b, split_v, clustering=picked[0] if picked else None)
        except CrosscheckError as exc:
            raise gr.Error(str(exc)) from exc
        return (summary_html(store, bench, a, b, res, stats.DEFAULT_DRAWS),
                with_verdicts(changed_table(res["transitions"], which_v)),
                {"bench": bench, "a": a, "b": b, "transitions": res["transitions"]}, "")

    def do_filter(st, which_v):
        if not st:
            return pd.DataFrame({"group": []})
        return with_verdicts(changed_table(st["transitions"], which_v))

    def on_select(st, evt: gr.SelectData):
        if not st:
            return ""
        row = evt.row_value or []
        return render_group(store, st["bench"], str(row[0]) if row else None, [st["a"], st["b"]], st["b"])

    for trig in (ctx.benchmark.change, ctx.refresh.click):
        trig(on_bench, [ctx.benchmark, ctx.runs], [run_a, run_b, split], api_visibility="private")
    ctx.runs.change(on_bench, [ctx.benchmark, ctx.runs], [run_a, run_b, split], api_visibility="private")
    root = gr.context.Context.root_block
    if root is not None:
        root.load(on_bench, [ctx.benchmark, ctx.runs], [run_a, run_b, split], api_visibility="private")
    for trig in (ctx.benchmark.change, ctx.refresh.click):
        trig(cluster_controls, [ctx.benchmark, fields], [cluster_row, fields], api_visibility="private")
    if root is not None:
        root.load(cluster_controls, [ctx.benchmark, fields], [cluster_row, fields], api_visibility="private")
    go.click(do_compare, [ctx.benchmark, run_a, run_b, split, which, cluster, fields], [out, table, state, view],
             api_name="compare")
    which.input(do_filter, [state, which], table, api_visibility="private")
    table.select(on_select, state, view, api_visibility="private")
