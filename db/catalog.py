"""What the UI's pickers list, as one short fingerprint: it changes exactly when a benchmark, a run (its name,
status, or whether it holds predictions yet), a judge run or a calibration sample is added or changes.

The UI keeps the fingerprint it last showed and re-reads its pickers when a fresh one differs (after an
import, a live run's start or end, a drawn sample), so nothing polls the store's contents. `runs_named` checks
the names an API call gives against the store; `split_counts` says what a runner can run on.
"""

from __future__ import annotations

import hashlib
from typing import Any

from core.errors import NotFound
from db import predictions
from db.store import Store


def catalog_signature(store: Store) -> str:
    """A hex digest of the benchmarks, runs and calibration samples the pickers offer."""
    conn = store.conn
    parts: list[str] = []
    with store.snapshot():  # one state of the store
        for name, n_items in conn.execute("SELECT name, n_items FROM benchmarks ORDER BY id"):
            parts.append(f"b:{name}:{n_items}")
        holding = predictions.runs_holding(store)
        for run_id, name, status in conn.execute("SELECT id, name, status FROM runs ORDER BY id"):
            parts.append(f"r:{name}:{status}:{int(run_id in holding)}")
        for name, n in conn.execute("SELECT name, COUNT(*) FROM calibration_samples GROUP BY name ORDER BY name"):
            parts.append(f"s:{name}:{n}")
    return hashlib.sha1("\n".join(parts).encode(), usedforsecurity=False).hexdigest()


_LISTED = 20  # run names an error lists


def runs_named(store: Store, benchmark: str, names: list[str]) -> list[dict[str, Any]]:
    """The run records of `names` (in that order) of `benchmark`, as Store.runs without counts. An unknown
    benchmark, or a name that is not a run of it, is NotFound naming it (and where such a run is, or the runs
    the benchmark has): what an API call is checked against, never a picker's choices. Only the named runs are
    read (the benchmark's others only for the error), so a check costs the same on a store of 1,000 runs."""
    store.benchmark(benchmark)  # NotFound naming the known benchmarks
    wanted = list(dict.fromkeys(names))
    mine = {r["name"]: r for r in store.runs(benchmark, names=wanted, with_counts=False)} if wanted else {}
    missing = [n for n in wanted if n not in mine]
    if missing:
        elsewhere = {r["name"]: r["benchmark"] for r in store.runs(names=missing, with_counts=False)}
        where = "; ".join(f"{n!r} is a run of benchmark {elsewhere[n]!r}" for n in missing if n in elsewhere)
        known = [r["name"] for r in store.runs(benchmark, with_counts=False)]
        listed = ", ".join(known[:_LISTED]) + (f", … ({len(known)} in all)" if len(known) > _LISTED else "")
        raise NotFound(f"no run named {', '.join(map(repr, missing))} in benchmark {benchmark!r} "
                       f"({where + '; ' if where else ''}runs: {listed or 'none'})")
    return [mine[n] for n in names]


def split_counts(store: Store, benchmark: str) -> dict[str, int]:
    """Items of `benchmark` per split (NotFound for an unknown benchmark)."""
    b = store.benchmark(benchmark)
    cur = store.conn.execute("SELECT split, COUNT(*) FROM items WHERE benchmark_id = ? GROUP BY split ORDER BY split",
                             (b["id"],))
    return {str(s): int(n) for s, n in cur}
