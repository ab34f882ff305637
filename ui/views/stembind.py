"""StemBind stem card (002 Figure 1, App. E): the stem image, every P probe, the R probe and the F item with
each run's answers and verdicts, the decomposition category per run, and the F trace beside S1..S4."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.groups import CATEGORY_LABELS, CATEGORY_RULES, stem_category
from ui.views.common import (
    answer_mark,
    answers_table,
    chips,
    detail_html,
    esc,
    options_html,
    run_answers,
    run_label_html,
    section,
    thumb_html,
)

KIND_TITLES = {"P": "Perception probe", "R": "Rule probe", "F": "Full task"}


def run_summary(records: Sequence[Mapping[str, Any]], outcomes: Mapping[str, tuple[bool, bool]]) -> dict[str, Any]:
    """What the stem card shows of one run beside its marks: the stem's category (None when incomplete)."""
    return {"category": stem_category(records, outcomes)}


def category_badge(rv: Any) -> str:
    cat = (rv.summary or {}).get("category")
    if not cat:
        return '<span class="cc-cat cc-cat-none" title="stem not complete for this run">incomplete</span>'
    rule = CATEGORY_RULES.get(cat, "")
    return (f'<span class="cc-cat cc-cat-{esc(cat)}" title="{esc(rule)}">{esc(CATEGORY_LABELS.get(cat, cat))}'
            f'<span class="cc-cat-rule">: {esc(rule)}</span></span>' if rule else
            f'<span class="cc-cat cc-cat-{esc(cat)}">{esc(CATEGORY_LABELS.get(cat, cat))}</span>')


def _kind_kn(rv: Any, recs: list[dict[str, Any]], kind: str) -> str:
    ids = [r["item_id"] for r in recs if r["kind"] == kind]
    k = sum(rv.correct.get(i, False) for i in ids)
    n = sum(rv.answered.get(i, False) for i in ids)
    if n == 0:
        return '<span class="cc-muted">–</span>'
    cls = "cc-correct" if k == n else ("cc-wrong" if k == 0 else "cc-partial")
    return f'<span class="{cls}">{k}/{n}</span>'


def _decomposition(g: Any, recs: list[dict[str, Any]]) -> str:
    rows = []
    chosen = {r.name for r in g.selected}
    for rv in g.runs:
        if rv.answered_items() == 0:
            continue
        cls = ' class="cc-selected"' if rv.name in chosen else ""
        rows.append(f'<tr{cls}><th>{run_label_html(rv.record, short=True)}</th><td>{_kind_kn(rv, recs, "P")}</td>'
                    f'<td>{_kind_kn(rv, recs, "R")}</td><td>{_kind_kn(rv, recs, "F")}</td>'
                    f'<td>{category_badge(rv)}</td></tr>')
    return ('<table class="cc-answers-table cc-decomp"><thead><tr><th>run</th><th>P</th><th>R</th><th>F</th>'
            f'<th>category</th></tr></thead><tbody>{"".join(rows)}</tbody></table>')


def _probe_table(g: Any, probes: list[dict[str, Any]]) -> str:
    runs = g.selected
    head = "".join(f"<th>{run_label_html(r.record, short=True)}</th>" for r in runs)
    rows = []
    for i, it in enumerate(probes, 1):
        opts = " ".join(
            f'<span class="cc-inline-opt{" cc-gold" if k == it["answer"] else ""}"><b>{esc(k)}</b> {esc(v)}</span>'
            for k, v in it["options"].items())
        marks = "".join(f"<td>{answer_mark(r, it['item_id'])}</td>" for r in runs)
        rows.append(f'<tr><th>P{i}</th><td class="cc-q">{esc(it["question"])}<div class="cc-inline-opts">{opts}'
                    f'</div></td><td><b class="cc-letter">{esc(it["answer"])}</b></td>{marks}</tr>')
    return (f'<table class="cc-answers-table cc-probes"><thead><tr><th></th><th>question and options</th>'
            f'<th>gold</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>')


def render(store: Any, g: Any, boxes: bool = True) -> str:
    recs = g.records()
    probes = [r for r in recs if r["kind"] == "P"]
    rule = [r for r in recs if r["kind"] == "R"]
    full = [r for r in recs if r["kind"] == "F"]
    first = (full or recs)[0]
    m = first.get("meta") or {}
    stem_imgs = list(dict.fromkeys(h for r in recs for h in r["images"]))
    imgs = "".join(thumb_html(store, h, f"I{i + 1}" if len(stem_imgs) > 1 else "", size=480, extra_cls="cc-large")
                   for i, h in enumerate(stem_imgs))
    head = (f'<div class="cc-view-head"><div class="cc-view-title">StemBind stem <span class="cc-gid">'
            f'{esc(g.group_id)}</span></div>'
            + chips([("operation", m.get("operation")), ("family", m.get("family")),
                     ("perception load", m.get("perception_load")), ("layout", m.get("layout")),
                     ("probes", f"{len(probes)} P, {len(rule)} R, {len(full)} F")]) + "</div>")
    top = (f'<div class="cc-stem-top"><div class="cc-images">{imgs or "<span class=cc-muted>no image</span>"}</div>'
           f'<div class="cc-stem-side"><div class="cc-sub">decomposition per run (002 §4.3)</div>'
           f'{_decomposition(g, recs)}</div></div>')
    cards = "".join(
        f'<div class="cc-col"><div class="cc-col-title">{KIND_TITLES[it["kind"]]} <span class="cc-muted">'
        f'{esc(it["item_id"])}</span></div><div class="cc-question">{esc(it["question"])}</div>'
        f'{options_html(it["options"], it["answer"])}{run_answers(g.selected, it["item_id"])}</div>'
        for it in rule + full)
    order = probes + rule + full
    labels = {it["item_id"]: (f"P{probes.index(it) + 1}" if it["kind"] == "P" else it["kind"]) for it in order}
    body = (head + top
            + section(f"Perception probes ({len(probes)})", _probe_table(g, probes) if probes else
                      '<div class="cc-muted">no P probe</div>')
            + f'<div class="cc-cols cc-cols-2">{cards}</div>'
            + section("All runs", answers_table(order, g.runs, [r.name for r in g.selected],
                                                col_label=lambda it: labels[it["item_id"]],
                                                extra_cols=[("category", category_badge)]))
            + section("One run in detail (F trace beside its S1–S4 targets)",
                      detail_html(full + rule + probes, g.detail, g.flags,
                                  title=lambda it: labels[it["item_id"]] + " · " + KIND_TITLES[it["kind"]])))
    return f'<div class="cc-view cc-view-stembind">{body}</div>'
