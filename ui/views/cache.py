"""Per-process caches for the Browse and Compare tabs: a benchmark's items and group index, and each run's
data and group summary, keyed by a version that changes when the run's predictions change (an import, a
resumed run, an extraction-audit override), so a cached value is never stale."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from core import families, outcomes
from core import groups as core_groups
from core.schema import RunData
from db import browse as dbb
from db import predictions

if TYPE_CHECKING:
    from core.disagreement import DisagreementMap
    from core.failure_modes import FailureModes
    from core.item_health import ItemHealth

_LOCK = threading.RLock()
_BENCH: dict[tuple[str, str], BenchData] = {}
_RUNS: dict[tuple[str, str], tuple[str, RunData]] = {}
_SUMM: dict[tuple[str, str], tuple[str, outcomes.RunSummary]] = {}
_LOADING: dict[tuple[str, str], threading.Lock] = {}  # per benchmark: held while its BenchData is read
_MAX_RUNS = 64
_MAX_SUMMARIES = 512  # a RunSummary is ~150 KB at 20k items; the Browse list may show 240 runs at once


@dataclass
class BenchData:
    name: str
    family: str
    items: pd.DataFrame
    index: core_groups.GroupIndex
    strata: dict[str, list[str]]
    splits: list[str]
    kinds: list[str]
    pk_ids: dict[int, str]
    layout: outcomes.Layout   # the items as arrays (core.outcomes), for the runs' summaries
    pk_rows: np.ndarray       # item pk -> row of `items` (db.predictions.pk_rows)


def bench(store: Any, name: str) -> BenchData:
    """Items, group index and filter choices of a benchmark (benchmarks do not change once imported). Callers
    asking for one benchmark at once share one read: the later ones wait for the first (a server warms the
    benchmark its page opens on in the background, and the first Browse request takes that read)."""
    key = (str(store.path), name)
    with _LOCK:
        loading = _LOADING.setdefault(key, threading.Lock())
    with loading:
        return _bench(store, name, key)


def _bench(store: Any, name: str, key: tuple[str, str]) -> BenchData:
    with _LOCK:
        hit = _BENCH.get(key)
        b = store.benchmark(name)
        if hit is not None and len(hit.items) == int(b["n_items"]):
            return hit
    items = store.items_frame(name, pk=True)
    data = BenchData(name=name, family=str(b["family"]), items=items, index=core_groups.group_index(items),
                     strata=core_groups.strata_fields(items, max_values=16),
                     splits=core_groups.ordered(items["split"].unique(), ["test", "dev", "train"]),
                     kinds=core_groups.ordered(items["kind"].unique(), []),
                     pk_ids=dict(zip(items["pk"].tolist(), items["item_id"].tolist(), strict=True)),
                     layout=outcomes.layout(families.get(str(b["family"])).groups, items), pk_rows=predictions.pk_rows(items["pk"].tolist()))
    with _LOCK:
        _BENCH[key] = data
    return data


def full_items(store: Any, name: str) -> pd.DataFrame:
    """Every item column of a benchmark (the frame the Browse list reads; its `pk` column besides): one read and
    one in-memory frame per benchmark for Browse, Compare, slices and the report."""
    return bench(store, name).items


def _cached(table: dict, key: tuple[str, str], version: str, make: Any) -> Any:
    with _LOCK:
        hit = table.get(key)
        if hit is not None and hit[0] == version:
            return hit[1]
    value = make()
    with _LOCK:
        if len(table) >= _MAX_RUNS:
            table.pop(next(iter(table)))
        table[key] = (version, value)
    return value


def summaries(store: Any, bd: BenchData, runs: list[dict[str, Any]]) -> list[tuple[str, outcomes.RunSummary]]:
    """(run, its core.outcomes.RunSummary over the benchmark) for each run record of `runs` (Store.runs rows),
    recomputed only when a run's predictions changed; the runs to recompute are read in one query."""
    names = [r["name"] for r in runs]
    versions = dbb.run_versions(store, names)
    got: dict[str, outcomes.RunSummary] = {}
    with _LOCK:
        for n in names:
            hit = _SUMM.get((str(store.path), n))
            if hit is not None and hit[0] == versions.get(n):
                got[n] = hit[1]
    todo = [r for r in runs if r["name"] not in got and r["name"] in versions]
    if todo:
        read = predictions.outcome_arrays(store, [r["id"] for r in todo], bd.pk_rows)
        made = {r["name"]: outcomes.summarise(bd.layout, read[r["id"]]) for r in todo}
        got.update(made)
        with _LOCK:
            for r in todo:
                while len(_SUMM) >= _MAX_SUMMARIES:
                    _SUMM.pop(next(iter(_SUMM)))
                _SUMM[(str(store.path), r["name"])] = (versions[r["name"]], got[r["name"]])
    return [(n, got[n]) for n in names if n in got]


def run_data(store: Any, names: list[str]) -> dict[str, RunData]:
    """Full RunData (Store.run_data) of the runs that exist, cached by version."""
    versions = dbb.run_versions(store, names)
    return {n: _cached(_RUNS, (str(store.path), n), versions[n], lambda n=n: store.run_data(n))
            for n in names if n in versions}


# --------------------------------------------------------------------------- why it fails (issue #38)

_WHY: dict[tuple[Any, ...], tuple[Any, Any]] = {}  # (path, what, ...) -> (version, result)
_MAX_WHY = 32  # results kept: a failure-modes result is a few hundred KB at 20,000 items


def _kept(key: tuple[Any, ...], version: Any, make: Any) -> Any:
    """`make()`, kept under `key` until `version` changes (at most _MAX_WHY results, the oldest dropped first)."""
    with _LOCK:
        hit = _WHY.get(key)
        if hit is not None and hit[0] == version:
            return hit[1]
    value = make()
    with _LOCK:
        _WHY.pop(key, None)
        while len(_WHY) >= _MAX_WHY:
            _WHY.pop(next(iter(_WHY)))
        _WHY[key] = (version, value)
    return value


def failure_modes(store: Any, bench: str, run: str, other: str | None = None) -> FailureModes:
    """core.failure_modes' result for `run` (against `other`) on the benchmark's test split, on the Browse caches'
    items and runs, kept until one of the two runs changes (a few seconds at 20,000 items, then none: the panel,
    the list's mode filter, the review keys and the report ask for it again and again)."""
    from core.failure_modes import failure_modes as find
    from db.diagnosis import first_failures, trace_notes

    names = [run] + ([other] if other and other != run else [])
    versions = dbb.run_versions(store, names)

    def make() -> FailureModes:
        data = run_data(store, names)
        return find(full_items(store, bench), data[run], other=data.get(other) if other else None,
                    notes=trace_notes(store, run), stages=first_failures(store, run, bench_family(store, bench)))

    found: FailureModes = _kept((str(store.path), "modes", run, other or ""), tuple(versions.get(n) for n in names),
                                make)
    return found


def bench_family(store: Any, name: str) -> str:
    return bench(store, name).family


def _all_runs_version(store: Any, name: str) -> tuple[Any, ...]:
    runs = [r["name"] for r in store.runs(name, with_counts=False)]
    versions = dbb.run_versions(store, runs)
    return tuple((r, versions.get(r)) for r in runs)


def item_health(store: Any, name: str) -> ItemHealth:
    """db.diagnosis.item_health_of on the Browse caches' items, kept until a run of the benchmark changes."""
    from db.diagnosis import item_health_of

    bd = bench(store, name)
    found: ItemHealth = _kept((str(store.path), "health", name), _all_runs_version(store, name),
                              lambda: item_health_of(store, name, items=bd.items, lay=bd.layout))
    return found


def disagreement(store: Any, name: str, keep: tuple[str, ...] = ()) -> DisagreementMap:
    """db.diagnosis.disagreement_of on the Browse caches' items, kept until a run of the benchmark changes."""
    from db.diagnosis import disagreement_of

    bd = bench(store, name)
    found: DisagreementMap = _kept((str(store.path), "map", name, keep), _all_runs_version(store, name),
                                   lambda: disagreement_of(store, name, keep, items=bd.items, lay=bd.layout))
    return found
