"""Scores for the Metrics tab and its `metrics` endpoint: the bulk path of `score --all`, cached per run.

The runs are read as `score --all` reads them (db.frames.load_for_scoring over the db.bulk scoring units that
hold a picked run: every run whose metrics a picked run's can depend on) and scored by `core.scoring.score_all`
(shared work, shared bootstrap draws): on the server's scoring workers when the work is heavy (db.bulk.ScoringPool,
one bin of units per CPU, as `score --all` spreads them), else in the request's thread. Each result equals
`score --run NAME --json`'s and `score --all --json`'s.

What a cached score depends on is the state of its unit: (name, revision and updated time) of each run of the
db.bulk units holding the picked runs (db.browse.run_versions; the units found by SQL, db.bulk.units_holding), so
a request reads the picked runs and their partners, never the benchmark's other runs, and a live run writing
into another unit leaves the cache as it is. `ScoreCache` keeps each run's result under (benchmark, run, state of
its unit, options), so picks that share runs share their scores (only runs not yet scored in that state are
scored, together), and the answer of a whole pick under (benchmark, the set of names, state, options); an entry
whose runs changed since is dropped. `derive` keeps what callers build from the scores (the endpoint's JSON
tables) under the same kind of state. Its lock is held only while its dicts are read or written, never while
scoring: users scoring different benchmarks (or different picks) never wait on each other, and a pick asked
for while it is being computed waits for that one computation (a Future) instead of starting a second one.
"""

from __future__ import annotations

import logging
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
from db.browse import run_records, run_versions, runs_of_runner
from db.bulk import SERVER_NICE, ScoringPool, units_holding
from db.store import Store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ScoreOptions:
    """What a scoring depends on besides the runs: the split (None: every split), FrameEvidence's bootstrap
    clusterings (empty: score's defaults) and the items whose groups are set aside (reviewers' "gold is wrong",
    db.gold_reviews; empty: none)."""

    split: str | None = DEFAULT_SPLIT
    clusterings: tuple[Clustering, ...] = ()
    set_aside: frozenset[str] = frozenset()

    def score_kwargs(self) -> dict[str, Any]:
        out: dict[str, Any] = {"clusterings": self.clusterings} if self.clusterings else {}
        if self.set_aside:
            out["set_aside"] = self.set_aside
        return out


Unit = tuple[tuple[str, str], ...]  # (name, version) of each run of one db.bulk scoring unit
State = tuple[Unit, ...]
Key = tuple[str, tuple[str, ...], State, ScoreOptions]


def scoring_units(store: Store, benchmark: str, names: Sequence[str]) -> list[list[str]]:
    """The run names of each db.bulk scoring unit that holds one of `names` (what `score --all` loads with it)."""
    return [list(unit) for _, unit, _ in units_holding(store, benchmark, names)]


def runs_to_load(store: Store, benchmark: str, names: Sequence[str]) -> list[str]:
    """Every run of each db.bulk scoring unit that holds one of `names` (what `score --all` loads with it)."""
    return [n for unit in scoring_units(store, benchmark, names) for n in unit]


def depends_state(store: Store, benchmark: str, names: Sequence[str]) -> State:
    """The state every score of `names` depends on: each of their scoring units as (name, version) of its runs.
    The version (revision and updated time: db.browse.run_versions) is read once per store change."""
    units = scoring_units(store, benchmark, names)
    versions = run_versions(store, [n for unit in units for n in unit])
    return tuple(tuple((n, versions.get(n, "")) for n in unit) for unit in units)


def _by_run(state: State) -> dict[str, Unit]:
    return {n: unit for unit in state for n, _ in unit}


def _stale(old: State, now: dict[str, Unit]) -> bool:
    """Whether a unit of `old` is another in `now` (_by_run of a state read later): a run of it changed, or a
    run joined or left it."""
    return any(n in now and now[n] != unit for unit in old for n, _ in unit)


def score_runs(store: Store, benchmark: str, names: Sequence[str], options: ScoreOptions) -> dict[str, dict[str, Any]]:
    """{run: score_run result} of `names`, through the bulk path (no cache): on the server's scoring workers
    (db.bulk.ScoringPool) when the work is heavy, else here."""
    if not names:
        return {}
    return POOL.score(store, benchmark, names, options.split, **options.score_kwargs())


class ScoreCache:
    """Bulk scores per run (under the state of its unit) and per pick; at most `size` picks and 8 x `size` runs."""

    def __init__(self, size: int = 32, scorer: Callable[..., dict[str, dict[str, Any]]] = score_runs) -> None:
        self.size = size
        self.scorer = scorer  # score_runs; a test holds it at its start to watch the locking
        self._lock = threading.Lock()
        self._entries: OrderedDict[Key, Future[dict[str, dict[str, Any]]]] = OrderedDict()
        self._runs: OrderedDict[tuple[str, str, Unit, ScoreOptions], dict[str, Any]] = OrderedDict()
        self._derived: OrderedDict[tuple[str, Any, Any], Any] = OrderedDict()  # values built from scores (derive)
        self.computed = 0  # picks computed (tests and the bench read it)
        self.scored = 0  # runs scored (tests read it)

    def key(self, store: Store, benchmark: str, names: Sequence[str], options: ScoreOptions) -> Key:
        state = depends_state(store, benchmark, names)
        loaded = _by_run(state)
        # a run's scores do not depend on which runs are picked with it, nor their order: one key per set
        return benchmark, tuple(sorted({n for n in names if n in loaded})), state, options

    def scores(self, store: Store, benchmark: str, names: Sequence[str], options: ScoreOptions | None = None
               ) -> dict[str, dict[str, Any]]:
        """{run: score_run result} of the named runs of `benchmark` (names the benchmark lacks are left out)."""
        options = options or ScoreOptions()
        key = self.key(store, benchmark, names, options)
        future, owner = self._claim(key)
        if owner:
            try:
                future.set_result(self._compute(store, key))
            except BaseException as exc:
                with self._lock:  # a failed scoring is not kept: the next request tries again
                    if self._entries.get(key) is future:
                        del self._entries[key]
                future.set_exception(exc)
        return future.result()

    def _compute(self, store: Store, key: Key) -> dict[str, dict[str, Any]]:
        """The scores of a pick: each run's kept one (same unit state), the others scored together and kept."""
        benchmark, names, state, options = key
        unit_of = _by_run(state)
        got: dict[str, dict[str, Any]] = {}
        with self._lock:
            for n in names:
                hit = self._runs.get((benchmark, n, unit_of.get(n, ()), options))
                if hit is not None:
                    got[n] = hit
        todo = [n for n in names if n not in got]
        if todo:
            made = self.scorer(store, benchmark, todo, options)
            got.update(made)
            with self._lock:
                self.scored += len(made)
                for n, result in made.items():
                    self._runs[(benchmark, n, unit_of.get(n, ()), options)] = result
                while len(self._runs) > 8 * self.size:
                    self._runs.popitem(last=False)
        return {n: got[n] for n in names if n in got}

    def derive(self, store: Store, benchmark: str, tag: Any, build: Callable[[], Any],
               depends: Sequence[str] = ()) -> Any:
        """`build()`'s value, kept under (benchmark, the state of `depends`' scoring units, `tag`) and dropped when
        that state changes: what a caller makes from cached scores of the runs `depends` (the endpoint's JSON
        tables), made once per state. `tag` holds everything else the value depends on. Two callers may build
        the same value at once; the first kept wins; a failed build is not kept."""
        dkey = (benchmark, depends_state(store, benchmark, depends), tag)
        with self._lock:
            if dkey in self._derived:
                self._derived.move_to_end(dkey)
                return self._derived[dkey]
        value = build()
        with self._lock:
            now = _by_run(dkey[1])
            for old in [k for k in self._derived if k[0] == benchmark and k != dkey and _stale(k[1], now)]:
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
            now = _by_run(key[2])  # an entry of these runs in another state, or of the same pick and options, is old
            for old in [k for k in self._entries
                        if k[0] == key[0] and (_stale(k[2], now) or (k[1], k[3]) == (key[1], key[3]))]:
                del self._entries[old]  # scored on an older state of these runs
            for run_key in [k for k in self._runs if k[0] == key[0] and _stale((k[2],), now)]:
                del self._runs[run_key]
            future = self._entries[key] = Future()
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
            self.computed += 1
            return future, True


POOL = ScoringPool(nice=SERVER_NICE)  # started by the server (start_scoring_workers_soon) on a heavy store
CACHE = ScoreCache()
_STARTING: list[threading.Thread] = []  # the thread start_scoring_workers_soon started, once per process
_STARTING_LOCK = threading.Lock()


def start_scoring_workers(store: Store, pool: ScoringPool | None = None) -> None:
    """Start the Metrics tab's scoring workers (`pool`, default POOL) when a benchmark of the store is heavy
    enough to use them, and warm them on each such benchmark (db.bulk.ScoringPool.warm), so its first scoring
    waits neither for them nor for reading its items and drawing its resamples; a small store never starts
    them. Closes this thread's connection to `store` when done."""
    pool = POOL if pool is None else pool
    try:
        heavy = [b["name"] for b in store.benchmarks() if pool.wants(store, b["name"])]
        if heavy:
            pool.start()
            for name in heavy:  # each worker reads the items and draws the resample counts before any request
                pool.warm(store, name)
    except Exception:  # noqa: BLE001 - the tab then scores in the request's thread, as on a small store
        log.exception("could not start the scoring workers")
    finally:
        store.close()  # this thread's connection


def start_scoring_workers_soon(store: Store) -> threading.Thread:
    """start_scoring_workers in a background thread, once per process (a later call returns the first thread).
    `serve` calls it as soon as its store is open, before it imports gradio and builds the page (about 3 s on
    the 1,000-run store of bench/scale.py), so the workers' start (a forkserver importing the scoring modules,
    in a process of its own) and their warm-up overlap the server's start-up instead of following it, and the
    first Metrics finds them ready; ui.shell.launch calls it too, for a server started otherwise."""
    with _STARTING_LOCK:
        if not _STARTING:
            # the workers start beside gradio's import and the page's build, not after them
            thread = threading.Thread(target=start_scoring_workers, args=(store,), name="crosscheck-scoring-workers",
                                      daemon=True)
            thread.start()
            _STARTING.append(thread)
        return _STARTING[0]


def control_names(store: Store, benchmark: str, control_runner: str | None = None) -> list[str]:
    """The runs of `benchmark` scored beside the picked ones as control rows: those of `control_runner` (config
    `runner`; default: the family's `control_runner`)."""
    runner = control_runner if control_runner is not None else families.get(store.benchmark_family(benchmark)).control_runner
    return runs_of_runner(store, benchmark, runner) if runner else []


def run_scores(store: Store, benchmark: str, names: Sequence[str], clusterings: tuple[Clustering, ...] = (),
               split: str | None = DEFAULT_SPLIT, control_runner: str | None = None, cache: ScoreCache = CACHE,
               set_aside: frozenset[str] = frozenset()) -> tuple[str, list[RunScore], list[RunScore]]:
    """(family, the named runs' scores, control runs' scores): the runs of `control_runner` (config `runner`)
    are scored beside the named ones as control rows (default: the family's `control_runner`). Only
    the named runs and the controls are read (their units by db.bulk), never the benchmark's other runs.
    `set_aside`: item ids whose groups are left out (core.scoring.without_groups_of)."""
    family = store.benchmark_family(benchmark)
    clusters = families.get(family).capabilities.clusterings
    controls = control_names(store, benchmark, control_runner)
    meta = {r["name"]: r for r in run_records(store, benchmark, [*names, *controls])}
    names = [n for n in names if n in meta]
    options = ScoreOptions(split, clusterings if clusters else (), frozenset(set_aside))
    scores = cache.scores(store, benchmark, list(dict.fromkeys([*names, *controls])), options)

    def rs(name: str) -> RunScore:
        r = meta[name]
        return RunScore(name, scores[name]["metrics"], bool(r["synthetic"]), dict(r["config"] or {}), r["runner"],
                        scores[name].get("split", DEFAULT_SPLIT), scores[name].get("set_aside"))

    return family, [rs(n) for n in names if n in scores], [rs(n) for n in controls if n in scores]
