"""The trace view (SPEC §8): the stage targets (StemBind: S1-S4) beside the trace, the trace split into steps, judge and human flags
per stage, the first failure highlighted, the stem image and the final answer.

`render(...)` returns HTML (ui/templates/trace_view.html, its styles inside): every text that comes from a model,
a benchmark file or an annotator is escaped there by the template's autoescape; images are the store's thumbnails served by content hash
(ui.views.common.file_url; full size on click). The stages, their names and the first-failure rule come from
the trace's family's `StageJudging` (core.families.stage_judging).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.families.stage_judging import StageJudging
from core.judge import split_steps
from ui.templating import render as render_template
from ui.views.common import file_url


def _flag(v: Any) -> str:
    """A stage flag's class: u (not labeled), t (correct) or f (incorrect)."""
    if v is None or (isinstance(v, float) and v != v):
        return "u"
    return "t" if int(v) else "f"


def _ff(flags: Mapping[str, Any] | None, judging: StageJudging) -> str | None:
    if not flags or all(flags.get(s) is None for s in judging.stages):
        return None
    return judging.first_failure(None if flags.get(s) is None else bool(flags.get(s)) for s in judging.stages)


@dataclass(slots=True, frozen=True)
class Side:
    """The left column: stem image (thumbnail and full-size URLs), item id, question, options (letter, text, gold,
    the model's answer), the final answer with its status and verdict, gold, operation and perception load."""

    image: tuple[str, str] | None
    item_id: str
    synthetic: bool
    question: str
    options: list[tuple[str, str, bool, bool]]
    answer: str
    status: str
    gold: str
    correct: bool
    operation: str
    load: str


def _side(rec: Mapping[str, Any], image: tuple[Any, Any] | None, synthetic: bool) -> Side:
    gold = rec.get("gold")
    answer = rec.get("answer") if isinstance(rec.get("answer"), str) else None
    status = rec.get("status")
    meta = rec.get("meta") or {}
    return Side(None if image is None else (file_url(image[0]), file_url(image[1])), str(rec.get("item_id", "")),
                synthetic, str(rec.get("question") or ""),
                [(k, str(v), k == gold, k == answer) for k, v in (rec.get("options") or {}).items()],
                answer or "—", str(status), str(gold), answer is not None and answer == gold and status == "ok",
                str(meta["operation"]) if meta.get("operation") else "",
                str(meta["perception_load"]) if meta.get("perception_load") else "")


_Column = tuple[str, "Mapping[str, Any] | None", str]


@dataclass(slots=True, frozen=True)
class JudgedStage:
    """A stage with its target and one cell per annotator shown: ("status", text) for a judgement that is not
    ok, else (flag class, "")."""

    stage: str
    name: str
    target: str
    cells: list[tuple[str, str]]
    first_failure: bool


@dataclass(slots=True, frozen=True)
class Main:
    """The right column: the stage table (a column per annotator shown; `blind` hides the others), the first
    failure (own, and the others' unless blind), the trace's steps."""

    heads: list[str]
    blind: bool
    rows: list[JudgedStage]
    own_name: str
    ff_text: str
    others: str
    steps: list[str]


def _stage_rows(stages: Mapping[str, Any], cols: list[_Column], own_ff: str | None, blind: bool,
                judging: StageJudging) -> list[JudgedStage]:
    rows = []
    for s in judging.stages:
        cells = []
        for _label, flags, kind in cols:
            if blind and kind != "own":
                continue
            if flags is not None and flags.get("status") not in (None, "ok"):
                cells.append(("status", str(flags.get("status"))))
            else:
                cells.append((_flag(None if flags is None else flags.get(s)), ""))
        rows.append(JudgedStage(s, judging.stage_names[s], str(stages.get(s, "—")), cells, own_ff == s))
    return rows


def _main(rec: Mapping[str, Any], cols: list[_Column], own_name: str, blind: bool, judging: StageJudging) -> Main:
    own_ff = _ff(cols[0][1], judging)
    ff_text = ("not labeled yet" if own_ff is None else ("none (every stage correct)" if own_ff == judging.no_failure
                                                        else f"{own_ff} {judging.stage_names[own_ff]}"))
    others = []
    if not blind:
        for label, flags, _kind in cols[1:]:
            if flags is not None and flags.get("status") in (None, "ok"):
                f = _ff(flags, judging)
                if f is not None:
                    others.append(f"{label}: {f}")
    return Main([label for label, _, kind in cols if not (blind and kind != "own")], blind,
                _stage_rows(rec.get("stages") or {}, cols, own_ff, blind, judging), own_name, ff_text,
                "; ".join(others), split_steps(rec.get("trace")))


def render(rec: Mapping[str, Any] | None, *, own: Mapping[str, Any] | None = None, own_name: str = "you",
           judges: Mapping[str, Mapping[str, Any]] | None = None, humans: Mapping[str, Mapping[str, Any]] | None = None,
           blind: bool = True, image: tuple[Any, Any] | None = None, synthetic: bool = False,
           header: str | None = None, judging: StageJudging | None = None) -> str:
    """One trace. `rec`: a trace record (db.judging.trace_record) of a family with stage judging `judging`;
    `own`: the current annotator's flags (S1..S4); `judges` / `humans`: name -> flags (a judge's value may carry status "malformed"); `blind` hides
    judges and other annotators; `image`: (thumbnail path, full-size path) of the stem image."""
    if rec is None or judging is None:
        return render_template("trace_view.html", side=None)
    cols: list[_Column] = [(own_name, own, "own")]
    for name, flags in (judges or {}).items():
        cols.append((f"judge {name}", flags, "judge"))
    for name, flags in (humans or {}).items():
        cols.append((name, flags, "human"))
    return render_template("trace_view.html", header=header or "",
                           side=_side(rec, image, synthetic), main=_main(rec, cols, own_name, blind, judging))
