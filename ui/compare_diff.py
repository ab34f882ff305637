"""Compare's side-by-side view of a changed group (issue #23 point 3, docs/UI.md "Compare"): the two runs'
responses and traces per item, next to each other, with the words that differ marked (difflib on words:
removed in A struck through in red, added in B underlined in green). Everything from the store is escaped
before it is marked."""

from __future__ import annotations

import difflib
import re
from typing import Any

from ui.views import load_group
from ui.views.common import answer_mark, esc

_TOKENS = re.compile(r"\S+|\s+")


def word_diff(a: str, b: str) -> tuple[str, str]:
    """(A's text, B's text) as HTML, each escaped, with the words only A has in <del> and those only B has in
    <ins> (difflib.SequenceMatcher over words; whitespace kept as it was)."""
    ta, tb = _TOKENS.findall(a or ""), _TOKENS.findall(b or "")
    wa = [t for t in ta if not t.isspace()]
    wb = [t for t in tb if not t.isspace()]
    sm = difflib.SequenceMatcher(a=wa, b=wb, autojunk=False)
    keep_a: set[int] = set()
    keep_b: set[int] = set()
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            keep_a.update(range(i1, i2))
            keep_b.update(range(j1, j2))
    return _marked(ta, keep_a, "del"), _marked(tb, keep_b, "ins")


def _marked(tokens: list[str], keep: set[int], tag: str) -> str:
    out, k = [], 0
    for t in tokens:
        if t.isspace():
            out.append(esc(t))
            continue
        out.append(esc(t) if k in keep else f'<{tag} class="cc-diff-{tag}">{esc(t)}</{tag}>')
        k += 1
    return "".join(out)


def side_by_side(store: Any, bench: str, group_id: str | None, run_a: str, run_b: str) -> str:
    """The items of the group either run answered: each run's mark, response and trace in two columns, their
    differences marked ('' when there is no such group)."""
    if not group_id:
        return ""
    g = load_group(store, bench, group_id, [run_a, run_b], run_b)
    if g is None or len(g.selected) < 2:
        return ""
    ra, rb = g.selected[0], g.selected[1]
    rows = []
    for it in g.records():
        iid = str(it["item_id"])
        pa, pb = ra.primary(iid) or {}, rb.primary(iid) or {}
        if not pa and not pb:
            continue
        resp = word_diff(str(pa.get("response") or ""), str(pb.get("response") or ""))
        trace = word_diff(str(pa.get("trace") or ""), str(pb.get("trace") or ""))
        cells = []
        for side, rv in ((0, ra), (1, rb)):
            body = f'<div class="cc-diff-resp">{resp[side]}</div>'
            if trace[side]:
                body += f'<div class="cc-diff-trace">{trace[side]}</div>'
            cells.append(f"<td>{answer_mark(rv, iid)} {body}</td>")
        rows.append(f'<tr data-item="{esc(iid)}"><th>{esc(iid)}</th>{"".join(cells)}</tr>')
    if not rows:
        return ""
    style = ("<style>.cc-sbs{width:100%;border-collapse:collapse;table-layout:fixed;margin-bottom:12px}"
             ".cc-sbs td,.cc-sbs th{border:1px solid var(--border-color-primary);padding:6px;vertical-align:top;"
             "text-align:left;white-space:pre-wrap;word-break:break-word;font-size:13px}"
             ".cc-diff-trace{margin-top:6px;color:var(--body-text-color-subdued);max-height:320px;overflow:auto}"
             "del.cc-diff-del{background:rgba(239,68,68,.18);color:#991b1b}"
             "ins.cc-diff-ins{background:rgba(34,197,94,.2);color:#14532d;text-decoration:underline}</style>")
    head = f"<tr><th>item</th><th>A: {esc(run_a)}</th><th>B: {esc(run_b)}</th></tr>"
    return (f'{style}<div class="cc-sbs-wrap" id="cc-compare-sbs"><b>Responses and traces side by side</b> '
            '<span class="cc-muted">(words only A has struck through, words only B has underlined)</span>'
            f'<table class="cc-sbs"><colgroup><col style="width:12%"><col><col></colgroup>{head}{"".join(rows)}</table></div>')
