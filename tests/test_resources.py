"""Bounded resources (issue 26 point 3): no per-thread state outlives its thread. The server's worker threads come
and go (anyio starts a thread per request when its pool is idle); 200 requests, each on a fresh thread, through
the handlers of Browse (list, group view), Compare and the Metrics endpoint leave as many SQLite connections and
open file descriptors as before."""

from __future__ import annotations

import gc
import json
import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conftest import fe_lines, write_benchmark

from db.importers import import_items, import_predictions
from db.store import Store


def _fds(under: Path | None = None) -> int:
    """Open file descriptors of this process (those on files under `under` when given)."""
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # the listing's own descriptor, closed meanwhile
        if under is None or target.startswith(str(under)):
            n += 1
    return n


def _connections() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, sqlite3.Connection))


def _store(tmp_path: Path) -> Store:
    store = Store(tmp_path / "store" / "s.db")
    items = fe_lines(n_fq1=3, n_fq2=3)
    import_items(store, write_benchmark(tmp_path / "fe", items), name="fe")
    for run, right in (("a", 0), ("b", 1)):
        preds = tmp_path / f"{run}.jsonl"
        preds.write_text("".join(json.dumps({"item_id": it["item_id"], "response": "", "answer": it["answer"] if i % 2 == right
                                             else "D"}) + "\n" for i, it in enumerate(items)), encoding="utf-8")
        import_predictions(store, preds, run, model=run)
    return store


def _on_fresh_threads(calls: list[Callable[[], Any]], n: int) -> None:
    errors: list[BaseException] = []

    def work(fn: Callable[[], Any]) -> None:
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    for i in range(n):
        t = threading.Thread(target=work, args=(calls[i % len(calls)],))
        t.start()
        t.join()
    assert not errors, errors[:3]


def test_fresh_threads_leave_no_connection_or_descriptor(tmp_path):
    from ui.browse import list_groups, open_group
    from ui.compare import compare_runs
    from ui.metrics import MetricsHandlers

    store = _store(tmp_path)
    metrics = MetricsHandlers(store)
    calls: list[Callable[[], Any]] = [
        lambda: list_groups(store, "fe", ["a", "b"], "", "", "", "", "", "", 1),
        lambda: open_group(store, "fe", ["a", "b"], "g1_0", "a", True),
        lambda: compare_runs(store, "fe", "a", "b", "test", draws=50),
        lambda: metrics.api("fe", ["a", "b"]),
    ]
    _on_fresh_threads(calls, len(calls))  # caches filled, modules imported
    store.close()
    conns, fds, db_fds = _connections(), _fds(), _fds(store.path.parent)
    _on_fresh_threads(calls, 200)
    gc.collect()
    assert _connections() == conns
    assert _fds(store.path.parent) == db_fds == 0
    assert _fds() == fds
