"""Every metric of every run of one or more benchmarks, spread over the scoring worker processes (`ScoringPool`):
`score --all` (`score_benchmarks`) and the UI server's Metrics (ui/scores.py) score through the same pool.

Scoring a whole store is CPU-bound Python and numpy work, one core per process. The runs are cut into units
that can be scored apart: a unit holds every run whose scores can depend on each other's predictions (the
partner metrics), and units are packed into one bin per worker by prediction count. StemBind and
FrameEvidence only ever pair runs of one model (config `model`: text-only, thinking and SSA partners; input
mode partners and seed siblings), so their units are (benchmark, model); SPUR's text-only shortcut filter reads
every text-only run of a benchmark (each text-only model's count), so a SPUR benchmark is one unit; the generic
family pairs nothing, and is one unit too. Each worker opens the store itself, loads its units with db.frames and
scores them with core.scoring.score_all, so every result equals `score --run NAME --json`'s (tests/test_frames.py
and tests/test_scoring_pool.py check it).
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core import families
from core.scoring import DEFAULT_SPLIT
from db.store import Store

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

    from threadpoolctl import threadpool_limits

    from core.stats import ScoringContext

log = logging.getLogger(__name__)

# A unit's weight for packing: per run, the benchmark's item count plus a fixed cost (a run's metric set costs
# about as much as reading 5,000 predictions, whatever its size).
RUN_WEIGHT = 5000
# Runs (whole units) one process loads and scores at a time: its memory holds a batch, not the store.
BATCH_RUNS = 32
# score --all starts workers only for work heavier than this (about 100 runs of a 20,000-item benchmark): their
# start costs more than they save below it (44 runs: 2.0 s in one process, 2.5-2.7 s on two workers; 1,000 runs:
# 24-30 s in one process, 15-23 s on two)
ALL_MIN_WEIGHT = 2_500_000


def units(store: Store, benchmarks: Iterable[str] | None = None) -> list[tuple[str, list[str], int]]:
    """(benchmark, run names, weight) of each unit, in benchmark and run creation order."""
    wanted = list(benchmarks) if benchmarks is not None else [b["name"] for b in store.benchmarks()]
    out: list[tuple[str, list[str], int]] = []
    for bench in wanted:
        b = store.benchmark(bench)  # an unknown name is an error here, not an empty result
        n_items = store.conn.execute("SELECT COUNT(*) FROM items WHERE benchmark_id = ?", (b["id"],)).fetchone()[0]
        groups: dict[Any, tuple[list[str], list[int]]] = {}
        for r in store.runs(bench, with_counts=False):  # counting predictions would scan them: items will do
            key = r["config"].get("model") if families.get(r["family"]).units_by_model else None
            names, counts = groups.setdefault(repr(key), ([], []))
            names.append(r["name"])
            counts.append(int(n_items) + RUN_WEIGHT)
        out.extend((bench, names, sum(counts)) for names, counts in groups.values())
    return out


def units_holding(store: Store, benchmark: str, names: Iterable[str]) -> list[tuple[str, list[str], int]]:
    """The units of `benchmark` that hold one of `names`: every run whose metrics theirs can depend on, as
    `units` gives them. Where units are by model, only the named runs and the runs of their models are read
    (SQLite picks them by the config's model), so the Metrics tab's work does not grow with the other runs of
    the store."""
    wanted = set(names)
    b = store.benchmark(benchmark)
    picked = store.runs(benchmark, names=list(wanted), with_counts=False) if wanted else []
    models = [r["config"].get("model") for r in picked]
    plain = all(m is None or (isinstance(m, (str, int, float)) and not isinstance(m, bool)) for m in models)
    if not families.get(b["family"]).units_by_model or not plain:
        return [u for u in units(store, [benchmark]) if wanted & set(u[1])]
    given = [m for m in models if m is not None]
    model_sql = "json_extract(r.config, '$.model')"
    where = " OR ".join([f"{model_sql} IN ({','.join('?' * len(given))})"] * bool(given)
                        + [f"{model_sql} IS NULL"] * (None in models))
    n_items = store.conn.execute("SELECT COUNT(*) FROM items WHERE benchmark_id = ?", (b["id"],)).fetchone()[0]
    keys = {repr(m) for m in models}
    groups: dict[str, list[str]] = {}
    for name, config in store.conn.execute(  # a superset of the units' runs (1 and True match alike): keyed below
            f"SELECT r.name, r.config FROM runs r WHERE r.benchmark_id = ? AND ({where}) ORDER BY r.id",
            (b["id"], *given)) if picked else []:
        key = repr(json.loads(config).get("model"))
        if key in keys:
            groups.setdefault(key, []).append(str(name))
    return [(benchmark, group, len(group) * (int(n_items) + RUN_WEIGHT)) for group in groups.values()]


def _bins(work: list[tuple[str, list[str], int]], n: int) -> list[list[tuple[str, list[str], int]]]:
    """Longest first into the lightest bin; each bin keeps the original unit order."""
    bins: list[list[int]] = [[] for _ in range(max(1, n))]
    load = [0] * len(bins)
    for i in sorted(range(len(work)), key=lambda i: -work[i][2]):
        j = load.index(min(load))
        bins[j].append(i)
        load[j] += work[i][2] + 1
    return [[work[i] for i in sorted(b)] for b in bins if b]


def default_jobs() -> int:
    """The CPUs this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def batches(work: Sequence[tuple[str, list[str], int]], batch_runs: int = BATCH_RUNS) -> list[tuple[str, list[str]]]:
    """(benchmark, run names) of whole units, in order: each batch holds one benchmark's units until it has
    `batch_runs` runs or more (a unit is never split, so one unit larger than that is a batch of its own)."""
    out: list[tuple[str, list[str]]] = []
    for bench, names, _ in work:
        if out and out[-1][0] == bench and len(out[-1][1]) < batch_runs:
            out[-1][1].extend(names)
        else:
            out.append((bench, list(names)))
    return out


def score_units(source: Store | str | os.PathLike[str], work: Sequence[tuple[str, list[str], int]],
                split: str | None = DEFAULT_SPLIT, batch_runs: int = BATCH_RUNS) -> dict[str, dict[str, dict[str, Any]]]:
    """{benchmark: {run: score_run result}} for the given units, in this process: on `source` when it is an
    open Store, else on a store opened here (a worker's own connection) and closed after.

    The units are loaded and scored a batch at a time (`batches`), so memory holds one batch of runs, whatever
    the store holds; the items frames, the work that depends on the items alone (core.metrics.common.item_level:
    the same for every run of a benchmark) and the resample count matrices are kept from one batch to the next.
    Each unit holds every run its runs' metrics read, so the results equal scoring each run alone."""
    from core.metrics.common import item_level
    from core.stats import DrawCache, ScoringContext

    own = not isinstance(source, Store)
    store: Store = source if isinstance(source, Store) else Store(source)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    items_cache: dict[Any, Any] = {}
    weights: dict[Any, Any] = {}
    kept: dict[Any, Any] = {}  # the item-level memo of the benchmark scored last
    last = None
    try:
        for bench, names in batches(work, batch_runs):
            context = ScoringContext(draws=DrawCache(weights=weights))
            if bench == last:
                context.memo.update(kept)
            out.setdefault(bench, {}).update(score_named(store, bench, names, names, split, context=context,
                                                         items_cache=items_cache))
            kept, last = item_level(context.memo), bench
    finally:
        if own:
            store.close()
    return out


def _one_blas_thread() -> threadpool_limits:
    """A context in which BLAS runs on one thread: with one scoring process per CPU, BLAS's own threads (two
    per process here, spinning while they wait for work) would compete with the other processes for the same
    cores."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(1, user_api="blas")


def score_benchmarks(store: Store, benchmarks: Iterable[str] | None = None, jobs: int | None = None,
                     split: str | None = DEFAULT_SPLIT, min_weight: int = ALL_MIN_WEIGHT
                     ) -> dict[str, dict[str, dict[str, Any]]]:
    """{benchmark: {run: result}} for every run of `benchmarks` (default: all) on `split` (None: every split),
    on `jobs` worker processes of a ScoringPool (default: the CPUs this process may use; 1 = here, no worker)
    when the units weigh at least `min_weight`, else here. Results are ordered as the store lists benchmarks
    and runs. A worker's error fails the whole call."""
    work = units(store, benchmarks)
    jobs = min(default_jobs() if jobs is None else jobs, len(work))
    if jobs <= 1 or not _FORKSERVER or sum(w for _, _, w in work) < min_weight:
        merged = score_units(store, work, split)
    else:
        pool = ScoringPool(jobs)
        try:
            merged = pool.score_units(store, work, split)
        finally:
            pool.close()
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for bench in dict.fromkeys(bench for bench, _, _ in work):
        listed = [r["name"] for r in store.runs(bench, with_counts=False)]
        out[bench] = {n: merged[bench][n] for n in listed if n in merged.get(bench, {})}
    return out


def score_named(store: Store, benchmark: str, load: Sequence[str], names: Sequence[str],
                split: str | None = DEFAULT_SPLIT, context: ScoringContext | None = None, items_cache: dict[Any, Any] | None = None,
                runs_cache: dict[Any, Any] | None = None, **kw: Any) -> dict[str, dict[str, Any]]:
    """{run: score_run result} of `names`, with the runs of `load` (every run of their db.bulk units) loaded
    beside them; `kw` goes to score_all (clusterings). The scoring state is this call's own (`context`, a
    core.stats.ScoringContext; default a fresh one); `items_cache`, `runs_cache`: db.frames.load_for_scoring's."""
    from core.families.protocol import ScoreOptions
    from core.scoring import score_all
    from core.stats import ScoringContext
    from db.frames import load_for_scoring, score_extras

    items, runs = load_for_scoring(store, benchmark, names=list(load), items_cache=items_cache,
                                   runs_cache=runs_cache, traces="labels" in kw)
    per_run = {n: score_extras(store, n, runs[n].family) for n in names}
    return score_all(items, runs, names=list(names), options=ScoreOptions(split=split, **kw), per_run=per_run,
                     context=context if context is not None else ScoringContext())


# --------------------------------------------------------------------------- the scoring worker processes

POOL_MIN_WEIGHT = 200_000  # a server's request lighter than this (unit weights) is scored in its own thread
POOL_MAX_JOBS = 4  # a server's workers at most: each keeps up to two resample count matrices (up to 256 MB each)
POOL_RETRY_S = 60.0  # after workers failed to start, requests score in their own thread this long before a retry
ORPHAN_CHECK_S = 1.0  # how often a worker checks that the process it works for is still there
SERVER_NICE = 10  # a server's workers' niceness (ui/scores.py POOL): its own threads come first
_FORKSERVER = "forkserver" in multiprocessing.get_all_start_methods()  # where there is none, scoring stays here
# the scoring modules the forkserver imports once for every worker, with every family's (_preload: a family's
# members load on first use, core.families.protocol.deferred)
_PRELOAD = ["db.bulk", "db.frames", "core.scoring"]


def _preload() -> list[str]:
    """_PRELOAD and the modules of every known family's members."""
    return [*_PRELOAD, *(m for name in families.names() for m in families.get(name).modules())]


@dataclass
class _Kept:
    """What a worker process keeps from one task to the next, by store path: its Store (a connection), the items
    frames it read (db.frames.load_for_scoring `items_cache`: a benchmark's items never change), its resample
    count matrices (core.stats.DrawCache `weights`, the latest two) and the runs it read under their versions
    (`runs_cache`)."""

    stores: dict[str, Store] = field(default_factory=dict)
    items: dict[Any, Any] = field(default_factory=dict)
    weights: dict[Any, Any] = field(default_factory=dict)
    runs: dict[Any, Any] = field(default_factory=dict)

    def store(self, path: str) -> Store:
        if path not in self.stores:
            self.stores[path] = Store(path)
        return self.stores[path]


_KEPT = _Kept()  # in a worker process: what its tasks keep (the pool's own process never fills it)


def _pool_worker_init() -> None:
    _one_blas_thread()  # not as a context: the limit holds for the worker's life


def _pool_worker_start(owner: int, init: Callable[[], object], nice: int) -> None:
    """A worker's start: its niceness raised to `nice` (when more than its own), a daemon thread that ends the
    worker once `owner` (the process that started it) is gone, then `init`. A server killed with SIGKILL (a supervisor's restart, the out-of-memory killer) runs no clean-up,
    and a ProcessPoolExecutor worker holds its own end of its task queue (so it never reads end-of-file) and the
    forkserver's alive pipe (so the forkserver never ends either): without this watch each such kill left the
    forkserver and its workers running, about 0.8 GB at full scale."""
    def watch() -> None:
        while True:
            time.sleep(ORPHAN_CHECK_S)
            try:
                os.kill(owner, 0)
            except OSError:  # no such process, or another user's process under the owner's old pid
                os._exit(0)

    if nice > os.getpriority(os.PRIO_PROCESS, 0):
        os.setpriority(os.PRIO_PROCESS, 0, nice)  # this worker process only: the pool owns it
    threading.Thread(target=watch, name="cc-orphan-watch", daemon=True).start()  # correctness: no orphaned worker
    init()


def _pool_ready() -> int:
    return os.getpid()


def _pool_held() -> tuple[int, int]:
    """(items frames, resample count matrices) this worker holds."""
    return len(_KEPT.items), len(_KEPT.weights)


def _pool_score(path: str, benchmark: str, load: list[str], names: list[str], split: str | None,
                kw: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """score_named in a worker, on its own store connection, keeping the items frames, the resample count
    matrices and the runs it reads (_KEPT) for the tasks after it."""
    from core.stats import DrawCache, ScoringContext

    context = ScoringContext(draws=DrawCache(weights=_KEPT.weights))  # the W's outlive the task
    return score_named(_KEPT.store(path), benchmark, load, names, split, context=context, items_cache=_KEPT.items,
                       runs_cache=_KEPT.runs, **kw)


def _pool_units(path: str, work: list[tuple[str, list[str], int]], split: str | None
                ) -> dict[str, dict[str, dict[str, Any]]]:
    """score_units in a worker (`score --all`'s bin), on its own store connection."""
    return score_units(_KEPT.store(path), work, split)


class ScoringPool:
    """The scoring worker processes, for `score --all` (score_benchmarks: a pool for the command) and for a
    long-lived, threaded process (the UI server, ui/scores.py POOL). The db.bulk units are packed into one bin per
    worker, and each worker loads and scores its bin on its own connection, so every result equals
    `score --run NAME --json`'s; scoring is CPU-bound Python and numpy, one core per process.

    The workers come from a forkserver (a clean single-threaded process with the scoring modules imported; a
    plain fork would copy a server's threads' locks) and are kept between requests, one single-process executor
    each: bin i of every request goes to worker i, so a worker sees the same runs again and reads only those
    whose version changed (db.frames runs_cache). A server's request lighter than `min_weight`, or a single bin,
    is scored in the calling thread: a round trip would cost more than it saves. Thread safe: requests from
    several threads share the workers. `nice`: the workers' niceness (a server's: SERVER_NICE, so that their
    warm-up and scoring never take a core from its own threads; on an idle machine it changes nothing)."""

    def __init__(self, jobs: int | None = None, min_weight: int = POOL_MIN_WEIGHT,
                 initializer: Callable[[], object] | None = None, nice: int = 0) -> None:
        self.jobs = min(default_jobs(), POOL_MAX_JOBS) if jobs is None else jobs
        self.min_weight = min_weight
        self.nice = nice
        self.initializer = initializer or _pool_worker_init  # run in each worker as it starts
        self._lock = threading.Lock()
        self._executor: list[ProcessPoolExecutor] | None = None  # one single-process executor per worker, once started
        self._failed_at: float | None = None  # when workers last failed to start (monotonic clock)
        self.used = 0  # requests scored on the workers (tests and the bench read it)
        self.start_failures = 0  # start-ups of workers that failed (tests read it)

    def _workers(self) -> list[ProcessPoolExecutor]:
        with self._lock:
            if self._executor is None:
                from concurrent.futures import ProcessPoolExecutor
                from concurrent.futures.process import BrokenProcessPool

                if self._failed_at is not None and time.monotonic() - self._failed_at < POOL_RETRY_S:
                    # a request that waited on this lock while the start-up failed: no second start-up
                    raise BrokenProcessPool(f"scoring workers failed to start less than {POOL_RETRY_S:.0f} s ago")

                ctx = multiprocessing.get_context("forkserver")  # clean workers: a fork would copy threads' locks
                ctx.set_forkserver_preload(_preload())
                # one process each: bin i of every request goes to worker i (its kept items, W's and runs)
                executors = [ProcessPoolExecutor(1, mp_context=ctx, initializer=_pool_worker_start,
                                                 initargs=(os.getpid(), self.initializer, self.nice))
                             for _ in range(self.jobs)]
                try:
                    for f in [e.submit(_pool_ready) for e in executors]:
                        f.result()  # every worker started, its imports done
                except BaseException:
                    _shutdown(executors)  # a request after POOL_RETRY_S tries fresh workers
                    self._failed_at = time.monotonic()
                    self.start_failures += 1
                    raise
                self._executor = executors
                self._failed_at = None
            return self._executor

    def pids(self) -> list[int]:
        """The worker processes' ids, each as the worker reports it (none before the workers start)."""
        with self._lock:
            executors = list(self._executor or [])
        return [e.submit(_pool_ready).result() for e in executors]

    def held(self) -> list[tuple[int, int]]:
        """(items frames, resample count matrices) each worker holds, in worker order (none before they start),
        once the work sent to it before has ended."""
        with self._lock:
            executors = list(self._executor or [])
        return [e.submit(_pool_held).result() for e in executors]

    def start(self) -> None:
        """Start the workers now (a server starting on a large store), so the first request does not wait."""
        if self.jobs > 1 and _FORKSERVER:
            self._workers()

    def warm(self, store: Store, benchmark: str) -> None:
        """Have every worker score the first run of `benchmark` (nothing waits for it): each then holds the
        benchmark's items frame and its resample count matrices, so a server's first Metrics request reads and
        scores only its runs. A request sent meanwhile waits in each worker for the warm-up's end."""
        work = units(store, [benchmark])[:1]
        if not work or self._executor is None:
            return
        _, load, _ = work[0]
        with self._lock:
            executors = list(self._executor or [])
        path = str(Path(store.path))
        for e in executors:
            e.submit(_pool_score, path, benchmark, load, load[:1], DEFAULT_SPLIT, {}).add_done_callback(_warmed)

    def wants(self, store: Store, benchmark: str) -> bool:
        """Whether scoring every run of `benchmark` is heavy enough for the workers."""
        return self.jobs > 1 and sum(w for _, _, w in units(store, [benchmark])) >= self.min_weight

    def score(self, store: Store, benchmark: str, names: Sequence[str], split: str | None = DEFAULT_SPLIT,
              **kw: Any) -> dict[str, dict[str, Any]]:
        """{run: score_run result} of `names` (runs of `benchmark`), in `names` order. Workers that die or fail
        to start cost speed, never the answer: the request is scored in this thread."""
        wanted = set(names)
        work = units_holding(store, benchmark, names)
        heavy = sum(w for _, _, w in work) >= self.min_weight
        bins = _bins(work, min(self.jobs, len(work)))
        failed = self._failed_at is not None and time.monotonic() - self._failed_at < POOL_RETRY_S
        if len(bins) <= 1 or not heavy or failed or not _FORKSERVER:
            return score_named(store, benchmark, [n for _, unit, _ in work for n in unit], names, split, **kw)
        from concurrent.futures import CancelledError
        from concurrent.futures.process import BrokenProcessPool

        executor = None
        path = str(Path(store.path))
        try:
            executor = self._workers()
            futures = []
            for i, b in enumerate(bins):
                load = [n for _, unit, _ in b for n in unit]
                futures.append(executor[i % len(executor)].submit(_pool_score, path, benchmark, load,
                                                                  [n for n in load if n in wanted], split, kw))
            merged: dict[str, dict[str, Any]] = {}
            for f in futures:
                merged.update(f.result())
        except (BrokenProcessPool, CancelledError, RuntimeError) as exc:
            if not isinstance(exc, (BrokenProcessPool, CancelledError)) and "shutdown" not in str(exc):
                raise  # the scoring's own error (BrokenProcessPool is a RuntimeError too), as in this process
            # a worker died (killed, out of memory, or as it started), or another request shut that pool down:
            # fresh workers next
            log.warning("scoring workers failed (%s: %s); scoring %s in this process", type(exc).__name__, exc,
                        benchmark)
            self._drop(executor)
            return score_named(store, benchmark, [n for _, unit, _ in work for n in unit], names, split, **kw)
        with self._lock:
            self.used += 1
        return {n: merged[n] for n in names if n in merged}

    def score_units(self, store: Store, work: Sequence[tuple[str, list[str], int]], split: str | None
                    ) -> dict[str, dict[str, dict[str, Any]]]:
        """{benchmark: {run: result}} of the units `work` (`score --all`), one bin of units per worker, each
        scored a batch at a time (score_units). A worker's error, or its death, raises RuntimeError naming it."""
        path = str(Path(store.path))
        try:
            executor = self._workers()
            futures = [executor[i % len(executor)].submit(_pool_units, path, b, split)
                       for i, b in enumerate(_bins(list(work), self.jobs))]
            merged: dict[str, dict[str, dict[str, Any]]] = {}
            for f in futures:
                for bench, results in f.result().items():
                    merged.setdefault(bench, {}).update(results)
        except Exception as exc:  # noqa: BLE001 - raised again with what failed
            raise RuntimeError(f"scoring worker failed: {type(exc).__name__}: {exc}") from exc
        return merged

    def _drop(self, executor: list[ProcessPoolExecutor] | None) -> None:
        """Shut the workers `executor` down if they are still the pool's (another request may have started fresh
        ones)."""
        if executor is None:
            return
        with self._lock:
            if self._executor is executor:
                self._executor = None
        _shutdown(executor)

    def close(self, wait: bool = True) -> None:
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            _shutdown(executor, wait)


def _warmed(future: Future[dict[str, dict[str, Any]]]) -> None:
    if not future.cancelled() and future.exception() is not None:  # the first request then does the work itself
        log.warning("warming a scoring worker failed: %s", future.exception())


def _shutdown(executors: list[ProcessPoolExecutor], wait: bool = False) -> None:
    for e in executors:
        e.shutdown(wait=wait, cancel_futures=True)
