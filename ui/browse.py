"""The Browse tab (SPEC §8, issue 6): a filterable, searchable, paged list of groups; a click opens the group's
view below the list, with every run's answers; the extraction audit sits in an accordion underneath."""

from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd

from core import groups as core_groups
from core.errors import CrosscheckError
from db import browse as dbb
from ui.context import Ctx
from ui.tables import verdict, with_verdicts
from ui.views import cache, render_group
from ui.views.common import ZOOM_JS, esc

PAGE_SIZE = 50
ALL = ""


def _runs_of(store: Any, bench: str | None, runs: list[str] | None) -> list[str]:
    if not bench:
        return []
    mine = {r["name"] for r in dbb.run_records(store, bench)}
    return [r for r in (runs or []) if r in mine]


def run_header(rec: dict[str, Any]) -> str:
    return f"{rec['name']} (synthetic)" if rec.get("synthetic") else str(rec["name"])


def _cell(summary: pd.DataFrame, gid: str, family: str) -> str:
    """A run's verdict on a group for the list: k/n correct with a mark (and the StemBind category)."""
    if gid not in summary.index:
        return "–"
    row = summary.loc[gid]
    if int(row["n_answered"]) == 0:
        return "–"
    k, n = int(row["n_correct"]), int(row["n_items"])
    extra = ""
    if family == "stembind" and row.get("category"):
        extra = " " + core_groups.CATEGORY_LABELS.get(row["category"], row["category"])
    bad = int(row["n_invalid"]) + int(row["n_api_error"])
    warn = f" ⚠{bad}" if bad else ""
    return f"{verdict(k, n)}{extra}{warn}"


def list_groups(store: Any, bench: str | None, runs: list[str] | None, split: str | None, kind: str | None,
                field: str | None, value: str | None, pattern: str | None, query: str | None,
                page: int | float | None) -> dict[str, Any]:
    """The Browse list: {"table": DataFrame, "summary": html, "page": int, "pages": int, "counts": {...},
    "total": groups after filters, "n_groups": all groups}. Pure of Gradio so the bench and tests call it."""
    if not bench:
        return {"table": pd.DataFrame({"group": []}), "summary": "No benchmark in the store yet: import one in the "
                "Data tab or run `python app.py import ITEMS.jsonl`.", "page": 1, "pages": 1, "counts": {},
                "total": 0, "n_groups": 0}
    bd = cache.bench(store, bench)
    names = _runs_of(store, bench, runs)
    loaded = cache.summaries(store, bd, names)
    summaries = [s for _, s in loaded]
    base = core_groups.filter_groups(bd.index, bd.items, split or None, kind or None, field or None, value or None,
                                     query)
    counts = core_groups.pattern_counts(bd.family, summaries, within=base)
    ids = base
    hit = core_groups.match_patterns(summaries, pattern or None)
    if hit is not None:
        ids = base[hit.reindex(base, fill_value=False).to_numpy(dtype=bool)]
    total = len(ids)
    pages = max(1, -(-total // PAGE_SIZE))
    page_n = min(max(1, int(page or 1)), pages)
    chunk = ids[(page_n - 1) * PAGE_SIZE: page_n * PAGE_SIZE]
    f = bd.index.frame.loc[chunk]
    table = pd.DataFrame({"group": list(chunk), "split": f["split"].to_numpy(), "kind": f["kinds"].to_numpy(),
                          "items": f["n_items"].to_numpy()})
    if field and field in bd.strata:
        vals = core_groups.item_stratum(bd.items, field).groupby(bd.items["group_id"]).agg(
            lambda s: ", ".join(sorted({str(v) for v in s if v is not None})))
        table[field] = [vals.get(g, "") for g in chunk]
    recs = {r["name"]: r for r in dbb.run_records(store, bench)}
    for name, summ in loaded:
        table[run_header(recs.get(name, {"name": name}))] = [_cell(summ, g, bd.family) for g in chunk]
    table["question"] = f["question"].to_numpy()
    shown = f"{(page_n - 1) * PAGE_SIZE + 1}–{(page_n - 1) * PAGE_SIZE + len(chunk)}" if total else "0"
    label = dict(core_groups.patterns(bd.family)).get(pattern or "", "")
    scope = f" matching “{esc(label)}” in any selected run" if label else ""
    no_runs = " · pick runs in the header to see their answers and failure patterns" if not names else ""
    summary = (f'<div class="cc-summary"><b>{total}</b> of {len(bd.index.frame)} groups{scope} · showing {shown} · '
               f'page {page_n} of {pages}{no_runs}</div><div class="cc-muted">run columns: ✓ every item right, ✗ some '
               'item wrong, k/n items right, ⚠n invalid or api_error responses (any rotation or repeat)</div>')
    return {"table": table, "summary": summary, "page": page_n, "pages": pages, "counts": counts, "total": total,
            "n_groups": len(bd.index.frame)}


def pattern_choices(store: Any, bench: str | None, counts: dict[str, int]) -> list[tuple[str, str]]:
    if not bench:
        return [("All groups", ALL)]
    fam = cache.bench(store, bench).family
    return [("All groups", ALL)] + [(f"{label} ({counts.get(key, 0)})", key)
                                    for key, label in core_groups.patterns(fam)]


def build_browse(ctx: Ctx) -> None:
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
        search = gr.Textbox(label="Search", placeholder="group id, item id or question words", scale=2,
                            elem_id="cc-browse-search")
    with gr.Row():
        summary = gr.HTML(elem_id="cc-browse-summary", elem_classes=["cc-grow"])
        prev_btn = gr.Button("◀ Previous", size="sm", scale=0, min_width=110, elem_id="cc-browse-prev")
        page = gr.Number(value=1, label="Page", precision=0, minimum=1, scale=0, min_width=90, elem_id="cc-browse-page")
        next_btn = gr.Button("Next ▶", size="sm", scale=0, min_width=110, elem_id="cc-browse-next")
    table = gr.Dataframe(interactive=False, max_height=360, wrap=False, elem_id="cc-browse-list",
                         show_label=False)
    with gr.Row():
        group = gr.Textbox(label="Group", placeholder="click a row above, or type a group id and press Enter",
                           scale=2, elem_id="cc-browse-group")
        detail = gr.Dropdown(label="Run in detail", choices=[], scale=3, elem_id="cc-browse-detail")
        boxes = gr.Checkbox(label="Panel boxes (SPUR)", value=True, scale=1, elem_id="cc-browse-boxes")
    view = gr.HTML(render_group(store, None, None), elem_id="cc-group-view", js_on_load=ZOOM_JS)

    filters = [ctx.benchmark, ctx.runs, split, kind, field, value, pattern, search, page]

    def refresh_list(bench, runs, split_v, kind_v, field_v, value_v, pattern_v, query, page_v):
        try:
            res = list_groups(store, bench, runs, split_v, kind_v, field_v, value_v, pattern_v, query, page_v)
        except CrosscheckError as exc:
            raise gr.Error(str(exc)) from exc
        return (with_verdicts(res["table"]), res["summary"], gr.update(value=res["page"]),
                gr.update(choices=pattern_choices(store, bench, res["counts"]), value=pattern_v or ALL))

    list_outputs = [table, summary, page, pattern]

    def reset(bench, runs):
        """New benchmark or runs: fresh filter choices, page 1, the first page of groups."""
        if not bench:
            empty = gr.update(choices=[("All", ALL)], value=ALL)
            return (empty, empty, gr.update(choices=[("None", ALL)], value=ALL), empty,
                    gr.update(choices=[], value=None), *refresh_list(bench, runs, ALL, ALL, ALL, ALL, ALL, "", 1))
        bd = cache.bench(store, bench)
        names = _runs_of(store, bench, runs)
        recs = dbb.run_records(store, bench)
        det_choices = [(run_header(r), r["name"]) for r in recs]
        res = refresh_list(bench, runs, ALL, ALL, ALL, ALL, ALL, "", 1)
        return (gr.update(choices=[("All", ALL)] + [(s, s) for s in bd.splits], value=ALL),
                gr.update(choices=[("All", ALL)] + [(k, k) for k in bd.kinds], value=ALL),
                gr.update(choices=[("None", ALL)] + [(k, k) for k in bd.strata], value=ALL),
                gr.update(choices=[("All", ALL)], value=ALL),
                gr.update(choices=det_choices, value=names[0] if names else None), *res)

    reset_outputs = [split, kind, field, value, detail, *list_outputs]

    def on_field(bench, field_v):
        if not bench or not field_v:
            return gr.update(choices=[("All", ALL)], value=ALL)
        vals = cache.bench(store, bench).strata.get(field_v, [])
        return gr.update(choices=[("All", ALL)] + [(v, v) for v in vals], value=ALL)

    def first_page(*args):
        return refresh_list(*args[:-1], 1)

    def step(delta):
        def go(*args):
            return refresh_list(*args[:-1], int(args[-1] or 1) + delta)
        return go

    def open_group(bench, runs, group_id, detail_v, boxes_v):
        return render_group(store, bench, (group_id or "").strip() or None, _runs_of(store, bench, runs), detail_v,
                            bool(boxes_v))

    def on_select(bench, runs, detail_v, boxes_v, evt: gr.SelectData):
        row = evt.row_value or []
        gid = str(row[0]) if row else None
        return gid, open_group(bench, runs, gid, detail_v, boxes_v)

    root = gr.context.Context.root_block
    if root is not None:
        root.load(reset, [ctx.benchmark, ctx.runs], reset_outputs, api_name="browse_reset")
    ctx.benchmark.change(reset, [ctx.benchmark, ctx.runs], reset_outputs, api_visibility="private")
    ctx.runs.change(reset, [ctx.benchmark, ctx.runs], reset_outputs, api_visibility="private")
    ctx.refresh.click(reset, [ctx.benchmark, ctx.runs], reset_outputs, api_visibility="private")
    field.input(on_field, [ctx.benchmark, field], value, api_visibility="private").then(
        first_page, filters, list_outputs, api_visibility="private")
    for comp in (split, kind, value, pattern):
        comp.input(first_page, filters, list_outputs, api_visibility="private")
    search.submit(first_page, filters, list_outputs, api_name="browse_list")
    page.submit(refresh_list, filters, list_outputs, api_visibility="private")
    prev_btn.click(step(-1), filters, list_outputs, api_visibility="private")
    next_btn.click(step(+1), filters, list_outputs, api_visibility="private")
    table.select(on_select, [ctx.benchmark, ctx.runs, detail, boxes], [group, view], api_visibility="private")
    group.submit(open_group, [ctx.benchmark, ctx.runs, group, detail, boxes], view, api_name="open_group")
    detail.input(open_group, [ctx.benchmark, ctx.runs, group, detail, boxes], view, api_visibility="private")
    boxes.input(open_group, [ctx.benchmark, ctx.runs, group, detail, boxes], view, api_visibility="private")

    from ui.audit import build_audit

    with gr.Accordion("Extraction audit: invalid parses, re-parse, manual answers", open=False,
                      elem_id="cc-audit"):
        build_audit(ctx)
