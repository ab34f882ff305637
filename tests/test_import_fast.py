"""The predictions import path decides every line alike whether its plain type tests or its full check read it.

`import_predictions` reads each line by the one line schema (core/formats.PREDICTION_LINE): first by plain type
tests (`prediction_fields`, the common well-formed line), and by the full check (`check_prediction_line`, which
names each problem) where those do not decide. These tests import random files, good and bad, both ways (the
second with the plain tests switched off, so every line takes the full check) and compare the outcome: the rows
written, the counts, or the refusal with every issue.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import orjson
import pytest
from conftest import fe_lines, write_benchmark
from hypothesis import given, settings
from hypothesis import strategies as st

STEMBIND_RESPONSES = [
    "The rule shifts one cell per row. <ANSWER>{L}</ANSWER>", "<ANSWER>{L}</ANSWER>", "<answer>{l}</answer>",
    "Step 1: inspect the rows.\nFinal answer: {L}", "It could be A or B.", "Answer: {L}", "", "  \n",
    "x < y, so <ANSWER>{L}</ANSWER>", "The answer is C. <ANSWER>{L}</ANSWER>", "<ANSWER>{L}</ANSWER> <ANSWER>A</ANSWER>",
    "**<ANSWER>{L}</ANSWER>**", "<ANSWER>{L}", "＜ANSWER＞{L}＜/ANSWER＞", "opt {L}", "Final answer: opt {L}",
    "A cat sits here.\nThe answer is {L}.", "I choose {L}", "选{L}", "答案：{L}", "F", "Final answer: F", "{L}",
]
FE_RESPONSES = ["{L}", "答案：{L}", "The answer is {L}.", "A or B", "前", "信息不足", "", "I pick {l}", "(B) 后。"]


def stembind_lines(n_stems: int = 6) -> list[dict]:
    """A small StemBind benchmark (no images), shaped like bench/import.py's."""
    lines = []
    for s in range(n_stems):
        for j, kind in enumerate(["P"] * (6 + s % 2) + ["R", "F"]):
            letters = "ABCDEFGH"[: (8 if kind == "F" else 4)]
            line = {"benchmark": "stembind", "item_id": f"s{s:03d}-{kind}{j}", "group_id": f"s{s:03d}", "kind": kind,
                    "question": f"probe {j}", "options": {c: f"opt {c}" for c in letters}, "answer": letters[j % 4],
                    "meta": {"operation": "RI-Pos", "perception_load": "low"}}
            if kind == "F":
                line["stages"] = {"S1": "scene", "S2": "rule", "S3": "bind", "S4": "answer"}
            lines.append(line)
    return lines


def random_line(rng: random.Random, item_id: str, repeat: int, responses: list[str], bad: float) -> str:
    """One predictions line: mostly well-formed, sometimes with any of the problems the importer checks."""
    letter = rng.choice("ABCDEFGH")
    obj: dict = {"item_id": item_id, "response": rng.choice(responses).format(L=letter, l=letter.lower())}
    if repeat or rng.random() < 0.1:
        obj["repeat"] = repeat
    if rng.random() < 0.5:
        obj["tokens"] = rng.randint(0, 900)
    if rng.random() < 0.15:
        obj["status"] = rng.choice(["invalid", "api_error", ""])
    elif rng.random() < 0.1:
        obj["answer"] = rng.choice("ABCD")
        if rng.random() < 0.5:
            obj["status"] = "ok"
    if rng.random() < 0.1 and "repeat" not in obj:
        obj["rotation"] = rng.randint(1, 3)
    if rng.random() < 0.05:
        obj["input_mode"] = rng.choice(["all", "first", "text"])
    if rng.random() < 0.05:
        obj["trace"] = "S1 ... S4"
    if rng.random() < 0.05:
        obj["error"] = "HTTP 503"
    if rng.random() < bad:
        problem = rng.randrange(12)
        if problem == 0:
            obj["item_id"] = "no-such-item"
        elif problem == 1:
            obj["answer"] = rng.choice(["E", "H", "ab", 3])
        elif problem == 2:
            obj["rotation"] = rng.choice([8, 7, 5, 4, -1, "1", 1.0, True])  # 4..7: too many for 4 options
        elif problem == 3:
            obj["tokens"] = rng.choice([-1, "12", 12.0, True, 10**9])
        elif problem == 4:
            obj["status"] = rng.choice(["fine", "ok"])  # "ok" with an unreadable response is refused
            obj["response"] = "no letter here"
            obj.pop("answer", None)
        elif problem == 5:
            obj.pop("response")
        elif problem == 6:
            obj["repeat"] = rng.choice([-1, 20_000, "x"])
        elif problem == 7:
            obj["input_mode"] = "audio"
        elif problem == 8:
            return '{"item_id": "broken'
        elif problem == 9:
            return json.dumps([obj])
        elif problem == 10:
            obj["status"], obj["answer"] = "invalid", "A"
        else:
            obj["extra"] = {"free": "data"}  # ignored, not an error
    return json.dumps(obj, ensure_ascii=False)


def random_file(path: Path, rng: random.Random, ids: list[str], responses: list[str], n: int, bad: float) -> Path:
    order = rng.sample(ids, len(ids))
    lines = [random_line(rng, order[k % len(ids)], k // len(ids), responses, bad) for k in range(n)]
    if rng.random() < 0.3:  # a duplicate key, possibly far from its first line
        lines.append(lines[rng.randrange(len(lines))])
    if rng.random() < 0.3:
        lines.insert(rng.randrange(len(lines)), "   ")
    path.write_text("\n".join(lines) + ("\n" if rng.random() < 0.8 else ""), encoding="utf-8")
    return path


def outcome(store, fn) -> tuple:
    """What an import did: the rows of every run and the counts, or the refusal (summary and every issue)."""
    from core.errors import ImportRefused

    try:
        result = fn()
    except ImportRefused as exc:
        return ("refused", str(exc), [str(i) for i in exc.report.issues])
    rows = store.conn.execute(
        "SELECT r.name, i.item_id, p.rotation, p.repeat, p.response, p.shown, p.answer, p.status, p.error,"
        " p.input_mode, p.trace, p.tokens, p.latency, p.probs FROM predictions p JOIN runs r ON r.id = p.run_id"
        " JOIN items i ON i.id = p.item_pk ORDER BY r.name, i.item_id, p.rotation, p.repeat").fetchall()
    runs = store.conn.execute("SELECT name, model, config, config_hash, status FROM runs ORDER BY name").fetchall()
    return ("ok", result.rows, result.unchanged, result.report.counts, rows, runs)


def reference_import(store, path: Path, run: str, **kw):
    """The same import with every line read by the full check (`check_prediction_line`): the usual lines'
    and the plain type tests switched off."""
    from core.report import Report
    from db import import_predictions as importers

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(importers, "prediction_fields", lambda obj: None)
        mp.setattr(importers, "usual_fields", lambda obj: None)
        report = Report()
        objs = importers._read_prediction_objects(path, report)
        return importers.import_prediction_lines(store, path, objs, report, run, kw.get("model"), kw.get("config"),
                                                 kw.get("benchmark"), kw.get("replace", False))


def make_stores(tmp_path: Path, items: list[dict], name: str):
    from db.importers import import_items
    from db.store import Store

    folder = write_benchmark(tmp_path / "items", items) if name == "fe" else None
    if folder is None:
        folder = tmp_path / "items.jsonl"
        folder.write_text("".join(json.dumps(x) + "\n" for x in items), encoding="utf-8")
    stores = []
    for side in ("fast", "ref"):
        s = Store(tmp_path / f"{side}.db")
        import_items(s, folder, name=name)
        stores.append(s)
    return stores


def compare_random_files(tmp_path: Path, items: list[dict], name: str, responses: list[str], seed: int,
                         files: int, n: int) -> int:
    """Import `files` random files both ways (a new run each, then again into the same runs, once with --replace)
    and check the outcomes are equal; returns how many imports were accepted."""
    from db.importers import import_predictions

    fast, ref = make_stores(tmp_path, items, name)
    ids = [x["item_id"] for x in items]
    rng = random.Random(seed)
    accepted = 0
    try:
        for k in range(files):
            path = random_file(tmp_path / f"p{k}.jsonl", rng, ids, responses, n, bad=rng.choice([0.0, 0.0, 0.02, 0.2]))
            run = f"run{k % 5}"  # later files go into runs that exist: unchanged, conflicting or replaced rows
            replace = rng.random() < 0.3
            got = outcome(fast, lambda: import_predictions(fast, path, run, replace=replace))  # noqa: B023
            want = outcome(ref, lambda: reference_import(ref, path, run, replace=replace))  # noqa: B023
            assert got == want, (path.read_text(encoding="utf-8"), got[:3], want[:3])
            accepted += got[0] == "ok"
    finally:
        fast.close()
        ref.close()
    return accepted


@pytest.mark.parametrize("seed", [1, 2])
def test_fast_path_equals_reference_stembind(tmp_path, seed):
    assert compare_random_files(tmp_path, stembind_lines(), "sb", STEMBIND_RESPONSES, seed, files=40, n=40) > 5


def test_fast_path_equals_reference_frameevidence(tmp_path):
    assert compare_random_files(tmp_path, fe_lines(), "fe", FE_RESPONSES, 3, files=40, n=30) > 5


def test_long_file_reports_the_first_bad_line(tmp_path):
    """A bad line deep in a long file is refused exactly as the full check does."""
    from core.errors import ImportRefused
    from db.importers import import_predictions

    fast, ref = make_stores(tmp_path, stembind_lines(), "sb")
    ids = [x["item_id"] for x in stembind_lines()]
    lines = [json.dumps({"item_id": i, "response": f"<ANSWER>{'ABCD'[k % 4]}</ANSWER>"}) for k, i in enumerate(ids)]
    lines[40] = json.dumps({"item_id": ids[40], "response": "x", "rotation": 9})
    lines[45] = json.dumps({"item_id": "missing", "response": "x"})
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ImportRefused) as got:
        import_predictions(fast, path, "r")
    assert str(got.value).startswith("bad.jsonl:41: rotation:")
    assert outcome(fast, lambda: import_predictions(fast, path, "r")) == outcome(ref, lambda: reference_import(
        ref, path, "r"))
    assert fast.counts()["predictions"] == 0 and fast.runs() == []
    fast.close()
    ref.close()


def test_long_file_duplicate_far_from_its_first(tmp_path):
    from core.errors import ImportRefused
    from db.importers import import_predictions

    fast, _ref = make_stores(tmp_path, stembind_lines(), "sb")
    ids = [x["item_id"] for x in stembind_lines()]
    lines = [json.dumps({"item_id": i, "response": "<ANSWER>A</ANSWER>"}) for i in ids] + \
        [json.dumps({"item_id": ids[2], "response": "B"})]
    path = tmp_path / "dup.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ImportRefused, match=rf"dup.jsonl:{len(lines)}: item_id: duplicate .* \(first on line 3\)"):
        import_predictions(fast, path, "r")
    assert fast.counts()["predictions"] == 0
    fast.close()
    _ref.close()


def _stembind_file(tmp_path, response: str):
    """Fresh stores with the StemBind items, their ids, and a predictions file answering each with `response`."""
    fast, ref = make_stores(tmp_path, stembind_lines(), "sb")
    ids = [x["item_id"] for x in stembind_lines()]
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps({"item_id": i, "response": response}) + "\n" for i in ids),
                    encoding="utf-8")
    return fast, ref, ids, path


def test_dry_run_writes_nothing(tmp_path):
    from db.validate import validate_predictions

    fast, _ref, ids, path = _stembind_file(tmp_path, "It could be A or B.")
    report = validate_predictions(fast, path, "dry")
    assert report.ok and report.counts["invalid"] == len(ids)
    assert fast.counts()["predictions"] == 0 and fast.runs() == []
    fast.close()
    _ref.close()


BAD_LINES = [  # changes to a clean line (or a whole raw line): refused by the rules, at least for some items
    {"item_id": "no-such-item"}, {"answer": "E"}, {"answer": "H"}, {"answer": "ab"}, {"answer": 3},
    {"rotation": 4}, {"rotation": 7}, {"rotation": 8}, {"rotation": -1}, {"rotation": 1.0}, {"tokens": -1},
    {"tokens": 12.0}, {"tokens": 10**9}, {"status": "fine"}, {"status": "ok", "response": "no letter here"},
    {"response": None}, {"response": 5}, {"repeat": -1}, {"repeat": 20_000}, {"repeat": "x"},
    {"input_mode": "audio"}, {"status": "invalid", "answer": "A"}, {"status": "api_error", "answer": "B"},
    {"trace": 5}, {"item_id": ""}, {"item_id": 7}, '{"item_id": "broken', "[1, 2]", "null", '"text"',
]
FINE_LINES = [  # accepted everywhere, some only by the reference rules (which the fast path then applies)
    {"tokens": "12"}, {"rotation": "2"}, {"rotation": True}, {"tokens": True}, {"repeat": "3"}, {"tokens": ""},
    {"extra": 1}, {"latency": 0.5}, {"error": 5}, {"status": ""}, {"answer": ""}, {"status": "ok", "answer": "C"},
    {"rotation": 3, "answer": "D"}, {"response": "", "status": "api_error", "error": "HTTP 503"},
    {"input_mode": "text"}, {"trace": "S1"},
]


@pytest.mark.parametrize(("change", "fine"), [(x, False) for x in BAD_LINES] + [(x, True) for x in FINE_LINES],
                         ids=repr)
def test_each_rule_alike(tmp_path, change, fine):
    """One unusual line in a clean file, at the start, in the middle and at the end: the same outcome both ways;
    a file the rules accept is imported."""
    from db.importers import import_predictions

    fast, ref = make_stores(tmp_path, stembind_lines(2), "sb")
    ids = [x["item_id"] for x in stembind_lines(2)]
    clean = [{"item_id": i, "response": f"<ANSWER>{'ABCD'[k % 4]}</ANSWER>", "tokens": k} for k, i in enumerate(ids)]
    refused = 0
    for where in (0, len(clean) // 2, len(clean) - 1):
        lines = [json.dumps(x) for x in clean]
        lines[where] = change if isinstance(change, str) else json.dumps({**clean[where], **change})
        path = tmp_path / f"p{where}.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        run = f"r{where}"
        got = outcome(fast, lambda: import_predictions(fast, path, run))  # noqa: B023
        want = outcome(ref, lambda: reference_import(ref, path, run))  # noqa: B023
        assert got == want
        refused += got[0] == "refused"
        if fine:
            assert got[0] == "ok"
    assert (refused > 0) == (not fine)
    fast.close()
    ref.close()


@pytest.mark.parametrize("text", [
    '{"a": 1}\n{"b": [2]}\n',  # the usual file
    '{"a": 1}\n{"b": 2}',  # no last newline
    '{"a": 1}\r\n{"b": 2}\r\n',  # CRLF
    '{"a": 1}\n\n  \n{"b": 2}\n',  # blank lines: skipped, the later line keeps its number
    '{"a": 1}\n{"b": NaN}\n{"c": 3}\n',  # a form only json reads
    '{"a": 1}\n{"b": \n{"c": 3}\n',  # a malformed line: reported, the others read
    '{"a": 1}\n{"b": 2}\n\n',  # two newlines at the end
    'x\ny\n',  # only malformed lines: no object, both reported
    '\n\n{"a": 1}\n',  # blank lines first
])
def test_json_lines_gives_what_the_line_by_line_read_gives(text):
    """db.import_common.json_lines gives every file's (line, object) pairs and problems as reading it line by line
    with orjson does, json deciding the forms orjson refuses."""
    import orjson

    from core.report import Report
    from db.import_common import json_lines

    want, problems = [], []
    for no, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            want.append((no, orjson.loads(line)))
        except orjson.JSONDecodeError:
            try:
                want.append((no, json.loads(line)))
            except json.JSONDecodeError:
                problems.append(no)
    report = Report()
    got = list(json_lines(text, "f.jsonl", report))
    assert json.dumps(got) == json.dumps(want)  # NaN compares unequal to itself; its JSON text does not
    assert [i.line for i in report.issues] == problems


_WILD = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 12), st.integers(10_000_000, 10_000_002), st.integers(2**63, 2**70),
    st.floats(allow_nan=False, allow_infinity=False), st.just(5.0), st.sampled_from(["", "A", "a", "H", "I", "AB", "ok", "invalid",
                                                                "api_error", "all", "first", "text", "7", " "]),
    st.text(max_size=8), st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(),
                                                                             max_size=2))
_VALID = {  # values the plain tests accept, so that whole lines decode often
    "item_id": st.sampled_from(["s000-P0", "x"]), "response": st.sampled_from(["", "B", "<ANSWER>C</ANSWER>"]),
    "status": st.sampled_from(["", "ok", "invalid", "api_error"]), "input_mode": st.sampled_from(["", "all", "text"]),
    "rotation": st.integers(0, 7), "repeat": st.integers(0, 3), "tokens": st.integers(0, 10_000_000),
    "answer": st.sampled_from(["", "A", "H"]), "trace": st.sampled_from(["", "step"]), "error": st.sampled_from(
        ["", "HTTP 503"]), "latency": st.floats(0, 9), "probs": st.none(), "extra": st.integers()}
_PAIR = st.sampled_from(sorted(_VALID)).flatmap(
    lambda k: st.tuples(st.just(k), st.sampled_from(["valid"] * 6 + ["none", "wild"]).flatmap(
        lambda how: _VALID[k] if how == "valid" else st.none() if how == "none" else _WILD)))


@settings(max_examples=600, deadline=None)
@given(st.lists(_PAIR, max_size=8), st.booleans())
def test_plain_tests_read_a_line_as_the_full_check_does(pairs, well_keyed):
    """A line the plain type tests take (`prediction_fields`) reads exactly as the full check reads it, with no
    problem reported (`check_prediction_line`), and so does its key (`prediction_key`); a usual line
    (`usual_fields`) is one whose other fields all take their defaults. Keys may repeat (the last one counts)."""
    from core.formats import check_prediction_line, prediction_fields, prediction_key, usual_fields
    from core.report import Report

    if well_keyed:
        pairs = [("item_id", "s000-P0"), ("response", "<ANSWER>A</ANSWER>"), *pairs]
    text = "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in pairs) + "}"
    line = orjson.loads(text)
    fast = prediction_fields(line)
    if fast is None:
        return  # the full check decides: nothing to compare
    report = Report()
    assert check_prediction_line(line, "f.jsonl", 1, report) == fast and report.ok, (text, report.issues)
    assert prediction_key(line) == (fast[0], fast[4], fast[5])
    usual = usual_fields(line)
    if usual is not None:  # the plain row: every other field as its default
        assert fast == (usual[0], usual[1], "", None, 0, 0, "all", None, usual[2], None), text
