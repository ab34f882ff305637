"""Browse's "Where it fails" panel (issue #23 point 2, docs/UI.md): the slices of a run (core.slices, the same
numbers as `app.py slices`), worst first, computed on the Browse caches (ui/views/cache.py) in an event of its
own, so the list never waits for it; a click on a row sets Browse's filters to that slice.

A slice maps onto Browse's filters: `kind` -> Kind, `tag:NAME` -> Tag, any other field -> Stratum and Value,
the slice's split -> Split. A two-field slice sets what it can (Kind or Tag together with one Stratum / Value);
`variant` has no Browse filter. What was left out is said in the panel's line.
"""

from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd

from core.errors import CrosscheckError, MetricUndefined
from core.slices import slices_of_run
from db import browse as dbb
from db import tags as dbt
from ui.templating import macro
from ui.views import cache

ALL = ""
COLUMNS = ["slice", "groups", "accuracy", "rest", "difference [95% CI]", "q"]


def _rate(r: Any) -> str:
    return f"{r.k}/{r.n} ({r.value:.0%})" if r.n and r.value is not None else f"{r.k}/{r.n}"


def _pp(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:+.1f}"


def slices_table(store: Any, bench: str | None, run: str | None, other: str | None) -> tuple[pd.DataFrame, list[dict[str, Any]], str]:
    """(the panel's table, each row's slice as JSON with its split, a line above the table) for `run` (against
    `other` when given, paired: the slices where `run` lost most first)."""
    empty = pd.DataFrame({c: [] for c in COLUMNS})
    if not bench or not run:
        return empty, [], "Pick a run in the header (or in “Run”) to see where it fails."
    items = cache.full_items(store, bench)
    names = [run] + ([other] if other and other != run else [])
    data = cache.run_data(store, names)
    if run not in data:
        return empty, [], f"No run {run!r} of benchmark {bench!r}."
    extra = dbt.tag_fields(store, bench, items["group_id"])
    try:
        label, found = slices_of_run(items, data[run], other=data.get(names[-1]) if len(names) > 1 else None,
                                     extra=extra)
    except (MetricUndefined, CrosscheckError) as exc:
        return empty, [], str(exc)
    rest_col = "other run" if len(names) > 1 else "rest"
    rows = []
    for s in found:
        ci = f" [{_pp(s.ci[0])}, {_pp(s.ci[1])}]" if s.ci else ""
        against = s.other if s.other is not None else s.rest
        rows.append({"slice": f"{s.field} = {s.value}", "groups": s.n_groups, "accuracy": _rate(s.accuracy),
                     "rest": _rate(against), "difference [95% CI]": f"{_pp(s.diff)} pp{ci}",
                     "q": "–" if s.q is None else f"{s.q:.3g}"})
    table = pd.DataFrame(rows, columns=COLUMNS).rename(columns={"rest": rest_col})
    vs = f"against run {names[-1]!r} on the same items" if len(names) > 1 else "each against the rest of the split"
    line = (f"{len(found)} slices of {run!r} on split {label!r}, {vs}; difference in points with its 95% "
            "cluster-bootstrap interval, BH q; worst first. Click a row to filter the list to it.")
    return table, [{**s.to_json(), "split": label} for s in found], line


def slice_filters(store: Any, bench: str | None, chosen: dict[str, Any] | None) -> tuple[Any, ...]:
    """Updates of (split, kind, field, value, tag, the panel's line) that filter Browse to the slice `chosen`
    (slices_table's JSON); the pattern filter and the search box are left as they are."""
    keep = gr.update()
    if not bench or not chosen:
        return keep, keep, keep, keep, keep, gr.update()
    bd = cache.bench(store, bench)
    split = chosen.get("split")
    kind = field = value = tag = ALL
    left: list[str] = []
    for name, val in zip(chosen["fields"], chosen["values"], strict=True):
        if name == "kind" and not kind:
            kind = val
        elif name.startswith("tag:") and not tag:
            tag = name.removeprefix("tag:")
        elif name not in ("kind", "variant") and not name.startswith("tag:") and not field:
            field, value = name, val
        else:
            left.append(f"{name} = {val}")
    fields = [("None", ALL)] + [(k, k) for k in bd.strata] + ([(field, field)] if field and field not in bd.strata else [])
    values = [("All", ALL)] + [(v, v) for v in bd.strata.get(field, [])]
    if field and value not in bd.strata.get(field, []):
        values.append((value, value))
    tags = [("All", ALL)] + [(t, t) for t in dbt.tag_names(store, bench)]
    shown = f"{chosen['field']} = {chosen['value']}"
    line = f"The list shows the slice {shown}"
    if left:
        line += f" without {', '.join(left)} (Browse has one Stratum filter and none for variant)"
    return (gr.update(value=split if split in bd.splits else ALL), gr.update(value=kind),
            gr.update(choices=fields, value=field), gr.update(choices=values, value=value),
            gr.update(choices=tags, value=tag), macro("browse.html", "slice_line")(f"{line}.", "cc-slices-applied"))


def run_choices(store: Any, bench: str | None, runs: list[str] | None) -> tuple[Any, Any]:
    """The panel's Run and Versus dropdowns for the header's benchmark and runs (Run: the first picked)."""
    if not bench:
        return gr.update(choices=[], value=None), gr.update(choices=[("None", ALL)], value=ALL)
    names = [str(r["name"]) for r in dbb.run_records(store, bench)]
    picked = [r for r in (runs or []) if r in names]
    return (gr.update(choices=names, value=picked[0] if picked else (names[0] if names else None)),
            gr.update(choices=[("None", ALL)] + [(n, n) for n in names], value=ALL))


def build(ctx: Any) -> dict[str, Any]:
    """The panel's components (in an accordion, closed until asked for); wired by `wire`."""
    with gr.Accordion("Where it fails: slices of a run, worst first", open=False, elem_id="cc-slices") as acc:
        with gr.Row():
            run = gr.Dropdown(label="Run", choices=[], scale=2, elem_id="cc-slices-run", allow_custom_value=True)
            other = gr.Dropdown(label="Versus another run (paired)", choices=[("None", ALL)], value=ALL, scale=2,
                                elem_id="cc-slices-other", allow_custom_value=True)
            go = gr.Button("Find slices", size="sm", scale=0, min_width=120, elem_id="cc-slices-go")
        line = gr.HTML(elem_id="cc-slices-line")
        table = gr.Dataframe(interactive=False, max_height=300, wrap=False, elem_id="cc-slices-table",
                             show_label=False)
        state = gr.State([])
    return {"acc": acc, "run": run, "other": other, "go": go, "line": line, "table": table, "state": state}


def wire(ctx: Any, p: dict[str, Any], c: dict[str, Any], then_list: Any) -> None:
    """The panel's events; `then_list(event)` chains Browse's first-page refresh after a filter change."""
    store = ctx.store

    def on_runs(bench, runs):
        return run_choices(store, bench, runs)

    def on_find(bench, run_v, other_v):
        table, chosen, line = slices_table(store, bench, run_v, other_v or None)
        return table, chosen, macro("browse.html", "slice_line")(line)

    def on_pick(bench, chosen, evt: gr.SelectData):
        row = evt.index[0] if isinstance(evt.index, list | tuple) else evt.index
        pick = chosen[row] if isinstance(row, int) and 0 <= row < len(chosen) else None
        return slice_filters(store, bench, pick)

    for trigger in (ctx.benchmark.change, ctx.runs.change):
        trigger(on_runs, [ctx.benchmark, ctx.runs], [p["run"], p["other"]], api_visibility="private")
    p["acc"].expand(on_runs, [ctx.benchmark, ctx.runs], [p["run"], p["other"]], api_visibility="private").then(
        on_find, [ctx.benchmark, p["run"], p["other"]], [p["table"], p["state"], p["line"]],
        api_visibility="private")
    p["go"].click(on_find, [ctx.benchmark, p["run"], p["other"]], [p["table"], p["state"], p["line"]],
                  api_name="browse_slices")
    then_list(p["table"].select(on_pick, [ctx.benchmark, p["state"]],
                                [c["split"], c["kind"], c["field"], c["value"], c["tag"], p["line"]],
                                api_visibility="private"))
