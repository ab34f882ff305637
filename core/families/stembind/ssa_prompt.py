"""StemBind's SSA strategy (002 §3.3, App. C.5): the F items asked with verified stage text injected.

H0 is the raw input, H1..H4 inject the verified S1..S4 text cumulatively, `irrelevant` injects the S1 text of
another stem (a control). A leakage guard removes answer tags and every reference to an option letter or position
from the stage text, and from S1..S3 the option texts a stage singles out; downstream stages are never included.
The run config records the guard's count (`ssa_guard`), which `score` reports (ssa.py). The family declares the
strategy in its `__init__.py` (`SSA`, in `Family.strategies`); generic code never names it.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.errors import RunnerError
from core.families.stembind.vocab import SSA_CHOICES, SSA_CONTROL, STAGE_NAMES, STAGES
from core.parsing import LETTER_FOLLOWERS
from core.prompts import answer_instruction
from core.runners.base import Dialogue, ItemText, ItemView, PromptContext, text_part

if TYPE_CHECKING:
    import pandas as pd

SSA_LEVELS = SSA_CHOICES  # the --ssa-level choices: H0..H4 and the irrelevant-S1 control (002 App. C.5)


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
# words after which a lowercase "a" is the letter, not the English article ("a is correct", "a or b")
_REF_FOLLOWERS = LETTER_FOLLOWERS | frozenset("""is was are fits fit matches match works wins and or nor then seems seem looks appears would
should must might may can could will remains stays has had gives completes satisfies follows holds contains
shows breaks violates differs also too vs versus instead because since but does did doesn't isn't
wasn't cannot can't won't alone only""".split())
# A capital "A" opening a sentence is the letter unless a whole noun phrase follows it: modifiers (a number, "A
# 3x3 grid", "A 90-degree turn"; a word of _MODIFIER_WORDS; a word with an adjective ending, "A diagonal") up to
# a head noun (a word of _NOUN_WORDS, or one with a noun ending after a stem of three letters or more: "A
# rotation", "A black triangle"). What follows decides, whatever the word: an adverb or a verb after the letter
# ("A likewise keeps", "A nevertheless holds", "A further fits", "A keeps", "A clearly fits") reaches no head
# noun, so the letter is withheld. Leaking the answer is the costly error, dropping an article the cheap one
# (002 §3.3, C.5); the lists leave out words that are also verbs or past tenses ("set", "left", "closed").
_NOUN_WORDS = frozenset("""grid row rows column columns panel panels cell cells matrix figure shape shapes pattern
sequence pair copy mirror line dot stroke arrow star square circle triangle ring cross rule step turn shift
count number total object block piece tile part half quarter third layer frame box border outline curve arc
symmetry""".split())
_MODIFIER_WORDS = frozenset("""black white grey gray red blue green yellow small large big tiny single double new
similar different same clockwise counterclockwise anticlockwise horizontal vertical diagonal constant simple open
empty hollow solid dark light inner outer central top bottom upper lower middle full further second""".split())
_NOUN_END = re.compile(r"[a-z]{3}(?:tion|sion|ment|ness|ity|ance|ence|ure|ism|ship|ogy|etry)$")
_MODIFIER_END = re.compile(r"(?:ical|al|ar|ic|ous|ive|ful|less|shaped|sided|fold|wise)$")
_NEXT_WORD = re.compile(r"\s+(\d[\w-]*|[a-z][a-z-]*)")


def _noun_phrase_follows(after: str) -> bool:
    """True when `after` (the text after a capital "A") opens with a noun phrase: modifiers up to a head noun."""
    at = 0
    while (m := _NEXT_WORD.match(after, at)) is not None:
        word = m.group(1)
        if word in _NOUN_WORDS or _NOUN_END.search(word):
            return True
        if not (word[0].isdigit() or word in _MODIFIER_WORDS or _MODIFIER_END.search(word)):
            return False
        at = m.end()
    return False


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
    kinds: list[str] = field(default_factory=list)  # per removal: tag, option text, position or letter


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
            if ch == "A" and opens and _noun_phrase_follows(after):
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


def _option_spans(folded: str, options: dict[str, str]) -> list[tuple[int, int]]:
    """Spans of option texts in `folded` when the text singles some out: it names at least one distinct option
    text but not all of them (naming every option, as an S1 "Each row holds a square, a circle and a triangle"
    does, tells nothing about which is meant). Longer texts claim their span first."""
    texts = sorted({str(o).strip() for o in options.values()}, key=len, reverse=True)
    spans: list[tuple[int, int]] = []
    named = set()
    for opt in texts:
        if len(opt) < 2:
            continue
        pat = re.escape(opt.translate(_FOLD))
        if opt[0].isalnum():
            pat = r"(?<![A-Za-z0-9])" + pat
        if opt[-1].isalnum():
            pat += r"(?![A-Za-z0-9])"
        for m in re.finditer(pat, folded, re.IGNORECASE):
            if not any(a < m.end() and m.start() < b for a, b in spans):
                spans.append(m.span())
                named.add(opt)
    return spans if 0 < len(named) < len(texts) else []


def scrub_stage_text(text: str, options: dict[str, str], letters: str = "", keep_options: bool = False) -> Scrubbed:
    """Stage text without answer tags, any reference to an option letter or an option's position, and (unless
    `keep_options`, the S4 target-instance description) the option texts it singles out; each removal becomes
    WITHHELD and is recorded with its kind.

    `letters`: the item's option letters (default: the keys of `options`). Option texts of at least two
    characters are matched case-insensitively as whole words; they are removed only where the text names some
    options but not all (every option is shown in every rotation, so a text naming all of them keeps them: it
    describes the scene, 002 C.5 forbids the answer and downstream content, not the scene's words)."""
    letters = letters or "".join(options)
    removed: list[str] = []
    kinds: list[str] = []

    def cut(src: str, spans: list[tuple[int, int]], kind: str) -> str:
        pieces, last = [], 0
        for a, b in _merge(spans):
            removed.append(src[a:b])
            kinds.append(kind)
            pieces += [src[last:a], WITHHELD]
            last = b
        return "".join([*pieces, src[last:]])

    out = cut(text, [m.span() for m in _TAG_BLOCK_RE.finditer(text)], "tag")
    out = cut(out, [m.span() for m in _TAG_RE.finditer(out)], "tag")
    if not keep_options:
        out = cut(out, _option_spans(out.translate(_FOLD), options), "option text")
    folded = out.translate(_FOLD)
    spans = [m.span("p") if "p" in r.groupindex else m.span() for r in _POSITION_RES for m in r.finditer(folded)]
    out = cut(out, spans, "position")
    out = cut(out, _letter_spans(out.translate(_FOLD), letters), "letter")
    return Scrubbed(re.sub(r"\s+", " ", out).strip() if removed else out.strip(), removed, kinds)


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
                    ) -> dict[str, Any]:
    """{"items": F items, "text_removed": items whose injected stage text lost something to the guard,
    "removed": {kind: removals} (tag, option text, position, letter)} at `level`; recorded in the run's config
    (one count per item: the guard does not depend on the rotation)."""
    removed = 0
    kinds: dict[str, int] = {}
    for v in views:
        s1 = irrelevant(v) if irrelevant is not None else None
        guarded = [t for _, t in ssa_guarded(v, v.options, level, s1)]
        if any(t.removed for t in guarded):
            removed += 1
        for t in guarded:
            for k in t.kinds:
                kinds[k] = kinds.get(k, 0) + 1
    return {"items": len(views), "text_removed": removed, "removed": dict(sorted(kinds.items()))}


def irrelevant_s1_source(items: pd.DataFrame, seed: int) -> Callable[[ItemView], str | None]:
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


def irrelevant_source(items: pd.DataFrame, level: str | None, seed: int) -> ItemText | None:
    """The strategy's `prepare`: another stem's S1 per item at the irrelevant-S1 control, else nothing."""
    return irrelevant_s1_source(items, seed) if level == SSA_CONTROL else None


def guard_record(items: pd.DataFrame, views: Sequence[ItemView], level: str | None, seed: int) -> dict[str, Any]:
    """The strategy's `run_config`: the leakage guard's count for an SSA run, {"ssa_guard": {"items",
    "text_removed", "removed"}} over every F item of the split that the level can be asked of (not only the
    first --limit ones, so a resumed run keeps its config; 002 C.5, ssa_guard_count)."""
    level = level or "H0"
    needed = () if level == SSA_CONTROL else STAGES[: int(level[1])]
    asked = [v for v in views if all((v.stages or {}).get(st) for st in needed)]  # the others fail when sent
    irrelevant = irrelevant_s1_source(items, seed) if level == SSA_CONTROL else None
    if irrelevant is not None:
        asked = [v for v in asked if irrelevant(v)]
    return {"ssa_guard": ssa_guard_count(asked, level, irrelevant)}


def ssa(ctx: PromptContext) -> Dialogue:
    level = ctx.option or "H0"
    block = ssa_block(ctx.task.view, ctx.task.shown, level, ctx.item_text)
    text = f"Solve the problem. {ctx.q}"
    if block:
        text += f"\n\n{block}"
    text += f"\n\n{answer_instruction('tag', ctx.task.view.letters)}"
    return (yield ctx.call(ctx.imgs + [text_part(text)], f"ssa-{level}", "tag"))
