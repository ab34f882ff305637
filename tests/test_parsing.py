"""Answer parsers (SPEC §4; 000 App. A, 002 App. C.2) and the rotation convention (SPEC §3)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import InvalidPrediction
from core.parsing import parse_answer, rotate_options, unrotate

FE_OPTIONS = {"A": "左", "B": "前", "C": "后", "D": "右"}
EN_OPTIONS = {"A": "left", "B": "front", "C": "behind", "D": "right"}

OK = "ok"
INV = "invalid"
ERR = "api_error"

LETTER_CASES = [
    # bare forms
    ("B", OK, "B"),
    (" B \n", OK, "B"),
    ("(B)", OK, "B"),
    ("（Ｂ）", OK, "B"),
    ("B.", OK, "B"),
    ("B。", OK, "B"),
    ("B)", OK, "B"),
    ("[C]", OK, "C"),
    ("**B**", OK, "B"),
    ("`D`", OK, "D"),
    ("b", OK, "B"),
    ("Ｄ", OK, "D"),
    ("选项B", OK, "B"),
    ("选B", OK, "B"),
    ("Option C", OK, "C"),
    ("B. 前", OK, "B"),
    ("B 前", OK, "B"),
    ("(B) 前。", OK, "B"),
    ("B. 左", INV, None),  # letter B with option A's text: conflicting
    # answer markers
    ("答案：B", OK, "B"),
    ("答案:B", OK, "B"),
    ("答案是B", OK, "B"),
    ("答案为（C）", OK, "C"),
    ("答案应该是D。", OK, "D"),
    ("最终答案：**A**", OK, "A"),
    ("答：C", OK, "C"),
    ("Answer: B", OK, "B"),
    ("answer: b", OK, "B"),
    ("The answer is B", OK, "B"),
    ("The answer is B.", OK, "B"),
    ("The correct answer is (B).", OK, "B"),
    ("The answer is: C", OK, "C"),
    ("Final answer - D", OK, "D"),
    ("The answer is A because the camera faces the chair.", OK, "A"),
    ("A cat sits on the left, so the answer is B.", OK, "B"),
    ("\\boxed{C}", OK, "C"),
    ("$\\boxed{D}$", OK, "D"),
    ("<answer>B</answer>", OK, "B"),
    ("分析：选项A是左，选项B是前。答案：B", OK, "B"),
    ("答案：A。最终答案：B", INV, None),  # two answer markers disagree
    # choice verbs
    ("我选B", OK, "B"),
    ("应选C。", OK, "C"),
    ("选择D", OK, "D"),
    ("I choose C", OK, "C"),
    ("I would pick option A.", OK, "A"),
    ("选项A和选项B都有可能", INV, None),
    ("选项A错误，选项C错误，所以选B", OK, "B"),
    ("Option A is wrong and option C is wrong, so I choose B.", OK, "B"),
    ("选项A错误，选项C错误。", INV, None),
    # option text
    ("前", OK, "B"),
    ("前。", OK, "B"),
    ("答案是前", OK, "B"),
    ("答案：右", OK, "D"),
    ("前面", INV, None),  # not exactly an option text
    # standalone letters
    ("I think it is C", OK, "C"),
    ("It should be D, since the lamp is on the right", OK, "D"),
    ("A cat, so D", OK, "D"),
    ("B because the camera is behind the table", OK, "B"),
    # conflicting letters
    ("A or B", INV, None),
    ("A和B", INV, None),
    ("A或B", INV, None),
    ("A/B", INV, None),
    ("The answer is A or B.", INV, None),
    ("答案是A或B", INV, None),
    ("Answer: A, C", INV, None),
    ("A is wrong. B is right.", INV, None),
    # no allowed letter
    ("E", INV, None),
    ("The answer is E", INV, None),
    ("A cat is on the left", INV, None),  # "A" as an English article
    ("I don't know", INV, None),
    ("the answer is a bit unclear", INV, None),
    ("无法判断", INV, None),
    ("...", INV, None),
    # empty output of a failed call
    ("", ERR, None),
    ("   \n\t", ERR, None),
    (None, ERR, None),
]


@pytest.mark.parametrize(("response", "status", "letter"), LETTER_CASES)
def test_letter_style(response, status, letter):
    assert parse_answer(response, "ABCD", "letter", FE_OPTIONS) == (status, letter)


@pytest.mark.parametrize(("response", "letters", "options", "expected"), [
    ("E", "ABCDE", None, (OK, "E")),
    ("E", "ABCD", None, (INV, None)),
    ("The answer is front", "ABCD", EN_OPTIONS, (OK, "B")),
    ("Right.", "ABCD", EN_OPTIONS, (OK, "D")),
    ("A left", "ABCD", EN_OPTIONS, (OK, "A")),  # "A" followed by option A's own text
    ("前", "ABCD", None, (INV, None)),  # option text needs the options
    ("same", "AB", {"A": "same", "B": "same"}, (INV, None)),  # two options share the text
    ("H", "ABCDEFGH", None, (OK, "H")),
])
def test_letter_style_letters_and_options(response, letters, options, expected):
    assert parse_answer(response, letters, "letter", options) == expected


TAG_CASES = [
    ("<ANSWER>B</ANSWER>", OK, "B"),
    ("<answer>c</answer>", OK, "C"),
    ("<Answer> (D) </Answer>", OK, "D"),
    ("<ANSWER>**A**</ANSWER>", OK, "A"),
    ("Reasoning about A and C first.\n<ANSWER>B</ANSWER>", OK, "B"),
    ("<ANSWER>B</ANSWER> and again <ANSWER>B</ANSWER>", OK, "B"),
    ("<ANSWER>A</ANSWER> no wait <ANSWER>B</ANSWER>", INV, None),
    ("<ANSWER>B", INV, None),  # unclosed tag: malformed
    ("B</ANSWER>", INV, None),
    ("<ANSWER></ANSWER>", INV, None),
    ("<ANSWER>X</ANSWER>", INV, None),
    ("<ANSWER>A or B</ANSWER>", INV, None),
    ("<ANSWER>E</ANSWER>", INV, None),
    # fallback: a unique letter in the final response
    ("The rule is a rotation.\nSo the answer is C.", OK, "C"),
    ("Step 1: shapes.\nFinal: D", OK, "D"),
    ("A is ruled out. So B.", OK, "B"),
    ("B", OK, "B"),
    ("Answer: (A)", OK, "A"),
    ("Option A fails and option C fails.\nThe answer is B", OK, "B"),
    # several letters, no final choice, malformed
    ("A and B are both possible.", INV, None),
    ("The answer is A or B", INV, None),
    ("The answer is D\nHope this helps!", INV, None),
    ("I cannot tell from the image.", INV, None),
    ("", ERR, None),
    (None, ERR, None),
]


@pytest.mark.parametrize(("response", "status", "letter"), TAG_CASES)
def test_tag_style(response, status, letter):
    assert parse_answer(response, "ABCD", "tag") == (status, letter)


def test_unknown_style_is_refused():
    with pytest.raises(ValueError):
        parse_answer("B", style="json")


@pytest.mark.parametrize(("rotation", "expected"), [
    (0, {"A": "a", "B": "b", "C": "c", "D": "d"}),
    (1, {"A": "d", "B": "a", "C": "b", "D": "c"}),
    (2, {"A": "c", "B": "d", "C": "a", "D": "b"}),
    (3, {"A": "b", "B": "c", "C": "d", "D": "a"}),
    (4, {"A": "a", "B": "b", "C": "c", "D": "d"}),
])
def test_rotate_options(rotation, expected):
    rotated = rotate_options({"A": "a", "B": "b", "C": "c", "D": "d"}, rotation)
    assert rotated == expected
    assert list(rotated) == ["A", "B", "C", "D"]


@pytest.mark.parametrize(("shown", "letters", "rotation", "original"), [
    ("A", "ABCD", 0, "A"),
    ("B", "ABCD", 1, "A"),
    ("A", "ABCD", 1, "D"),
    ("C", "ABCD", 2, "A"),
    ("A", "ABCD", 3, "B"),
    ("B", "ABC", 2, "C"),
])
def test_unrotate(shown, letters, rotation, original):
    assert unrotate(shown, letters, rotation) == original


@pytest.mark.parametrize("rotation", range(4))
def test_rotation_round_trip(rotation):
    options = {"A": "左", "B": "前", "C": "后", "D": "右"}
    shown = rotate_options(options, rotation)
    for letter, text in shown.items():
        assert options[unrotate(letter, "ABCD", rotation)] == text


def test_unrotate_refuses_unknown_letter():
    with pytest.raises(InvalidPrediction):
        unrotate("E", "ABCD", 1)


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("ABCDEabcde ()<>/:：.。,，和或选项答案是 \n*ANSWERanswer前后左右")), max_size=60),
       style=st.sampled_from(["letter", "tag"]))
def test_parser_total_and_consistent(text, style):
    """Any text gives a known status; ok always carries an allowed letter and the others none."""
    status, letter = parse_answer(text, "ABCD", style, FE_OPTIONS)
    assert status in ("ok", "invalid", "api_error")
    assert (letter in "ABCD" and len(letter) == 1) if status == "ok" else letter is None
    assert (status == "api_error") == (not text.strip())


# The fast path must decide exactly as the full rule cascade does.
FAST_CASES = [
    ("B", "ABCD", "letter"), (" C ", "ABCD", "letter"), ("E", "ABCD", "letter"), ("b", "ABCD", "letter"),
    ("<ANSWER>B</ANSWER>", "ABCD", "tag"), ("trace... <ANSWER>C</ANSWER>", "ABCDEFGH", "tag"),
    ("<ANSWER>B</ANSWER> <answer>C</answer>", "ABCD", "tag"), ("<ANSWER>B</ANSWER> </answer>", "ABCD", "tag"),
    ("<ANSWER>E</ANSWER>", "ABCD", "tag"), ("<ANSWER>B</ANSWER> < answer >C", "ABCD", "tag"),
    ("**<ANSWER>B</ANSWER>**", "ABCD", "tag"), ("<ANS**WER>B</ANSWER>", "ABCD", "tag"),
    ("＜ANSWER＞A＜/ANSWER＞ <ANSWER>B</ANSWER>", "ABCD", "tag"),
]


@pytest.mark.parametrize("response,letters,style", FAST_CASES)
def test_fast_path_agrees_with_full_rules(response, letters, style):
    from core.parsing import _parse_slow

    assert parse_answer(response, letters, style) == _parse_slow(response, letters, style, None)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ABCDabc <>/ANSWERanswer*`_.")), max_size=40),
       st.sampled_from(["letter", "tag"]))
def test_fast_path_agrees_on_random_text(text, style):
    from core.parsing import _parse_slow

    if text.strip():
        assert parse_answer(text, "ABCD", style) == _parse_slow(text, "ABCD", style, None)


FAST_CASES_MORE = [
    ("x < y, so <ANSWER>B</ANSWER>", "ABCD", "tag"), ("The answer is C. <ANSWER>B</ANSWER>", "ABCD", "tag"),
    ("a<b <ANSWER>B</ANSWER> </ answer>", "ABCD", "tag"), ("<ANSWER>B</ANSWER> answer <answer", "ABCD", "tag"),
    ("<ANSWER>b</ANSWER>", "ABCD", "tag"), ("<ANSWER>H</ANSWER>", "ABCDEFGH", "tag"), ("\u3000", "ABCD", "tag"),
    ("\x1c", "ABCD", "letter"), ("\x85", "ABCD", "tag"), ("\u200b", "ABCD", "letter"),
]


@pytest.mark.parametrize("response,letters,style", FAST_CASES + FAST_CASES_MORE)
def test_fast_parse_agrees_with_full_rules(response, letters, style):
    from core.parsing import _parse_slow, fast_parse

    fast = fast_parse(response, letters, style)
    if not response.strip():
        assert fast == ("api_error", None)
    elif fast is not None:
        assert fast == _parse_slow(response, letters, style, None)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list(" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u2028\u3000\u200bA")), max_size=6))
def test_fast_parse_empty_means_strip_empty(text):
    from core.parsing import fast_parse

    assert (fast_parse(text, "ABCD", "tag") == ("api_error", None)) == (not text.strip())


# The full rules with their shortcuts (needle prechecks, the tag style's final-line cache) decide exactly as
# without them. The texts mix marker words, tag marks, letters, separators, article cases, and characters that
# IGNORECASE or NFKC treat specially (long s, Kelvin sign, dotless i, full-width letters).
SHORTCUT_TOKENS = st.one_of(
    st.sampled_from(list("ABCDEFGHab")),
    st.sampled_from(["answer", "ANSWER", "Answer:", "Final answer:", "The answer is", "answer would be option",
                     "choose", "pick", "select", "go with", "option", "choice", "\\boxed{", "<answer>", "</answer>",
                     "<ANSWER>", "</ANSWER>", "答案", "答：", "答案是", "选项", "选", "所以选", "选择"]),
    st.sampled_from([" ", " ", ", ", " or ", " and ", "和", "或", "/", ".", ". ", "\n", ":", "：", "(", ")", "!"]),
    st.sampled_from(["cat", "A cat", "A or", "is", "left", "opt A", "opt B", "inal answer: b", "前", "信息不足", "*",
                     "`", "_", "__", "<", "ſ", "K", "ı", "Ｂ", "＜", "go", "goption"]),
)


def _full_rules(text, letters, style, options, shortcuts):
    from core import parsing

    saved = parsing._SHORTCUTS
    parsing._SHORTCUTS = shortcuts
    try:
        return parsing._parse_slow(text, letters, style, options)
    finally:
        parsing._SHORTCUTS = saved


@settings(max_examples=1500, deadline=None)
@given(st.lists(SHORTCUT_TOKENS, max_size=12).map("".join),
       st.sampled_from(["ABCD", "ABCDEFGH"]), st.sampled_from(["letter", "tag"]),
       st.sampled_from([None, {}, FE_OPTIONS, EN_OPTIONS, {c: f"opt {c}" for c in "ABCDEFGH"},
                        {"A": "inal answer: b", "B": "x"}]))
def test_shortcuts_agree_with_full_rules(text, letters, style, options):
    if not text.strip():
        return
    want = _full_rules(text, letters, style, options, False)
    assert _full_rules(text, letters, style, options, True) == want
    assert _full_rules(text, letters, style, options, True) == want  # again: now from the final-line cache
    assert parse_answer(text, letters, style, options) == want


@settings(max_examples=800, deadline=None)
@given(st.tuples(st.lists(SHORTCUT_TOKENS, max_size=4), SHORTCUT_TOKENS.filter(lambda t: len(t) > 1),
                 st.lists(st.tuples(st.sampled_from([" ", ": ", " or ", ", ", " is ", "\n"]),
                                    st.sampled_from(list("ABCDEFGHab") + ["A cat", "opt B", "前"])), max_size=3),
                 st.lists(SHORTCUT_TOKENS, max_size=3)).map(lambda t: " ".join(t[0]) + " " + t[1] + "".join(
                     a + b for a, b in t[2]) + " ".join(t[3])),
       st.sampled_from(["ABCD", "ABCDEFGH"]), st.sampled_from(["letter", "tag"]),
       st.sampled_from([None, FE_OPTIONS, EN_OPTIONS, {c: f"opt {c}" for c in "ABCDEFGH"}]))
def test_shortcuts_agree_after_markers(text, letters, style, options):
    """As above, with a marker word followed by letters and separators (where the marker levels decide)."""
    if text.strip():
        want = _full_rules(text, letters, style, options, False)
        assert _full_rules(text, letters, style, options, True) == want
        assert parse_answer(text, letters, style, options) == want


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["answer", "answer is", "answer would be option", "choose", "pick",
                                           "select", "go with", "go  with", "option", "choice", "\\boxed{", "<answer>",
                                           "< answer >", "goption", "choices", "picky", "x", "B", ":", "(", "\n"]),
                          st.sampled_from([str.lower, str.upper, str.title, str.swapcase])).map(lambda t: t[1](t[0])),
                max_size=6).map(" ".join))
def test_needles_cover_every_marker_match(text):
    """The shortcut's soundness: in ASCII text, whatever a marker pattern matches contains one of its needles."""
    from core import parsing

    needles = parsing._needles_in(text)
    assert needles is not None  # ASCII
    for pattern, own in parsing._NEEDLES.items():
        if parsing._rx(pattern, parsing._I).search(text):
            assert not needles.isdisjoint(own), (pattern, text)


def test_final_line_cache_keeps_options_apart():
    """The cached final-line decision depends on the options (an option text can name the letter)."""
    text = "Reasoning.\nFinal answer: B"
    assert parse_answer(text, "ABCDEFGH", "tag", {"A": "x", "F": "y"}) == ("ok", "B")
    assert parse_answer(text, "ABCDEFGH", "tag", {"F": "inal answer: b"}) == parse_answer(
        text, "ABCDEFGH", "tag", {"F": "inal answer: b"}) == _full_rules(
        text, "ABCDEFGH", "tag", {"F": "inal answer: b"}, False)
    opts = {"A": ["not", "a", "string"], "B": "x"}  # a caller's own dict: not cached, still decided
    assert parse_answer(text, "ABCD", "tag", opts) == _full_rules(text, "ABCD", "tag", opts, False)
