"""The Run tab's job history (issue 14.8, db/jobs.py) on a real store: each job its own row, kinds and held
counts from the store, a row cut off by a server stop reads interrupted."""

from __future__ import annotations

import json

from conftest import fe_lines, write_benchmark


def test_each_job_its_own_row_and_interrupted(tmp_path, store):
    from db import jobs as dbjobs
    from db.importers import import_items, import_predictions
    from ui.run import job_rows

    import_items(store, write_benchmark(tmp_path / "fe", fe_lines()), name="fe")
    a, held_a = dbjobs.open_job(store, "r", "fe", "baseline", "random", "alice")
    assert held_a == 0
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps({"item_id": x["item_id"], "response": "A"}) + "\n" for x in fe_lines()[:5]))
    import_predictions(store, path, "r")  # stands for what the first job committed
    dbjobs.close_job(store, a, "cancelled", 12, 5, {"ok": 5}, "stopped")
    b, held_b = dbjobs.open_job(store, "r", "fe", "baseline", "random", "bob")
    assert held_b == 5
    rows = job_rows(store)
    assert [(r["id"], r["kind"], r["started_by"], r["status"]) for r in rows] == [
        (b, "resume", "bob", "interrupted"),  # unfinished and not running in this process
        (a, "new", "alice", "cancelled")]
    assert (rows[1]["held_before"], rows[1]["sent"], rows[1]["total"], rows[1]["ok"]) == (0, 5, 12, 5)
    dbjobs.close_job(store, b, "done", 7, 7, {"ok": 6, "invalid": 1}, "")
    rows = job_rows(store)
    assert rows[0]["status"] == "done" and rows[0]["held_before"] + rows[0]["sent"] == 12
    assert rows[1]["status"] == "cancelled" and rows[1]["sent"] == 5  # the earlier job keeps its numbers
