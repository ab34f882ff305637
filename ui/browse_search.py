"""Browse's search box and tag filter (issue #23, docs/UI.md "Search"): the groups a query finds and the marks
around its words in the opened group.

A query keeps what the box always found (a group id, an item id, words of the question: core.groups'
filter_groups) and adds every group with a full-text hit (db.search.matching_groups): responses and traces of
the runs picked in the header, question, options, meta, label notes and tags. A query FTS5 cannot parse (an
unbalanced quote) finds what the plain filter finds, and says why in the summary line when that is nothing.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from core import groups as core_groups
from db import search as dbs
from db import tags as dbt

_OPERATORS = {"AND", "OR", "NOT", "NEAR"}
_SKIP = ("script", "style", "textarea")


def narrow(store: Any, bd: Any, base: pd.Index, runs: list[str], query: str | None,
           tag: str | None) -> tuple[pd.Index, str]:
    """(the groups of `base` the tag and the query keep, a note for the summary line: '' or why the query
    found nothing). `bd` is the Browse cache's BenchData."""
    note = ""
    if tag:
        base = base[base.isin(list(dbt.groups_with_tag(store, bd.name, tag)))]
    if query and query.strip():
        typed = core_groups.filter_groups(bd.index, bd.items, query=query)
        fields = dbs.FIELDS if runs else tuple(f for f in dbs.FIELDS if f not in dbs.PREDICTION_FIELDS)
        try:
            found = dbs.matching_groups(store, query, bd.name, runs or None, fields=fields)
        except dbs.BadQuery as exc:
            found = set()
            if not base.isin(typed).any():
                note = str(exc)
        base = base[base.isin(typed) | base.isin(list(found))]
    return base, note


def terms_pattern(query: str | None) -> re.Pattern[str] | None:
    """A regex of the words and phrases a query asks for (NOT-ed words and operators left out; `w*` a prefix),
    matched case-insensitively at word edges; None when there is nothing to mark."""
    if not query or not query.strip():
        return None
    parts: list[str] = []
    negate = False
    for phrase, word in re.findall(r'"([^"]*)"|([^\s()"]+)', query):
        if word and word.upper() in _OPERATORS:
            negate = word.upper() == "NOT"
            continue
        if negate:
            negate = False
            continue
        text = phrase if phrase else word
        prefix = text.endswith("*")
        words = [w for w in re.split(r"\W+", text.rstrip("*")) if w]
        if words:
            parts.append(r"\W+".join(map(re.escape, words)) + (r"\w*" if prefix else ""))
    if not parts:
        return None
    return re.compile(r"(?<!\w)(?:" + "|".join(sorted(parts, key=len, reverse=True)) + r")(?!\w)", re.IGNORECASE)


def highlight(html_text: str, query: str | None) -> str:
    """`html_text` (escaped already) with <mark> around each match of the query's words in its text: tags,
    attribute values, entities and script / style / textarea contents are left as they are."""
    pattern = terms_pattern(query)
    if pattern is None:
        return html_text
    out: list[str] = []
    skip: str | None = None
    for piece in re.split(r"(<[^>]*>)", html_text):
        if piece.startswith("<"):
            name = re.match(r"</?\s*([A-Za-z0-9]+)", piece)
            tag = name.group(1).lower() if name else ""
            if skip is None and tag in _SKIP and not piece.startswith("</") and not piece.endswith("/>"):
                skip = tag
            elif skip == tag and piece.startswith("</"):
                skip = None
            out.append(piece)
        elif skip is not None or not piece:
            out.append(piece)
        else:
            # the text between tags, entities left out, is text the templates escaped already: a match is
            # wrapped as it stands
            out.append("".join(part if part.startswith("&") else pattern.sub(r"<mark>\g<0></mark>", part)
                               for part in re.split(r"(&#?\w+;)", piece)))
    return "".join(out)
