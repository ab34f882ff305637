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
from ui.templating import render as render_template
from ui.views import FamilyView
from ui.views import common as vc

TASK_NAMES = {"NP": "Numerical Perception", "MP": "Morphological Perception", "IL": "Information Localization",
              "TA": "Trend Analysis", "HI": "Heterogeneous Integration", "Qual": "Qualitative Reasoning",
              "Quant": "Quantitative Reasoning"}
STAGE_TITLES = {"perception": "Perception (panel level)", "understanding": "Understanding (cross-panel)",
                "reasoning": "Reasoning (expert level)"}
TYPE_COLORS = {"stain": "#8250df", "bar": "#0969da", "line": "#1a7f37", "blot": "#9a6700"}

def panel_boxes(panels: list[dict[str, Any]], size: tuple[int, int]) -> vc.PanelBoxes | None:
    """The boxes laid over the figure: one labelled box per panel (meta.panels, pixel boxes [x0, y0, x1, y1])."""
    w, h = size
    if not panels or not w or not h:
        return None
    boxes = []
    for p in panels:
        box = p.get("box")
        if not (isinstance(box, (list, tuple)) and len(box) == 4):
            continue
        try:
            x0, y0, x1, y1 = (float(v) for v in box)
        except (TypeError, ValueError):
            continue
        letter = str(p.get("letter", ""))
        # the box's letter goes in a filled tag at its bottom-right corner: figures print their own panel
        # letter top-left, and two letters side by side read as one label
        fs = max(w, h) / 42
        tw, th = fs * (0.75 * max(1, len(letter)) + 0.5), fs * 1.25
        boxes.append(vc.PanelBox(
            x=f"{x0 + 2:.0f}", y=f"{y0 + 2:.0f}", width=f"{max(0, x1 - x0 - 4):.0f}", height=f"{max(0, y1 - y0 - 4):.0f}",
            color=TYPE_COLORS.get(str(p.get("type")), "#cf222e"), stroke=f"{max(w, h) / 260:.1f}",
            tag_x=f"{x1 - 3 - tw:.0f}", tag_y=f"{y1 - 3 - th:.0f}", tag_width=f"{tw:.0f}", tag_height=f"{th:.0f}",
            tag_rx=f"{fs / 4:.0f}", text_x=f"{x1 - 3 - tw / 2:.0f}", text_y=f"{y1 - 3 - th * 0.25:.0f}",
            font_size=f"{fs:.0f}", letter=letter,
            title=f'{p.get("letter", "")} {p.get("type", "")}: {p.get("title", "")}'))
    return vc.PanelBoxes(w, h, boxes)


def _stage_kn(rv: vc.RunView, recs: list[dict[str, Any]], stage: str) -> tuple[str, str]:
    """A run's k / n correct on the figure's items of one stage."""
    ids = [r["item_id"] for r in recs if r["kind"] in STAGES[stage]]
    return vc.kn_cell(sum(rv.correct.get(i, False) for i in ids), sum(rv.answered.get(i, False) for i in ids))


def _flag(rv: vc.RunView, recs: list[dict[str, Any]]) -> bool:
    """Every perception item of the figure right, a reasoning item wrong."""
    perc = [r["item_id"] for r in recs if r["kind"] in STAGES["perception"]]
    reas = [r["item_id"] for r in recs if r["kind"] in STAGES["reasoning"] and rv.answered.get(r["item_id"])]
    return bool(perc) and all(rv.correct.get(i, False) for i in perc) and any(not rv.correct.get(i, False) for i in reas)


def _where(it: dict[str, Any]) -> str:
    tgt = (it.get("meta") or {}).get("target") or {}
    where = tgt.get("panels") or ([tgt["panel"]] if tgt.get("panel") else [])
    return f'panel {", ".join(map(str, where))}' if where else ""


def render(store: Any, g: Any, boxes: bool = True) -> str:
    order = [t for ts in STAGES.values() for t in ts]
    recs = sorted(g.records(), key=lambda r: (order.index(r["kind"]) if r["kind"] in order else len(order)))
    m = recs[0].get("meta") or {}
    figs = list(dict.fromkeys(h for r in recs for h in r["images"]))
    panels: list[dict[str, Any]] = m["panels"] if isinstance(m.get("panels"), list) else []
    pics = [vc.thumb(store, h, "", size=900, extra_cls="cc-figure",
                     panels=panel_boxes(panels, g.sizes.get(h, (0, 0))) if boxes and i == 0 else None)
            for i, h in enumerate(figs)]
    legend = []
    if boxes and panels:
        legend = [(TYPE_COLORS.get(t, "#cf222e"), t)
                  for t in ordered((str(p.get("type")) for p in panels), list(TYPE_COLORS))]
    chosen = {r.name for r in g.selected}
    runs = [vc.RunCounts(vc.run_label(rv.record, short=True), rv.name in chosen, [_stage_kn(rv, recs, s) for s in STAGES],
                         _flag(rv, recs)) for rv in g.runs if rv.answered_items()]
    stages = []
    for stage, tasks in STAGES.items():
        its = [r for r in recs if r["kind"] in tasks]
        if its:
            stages.append((STAGE_TITLES[stage], [
                vc.card(it, g.selected, f'{it["kind"]} · {TASK_NAMES.get(it["kind"], it["kind"])}', _where(it))
                for it in its]))
    others = [vc.text(r["question"]) for r in recs if r["kind"] not in set(order)]
    return render_template(
        "views/spur.html", group_id=g.group_id,
        chips=vc.chips([("discipline", m.get("discipline")), ("paradigm", m.get("paradigm_name") or m.get("paradigm")),
                        ("staining", m.get("staining")), ("panels", m.get("n_panels"))]),
        pics=pics, legend=legend, n_panels=len(panels), runs=runs, stages=stages, others=others,
        all_runs=vc.all_runs(g, recs, col_label=lambda it: it["kind"]),
        detail=vc.detail(recs, g.detail, g.flags, title=lambda it: f'{it["kind"]} · {TASK_NAMES.get(it["kind"], "")}'))


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
