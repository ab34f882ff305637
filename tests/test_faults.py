"""Faults a lab's server meets (issue 26 point 2), each on a real store and a real `app.py serve`:

- kill -9 of the server while a live run writes predictions and an annotator writes labels, then a restart:
  PRAGMA integrity_check is ok, every acknowledged label and every prediction committed before the kill is
  there, and the run resumes to completion without asking the endpoint for a stored key again;
- the disk filling during an import (SQLite's max_page_count on the importing connection: the same SQLITE_FULL a
  full disk gives, portable to any CI): one clear error, nothing of the import kept, the store intact and usable;
- a read-only store: `serve` stops at start with one line naming it (as root, the server runs without the
  capabilities that let root write anything: CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER);
- two servers on one store: both serve and write at once (WAL, busy timeout), nothing lost.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from chat_server import ChatServer
from conftest import fe_lines, write_benchmark
from serverharness import ROOT, Server
from serverstores import add_traced_run, prediction_lines, two_benchmarks, write_jsonl

pytestmark = [pytest.mark.slow]

ROTATIONS = 4
TASKS = len(fe_lines(n_fq1=3, n_fq2=3)) * ROTATIONS  # the live run: every item of `fe` under 4 rotations


def start_run(client: Any, run: str, base_url: str, concurrency: int = 2) -> None:
    """The Run tab's Start (its own endpoint): a keyless OpenAI-compatible run of benchmark fe."""
    client.predict("fe", run, "openai", "random", "", base_url, "tiny-test-model", "", "direct", None, 0, "all",
                   ROTATIONS, 1, "test", None, 0.0, 0, concurrency, 0, api_name="/on_start")


def read(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """A query on a connection of this test process (what another reader of the store sees committed)."""
    conn = sqlite3.connect(db, timeout=30)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def prediction_keys(db: Path, run: str) -> set[tuple[str, int, int]]:
    return {(i, r, p) for i, r, p in read(db, "SELECT i.item_id, p.rotation, p.repeat FROM predictions p JOIN items i"
                                              " ON i.id = p.item_pk JOIN runs r2 ON r2.id = p.run_id WHERE r2.name = ?",
                                          (run,))}


def labels(db: Path, run: str) -> dict[tuple[str, str], tuple[Any, ...]]:
    rows = read(db, "SELECT l.labeler, i.item_id, l.S1, l.S2, l.S3, l.S4 FROM labels l JOIN items i ON i.id = l.item_pk"
                    " JOIN runs r ON r.id = l.run_id WHERE r.name = ?", (run,))
    return {(r[0], r[1]): tuple(r[2:]) for r in rows}


def wait_for(check: Any, timeout: float, what: str) -> None:
    deadline = time.time() + timeout
    while not check():
        if time.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


class Annotator(threading.Thread):
    """Labels each item of `run` once through the Judge tab's /save_label; `acked` holds every save the server
    answered, with its flags."""

    def __init__(self, url: str, name: str, run: str, items: list[str]) -> None:
        super().__init__(daemon=True)
        self.url, self.name, self.run_name, self.items = url, name, run, items
        self.acked: dict[tuple[str, str], tuple[int, int, int, int]] = {}
        self.failed: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        from gradio_client import Client

        client = Client(self.url, verbose=False)
        for n, item in enumerate(self.items):
            if self.stop.is_set():
                return
            flags = (1, n % 2, 1 - n % 2, 0)
            try:
                out = client.predict(self.name, self.run_name, item, 0, 0, *map(bool, flags), "", "",
                                     api_name="/save_label")
            except Exception as exc:  # noqa: BLE001 - after a kill every call fails: nothing more is acknowledged
                self.failed.append(f"{type(exc).__name__}: {exc}")
                return
            assert out.startswith("Saved"), out
            self.acked[(self.name, item)] = flags


def test_kill9_during_writes_then_restart_resumes(tmp_path):
    from gradio_client import Client

    db = two_benchmarks(tmp_path)
    traced, items = add_traced_run(db, tmp_path)  # labels are of stage-judged traces (StemBind's F items)
    with ChatServer(latency=0.15) as chat:
        chat.hold_from = TASKS // 3  # the first server's run is held there: the kill always comes mid-run
        first = Server(db).start()
        try:
            first.wait_ready()
            start_run(Client(first.url, verbose=False), "live", chat.base_url)
            annotator = Annotator(first.url, "ann", traced, items)
            annotator.start()
            wait_for(lambda: len(prediction_keys(db, "live")) >= 12 and len(annotator.acked) >= 4, 120,
                     "predictions and labels before the kill")
            committed = prediction_keys(db, "live")
            acked = dict(annotator.acked)
            first.kill9()
            annotator.stop.set()
            annotator.join(30)
        finally:
            first.stop()
        assert read(db, "PRAGMA integrity_check") == [("ok",)]
        stored = prediction_keys(db, "live")
        assert committed <= stored and len(stored) < TASKS  # the kill came mid-run
        got = labels(db, traced)
        assert all(got.get(key) == flags for key, flags in annotator.acked.items()), (annotator.acked, got)
        assert set(acked) <= set(got)
        assert read(db, "SELECT status FROM runs WHERE name = 'live'") == [("running",)]
        sent_before = len(chat.bodies)
        chat.latency, chat.hold_from = 0.01, None  # the resume answers fast, held nowhere (the kill may have
        chat.gate.set()  # come before the hold); requests held before were the killed server's
        with Server(db) as second:
            out = Client(second.url, verbose=False).predict("live", "", chat.base_url, 2, 0, api_name="/on_resume")
            assert out[0]["value"] == "live"
            wait_for(lambda: read(db, "SELECT status FROM runs WHERE name = 'live'") == [("done",)], 120,
                     "the resumed run to finish")
    assert len(prediction_keys(db, "live")) == TASKS
    assert len(chat.bodies) - sent_before == TASKS - len(stored)  # nothing stored is asked for again
    jobs = read(db, "SELECT kind, status, finished IS NULL FROM run_jobs WHERE run = 'live' ORDER BY id")
    assert jobs == [("new", "running", 1), ("resume", "done", 0)]  # the killed job never closed: "interrupted"
    assert read(db, "PRAGMA integrity_check") == [("ok",)]


def _counts(db: Path) -> tuple[int, ...]:
    return tuple(read(db, f"SELECT COUNT(*) FROM {t}")[0][0] for t in ("benchmarks", "items", "runs", "predictions",
                                                                         "labels", "images"))


def test_disk_full_during_an_import_is_one_clear_error(tmp_path):
    from db.importers import import_items, import_predictions
    from db.store import Store, StoreFull

    db = two_benchmarks(tmp_path)
    before = _counts(db)
    big = fe_lines(n_fq1=40, n_fq2=40, prefix="big")
    items_file = write_benchmark(tmp_path / "big", big)
    lines = [{**line, "rotation": rot, "repeat": rep, "response": line["response"] + " because" * 60}
             for line in prediction_lines(fe_lines(n_fq1=3, n_fq2=3), 3) for rot in range(4) for rep in range(5)]
    preds = write_jsonl(tmp_path / "p.jsonl", lines)
    store = Store(db)
    try:
        pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
        store.conn.execute(f"PRAGMA max_page_count = {pages + 2}")  # two more pages: what is left on the disk
        with pytest.raises(StoreFull) as err:
            import_items(store, items_file, name="big")
        message = str(err.value)
        assert message == (f"the disk holding the store {db.resolve()} is full: nothing of this write was kept; free "
                           "some space and do it again")
        with pytest.raises(StoreFull):
            import_predictions(store, preds, "more", model="m", benchmark="fe")
        store.conn.execute("PRAGMA max_page_count = 1073741823")  # space again: the store works as before
        assert _counts(db) == before and read(db, "PRAGMA integrity_check") == [("ok",)]
        import_items(store, items_file, name="big")
        assert store.benchmark("big")["n_items"] == len(big)
    finally:
        store.close()


def _drop_root_overrides() -> None:
    """In the child, as root: leave CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH and CAP_FOWNER out of the bounding
    set, so the exec'd server obeys file modes like any user."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2, 3):
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


@pytest.mark.parametrize("what", ["file", "folder"])
def test_read_only_store_is_one_clear_error_at_start(tmp_path, what):
    import subprocess
    import sys

    db = two_benchmarks(tmp_path)
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    target = db if what == "file" else db.parent
    mode = target.stat().st_mode
    target.chmod(0o444 if what == "file" else 0o555)
    try:
        proc = subprocess.run(  # noqa: PLW1509 - the capabilities are dropped before exec, in the child
            [sys.executable, str(ROOT / "app.py"), "serve", "--db", str(db), "--port", "0", "--no-demo"], cwd=ROOT,
            capture_output=True, text=True, timeout=120,
            preexec_fn=_drop_root_overrides if os.geteuid() == 0 else None)
    finally:
        target.chmod(mode)
    named = "two.db" if what == "file" else "its folder"
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"error: the store {db.resolve()} is read-only for this user ({named} is not "
                                   "writable): Crosscheck writes imports, runs and labels into it; serve it from a "
                                   "copy or give this user write access")
    assert "Traceback" not in proc.stdout + proc.stderr and "serving on" not in proc.stdout
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest


def test_two_servers_on_one_store_both_work(tmp_path):
    from gradio_client import Client

    db = two_benchmarks(tmp_path)
    traced, items = add_traced_run(db, tmp_path)  # labels are of stage-judged traces (StemBind's F items)
    with ChatServer(latency=0.05) as chat, Server(db) as one, Server(db) as two:
        start_run(Client(one.url, verbose=False), "live", chat.base_url, concurrency=4)
        annotators = [Annotator(one.url, "ann1", traced, items), Annotator(two.url, "ann2", traced, items)]
        for a in annotators:
            a.start()
        reads = []
        for url in (one.url, two.url):  # both serve reads meanwhile, the live run's answers included
            client = Client(url, verbose=False)
            for _ in range(3):
                reads.append(client.predict("fe", ["fe-a", "fe-b"], api_name="/browse_list")["total"])
        for a in annotators:
            a.join(120)
        wait_for(lambda: read(db, "SELECT status FROM runs WHERE name = 'live'") == [("done",)], 120, "the run")
        seen = Client(two.url, verbose=False).predict("fe", ["live"], api_name="/browse_list")
    assert reads == [6] * 6 and seen["total"] == 6
    assert all(not a.failed and len(a.acked) == len(items) for a in annotators), [a.failed for a in annotators]
    got = labels(db, traced)
    for a in annotators:
        assert all(got[key] == flags for key, flags in a.acked.items())
    assert len(prediction_keys(db, "live")) == TASKS
    assert read(db, "PRAGMA integrity_check") == [("ok",)]
