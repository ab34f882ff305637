"""The L2 trace judge (paper 002 §3.3, §4.4, App. C.3): prompt, output parsing, first failure, lexical baseline.

A judge reads one free trace of a StemBind F item, the model's final answer, the item's S1-S4 ground-truth
targets (S1 Encode, S2 Infer, S3 Map, S4 Apply: 002 §3.1) and task metadata, and says for each stage whether the trace
gets it right. The first failure is derived, never asked for: the first stage marked false walking
S1 -> S4 (C.3). A flag pattern with a true stage after a false one is *inconsistent* (counted, not fixed).

Judges:

- `ModelJudge` wraps any runner of core/runners (OpenAI-compatible `acall`, local transformers `generate`)
  at temperature 0 with `JUDGE_SYSTEM` + `build_prompt(...)`;
- `LexicalJudge` needs no model: content-token overlap of the trace with each stage target (a cheap
  baseline, and a real-code test double).

`parse_judgement` is strict: the judge must give all four stages as 0/1 (or true/false); anything else is
status "malformed" with the raw text kept and no flag filled in. A failed call is status "api_error" (retried
on the next run). Pure: no SQL, no UI.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.families.stembind.stages import first_failure, inconsistent
from core.families.stembind.vocab import NO_FAILURE
from core.runners.base import AsyncRunner, ModelRunner, run_coroutine
from core.schema import STAGE_NAMES, STAGES

__all__ = [
    "JUDGE_PROMPT_VERSION", "JUDGE_SYSTEM", "STAGE_NAMES", "JudgeInput", "Judgement", "build_prompt",
    "parse_judgement", "first_failure", "inconsistent", "split_steps", "LexicalJudge", "ModelJudge",
    "summarize", "NO_FAILURE",
]

JUDGE_PROMPT_VERSION = "l2-v2"  # v2: the stages carry the 002 §3.1 names (S1 Encode ... S4 Apply)
STATUSES = ("ok", "malformed", "api_error")

JUDGE_SYSTEM = (
    "You are a strict grader of visual-reasoning traces. You compare a model's free-text reasoning trace with "
    "four verified ground-truth stage targets and decide, stage by stage, whether the trace gets that stage "
    "right. You never solve the puzzle yourself and you never reward a stage the trace does not state."
)

_STAGE_RULES = {
    "S1": f"S1 {STAGE_NAMES['S1']}: the trace describes the visible panels / elements consistently with the S1 target "
          "(right entities, attributes and counts; a missing or wrong key element is 0).",
    "S2": f"S2 {STAGE_NAMES['S2']}: the trace states the rule of the S2 target or an equivalent rule (a different or "
          "mutated rule is 0; no rule stated is 0).",
    "S3": f"S3 {STAGE_NAMES['S3']}: the trace applies the rule to the right slot / instance as in the S3 target (applying a "
          "correct rule to the wrong row, panel or instance is 0).",
    "S4": f"S4 {STAGE_NAMES['S4']}: the trace's final choice follows from its mapping and matches the S4 target's option "
          "(a correct option reached by a wrong mapping is still 1 here; a switch to another option is 0).",
}

_OUTPUT_SPEC = (
    "Reply with one JSON object and nothing else, exactly these keys:\n"
    '{"S1": 0 or 1, "S2": 0 or 1, "S3": 0 or 1, "S4": 0 or 1, "first_failure": "S1" | "S2" | "S3" | "S4" | '
    '"none", "rationale": "<one short sentence>"}\n'
    "Judge every stage on its own (do not stop at the first failure); first_failure is the first stage you "
    "marked 0, walking S1 -> S4, or \"none\"."
)


@dataclass(slots=True)
class JudgeInput:
    """One trace to judge: its key, the trace text, the final answer and the F item's targets and metadata."""

    item_id: str
    trace: str
    final_answer: str | None
    stages: dict[str, str]
    rotation: int = 0
    repeat: int = 0
    question: str = ""
    options: dict[str, str] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, int, int]:
        return (self.item_id, self.rotation, self.repeat)


@dataclass(slots=True)
class Judgement:
    """A judge's verdict on one trace. `flags` are None for every stage unless status is ok."""

    status: str  # ok | malformed | api_error
    flags: dict[str, bool | None] = field(default_factory=lambda: dict.fromkeys(STAGES))
    raw: str = ""
    reason: str | None = None  # why malformed / the api error
    stated_first_failure: str | None = None  # what the judge said (the stored one is always derived)

    @property
    def first_failure(self) -> str | None:
        return first_failure(self.flags[s] for s in STAGES) if self.status == "ok" else None

    @property
    def inconsistent(self) -> bool:
        return self.status == "ok" and inconsistent(self.flags[s] for s in STAGES)

    def flag_values(self) -> list[int | None]:
        return [None if self.flags[s] is None else int(bool(self.flags[s])) for s in STAGES]


# --------------------------------------------------------------------------- the prompt


def build_prompt(inp: JudgeInput) -> str:
    """The user message of the L2 judge (version `JUDGE_PROMPT_VERSION`; documented in docs/JUDGE.md)."""
    meta = {k: v for k, v in (inp.meta or {}).items() if k in ("operation", "perception_load", "layout", "family")}
    parts = ["Task metadata: " + (json.dumps(meta, ensure_ascii=False, sort_keys=True) if meta else "(none)")]
    if inp.question:
        parts.append("Question: " + inp.question)
    if inp.options:
        parts.append("Options:\n" + "\n".join(f"{k}. {v}" for k, v in inp.options.items()))
    parts.append("Ground-truth stage targets:\n" + "\n".join(
        f"{s} ({STAGE_NAMES[s]}): {inp.stages.get(s, '(no target)')}" for s in STAGES))
    parts.append("How to grade each stage:\n" + "\n".join(_STAGE_RULES[s] for s in STAGES))
    parts.append("Model trace:\n<<<TRACE\n" + (inp.trace or "") + "\nTRACE>>>")
    parts.append("Model final answer: " + (inp.final_answer or "(none: no valid final answer)"))
    parts.append(_OUTPUT_SPEC)
    return "\n\n".join(parts)


def build_request(inp: JudgeInput, max_tokens: int = 512) -> Any:
    """A runner `Request` (core.runners.base) for one judge call, at temperature 0."""
    from core.runners.base import Request, text_part

    return Request(messages=[{"role": "system", "content": [text_part(JUDGE_SYSTEM)]},
                             {"role": "user", "content": [text_part(build_prompt(inp))]}],
                   max_tokens=max_tokens, temperature=0.0, stage="judge")


# --------------------------------------------------------------------------- parsing the judge's output

_TRUE = {"1", "true", "yes", "y", "correct", "pass", "right"}
_FALSE = {"0", "false", "no", "n", "incorrect", "fail", "wrong"}


def _flag_value(v: Any) -> bool | None:
    """0/1, true/false or a few unambiguous words; None for anything else (then the judgement is malformed)."""
    if isinstance(v, bool):
        return v
    if isinstance(v, int) and v in (0, 1):
        return bool(v)
    if isinstance(v, float) and v in (0.0, 1.0):
        return bool(v)
    if isinstance(v, str):
        s = v.strip().lower()
        if s in _TRUE:
            return True
        if s in _FALSE:
            return False
    return None


def _json_objects(text: str) -> list[dict[str, Any]]:
    """Every top-level JSON object in `text` (fenced or bare), in order."""
    out = []
    dec = json.JSONDecoder()
    i = 0
    while True:
        i = text.find("{", i)
        if i < 0:
            break
        try:
            obj, end = dec.raw_decode(text, i)
        except json.JSONDecodeError:
            i += 1
            continue
        if isinstance(obj, dict):
            out.append(obj)
        i = end
    return out


_LINE = re.compile(r"^\s*[*\-]*\s*\**\s*(S[1-4])\b[^:=\n]*[:=]\s*\**\s*([A-Za-z0-9]+)", re.IGNORECASE | re.MULTILINE)


def parse_judgement(text: str | None) -> Judgement:
    """Read a judge reply. ok needs all four stages as 0/1 (JSON object, or four `S1: 1` lines);
    otherwise the judgement is malformed and no flag is filled in (never guessed)."""
    raw = text or ""
    if not raw.strip():
        return Judgement("malformed", raw=raw, reason="empty reply")
    candidates = []
    for obj in _json_objects(raw):
        keys = {str(k).strip().upper(): v for k, v in obj.items()}
        if any(s in keys for s in STAGES):
            candidates.append(keys)
    if candidates:
        parsed = []
        for keys in candidates:
            missing = [s for s in STAGES if s not in keys]
            if missing:
                return Judgement("malformed", raw=raw, reason=f"stage(s) {', '.join(missing)} missing")
            flags = {s: _flag_value(keys[s]) for s in STAGES}
            bad = [s for s in STAGES if flags[s] is None]
            if bad:
                return Judgement("malformed", raw=raw, reason=f"{bad[0]} is {keys[bad[0]]!r:.40}, expected 0 or 1")
            stated = keys.get("FIRST_FAILURE")
            parsed.append((flags, None if stated is None else str(stated).strip()))
        if any(p[0] != parsed[0][0] for p in parsed[1:]):
            return Judgement("malformed", raw=raw, reason="several JSON verdicts that disagree")
        flags, stated = parsed[-1]
        return Judgement("ok", flags=flags, raw=raw, stated_first_failure=_norm_stage(stated))
    lines: dict[str, list[str]] = {}
    for m in _LINE.finditer(raw):
        lines.setdefault(m.group(1).upper(), []).append(m.group(2))
    if lines:
        missing = [s for s in STAGES if s not in lines]
        if missing:
            return Judgement("malformed", raw=raw, reason=f"stage(s) {', '.join(missing)} missing")
        flags = {}
        for s in STAGES:
            vals = {_flag_value(v) for v in lines[s]}
            if len(vals) != 1 or None in vals:
                return Judgement("malformed", raw=raw, reason=f"{s} has no single 0/1 value")
            flags[s] = vals.pop()
        return Judgement("ok", flags=flags, raw=raw)
    return Judgement("malformed", raw=raw, reason="no JSON object with S1-S4 and no 'S1: 0/1' lines")


def _norm_stage(value: str | None) -> str | None:
    if value is None:
        return None
    v = value.strip().upper()
    return v if v in STAGES else (NO_FAILURE if v.lower() in ("none", "null", "") else value)


# --------------------------------------------------------------------------- traces as steps


_NUMBERED = re.compile(r"(?m)^\s*(?:step\s*\d+\s*[:.)]|\d+\s*[.)]|[-*\u2022]\s+)", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?\u3002])\s+(?=[A-Z\u4e00-\u9fff\"'(])")


def split_steps(trace: str | None) -> list[str]:
    """The trace as steps: numbered / bulleted lines or non-empty lines when it has several; otherwise
    sentences. Joining the steps gives back the trace's words (nothing is dropped)."""
    text = (trace or "").strip()
    if not text:
        return []
    if _NUMBERED.search(text) and len(_NUMBERED.findall(text)) >= 2:
        starts = [m.start() for m in _NUMBERED.finditer(text)]
        if starts[0] != 0:
            starts.insert(0, 0)
        bounds = [*starts, len(text)]
        steps = [text[a:b].strip() for a, b in zip(bounds, bounds[1:], strict=False)]
        return [s for s in steps if s]
    lines = [ln.strip() for ln in re.split(r"\n\s*\n|\n", text) if ln.strip()]
    if len(lines) >= 2:
        return lines
    sentences = [s.strip() for s in _SENTENCE.split(text) if s.strip()]
    return sentences or [text]


# --------------------------------------------------------------------------- the lexical judge

_STOP = frozenset(
    "a an the of to in on at by for and or but is are was were be been it its this that these those with as "
    "so then than there their which what each every from into only must should would can could i we you "
    "he she they my our your me us not no yes do does did have has had will shall let's lets".split())
_WORD = re.compile(r"[a-z0-9]+|[\u4e00-\u9fff]", re.IGNORECASE)
_LETTER_IN_TARGET = re.compile(r"\b(?:answer|option|candidate)\s+(?:is\s+)?\(?([A-H])\)?\b")


def content_tokens(text: str | None) -> list[str]:
    """Lower-cased word / CJK-character tokens without stop words."""
    return [t for t in (w.lower() for w in _WORD.findall(text or "")) if t not in _STOP]


def target_letter(target: str | None) -> str | None:
    """The option letter an S4 target names ("... the answer is B"), when it names exactly one."""
    letters = {m.group(1) for m in _LETTER_IN_TARGET.finditer(target or "")}
    return letters.pop() if len(letters) == 1 else None


class LexicalJudge:
    """No model: a stage is correct when some step of the trace (or two adjacent steps) recalls at least
    `threshold` of the stage target's content tokens. S4 also needs the final answer to equal the option
    letter the S4 target names, when it names one. Deterministic; `raw` holds the per-stage recall."""

    kind = "lexical"

    def __init__(self, threshold: float = 0.5) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError("the lexical judge's threshold must be in (0, 1]")
        self.threshold = float(threshold)

    def identity(self) -> dict[str, Any]:
        return {"judge_runner": "lexical", "model": "lexical-overlap", "threshold": self.threshold}

    def recall(self, target: str | None, trace: str | None) -> float | None:
        want = set(content_tokens(target))
        if not want:
            return None
        steps = [set(content_tokens(s)) for s in split_steps(trace)]
        windows = steps + [a | b for a, b in zip(steps, steps[1:], strict=False)]
        return max((len(want & w) / len(want) for w in windows), default=0.0)

    def judge(self, inp: JudgeInput) -> Judgement:
        scores: dict[str, float | None] = {}
        flags: dict[str, bool | None] = {}
        for s in STAGES:
            r = self.recall(inp.stages.get(s), inp.trace)
            scores[s] = None if r is None else round(r, 4)
            flags[s] = None if r is None else r >= self.threshold
        letter = target_letter(inp.stages.get("S4"))
        if letter is not None:
            flags["S4"] = (inp.final_answer or "").strip().upper() == letter
        if any(flags[s] is None for s in STAGES):
            missing = [s for s in STAGES if flags[s] is None]
            return Judgement("malformed", raw=json.dumps({"recall": scores}),
                             reason=f"no target text for {', '.join(missing)}")
        raw = json.dumps({**{s: int(bool(flags[s])) for s in STAGES}, "recall": scores,
                          "s4_letter": letter, "threshold": self.threshold})
        return Judgement("ok", flags=flags, raw=raw)

    def judge_many(self, inputs: Iterable[JudgeInput], on_result: Callable[[JudgeInput, Judgement], Any],
                   should_stop: Callable[[], bool] | None = None) -> None:
        for inp in inputs:
            if should_stop is not None and should_stop():
                return
            on_result(inp, self.judge(inp))


# --------------------------------------------------------------------------- model judges


class ModelJudge:
    """Any runner as the judge, temperature 0: an OpenAI-compatible runner (`acall`, concurrent) or a local
    transformers runner (`generate`, batched). Each result goes to `on_result` as soon as it exists."""

    def __init__(self, runner: ModelRunner, max_tokens: int = 512, batch_size: int = 8) -> None:
        self.runner = runner
        self.max_tokens = int(max_tokens)
        self.batch_size = max(1, int(batch_size))
        self.kind = getattr(runner, "kind", type(runner).__name__)

    def identity(self) -> dict[str, Any]:
        ident = dict(self.runner.identity()) if hasattr(self.runner, "identity") else {}
        return {"judge_runner": self.kind, **ident, "prompt_version": JUDGE_PROMPT_VERSION, "temperature": 0.0,
                "max_tokens": self.max_tokens}

    @staticmethod
    def _from_reply(reply: Any) -> Judgement:
        if getattr(reply, "error", None):
            return Judgement("api_error", raw="", reason=str(reply.error)[:2000])
        return parse_judgement(reply.text)

    def judge_many(self, inputs: Iterable[JudgeInput], on_result: Callable[[JudgeInput, Judgement], Any],
                   should_stop: Callable[[], bool] | None = None) -> None:
        todo = list(inputs)
        runner = self.runner
        if isinstance(runner, AsyncRunner):
            run_coroutine(self._async(runner, todo, on_result, should_stop))
            return
        for i in range(0, len(todo), self.batch_size):
            if should_stop is not None and should_stop():
                return
            chunk = todo[i:i + self.batch_size]
            try:
                replies = runner.generate([build_request(x, self.max_tokens) for x in chunk])
            except Exception as exc:  # noqa: BLE001 - a failed batch is recorded per trace, never dropped
                replies = [type("R", (), {"error": f"{type(exc).__name__}: {exc}", "text": ""})()] * len(chunk)
            for inp, reply in zip(chunk, replies, strict=True):
                on_result(inp, self._from_reply(reply))

    async def _async(self, runner: AsyncRunner, todo: Sequence[JudgeInput],
                     on_result: Callable[[JudgeInput, Judgement], Any], should_stop: Callable[[], bool] | None) -> None:
        async def one(inp: JudgeInput) -> tuple[JudgeInput, Judgement]:
            return inp, self._from_reply(await runner.acall(build_request(inp, self.max_tokens)))

        window = max(1, int(getattr(runner, "concurrency", 8))) * 2
        try:
            pending: set[asyncio.Task[Any]] = set()
            it = iter(todo)
            while True:
                while len(pending) < window and not (should_stop is not None and should_stop()):
                    nxt = next(it, None)
                    if nxt is None:
                        break
                    pending.add(asyncio.create_task(one(nxt)))
                if not pending:
                    break
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    on_result(*task.result())
        finally:
            if hasattr(self.runner, "aclose"):
                await self.runner.aclose()


# --------------------------------------------------------------------------- summaries


def summarize(judgements: Iterable[Judgement]) -> dict[str, Any]:
    """Counts by status, inconsistent flag patterns among ok judgements, first-failure histogram, and how
    often the judge's own first_failure disagrees with the S1 -> S4 rule."""
    js = list(judgements)
    ok = [j for j in js if j.status == "ok"]
    hist = {s: 0 for s in (*STAGES, NO_FAILURE)}
    for j in ok:
        hist[j.first_failure or NO_FAILURE] += 1
    return {
        "n": len(js),
        **{s: sum(j.status == s for j in js) for s in STATUSES},
        "inconsistent": sum(j.inconsistent for j in ok),
        "first_failure": hist,
        "stated_first_failure_disagrees": sum(
            1 for j in ok if j.stated_first_failure is not None and j.stated_first_failure != j.first_failure),
    }
