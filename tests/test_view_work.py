"""A view's work does not grow with the runs it does not show (issue 27 point 2): the same picked runs on a store
of 30 and one of 60 runs (the first 30 the same) cost the same SQL statements and the same rows read, for the
group view, the Browse list and the Metrics endpoint, each on cold caches. Work is counted, not timed: every
statement the store's connection runs (sqlite3's trace callback, numbers and quoted values masked, so a statement
naming more runs differs) and every row it hands back (a row factory that counts)."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from helpers import fe_lines, write_benchmark

from db.importers import import_items, import_predictions
from db.store import Store
from ui import api
from ui.metrics import metrics_json
from ui.scores import ScoreCache
from ui.views import OTHER_RUNS

PICKED = ["run-00", "run-01"]
LETTERS = "ABCD"


def _add_runs(s: Store, folder: Path, lines: list[dict], first: int, last: int) -> None:
    for i in range(first, last):
        p = folder / f"run-{i:02d}.jsonl"
        p.write_text("".join(json.dumps({"item_id": x["item_id"], "response": LETTERS[(i + k) % 4]}) + "\n"
                             for k, x in enumerate(lines)), encoding="utf-8")
        import_predictions(s, p, run=f"run-{i:02d}", model=f"model-{i:02d}")


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[int, Path]:
    """Two stores: 30 runs, and the same 30 runs plus 30 more (each run its own model)."""
    root = tmp_path_factory.mktemp("work")
    lines = fe_lines(3, 3)
    small = root / "30" / "fe.db"
    s = Store(small)
    import_items(s, write_benchmark(root / "items", lines), name="fe")
    _add_runs(s, root, lines, 0, 30)
    s.close()
    large = root / "60" / "fe.db"
    large.parent.mkdir()
    shutil.copy(small, large)
    shutil.copytree(small.with_suffix(".images"), large.with_suffix(".images"), dirs_exist_ok=True)
    s = Store(large)
    _add_runs(s, root, lines, 30, 60)
    s.close()
    return {30: small, 60: large}


_MASK = re.compile(r"'(?:[^']|'')*'|\b\d+(?:\.\d+)?\b")


@contextmanager
def counted(s: Store) -> Iterator[dict[str, Any]]:
    """Counts the statements and rows of this thread's connection to `s` while the block runs."""
    work: dict[str, Any] = {"statements": [], "rows": 0}

    def row(cursor: sqlite3.Cursor, values: tuple[Any, ...]) -> tuple[Any, ...]:
        work["rows"] += 1
        return values

    conn = s.conn
    conn.set_trace_callback(lambda sql: work["statements"].append(_MASK.sub("?", sql)))
    conn.row_factory = row
    try:
        yield work
    finally:
        conn.set_trace_callback(None)
        conn.row_factory = None


def _work(path: Path, view: Callable[[Store], Any]) -> tuple[dict[str, Any], Any]:
    """What `view` costs on a fresh Store of `path` (the process's caches are keyed by the store's path, so each
    store starts cold), and what it returned."""
    s = Store(path)
    try:
        with counted(s) as work:
            out = view(s)
        return work, out
    finally:
        s.close()


def _same_work(stores: dict[int, Path], view: Callable[[Store], Any]) -> tuple[Any, Any]:
    small, out_small = _work(stores[30], view)
    large, out_large = _work(stores[60], view)
    assert small["rows"] > 0 and small["statements"]
    assert large["statements"] == small["statements"]
    assert large["rows"] == small["rows"]
    return out_small, out_large


def test_group_view_reads_the_picked_runs_only(stores):
    small, large = _same_work(stores, lambda s: api.open_group(s, "fe", PICKED, "g1_0", "", True))
    assert 30 > len(PICKED) + OTHER_RUNS  # both stores have more runs than a view draws besides the picked ones
    for html, n in ((small, 30), (large, 60)):
        assert f"Picked runs (2 of {n})" in html and f"{n - 2} other run(s) of this benchmark are not drawn" in html
        assert html.count('class="cc-run" title="run-00"') >= 1 and 'title="run-02"' not in html


def test_browse_list_reads_the_picked_runs_only(stores):
    small, large = _same_work(stores, lambda s: api.browse_list(s, "fe", PICKED))
    assert small == large and small["runs"] == PICKED


def test_metrics_reads_the_picked_runs_and_their_units_only(stores):
    small, large = _same_work(stores, lambda s: metrics_json(s, "fe", PICKED, cache=ScoreCache()))
    assert small == large and small["runs"] == PICKED


def test_a_view_of_a_small_benchmark_draws_every_run(tmp_path):
    """With few runs besides the picked ones, the group view's All runs table holds all of them, as before."""
    s = Store(tmp_path / "fe.db")
    lines = fe_lines(1, 1)
    import_items(s, write_benchmark(tmp_path / "items", lines), name="fe")
    _add_runs(s, tmp_path, lines, 0, 4)
    html = api.open_group(s, "fe", ["run-01"], "g1_0", "", True)
    assert ">All runs<" in html and "not drawn" not in html
    assert all(f'title="run-{i:02d}"' in html for i in range(4))
    s.close()
