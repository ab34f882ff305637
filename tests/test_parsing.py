"""Answer parsers (SPEC §4; 000 App. A, 002 App. C.2) and the rotation convention (SPEC §3)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import InvalidPrediction
from core.parsing import parse_answer, rotate_options, unrotate


@pytest.fixture(autouse=True)
def _no_kept_decisions():
    """Each test starts with core.parsing's decision caches empty (the final-line cache and `_OPTION_FREE`), so a
    decision an earlier test left there never answers for the rules this test checks (mutation testing runs
    the tests of each mutant in a process forked after the tests ran once: a warm cache hid changed rules)."""
    from core import parsing

    parsing._final_line_cached.cache_clear()
    parsing._OPTION_FREE.clear()

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
    # markdown marks inside a second tag: normalisation removes them, and the two tags then disagree (invalid)
    ("<ANSWER>B</ANSWER><ANS*WER>C</ANS*WER>", "ABCD", "tag"), ("<ANSWER>B</ANSWER><ANS`WER>C</ANS`WER>", "ABCD", "tag"),
    ("AB", "ABCD", "letter"), ("BC", "ABCD", "letter"),  # two letters are no one-letter answer
]


def test_tag_style_reads_option_texts_the_final_line_cache_cannot_key():
    """A caller's option texts that cannot be hashed (so the final-line cache cannot key them) are read all the same:
    "A left" is option A's own text after the letter A, not the article (rule 6)."""
    class Unhashable(str):
        __hash__ = None  # type: ignore[assignment]

    options = {k: Unhashable(v) for k, v in EN_OPTIONS.items()}
    assert parse_answer("Reasoning.\nA left", "ABCD", "tag", options) == (OK, "A")
    assert parse_answer("Reasoning.\nA left", "ABCD", "tag", None) == (INV, None)


def test_fast_parse_defaults_to_the_letter_style_over_abcd():
    from core.parsing import fast_parse

    assert fast_parse("B") == ("ok", "B") and fast_parse(" C\n") == ("ok", "C") and fast_parse("E") is None


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
    from core import parse_evidence, parsing

    saved = parse_evidence._SHORTCUTS
    parse_evidence._SHORTCUTS = shortcuts
    try:
        return parsing._parse_slow(text, letters, style, options)
    finally:
        parse_evidence._SHORTCUTS = saved


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


@pytest.mark.parametrize("text", ["The answer is A. Waıt, the answer is C.", "答案是A。Waıt, the answer is C."])
def test_shortcuts_agree_on_a_cue_with_a_dotless_i(text):
    """IGNORECASE matches the dotless "ı" to "i", so "Waıt" is a self-correction cue; the shortcuts' precheck
    (`_might_correct`) must see it too."""
    assert _full_rules(text, "ABCD", "letter", None, False) == (OK, "C")
    assert _full_rules(text, "ABCD", "letter", None, True) == (OK, "C")
    assert parse_answer(text, "ABCD", "letter") == (OK, "C")


def test_final_line_cache_keeps_options_apart():
    """The cached final-line decision depends on the options (an option text can name the letter)."""
    text = "Reasoning.\nFinal answer: B"
    assert parse_answer(text, "ABCDEFGH", "tag", {"A": "x", "F": "y"}) == ("ok", "B")
    assert parse_answer(text, "ABCDEFGH", "tag", {"F": "inal answer: b"}) == parse_answer(
        text, "ABCDEFGH", "tag", {"F": "inal answer: b"}) == _full_rules(
        text, "ABCDEFGH", "tag", {"F": "inal answer: b"}, False)
    opts = {"A": ["not", "a", "string"], "B": "x"}  # a caller's own dict: not cached, still decided
    assert parse_answer(text, "ABCD", "tag", opts) == _full_rules(text, "ABCD", "tag", opts, False)


# Answers read as a careful person reads them (000 App. A "never converted to a guessed answer", 002 C.2; issue 13
# point 8): one table per class, English and Chinese, with real-looking option texts. Each row: response, options,
# the letter-style result.
OPTION_WORD = {"A": "option text 1", "B": "option text 2", "C": "option text 3", "D": "option text 4"}
OPTION_WORD_ZH = {"A": "选项一所描述的情形", "B": "选项二所描述的情形", "C": "选项三所描述的情形", "D": "选项四所描述的情形"}
CAREFUL_CASES = {
    "first line letter, explanation names others": [
        ("B\nOption A is wrong because the lamp is behind the sofa, and C would need the camera to face the door.",
         EN_OPTIONS, (OK, "B")),
        ("C. The cup is behind the book from the camera; A and D are ruled out, B is the opposite side.",
         EN_OPTIONS, (OK, "C")),
        ("**Answer: D**\n\nExplanation: in image 2 the chair faces the window, so A (left) and B (front) cannot "
         "hold; C ignores the door.", EN_OPTIONS, (OK, "D")),
        ("(B)\nA would require the camera to face north; D is the opposite.", EN_OPTIONS, (OK, "B")),
        ("B\n解析：选项A是左边，选项C是后面，都与第2张图不符，所以答案是B。", FE_OPTIONS, (OK, "B")),
        ("D。\n理由：从第1张图看，A和B都不对，C也不成立。", FE_OPTIONS, (OK, "D")),
        ("B（前）。A与图1矛盾。", FE_OPTIONS, (OK, "B")),
        # the options echoed first are no opening answer
        ("A. left\nB. front\nC. behind\nD. right\nAnswer: C", EN_OPTIONS, (OK, "C")),
        ("A. 左 B. 前 C. 后 D. 右\n答案：C", FE_OPTIONS, (OK, "C")),
        # the explanation's own answer marker disagrees: no single commitment
        ("B\nHowever, the answer is D.", EN_OPTIONS, (INV, None)),
        ("B\n综上，答案是D。", FE_OPTIONS, (INV, None)),
    ],
    "letters ruled out, then the correct choice": [
        ("Option A would put the cup left of the book, which contradicts image 1. B is impossible because the book "
         "hides the front. C ignores the second view. The correct choice is D.", EN_OPTIONS, (OK, "D")),
        ("A is ruled out by image 1, B by image 2, and C by the door. The correct option is D.", EN_OPTIONS, (OK, "D")),
        ("A and B contradict the first view, so neither fits; the best option is C.", EN_OPTIONS, (OK, "C")),
        ("It is not A, so D.", EN_OPTIONS, (OK, "D")),
        ("A is wrong; B is correct.", EN_OPTIONS, (OK, "B")),
        ("选项A与图1矛盾，选项B被图2排除，选项C忽略了门的位置，正确的选项是D。", FE_OPTIONS, (OK, "D")),
        ("A不对，B也不对，C错误，正确的是D。", FE_OPTIONS, (OK, "D")),
        ("选项A错误，选项B正确。", FE_OPTIONS, (OK, "B")),
        ("A和B都不对，所以选C。", FE_OPTIONS, (OK, "C")),
        ("A is not the answer; it is C.", EN_OPTIONS, (OK, "C")),
        ("不应该是A，应该是C。", FE_OPTIONS, (OK, "C")),
    ],
    "self-correction: the last committed answer": [
        ("The answer is B. Wait, looking again, it is D.", EN_OPTIONS, (OK, "D")),
        ("The answer is B.\nActually, on closer inspection the mug is to the right, so the answer is D.",
         EN_OPTIONS, (OK, "D")),
        ("I'd go with A. On second thought, C fits both views.", EN_OPTIONS, (OK, "C")),
        ("The answer is B. Wait, let me double-check the second image. Yes, B.", EN_OPTIONS, (OK, "B")),
        ("The answer is B.\nwait", EN_OPTIONS, (OK, "B")),  # a cue without a new answer retracts nothing
        ("答案是B。等等，再看一遍，应该是D。", FE_OPTIONS, (OK, "D")),
        ("我选A。不对，仔细看第二张图，应该选C。", FE_OPTIONS, (OK, "C")),
        ("答案是C。其实，第3张图显示杯子在右边，所以答案是D。", FE_OPTIONS, (OK, "D")),
        # retracted without a new answer, or corrected to two letters: nothing committed
        ("The answer is B. Wait, it is not B.", EN_OPTIONS, (INV, None)),
        ("答案是B。等等，应该是A或D。", FE_OPTIONS, (INV, None)),
        # a retraction that names no new letter commits to nothing (000 App. A, 002 C.2; issue 25 point 4)
        ("The answer is B. Actually, I was wrong.", EN_OPTIONS, (INV, None)),
        ("答案是B。不对。", FE_OPTIONS, (INV, None)),
        ("Answer: B? Actually no.", EN_OPTIONS, (INV, None)),
        ("The answer is B. Scratch that.", EN_OPTIONS, (INV, None)),
        ("答案是B。我错了。", FE_OPTIONS, (INV, None)),
        # ... unless a new letter follows, or the cue withdraws nothing
        ("Answer: B? Actually no, it is C.", EN_OPTIONS, (OK, "C")),
        ("答案是B。不对，应该选C。", FE_OPTIONS, (OK, "C")),
        ("The answer is B. Actually, that matches the second image.", EN_OPTIONS, (OK, "B")),
    ],
    "negation commits to nothing": [
        ("It is definitely not A.", EN_OPTIONS, (INV, None)),
        ("The answer is not A.", EN_OPTIONS, (INV, None)),
        ("It cannot be C.", EN_OPTIONS, (INV, None)),
        ("A can be ruled out.", EN_OPTIONS, (INV, None)),
        ("肯定不是A。", FE_OPTIONS, (INV, None)),
        ("答案不是A。", FE_OPTIONS, (INV, None)),
        ("可以排除C。", FE_OPTIONS, (INV, None)),
        ("不一定是A。", FE_OPTIONS, (INV, None)),
        ("与之相对的是A，但题目问的是另一侧。", FE_OPTIONS, (OK, "A")),  # no marker: one standalone letter
        # a negation beside a committed answer leaves the answer
        ("The answer is B, not A.", EN_OPTIONS, (OK, "B")),
        ("I think the answer is C, because A is not possible.", EN_OPTIONS, (OK, "C")),
        ("答案是B，而不是A。", FE_OPTIONS, (OK, "B")),
    ],
    "option texts that begin with the word option": [
        ("The answer is option text 3", OPTION_WORD, (OK, "C")),
        ("The answer is option text 3.", OPTION_WORD, (OK, "C")),
        ("Answer: option text 2", OPTION_WORD, (OK, "B")),
        ("I choose option text 4", OPTION_WORD, (OK, "D")),
        ("option text 1", OPTION_WORD, (OK, "A")),
        ("The answer is option C", OPTION_WORD, (OK, "C")),
        ("答案是选项三所描述的情形", OPTION_WORD_ZH, (OK, "C")),
        ("答案：选项二所描述的情形。", OPTION_WORD_ZH, (OK, "B")),
        ("The answer is option text 5", OPTION_WORD, (INV, None)),  # no such option
    ],
    "no single option stays invalid": [
        ("A or B", EN_OPTIONS, (INV, None)),
        ("The answer is B or D; I cannot tell.", EN_OPTIONS, (INV, None)),
        ("A is wrong. B is right.", FE_OPTIONS, (INV, None)),  # "right" is also a direction: no commitment
        ("Option A is wrong and option C is wrong.", EN_OPTIONS, (INV, None)),
        ("选项A和选项B都有可能。", FE_OPTIONS, (INV, None)),
        ("选项A错误，选项C错误。", FE_OPTIONS, (INV, None)),
        ("I cannot tell from these images.", EN_OPTIONS, (INV, None)),
        ("无法判断。", FE_OPTIONS, (INV, None)),
    ],
}


@pytest.mark.parametrize(("response", "options", "expected"),
                         [pytest.param(*row, id=f"{cls}:{i}") for cls, rows in CAREFUL_CASES.items()
                          for i, row in enumerate(rows)])
def test_letter_style_reads_like_a_careful_person(response, options, expected):
    assert parse_answer(response, "ABCD", "letter", options) == expected


# The tag style without a tag reads the final line only (002 C.2); a self-correction on that line counts there too.
@pytest.mark.parametrize(("response", "expected"), [
    ("Reasoning about the rotation.\nThe answer is B. Wait, looking again, it is D.", (OK, "D")),
    ("推理过程略。\n答案是B。等等，应该是D。", (OK, "D")),
    ("Reasoning.\nThe correct choice is C.", (OK, "C")),
    ("推理。\n正确的选项是A。", (OK, "A")),
    ("Reasoning.\nIt is definitely not A.", (INV, None)),
    ("推理。\n肯定不是A。", (INV, None)),
    ("B\nThe rows rotate clockwise, so A and C cannot hold.", (INV, None)),  # the final line commits to nothing
    ("Reasoning.\nThe answer is B. Actually, I was wrong.", (INV, None)),  # retracted, no new letter
    ("推理。\n答案是B。不对。", (INV, None)),
    ("Reasoning.\nAnswer: B? Actually no.", (INV, None)),
    ("Reasoning.\nAnswer: B? Actually no, it is C.", (OK, "C")),
])
def test_tag_style_final_line_careful(response, expected):
    assert parse_answer(response, "ABCD", "tag") == expected


CAREFUL_TOKENS = st.one_of(
    SHORTCUT_TOKENS,
    st.sampled_from(["Wait", "wait, ", "Actually", "On second thought", "looking again", "not ", "isn't ",
                     "cannot be ", " is wrong", " is correct", " can be ruled out", "so ", "Therefore, ", "thus ",
                     "The correct choice is ", "the best option is ", "final option: ", "等等，", "不对，", "其实",
                     "不是", "错误", "也不对", "正确的选项是", "所以", "排除", "option text 3", "(前)", "。",
                     "it is ", "It's ", "this is ", "that must be ", "应该是", "肯定是", "no", "nope", "not really",
                     "I'm wrong", "That’s wrong", " incorrect", "not right", "Never mind", "nevermind", "错了",
                     "不是这样", "的", "等一下", "Scratch that"]),
)


@settings(max_examples=800, deadline=None)
@given(st.lists(CAREFUL_TOKENS, max_size=12).map("".join), st.sampled_from(["letter", "tag"]),
       st.sampled_from([None, FE_OPTIONS, EN_OPTIONS, OPTION_WORD]))
def test_shortcuts_agree_on_careful_reading_words(text, style, options):
    """The shortcuts (needles, the self-correction precheck, the final-line cache) stay exact on the new words."""
    if text.strip():
        want = _full_rules(text, "ABCD", style, options, False)
        assert _full_rules(text, "ABCD", style, options, True) == want
        assert parse_answer(text, "ABCD", style, options) == want


# --------------------------------------------------------------------------- a row per rule (issue 28 point 3)

# Each row isolates one rule of the module docstring: with that rule alone removed, the row's expected result
# changes (checked once by removing each rule by hand; docs/TESTING.md lists the removals). EN_OPTIONS: A left,
# B front, C behind, D right.
RULE_ROWS = [
    # (rule, response, style, options, expected)
    ("1 bare letter with another option's text", "B. 左", "letter", FE_OPTIONS, (INV, None)),
    ("1b opening answer then explanation", "B\nA is wrong because the cup is in front.", "letter", FE_OPTIONS,
     (OK, "B")),
    ("2 answer marker over a mention", "B looks plausible, but the answer is C.", "letter", None, (OK, "C")),
    ("2 letter list after a marker", "答案是A或B", "letter", None, (INV, None)),
    ("3 choice verb over a mention", "B looks plausible, so I choose C.", "letter", None, (OK, "C")),
    ("3 affirmation", "Option A is wrong. C is correct.", "letter", None, (OK, "C")),
    ("4 option mention over a standalone letter", "Option C fits, as image B shows.", "letter", None, (OK, "C")),
    ("5 option text after a marker", "The answer is behind.", "letter", EN_OPTIONS, (OK, "C")),
    ("6 standalone letter", "Image 2 suggests D.", "letter", None, (OK, "D")),
    ("6 article A ignored", "A cat sits to the right of D.", "letter", None, (OK, "D")),
    ("6 A with option A's own text is the letter", "Image 2 says A left of the mug.", "letter", EN_OPTIONS,
     (OK, "A")),
    ("6 A before a connective is the letter", "A or D, hard to tell.", "letter", None, (INV, None)),
    ("ruled out at a commitment", "The answer is not A; the answer is D.", "letter", None, (OK, "D")),
    ("ruled out at a mention", "It is definitely not A.", "letter", None, (INV, None)),
    ("lowercase after a marker", "answer: b", "letter", None, (OK, "B")),
    ("letters outside `letters`", "The answer is E.", "letter", None, (INV, None)),
    ("self-correction: Actually", "The answer is A. Actually, the answer is C.", "letter", None, (OK, "C")),
    ("self-correction: Wait", "The answer is A. Wait, the answer is C.", "letter", None, (OK, "C")),
    ("self-correction: 不对", "答案是A。不对，答案是C。", "letter", None, (OK, "C")),
    ("self-correction: 等等", "答案是A。等等，答案是C。", "letter", None, (OK, "C")),
    ("empty response", "  \n", "letter", None, (ERR, None)),
    ("tag wins over the untagged text", "<ANSWER>C</ANSWER>\nSo B is what I'd go with.", "tag", None, (OK, "C")),
    ("unclosed tag", "<ANSWER>C</ANSWER> <ANSWER>D", "tag", None, (INV, None)),
    ("tag holding a letter and another option's text", "<ANSWER>B. 左</ANSWER>", "tag", FE_OPTIONS, (INV, None)),
    ("untagged: the final line only", "The answer is A.\nFinal answer: B", "tag", None, (OK, "B")),
    ("untagged: a standalone letter of the final sentence", "Considering A and B. Then C.", "tag", None, (OK, "C")),
    ("untagged: a bare letter with another option's text, then a cue that names none",
     "Reasoning.\nB. left. Wait, let me look again.", "tag", EN_OPTIONS, (INV, None)),
    ("untagged: an option's text is no letter", "Reasoning.\nThe answer is 前.", "tag", FE_OPTIONS, (INV, None)),
]


# Self-corrections and retractions (docs/METRICS.md "Self-corrections first"): a row per cue, each failing when
# that cue alone is removed from core.parsing (_CORRECTION, _RETRACTION, _WITHDRAWN; checked by hand, docs/TESTING.md).
# A cut cue followed by a new answer: without the cue both answers are read together and conflict (invalid).
CUT_CUES = ["Wait", "No wait", "Hold on", "Actually", "On second thought", "Looking again", "Looking at it again",
            "On closer inspection", "Correction", "Let me reconsider", "I was wrong", "Scratch that"]
CUT_CUES_ZH = ["等等", "等一下", "不对", "更正", "纠正", "再看", "重新看", "仔细一看", "其实", "我错了"]
RETRACTION_ROWS = [
    # (cue, response, expected): a retraction that names no new letter commits to nothing (000 App. A)
    ("no", "The answer is B. Wait, no.", (INV, None)),
    ("nope", "The answer is B. Hold on, nope.", (INV, None)),
    ("not really", "The answer is B. Actually, not really.", (INV, None)),
    ("not so", "The answer is B. On second thought, not so.", (INV, None)),
    ("not quite", "The answer is B. Actually, not quite.", (INV, None)),
    ("I was wrong", "The answer is B. I was wrong.", (INV, None)),
    ("I'm wrong", "The answer is B. I'm wrong.", (INV, None)),
    ("I am wrong", "The answer is B. I am wrong.", (INV, None)),
    ("that's wrong (audit)", "The answer is B. That's wrong.", (INV, None)),
    ("that’s wrong (a typographic apostrophe)", "The answer is B. That’s wrong.", (INV, None)),
    ("this is incorrect", "The answer is B. This is incorrect.", (INV, None)),
    ("it was not right", "The answer is B. It was not right.", (INV, None)),
    ("scratch that", "The answer is B. Scratch that.", (INV, None)),
    ("never mind (audit)", "The answer is B. Never mind.", (INV, None)),
    ("不对", "答案是B。不对。", (INV, None)),
    ("我错了", "答案是B。我错了。", (INV, None)),
    ("错了 (audit)", "答案是B。错了。", (INV, None)),
    ("不是这样 (audit)", "答案是B。不是这样。", (INV, None)),
    # the optional cue before a retraction, in both languages
    ("Wait before a retraction", "The answer is B. Wait, no.", (INV, None)),
    ("Hold on before a retraction", "The answer is B. Hold on, that's wrong for the door.", (INV, None)),
    ("Actually before a retraction", "The answer is B. Actually, no.", (INV, None)),
    ("On second thought before a retraction", "The answer is B. On second thought, no.", (INV, None)),
    ("等等 before a retraction (audit)", "答案是B。等等，错了。", (INV, None)),
    ("等一下 before a retraction", "答案是B。等一下，错了。", (INV, None)),
    ("其实 before a retraction", "答案是B。其实不对。", (INV, None)),
    # where a retraction word is not a retraction
    ("no / nope / not really only as a whole clause", "The answer is B. Actually, no other view fits.", (OK, "B")),
    ("a withdrawal opens a sentence to cut (after a comma it is that sentence's)", "答案是B。A说在左边，错了。",
     (OK, "B")),
    ("a withdrawal cuts only as a whole clause", "答案是B。错了的是A。", (OK, "B")),
    ("a withdrawal cuts only as a whole clause (English)", "The answer is B. That's wrong for A only.", (OK, "B")),
    ("a withdrawal followed by a new letter", "答案是B。错了，应该是C。", (OK, "C")),
]


@pytest.mark.parametrize("cue", [pytest.param(c, id=f"cut-{i}") for i, c in enumerate(CUT_CUES + CUT_CUES_ZH)])
def test_each_self_correction_cue_cuts(cue):
    """The part after the cue decides; without the cue the two answers conflict (invalid)."""
    text = (f"答案是A。{cue}，答案是C。" if cue in CUT_CUES_ZH else f"The answer is A. {cue}, the answer is C.")
    assert parse_answer(text, "ABCD", "letter", None) == (OK, "C")
    assert parse_answer("Reasoning.\n" + text, "ABCD", "tag", None) == (OK, "C")  # the tag style's final line


@pytest.mark.parametrize(("cue", "response", "expected"),
                         [pytest.param(*row, id=f"retraction-{i}") for i, row in enumerate(RETRACTION_ROWS)])
def test_each_retraction_cue(cue, response, expected):
    assert parse_answer(response, "ABCD", "letter", FE_OPTIONS) == expected, cue
    assert parse_answer("Reasoning.\n" + response, "ABCD", "tag", None) == expected, cue


# pytest.param ids: an `ids=` list of non-ASCII names is escaped again at each collection in one process (mutmut
# collects, then runs the named tests in the same process), so "self-correction: 不对" would not be found then
@pytest.mark.parametrize(("rule", "response", "style", "options", "expected"),
                         [pytest.param(*row, id=row[0]) for row in RULE_ROWS])
def test_rule_rows(rule, response, style, options, expected):
    from core.parsing import fast_parse, full_parse

    assert parse_answer(response, "ABCD", style, options) == expected, rule
    if fast_parse(response, "ABCD", style) is None:  # the importers' path: fast_parse first, then full_parse
        assert full_parse(response, "ABCD", style, options) == expected, rule


@settings(max_examples=600, deadline=None)
@given(st.lists(SHORTCUT_TOKENS, max_size=8).map("".join), st.sampled_from(["ABCD", "ABCDEFGH"]),
       st.sampled_from(["letter", "tag"]),
       st.lists(st.sampled_from([FE_OPTIONS, EN_OPTIONS, {c: f"opt {c}" for c in "ABCDEFGH"},
                                 {"A": "inal answer: b", "B": "x"}, {"A": "cat", "B": "A cat"}]),
                min_size=2, max_size=4))
def test_option_free_decisions_agree_under_other_options(text, letters, style, option_sets):
    """A decision kept because the rules never read the option texts (core.parsing._OPTION_FREE) is the one the
    full rules give under any other options, whichever item's options came first."""
    from core import parsing

    if not text.strip():
        return
    parsing._OPTION_FREE.clear()
    for options in option_sets:
        assert parse_answer(text, letters, style, options) == _full_rules(text, letters, style, options, True)


def test_option_free_decision_is_kept_only_when_options_were_not_read():
    from core import parsing

    parsing._OPTION_FREE.clear()
    assert parse_answer("The answer is (B).", "ABCD", "letter", EN_OPTIONS) == (OK, "B")
    assert ("The answer is (B).", "ABCD", "letter") in parsing._OPTION_FREE
    assert parse_answer("left", "ABCD", "letter", EN_OPTIONS) == (OK, "A")  # an option text: read, not kept
    assert ("left", "ABCD", "letter") not in parsing._OPTION_FREE
    assert parse_answer("left", "ABCD", "letter", FE_OPTIONS) == (INV, None)
