"""Generic plotly figure builders for the Metrics tab (bars, grouped bars, paired differences, an empty
chart with its reason) and `FamilyCharts`, the sections and builders each family's view declares
(ui.views.FamilyView.charts). They read the same `core.report_tables.Table` objects the tables show (no metric
math here), so every bar carries the k / n and interval of its cell on hover."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from core.report_tables import Cell, RunScore, Table, reason_of, tooltip, value_of

PALETTE = ("#2f6db5", "#d9822b", "#3a9a5b", "#b8423a", "#7a5cb0", "#8c6d4f", "#c659a6", "#6b7a8f", "#b3a33a",
           "#2aa3b5")
# No fixed width: the chart takes its container's (autosize; the Metrics tab resizes a chart drawn while its
# sub-tab was hidden). The legend sits under the axes, anchored to the figure's bottom edge: the bottom margin
# grows to hold tick labels, axis title and legend, so the legend never covers an axis.
LAYOUT: dict[str, Any] = {"template": "plotly_white", "height": 400, "autosize": True,
                          "margin": {"l": 56, "r": 16, "t": 48, "b": 24},
                          "legend": {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom",
                                     "xanchor": "left", "x": 0, "font": {"size": 11}},
                          "font": {"size": 12}}


def series_name(name: str, synthetic: bool) -> str:
    return f"{name} [synthetic]" if synthetic else name


def pct(cell: Cell) -> float | None:
    v = value_of(cell.node)
    if reason_of(cell.node) is not None or not isinstance(v, (int, float)):
        return None
    return 100 * float(v)


def rate_columns(table: Table) -> list[str]:
    """Columns holding rates (dicts with a value) in at least one row."""
    return [c for j, c in enumerate(table.columns) if any(isinstance(r.cells[j].node, dict) for r in table.rows)]


def error_bars(cells: Sequence[Cell]) -> dict[str, Any] | None:
    """Plotly error bars from the cells' 95% intervals (percent), or None when no cell has one. Every chart
    passes its cells through here, so an interval that exists is drawn."""
    plus, minus, any_ci = [], [], False
    for c in cells:
        node = c.node
        ci = node.get("ci") if isinstance(node, dict) else None
        v = pct(c)
        if ci and v is not None:
            any_ci = True
            plus.append(100 * ci[1] - v)
            minus.append(v - 100 * ci[0])
        else:
            plus.append(0)
            minus.append(0)
    return dict(type="data", array=plus, arrayminus=minus, thickness=1.2, width=3) if any_ci else None


def hover(cells: Sequence[Cell]) -> list[str]:
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
        fig.add_bar(name=series_name(row.labels[0], row.synthetic), x=cols, y=[pct(c) for c in cells],
                    error_y=error_bars(cells), customdata=hover(cells), marker_color=PALETTE[i % len(PALETTE)],
                    hovertemplate="%{x}: %{y:.1f}<br>%{customdata}<extra>%{fullData.name}</extra>")
    for row in table.rows:
        if row.reference and reference:
            cells = [row.cells[j] for j in idx]
            fig.add_scatter(name=row.labels[0], x=cols, y=[pct(c) for c in cells], mode="markers",
                            marker=dict(symbol="line-ew-open", size=28, line=dict(width=3, color="#222")),
                            customdata=hover(cells),
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
        fig.add_bar(name=series_name(run, synth), x=[" · ".join(r.labels[:-1]) for r in rows], y=[pct(c) for c in cells],
                    error_y=error_bars(cells), customdata=hover(cells), marker_color=PALETTE[i % len(PALETTE)],
                    hovertemplate="%{x}: %{y:.1f}<br>%{customdata}<extra>%{fullData.name}</extra>")
    fig.update_layout(**LAYOUT, title=title, barmode="group", yaxis_title=y_title)
    fig.update_xaxes(type="category")
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


@dataclass(frozen=True)
class FamilyCharts:
    """What the Metrics tab shows for one family: the `charts` of its `ui.views.FamilyView`."""

    # (section title, [table keys], [chart keys]) in display order; keys missing for a selection (a table with
    # no rows) are skipped
    sections: list[tuple[str, list[str], list[str]]]
    # the family's figures, keyed by the chart keys of `sections`, from the selected runs and their tables
    build: Callable[[Sequence[RunScore], dict[str, Table]], dict[str, go.Figure]]

    def figures(self, runs: Sequence[RunScore], tables: dict[str, Table]) -> dict[str, go.Figure]:
        """Figures keyed by the section they belong to, in display order (none without runs)."""
        return self.build(runs, tables) if runs else {}


# the joint outcome of a run on a group (core.disagreement.OUTCOMES): not answered, none, some, every item right
OUTCOME_COLOURS = ("#d0d7de", "#cf222e", "#d4a72c", "#1a7f37")


def disagreement_map(m: Any) -> go.Figure:
    """The runs x groups map of a core.disagreement.DisagreementMap: runs strongest on top, groups easiest on the
    left, each cell coloured by the run's joint outcome on the group; hover names the run with its ability and
    interval and the group with its difficulty, and a cell's customdata is [group, run] (a click opens it)."""
    from core.disagreement import OUTCOMES

    steps = []
    for i, colour in enumerate(OUTCOME_COLOURS):
        steps += [[i / len(OUTCOME_COLOURS), colour], [(i + 1) / len(OUTCOME_COLOURS), colour]]
    runs = [a.run for a in m.runs]
    groups = [d.group for d in m.groups]
    custom = [[[g.group, a.run, f"{a.theta:+.2f} [{a.ci[0]:+.2f}, {a.ci[1]:+.2f}]", f"{g.b:+.2f}",
                OUTCOMES[c]] for g, c in zip(m.groups, row, strict=True)] for a, row in zip(m.runs, m.cells, strict=True)]
    fig = go.Figure(go.Heatmap(
        z=[list(r) for r in m.cells], x=groups, y=runs, zmin=-0.5, zmax=len(OUTCOME_COLOURS) - 0.5,
        colorscale=steps, customdata=custom, xgap=0, ygap=1, showscale=True,
        colorbar=dict(tickvals=list(range(len(OUTCOMES))), ticktext=list(OUTCOMES), thickness=12, len=0.9),
        hovertemplate="run %{customdata[1]} (ability %{customdata[2]})<br>group %{customdata[0]} (difficulty "
                      "%{customdata[3]})<br>%{customdata[4]}<extra></extra>"))
    height = max(260, min(1400, 90 + 16 * len(runs)))
    fig.update_layout(**{**LAYOUT, "height": height, "margin": dict(l=8, r=8, t=48, b=36)},
                      title="Where runs disagree: runs by ability (strongest on top), groups by difficulty "
                            "(easiest on the left)")
    fig.update_xaxes(showticklabels=len(groups) <= 60, title="groups", type="category")
    fig.update_yaxes(autorange="reversed", automargin=True, type="category")
    return fig
