"""Answer parsers (SPEC §4) and the option-rotation convention (SPEC §3).

Two styles:

- ``letter`` (FrameEvidence, paper 000 App. A "Decoding and invalid answers"): extract one allowed letter
  from the whole response; no allowed letter or conflicting letters -> ``invalid``.
- ``tag`` (StemBind, paper 002 App. C.2): ``<ANSWER>X</ANSWER>`` first; without the tag, fall back only to a
  unique unambiguous letter in the final response; several letters, no final choice or malformed output
  -> ``invalid``.

Both styles return ``("api_error", None)`` for a missing or empty response (an empty response from a failed
call). An invalid response is never turned into a guess.

Letter style reads the last committed answer: the response is cut before each self-correction that opens a
sentence or clause ("Wait, ...", "Actually, ...", "等等", "不对") and before each whole-clause withdrawal that
opens a sentence ("That's wrong.", "错了。"), and the last part that names any allowed letter decides; a part that
names none and withdraws the answer ("Actually, no.", "等等，错了。") leaves the response invalid.
Within a part, evidence levels are tried in order; the first level that yields any letter decides, and all the
letters found at that level must agree, otherwise the response is invalid (conflicting letters):

1. bare form: the whole response is one letter, optionally wrapped or decorated ("B", "(B)", "B.", "**B**",
   "选项B", "Option B"), optionally followed by that option's own text ("B. 前"); a bare letter followed by a
   different option's text ("B. 左" when B is 前) is conflicting.
1b. opening answer: a decorated letter, then punctuation or a line break, then an explanation ("B\nA is wrong
   because ..."): the letter, unless an answer marker or choice verb in the explanation names another.
2. answer markers: "答案", "答", "answer", ``\\boxed{}``, ``<answer>`` tags, "the correct choice is", "正确的选项是";
   the letter or letter list that directly follows the marker ("答案是A或B" gives A and B -> invalid).
3. choice verbs: "选", "选择", "应选", "所以选", "choose", "pick", "select", "go with"; conclusions "so",
   "therefore", "所以", "因此"; statements "it is", "应该是"; affirmations "B is correct", "选项B正确"
   ("选项A错误，所以选B" gives B).
4. option mentions: "选项X", "option X", "choice X" ("选项A和选项B" gives A and B -> invalid).
5. option text: the whole response, or the clause after the last marker, equals exactly one option's
   text ("前", "答案是前", "The answer is left", "The answer is option text 3").
6. standalone letters anywhere: an allowed capital letter not touching other Latin letters or digits; a
   capital "A" followed by a lowercase word that is not a connective ("A cat") is read as the English
   article and ignored.

A ruled-out letter ("not A", "A is wrong", "排除A", "A不对") never commits: levels 1b-3 drop it, and at levels 4
and 6 a response that rules any letter out is invalid ("It is definitely not A.").

Lowercase letters count only directly after a marker and when not followed by a word ("answer: b").
Letters outside ``letters`` never count.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Mapping

from core import parse_evidence as _ev
from core.errors import InvalidPrediction
from core.parse_evidence import (  # noqa: F401 (re-exported: callers and tests import them from here)
    _I,
    _I_DOTALL,
    _NEEDLES,
    API_ERROR,
    INVALID,
    LETTER_FOLLOWERS,
    OK,
    _bare_form,
    _decide,
    _mentions,
    _needles_in,
    _normalize,
    _parse_segment,
    _re_findall,
    _re_finditer,
    _re_match,
    _re_search,
    _re_split,
    _rx,
    _standalone_spans,
)

# Words that withdraw what came before: "I'm wrong", "that's wrong / incorrect / not right", "never mind", "错了",
# "不是这样"; a self-correction cue only as a whole clause (_CLAUSE_END after them) opening a sentence.
_WITHDRAWN = (
    r"(?:I(?:['’]m|\s+am)\s+wrong\b|(?:that|this|it)(?:['’]s|\s+is|\s+was)\s+(?:wrong|incorrect|not\s+right)\b"
    r"|never\s*mind\b|错了|不是这样)"
)
_CLAUSE_END = r"(?=\s*(?:[.。!！?？;；,，:\n]|$))"
# A self-correction: a cue that opens a sentence or clause ("Wait, ...", "Actually, ...", "On second thought",
# "等等", "不对"), or a whole-clause retraction (_WITHDRAWN) that opens a sentence ("答案是B。错了。"; after a comma
# it is read as part of that sentence: "A说在左边，错了。" says A is wrong).
_CORRECTION = (
    r"(?:^|(?<=[.。!！?？;；,，:\n]))\s*(?:(?:no\s*,?\s*)?wait\b|hold\s+on\b|actually\b|on\s+second\s+thought\b"
    r"|looking\s+(?:at\s+it\s+)?again\b|on\s+closer\s+inspection\b|correction\b|let\s+me\s+reconsider\b"
    r"|I\s+was\s+wrong\b|scratch\s+that\b|等等|等一下|不对|更正|纠正|再看|重新看|仔细一看|其实|我错了)"
    r"|(?:^|(?<=[.。!！?？\n]))\s*" + _WITHDRAWN + _CLAUSE_END
)


def _segments(text: str) -> list[str]:
    """The response cut before each self-correction (the first segment holds what came before any)."""
    cuts = [m.start() for m in _re_finditer(_CORRECTION, text, _I) if m.start() > 0 or m.group(0).strip()]
    cuts = sorted({c for c in cuts if c > 0})
    if not cuts:
        return [text]
    bounds = [0, *cuts, len(text)]
    return [text[bounds[i]:bounds[i + 1]] for i in range(len(bounds) - 1)]


def _parse_letter(text: str, letters: str, options: dict[str, str] | None, *, standalone: bool = True,
                  option_text: bool = True) -> tuple[str, str | None] | None:
    """The last committed answer: each self-correction starts a new segment, and the last segment that names
    any letter decides (see `_parse_segment`); None when no segment names one."""
    def read(seg: str) -> tuple[str, str | None] | None:
        return _parse_segment(seg, letters, options, standalone=standalone, option_text=option_text,
                              whole=seg is text)

    return _last_committed(text, letters, options, read)


def _last_committed(text: str, letters: str, options: dict[str, str] | None,
                    read: Callable[[str], tuple[str, str | None] | None]) -> tuple[str, str | None] | None:
    """The bare form, else the last self-correction segment `read` finds a letter in (walking back from the
    end), invalid when a later segment retracted it without naming a new one; None when no segment names one.
    The one segment walk of both styles (the letter style's whole text, the tag style's final line)."""
    bare = _bare_form(text, letters, options)
    if bare:
        return _decide(bare)
    segments = _segments(text) if not _ev._SHORTCUTS or _might_correct(text) else [text]
    retracted = False
    for i in range(len(segments) - 1, -1, -1):
        result = read(segments[i])
        if result is not None:
            return (INVALID, None) if retracted else result
        retracted = retracted or (i > 0 and _retracts(segments[i]))
    return None


# A self-correction that withdraws the answer before it and names no new one (000 App. A: an invalid response is
# never converted to a guessed answer; 002 C.2: missing final choices are invalid): "Actually, I was wrong.",
# "不对。", "Actually no.", "Scratch that.", "等等，错了。" A bare cue ("wait", "let me double-check") withdraws
# nothing, and "no" / "nope" / "not really" withdraw only as a whole clause ("Actually, no other view fits" does
# not).
_RETRACTION = (
    r"\s*(?:(?:no\s*,?\s*)?wait\b|hold\s+on\b|actually\b|on\s+second\s+thought\b|等等|等一下|其实)?[\s,，:]*"
    r"(?:(?:no|nope|not\s+(?:so|really|quite))" + _CLAUSE_END + r"|I\s+was\s+wrong\b"
    r"|scratch\s+that\b|不对|我错了|" + _WITHDRAWN + ")"
)


def _retracts(segment: str) -> bool:
    """True when a segment that opens with a self-correction withdraws the answer (it names no letter itself)."""
    return _re_match(_RETRACTION, segment, _I) is not None


_CUE_WORDS = ("wait", "hold", "actually", "second", "again", "closer", "correction", "reconsider", "wrong", "scratch",
              "incorrect", "right", "mind", "等", "不对", "更正", "纠正", "再看", "重新看", "仔细一看", "其实", "错了",
              "不是这样")
_CUE_RX = re.compile("|".join(map(re.escape, _CUE_WORDS)))


def _might_correct(text: str) -> bool:
    """False only when `text` cannot hold a self-correction (a cheap precheck; the regex decides). The text is
    NFKC-normalised, so the only non-ASCII letter IGNORECASE still matches to an ASCII cue letter is "ı" (i)."""
    low = text.lower()
    if not text.isascii():
        low = low.replace("ı", "i")
    return _CUE_RX.search(low) is not None


def _final_response(text: str) -> tuple[str, str]:
    """The final non-empty line of a response and the final sentence of that line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    last_line = lines[-1] if lines else ""
    sentences = [s.strip() for s in _re_split(r"(?<=[。!！?？])|(?<=\.)\s+", last_line) if s and s.strip()]
    return last_line, (sentences[-1] if sentences else last_line)


def _parse_tag(text: str, letters: str, options: dict[str, str] | None) -> tuple[str, str | None]:
    """StemBind style (002 App. C.2)."""
    if _ev._SHORTCUTS and "<" not in text:  # every tag pattern needs a "<"
        tagged = False
        opens, tags = 0, []
    else:
        opens = len(_re_findall(r"<\s*answer\s*>", text, flags=_I))
        tags = _re_findall(r"<\s*answer\s*>(.*?)<\s*/\s*answer\s*>", text, flags=_I_DOTALL)
        tagged = bool(opens or tags or _re_search(r"<\s*/\s*answer\s*>", text, flags=_I))
    if tagged:
        if not tags or opens != len(tags):
            return INVALID, None  # an unclosed or stray tag is malformed output
        chosen = []
        for content in tags:
            bare = _bare_form(_normalize(content), letters, options)
            if not bare or len(set(bare)) != 1:
                return INVALID, None  # a tag that does not hold exactly one allowed letter
            chosen.append(bare[0])
        return _decide(chosen)
    if not _ev._SHORTCUTS:
        return _final_line_decision(_final_response(text)[0], letters, options)
    last_line = _last_line(text)
    if not options:  # {} and None read alike
        return _final_line_cached(last_line, letters, None)
    try:
        key = tuple(options.items())
        hash(key)
    except TypeError:  # option texts that are not strings (a caller's own dict): no cache
        return _final_line_decision(last_line, letters, options)
    return _final_line_cached(last_line, letters, key)


def _last_line(text: str) -> str:
    """`_final_response(text)[0]`: the final non-empty line, stripped ("" when there is none)."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line:
            return line
    return ""


def _final_line_decision(last_line: str, letters: str, options: dict[str, str] | None) -> tuple[str, str | None]:
    """The tag style without tags: a letter from the final line, else a unique standalone letter in its final
    sentence; after a self-correction on that line, the last part that names a letter; a function of the final
    line alone (with letters and options)."""
    def read(seg: str) -> tuple[str, str | None] | None:
        result = _parse_segment(seg, letters, options, standalone=False, option_text=False, whole=seg is last_line)
        if result is None:
            sentences = [x.strip() for x in _re_split(r"(?<=[。!！?？])|(?<=\.)\s+", seg) if x and x.strip()]
            last_sentence = sentences[-1] if sentences else seg
            spans = _standalone_spans(last_sentence, letters, options)
            result = _mentions(last_sentence, spans) if spans else None
        return result

    return _last_committed(last_line, letters, options, read) or (INVALID, None)


@functools.lru_cache(maxsize=4096)
def _final_line_cached(last_line: str, letters: str,
                       option_items: tuple[tuple[str, str], ...] | None) -> tuple[str, str | None]:
    """`_final_line_decision`, cached: untagged answers end in a few formulaic lines ("Final answer: B", "The
    answer is C.") even when the reasoning before them is unique, and an item's options recur with every run."""
    return _final_line_decision(last_line, letters, dict(option_items) if option_items else None)


def parse_answer(response: str | None, letters: str = "ABCD", style: str = "letter",
                 options: dict[str, str] | None = None) -> tuple[str, str | None]:
    """Parse a raw model response into (status, letter); see the module docstring for the rules.

    status is "ok" with the letter, "invalid" with None, or "api_error" with None for a missing or
    whitespace-only response.
    """
    if response is None or not str(response).strip():
        return API_ERROR, None
    fast = fast_parse(response, letters, style)
    if fast is not None:
        return fast
    return _parse_kept(response, letters, style, options)




def fast_parse(response: str | None, letters: str = "ABCD", style: str = "letter") -> tuple[str, str | None] | None:
    """`parse_answer` for the common clean cases, decided without the full rule cascade and without option texts
    (same result, tested against it); None when the full rules must decide (then call `full_parse`).

    Empty: api_error. letter: the response is exactly one allowed letter. tag: a plain-ASCII response (so
    normalisation changes nothing) with exactly one well-formed <ANSWER>X</ANSWER> tag and no other tag marks.
    """
    if response is None or not response or response.isspace():  # isspace: `not strip()` without the copy
        return API_ERROR, None
    if style == "tag":
        i = response.find("<ANSWER>")
        if i < 0 or response[i + 9: i + 18] != "</ANSWER>":
            return None
        letter = response[i + 8]
        # no other tag mark: the text's only two "<" are this tag's, or "answer" occurs only twice (both inside
        # it); and the text is plain ASCII without markdown marks, so normalisation changes nothing
        if letter in letters and response.isascii() and "*" not in response and "`" not in response \
                and "__" not in response and (response.count("<") == 2 or response.lower().count("answer") == 2):
            return OK, letter
        return None
    if style == "letter":
        stripped = response.strip()
        if len(stripped) == 1 and stripped in letters:
            return OK, stripped
    return None


def full_parse(response: str, letters: str, style: str, options: dict[str, str] | None) -> tuple[str, str | None]:
    """`parse_answer` for a response `fast_parse` returned None for: the full rule cascade, without repeating
    the checks `fast_parse` already made."""
    return _parse_kept(response, letters, style, options)


class _WatchedOptions(Mapping[str, str]):
    """An item's option texts that note whether the rules read them at all (their truthiness included)."""

    __slots__ = ("_options", "read")

    def __init__(self, options: dict[str, str]) -> None:
        self._options = options
        self.read = False

    def __getitem__(self, key: str) -> str:
        self.read = True
        return self._options[key]

    def __iter__(self) -> Iterator[str]:
        self.read = True
        return iter(self._options)

    def __len__(self) -> int:
        self.read = True
        return len(self._options)

    def __contains__(self, key: object) -> bool:
        self.read = True
        return key in self._options

    def items(self):  # type: ignore[override]  # the dict's own view: one call, not an iteration
        self.read = True
        return self._options.items()


# Decisions of the full rules that never read the item's option texts, by (response, letters, style): such a
# decision is the same for any options, so a formulaic response ("The answer is (B).") met again under another
# item is decided at once. Short responses only (long ones rarely recur), and a bounded number of them.
_OPTION_FREE: dict[tuple[str, str, str], tuple[str, str | None]] = {}
_OPTION_FREE_MAX, _OPTION_FREE_CHARS = 65_536, 256


def _parse_kept(response: str, letters: str, style: str, options: dict[str, str] | None) -> tuple[str, str | None]:
    """The full rules (`_parse_slow`), their decision kept when it did not read `options` (_OPTION_FREE)."""
    response = str(response)
    if not options or len(response) > _OPTION_FREE_CHARS:
        return _parse_slow(response, letters, style, options)
    key = (response, letters, style)
    known = _OPTION_FREE.get(key)
    if known is not None:
        return known
    watched = _WatchedOptions(options)
    result = _parse_slow(response, letters, style, watched)  # type: ignore[arg-type]  # read as a Mapping
    if not watched.read:
        if len(_OPTION_FREE) >= _OPTION_FREE_MAX:
            _OPTION_FREE.clear()
        _OPTION_FREE[key] = result
    return result


def _parse_slow(response: str, letters: str, style: str, options: dict[str, str] | None) -> tuple[str, str | None]:
    text = _normalize(str(response))
    if not text:
        return INVALID, None
    if style == "tag":
        return _parse_tag(text, letters, options)
    if style != "letter":
        raise ValueError(f"unknown parser style {style!r}; expected 'letter' or 'tag'")
    return _parse_letter(text, letters, options) or (INVALID, None)


def rotate_options(options: dict[str, str], rotation: int) -> dict[str, str]:
    """Options as shown under `rotation`: the option at letter index i moves to index (i + r) mod n."""
    keys = list(options)
    n = len(keys)
    if n == 0:
        return {}
    shown = {keys[(i + rotation) % n]: options[keys[i]] for i in range(n)}
    return {k: shown[k] for k in keys}


def unrotate(shown: str, letters: str, rotation: int) -> str:
    """The original letter of the letter `shown` under `rotation`: index (j - r) mod n."""
    if shown not in letters or len(shown) != 1:
        raise InvalidPrediction(f"letter {shown!r} is not one of the options {letters!r}")
    return letters[(letters.index(shown) - rotation) % len(letters)]
