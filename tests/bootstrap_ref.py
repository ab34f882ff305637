"""An independent percentile cluster bootstrap, the reference of every interval test (issue 28 point 2).

It rebuilds core.stats' documented resample stream from the generator's raw output (per block of at most
`_BLOCK_CELLS` cells: the raw 64-bit words split into 32-bit halves, low half first, each mapped to
[0, n_clusters) by multiply-shift) and computes each draw's statistic by plain indexing of the per-cluster
arrays, so it shares no code with the bootstrap under test except the generator and numpy's percentile. A
draw whose statistic is undefined (0 / 0) is left out of the percentiles, as core.stats documents. Tests
compare intervals to these at full precision (== or rel=1e-12), never rounded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from core import stats


def drawn_indices(n_clusters: int, draws: int, seed: int | None) -> np.ndarray:
    """The drawn cluster indices (draws x n_clusters) of core.stats' documented stream."""
    rng = np.random.default_rng(seed)
    per_block = max(1, stats._BLOCK_CELLS // max(n_clusters, 1))
    rows, done = [], 0
    while done < draws:
        size = min(per_block, draws - done)
        cells = size * n_clusters
        raw = rng.bit_generator.random_raw((cells + 1) // 2)
        halves = np.column_stack([raw & np.uint64(0xFFFFFFFF), raw >> np.uint64(32)]).ravel()[:cells]
        rows.append(((halves * np.uint64(n_clusters)) >> np.uint64(32)).astype(np.int64).reshape(size, n_clusters))
        done += size
    return np.vstack(rows)


def percentile_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The percentile interval of the defined draws (NaN draws, 0 / 0, left out)."""
    kept = values[~np.isnan(values)]
    alpha = (1.0 - level) / 2.0
    lo, hi = np.percentile(kept, [100 * alpha, 100 * (1 - alpha)])
    return float(lo), float(hi)


def resampled(arrays: Sequence[np.ndarray], draws: int, seed: int | None) -> list[np.ndarray]:
    """Per array (clusters, or clusters x columns): its sum over each draw's clusters (draws, or draws x columns)."""
    arrays = [np.asarray(a, dtype=float) for a in arrays]
    idx = drawn_indices(arrays[0].shape[0], draws, seed)
    return [a[idx].sum(axis=1) for a in arrays]


def ratio_interval(k: Sequence[float], n: Sequence[float], draws: int = stats.DEFAULT_DRAWS,
                   seed: int | None = stats.DEFAULT_SEED, level: float = 0.95) -> tuple[float, float]:
    """Interval of sum(k) / sum(n) over the drawn clusters."""
    sk, sn = resampled([k, n], draws, seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        return percentile_interval(sk / sn, level)


def diff_interval(ka: Sequence[float], na: Sequence[float], kb: Sequence[float], nb: Sequence[float],
                  draws: int = stats.DEFAULT_DRAWS, seed: int | None = stats.DEFAULT_SEED,
                  level: float = 0.95) -> tuple[float, float]:
    """Interval of sum(ka) / sum(na) - sum(kb) / sum(nb), both over the same drawn clusters."""
    ska, sna, skb, snb = resampled([ka, na, kb, nb], draws, seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        return percentile_interval(ska / sna - skb / snb, level)


def statistic_interval(per_cluster: Sequence[np.ndarray], statistic: Callable[..., float],
                       draws: int, seed: int | None, level: float = 0.95) -> tuple[float, float]:
    """Interval of any statistic of the resampled clusters: `statistic(*[a[drawn] for a in per_cluster])`,
    one plain call per draw (a non-ratio statistic such as macro-F1)."""
    idx = drawn_indices(len(per_cluster[0]), draws, seed)
    values = np.array([statistic(*[np.asarray(a)[row] for a in per_cluster]) for row in idx], dtype=float)
    return percentile_interval(values, level)


def proportion_interval(k: int, n: int, draws: int = stats.DEFAULT_DRAWS, seed: int | None = stats.DEFAULT_SEED,
                        level: float = 0.95) -> tuple[float, float]:
    """stats.proportion_bootstrap's method on its own seeded stream: Binomial(n, k / n) successes / n."""
    values = np.random.default_rng(seed).binomial(n, k / n, size=draws) / n
    return percentile_interval(values, level)
