"""StemBind stem card (002 Figure 1, App. E): the stem image, every P probe, the R probe and the F item with
each run's answers and verdicts, the decomposition category per run, and the F trace beside S1..S4."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from core.families.stembind import catalogue as c
from core.families.stembind.groups import CATEGORY_LABELS, CATEGORY_RULES, stem_category
from core.families.stembind.vocab import DECOMPOSITION, SSA_CONTROL, SSA_LEVELS
from core.report_tables import Cell, RunScore, Table, reason_of, value
from ui import charts as ch
from ui.templating import render as render_template
from ui.views import FamilyView, Group
from ui.views import common as vc

KIND_TITLES = {"P": "Perception probe", "R": "Rule probe", "F": "Full task"}


def run_summary(records: Sequence[Mapping[str, Any]], outcomes: Mapping[str, tuple[bool, bool]]) -> dict[str, Any]:
    """What the stem card shows of one run beside its marks: the stem's category (None when incomplete)."""
    return {"category": stem_category(records, outcomes)}


def category(rv: vc.RunView) -> tuple[str, str, str] | None:
    """The run's category of the stem as its badge shows it: (key, label, rule); None when incomplete."""
    cat = (rv.summary or {}).get("category")
    if not cat:
        return None
    return str(cat), CATEGORY_LABELS.get(cat, cat), CATEGORY_RULES.get(cat, "")


def _kind_kn(rv: vc.RunView, recs: list[dict[str, Any]], kind: str) -> tuple[str, str]:
    """A run's k / n correct on the stem's items of one kind."""
    ids = [r["item_id"] for r in recs if r["kind"] == kind]
    return vc.kn_cell(sum(rv.correct.get(i, False) for i in ids), sum(rv.answered.get(i, False) for i in ids))


def _decomposition(g: Group, recs: list[dict[str, Any]]) -> list[vc.RunCounts]:
    chosen = {r.name for r in g.selected}
    return [vc.RunCounts(vc.run_label(rv.record, short=True), rv.name in chosen,
                         [_kind_kn(rv, recs, k) for k in ("P", "R", "F")], category(rv))
            for rv in g.runs if rv.answered_items()]


@dataclass(slots=True, frozen=True)
class Probe:
    """A P probe's row: its number, question, options inline (letter, text, gold), gold, each picked run's mark."""

    n: int
    question: str
    options: list[tuple[str, str, bool]]
    answer: str
    marks: list[vc.Mark]


def _probes(g: Group, probes: list[dict[str, Any]]) -> list[Probe]:
    return [Probe(i, vc.text(it["question"]), [(k, vc.text(v), k == it["answer"]) for k, v in it["options"].items()],
                  vc.text(it["answer"]), [vc.answer_mark_of(r, it["item_id"]) for r in g.selected])
            for i, it in enumerate(probes, 1)]


def render(store: Any, g: Any, boxes: bool = True) -> str:
    recs = g.records()
    probes = [r for r in recs if r["kind"] == "P"]
    rule = [r for r in recs if r["kind"] == "R"]
    full = [r for r in recs if r["kind"] == "F"]
    first = (full or recs)[0]
    m = first.get("meta") or {}
    stem_imgs = list(dict.fromkeys(h for r in recs for h in r["images"]))
    order = probes + rule + full
    labels = {it["item_id"]: (f"P{probes.index(it) + 1}" if it["kind"] == "P" else it["kind"]) for it in order}
    return render_template(
        "views/stembind.html", group_id=g.group_id,
        chips=vc.chips([("operation", m.get("operation")), ("family", m.get("family")),
                        ("perception load", m.get("perception_load")), ("layout", m.get("layout")),
                        ("probes", f"{len(probes)} P, {len(rule)} R, {len(full)} F")]),
        images=[vc.thumb(store, h, f"I{i + 1}" if len(stem_imgs) > 1 else "", size=480, extra_cls="cc-large")
                for i, h in enumerate(stem_imgs)],
        decomposition=_decomposition(g, recs), n_probes=len(probes), probes=_probes(g, probes),
        probe_runs=[vc.run_label(r.record, short=True) for r in g.selected],
        cards=[vc.card(it, g.selected, KIND_TITLES[it["kind"]], vc.text(it["item_id"])) for it in rule + full],
        all_runs=vc.all_runs(g, order, col_label=lambda it: labels[it["item_id"]],
                             extra_cols=[("category", category)]),
        detail=vc.detail(full + rule + probes, g.detail, g.flags,
                         title=lambda it: labels[it["item_id"]] + " · " + KIND_TITLES[it["kind"]]))


# charts


def sb_rf_chasm(runs: Sequence[RunScore]) -> go.Figure:
    """R accuracy (x) vs F accuracy (y) per run and per operation; the diagonal is R = F."""
    title = "The R-F chasm: rule accuracy vs full-problem accuracy"
    fig = go.Figure()
    fig.add_scatter(x=[0, 100], y=[0, 100], mode="lines", line=dict(color="#aaa", dash="dash"), name="R = F",
                    hoverinfo="skip")
    for i, r in enumerate(runs):
        rr, ff = value(r, c.R_ACCURACY), value(r, c.F_ACCURACY)
        if reason_of(rr) is not None or reason_of(ff) is not None:
            continue
        color = ch.PALETTE[i % len(ch.PALETTE)]
        ops = value(r, c.BY_OPERATION) or {}
        xs, ys, names, hov = [], [], [], []
        for op, block in ops.items():
            if reason_of(block.get("r")) is None and reason_of(block.get("f")) is None:
                xs.append(100 * block["r"]["value"])
                ys.append(100 * block["f"]["value"])
                names.append(op)
                hov.append(f"{op}: R {block['r']['k']}/{block['r']['n']}, F {block['f']['k']}/{block['f']['n']}")
        if xs:
            fig.add_scatter(name=f"{r.name} per operation", x=xs, y=ys, mode="markers", text=names,
                            marker=dict(color=color, size=7, opacity=0.55), customdata=hov, legendgroup=r.name,
                            hovertemplate="%{customdata}<extra></extra>", showlegend=False)
        fig.add_scatter(name=ch.series_name(r.name, r.synthetic), x=[100 * rr["value"]], y=[100 * ff["value"]],
                        error_x=ch.error_bars([Cell(rr)]), error_y=ch.error_bars([Cell(ff)]), mode="markers",
                        marker=dict(color=color, size=15, line=dict(width=1.5, color="#222")),
                        legendgroup=r.name,
                        customdata=[html.escape(f"R {rr['k']}/{rr['n']}, F {ff['k']}/{ff['n']}")],
                        hovertemplate="%{customdata}<extra>%{fullData.name}</extra>")
    fig.update_layout(**ch.LAYOUT, title=title, xaxis_title="R accuracy (%)", yaxis_title="F accuracy (%)")
    fig.update_xaxes(range=[0, 102])
    fig.update_yaxes(range=[0, 102])
    return fig


def stacked_decomposition(table: Table) -> go.Figure:
    title = "Where stems fail: solved / can't bind / can't reason / can't see"
    colors = ["#3a9a5b", "#d9822b", "#b8423a", "#6b7a8f"]
    fig = go.Figure()
    names = [ch.series_name(r.labels[0], r.synthetic) for r in table.rows]
    for key, color in zip(DECOMPOSITION, colors, strict=True):
        j = table.columns.index(c.CATEGORY[key].label)
        cells = [r.cells[j] for r in table.rows]
        fig.add_bar(name=f"{CATEGORY_LABELS[key]} ({CATEGORY_RULES[key]})", y=names, x=[ch.pct(c) for c in cells], orientation="h",
                    marker_color=color, customdata=ch.hover(cells),
                    hovertemplate="%{x:.1f}%<br>%{customdata}<extra>%{fullData.name}</extra>")
    fig.update_layout(**ch.LAYOUT, title=title, barmode="stack", xaxis_title="% of complete stems")
    fig.update_layout(height=max(220, 90 + 40 * len(names)))
    return fig


def ssa_curves(runs: Sequence[RunScore]) -> go.Figure:
    # two short lines: the one-line title was clipped in the half-width chart at 1440 px
    title = ("SSA: F accuracy by level H0–H4 (002 §3.3)<br><span style='font-size:12px'>verified stage text; "
             "dashed: irrelevant-S1 control</span>")
    fig = go.Figure()
    seen = set()
    for i, r in enumerate(runs):
        node = value(r, c.SSA)
        if reason_of(node) is not None or not isinstance(node, dict):
            continue
        ident = tuple(sorted((value(r, c.SSA_RUNS) or {}).items()))
        if ident in seen:
            continue
        seen.add(ident)
        acc = {lv: value(r, c.SSA_ACCURACY.at(lv)) for lv in (*SSA_LEVELS, SSA_CONTROL)}
        acc = {lv: rate for lv, rate in acc.items() if rate is not None}
        levels = [lv for lv in SSA_LEVELS if lv in acc]
        cells = [Cell(acc[lv]) for lv in levels]
        color = ch.PALETTE[i % len(ch.PALETTE)]
        model = r.config.get("model") or r.name
        fig.add_scatter(name=f"{model} raw", x=levels, y=[ch.pct(c) for c in cells], mode="lines+markers",
                        line=dict(color=color), customdata=ch.hover(cells), error_y=ch.error_bars(cells),
                        hovertemplate="%{x}: %{y:.1f}<br>%{customdata}<extra>%{fullData.name}</extra>")
        iso = {lv: v for lv in SSA_LEVELS if (v := value(r, c.SSA_ISOTONIC.at(lv))) is not None}
        if iso:
            fig.add_scatter(name=f"{model} isotonic", x=list(iso), y=[100 * v for v in iso.values()],
                            mode="lines", line=dict(color=color, width=1, shape="hv"), opacity=0.6,
                            hovertemplate="isotonic %{y:.1f}<extra></extra>")
        if SSA_CONTROL in acc and reason_of(acc[SSA_CONTROL]) is None:
            ctl = acc[SSA_CONTROL]
            fig.add_scatter(name=f"{model} irrelevant-S1", x=[levels[0], levels[-1]], y=[100 * ctl["value"]] * 2,
                            mode="lines", line=dict(color=color, dash="dash"),
                            hovertemplate=f"irrelevant-S1 {ctl['k']}/{ctl['n']}<extra></extra>")
    if not fig.data:
        reason = next((reason_of(value(r, c.SSA)) for r in runs), None) or "no SSA runs selected"
        return ch.empty(title, f"not computed: {reason}")
    fig.update_layout(**ch.LAYOUT, title=title, yaxis_title="F accuracy (%)")
    fig.update_layout(margin=dict(l=56, r=16, t=72, b=24))  # LAYOUT's, with room for the second title line
    return fig


SECTIONS = [
    ("Leaderboard", ["sb_leaderboard", "sb_operations"], ["sb_leaderboard", "sb_chasm"]),
    ("Binding", ["sb_decomposition", "sb_binding_gap"], ["sb_decomposition", "sb_binding_gap"]),
    ("Stages · SSA", ["sb_stepacc", "sb_ssa"], ["sb_ssa", "sb_stepacc"]),
    ("Paired runs", ["sb_thinkgain", "sb_vg"], ["sb_thinkgain", "sb_vg"]),
    ("Tokens", ["sb_tokens"], []),
]


def charts(runs: Sequence[RunScore], tables: dict[str, Table]) -> dict[str, go.Figure]:
    return {"sb_leaderboard": ch.grouped_bars(tables["sb_leaderboard"], "P / R / F accuracy per run (95% CI)",
                                           columns=[m.label for m in c.KIND_ACCURACY.values()]),
            "sb_chasm": sb_rf_chasm(runs),
            "sb_decomposition": stacked_decomposition(tables["sb_decomposition"]),
            "sb_binding_gap": ch.grouped_bars(tables["sb_binding_gap"], "Strict Binding Gap with 95% CI",
                                           columns=[c.BINDING_GAP.label]),
            "sb_ssa": ssa_curves(runs),
            "sb_thinkgain": ch.diff_bars(tables["sb_thinkgain"], "ThinkGain@P / R / F (points, 95% CI)"),
            "sb_vg": ch.diff_bars(tables["sb_vg"], "Visual gain (points, 95% CI)"),
            "sb_stepacc": ch.diff_bars(tables["sb_stepacc"], "L2 StepAcc per stage")}


VIEW = FamilyView(render, ch.FamilyCharts(SECTIONS, charts), run_summary=run_summary)
