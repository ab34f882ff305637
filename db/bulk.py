"""Every metric of every run of one or more benchmarks, split over worker processes (`score --all`).

Scoring a whole store is CPU-bound Python and numpy work, one core per process. The runs are cut into units
that can be scored apart: a unit holds every run whose scores can depend on each other's predictions (the
partner metrics), and units are packed into one bin per worker by prediction count. StemBind and
FrameEvidence only ever pair runs of one model (config `model`: text-only, thinking and SSA partners; input
mode partners and seed siblings), so their units are (benchmark, model); SPUR's text-only shortcut filter reads
every text-only run of a benchmark (each text-only model's count), so a SPUR benchmark is one unit; the generic family pairs nothing, and
is one unit too. Each worker opens the store itself (no connection crosses a fork), loads its units with
db.frames and scores them with core.scoring.score_all, so every result equals `score --run NAME --json`'s
(tests/test_frames.py checks it).
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from core import families
from core.scoring import DEFAULT_SPLIT
from db.store import Store

log = logging.getLogger(__name__)

# A unit's weight for packing: per run, the benchmark's item count plus a fixed cost (a run's metric set costs
# about as much as reading 5,000 predictions, whatever its size).
RUN_WEIGHT = 5000
# Runs (whole units) one process loads and scores at a time: its memory holds a batch, not the store.
BATCH_RUNS = 32


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


def _one_blas_thread() -> Any:
    """A context in which BLAS runs on one thread: with one scoring process per CPU, BLAS's own threads (two
    per process here, spinning while they wait for work) would compete with the other processes for the same
    cores."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(1, user_api="blas")


def _child(path: str, work: list[tuple[str, list[str], int]], split: str | None, conn: Any) -> None:
    try:
        with _one_blas_thread():
            result = score_units(path, work, split)
        conn.send(("ok", result))
    except BaseException as exc:  # noqa: BLE001 - handed to the parent, which raises it
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def score_benchmarks(store: Store, benchmarks: Iterable[str] | None = None, jobs: int | None = None,
                     split: str | None = DEFAULT_SPLIT) -> dict[str, dict[str, dict[str, Any]]]:
    """{benchmark: {run: result}} for every run of `benchmarks` (default: all) on `split` (None: every split),
    on `jobs` processes
    (default: the CPUs this process may use; 1 = here, no worker). Results are ordered as the store lists
    benchmarks and runs."""
    work = units(store, benchmarks)
    bins = _bins(work, min(default_jobs() if jobs is None else jobs, len(work)))
    path = str(Path(store.path))
    if len(bins) <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        merged = score_units(store, work, split)
    else:
        import threadpoolctl  # noqa: F401 - imported once, before the fork, for _one_blas_thread

        for bench in dict.fromkeys(bench for bench, _, _ in work):  # the families' metric modules, before the fork
            families.get(store.benchmark(bench)["family"]).load()

        ctx = multiprocessing.get_context("fork")  # the parent's imports come along; no store connection is used
        children = []
        for b in bins[1:]:
            recv, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_child, args=(path, b, split, send), daemon=True)
            proc.start()
            send.close()
            children.append((proc, recv))
        with _one_blas_thread():
            merged = score_units(store, bins[0], split)
        for proc, recv in children:
            try:
                status, payload = recv.recv()
            except EOFError:
                proc.join()
                status, payload = "error", f"a scoring worker exited with code {proc.exitcode}"
            proc.join()
            if status != "ok":
                raise RuntimeError(f"scoring worker failed: {payload}")
            for bench, results in payload.items():
                merged.setdefault(bench, {}).update(results)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for bench in dict.fromkeys(bench for bench, _, _ in work):
        listed = [r["name"] for r in store.runs(bench, with_counts=False)]
        out[bench] = {n: merged[bench][n] for n in listed if n in merged.get(bench, {})}
    return out


# --------------------------------------------------------------------------- a pool for a long-lived server

POOL_MIN_WEIGHT = 200_000  # work lighter than this (unit weights) is scored in the calling thread
POOL_MAX_JOBS = 4  # workers at most: each keeps up to two resample count matrices (up to 256 MB each) while idle
POOL_RETRY_S = 60.0  # after workers failed to start, requests score in their own thread this long before a retry
# the scoring modules the forkserver imports once for every worker, with every family's (_preload: a family's
# members load on first use, core.families.protocol.deferred)
_PRELOAD = ["db.bulk", "db.frames", "core.scoring"]
def _preload() -> list[str]:
    """_PRELOAD and the modules of every known family's members."""
    return [*_PRELOAD, *(m for name in families.names() for m in families.get(name).modules())]


_WORKER_STORES: dict[str, Store] = {}  # per worker process: the store it opened, by path
_WORKER_WEIGHTS: dict[Any, Any] = {}  # per worker process: its resample count matrices (core.stats.DrawCache)
_WORKER_ITEMS: dict[Any, Any] = {}  # per worker process: the items frames it read (db.frames.load_for_scoring)
_WORKER_RUNS: dict[Any, Any] = {}  # per worker process: the runs it read, by version (db.frames.load_for_scoring)


def score_named(store: Store, benchmark: str, load: Sequence[str], names: Sequence[str],
                split: str | None = DEFAULT_SPLIT, context: Any = None, items_cache: dict[Any, Any] | None = None,
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


def _pool_worker_init() -> None:
    _one_blas_thread()  # not as a context: the limit holds for the worker's life


ORPHAN_CHECK_S = 1.0  # how often a worker checks that the process it works for is still there


def _pool_worker_start(owner: int, init: Any) -> None:
    """A worker's start: a daemon thread ends the worker once `owner` (the server that started it) is gone, then
    `init`. A server killed with SIGKILL (a supervisor's restart, the out-of-memory killer) runs no clean-up, and
    a ProcessPoolExecutor worker holds its own end of its task queue (so it never reads end-of-file) and the
    forkserver's alive pipe (so the forkserver never ends either): without this check each such kill left the
    forkserver and its workers running, about 0.8 GB at full scale (seen after bench/scale.py's server stopped)."""
    def watch() -> None:
        while True:
            time.sleep(ORPHAN_CHECK_S)
            try:
                os.kill(owner, 0)
            except OSError:  # no such process, or another user's process under the owner's old pid
                os._exit(0)

    threading.Thread(target=watch, name="cc-orphan-watch", daemon=True).start()
    init()


def _pool_ready() -> int:
    return os.getpid()


def _pool_held() -> tuple[int, int]:
    """(items frames, resample count matrices) this worker holds, once the warm-ups sent before have ended."""
    with _WARM_LOCK:
        running = list(_WARMING)
    for thread in running:
        thread.join()
    _adopt_warmed()
    return len(_WORKER_ITEMS), len(_WORKER_WEIGHTS)


WARM_NICE = 10  # the niceness of a worker's warm-up thread: the server's own threads come first
# Per worker process: the warm-ups, each as its thread and its own caches (items frames, resample counts): those
# running, and those ended whose caches no request has taken over yet. Guarded by _WARM_LOCK, which also guards
# _WORKER_STORES (a warm-up runs beside the worker's own thread).
_WARMING: dict[threading.Thread, tuple[dict[Any, Any], dict[Any, Any]]] = {}
_WARMED: list[tuple[dict[Any, Any], dict[Any, Any]]] = []
_WARM_LOCK = threading.Lock()


def _pool_warm(path: str, benchmark: str, load: list[str], names: list[str]) -> None:
    """`_pool_score` of `names` for what it leaves behind (the items frame, the resample counts), in a thread of
    this worker at niceness WARM_NICE (Linux sets it per thread), so the warm-up never takes a core from the
    server's threads. It returns at once: the worker's own thread, which serves requests at its own priority,
    never waits for it (a request would otherwise queue behind the whole warm-up, whose thread the machine's
    load may starve). The warm-up reads and draws into caches of its own, which requests take over
    (`_adopt_warmed`): whatever it has finished when a request starts, the rest once it has ended; a request
    needing something it has not finished reads or draws it itself."""
    items: dict[Any, Any] = {}
    weights: dict[Any, Any] = {}

    def warm() -> None:
        if sys.platform.startswith("linux"):  # elsewhere PRIO_PROCESS would take the thread id for a process id
            tid = threading.get_native_id()
            try:
                os.setpriority(os.PRIO_PROCESS, tid, max(WARM_NICE, os.getpriority(os.PRIO_PROCESS, tid)))
            except OSError:
                pass
        try:
            _pool_score(path, benchmark, load, names, DEFAULT_SPLIT, {}, (items, weights, {}))
        except Exception as exc:  # noqa: BLE001 - a warm-up only saves work: a request does it instead
            log.warning("warming a scoring worker failed: %s", exc)
        finally:
            with _WARM_LOCK:
                store = _WORKER_STORES.get(path)
                _WARMED.append(_WARMING.pop(threading.current_thread()))
            if store is not None:
                store.close()  # this thread's connection

    thread = threading.Thread(target=warm, name="crosscheck-warm", daemon=True)
    with _WARM_LOCK:
        _WARMING[thread] = (items, weights)
    thread.start()


def _adopt_warmed() -> None:
    """Take over, in the worker's own thread, the items frames and resample count matrices the warm-ups hold
    that the worker lacks: all of an ended warm-up's, and what a running one has finished (a cache holds an
    entry only once it is whole; both are only read from then on, so both threads may use it). The worker keeps
    at most DrawCache.SHARED_WEIGHTS count matrices, the latest taken over last."""
    from core.stats import DrawCache

    with _WARM_LOCK:
        ended, _WARMED[:] = list(_WARMED), []
        running = [(items.copy(), weights.copy()) for items, weights in _WARMING.values()]  # a copy is atomic
    for items, weights in [*ended, *running]:
        for key, value in items.items():
            _WORKER_ITEMS.setdefault(key, value)
        for key, value in weights.items():
            _WORKER_WEIGHTS.setdefault(key, value)
    while len(_WORKER_WEIGHTS) > DrawCache.SHARED_WEIGHTS:
        del _WORKER_WEIGHTS[next(iter(_WORKER_WEIGHTS))]


def _pool_score(path: str, benchmark: str, load: list[str], names: list[str], split: str | None,
                kw: dict[str, Any], caches: tuple[dict[Any, Any], dict[Any, Any], dict[Any, Any]] | None = None
                ) -> dict[str, dict[str, Any]]:
    """score_named in a worker, on its own store connection (one per thread), keeping the items frames, the
    resample count matrices and the runs it reads in `caches` (items, weights, runs; default the worker's own,
    after taking over what ended warm-ups left: `_adopt_warmed`)."""
    from core.stats import DrawCache, ScoringContext

    build = True  # a warm-up builds the W's it draws
    if caches is None:
        with _WARM_LOCK:  # a request made while a warm-up runs builds no W: it streams those it does not hold
            build = not _WARMING  # (read first: a warm-up ending now leaves its W's to _adopt_warmed below)
        _adopt_warmed()
        caches = (_WORKER_ITEMS, _WORKER_WEIGHTS, _WORKER_RUNS)
    items, weights, runs = caches
    with _WARM_LOCK:  # one Store per path (each thread has its own connection to it)
        store = _WORKER_STORES.get(path)
        if store is None:
            store = _WORKER_STORES[path] = Store(path)
    context = ScoringContext(draws=DrawCache(weights=weights, build=build))  # the W's outlive the request
    return score_named(store, benchmark, load, names, split, context=context, items_cache=items,
                       runs_cache=runs, **kw)


class ScoringPool:
    """Worker processes that score for a long-lived, threaded process (the UI server) as `score --all` does for
    the CLI: the db.bulk units holding the runs asked for are packed into one bin per worker, and each worker
    loads and scores its bin on its own connection, so every result equals `score --run NAME --json`'s.

    The workers come from a forkserver (a clean single-threaded process with the scoring modules imported; a
    plain fork would copy a server's threads' locks) and are kept between requests, one single-process executor
    each: bin i of every request goes to worker i, so a worker sees the same runs again and reads only those
    whose version changed (db.frames runs_cache). Work lighter than `min_weight`, or a single bin, is scored in
    the calling thread: a round trip would cost more than it saves. Thread safe: requests from several threads
    share the workers."""

    def __init__(self, jobs: int | None = None, min_weight: int = POOL_MIN_WEIGHT,
                 initializer: Any = None) -> None:
        self.jobs = min(default_jobs(), POOL_MAX_JOBS) if jobs is None else jobs
        self.min_weight = min_weight
        self.initializer = initializer or _pool_worker_init  # run in each worker as it starts
        self._lock = threading.Lock()
        self._executor: list[Any] | None = None  # one single-process executor per worker, once started
        self._failed_at: float | None = None  # when workers last failed to start (monotonic clock)
        self.used = 0  # requests scored on the workers (tests and the bench read it)
        self.start_failures = 0  # start-ups of workers that failed (tests read it)

    def _workers(self) -> list[Any]:
        with self._lock:
            if self._executor is None:
                from concurrent.futures import ProcessPoolExecutor
                from concurrent.futures.process import BrokenProcessPool

                if self._failed_at is not None and time.monotonic() - self._failed_at < POOL_RETRY_S:
                    # a request that waited on this lock while the start-up failed: no second start-up
                    raise BrokenProcessPool(f"scoring workers failed to start less than {POOL_RETRY_S:.0f} s ago")

                ctx = multiprocessing.get_context("forkserver")
                ctx.set_forkserver_preload(_preload())
                executors = [ProcessPoolExecutor(1, mp_context=ctx, initializer=_pool_worker_start,
                                                 initargs=(os.getpid(), self.initializer))
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
        """(items frames, resample count matrices) each worker holds, in worker order (none before they start);
        it waits for the work sent to each worker before, and for its warm-ups to end."""
        with self._lock:
            executors = list(self._executor or [])
        return [e.submit(_pool_held).result() for e in executors]

    def start(self) -> None:
        """Start the workers now (a server starting on a large store), so the first request does not wait."""
        if self.jobs > 1 and "forkserver" in multiprocessing.get_all_start_methods():
            self._workers()

    def warm(self, store: Store, benchmark: str) -> None:
        """Have every worker score the first run of `benchmark` in the background (nothing waits for it), at a
        low CPU priority (`_pool_warm`): each then holds the benchmark's items frame and its resample count
        matrices, so a server's first Metrics request reads and scores only its runs. A request arriving
        meanwhile never waits for it: each worker scores it at once, on its own (`_pool_warm`)."""
        work = units(store, [benchmark])[:1]
        if not work or self._executor is None:
            return
        _, load, _ = work[0]
        with self._lock:
            executors = list(self._executor or [])
        path = str(Path(store.path))
        for e in executors:
            e.submit(_pool_warm, path, benchmark, load, load[:1]).add_done_callback(_warmed)

    def wants(self, store: Store, benchmark: str) -> bool:
        """Whether scoring every run of `benchmark` is heavy enough for the workers."""
        return self.jobs > 1 and sum(w for _, _, w in units(store, [benchmark])) >= self.min_weight

    def score(self, store: Store, benchmark: str, names: Sequence[str], split: str | None = DEFAULT_SPLIT,
              **kw: Any) -> dict[str, dict[str, Any]]:
        """{run: score_run result} of `names` (runs of `benchmark`), in `names` order."""
        wanted = set(names)
        work = units_holding(store, benchmark, names)
        heavy = sum(w for _, _, w in work) >= self.min_weight
        bins = _bins(work, min(self.jobs, len(work)))
        failed = self._failed_at is not None and time.monotonic() - self._failed_at < POOL_RETRY_S
        if len(bins) <= 1 or not heavy or failed or "forkserver" not in multiprocessing.get_all_start_methods():
            return score_named(store, benchmark, [n for _, unit, _ in work for n in unit], names, split, **kw)
        from concurrent.futures import CancelledError
        from concurrent.futures.process import BrokenProcessPool

        executor = None
        try:
            executor = self._workers()
            merged = self._on_workers(executor, store, benchmark, bins, wanted, split, kw)
        except (BrokenProcessPool, CancelledError, RuntimeError) as exc:
            if not isinstance(exc, (BrokenProcessPool, CancelledError)) and "shutdown" not in str(exc):
                raise  # the scoring's own error (BrokenProcessPool is a RuntimeError too), as in this process
            # a worker died (killed, out of memory, or as it started), or another request shut that pool down:
            # fresh workers next
            log.warning("scoring workers failed (%s: %s); scoring %s in this process", type(exc).__name__, exc,
                        benchmark)
            self._drop(executor)
            return score_named(store, benchmark, [n for _, unit, _ in work for n in unit], names, split, **kw)
        return {n: merged[n] for n in names if n in merged}

    def _drop(self, executor: list[Any] | None) -> None:
        """Shut the workers `executor` down if they are still the pool's (another request may have started fresh
        ones)."""
        if executor is None:
            return
        with self._lock:
            if self._executor is executor:
                self._executor = None
        _shutdown(executor)

    def _on_workers(self, executor: list[Any], store: Store, benchmark: str,
                    bins: list[list[tuple[str, list[str], int]]], wanted: set[str], split: str | None,
                    kw: dict[str, Any]) -> dict[str, dict[str, Any]]:
        path = str(Path(store.path))
        futures = []
        for i, b in enumerate(bins):
            load = [n for _, unit, _ in b for n in unit]
            futures.append(executor[i % len(executor)].submit(_pool_score, path, benchmark, load,
                                                              [n for n in load if n in wanted], split, kw))
        merged: dict[str, dict[str, Any]] = {}
        for f in futures:
            merged.update(f.result())
        with self._lock:
            self.used += 1
        return merged

    def close(self, wait: bool = True) -> None:
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            _shutdown(executor, wait)


def _warmed(future: Any) -> None:
    if not future.cancelled() and future.exception() is not None:  # the first request then does the work itself
        log.warning("warming a scoring worker failed: %s", future.exception())


def _shutdown(executors: list[Any], wait: bool = False) -> None:
    for e in executors:
        e.shutdown(wait=wait, cancel_futures=True)
