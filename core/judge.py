"""The L2 trace judge (paper 002 §3.3, §4.4, App. C.3): prompt, output parsing, first failure, lexical baseline.

A judge reads one free trace of a judged item (StemBind: the F item), the model's final answer, the item's
ground-truth stage targets (StemBind: S1 Encode, S2 Infer, S3 Map, S4 Apply, 002 §3.1) and task metadata, and
says for each stage whether the trace gets it right. Everything that names the stages comes from the family's
`StageJudging` (core.families.stage_judging), carried by each `JudgeInput` and `Judgement`: the stage keys and
names, the prompt pieces, the first-failure rule. The first failure is derived, never asked for: the first
stage marked false walking the stages in order (C.3). A flag pattern with a true stage after a false one is
*inconsistent* (counted, not fixed).

Judges:

- `ModelJudge` wraps any runner of core/runners (OpenAI-compatible `acall`, local transformers `generate`)
  at temperature 0 with the family's system prompt + `build_prompt(...)`;
- `LexicalJudge` needs no model: content-token overlap of the trace with each stage target (a cheap
  baseline, and a real-code test double);
- `make_judge(JudgeSpec(...))` builds either from plain settings (the CLI's and the Calibration tab's).

`parse_judgement` is strict: the judge must give every stage as 0/1 (or true/false); anything else is
status "malformed" with the raw text kept and no flag filled in. A failed call is status "api_error" (retried
on the next run). Pure: no SQL, no UI.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.errors import CrosscheckError
from core.families.stage_judging import StageJudging
from core.runners.base import AsyncRunner, ModelRunner, Reply, run_coroutine

__all__ = [
    "JudgeInput", "Judgement", "build_prompt", "parse_judgement", "split_steps", "LexicalJudge", "ModelJudge",
    "summarize",
]

STATUSES = ("ok", "malformed", "api_error")

@dataclass(slots=True)
class JudgeInput:
    """One trace to judge: its key, the trace text, the final answer, the judged item's stage targets and
    metadata, and its family's stage judging."""

    item_id: str
    trace: str
    final_answer: str | None
    stages: dict[str, str]
    rotation: int = 0
    repeat: int = 0
    question: str = ""
    options: dict[str, str] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    judging: StageJudging = field(kw_only=True)

    @property
    def key(self) -> tuple[str, int, int]:
        return (self.item_id, self.rotation, self.repeat)


@dataclass(slots=True)
class Judgement:
    """A judge's verdict on one trace. `flags` (one per stage of `judging`) are None unless status is ok."""

    status: str  # ok | malformed | api_error
    flags: dict[str, bool | None] = field(default_factory=dict)
    raw: str = ""
    reason: str | None = None  # why malformed / the api error
    stated_first_failure: str | None = None  # what the judge said (the stored one is always derived)
    judging: StageJudging = field(kw_only=True)

    def __post_init__(self) -> None:
        self.flags = {s: self.flags.get(s) for s in self.judging.stages}

    @property
    def first_failure(self) -> str | None:
        return self.judging.first_failure(self.flags.values()) if self.status == "ok" else None

    @property
    def inconsistent(self) -> bool:
        return self.status == "ok" and self.judging.inconsistent(self.flags.values())

    def flag_values(self) -> list[int | None]:
        return [None if v is None else int(bool(v)) for v in self.flags.values()]


# --------------------------------------------------------------------------- the prompt


def build_prompt(inp: JudgeInput) -> str:
    """The user message of the L2 judge, from the pieces of the input's stage judging (its `prompt_version`;
    StemBind's is documented in docs/JUDGE.md)."""
    jd = inp.judging
    meta = {k: v for k, v in (inp.meta or {}).items() if k in jd.prompt_meta}
    parts = ["Task metadata: " + (json.dumps(meta, ensure_ascii=False, sort_keys=True) if meta else "(none)")]
    if inp.question:
        parts.append("Question: " + inp.question)
    if inp.options:
        parts.append("Options:\n" + "\n".join(f"{k}. {v}" for k, v in inp.options.items()))
    parts.append("Ground-truth stage targets:\n" + "\n".join(
        f"{s} ({jd.stage_names[s]}): {inp.stages.get(s, '(no target)')}" for s in jd.stages))
    parts.append("How to grade each stage:\n" + "\n".join(jd.stage_rules[s] for s in jd.stages))
    parts.append("Model trace:\n<<<TRACE\n" + (inp.trace or "") + "\nTRACE>>>")
    parts.append("Model final answer: " + (inp.final_answer or "(none: no valid final answer)"))
    parts.append(jd.output_spec)
    return "\n\n".join(parts)


def build_request(inp: JudgeInput, max_tokens: int = 512) -> Any:
    """A runner `Request` (core.runners.base) for one judge call, at temperature 0."""
    from core.runners.base import Request, text_part

    return Request(messages=[{"role": "system", "content": [text_part(inp.judging.system_prompt)]},
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


@functools.lru_cache(maxsize=8)
def _line_pattern(stages: tuple[str, ...]) -> re.Pattern[str]:
    """`S1: 1`-style lines (any of `stages`, any case, optional bullets / bold / a name before the colon)."""
    keys = "|".join(re.escape(s) for s in stages)
    return re.compile(rf"^\s*[*\-]*\s*\**\s*({keys})\b[^:=\n]*[:=]\s*\**\s*([A-Za-z0-9]+)",
                      re.IGNORECASE | re.MULTILINE)


def parse_judgement(text: str | None, judging: StageJudging) -> Judgement:
    """Read a judge reply. ok needs every stage of `judging` as 0/1 (JSON object, or one `S1: 1` line per
    stage); otherwise the judgement is malformed and no flag is filled in (never guessed)."""
    raw = text or ""
    stages = judging.stages

    def malformed(reason: str) -> Judgement:
        return Judgement("malformed", raw=raw, reason=reason, judging=judging)

    if not raw.strip():
        return malformed("empty reply")
    candidates = []
    for obj in _json_objects(raw):
        keys = {str(k).strip().upper(): v for k, v in obj.items()}
        if any(s in keys for s in stages):
            candidates.append(keys)
    if candidates:
        parsed = []
        for keys in candidates:
            missing = [s for s in stages if s not in keys]
            if missing:
                return malformed(f"stage(s) {', '.join(missing)} missing")
            flags = {s: _flag_value(keys[s]) for s in stages}
            bad = [s for s in stages if flags[s] is None]
            if bad:
                return malformed(f"{bad[0]} is {keys[bad[0]]!r:.40}, expected 0 or 1")
            stated = keys.get("FIRST_FAILURE")
            parsed.append((flags, None if stated is None else str(stated).strip()))
        if any(p[0] != parsed[0][0] for p in parsed[1:]):
            return malformed("several JSON verdicts that disagree")
        flags, stated = parsed[-1]
        return Judgement("ok", flags=flags, raw=raw, stated_first_failure=_norm_stage(stated, judging),
                         judging=judging)
    lines: dict[str, list[str]] = {}
    for m in _line_pattern(stages).finditer(raw):
        lines.setdefault(m.group(1).upper(), []).append(m.group(2))
    if lines:
        missing = [s for s in stages if s not in lines]
        if missing:
            return malformed(f"stage(s) {', '.join(missing)} missing")
        flags = {}
        for s in stages:
            vals = {_flag_value(v) for v in lines[s]}
            if len(vals) != 1 or None in vals:
                return malformed(f"{s} has no single 0/1 value")
            flags[s] = vals.pop()
        return Judgement("ok", flags=flags, raw=raw, judging=judging)
    return malformed(f"no JSON object with {stages[0]}-{stages[-1]} and no '{stages[0]}: 0/1' lines")


def _norm_stage(value: str | None, judging: StageJudging) -> str | None:
    if value is None:
        return None
    v = value.strip().upper()
    return v if v in judging.stages else (judging.no_failure if v.lower() in ("none", "null", "") else value)


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
    `threshold` of the stage target's content tokens. The answer stage (StemBind's S4) also needs the final
    answer to equal the option letter its target names, when it names one. Deterministic; `raw` holds the per-stage recall."""

    kind = "lexical"

    def __init__(self, threshold: float = 0.5) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError("the lexical judge's threshold must be in (0, 1]")
        self.threshold = float(threshold)

    def identity(self, judging: StageJudging | None = None) -> dict[str, Any]:
        return {"judge_runner": "lexical", "model": "lexical-overlap", "threshold": self.threshold}

    def recall(self, target: str | None, trace: str | None) -> float | None:
        want = set(content_tokens(target))
        if not want:
            return None
        steps = [set(content_tokens(s)) for s in split_steps(trace)]
        windows = steps + [a | b for a, b in zip(steps, steps[1:], strict=False)]
        return max((len(want & w) / len(want) for w in windows), default=0.0)

    def judge(self, inp: JudgeInput) -> Judgement:
        jd = inp.judging
        scores: dict[str, float | None] = {}
        flags: dict[str, bool | None] = {}
        for s in jd.stages:
            r = self.recall(inp.stages.get(s), inp.trace)
            scores[s] = None if r is None else round(r, 4)
            flags[s] = None if r is None else r >= self.threshold
        letter = target_letter(inp.stages.get(jd.answer_stage)) if jd.answer_stage else None
        if letter is not None and jd.answer_stage:
            flags[jd.answer_stage] = (inp.final_answer or "").strip().upper() == letter
        if any(flags[s] is None for s in jd.stages):
            missing = [s for s in jd.stages if flags[s] is None]
            return Judgement("malformed", raw=json.dumps({"recall": scores}),
                             reason=f"no target text for {', '.join(missing)}", judging=jd)
        raw = json.dumps({**{s: int(bool(flags[s])) for s in jd.stages}, "recall": scores,
                          "s4_letter": letter, "threshold": self.threshold})
        return Judgement("ok", flags=flags, raw=raw, judging=jd)

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
        self.kind = runner.kind

    def identity(self, judging: StageJudging | None = None) -> dict[str, Any]:
        """The judge run's config: the runner's identity, the prompt version of `judging`'s prompt."""
        ident = dict(self.runner.identity())
        version = None if judging is None else judging.prompt_version
        return {"judge_runner": self.kind, **ident, "prompt_version": version, "temperature": 0.0,
                "max_tokens": self.max_tokens}

    @staticmethod
    def _from_reply(reply: Reply, judging: StageJudging) -> Judgement:
        if reply.error:
            return Judgement("api_error", raw="", reason=str(reply.error)[:2000], judging=judging)
        return parse_judgement(reply.text, judging)

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
                replies = [Reply(error=f"{type(exc).__name__}: {exc}")] * len(chunk)
            for inp, reply in zip(chunk, replies, strict=True):
                on_result(inp, self._from_reply(reply, inp.judging))

    async def _async(self, runner: AsyncRunner, todo: Sequence[JudgeInput],
                     on_result: Callable[[JudgeInput, Judgement], Any], should_stop: Callable[[], bool] | None) -> None:
        async def one(inp: JudgeInput) -> tuple[JudgeInput, Judgement]:
            return inp, self._from_reply(await runner.acall(build_request(inp, self.max_tokens)), inp.judging)

        window = max(1, int(runner.concurrency)) * 2
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
            await self.runner.aclose()


# --------------------------------------------------------------------------- summaries


JUDGE_RUNNERS = ("lexical", "openai", "transformers")


@dataclass(frozen=True, slots=True)
class JudgeSpec:
    """Which judge to build and how it calls its model (`app.py judge`'s options, the Calibration tab's form):
    `runner` is one of JUDGE_RUNNERS; `threshold` is the lexical judge's; `base_url`, `api_key_env` (the
    variable's name, never the key), `concurrency`, `timeout` and `max_retries` the endpoint's; `model` the
    endpoint's model id or the local checkpoint folder; `batch_size` and `chat_template` the local model's."""

    runner: str
    threshold: float = 0.5
    base_url: str | None = None
    model: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = 8
    timeout: float = 120.0
    max_retries: int = 5
    max_tokens: int = 512
    batch_size: int = 8
    chat_template: str | None = None


def make_judge(spec: JudgeSpec) -> LexicalJudge | ModelJudge:
    """The judge `spec` names; a model judge's runner is imported here, when one is asked for."""
    if spec.runner == "lexical":
        return LexicalJudge(threshold=spec.threshold)
    if spec.runner == "openai":
        from core.runners.openai_runner import OpenAIRunner

        runner = OpenAIRunner(spec.base_url, spec.model or "", api_key_env=spec.api_key_env, concurrency=spec.concurrency,
                              timeout=spec.timeout, max_retries=spec.max_retries)
        return ModelJudge(runner, max_tokens=spec.max_tokens)
    if not spec.model:
        raise CrosscheckError("--judge-runner transformers needs --model CHECKPOINT_DIR")
    from core.runners.transformers_runner import TransformersRunner

    local = TransformersRunner(spec.model, chat_template=spec.chat_template)
    return ModelJudge(local, max_tokens=spec.max_tokens, batch_size=spec.batch_size)


def summarize(judgements: Iterable[Judgement], judging: StageJudging) -> dict[str, Any]:
    """Counts by status, inconsistent flag patterns among ok judgements, first-failure histogram, and how
    often the judge's own first_failure disagrees with the stage-order rule."""
    js = list(judgements)
    ok = [j for j in js if j.status == "ok"]
    hist = {s: 0 for s in (*judging.stages, judging.no_failure)}
    for j in ok:
        hist[j.first_failure or judging.no_failure] += 1
    return {
        "n": len(js),
        **{s: sum(j.status == s for j in js) for s in STATUSES},
        "inconsistent": sum(j.inconsistent for j in ok),
        "first_failure": hist,
        "stated_first_failure_disagrees": sum(
            1 for j in ok if j.stated_first_failure is not None and j.stated_first_failure != j.first_failure),
    }
