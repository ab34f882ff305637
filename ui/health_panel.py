"""Browse's "Item health" panel (issue #38 point 2, docs/UI.md "Browse"): the benchmark's items read through every
run (core.item_health, the numbers of `app.py item-health`), one list at a time, most suspect first. A click on a
row opens its group (and puts its item in the review row); *List these groups* narrows Browse's list to the list's
groups (ui.focus). A reviewer marks a suspect "gold is wrong" or "gold is right" with a note: db/gold_reviews.py
keeps who (the signed-in user under --auth, else "local") and when; the Metrics tab can set the groups of the
items marked wrong aside.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gradio as gr
import pandas as pd

from core.errors import CrosscheckError
from db import gold_reviews
from db.store import Store
from ui.focus import HEALTH_LABELS, Focus
from ui.handlers import username
from ui.templating import macro
from ui.views import cache

LIST_CHOICES = [("Suspect gold letters", "suspect_gold"), ("Unstable items", "unstable"),
                ("Ambiguous items", "ambiguous"), ("Negative discrimination", "negative_discrimination"),
                ("Duplicate images", "duplicates"), ("Accuracy without the suspects", "accuracy")]
VERDICT_CHOICES = [(label, key) for key, label in gold_reviews.VERDICTS.items()]


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def _pp(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:+.1f}"


def _rows(health: Any, which: str, marks: dict[str, str]) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """(table rows, each row's {"group", "item"}) of list `which`."""
    verdict = {k: gold_reviews.VERDICTS[v] for k, v in marks.items()}
    if which == "suspect_gold":
        return ([{"item": s.item_id, "group": s.group_id, "gold": s.gold, "consensus": s.consensus,
                  "support": f"{s.support:.2f}", "runs behind it": f"{len(s.runs)} of {s.n_runs}",
                  "reviewed": verdict.get(s.item_id, "")} for s in health.suspect_gold],
                [{"group": s.group_id, "item": s.item_id} for s in health.suspect_gold])
    if which == "unstable":
        return ([{"item": u.item_id, "group": u.group_id, "flipped": f"{u.flips} of {u.n_runs} runs",
                  "expected": f"{u.expected:.1f}", "p": f"{u.p:.3g}", "q": f"{u.q:.3g}",
                  "runs": ", ".join(u.runs[:4]) + (" …" if len(u.runs) > 4 else "")} for u in health.unstable],
                [{"group": u.group_id, "item": u.item_id} for u in health.unstable])
    if which == "ambiguous":
        return ([{"item": a.item_id, "group": a.group_id, "gold": a.gold,
                  "split": f"{a.letters[0]} {100 * a.shares[0]:.0f}% · {a.letters[1]} {100 * a.shares[1]:.0f}%",
                  "runs": a.n_runs, "reviewed": verdict.get(a.item_id, "")} for a in health.ambiguous],
                [{"group": a.group_id, "item": a.item_id} for a in health.ambiguous])
    if which == "negative_discrimination":
        return ([{"item": n.item_id, "group": n.group_id, "r": f"{n.r:+.2f}", "runs": n.n_runs, "p": f"{n.p:.3g}",
                  "q": f"{n.q:.3g}", "wrong (strongest first)": ", ".join(n.wrong[:3])}
                 for n in health.negative_discrimination],
                [{"group": n.group_id, "item": n.item_id} for n in health.negative_discrimination])
    if which == "duplicates":
        return ([{"groups": ", ".join(d.groups), "images": len(d.images), "distance": d.distance,
                  "splits": ", ".join(d.splits) + (" (across splits)" if d.cross_split else "")}
                 for d in health.duplicates],
                [{"group": d.groups[0], "item": d.items[0]} for d in health.duplicates])
    return ([{"run": a.run, "accuracy": _pct(a.accuracy.value), "without the suspects": _pct(a.without.value),
              "difference [95% CI]": f"{_pp(a.diff)} pp" + (f" [{_pp(a.ci[0])}, {_pp(a.ci[1])}]" if a.ci else "")}
             for a in health.accuracy_without_suspects], [])


def health_table(store: Store, bench: str | None, which: str | None) -> tuple[pd.DataFrame, list[dict[str, str]], str]:
    """(the table of list `which`, each row's group and item, the line above it)."""
    if not bench:
        return pd.DataFrame(), [], "Pick a benchmark in the header."
    which = which or "suspect_gold"
    try:
        health = cache.item_health(store, bench)
    except CrosscheckError as exc:
        return pd.DataFrame(), [], str(exc)
    marks = {r.item_id: r.verdict for r in gold_reviews.reviews(store, bench)}
    rows, picks = _rows(health, which, marks)
    total = health.counts.get(which, len(rows))
    what = dict(LIST_CHOICES)
    label = next((k for k, v in what.items() if v == which), which)
    shown = f" (the first {len(rows)})" if total > len(rows) else ""
    line = (f"{label}: {total}{shown} of {health.n_items} items, read through {health.n_runs} runs "
            f"({health.counts.get('annotators', health.n_runs)} as annotators: baselines and text-only runs never "
            "saw the items); most suspect first. Click a row to open its group.")
    if which == "accuracy":
        line = (f"Each run's accuracy on split {health.split!r} with and without the "
                f"{health.counts.get('suspect_gold', 0)} suspect gold letters (95% cluster-bootstrap intervals): "
                "what the suspects cost, most first.")
    return pd.DataFrame(rows), picks, line


def reviews_html(store: Store, bench: str | None, error: str = "") -> str:
    """The benchmark's current verdicts (item, verdict, note, who, when), newest last."""
    rows = gold_reviews.reviews(store, bench) if bench else []
    return macro("health.html", "reviews")(error, [(r.item_id, r.group_id, gold_reviews.VERDICTS[r.verdict], r.note,
                                                     r.by, r.created) for r in rows])


def save_review(store: Store, bench: str | None, item: str | None, verdict: str | None, note: str | None,
                who: str | None) -> tuple[str, Any]:
    """Record a reviewer's verdict: (the verdicts' list, the note box: cleared when saved, kept on an error)."""
    iid = (item or "").strip()
    if not bench or not iid:
        return reviews_html(store, bench, "Click a row of the list above (or type an item id) first."), gr.update()
    try:
        gold_reviews.review_gold(store, bench, iid, verdict or "", note, by=who or "local")
    except CrosscheckError as exc:
        return reviews_html(store, bench, str(exc)), gr.update()
    return reviews_html(store, bench), gr.update(value="")


def build(ctx: Any) -> dict[str, Any]:
    """The panel's components (in an accordion, closed until asked for); wired by `wire`."""
    with gr.Accordion("Item health: suspect gold letters, unstable and ambiguous items, duplicates", open=False,
                      elem_id="cc-health") as acc:
        with gr.Row():
            which = gr.Dropdown(label="List", choices=LIST_CHOICES, value="suspect_gold", scale=3,
                                elem_id="cc-health-list")
            go = gr.Button("Read item health", size="sm", scale=0, min_width=150, elem_id="cc-health-go")
            narrow = gr.Button("List these groups in Browse", size="sm", scale=0, min_width=200,
                               elem_id="cc-health-filter")
        line = gr.HTML(elem_id="cc-health-line")
        table = gr.Dataframe(interactive=False, max_height=300, wrap=False, elem_id="cc-health-table",
                             show_label=False)
        with gr.Row(equal_height=True):
            item = gr.Textbox(label="Item", scale=1, max_lines=1, elem_id="cc-health-item",
                              placeholder="click a row above")
            verdict = gr.Radio(VERDICT_CHOICES, value=gold_reviews.WRONG, label="Verdict", scale=2,
                               elem_id="cc-health-verdict")
            note = gr.Textbox(label="Note (optional)", scale=3, max_lines=1, elem_id="cc-health-note")
            save = gr.Button("Save verdict", size="sm", scale=0, min_width=120, elem_id="cc-health-save")
        marks = gr.HTML(elem_id="cc-health-reviews")
        state = gr.State([])
    return {"acc": acc, "which": which, "go": go, "narrow": narrow, "line": line, "table": table, "item": item,
            "verdict": verdict, "note": note, "save": save, "marks": marks, "state": state}


def wire(ctx: Any, p: dict[str, Any], c: dict[str, Any], then_list: Any,
         open_row: Callable[..., tuple[Any, ...]]) -> None:
    """The panel's events; `then_list(event)` chains Browse's first-page refresh after the filter is set;
    `open_row(bench, runs, group, detail, boxes, query)` gives (group box, view, opened group) for a group
    (ui.browse.select_row's outputs)."""
    store = ctx.store

    def on_read(bench, which):
        table, picks, line = health_table(store, bench, which)
        return table, picks, macro("browse.html", "slice_line")(line), reviews_html(store, bench)

    def on_pick(bench, runs, detail, boxes, query, picks, evt: gr.SelectData):
        row = evt.index[0] if isinstance(evt.index, list | tuple) else evt.index
        if not (isinstance(row, int) and 0 <= row < len(picks)):
            return gr.update(), gr.update(), gr.update(), gr.update()
        return (*open_row(bench, runs, picks[row]["group"], detail, boxes, query), picks[row]["item"])

    def on_narrow(bench, which):
        if not bench or which not in HEALTH_LABELS:
            return gr.update()
        return Focus(bench=bench, health=which).as_dict()

    def on_save(bench, item, verdict, note, request: gr.Request):
        return save_review(store, bench, item, verdict, note, username(request))

    outputs = [p["table"], p["state"], p["line"], p["marks"]]
    p["acc"].expand(on_read, [ctx.benchmark, p["which"]], outputs, api_visibility="private")
    p["go"].click(on_read, [ctx.benchmark, p["which"]], outputs, api_name="browse_item_health")
    p["which"].input(on_read, [ctx.benchmark, p["which"]], outputs, api_visibility="private")
    p["table"].select(on_pick, [ctx.benchmark, ctx.runs, c["detail"], c["boxes"], c["search"], p["state"]],
                      [c["group"], c["view"], c["opened"], p["item"]], api_visibility="private")
    then_list(p["narrow"].click(on_narrow, [ctx.benchmark, p["which"]], [c["focus"]], api_visibility="private"))
    p["save"].click(on_save, [ctx.benchmark, p["item"], p["verdict"], p["note"]], [p["marks"], p["note"]],
                    api_visibility="private").then(on_read, [ctx.benchmark, p["which"]], outputs,
                                                   api_visibility="private")
