"""Prompt strategies: how a task becomes one or more model calls (SPEC §6).

Every strategy is a generator `fn(ctx) -> Generator[Request, str, str]`: it yields requests, receives each
reply's text, and returns the final response that the family's parser reads. Prompts are built from an
`ItemView`, which has no gold answer field at all, so no strategy can leak the test answer by construction.

- direct: FrameEvidence / generic / SPUR ask for one letter; StemBind asks for <ANSWER>X</ANSWER> (002 C.1).
- k-shot (direct or thinking, k = 0..3): a fixed, seeded demonstration pool of train groups (000 §6.1 and
  App. A "Few-shot construction"), nested prefixes, FQ1 demos in cam / obj / scene order, FQ2 in mss / del /
  add order, never a group or an image of the evaluated split or of test.
- thinking (002 C.1): same images and answer space, longer reasoning, final choice in <ANSWER>X</ANSWER>.
- SPUR MCoT methods (001 §3.1): DDCoT (decompose -> answer sub-questions -> joint answer, 3 calls), VoT
  (one call, visualize the state after each step), VIC (a text-only reasoning plan written before looking,
  then the plan followed with the images, 2 calls), Cantor (decision generation naming expert sub-tasks ->
  the model acting as those experts -> answer synthesis, 3 calls).
- ssa (002 §3.3, C.5; StemBind F items): H0 raw input, H1..H4 inject verified S1..S4 text cumulatively,
  `irrelevant` injects the S1 text of another stem. A leakage guard removes answer tags and every reference
  to an option letter or position from the stage text, and option texts from S1..S3; downstream stages are
  never included.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from core import families
from core.errors import RunnerError
from core.families.frameevidence.vocab import VARIANTS
from core.families.stembind.vocab import SSA_CHOICES, SSA_CONTROL, STAGE_NAMES, STAGES
from core.parsing import LETTER_FOLLOWERS
from core.runners.base import ItemView, Request, Task, image_part, text_part

STRATEGIES = ("direct", "thinking", "ddcot", "vot", "vic", "cantor", "ssa")
SSA_LEVELS = SSA_CHOICES  # the --ssa-level choices: H0..H4 and the irrelevant-S1 control (002 App. C.5)
DEMO_ORDER = VARIANTS  # 000 App. A
MAX_SHOTS = 3
DEFAULT_MAX_TOKENS = {"direct": 64, "thinking": 2048, "ddcot": 1024, "vot": 2048, "vic": 1024, "cantor": 1024,
                      "ssa": 1024}


def family_style(family: str) -> str:
    """The family's parser style (its `parser`: "tag" for StemBind); "letter" for an unknown family."""
    return families.get(family).parser if families.known(family) else "letter"


def final_style(strategy: str, family: str) -> str:
    """The parser style of a strategy's final response.

    Strategies whose final call holds free reasoning (thinking, VoT, VIC, SSA) ask for <ANSWER>X</ANSWER> in
    every family, since a one-letter parser would read a reasoning trace as conflicting letters; direct and
    the last call of DDCoT / Cantor ask for the family's own format.
    """
    if strategy in ("thinking", "vot", "vic", "ssa"):
        return "tag"
    return family_style(family)


# ---- text blocks --------------------------------------------------------------------------------------


def options_block(shown: dict[str, str]) -> str:
    return "\n".join(f"{letter}. {text}" for letter, text in shown.items())


def question_block(question: str, shown: dict[str, str], hint: Any = None) -> str:
    """The question and its options; an item's `meta.hint` (VLMEvalKit's hint column) goes first, as
    VLMEvalKit's MCQ prompt puts it (vlmeval/dataset/image_mcq.py: "Hint: ...")."""
    head = f"Hint: {hint.strip()}\n" if isinstance(hint, str) and hint.strip() else ""
    return f"{head}{question.strip()}\n\nOptions:\n{options_block(shown)}"


def answer_instruction(style: str, letters: str) -> str:
    listed = ", ".join(letters)
    if style == "tag":
        return f"Give your final choice as <ANSWER>X</ANSWER>, where X is one of {listed}."
    return f"Answer with the letter of the correct option only ({listed})."


def formatted_answer(style: str, letter: str) -> str:
    return f"<ANSWER>{letter}</ANSWER>" if style == "tag" else letter


def image_parts(images: list[Any]) -> list[dict[str, Any]]:
    """Images in order; with several, each is labelled "Image i:" so that ordinal references resolve."""
    if len(images) <= 1:
        return [image_part(p) for p in images]
    parts: list[dict[str, Any]] = []
    for i, p in enumerate(images, 1):
        parts += [text_part(f"Image {i}:"), image_part(p)]
    return parts


def user(parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": "user", "content": parts}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [text_part(text)]}


# ---- k-shot demonstration pool --------------------------------------------------------------------------


@dataclass(slots=True)
class Demo:
    """One demonstration: a train item shown in original option order with its gold letter."""

    view: ItemView
    answer: str


def demo_order_key(kind: str, variant: str, item_id: str) -> tuple[int, str]:
    order = DEMO_ORDER.get(kind)
    if order and variant in order:
        return (order.index(variant), item_id)
    return (len(order or ()), item_id)


def build_demo_pool(items: Any, seed: int, split: str, view_of: Callable[[Any], ItemView],
                    size: int = MAX_SHOTS) -> dict[str, list[Demo]]:
    """Per item kind, up to `size` demonstrations from train groups chosen with `seed`.

    Candidate groups lie wholly in the train split, share no group id with the evaluated split or test, and
    share no image with any item of those splits. Per kind, candidate groups are shuffled with
    random.Random(f"{seed}:{kind}") and demos are taken from the first group in variant order (FQ1 cam / obj /
    scene, FQ2 mss / del / add, otherwise item id), continuing into the next group only when one group has
    fewer than `size` items of that kind. The pool does not depend on k, so 1-, 2- and 3-shot take nested
    prefixes of the same list.
    """
    held_out = items[items["split"].isin({split, "test"})]
    bad_groups = set(held_out["group_id"])
    bad_images = {h for imgs in held_out["images"] for h in imgs}
    train = items[items["split"] == "train"]
    ok_groups = []
    for gid, g in train.groupby("group_id", sort=True):
        if gid in bad_groups or set(items.loc[items["group_id"] == gid, "split"]) != {"train"}:
            continue
        if any(h in bad_images for imgs in g["images"] for h in imgs):
            continue
        ok_groups.append(str(gid))
    pool: dict[str, list[Demo]] = {}
    for kind in sorted(set(train["kind"])):
        groups = [gid for gid in ok_groups if ((train["group_id"] == gid) & (train["kind"] == kind)).any()]
        random.Random(f"{seed}:{kind}").shuffle(groups)
        demos: list[Demo] = []
        for gid in groups:
            rows = train[(train["group_id"] == gid) & (train["kind"] == kind)]
            rows = sorted((r for _, r in rows.iterrows()),
                          key=lambda r: demo_order_key(kind, str(r["variant"]), str(r["item_id"])))
            demos += [Demo(view_of(r), str(r["answer"])) for r in rows]
            if len(demos) >= size:
                break
        pool[kind] = demos[:size]
    return pool


def demo_messages(demos: list[Demo], style: str, input_mode: str) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = []
    for d in demos:
        imgs = select_images(d.view.images, input_mode)
        text = question_block(d.view.question, d.view.options, d.view.meta.get("hint")) + "\n\n" + answer_instruction(style, d.view.letters)
        msgs += [user(image_parts(imgs) + [text_part(text)]), assistant(formatted_answer(style, d.answer))]
    return msgs


def select_images(images: list[Any], input_mode: str) -> list[Any]:
    if input_mode == "all":
        return list(images)
    if input_mode == "first":
        return list(images[:1])
    if input_mode == "text":
        return []
    raise RunnerError(f"unknown input mode {input_mode!r}; expected all, first or text")


# ---- SSA (002 §3.3, C.5): leakage guard ---------------------------------------------------------------
#
# "No condition includes the answer letter or downstream content." The prompt builder never sees the gold
# letter, so the guard removes every reference to any option letter, in every phrasing an annotator uses:
# bare letters ("..., candidate C.", "C is correct", "选C", "C项"), bracketed ones ("(C)", "[C]", "（Ｃ）",
# "Ⓒ"), lowercase ones next to a cue word ("option c"), position words ("the third option", "option 3",
# "第三个选项") and answer tags. Full-width and circled letters are matched as their ASCII letters. The option
# texts themselves are removed from S1..S3 (and the irrelevant-S1 control), where naming the target instance
# would be downstream (S4) content; S4 is the target-instance description and keeps it (only the letter goes).

WITHHELD = "[withheld]"
_TAG_BLOCK_RE = re.compile(r"<\s*answer\s*>.*?<\s*/\s*answer\s*>", re.IGNORECASE | re.DOTALL)
_TAG_RE = re.compile(r"<\s*/?\s*answer\s*>", re.IGNORECASE)
# one-to-one character map for matching (indices are kept, so spans apply to the original text)
_FOLD = {**{0xFF01 + i: 0x21 + i for i in range(0x5E)},  # full-width ASCII: Ａ -> A, （ -> (
         **{0x24B6 + i: 0x41 + i for i in range(26)},   # circled capitals: Ⓒ -> C
         **{0x24D0 + i: 0x61 + i for i in range(26)},   # circled small letters: ⓒ -> c
         **{0x249C + i: 0x61 + i for i in range(26)},   # parenthesized small letters: ⒞ -> c
         0x3010: 0x5B, 0x3011: 0x5D, 0x3014: 0x5B, 0x3015: 0x5D, 0x300C: 0x5B, 0x300D: 0x5D}  # 【】〔〕「」
_EN_CUE = (r"candidates?|options?|choices?|answers?|alternatives?|letters?|picks?|picked|choose|chose|chosen|"
           r"selects?|selected|select|go(?:es)?\s+with|went\s+with|opt(?:s|ed)?\s+for|mark(?:ed)?|circle[sd]?")
_CUE_BEFORE_RE = re.compile(
    rf"(?:\b(?:{_EN_CUE})\b|选项|选择|答案|应选|故选|候选项?|选)\s*(?:(?:is|are|was|would\s+be|should\s+be|must\s+be|"
    r"be|no\.?|number|#|=|:|-|是|为|應|应为|应该是)\s*)*[(\[<]?\s*$", re.IGNORECASE)
# words after which a capital "A" is the letter, not the English article ("A is correct", "A or B")
_REF_FOLLOWERS = LETTER_FOLLOWERS | frozenset("""is was are fits fit matches match works wins and or nor then seems seem looks appears would
should must might may can could will remains stays has had gives completes satisfies follows holds contains
shows breaks violates differs also too vs versus instead because since but does did doesn't isn't
wasn't cannot can't won't alone only""".split())
_ORDINALS = (r"first|second|third|fourth|fifth|sixth|seventh|eighth|1st|2nd|3rd|4th|5th|6th|7th|8th|last|final|"
             r"leftmost|rightmost|top|bottom|middle|penultimate|second[-\s]to[-\s]last|next[-\s]to[-\s]last")
_NUMBER_WORDS = r"one|two|three|four|five|six|seven|eight"
_OPT_NOUN = r"(?:options?|candidates?|choices?|answers?|alternatives?)"
_POSITION_RES = [
    re.compile(rf"\b(?:the\s+)?(?:{_ORDINALS})\s+(?:one\s+|listed\s+)?{_OPT_NOUN}\b", re.IGNORECASE),
    re.compile(rf"\b(?:options?|candidates?|choices?|alternatives?)\s*(?:no\.?|number|#)?\s*"
               rf"(?:\d+|{_NUMBER_WORDS})\b(?![.,]\d)", re.IGNORECASE),
    re.compile(r"\banswers?\s*(?:no\.?|number|#)\s*\d+\b", re.IGNORECASE),
    re.compile(r"(?:倒数)?第\s*[一二三四五六七八1-8]\s*(?:个|項|项)?\s*(?:选项|候选项?|答案|选择|项|項)"),
    re.compile(r"(?:选|选择|答案是|答案为|应选|故选)\s*(?P<p>(?:倒数)?第\s*[一二三四五六七八1-8]\s*(?:个|项|項)?)"),
    re.compile(r"最后一\s*(?:个|项)\s*(?:选项|候选项?)?"),
]


@dataclass(slots=True)
class Scrubbed:
    """A stage text after the leakage guard, and what the guard removed."""

    text: str
    removed: list[str] = field(default_factory=list)


def _letter_spans(folded: str, letters: str) -> list[tuple[int, int]]:
    """Spans of every reference to an option letter in `folded` (the case-folded-width copy of a text)."""
    upper = "".join(sorted({c.upper() for c in letters if c.isascii() and c.isalpha()}))
    if not upper:
        return []
    cls = re.escape(upper)
    spans: list[tuple[int, int]] = []
    # (C), [C], <C>, (c): the brackets go with the letter
    for m in re.finditer(rf"[(\[<]\s*[{cls}]\s*[)\]>]", folded, re.IGNORECASE):
        spans.append(m.span())
    # "C)" / "C]" opening an enumeration: the closing bracket goes too
    for m in re.finditer(rf"(?<![A-Za-z0-9(\[<])[{cls}]\s*[)\]]", folded, re.IGNORECASE):
        spans.append(m.span())
    # a letter standing alone (touching no Latin letter or digit)
    for m in re.finditer(rf"(?<![A-Za-z0-9])([{cls}])(?![A-Za-z0-9])", folded, re.IGNORECASE):
        ch, (i, j) = m.group(1), m.span()
        before, after = folded[:i], folded[j:]
        cue = _CUE_BEFORE_RE.search(before[-40:]) is not None
        word = re.match(r"\s+([a-z][a-z']*|\d)", after)
        # the article: a lowercase "a", or a capital "A" opening a sentence or a clause ("Encode: A 3x3 grid"),
        # before a word that does not make it the letter ("A is", "A and", "A fits")
        opens = ch == "a" or re.search(r"(?:^|[.!?:;。！？：；\n(\[\"'“‘-]|\d\.)\s*$", before) is not None
        article = opens and word is not None and word.group(1) not in _REF_FOLLOWERS
        if ch == "a" and article:
            continue  # "answer a question", "pick a shape": the article
        if ch.islower() and not cue and not re.match(r"\s*\)", after):
            continue  # a lowercase letter counts only after a cue word or as "c)"
        if not cue:
            if re.match(r"-[A-Za-z]", after) or re.search(r"\d-$", before):
                continue  # a shape word ("C-shaped", "an E-shaped block") or a dimension ("3-D")
            if ch == "A" and article:
                continue  # the English article: "A 3x3 grid", "A rotation ..."
        spans.append((i, j))
    return spans


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def scrub_stage_text(text: str, options: dict[str, str], letters: str = "", keep_options: bool = False) -> Scrubbed:
    """Stage text without answer tags, any reference to an option letter or an option's position, and (unless
    `keep_options`, the S4 target-instance description) any option's text; each removal becomes WITHHELD.

    `letters`: the item's option letters (default: the keys of `options`). Option texts of at least two
    characters are removed wherever they appear, matched case-insensitively (every option is shown in every
    rotation, so removing all of them tells nothing about which one is meant)."""
    letters = letters or "".join(options)
    removed: list[str] = []

    def cut(src: str, spans: list[tuple[int, int]]) -> str:
        pieces, last = [], 0
        for a, b in _merge(spans):
            removed.append(src[a:b])
            pieces += [src[last:a], WITHHELD]
            last = b
        return "".join([*pieces, src[last:]])

    out = cut(text, [m.span() for m in _TAG_BLOCK_RE.finditer(text)])
    out = cut(out, [m.span() for m in _TAG_RE.finditer(out)])
    if not keep_options:
        spans = []
        folded = out.translate(_FOLD)
        for opt in sorted({str(o).strip() for o in options.values()}, key=len, reverse=True):
            if len(opt) >= 2:
                pat = re.escape(opt.translate(_FOLD))
                if opt[0].isalnum():
                    pat = r"(?<![A-Za-z0-9])" + pat
                if opt[-1].isalnum():
                    pat += r"(?![A-Za-z0-9])"
                spans += [m.span() for m in re.finditer(pat, folded, re.IGNORECASE)]
        out = cut(out, spans)
    folded = out.translate(_FOLD)
    spans = [m.span("p") if "p" in r.groupindex else m.span() for r in _POSITION_RES for m in r.finditer(folded)]
    out = cut(out, spans)
    out = cut(out, _letter_spans(out.translate(_FOLD), letters))
    return Scrubbed(re.sub(r"\s+", " ", out).strip() if removed else out.strip(), removed)


def ssa_stage_texts(view: ItemView, level: str, irrelevant_s1: str | None) -> list[tuple[str, str]]:
    """The (stage, text) pairs injected at `level`: H0 none, Hk stages S1..Sk, irrelevant another stem's S1."""
    if level not in SSA_LEVELS:
        raise RunnerError(f"unknown SSA level {level!r}; expected one of {', '.join(SSA_LEVELS)}")
    if level == SSA_CONTROL:
        if not irrelevant_s1:
            raise RunnerError(f"item {view.item_id}: no other stem's S1 text for the irrelevant-S1 control")
        return [("S1", irrelevant_s1)]
    n = int(level[1])
    stages = view.stages or {}
    out = []
    for s in STAGES[:n]:
        if not stages.get(s):
            raise RunnerError(f"item {view.item_id}: SSA level {level} needs stage {s}, which the item lacks")
        out.append((s, stages[s]))
    return out


def ssa_guarded(view: ItemView, shown: dict[str, str], level: str, irrelevant_s1: str | None
                ) -> list[tuple[str, Scrubbed]]:
    """The injected (stage, scrubbed text) pairs at `level` (S4 keeps the target-instance description)."""
    options = {**view.options, **shown}
    return [(s, scrub_stage_text(t, options, view.letters, keep_options=(s == "S4" and level != SSA_CONTROL)))
            for s, t in ssa_stage_texts(view, level, irrelevant_s1)]


def ssa_block(view: ItemView, shown: dict[str, str], level: str, irrelevant_s1: str | None) -> str:
    """The verified-analysis text injected before the question (empty at H0)."""
    pairs = ssa_guarded(view, shown, level, irrelevant_s1)
    if not pairs:
        return ""
    lines = [f"{s} ({STAGE_NAMES[s]}): {t.text}" for s, t in pairs]
    return "Verified analysis so far (continue from here):\n" + "\n".join(lines)


def ssa_guard_count(views: list[ItemView], level: str, irrelevant: Callable[[ItemView], str | None] | None
                    ) -> dict[str, int]:
    """{"items": F items, "text_removed": items whose injected stage text lost something to the guard} at
    `level`; recorded in the run's config (one count per item: the guard does not depend on the rotation)."""
    removed = 0
    for v in views:
        s1 = irrelevant(v) if irrelevant is not None else None
        if any(t.removed for _, t in ssa_guarded(v, v.options, level, s1)):
            removed += 1
    return {"items": len(views), "text_removed": removed}


def irrelevant_s1_source(items: Any, seed: int) -> Callable[[ItemView], str | None]:
    """For the irrelevant-S1 control: a seeded pick of another stem's S1 text (an F item of another group)."""
    pool = [(str(r["group_id"]), str(r["item_id"]), r["stages"]["S1"]) for _, r in items.iterrows()
            if isinstance(r["stages"], dict) and r["stages"].get("S1")]
    pool.sort(key=lambda x: x[1])

    def pick(view: ItemView) -> str | None:
        others = [s1 for gid, _, s1 in pool if gid != view.group_id]
        if not others:
            return None
        return random.Random(f"{seed}:irrelevant:{view.item_id}").choice(others)

    return pick


# ---- strategies -----------------------------------------------------------------------------------------


@dataclass(slots=True)
class PromptContext:
    """Everything a strategy needs for one task."""

    task: Task
    family: str
    max_tokens: int
    temperature: float = 0.0
    demos: list[Demo] = field(default_factory=list)
    input_mode: str = "all"
    ssa_level: str = "H0"
    irrelevant_s1: str | None = None
    want_probs: bool = False

    def call(self, parts: list[dict[str, Any]], stage: str, style: str | None = None,
             history: list[dict[str, Any]] | None = None) -> Request:
        probs_after = None
        if self.want_probs and style is not None:
            probs_after = "<ANSWER>" if style == "tag" else ""
        return Request(messages=[*(history or []), user(parts)], max_tokens=self.max_tokens,
                       temperature=self.temperature, letters=self.task.view.letters, probs_after=probs_after,
                       stage=stage)

    @property
    def q(self) -> str:
        return question_block(self.task.view.question, self.task.shown, self.task.view.meta.get("hint"))

    @property
    def imgs(self) -> list[dict[str, Any]]:
        return image_parts(self.task.images)


Dialogue = Generator[Request, str, str]


def direct(ctx: PromptContext) -> Dialogue:
    style = family_style(ctx.family)
    lead = "Solve the problem. " if style == "tag" else ""
    history = demo_messages(ctx.demos, style, ctx.input_mode)
    text = f"{lead}{ctx.q}\n\n{answer_instruction(style, ctx.task.view.letters)}"
    return (yield ctx.call(ctx.imgs + [text_part(text)], "answer", style, history))


def thinking(ctx: PromptContext) -> Dialogue:
    history = demo_messages(ctx.demos, "tag", ctx.input_mode)
    text = (f"{ctx.q}\n\nThink through the problem step by step before answering; take as long as you need. "
            f"{answer_instruction('tag', ctx.task.view.letters)}")
    return (yield ctx.call(ctx.imgs + [text_part(text)], "thinking", "tag", history))


def ddcot(ctx: PromptContext) -> Dialogue:
    sub = yield ctx.call(ctx.imgs + [text_part(
        f"{ctx.q}\n\nDo not answer the question yet. Decompose it into the sub-questions that must be answered "
        "first. Number them, and mark each sub-question that needs information from the image(s) with "
        "[visual].")], "decompose")
    subs = yield ctx.call(ctx.imgs + [text_part(
        f"Question:\n{ctx.q}\n\nSub-questions:\n{sub}\n\nAnswer each sub-question briefly using the image(s). "
        "If the image(s) do not show the needed information, answer 'uncertain' rather than guessing. "
        "Do not answer the main question.")], "sub-answers")
    style = family_style(ctx.family)
    return (yield ctx.call(ctx.imgs + [text_part(
        f"{ctx.q}\n\nSub-questions and answers (they may contain errors; check them against the image(s)):\n"
        f"{sub}\n{subs}\n\nThink jointly about this rationale and the image(s). "
        f"{answer_instruction(style, ctx.task.view.letters)}")], "answer", style))


def vot(ctx: PromptContext) -> Dialogue:
    return (yield ctx.call(ctx.imgs + [text_part(
        f"{ctx.q}\n\nReason step by step. After each reasoning step, visualize the current state: describe "
        "(or draw in text) what the relevant part of the figure looks like at that point, then continue. "
        f"{answer_instruction('tag', ctx.task.view.letters)}")], "answer", "tag"))


def vic(ctx: PromptContext) -> Dialogue:
    plan = yield ctx.call([text_part(
        f"{ctx.q}\n\nYou cannot see the image(s) yet. Before looking, write a numbered chain of reasoning "
        "steps (a plan) that would answer this question: which visual evidence to extract and how to combine "
        "it. Do not answer the question.")], "plan")
    return (yield ctx.call(ctx.imgs + [text_part(
        f"{ctx.q}\n\nReasoning plan written before looking at the image(s):\n{plan}\n\nFollow the plan step by "
        f"step using the image(s). {answer_instruction('tag', ctx.task.view.letters)}")], "answer", "tag"))


CANTOR_EXPERTS = (
    "TextIntel Extractor (reads text, labels and numbers in the figure)",
    "ObjectQuant Locator (locates and counts objects or panels)",
    "VisionIQ Analyst (describes visual content and relations)",
    "ChartSense Expert (reads charts, axes, bars and trends)",
)


def cantor(ctx: PromptContext) -> Dialogue:
    experts = "\n".join(f"- {e}" for e in CANTOR_EXPERTS)
    decision = yield ctx.call(ctx.imgs + [text_part(
        f"{ctx.q}\n\nAs a decision generator, analyse what this question requires and what the image(s) "
        f"contain. Then assign sub-tasks to the experts below that are needed, one line each, as "
        f"'Expert: sub-task'. Do not answer the question.\nExperts:\n{experts}")], "decision")
    findings = yield ctx.call(ctx.imgs + [text_part(
        f"Question:\n{ctx.q}\n\nSub-tasks assigned to experts:\n{decision}\n\nAct as each named expert in turn and "
        "carry out its sub-task on the image(s), reporting only what you observe.")], "experts")
    style = family_style(ctx.family)
    return (yield ctx.call(ctx.imgs + [text_part(
        f"{ctx.q}\n\nDecision analysis:\n{decision}\n\nExpert findings:\n{findings}\n\nSynthesize the analysis "
        f"and the findings into an answer. {answer_instruction(style, ctx.task.view.letters)}")], "answer",
        style))


def ssa(ctx: PromptContext) -> Dialogue:
    block = ssa_block(ctx.task.view, ctx.task.shown, ctx.ssa_level, ctx.irrelevant_s1)
    text = f"Solve the problem. {ctx.q}"
    if block:
        text += f"\n\n{block}"
    text += f"\n\n{answer_instruction('tag', ctx.task.view.letters)}"
    return (yield ctx.call(ctx.imgs + [text_part(text)], f"ssa-{ctx.ssa_level}", "tag"))


STRATEGY_FUNCS: dict[str, Callable[[PromptContext], Dialogue]] = {
    "direct": direct, "thinking": thinking, "ddcot": ddcot, "vot": vot, "vic": vic, "cantor": cantor, "ssa": ssa,
}
# Strategies whose (final) response is a free reasoning trace worth keeping for the L2 judge.
TRACE_STRATEGIES = ("thinking", "vot", "vic", "ssa", "ddcot", "cantor")


def dialogue(strategy: str, ctx: PromptContext) -> Dialogue:
    try:
        fn = STRATEGY_FUNCS[strategy]
    except KeyError:
        raise RunnerError(f"unknown strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}") from None
    return fn(ctx)


def render_text(request: Request) -> str:
    """A request as plain text with <image:NAME> markers (for tests, logs and the GUI's prompt preview)."""
    out = []
    for m in request.messages:
        body = "".join(p["text"] if p["type"] == "text" else f"<image:{p['path'].name}>" for p in m["content"])
        out.append(f"[{m['role']}] {body}")
    return "\n".join(out)
