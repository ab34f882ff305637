"""The Browse tab (SPEC §8, issue 6): a filterable, searchable, paged list of groups; a click opens the group's
view below the list, with every run's answers; the extraction audit sits in an accordion underneath."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import gradio as gr
import numpy as np
import pandas as pd

from core import families, outcomes
from core import groups as core_groups
from core.errors import CrosscheckError
from db import browse as dbb
from ui import browse_review, browse_search, health_panel, map_panel, slices_panel, why_panel
from ui.audit import build_audit
from ui.context import Ctx
from ui.focus import Focus
from ui.focus import groups as focus_groups
from ui.handlers import user_error
from ui.links import View, from_request
from ui.tables import verdict, with_verdicts
from ui.templating import macro
from ui.views import cache, render_group, view_of
from ui.views.common import ZOOM_JS

PAGE_SIZE = 50
ALL = ""


def _runs_of(store: Any, bench: str | None, runs: list[str] | None) -> list[str]:
    return [r["name"] for r in _records_of(store, bench, runs)]


def _records_of(store: Any, bench: str | None, runs: list[str] | None) -> list[dict[str, Any]]:
    """The run records of `bench` among `runs`, in the order picked (names of other benchmarks left out)."""
    if not bench:
        return []
    mine = {r["name"]: r for r in dbb.run_records(store, bench, list(runs or []))}
    return [mine[r] for r in dict.fromkeys(runs or []) if r in mine]


def run_header(rec: dict[str, Any]) -> str:
    return f"{rec['name']} (synthetic)" if rec.get("synthetic") else str(rec["name"])


def _cells(s: outcomes.RunSummary, n_items: np.ndarray, at: np.ndarray, labels: Mapping[str, str]) -> list[str]:
    """A run's verdict on each group at positions `at` for the list: k/n correct with a mark (and the
    category where the family has one: the StemBind decomposition)."""
    out = []
    for g in at.tolist():
        if s.n_answered[g] == 0:
            out.append("–")
            continue
        k, n = int(s.n_correct[g]), int(n_items[g])
        cat = s.category[g]
        extra = " " + labels.get(cat, cat) if cat else ""
        bad = int(s.n_invalid[g]) + int(s.n_api_error[g])
        out.append(f"{verdict(k, n)}{extra}{f' ⚠{bad}' if bad else ''}")
    return out


def _any_run(summaries: list[outcomes.RunSummary], key: str, n_groups: int) -> np.ndarray:
    """Groups matching pattern `key` in any of the runs."""
    hit = np.zeros(n_groups, dtype=bool)
    for s in summaries:
        got = s.patterns.get(key)
        if got is not None:
            hit |= got
    return hit


def _empty_list() -> dict[str, Any]:
    return {"table": pd.DataFrame({"group": []}), "summary": "No benchmark in the store yet: import one in the "
            "Data tab or run `python app.py import ITEMS.jsonl`.", "page": 1, "pages": 1, "counts": {},
            "total": 0, "n_groups": 0}


def list_groups(store: Any, bench: str | None, runs: list[str] | None, split: str | None, kind: str | None,
                field: str | None, value: str | None, pattern: str | None, query: str | None,
                page: int | float | None, tag: str | None = None, focus: Mapping[str, Any] | None = None
                ) -> dict[str, Any]:
    """The Browse list: {"table": DataFrame, "summary": html, "page": int, "pages": int, "counts": {...},
    "total": groups after filters, "n_groups": all groups, "ids": every group id after filters, in order}.
    `query` searches (ui.browse_search), `tag` keeps the groups with that tag, `focus` (ui.focus.Focus's dict)
    the groups of a failure mode or an item-health list. Pure of Gradio so the bench and tests call it."""
    if not bench:
        return _empty_list()
    bd = cache.bench(store, bench)
    records = _records_of(store, bench, runs)
    loaded = cache.summaries(store, bd, records)
    summaries = [s for _, s in loaded]
    lay = bd.layout
    base = core_groups.filter_groups(bd.index, bd.items, split or None, kind or None, field or None, value or None)
    base, note = browse_search.narrow(store, bd, base, [r["name"] for r in records], query, tag)
    chosen = Focus.of(focus)
    said = ""
    if chosen is not None:
        wanted, said = focus_groups(store, bench, chosen)
        base = base[base.isin(set(wanted))]
    at_base = lay.groups.get_indexer(base)
    keys = [key for key, _ in core_groups.patterns(bd.family)]
    hits = {key: _any_run(summaries, key, lay.n_groups) for key in keys}
    counts = {key: int(hits[key][at_base].sum()) if summaries else 0 for key in keys}
    ids, at = base, at_base
    if pattern and pattern in hits and summaries:
        keep = hits[pattern][at_base]
        ids, at = base[keep], at_base[keep]
    total = len(ids)
    pages = max(1, -(-total // PAGE_SIZE))
    page_n = min(max(1, int(page or 1)), pages)
    window = slice((page_n - 1) * PAGE_SIZE, page_n * PAGE_SIZE)
    chunk, at_chunk = ids[window], at[window]
    columns = _page_columns(bd, chunk, field)
    by_name = {r["name"]: r for r in records}
    for name, summ in loaded:
        columns[run_header(by_name[name])] = _cells(summ, lay.n_items, at_chunk, lay.rules.category_labels)
    columns["question"] = bd.index.frame.loc[chunk, "question"].to_numpy()
    summary = _summary_html(bd, pattern, total, len(chunk), page_n, pages, bool(records), note, said)
    return {"table": pd.DataFrame(columns), "summary": summary,
            "page": page_n, "pages": pages, "counts": counts, "total": total, "n_groups": len(bd.index.frame),
            "ids": ids}


def _page_columns(bd: cache.BenchData, chunk: pd.Index, field: str | None) -> dict[str, Any]:
    """The fixed columns of one page of the list (group, split, kind, items, and the stratum when one is
    picked), by name in display order."""
    f = bd.index.frame.loc[chunk]
    columns: dict[str, Any] = {"group": list(chunk), "split": f["split"].to_numpy(), "kind": f["kinds"].to_numpy(),
                               "items": f["n_items"].to_numpy()}
    if field and field in bd.strata:
        vals = core_groups.item_stratum(bd.items, field).groupby(bd.items["group_id"]).agg(
            lambda s: ", ".join(sorted({str(v) for v in s if v is not None})))
        columns[field] = [vals.get(g, "") for g in chunk]
    return columns


def _summary_html(bd: cache.BenchData, pattern: str | None, total: int, shown_n: int, page_n: int, pages: int,
                  any_runs: bool, note: str = "", focus: str = "") -> str:
    """The line above the list: how many groups the filters keep, which page; `note`: why a search found
    nothing (ui.browse_search.narrow); `focus`: the failure mode or item-health list the list is narrowed to."""
    shown = f"{(page_n - 1) * PAGE_SIZE + 1}–{(page_n - 1) * PAGE_SIZE + shown_n}" if total else "0"
    return macro("browse.html", "summary")(
        note=note, total=total, n_groups=len(bd.index.frame), pattern=dict(core_groups.patterns(bd.family)).get(pattern or "", ""),
        shown=shown, page=page_n, pages=pages, any_runs=any_runs, focus=focus)


def pattern_choices(store: Any, bench: str | None, counts: dict[str, int]) -> list[tuple[str, str]]:
    if not bench:
        return [("All groups", ALL)]
    fam = cache.bench(store, bench).family
    return [("All groups", ALL)] + [(f"{label} ({counts.get(key, 0)})", key)
                                    for key, label in core_groups.patterns(fam)]


# --------------------------------------------------------------------------- handlers (plain; tests call them)


def refresh_list(store: Any, bench: str | None, runs: list[str] | None, split_v: str | None, kind_v: str | None,
                 field_v: str | None, value_v: str | None, pattern_v: str | None, query: str | None,
                 page_v: int | float | None, tag_v: str | None = None, focus: Mapping[str, Any] | None = None
                 ) -> tuple[Any, ...]:
    """(table, summary html, page update, pattern update) for the list's outputs."""
    try:
        res = list_groups(store, bench, runs, split_v, kind_v, field_v, value_v, pattern_v, query, page_v, tag_v,
                          focus)
    except CrosscheckError as exc:
        raise user_error(str(exc)) from exc
    return (with_verdicts(res["table"]), res["summary"], gr.update(value=res["page"]),
            gr.update(choices=pattern_choices(store, bench, res["counts"]), value=pattern_v or ALL))


def _linked(link: View | None, bench: str | None, runs: list[str] | None) -> View | None:
    """`link` when it names this benchmark and these runs (ui.links), else None."""
    return link if link is not None and link.benchmark == bench and set(link.runs) == set(runs or []) else None


def reset(store: Any, bench: str | None, runs: list[str] | None, link: View | None = None,
          focus: Mapping[str, Any] | None = None) -> tuple[Any, ...]:
    """New benchmark or runs: fresh filter choices (split, kind, stratum, value, run in detail), page 1, the
    first page of groups. A `link` (ui.links) of this benchmark and these runs sets the filters and search it
    names instead of none; `focus` (ui.focus), the failure mode or item-health list the list keeps (default:
    the link's)."""
    on = _linked(link, bench, runs)
    split_v, kind_v, pattern_v, q = (on.split, on.kind, on.pattern, on.q) if on else (ALL, ALL, ALL, "")
    res = refresh_list(store, bench, runs, split_v, kind_v, ALL, ALL, pattern_v, q, 1, None,
                       focus if focus is not None else linked_focus(on))
    if not bench:
        empty = gr.update(choices=[("All", ALL)], value=ALL)
        return (empty, empty, gr.update(choices=[("None", ALL)], value=ALL), empty,
                gr.update(choices=[], value=None), *res)
    bd = cache.bench(store, bench)
    names = _runs_of(store, bench, runs)
    det_choices = [(run_header(r), r["name"]) for r in dbb.run_records(store, bench)]
    return (gr.update(choices=[("All", ALL)] + [(s, s) for s in bd.splits], value=split_v),
            gr.update(choices=[("All", ALL)] + [(k, k) for k in bd.kinds], value=kind_v),
            gr.update(choices=[("None", ALL)] + [(k, k) for k in bd.strata], value=ALL),
            gr.update(choices=[("All", ALL)], value=ALL),
            gr.update(choices=det_choices, value=names[0] if names else None), *res)


def linked_focus(link: View | None) -> dict[str, Any] | None:
    """The failure-mode or item-health filter a link names (ui.focus), as Browse's State holds it."""
    if link is None:
        return None
    focus = Focus.of_link(link.benchmark, link.mode, link.mode_run, link.mode_vs, link.health)
    return focus.as_dict() if focus is not None else None


def linked_group(store: Any, bench: str | None, runs: list[str] | None, link: View | None,
                 shown: str | None = None) -> tuple[Any, Any, Any, Any]:
    """(search, group, view, opened group) as a link of this benchmark and these runs names them; unchanged
    otherwise. The link's group never replaces another group `shown` in the Group box: the user opened it while
    the page was still landing on the link (a late switch of the header's runs would otherwise reopen the link's
    group)."""
    on = _linked(link, bench, runs)
    if on is None or (shown or "").strip() not in ("", on.group):
        return gr.update(), gr.update(), gr.update(), gr.update()
    if not on.group:
        return gr.update(value=on.q), gr.update(), gr.update(), gr.update()
    return gr.update(value=on.q), gr.update(value=on.group), open_group(store, bench, runs, on.group, None, True), \
        on.group


def field_values(store: Any, bench: str | None, field_v: str | None) -> Any:
    """The Value dropdown for a picked stratum field."""
    if not bench or not field_v:
        return gr.update(choices=[("All", ALL)], value=ALL)
    vals = cache.bench(store, bench).strata.get(field_v, [])
    return gr.update(choices=[("All", ALL)] + [(v, v) for v in vals], value=ALL)


def open_group(store: Any, bench: str | None, runs: list[str] | None, group_id: str | None,
               detail_v: str | None, boxes_v: bool | None, query: str | None = None) -> str:
    """The group view's HTML for the typed or clicked group id, the search box's words marked."""
    return browse_search.highlight(render_group(store, bench, (group_id or "").strip() or None,
                                                _runs_of(store, bench, runs), detail_v, bool(boxes_v)), query)


def opened_id(store: Any, bench: str | None, group_id: str | None) -> str:
    """The id of the group a view of `group_id` shows: "" when the benchmark has no such group (the view then
    says so). The Group box holds what is typed; the address, the tag row and the review keys follow this."""
    gid = (group_id or "").strip()
    return gid if bench and gid and gid in cache.bench(store, bench).index.frame.index else ""


def kept_group(store: Any, bench: str | None, opened: str | None) -> tuple[Any, Any, Any]:
    """(Group box, view, opened group) after the header's benchmark or runs change: a group the benchmark lacks
    (the previous benchmark's) is closed, every part emptied; otherwise nothing changes."""
    if not opened or opened_id(store, bench, opened):
        return gr.update(), gr.update(), gr.update()
    return "", render_group(store, None, None), ""


def submit_group(store: Any, bench: str | None, runs: list[str] | None, group_id: str | None, detail_v: str | None,
                 boxes_v: bool | None, query: str | None = None) -> tuple[str, str]:
    """Enter in the Group box: (the group's view, the id of the group it shows)."""
    return open_group(store, bench, runs, group_id, detail_v, boxes_v, query), opened_id(store, bench, group_id)


def select_row(store: Any, bench: str | None, runs: list[str] | None, detail_v: str | None, boxes_v: bool | None,
               row: list[Any] | None, query: str | None = None) -> tuple[str | None, str, str]:
    """A click on a list row: (its group id, the group's view, the id of the group it shows)."""
    gid = str(row[0]) if row else None
    return gid, open_group(store, bench, runs, gid, detail_v, boxes_v, query), opened_id(store, bench, gid)


def step_group(store: Any, args: list[Any], delta: int) -> tuple[Any, Any, Any, Any]:
    """(group id, its view, the list's page, the id again as the group shown) of the group `delta` away from the
    opened one in the filtered list; `args`: Browse's filters (ending with page, tag and, where set, the focus),
    then the opened group, detail and boxes. From no group (or one the filters left out): the first group of the page shown (the last
    one going back)."""
    *filters, gid, detail, boxes = args
    bench, runs, split, kind, field, value, pattern, query, page, tag, *rest = filters
    focus = rest[0] if rest else None  # the focus filter is the last one, where Browse has it (ui.focus)
    try:
        res = list_groups(store, bench, runs, split, kind, field, value, pattern, query, 1, tag, focus)
    except CrosscheckError as exc:
        raise gr.Error(str(exc)) from exc
    ids = [str(g) for g in res.get("ids", [])]
    if not ids:
        return gr.update(), gr.update(), gr.update(), gr.update()
    cur = (gid or "").strip()
    if cur in ids:
        at = min(max(ids.index(cur) + delta, 0), len(ids) - 1)
    else:
        first = (max(1, int(page or 1)) - 1) * PAGE_SIZE
        at = min(first if delta > 0 else first + PAGE_SIZE - 1, len(ids) - 1)
    new = ids[at]
    return new, open_group(store, bench, runs, new, detail, boxes, query), at // PAGE_SIZE + 1, new


def panel_boxes_shown(store: Any, bench: Any) -> bool:
    """Whether the Browse tab offers the "Panel boxes" toggle: only for a family whose view draws panel boxes."""
    if not isinstance(bench, str) or not bench:
        return False
    try:
        family = families.get(store.benchmark_family(bench)).name
    except CrosscheckError:
        return False
    return view_of(family).panel_boxes


def build_browse(ctx: Ctx) -> None:
    """The tab's layout; its events are wired by _wire to the plain handlers above."""
    store = ctx.store
    gr.Markdown("Pick a benchmark and runs in the header; filter the groups, then click a row to open the group "
                "with every run's answers.", elem_classes=["cc-muted"])
    with gr.Row():
        split = gr.Dropdown(label="Split", choices=[("All", ALL)], value=ALL, scale=1, elem_id="cc-browse-split")
        kind = gr.Dropdown(label="Kind", choices=[("All", ALL)], value=ALL, scale=1, elem_id="cc-browse-kind")
        field = gr.Dropdown(label="Stratum (meta)", choices=[("None", ALL)], value=ALL, scale=1,
                            elem_id="cc-browse-field")
        value = gr.Dropdown(label="Value", choices=[("All", ALL)], value=ALL, scale=1, elem_id="cc-browse-value")
        pattern = gr.Dropdown(label="Failure pattern (in any selected run)", choices=[("All groups", ALL)], value=ALL,
                              scale=3, elem_id="cc-browse-pattern")
        tag = browse_review.tag_filter()
        search = gr.Textbox(label="Search", placeholder="words, a group id…", scale=2,
                            elem_id="cc-browse-search")
    slices, why, health, disagree = (p.build(ctx) for p in (slices_panel, why_panel, health_panel, map_panel))
    focus = gr.State(None)  # the failure mode or item-health list the list is narrowed to (ui.focus), or None
    with gr.Row():
        summary = gr.HTML(elem_id="cc-browse-summary", elem_classes=["cc-grow"])
        clear = gr.Button("Show every group", size="sm", scale=0, min_width=150, visible=False,
                          elem_id="cc-browse-focus-clear")
        prev_btn = gr.Button("◀ Previous", size="sm", scale=0, min_width=110, elem_id="cc-browse-prev")
        page = gr.Number(value=1, label="Page", precision=0, minimum=1, scale=0, min_width=90, elem_id="cc-browse-page")
        next_btn = gr.Button("Next ▶", size="sm", scale=0, min_width=110, elem_id="cc-browse-next")
    table = gr.Dataframe(interactive=False, max_height=360, wrap=False, elem_id="cc-browse-list",
                         show_label=False)
    with gr.Row():
        group = gr.Textbox(label="Group", placeholder="click a row above, or type a group id and press Enter",
                           scale=2, elem_id="cc-browse-group")
        # a custom value passes: a group opened right after a benchmark switch may still send the previous
        # benchmark's run before the new choices reach the browser; the view then details its first picked run
        detail = gr.Dropdown(label="Run in detail", choices=[], scale=3, elem_id="cc-browse-detail",
                             allow_custom_value=True)
        boxes = gr.Checkbox(label="Panel boxes (SPUR)", value=True, scale=1, elem_id="cc-browse-boxes",
                            visible=panel_boxes_shown(store, ctx.benchmark.value))
    view = gr.HTML(render_group(store, None, None), elem_id="cc-group-view", js_on_load=ZOOM_JS)
    opened = gr.State("")  # the id of the group the view shows ("" for none): not what is typed in the Group box
    tools = browse_review.build_tools()

    _wire(ctx, {"split": split, "kind": kind, "field": field, "value": value, "pattern": pattern, "search": search,
                "page": page, "prev": prev_btn, "next": next_btn, "table": table, "group": group, "detail": detail,
                "boxes": boxes, "view": view, "opened": opened, "summary": summary, "tag": tag, "slices": slices,
                "why": why, "health": health, "map": disagree, "focus": focus, "focus_clear": clear, **tools})

    with gr.Accordion("Extraction audit: invalid parses, re-parse, manual answers", open=False,
                      elem_id="cc-audit"):
        build_audit(ctx)


def _wire(ctx: Ctx, c: dict[str, Any]) -> None:
    """The Browse tab's events: each calls one handler above with the store."""
    store = ctx.store
    filters = [ctx.benchmark, ctx.runs, c["split"], c["kind"], c["field"], c["value"], c["pattern"], c["search"],
               c["page"], c["tag"], c["focus"]]  # page, the tag filter and the focus last (ui.browse_review)
    list_outputs = [c["table"], c["summary"], c["page"], c["pattern"]]
    _wire_landing(ctx, c, list_outputs)
    first_page, on_list = _wire_list(ctx, c, filters, list_outputs)
    _wire_group(ctx, c)
    browse_review.wire(ctx, c, filters, list_outputs, first_page, on_list, functools.partial(step_group, store))
    then_list = functools.partial(_then_list, first_page, filters, list_outputs)
    opener = functools.partial(_open_row, store)
    why_panel.wire(ctx, c["why"], c, then_list)
    health_panel.wire(ctx, c["health"], c, then_list, opener)
    map_panel.wire(ctx, c["map"], c, opener)
    c["focus"].change(lambda f: gr.update(visible=Focus.of(f) is not None), c["focus"], c["focus_clear"],
                      api_visibility="private", queue=False)
    then_list(c["focus_clear"].click(lambda: None, None, c["focus"], api_visibility="private"))


def _open_row(store: Any, bench: str | None, runs: list[str] | None, group: str, detail: str | None,
              boxes: bool | None, query: str | None) -> tuple[str, str, str]:
    """(Group box, view, opened group) of `group` with `detail` the run in detail: a panel's row or cell opened."""
    return group, open_group(store, bench, runs, group, detail, boxes, query), opened_id(store, bench, group)


def _then_list(first_page: Any, filters: list[Any], list_outputs: list[Any], event: Any) -> Any:
    """`event` followed by the list's first page under the filters."""
    return event.then(first_page, filters, list_outputs, api_visibility="private")


def _wire_landing(ctx: Ctx, c: dict[str, Any], list_outputs: list[Any]) -> None:
    """The page load (the view of its link) and a change of the header's benchmark or runs: every filter, the
    list and the group view afresh; the parts a link names registered for ui.links."""
    store = ctx.store
    reset_outputs = [c["split"], c["kind"], c["field"], c["value"], c["detail"], *list_outputs, c["search"],
                     c["group"], c["view"], c["opened"], c["focus"]]

    def on_load(bench, runs, link, request: gr.Request):
        view = View.of(link) or from_request(store, request)
        if view is not None and link is None:  # page load: the link's benchmark and runs, not the defaults
            bench, runs = view.benchmark, view.runs
        return (*reset(store, bench, runs, view), *linked_group(store, bench, runs, view),
                linked_focus(_linked(view, bench, runs)))

    def on_reset(bench, runs, link, shown, opened, focus):
        # a change of the header's benchmark or runs: the header's choice stands (the address bar may still show
        # the previous view when this runs, so the page's query string is not read here); a group the link does
        # not open stays open if this benchmark has it, and so does a failure mode or item-health filter
        view = View.of(link)
        linked = linked_group(store, bench, runs, view, shown)
        if linked[3] == gr.update():
            linked = (linked[0], *kept_group(store, bench, opened))
        kept = Focus.of(focus)
        wanted = focus if kept is not None and kept.bench == bench else linked_focus(_linked(view, bench, runs))
        return (*reset(store, bench, runs, view, wanted), *linked, wanted)

    def on_boxes_shown(bench: str | None) -> Any:
        return gr.update(visible=panel_boxes_shown(store, bench))

    ctx.page.load(on_load, [ctx.benchmark, ctx.runs, ctx.link], reset_outputs, api_visibility="private")
    for trigger in (ctx.benchmark.change, ctx.runs.change, ctx.refresh.click):
        trigger(on_reset, [ctx.benchmark, ctx.runs, ctx.link, c["group"], c["opened"], c["focus"]], reset_outputs,
                api_visibility="private")
    ctx.parts.update({f"browse.{k}": c[k] for k in ("split", "kind", "pattern", "search", "focus")})
    ctx.parts["browse.group"] = c["opened"]  # the address names the group shown, never a half-typed id
    ctx.benchmark.change(on_boxes_shown, ctx.benchmark, c["boxes"], api_visibility="private", queue=False)


def _wire_list(ctx: Ctx, c: dict[str, Any], filters: list[Any], list_outputs: list[Any]) -> tuple[Any, Any]:
    """The filters, the search box and the pager: each lists the groups again. Returns (the first page's
    handler, the shown page's handler) for the review loop's events."""
    store = ctx.store

    def on_list(*args):
        return refresh_list(store, *args)

    def first_page(*args):  # the filters end with page, tag and focus
        return refresh_list(store, *args[:-3], 1, *args[-2:])

    def step(delta: int) -> Any:
        def go(*args):
            return refresh_list(store, *args[:-3], int(args[-3] or 1) + delta, *args[-2:])
        return go

    def on_field(bench, field_v):
        return field_values(store, bench, field_v)

    c["field"].input(on_field, [ctx.benchmark, c["field"]], c["value"], api_visibility="private").then(
        first_page, filters, list_outputs, api_visibility="private")
    for comp in (c["split"], c["kind"], c["value"], c["pattern"], c["tag"]):
        comp.input(first_page, filters, list_outputs, api_visibility="private")
    # scripts call ui.api's browse_list and open_group: these events' pickers hold the first benchmark's choices
    c["search"].submit(first_page, filters, list_outputs, api_visibility="private")
    c["page"].submit(on_list, filters, list_outputs, api_visibility="private")
    c["prev"].click(step(-1), filters, list_outputs, api_visibility="private")
    c["next"].click(step(+1), filters, list_outputs, api_visibility="private")
    return first_page, on_list


def _wire_group(ctx: Ctx, c: dict[str, Any]) -> None:
    """A click on a row, Enter in the Group box, the run in detail and the panel boxes: the group view."""
    store = ctx.store
    group_inputs = [ctx.benchmark, ctx.runs, c["group"], c["detail"], c["boxes"], c["search"]]
    shown_inputs = [ctx.benchmark, ctx.runs, c["opened"], c["detail"], c["boxes"], c["search"]]

    def on_group(*args):
        return open_group(store, *args)

    def on_submit(*args):
        return submit_group(store, *args)

    def on_select(bench, runs, detail_v, boxes_v, query, evt: gr.SelectData):
        return select_row(store, bench, runs, detail_v, boxes_v, evt.row_value, query)

    c["table"].select(on_select, [ctx.benchmark, ctx.runs, c["detail"], c["boxes"], c["search"]],
                      [c["group"], c["view"], c["opened"]], api_visibility="private")
    c["group"].submit(on_submit, group_inputs, [c["view"], c["opened"]], api_visibility="private")
    c["detail"].input(on_group, shown_inputs, c["view"], api_visibility="private")
    c["boxes"].input(on_group, shown_inputs, c["view"], api_visibility="private")
