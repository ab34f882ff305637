"""Shared render helpers of the group views: escaping, thumbnails that open full size, right / wrong marks,
option lists, the all-runs answer table, one run in detail, and the trace view (`render_trace`).

Everything that reaches HTML from the store (questions, options, responses, traces, names) goes through
`esc` first. Images are referenced by content hash (`image/<hash>.<ext>`, `thumb/<hash>_<size>.png`,
ui/serving.py), so no page shows the store's folder.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.schema import STAGE_NAMES, STAGES
from ui.serving import image_url

OUTCOME_MARK = {
    "correct": ("✓", "correct"),
    "wrong": ("✗", "wrong"),
    "invalid": ("⚠", "invalid response (no single answer letter)"),
    "api_error": ("⊘", "API error (no response)"),
    "missing": ("–", "not answered by this run"),
}


def esc(value: Any) -> str:
    """HTML-escaped text of any value (None -> empty)."""
    return "" if value is None else html.escape(str(value), quote=True)


def file_url(path: Any) -> str:
    """The URL of a stored image or thumbnail (a path from Store.image_path / Store.thumbnail): its content
    hash at the app's `image/` / `thumb/` route (ui/serving.py), never the store's folder."""
    return image_url(path)


def synthetic_badge(synthetic: bool) -> str:
    return '<span class="cc-synthetic" title="synthetic run (demo data)">synthetic</span>' if synthetic else ""


def run_label_html(run: Mapping[str, Any], short: bool = False) -> str:
    name = str(run["name"])
    shown = name if not short or len(name) <= 28 else name[:26] + "…"
    return f'<span class="cc-run" title="{esc(name)}">{esc(shown)}</span>{synthetic_badge(bool(run.get("synthetic")))}'


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


def thumb_html(store: Any, digest: str, label: str = "", size: int = 320, extra_cls: str = "",
               overlay: str = "", caption: str = "") -> str:
    """A thumbnail that opens the full image in an overlay on click (click again, or Esc, to close).

    `label` is drawn on the image corner (I1, I2 ...); `overlay` is extra HTML laid over the thumbnail
    (an SVG of panel boxes, a cross for a withheld view); `caption` is a line under it.
    """
    try:
        thumb = file_url(store.thumbnail(digest, size))
        full = file_url(store.image_path(digest))
    except Exception as exc:  # noqa: BLE001 - a missing file shows as such, it never breaks the view
        return f'<div class="cc-img cc-img-missing {extra_cls}">image {esc(digest[:8])} unavailable ({esc(exc)})</div>'
    lab = f'<span class="cc-img-label">{esc(label)}</span>' if label else ""
    cap = f'<div class="cc-img-caption">{caption}</div>' if caption else ""
    return (f'<figure class="cc-img {extra_cls}"><details class="cc-zoom"><summary title="click for full size">'
            f'<span class="cc-thumb-wrap"><img src="{thumb}" alt="{esc(label or "image")}" loading="lazy">{overlay}'
            f'{lab}</span><span class="cc-full"><img src="{full}" alt="full size {esc(label)}" loading="lazy">'
            f'<span class="cc-full-hint">click or Esc to close</span></span></summary></details>{cap}</figure>')


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
        if not self.answered.get(item_id, False):
            return "missing"
        if self.correct.get(item_id, False):
            return "correct"
        pred = self.primary(item_id)
        status = (pred or {}).get("status")
        return status if status in ("invalid", "api_error") else "wrong"

    def answered_items(self) -> int:
        return sum(bool(v) for v in self.answered.values())


def mark(outcome: str, letter: str | None = None) -> str:
    """A right / wrong mark: colour plus symbol (and the letter when there is one)."""
    sym, title = OUTCOME_MARK.get(outcome, ("?", outcome))
    let = f'<b class="cc-letter">{esc(letter)}</b>' if letter else ""
    return f'<span class="cc-mark cc-{outcome}" title="{esc(title)}">{let}<span class="cc-sym">{sym}</span></span>'


def answer_mark(rv: RunView, item_id: str) -> str:
    pred = rv.primary(item_id)
    letter = pred.get("answer") if pred and pred.get("status") == "ok" else None
    return mark(rv.outcome(item_id), letter)


def options_html(options: Mapping[str, str], gold: str, extra: Mapping[str, str] | None = None,
                 insufficient: str | None = None) -> str:
    """The option list with the gold option marked; `extra` adds a line (e.g. English gloss) per letter."""
    rows = []
    for letter, text in options.items():
        cls = "cc-opt cc-gold" if letter == gold else "cc-opt"
        gl = f'<span class="cc-gloss">{esc(extra[letter])}</span>' if extra and extra.get(letter) else ""
        tag = '<span class="cc-gold-tag" title="gold answer">gold</span>' if letter == gold else ""
        ins = '<span class="cc-ins-tag" title="the insufficient-information option">insufficient</span>' \
            if insufficient and letter == insufficient else ""
        rows.append(f'<li class="{cls}"><b>{esc(letter)}</b> {esc(text)}{gl}{tag}{ins}</li>')
    inline = len(options) > 4 and all(len(str(t)) <= 14 for t in options.values()) and not extra
    return f'<ul class="cc-opts{" cc-opts-inline" if inline else ""}">{"".join(rows)}</ul>'


def run_answers(runs: Sequence[RunView], item_id: str) -> str:
    """Each selected run's answer to one item with its mark (one line per run)."""
    if not runs:
        return '<div class="cc-muted">pick runs in the header to see their answers</div>'
    lines = [f'<div class="cc-ans">{answer_mark(rv, item_id)}{run_label_html(rv.record, short=True)}</div>'
             for rv in runs]
    return f'<div class="cc-answers">{"".join(lines)}</div>'


def answers_table(items: Sequence[Mapping[str, Any]], runs: Sequence[RunView], selected: Iterable[str] = (),
                  col_label: Any = None, extra_cols: Sequence[tuple[str, Any]] = ()) -> str:
    """All runs' answers at once: one row per run that answered the group, one column per item, the gold
    row first, then k / n correct and any `extra_cols` (header, fn(RunView) -> html)."""
    chosen = set(selected)
    label = col_label or (lambda it: it["variant"] or it["kind"])
    head = "".join(f'<th title="{esc(it["item_id"])}">{esc(label(it))}</th>' for it in items)
    head += '<th title="items correct / items">correct</th>' + "".join(f"<th>{esc(h)}</th>" for h, _ in extra_cols)
    gold = "".join(f'<td><b class="cc-letter">{esc(it["answer"])}</b></td>' for it in items)
    rows = [f'<tr class="cc-gold-row"><th>gold</th>{gold}<td></td>{"<td></td>" * len(extra_cols)}</tr>']
    silent = 0
    for rv in runs:
        if rv.answered_items() == 0:
            silent += 1
            continue
        cells = "".join(f"<td>{answer_mark(rv, it['item_id'])}</td>" for it in items)
        k = sum(rv.correct.get(it["item_id"], False) for it in items)
        n = sum(rv.answered.get(it["item_id"], False) for it in items)
        extra = "".join(f"<td>{fn(rv)}</td>" for _, fn in extra_cols)
        cls = ' class="cc-selected"' if rv.name in chosen else ""
        rows.append(f'<tr{cls}><th>{run_label_html(rv.record, short=True)}</th>{cells}'
                    f'<td class="cc-kn">{k}/{n}</td>{extra}</tr>')
    note = f'<div class="cc-muted">{silent} run(s) of this benchmark did not answer this group.</div>' if silent else ""
    return (f'<div class="cc-table-wrap"><table class="cc-answers-table cc-allruns"><thead><tr><th>run</th>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>{note}')


def all_runs(g: Any, items: Sequence[Mapping[str, Any]], col_label: Any = None,
             extra_cols: Sequence[tuple[str, Any]] = ()) -> str:
    """The "All runs" section of group `g` (ui.views.Group): answers_table of the runs it drew. When the
    benchmark has more runs than a view draws besides the picked ones (ui.views.OTHER_RUNS), the section holds
    the picked runs, is titled so, and says how many it left out."""
    table = answers_table(items, g.runs, [r.name for r in g.selected], col_label, extra_cols)
    if not g.hidden:
        return section("All runs", table)
    note = (f'<div class="cc-muted cc-runs-left-out">{g.hidden:,} other run(s) of this benchmark are not drawn here: '
            "pick runs in the header to see their answers.</div>")
    return section(f"Picked runs ({len(g.runs)} of {len(g.runs) + g.hidden:,})", table + note)


# --------------------------------------------------------------------------- one run in detail


def probs_html(probs: Mapping[str, float] | None, gold: str, chosen: str | None) -> str:
    if not probs:
        return ""
    items = []
    for letter in sorted(probs):
        try:
            p = float(probs[letter])
        except (TypeError, ValueError):
            continue
        if math.isnan(p):
            continue
        cls = "cc-prob-gold" if letter == gold else ("cc-prob-chosen" if letter == chosen else "")
        items.append(f'<span class="cc-prob {cls}"><b>{esc(letter)}</b><span class="cc-bar" '
                     f'style="width:{max(0.0, min(1.0, p)) * 60:.0f}px"></span>{p:.2f}</span>')
    return f'<div class="cc-probs" title="option probabilities (original letters)">{"".join(items)}</div>' if items else ""


def rotated(pred: Mapping[str, Any]) -> str:
    """"shown D → original C" when the options were rotated: the letter the model saw, then the letter it
    means in the item's own order (what is scored); empty when they agree."""
    shown, answer = pred.get("shown"), pred.get("answer")
    if not shown or not answer or shown == answer:
        return ""
    return (f'<span class="cc-rot" title="options were rotated: the model answered {esc(shown)} as shown, '
            f'which is {esc(answer)} in the original order">shown <b class="cc-letter">{esc(shown)}</b> → '
            f'original <b class="cc-letter">{esc(answer)}</b></span>')


def response_html(pred: Mapping[str, Any], open_: bool = False) -> str:
    """The raw response on demand (escaped), with status, shown letter, tokens and error."""
    resp = pred.get("response")
    bits = [f'status <b class="cc-status cc-st-{esc(pred.get("status"))}">{esc(pred.get("status"))}</b>']
    rot = rotated(pred)
    if rot:
        bits.append(rot)
    if int(pred.get("rotation") or 0) or int(pred.get("repeat") or 0):
        bits.append(f"rotation {int(pred.get('rotation') or 0)}, repeat {int(pred.get('repeat') or 0)}")
    tok = pred.get("tokens")
    if tok is not None and not (isinstance(tok, float) and math.isnan(tok)):
        bits.append(f"{int(tok)} tokens")
    if pred.get("error"):
        bits.append(f"error: {esc(pred.get('error'))}")
    body = (f'<pre class="cc-raw">{esc(resp)}</pre>' if resp not in (None, "")
            else '<div class="cc-muted">empty response</div>')
    op = " open" if open_ else ""
    return (f'<div class="cc-meta">{" · ".join(bits)}</div><details class="cc-raw-details"{op}>'
            f'<summary>raw response</summary>{body}</details>')


def render_trace(trace: str | None, targets: Mapping[str, str] | None = None,
                 flags: Sequence[Mapping[str, Any]] = ()) -> str:
    """A reasoning trace with the S1..S4 stage targets beside it and any judge / human stage flags.

    `flags` are records with source, who, S1..S4 (1 / 0 / None) and first_failure; the first failing stage
    of each is highlighted. Reused by the Judge tab.
    """
    if not trace and not targets:
        return ""
    tgt = ""
    if targets:
        first_fail = {f.get("first_failure") for f in flags if f.get("first_failure")}
        rows = []
        for s in STAGES:
            if s not in targets:
                continue
            marks = []
            for f in flags:
                v = f.get(s)
                sym = "✓" if v in (1, True) else ("✗" if v in (0, False) else "?")
                cls = "cc-correct" if v in (1, True) else ("cc-wrong" if v in (0, False) else "cc-missing")
                marks.append(f'<span class="cc-mark {cls}" title="{esc(f.get("source"))}: {esc(f.get("who"))}">'
                             f'<span class="cc-sym">{sym}</span></span>')
            hot = " cc-first-fail" if s in first_fail else ""
            rows.append(f'<div class="cc-stage{hot}"><div class="cc-stage-head"><b>{s}</b> '
                        f'<span class="cc-muted">{STAGE_NAMES[s]}</span>{"".join(marks)}</div>'
                        f'<div class="cc-stage-text">{esc(targets[s])}</div></div>')
        legend = ""
        if flags:
            legend = '<div class="cc-muted">flags: ' + ", ".join(
                f'{esc(f.get("source"))} {esc(f.get("who"))}' + (f' (first failure {esc(f.get("first_failure"))})'
                                                                  if f.get("first_failure") else "")
                for f in flags) + "</div>"
        tgt = f'<div class="cc-targets"><div class="cc-sub">stage targets</div>{"".join(rows)}{legend}</div>'
    tr = (f'<div class="cc-trace"><div class="cc-sub">trace</div><pre class="cc-raw">{esc(trace)}</pre></div>'
          if trace else '<div class="cc-trace cc-muted">no trace stored for this prediction</div>')
    return f'<div class="cc-trace-grid">{tr}{tgt}</div>'


def detail_html(items: Sequence[Mapping[str, Any]], rv: RunView | None, flags: Sequence[Mapping[str, Any]] = (),
                title: Any = None) -> str:
    """One run in detail: per item its answer vs gold, parse status, probabilities, the raw response on
    demand, every extra rotation / repeat, and the trace beside the stage targets when there is one."""
    if rv is None:
        return '<div class="cc-muted">pick a run to see its responses in detail</div>'
    head = title or (lambda it: f'{it["kind"]} · {it["variant"]}')
    blocks = []
    for it in items:
        iid = it["item_id"]
        preds = rv.all_preds(iid)
        main = rv.primary(iid)
        if main is None:
            blocks.append(f'<div class="cc-detail-item"><div class="cc-detail-head">{esc(head(it))} '
                          f'<span class="cc-muted">{esc(iid)}</span> {mark("missing")}</div></div>')
            continue
        probs = probs_html(main.get("probs"), it["answer"], main.get("answer"))
        more = ""
        if len(preds) > 1:
            cells = "".join(
                f'<span class="cc-more">r{int(p["rotation"])}/rep{int(p["repeat"])} '
                f'{mark(_pred_outcome(p, it["answer"]), p.get("answer") if p.get("status") == "ok" else None)}'
                f'{" " + rotated(p) if rotated(p) else ""}</span>'
                for p in preds)
            more = f'<div class="cc-meta">all {len(preds)} predictions: {cells}</div>'
            extra = [p for p in preds if p is not main and (p["rotation"], p["repeat"]) != (main["rotation"], main["repeat"])]
            if extra:
                body = "".join(f'<div class="cc-meta">rotation {int(p["rotation"])}, repeat {int(p["repeat"])}: '
                               f'status {esc(p.get("status"))}</div><pre class="cc-raw">{esc(p.get("response"))}</pre>'
                               for p in extra)
                more += (f'<details class="cc-raw-details"><summary>raw responses of the other {len(extra)} '
                         f'predictions</summary>{body}</details>')
        item_flags = [f for f in flags if f.get("item_id") == iid]
        trace = ""
        if main.get("trace") or (it.get("stages") and item_flags):
            trace = render_trace(main.get("trace"), it.get("stages"), item_flags)
        elif it.get("stages"):
            trace = render_trace(None, it.get("stages"), item_flags)
        blocks.append(
            f'<div class="cc-detail-item"><div class="cc-detail-head">{esc(head(it))} '
            f'<span class="cc-muted">{esc(iid)}</span> gold <b class="cc-letter">{esc(it["answer"])}</b> '
            f'{answer_mark(rv, iid)}</div>{probs}{response_html(main)}{more}{trace}</div>')
    return (f'<div class="cc-detail"><div class="cc-section-title">Responses of {run_label_html(rv.record)}</div>'
            f'{"".join(blocks)}</div>')


def _pred_outcome(p: Mapping[str, Any], gold: str) -> str:
    st = p.get("status")
    if st in ("invalid", "api_error"):
        return str(st)
    return "correct" if st == "ok" and p.get("answer") == gold else "wrong"


def section(title: str, body: str, cls: str = "") -> str:
    return f'<section class="cc-section {cls}"><div class="cc-section-title">{title}</div>{body}</section>'


def chips(pairs: Iterable[tuple[str, Any]]) -> str:
    """Small 'key: value' chips for a group header (values escaped; empty values skipped)."""
    out = [f'<span class="cc-chip"><span class="cc-muted">{esc(k)}</span> {esc(v)}</span>'
           for k, v in pairs if v not in (None, "", [])]
    return f'<div class="cc-chips">{"".join(out)}</div>'


def message(text: str) -> str:
    return f'<div class="cc-view cc-empty">{esc(text)}</div>'
