"""Extraction-audit overrides: re-parse a stored response with another parser, or set a letter by hand.

An override is a layer over the predictions as imported (issue 14.3): the `predictions` row is never written
here. Every read of a prediction's status / answer / shown goes through one SQL view, `predictions_effective`
(db/schema.py), which applies the newest *active* override of each prediction key; every reader of predictions
(db/predictions.py: scoring, Browse and the audit, the trace judge, export, and this module's own preview) reads
that view, so they agree by construction. The raw response is never touched.

An override is active when it is not reverted, not marked stale, and the prediction it was made on still has
the raw response it was made against (`response`, recorded at apply time). An import with `--replace` that
changes a row calls `settle_replaced` in its write transaction: an override on a row whose raw response is
unchanged stays active; one whose row got another raw response is marked stale (with the reason) and reported,
never silently dropped. Imports compare their rows with the imported rows, so re-importing the identical file
after an override changes nothing.
"""

from __future__ import annotations

import json
from typing import Any

from core.errors import CrosscheckError, NotFound
from core.parsing import parse_answer, rotate_options, unrotate
from db import predictions
from db.store import Store, now, touch_run

METHODS = ("parser:letter", "parser:tag", "manual")


class OverrideRefused(CrosscheckError, ValueError):
    """A re-parse or manual answer that cannot be applied (unknown method, letter not an option)."""


def _key(store: Store, run: str, item_id: str) -> tuple[int, int, str, dict[str, str]]:
    row = store.conn.execute(
        "SELECT r.id, i.id, i.letters, i.options FROM runs r JOIN items i ON i.benchmark_id = r.benchmark_id"
        " WHERE r.name = ? AND i.item_id = ?", (run, item_id)).fetchone()
    if row is None:
        raise NotFound(f"no item {item_id!r} in the benchmark of run {run!r}")
    return int(row[0]), int(row[1]), str(row[2]), json.loads(row[3])


def preview(store: Store, run: str, item_id: str, rotation: int = 0, repeat: int = 0, method: str = "parser:letter",
            letter: str | None = None) -> dict[str, Any]:
    """What `method` would make this prediction read, without writing: {status, answer, shown, old_*} (old_*: what
    it reads now, the imported values or an earlier active override's)."""
    if method not in METHODS:
        raise OverrideRefused(f"unknown method {method!r}; expected one of {', '.join(METHODS)}")
    run_id, pk, letters, options = _key(store, run, item_id)
    row = predictions.effective_row(store, run_id, pk, rotation, repeat)
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
            "run_id": run_id, "item_pk": pk, "response": response}


def apply(store: Store, run: str, item_id: str, rotation: int = 0, repeat: int = 0, method: str = "parser:letter",
          letter: str | None = None, by: str = "", note: str | None = None) -> dict[str, Any]:
    """Re-parse (method parser:letter / parser:tag) or set a manual letter: record it as the prediction's active
    override (the imported row is not written). Returns the preview dict plus the override id."""
    p = preview(store, run, item_id, rotation, repeat, method, letter)
    with store.write() as conn:
        cur = conn.execute(
            "INSERT INTO prediction_overrides (run_id, item_pk, rotation, repeat, method, old_status, old_answer,"
            " old_shown, new_status, new_answer, new_shown, by, note, created, response) VALUES"
            " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (p["run_id"], p["item_pk"], rotation, repeat, method, p["old_status"], p["old_answer"], p["old_shown"],
             p["status"], p["answer"], p["shown"], by or "", note, now(), p["response"]))
        touch_run(conn, p["run_id"])
    return {**p, "id": int(cur.lastrowid or 0)}


def revert(store: Store, override_id: int, by: str = "") -> None:
    """Deactivate an override: the prediction reads what it read before it (an earlier active override, else the
    imported row). The override stays recorded, marked reverted."""
    with store.write() as conn:
        row = conn.execute("SELECT run_id, reverted FROM prediction_overrides WHERE id = ?", (override_id,)).fetchone()
        if row is None:
            raise NotFound(f"no override {override_id}")
        if row[1] is not None:
            raise OverrideRefused(f"override {override_id} was already reverted")
        conn.execute("UPDATE prediction_overrides SET reverted = ?, note = COALESCE(note, '') || ? WHERE id = ?",
                     (now(), f" [reverted by {by}]" if by else "", override_id))
        touch_run(conn, row[0])


def settle_replaced(conn: Any, run_id: int, responses: dict[tuple[int, int, int], str | None], source: str
                    ) -> list[dict[str, Any]]:
    """Inside an import's write transaction, before rows of `run_id` are replaced: for each key (item_pk,
    rotation, repeat) -> its new raw response, what happens to the key's live overrides (not reverted, not
    stale). Kept when the new row has the raw response the override was made against, else marked stale with
    `source` as the reason. Returns one record per override: id, item_pk, rotation, repeat, method, new_status,
    new_answer, outcome ("kept" / "stale")."""
    if not responses:
        return []
    live = conn.execute(
        "SELECT id, item_pk, rotation, repeat, method, new_status, new_answer, response FROM prediction_overrides"
        " WHERE run_id = ? AND reverted IS NULL AND stale IS NULL ORDER BY id", (run_id,)).fetchall()
    out: list[dict[str, Any]] = []
    at = now()
    for oid, pk, rot, rep, method, status, answer, made_on in live:
        key = (pk, rot, rep)
        if key not in responses:
            continue
        kept = responses[key] == made_on
        if not kept:
            conn.execute("UPDATE prediction_overrides SET stale = ?, stale_reason = ? WHERE id = ?",
                         (at, f"replaced by {source} with another raw response", oid))
        out.append({"id": oid, "item_pk": pk, "rotation": rot, "repeat": rep, "method": method,
                    "new_status": status, "new_answer": answer, "outcome": "kept" if kept else "stale"})
    return out


def live_keys(store: Store, run_id: int) -> set[tuple[int, int, int]]:
    """(item_pk, rotation, repeat) of `run_id`'s predictions with an override that is neither reverted nor stale."""
    return {(int(a), int(b), int(c)) for a, b, c in store.conn.execute(
        "SELECT item_pk, rotation, repeat FROM prediction_overrides WHERE run_id = ? AND reverted IS NULL"
        " AND stale IS NULL", (run_id,))}


def overrides(store: Store, run: str, item_ids: list[str] | None = None) -> list[dict[str, Any]]:
    """Recorded overrides of `run` (newest first), optionally for some items only, each with `state`: "active"
    (what the prediction reads), "reverted", "stale" (its row was replaced with another raw response) or
    "superseded" (a newer active override of the same prediction)."""
    sql = ("SELECT o.id, i.item_id, o.rotation, o.repeat, o.method, o.old_status, o.old_answer, o.new_status,"
           " o.new_answer, o.by, o.note, o.created, o.reverted, o.stale, o.stale_reason, o.run_id, o.item_pk"
           " FROM prediction_overrides o JOIN runs r ON r.id = o.run_id JOIN items i ON i.id = o.item_pk"
           " WHERE r.name = ?")
    params: list[Any] = [run]
    if item_ids is not None:
        if not item_ids:
            return []
        sql += f" AND i.item_id IN ({','.join('?' * len(item_ids))})"
        params += item_ids
    with store.snapshot():  # the overrides and which of them each prediction reads, in one state
        cur = store.conn.execute(sql + " ORDER BY o.id DESC", params)
        cols = [c[0] for c in cur.description]
        rows = [dict(zip(cols, r, strict=True)) for r in cur]
        keys = [(d["item_pk"], d["rotation"], d["repeat"]) for d in rows]  # of one run: run names are unique
        reads = predictions.override_in_effect(store, rows[0]["run_id"], keys) if rows else {}
    out = []
    for d in rows:
        del d["run_id"]
        live = reads[(d.pop("item_pk"), d["rotation"], d["repeat"])]
        d["state"] = ("reverted" if d["reverted"] else "stale" if d["stale"] else
                      "active" if live == d["id"] else "stale" if live is None else "superseded")
        out.append(d)
    return out
