"""Browse's "Why it fails" panel (issue #38 point 1, docs/UI.md "Browse"): the failure modes of a run
(core.failure_modes, the numbers of `app.py failure-modes`), computed on the Browse caches and kept until the run
changes (ui.views.cache.failure_modes), in an event of its own, so the list never waits for it. A click on a mode
narrows the list to its groups (ui.focus), so the review keys walk them; the link carries it.
"""

from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd

from core.errors import CrosscheckError, MetricUndefined
from db.store import Store
from ui import slices_panel
from ui.focus import Focus
from ui.templating import macro
from ui.views import cache

ALL = ""
COLUMNS = ["mode", "failing", "passing", "difference [95% CI]", "q", "stability", "groups", "examples"]
TERM_COLUMNS = ["term", "failing", "passing", "z", "q"]


def _pp(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:+.1f}"


def _q(x: float | None) -> str:
    return "–" if x is None else f"{x:.3g}"


def modes_table(store: Store, bench: str | None, run: str | None, other: str | None
                ) -> tuple[pd.DataFrame, pd.DataFrame, list[dict[str, Any]], str]:
    """(the modes' table, the distinctive terms' table, each mode row's filter (ui.focus.Focus's dict), the line
    above them) of `run` (against `other`: the items it lost)."""
    empty = pd.DataFrame({c: [] for c in COLUMNS})
    no_terms = pd.DataFrame({c: [] for c in TERM_COLUMNS})
    if not bench or not run:
        return empty, no_terms, [], "Pick a run in the header (or in “Run”) to see why it fails."
    other = other if other and other != run else None
    try:
        found = cache.failure_modes(store, bench, run, other)
    except (MetricUndefined, CrosscheckError) as exc:
        return empty, no_terms, [], str(exc)
    rows, picks = [], []
    for m in found.modes:
        ci = f" [{_pp(m.ci[0])}, {_pp(m.ci[1])}]" if m.ci else ""
        stages = " · ".join(f"{k} {v}" for k, v in m.stages.items())
        rows.append({"mode": m.label + (f" (first failing stage: {stages})" if stages else ""),
                     "failing": f"{m.n_failing} ({100 * m.share_failing:.0f}%)",
                     "passing": f"{m.n_passing} ({100 * m.share_passing:.0f}%)",
                     "difference [95% CI]": f"{_pp(m.diff)} pp{ci}", "q": _q(m.q), "stability": f"{m.stability:.2f}",
                     "groups": len(m.groups), "examples": ", ".join(m.examples)})
        picks.append(Focus(bench=bench, run=run, other=other or "", mode=m.id).as_dict())
    terms = pd.DataFrame([{"term": t.term, "failing": t.failing, "passing": t.passing, "z": f"{t.z:.2f}",
                           "q": _q(t.q)} for t in found.terms], columns=TERM_COLUMNS)
    vs = f"the {found.n_failing} items it lost against {other!r}" if other else f"its {found.n_failing} failing items"
    line = (f"{len(found.modes)} modes of {run!r} on split {found.split!r} in what it said ({vs}, "
            f"{found.n_passing} passing): each mode's share among the failing and the passing answers, the difference "
            "in points with its 95% cluster-bootstrap interval, BH q and how often it reappears when the groups are "
            "resampled; most failure-heavy first. Click a mode to list its groups (j / k walk them).")
    if found.note:
        line += f" {found.note}."
    return pd.DataFrame(rows, columns=COLUMNS), terms, picks, line


def build(ctx: Any) -> dict[str, Any]:
    """The panel's components (in an accordion, closed until asked for); wired by `wire`."""
    with gr.Accordion("Why it fails: failure modes in what a run said", open=False, elem_id="cc-why") as acc:
        with gr.Row():
            run = gr.Dropdown(label="Run", choices=[], scale=2, elem_id="cc-why-run", allow_custom_value=True)
            other = gr.Dropdown(label="Lost against another run", choices=[("None", ALL)], value=ALL, scale=2,
                                elem_id="cc-why-other", allow_custom_value=True)
            go = gr.Button("Find modes", size="sm", scale=0, min_width=120, elem_id="cc-why-go")
        line = gr.HTML(elem_id="cc-why-line")
        table = gr.Dataframe(interactive=False, max_height=300, wrap=True, elem_id="cc-why-table", show_label=False)
        with gr.Accordion("Distinctive terms: words and phrases over-represented in its failing answers",
                          open=False, elem_id="cc-why-terms-acc"):
            terms = gr.Dataframe(interactive=False, max_height=260, wrap=False, elem_id="cc-why-terms",
                                 show_label=False)
        state = gr.State([])
    return {"acc": acc, "run": run, "other": other, "go": go, "line": line, "table": table, "terms": terms,
            "state": state}


def wire(ctx: Any, p: dict[str, Any], c: dict[str, Any], then_list: Any) -> None:
    """The panel's events; `then_list(event)` chains Browse's first-page refresh after the filter is set."""
    store = ctx.store

    def on_runs(bench, runs):
        return slices_panel.run_choices(store, bench, runs)

    def on_find(bench, run_v, other_v):
        table, terms, picks, line = modes_table(store, bench, run_v, other_v or None)
        return table, terms, picks, macro("browse.html", "slice_line")(line)

    def on_pick(picks, evt: gr.SelectData):
        row = evt.index[0] if isinstance(evt.index, list | tuple) else evt.index
        return picks[row] if isinstance(row, int) and 0 <= row < len(picks) else gr.update()

    outputs = [p["table"], p["terms"], p["state"], p["line"]]
    for trigger in (ctx.benchmark.change, ctx.runs.change):
        trigger(on_runs, [ctx.benchmark, ctx.runs], [p["run"], p["other"]], api_visibility="private")
    p["acc"].expand(on_runs, [ctx.benchmark, ctx.runs], [p["run"], p["other"]], api_visibility="private").then(
        on_find, [ctx.benchmark, p["run"], p["other"]], outputs, api_visibility="private")
    p["go"].click(on_find, [ctx.benchmark, p["run"], p["other"]], outputs, api_name="browse_failure_modes")
    then_list(p["table"].select(on_pick, [p["state"]], [c["focus"]], api_visibility="private"))
