"""Scores for the Metrics tab and its `metrics` endpoint: the bulk path of `score --all`, cached per benchmark.

The runs are read as `score --all` reads them (db.frames.load_for_scoring over the db.bulk scoring units that
hold a picked run: every run whose metrics a picked run's can depend on) and scored by `core.scoring.score_all`
(shared work, shared bootstrap draws): on the server's scoring workers when the work is heavy (db.bulk.ScoringPool,
one bin of units per CPU, as `score --all` spreads them), else in the request's thread. Each result equals
`score --run NAME --json`'s and `score --all --json`'s.

`ScoreCache` keeps results under (benchmark, the set of run names, (name, revision and updated time) of every run
of the benchmark, options): a finished live run, an import, an override or a new judge run changes the key, and
entries of an older state of that benchmark are dropped. The versions are read once per change of the store
(db.browse.run_versions), so a warm request costs a lookup; `derive` keeps what callers build from the scores
(the endpoint's JSON tables) under the same state. Its lock is held only while its dict is read or
written, never while scoring: users scoring different benchmarks (or different picks) never wait on each other,
and a key asked for while it is being computed waits for that one computation (a Future) instead of starting a
second one.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from core import families
from core.report_tables import RunScore
from core.scoring import DEFAULT_SPLIT
from core.stats import Clustering
from db.browse import run_versions
from db.bulk import ScoringPool, units_holding
from db.store import Store


@dataclass(frozen=True)
class ScoreOptions:
    """What a scoring depends on besides the runs: the split (None: every split) and FrameEvidence's bootstrap
    clusterings (empty: score's defaults)."""

    split: str | None = DEFAULT_SPLIT
    clusterings: tuple[Clustering, ...] = ()

    def score_kwargs(self) -> dict[str, Any]:
        return {"clusterings": self.clusterings} if self.clusterings else {}


Key = tuple[str, tuple[str, ...], tuple[tuple[Any, ...], ...], ScoreOptions]


def run_state(store: Store, runs: Sequence[dict[str, Any]]) -> tuple[tuple[str, str], ...]:
    """(name, version) of each run (Store.runs rows): what a cached score depends on. The version (revision and
    updated time: db.browse.run_versions) is read once per store change, not once per request."""
    versions = run_versions(store, [r["name"] for r in runs])
    return tuple((r["name"], versions.get(r["name"], "")) for r in runs)


def runs_to_load(store: Store, benchmark: str, names: Sequence[str]) -> list[str]:
    """Every run of each db.bulk scoring unit that holds one of `names` (what `score --all` loads with it)."""
    return [n for _, unit, _ in units_holding(store, benchmark, names) for n in unit]


def score_runs(store: Store, benchmark: str, names: Sequence[str], options: ScoreOptions) -> dict[str, dict[str, Any]]:
    """{run: score_run result} of `names`, through the bulk path (no cache): on the server's scoring workers
    (db.bulk.ScoringPool) when the work is heavy, else here."""
    if not names:
        return {}
    return POOL.score(store, benchmark, names, options.split, **options.score_kwargs())


class ScoreCache:
    """Bulk scores per (benchmark, runs, state of the benchmark's runs, options); at most `size` entries."""

    def __init__(self, size: int = 32, scorer: Callable[..., dict[str, dict[str, Any]]] = score_runs) -> None:
        self.size = size
        self.scorer = scorer  # score_runs; a test holds it at its start to watch the locking
        self._lock = threading.Lock()
        self._entries: OrderedDict[Key, Future[dict[str, dict[str, Any]]]] = OrderedDict()
        self._derived: OrderedDict[tuple[str, Any, Any], Any] = OrderedDict()  # values built from scores (derive)
        self.computed = 0  # scorings started (tests and the bench read it)

    def key(self, store: Store, benchmark: str, names: Sequence[str], options: ScoreOptions) -> Key:
        runs = store.runs(benchmark, with_counts=False)
        known = {r["name"] for r in runs}
        # a run's scores do not depend on which runs are picked with it, nor their order: one key per set
        return benchmark, tuple(sorted({n for n in names if n in known})), run_state(store, runs), options

    def scores(self, store: Store, benchmark: str, names: Sequence[str], options: ScoreOptions | None = None
               ) -> dict[str, dict[str, Any]]:
        """{run: score_run result} of the named runs of `benchmark` (names the benchmark lacks are left out)."""
        options = options or ScoreOptions()
        key = self.key(store, benchmark, names, options)
        future, owner = self._claim(key)
        if owner:
            try:
                future.set_result(self.scorer(store, benchmark, key[1], options))
            except BaseException as exc:
                with self._lock:  # a failed scoring is not kept: the next request tries again
                    if self._entries.get(key) is future:
                        del self._entries[key]
                future.set_exception(exc)
        return future.result()

    def derive(self, store: Store, benchmark: str, tag: Any, build: Callable[[], Any]) -> Any:
        """`build()`'s value, kept under (benchmark, state of its runs, `tag`) and dropped when that state changes:
        what a caller makes from cached scores (the endpoint's JSON tables), made once per state. `tag` holds
        everything else the value depends on. Two callers may build the same value at once; the first kept wins;
        a failed build is not kept."""
        dkey = (benchmark, run_state(store, store.runs(benchmark, with_counts=False)), tag)
        with self._lock:
            if dkey in self._derived:
                self._derived.move_to_end(dkey)
                return self._derived[dkey]
        value = build()
        with self._lock:
            for old in [k for k in self._derived if k[0] == benchmark and k[1] != dkey[1]]:
                del self._derived[old]
            value = self._derived.setdefault(dkey, value)
            while len(self._derived) > self.size:
                self._derived.popitem(last=False)
            return value

    def _claim(self, key: Key) -> tuple[Future[dict[str, dict[str, Any]]], bool]:
        """The entry for `key` and whether this caller computes it (bookkeeping only, under the lock)."""
        with self._lock:
            future = self._entries.get(key)
            if future is not None:
                self._entries.move_to_end(key)
                return future, False
            for old in [k for k in self._entries if k[0] == key[0] and k[2] != key[2]]:
                del self._entries[old]  # scored on an older state of this benchmark's runs
            future = self._entries[key] = Future()
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
            self.computed += 1
            return future, True


POOL = ScoringPool()  # started by the server (ui.shell) when its store holds heavy work
CACHE = ScoreCache()


def run_scores(store: Store, benchmark: str, names: Sequence[str], clusterings: tuple[Clustering, ...] = (),
               split: str | None = DEFAULT_SPLIT, control_runner: str | None = None, cache: ScoreCache = CACHE
               ) -> tuple[str, list[RunScore], list[RunScore]]:
    """(family, the named runs' scores, control runs' scores): the runs of `control_runner` (config `runner`)
    are scored beside the named ones as control rows (default: the family's, ui/views/<name>.py CHARTS)."""
    from ui.charts import family_charts

    family = store.benchmark_family(benchmark)
    fc = family_charts(family)
    clusters = families.get(family).capabilities.clusterings
    runner = control_runner if control_runner is not None else fc.control_runner
    meta = {r["name"]: r for r in store.runs(benchmark, with_counts=False)}
    names = [n for n in names if n in meta]
    controls = [n for n, r in meta.items() if runner and r["runner"] == runner]
    options = ScoreOptions(split, clusterings if clusters else ())
    scores = cache.scores(store, benchmark, list(dict.fromkeys([*names, *controls])), options)

    def rs(name: str) -> RunScore:
        r = meta[name]
        return RunScore(name, scores[name]["metrics"], bool(r["synthetic"]), dict(r["config"] or {}), r["runner"],
                        scores[name].get("split", DEFAULT_SPLIT))

    return family, [rs(n) for n in names if n in scores], [rs(n) for n in controls if n in scores]
