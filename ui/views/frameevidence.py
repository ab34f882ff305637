"""FrameEvidence group views (000 Figure 1 and 4): the FQ1 frame triplet and the FQ2 evidence triplet."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from core.families.frameevidence import catalogue as c
from core.families.frameevidence.groups import fq2_layout
from core.metrics.catalogue import CIRCULAR
from core.report_tables import Cell, RunScore, Table, reason_of, value
from ui import charts as ch
from ui.templating import render as render_template
from ui.views import FamilyView, Group, generic
from ui.views import common as vc

FQ1_TITLES = {"cam": "Camera frame", "obj": "Object frame", "scene": "Scene frame"}
FQ2_TITLES = {"mss": "MSS: the minimal sufficient views", "del": "Deletion: one view withheld",
              "add": "Addition: one view added"}


def _chips(first: dict[str, Any]) -> list[tuple[str, str]]:
    m = first.get("meta") or {}
    return vc.chips([("split", first.get("split")), ("scene", m.get("scene")), ("relation", m.get("relation")),
                     ("source", m.get("source")), ("ordinal", m.get("ordinal_change"))])


def _gloss(it: dict[str, Any]) -> str:
    return vc.text((it.get("meta") or {}).get("question_en"))


def render(store: Any, g: Group, boxes: bool = True) -> str:
    recs = g.records()
    kinds = {r["kind"] for r in recs}
    by_v = {r["variant"]: r for r in recs}
    if kinds == {"FQ1"} and all(v in by_v for v in FQ1_TITLES):
        return _fq1(store, g, [by_v[v] for v in FQ1_TITLES])
    if kinds == {"FQ2"} and all(v in by_v for v in FQ2_TITLES):
        return _fq2(store, g, by_v)
    return generic.render(store, g, boxes=boxes)


def _fq1(store: Any, g: Group, items: list[dict[str, Any]]) -> str:
    cam = items[0]
    cards = [vc.card(it, g.selected, FQ1_TITLES[it["variant"]], vc.text(it["variant"]),
                     extra=(it.get("meta") or {}).get("options_en"), gloss=_gloss(it)) for it in items]
    return render_template(
        "views/frameevidence.html", view="fq1", title="FQ1 frame triplet", group_id=g.group_id, chips=_chips(cam),
        images=[vc.thumb(store, h, f"I{i + 1}") for i, h in enumerate(cam["images"])], cards=cards,
        all_runs=vc.all_runs(g, items, col_label=lambda it: it["variant"]),
        detail=vc.detail(items, g.detail, g.flags, title=lambda it: FQ1_TITLES[it["variant"]]))


def _fq2_pictures(store: Any, v: str, it: dict[str, Any], mss: dict[str, Any], lay: dict[str, Any]) -> list[vc.Thumb]:
    """The views one FQ2 variant shows: the deletion's withheld view crossed out, the addition's added view named."""
    pics = []
    if v == "del":
        withheld = lay["withheld"] or {}
        shown = set(it["images"])
        for h, p in zip(mss["images"], lay["positions"]["mss"], strict=False):
            if h in shown:
                pics.append(vc.thumb(store, h, f"I{p}", extra_cls="cc-small"))
            else:
                pics.append(vc.thumb(store, h, f"I{p}", extra_cls="cc-small cc-withheld", cross=True,
                                     caption=("cc-wrong", f'withheld I{vc.text(withheld.get("position"))}')))
        return pics
    pos = lay["positions"].get(v) or []
    added = lay["added"] or {}
    for i, h in enumerate(it["images"]):
        label = f"I{pos[i]}" if i < len(pos) and pos[i] else f"#{i + 1}"
        if v == "add" and h == added.get("hash"):
            pics.append(vc.thumb(store, h, label, extra_cls="cc-small cc-added", caption=("cc-correct", f"+ added {label}")))
        else:
            pics.append(vc.thumb(store, h, label, extra_cls="cc-small"))
    return pics


@dataclass(slots=True, frozen=True)
class Fq2Column:
    """One FQ2 variant's column: its title, the views it shows, gold (letter and text), each picked run's answer."""

    title: str
    pics: list[vc.Thumb]
    gold: str
    gold_text: str
    answers: list[vc.Answer]


def _fq2(store: Any, g: Group, by_v: dict[str, dict[str, Any]]) -> str:
    items = [by_v[v] for v in FQ2_TITLES]
    lay = fq2_layout(by_v)
    mss = by_v["mss"]
    m = mss.get("meta") or {}
    cols = [Fq2Column(FQ2_TITLES[v], _fq2_pictures(store, v, it, mss, lay), vc.text(it["answer"]),
                      vc.text(it["options"].get(it["answer"], "")), vc.answers(g.selected, it["item_id"]))
            for v, it in by_v.items() if v in FQ2_TITLES]
    return render_template(
        "views/frameevidence.html", view="fq2", title="FQ2 evidence triplet", group_id=g.group_id, chips=_chips(mss),
        note=vc.text(lay["ordinal_note"]), question=vc.text(mss["question"]), gloss=_gloss(mss),
        options=vc.options(mss["options"], mss["answer"], m.get("options_en"), insufficient=m.get("insufficient_option")),
        cols=cols, all_runs=vc.all_runs(g, items, col_label=lambda it: it["variant"]),
        detail=vc.detail(items, g.detail, g.flags, title=lambda it: FQ2_TITLES[it["variant"]].split(":")[0]))


# charts


def fe_figure5(runs: Sequence[RunScore]) -> go.Figure:
    """000 Figure 5: initial MSS success (x, all FQ2 groups) vs conditional success (y, MSS-correct subset)
    for deletion (NTS) and addition (DIS); arrows link a run to its base when its config names `base_run`."""
    title = "Initial vs conditional success (000 Figure 5)"
    fig = go.Figure()
    pts: dict[str, dict[str, tuple[float, float]]] = {}
    for variant, symbol, label in (("del", "circle", "deletion → NTS"), ("add", "diamond", "addition → DIS")):
        xs, ys, text, hover_text, xcells, ycells = [], [], [], [], [], []
        for r in runs:
            ini, cond = value(r, c.INITIAL), value(r, c.CONDITIONAL.at(variant))
            if reason_of(ini) is not None or reason_of(cond) is not None:
                continue
            x, y = 100 * ini["value"], 100 * cond["value"]
            xs.append(x)
            ys.append(y)
            xcells.append(Cell(ini))
            ycells.append(Cell(cond))
            text.append(f"{cond.get('k')}/{cond.get('n')}")
            hover_text.append(html.escape(f"{ch.series_name(r.name, r.synthetic)}: initial {ini['k']}/{ini['n']}, conditional "
                                     f"{cond.get('k')}/{cond.get('n')}"))
            pts.setdefault(r.name, {})[variant] = (x, y)
        if xs:
            fig.add_scatter(name=label, x=xs, y=ys, mode="markers+text", text=text, textposition="top center",
                            marker=dict(symbol=symbol, size=11), customdata=hover_text, error_x=ch.error_bars(xcells),
                            error_y=ch.error_bars(ycells),
                            hovertemplate="%{customdata}<extra>" + label + "</extra>")
    if not pts:
        return ch.empty(title, "no selected run has FQ2 transitions")
    for r in runs:
        base = r.config.get("base_run")
        if base in pts and r.name in pts:
            for variant in ("del", "add"):
                if variant in pts[base] and variant in pts[r.name]:
                    (x0, y0), (x1, y1) = pts[base][variant], pts[r.name][variant]
                    fig.add_annotation(x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x", ayref="y",
                                       showarrow=True, arrowhead=3, arrowwidth=1.5, arrowcolor="#555")
    fig.update_layout(**ch.LAYOUT, title=title, xaxis_title="initial success: MSS correct (%)",
                      yaxis_title="conditional success given MSS correct (%)")
    fig.update_xaxes(range=[-3, 103])
    fig.update_yaxes(range=[-3, 108])
    return fig


def rotation_lines(runs: Sequence[RunScore]) -> go.Figure:
    title = "Accuracy per option rotation, with Circular"
    fig = go.Figure()
    for i, r in enumerate(runs):
        per = value(r, c.PER_ROTATION) or {}
        keys = sorted(per, key=lambda k: int(k)) if isinstance(per, dict) else []
        if len(keys) < 2:
            continue
        cells = [Cell(per[k]) for k in keys]
        color = ch.PALETTE[i % len(ch.PALETTE)]
        fig.add_scatter(name=ch.series_name(r.name, r.synthetic), x=[f"R{k}" for k in keys], y=[ch.pct(c) for c in cells],
                        mode="lines+markers", line=dict(color=color), customdata=ch.hover(cells), error_y=ch.error_bars(cells),
                        hovertemplate="%{x}: %{y:.1f}<br>%{customdata}<extra>%{fullData.name}</extra>")
        circ = value(r, CIRCULAR)
        if reason_of(circ) is None:
            fig.add_scatter(name=f"{r.name} circular", x=[f"R{keys[0]}", f"R{keys[-1]}"],
                            y=[100 * circ["value"]] * 2, mode="lines", line=dict(color=color, dash="dot"),
                            hovertemplate=f"circular {circ['k']}/{circ['n']}<extra></extra>")
    if not fig.data:
        return ch.empty(title, "no selected run has several option rotations")
    fig.update_layout(**ch.LAYOUT, title=title, yaxis_title="accuracy (%)")
    return fig


SECTIONS = [
    ("Overview", ["fe_table4", "fe_independence", "fe_variants"], ["fe_table4"]),
    ("Figure 5 · transitions", ["fe_figure5", "fe_pairwise"], ["fe_figure5"]),
    ("Input controls", ["fe_delta_text", "fe_delta_first", "fe_decomposition"], ["fe_delta_text"]),
    ("Rotations · repeats · seeds", ["fe_rotations", "fe_repeats", "fe_table13", "fe_seeds", "fe_seeds_rotations"],
     ["fe_rotations"]),
    ("Insufficiency", ["fe_insufficiency"], ["fe_insufficiency"]),
    ("Strata", ["fe_strata_n_images", "fe_strata_relation", "fe_strata_scene", "fe_strata_source",
                "fe_strata_ordinal_change"],
     ["fe_strata_n_images", "fe_strata_relation", "fe_strata_scene", "fe_strata_source", "fe_strata_ordinal_change"]),
    ("Metadata controls", ["fe_controls"], ["fe_controls"]),
]


def charts(runs: Sequence[RunScore], tables: dict[str, Table]) -> dict[str, go.Figure]:
    out = {"fe_table4": ch.grouped_bars(tables["fe_table4"], "Table 4 metrics per run (bars: uniform-random reference)"),
           "fe_figure5": fe_figure5(runs)}
    if "fe_delta_text" in tables:
        out["fe_delta_text"] = ch.diff_bars(tables["fe_delta_text"], "All images minus text-only (points)")
    out["fe_rotations"] = rotation_lines(runs)
    if "fe_insufficiency" in tables:
        out["fe_insufficiency"] = ch.grouped_bars(tables["fe_insufficiency"], "Insufficiency choices", columns=[
            m.label for m in (*c.INSUFFICIENCY_CHOSEN.values(), c.INSUFFICIENCY_PRECISION, c.INSUFFICIENCY_RECALL)])
    for key in ("n_images", "relation", "scene", "source", "ordinal_change"):
        t = tables.get(f"fe_strata_{key}")
        if t is not None and not t.empty:
            out[t.key] = ch.by_label_bars(t, c.STRATUM["accuracy"].label, f"Accuracy {t.title.lower()}")
    if "fe_controls" in tables:
        out["fe_controls"] = ch.grouped_bars(tables["fe_controls"], "Metadata controls vs the uniform reference")
    return out


VIEW = FamilyView(render, ch.FamilyCharts(SECTIONS, charts))
