"""Bench: vectorised cluster bootstrap (core.stats) vs a plain per-draw Python loop, timed in one run.

20,000 draws over 96 groups for 4 joint metrics (one 0/1 outcome per group and metric, as FQ1-GEM, NTS,
DIS and a fourth joint rate). Both versions resample the same index matrix, so their intervals must agree.
Prints the timings and ends with one JSON line {"bench": "bootstrap", "value": speedup, "unit": "x",
"target": 20, "ok": ...}.

    .venv/bin/python bench/score_bootstrap.py
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core import stats  # noqa: E402

DRAWS = 20_000
GROUPS = 96
METRICS = 4
SEED = stats.DEFAULT_SEED
TARGET = 20.0


def make_data(seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """Per-group successes (groups x metrics) and denominators (one observation per group and metric)."""
    rng = np.random.default_rng(seed)
    k = (rng.random((GROUPS, METRICS)) < np.array([0.05, 0.15, 0.35, 0.45])).astype(float)
    return k, np.ones_like(k)


def _block_sizes(n_clusters: int, draws: int) -> list[int]:
    """Draws per block as core.stats takes them (the stream is consumed block by block)."""
    block = max(1, stats._BLOCK_CELLS // max(n_clusters, 1))
    return [min(block, draws - done) for done in range(0, draws, block)]


def loop_bootstrap(k: np.ndarray, n: np.ndarray, draws: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The plain version: one Python iteration per draw, resampling groups and summing each metric."""
    rng = np.random.default_rng(seed)
    index = np.vstack([stats.resample_indices(len(k), size, rng)  # the same random stream as core.stats
                       for size in _block_sizes(len(k), draws)])
    ratios = np.empty((draws, k.shape[1]))
    for d in range(draws):
        rows = index[d]
        for m in range(k.shape[1]):
            ratios[d, m] = k[rows, m].sum() / n[rows, m].sum()
    lo, hi = np.percentile(ratios, [2.5, 97.5], axis=0)
    return lo, hi


def interleaved_best(fast, slow, rounds: int = 3, fast_per_round: int = 5) -> tuple[float, float, object, object]:
    """Best wall time of each function, measured in alternating rounds so that both see the same load
    (the machine is shared); returns (fast time, slow time, fast result, slow result)."""
    t_fast = t_slow = float("inf")
    r_fast = r_slow = None
    for _ in range(rounds):
        start = time.perf_counter()
        r_slow = slow()
        t_slow = min(t_slow, time.perf_counter() - start)
        for _ in range(fast_per_round):
            start = time.perf_counter()
            r_fast = fast()
            t_fast = min(t_fast, time.perf_counter() - start)
    return t_fast, t_slow, r_fast, r_slow


def main() -> int:
    k, n = make_data()
    t_vec, t_loop, (lo_v, hi_v), (lo_l, hi_l) = interleaved_best(
        lambda: stats.cluster_bootstrap_many(k, n, draws=DRAWS, seed=SEED),
        lambda: loop_bootstrap(k, n, DRAWS, SEED))
    same = bool(np.allclose(lo_v, lo_l) and np.allclose(hi_v, hi_l))
    speedup = t_loop / t_vec
    print(f"{DRAWS} draws x {GROUPS} groups x {METRICS} metrics")
    print(f"vectorised: {t_vec * 1000:.1f} ms   per-draw loop: {t_loop * 1000:.1f} ms   speedup {speedup:.1f}x")
    print(f"intervals identical: {same}  lo={np.round(lo_v, 4).tolist()} hi={np.round(hi_v, 4).tolist()}")
    ok = same and speedup >= TARGET
    print(json.dumps({"bench": "bootstrap", "value": round(speedup, 1), "unit": "x", "target": TARGET, "ok": ok}))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
