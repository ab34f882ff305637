"""Foundation: the import formats, their bad inputs, idempotency and crash safety (issue: Foundation)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT, copy_store, fe_lines, run_cli, write_benchmark, write_png


def counts(db: Path) -> dict[str, int]:
    from db.store import Store

    s = Store(db)
    try:
        return s.counts()
    finally:
        s.close()


@pytest.fixture(scope="module")
def seeded_source(tmp_path_factory):
    """A store that already holds one benchmark and one run, so 'unchanged' means more than 'empty'."""
    root = tmp_path_factory.mktemp("seeded")
    db = root / "s.db"
    bench = write_benchmark(root / "base", fe_lines(prefix="base"))
    run_cli("import", str(bench), "--name", "base", db=db, check=True)
    preds = root / "base_preds.jsonl"
    preds.write_text("".join(json.dumps({"item_id": line["item_id"], "response": line["answer"]}) + "\n"
                             for line in fe_lines(prefix="base")), encoding="utf-8")
    run_cli("import-predictions", str(preds), "--run", "base-run", db=db, check=True)
    from db.store import Store

    s = Store(db)
    s.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    s.close()
    return db


@pytest.fixture
def seeded_db(seeded_source, tmp_path):
    """A private copy of the seeded store for one test."""
    db = copy_store(seeded_source, tmp_path / "seeded")
    (tmp_path / "base_preds.jsonl").write_bytes((seeded_source.parent / "base_preds.jsonl").read_bytes())
    return db


def assert_refused(proc: subprocess.CompletedProcess, *needles: str) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    first = proc.stderr.splitlines()[0]
    assert first.startswith("error: ")
    for needle in needles:
        assert needle in first, f"{needle!r} not in {first!r}"
    assert "nothing was written" in proc.stderr
    return first


def mutate(lines: list[dict], index: int, **changes) -> list[dict]:
    out = [dict(line) for line in lines]
    for key, value in changes.items():
        if value is KeyError:
            out[index].pop(key)
        else:
            out[index][key] = value
    return out


# Each case: a change to a valid FrameEvidence file, and the text the one-line error must contain.
ITEM_CASES = {
    "missing_field": (lambda ls: mutate(ls, 2, question=KeyError), [":3:", "question", "missing"]),
    "unknown_family": (lambda ls: mutate(ls, 0, benchmark="mmbench"), [":1:", "benchmark", "unknown family"]),
    "answer_not_letter": (lambda ls: mutate(ls, 4, answer="E"), [":5:", "answer", "not an option letter"]),
    "answer_text": (lambda ls: mutate(ls, 1, answer="前"), [":2:", "answer"]),
    "duplicate_id": (lambda ls: mutate(ls, 3, item_id=ls[0]["item_id"]), [":4:", "item_id", "duplicate", "line 1"]),
    "absolute_path": (lambda ls: [*ls[:6], *[{**x, "images": ["/etc/hostname"] + x["images"][1:]} for x in ls[6:9]],
                                  *ls[9:]], [":7:", "images", "absolute"]),
    "dotdot_path": (lambda ls: mutate(ls, 0, images=["img/../img/g1_0_1.png", "img/g1_0_2.png"]), [":1:", "'..'"]),
    "missing_image": (lambda ls: mutate(ls, 0, images=["img/nope.png", "img/g1_0_2.png"]), [":1:", "no such image"]),
    "fq1_one_gold": (lambda ls: mutate(mutate(ls, 1, answer="A"), 2, answer="A"), [":1:", "two distinct gold"]),
    "fq1_images_differ": (lambda ls: mutate(ls, 1, images=["img/g1_0_2.png", "img/g1_0_1.png"]), [":2:", "same ordered images"]),
    "fq2_del_gold": (lambda ls: mutate(ls, 7, answer="A"), [":8:", "insufficient option"]),
    "fq2_add_gold": (lambda ls: mutate(ls, 8, answer="C"), [":9:", "MSS gold"]),
    "fq2_del_two_removed": (lambda ls: mutate(ls, 7, images=["img/g2_0_1.png"], meta={**ls[7]["meta"], "original_positions": [1]}),
                            [":8:", "remove exactly one"]),
    "fq2_question_differs": (lambda ls: mutate(ls, 8, question="另一个问题"), [":9:", "question"]),
    "fq2_missing_variant": (lambda ls: [x for i, x in enumerate(ls) if i != 8], ["lacks add"]),
    # 000 §3 / §4.1 (issue 13): the MSS gold is a spatial answer; an FQ1 triplet shows two to four images
    "fq2_mss_gold_insufficient": (lambda ls: mutate(mutate(ls, 6, answer="D"), 8, answer="D"),
                                  [":7:", "answer", "must be a spatial answer"]),
    "fq1_five_images": (lambda ls: [*[{**x, "images": ["img/g1_0_1.png", "img/g1_0_2.png", "img/g1_1_1.png",
                                                       "img/g1_1_2.png", "img/g2_0_1.png"]} for x in ls[:3]], *ls[3:]],
                        [":1:", "images", "expected two to four"]),
}


@pytest.mark.parametrize("case", sorted(ITEM_CASES))
def test_bad_items_are_refused_and_write_nothing(case, tmp_path, seeded_db):
    change, needles = ITEM_CASES[case]
    path = write_benchmark(tmp_path / "bad", fe_lines())
    lines = change(fe_lines())
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    before = counts(seeded_db)
    assert_refused(run_cli("import", str(path), db=seeded_db), *needles)
    assert counts(seeded_db) == before


def test_malformed_json_line_names_line(tmp_path, seeded_db):
    path = write_benchmark(tmp_path / "bad", fe_lines())
    text = path.read_text(encoding="utf-8").splitlines()
    text[4] = text[4][:-3]  # cut the closing braces
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    before = counts(seeded_db)
    assert_refused(run_cli("import", str(path), db=seeded_db), ":5:", "malformed JSON")
    assert counts(seeded_db) == before


def test_empty_file(tmp_path, seeded_db):
    path = tmp_path / "empty.jsonl"
    path.write_text("\n  \n", encoding="utf-8")
    before = counts(seeded_db)
    assert_refused(run_cli("import", str(path), db=seeded_db), "empty")
    assert counts(seeded_db) == before


def test_utf8_bom_is_accepted(tmp_path, store):
    from db.importers import import_items

    path = write_benchmark(tmp_path / "bom", fe_lines())
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    result = import_items(store, path, name="bom")
    assert result.rows == 12
    assert store.items("bom")[0].item_id == "g1_0-cam"


def test_link_out_of_folder_is_refused(tmp_path, seeded_db):
    outside = tmp_path / "outside.png"
    write_png(outside, (1, 2, 3))
    path = write_benchmark(tmp_path / "bad", fe_lines())
    link = tmp_path / "bad" / "img" / "escape.png"
    link.symlink_to(outside)
    lines = mutate(fe_lines(), 9, images=["img/escape.png", "img/g2_1_2.png", "img/g2_1_3.png"])
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    before = counts(seeded_db)
    assert_refused(run_cli("import", str(path), db=seeded_db), ":10:", "link out of")
    assert counts(seeded_db) == before


def test_png_that_is_not_an_image(tmp_path, seeded_db):
    path = write_benchmark(tmp_path / "bad", fe_lines())
    (tmp_path / "bad" / "img" / "g1_1_2.png").write_text("not a png at all", encoding="utf-8")
    before = counts(seeded_db)
    assert_refused(run_cli("import", str(path), db=seeded_db), ":4:", "not a readable image")
    assert counts(seeded_db) == before


def test_decompression_bomb_is_refused(tmp_path, seeded_db):
    from PIL import Image

    path = write_benchmark(tmp_path / "bad", fe_lines())
    Image.new("1", (9000, 9000)).save(tmp_path / "bad" / "img" / "g1_0_1.png")  # 81 MP, a few KB on disk
    assert (tmp_path / "bad" / "img" / "g1_0_1.png").stat().st_size < 200_000
    before = counts(seeded_db)
    assert_refused(run_cli("import", str(path), db=seeded_db), ":1:", "pixel limit")
    assert counts(seeded_db) == before


def make_zip(folder: Path, target: Path, extra: dict[str, bytes] | None = None) -> Path:
    with zipfile.ZipFile(target, "w") as zf:
        for p in sorted(folder.rglob("*")):
            if p.is_file():
                zf.write(p, p.relative_to(folder).as_posix())
        for name, data in (extra or {}).items():
            zf.writestr(name, data)
    return target


def test_zip_imports_like_jsonl(tmp_path, store):
    from db.importers import import_items

    write_benchmark(tmp_path / "z", fe_lines())
    zpath = make_zip(tmp_path / "z", tmp_path / "bench.zip")
    result = import_items(store, zpath)
    assert (result.target, result.rows) == ("bench", 12)
    item = store.items("bench")[0]
    assert len(item.images) == 2 and store.image_path(item.images[0]).is_file()
    assert store.thumbnail(item.images[0]).is_file()


def test_zip_member_escaping_is_refused(tmp_path, seeded_db):
    write_benchmark(tmp_path / "z", fe_lines())
    zpath = make_zip(tmp_path / "z", tmp_path / "evil.zip", extra={"../../escaped.txt": b"x"})
    before = counts(seeded_db)
    assert_refused(run_cli("import", str(zpath), db=seeded_db), "escapes the extraction folder")
    assert counts(seeded_db) == before
    assert not (tmp_path / "escaped.txt").exists()


def test_image_shared_across_splits_is_refused(tmp_path, seeded_db):
    lines = fe_lines() + fe_lines(n_fq1=1, n_fq2=0, split="train", prefix="tr")
    for line in lines[-3:]:
        line["images"] = ["img/g1_0_1.png", "img/trg1_0_2.png"]
    path = write_benchmark(tmp_path / "bad", lines)
    before = counts(seeded_db)
    assert_refused(run_cli("import", str(path), db=seeded_db), "cross splits")
    assert counts(seeded_db) == before


STEMBIND_OK = [
    {"benchmark": "stembind", "item_id": "s1-p1", "group_id": "s1", "kind": "P", "question": "q", "options": {"A": "x", "B": "y"},
     "answer": "A", "meta": {"operation": "RI-Pos"}},
    {"benchmark": "stembind", "item_id": "s1-r", "group_id": "s1", "kind": "R", "question": "q", "options": {"A": "x", "B": "y"},
     "answer": "B", "meta": {"operation": "RI-Pos"}},
    {"benchmark": "stembind", "item_id": "s1-f", "group_id": "s1", "kind": "F", "question": "q", "options": {"A": "x", "B": "y"},
     "answer": "A", "meta": {"operation": "RI-Pos"}, "stages": {"S1": "a", "S2": "b", "S3": "c", "S4": "d"}},
]


@pytest.mark.parametrize("change,needle", [
    (lambda ls: ls[1:], "no P probe"),
    (lambda ls: ls + [{**ls[1], "item_id": "s1-r2"}], "2 R items"),
    (lambda ls: ls[:2] + [{k: v for k, v in ls[2].items() if k != "stages"}], "must carry stages"),
    (lambda ls: [{**ls[0], "meta": {"operation": "RI-Color"}}] + ls[1:], "unknown operation"),
    # a row per rule (issue 28 point 3)
    (lambda ls: [{**ls[0], "item_id": "s1-q", "kind": "Q"}] + ls, "expected P, R or F, got 'Q'"),
    (lambda ls: ls[:2], "0 F items"),
    (lambda ls: [{**ls[0], "meta": {"operation": "VP-Fold"}}] + ls[1:], "mixes operations"),
])
def test_stembind_rules(change, needle, tmp_path, store):
    from core.errors import ImportRefused
    from db.importers import import_items

    path = write_benchmark(tmp_path / "sb", [dict(x) for x in STEMBIND_OK])
    assert import_items(store, path, name="ok").rows == 3
    path.write_text("".join(json.dumps(x) + "\n" for x in change([dict(x) for x in STEMBIND_OK])), encoding="utf-8")
    with pytest.raises(ImportRefused, match=needle):
        import_items(store, path, name="bad")
    assert [b["name"] for b in store.benchmarks()] == ["ok"]


def test_spur_kind_rule(tmp_path, store):
    from core.errors import ImportRefused
    from db.importers import import_items

    line = {"benchmark": "spur", "item_id": "f1-1", "group_id": "f1", "kind": "OCR", "question": "q",
            "options": {"A": "1", "B": "2"}, "answer": "A"}
    path = write_benchmark(tmp_path / "sp", [line])
    with pytest.raises(ImportRefused, match="expected one of NP, MP, IL, TA, HI, Qual, Quant"):
        import_items(store, path)


def test_reimport_changes_nothing(tmp_path, seeded_db):
    path = write_benchmark(tmp_path / "again", fe_lines(prefix="base"))
    before = counts(seeded_db)
    proc = run_cli("import", str(path), "--name", "base", db=seeded_db, check=True)
    assert "unchanged" in proc.stdout
    preds = tmp_path / "base_preds.jsonl"
    proc = run_cli("import-predictions", str(preds), "--run", "base-run", db=seeded_db, check=True)
    assert "0 predictions written" in proc.stdout
    assert counts(seeded_db) == before


def test_every_item_is_in_the_search_index_at_commit(tmp_path, store):
    """Items are written 500 rows per INSERT (db.store._insert_items): every item, those of the last, partial
    statement too, is in the full-text index when the import commits, found by a word only it holds, and a
    second benchmark's items after them."""
    from db.importers import import_items

    for name, n in (("first", 1100), ("second", 3)):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps({"benchmark": "generic", "item_id": str(k), "question": f"{name}w{k}x here",
                                            "options": {"A": "x", "B": "y"}, "answer": "A"}) + "\n"
                                for k in range(n)), encoding="utf-8")
        import_items(store, path, name=name)
        b = store.benchmark(name)
        for k in range(n):
            hits = store.conn.execute("SELECT i.benchmark_id, i.item_id FROM search_items s JOIN items i ON i.id = "
                                      "s.rowid WHERE search_items MATCH ?", (f"{name}w{k}x",)).fetchall()
            assert hits == [(b["id"], str(k))]
    assert store.conn.execute("SELECT count(*) FROM search_items WHERE search_items MATCH 'here'").fetchone() == (1103,)
    store.conn.execute("INSERT INTO search_items(search_items) VALUES ('integrity-check')")


# ---- predictions ---------------------------------------------------------------------------------------------


def write_preds(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_predictions_for_unknown_item(tmp_path, seeded_db):
    rows = [{"item_id": "baseg1_0-cam", "response": "A"}, {"item_id": "nope", "response": "B"}]
    before = counts(seeded_db)
    assert_refused(run_cli("import-predictions", str(write_preds(tmp_path / "p.jsonl", rows)), "--run", "x",
                           "--benchmark", "base", db=seeded_db), ":2:", "unknown item 'nope'")
    assert counts(seeded_db) == before


@pytest.mark.parametrize("row,needles", [
    ({"item_id": "baseg1_0-cam"}, [":1:", "response", "missing"]),
    ({"item_id": "baseg1_0-cam", "response": "A", "answer": "E"}, [":1:", "answer"]),
    ({"item_id": "baseg1_0-cam", "response": "A", "status": "fine"}, [":1:", "status"]),
    ({"item_id": "baseg1_0-cam", "response": "A", "rotation": 9}, [":1:", "rotation"]),
    ({"item_id": "baseg1_0-cam", "response": "A", "input_mode": "audio"}, [":1:", "input_mode"]),
])
def test_bad_prediction_fields(row, needles, tmp_path, seeded_db):
    before = counts(seeded_db)
    assert_refused(run_cli("import-predictions", str(write_preds(tmp_path / "p.jsonl", [row])), "--run", "x",
                           db=seeded_db), *needles)
    assert counts(seeded_db) == before


def test_predictions_parse_rotate_and_roundtrip(tmp_path, store):
    from db.exporters import PRED_EXPORT_FIELDS, prediction_records, write_records
    from db.importers import import_items, import_predictions

    import_items(store, write_benchmark(tmp_path / "fe", fe_lines()), name="fe")
    rows = [
        {"item_id": "g1_0-cam", "response": "答案：B", "rotation": 1},  # shown B under r=1 -> original A
        {"item_id": "g1_0-obj", "response": "I pick C", "answer": "C", "rotation": 3},  # C under r=3 -> D
        {"item_id": "g1_0-scene", "response": "A or B"},
        {"item_id": "g2_0-mss", "response": "", "status": "api_error", "error": "timeout"},
        {"item_id": "g2_0-del", "response": "信息不足"},  # option text of D
    ]
    result = import_predictions(store, write_preds(tmp_path / "p.jsonl", rows), "r")
    assert result.report.counts["ok"] == 3
    df = store.predictions_frame("r").set_index("item_id")
    assert (df.loc["g1_0-cam", "shown"], df.loc["g1_0-cam", "answer"]) == ("B", "A")
    assert (df.loc["g1_0-obj", "shown"], df.loc["g1_0-obj", "answer"]) == ("C", "D")
    assert df.loc["g1_0-scene", "status"] == "invalid" and df.loc["g1_0-scene", "answer"] is None
    assert df.loc["g2_0-mss", "status"] == "api_error" and df.loc["g2_0-mss", "error"] == "timeout"
    assert df.loc["g2_0-del", "answer"] == "D"
    for fmt, ext in (("jsonl", "jsonl"), ("csv", "csv")):
        out = tmp_path / f"export.{ext}"
        with out.open("w", encoding="utf-8", newline="") as fh:
            write_records(prediction_records(store, "r"), fh, fmt, PRED_EXPORT_FIELDS)
        again = import_predictions(store, out, "r")
        assert again.unchanged, (fmt, again.report.counts)


def test_conflicting_reimport_needs_replace(tmp_path, store):
    from core.errors import ImportRefused
    from db.importers import import_items, import_predictions

    import_items(store, write_benchmark(tmp_path / "fe", fe_lines()), name="fe")
    import_predictions(store, write_preds(tmp_path / "a.jsonl", [{"item_id": "g1_0-cam", "response": "A"}]), "r")
    changed = write_preds(tmp_path / "b.jsonl", [{"item_id": "g1_0-cam", "response": "B"}])
    with pytest.raises(ImportRefused, match="--replace"):
        import_predictions(store, changed, "r")
    assert import_predictions(store, changed, "r", replace=True).rows == 1
    assert store.predictions_frame("r")["answer"].tolist() == ["B"]


def test_csv_predictions(tmp_path, store):
    from db.importers import import_items, import_predictions

    import_items(store, write_benchmark(tmp_path / "fe", fe_lines()), name="fe")
    csv_path = tmp_path / "p.csv"
    csv_path.write_text("item_id,response,rotation,tokens\ng1_0-cam,B,0,12\ng1_0-obj,\"答案是C\",2,\n", encoding="utf-8")
    result = import_predictions(store, csv_path, "csvrun")
    assert result.rows == 2
    df = store.predictions_frame("csvrun").set_index("item_id")
    assert df.loc["g1_0-cam", "tokens"] == 12 and df.loc["g1_0-obj", "answer"] == "A"


def test_labels_import_and_audit(tmp_path, store):
    from core.errors import ImportRefused
    from db.importers import import_items, import_labels, import_predictions

    import_items(store, write_benchmark(tmp_path / "fe", fe_lines()), name="fe")
    import_predictions(store, write_preds(tmp_path / "p.jsonl", [{"item_id": "g1_0-cam", "response": "A"}]), "r")
    lab = tmp_path / "l.jsonl"
    lab.write_text(json.dumps({"item_id": "g1_0-cam", "annotator": "ann1", "S1": 1, "S2": 0, "S3": 0, "S4": 1}) + "\n")
    assert import_labels(store, lab, "r").rows == 1
    assert import_labels(store, lab, "r").unchanged
    lab.write_text(json.dumps({"item_id": "g1_0-cam", "annotator": "ann1", "S1": 1, "S2": 1, "S3": 0, "S4": 1}) + "\n")
    assert import_labels(store, lab, "r").rows == 1
    assert store.conn.execute("SELECT COUNT(*) FROM label_audit").fetchone()[0] == 2
    lab.write_text(json.dumps({"item_id": "g1_0-obj", "annotator": "ann1", "S1": 2}) + "\n")
    with pytest.raises(ImportRefused, match=":1: S1: expected 0 or 1"):
        import_labels(store, lab, "r")


def test_end_to_end_cli(tmp_path):
    db = tmp_path / "e2e.db"
    write_benchmark(tmp_path / "fe", fe_lines())
    zpath = make_zip(tmp_path / "fe", tmp_path / "fe.zip")
    run_cli("import", str(zpath), db=db, check=True)
    rows = [{"item_id": line["item_id"], "response": f"答案：{line['answer']}"} for line in fe_lines()]
    rows[0]["response"] = "答案：D"
    run_cli("import-predictions", str(write_preds(tmp_path / "p.jsonl", rows)), "--run", "m1", "--model", "demo/m",
            db=db, check=True)
    score = json.loads(run_cli("score", "--run", "m1", "--json", db=db, check=True).stdout)
    assert score["benchmark"] == "fe" and score["run"] == "m1"
    acc = score["metrics"]["accuracy"]
    assert {k: acc[k] for k in ("value", "k", "n")} == {"value": 11 / 12, "k": 11, "n": 12}
    assert acc["ci"][0] <= 11 / 12 <= acc["ci"][1]  # FrameEvidence's headline rates carry their interval (#39.5)
    out = run_cli("export", "predictions", "--run", "m1", "--format", "jsonl", db=db, check=True).stdout
    exported = [json.loads(line) for line in out.splitlines()]
    assert len(exported) == 12 and exported[0]["answer"] == "D"


def test_kill_during_large_import_leaves_nothing(tmp_path):
    """kill -9 while the import transaction is open: no partial rows, and the next import succeeds."""
    from db.store import Store

    db = tmp_path / "k.db"
    run_cli("import", str(write_benchmark(tmp_path / "fe", fe_lines())), "--name", "fe", db=db, check=True)
    ids = [line["item_id"] for line in fe_lines()]
    big = tmp_path / "big.jsonl"
    with big.open("w", encoding="utf-8") as fh:
        for rep in range(6_000):
            for iid in ids:
                fh.write(json.dumps({"item_id": iid, "response": "答案：A", "repeat": rep}) + "\n")
    cmd = [sys.executable, str(ROOT / "app.py"), "import-predictions", str(big), "--run", "big", "--db", str(db)]
    killed_in_write = False
    for delay in (0.0, 0.3, 0.6, 1.0, 1.5, 2.5):
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wal = Path(str(db) + "-wal")
        start = wal.stat().st_size if wal.exists() else 0
        deadline = time.time() + 60
        # wait until the transaction is writing pages (the WAL grows), then a little longer
        while time.time() < deadline and proc.poll() is None:
            if wal.exists() and wal.stat().st_size > start + 200_000:
                break
            time.sleep(0.01)
        time.sleep(delay / 10)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            killed_in_write = True
            s = Store(db)
            assert s.counts()["predictions"] == 0
            assert s.runs() == []
            s.close()
            break
        proc.wait()
    assert killed_in_write, "the import finished before it could be killed"
    proc = run_cli("import-predictions", str(big), "--run", "big", db=db, timeout=300, check=True)
    s = Store(db)
    assert s.counts()["predictions"] == 6_000 * len(ids)
    s.close()


def _sb_item(item_id, group_id, kind, line, operation="RI-Pos", stages=True):
    from core.schema import Item

    return Item(benchmark="sb", item_id=item_id, group_id=group_id, split="test", kind=kind, variant="",
                question="q", options={"A": "x", "B": "y"}, answer="A",
                meta={} if operation is None else {"operation": operation},
                stages={"S1": "a", "S2": "b", "S3": "c", "S4": "d"} if kind == "F" and stages else None, line=line)


def _stem(gid, first, operation="RI-Pos", kinds="PRF"):
    return [_sb_item(f"{gid}-{i}", gid, k, first + i, operation) for i, k in enumerate(kinds)]


# (items, every issue the validator reports: (severity, line, field, message)); a stem's issues sit at its first line
STEMBIND_REPORTS = [
    (_stem("s1", 1) + _stem("s2", 4, "VP-Fold", "PPRF"), []),
    # an unknown kind is reported once, at its own line, and the item counts for no stem
    ([_sb_item("q", "s1", "Q", 1)] + _stem("s1", 2), [("error", 1, "kind", "expected P, R or F, got 'Q'")]),
    # ... and the items after it are still checked
    ([_sb_item("q", "s1", "Q", 1)] + _stem("s2", 2, kinds="RF"),
     [("error", 1, "kind", "expected P, R or F, got 'Q'"),
      ("error", 2, "kind", "stem 's2' has no P probe (expected at least one)")]),
    (_stem("s1", 3, kinds="RF") + [_sb_item("x", "s1", "R", 1)],
     [("error", 1, "kind", "stem 's1' has no P probe (expected at least one)"),
      ("error", 1, "kind", "stem 's1' has 2 R items (expected exactly one)")]),
    (_stem("s1", 5, kinds="PRFF"), [("error", 5, "kind", "stem 's1' has 2 F items (expected exactly one)")]),
    (_stem("s1", 2, kinds="PF") + _stem("s2", 7, kinds="PR"),
     [("error", 2, "kind", "stem 's1' has 0 R items (expected exactly one)"),
      ("error", 7, "kind", "stem 's2' has 0 F items (expected exactly one)")]),
    ([_sb_item("f", "s1", "F", 9, stages=False)] + _stem("s1", 10, kinds="PR"),
     [("error", 9, "stages", "an F item must carry stages {S1, S2, S3, S4}")]),
    (_stem("s1", 4, "RI-Color"),
     [("error", i, "meta.operation", "unknown operation 'RI-Color' (expected one of RI-Pos, RI-Sty, RI-Attr, "
       "RI-Qty, RI-Rel, VP-Fold, VP-View, VP-Rot, VP-Closure)") for i in (4, 5, 6)]),
    (_stem("s1", 3, "RI-Pos", "PR") + [_sb_item("f", "s1", "F", 2, "VP-Fold")],
     [("error", 2, "meta.operation", "stem 's1' mixes operations ['RI-Pos', 'VP-Fold']")]),
    # no operation: a warning, not an error (per-operation tables list it as unknown); an empty one is refused
    # and names none
    (_stem("s1", 6, None), [("warning", 6, "meta.operation",
                             "stem 's1' names no operation; per-operation tables will list it as unknown")]),
    (_stem("s1", 6, None, "PR") + [_sb_item("f", "s1", "F", 8, "")],
     [("error", 8, "meta.operation", "unknown operation '' (expected one of RI-Pos, RI-Sty, RI-Attr, RI-Qty, "
       "RI-Rel, VP-Fold, VP-View, VP-Rot, VP-Closure)"),
      ("warning", 6, "meta.operation", "stem 's1' names no operation; per-operation tables will list it as unknown")]),
]


@pytest.mark.parametrize(("items", "issues"), STEMBIND_REPORTS)
def test_stembind_validator_reports_line_field_and_message(items, issues):
    from core.families import get
    from core.report import Report

    report = Report()
    get("stembind").validate(items, "sb.jsonl", report)
    assert [(i.severity, i.line, i.field, i.message) for i in report.issues] == issues
    assert all(i.file == "sb.jsonl" for i in report.issues)


def test_a_tsv_item_keeps_each_image_as_its_stored_name(tmp_path):
    """An image given in another tool's file (base64 in a VLMEvalKit TSV) is stored by its content hash, and the
    item keeps the stored file's name, hash and extension, for the items export; a new benchmark is no no-op."""
    import base64
    import hashlib
    import io

    from PIL import Image

    from db.importers import import_items
    from db.store import Store

    buf = io.BytesIO()
    Image.new("RGB", (8, 6), (200, 10, 10)).save(buf, format="PNG")
    tsv = tmp_path / "MMBench_DEV_EN.tsv"
    tsv.write_text("index\tquestion\tA\tB\tanswer\timage\n0\tq?\tx\ty\tA\t"
                   + base64.b64encode(buf.getvalue()).decode("ascii") + "\n", encoding="utf-8")
    store = Store(tmp_path / "s.db")
    res = import_items(store, tsv, name="mmb")
    assert (res.rows, res.unchanged) == (1, False)
    assert store.benchmark("mmb")["source"] == "MMBench_DEV_EN.tsv"
    images, names = store.conn.execute("SELECT images, image_names FROM items").fetchone()
    [digest] = json.loads(images)
    assert digest == hashlib.sha256(buf.getvalue()).hexdigest()[:32]
    assert json.loads(names) == [f"{digest}.png"]
    store.close()
