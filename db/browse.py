"""Reads for the Browse / Compare tabs and the group views: one group's items, image sizes, trace judgements
and labels (SQL lives here, never in ui/; predictions are read by db/predictions.py).

Group reads go through the (benchmark_id, group_id) index (and db.predictions' through the predictions primary
key), so opening one group costs a few small queries whatever the size of the store.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from db.store import Store, decode_item_json

_ITEM_SQL = ("SELECT id, item_id, group_id, split, kind, variant, question, options, letters, answer, images, meta,"
             " stages FROM items WHERE benchmark_id = ? AND group_id = ? ORDER BY id")


def group_items(store: Store, benchmark: str, group_id: str) -> pd.DataFrame:
    """The items of one group as the items DataFrame of docs/ARCHITECTURE.md, plus `pk` (the row id); read
    straight from the cursor (a group is a few rows: pandas' SQL layer would cost more than the query)."""
    b = store.benchmark(benchmark)
    cur = store.conn.execute(_ITEM_SQL, (b["id"], group_id))
    names = ["pk", *(c[0] for c in cur.description[1:])]
    rows = cur.fetchall()
    cols = dict(zip(names, zip(*rows, strict=True) if rows else [()] * len(names), strict=True))
    data: dict[str, Any] = {}
    for name in names:
        if name == "pk":
            data[name] = pd.Series(cols[name], dtype="int64")
        elif name in ("options", "images", "meta", "stages"):
            data[name] = pd.Series(decode_item_json(name, cols[name]), dtype=object)
        else:
            data[name] = pd.Series(list(cols[name]), dtype=object)
    data["n_images"] = pd.Series([len(v) for v in data["images"]], dtype="int64")
    return pd.DataFrame(data)


def image_sizes(store: Store, hashes: list[str]) -> dict[str, tuple[int, int]]:
    """hash -> (width, height) of stored images."""
    if not hashes:
        return {}
    marks = ",".join("?" * len(hashes))
    cur = store.conn.execute(f"SELECT hash, width, height FROM images WHERE hash IN ({marks})", list(hashes))
    return {h: (int(w or 0), int(hh or 0)) for h, w, hh in cur}


def trace_flags(store: Store, run: str, item_pks: list[int]) -> list[dict[str, Any]]:
    """Stage flags on `run`'s traces of these items: judge judgements and labels (human or judge).

    Each record: item_id, rotation, repeat, source ("judge" / "human"), who, S1..S4 (1 / 0 / None),
    first_failure. Empty when the run has no judged or labelled trace.
    """
    if not item_pks:
        return []
    row = store.conn.execute("SELECT id FROM runs WHERE name = ?", (run,)).fetchone()
    if row is None:
        return []
    marks = ",".join("?" * len(item_pks))
    out = []
    cur = store.conn.execute(
        "SELECT i.item_id, j.rotation, j.repeat, r.name, j.S1, j.S2, j.S3, j.S4, j.first_failure FROM judgements j"
        " JOIN items i ON i.id = j.item_pk JOIN runs r ON r.id = j.judge_run_id"
        f" WHERE j.run_id = ? AND j.item_pk IN ({marks})", (row[0], *item_pks))
    for r in cur:
        out.append({"item_id": r[0], "rotation": r[1], "repeat": r[2], "source": "judge", "who": r[3],
                    "S1": r[4], "S2": r[5], "S3": r[6], "S4": r[7], "first_failure": r[8]})
    cur = store.conn.execute(
        "SELECT i.item_id, l.rotation, l.repeat, l.kind, l.labeler, l.S1, l.S2, l.S3, l.S4, l.first_failure"
        f" FROM labels l JOIN items i ON i.id = l.item_pk WHERE l.run_id = ? AND l.item_pk IN ({marks})",
        (row[0], *item_pks))
    for r in cur:
        out.append({"item_id": r[0], "rotation": r[1], "repeat": r[2], "source": r[3], "who": r[4],
                    "S1": r[5], "S2": r[6], "S3": r[7], "S4": r[8], "first_failure": r[9]})
    return out


def run_records(store: Store, benchmark: str, names: list[str] | None = None) -> list[dict[str, Any]]:
    """The runs of `benchmark` (only those named in `names` when given) like Store.runs() but without the
    prediction counts (cheap on large stores), oldest first. A view reads the runs it shows by name, so its work
    does not grow with the runs of the benchmark it does not show."""
    if names is not None:
        return store.runs(benchmark, names=list(dict.fromkeys(names)), with_counts=False) if names else []
    return store.runs(benchmark, with_counts=False)


def other_runs(store: Store, benchmark: str, shown: list[str], limit: int) -> tuple[list[dict[str, Any]], int]:
    """(records, left out): the runs of `benchmark` besides `shown`, all of them when there are at most `limit`
    (none left out), else none (and their number): a group view draws every run of a small benchmark, and on a large one only the
    runs picked, so what it reads is bounded by `limit` whatever the store holds."""
    b = store.benchmark(benchmark)
    shown = list(dict.fromkeys(shown))
    besides = f" AND name NOT IN ({','.join('?' * len(shown))})" if shown else ""
    names = [str(n) for (n,) in store.conn.execute(
        f"SELECT name FROM runs WHERE benchmark_id = ?{besides} ORDER BY id LIMIT ?", (b["id"], *shown, limit + 1))]
    if len(names) <= limit:
        return run_records(store, benchmark, names), 0
    n = store.conn.execute(f"SELECT COUNT(*) FROM runs WHERE benchmark_id = ?{besides}", (b["id"], *shown))
    return [], int(n.fetchone()[0])


def runs_of_runner(store: Store, benchmark: str, runner: str) -> list[str]:
    """The names of `benchmark`'s runs made by `runner` (config `runner`, e.g. the Metrics tab's control rows),
    oldest first: read by SQLite, not by listing every run."""
    b = store.benchmark(benchmark)
    cur = store.conn.execute("SELECT name FROM runs WHERE benchmark_id = ? AND runner = ? ORDER BY id",
                             (b["id"], runner))
    return [str(n) for (n,) in cur]


def run_versions(store: Store, runs: list[str]) -> dict[str, str]:
    """run name -> a version string that changes whenever its predictions, overrides or status change, and for a
    judge run whenever it writes a judgement (its revision and updated time, db.store.touch_run: every write path
    of a run moves them on).

    The answers are remembered beside this thread's connection (Store.connection_memo) until the store changes:
    SQLite's data_version (commits by other connections) and the connection's total_changes (its own)."""
    if not runs:
        return {}
    conn = store.conn
    state = (int(conn.execute("PRAGMA data_version").fetchone()[0]), conn.total_changes)
    memo = store.connection_memo("run_versions")
    if memo.get("state") != state:
        memo.clear()
        memo["state"] = state
        memo["known"] = {}
    known: dict[str, str] = memo["known"]
    missing = [r for r in dict.fromkeys(runs) if r not in known]
    if missing:
        marks = ",".join("?" * len(missing))
        cur = conn.execute(f"SELECT name, revision, updated FROM runs WHERE name IN ({marks})", missing)
        known.update({name: f"{rev}|{upd}" for name, rev, upd in cur})
    return {r: known[r] for r in runs if r in known}


