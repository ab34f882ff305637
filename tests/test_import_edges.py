"""The importers at their edges (issue 28, the importers mutation target's survivors): each refusal whole (file,
line, field, message) with nothing written, the text of a file (an invalid UTF-8 byte's line, a BOM, an empty
file), zips as other tools write them (Windows separators, folders without their own entries), and other tools'
items read in-process (VLMEvalKit and Hugging Face image cells, one or several a row)."""

from __future__ import annotations

import io
import json
import struct
import zipfile
import zlib
from pathlib import Path

import pytest
from conftest import fe_lines, write_benchmark


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def issues(exc_info) -> list[tuple[str, int, str, str]]:
    return [(i.file, i.line, i.field, i.message) for i in exc_info.value.report.errors]


def refused_items(store, path: Path, **kw) -> list[tuple[str, int, str, str]]:
    """The errors of an items import that must be refused, checking that nothing was written."""
    from core.errors import ImportRefused
    from db.importers import import_items

    before = store.counts()
    with pytest.raises(ImportRefused) as info:
        import_items(store, path, **kw)
    assert store.counts() == before and store.benchmarks() == []
    return issues(info)


def png(color: tuple[int, int, int] = (1, 2, 3), size: tuple[int, int] = (8, 6)) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG")
    return buf.getvalue()


def png_declaring(width: int, height: int) -> bytes:
    """A PNG whose header declares `width` x `height` pixels (its data is one byte: only the header is read)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\0")) + chunk(b"IEND", b""))


# ---- the text of a file ---------------------------------------------------------------------------------------


def test_invalid_utf8_names_its_line_and_nothing_is_written(tmp_path, store):
    path = write_benchmark(tmp_path / "fe", fe_lines())
    raw = path.read_bytes().split(b"\n")
    raw[2] = raw[2].replace("前".encode(), b"\xff", 1)  # line 3
    path.write_bytes(b"\n".join(raw))
    assert refused_items(store, path) == [("items.jsonl", 3, "(line)", "not valid UTF-8 (invalid start byte)")]


def test_an_empty_file_is_refused_as_a_whole(tmp_path, store):
    path = tmp_path / "items.jsonl"
    path.write_text("\n  \n", encoding="utf-8")
    assert refused_items(store, path) == [
        ("items.jsonl", 0, "(file)", "the file is empty (expected one JSON object a line)")]


def test_a_utf8_bom_is_dropped(tmp_path, store):
    from db.importers import import_items

    path = write_benchmark(tmp_path / "fe", fe_lines())
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    res = import_items(store, path, name="fe")
    assert (res.rows, res.report.issues) == (12, [])
    assert [it.item_id for it in store.items("fe")][:1] == ["g1_0-cam"]


# ---- the file-level item rules -----------------------------------------------------------------------------------


def test_a_bad_line_and_a_duplicate_item_id_name_the_file_line_and_field(tmp_path, store):
    lines = fe_lines()
    lines[4] = {**lines[4], "item_id": lines[1]["item_id"]}  # line 5 repeats line 2's id
    del lines[6]["question"]  # line 7
    path = write(write_benchmark(tmp_path / "fe", fe_lines()), lines)
    assert refused_items(store, path) == [
        ("items.jsonl", 7, "question", "missing required field (expected a non-empty string)"),
        ("items.jsonl", 5, "item_id", "duplicate item_id 'g1_0-obj' (first on line 2)")]


def test_an_image_over_the_pixel_limit_is_refused_at_either_check(tmp_path, store):
    """Under 2 x Pillow's own limit the import's 40-megapixel check refuses it; over that, Pillow refuses to open
    it (DecompressionBombError): both under the item's `images` field, naming the path."""
    lines = fe_lines()
    path = write_benchmark(tmp_path / "fe", lines)
    (path.parent / "img" / "big.png").write_bytes(png_declaring(8000, 6000))
    (path.parent / "img" / "huge.png").write_bytes(png_declaring(20000, 10000))
    lines[0] = {**lines[0], "images": ["img/big.png", lines[0]["images"][1]]}
    lines[3] = {**lines[3], "images": ["img/huge.png", lines[3]["images"][1]]}
    assert refused_items(store, write(path, lines)) == [
        ("items.jsonl", 1, "images", "'img/big.png' is 8000x6000 pixels, over the 40,000,000 pixel limit (possible "
                                     "decompression bomb)"),
        ("items.jsonl", 4, "images", "'img/huge.png' is over the pixel limit (possible decompression bomb)")]


# ---- zips as other tools write them ------------------------------------------------------------------------------


def _members(jsonl: Path) -> dict[str, bytes]:
    return {p.relative_to(jsonl.parent).as_posix(): p.read_bytes() for p in jsonl.parent.rglob("*") if p.is_file()}


def test_a_zip_with_windows_separators_and_no_folder_entries_imports(tmp_path, store):
    """A zip written on Windows names its members with backslashes, and zip tools need not store folder entries:
    `img\\sub\\x.png` is extracted to img/sub/x.png (its folders made on the way), where the items file finds it."""
    from db.importers import import_items

    lines = fe_lines()
    for line in lines:
        line["images"] = [p.replace("img/", "img/sub/") for p in line["images"]]
    jsonl = write_benchmark(tmp_path / "fe", lines)
    path = tmp_path / "win.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in _members(jsonl).items():
            zf.writestr(name.replace("/", "\\"), data)
    assert all("/" not in n for n in zipfile.ZipFile(path).namelist())
    res = import_items(store, path, name="win")
    assert res.rows == 12 and res.report.counts == {"items": 12, "images": 12, "groups": 4}
    assert res.report.issues == []


def test_a_zip_member_leaving_the_folder_by_backslashes_is_refused(tmp_path, store):
    jsonl = write_benchmark(tmp_path / "fe", fe_lines())
    path = tmp_path / "esc.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in {**_members(jsonl), "..\\..\\evil.txt": b"x"}.items():
            zf.writestr(name, data)
    assert refused_items(store, path) == [
        ("esc.zip", 0, "..\\..\\evil.txt", "zip member escapes the extraction folder; refused")]
    assert not (tmp_path / "evil.txt").exists()


# ---- other tools' items, read in-process ----------------------------------------------------------------------


def test_options_of_other_tools_are_refused_for_an_items_jsonl(tmp_path, store):
    path = write_benchmark(tmp_path / "fe", fe_lines())
    assert refused_items(store, path, family="generic") == [
        ("items.jsonl", 0, "--family", "--family applies to VLMEvalKit and Hugging Face files; an items JSONL names "
                                       "its family in each line's `benchmark` field")]


def test_a_vlmevalkit_tsv_with_only_its_header_holds_no_items(tmp_path, store):
    path = tmp_path / "Empty.tsv"
    path.write_text("index\tquestion\tA\tB\tanswer\n", encoding="utf-8")
    assert refused_items(store, path) == [("Empty.tsv", 0, "(file)", "no items in the file")]


def _parquet(path: Path, rows: list[dict], n_images: int) -> Path:
    """A Hugging Face parquet file with `n_images` image columns (the datasets Image feature's struct)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    schema = pa.schema([("id", pa.string()), ("q", pa.string()), ("opts", pa.list_(pa.string())),
                        ("gold", pa.int64()), *[(f"pic_{k}", image) for k in range(1, n_images + 1)]])
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return path


def _hf_row(item_id: str, *pics: bytes | None) -> dict:
    return {"id": item_id, "q": "Which?", "opts": ["x", "y"], "gold": 1,
            **{f"pic_{k}": None if d is None else {"bytes": d, "path": None} for k, d in enumerate(pics, start=1)}}


def test_hugging_face_image_cells_are_stored_in_order(tmp_path, store):
    """Image bytes in a Hugging Face file: each cell read once, stored content-addressed, in column order; an
    empty cell adds none."""
    import hashlib

    from db.importers import import_items

    a, b = png((10, 20, 30)), png((40, 50, 60), size=(5, 7))
    path = _parquet(tmp_path / "two.parquet", [_hf_row("one", a, b), _hf_row("two", b, None)], 2)
    res = import_items(store, path, name="hf", mapping="item_id=id,question=q,options=opts,answer=gold,"
                                                       "images=pic_1+pic_2")
    assert (res.rows, res.report.counts) == (2, {"items": 2, "images": 2, "groups": 2})
    digest = {d: hashlib.sha256(d).hexdigest()[:32] for d in (a, b)}
    items = {it.item_id: it for it in store.items("hf")}
    assert items["one"].images == [digest[a], digest[b]] and items["two"].images == [digest[b]]
    assert items["one"].answer == "B"


def test_hugging_face_bad_image_cells_name_the_column_and_the_image(tmp_path, store):
    """An unreadable image cell is refused under its own column; the message names it as the item's image k when
    the row has several images, as the column alone when it has one."""
    junk = b"not an image at all"
    rows = [_hf_row("one", png(), junk), _hf_row("two", junk, None), _hf_row("three", junk, png((9, 9, 9)))]
    path = _parquet(tmp_path / "bad.parquet", rows, 2)
    got = refused_items(store, path, mapping="item_id=id,question=q,options=opts,answer=gold,images=pic_1+pic_2")
    assert got == [("bad.parquet", 1, "pic_2", "'pic_2 2' is not a readable image (UnidentifiedImageError)"),
                   ("bad.parquet", 2, "pic_1", "'pic_1' is not a readable image (UnidentifiedImageError)"),
                   ("bad.parquet", 3, "pic_1", "'pic_1 1' is not a readable image (UnidentifiedImageError)")]


# ---- predictions ----------------------------------------------------------------------------------------------


@pytest.fixture
def fe_store(tmp_path, store):
    from db.importers import import_items

    import_items(store, write_benchmark(tmp_path / "fe", fe_lines()), name="fe")
    return store


def refused_predictions(store, path: Path, run: str = "r", **kw) -> list[tuple[str, int, str, str]]:
    from core.errors import ImportRefused
    from db.importers import import_predictions

    before = store.counts()
    with pytest.raises(ImportRefused) as info:
        import_predictions(store, path, run, **kw)
    assert store.counts() == before
    return issues(info)


def test_a_second_usual_line_for_an_item_is_a_duplicate(fe_store, tmp_path):
    """Two usual lines (item_id and response only) for one item: the second is refused as a duplicate of the
    first, by its line, before anything reaches the store."""
    rows = [{"item_id": "g1_0-cam", "response": "A"}, {"item_id": "g1_0-obj", "response": "B"},
            {"item_id": "g1_0-cam", "response": "C"}]
    assert refused_predictions(fe_store, write(tmp_path / "p.jsonl", rows)) == [
        ("p.jsonl", 3, "item_id", "duplicate prediction for 'g1_0-cam' rotation 0 repeat 0 (first on line 1)")]
    assert fe_store.runs(with_counts=False) == []


def test_ok_status_without_a_readable_answer_is_refused_under_status(fe_store, tmp_path):
    rows = [{"item_id": "g1_0-cam", "response": "no idea", "status": "ok"}]
    assert refused_predictions(fe_store, write(tmp_path / "p.jsonl", rows)) == [
        ("p.jsonl", 1, "status", "says ok but the response has no readable answer (invalid); give the letter in "
                                 "`answer` or drop `status`")]


def test_the_run_keeps_its_settings_as_sorted_json(fe_store, tmp_path):
    """The run's settings are stored as the store writes every run's (keys sorted, not ASCII-escaped), so one
    setting has one spelling whichever order a caller gave it in."""
    from db.importers import import_predictions

    config = {"temperature": 0, "prompt": "前", "max_tokens": 9}
    import_predictions(fe_store, write(tmp_path / "p.jsonl", [{"item_id": "g1_0-cam", "response": "A"}]), "r",
                       model="m", config=config)
    [text] = fe_store.conn.execute("SELECT config FROM runs WHERE name = 'r'").fetchone()
    assert text == '{"max_tokens": 9, "model": "m", "prompt": "前", "runner": "import", "temperature": 0}'


def test_a_vlmevalkit_table_names_its_format_in_the_runs_settings(fe_store, tmp_path):
    from db.importers import import_predictions

    path = tmp_path / "Model_FE.tsv"
    path.write_text("index\tprediction\ng1_0-cam\tThe answer is A.\n", encoding="utf-8")
    res = import_predictions(fe_store, path, "v", model="m", config={"temperature": 0})
    assert res.rows == 1
    assert fe_store.run("v")["config"] == {"model": "m", "runner": "import", "source_format": "vlmevalkit",
                                           "temperature": 0}


def test_predictions_fill_a_run_created_without_rows(fe_store, tmp_path):
    """A run created with the import's settings (Store.ensure_run, as a run that was started and stopped before
    its first answer) and no rows yet: the import writes every line into it."""
    from db.importers import import_predictions

    fe_store.ensure_run("r", "fe", {"runner": "import", "model": "m"})
    rows = [{"item_id": "g1_0-cam", "response": "A"}, {"item_id": "g1_0-obj", "response": "C", "rotation": 1}]
    res = import_predictions(fe_store, write(tmp_path / "p.jsonl", rows), "r", model="m")
    assert (res.rows, res.report.counts) == (2, {"predictions": 2, "unchanged": 0, "ok": 2, "invalid": 0,
                                                 "api_error": 0})
    df = fe_store.predictions_frame("r").sort_values("item_id")
    assert df[["item_id", "rotation", "shown", "answer", "status"]].values.tolist() == [
        ["g1_0-cam", 0, "A", "A", "ok"], ["g1_0-obj", 1, "C", "B", "ok"]]


def test_rows_left_under_a_reused_run_id_are_replaced(fe_store, tmp_path):
    """Rows left behind under a run id SQLite gives again (a run row deleted by hand, its predictions kept): a new
    run with that id writes every line over them (INSERT OR REPLACE), in one transaction. Leftover rows of items
    the new file does not name stay under the new run too; only the new file's rows are checked here."""
    from core.errors import ImportRefused
    from db.importers import import_predictions

    import_predictions(fe_store, write(tmp_path / "old.jsonl", [{"item_id": "g1_0-cam", "response": "B"},
                                                                {"item_id": "g1_0-obj", "response": "B"}]), "old")
    old_id = fe_store.run("old")["id"]
    conn = fe_store.conn
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute("DELETE FROM runs WHERE id = ?", (old_id,))
    conn.execute("PRAGMA foreign_keys = ON")
    rows = [{"item_id": "g1_0-cam", "response": "A"}, {"item_id": "g1_0-scene", "response": "C", "trace": "t"}]
    with pytest.raises(ImportRefused, match=r"unknown item 'nope' \(not in benchmark 'fe'\)"):  # refused: id free
        import_predictions(fe_store, write(tmp_path / "bad.jsonl", [*rows, {"item_id": "nope", "response": "A"}]),
                           "bad")
    res = import_predictions(fe_store, write(tmp_path / "new.jsonl", rows), "new")
    assert fe_store.run("new")["id"] == old_id and res.rows == 2
    df = fe_store.predictions_frame("new").sort_values("item_id")
    df = df[df["item_id"].isin(["g1_0-cam", "g1_0-scene"])]
    assert df[["item_id", "response", "answer"]].values.tolist() == [["g1_0-cam", "A", "A"], ["g1_0-scene", "C", "C"]]
    # a line with other fields (a trace) is a whole row of the new run too
    assert fe_store.conn.execute("SELECT count(*) FROM predictions WHERE run_id = ? AND trace = 't'",
                                 (old_id,)).fetchone()[0] == 1


# ---- labels -------------------------------------------------------------------------------------------------------


def test_labels_count_each_saved_row_and_name_a_missing_trace(fe_store, tmp_path):
    from db.importers import import_labels, import_predictions

    import_predictions(fe_store, write(tmp_path / "p.jsonl", [{"item_id": "g1_0-cam", "response": "A"},
                                                              {"item_id": "g1_0-obj", "response": "B"}]), "r")
    labels = [{"item_id": i, "annotator": "ann1", "S1": 1, "S2": 0, "category": "c", "note": "n"}
              for i in ("g1_0-cam", "g1_0-obj")]
    res = import_labels(fe_store, write(tmp_path / "l.jsonl", labels), "r")
    assert (res.rows, res.report.counts) == (2, {"labels": 2, "unchanged": 0})
    from core.errors import ImportRefused

    before = fe_store.counts()
    with pytest.raises(ImportRefused) as info:
        import_labels(fe_store, write(tmp_path / "m.jsonl", [{**labels[0], "rotation": 1}]), "r")
    assert issues(info) == [("m.jsonl", 1, "item_id", "run 'r' has no trace for 'g1_0-cam' rotation 1 repeat 0")]
    assert fe_store.counts() == before
