"""Plotly figure builders for the Metrics tab. They read the same `core.report_tables.Table` objects the
tables show (no metric math here), so every bar carries the k / n and interval of its cell on hover."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from core.groups import CATEGORY_LABELS, CATEGORY_RULES
from core.report_tables import Cell, RunScore, Table, get, reason_of, tooltip, value_of

PALETTE = ("#2f6db5", "#d9822b", "#3a9a5b", "#b8423a", "#7a5cb0", "#8c6d4f", "#c659a6", "#6b7a8f", "#b3a33a",
           "#2aa3b5")
# No fixed width: the chart takes its container's (autosize; the Metrics tab resizes a chart drawn while its
# sub-tab was hidden). The legend sits under the axes, anchored to the figure's bottom edge: the bottom margin
# grows to hold tick labels, axis title and legend, so the legend never covers an axis.
LAYOUT = dict(template="plotly_white", height=400, autosize=True, margin=dict(l=56, r=16, t=48, b=24),
              legend=dict(orientation="h", yref="container", y=0, yanchor="bottom", xanchor="left", x=0,
                          font=dict(size=11)),
              font=dict(size=12))


def _label(name: str, synthetic: bool) -> str:
    return f"{name} [synthetic]" if synthetic else name


def _pct(cell: Cell) -> float | None:
    v = value_of(cell.node)
    if reason_of(cell.node) is not None or not isinstance(v, (int, float)):
        return None
    return 100 * float(v)


def rate_columns(table: Table) -> list[str]:
    """Columns holding rates (dicts with a value) in at least one row."""
    return [c for j, c in enumerate(table.columns) if any(isinstance(r.cells[j].node, dict) for r in table.rows)]


def _err(cells: Sequence[Cell]) -> dict[str, Any] | None:
    """Plotly error bars from the cells' 95% intervals (percent), or None when no cell has one. Every chart
    passes its cells through here, so an interval that exists is drawn."""
    plus, minus, any_ci = [], [], False
    for c in cells:
        node = c.node
        ci = node.get("ci") if isinstance(node, dict) else None
        v = _pct(c)
        if ci and v is not None:
            any_ci = True
            plus.append(100 * ci[1] - v)
            minus.append(v - 100 * ci[0])
        else:
            plus.append(0)
            minus.append(0)
    return dict(type="data", array=plus, arrayminus=minus, thickness=1.2, width=3) if any_ci else None


def _hover(cells: Sequence[Cell]) -> list[str]:
    return [html.escape(tooltip(c)) for c in cells]


def empty(title: str, why: str) -> go.Figure:
    fig = go.Figure()
    fig.add_annotation(text=html.escape(why), showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper",
                       font=dict(size=13, color="#666"))
    fig.update_layout(**LAYOUT, title=title)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig


def grouped_bars(table: Table, title: str, columns: Sequence[str] | None = None, y_title: str = "%",
                 reference: bool = True) -> go.Figure:
    """Runs as colours, the table's columns (rates) on the x axis; a reference row becomes dashed markers."""
    cols = list(columns or rate_columns(table))
    idx = [table.columns.index(c) for c in cols]
    fig = go.Figure()
    runs = [r for r in table.rows if not r.reference]
    for i, row in enumerate(runs):
        cells = [row.cells[j] for j in idx]
        fig.add_bar(name=_label(row.labels[0], row.synthetic), x=cols, y=[_pct(c) for c in cells],
                    error_y=_err(cells), customdata=_hover(cells), marker_color=PALETTE[i % len(PALETTE)],
                    hovertemplate="%{x}: %{y:.1f}<br>%{customdata}<extra>%{fullData.name}</extra>")
    for row in table.rows:
        if row.reference and reference:
            cells = [row.cells[j] for j in idx]
            fig.add_scatter(name=row.labels[0], x=cols, y=[_pct(c) for c in cells], mode="markers",
                            marker=dict(symbol="line-ew-open", size=28, line=dict(width=3, color="#222")),
                            customdata=_hover(cells),
                            hovertemplate="%{x}: %{y:.1f}<br>%{customdata}<extra>reference</extra>")
    fig.update_layout(**LAYOUT, title=title, barmode="group", yaxis_title=y_title)
    return fig


def by_label_bars(table: Table, column: str, title: str, y_title: str = "%") -> go.Figure:
    """Tables indexed (label, run): the label on the x axis, runs as colours, one column's values."""
    j = table.columns.index(column)
    fig = go.Figure()
    runs = list(dict.fromkeys((r.labels[-1], r.synthetic) for r in table.rows))
    for i, (run, synth) in enumerate(runs):
        rows = [r for r in table.rows if r.labels[-1] == run]
        cells = [r.cells[j] for r in rows]
        fig.add_bar(name=_label(run, synth), x=[" · ".join(r.labels[:-1]) for r in rows], y=[_pct(c) for c in cells],
                    error_y=_err(cells), customdata=_hover(cells), marker_color=PALETTE[i % len(PALETTE)],
                    hovertemplate="%{x}: %{y:.1f}<br>%{customdata}<extra>%{fullData.name}</extra>")
    fig.update_layout(**LAYOUT, title=title, barmode="group", yaxis_title=y_title)
    fig.update_xaxes(type="category")
    return fig


def fe_figure5(runs: Sequence[RunScore]) -> go.Figure:
    """000 Figure 5: initial MSS success (x, all FQ2 groups) vs conditional success (y, MSS-correct subset)
    for deletion (NTS) and addition (DIS); arrows link a run to its base when its config names `base_run`."""
    title = "Initial vs conditional success (000 Figure 5)"
    fig = go.Figure()
    pts: dict[str, dict[str, tuple[float, float]]] = {}
    for variant, symbol, label in (("del", "circle", "deletion → NTS"), ("add", "diamond", "addition → DIS")):
        xs, ys, text, hover, xcells, ycells = [], [], [], [], [], []
        for r in runs:
            ini, cond = get(r.metrics, ("transitions", "initial")), get(r.metrics, ("transitions", "conditional", variant))
            if reason_of(ini) is not None or reason_of(cond) is not None:
                continue
            x, y = 100 * ini["value"], 100 * cond["value"]
            xs.append(x)
            ys.append(y)
            xcells.append(Cell(ini))
            ycells.append(Cell(cond))
            text.append(f"{cond.get('k')}/{cond.get('n')}")
            hover.append(html.escape(f"{_label(r.name, r.synthetic)}: initial {ini['k']}/{ini['n']}, conditional "
                                     f"{cond.get('k')}/{cond.get('n')}"))
            pts.setdefault(r.name, {})[variant] = (x, y)
        if xs:
            fig.add_scatter(name=label, x=xs, y=ys, mode="markers+text", text=text, textposition="top center",
                            marker=dict(symbol=symbol, size=11), customdata=hover, error_x=_err(xcells),
                            error_y=_err(ycells),
                            hovertemplate="%{customdata}<extra>" + label + "</extra>")
    if not pts:
        return empty(title, "no selected run has FQ2 transitions")
    for r in runs:
        base = r.config.get("base_run")
        if base in pts and r.name in pts:
            for variant in ("del", "add"):
                if variant in pts[base] and variant in pts[r.name]:
                    (x0, y0), (x1, y1) = pts[base][variant], pts[r.name][variant]
                    fig.add_annotation(x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x", ayref="y",
                                       showarrow=True, arrowhead=3, arrowwidth=1.5, arrowcolor="#555")
    fig.update_layout(**LAYOUT, title=title, xaxis_title="initial success: MSS correct (%)",
                      yaxis_title="conditional success given MSS correct (%)")
    fig.update_xaxes(range=[-3, 103])
    fig.update_yaxes(range=[-3, 108])
    return fig


def rotation_lines(runs: Sequence[RunScore]) -> go.Figure:
    title = "Accuracy per option rotation, with Circular"
    fig = go.Figure()
    for i, r in enumerate(runs):
        per = get(r.metrics, ("per_rotation",)) or {}
        keys = sorted(per, key=lambda k: int(k)) if isinstance(per, dict) else []
        if len(keys) < 2:
            continue
        cells = [Cell(per[k]) for k in keys]
        color = PALETTE[i % len(PALETTE)]
        fig.add_scatter(name=_label(r.name, r.synthetic), x=[f"R{k}" for k in keys], y=[_pct(c) for c in cells],
                        mode="lines+markers", line=dict(color=color), customdata=_hover(cells), error_y=_err(cells),
                        hovertemplate="%{x}: %{y:.1f}<br>%{customdata}<extra>%{fullData.name}</extra>")
        circ = get(r.metrics, ("circular",))
        if reason_of(circ) is None:
            fig.add_scatter(name=f"{r.name} circular", x=[f"R{keys[0]}", f"R{keys[-1]}"],
                            y=[100 * circ["value"]] * 2, mode="lines", line=dict(color=color, dash="dot"),
                            hovertemplate=f"circular {circ['k']}/{circ['n']}<extra></extra>")
    if not fig.data:
        return empty(title, "no selected run has several option rotations")
    fig.update_layout(**LAYOUT, title=title, yaxis_title="accuracy (%)")
    return fig


def sb_rf_chasm(runs: Sequence[RunScore]) -> go.Figure:
    """R accuracy (x) vs F accuracy (y) per run and per operation; the diagonal is R = F."""
    title = "The R-F chasm: rule accuracy vs full-problem accuracy"
    fig = go.Figure()
    fig.add_scatter(x=[0, 100], y=[0, 100], mode="lines", line=dict(color="#aaa", dash="dash"), name="R = F",
                    hoverinfo="skip")
    for i, r in enumerate(runs):
        rr, ff = get(r.metrics, ("r_accuracy",)), get(r.metrics, ("f_accuracy",))
        if reason_of(rr) is not None or reason_of(ff) is not None:
            continue
        color = PALETTE[i % len(PALETTE)]
        ops = get(r.metrics, ("by_operation",)) or {}
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
        fig.add_scatter(name=_label(r.name, r.synthetic), x=[100 * rr["value"]], y=[100 * ff["value"]],
                        error_x=_err([Cell(rr)]), error_y=_err([Cell(ff)]), mode="markers",
                        marker=dict(color=color, size=15, line=dict(width=1.5, color="#222")),
                        legendgroup=r.name,
                        customdata=[html.escape(f"R {rr['k']}/{rr['n']}, F {ff['k']}/{ff['n']}")],
                        hovertemplate="%{customdata}<extra>%{fullData.name}</extra>")
    fig.update_layout(**LAYOUT, title=title, xaxis_title="R accuracy (%)", yaxis_title="F accuracy (%)")
    fig.update_xaxes(range=[0, 102])
    fig.update_yaxes(range=[0, 102])
    return fig


def stacked_decomposition(table: Table) -> go.Figure:
    title = "Where stems fail: solved / can't bind / can't reason / can't see"
    cats = ["solved", "cant bind", "cant reason", "cant see"]
    colors = ["#3a9a5b", "#d9822b", "#b8423a", "#6b7a8f"]
    fig = go.Figure()
    names = [_label(r.labels[0], r.synthetic) for r in table.rows]
    for cat, color in zip(cats, colors, strict=True):
        j = table.columns.index(cat)
        cells = [r.cells[j] for r in table.rows]
        key = cat.replace(" ", "_")
        fig.add_bar(name=f"{CATEGORY_LABELS[key]} ({CATEGORY_RULES[key]})", y=names, x=[_pct(c) for c in cells], orientation="h",
                    marker_color=color, customdata=_hover(cells),
                    hovertemplate="%{x:.1f}%<br>%{customdata}<extra>%{fullData.name}</extra>")
    fig.update_layout(**LAYOUT, title=title, barmode="stack", xaxis_title="% of complete stems")
    fig.update_layout(height=max(220, 90 + 40 * len(names)))
    return fig


def ssa_curves(runs: Sequence[RunScore]) -> go.Figure:
    title = "SSA: F accuracy with verified stage text H0-H4 (dashed: irrelevant-S1 control)"
    fig = go.Figure()
    seen = set()
    for i, r in enumerate(runs):
        node = get(r.metrics, ("ssa",))
        if reason_of(node) is not None or not isinstance(node, dict):
            continue
        ident = tuple(sorted((node.get("runs") or {}).items()))
        if ident in seen:
            continue
        seen.add(ident)
        acc = node.get("accuracy", {})
        levels = [lv for lv in ("H0", "H1", "H2", "H3", "H4") if lv in acc]
        cells = [Cell(acc[lv]) for lv in levels]
        color = PALETTE[i % len(PALETTE)]
        model = r.config.get("model") or r.name
        fig.add_scatter(name=f"{model} raw", x=levels, y=[_pct(c) for c in cells], mode="lines+markers",
                        line=dict(color=color), customdata=_hover(cells), error_y=_err(cells),
                        hovertemplate="%{x}: %{y:.1f}<br>%{customdata}<extra>%{fullData.name}</extra>")
        iso = node.get("isotonic") or {}
        if iso:
            fig.add_scatter(name=f"{model} isotonic", x=list(iso), y=[100 * v for v in iso.values()],
                            mode="lines", line=dict(color=color, width=1, shape="hv"), opacity=0.6,
                            hovertemplate="isotonic %{y:.1f}<extra></extra>")
        if "irrelevant" in acc and reason_of(acc["irrelevant"]) is None:
            c = acc["irrelevant"]
            fig.add_scatter(name=f"{model} irrelevant-S1", x=[levels[0], levels[-1]], y=[100 * c["value"]] * 2,
                            mode="lines", line=dict(color=color, dash="dash"),
                            hovertemplate=f"irrelevant-S1 {c['k']}/{c['n']}<extra></extra>")
    if not fig.data:
        reason = next((reason_of(get(r.metrics, ("ssa",))) for r in runs), None) or "no SSA runs selected"
        return empty(title, f"not computed: {reason}")
    fig.update_layout(**LAYOUT, title=title, yaxis_title="F accuracy (%)")
    return fig


def diff_bars(table: Table, title: str) -> go.Figure:
    """Paired differences (percentage points) per run with their intervals; runs without a pair give why."""
    defined = [r for r in table.rows if any(reason_of(c.node) is None for c in r.cells)]
    if not defined:
        why = next((reason_of(c.node) for r in table.rows for c in r.cells), "no run selected")
        return empty(title, f"not computed: {why}")
    fig = grouped_bars(Table(table.key, table.title, table.index, table.columns, defined), title, y_title="points")
    fig.add_hline(y=0, line_color="#888", line_width=1)
    return fig


def figure_html(fig: go.Figure) -> str:
    """A standalone HTML page of the chart with plotly.js inside (about 4.7 MB): it opens offline, and no CDN
    sees who reads it."""
    return str(fig.to_html(include_plotlyjs=True, full_html=True))


def charts_for(family: str, runs: Sequence[RunScore], tables: dict[str, Table]) -> dict[str, go.Figure]:
    """Figures keyed by the section they belong to, in display order."""
    out: dict[str, go.Figure] = {}
    if not runs:
        return out
    if family == "frameevidence":
        out["fe_table4"] = grouped_bars(tables["fe_table4"], "Table 4 metrics per run (bars: uniform-random reference)")
        out["fe_figure5"] = fe_figure5(runs)
        if "fe_delta_text" in tables:
            out["fe_delta_text"] = diff_bars(tables["fe_delta_text"], "All images minus text-only (points)")
        out["fe_rotations"] = rotation_lines(runs)
        if "fe_insufficiency" in tables:
            out["fe_insufficiency"] = grouped_bars(tables["fe_insufficiency"], "Insufficiency choices",
                                                   columns=["MSS", "del", "add", "Precision", "Recall"])
        for key in ("n_images", "relation", "scene", "source", "ordinal_change"):
            t = tables.get(f"fe_strata_{key}")
            if t is not None and not t.empty:
                out[t.key] = by_label_bars(t, "Acc", f"Accuracy {t.title.lower()}")
        if "fe_controls" in tables:
            out["fe_controls"] = grouped_bars(tables["fe_controls"], "Metadata controls vs the uniform reference")
    elif family == "stembind":
        out["sb_leaderboard"] = grouped_bars(tables["sb_leaderboard"], "P / R / F accuracy per run (95% CI)",
                                             columns=["P", "R", "F"])
        out["sb_chasm"] = sb_rf_chasm(runs)
        out["sb_decomposition"] = stacked_decomposition(tables["sb_decomposition"])
        out["sb_binding_gap"] = grouped_bars(tables["sb_binding_gap"], "Strict Binding Gap with 95% CI",
                                             columns=["Binding Gap"])
        out["sb_ssa"] = ssa_curves(runs)
        out["sb_thinkgain"] = diff_bars(tables["sb_thinkgain"], "ThinkGain@P / R / F (points, 95% CI)")
        out["sb_vg"] = diff_bars(tables["sb_vg"], "Visual gain (points, 95% CI)")
        out["sb_stepacc"] = diff_bars(tables["sb_stepacc"], "L2 StepAcc per stage")
    elif family == "spur":
        out["spur_table3"] = grouped_bars(tables["spur_table3"], "Accuracy per task and stage (95% CI)")
        if "spur_staining" in tables:
            out["spur_staining"] = by_label_bars(tables["spur_staining"], "Deviation from perception micro",
                                                 "Staining category: deviation from the perception micro average",
                                                 y_title="points")
        if "spur_relations" in tables:
            out["spur_relations"] = by_label_bars(tables["spur_relations"], "Accuracy",
                                                  "Understanding by number of relations")
        if "spur_paradigm" in tables:
            out["spur_paradigm"] = by_label_bars(tables["spur_paradigm"], "Accuracy", "Reasoning by paradigm")
        out["spur_table5"] = grouped_bars(tables["spur_table5"], "Reasoning accuracy by perception correctness",
                                          columns=["Perception correct", "Perception wrong"])
        out["spur_mcot"] = grouped_bars(tables["spur_mcot"], "Stage accuracy per prompting strategy",
                                        columns=["Perception", "Understanding", "Reasoning", "Overall"])
    else:
        out["generic_main"] = grouped_bars(tables["generic_main"], "Accuracy and macro P / R / F1")
    return out
