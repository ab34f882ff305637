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

import multiprocessing
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from core.scoring import DEFAULT_SPLIT
from db.store import Store

BY_MODEL = frozenset({"stembind", "frameevidence"})
# A unit's weight for packing: per run, the benchmark's item count plus a fixed cost (a run's metric set costs
# about as much as reading 5,000 predictions, whatever its size).
RUN_WEIGHT = 5000


def units(store: Store, benchmarks: Iterable[str] | None = None) -> list[tuple[str, list[str], int]]:
    """(benchmark, run names, weight) of each unit, in benchmark and run creation order."""
    wanted = list(benchmarks) if benchmarks is not None else [b["name"] for b in store.benchmarks()]
    out: list[tuple[str, list[str], int]] = []
    for bench in wanted:
        b = store.benchmark(bench)  # an unknown name is an error here, not an empty result
        n_items = store.conn.execute("SELECT COUNT(*) FROM items WHERE benchmark_id = ?", (b["id"],)).fetchone()[0]
        groups: dict[Any, tuple[list[str], list[int]]] = {}
        for r in store.runs(bench, with_counts=False):  # counting predictions would scan them: items will do
            key = r["config"].get("model") if r["family"] in BY_MODEL else None
            names, counts = groups.setdefault(repr(key), ([], []))
            names.append(r["name"])
            counts.append(int(n_items) + RUN_WEIGHT)
        out.extend((bench, names, sum(counts)) for names, counts in groups.values())
    return out


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


def score_units(source: Store | str | os.PathLike[str], work: Sequence[tuple[str, list[str], int]],
                split: str | None = DEFAULT_SPLIT) -> dict[str, dict[str, dict[str, Any]]]:
    """{benchmark: {run: score_run result}} for the given units, in this process: on `source` when it is an
    open Store, else on a store opened here (a worker's own connection) and closed after."""
    from core.scoring import score_all
    from db.frames import load_for_scoring, score_extras

    own = not isinstance(source, Store)
    store: Store = source if isinstance(source, Store) else Store(source)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    together: dict[str, list[str]] = {}  # units of one benchmark are loaded and scored in one go (shared work)
    for bench, names, _ in work:
        together.setdefault(bench, []).extend(names)
    try:
        for bench, names in together.items():
            items, runs = load_for_scoring(store, bench, names=names)
            extras = {n: score_extras(store, n, r.family) for n, r in runs.items()}
            out.setdefault(bench, {}).update(score_all(items, runs, split=split, per_run=extras))
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
