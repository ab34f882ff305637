"""The job history (issue 14.8): one row per job started from the GUI, never overwritten: a model run (the Run
tab) or a trace judge (the Calibration tab; its runner reads `judge:lexical` / `judge:openai`).

A job is one execution of a run: the first start, each resume, each restart after a cancel or a failure. Its
row records who started it, when, what kind it was ("new": the run held no result yet; "resume": it held
some), how many results (predictions; for a judge, judged traces of its scope) the run held when it began,
and, when it ends, its status and what it sent. The history outlives the server process; a row left
unfinished by a server that stopped reads "interrupted".
"""

from __future__ import annotations

from typing import Any

from db import predictions
from db.store import Store, now

COLUMNS = ("id", "run", "benchmark", "runner", "model", "kind", "started_by", "started", "held_before", "finished",
           "status", "total", "sent", "ok", "invalid", "api_error", "message")


def open_job(store: Store, run: str, benchmark: str, runner: str, model: str | None, started_by: str | None,
             held: int | None = None) -> tuple[int, int]:
    """Record a job starting; returns (job id, results the run held before it): `held` when given (a judge
    job: the traces of its scope already judged), else the run's predictions."""
    before = predictions.count(store, run) if held is None else int(held)
    with store.write() as conn:
        cur = conn.execute(
            "INSERT INTO run_jobs (run, benchmark, runner, model, kind, started_by, started, held_before)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (run, benchmark, runner, model, "resume" if before else "new", started_by, now(), before))
    return int(cur.lastrowid or 0), before


def close_job(store: Store, job_id: int, status: str, total: int | None, sent: int, counts: dict[str, int],
              message: str) -> None:
    """Record how a job ended (done / cancelled / failed) and what it sent."""
    with store.write() as conn:
        conn.execute("UPDATE run_jobs SET finished = ?, status = ?, total = ?, sent = ?, ok = ?, invalid = ?,"
                     " api_error = ?, message = ? WHERE id = ?",
                     (now(), status, total, sent, counts.get("ok", 0), counts.get("invalid", 0),
                      counts.get("api_error", 0), message, job_id))


def recent_jobs(store: Store, limit: int = 50) -> list[dict[str, Any]]:
    """The newest `limit` jobs, newest first, as dicts of COLUMNS."""
    cur = store.conn.execute(f"SELECT {', '.join(COLUMNS)} FROM run_jobs ORDER BY id DESC LIMIT ?", (limit,))
    return [dict(zip(COLUMNS, r, strict=True)) for r in cur]
