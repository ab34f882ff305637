"""SPUR figure view (001 Figure 1-2): the figure with its panel boxes (toggle), then the items by stage."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from core.families.spur import catalogue as c
from core.families.spur.metrics import STAGES
from core.groups import ordered
from core.report_tables import RunScore, Table
from ui.charts import FamilyCharts, by_label_bars, grouped_bars
from ui.views import FamilyView
from ui.views import common as vc

TASK_NAMES = {"NP": "Numerical Perception", "MP": "Morphological Perception", "IL": "Information Localization",
              "TA": "Trend Analysis", "HI": "Heterogeneous Integration", "Qual": "Qualitative Reasoning",
              "Quant": "Quantitative Reasoning"}
STAGE_TITLES = {"perception": "Perception (panel level)", "understanding": "Understanding (cross-panel)",
                "reasoning": "Reasoning (expert level)"}
TYPE_COLORS = {"stain": "#8250df", "bar": "#0969da", "line": "#1a7f37", "blot": "#9a6700"}

def panel_svg(panels: list[dict[str, Any]], size: tuple[int, int]) -> str:
    """An SVG laid over the figure: one labelled box per panel (meta.panels, pixel boxes [x0, y0, x1, y1])."""
    w, h = size
    if not panels or not w or not h:
        return ""
    shapes = []
    for p in panels:
        box = p.get("box")
        if not (isinstance(box, (list, tuple)) and len(box) == 4):
            continue
        try:
            x0, y0, x1, y1 = (float(v) for v in box)
        except (TypeError, ValueError):
            continue
        color = TYPE_COLORS.get(str(p.get("type")), "#cf222e")
        title = vc.esc(f'{p.get("letter", "")} {p.get("type", "")}: {p.get("title", "")}')
        # the box's letter goes in a filled tag at its bottom-right corner: figures print their own panel
        # letter top-left, and two letters side by side read as one label
        fs = max(w, h) / 42
        tw, th = fs * (0.75 * max(1, len(str(p.get("letter", "")))) + 0.5), fs * 1.25
        shapes.append(f'<g><title>{title}</title><rect x="{x0 + 2:.0f}" y="{y0 + 2:.0f}" width="{max(0, x1 - x0 - 4):.0f}" '
                      f'height="{max(0, y1 - y0 - 4):.0f}" fill="none" stroke="{color}" stroke-width="{max(w, h) / 260:.1f}"/>'
                      f'<rect class="cc-panel-tag" x="{x1 - 3 - tw:.0f}" y="{y1 - 3 - th:.0f}" width="{tw:.0f}" '
                      f'height="{th:.0f}" rx="{fs / 4:.0f}" fill="{color}"/>'
                      f'<text x="{x1 - 3 - tw / 2:.0f}" y="{y1 - 3 - th * 0.25:.0f}" fill="#fff" font-size="{fs:.0f}" '
                      f'font-weight="bold" text-anchor="middle">{vc.esc(p.get("letter", ""))}</text></g>')
    return (f'<svg class="cc-panels" viewBox="0 0 {w} {h}" preserveAspectRatio="none" aria-label="panel boxes">'
            f'{"".join(shapes)}</svg>')


def _stage_kn(rv: Any, recs: list[dict[str, Any]], stage: str) -> str:
    ids = [r["item_id"] for r in recs if r["kind"] in STAGES[stage]]
    n = sum(rv.answered.get(i, False) for i in ids)
    if not n:
        return '<span class="cc-muted">–</span>'
    k = sum(rv.correct.get(i, False) for i in ids)
    cls = "cc-correct" if k == n else ("cc-wrong" if k == 0 else "cc-partial")
    return f'<span class="{cls}">{k}/{n}</span>'


def _flag(rv: Any, recs: list[dict[str, Any]]) -> str:
    perc = [r["item_id"] for r in recs if r["kind"] in STAGES["perception"]]
    reas = [r["item_id"] for r in recs if r["kind"] in STAGES["reasoning"] and rv.answered.get(r["item_id"])]
    if perc and all(rv.correct.get(i, False) for i in perc) and any(not rv.correct.get(i, False) for i in reas):
        return '<span class="cc-cat cc-cat-cant_bind" title="every perception item right, a reasoning item wrong">' \
               'perception ✓, reasoning ✗</span>'
    return ""


def render(store: Any, g: Any, boxes: bool = True) -> str:
    order = [t for ts in STAGES.values() for t in ts]
    recs = sorted(g.records(), key=lambda r: (order.index(r["kind"]) if r["kind"] in order else len(order)))
    first = recs[0]
    m = first.get("meta") or {}
    figs = list(dict.fromkeys(h for r in recs for h in r["images"]))
    panels: list[dict[str, Any]] = m["panels"] if isinstance(m.get("panels"), list) else []
    pics = []
    for i, h in enumerate(figs):
        overlay = panel_svg(panels, g.sizes.get(h, (0, 0))) if boxes and i == 0 else ""
        pics.append(vc.thumb_html(store, h, "", size=900, extra_cls="cc-figure", overlay=overlay))
    legend = ""
    if boxes and panels:
        types = ordered((str(p.get("type")) for p in panels), list(TYPE_COLORS))
        legend = '<div class="cc-legend">' + "".join(
            f'<span><i style="border-color:{TYPE_COLORS.get(t, "#cf222e")}"></i>{vc.esc(t)}</span>' for t in types) + \
            f'<span class="cc-muted">{len(panels)} panels</span></div>'
    head = (f'<div class="cc-view-head"><div class="cc-view-title">SPUR figure <span class="cc-gid">{vc.esc(g.group_id)}'
            f'</span></div>' + vc.chips([("discipline", m.get("discipline")), ("paradigm", m.get("paradigm_name") or m.get("paradigm")),
                                     ("staining", m.get("staining")), ("panels", m.get("n_panels"))]) + "</div>")
    chosen = {r.name for r in g.selected}
    rows = []
    for rv in g.runs:
        if rv.answered_items() == 0:
            continue
        cls = ' class="cc-selected"' if rv.name in chosen else ""
        rows.append(f'<tr{cls}><th>{vc.run_label_html(rv.record, short=True)}</th>'
                    + "".join(f"<td>{_stage_kn(rv, recs, s)}</td>" for s in STAGES)
                    + f'<td class="cc-flag">{_flag(rv, recs)}</td></tr>')
    stage_table = ('<table class="cc-answers-table"><thead><tr><th>run</th><th title="perception">percep.</th>'
                   '<th title="understanding">underst.</th><th title="reasoning">reason.</th>'
                   '<th title="every perception item of the figure right but a reasoning item wrong">flag</th></tr></thead>'
                   f'<tbody>{"".join(rows)}</tbody></table>')
    top = (f'<div class="cc-stem-top"><div class="cc-images">{"".join(pics)}{legend}</div>'
           f'<div class="cc-stem-side"><div class="cc-sub">per stage, per run</div>{stage_table}</div></div>')
    stages = []
    for stage, tasks in STAGES.items():
        its = [r for r in recs if r["kind"] in tasks]
        if not its:
            continue
        cards = []
        for it in its:
            tgt = (it.get("meta") or {}).get("target") or {}
            where = tgt.get("panels") or ([tgt["panel"]] if tgt.get("panel") else [])
            where_html = f'<span class="cc-muted">panel {vc.esc(", ".join(map(str, where)))}</span>' if where else ""
            cards.append(f'<div class="cc-col"><div class="cc-col-title">{vc.esc(it["kind"])} · '
                         f'{vc.esc(TASK_NAMES.get(it["kind"], it["kind"]))} {where_html}</div>'
                         f'<div class="cc-question">{vc.esc(it["question"])}</div>{vc.options_html(it["options"], it["answer"])}'
                         f'{vc.run_answers(g.selected, it["item_id"])}</div>')
        stages.append(vc.section(STAGE_TITLES[stage], f'<div class="cc-cols cc-cols-auto">{"".join(cards)}</div>'))
    others = [r for r in recs if r["kind"] not in {t for ts in STAGES.values() for t in ts}]
    if others:
        stages.append(vc.section("Other items", "".join(f'<div class="cc-question">{vc.esc(o["question"])}</div>' for o in others)))
    body = (head + top + "".join(stages)
            + vc.all_runs(g, recs, col_label=lambda it: it["kind"])
            + vc.section("One run in detail", vc.detail_html(recs, g.detail, g.flags,
                                                       title=lambda it: f'{it["kind"]} · {TASK_NAMES.get(it["kind"], "")}')))
    return f'<div class="cc-view cc-view-spur">{body}</div>'


# charts


SECTIONS = [
    ("Table 3", ["spur_table3"], ["spur_table3"]),
    ("Breakdowns", ["spur_staining", "spur_relations", "spur_paradigm"],
     ["spur_staining", "spur_relations", "spur_paradigm"]),
    ("MCoT · Table 5", ["spur_mcot", "spur_table5"], ["spur_mcot", "spur_table5"]),
    ("Shortcuts", ["spur_shortcut"], []),
]


def charts(runs: Sequence[RunScore], tables: dict[str, Table]) -> dict[str, go.Figure]:
    out = {"spur_table3": grouped_bars(tables["spur_table3"], "Accuracy per task and stage (95% CI)")}
    if "spur_staining" in tables:
        out["spur_staining"] = by_label_bars(tables["spur_staining"], c.STAINING_DEVIATION.label,
                                             "Staining category: deviation from the perception micro average",
                                             y_title="points")
    if "spur_relations" in tables:
        out["spur_relations"] = by_label_bars(tables["spur_relations"], c.RELATIONS.label,
                                              "Understanding by number of relations")
    if "spur_paradigm" in tables:
        out["spur_paradigm"] = by_label_bars(tables["spur_paradigm"], c.PARADIGM.label, "Reasoning by paradigm")
    out["spur_table5"] = grouped_bars(tables["spur_table5"], "Reasoning accuracy by perception correctness",
                                      columns=[c.RBP_CORRECT.label, c.RBP_INCORRECT.label])
    out["spur_mcot"] = grouped_bars(tables["spur_mcot"], "Stage accuracy per prompting strategy",
                                    columns=[m.label for m in (*c.STAGE_METRICS.values(), c.OVERALL)])
    return out


VIEW = FamilyView(render, FamilyCharts(SECTIONS, charts), panel_boxes=True)
