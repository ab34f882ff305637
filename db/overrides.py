"""Extraction audit writes: re-parse a stored response with another parser, or set a letter by hand.

The prediction row itself is updated (status, answer, shown), so every score computed from the store
(Metrics tab, `app.py score`) follows at once without rerunning the model; the change is recorded in
`prediction_overrides` with the method, the old and new values, who made it and when, and can be reverted.
The raw response is never touched. The table is created here with CREATE TABLE IF NOT EXISTS inside the
write transaction until db/schema.py carries it as a migration (same DDL).
"""

from __future__ import annotations

import json
from typing import Any

from core.errors import CrosscheckError, NotFound
from core.parsing import parse_answer, rotate_options, unrotate
from db.store import Store, now

METHODS = ("parser:letter", "parser:tag", "manual")

DDL = """CREATE TABLE IF NOT EXISTS prediction_overrides (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    item_pk INTEGER NOT NULL REFERENCES items(id),
    rotation INTEGER NOT NULL DEFAULT 0,
    repeat INTEGER NOT NULL DEFAULT 0,
    method TEXT NOT NULL,
    old_status TEXT NOT NULL,
    old_answer TEXT,
    old_shown TEXT,
    new_status TEXT NOT NULL,
    new_answer TEXT,
    new_shown TEXT,
    by TEXT NOT NULL DEFAULT '',
    note TEXT,
    created TEXT NOT NULL,
    reverted TEXT
)"""
INDEX = ("CREATE INDEX IF NOT EXISTS prediction_overrides_key ON prediction_overrides "
         "(run_id, item_pk, rotation, repeat)")


class OverrideRefused(CrosscheckError, ValueError):
    """A re-parse or manual answer that cannot be applied (unknown method, letter not an option)."""


def _ensure(conn: Any) -> None:
    conn.execute(DDL)
    conn.execute(INDEX)


def _key(store: Store, run: str, item_id: str) -> tuple[int, int, str, dict[str, str]]:
    row = store.conn.execute(
        "SELECT r.id, i.id, i.letters, i.options FROM runs r JOIN items i ON i.benchmark_id = r.benchmark_id"
        " WHERE r.name = ? AND i.item_id = ?", (run, item_id)).fetchone()
    if row is None:
        raise NotFound(f"no item {item_id!r} in the benchmark of run {run!r}")
    return int(row[0]), int(row[1]), str(row[2]), json.loads(row[3])


def preview(store: Store, run: str, item_id: str, rotation: int = 0, repeat: int = 0, method: str = "parser:letter",
            letter: str | None = None) -> dict[str, Any]:
    """What `method` would store for this prediction, without writing: {status, answer, shown, old_*}."""
    if method not in METHODS:
        raise OverrideRefused(f"unknown method {method!r}; expected one of {', '.join(METHODS)}")
    run_id, pk, letters, options = _key(store, run, item_id)
    row = store.conn.execute("SELECT response, status, answer, shown FROM predictions WHERE run_id = ? AND item_pk = ?"
                             " AND rotation = ? AND repeat = ?", (run_id, pk, rotation, repeat)).fetchone()
    if row is None:
        raise NotFound(f"run {run!r} has no prediction for {item_id!r} (rotation {rotation}, repeat {repeat})")
    response, old_status, old_answer, old_shown = row
    shown: str | None
    if method == "manual":
        shown = (letter or "").strip().upper()
        if len(shown) != 1 or shown not in letters:
            raise OverrideRefused(f"manual answer must be one of the option letters {letters}, got {letter!r}")
        status = "ok"
    else:
        style = method.split(":", 1)[1]
        shown_opts = rotate_options(options, rotation) if rotation else options
        status, shown = parse_answer(response, letters, style, shown_opts)
    answer = unrotate(shown, letters, rotation) if status == "ok" and shown else None
    return {"status": status, "answer": answer, "shown": shown if status == "ok" else None,
            "old_status": old_status, "old_answer": old_answer, "old_shown": old_shown,
            "run_id": run_id, "item_pk": pk}


def apply(store: Store, run: str, item_id: str, rotation: int = 0, repeat: int = 0, method: str = "parser:letter",
          letter: str | None = None, by: str = "", note: str | None = None) -> dict[str, Any]:
    """Re-parse (method parser:letter / parser:tag) or set a manual letter, record it, and update the
    prediction in one transaction. Returns the preview dict plus the override id."""
    p = preview(store, run, item_id, rotation, repeat, method, letter)
    with store.write() as conn:
        _ensure(conn)
        cur = conn.execute(
            "INSERT INTO prediction_overrides (run_id, item_pk, rotation, repeat, method, old_status, old_answer,"
            " old_shown, new_status, new_answer, new_shown, by, note, created) VALUES"
            " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (p["run_id"], p["item_pk"], rotation, repeat, method, p["old_status"], p["old_answer"], p["old_shown"],
             p["status"], p["answer"], p["shown"], by or "", note, now()))
        conn.execute("UPDATE predictions SET status = ?, answer = ?, shown = ? WHERE run_id = ? AND item_pk = ?"
                     " AND rotation = ? AND repeat = ?",
                     (p["status"], p["answer"], p["shown"], p["run_id"], p["item_pk"], rotation, repeat))
        conn.execute("UPDATE runs SET updated = ? WHERE id = ?", (now(), p["run_id"]))
    return {**p, "id": int(cur.lastrowid or 0)}


def revert(store: Store, override_id: int, by: str = "") -> None:
    """Put back the values an override replaced (the override stays recorded, marked reverted)."""
    with store.write() as conn:
        _ensure(conn)
        row = conn.execute("SELECT run_id, item_pk, rotation, repeat, old_status, old_answer, old_shown, reverted"
                           " FROM prediction_overrides WHERE id = ?", (override_id,)).fetchone()
        if row is None:
            raise NotFound(f"no override {override_id}")
        if row[7] is not None:
            raise OverrideRefused(f"override {override_id} was already reverted")
        conn.execute("UPDATE predictions SET status = ?, answer = ?, shown = ? WHERE run_id = ? AND item_pk = ?"
                     " AND rotation = ? AND repeat = ?", (row[4], row[5], row[6], row[0], row[1], row[2], row[3]))
        conn.execute("UPDATE prediction_overrides SET reverted = ?, note = COALESCE(note, '') || ? WHERE id = ?",
                     (now(), f" [reverted by {by}]" if by else "", override_id))
        conn.execute("UPDATE runs SET updated = ? WHERE id = ?", (now(), row[0]))


def _has_table(store: Store) -> bool:
    return store.conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'prediction_overrides'"
                              ).fetchone() is not None


def overrides(store: Store, run: str, item_ids: list[str] | None = None) -> list[dict[str, Any]]:
    """Recorded overrides of `run` (newest first), optionally for some items only."""
    if not _has_table(store):
        return []
    sql = ("SELECT o.id, i.item_id, o.rotation, o.repeat, o.method, o.old_status, o.old_answer, o.new_status,"
           " o.new_answer, o.by, o.note, o.created, o.reverted FROM prediction_overrides o"
           " JOIN runs r ON r.id = o.run_id JOIN items i ON i.id = o.item_pk WHERE r.name = ?")
    params: list[Any] = [run]
    if item_ids is not None:
        if not item_ids:
            return []
        sql += f" AND i.item_id IN ({','.join('?' * len(item_ids))})"
        params += item_ids
    cur = store.conn.execute(sql + " ORDER BY o.id DESC", params)
    cols = [c[0] for c in cur.description]
    return [dict(zip(cols, r, strict=True)) for r in cur]
