"""Generic group view: the group's images once, then its items side by side (any family, any kind)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from core.families.generic import catalogue as c
from core.report_tables import RunScore, Table
from ui.charts import LAYOUT, FamilyCharts, by_label_bars, grouped_bars
from ui.templating import render as render_template
from ui.views import FamilyView
from ui.views import common as vc


def image_labels(records: list[dict[str, Any]]) -> dict[str, str]:
    """hash -> I1..In in order of first appearance across the group's items."""
    out: dict[str, str] = {}
    for r in records:
        for h in r["images"]:
            out.setdefault(h, f"I{len(out) + 1}")
    return out


def item_card(it: dict[str, Any], selected: Sequence[vc.RunView], labels: dict[str, str], title: str | None = None) -> vc.Card:
    shows = ", ".join(labels[h] for h in it["images"] if h in labels)
    meta = it.get("meta") or {}
    copy = meta.get("copy")
    head = title or " · ".join(x for x in (it["kind"], it["variant"],
                                           f"copy {copy}" if isinstance(copy, int) else "") if x)
    hint = meta.get("hint")
    return vc.card(it, selected, head, vc.text(it["item_id"]), shows=shows if len(labels) > 1 else "",
                   hint=hint if isinstance(hint, str) else "")


def _column_label(it: Mapping[str, Any]) -> str:
    copy = (it.get("meta") or {}).get("copy")
    return it["variant"] or (f"copy {copy}" if isinstance(copy, int) else "") or it["kind"]


def render(store: Any, g: Any, boxes: bool = True) -> str:
    recs = g.records()
    labels = image_labels(recs)
    first = recs[0]
    kinds = sorted({r["kind"] for r in recs})
    copies = [(r.get("meta") or {}).get("copy") for r in recs]
    circular = len(recs) >= 2 and all(isinstance(c, int) for c in copies)
    extra = [("circular copies", len(recs))] if circular else []
    return render_template(
        "views/generic.html", group_id=g.group_id,
        chips=vc.chips([("family", g.family), ("split", first.get("split")), ("items", len(recs)),
                        ("kinds", " ".join(kinds)), *extra]),
        images=[vc.thumb(store, h, lab) for h, lab in labels.items()],
        cards=[item_card(it, g.selected, labels) for it in recs],
        all_runs=vc.all_runs(g, recs, col_label=_column_label), detail=vc.detail(recs, g.detail, g.flags))


# charts


SECTIONS = [("Overview", ["generic_main", "generic_kinds"], ["generic_main"]),
            ("Letters and strata", ["generic_letters", "generic_strata"], ["generic_letters", "generic_strata"])]


def letter_heatmap(table: Table) -> go.Figure:
    """Predicted vs gold counts of the table's first run (rows gold, columns predicted), each cell's count
    written in it."""
    run = next((r.labels[0] for r in table.rows), "")
    rows = [r for r in table.rows if r.labels[0] == run]
    z = [[c.node if isinstance(c.node, int) else 0 for c in r.cells] for r in rows]
    gold = [r.labels[1] for r in rows]
    fig = go.Figure(go.Heatmap(z=z, x=table.columns, y=gold, colorscale="Blues", text=z, texttemplate="%{text}",
                               hovertemplate="gold %{y}, predicted %{x}: %{z}<extra></extra>", showscale=False))
    fig.update_layout(**LAYOUT, title=f"Predicted vs gold letter: {run}" + (" (the first run picked)"
                                                                          if len({r.labels[0] for r in table.rows}) > 1 else ""))
    fig.update_xaxes(title="predicted", type="category", side="top")
    fig.update_yaxes(title="gold", type="category", autorange="reversed")
    return fig


def charts(runs: Sequence[RunScore], tables: dict[str, Table]) -> dict[str, go.Figure]:
    out = {"generic_main": grouped_bars(tables["generic_main"], "Accuracy and macro P / R / F1")}
    if "generic_letters" in tables:
        out["generic_letters"] = letter_heatmap(tables["generic_letters"])
    if "generic_strata" in tables:
        out["generic_strata"] = by_label_bars(tables["generic_strata"], c.STRATUM.label, "Accuracy per stratum")
    return out


VIEW = FamilyView(render, FamilyCharts(SECTIONS, charts))
