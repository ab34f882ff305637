"""db.bulk.ScoringPool: the scoring workers of the UI server's Metrics (and of `score --all`, whose results
tests/test_frames.py checks). On the demo store (a real SQLite file) with the weight threshold lowered so that the
workers take the work: every result equals the in-process one, under threads too; a killed worker costs one
request its speed, never its answer; light work stays in the calling thread."""

from __future__ import annotations

import json
import os
import signal
import threading

import pytest

from db.bulk import ScoringPool, score_named, units_holding
from db.store import Store

BENCH = "frameevidence"  # splits into several units (one per model), so the work spreads over both workers


@pytest.fixture(scope="module")
def store(demo_db):
    s = Store(demo_db)
    yield s
    s.close()


@pytest.fixture(scope="module")
def pool():
    p = ScoringPool(jobs=2, min_weight=0)
    yield p
    p.close()


def _names(store: Store) -> list[str]:
    return [r["name"] for r in store.runs(BENCH, with_counts=False)]


def _here(store: Store, names: list[str]) -> str:
    load = [n for _, unit, _ in units_holding(store, BENCH, names) for n in unit]
    return json.dumps(score_named(store, BENCH, load, names), sort_keys=True)


def test_workers_give_the_in_process_results(store, pool):
    names = _names(store)
    assert len(units_holding(store, BENCH, names)) >= 2
    used = pool.used
    out = pool.score(store, BENCH, names)
    assert pool.used == used + 1  # scored on the workers
    assert list(out) == names
    assert json.dumps(out, sort_keys=True) == _here(store, names)
    some = names[1:3]  # a pick: only those runs come back, scored with their partners
    assert json.dumps(pool.score(store, BENCH, some), sort_keys=True) == _here(store, some)


def test_threads_share_the_workers(store, pool):
    names = _names(store)
    want = _here(store, names)
    got: list[str] = []

    def one() -> None:
        s = Store(store.path)
        try:
            got.append(json.dumps(pool.score(s, BENCH, names), sort_keys=True))
        finally:
            s.close()

    threads = [threading.Thread(target=one) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert got == [want] * 3


def test_a_killed_worker_costs_speed_never_the_answer(store):
    p = ScoringPool(jobs=2, min_weight=0)
    try:
        names = _names(store)
        p.start()
        for pid in p.pids():  # the workers, as the OS sees them
            os.kill(pid, signal.SIGKILL)
        used = p.used
        out = p.score(store, BENCH, names)  # the pool is broken: scored here instead
        assert p.used == used and json.dumps(out, sort_keys=True) == _here(store, names)
        again = p.score(store, BENCH, names)  # fresh workers take the next request
        assert p.used == used + 1 and again == out
    finally:
        p.close()


def test_warmed_workers_hold_the_items_and_draws_and_give_the_same_results(store):
    """warm (a server's start) has each worker read the benchmark's items and draw its resample counts before
    any request; the results after it are the in-process ones."""
    p = ScoringPool(jobs=2, min_weight=0)
    try:
        p.start()
        assert p.held() == [(0, 0), (0, 0)]
        p.warm(store, BENCH)
        assert all(items == 1 and weights >= 1 for items, weights in p.held())
        names = _names(store)
        assert json.dumps(p.score(store, BENCH, names), sort_keys=True) == _here(store, names)
    finally:
        p.close()


def test_a_servers_workers_run_at_its_niceness_and_score_alike(store):
    """ScoringPool(nice=...) (the server's, SERVER_NICE): each worker process runs at that niceness (or keeps a
    higher one), the process that started them keeps its own, and the results are the in-process ones."""
    from db.bulk import SERVER_NICE

    before = os.getpriority(os.PRIO_PROCESS, 0)
    p = ScoringPool(jobs=2, min_weight=0, nice=SERVER_NICE)
    try:
        p.start()
        assert [os.getpriority(os.PRIO_PROCESS, pid) for pid in p.pids()] == [max(before, SERVER_NICE)] * 2
        assert os.getpriority(os.PRIO_PROCESS, 0) == before
        names = _names(store)
        assert json.dumps(p.score(store, BENCH, names), sort_keys=True) == _here(store, names)
    finally:
        p.close()


def test_serve_starts_the_workers_before_it_imports_gradio(demo_db):
    """`serve` starts the scoring workers (ui.scores.start_scoring_workers_soon: in a thread) as soon as its
    store is open, before gradio is imported and the page built, so their start and warm-up overlap the
    server's own. ui.shell is replaced by a module that imports gradio, as the real one does, then records."""
    import subprocess
    import sys

    from helpers import ROOT

    code = ("import importlib.abc, importlib.util, sys\n"
            "import ui.scores as scores\n"
            "seen = []\n"
            "scores.start_scoring_workers_soon = lambda store: seen.append(('workers', 'gradio' in sys.modules))\n"
            "class Shell(importlib.abc.MetaPathFinder, importlib.abc.Loader):\n"
            "    def find_spec(self, name, path, target=None):\n"
            "        return importlib.util.spec_from_loader(name, self) if name == 'ui.shell' else None\n"
            "    def create_module(self, spec):\n"
            "        return None\n"
            "    def exec_module(self, module):\n"
            "        import gradio  # noqa: F401\n"
            "        module.launch = lambda *a, **k: seen.append(('launch', 'gradio' in sys.modules))\n"
            "sys.meta_path.insert(0, Shell())\n"
            "from cli import main\n"
            "main(['serve', '--db', sys.argv[1], '--no-demo'])\n"
            "print(seen)\n")
    out = subprocess.run([sys.executable, "-c", code, str(demo_db)], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[('workers', False), ('launch', True)]"


def test_light_work_stays_in_the_calling_thread(store):
    p = ScoringPool(jobs=2)  # the default threshold: the demo store is light
    try:
        names = _names(store)
        assert not p.wants(store, BENCH)
        out = p.score(store, BENCH, names)
        assert p.used == 0 and p._executor is None
        assert json.dumps(out, sort_keys=True) == _here(store, names)
    finally:
        p.close()


def test_workers_that_cannot_start_cost_speed_never_the_answer(store):
    p = ScoringPool(jobs=2, min_weight=0, initializer=os.abort)  # each worker dies as it starts
    try:
        names = _names(store)
        out = p.score(store, BENCH, names)  # scored here instead of an error
        assert p.used == 0 and p._executor is None
        assert json.dumps(out, sort_keys=True) == _here(store, names)
        again = p.score(store, BENCH, names)  # within POOL_RETRY_S: no second start-up to wait for
        assert again == out and p.start_failures == 1 and p._executor is None
    finally:
        p.close()
    p = ScoringPool(jobs=2, min_weight=0, initializer=os.abort)
    try:  # requests at once: those that waited on the failing start-up do not start workers again
        got: list[dict] = []

        def one() -> None:
            s = Store(store.path)
            try:
                got.append(p.score(s, BENCH, names))
            finally:
                s.close()

        threads = [threading.Thread(target=one) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert got == [out] * 3 and p.start_failures == 1
    finally:
        p.close()


def test_workers_score_a_changed_run_from_its_new_rows(demo_db, tmp_path):
    """The workers keep each run they read by version (db.frames runs_cache): after an override on one run, the
    next request scores that run from its new rows (and the others from the rows kept), equal to in-process."""
    from db import overrides as dbo
    from tests.helpers import copy_store

    s = Store(copy_store(demo_db, tmp_path / "copy"))
    p = ScoringPool(jobs=2, min_weight=0)
    try:
        names = _names(s)
        before = p.score(s, BENCH, names)
        assert json.dumps(before, sort_keys=True) == _here(s, names)
        run = names[0]
        item, gold = s.conn.execute(
            "SELECT i.item_id, i.answer FROM predictions p JOIN items i ON i.id = p.item_pk JOIN runs r ON"
            " r.id = p.run_id WHERE r.name = ? AND i.split = 'test' AND p.rotation = 0 AND p.repeat = 0 AND"
            " (p.answer IS NULL OR p.answer != i.answer) LIMIT 1", (run,)).fetchone()
        dbo.apply(s, run, item, method="manual", letter=gold)  # a wrong answer made right
        after = p.score(s, BENCH, names)
        assert p.used == 2
        assert json.dumps(after, sort_keys=True) == _here(s, names)
        assert after[run]["metrics"]["accuracy"]["k"] == before[run]["metrics"]["accuracy"]["k"] + 1
    finally:
        p.close()
        s.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not open(f"/proc/{pid}/stat").read().split(") ")[1].startswith("Z")  # a zombie is gone too


def test_workers_end_when_their_server_is_killed():
    """A server killed with SIGKILL runs no clean-up: its workers (and their forkserver) end by themselves."""
    import subprocess
    import sys
    import time

    from helpers import ROOT

    code = ("import os, signal, sys\n"
            "from db.bulk import ScoringPool\n"
            "p = ScoringPool(jobs=2, min_weight=0)\n"
            "p.start()\n"
            "print(*p.pids(), flush=True)\n"
            "sys.stdin.readline()\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None and proc.stdin is not None
    workers = [int(x) for x in proc.stdout.readline().split()]
    assert len(workers) == 2 and all(_alive(w) for w in workers)
    forkserver = {int(open(f"/proc/{w}/stat").read().split(") ")[1].split()[1]) for w in workers}
    proc.stdin.write("\n")
    proc.stdin.flush()
    assert proc.wait(60) == -signal.SIGKILL
    deadline = time.monotonic() + 60  # a bound for a loaded machine, not a speed check: they go within seconds
    while any(_alive(p) for p in [*workers, *forkserver]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_alive(p) for p in workers), "scoring workers outlived their killed server"
    assert not any(_alive(p) for p in forkserver), "the forkserver outlived its killed server"
