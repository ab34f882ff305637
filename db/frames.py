"""Bulk loading of a benchmark's items and all of its runs for scoring (docs/ARCHITECTURE.md frames).

`Store.items_frame` and `Store.run_data` load one thing each; scoring every run of a benchmark with them reloads
every other run's predictions for each run scored (the `others` of the paired metrics). Here one call reads the
items once and each run once (its predictions through db.predictions.run_frame, the one prediction reader),
straight through the sqlite3 cursor (no pandas SQL layer), and returns frames equal to the store's (same
columns, dtypes, order and values; tests compare them).

`columns` picks prediction columns: the default is every column of `Store.predictions_frame`; scoring passes
`SCORING_COLUMNS`, the ones metric code reads, which skips the raw responses (the bulk of the bytes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import orjson
import pandas as pd

from core import families
from core.schema import ITEM_COLUMNS, PRED_COLUMNS, RunData
from core.scoring import RunExtras
from db.predictions import SCORING_COLUMNS, pk_rows, run_frame
from db.store import Store

# What core/metrics reads from the items (common.JOIN_ITEM_COLUMNS, item_id and answer): no metric reads the
# question, the image list (only its length) or the stage texts, the longest values of a row. FrameEvidence
# also reads the image content hashes, which its exact-image / union bootstrap clusterings link groups by
# (core.stats.cluster_labels).
SCORING_ITEM_COLUMNS = ("item_id", "group_id", "split", "kind", "variant", "options", "letters", "answer", "meta",
                        "n_images")


def scoring_item_columns(family: str) -> tuple[str, ...]:
    """SCORING_ITEM_COLUMNS and the family's own (`Family.scoring_item_columns`), in ITEM_COLUMNS order."""
    extra = families.get(family).scoring_item_columns
    return tuple(c for c in ITEM_COLUMNS if c in SCORING_ITEM_COLUMNS or c in extra)


def items_frame(store: Store, benchmark: str, columns: Sequence[str] = ITEM_COLUMNS
                ) -> tuple[pd.DataFrame, dict[int, str]]:
    """Store.items_frame(benchmark, columns) and the map item pk -> item_id."""
    df = store.items_frame(benchmark, columns, pk=True)
    pks = df.pop("pk")
    return df, dict(zip(pks.tolist(), df["item_id"].tolist(), strict=True))


def _runs(store: Store, benchmark: str, names: set[str] | None = None
          ) -> list[tuple[int, str, str, str, dict[str, Any], bool, tuple[int, str]]]:
    """(id, name, benchmark, family, config, synthetic, version) of each run of `benchmark` (of those in `names`
    when given: only they are read), oldest first; the version (revision, updated) moves on at every write of the
    run (db.store.touch_run)."""
    only = f" AND r.name IN ({','.join('?' * len(names))})" if names is not None else ""
    cur = store.conn.execute(
        "SELECT r.id, r.name, b.name, b.family, r.config, r.synthetic, r.revision, r.updated FROM runs r JOIN"
        f" benchmarks b ON b.id = r.benchmark_id WHERE b.name = ?{only} ORDER BY r.id",
        (benchmark, *sorted(names or ())))
    return [(int(r[0]), r[1], r[2], r[3], orjson.loads(r[4]), bool(r[5]), (int(r[6]), r[7])) for r in cur]


def load_benchmark_runs(store: Store, benchmark: str, columns: Sequence[str] = PRED_COLUMNS,
                        names: Sequence[str] | None = None, item_columns: Sequence[str] = ITEM_COLUMNS,
                        items_cache: dict[Any, Any] | None = None, runs_cache: dict[Any, Any] | None = None
                        ) -> tuple[pd.DataFrame, dict[str, RunData]]:
    """(items frame, {run name: RunData}) for every run of `benchmark` (or those in `names`), in run creation
    order.

    Equal to `store.items_frame(benchmark)` (restricted to `item_columns`) and `store.run_data(name)` for each run
    (restricted to `columns`). `items_cache` (a dict kept by a long-lived caller, a scoring worker) keeps the
    items frames it reads: a benchmark's items never change once imported (db.importers refuses other items
    under its name), so the frame is read once, and shared read-only as within one scoring. `runs_cache` (a dict
    kept beside it) keeps the RunData it reads: a run whose version (revision and updated time, moved on by every
    write of its predictions, overrides or status: db.store.touch_run) is the one read, read against the same
    items frame, is not read again. Every read sees one state of the store (Store.snapshot): a live run's commits
    land before or after the whole load, and a version read names the rows read with it.
    """
    with store.snapshot():
        return _load(store, benchmark, columns, None if names is None else set(names), item_columns, items_cache,
                     runs_cache)


# SCORING_COLUMNS without the trace texts: a metric reads a trace's text only to rank traces by length in an
# error audit of labels (when a run has no token counts), and scoring without labels never does. The texts are
# most of a scoring read's bytes (at StemBind scale about half the SQL time and a split per run).
UNLABELLED_SCORING_COLUMNS = tuple(c for c in SCORING_COLUMNS if c != "trace")


def load_for_scoring(store: Store, benchmark: str, names: Sequence[str] | None = None,
                     items_cache: dict[Any, Any] | None = None, runs_cache: dict[Any, Any] | None = None,
                     traces: bool = True) -> tuple[pd.DataFrame, dict[str, RunData]]:
    """`load_benchmark_runs` of the columns metric code reads (SCORING_ITEM_COLUMNS and the family's extra
    ones; SCORING_COLUMNS, or UNLABELLED_SCORING_COLUMNS without `traces`, for a scoring without labels)."""
    item_columns = scoring_item_columns(store.benchmark_family(benchmark))
    columns = SCORING_COLUMNS if traces else UNLABELLED_SCORING_COLUMNS
    return load_benchmark_runs(store, benchmark, columns, names=names, item_columns=item_columns,
                               items_cache=items_cache, runs_cache=runs_cache)


_ITEMS_KEPT = 4  # items frames an items_cache holds (the latest used)
_RUN_ROWS_KEPT = 1_000_000  # predictions a runs_cache holds (the runs latest used): about 100 MB at most


def _items(store: Store, benchmark: str, item_columns: Sequence[str], cache: dict[Any, Any] | None
           ) -> tuple[pd.DataFrame, dict[int, str]]:
    if cache is None:
        return items_frame(store, benchmark, item_columns)
    b = store.benchmark(benchmark)
    key = (str(store.path), b["id"], b["source_sha256"], tuple(item_columns))
    if key not in cache:
        while len(cache) >= _ITEMS_KEPT:
            del cache[next(iter(cache))]
        cache[key] = items_frame(store, benchmark, item_columns)
    cache[key] = cache.pop(key)
    return cache[key]


def _load(store: Store, benchmark: str, columns: Sequence[str], names: set[str] | None,
          item_columns: Sequence[str], items_cache: dict[Any, Any] | None = None,
          runs_cache: dict[Any, Any] | None = None) -> tuple[pd.DataFrame, dict[str, RunData]]:
    items, item_ids = _items(store, benchmark, item_columns, items_cache)
    lookup = (pk_rows(np.fromiter(item_ids, dtype=np.int64, count=len(item_ids))),
              items["item_id"].to_numpy(dtype=object))
    runs: dict[str, RunData] = {}
    chosen = _runs(store, benchmark, names)
    for run_id, name, bench, family, config, synthetic, version in chosen:
        key = (str(store.path), run_id, tuple(columns))
        hit = runs_cache.get(key) if runs_cache is not None else None
        if runs_cache is not None and hit is not None and hit[0] == version and hit[1] is items:
            runs[name] = hit[2]
            runs_cache[key] = runs_cache.pop(key)  # the latest used is kept longest
            continue
        rows: list[np.ndarray] = []
        preds = run_frame(store, run_id, lookup, columns, rows_out=rows)
        runs[name] = RunData(name=name, benchmark=bench, family=family, config={**config, "synthetic": synthetic},
                             preds=preds, item_rows=rows[0] if rows else None, rows_in=items if rows else None)
        if runs_cache is not None:
            _keep_run(runs_cache, key, (version, items, runs[name]), items_cache)
    return items, runs


def _keep_run(cache: dict[Any, Any], key: Any, entry: tuple[Any, pd.DataFrame, RunData],
              items_cache: dict[Any, Any] | None) -> None:
    """Keep a run read in a runs_cache: entries read against an items frame the items cache no longer holds go
    (they can never be used again, and would keep that frame alive); then the oldest, until the entries hold at
    most _RUN_ROWS_KEPT predictions (each counts one at least)."""
    alive = {id(entry[1])} | {id(v[0]) for v in (items_cache or {}).values()}
    for k in [k for k, v in cache.items() if id(v[1]) not in alive]:
        del cache[k]
    cache.pop(key, None)
    cache[key] = entry
    while sum(max(1, len(v[2].preds)) for v in cache.values()) > _RUN_ROWS_KEPT and len(cache) > 1:
        del cache[next(iter(cache))]


def score_extras(store: Store, run: str, family: str, judge: str | None = None) -> RunExtras | None:
    """Stored data a family's metrics read beside the predictions: for StemBind, the trace judgements of
    `judge` (default: the most recent judge run of `run`), which feed L2 StepAcc and L3 AttrTag."""
    if not families.get(family).judged_traces:
        return None
    from db.judging import judge_runs_of, judgements_frame

    judges = [judge] if judge else judge_runs_of(store, run)[-1:]
    if not judges:
        return None
    return RunExtras(judgements=judgements_frame(store, run, judges))
