"""Compare's side-by-side view of a changed group (issue #23 point 3, docs/UI.md "Compare"): the two runs'
responses and traces per item, next to each other, with the words that differ marked (difflib on words:
removed in A struck through in red, added in B underlined in green). Everything from the store is escaped
before it is marked."""

from __future__ import annotations

import difflib
import re
from typing import Any

from ui.templating import macro
from ui.views import load_group
from ui.views.common import answer_mark_of

_TOKENS = re.compile(r"\S+|\s+")


Token = tuple[str, bool]  # a word or a run of whitespace, and whether only this side has it (marked)


def word_tokens(a: str, b: str) -> tuple[list[Token], list[Token]]:
    """A's and B's tokens, the words only one side has marked (difflib.SequenceMatcher over words; whitespace
    kept as it was, never marked)."""
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
    return _marked(ta, keep_a), _marked(tb, keep_b)


def _marked(tokens: list[str], keep: set[int]) -> list[Token]:
    out, k = [], 0
    for t in tokens:
        if t.isspace():
            out.append((t, False))
            continue
        out.append((t, k not in keep))
        k += 1
    return out


def word_diff(a: str, b: str) -> tuple[str, str]:
    """(A's text, B's text) as HTML, each escaped, with the words only A has in <del> and those only B has in
    <ins>."""
    ta, tb = word_tokens(a, b)
    marked = macro("compare.html", "marked")
    return marked(ta, "del"), marked(tb, "ins")


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
        resp = word_tokens(str(pa.get("response") or ""), str(pb.get("response") or ""))
        trace = word_tokens(str(pa.get("trace") or ""), str(pb.get("trace") or ""))
        rows.append({"item_id": iid, "cells": [(answer_mark_of(rv, iid), resp[side], trace[side])
                                               for side, rv in ((0, ra), (1, rb))]})
    if not rows:
        return ""
    return macro("compare.html", "side_by_side")(run_a, run_b, rows)
