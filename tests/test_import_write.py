"""A predictions file is written in one transaction once every line is checked, ROWS_PER_INSERT rows a
statement: the rows equal the reference path's, a bad line late in the file refuses it with nothing written, a
row SQLite refuses surfaces with its file line, a killed import leaves no half run."""

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
N_STEMS = 320  # 2,880 items: more lines than a statement's rows


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
def test_rows_written_equal_the_reference(tmp_path, traced):
    from db.importers import import_predictions
    from db.store import ROWS_PER_INSERT

    ids = _ids()
    assert len(ids) > 4 * ROWS_PER_INSERT and len(ids) % ROWS_PER_INSERT  # whole statements, and a shorter one
    fast, ref = make_stores(tmp_path, stembind_lines(N_STEMS), "sb")
    path = _write(tmp_path / "p.jsonl", _answers(ids, traced))
    got = outcome(fast, lambda: import_predictions(fast, path, "r"))
    assert got == outcome(ref, lambda: reference_import(ref, path, "r"))
    assert got[1] == len(ids) and fast.counts()["predictions"] == len(ids)
    fast.close()
    ref.close()


def test_bad_line_late_in_the_file_refuses_it(tmp_path):
    from core.errors import ImportRefused
    from db.importers import import_predictions
    from db.store import ROWS_PER_INSERT

    ids = _ids()
    fast, ref = make_stores(tmp_path, stembind_lines(N_STEMS), "sb")
    lines = _answers(ids)
    bad = 3 * ROWS_PER_INSERT + 100  # more good lines before it than a statement's rows
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


@pytest.mark.parametrize("extra", [{}, {"trace": "t"}])  # plain rows; whole rows (the other VALUES form)
@pytest.mark.parametrize("at", [10, -1])  # in a whole statement; among the last rows (a shorter statement)
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


KILLED = """
import os, signal, sys
sys.path.insert(0, {root!r})
from db import import_predictions
from db.store import Store

insert = import_predictions._insert

def insert_then_die(*args):
    insert(*args)  # rows are in the transaction, not committed
    os.kill(os.getpid(), signal.SIGKILL)

import_predictions._insert = insert_then_die
import_predictions.import_predictions(Store({db!r}), {path!r}, "killed")
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


def test_imports_log_holds_each_file_sha256(tmp_path):
    """The imports log's sha256 of a predictions file is the file's, for a new run and for rows added to an
    existing one."""
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


def test_lines_without_a_readable_item_id_are_each_listed(tmp_path):
    """No line names an item (nothing tells the benchmark): every line's field problems are listed, a malformed
    line (named when the file is read, so first) among them."""
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
    """A file with problems of its own is refused with them, never by the store: a row the store would refuse
    earlier in the file, or an error object (a value no column holds), gives way to the file's own problems,
    every one listed by line and field."""
    from core.errors import ImportRefused
    from db.importers import import_predictions

    ids = _ids()
    fast, ref = make_stores(tmp_path, stembind_lines(N_STEMS), "sb")
    fast.conn.execute("CREATE TRIGGER refuse_boom BEFORE INSERT ON predictions WHEN NEW.response = 'boom' "
                      "BEGIN SELECT RAISE(ABORT, 'boom is refused'); END")
    lines = [{"item_id": i, "response": "A", "trace": "t"} for i in ids[:620]]
    lines[9] = {"item_id": ids[9], "response": "boom", "trace": "t"}  # in the first statement's rows
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
