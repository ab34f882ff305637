"""Letter-style evidence levels within one part of a response (core.parsing's docstring, levels 1-6).

`parse_segment(text, letters, options)` reads one part (the response cut before each self-correction, which
core.parsing does): the first level that names any allowed letter decides. Also the text normalisation and the
pattern cache the tag style shares.
"""

from __future__ import annotations

import functools
import re
import unicodedata

OK, INVALID, API_ERROR = "ok", "invalid", "api_error"


@functools.lru_cache(maxsize=512)
def _rx(pattern: str, flags: int) -> re.Pattern[str]:
    """Compiled patterns, cached by (pattern, flags): the parser runs once per imported response."""
    return re.compile(pattern, flags)


def _re_match(p: str, s: str, flags: int = 0) -> re.Match[str] | None:
    return _rx(p, flags).match(s)


def _re_fullmatch(p: str, s: str, flags: int = 0) -> re.Match[str] | None:
    return _rx(p, flags).fullmatch(s)


def _re_search(p: str, s: str, flags: int = 0) -> re.Match[str] | None:
    return _rx(p, flags).search(s)


def _re_finditer(p: str, s: str, flags: int = 0):  # noqa: ANN202
    return _rx(p, flags).finditer(s)


def _re_findall(p: str, s: str, flags: int = 0) -> list:
    return _rx(p, flags).findall(s)


def _re_split(p: str, s: str, maxsplit: int = 0, flags: int = 0) -> list[str]:
    return _rx(p, flags).split(s, maxsplit)


def _re_sub(p: str, repl: str, s: str, flags: int = 0) -> str:
    return _rx(p, flags).sub(repl, s)


# Flags as plain ints: RegexFlag.__or__ and RegexFlag.__hash__ (the pattern cache's key) are Python-level calls.
_I = int(re.IGNORECASE)
_I_DOTALL = int(re.IGNORECASE | re.DOTALL)

# Shortcuts of the full rules (same results, only faster; tests/test_parsing.py compares the parser with them off
# and on): skipping a regex when a substring every match of it needs is absent, and the cache of the tag style's
# final-line decision (`_final_line_cached`). Marker needles are only consulted for ASCII text, where IGNORECASE
# matching is plain ASCII case folding (no "ſ" for "s", no Kelvin sign for "k").
_SHORTCUTS = True

# Words after a capital "A" that mean the "A" is an option letter, not the English article.
_CONNECTIVES = {
    "or", "and", "nor", "vs", "versus", "is", "was", "seems", "appears", "looks", "because", "since", "as",
    "but", "then", "so", "would", "could", "should", "must", "might", "may", "can", "will", "fits", "matches",
    "corresponds", "describes", "best", "only", "instead", "rather", "not", "too", "also",
}
# Words after which a capital "A" is the letter, not the article: the SSA leakage guard
# (core/families/stembind/ssa_prompt.py) withholds a letter at least wherever the parser would read one.
LETTER_FOLLOWERS = frozenset(_CONNECTIVES)
_LIST_SEP = r"(?:\s*(?:,|、|/|&|\bor\b|\band\b|和|或者|或|与|及|还是)\s*)"
_ANSWER_MARKERS = (
    r"\\boxed\{",
    r"<\s*answer\s*>",
    r"\banswer\b(?:\s+(?:is|would\s+be|should\s+be|will\s+be))?(?:\s+option)?",
    r"(?:最终|正确)?答案(?:应该|应当|应)?(?:是|为|选)?(?:选项)?",
    r"答(?:案)?\s*[:]",
    # a named commitment without the word "answer": "the correct choice is D", "正确的选项是D"
    r"\b(?:correct|right|best|final)\s+(?:choice|option|one|letter)\b"
    r"(?:\s+(?:is|would\s+be|should\s+be|must\s+be|will\s+be|here\s+is))?",
    r"(?:正确|最佳|最终)的?(?:选项|选择|一项|项)(?:应该|应当|应|就)?(?:是|为)?|正确的(?:是|为)",
)
_CHOICE_MARKERS = (
    r"(?:应|故|所以|因此|我)?选(?!项)(?:择)?(?:是|为)?",
    r"\b(?:choose|pick|select|go\s+with)(?:\s+option)?",
    # a conclusion: "..., so D", "Therefore, it is D", "所以是D"
    r"\b(?:so|therefore|thus|hence)\b,?(?:\s+(?:it(?:'s|\s+is|\s+must\s+be|\s+should\s+be)|the\s+answer\s+is))?",
    r"(?:所以|因此|因而|故而|综上)[,]?(?:应该|应当|应|就)?(?:是|为)?",
    # a plain statement of the answer: "it is C", "it must be C", "应该是C"
    r"\b(?:it|this|that)(?:'s|\s+is|\s+must\s+be|\s+should\s+be|\s+would\s+be)\b",
    r"(?:应该|应当|肯定|一定|就)是",
)
_OPTION_MARKERS = (r"选项", r"\b(?:option|choice)\b")
# For each marker: substrings (lowercase ASCII) of which every match in ASCII text contains one; a marker
# with no ASCII needle cannot match ASCII text at all.
_NEEDLES: dict[str, tuple[str, ...]] = {
    _ANSWER_MARKERS[0]: ("\\boxed{",), _ANSWER_MARKERS[1]: ("answer",), _ANSWER_MARKERS[2]: ("answer",),
    _ANSWER_MARKERS[3]: (), _ANSWER_MARKERS[4]: (), _ANSWER_MARKERS[5]: ("correct", "right", "best", "final"),
    _ANSWER_MARKERS[6]: (),
    _CHOICE_MARKERS[0]: (), _CHOICE_MARKERS[1]: ("choose", "pick", "select", "go"),
    _CHOICE_MARKERS[2]: ("so", "therefore", "thus", "hence"), _CHOICE_MARKERS[3]: (),
    _CHOICE_MARKERS[4]: ("it", "this", "that"), _CHOICE_MARKERS[5]: (),
    _OPTION_MARKERS[0]: (), _OPTION_MARKERS[1]: ("option", "choice"),
}


# Every needle occurrence in lowercased ASCII text (a lookahead, so overlapping needles are all found; no needle
# is a prefix of another, so one capture per position loses none).
_NEEDLE_RX = re.compile(
    r"(?=(\\boxed\{|answer|choose|pick|select|go|option|choice|correct|right|best|final|so|therefore|thus|hence"
    r"|it|this|that))")


def _needles_in(text: str) -> set[str] | None:
    """The marker needles present in `text`, or None when they may not be consulted (shortcuts off, non-ASCII)."""
    if not _SHORTCUTS or not text.isascii():
        return None
    return set(_NEEDLE_RX.findall(text.lower()))


def _normalize(text: str) -> str:
    """NFKC (full-width letters and punctuation to ASCII), markdown emphasis and code marks removed."""
    text = unicodedata.normalize("NFKC", text)
    if not _SHORTCUTS or "*" in text or "_" in text or "`" in text:
        text = _re_sub(r"\*\*|__|`|\*", "", text)
    return text.strip()


def _norm_text(text: str) -> str:
    """Option text for comparison: casefolded, spaces and surrounding punctuation removed."""
    text = _normalize(text).casefold()
    text = _re_sub(r"\s+", " ", text)
    return text.strip(" \t\"'“”‘’「」『』()[]{}<>.。,，、;；:!！?？")


@functools.lru_cache(maxsize=4096)
def _norm_option(text: str) -> str:
    """`_norm_text` of an option text, cached: the same item's options come back with every response to it."""
    return _norm_text(text)


@functools.lru_cache(maxsize=64)
def _letter_class(letters: str) -> str:
    return "[" + re.escape(letters) + "]"


@functools.lru_cache(maxsize=64)
def _letter_chars(letters: str) -> frozenset[str]:
    """The characters every letter-naming level needs one of: the allowed letters in either case."""
    return frozenset(letters + letters.lower())


def _is_article(text: str, end: int, letter: str, options: dict[str, str] | None) -> bool:
    """True when the capital A ending at `end` reads as the English article ("A cat")."""
    if letter != "A":
        return False
    m = _re_match(r"\s+([a-z][a-z']*)", text[end:])
    if not m or m.group(1) in _CONNECTIVES:
        return False
    if options and "A" in options:  # "A left" where option A is "left" names the option
        own = _norm_option(options["A"])
        if own and text[end:].strip().casefold().startswith(own):
            return False
    return True


def _standalone_letters(text: str, letters: str, options: dict[str, str] | None) -> list[str]:
    """Allowed capital letters that stand alone (not inside a Latin word or number), articles excluded."""
    return [letter for letter, _, _ in _standalone_spans(text, letters, options)]


def _standalone_spans(text: str, letters: str, options: dict[str, str] | None) -> list[tuple[str, int, int]]:
    found = []
    for m in _re_finditer(r"(?<![A-Za-z0-9])(" + _letter_class(letters) + r")(?![A-Za-z0-9])", text):
        if not _is_article(text, m.end(), m.group(1), options):
            found.append((m.group(1), m.start(), m.end()))
    return found


# A letter ruled out rather than chosen: "not A", "isn't option A", "cannot be A", "rule out A", "排除A", "不是A"
# before it, or "A is wrong", "A can be ruled out", "A错误", "A也不对", "A是错的" after it.
_NEG_BEFORE = (
    r"(?:\bnot|n't|\bcannot|\bnever|\bno|\brul(?:e|es|ed|ing)\s+out|\beliminat\w*|\bexclud\w*|\brather\s+than"
    r"|\binstead\s+of|\bother\s+than|\bexcept|不是|不选|不可能是|不会是|不应该?是|不一定是|未必是|排除(?:了|掉)?|并非"
    r"|而非)"
    r"\s*(?:(?:be|definitely|certainly|clearly|obviously|the|answer|pick|choose|select|say|go\s+with|option|choice"
    r"|选项|是)\s*)*[(\[]?\s*$"
)
_NEG_AFTER = (
    # past a parenthesis and further listed letters: "A (left) and B (front) cannot hold", "A和B都不对"
    r"\s*[)\]]?(?:\s*\([^)]{0,40}\))?(?:\s*(?:,|、|/|\band\b|\bor\b|和|与|及|或)\s*(?:option\s+|选项)?[A-H](?![A-Za-z])"
    r"(?:\s*\([^)]{0,40}\))?)*\s*(?:(?:are|both|all)\s+)*(?:都|均)?"
    r"(?:(?:(?:is|are|was|were|seems|looks|appears|can\s+be|must\s+be|should\s+be|has\s+been|would\s+be)\s+)?"
    r"(?:(?:also|definitely|clearly|obviously|certainly|therefore)\s+)?"
    r"(?:wrong|incorrect|false|ruled\s+out|eliminated|excluded|impossible|invalid|not\b|out\b"
    r"|(?:can(?:not|'t)|could(?:\s+not|n't)|does(?:\s+not|n't)|do(?:\s+not|n't))\s+(?:hold|fit|work|match|apply|be)\b"
    r"|fails?\b|contradicts?\b)"
    r"|(?:选项)?(?:也|则|就|显然|明显|肯定)?(?:是)?(?:错误|错的|错|不对|不正确|不符合|不成立|排除|可以排除|被排除|不可能"
    r"|不合理|矛盾))"
)


def _negated(text: str, start: int, end: int) -> bool:
    """True when the letter at text[start:end] is ruled out, not chosen (same clause only)."""
    before = _re_split(r"[.。!！?？;；,，\n]", text[max(0, start - 48):start])[-1]
    return bool(_re_search(_NEG_BEFORE, before, _I) or _re_match(_NEG_AFTER, text[end:end + 48], _I))


# A letter affirmed as the answer without a marker before it: "B is correct", "B is the correct one", "选项B正确".
# ("B is right" is not: "right" is also a direction.)
_AFFIRMED = (
    r"(?<![A-Za-z0-9])(?:option\s+|choice\s+|选项)?[(\[]?({L})[)\]]?\s*(?:(?:is|would\s+be|should\s+be|must\s+be)\s+"
    r"(?:the\s+)?(?:correct|best\s+(?:answer|option|choice)|right\s+(?:answer|option|choice))(?![a-z])"
    r"|(?:才|就)?(?:是|为)?(?:正确的?|对的|正确答案|正确选项))"
)


def _affirmed_letters(text: str, letters: str) -> list[tuple[str, int, int]]:
    return [(m.group(1), m.start(1), m.end(1))
            for m in _re_finditer(_AFFIRMED.replace("{L}", _letter_class(letters)), text, _I)
            if m.group(1).isupper()]


def _bare_form(text: str, letters: str, options: dict[str, str] | None) -> list[str] | None:
    """Level 1: the whole response is one decorated letter, optionally followed by option text."""
    m = _re_fullmatch(
        r"[\s\"'“”‘’「」『』]*(?:(?:option|choice|选项|选)\s*)?[(\[{<]?\s*(" + _letter_class(letters.lower() + letters)
        + r")\s*[)\]}>]?\s*[.。:;,、!)]*\s*(.*?)[\s.。!！\"'“”’」』]*",
        text,
        flags=_I_DOTALL,
    )
    if not m:
        return None
    letter, rest = m.group(1).upper(), _norm_text(m.group(2))
    if letter not in letters:
        return None
    if not rest:
        return [letter]
    matched = _option_matches(rest, options)
    if matched == [letter]:
        return [letter]
    if matched:  # a letter with another option's text: conflicting
        return [letter, *matched]
    return None


def _leading_letter(text: str, letters: str, options: dict[str, str] | None) -> tuple[str, str] | None:
    """A response that opens with its answer: one decorated capital letter, optionally its own option text in
    parentheses, then sentence punctuation or a line break, then an explanation ("B.\\nA is wrong because ...",
    "B（前）。A与图1矛盾。"); returns (letter, explanation)."""
    head = text.lstrip(" \t\n\"'“”‘’「」『』([{<")[:1]
    if not head or (head not in letters and head not in "oOcCaA选答"):
        return None  # cannot open with a decorated letter (a cheap precheck; the pattern decides)
    m = _re_match(
        r"[\s\"'“”‘’「」『』]*(?:(?:option|choice|answer|选项|答案|答)\s*[:]?\s*)?[(\[{<]?\s*(" + _letter_class(letters)
        + r")\s*[)\]}>]?(?:\s*\(([^()\n]{1,40})\))?(?:\s*[.。:;!)]+|[ \t]*\n)",
        text,
        flags=_I,
    )
    if not m or not m.group(1).isupper():
        return None
    if m.group(2) is not None and _option_matches(m.group(2), options) not in ([], [m.group(1)]):
        return None  # "B (左)" where 左 is another option's text: not a plain opening answer
    rest = text[m.end():]
    for other, own in (options or {}).items():
        if other != m.group(1) and other in letters and _norm_option(str(own)) and _re_search(
                r"(?<![A-Za-z0-9])" + re.escape(other) + r"\s*[.:)、]\s*" + re.escape(_normalize(str(own))), rest, _I):
            return None  # "A. left\nB. front\n...": the options echoed, not an opening answer
    return m.group(1), rest


def _letter_list_after(text: str, start: int, letters: str, options: dict[str, str] | None) -> list[str]:
    """The letter or letter list that directly follows a marker ending at `start`."""
    return [x for x, _, _ in _letter_spans_after(text, start, letters, options)]


def _letter_spans_after(text: str, start: int, letters: str,
                        options: dict[str, str] | None) -> list[tuple[str, int, int]]:
    rest = text[start:]
    lead = _re_match(r"\s*(?:[:=\-]|是|为)?\s*(?:选项|option)?\s*[(\[{]?\s*", rest, flags=_I)
    pos = lead.end() if lead else 0
    letter_re = r"(" + _letter_class(letters + letters.lower()) + r")(?![A-Za-z0-9])"
    found: list[tuple[str, int, int]] = []
    while True:
        m = _re_match(letter_re, rest[pos:])
        if not m:
            break
        letter = m.group(1)
        after = pos + m.end()
        if letter.islower() and _re_match(r"\s+[A-Za-z]", rest[after:]):
            break  # "the answer is a bit unclear"
        if letter.isupper() and _is_article(rest, after, letter, options):
            break
        found.append((letter.upper(), start + pos + m.start(1), start + after))
        sep = _re_match(r"\s*[)\]}]?" + _LIST_SEP + r"(?:选项|option\s*)?[(\[{]?\s*", rest[after:], _I)
        if not sep:
            break
        pos = after + sep.end()
    return [x for x in found if x[0] in letters]


def _marker_letters(text: str, patterns: tuple[str, ...], letters: str, options: dict[str, str] | None,
                   needles: set[str] | None = None) -> list[str]:
    """Levels 2-4: every letter named right after any of the markers (`needles`: see `_needles_in`)."""
    return [x for x, _, _ in _marker_spans(text, patterns, letters, options, needles)]


def _marker_spans(text: str, patterns: tuple[str, ...], letters: str, options: dict[str, str] | None,
                  needles: set[str] | None = None) -> list[tuple[str, int, int]]:
    found: list[tuple[str, int, int]] = []
    for pattern in patterns:
        if needles is not None and needles.isdisjoint(_NEEDLES[pattern]):
            continue  # this marker cannot occur in the text
        for m in _re_finditer(pattern, text, flags=_I):
            found.extend(_letter_spans_after(text, m.end(), letters, options))
    return found


def _option_matches(fragment: str, options: dict[str, str] | None) -> list[str]:
    """Letters whose option text equals `fragment` (normalized)."""
    if not options:
        return []
    target = _norm_text(fragment)
    if not target:
        return []
    return [letter for letter, text in options.items() if _norm_option(str(text)) == target]


def _option_text_letters(text: str, letters: str, options: dict[str, str] | None) -> list[str]:
    """Level 5: the response, or the clause after the last marker, is exactly one option's text; an option text
    that itself begins with a marker word ("option text 3", "选项三") may also start at the last marker."""
    if not options:
        return []
    allowed = {k: v for k, v in options.items() if k in letters}
    whole = _option_matches(text, allowed)
    if whole:
        return whole
    last = None
    last_start = None
    needles = _needles_in(text)
    for pattern in _ANSWER_MARKERS + _CHOICE_MARKERS + _OPTION_MARKERS:
        if needles is not None and needles.isdisjoint(_NEEDLES[pattern]):
            continue
        for m in _re_finditer(pattern, text, flags=_I):
            if last is None or m.end() > last:
                last = m.end()
            if pattern in _OPTION_MARKERS and (last_start is None or m.start() > last_start):
                last_start = m.start()
    if last is None:
        return []
    clause = _re_split(r"[。.!！?？\n;；]", text[last:].lstrip(" :=是为"), maxsplit=1)[0]
    found = _option_matches(clause, allowed)
    if not found and last_start is not None:
        clause = _re_split(r"[。.!！?？\n;；]", text[last_start:], maxsplit=1)[0]
        found = _option_matches(clause, allowed)
    return found


def _decide(found: list[str]) -> tuple[str, str | None]:
    distinct = sorted(set(found))
    if len(distinct) == 1:
        return OK, distinct[0]
    return INVALID, None


def _parse_segment(text: str, letters: str, options: dict[str, str] | None, *, standalone: bool = True,
                   option_text: bool = True, whole: bool = False) -> tuple[str, str | None] | None:
    """The first evidence level that names any letter decides; None when no level names one (`whole`: the
    caller already tried level 1 on this very text)."""
    if not whole:
        bare = _bare_form(text, letters, options)
        if bare:
            return _decide(bare)
    if _SHORTCUTS and not _letter_chars(letters).intersection(text):
        # no allowed letter in either case: only an option text can name one
        found = _option_text_letters(text, letters, options) if option_text else []
        return _decide(found) if found else None
    needles = _needles_in(text)
    markers = needles is None or bool(needles)  # an ASCII text without any needle has no marker at all
    lead = _leading_letter(text, letters, options)
    if lead is not None:
        # the opening letter decides unless an answer marker or a choice verb in the explanation names another
        # letter (a conclusion word or a mention there is explanation: "so A and B cannot hold")
        strong = _marker_spans(text, _ANSWER_MARKERS + _CHOICE_MARKERS[:2], letters, options, needles) \
            if markers else []
        return _decide([lead[0], *(x for x, s, e in strong if not _negated(text, s, e))])
    ruled_out = False  # a commitment whose letters were all ruled out ("the answer is not A")
    for level, patterns in enumerate((_ANSWER_MARKERS, _CHOICE_MARKERS)):
        spans = _marker_spans(text, patterns, letters, options, needles) if markers else []
        if level == 1:
            spans += _affirmed_letters(text, letters)
        if spans:
            kept = [x for x, s, e in spans if not _negated(text, s, e)]
            if kept:
                return _decide(kept)
            ruled_out = True
    if markers:
        mentions = _marker_spans(text, _OPTION_MARKERS, letters, options, needles)
        if mentions:
            return _mentions(text, mentions)
    if option_text:
        found = _option_text_letters(text, letters, options)
        if found:
            return _decide(found)
    if standalone:
        spans = _standalone_spans(text, letters, options)
        if spans:
            return _mentions(text, spans)
    return (INVALID, None) if ruled_out else None


def _mentions(text: str, spans: list[tuple[str, int, int]]) -> tuple[str, str | None]:
    """Levels 4 and 6 (letters named without a commitment): a response that rules any letter out ("A is
    wrong. B is right.", "It is definitely not A.") commits to none; otherwise all letters must agree."""
    if any(_negated(text, s, e) for _, s, e in spans):
        return INVALID, None
    return _decide([x for x, _, _ in spans])
