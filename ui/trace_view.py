"""The trace view (SPEC §8): the stage targets (StemBind: S1-S4) beside the trace, the trace split into steps, judge and human flags
per stage, the first failure highlighted, the stem image and the final answer.

`render(...)` returns HTML. Every text that comes from a model, a benchmark file or an annotator is escaped
with html.escape before it enters the HTML; images are the store's thumbnails served by content hash
(ui.views.common.file_url; full size on click). The stages, their names and the first-failure rule come from
the trace's family's `StageJudging` (core.families.stage_judging).
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from core.families.stage_judging import StageJudging
from core.judge import split_steps
from ui.views.common import file_url

CSS = """
<style>
.jt-wrap{display:grid;grid-template-columns:minmax(220px,300px) 1fr;gap:16px;align-items:start;font-size:14px}
.jt-side img{width:100%;border:1px solid var(--border-color-primary);border-radius:6px;background:#fff}
.jt-side .jt-q{margin:8px 0 4px 0;font-weight:600}
.jt-opts{margin:0 !important;padding-left:0 !important;list-style:none !important}
.jt-opts li{padding:1px 4px;border-radius:4px;list-style:none !important;margin:0 !important}
.jt-opts li.gold{background:rgba(34,197,94,.15)}
.jt-opts li .jt-model{color:#1d4ed8;font-size:12px;font-weight:600}
.jt-final{margin-top:8px;padding:6px 8px;border-radius:6px;background:var(--background-fill-secondary)}
.jt-ok{color:#15803d;font-weight:600}.jt-bad{color:#b91c1c;font-weight:600}
.jt-badge{display:inline-block;padding:0 6px;border-radius:8px;font-size:11px;background:#fde68a;color:#713f12;
 margin-left:6px;vertical-align:middle}
.jt-stages{width:100%;border-collapse:collapse;margin-bottom:10px;table-layout:fixed}
.jt-stages th.jt-col{width:64px;font-size:11px;overflow-wrap:anywhere}
.jt-stages th.jt-stage{width:78px}
.jt-stages th,.jt-stages td{border-bottom:1px solid var(--border-color-primary);padding:5px 6px;vertical-align:top;
 text-align:left}
.jt-stages td.jt-target{white-space:normal}
.jt-stages tr.jt-ff td{background:rgba(239,68,68,.12)}
.jt-stages tr.jt-ff td:first-child{border-left:4px solid #dc2626}
.jt-flag{display:inline-block;min-width:22px;text-align:center;border-radius:4px;font-weight:700}
.jt-flag.t{color:#15803d}.jt-flag.f{color:#b91c1c;background:rgba(239,68,68,.12)}.jt-flag.u{color:#6b7280}
.jt-hidden{color:#6b7280;font-style:italic}
.jt-steps{margin:0;padding-left:26px;max-height:420px;overflow:auto;border:1px solid var(--border-color-primary);
 border-radius:6px;padding-top:6px;padding-bottom:6px}
.jt-steps li{margin:2px 0 6px 0;white-space:pre-wrap;line-height:1.4}
.jt-h{font-weight:600;margin:10px 0 4px 0}
.jt-ffnote{font-weight:600}
</style>
"""


def _flag_html(v: Any) -> str:
    if v is None or (isinstance(v, float) and v != v):
        return "<span class='jt-flag u' title='not labeled'>·</span>"
    return ("<span class='jt-flag t' title='correct'>✓</span>" if int(v) else
            "<span class='jt-flag f' title='incorrect'>✗</span>")


def _ff(flags: Mapping[str, Any] | None, judging: StageJudging) -> str | None:
    if not flags or all(flags.get(s) is None for s in judging.stages):
        return None
    return judging.first_failure(None if flags.get(s) is None else bool(flags.get(s)) for s in judging.stages)


def _side(rec: Mapping[str, Any], image: tuple[Any, Any] | None, synthetic: bool) -> str:
    """The left column: stem image, item id, question, options (gold and the model's answer marked), verdict."""
    esc = html.escape
    options = rec.get("options") or {}
    gold = rec.get("gold")
    answer = rec.get("answer") if isinstance(rec.get("answer"), str) else None
    side = []
    if image is not None:
        thumb, full = image
        side.append(f"<a href='{file_url(full)}' target='_blank' title='open full size'>"
                    f"<img src='{file_url(thumb)}' alt='stem image'></a>")
    side.append(f"<div class='jt-q'>{esc(str(rec.get('item_id', '')))}"
                + ("<span class='jt-badge'>synthetic</span>" if synthetic else "") + "</div>")
    side.append(f"<div>{esc(str(rec.get('question') or ''))}</div>")
    opts = "".join(
        f"<li class='{'gold' if k == gold else ''}'><b>{esc(k)}.</b> {esc(str(v))}"
        f"{' <span title=gold>★ gold</span>' if k == gold else ''}"
        f"{' <span class=jt-model>← model</span>' if k == answer else ''}</li>" for k, v in options.items())
    side.append(f"<ul class='jt-opts'>{opts}</ul>")
    status = rec.get("status")
    verdict = ("<span class='jt-ok'>correct</span>" if answer is not None and answer == gold and status == "ok"
               else "<span class='jt-bad'>wrong</span>")
    side.append(f"<div class='jt-final'>Final answer: <b>{esc(answer or '—')}</b> ({esc(str(status))}) · {verdict}"
                f"<br>Gold: <b>{esc(str(gold))}</b></div>")
    meta = rec.get("meta") or {}
    if meta.get("operation"):
        side.append(f"<div style='margin-top:6px;color:#6b7280'>operation {esc(str(meta['operation']))}"
                    + (f" · perception load {esc(str(meta['perception_load']))}" if meta.get("perception_load") else "")
                    + "</div>")
    return "".join(side)


_Column = tuple[str, "Mapping[str, Any] | None", str]


def _stage_table(stages: Mapping[str, Any], cols: list[_Column], own_ff: str | None, blind: bool,
                 judging: StageJudging) -> str:
    """The stages (S1..S4) with their targets and one column of flags per annotator (only the own one when `blind`)."""
    esc = html.escape
    head = "".join(
        f"<th class='jt-col'>{esc(label)}</th>" for label, _, kind in cols if not (blind and kind != "own"))
    if blind:
        head += "<th class='jt-col jt-hidden' style='width:90px'>judge / others</th>"
    rows = []
    for s in judging.stages:
        cells = []
        for _label, flags, kind in cols:
            if blind and kind != "own":
                continue
            if flags is not None and flags.get("status") not in (None, "ok"):
                cells.append(f"<td class='jt-hidden'>{esc(str(flags.get('status')))}</td>")
            else:
                cells.append(f"<td>{_flag_html(None if flags is None else flags.get(s))}</td>")
        if blind:
            cells.append("<td class='jt-hidden'>hidden</td>")
        cls = " class='jt-ff'" if own_ff == s else ""
        rows.append(f"<tr{cls} data-stage='{s}'><td><b>{s}</b> {judging.stage_names[s]}</td>"
                    f"<td class='jt-target'>{esc(str(stages.get(s, '—')))}</td>{''.join(cells)}</tr>")
    return (f"<table class='jt-stages'><thead><tr><th class='jt-stage'>Stage</th><th>Target</th>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def _main(rec: Mapping[str, Any], cols: list[_Column], own_name: str, blind: bool, judging: StageJudging) -> str:
    """The right column: the stage table, the first failure (own, and the others' unless `blind`), the trace."""
    esc = html.escape
    own_ff = _ff(cols[0][1], judging)
    ff_text = ("not labeled yet" if own_ff is None else ("none (every stage correct)" if own_ff == judging.no_failure
                                                        else f"{own_ff} {judging.stage_names[own_ff]}"))
    others = []
    if not blind:
        for label, flags, _kind in cols[1:]:
            if flags is not None and flags.get("status") in (None, "ok"):
                f = _ff(flags, judging)
                if f is not None:
                    others.append(f"{esc(label)}: {esc(f)}")
    steps = split_steps(rec.get("trace"))
    step_html = "".join(f"<li>{esc(s)}</li>" for s in steps) or "<li class='jt-hidden'>(empty trace)</li>"
    return (_stage_table(rec.get("stages") or {}, cols, own_ff, blind, judging)
            + f"<div class='jt-ffnote'>First failure ({esc(own_name)}): {esc(ff_text)}"
            + (f" <span style='font-weight:400;color:#6b7280'>· {'; '.join(others)}</span>" if others else "")
            + "</div>"
            f"<div class='jt-h'>Trace ({len(steps)} steps)</div><ol class='jt-steps'>{step_html}</ol>")


def render(rec: Mapping[str, Any] | None, *, own: Mapping[str, Any] | None = None, own_name: str = "you",
           judges: Mapping[str, Mapping[str, Any]] | None = None, humans: Mapping[str, Mapping[str, Any]] | None = None,
           blind: bool = True, image: tuple[Any, Any] | None = None, synthetic: bool = False,
           header: str | None = None, judging: StageJudging | None = None) -> str:
    """One trace. `rec`: a trace record (db.judging.trace_record) of a family with stage judging `judging`;
    `own`: the current annotator's flags (S1..S4); `judges` / `humans`: name -> flags (a judge's value may carry status "malformed"); `blind` hides
    judges and other annotators; `image`: (thumbnail path, full-size path) of the stem image."""
    if rec is None or judging is None:
        return CSS + "<div class='jt-hidden'>No trace selected.</div>"
    cols: list[_Column] = [(own_name, own, "own")]
    for name, flags in (judges or {}).items():
        cols.append((f"judge {name}", flags, "judge"))
    for name, flags in (humans or {}).items():
        cols.append((name, flags, "human"))
    top = f"<div class='jt-h'>{html.escape(header)}</div>" if header else ""
    return (CSS + top + f"<div class='jt-wrap'><div class='jt-side'>{_side(rec, image, synthetic)}</div>"
            f"<div>{_main(rec, cols, own_name, blind, judging)}</div></div>")
