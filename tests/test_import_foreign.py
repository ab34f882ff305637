"""Issue 16: VLMEvalKit TSVs and prediction tables, lmms-eval samples and Hugging Face parquet / arrow files.

Every file here is written by code in this test, in the layout the tool writes (csv for VLMEvalKit's TSV,
openpyxl for its .xlsx, pyarrow for parquet and for the datasets library's save_to_disk folder), never by the
code under test.
"""

from __future__ import annotations

import base64
import csv
import io
import json
from pathlib import Path

import pytest
from conftest import run_cli

LETTERS = "ABCDEFGH"


def png(color: tuple[int, int, int], size: tuple[int, int] = (24, 16)) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG")
    return buf.getvalue()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


# Questions of the MMBench-style fixture: (index, question, option texts, gold index, copies, hint, category).
QUESTIONS = [
    (0, "What colour is the square?", ["red", "green", "blue", "yellow"], 0, 4, "", "colour"),
    (1, "Is it night?", ["yes", "no"], 1, 2, "Look at the sky.", "scene"),
    (2, "Which image is wider?", ["the first", "the second", "neither"], 0, 1, "", "compare"),
    (3, "How many dots?", ["one", "two", "three"], 2, 2, "", "count"),
]
IMAGES = {0: png((200, 0, 0)), 1: png((0, 0, 90)), 3: png((9, 9, 9))}
MULTI = [png((10, 200, 10)), png((10, 10, 200), (40, 16))]


def rotated(texts: list[str], k: int) -> list[str]:
    """Copy k shows the option originally at i at (i + k) mod n (VLMEvalKit's circular copies)."""
    n = len(texts)
    return [texts[(i - k) % n] for i in range(n)]


def mmbench_rows() -> list[dict[str, str]]:
    rows = []
    for index, question, texts, gold, copies, hint, cat in QUESTIONS:
        for k in range(copies):
            opts = rotated(texts, k)
            row = {"index": str(index + k * 1_000_000), "question": question, "hint": hint,
                   "answer": LETTERS[opts.index(texts[gold])], "category": cat, "l2-category": "perception",
                   "split": "dev", "source": "fixture"}
            row.update({LETTERS[i]: t for i, t in enumerate(opts)})
            if index == 2:
                row["image"] = repr([b64(d) for d in MULTI])  # a Python list literal: several images
            elif k == 0:
                row["image"] = b64(IMAGES[index])
            else:
                row["image"] = str(index)  # the index of the row holding the image (VLMEvalKit saves space)
            rows.append(row)
    return rows


def write_tsv(path: Path, rows: list[dict[str, str]]) -> Path:
    cols = ["index", "question", "hint", "A", "B", "C", "D", "answer", "category", "l2-category", "split",
            "image", "source"]
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=cols, delimiter="\t", lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, "") for c in cols})
    return path


# The model's choice per question and copy, as option text: Q0 right everywhere; Q1 right then wrong; Q2
# right; Q3 the same wrong text in both copies.
CHOICES = {0: ["red"] * 4, 1: ["no", "yes"], 2: ["the first"], 3: ["one", "one"]}


def predicted(index: int, k: int) -> str:
    texts = next(q[2] for q in QUESTIONS if q[0] == index)
    return LETTERS[rotated(texts, k).index(CHOICES[index][k])]


def prediction_table() -> list[dict[str, object]]:
    out = []
    for row in mmbench_rows():
        idx = int(row["index"])
        letter = predicted(idx % 1_000_000, idx // 1_000_000)
        rec = {k: v for k, v in row.items() if k != "image"}
        rec["index"] = idx
        rec["prediction"] = f"The answer is ({letter})."
        rec["extracted"] = letter
        out.append(rec)
    return out


def write_xlsx(path: Path, records: list[dict[str, object]]) -> Path:
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    cols = list(records[0])
    ws.append(cols)
    for r in records:
        ws.append([r.get(c) for c in cols])
    wb.save(path)
    return path


def lmms_samples(records: list[dict[str, object]], by_position: bool = False) -> list[dict[str, object]]:
    out = []
    for pos, r in enumerate(records):
        doc = {k: v for k, v in r.items() if k not in ("prediction", "extracted")}
        if by_position:
            doc.pop("index")
        letter = r["extracted"]
        out.append({"doc_id": pos, "doc": doc, "target": r["answer"], "arguments": [["<prompt>", {}]],
                    "resps": [[f"I think the answer is {letter}."]], "filtered_resps": [str(letter)],
                    "exact_match": float(letter == r["answer"])})
    return out


def write_jsonl(path: Path, objs: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(o) + "\n" for o in objs), encoding="utf-8")
    return path


def store_at(db: Path):
    from db.store import Store

    return Store(db)


def counts(db: Path) -> dict[str, int]:
    s = store_at(db)
    try:
        return s.counts()
    finally:
        s.close()


def score_json(db: Path, run: str) -> dict:
    proc = run_cli("score", "--run", run, "--json", "--split", "dev", db=db, check=True)
    return json.loads(proc.stdout)["metrics"]


# ---- VLMEvalKit dataset TSV -----------------------------------------------------------------------------


def test_tsv_items_groups_images_hint_and_meta(tmp_path):
    from db.importers import import_items

    tsv = write_tsv(tmp_path / "MMBench_DEV_EN.tsv", mmbench_rows())
    s = store_at(tmp_path / "s.db")
    res = import_items(s, tsv, name="mmb")
    assert res.report.counts == {"items": 9, "images": 5, "groups": 4}
    items = {it.item_id: it for it in s.items("mmb")}
    assert s.benchmark("mmb")["family"] == "generic"
    # circular copies share a group and the referenced image; each copy keeps its rotated options
    assert {items[i].group_id for i in ("0", "1000000", "2000000", "3000000")} == {"0"}
    assert items["3000000"].images == items["0"].images and len(items["0"].images) == 1
    assert items["1000000"].options == {"A": "yellow", "B": "red", "C": "green", "D": "blue"}
    assert items["1000000"].answer == "B" and items["0"].answer == "A"
    assert [items[i].meta["copy"] for i in ("0", "1000000", "2000000")] == [0, 1, 2]
    # a list literal holds several images, in order
    assert len(items["2"].images) == 2 and items["2"].images[0] != items["2"].images[1]
    assert items["2"].options == {"A": "the first", "B": "the second", "C": "neither"}  # empty D: absent
    assert items["1"].kind == "scene" and items["1"].split == "dev"
    assert items["1"].meta["hint"] == "Look at the sky." and "hint" not in items["0"].meta
    assert items["1"].meta["l2-category"] == "perception" and items["1"].meta["source"] == "fixture"
    # re-importing the same file is a no-op
    again = import_items(s, tsv, name="mmb")
    assert again.unchanged and s.counts()["items"] == 9
    s.close()


def test_hint_goes_before_the_question_in_prompts():
    from core.prompts import question_block

    assert question_block("Is it night?", {"A": "yes", "B": "no"}, "Look at the sky.") == \
        "Hint: Look at the sky.\nIs it night?\n\nOptions:\nA. yes\nB. no"
    assert question_block("Q?", {"A": "x", "B": "y"}, None).startswith("Q?\n")


@pytest.mark.parametrize("mutate, needle", [
    (lambda rows: rows[1].update(image="0000:not-a-reference-or-base64!!" * 3), "MMBench.tsv:3: image: "),
    (lambda rows: rows[1].update(image="77"), "MMBench.tsv:3: image: '77' names no row's index"),
    (lambda rows: rows[0].update(image=b64(b"this is not an image at all, only text " * 3)),
     "MMBench.tsv:2: image: "),
    (lambda rows: rows[5].update(answer="Z"), "MMBench.tsv:7: answer: "),
    (lambda rows: rows[0].update(index=""), "MMBench.tsv:2: index: missing"),
])
def test_tsv_bad_row_refused_nothing_written(tmp_path, mutate, needle):
    rows = mmbench_rows()
    mutate(rows)
    tsv = write_tsv(tmp_path / "MMBench.tsv", rows)
    db = tmp_path / "s.db"
    proc = run_cli("import", str(tsv), db=db)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert needle in proc.stderr.splitlines()[0], proc.stderr
    assert "nothing was written" in proc.stderr
    assert counts(db)["items"] == 0 and counts(db)["benchmarks"] == 0


# ---- VLMEvalKit predictions and lmms-eval samples -----------------------------------------------------------


@pytest.fixture(scope="module")
def mmbench_store(tmp_path_factory):
    """The TSV imported by the CLI, then the VLMEvalKit .xlsx: the two commands of the issue's "Done when"."""
    root = tmp_path_factory.mktemp("mmb")
    db = root / "s.db"
    tsv = write_tsv(root / "MMBench_DEV_EN.tsv", mmbench_rows())
    first = run_cli("import", str(tsv), "--name", "mmb", db=db, check=True)
    assert "imported 9 items in 4 groups" in first.stdout
    xlsx = write_xlsx(root / "Qwen_MMBench_DEV_EN.xlsx", prediction_table())
    second = run_cli("import-predictions", str(xlsx), "--run", "qwen-xlsx", db=db, check=True)
    assert "9 predictions written (9 ok" in second.stdout
    return root, db


def test_xlsx_predictions_give_the_circular_scores(mmbench_store):
    _root, db = mmbench_store
    m = score_json(db, "qwen-xlsx")
    # circular groups Q0 (4 copies), Q1 (2), Q3 (2); Q2 has one copy. Q0 right in every copy; Q1 right then
    # wrong; Q3 the same wrong text twice.
    assert m["circular"] == {"value": 1 / 3, "k": 1, "n": 3}
    assert m["consistency"] == {"value": 2 / 3, "k": 2, "n": 3}
    assert m["vanilla"] == {"value": 2 / 3, "k": 2, "n": 3}
    assert m["mean_rotation"] == {"value": 5 / 8, "k": 5, "n": 8}
    assert m["drop"]["value"] == pytest.approx(1 / 3)
    assert m["circular_over"] == "copies"
    assert m["accuracy"]["k"] == 6 and m["accuracy"]["n"] == 9
    assert m["group_exact_match"]["k"] == 2  # Q0 and Q2


def test_xlsx_keeps_the_extracted_letter_beside_the_raw_response(mmbench_store):
    from db.foreign import prediction_sources

    _root, db = mmbench_store
    s = store_at(db)
    src = prediction_sources(s, "qwen-xlsx")
    preds = s.predictions_frame("qwen-xlsx").set_index("item_id")
    assert src["1000001"] == {"tool": "vlmevalkit", "extracted": "B"}
    assert preds.loc["1000001", "response"] == "The answer is (B)." and preds.loc["1000001", "shown"] == "B"
    s.close()


def test_reimport_of_the_xlsx_is_a_noop(mmbench_store):
    root, db = mmbench_store
    proc = run_cli("import-predictions", str(root / "Qwen_MMBench_DEV_EN.xlsx"), "--run", "qwen-xlsx", db=db,
                   check=True)
    assert "0 predictions written" in proc.stdout and "9 unchanged" in proc.stdout


@pytest.mark.parametrize("by_position, key", [(False, None), (True, None), (False, "doc.index")])
def test_lmms_eval_samples_score_the_same(mmbench_store, tmp_path, by_position, key):
    from db.foreign import prediction_sources
    from db.importers import import_predictions

    _root, db = mmbench_store
    path = write_jsonl(tmp_path / "samples_mmbench_dev.jsonl", lmms_samples(prediction_table(), by_position))
    run = f"qwen-lmms-{by_position}-{key}"
    s = store_at(db)
    res = import_predictions(s, path, run, benchmark="mmb", key=key)
    assert res.report.counts["ok"] == 9
    src = prediction_sources(s, run)
    assert src["1"]["raw"] == "I think the answer is B." and src["1"]["target"] == "B"
    assert s.predictions_frame(run).set_index("item_id").loc["1", "response"] == "B"  # the filtered response
    s.close()
    mine, theirs = score_json(db, run), score_json(db, "qwen-xlsx")
    for k in ("accuracy", "circular", "consistency", "vanilla", "mean_rotation", "group_exact_match"):
        assert mine[k] == theirs[k], k


@pytest.mark.parametrize("edit, needle", [
    (lambda objs: objs[3]["doc"].update(index=99), "samples.jsonl:4: item_id: unknown item '99'"),
    (lambda objs: objs[5]["doc"].update(index=objs[0]["doc"]["index"]), "samples.jsonl:6: item_id: duplicate"),
    (lambda objs: objs[2].pop("filtered_resps"), "samples.jsonl:3: filtered_resps: missing"),
])
def test_lmms_eval_bad_sample_refused(mmbench_store, tmp_path, edit, needle):
    _root, db = mmbench_store
    objs = lmms_samples(prediction_table())
    edit(objs)
    path = write_jsonl(tmp_path / "samples.jsonl", objs)
    before = counts(db)["predictions"]
    proc = run_cli("import-predictions", str(path), "--run", "bad", "--benchmark", "mmb", db=db)
    assert proc.returncode == 2 and needle in proc.stderr, proc.stderr
    assert counts(db)["predictions"] == before
    s = store_at(db)
    assert s.conn.execute("SELECT count(*) FROM runs WHERE name = 'bad'").fetchone()[0] == 0
    s.close()


def test_lmms_eval_doc_id_out_of_range_names_the_line(mmbench_store, tmp_path):
    _root, db = mmbench_store
    objs = lmms_samples(prediction_table(), by_position=True)
    objs[4]["doc_id"] = 9
    path = write_jsonl(tmp_path / "samples.jsonl", objs)
    proc = run_cli("import-predictions", str(path), "--run", "bad-pos", "--benchmark", "mmb", db=db)
    assert proc.returncode == 2
    assert "samples.jsonl:5: doc_id: expected a position 0..8" in proc.stderr


def test_xlsx_row_without_index_refused(tmp_path, mmbench_store):
    _root, db = mmbench_store
    recs = prediction_table()
    recs[2]["index"] = None
    xlsx = write_xlsx(tmp_path / "p.xlsx", recs)
    proc = run_cli("import-predictions", str(xlsx), "--run", "bad-xlsx", "--benchmark", "mmb", db=db)
    assert proc.returncode == 2 and "p.xlsx:4: index: missing" in proc.stderr, proc.stderr


# ---- export --format vlmevalkit ------------------------------------------------------------------------------


def vlmevalkit_load(path: Path) -> list[dict[str, object]]:
    """What VLMEvalKit's ImageBaseDataset makes of a TSV (pandas read_csv sep='\\t', then image references and
    list literals resolved), written here independently of the product."""
    import ast

    import pandas as pd

    data = pd.read_csv(path, sep="\t")
    data["index"] = [str(x) for x in data["index"]]
    image_map = dict(zip(data["index"], [str(x) for x in data["image"]], strict=True))
    for k in image_map:
        if len(image_map[k]) <= 64:
            assert image_map[image_map[k]] and len(image_map[image_map[k]]) > 64
            image_map[k] = image_map[image_map[k]]
    rows = []
    for rec in data.to_dict("records"):
        cell = image_map[rec["index"]]
        imgs = ast.literal_eval(cell) if cell.startswith("[") else [cell]
        rec["images"] = [base64.b64decode(x) for x in imgs]
        rows.append(rec)
    return rows


def test_export_items_and_predictions_as_vlmevalkit(mmbench_store, tmp_path):
    _root, db = mmbench_store
    out = run_cli("export", "items", "--benchmark", "mmb", "--format", "vlmevalkit", db=db, check=True).stdout
    tsv = tmp_path / "exported.tsv"
    tsv.write_text(out, encoding="utf-8")
    rows = {r["index"]: r for r in vlmevalkit_load(tsv)}
    assert rows["2000000"]["images"] == [IMAGES[0]] and rows["2"]["images"] == MULTI
    assert rows["1"]["hint"] == "Look at the sky." and rows["1"]["category"] == "scene"
    assert rows["1000000"]["B"] == "red" and rows["1000000"]["answer"] == "B"
    # it imports back to the same items
    s = store_at(db)
    from db.import_items import _item_signature
    from db.importers import import_items

    import_items(s, tsv, name="mmb-again")
    assert _item_signature(s.items("mmb-again")) == _item_signature(s.items("mmb"))
    s.close()
    preds = run_cli("export", "predictions", "--run", "qwen-xlsx", "--format", "vlmevalkit", db=db,
                    check=True).stdout
    import pandas as pd

    table = pd.read_csv(io.StringIO(preds), sep="\t")
    assert "image" not in table.columns and len(table) == 9
    assert table.set_index("index").loc[1000001, "prediction"] == "The answer is (B)."


# ---- Hugging Face parquet / arrow ------------------------------------------------------------------------------


def image_struct():
    import pyarrow as pa

    return pa.struct([("bytes", pa.binary()), ("path", pa.string())])


def blink_table(bad_image: bool = False):
    import pyarrow as pa

    img = lambda d, n: {"bytes": d, "path": n}  # noqa: E731 - the datasets Image feature's struct
    rows = [
        {"idx": "val_Multi-view_Reasoning_1", "question": "Is the camera moving left or right?",
         "sub_task": "Multi-view_Reasoning", "image_1": img(png((1, 2, 3)), "a.png"),
         "image_2": img(png((4, 5, 6)), "b.png"), "image_3": None, "image_4": None,
         "choices": ["left", "right"], "answer": "(B)", "prompt": "...", "explanation": None},
        {"idx": "val_Counting_1", "question": "How many cups?", "sub_task": "Counting",
         "image_1": img(b"not an image" if bad_image else png((7, 8, 9)), "c.png"), "image_2": None,
         "image_3": None, "image_4": None, "choices": ["1", "2", "3", "4"], "answer": "(C)", "prompt": "...",
         "explanation": "three cups"},
    ]
    schema = pa.schema([("idx", pa.string()), ("question", pa.string()), ("sub_task", pa.string()),
                        *[(f"image_{k}", image_struct()) for k in range(1, 5)], ("choices", pa.list_(pa.string())),
                        ("answer", pa.string()), ("prompt", pa.string()), ("explanation", pa.string())])
    return pa.Table.from_pylist(rows, schema=schema)


def test_blink_parquet_imports_with_one_command(tmp_path):
    import pyarrow.parquet as pq

    path = tmp_path / "val-00000-of-00001.parquet"
    pq.write_table(blink_table(), path)
    db = tmp_path / "s.db"
    proc = run_cli("import", str(path), "--name", "blink", db=db, check=True)
    assert "imported 2 items in 2 groups, 3 images" in proc.stdout
    s = store_at(db)
    items = {it.item_id: it for it in s.items("blink")}
    mv = items["val_Multi-view_Reasoning_1"]
    assert len(mv.images) == 2 and mv.options == {"A": "left", "B": "right"} and mv.answer == "B"  # "(B)"
    assert mv.kind == "Multi-view_Reasoning" and "explanation" not in mv.meta
    assert items["val_Counting_1"].answer == "C" and items["val_Counting_1"].meta["explanation"] == "three cups"
    s.close()


def test_parquet_bad_image_and_missing_column_refused(tmp_path):
    import pyarrow.parquet as pq

    path = tmp_path / "blink.parquet"
    pq.write_table(blink_table(bad_image=True), path)
    db = tmp_path / "s.db"
    proc = run_cli("import", str(path), db=db)
    assert proc.returncode == 2 and "blink.parquet:2: image_1: " in proc.stderr and "not a readable image" in \
        proc.stderr
    proc = run_cli("import", str(path), "--map", "item_id=idx,question=question,options=choices,answer=answer,"
                   "images=image_1+image_9", db=db)
    assert proc.returncode == 2 and "mapped column(s) image_9 not in the file" in proc.stderr
    assert counts(db)["items"] == 0


@pytest.mark.parametrize("answer, expected", [("B", "B"), ("(B)", "B"), ("B.", "B"), (1, "B"), ("right", "B"),
                                              ("b", "B"), ("[A]", "A")])
def test_answer_forms(answer, expected):
    from core.foreign.answers import letter_of

    assert letter_of(answer, {"A": "left", "B": "right"}) == (expected, "")


@pytest.mark.parametrize("answer", ["Z", "(E)", 5, "up", None, ""])
def test_answer_forms_refused(answer):
    from core.foreign.answers import letter_of

    letter, why = letter_of(answer, {"A": "left", "B": "right"})
    assert letter is None and "expected" in why


def write_save_to_disk(folder: Path, table) -> Path:
    """The layout of datasets' Dataset.save_to_disk: arrow IPC stream shards, state.json, dataset_info.json."""
    import pyarrow as pa

    folder.mkdir(parents=True)
    name = "data-00000-of-00001.arrow"
    with pa.OSFile(str(folder / name), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    (folder / "state.json").write_text(json.dumps({"_data_files": [{"filename": name}], "_fingerprint": "x",
                                                   "_format_type": None, "_split": "test"}))
    (folder / "dataset_info.json").write_text(json.dumps({"features": {}}))
    return folder


def test_muirbench_save_to_disk_pairs_and_null_images(tmp_path):
    import pyarrow as pa

    img = lambda d: {"bytes": d, "path": None}  # noqa: E731
    rows = [
        {"idx": "m1", "task": "Image-Text Matching", "question": "Which image shows a cat?",
         "options": ["<image>", "<image>", "None of the choices"], "answer": "A",
         "image_list": [img(png((1, 1, 1))), img(png((2, 2, 2)))], "counterpart_idx": "m2",
         "image_relation": "Narrative", "image_type": "Photo"},
        {"idx": "m2", "task": "Image-Text Matching", "question": "Which image shows a cat?",
         "options": ["<image>", "<image>", "None of the choices"], "answer": "C",
         "image_list": [img(png((1, 1, 1))), None, img(png((3, 3, 3)))], "counterpart_idx": "m1",
         "image_relation": "Narrative", "image_type": "Photo"},
        {"idx": "m3", "task": "Counting", "question": "How many?", "options": ["1", "2"], "answer": "B",
         "image_list": [img(png((4, 4, 4)))], "counterpart_idx": None, "image_relation": "Temporal",
         "image_type": "Photo"},
    ]
    schema = pa.schema([("idx", pa.string()), ("task", pa.string()), ("question", pa.string()),
                        ("options", pa.list_(pa.string())), ("answer", pa.string()),
                        ("image_list", pa.list_(image_struct())), ("counterpart_idx", pa.string()),
                        ("image_relation", pa.string()), ("image_type", pa.string())])
    folder = write_save_to_disk(tmp_path / "muirbench", pa.Table.from_pylist(rows, schema=schema))
    from db.importers import import_items

    s = store_at(tmp_path / "s.db")
    res = import_items(s, folder)
    assert res.report.counts == {"items": 3, "images": 4, "groups": 2}
    items = {it.item_id: it for it in s.items("muirbench")}
    assert items["m1"].group_id == items["m2"].group_id == "m1" and items["m3"].group_id == "m3"
    assert len(items["m2"].images) == 2  # the null entry is dropped
    assert items["m1"].images[0] == items["m2"].images[0]  # stored once by content
    assert items["m1"].meta == {"image_relation": "Narrative", "image_type": "Photo", "counterpart_idx": "m2"}
    s.close()


def test_pair_naming_a_missing_item_refused(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"id": "a", "q": "?", "opts": ["x", "y"], "gold": 0, "pair": "zz"}]
    path = tmp_path / "d.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    db = tmp_path / "s.db"
    proc = run_cli("import", str(path), "--map", "item_id=id,question=q,options=opts,answer=gold,"
                   "group_id=pair:pair", db=db)
    assert proc.returncode == 2 and "d.parquet:1: pair: names item 'zz'" in proc.stderr


def test_parquet_shard_folder_with_letter_columns_and_map(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "data"
    folder.mkdir()
    for k in range(2):
        rows = [{"qid": f"q{k}{j}", "text": "pick", "opt_a": "x", "opt_b": "y", "opt_c": None, "gold": "y",
                 "cat": "c"} for j in range(3)]
        pq.write_table(pa.Table.from_pylist(rows), folder / f"test-0000{k}-of-00002.parquet")
    from db.importers import import_items

    s = store_at(tmp_path / "s.db")
    import_items(s, folder, name="shards", mapping="item_id=qid,question=text,options=opt_a+opt_b+opt_c,"
                 "answer=gold,kind=cat,meta.origin=cat")
    items = s.items("shards")
    assert [it.item_id for it in items] == ["q00", "q01", "q02", "q10", "q11", "q12"]
    assert items[0].options == {"A": "x", "B": "y"} and items[0].answer == "B" and items[0].meta == {"origin": "c"}
    s.close()


def test_audit_shows_the_tools_extracted_letter_beside_the_raw_response(mmbench_store, tmp_path):
    from db.importers import import_predictions
    from ui.audit import problems_html

    _root, db = mmbench_store
    recs = prediction_table()
    recs[4]["prediction"] = "I cannot tell; maybe A, maybe B."  # Crosscheck's letter parser: invalid
    recs[4]["extracted"] = "B"  # what VLMEvalKit's extraction made of it
    s = store_at(db)
    import_predictions(s, write_xlsx(tmp_path / "m_MMBench_result.xlsx", recs), "qwen-audit", benchmark="mmb")
    html, keys = problems_html(s, "qwen-audit", "invalid")
    s.close()
    assert keys == ["1 · r0/rep0"]
    assert "the tool&#x27;s answer" in html or "the tool's answer" in html
    assert "vlmevalkit extracted <b class=\"cc-letter\">B</b>" in html and "maybe A, maybe B." in html


@pytest.mark.parametrize("suffix", [".tsv", ".csv", ".json", ".json-dict"])
def test_vlmevalkit_prediction_tsv_csv_json(mmbench_store, tmp_path, suffix):
    from db.importers import import_predictions

    _root, db = mmbench_store
    recs = prediction_table()
    path = tmp_path / f"Qwen_MMBench{suffix.split('-')[0]}"
    if suffix in (".tsv", ".csv"):
        with open(path, "w", newline="", encoding="utf-8") as f:  # pandas to_csv's layout
            w = csv.DictWriter(f, fieldnames=list(recs[0]), delimiter="\t" if suffix == ".tsv" else ",")
            w.writeheader()
            w.writerows(recs)
    elif suffix == ".json":
        path.write_text(json.dumps(recs), encoding="utf-8")
    else:
        path.write_text(json.dumps({str(r["index"]): r["prediction"] for r in recs}), encoding="utf-8")
    s = store_at(db)
    run = f"qwen{suffix}"
    res = import_predictions(s, path, run, benchmark="mmb")
    assert res.report.counts["ok"] == 9
    got = s.predictions_frame(run).set_index("item_id")["shown"].to_dict()
    want = s.predictions_frame("qwen-xlsx").set_index("item_id")["shown"].to_dict()
    s.close()
    assert got == want


def test_a_json_nested_too_deep_is_refused_not_a_crash(mmbench_store, tmp_path):
    """A VLMEvalKit .json predictions file nested deeper than Python recurses is refused, as malformed."""
    from core.errors import ImportRefused
    from db.importers import import_predictions

    _root, db = mmbench_store
    path = tmp_path / "Qwen_MMBench.json"
    path.write_text("[" * 5000 + "]" * 5000, encoding="utf-8")
    s = store_at(db)
    with pytest.raises(ImportRefused) as info:
        import_predictions(s, path, "deep", benchmark="mmb")
    s.close()
    assert [(e.file, e.field, e.message) for e in info.value.report.errors] == [
        ("Qwen_MMBench.json", "(file)", "malformed JSON (nested too deep)")]


def test_prediction_dry_run_writes_nothing(mmbench_store):
    from db.validate import validate_predictions

    root, db = mmbench_store
    s = store_at(db)
    report = validate_predictions(s, root / "Qwen_MMBench_DEV_EN.xlsx", "dry", benchmark="mmb")
    assert report.ok and report.counts["ok"] == 9
    assert s.conn.execute("SELECT count(*) FROM runs WHERE name = 'dry'").fetchone()[0] == 0
    s.close()


def test_mmmu_and_mmbench_parquet_presets(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from db.importers import import_items

    img = {"bytes": png((5, 5, 5)), "path": "x.png"}
    mmmu = [{"id": "validation_Art_1", "question": "<image 1> Which style?", "options": "['Baroque', 'Rococo', 'Gothic']",
             "explanation": "", "image_1": img, "image_2": None, "image_3": None, "image_4": None, "image_5": None,
             "image_6": None, "image_7": None, "img_type": "['Paintings']", "answer": "B",
             "topic_difficulty": "Easy", "question_type": "multiple-choice", "subfield": "Art History"}]
    schema = pa.schema([(k, image_struct() if k.startswith("image_") else pa.string()) for k in mmmu[0]])
    pq.write_table(pa.Table.from_pylist(mmmu, schema=schema), tmp_path / "mmmu.parquet")
    mmb = [{"index": i + k * 1_000_000, "question": "Which?", "hint": "h" if i else None, "A": opts[0], "B": opts[1],
            "C": None, "D": None, "answer": "AB"[(1 + k) % 2] if i else "AB"[k], "category": "c",
            "image": img, "source": "s", "l2-category": "l2", "comment": None, "split": "dev"}
           for i in range(2) for k, opts in enumerate((["x", "y"], ["y", "x"]))]
    schema = pa.schema([("index", pa.int64()), ("question", pa.string()), ("hint", pa.string()),
                        *[(c, pa.string()) for c in "ABCD"], ("answer", pa.string()), ("category", pa.string()),
                        ("image", image_struct()), ("source", pa.string()), ("l2-category", pa.string()),
                        ("comment", pa.string()), ("split", pa.string())])
    pq.write_table(pa.Table.from_pylist(mmb, schema=schema), tmp_path / "mmbench.parquet")
    s = store_at(tmp_path / "s.db")
    import_items(s, tmp_path / "mmmu.parquet")
    it = s.items("mmmu")[0]
    assert it.options == {"A": "Baroque", "B": "Rococo", "C": "Gothic"} and it.answer == "B" and len(it.images) == 1
    assert it.kind == "Art History" and it.meta["question_type"] == "multiple-choice" and "explanation" not in it.meta
    res = import_items(s, tmp_path / "mmbench.parquet")
    assert res.report.counts["groups"] == 2 and res.report.counts["images"] == 1
    items = {x.item_id: x for x in s.items("mmbench")}
    assert items["1000001"].group_id == "1" and items["1000001"].meta == {"copy": 1, "hint": "h", "source": "s",
                                                                          "l2-category": "l2"}
    assert items["1000001"].options == {"A": "y", "B": "x"} and items["1"].split == "dev"
    assert import_items(s, tmp_path / "mmbench.parquet").unchanged  # re-import: a no-op
    s.close()


def test_family_rules_apply_to_foreign_items(tmp_path):
    tsv = write_tsv(tmp_path / "MMBench.tsv", mmbench_rows())
    db = tmp_path / "s.db"
    proc = run_cli("import", str(tsv), "--family", "frameevidence", db=db)
    assert proc.returncode == 2 and "MMBench.tsv" in proc.stderr and counts(db)["items"] == 0
    proc = run_cli("import", str(tsv), "--family", "nosuch", db=db)
    assert proc.returncode == 2 and "--family: unknown family 'nosuch'" in proc.stderr


def test_index_over_a_million_without_its_base_row_is_its_own_group(tmp_path):
    from db.importers import import_items

    rows = [r for r in mmbench_rows() if r["index"] not in ("1", "0")]
    for r in rows:  # the references pointed at the removed rows
        if r["image"] in ("0", "1"):
            r["image"] = b64(IMAGES[int(r["image"])])
    s = store_at(tmp_path / "s.db")
    import_items(s, write_tsv(tmp_path / "part.tsv", rows))
    items = {it.item_id: it for it in s.items("part")}
    assert items["1000001"].group_id == "1000001" and "copy" not in items["1000001"].meta
    assert items["1000003"].group_id == "3" and items["1000003"].meta["copy"] == 1
    s.close()


def test_unmapped_columns_and_other_gold_are_warned_about(tmp_path, mmbench_store):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from db.importers import import_items, import_predictions

    path = tmp_path / "d.parquet"
    pq.write_table(pa.Table.from_pylist([{"id": "a", "q": "?", "opts": ["x", "y"], "gold": "y", "note": "n"}]), path)
    s = store_at(tmp_path / "s.db")
    res = import_items(s, path, mapping="item_id=id,question=q,options=opts,answer=gold")
    s.close()
    assert [str(w) for w in res.report.warnings] == \
        ["d.parquet: note: column(s) not mapped and not imported (keep one with --map ...,meta.NAME=COLUMN)"]
    _root, db = mmbench_store
    recs = prediction_table()
    recs[1]["answer"] = "D"  # index 1000000's gold is B
    s = store_at(db)
    res = import_predictions(s, write_xlsx(tmp_path / "other.xlsx", recs), "qwen-other", benchmark="mmb")
    s.close()
    assert [str(w) for w in res.report.warnings] == ["other.xlsx:3: answer: the table's answer 'D' differs from "
                                                     "item '1000000''s gold 'B' in benchmark 'mmb' (another "
                                                     "dataset version?)"]


def test_dataset_dict_folder_path_images_and_escapes(tmp_path):
    import pyarrow as pa

    from db.importers import import_items

    root = tmp_path / "dd"
    (root / "imgs").mkdir(parents=True)
    (root / "imgs" / "a.png").write_bytes(png((50, 60, 70)))
    schema = pa.schema([("id", pa.string()), ("q", pa.string()), ("opts", pa.list_(pa.string())),
                        ("gold", pa.int64()), ("pic", image_struct())])
    for split in ("train", "test"):
        rows = [{"id": f"{split}-1", "q": "?", "opts": ["x", "y"], "gold": 1,
                 "pic": {"bytes": None, "path": "imgs/a.png"}}]
        write_save_to_disk(root / split, pa.Table.from_pylist(rows, schema=schema))
    (root / "dataset_dict.json").write_text(json.dumps({"splits": ["train", "test"]}))
    mapping = "item_id=id,question=q,options=opts,answer=gold,images=pic"
    s = store_at(tmp_path / "s.db")
    import_items(s, root, name="dd", mapping=mapping)
    items = {it.item_id: it for it in s.items("dd")}
    assert items["train-1"].split == "train" and items["test-1"].split == "test"
    assert items["test-1"].answer == "B" and items["test-1"].images == items["train-1"].images != []
    # a path that leaves the dataset's folder is refused like a JSONL image path
    rows = [{"id": "t", "q": "?", "opts": ["x", "y"], "gold": 0, "pic": {"bytes": None, "path": "../secret.png"}}]
    (tmp_path / "secret.png").write_bytes(png((1, 1, 1)))
    esc = tmp_path / "esc"
    write_save_to_disk(esc, pa.Table.from_pylist(rows, schema=schema))
    from core.errors import ImportRefused

    with pytest.raises(ImportRefused, match=r"data-00000-of-00001.arrow:1: images: '../secret.png' contains '..'"):
        import_items(s, esc, mapping=mapping)
    assert s.counts()["items"] == 2
    s.close()


def test_map_and_preset_refused_for_jsonl_and_bad_map(tmp_path):
    from core.errors import ImportRefused
    from db.importers import import_items

    jsonl = tmp_path / "items.jsonl"
    jsonl.write_text(json.dumps({"benchmark": "generic", "item_id": "a", "question": "?",
                                 "options": {"A": "x", "B": "y"}, "answer": "A"}) + "\n")
    s = store_at(tmp_path / "s.db")
    with pytest.raises(ImportRefused, match="--map: --map applies to VLMEvalKit and Hugging Face files"):
        import_items(s, jsonl, mapping="item_id=id")
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist([{"id": "a"}]), tmp_path / "x.parquet")
    with pytest.raises(ImportRefused, match="match no known layout"):
        import_items(s, tmp_path / "x.parquet")
    with pytest.raises(ImportRefused, match="unknown field 'colour'"):
        import_items(s, tmp_path / "x.parquet", mapping="colour=id")
    assert s.counts()["items"] == 0
    s.close()


@pytest.mark.parametrize("name, text, fmt", [
    ("a.json", '{"item_id": "x", "response": "A"}\n{"item_id": "y", "response": "B"}\n', "jsonl"),
    ("b.json", '[\n  {"index": 1, "prediction": "A"}\n]', "vlmevalkit"),
    ("c.json", '{"1": "A", "2": "B"}', "vlmevalkit"),
    ("d.jsonl", '{"doc_id": 0, "doc": {}, "resps": [["A"]], "filtered_resps": ["A"]}\n', "lmms-eval"),
    ("e.jsonl", '{"item_id": "x", "response": "A"}\n', "jsonl"),
    ("f.csv", "index,prediction\n1,A\n", "vlmevalkit"),
    ("g.csv", "item_id,response\nx,A\n", "csv"),
    ("h.xlsx", "", "vlmevalkit"),
])
def test_prediction_format_auto(tmp_path, name, text, fmt):
    from db.foreign import prediction_format

    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert prediction_format(path, "auto") == fmt


def test_lmms_eval_doc_id_on_a_benchmark_of_several_splits_refused(tmp_path):
    """lmms-eval's doc_id is a position within one split: on a two-split benchmark it would pick wrong items."""
    from conftest import write_benchmark

    lines = [{"benchmark": "generic", "item_id": f"i{i}", "group_id": f"g{i}", "split": s, "kind": "x",
              "question": f"q{i}", "options": {"A": "red", "B": "blue"}, "answer": "A"}
             for i, s in enumerate(["test", "test", "validation", "validation"])]
    db = tmp_path / "s.db"
    assert run_cli("import", str(write_benchmark(tmp_path / "b", lines)), "--name", "two", db=db).returncode == 0
    samples = [{"doc_id": i, "doc": {"question": f"q{i}"}, "target": "A", "resps": [["A"]], "filtered_resps": ["A"]}
               for i in range(2)]
    proc = run_cli("import-predictions", str(write_jsonl(tmp_path / "s.jsonl", samples)), "--run", "r",
                   "--benchmark", "two", "--format", "lmms-eval", db=db)
    assert proc.returncode == 2
    assert "s.jsonl:1: doc_id: benchmark 'two' holds several splits (test, validation)" in proc.stderr, proc.stderr
    assert run_cli("score", "--run", "r", db=db).returncode == 2  # nothing was written


def test_replace_drops_what_the_tool_kept_beside_a_replaced_response(mmbench_store, tmp_path):
    """A --replace that changes a response leaves no VLMEvalKit extracted letter beside the new one in the audit."""
    from db.foreign import prediction_sources

    root, db = mmbench_store
    run_cli("import-predictions", str(root / "Qwen_MMBench_DEV_EN.xlsx"), "--run", "x-replace", "--benchmark", "mmb",
            db=db, check=True)
    s = store_at(db)
    assert prediction_sources(s, "x-replace")["1000001"] == {"tool": "vlmevalkit", "extracted": "B"}
    kept_before = set(prediction_sources(s, "x-replace"))
    s.close()
    recs = prediction_table()
    for rec in recs:
        if rec["index"] == 1000001:
            rec["prediction"], rec["extracted"] = "It is (C).", None  # VLMEvalKit kept no letter this time
    run_cli("import-predictions", str(write_xlsx(tmp_path / "again.xlsx", recs)), "--run", "x-replace",
            "--benchmark", "mmb", "--replace", db=db, check=True)
    s = store_at(db)
    after = prediction_sources(s, "x-replace")
    assert "1000001" not in after and set(after) == kept_before - {"1000001"}
    assert s.predictions_frame("x-replace").set_index("item_id").loc["1000001", "response"] == "It is (C)."
    s.close()


# ---- a row per documented foreign column (issue 28 point 3) -------------------------------------------------


def test_tsv_image_path_comment_and_a_reference_to_a_reference(tmp_path):
    """`image_path` (a file name, or the text of a list of them, relative to the TSV's folder) is read when the
    `image` cell is empty, as VLMEvalKit's meta_only datasets are, and kept as meta like any other column; a
    `comment` column becomes meta.comment (an empty cell left out); an image cell naming a row whose own cell is
    a reference is refused."""
    from db.importers import import_items

    (tmp_path / "imgs").mkdir()
    (tmp_path / "imgs" / "a.png").write_bytes(png((1, 2, 3)))
    (tmp_path / "imgs" / "b.png").write_bytes(png((4, 5, 6)))
    rows = [
        {"index": "0", "question": "q0", "A": "x", "B": "y", "answer": "A", "image": "",
         "image_path": "imgs/a.png", "comment": "from the meta-only release"},
        {"index": "1", "question": "q1", "A": "x", "B": "y", "answer": "B", "image": "",
         "image_path": repr(["imgs/b.png", "imgs/a.png"]), "comment": ""},
    ]
    cols = ["index", "question", "A", "B", "answer", "image", "image_path", "comment"]
    tsv = tmp_path / "MetaOnly.tsv"
    with open(tsv, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=cols, delimiter="\t", lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    s = store_at(tmp_path / "s.db")
    import_items(s, tsv, name="meta-only")
    items = {it.item_id: it for it in s.items("meta-only")}
    s.close()
    assert len(items["0"].images) == 1 and len(items["1"].images) == 2
    assert items["1"].images[1] == items["0"].images[0]  # the same file, in the listed order
    assert items["0"].meta["image_path"] == "imgs/a.png"
    assert items["0"].meta["comment"] == "from the meta-only release" and "comment" not in items["1"].meta

    chained = mmbench_rows()
    chained[2]["image"] = chained[1]["index"]  # row 2000000 names row 1000000, whose own cell is the reference "0"
    bad = write_tsv(tmp_path / "Chained.tsv", chained)
    proc = run_cli("import", str(bad), db=tmp_path / "c.db")
    assert proc.returncode == 2
    assert "Chained.tsv:4: image: refers to row '1000000' (line 3), whose image cell is itself a reference" \
        in proc.stderr, proc.stderr


@pytest.mark.parametrize(("columns", "kept"), [
    ({"extracted": "B"}, {"extracted": "B"}),
    ({"opt": "C"}, {"extracted": "C"}),
    ({"pred": "D"}, {"extracted": "D"}),
    ({"extracted": "B", "opt": "C", "pred": "D"}, {"extracted": "B"}),  # `extracted` wins, then `opt`
    ({"opt": "C", "pred": "D"}, {"extracted": "C"}),
    ({"extracted": None, "opt": "C"}, {"extracted": "C"}),  # an empty cell is no letter
    ({"hit": 1, "log": "Match found: B"}, {"hit": 1, "log": "Match found: B"}),
])
def test_result_table_columns_kept_beside_the_response(mmbench_store, tmp_path, columns, kept):
    """The MCQ evaluation's `_result.xlsx` columns: the extracted letter under `extracted`, `opt` or `pred`
    (the first present wins) and `hit` / `log`, stored beside the raw response, which alone is parsed."""
    from db.foreign import prediction_sources
    from db.importers import import_predictions

    _root, db = mmbench_store
    recs = [{k: v for k, v in r.items() if k != "extracted"} for r in prediction_table()]
    target = next(r for r in recs if r["index"] == 1000001)
    target.update(columns)
    for r in recs:
        r.update({c: None for c in columns if c not in r})
    path = write_xlsx(tmp_path / "Qwen_MMBench_DEV_EN_result.xlsx", recs)
    s = store_at(db)
    run = "result-" + "-".join(f"{k}{v}" for k, v in columns.items())
    import_predictions(s, path, run, benchmark="mmb")
    src = prediction_sources(s, run)
    shown = s.predictions_frame(run).set_index("item_id").loc["1000001", "shown"]
    s.close()
    assert src["1000001"] == {"tool": "vlmevalkit", **kept}
    assert shown == "B"  # the raw response "The answer is (B)." decides, whatever the tool extracted
