"""A new run's predictions are written by db/import_writer.py's thread while the lines are read: the rows equal
the reference path's, a bad line read after rows were written still refuses the file with nothing written, a row
SQLite refuses in the writer surfaces with its file line, a killed import leaves no half run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_import_fast import make_stores, outcome, reference_import, stembind_lines

ROOT = Path(__file__).resolve().parents[1]
N_STEMS = 320  # 2,880 items: more lines than one hand-over to the writer (CHUNK) and than a statement's rows


def _ids() -> list[str]:
    return [x["item_id"] for x in stembind_lines(N_STEMS)]


def _write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def _answers(ids: list[str], traced: bool = False) -> list[dict]:
    """One line per item, varied: tagged, untagged, empty, with tokens, a rotated one, an error line; `traced`:
    every other line with a trace (a whole row: more of them than a statement's rows)."""
    out: list[dict] = []
    for k, i in enumerate(ids):
        line: dict = {"item_id": i, "response": ["<ANSWER>B</ANSWER>", "Final answer: opt C", "", "A"][k % 4]}
        if k % 3 == 0:
            line["tokens"] = k
        if traced and k % 2:
            line["trace"] = f"step {k}"
        if k % 97 == 5:
            line["status"] = "api_error"
            line["response"] = ""
        out.append(line)
    return out


@pytest.mark.parametrize("traced", [False, True])
def test_rows_written_while_read_equal_the_reference(tmp_path, traced):
    from db.import_predictions import CHUNK
    from db.import_writer import PER_STATEMENT
    from db.importers import import_predictions

    ids = _ids()
    assert len(ids) > 4 * max(CHUNK, PER_STATEMENT) and len(ids) % PER_STATEMENT  # hand-overs, statements, a tail
    fast, ref = make_stores(tmp_path, stembind_lines(N_STEMS), "sb")
    path = _write(tmp_path / "p.jsonl", _answers(ids, traced))
    got = outcome(fast, lambda: import_predictions(fast, path, "r"))
    assert got == outcome(ref, lambda: reference_import(ref, path, "r"))
    assert got[1] == len(ids) and fast.counts()["predictions"] == len(ids)
    fast.close()
    ref.close()


def test_bad_line_after_rows_were_written_refuses_the_file(tmp_path):
    from core.errors import ImportRefused
    from db.import_predictions import CHUNK
    from db.importers import import_predictions

    ids = _ids()
    fast, ref = make_stores(tmp_path, stembind_lines(N_STEMS), "sb")
    lines = _answers(ids)
    bad = 3 * CHUNK + 100  # three hand-overs of rows before it: more than a statement's rows written
    lines[bad] = {"item_id": ids[bad], "response": "x", "rotation": 9}
    path = _write(tmp_path / "bad.jsonl", lines)
    before = fast.counts()
    with pytest.raises(ImportRefused) as got:
        import_predictions(fast, path, "r")
    assert str(got.value).startswith(f"bad.jsonl:{bad + 1}: rotation:")
    assert fast.counts() == before and fast.runs() == []
    assert fast.conn.execute("SELECT count(*) FROM imports WHERE kind = 'predictions'").fetchone()[0] == 0
    fast.close()
    ref.close()


@pytest.mark.parametrize("extra", [{}, {"trace": "t"}])  # plain rows; whole rows (the writer's second form)
@pytest.mark.parametrize("at", [10, -1])  # in a statement of the writer's thread; among the last rows (close())
def test_row_refused_by_the_store_surfaces_with_its_line(tmp_path, at, extra):
    from core.errors import ImportRefused
    from db.importers import import_predictions

    ids = _ids()
    fast, ref = make_stores(tmp_path, stembind_lines(N_STEMS), "sb")
    fast.conn.execute("CREATE TRIGGER refuse_boom BEFORE INSERT ON predictions WHEN NEW.response = 'boom' "
                      "BEGIN SELECT RAISE(ABORT, 'boom is refused'); END")
    lines = [{"item_id": i, "response": "A", **extra} for i in ids]
    lines[at] = {"item_id": lines[at]["item_id"], "response": "boom", **extra}
    path = _write(tmp_path / "p.jsonl", lines)
    before = fast.counts()
    with pytest.raises(ImportRefused) as got:
        import_predictions(fast, path, "r")
    line = at + 1 if at >= 0 else len(lines)
    assert [(e.file, e.line, e.field) for e in got.value.report.errors] == [("p.jsonl", line, "(row)")]
    assert "boom is refused" in str(got.value)
    assert fast.counts() == before and fast.runs() == []
    fast.close()
    ref.close()


def test_switch_interval_put_back(tmp_path):
    from db.importers import import_predictions

    fast, ref = make_stores(tmp_path, stembind_lines(N_STEMS), "sb")
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)  # CPython's default, whatever an earlier test left
    try:
        import_predictions(fast, _write(tmp_path / "p.jsonl", _answers(_ids())), "r")
        assert sys.getswitchinterval() == 0.005
    finally:
        sys.setswitchinterval(before)
    fast.close()
    ref.close()


KILLED = """
import os, signal, sys
sys.path.insert(0, {root!r})
from db import import_writer
from db.importers import import_predictions
from db.store import Store

write = import_writer.RowWriter._write

def write_then_die(self, form, rows, lines):
    write(self, form, rows, lines)  # rows are in the transaction, not committed
    os.kill(os.getpid(), signal.SIGKILL)

import_writer.RowWriter._write = write_then_die
import_predictions(Store({db!r}), {path!r}, "killed")
"""


def test_killed_import_leaves_no_half_run(tmp_path):
    from db.importers import import_predictions
    from db.store import Store

    ids = _ids()
    fast, ref = make_stores(tmp_path, stembind_lines(N_STEMS), "sb")
    path = _write(tmp_path / "p.jsonl", _answers(ids))
    import_predictions(fast, path, "kept")
    db = str(fast.path)
    fast.close()
    ref.close()
    script = KILLED.format(root=str(ROOT), db=db, path=str(path))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    store = Store(db)
    assert [r["name"] for r in store.runs()] == ["kept"]
    assert store.counts()["predictions"] == len(ids)
    assert store.conn.execute("PRAGMA foreign_key_check").fetchall() == []
    store.close()


def _db_bytes(store) -> int:  # type: ignore[no-untyped-def]
    return store.path.stat().st_size


def test_a_bulk_write_checkpoints_behind_its_commit(tmp_path):
    """Store.write(behind=True): no checkpoint inside the COMMIT (auto-checkpoint 0 during it); the WAL's pages
    go to the database file on a thread of its own (the file grows once settle() returns: nothing else
    checkpoints here); the connection's own auto-checkpoint is put back after a commit and after a failed write;
    close() on that thread waits for the checkpoint."""
    from db.store import Store

    store = Store(tmp_path / "s.db")
    conn = store.conn
    conn.execute("PRAGMA wal_autocheckpoint = 321")  # not SQLite's default: put back as it was
    with store.write() as c:
        c.execute("CREATE TABLE scratch (b BLOB)")
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    before = _db_bytes(store)
    blob = os.urandom(64 * 1024)
    with pytest.raises(RuntimeError):
        with store.write(behind=True) as c:
            c.executemany("INSERT INTO scratch VALUES (?)", [(blob,)] * 100)
            raise RuntimeError("a bad line")
    assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 321
    assert conn.execute("SELECT count(*) FROM scratch").fetchone()[0] == 0
    n = 4 * 321 * page_size // len(blob)  # a WAL past the size at which SQLite would checkpoint in the COMMIT
    with store.write(behind=True) as c:
        assert c.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
        c.executemany("INSERT INTO scratch VALUES (?)", [(blob,)] * n)
    assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 321
    store.settle()
    assert _db_bytes(store) - before >= n * len(blob)  # the pages are in the database file, not only the WAL
    with store.write(behind=True) as c:
        c.executemany("INSERT INTO scratch VALUES (?)", [(blob,)] * n)
    grown = _db_bytes(store)
    store.close()  # waits for the checkpoint of the write above
    assert store._behind is None and _db_bytes(store) - grown >= n * len(blob) - 2 * page_size * 321


def test_a_failed_checkpoint_behind_leaves_the_next_one_free_to_start(tmp_path, monkeypatch):
    """A checkpoint thread that fails (here: it cannot open its connection) is logged and ends; the next
    write(behind=True) starts a new one, which checkpoints."""
    import sqlite3

    import db.store as dbstore

    store = dbstore.Store(tmp_path / "s.db")
    with store.write() as c:
        c.execute("CREATE TABLE scratch (b BLOB)")
    real = sqlite3.connect

    def refuse(*a, **k):  # type: ignore[no-untyped-def]
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(dbstore.sqlite3, "connect", refuse)
    blob = os.urandom(64 * 1024)
    with store.write(behind=True) as c:
        c.executemany("INSERT INTO scratch VALUES (?)", [(blob,)] * 80)
    store.settle()
    assert store._behind is None
    monkeypatch.setattr(dbstore.sqlite3, "connect", real)
    before = _db_bytes(store)
    with store.write(behind=True) as c:
        c.execute("INSERT INTO scratch VALUES (x'00')")
    store.settle()
    assert _db_bytes(store) - before >= 80 * len(blob)  # the earlier commit's pages too
    store.close()


def test_imports_log_holds_each_file_sha256(tmp_path):
    """The imports log's sha256 of a predictions file (hashed on a thread of its own beside the reading) is the
    file's, for a new run and for rows added to an existing one."""
    import hashlib

    from db.importers import import_predictions

    ids = _ids()
    fast, ref = make_stores(tmp_path, stembind_lines(N_STEMS), "sb")
    first = _write(tmp_path / "first.jsonl", _answers(ids[:1000]))
    more = _write(tmp_path / "more.jsonl", _answers(ids[1000:1500]))
    import_predictions(fast, first, "r")
    import_predictions(fast, more, "r")
    got = fast.conn.execute("SELECT file, sha256 FROM imports WHERE kind = 'predictions' ORDER BY id").fetchall()
    assert [tuple(g) for g in got] == [(p.name, hashlib.sha256(p.read_bytes()).hexdigest()) for p in (first, more)]
    fast.close()
    ref.close()


def test_digest_raises_what_reading_the_file_raised(tmp_path):
    from db.import_predictions import _Digest

    digest = _Digest(tmp_path / "gone.jsonl")
    with pytest.raises(FileNotFoundError):
        digest.hexdigest()


def test_lines_without_a_readable_item_id_are_each_listed(tmp_path):
    """No line names an item (nothing tells the benchmark): every line's field problems are listed, a malformed
    line (named when its chunk is read, so first) among them."""
    from core.errors import ImportRefused
    from db.importers import import_predictions

    fast, ref = make_stores(tmp_path, stembind_lines(2), "sb")
    path = tmp_path / "noid.jsonl"
    path.write_text('{"response": "A"}\n{"item_id": 7, "response": "B", "rotation": 9}\n{not json\n', encoding="utf-8")
    with pytest.raises(ImportRefused) as got:
        import_predictions(fast, path, "r")
    assert [(e.line, e.field) for e in got.value.report.errors] == [(3, "(line)"), (1, "item_id"), (2, "item_id"),
                                                                    (2, "rotation")]
    assert {e.file for e in got.value.report.errors} == {"noid.jsonl"}
    assert got.value.report.errors[0].message.startswith("malformed JSON")
    assert fast.runs() == []
    fast.close()
    ref.close()


def test_a_changed_rotated_row_is_named_by_its_key(tmp_path):
    """A changed row of an existing run, without --replace, is named with its item, rotation and repeat."""
    from core.errors import ImportRefused
    from db.importers import import_predictions

    ids = _ids()
    fast, ref = make_stores(tmp_path, stembind_lines(N_STEMS), "sb")
    import_predictions(fast, _write(tmp_path / "first.jsonl", [{"item_id": ids[5], "response": "A"}]), "first")
    import_predictions(fast, _write(tmp_path / "a.jsonl", [{"item_id": ids[0], "response": "A", "rotation": 2}]), "r")
    with pytest.raises(ImportRefused) as got:
        import_predictions(fast, _write(tmp_path / "b.jsonl", [{"item_id": ids[0], "response": "B", "rotation": 2}]),
                           "r")
    [error] = got.value.report.errors
    assert (error.file, error.line, error.field) == ("b.jsonl", 1, "response")
    assert f"{ids[0]!r} rotation 2 repeat 0" in error.message
    # rows added to that run (its id is not the benchmark's: the first run took that number) land in it
    assert fast.run("r")["id"] != fast.conn.execute("SELECT id FROM benchmarks").fetchone()[0]
    more = import_predictions(fast, _write(tmp_path / "c.jsonl", [{"item_id": ids[1], "response": "C", "rotation": 1}]),
                              "r")
    assert (more.target, more.rows) == ("r", 1)
    got_rows = fast.conn.execute("SELECT i.item_id, p.rotation FROM predictions p JOIN items i ON i.id = p.item_pk "
                                 "WHERE p.run_id = ? ORDER BY i.item_id", (fast.run("r")["id"],)).fetchall()
    assert [tuple(r) for r in got_rows] == [(ids[0], 2), (ids[1], 1)]
    fast.close()
    ref.close()


def test_a_repeated_rotated_key_is_named_as_a_duplicate(tmp_path):
    from core.errors import ImportRefused
    from db.importers import import_predictions

    ids = _ids()
    fast, ref = make_stores(tmp_path, stembind_lines(N_STEMS), "sb")
    lines = [{"item_id": ids[0], "response": "A", "rotation": 1}, {"item_id": ids[0], "response": "B", "rotation": 1}]
    with pytest.raises(ImportRefused) as got:
        import_predictions(fast, _write(tmp_path / "dup.jsonl", lines), "r")
    [error] = got.value.report.errors
    assert (error.line, error.field) == (2, "item_id")
    assert error.message == f"duplicate prediction for {ids[0]!r} rotation 1 repeat 0 (first on line 1)"
    fast.close()
    ref.close()


def test_a_file_with_problems_is_refused_with_them_not_by_the_store(tmp_path):
    """Rows handed to the writer before a bad line is read are not what the refusal names: a row the store
    refuses earlier in the file, or an error object (a value no column holds), gives way to the file's own
    problems, every one listed by line and field."""
    from core.errors import ImportRefused
    from db.importers import import_predictions

    ids = _ids()
    fast, ref = make_stores(tmp_path, stembind_lines(N_STEMS), "sb")
    fast.conn.execute("CREATE TRIGGER refuse_boom BEFORE INSERT ON predictions WHEN NEW.response = 'boom' "
                      "BEGIN SELECT RAISE(ABORT, 'boom is refused'); END")
    lines = [{"item_id": i, "response": "A", "trace": "t"} for i in ids[:620]]
    lines[9] = {"item_id": ids[9], "response": "boom", "trace": "t"}  # its statement is written with the first chunk
    lines[600] = {"item_id": ids[600], "response": "", "status": "api_error", "error": {"code": 503}}
    lines[601] = {"item_id": ids[601], "response": "x", "rotation": 9}
    before = fast.counts()
    with pytest.raises(ImportRefused) as got:
        import_predictions(fast, _write(tmp_path / "p.jsonl", lines), "r")
    assert [(e.line, e.field) for e in got.value.report.errors] == [(601, "error"), (602, "rotation")]
    assert got.value.report.errors[0].message.startswith("expected a string or a number")
    assert fast.counts() == before and fast.runs() == []
    fast.close()
    ref.close()


def test_a_synthetic_config_marks_the_run(tmp_path):
    from db.importers import import_predictions

    fast, ref = make_stores(tmp_path, stembind_lines(2), "sb")
    ids = [x["item_id"] for x in stembind_lines(2)]
    import_predictions(fast, _write(tmp_path / "s.jsonl", [{"item_id": ids[0], "response": "A"}]), "s",
                       config={"synthetic": True})
    import_predictions(fast, _write(tmp_path / "t.jsonl", [{"item_id": ids[0], "response": "A"}]), "t")
    assert [fast.run(r)["synthetic"] for r in ("s", "t")] == [1, 0]
    fast.close()
    ref.close()
