"""core/foreign's readers row by row (docs/FORMATS.md "Other tools' files"): each documented column, answer form,
image cell and `--map` rule, and each refusal's file, line, field and message, without a store or a file (the
readers are pure; tests/test_import_foreign.py runs them through the importers on files the tools' layouts)."""

from __future__ import annotations

import base64
import io
import math

import pytest

from core.foreign import answers, hf, lmms_eval, vlmevalkit
from core.report import Report

AB = {"A": "left", "B": "right"}
EXPECTED_AB = "expected one of the letters AB, '(B)', 'B.', an option index 0..1 or an option's exact text"


def png(color: tuple[int, int, int] = (1, 2, 3)) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (8, 8), color).save(buf, format="PNG")
    return buf.getvalue()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def issues(report: Report) -> list[tuple[str, int, str, str]]:
    return [(i.file, i.line, i.field, i.message) for i in report.errors]


# ---- answers ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "null"), [(None, True), (math.nan, True), ("", True), (" \t", True), ("x", False),
                                             (0, False), (0.0, False), (False, False), ([], False)])
def test_is_null(value, null):
    assert answers.is_null(value) is null


@pytest.mark.parametrize(("value", "text"), [(3.0, "3"), (-2.0, "-2"), (2.5, "2.5"), (7, "7"), ("x", "x")])
def test_cell_text_drops_the_point_zero_of_integral_floats(value, text):
    assert answers.cell_text(value) == text


@pytest.mark.parametrize(("value", "texts"), [
    ("['a', 'b']", ["a", "b"]), (' ["a"] ', ["a"]), (("a", "b"), ["a", "b"]), (["x"], ["x"]),
    ("a, b", None), ("[a", None), ("['a'] # note", None), ("# ['a']", None), ("[1, 2]", None), ("[oops]", None), ("[1 +]", None), (["a", 1], None), (5, None),
])
def test_option_list(value, texts):
    assert answers.option_list(value) == texts


@pytest.mark.parametrize(("value", "letter"), [
    ("B", "B"), (" b ", "B"), ("(B)", "B"), ("[B]", "B"), ("( B )", "B"), ("B.", "B"), ("B)", "B"), ("B:", "B"),
    (1, "B"), (0, "A"), (1.0, "B"), ("1", "B"), (" 0 ", "A"), ("right", "B"), (" left ", "A"),
])
def test_letter_of_accepts_the_documented_forms(value, letter):
    assert answers.letter_of(value, AB) == (letter, "")


@pytest.mark.parametrize(("value", "why"), [
    (None, f"empty ({EXPECTED_AB})"),
    ("  ", f"empty ({EXPECTED_AB})"),
    (True, f"got True ({EXPECTED_AB})"),
    (2, f"index 2 is out of range ({EXPECTED_AB})"),
    (-1, f"index -1 is out of range ({EXPECTED_AB})"),
    ("2", f"index 2 is out of range ({EXPECTED_AB})"),
    ("E", f"got 'E' ({EXPECTED_AB})"),
    (1.5, f"got '1.5' ({EXPECTED_AB})"),
    ("up" * 40, f"got {'up' * 40!r:.60} ({EXPECTED_AB})"),
])
def test_letter_of_refusals_say_what_was_expected(value, why):
    assert answers.letter_of(value, AB) == (None, why)


def test_letter_of_an_option_text_shared_by_two_options():
    assert answers.letter_of("same", {"A": "same", "B": " same ", "C": "x"}) == (
        None, "'same' is the text of several options (A, B)")


def test_options_of_letters_in_order_and_past_h():
    assert answers.options_of(["x", "y"]) == {"A": "x", "B": "y"}
    nine = answers.options_of([str(i) for i in range(9)])
    assert list(nine) == [*"ABCDEFGH", "#9"] and nine["H"] == "7" and nine["#9"] == "8"


# ---- lmms-eval ----------------------------------------------------------------------------------------------


def test_lmms_eval_sample_shape_and_keys():
    assert lmms_eval.looks_like_samples({"doc_id": 0, "resps": []})
    assert not lmms_eval.looks_like_samples({"doc_id": 0}) and not lmms_eval.looks_like_samples({"resps": []})
    assert not lmms_eval.looks_like_samples([{"doc_id": 0, "resps": []}])
    obj = {"doc_id": 3, "doc": {"index": 7, "inner": {"id": "x"}}}
    assert lmms_eval.key_value(obj, "doc.index") == 7 and lmms_eval.key_value(obj, "doc_id") == 3
    assert lmms_eval.key_value(obj, "doc.inner.id") == "x"
    assert lmms_eval.key_value(obj, "doc.missing") is None and lmms_eval.key_value(obj, "doc.index.x") is None
    # the first of doc.index, doc.idx, doc.id, doc.question_id the first sample has (a null one does not count)
    assert lmms_eval.choose_key({"doc": {"idx": 1, "id": 2}}) == "doc.idx"
    assert lmms_eval.choose_key({"doc": {"index": 0, "idx": 1}}) == "doc.index"
    assert lmms_eval.choose_key({"doc": {"index": "", "question_id": "q"}}) == "doc.question_id"
    assert lmms_eval.choose_key({"doc": {"other": 1}}) == "doc_id"


@pytest.mark.parametrize(("resps", "text"), [
    ([["first", "second"]], "first"), (["only"], "only"), ("bare", "bare"), ([[3]], "3"), ([], None), ([[]], None),
    (None, None), ([None], None),
])
def test_lmms_eval_first_response(resps, text):
    report = Report()
    got = lmms_eval.sample_fields({"doc_id": 0, "doc": {}, "resps": [["raw"]], "filtered_resps": resps}, 1, "s.jsonl",
                                  report)
    assert got is not None and got[0] == (text if text is not None else "raw")


def test_lmms_eval_sample_fields_kept_beside_the_response():
    fields = lmms_eval.sample_fields
    report = Report()
    sample = {"doc_id": 0, "doc": {}, "target": "B", "resps": [["I think B."]], "filtered_resps": ["B"]}
    assert fields(sample, 1, "s.jsonl", report) == ("B", "I think B.", {"raw": "I think B.", "target": "B"})
    assert fields({**sample, "target": 2.0}, 1, "s.jsonl", report)[2] == {"raw": "I think B.", "target": "2"}
    assert fields({**sample, "target": ["B", "b"]}, 1, "s.jsonl", report)[2]["target"] == ["B", "b"]
    for empty in ("", None):
        assert fields({**sample, "target": empty}, 1, "s.jsonl", report)[2] == {"raw": "I think B."}
    no_target = {k: v for k, v in sample.items() if k != "target"}
    assert fields(no_target, 1, "s.jsonl", report)[2] == {"raw": "I think B."}
    # no filtered response: the raw one is parsed; no raw response: kept as ""
    assert fields({**sample, "filtered_resps": []}, 1, "s.jsonl", report)[:2] == ("I think B.", "I think B.")
    assert fields({**sample, "resps": []}, 1, "s.jsonl", report) == ("B", "", {"raw": "", "target": "B"})
    assert report.ok
    # as lmms-eval's tracker writes it: no doc, no arguments, no resps where they equal filtered_resps
    assert fields({"doc_id": 4, "target": "B", "filtered_resps": ["B"]}, 1, "s.jsonl", report) == (
        "B", "B", {"raw": "B", "target": "B"})
    assert lmms_eval.looks_like_samples({"doc_id": 4, "filtered_resps": ["B"]})


def test_lmms_eval_sample_refusals():
    report = Report()
    assert lmms_eval.sample_fields(["not", "a", "sample"], 2, "s.jsonl", report) is None
    assert lmms_eval.sample_fields({"doc_id": 0, "resps": []}, 3, "s.jsonl", report) is None
    assert lmms_eval.sample_fields({"doc_id": 0, "doc": {}, "resps": [], "filtered_resps": [[]]}, 4, "s.jsonl",
                                   report) is None
    assert issues(report) == [
        ("s.jsonl", 2, "(line)", "expected a JSON object (an lmms-eval sample)"),
        # issue 40: doc and resps are not required (lmms-eval's evaluation tracker leaves them out)
        ("s.jsonl", 3, "filtered_resps", "missing (an lmms-eval sample has doc_id and filtered_resps, and doc, "
                                         "target and resps where lmms-eval kept them)"),
        ("s.jsonl", 4, "filtered_resps", "expected a response (a string, or a list holding one)")]


# ---- VLMEvalKit ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "index"), [("12", 12), (12, 12), (12.0, 12), (" 7 ", 7), ("-3", -3), ("1a", None),
                                              ("", None), ("1.5", None), (2.5, None)])
def test_int_index(value, index):
    assert vlmevalkit.int_index(value) == index


def row(index: str, **cells: str) -> dict[str, str]:
    return {"index": index, "question": f"q{index}", "A": "x", "B": "y", "answer": "A", **cells}


def test_item_object_columns():
    report = Report()
    obj = vlmevalkit.item_object(row("3", hint="Look.", category="count", split="dev", image="zz", comment="c",
                                     source="", **{"l2-category": "perception", "C": " ", "D": "w"}),
                                 2, "generic", "d.tsv", report)
    assert obj == {"benchmark": "generic", "item_id": "3", "group_id": "3", "split": "dev", "kind": "count",
                   "question": "q3", "options": {"A": "x", "B": "y", "D": "w"}, "answer": "A",
                   "meta": {"copy": 0, "comment": "c", "l2-category": "perception", "hint": "Look."}}
    bare = vlmevalkit.item_object({"index": "k1", "A": "x", "B": "y"}, 2, "generic", "d.tsv", report)
    assert bare == {"benchmark": "generic", "item_id": "k1", "group_id": "k1", "split": "test", "kind": "",
                    "question": "", "options": {"A": "x", "B": "y"}, "meta": {}}  # no answer: none given
    assert report.ok


@pytest.mark.parametrize(("index", "indices", "group", "copy"), [
    ("5", set(), "5", 0),
    ("1000005", {"5"}, "5", 1),
    ("3000005", {"5", "1000005"}, "5", 3),
    ("1000005", set(), "1000005", None),  # its base row is not in the file: its own group
    ("-5", {"-5"}, "-5", None),
    ("abc", set(), "abc", None),
])
def test_item_object_circular_groups(index, indices, group, copy):
    obj = vlmevalkit.item_object(row(index), 2, "generic", "d.tsv", Report(), indices=frozenset(indices))
    assert obj is not None and obj["group_id"] == group and obj["meta"].get("copy") == copy


@pytest.mark.parametrize(("answer", "stored"), [("B", "B"), ("(B)", "B"), ("b", "B"), ("1", "B"), ("y", "B")])
def test_item_object_answer_forms(answer, stored):
    assert vlmevalkit.item_object(row("1", answer=answer), 2, "generic", "d.tsv", Report())["answer"] == stored


def test_item_object_cells_that_are_not_text():
    """A cell is filled when it is not empty (`is_null`: None, NaN or blanks), whatever its type."""
    obj = vlmevalkit.item_object({"index": "1", "question": "q", "A": "x", "B": 0, "C": math.nan, "n": 0,
                                  "m": math.nan}, 2, "generic", "d.tsv", Report())
    assert obj["options"] == {"A": "x", "B": 0} and obj["meta"] == {"copy": 0, "n": 0}


def test_item_object_refusals():
    report = Report()
    assert vlmevalkit.item_object(row(" "), 2, "generic", "d.tsv", report) is None
    assert vlmevalkit.item_object(row("1", answer="Z"), 3, "generic", "d.tsv", report) is None
    assert issues(report) == [("d.tsv", 2, "index", "missing (expected the row's index, an integer)"),
                              ("d.tsv", 3, "answer", "got 'Z' (expected one of the letters AB, '(B)', 'B.', an "
                                                     "option index 0..1 or an option's exact text)")]
    no_options = vlmevalkit.item_object({"index": "1", "answer": "Z"}, 4, "generic", "d.tsv", report)
    assert no_options["answer"] == "Z" and no_options["options"] == {}  # the item rules refuse it later


def images(rows, report=None):
    report = report if report is not None else Report()
    got = vlmevalkit.read_images(list(enumerate(rows, start=2)), "d.tsv", report)
    return [(r.blobs, r.paths) for r in got], issues(report)


def test_read_images_cells():
    one, two = png((1, 1, 1)), png((2, 2, 2))
    got, errs = images([
        {"index": "0", "image": b64(one)},
        {"index": "1", "image": repr([b64(one), b64(two)])},
        {"index": "2", "image": "0"},  # a reference to row 0
        {"index": "3", "image": " ", "image_path": "a.png"},
        {"index": "4", "image": "", "image_path": repr(["b.png", "a.png"])},
        {"index": "5", "image": ""},
    ])
    assert errs == []
    assert got == [([one], []), ([one, two], []), ([one], []), ([], ["a.png"]), ([], ["b.png", "a.png"]), ([], [])]
    assert images([{"index": "0", "question": "q"}, {"index": "1"}]) == ([([], []), ([], [])], [])
    # a meta-only TSV: `image_path` without any `image` column
    assert images([{"index": "0", "image_path": "a.png"}, {"index": "1", "image_path": ""}]) == (
        [([], ["a.png"]), ([], [])], [])


def test_read_images_refusals():
    good = b64(png())
    got, errs = images([
        {"index": "0", "image": "77"},
        {"index": "1", "image": good},
        {"index": "2", "image": "1"},
        {"index": "3", "image": "2"},
        {"index": "4", "image": "x" * 65},
        {"index": "5", "image": repr([good, "!" * 8])},
        {"index": "6", "image": "[" + "1, " * 30 + "1]"},
        {"index": "7", "image": "", "image_path": "[1, 2]"},
        {"index": "8", "image": repr(["", good])},
    ])
    assert errs == [
        ("d.tsv", 2, "image", "'77' names no row's index (a cell of at most 64 characters is a reference to the "
                              "row holding the image)"),
        ("d.tsv", 5, "image", "refers to row '2' (line 4), whose image cell is itself a reference (expected base64 "
                              "image data there)"),
        ("d.tsv", 6, "image", "the cell is not valid base64"),
        ("d.tsv", 7, "image", "image 2 of 2 is not valid base64"),
        ("d.tsv", 8, "image", "expected base64 image data or the text of a Python list of base64 strings"),
        ("d.tsv", 9, "image_path", "expected a file name or the text of a list of file names"),
        ("d.tsv", 10, "image", "image 1 of 2 is not valid base64"),
    ]
    good_blob = base64.b64decode(good)
    assert got == [([], []), ([good_blob], []), ([good_blob], []), ([], []), ([], []), ([good_blob], []), ([], []),
                   ([], []), ([good_blob], [])]  # a refused cell gives no image (and no path)


def test_read_images_reference_limit_and_where():
    """A cell of at most 64 characters is a reference, a longer one is data; a bad cell reached through a
    reference says which row it came from."""
    _got, errs = images([{"index": "0", "image": "x" * 64}])
    assert errs == [("d.tsv", 2, "image", f"{'x' * 64!r:.70} names no row's index (a cell of at most 64 characters "
                                          "is a reference to the row holding the image)")]
    _got, errs = images([{"index": "0", "image": "!" * 65}, {"index": "1", "image": " 0 "}])
    assert errs == [("d.tsv", 2, "image", "the cell is not valid base64"),
                    ("d.tsv", 3, "image", "the cell is not valid base64 (from the row with index 0, line 2)")]


def test_prediction_object():
    report = Report()
    obj, kept = vlmevalkit.prediction_object({"index": 12.0, "prediction": 3.0, "answer": "B"}, 2, "p.xlsx", report)
    assert obj == {"item_id": "12", "response": "3"} and kept == {}
    obj, kept = vlmevalkit.prediction_object({"index": " 4 ", "prediction": None, "opt": " C ", "pred": "D",
                                              "hit": 0, "log": "no match"}, 3, "p.xlsx", report)
    assert obj == {"item_id": "4", "response": ""} and kept == {"extracted": "C", "hit": 0, "log": "no match"}
    _obj, kept = vlmevalkit.prediction_object({"index": 1, "prediction": "x", "extracted": "", "pred": "D",
                                               "hit": [1]}, 4, "p.xlsx", report)
    assert kept == {"extracted": "D", "hit": "[1]"}
    assert report.ok
    assert vlmevalkit.prediction_object({"index": "", "prediction": "x"}, 5, "p.xlsx", report) is None
    assert vlmevalkit.prediction_object({"index": 1}, 6, "p.xlsx", report) is None
    assert issues(report) == [("p.xlsx", 5, "index", "missing (expected the item's index)"),
                              ("p.xlsx", 6, "prediction", "missing (expected the raw model response)")]


# ---- Hugging Face -------------------------------------------------------------------------------------------


def test_parse_map():
    m = hf.parse_map(" item_id = id ,, question=q,options=A+B+C,images=i1+i2,answer=gold,kind=cat,split=s,"
                     "meta.topic=t,group_id=pair:other")
    assert m.columns == {"item_id": ["id"], "question": ["q"], "options": ["A", "B", "C"], "images": ["i1", "i2"],
                         "answer": ["gold"], "kind": ["cat"], "split": ["s"]}
    assert m.meta == {"topic": "t"} and m.group == ("pair", "other") and m.preset == ""
    assert m.used() == {"id", "q", "A", "B", "C", "i1", "i2", "gold", "cat", "s", "t", "other"}
    assert hf.parse_map("group_id=circular:index").group == ("circular", "index")
    assert hf.parse_map("group_id=pair:doc:id").group == ("pair", "doc:id")  # the first colon splits
    assert hf.parse_map("group_id=g").group == ("column", "g")
    assert hf.parse_map("item_id=id").used() == {"id"}


@pytest.mark.parametrize(("text", "message"), [
    ("item_id", "--map: 'item_id' is not FIELD=COLUMN"),
    ("=id", "--map: '=id' is not FIELD=COLUMN"),
    ("item_id=", "--map: 'item_id=' is not FIELD=COLUMN"),
    ("meta.=x", "--map: 'meta.=x' names no meta field (expected meta.NAME=COLUMN)"),
    ("group_id=pair:", "--map: group_id='pair:' (expected COLUMN, pair:COLUMN or circular:COLUMN)"),
    ("group_id=other:c", "--map: group_id='other:c' (expected COLUMN, pair:COLUMN or circular:COLUMN)"),
    ("question=a+b", "--map: 'question=a+b': only images and options take several columns joined by '+'"),
    ("options=a+", "--map: 'options=a+': only images and options take several columns joined by '+'"),
    ("colour=c", "--map: unknown field 'colour' (expected one of item_id, group_id, question, options, answer, "
                 "images, kind, split or meta.NAME)"),
])
def test_parse_map_refusals(text, message):
    with pytest.raises(hf.BadMap) as info:
        hf.parse_map(text)
    assert str(info.value) == message


def test_detect_and_resolve_presets():
    muir = {"idx", "image_list", "options", "answer", "counterpart_idx", "question", "task"}
    assert hf.detect_preset(muir | {"sub_task", "choices", "image_1"}) == "muirbench"  # checked in order
    assert hf.detect_preset({"idx", "sub_task", "choices", "answer", "image_1"}) == "blink"
    assert hf.detect_preset({"idx", "question"}) is None
    cols = ["index", "question", "hint", "A", "B", "C", "answer", "category", "image", "comment"]
    m = hf.resolve(cols, None, None, "mmb.parquet")
    assert m.preset == "mmbench" and m.columns["options"] == ["A", "B", "C"] and "split" not in m.columns
    assert m.meta == {"hint": "hint", "comment": "comment"} and m.group == ("circular", "index")
    blink = hf.resolve(["idx", "question", "choices", "answer", "image_2", "sub_task"], None, "blink", "b.parquet")
    assert blink.preset == "blink" and blink.columns["images"] == ["image_2"]
    # a preset whose image columns are all absent keeps its first, which is then missing from the file
    with pytest.raises(hf.BadMap) as info:
        hf.resolve(["idx", "question", "choices", "answer", "sub_task"], None, "blink", "b.parquet")
    assert str(info.value) == ("b.parquet: mapped column(s) image_1 not in the file (it has idx, question, choices, "
                               "answer, sub_task)")
    with_split = hf.resolve([*cols, "split"], None, "mmbench", "mmb.parquet")
    assert with_split.columns["split"] == ["split"]
    mapped = hf.resolve(["id", "q", "o", "a"], "item_id=id,question=q,options=o,answer=a", "blink", "x.parquet")
    assert mapped.preset == "" and mapped.columns["options"] == ["o"]  # --map wins over --preset


@pytest.mark.parametrize(("columns", "mapping", "preset", "message"), [
    (["a", "b"], None, None, "f.parquet: no --map given and the columns (a, b) match no known layout (mmmu, blink, "
                             "muirbench, mmbench); name the columns with --map FIELD=COLUMN,..."),
    (["a"], None, "vqa", "--preset: unknown layout 'vqa' (expected one of mmmu, blink, muirbench, mmbench)"),
    (["id", "q", "o"], "item_id=id,question=q,options=o", None, "--map: answer is required (e.g. answer=COLUMN)"),
    (["id", "q", "a"], "item_id=id,question=q,answer=a", None, "--map: options is required (e.g. options=COLUMN)"),
    (["q", "o", "a"], "question=q,options=o,answer=a", None, "--map: item_id is required (e.g. item_id=COLUMN)"),
    (["id", "o", "a"], "item_id=id,options=o,answer=a", None, "--map: question is required (e.g. question=COLUMN)"),
    (["id", "q", "o", "a"], "item_id=id,question=q,options=o,answer=a,kind=k,meta.x=y", None,
     "f.parquet: mapped column(s) k, y not in the file (it has id, q, o, a)"),
])
def test_resolve_refusals(columns, mapping, preset, message):
    with pytest.raises(hf.BadMap) as info:
        hf.resolve(columns, mapping, preset, "f.parquet")
    assert str(info.value) == message


@pytest.mark.parametrize(("value", "refs"), [
    (None, []),
    (b"\x89PNG", [(b"\x89PNG", None)]),
    (bytearray(b"ab"), [(b"ab", None)]),
    ({"bytes": b"ab", "path": "x.png"}, [(b"ab", None)]),  # bytes win
    ({"bytes": None, "path": "x.png"}, [(None, "x.png")]),
    ({"path": "x.png"}, [(None, "x.png")]),
    ({"bytes": None, "path": None}, []),
    ({"bytes": None, "path": " "}, []),
    ([{"bytes": b"a", "path": None}, None, {"bytes": None, "path": "y.png"}], [(b"a", None), (None, "y.png")]),
    ((b"a",), [(b"a", None)]),
    ({"bytes": "text", "path": None}, None),
    ({"bytes": None, "path": 3}, None),
    ([b"a", 5], None),
    ({"other": 1}, None),
    (5, None),
])
def test_image_cells(value, refs):
    got = hf._images_of(value, "image_1")
    if refs is None:
        assert got is None
    else:
        assert [(r.data, r.path) for r in got] == refs and all(r.column == "image_1" for r in got)


def hf_rows(*rows: dict) -> list[tuple[str, int, dict]]:
    return [("d.parquet", no, r) for no, r in enumerate(rows, start=1)]


def test_item_objects_fields_meta_and_images():
    m = hf.parse_map("item_id=id,question=q,options=opts,answer=a,images=i1+i2,kind=k,split=s,meta.t=t,meta.n=n,"
                     "meta.when=w")
    report = Report()
    img = {"bytes": b"ab", "path": None}
    import datetime

    out = hf.item_objects(hf_rows(
        {"id": 7.0, "q": "Which?", "opts": "['x', 'y']", "a": 1, "i1": img, "i2": None, "k": "count", "s": "val",
         "t": "topic", "n": None, "w": datetime.date(2024, 1, 2)},
        {"id": "b", "q": None, "opts": ["x", "y"], "a": "(A)", "i1": None, "i2": [img, img], "k": None, "s": ""},
    ), m, "generic", report)
    assert report.ok
    (_f, no1, first, imgs1), (_f2, no2, second, imgs2) = out
    assert (no1, no2) == (1, 2)
    assert first == {"benchmark": "generic", "item_id": "7", "group_id": "7", "question": "Which?",
                     "options": {"A": "x", "B": "y"}, "answer": "B", "meta": {"t": "topic", "when": "2024-01-02"},
                     "kind": "count", "split": "val"}
    assert second == {"benchmark": "generic", "item_id": "b", "group_id": "b", "question": "",
                      "options": {"A": "x", "B": "y"}, "answer": "A", "meta": {}}
    assert [(r.data, r.column) for r in imgs1] == [(b"ab", "i1")] and [r.column for r in imgs2] == ["i2", "i2"]


def test_item_objects_letter_columns_and_refusals():
    m = hf.parse_map("item_id=id,question=q,options=A+B+C,answer=a,images=img")
    report = Report()
    out = hf.item_objects(hf_rows(
        {"id": "1", "q": "q", "A": "x", "B": None, "C": 3.0, "a": "C", "img": None},
        {"id": None, "q": "q", "A": "x", "B": "y", "C": "z", "a": "A", "img": None},
        {"id": "3", "q": "q", "A": "x", "B": "y", "C": "z", "a": "Q", "img": 5},
        {"id": "4", "q": "q", "A": "x", "B": None, "C": 3.0, "a": "B", "img": None},
    ), m, "generic", report)
    # a null letter cell is an absent option, so C's text moves up to B: "C" is no option of rows 1 and 4
    assert [(obj["options"], obj["answer"]) for _f, _n, obj, _i in out] == [({"A": "x", "B": "3"}, "B")]
    listed = hf.item_objects(hf_rows({"id": "4", "q": "q", "opts": "a, b", "a": "A"}),
                             hf.parse_map("item_id=id,question=q,options=opts,answer=a"), "generic", report)
    assert listed == []
    assert issues(report) == [
        ("d.parquet", 1, "a", "got 'C' (expected one of the letters AB, '(B)', 'B.', an option index 0..1 or an "
                              "option's exact text)"),
        ("d.parquet", 2, "id", "empty (expected the item's id)"),
        ("d.parquet", 3, "a", "got 'Q' (expected one of the letters ABC, '(B)', 'B.', an option index 0..2 or an "
                              "option's exact text)"),
        ("d.parquet", 3, "img", "expected an Image feature ({bytes, path}), a list of them, or null"),
        ("d.parquet", 1, "opts", "expected a list of option texts, got 'a, b'"),
    ]


def test_item_objects_groups():
    base = {"q": "q", "o": ["x", "y"], "a": "A"}
    by_column = hf.item_objects(hf_rows({**base, "id": "1", "g": "G"}, {**base, "id": "2", "g": None}),
                                hf.parse_map("item_id=id,question=q,options=o,answer=a,group_id=g"), "generic",
                                Report())
    assert [obj["group_id"] for _f, _n, obj, _i in by_column] == ["G", "2"]
    report = Report()
    circular = hf.item_objects(hf_rows(
        {**base, "id": "a", "n": 5}, {**base, "id": "b", "n": "1000005"}, {**base, "id": "c", "n": 2000009},
        {**base, "id": "d", "n": -1}, {**base, "id": "e", "n": "x"},
    ), hf.parse_map("item_id=id,question=q,options=o,answer=a,group_id=circular:n"), "generic", report)
    assert [(obj["group_id"], obj["meta"].get("copy")) for _f, _n, obj, _i in circular] == [
        ("5", 0), ("5", 1), ("c", None)]  # 2000009's base question 9 is absent: its own group
    assert issues(report) == [("d.parquet", 4, "n", "expected a non-negative integer index, got -1"),
                              ("d.parquet", 5, "n", "expected a non-negative integer index, got 'x'")]
    report = Report()
    pairs = hf.item_objects(hf_rows(
        {**base, "id": "m3", "c": "m1"}, {**base, "id": "m1", "c": "m3"}, {**base, "id": "m2", "c": "-1"},
        {**base, "id": "m4", "c": None}, {**base, "id": "m5", "c": "m9"}, {**base, "id": "m6", "c": "m4"},
        {**base, "id": "m7", "c": ""},
    ), hf.parse_map("item_id=id,question=q,options=o,answer=a,group_id=pair:c"), "generic", report)
    got = {obj["item_id"]: (obj["group_id"], obj["meta"].get("c")) for _f, _n, obj, _i in pairs}
    assert got == {"m3": ("m1", "m1"), "m1": ("m1", "m3"), "m2": ("m2", None), "m4": ("m4", None),
                   "m5": ("m5", None), "m6": ("m4", "m4"), "m7": ("m7", None)}
    assert all("_pair" not in obj["meta"] for _f, _n, obj, _i in pairs)
    assert issues(report) == [("d.parquet", 5, "c", "names item 'm9', which is not in the file")]
