"""Shared pieces of the group views, as plain data their templates lay out (ui/templates/views/common.html):
thumbnails that open full size, right / wrong marks, option lists, the all-runs answer table, one run in detail,
and the trace beside its stage targets.

Everything from the store (questions, options, responses, traces, names) reaches the page through the templates'
autoescape. Images are referenced by content hash (`image/<hash>.<ext>`, `thumb/<hash>_<size>.png`,
ui/serving.py), so no page shows the store's folder.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.outcomes import outcome_label
from core.schema import STAGE_NAMES, STAGES
from ui.serving import image_url
from ui.templating import macro

OUTCOME_MARK = {
    "correct": ("✓", "correct"),
    "wrong": ("✗", "wrong"),
    "invalid": ("⚠", "invalid response (no single answer letter)"),
    "api_error": ("⊘", "API error (no response)"),
    "missing": ("–", "not answered by this run"),
}
COMMON = "views/common.html"


def text(value: object) -> str:
    """The text a view shows for a stored value (None -> empty)."""
    return "" if value is None else str(value)


def file_url(path: Any) -> str:
    """The URL of a stored image or thumbnail (a path from Store.image_path / Store.thumbnail): its content
    hash at the app's `image/` / `thumb/` route (ui/serving.py), never the store's folder."""
    return image_url(path)


# --------------------------------------------------------------------------- runs and marks


@dataclass(slots=True, frozen=True)
class RunLabel:
    """A run's name as a view shows it: `shown` (shortened in tables), the full name on hover, a synthetic badge."""

    name: str
    shown: str
    synthetic: bool


def run_label(run: Mapping[str, Any], short: bool = False) -> RunLabel:
    name = str(run["name"])
    shown = name if not short or len(name) <= 28 else name[:26] + "…"
    return RunLabel(name, shown, bool(run.get("synthetic")))


@dataclass(slots=True, frozen=True)
class Mark:
    """A right / wrong mark: colour (`outcome`) plus symbol, and the answer letter when there is one."""

    outcome: str
    sym: str
    title: str
    letter: str = ""


def mark_of(outcome: str, letter: str | None = None) -> Mark:
    sym, title = OUTCOME_MARK.get(outcome, ("?", outcome))
    return Mark(outcome, sym, title, text(letter))


# --------------------------------------------------------------------------- images


# Esc closes a full-size image (any view, any tab); installed once per page by the blocks that show views.
ZOOM_JS = """
if (!window.__ccZoomEsc) {
  window.__ccZoomEsc = true;
  document.addEventListener('keydown', (e) => {
    if (e.key !== 'Escape') return;
    const open = document.querySelectorAll('details.cc-zoom[open]');
    if (!open.length) return;
    open.forEach((d) => { d.open = false; });
    e.preventDefault();
    e.stopPropagation();
  }, true);
}
"""


@dataclass(slots=True, frozen=True)
class PanelBox:
    """One panel's box on a figure, in the figure's pixels (its letter in a filled tag at the bottom right)."""

    x: str
    y: str
    width: str
    height: str
    color: str
    stroke: str
    tag_x: str
    tag_y: str
    tag_width: str
    tag_height: str
    tag_rx: str
    text_x: str
    text_y: str
    font_size: str
    letter: str
    title: str


@dataclass(slots=True, frozen=True)
class PanelBoxes:
    """The SVG laid over a figure: its size and one box per panel."""

    width: int
    height: int
    boxes: list[PanelBox]


@dataclass(slots=True, frozen=True)
class Thumb:
    """A thumbnail that opens the full image in an overlay on click (click again, or Esc, to close).

    `label` is drawn on the image corner (I1, I2 ...); `panels` (panel boxes) or `cross` (a withheld view) are
    laid over it; `caption` ((class, text)) is a line under it. `missing` says why the image is unavailable."""

    label: str
    extra_cls: str
    thumb: str = ""
    full: str = ""
    missing: str = ""
    panels: PanelBoxes | None = None
    cross: bool = False
    caption: tuple[str, str] | None = None


def thumb(store: Any, digest: str, label: str = "", size: int = 320, extra_cls: str = "",
          panels: PanelBoxes | None = None, cross: bool = False, caption: tuple[str, str] | None = None) -> Thumb:
    try:
        small = file_url(store.thumbnail(digest, size))
        full = file_url(store.image_path(digest))
    except Exception as exc:  # noqa: BLE001 - a missing file shows as such, it never breaks the view
        return Thumb(label, extra_cls, missing=f"image {digest[:8]} unavailable ({exc})")
    return Thumb(label, extra_cls, small, full, panels=panels, cross=cross, caption=caption)


# --------------------------------------------------------------------------- predictions and marks


@dataclass
class RunView:
    """One run as a group view shows it: its record, predictions of the group (dicts) and item outcomes."""

    record: dict[str, Any]
    preds: list[dict[str, Any]]
    answered: dict[str, bool] = field(default_factory=dict)
    correct: dict[str, bool] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return str(self.record["name"])

    def all_preds(self, item_id: str) -> list[dict[str, Any]]:
        return [p for p in self.preds if p["item_id"] == item_id]

    def primary(self, item_id: str) -> dict[str, Any] | None:
        """The prediction shown for an item: rotation 0 / repeat 0, else the first one stored."""
        sub = self.all_preds(item_id)
        if not sub:
            return None
        main = [p for p in sub if int(p.get("rotation") or 0) == 0 and int(p.get("repeat") or 0) == 0]
        return (main or sub)[0]

    def outcome(self, item_id: str) -> str:
        """correct / wrong / invalid / api_error / missing, as the family's metrics count it."""
        pred = self.primary(item_id)
        return outcome_label(self.answered.get(item_id, False), self.correct.get(item_id, False),
                             (pred or {}).get("status"))

    def answered_items(self) -> int:
        return sum(bool(v) for v in self.answered.values())


def answer_mark_of(rv: RunView, item_id: str) -> Mark:
    pred = rv.primary(item_id)
    letter = pred.get("answer") if pred and pred.get("status") == "ok" else None
    return mark_of(rv.outcome(item_id), letter)


@dataclass(slots=True, frozen=True)
class Option:
    letter: str
    text: str
    gold: bool
    gloss: str = ""
    insufficient: bool = False


@dataclass(slots=True, frozen=True)
class Options:
    """The option list with the gold option marked (inline when the options are many and short)."""

    rows: list[Option]
    inline: bool


def options(opts: Mapping[str, str], gold: str, extra: Mapping[str, str] | None = None,
            insufficient: str | None = None) -> Options:
    """`extra` adds a line (e.g. English gloss) per letter."""
    rows = [Option(letter, text(t), letter == gold, text((extra or {}).get(letter)),
                   bool(insufficient) and letter == insufficient) for letter, t in opts.items()]
    inline = len(opts) > 4 and all(len(str(t)) <= 14 for t in opts.values()) and not extra
    return Options(rows, inline)


@dataclass(slots=True, frozen=True)
class Answer:
    mark: Mark
    run: RunLabel


def answers(runs: Sequence[RunView], item_id: str) -> list[Answer]:
    """Each selected run's answer to one item with its mark (the template says to pick runs when none)."""
    return [Answer(answer_mark_of(rv, item_id), run_label(rv.record, short=True)) for rv in runs]


@dataclass(slots=True, frozen=True)
class Card:
    """One item in a column: title (and a muted id), question, options, each picked run's answer."""

    title: str
    sub: str
    question: str
    options: Options
    answers: list[Answer]
    shows: str = ""
    hint: str = ""
    gloss: str = ""


def card(it: Mapping[str, Any], selected: Sequence[RunView], title: str, sub: str, extra: Mapping[str, str] | None = None,
         gloss: str = "", shows: str = "", hint: str = "") -> Card:
    return Card(title, sub, text(it["question"]), options(it["options"], it["answer"], extra),
                answers(selected, it["item_id"]), shows=shows, hint=hint, gloss=gloss)


@dataclass(slots=True, frozen=True)
class RunCounts:
    """A run's row in a view's per-run table: its label, whether it is picked, (class, k/n text) per kind or
    stage of the group, and the family's verdict on the whole group (StemBind's category, SPUR's flag)."""

    run: RunLabel
    selected: bool
    kn: list[tuple[str, str]]
    verdict: tuple[str, str, str] | bool | None  # StemBind: (key, label, rule) or None; SPUR: the flag


def kn_cell(k: int, n: int) -> tuple[str, str]:
    """(class, text) of k right of n answered: green when all, red when none, amber between; "–" when n is 0."""
    if n == 0:
        return "cc-muted", "–"
    return ("cc-correct" if k == n else ("cc-wrong" if k == 0 else "cc-partial")), f"{k}/{n}"


@dataclass(slots=True)
class AnswerRow:
    run: RunLabel
    selected: bool
    marks: list[Mark]
    k: int
    n: int
    extra: list[object]


@dataclass(slots=True)
class AllRuns:
    """All runs' answers at once: a column per item (`columns`: (item id, label)), the gold row first, then
    k / n correct and any extra columns; `silent` runs answered nothing of the group. When the benchmark has
    more runs than a view draws besides the picked ones (ui.views.OTHER_RUNS), the section holds the picked
    runs, is titled so, and `left_out` says how many runs it did not draw."""

    title: str
    columns: list[tuple[str, str]]
    gold: list[str]
    extra_heads: list[str]
    rows: list[AnswerRow]
    silent: int
    left_out: str


def all_runs(g: Any, items: Sequence[Mapping[str, Any]], col_label: Callable[[Mapping[str, Any]], str] | None = None,
             extra_cols: Sequence[tuple[str, Callable[[RunView], object]]] = ()) -> AllRuns:
    """The "All runs" section of group `g` (ui.views.Group): the runs it drew, those picked highlighted.
    `extra_cols` are (header, fn(RunView) -> the value its template's cell macro shows)."""
    chosen = {r.name for r in g.selected}
    label = col_label or (lambda it: it["variant"] or it["kind"])
    rows = []
    silent = 0
    for rv in g.runs:
        if rv.answered_items() == 0:
            silent += 1
            continue
        rows.append(AnswerRow(run_label(rv.record, short=True), rv.name in chosen,
                              [answer_mark_of(rv, it["item_id"]) for it in items],
                              sum(rv.correct.get(it["item_id"], False) for it in items),
                              sum(rv.answered.get(it["item_id"], False) for it in items),
                              [fn(rv) for _, fn in extra_cols]))
    title = f"Picked runs ({len(g.runs)} of {len(g.runs) + g.hidden:,})" if g.hidden else "All runs"
    return AllRuns(title, [(text(it["item_id"]), text(label(it))) for it in items], [text(it["answer"]) for it in items],
                   [h for h, _ in extra_cols], rows, silent, f"{g.hidden:,}" if g.hidden else "")


# --------------------------------------------------------------------------- one run in detail


@dataclass(slots=True, frozen=True)
class Prob:
    letter: str
    cls: str
    width: str
    value: str


def probs(values: Mapping[str, float] | None, gold: str, chosen: str | None) -> list[Prob]:
    out = []
    for letter in sorted(values or {}):
        try:
            p = float((values or {})[letter])
        except (TypeError, ValueError):
            continue
        if math.isnan(p):
            continue
        cls = "cc-prob-gold" if letter == gold else ("cc-prob-chosen" if letter == chosen else "")
        out.append(Prob(letter, cls, f"{max(0.0, min(1.0, p)) * 60:.0f}", f"{p:.2f}"))
    return out


@dataclass(slots=True, frozen=True)
class Rotation:
    """"shown D → original C" when the options were rotated: the letter the model saw, then the letter it
    means in the item's own order (what is scored)."""

    shown: str
    answer: str


def rotation(pred: Mapping[str, Any]) -> Rotation | None:
    shown, answer = pred.get("shown"), pred.get("answer")
    if not shown or not answer or shown == answer:
        return None
    return Rotation(str(shown), str(answer))


@dataclass(slots=True, frozen=True)
class Response:
    """A prediction's raw response (shown on demand) with its status, shown letter, tokens and error."""

    status: str
    rotation: Rotation | None
    rot_rep: str
    tokens: int | None
    error: str
    text: str


def response(pred: Mapping[str, Any]) -> Response:
    rot, rep = int(pred.get("rotation") or 0), int(pred.get("repeat") or 0)
    tok = pred.get("tokens")
    tokens = None if tok is None or (isinstance(tok, float) and math.isnan(tok)) else int(tok)
    return Response(text(pred.get("status")), rotation(pred), f"rotation {rot}, repeat {rep}" if rot or rep else "",
                    tokens, text(pred.get("error")), text(pred.get("response")))


@dataclass(slots=True, frozen=True)
class StageRow:
    stage: str
    name: str
    hot: bool
    marks: list[tuple[str, str, str]]  # (class, symbol, title) per flag
    text: str


@dataclass(slots=True, frozen=True)
class Trace:
    """A reasoning trace with the stage targets beside it (when the item has them) and the stage flags."""

    trace: str
    targets: bool
    stages: list[StageRow]
    legend: str


def trace(trace_text: str | None, targets: Mapping[str, str] | None = None,
          flags: Sequence[Mapping[str, Any]] = ()) -> Trace | None:
    """A reasoning trace with the S1..S4 stage targets beside it and any judge / human stage flags.

    `flags` are records with source, who, S1..S4 (1 / 0 / None) and first_failure; the first failing stage
    of each is highlighted."""
    if not trace_text and not targets:
        return None
    first_fail = {f.get("first_failure") for f in flags if f.get("first_failure")}
    rows = []
    for s in STAGES:
        if not targets or s not in targets:
            continue
        marks = []
        for f in flags:
            v = f.get(s)
            sym = "✓" if v in (1, True) else ("✗" if v in (0, False) else "?")
            cls = "cc-correct" if v in (1, True) else ("cc-wrong" if v in (0, False) else "cc-missing")
            marks.append((cls, sym, f"{text(f.get('source'))}: {text(f.get('who'))}"))
        rows.append(StageRow(s, STAGE_NAMES[s], s in first_fail, marks, text(targets[s])))
    legend = ", ".join(f"{text(f.get('source'))} {text(f.get('who'))}"
                       + (f" (first failure {text(f.get('first_failure'))})" if f.get("first_failure") else "")
                       for f in flags)
    return Trace(text(trace_text), bool(targets), rows, f"flags: {legend}" if flags else "")


@dataclass(slots=True, frozen=True)
class OtherPrediction:
    """Another rotation / repeat of the item: its mark in the list of all predictions, its raw response."""

    rotation: int
    repeat: int
    mark: Mark
    turned: Rotation | None
    status: str
    text: str
    listed: bool  # its raw response is shown under "raw responses of the other predictions"


@dataclass(slots=True, frozen=True)
class DetailItem:
    head: str
    item_id: str
    gold: str
    mark: Mark
    probs: list[Prob]
    response: Response | None  # None: the run did not answer the item
    others: list[OtherPrediction]
    trace: Trace | None


@dataclass(slots=True, frozen=True)
class Detail:
    run: RunLabel
    items: list[DetailItem]


def detail(items: Sequence[Mapping[str, Any]], rv: RunView | None, flags: Sequence[Mapping[str, Any]] = (),
           title: Callable[[Mapping[str, Any]], str] | None = None) -> Detail | None:
    """One run in detail: per item its answer vs gold, parse status, probabilities, the raw response on
    demand, every extra rotation / repeat, and the trace beside the stage targets when there is one."""
    if rv is None:
        return None
    head = title or (lambda it: f'{it["kind"]} · {it["variant"]}')
    blocks = []
    for it in items:
        iid = it["item_id"]
        preds = rv.all_preds(iid)
        main = rv.primary(iid)
        if main is None:
            blocks.append(DetailItem(text(head(it)), text(iid), text(it["answer"]), mark_of("missing"), [], None, [],
                                     None))
            continue
        others = []
        if len(preds) > 1:
            for p in preds:
                listed = p is not main and (p["rotation"], p["repeat"]) != (main["rotation"], main["repeat"])
                others.append(OtherPrediction(
                    int(p["rotation"]), int(p["repeat"]),
                    mark_of(_pred_outcome(p, it["answer"]), p.get("answer") if p.get("status") == "ok" else None),
                    rotation(p), text(p.get("status")), text(p.get("response")), listed))
        item_flags = [f for f in flags if f.get("item_id") == iid]
        shown = None
        if main.get("trace") or (it.get("stages") and item_flags):
            shown = trace(main.get("trace"), it.get("stages"), item_flags)
        elif it.get("stages"):
            shown = trace(None, it.get("stages"), item_flags)
        blocks.append(DetailItem(text(head(it)), text(iid), text(it["answer"]), answer_mark_of(rv, iid),
                                 probs(main.get("probs"), it["answer"], main.get("answer")), response(main), others,
                                 shown))
    return Detail(run_label(rv.record), blocks)


def _pred_outcome(p: Mapping[str, Any], gold: str) -> str:
    """One prediction's mark (the outcome rule of one prediction: ok and the gold letter)."""
    return outcome_label(True, p.get("status") == "ok" and p.get("answer") == gold, p.get("status"))


def chips(pairs: Iterable[tuple[str, object]]) -> list[tuple[str, str]]:
    """Small 'key: value' chips for a group header (empty values skipped)."""
    return [(k, text(v)) for k, v in pairs if v not in (None, "", [])]


def message(note: str) -> str:
    """A view's one-line message (nothing chosen, an unknown group)."""
    return macro(COMMON, "message")(note)
