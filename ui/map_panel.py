"""Browse's "Where runs disagree" panel (issue #38 point 3, docs/UI.md "Browse"): every run x group of the
benchmark as one plotly map (ui.charts.disagreement_map over core.disagreement), runs by ability and groups by
difficulty from a Rasch fit, each cell coloured by the run's joint outcome on the group. Beyond 60 runs or 300
groups it draws an evenly spaced sample (the header's runs always among them) and says so above the map. A click
on a cell opens that group with that run in detail: MAP_JS hands the cell's [group, run] to a hidden textbox,
whose change event opens it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gradio as gr

from core.errors import CrosscheckError
from db.store import Store
from ui import charts
from ui.templating import macro
from ui.views import cache

SEP = "\u001f"  # between the group, the run and a click count in the hidden textbox

# plotly_click on the map: its cell's customdata [group, run] into the hidden textbox (#cc-map-pick), with a count
# so that a second click on the same cell is a change too; the textbox's change event opens the group
MAP_JS = r"""
if (!window.__ccMap) {
  window.__ccMap = {n: 0};
  const hook = () => {
    document.querySelectorAll('#cc-map-plot .js-plotly-plot').forEach((gd) => {
      if (gd.dataset.ccClick || !gd.on) return;
      gd.dataset.ccClick = '1';
      gd.on('plotly_click', (ev) => {
        const pt = ev && ev.points && ev.points[0];
        if (!pt || !pt.customdata) return;
        const box = document.querySelector('#cc-map-pick textarea, #cc-map-pick input');
        if (!box) return;
        window.__ccMap.n += 1;
        box.value = [pt.customdata[0], pt.customdata[1], window.__ccMap.n].join('\u001f');
        box.dispatchEvent(new Event('input', {bubbles: true}));
      });
    });
  };
  new MutationObserver(hook).observe(document.body, {childList: true, subtree: true});
  hook();
}
"""


def map_figure(store: Store, bench: str | None, runs: list[str] | None) -> tuple[Any, str]:
    """(the map's figure, the line above it) of every run of `bench`, the header's `runs` always drawn."""
    if not bench:
        return charts.empty("Where runs disagree", "pick a benchmark"), "Pick a benchmark in the header."
    try:
        m = cache.disagreement(store, bench, tuple(runs or ()))
    except CrosscheckError as exc:
        return charts.empty("Where runs disagree", str(exc)), str(exc)
    line = (f"{m.n_runs} runs x {m.n_groups} groups, each cell a run's joint outcome on a group over the items it "
            "answered (every one right, some, none, none answered); runs ordered by ability and groups by difficulty "
            "from a Rasch fit of the items right, each with a 95% interval (hover). Click a cell to open that group "
            "with that run in detail.")
    if m.note:
        line += f" Drawn: {m.note}."
    return charts.disagreement_map(m), line


def picked(value: str | None) -> tuple[str, str] | None:
    """(group, run) of the hidden textbox's value, or None."""
    parts = (value or "").split(SEP)
    return (parts[0], parts[1]) if len(parts) >= 2 and parts[0] and parts[1] else None


def build(ctx: Any) -> dict[str, Any]:
    """The panel's components (in an accordion, closed until asked for); wired by `wire`."""
    with gr.Accordion("Where runs disagree: every run x group, by ability and difficulty", open=False,
                      elem_id="cc-map") as acc:
        with gr.Row():
            line = gr.HTML(elem_id="cc-map-line", elem_classes=["cc-grow"])
            go = gr.Button("Draw map", size="sm", scale=0, min_width=110, elem_id="cc-map-go")
        plot = gr.Plot(show_label=False, elem_id="cc-map-plot")
        pick = gr.Textbox(elem_id="cc-map-pick", elem_classes=["cc-hidden-btn"], show_label=False, container=False)
        gr.HTML("", js_on_load=MAP_JS, elem_id="cc-map-js")
    return {"acc": acc, "line": line, "go": go, "plot": plot, "pick": pick}


def wire(ctx: Any, p: dict[str, Any], c: dict[str, Any], open_row: Callable[..., tuple[Any, ...]]) -> None:
    """The panel's events; `open_row(bench, runs, group, detail, boxes, query)` gives (group box, view, opened
    group) for a group (ui.browse.select_row's outputs)."""
    store = ctx.store

    def on_draw(bench, runs):
        fig, line = map_figure(store, bench, runs)
        return fig, macro("browse.html", "slice_line")(line)

    def on_pick(bench, runs, value, boxes, query):
        got = picked(value)
        if got is None:
            return gr.update(), gr.update(), gr.update(), gr.update()
        group, run = got
        return (*open_row(bench, runs, group, run, boxes, query), gr.update(value=run))

    p["acc"].expand(on_draw, [ctx.benchmark, ctx.runs], [p["plot"], p["line"]], api_visibility="private")
    p["go"].click(on_draw, [ctx.benchmark, ctx.runs], [p["plot"], p["line"]], api_name="browse_disagreement_map")
    p["pick"].change(on_pick, [ctx.benchmark, ctx.runs, p["pick"], c["boxes"], c["search"]],
                    [c["group"], c["view"], c["opened"], c["detail"]], api_visibility="private")
