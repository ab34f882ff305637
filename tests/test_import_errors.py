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
        ("dots.zip", {**members, "a/../x.txt": b"x"},  # a ".." is refused even where it stays inside
         ("dots.zip", 0, "a/../x.txt", "zip member escapes the extraction folder; refused")),
        ("two.zip", {"a/one.jsonl": b"{}", "b/two.jsonl": b"{}"},
         ("two.zip", 0, "(file)", "expected exactly one .jsonl file in the zip, found 2: a/one.jsonl, b/two.jsonl")),
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
        if name in ("none.zip", "two.zip"):
            assert got == message  # the members are listed only when there are some
    assert store.benchmarks() == []
    # macOS's resource forks (__MACOSX/._name.jsonl) are not the items file
    ok = _zip(tmp_path / "mac.zip", {**members, "__MACOSX/._" + jsonl.name: b"\x00\x05"})
    assert import_items(store, ok).rows == 12
    # a folder's own entry before the files is passed over, not the end of the members
    with_dirs = _zip(tmp_path / "dirs.zip", {"aaa/": b"", **members})
    assert import_items(store, with_dirs, name="dirs").rows == 12


def test_a_one_letter_response_under_a_rotation_is_unrotated(fe_store, tmp_path):
    """The line path that is not the usual one (a rotation): a bare letter is read as shown, then unrotated (B
    shown under rotation 1 is the original A)."""
    from db.importers import import_predictions

    import_predictions(fe_store, write(tmp_path / "one.jsonl", [{"item_id": "g1_0-cam", "response": "B",
                                                                  "rotation": 1}]), "one")
    df = fe_store.predictions_frame("one").set_index("item_id")
    assert (df.loc["g1_0-cam", "status"], df.loc["g1_0-cam", "shown"], df.loc["g1_0-cam", "answer"]) == ("ok", "B", "A")


def test_a_zip_over_the_size_limit_is_refused_before_extraction(tmp_path, store):
    """docs/FORMATS.md: the whole zip may expand to at most 8 GiB; the sizes its central directory declares are
    checked before anything is extracted (here three members that declare 3 GiB each)."""
    import struct

    from core.errors import ImportRefused
    from db.importers import import_items

    path = _zip(tmp_path / "big.zip", {"a.jsonl": b"{}\n", "b.bin": b"x", "c.bin": b"y"})
    data = bytearray(path.read_bytes())
    at = data.find(b"PK\x01\x02")
    while at >= 0:  # each central directory entry: its uncompressed size is at offset 24
        data[at + 24:at + 28] = struct.pack("<I", 3 * 1024**3)
        at = data.find(b"PK\x01\x02", at + 4)
    path.write_bytes(bytes(data))
    with pytest.raises(ImportRefused) as info:
        import_items(store, path)
    total, limit = 9 * 1024**3, 8 * 1024**3
    assert issues(info) == [("big.zip", 0, "(file)", f"expands to {total} bytes, over the {limit} byte limit")]
    assert store.benchmarks() == [] and not (tmp_path / "a.jsonl").exists()


def test_image_paths_outside_the_folder_or_missing_are_refused_under_images(tmp_path, store):
    """An image path with '..', one naming no file, a link out of the folder and a folder: each refused under the
    item's `images` field, on its line."""
    from core.errors import ImportRefused
    from db.importers import import_items

    lines = fe_lines()
    path = write_benchmark(tmp_path / "fe", lines)  # every image the lines name, then the two bad names
    (tmp_path / "outside.png").write_bytes((path.parent / lines[1]["images"][0]).read_bytes())
    lines[1] = {**lines[1], "images": ["../outside.png", lines[1]["images"][1]]}
    lines[4] = {**lines[4], "images": [lines[4]["images"][0], "img/nope.png"]}
    (path.parent / "img" / "link.png").symlink_to(tmp_path / "outside.png")
    lines[7] = {**lines[7], "images": ["img/link.png", *lines[7]["images"][1:]]}
    lines[9] = {**lines[9], "images": ["img", *lines[9]["images"][1:]]}
    write(path, lines)
    with pytest.raises(ImportRefused) as info:
        import_items(store, path)
    assert issues(info) == [
        ("items.jsonl", 2, "images", "'../outside.png' contains '..'; paths must stay inside the JSONL's folder"),
        ("items.jsonl", 5, "images", "'img/nope.png': no such image file"),
        ("items.jsonl", 8, "images", "'img/link.png' is a link out of the JSONL's folder; refused"),
        ("items.jsonl", 10, "images", "'img' is not a file")]


def test_predictions_file_level_refusals(fe_store, tmp_path):
    """A CSV with only its header holds no predictions; a CSV header without item_id is refused on line 1; a run
    name taken by another model's run is refused (line 0, field --run); each refusal names its file."""
    from core.errors import ImportRefused
    from db.importers import import_predictions

    cases = [("h.csv", "item_id,response\n", ("h.csv", 0, "(file)", "no predictions in the file")),
             ("n.csv", "id,response\ng1_0-cam,A\n",
              ("n.csv", 1, "(header)", "expected a CSV header naming at least item_id and response"))]
    for name, text, issue in cases:
        (tmp_path / name).write_text(text, encoding="utf-8")
        with pytest.raises(ImportRefused) as info:
            import_predictions(fe_store, tmp_path / name, "r")
        assert issues(info) == [issue]
    import_predictions(fe_store, write(tmp_path / "p.jsonl", [{"item_id": "g1_0-cam", "response": "A"}]), "r",
                       model="m1")
    with pytest.raises(ImportRefused) as info:
        import_predictions(fe_store, write(tmp_path / "q.jsonl", [{"item_id": "g1_0-obj", "response": "B"}]), "r",
                           model="m2")
    assert issues(info) == [("q.jsonl", 0, "--run", "run 'r' already exists with another benchmark, model or "
                             "settings; choose another --run name")]


def test_an_invalid_response_under_a_rotation_stays_invalid(fe_store, tmp_path):
    """A response with no readable letter under a rotation is stored invalid, with no letter shown or answered."""
    from db.importers import import_predictions

    import_predictions(fe_store, write(tmp_path / "inv.jsonl", [{"item_id": "g1_0-cam", "response": "no idea",
                                                                  "rotation": 2}]), "inv")
    row = fe_store.predictions_frame("inv").set_index("item_id").loc["g1_0-cam"]
    assert (row["status"], row["shown"], row["answer"]) == ("invalid", None, None)


def test_an_option_text_under_a_rotation_is_read_against_the_options_as_shown(fe_store, tmp_path):
    """g1_0-cam's options are A 前, B 后, C 左, D 右; under rotation 1 the option at A moves to B (SPEC §3), so the text
    后 (originally B) is shown as C and answers B."""
    from db.importers import import_predictions

    import_predictions(fe_store, write(tmp_path / "t.jsonl", [{"item_id": "g1_0-cam", "response": "后",
                                                                "rotation": 1}]), "t")
    row = fe_store.predictions_frame("t").set_index("item_id").loc["g1_0-cam"]
    assert (row["status"], row["shown"], row["answer"]) == ("ok", "C", "B")


def test_items_in_two_benchmarks_and_another_tools_table(fe_store, tmp_path):
    """Items whose ids are in two benchmarks: without --benchmark the import is refused naming both; with it, a
    VLMEvalKit prediction table (auto-detected by its .tsv name) goes into that benchmark, and `--replace`
    replaces a changed response."""
    from core.errors import ImportRefused
    from db.foreign import prediction_sources
    from db.importers import import_items, import_predictions

    import_items(fe_store, write_benchmark(tmp_path / "fe2", fe_lines()), name="fe2")
    with pytest.raises(ImportRefused) as info:
        import_predictions(fe_store, write(tmp_path / "p.jsonl", [{"item_id": "g1_0-cam", "response": "A"}]), "r")
    [(file, line, fld, message)] = issues(info)
    assert (file, line, fld) == ("p.jsonl", 0, "item_id")
    assert message.startswith("item 'g1_0-cam' is in several benchmarks (") and message.endswith(
        "); name one with --benchmark") and sorted(message.split("(")[1].split(")")[0].split(", ")) == ["fe", "fe2"]

    def table(answer: str) -> Path:
        path = tmp_path / "Model_FE.tsv"
        path.write_text(f"index\tprediction\textracted\ng1_0-cam\tThe answer is {answer}.\t{answer}\n"
                        "g1_0-obj\tB or C\tB\n", encoding="utf-8")
        return path

    first = import_predictions(fe_store, table("A"), "v", benchmark="fe2")
    assert first.rows == 2 and fe_store.run("v")["benchmark"] == "fe2"
    assert first.report.counts == {"predictions": 2, "unchanged": 0, "ok": 1, "invalid": 1, "api_error": 0}
    assert prediction_sources(fe_store, "v") == {"g1_0-cam": {"tool": "vlmevalkit", "extracted": "A"},
                                                 "g1_0-obj": {"tool": "vlmevalkit", "extracted": "B"}}
    again = import_predictions(fe_store, table("C"), "v", benchmark="fe2", replace=True)
    assert again.rows == 1  # the changed row only, and the counts are of what was written
    assert again.report.counts == {"predictions": 1, "unchanged": 1, "ok": 1, "invalid": 0, "api_error": 0}
    assert prediction_sources(fe_store, "v")["g1_0-cam"] == {"tool": "vlmevalkit", "extracted": "C"}
    df = fe_store.predictions_frame("v").set_index("item_id")
    assert (df.loc["g1_0-cam", "response"], df.loc["g1_0-cam", "shown"]) == ("The answer is C.", "C")
    # an existing run's benchmark is the run's own, whichever other benchmark holds its items too
    import_predictions(fe_store, write(tmp_path / "j.jsonl", [{"item_id": "g1_0-cam", "response": "A"}]), "j",
                       benchmark="fe2")
    more = import_predictions(fe_store, write(tmp_path / "more.jsonl", [{"item_id": "g1_0-obj", "response": "B"}]),
                              "j")
    assert more.rows == 1 and len(fe_store.predictions_frame("j")) == 2 and fe_store.run("j")["benchmark"] == "fe2"


def test_replace_reports_each_override_it_settles(fe_store, tmp_path):
    """docs/FORMATS.md: a `--replace` import keeps an extraction-audit override whose row keeps its raw response and
    marks stale one whose response changed, saying so in a warning per override (file, line, `response`) and
    counting both."""
    from db import overrides as dbo
    from db.importers import import_predictions

    rows = [{"item_id": "g1_0-cam", "response": "A or B"}, {"item_id": "g1_0-obj", "response": "B"},
            {"item_id": "g1_0-scene", "response": "C"}]
    import_predictions(fe_store, write(tmp_path / "p.jsonl", rows), "r")
    stale = dbo.apply(fe_store, "r", "g1_0-cam", method="parser:tag")  # still invalid: no letter
    kept = dbo.apply(fe_store, "r", "g1_0-obj", method="manual", letter="C")
    kept2 = dbo.apply(fe_store, "r", "g1_0-scene", method="manual", letter="D")
    changed = [{"item_id": "g1_0-cam", "response": "D"}, {"item_id": "g1_0-obj", "response": "B", "tokens": 9},
               {"item_id": "g1_0-scene", "response": "C", "tokens": 3}]
    res = import_predictions(fe_store, write(tmp_path / "p2.jsonl", changed), "r", replace=True)
    assert sorted((w.file, w.line, w.field, w.message) for w in res.report.warnings) == [
        ("p2.jsonl", 1, "response", f"override #{stale['id']} (parser:tag: invalid) of 'g1_0-cam' rotation 0 repeat 0 "
                                    "is now stale and inactive: the replaced row has another raw response, so it "
                                    "reads as imported; audit it again in run 'r' if needed"),
        ("p2.jsonl", 2, "response", f"override #{kept['id']} (manual: ok C) of 'g1_0-obj' rotation 0 repeat 0 kept: "
                                    "the replaced row has the same raw response, so it still reads the override"),
        ("p2.jsonl", 3, "response", f"override #{kept2['id']} (manual: ok D) of 'g1_0-scene' rotation 0 repeat 0 kept: "
                                    "the replaced row has the same raw response, so it still reads the override")]
    assert (res.report.counts["overrides_kept"], res.report.counts["overrides_stale"]) == (2, 1)


def test_unreadable_and_unsupported_images_name_the_file_and_path(tmp_path, store):
    """An image file that is no image and one in a format outside PNG, JPEG, WEBP, GIF and BMP (here TIFF): each
    refused on its item's line under `images`, naming the items file and the image path."""
    from PIL import Image

    from core.errors import ImportRefused
    from db.importers import import_items

    lines = fe_lines()
    path = write_benchmark(tmp_path / "fe", lines)
    (path.parent / "img" / "junk.png").write_bytes(b"not an image at all")
    Image.new("RGB", (4, 4), (9, 9, 9)).save(path.parent / "img" / "scan.png", format="TIFF")
    lines[0] = {**lines[0], "images": ["img/junk.png", lines[0]["images"][1]]}
    lines[3] = {**lines[3], "images": ["img/scan.png", lines[3]["images"][1]]}
    write(path, lines)
    with pytest.raises(ImportRefused) as info:
        import_items(store, path)
    assert issues(info) == [
        ("items.jsonl", 1, "images", "'img/junk.png' is not a readable image (UnidentifiedImageError)"),
        ("items.jsonl", 4, "images", "'img/scan.png' is a TIFF image (expected PNG, JPEG, WEBP, GIF or BMP)")]


def test_missing_predictions_file_is_named(fe_store, tmp_path):
    from core.errors import ImportRefused
    from db.importers import import_predictions

    with pytest.raises(ImportRefused) as info:
        import_predictions(fe_store, tmp_path / "nope.jsonl", "r")
    assert issues(info) == [("nope.jsonl", 0, "(file)", f"no such file: {tmp_path / 'nope.jsonl'}")]


def test_reimport_under_the_same_name(tmp_path, store):
    """The same items again change nothing, whatever order each line's keys and its `meta` keys are written in;
    other items under the same name are refused."""
    from core.errors import ImportRefused
    from db.importers import import_items

    lines = fe_lines()
    path = write_benchmark(tmp_path / "fe", lines)
    assert import_items(store, path, name="fe").rows == 12
    reordered = [{k: (dict(reversed(list(v.items()))) if k == "meta" else v) for k, v in reversed(line.items())}
                 for line in lines]
    again = import_items(store, write(path, reordered), name="fe")
    assert (again.rows, again.unchanged, again.report.counts) == (0, True, {"items": 0, "unchanged": 12})
    lines[0] = {**lines[0], "question": "another question"}
    with pytest.raises(ImportRefused) as info:
        import_items(store, write(path, lines), name="fe")
    assert issues(info) == [("items.jsonl", 0, "(file)", "benchmark 'fe' already exists with other items (item "
                             "'g1_0-cam' question: 'cam 问题 0' there, 'another question' here); import under another "
                             "--name")]  # issue 40: the first difference is named
    # the same items in another order are the same benchmark (an Inspect .json log sorts what an .eval holds as
    # written); one item fewer is a difference
    shuffled = write(path, fe_lines()[::-1])
    assert import_items(store, shuffled, name="fe").unchanged
    fewer = [line for line in fe_lines() if line["group_id"] != "g1_0"]
    with pytest.raises(ImportRefused, match="item 'g1_0-cam' is missing here"):
        import_items(store, write(path, fewer), name="fe")


def test_validate_items_file_is_the_import_without_the_store(tmp_path):
    """The Data tab's dry run: the same checks as the import (a zip extracted to a folder of its own), no store."""
    from db.importers import validate_items_file

    jsonl = write_benchmark(tmp_path / "fe", fe_lines())
    members = {p.relative_to(jsonl.parent).as_posix(): p.read_bytes() for p in jsonl.parent.rglob("*") if p.is_file()}
    assert validate_items_file(jsonl).issues == []
    assert validate_items_file(_zip(tmp_path / "fe.zip", members)).issues == []
    bad = _zip(tmp_path / "bad.zip", {k: v for k, v in members.items() if not k.endswith("g1_0_1.png")})
    assert [(i.file, i.line, i.field) for i in validate_items_file(bad).errors] == [
        ("bad.zip:items.jsonl", n, "images") for n in (1, 2, 3)]
    # a family rule names the file it read
    assert [(i.file, i.line, i.field) for i in validate_items_file(write_benchmark(tmp_path / "short", fe_lines()[1:])
                                                                   ).errors] == [("items.jsonl", 1, "variant")]
    # the reader's options reach it: an unknown format is refused, field --format
    assert [i.field for i in validate_items_file(jsonl, fmt="nope").errors] == ["--format"]


@pytest.mark.parametrize("first", [False, True])  # the file's first line is also read to tell its format
def test_lines_python_cannot_hold_are_refused_by_line(fe_store, tmp_path, first):
    """Lines json reads but no row can hold are refused by line and field, not by a crash: an infinite number
    (1e400) for an integer, a lone surrogate escape in a string, a value nested deeper than Python recurses."""
    from core.errors import ImportRefused
    from db.importers import import_predictions

    deep = '{"item_id": "g1_0-scene", "response": "A", "trace": ' + "[" * 5000 + "]" * 5000 + "}"
    lines = ['{"item_id": "g1_0-cam", "response": "A", "rotation": 1e400}',
             '{"item_id": "g1_0-obj", "response": "\\ud800 B"}', deep]
    if first:
        lines = [deep, *lines[:2]]
    path = tmp_path / "odd.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    before = fe_store.counts()
    with pytest.raises(ImportRefused) as info:
        import_predictions(fe_store, path, "r")
    got = {(no, fld): msg for _f, no, fld, msg in issues(info)}
    at = {"deep": 1, "inf": 2, "surrogate": 3} if first else {"inf": 1, "surrogate": 2, "deep": 3}
    assert got == {(at["inf"], "rotation"): "expected an integer 0..7, got inf",
                   (at["surrogate"], "(line)"): "not valid Unicode text (a lone surrogate \\ud800)",
                   (at["deep"], "(line)"): "malformed JSON (nested too deep)"}
    assert fe_store.counts() == before


def test_messages_name_the_file_and_the_benchmark(fe_store, tmp_path):
    """A label's field problem names its file; a letter that is not the item's names the item's letters; an
    unknown item in a file for an existing run names the run's benchmark; an identical items file re-imported
    names its benchmark."""
    from core.errors import ImportRefused
    from db.importers import import_items, import_labels, import_predictions

    import_predictions(fe_store, write(tmp_path / "p.jsonl", [{"item_id": "g1_0-cam", "response": "A"}]), "r")
    with pytest.raises(ImportRefused) as info:
        import_labels(fe_store, write(tmp_path / "lab.jsonl", [{"item_id": "g1_0-cam", "annotator": "a", "S1": 7}]),
                      "r")
    assert {f for f, _no, _fld, _msg in issues(info)} == {"lab.jsonl"}
    with pytest.raises(ImportRefused) as info:
        import_predictions(fe_store, write(tmp_path / "q.jsonl", [{"item_id": "g1_0-obj", "response": "x",
                                                                    "answer": "H"}, {"item_id": "nope", "response": "A"}]),
                           "r")
    assert issues(info) == [("q.jsonl", 1, "answer", "'H' is not an option letter of this item (expected one of "
                                                     f"{fe_store.item_keys(fe_store.benchmark('fe')['id'])['g1_0-obj'][1]})"),
                            ("q.jsonl", 2, "item_id", "unknown item 'nope' (not in benchmark 'fe')")]
    again = import_items(fe_store, tmp_path / "fe" / "items.jsonl", name="fe")  # the fixture's own file
    assert (again.target, again.rows, again.unchanged) == ("fe", 0, True)
