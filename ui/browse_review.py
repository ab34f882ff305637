"""Browse's review loop and group tags (issue #23 points 3 and 4, docs/UI.md "Browse"): the keys that move
through the filtered list, the opened group brought into view, and tags on the opened group.

Keys (REVIEW_JS, only while the Browse list is on screen and never while typing in a box): `j` / → open the
next group of the filtered list (across pages: the list follows to the group's page), `k` / ← the previous one,
Esc scrolls back to the list with the group's row in view (an open full-size image is closed first). The
arrows are left to the list itself while the focus is inside it. Opening a group (a click, the Group box, a
key) scrolls its view into sight.

Tags go through db/tags.py (the one write path); `by` is the signed-in user under --auth, else "local"."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gradio as gr

from core.errors import CrosscheckError
from db import tags as dbt
from ui import slices_panel
from ui.handlers import username
from ui.templating import macro, trusted

ALL = ""

REVIEW_JS = r"""
if (!window.__ccReview) {
  var R = window.__ccReview = {last: ''};
  var $ = function (sel) { return document.querySelector(sel); };
  R.shown = function () { var g = $('#cc-group-view .cc-group[data-group]'); return g ? g.getAttribute('data-group') : ''; };
  R.onList = function () { var l = $('#cc-browse-list'); return !!(l && l.offsetParent !== null); };
  // bring a newly opened group into view (a click, the Group box, a key; not a re-render of the same group)
  new MutationObserver(function () {
    var g = R.shown();
    if (g && g !== R.last) {
      R.last = g;
      var v = $('#cc-group-view');
      if (v) v.scrollIntoView({block: 'start'});
    } else if (!g) R.last = '';
  }).observe(document.body, {childList: true, subtree: true});
  R.back = function () {
    var l = $('#cc-browse-list'); if (!l) return;
    var g = R.shown(), row = null;
    if (g) l.querySelectorAll('td, [role=gridcell]').forEach(function (c) {
      if (!row && (c.innerText || '').trim() === g) row = c; });
    (row || l).scrollIntoView({block: 'center'});
  };
  document.addEventListener('keydown', function (e) {
    if (!R.onList()) return;                                     // the Browse tab is not on screen
    if (e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
    var t = e.target, tag = ((t && t.tagName) || '').toLowerCase();
    var typing = tag === 'textarea' || tag === 'select' || (t && t.isContentEditable) ||
      (tag === 'input' && ['checkbox', 'radio', 'button', 'submit'].indexOf((t.type || '').toLowerCase()) < 0);
    if (typing) return;
    var k = e.key, inList = !!(t && t.closest && t.closest('#cc-browse-list'));
    var dir = (k === 'j' || (k === 'ArrowRight' && !inList)) ? 'next' : (k === 'k' || (k === 'ArrowLeft' && !inList)) ? 'prev' : '';
    if (k === 'Escape') {
      if (document.querySelector('details.cc-zoom[open]')) return;   // Esc closes a full-size image first
      e.preventDefault(); R.back(); return;
    }
    if (!dir) return;
    var btn = document.getElementById('cc-browse-' + dir + 'group');
    if (!btn) return;
    e.preventDefault(); e.stopPropagation();
    btn.click();
  }, true);
}
"""

CSS = """
.cc-keyhelp{font-size:12px;color:#6b7280}
.cc-keyhelp kbd{border:1px solid #d1d5db;border-bottom-width:2px;border-radius:4px;padding:0 4px;font-size:11px;
 background:#f9fafb;color:#111}
.dark .cc-keyhelp{color:#9da7b3}
.dark .cc-keyhelp kbd{background:#2d333b;border-color:#545d68;color:#e6edf3}
.cc-hidden-btn{display:none !important}
.cc-search-error{color:#b91c1c;font-weight:600;margin-bottom:2px}
#cc-group-view mark{background:#fde68a;color:inherit;padding:0 1px;border-radius:2px}
.cc-tag{display:inline-block;padding:1px 8px;margin:2px 4px 2px 0;border-radius:10px;background:#e0e7ff;color:#1e1b4b;
 font-size:12px}
"""


def tags_html(store: Any, bench: str | None, group_id: str | None, error: str = "") -> str:
    """The opened group's tags as chips (with note, who and when in the tooltip), and an error line if any."""
    gid = (group_id or "").strip()
    if not bench or not gid:
        return macro("browse.html", "tags")(error, "", None)
    frame = dbt.tags_frame(store, bench)
    mine = frame[frame["group_id"] == gid]
    return macro("browse.html", "tags")(error, gid, [
        (r.tag, f"{r.by or ''} · {r.created}", r.note if isinstance(r.note, str) else "") for r in mine.itertuples()])


def change_tag(store: Any, bench: str | None, group_id: str | None, name: str | None, note: str | None,
               who: str | None, remove: bool) -> tuple[str, Any]:
    """Add (or, with `remove`, take off) tag `name` on the opened group: (the tags line, the name box's update:
    cleared when done, kept on an error)."""
    gid = (group_id or "").strip()
    if not bench or not gid:
        return tags_html(store, bench, gid, "Open a group first."), gr.update()
    try:
        if remove:
            if not dbt.remove_tag(store, bench, gid, name or ""):
                return tags_html(store, bench, gid, f"Group {gid!r} has no tag {(name or '').strip()!r}."), gr.update()
        else:
            dbt.set_tag(store, bench, gid, name or "", note, by=who or "local")
    except CrosscheckError as exc:
        return tags_html(store, bench, gid, str(exc)), gr.update()
    return tags_html(store, bench, gid), gr.update(value="")


def tag_choices(store: Any, bench: str | None, current: str | None = None) -> Any:
    """The Tag filter's choices (every tag of the benchmark), keeping `current` when it still exists."""
    names = dbt.tag_names(store, bench) if bench else []
    return gr.update(choices=[("All", ALL)] + [(t, t) for t in names], value=current if current in names else ALL)


def tag_filter() -> Any:
    return gr.Dropdown(label="Tag", choices=[("All", ALL)], value=ALL, scale=1, elem_id="cc-browse-tag",
                       allow_custom_value=True)


def build_tools() -> dict[str, Any]:
    """Under the group view: the keys' help, the tag row and the hidden buttons the keys press."""
    gr.HTML(macro("browse.html", "review_keys")(trusted(CSS)), js_on_load=REVIEW_JS, elem_id="cc-review-js")
    with gr.Row(equal_height=True):
        name = gr.Textbox(label="Tag", placeholder="e.g. ambiguous", scale=1, elem_id="cc-tag-name", max_lines=1)
        note = gr.Textbox(label="Note (optional)", scale=3, elem_id="cc-tag-note", max_lines=1)
        add = gr.Button("Add tag", size="sm", scale=0, min_width=100, elem_id="cc-tag-add")
        rem = gr.Button("Remove tag", size="sm", scale=0, min_width=110, elem_id="cc-tag-remove")
    shown = gr.HTML(tags_html(None, None, None), elem_id="cc-tags")
    nxt = gr.Button("next group", elem_id="cc-browse-nextgroup", elem_classes=["cc-hidden-btn"])
    prv = gr.Button("previous group", elem_id="cc-browse-prevgroup", elem_classes=["cc-hidden-btn"])
    return {"tag_name": name, "tag_note": note, "tag_add": add, "tag_remove": rem, "tags": shown,
            "next_group": nxt, "prev_group": prv}


def wire(ctx: Any, c: dict[str, Any], filters: list[Any], list_outputs: list[Any], first_page: Any,
         on_list: Any, step: Callable[[list[Any], int], tuple[Any, ...]]) -> None:
    """The events of the tag filter, the tag row, the keys' buttons and the slices panel (in c["slices"]).
    `step(args, delta)`: the group `delta` away in Browse's filtered list (ui.browse.step_group)."""
    store = ctx.store

    def go(delta: int) -> Any:
        def handler(*args):
            return step(list(args), delta)
        return handler

    for btn, delta in ((c["next_group"], 1), (c["prev_group"], -1)):
        btn.click(go(delta), [*filters, c["opened"], c["detail"], c["boxes"]],
                  [c["group"], c["view"], c["page"], c["opened"]], api_visibility="private").then(
            on_list, filters, list_outputs, api_visibility="private")

    def on_tags(bench, gid):
        return tags_html(store, bench, gid)

    def on_change(remove: bool) -> Any:
        def handler(bench, gid, name, note, request: gr.Request):
            return change_tag(store, bench, gid, name, note, username(request), remove)
        return handler

    def on_tag_choices(bench, current):
        return tag_choices(store, bench, current)

    # the tag row is the shown group's (c["opened"]), not a half-typed id in the Group box
    c["opened"].change(on_tags, [ctx.benchmark, c["opened"]], c["tags"], api_visibility="private")
    for btn, remove in ((c["tag_add"], False), (c["tag_remove"], True)):
        btn.click(on_change(remove), [ctx.benchmark, c["opened"], c["tag_name"], c["tag_note"]],
                  [c["tags"], c["tag_name"]], api_visibility="private").then(
            on_tag_choices, [ctx.benchmark, c["tag"]], c["tag"], api_visibility="private")
    c["tag"].focus(on_tag_choices, [ctx.benchmark, c["tag"]], c["tag"], api_visibility="private")
    ctx.benchmark.change(lambda bench: tag_choices(store, bench), [ctx.benchmark], c["tag"],
                         api_visibility="private")
    slices_panel.wire(ctx, c["slices"], c, lambda ev: ev.then(first_page, filters, list_outputs,
                                                              api_visibility="private"))
