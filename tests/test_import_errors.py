"""A predictions file's validation lists every bad line (issue 14.4): a line's field error hides neither its own
unknown item or duplicate key nor any other line's error; the fast path refuses with the reference path's list."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import fe_lines, run_cli, write_benchmark

# fe_lines(): FrameEvidence items with options A-D; g1_0-cam gold A.
BAD_FILE = [
    {"item_id": "g1_0-cam", "response": "A", "answer": "Z"},          # 1 answer: not a letter A-H (format)
    {"item_id": "g1_0-cam", "response": "B"},                         # 2 duplicate of line 1 (which has an error)
    {"item_id": "nope", "response": "A"},                             # 3 unknown item
    {"item_id": "g1_0-obj", "response": "A", "answer": "E"},          # 4 answer: not an option of this item
    {"item_id": "g1_0-scene"},                                        # 5 response missing
    {"item_id": "g2_0-mss", "response": "B"},                         # 6 fine
    {"item_id": "ghost", "response": "A", "status": "fine"},          # 7 status and unknown item, same line
    {"item_id": "g2_0-del", "response": "A", "rotation": 9},          # 8 rotation out of range
    {"item_id": "g2_0-add", "response": "A", "status": "invalid", "answer": "B"},  # 9 invalid with a letter
]
EXPECTED = [(1, "answer"), (2, "item_id"), (3, "item_id"), (4, "answer"), (5, "response"), (7, "item_id"),
            (7, "status"), (8, "rotation"), (9, "answer")]


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def fe_store(tmp_path, store):
    from db.importers import import_items

    import_items(store, write_benchmark(tmp_path / "fe", fe_lines()), name="fe")
    return store


def refused(store, path: Path, run: str = "r", **kw) -> list[tuple[int, str]]:
    from core.errors import ImportRefused
    from db.importers import import_predictions

    before = store.counts()
    with pytest.raises(ImportRefused) as info:
        import_predictions(store, path, run, **kw)
    assert store.counts() == before  # nothing written
    return sorted((i.line, i.field) for i in info.value.report.errors)


def test_every_bad_line_is_listed(fe_store, tmp_path):
    errors = refused(fe_store, write(tmp_path / "p.jsonl", BAD_FILE))
    assert errors == EXPECTED


def test_duplicate_reported_when_first_line_has_another_error(fe_store, tmp_path):
    from core.errors import ImportRefused
    from db.importers import import_predictions

    rows = [{"item_id": "g1_0-cam", "response": "A", "tokens": -3}, {"item_id": "g1_0-obj", "response": "B"},
            {"item_id": "g1_0-cam", "response": "A"}]
    with pytest.raises(ImportRefused) as info:
        import_predictions(fe_store, write(tmp_path / "p.jsonl", rows), "r")
    errs = sorted(info.value.report.errors, key=lambda i: i.line)
    assert [(i.line, i.field) for i in errs] == [(1, "tokens"), (3, "item_id")]
    assert "first on line 1" in errs[1].message


@pytest.mark.parametrize("suffix", ["jsonl", "csv"])
def test_fast_and_reference_paths_list_the_same(suffix, fe_store, tmp_path):
    """The public entry (fast path first) refuses with exactly the reference path's list."""
    from core.errors import ImportRefused
    from core.report import Report
    from db import import_predictions as importers

    rows = BAD_FILE if suffix == "jsonl" else [r for r in BAD_FILE if r.get("response") is not None]
    path = tmp_path / f"p.{suffix}"
    if suffix == "jsonl":
        write(path, rows)
    else:
        fields = ["item_id", "response", "answer", "status", "rotation"]
        path.write_text(",".join(fields) + "\n" + "".join(
            ",".join(str(r.get(f, "")) for f in fields) + "\n" for r in rows), encoding="utf-8")
    entry = refused(fe_store, path)
    report = Report()
    objs = importers._read_prediction_objects(path, report)
    with pytest.raises(ImportRefused) as info:
        importers.import_prediction_lines(fe_store, path, objs, report, "r", None, None, None, False)
    ref = sorted((i.line, i.field) for i in info.value.report.errors)
    assert entry == ref and len(ref) >= 7


def test_conflicts_with_the_stored_run_listed_with_line_errors(fe_store, tmp_path):
    from db.importers import import_predictions

    good = [{"item_id": line["item_id"], "response": line["answer"]} for line in fe_lines()]
    import_predictions(fe_store, write(tmp_path / "a.jsonl", good), "r")
    again = [dict(r) for r in good]
    again[2] = {**again[2], "response": "D"}  # differs from the stored row: needs --replace
    again[4] = {**again[4], "answer": "Q"}  # a bad letter
    errors = refused(fe_store, write(tmp_path / "b.jsonl", again))
    assert errors == [(3, "response"), (5, "answer")]


def test_cli_prints_every_bad_line(fe_store, tmp_path):
    proc = run_cli("import-predictions", str(write(tmp_path / "p.jsonl", BAD_FILE)), "--run", "r",
                   db=fe_store.path)
    assert proc.returncode == 2
    listed = [ln.strip() for ln in proc.stderr.splitlines() if ln.startswith("  p.jsonl:")]
    assert sorted((int(ln.split(":")[1]), ln.split(":")[2].strip()) for ln in listed) == EXPECTED
    assert "nothing was written" in proc.stderr


def issues(exc_info) -> list[tuple[str, int, str, str]]:
    return [(i.file, i.line, i.field, i.message) for i in exc_info.value.report.errors]


def test_each_refusal_names_the_file(fe_store, tmp_path):
    """Every problem names the file it is in, with its line and field (the rotation and the status refusals of
    `_decide` included)."""
    from core.errors import ImportRefused
    from db.importers import import_predictions

    with pytest.raises(ImportRefused) as info:
        import_predictions(fe_store, write(tmp_path / "p.jsonl", BAD_FILE), "r")
    assert {i.file for i in info.value.report.errors} == {"p.jsonl"}
    assert ("p.jsonl", 9, "answer", "status invalid cannot carry an answer letter") in issues(info)
    with pytest.raises(ImportRefused) as info:  # a rotation the format allows (0..7) but the item's 4 options do not
        import_predictions(fe_store, write(tmp_path / "r.jsonl", [{"item_id": "g2_0-del", "response": "A",
                                                                  "rotation": 5}]), "r")
    assert issues(info) == [("r.jsonl", 1, "rotation", "rotation 5 needs more than the item's 4 options")]


def test_labels_refusals_and_counts(fe_store, tmp_path):
    """A labels file: its counts, and each refusal with its file, line, field and message (docs/FORMATS.md)."""
    from core.errors import ImportRefused
    from db.importers import import_labels, import_predictions

    import_predictions(fe_store, write(tmp_path / "p.jsonl", [{"item_id": "g1_0-cam", "response": "A"}]), "r")
    label = {"item_id": "g1_0-cam", "annotator": "ann1", "S1": 1, "S2": 0, "S3": 0, "S4": 1}
    result = import_labels(fe_store, write(tmp_path / "l.jsonl", [label]), "r")
    assert (result.rows, result.unchanged, result.report.counts) == (1, False, {"labels": 1, "unchanged": 0})
    again = import_labels(fe_store, tmp_path / "l.jsonl", "r")
    assert (again.rows, again.unchanged, again.report.counts) == (0, True, {"labels": 0, "unchanged": 1})
    with pytest.raises(ImportRefused) as info:
        import_labels(fe_store, tmp_path / "l.jsonl", "nope")
    [(file, line, fld, message)] = issues(info)
    assert (file, line, fld) == ("l.jsonl", 0, "--run") and "nope" in message
    with pytest.raises(ImportRefused) as info:
        import_labels(fe_store, write(tmp_path / "d.jsonl", [label, {**label, "item_id": "ghost"}, label]), "r")
    assert issues(info) == [("d.jsonl", 2, "item_id", "unknown item 'ghost' (not in benchmark 'fe')"),
                            ("d.jsonl", 3, "item_id", "duplicate label by 'ann1' (first on line 1)")]


def _zip(path: Path, members: dict[str, bytes], links: tuple[str, ...] = ()) -> Path:
    import stat
    import zipfile

    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        for name in links:  # a symbolic link as zip writes one: the link's mode in the high 16 bits
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, "../outside")
    return path


def test_items_zip_refusals_name_the_file_and_member(tmp_path, store):
    from core.errors import ImportRefused
    from db.importers import import_items

    jsonl = write_benchmark(tmp_path / "fe", fe_lines())
    members = {p.relative_to(jsonl.parent).as_posix(): p.read_bytes() for p in jsonl.parent.rglob("*") if p.is_file()}
    cases = [
        ("notzip.zip", None, ("notzip.zip", 0, "(file)", "not a readable zip file")),
        ("escape.zip", {**members, "../x.txt": b"x"},
         ("escape.zip", 0, "../x.txt", "zip member escapes the extraction folder; refused")),
        ("link.zip", members, ("link.zip", 0, "pics", "zip member is a symbolic link; refused")),
        ("none.zip", {"readme.txt": b"x"}, ("none.zip", 0, "(file)", "expected exactly one .jsonl file in the zip, "
                                                                     "found 0")),
    ]
    for name, content, (file, line, fld, message) in cases:
        path = tmp_path / name
        if content is None:
            path.write_bytes(b"not a zip")
        else:
            _zip(path, content, links=("pics",) if name == "link.zip" else ())
        with pytest.raises(ImportRefused) as info:
            import_items(store, path)
        [(f, no, got_field, got)] = issues(info)
        assert (f, no, got_field) == (file, line, fld) and got.startswith(message), name
    assert store.benchmarks() == []
    # macOS's resource forks (__MACOSX/._name.jsonl) are not the items file
    ok = _zip(tmp_path / "mac.zip", {**members, "__MACOSX/._" + jsonl.name: b"\x00\x05"})
    assert import_items(store, ok).rows == 12


def test_a_one_letter_response_under_a_rotation_is_unrotated(fe_store, tmp_path):
    """The line path that is not the usual one (a rotation): a bare letter is read as shown, then unrotated (B
    shown under rotation 1 is the original A)."""
    from db.importers import import_predictions

    import_predictions(fe_store, write(tmp_path / "one.jsonl", [{"item_id": "g1_0-cam", "response": "B",
                                                                  "rotation": 1}]), "one")
    df = fe_store.predictions_frame("one").set_index("item_id")
    assert (df.loc["g1_0-cam", "status"], df.loc["g1_0-cam", "shown"], df.loc["g1_0-cam", "answer"]) == ("ok", "B", "A")
