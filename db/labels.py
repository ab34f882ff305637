"""The one labels repository (SPEC §7, §11): every write of the `labels` table with its `label_audit` row,
and every read of labels and their history. The Judge tab's saves and `import-labels` both write here.

Write rules (SPEC §11, "concurrent annotators never overwrite each other"):

- every label save is one `BEGIN IMMEDIATE` transaction through `Store.write()`: read the current row, write
  the new values, append one `label_audit` row (who, when, old, new) — or nothing at all when unchanged;
- an annotator can only write labels under their own name (`changed_by` must equal `labeler`), and never
  over a judge's labels; the UPDATE itself is keyed by (id, labeler) so a row of another labeler is never
  touched whatever the caller passes.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import pandas as pd

from core import families
from core.errors import CrosscheckError, NotFound
from core.families.stage_judging import StageJudging
from core.schema import STAGES
from db import predictions
from db.store import Store, now

MAX_LABELER = 64
MAX_NOTE = 4000


class LabelForbidden(CrosscheckError, PermissionError):
    """A label write that would change another labeler's labels."""


class InvalidLabelValue(CrosscheckError, ValueError):
    """A label value from the UI is out of range (stage flag, category, note, labeler name)."""


class NotJudged(CrosscheckError, ValueError):
    """A run or benchmark whose family has no stage judging (no judged traces to label or judge)."""


def stage_judging(store: Store, run: str) -> StageJudging:
    """The stage judging of `run`'s family (core.families.judging_of); NotJudged when it has none."""
    r = store.run(run)
    judging = families.judging_of(str(r["family"]))
    if judging is None:
        raise NotJudged(f"run {run!r} is of family {r['family']!r}, which has no stage-judged traces")
    return judging


LABEL_FIELDS = (*STAGES, "first_failure", "category", "note", "kind")


def _clean_labeler(name: str | None) -> str:
    name = (name or "").strip()
    if not name:
        raise InvalidLabelValue("an annotator name is needed to save a label")
    if len(name) > MAX_LABELER or any(ord(c) < 32 for c in name):
        raise InvalidLabelValue(f"annotator names are at most {MAX_LABELER} printable characters")
    return name


def _flag(v: Any) -> int | None:
    if v is None:
        return None
    if isinstance(v, bool) or v in (0, 1):
        return int(bool(v))
    raise InvalidLabelValue(f"a stage flag is 0, 1 or empty, got {v!r:.20}")


def save_label(store: Store, run: str, key: tuple[str, int, int], labeler: str, flags: dict[str, Any],
               category: str | None = None, note: str | None = None, changed_by: str | None = None
               ) -> dict[str, Any]:
    """Write one human label at once, with one audit row when it changes anything.

    Returns {"status": "saved" | "unchanged", "label_id", "first_failure"}. Raises LabelForbidden when
    `changed_by` is not `labeler` or the row belongs to a judge; NotFound for a trace the run does not have.
    All flags None clears the label (it then counts as unlabeled everywhere); the audit keeps it all. The
    stages, the first-failure rule and the error-audit categories are those of the run's family
    (`stage_judging`).
    """
    judging = stage_judging(store, run)
    labeler = _clean_labeler(labeler)
    changed_by = _clean_labeler(changed_by if changed_by is not None else labeler)
    if changed_by != labeler:
        raise LabelForbidden(f"{changed_by!r} cannot change the labels of {labeler!r}")
    vals = [_flag(flags.get(s)) for s in judging.stages]
    category = (category or "").strip() or None
    cats = judging.audit_categories
    if category is not None and category not in cats:
        raise InvalidLabelValue(f"unknown error-audit category {category!r:.40} (one of {', '.join(cats)})")
    note = (note or "").strip() or None
    if note is not None and len(note) > MAX_NOTE:
        raise InvalidLabelValue(f"a note is at most {MAX_NOTE} characters")
    ff = None if all(v is None for v in vals) else judging.first_failure(None if v is None else bool(v) for v in vals)
    new = {**dict.fromkeys(STAGES), **dict(zip(judging.stages, vals, strict=True)), "first_failure": ff, "category": category, "note": note,
           "kind": "human"}
    item_id, rotation, repeat = str(key[0]), int(key[1]), int(key[2])
    r = store.run(run)
    with store.write() as conn:
        item_pk = predictions.trace_item_pk(store, r["id"], (item_id, rotation, repeat))
        if item_pk is None:
            raise NotFound(f"run {run!r} has no trace for {item_id!r} rotation {rotation} repeat {repeat}")
        status, label_id = upsert(conn, LabelKey(r["id"], item_pk, rotation, repeat, labeler), new, changed_by,
                                  annotator=True)
    return {"status": status, "label_id": label_id, "first_failure": ff}


@dataclass(frozen=True)
class LabelKey:
    """One label row's key: a trace of a run (run id, item pk, rotation, repeat) and its labeler."""

    run_id: int
    item_pk: int
    rotation: int
    repeat: int
    labeler: str


def upsert(conn: sqlite3.Connection, key: LabelKey, new: dict[str, Any], changed_by: str,
           annotator: bool = False) -> tuple[str, int]:
    """Write one label row inside the caller's write transaction, with one `label_audit` row (who, when, old,
    new) when anything changes; returns ("saved" | "unchanged", label id). `new` holds every field of
    `LABEL_FIELDS`. With `annotator` (a save from the Judge tab) a judge's row is refused (LabelForbidden) and
    the UPDATE is keyed by (id, labeler, kind 'human'); an import (`annotator` False) may replace any kind."""
    vals = [new[f] for f in LABEL_FIELDS]
    cur = conn.execute(
        "SELECT id, S1, S2, S3, S4, first_failure, category, note, kind, labeler FROM labels WHERE run_id = ?"
        " AND item_pk = ? AND rotation = ? AND repeat = ? AND labeler = ?",
        (key.run_id, key.item_pk, key.rotation, key.repeat, key.labeler)).fetchone()
    if cur is not None:
        if cur[9] != key.labeler:  # pragma: no cover - the WHERE clause already guarantees it
            raise LabelForbidden("label row of another labeler")
        old = dict(zip(LABEL_FIELDS, cur[1:9], strict=True))
        if annotator and old["kind"] != "human":
            raise LabelForbidden(f"{key.labeler!r} names a judge's labels here; annotators cannot change them")
        if old == new:
            return "unchanged", int(cur[0])
        n = conn.execute(
            "UPDATE labels SET S1=?, S2=?, S3=?, S4=?, first_failure=?, category=?, note=?, kind=?, updated=?"
            " WHERE id = ? AND labeler = ?" + (" AND kind = 'human'" if annotator else ""),
            (*vals, now(), cur[0], key.labeler)).rowcount
        if n != 1:  # pragma: no cover - guarded above
            raise LabelForbidden("the label row changed owner")
        label_id = int(cur[0])
    else:
        old = None
        label_id = int(conn.execute(
            "INSERT INTO labels (run_id, item_pk, rotation, repeat, labeler, S1, S2, S3, S4, first_failure,"
            " category, note, kind, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (key.run_id, key.item_pk, key.rotation, key.repeat, key.labeler, *vals, now())).lastrowid or 0)
    conn.execute("INSERT INTO label_audit (label_id, labeler, changed_by, at, old, new) VALUES (?, ?, ?, ?, ?, ?)",
                 (label_id, key.labeler, changed_by, now(), None if old is None else json.dumps(old, sort_keys=True),
                  json.dumps(new, sort_keys=True)))
    return "saved", label_id


def labels_frame(store: Store, run: str, kind: str | None = None, labelers: Iterable[str] | None = None,
                 include_cleared: bool = False) -> pd.DataFrame:
    """Labels of `run`'s traces: labeler, kind, item_id, rotation, repeat, S1..S4, first_failure, category,
    note, updated. Cleared labels (all four flags empty) are left out unless asked for."""
    rid = store.run(run)["id"]
    sql = ("SELECT l.id AS label_id, l.labeler, l.kind, i.item_id, l.rotation, l.repeat, l.S1, l.S2, l.S3, l.S4,"
           " l.first_failure, l.category, l.note, l.updated FROM labels l JOIN items i ON i.id = l.item_pk"
           " WHERE l.run_id = ?")
    params: list[Any] = [rid]
    if kind is not None:
        sql += " AND l.kind = ?"
        params.append(kind)
    if labelers is not None:
        names = list(labelers)
        sql += f" AND l.labeler IN ({','.join('?' * len(names)) or 'NULL'})"
        params += names
    if not include_cleared:
        sql += " AND NOT (l.S1 IS NULL AND l.S2 IS NULL AND l.S3 IS NULL AND l.S4 IS NULL)"
    df = pd.read_sql_query(sql + " ORDER BY l.labeler, l.item_pk, l.rotation, l.repeat", store.conn, params=params)
    for s in STAGES:
        df[s] = pd.Series([None if v is None or v != v else int(v) for v in df[s]], index=df.index, dtype=object)
    for col in ("category", "note", "first_failure"):
        df[col] = pd.Series([v if isinstance(v, str) else None for v in df[col]], index=df.index, dtype=object)
    return df


def label_of(store: Store, run: str, key: tuple[str, int, int], labeler: str) -> dict[str, Any] | None:
    """`labeler`'s label of one trace (cleared labels included), or None."""
    rid = store.run(run)["id"]
    cur = store.conn.execute(
        "SELECT l.S1, l.S2, l.S3, l.S4, l.first_failure, l.category, l.note, l.kind, l.updated FROM labels l JOIN"
        " items i ON i.id = l.item_pk WHERE l.run_id = ? AND i.item_id = ? AND l.rotation = ? AND l.repeat = ?"
        " AND l.labeler = ?", (rid, key[0], int(key[1]), int(key[2]), labeler))
    row = cur.fetchone()
    return None if row is None else dict(zip((*LABEL_FIELDS, "updated"), row, strict=True))


def labeled_keys(store: Store, run: str, labeler: str) -> set[tuple[str, int, int]]:
    """Traces `labeler` has a (not cleared) label on."""
    df = labels_frame(store, run, labelers=[labeler])
    return {(i, int(ro), int(re)) for i, ro, re in zip(df["item_id"], df["rotation"], df["repeat"], strict=True)}


def labelers(store: Store, run: str) -> list[dict[str, Any]]:
    """Every labeler of `run` with kind and count of (not cleared) labels."""
    df = labels_frame(store, run)
    if len(df) == 0:
        return []
    g = df.groupby(["labeler", "kind"]).size().reset_index(name="n")
    return [{"labeler": r.labeler, "kind": r.kind, "n": int(r.n)} for r in g.itertuples(index=False)]


def audit_frame(store: Store, run: str | None = None, labeler: str | None = None) -> pd.DataFrame:
    """The label audit trail (oldest first): id, label_id, labeler, changed_by, at, old, new (parsed JSON),
    run, item_id, rotation, repeat."""
    sql = ("SELECT a.id, a.label_id, a.labeler, a.changed_by, a.at, a.old, a.new, r.name AS run, i.item_id,"
           " l.rotation, l.repeat, l.labeler AS row_labeler FROM label_audit a JOIN labels l ON l.id = a.label_id"
           " JOIN runs r ON r.id = l.run_id JOIN items i ON i.id = l.item_pk WHERE 1=1")
    params: list[Any] = []
    if run is not None:
        sql += " AND r.name = ?"
        params.append(run)
    if labeler is not None:
        sql += " AND a.labeler = ?"
        params.append(labeler)
    df = pd.read_sql_query(sql + " ORDER BY a.id", store.conn, params=params)
    df["old"] = [json.loads(v) if isinstance(v, str) else None for v in df["old"]]
    df["new"] = [json.loads(v) for v in df["new"]]
    return df


def last_audit_entry(store: Store, run: str, labeler: str) -> dict[str, Any] | None:
    """`labeler`'s most recent own change on `run` (for undo): item_id, rotation, repeat, old, new."""
    df = audit_frame(store, run, labeler)
    df = df[df["changed_by"] == labeler]
    return None if len(df) == 0 else df.iloc[-1].to_dict()


def records(store: Store, run: str) -> Iterator[dict[str, Any]]:
    """Every stage label of a run's traces in the labels-JSONL format of SPEC §3 (re-imports unchanged)."""
    r = store.run(run)
    cur = store.conn.execute(
        "SELECT i.item_id, l.rotation, l.repeat, l.labeler, l.kind, l.S1, l.S2, l.S3, l.S4, l.first_failure,"
        " l.category, l.note FROM labels l JOIN items i ON i.id = l.item_pk WHERE l.run_id = ?"
        " ORDER BY l.item_pk, l.rotation, l.repeat, l.labeler", (r["id"],))
    for row in cur:
        rec: dict[str, Any] = {"item_id": row[0], "rotation": row[1], "repeat": row[2], "annotator": row[3],
                               "kind": row[4]}
        for s, v in zip(STAGES, row[5:9], strict=True):
            if v is not None:
                rec[s] = int(v)
        for k, v in zip(("first_failure", "category", "note"), row[9:12], strict=True):
            if v is not None:
                rec[k] = v
        yield rec
