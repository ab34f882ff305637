"""Per-process caches for the Browse and Compare tabs: a benchmark's items and group index, and each run's
data and group summary, keyed by a version that changes when the run's predictions change (an import, a
resumed run, an extraction-audit override), so a cached value is never stale."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import pandas as pd

from core import groups as core_groups
from core.schema import RunData
from db import browse as dbb

_LOCK = threading.RLock()
_BENCH: dict[tuple[str, str], "BenchData"] = {}
_RUNS: dict[tuple[str, str], tuple[str, RunData, pd.DataFrame]] = {}
_MAX_RUNS = 64


@dataclass
class BenchData:
    name: str
    family: str
    items: pd.DataFrame
    index: core_groups.GroupIndex
    strata: dict[str, list[str]]
    splits: list[str]
    kinds: list[str]


def bench(store: Any, name: str) -> BenchData:
    """Items, group index and filter choices of a benchmark (benchmarks do not change once imported)."""
    key = (str(store.path), name)
    with _LOCK:
        hit = _BENCH.get(key)
        b = store.benchmark(name)
        if hit is not None and len(hit.items) == int(b["n_items"]):
            return hit
    items = store.items_frame(name)
    data = BenchData(name=name, family=str(b["family"]), items=items, index=core_groups.group_index(items),
                     strata=core_groups.strata_fields(items, max_values=16),
                     splits=core_groups.ordered(items["split"].unique(), ["test", "dev", "train"]),
                     kinds=core_groups.ordered(items["kind"].unique(), []))
    with _LOCK:
        _BENCH[key] = data
    return data


def run(store: Any, bd: BenchData, name: str, version: str | None = None) -> tuple[RunData, pd.DataFrame]:
    """(RunData, group summary) of a run, recomputed only when its version changed."""
    key = (str(store.path), name)
    if version is None:
        version = dbb.run_versions(store, [name]).get(name, "")
    with _LOCK:
        hit = _RUNS.get(key)
        if hit is not None and hit[0] == version:
            return hit[1], hit[2]
    rd = store.run_data(name)
    summary = core_groups.group_summary(bd.family, bd.items, rd)
    with _LOCK:
        if len(_RUNS) >= _MAX_RUNS:
            _RUNS.pop(next(iter(_RUNS)))
        _RUNS[key] = (version, rd, summary)
    return rd, summary


def runs(store: Any, bd: BenchData, names: list[str]) -> list[tuple[str, RunData, pd.DataFrame]]:
    versions = dbb.run_versions(store, names)
    return [(n, *run(store, bd, n, versions.get(n, ""))) for n in names if n in versions]
