"""Statistics used by every family, vectorised with numpy (SPEC §5 "Statistics").

- Percentile cluster bootstrap of ratio-of-sums rates (paper 000 App. A "GPT cross-run stability" and
  App. D: whole clusters resampled with replacement, 20,000 draws, item-weighted ratios, 95% percentile
  interval), for one rate, several rates at once, and the paired difference of two runs over the same
  resampled clusters.
- Cluster choices (paper 000 App. A "Same-order control", §6.3, App. D.6): groups, exact-image components
  (groups sharing an image, by content hash), scene clusters (groups sharing a value of named meta fields,
  default scene) and union components (groups linked by a shared image or such a value), as per-item cluster
  labels (core/clustering.py).
- Exact binomial references (scipy.stats.binom; core/binomial.py).
- Cohen's kappa and raw agreement, Spearman rho, mean +- sample SD, isotonic regression (core/agreement.py);
  the cluster-bootstrap interval of kappa (`cluster_bootstrap_kappa`) is a bootstrap and lives here.

The bootstrap lives here; the other three are modules of their own, and every name of theirs is importable
from here too (`stats.Clustering`, `stats.cohen_kappa`, ...), as before they moved.

Undefined values come back as None with a stated reason, never as a silent 0 (STYLE 5). scipy is imported
inside the functions that need it so that importing this module stays cheap.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.agreement import (
    cohen_kappa,
    isotonic_fit,
    mean_sd,
    raw_agreement,
    spearman,
)
from core.binomial import (
    binom_distribution,
    binom_expected_rate,
    binom_interval,
    binom_sf,
    uniform_guess_rate,
)
from core.clustering import (
    CLUSTERINGS,
    DEFAULT_UNION_FIELDS,
    FIELD_CLUSTERINGS,
    Clustering,
    UnknownClustering,
    cluster_labels,
)
from core.errors import MetricUndefined
from core.schema import DEFAULT_DRAWS, DEFAULT_SEED, Rate  # noqa: E402  (re-exported: the seed of paper 000's bootstrap)

_BLOCK_CELLS = 131_072  # draws x clusters cells per block: bounds memory and keeps the counts in cache


__all__ = [
    "CLUSTERINGS",
    "ClusterArrays",
    "Clustering",
    "DEFAULT_DRAWS",
    "DEFAULT_SEED",
    "DEFAULT_UNION_FIELDS",
    "DrawCache",
    "FIELD_CLUSTERINGS",
    "ScoringContext",
    "UnknownClustering",
    "binom_distribution",
    "binom_expected_rate",
    "binom_interval",
    "binom_sf",
    "bh_q",
    "bootstrap_p",
    "cluster_arrays",
    "cluster_bootstrap",
    "cluster_bootstrap_kappa",
    "cluster_bootstrap_diff",
    "cluster_bootstrap_many",
    "cluster_key",
    "cluster_labels",
    "cohen_kappa",
    "current_context",
    "isotonic_fit",
    "mean_sd",
    "proportion_bootstrap",
    "rate_with_ci",
    "raw_agreement",
    "resample_counts",
    "resample_indices",
    "spearman",
    "uniform_guess_rate",
]


# --------------------------------------------------------------------------- cluster bootstrap


@dataclass(slots=True)
class ClusterArrays:
    """Per-cluster success counts `k` and denominators `n` (clusters x metrics) and the cluster keys."""

    keys: list[Any]
    k: np.ndarray
    n: np.ndarray
    columns: list[str]

    def totals(self) -> tuple[np.ndarray, np.ndarray]:
        """Column sums of k and n (the point estimate is their ratio)."""
        return self.k.sum(axis=0), self.n.sum(axis=0)


def cluster_key(df: Any, by: str) -> Any:
    """The cluster column of `df`: a column name, or "meta.<field>" for a field of the `meta` dict column."""
    if by.startswith("meta."):
        field = by[len("meta."):]
        return df["meta"].map(lambda m: m.get(field) if isinstance(m, dict) else None)
    if by not in df.columns:
        raise MetricUndefined(f"no cluster column {by!r}")
    return df[by]


def cluster_arrays(df: Any, by: str, columns: Sequence[str]) -> ClusterArrays:
    """Per-cluster sums of each success column (bool or 0/1, NaN = not counted) and their non-NaN counts.

    Each row is one observation (an item, or a group for joint metrics); a row whose value in a column is
    NaN / None does not belong to that metric's denominator. Rows without a cluster value are refused
    (MetricUndefined) rather than dropped.
    """
    import pandas as pd

    keys = cluster_key(df, by)
    if keys.isna().any():
        raise MetricUndefined(f"{int(keys.isna().sum())} rows have no value for cluster {by!r}")
    values = pd.DataFrame({c: pd.to_numeric(df[c].astype("object"), errors="coerce") for c in columns},
                          index=df.index).astype(float)
    grouped = values.groupby(keys.to_numpy(), sort=True)
    sums = grouped.sum()
    n = grouped.count().to_numpy(dtype=float)
    return ClusterArrays(list(sums.index), sums.to_numpy(dtype=float), n, list(columns))


def resample_indices(n_clusters: int, draws: int, rng: np.random.Generator) -> np.ndarray:
    """Cluster indices drawn uniformly with replacement (draws x n_clusters), the random stream of every
    cluster bootstrap here: 32 random bits per index, taken in order from the generator's raw 64-bit output
    (low half first), mapped to [0, n_clusters) by multiply-shift (Lemire's method without its rejection
    step, so each index has probability within 2^-32 of 1 / n_clusters). About twice as fast as
    `Generator.integers`, which matters for the 20,000 x clusters draws of a large benchmark."""
    cells = draws * n_clusters
    bits = rng.bit_generator.random_raw((cells + 1) // 2).view(np.uint32)[:cells]
    idx = np.multiply(bits, np.uint64(n_clusters), dtype=np.uint64)
    idx >>= np.uint64(32)
    return idx.view(np.int64).reshape(draws, n_clusters)


def _index_blocks(n_clusters: int, draws: int, seed: int | None):
    """Yield the drawn cluster indices (resample_indices) in blocks of at most _BLOCK_CELLS cells: the one
    random stream of every bootstrap here, deterministic for (n_clusters, draws, seed)."""
    rng = np.random.default_rng(seed)
    block = max(1, _BLOCK_CELLS // max(n_clusters, 1))
    done = 0
    while done < draws:
        size = min(block, draws - done)
        yield resample_indices(n_clusters, size, rng)
        done += size


def _draw_blocks(n_clusters: int, draws: int, seed: int | None, as_float: bool = True):
    """Yield resample-count blocks (how often each cluster is drawn, draws x clusters) of the draws of
    `_index_blocks`: float counts, or the integer counts when `as_float` is False (the same draws)."""
    for idx in _index_blocks(n_clusters, draws, seed):
        size = idx.shape[0]
        idx += (np.arange(size, dtype=np.int64) * n_clusters)[:, None]
        counts = np.bincount(idx.ravel(), minlength=size * n_clusters).reshape(size, n_clusters)
        yield counts.astype(float) if as_float else counts


def _gathered_sums(columns: np.ndarray, draws: int, seed: int | None) -> np.ndarray:
    """W @ columns (draws x k) for integer columns (clusters x k), without building the counts W: each
    draw's sum is taken straight from its drawn indices (`_index_blocks`, so the very draws of W). Columns are
    packed side by side into int64 words, each in a field wide enough for its largest possible resampled sum
    (non-negative columns; a column with negative values takes a word of its own), so one gather and one row
    sum serve several columns. Integer arithmetic: the sums are exact, equal to the matmul's."""
    n_clusters, k = columns.shape
    ints = np.rint(columns).astype(np.int64)
    bound = n_clusters * np.abs(ints).max(axis=0, initial=0) + 1
    bits = np.ceil(np.log2(bound.astype(float) + 1)).astype(int)
    words: list[list[tuple[int, int]]] = []  # per word: (column, shift)
    used = 63
    for j in range(k):
        if (ints[:, j] < 0).any() or used + bits[j] > 63:
            words.append([])
            used = 0
        words[-1].append((j, used))
        used += int(bits[j]) if not (ints[:, j] < 0).any() else 63
    packed = [sum((ints[:, j] << shift for j, shift in word), np.zeros(n_clusters, dtype=np.int64))
              for word in words]
    out = np.empty((draws, k), dtype=float)
    done = 0
    for idx in _index_blocks(n_clusters, draws, seed):
        size = idx.shape[0]
        for word, values in zip(words, packed, strict=True):
            total = values.take(idx).sum(axis=1)
            for j, shift in word:
                out[done:done + size, j] = (total >> shift) & ((1 << int(bits[j])) - 1) if len(word) > 1 else total
        done += size
    return out


def _as_2d(a: Any) -> tuple[np.ndarray, bool]:
    arr = np.asarray(a, dtype=float)
    if arr.ndim == 1:
        return arr[:, None], True
    if arr.ndim != 2:
        raise ValueError("per-cluster arrays must be 1-D (clusters) or 2-D (clusters x metrics)")
    return arr, False


def _percentiles(stats: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval per column, ignoring draws where the ratio is undefined (NaN)."""
    alpha = (1.0 - level) / 2.0
    q = [100 * alpha, 100 * (1 - alpha)]
    with np.errstate(all="ignore"):
        if np.isnan(stats).any():
            lo, hi = np.nanpercentile(stats, q, axis=0)
        else:  # the same numbers, without nanpercentile's per-column NaN handling
            lo, hi = np.percentile(stats, q, axis=0)
    return lo, hi


def _bootstrap_stats(arrays: list[np.ndarray], combine, draws: int, seed: int | None) -> np.ndarray:
    """Resampled statistics: `combine(*[W @ a for a in arrays])` over all draws (draws x metrics).

    Inside an active ScoringContext the resampled sums come from its DrawCache (the same draws, the same
    numbers).
    """
    n_clusters = arrays[0].shape[0]
    if n_clusters == 0:
        raise MetricUndefined("no clusters to resample")
    context = current_context()
    cache = context.draws if context is not None else None
    if cache is not None and seed is not None:
        sums = cache.sums(arrays, draws, seed)
        if sums is not None:
            with np.errstate(invalid="ignore", divide="ignore"):
                return combine(*sums)
    out = []
    for weights in _draw_blocks(n_clusters, draws, seed):
        with np.errstate(invalid="ignore", divide="ignore"):
            out.append(combine(*[weights @ a for a in arrays]))
    return np.vstack(out)



# --------------------------------------------------------------------------- shared draws (many runs at once)


_EXACT_F32 = 2**24  # integers up to this magnitude are exact in float32, whatever the summation order
_GATHER_COLUMNS = 6  # at most this many columns are resampled from the drawn indices rather than through W


class DrawCache:
    """Resample counts and resampled column sums shared by every bootstrap of one ScoringContext.

    The resample counts W (draws x clusters) depend only on (clusters, draws, seed), so every rate bootstrapped
    over the same clusters with the same seed uses the same W. This cache keeps `W @ a` per distinct
    per-cluster column `a`, so a column used by several metrics or runs (a partner run's counts, the item counts
    per stem) is resampled once, and `prefetch` lets a caller resample many columns in one pass over W. The first
    pass streams W block by block (the same random stream as `_draw_blocks`), never holding it whole (20,000 x
    2,298 stems is 184 MB, whose allocation and page faults cost more than the products); a later pass over the
    same W builds it once and keeps it. W is in float32 and used only for columns of
    integers whose resampled sums stay below 2**24 (every count-based rate), where float32 sums are exact, so
    the numbers equal those of the block-wise path; other columns take that path. A W of more than `max_cells`
    cells is never built: its columns are summed straight from the drawn indices each time (`_gathered_sums`,
    exact integer sums), so a caller should `prefetch` them together.

    `weights` (a dict) shares the count matrices with other caches: a long-lived scoring worker keeps its W's
    from one request to the next (they depend only on clusters, draws and seed), so a W is built and kept the
    first time it is asked for, and each request starts with no resampled sums of its own.
    """

    SHARED_WEIGHTS = 2  # W's a shared `weights` dict keeps (the latest used)

    def __init__(self, max_cells: int = 64_000_000,
                 weights: dict[tuple[int, int, int], np.ndarray] | None = None) -> None:
        self.max_cells = max_cells
        self._shared = weights is not None
        self._weights: dict[tuple[int, int, int], np.ndarray] = weights if weights is not None else {}
        self._streamed: set[tuple[int, int, int]] = set()
        self._sums: dict[tuple[int, int, int, bytes], np.ndarray] = {}

    def weights(self, n_clusters: int, draws: int, seed: int) -> np.ndarray:
        key = (n_clusters, draws, seed)
        w = self._weights.get(key)
        if w is None:
            w = np.empty((draws, n_clusters), dtype=np.float32)
            done = 0
            for block in _draw_blocks(n_clusters, draws, seed, as_float=False):
                w[done:done + len(block)] = block  # integer counts, exact in float32
                done += len(block)
            if self._shared:
                while len(self._weights) >= self.SHARED_WEIGHTS:
                    del self._weights[next(iter(self._weights))]
            self._weights[key] = w
        elif self._shared:
            self._weights[key] = self._weights.pop(key)  # the latest used is kept longest
        return w

    def _usable(self, columns: np.ndarray, draws: int) -> bool:
        n_clusters = columns.shape[0]
        if not np.isfinite(columns).all():
            return False
        return bool(np.array_equal(columns, np.round(columns))
                    and n_clusters * float(np.abs(columns).max(initial=0.0)) < _EXACT_F32)

    def prefetch(self, columns: np.ndarray, draws: int, seed: int) -> None:
        """Resample the columns of `columns` (clusters x k) in one pass over W (ignored when not exact)."""
        columns = np.asarray(columns, dtype=float)
        if columns.ndim == 1:
            columns = columns[:, None]
        if columns.shape[0] and self._usable(columns, draws):
            self._fill(columns, draws, seed)

    def _fill(self, columns: np.ndarray, draws: int, seed: int) -> list[np.ndarray]:
        n_clusters = columns.shape[0]
        keys = [(n_clusters, draws, seed, np.ascontiguousarray(columns[:, j]).tobytes())
                for j in range(columns.shape[1])]
        missing = list(dict.fromkeys(j for j, key in enumerate(keys) if key not in self._sums))
        if missing:
            unique = {keys[j]: j for j in missing}
            block = np.ascontiguousarray(columns[:, list(unique.values())], dtype=np.float32)
            product = self._product(block, n_clusters, draws, seed)
            for i, key in enumerate(unique):
                self._sums[key] = product[:, i].astype(float)
        return [self._sums[key] for key in keys]

    def _product(self, block: np.ndarray, n_clusters: int, draws: int, seed: int) -> np.ndarray:
        """W @ block. A W already held is used, and a second request for the same W builds and keeps it (the
        draws are then generated once, not once per request). The first time a W is
        asked for, a few columns (at most _GATHER_COLUMNS) are summed straight from the drawn indices
        (`_gathered_sums`: no W is built, half the work of counting the draws); more columns are multiplied
        block by block as the draws come (W is never held whole: a bulk `prefetch` usually asks for every
        column there will be)."""
        key = (n_clusters, draws, seed)
        if n_clusters * draws > self.max_cells:  # a W over max_cells is never built: each pass gathers
            return _gathered_sums(block, draws, seed)
        if key in self._weights or key in self._streamed or self._shared:
            return self.weights(n_clusters, draws, seed) @ block
        self._streamed.add(key)
        if block.shape[1] <= _GATHER_COLUMNS:
            return _gathered_sums(block, draws, seed)
        product = np.empty((draws, block.shape[1]), dtype=np.float32)
        done = 0
        for counts in _draw_blocks(n_clusters, draws, seed, as_float=False):
            np.matmul(counts.astype(np.float32), block, out=product[done:done + len(counts)])
            done += len(counts)
        return product

    def sums(self, arrays: list[np.ndarray], draws: int, seed: int) -> list[np.ndarray] | None:
        """`[W @ a for a in arrays]` from the cache, or None when the columns are not exact in float32."""
        widths = [a.shape[1] for a in arrays]
        columns = np.hstack(arrays)
        if not self._usable(columns, draws):
            return None
        flat = self._fill(columns, draws, seed)
        out, start = [], 0
        for width in widths:
            out.append(np.column_stack(flat[start:start + width]))
            start += width
        return out


class ScoringContext:
    """The shared state of one scoring job, passed in explicitly (core.scoring.score_all / score_run
    `context=`): the memo of intermediate results (`memo`, filled by functions marked
    core.metrics.common.memoized: a run's item outcomes, a frame's groups) and the resample draws (`draws`, a
    DrawCache, keeping count matrices W of at most `max_cells` clusters x draws cells: 256 MB of float32 at the
    default). Results are identical with or without one; only the work is shared.

    Thread safety: `active()` binds the context to the running thread (a contextvars.ContextVar, so another
    thread, or another task, never sees it) while holding the context's lock, so one thread at a time scores
    with a given context and two contexts never share anything: two threads scoring two benchmarks each with
    its own context run side by side; two threads handed the same context take turns (the second then finds
    the first's work). A context keeps every memoized result and the arguments it was computed from (their
    identities key the memo) until `clear()` or until it is dropped: keep one per loaded set of frames (for
    example per benchmark, beside the frames), not one for the life of a process that reloads them.
    """

    def __init__(self, max_cells: int = 64_000_000, draws: DrawCache | None = None) -> None:
        self.max_cells = max_cells
        self.memo: dict[Any, Any] = {}
        self.draws = draws if draws is not None else DrawCache(max_cells)
        self._lock = threading.RLock()

    @contextmanager
    def active(self) -> Iterator[ScoringContext]:
        """Within the block, metric code in this thread works with this context (`current_context()`)."""
        with self._lock:
            token = _CURRENT.set(self)
            try:
                yield self
            finally:
                _CURRENT.reset(token)

    def clear(self) -> None:
        """Drop the memoized results and the draws (waits for a thread scoring with the context)."""
        with self._lock:
            self.memo.clear()
            self.draws = DrawCache(self.max_cells)


_CURRENT: ContextVar[ScoringContext | None] = ContextVar("crosscheck_scoring_context", default=None)


def current_context() -> ScoringContext | None:
    """The ScoringContext active in this thread (`ScoringContext.active()`), or None outside one."""
    return _CURRENT.get()


def proportion_bootstrap(k: int, n: int, draws: int = DEFAULT_DRAWS, seed: int | None = DEFAULT_SEED,
                         level: float = 0.95) -> tuple[float, float]:
    """Percentile cluster-bootstrap interval of k / n when each of the n clusters holds one 0/1 observation.

    Resampling n such clusters with replacement draws each one's outcome independently with P(1) = k / n, so
    the resampled successes are exactly Binomial(n, k / n): they are drawn as such (O(draws) work instead of
    O(draws x n)), a seeded stream of its own. Same distribution and percentiles as `cluster_bootstrap` on the
    n single-observation clusters; the draws themselves differ.
    """
    if n <= 0:
        raise MetricUndefined("no clusters to resample")
    rng = np.random.default_rng(seed)
    ratios = rng.binomial(int(n), k / n, size=draws) / n
    lo, hi = _percentiles(ratios[:, None], level)
    return float(lo[0]), float(hi[0])


def cluster_bootstrap_many(k_per_cluster: Any, n_per_cluster: Any, draws: int = DEFAULT_DRAWS,
                           seed: int | None = DEFAULT_SEED, level: float = 0.95
                           ) -> tuple[np.ndarray, np.ndarray]:
    """Percentile intervals for several ratio-of-sums rates sharing the same resampled clusters.

    `k_per_cluster` is clusters x metrics; `n_per_cluster` is clusters x metrics or clusters (one
    denominator for all metrics). Each draw resamples whole clusters with replacement and computes
    sum(k) / sum(n) over the drawn clusters (item-weighted ratio). Draws whose denominator is 0 are
    left out of the percentiles. Returns (lo, hi), one entry per metric.
    """
    k, _ = _as_2d(k_per_cluster)
    n, _ = _as_2d(n_per_cluster)
    if n.shape[1] == 1 and k.shape[1] > 1:
        n = np.repeat(n, k.shape[1], axis=1)
    if k.shape != n.shape:
        raise ValueError(f"k and n shapes differ: {k.shape} vs {n.shape}")
    stats = _bootstrap_stats([k, n], lambda kk, nn: kk / nn, draws, seed)
    return _percentiles(stats, level)


def cluster_bootstrap(k_per_cluster: Any, n_per_cluster: Any, draws: int = DEFAULT_DRAWS,
                      seed: int | None = DEFAULT_SEED, level: float = 0.95) -> tuple[float, float]:
    """Percentile cluster-bootstrap interval (lo, hi) of the rate sum(k) / sum(n)."""
    k = np.asarray(k_per_cluster, dtype=float).reshape(-1)
    n = np.asarray(n_per_cluster, dtype=float).reshape(-1)
    lo, hi = cluster_bootstrap_many(k, n, draws=draws, seed=seed, level=level)
    return float(lo[0]), float(hi[0])


def cluster_bootstrap_diff(k_a: Any, n_a: Any, k_b: Any, n_b: Any, draws: int = DEFAULT_DRAWS,
                           seed: int | None = DEFAULT_SEED, level: float = 0.95) -> tuple[Any, Any]:
    """Percentile interval of rate_a - rate_b, both runs resampled with the same clusters in each draw.

    Arrays are per cluster (1-D) or clusters x metrics (2-D), aligned on the same cluster order.
    Returns floats for 1-D input, arrays for 2-D input.
    """
    ka, one = _as_2d(k_a)
    na, _ = _as_2d(n_a)
    kb, _ = _as_2d(k_b)
    nb, _ = _as_2d(n_b)
    if not (ka.shape == na.shape == kb.shape == nb.shape):
        raise ValueError("paired arrays must have the same clusters x metrics shape")
    stats = _bootstrap_stats([ka, na, kb, nb], lambda a, b, c, d: a / b - c / d, draws, seed)
    lo, hi = _percentiles(stats, level)
    return (float(lo[0]), float(hi[0])) if one else (lo, hi)


def resampled_sums(columns: Any, draws: int = DEFAULT_DRAWS, seed: int | None = DEFAULT_SEED) -> np.ndarray:
    """W @ columns (draws x k) for per-cluster columns (clusters x k): the resampled sums behind every interval
    here, the same draws for the same (clusters, draws, seed); for statistics the functions above do not form
    (core.slices: a slice against the rest of its split, many slices at once)."""
    cols, _ = _as_2d(columns)
    return _bootstrap_stats([cols], lambda sums: sums, draws, seed)


def percentile_interval(stats: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Per column of resampled statistics (draws x k): the percentile interval, NaN draws left out."""
    return _percentiles(np.asarray(stats, dtype=float), level)


def resample_counts(n_clusters: int, draws: int, seed: int | None = DEFAULT_SEED) -> np.ndarray:
    """How often each cluster is drawn in each of the first `draws` draws (draws x clusters, int64): the very
    draws whose sums `resampled_sums` and every interval here take, for a statistic that must be recomputed on
    each resample rather than summed (core.failure_modes: a mode's stability under resampled groups)."""
    if n_clusters <= 0:
        raise MetricUndefined("no clusters to resample")
    return np.vstack(list(_draw_blocks(n_clusters, draws, seed, as_float=False)))


def bootstrap_p(diffs: np.ndarray) -> np.ndarray:
    """Two-sided bootstrap p-value of "no difference" per column of resampled differences (draws x k), NaN draws
    left out: p = min(1, 2 min((b_le + 1) / (B + 1), (b_ge + 1) / (B + 1))) over the B defined draws, b_le / b_ge
    the draws <= 0 / >= 0 (Davison & Hinkley 1997, §4.4: the +1 keeps p > 0 with finitely many draws); NaN for a
    column without a defined draw."""
    d = np.asarray(diffs, dtype=float)
    ok = ~np.isnan(d)
    b = ok.sum(axis=0)
    le = ((d <= 0) & ok).sum(axis=0)
    ge = ((d >= 0) & ok).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.minimum(1.0, 2 * np.minimum((le + 1) / (b + 1), (ge + 1) / (b + 1)))
    return np.where(b > 0, p, np.nan)


def bh_q(p: Sequence[float] | np.ndarray) -> list[float]:
    """Benjamini-Hochberg (1995) adjusted p-values: q_(i) = min_{j >= i} p_(j) m / j, capped at 1. Written here
    because importing scipy.stats for it (false_discovery_control, which the tests compare with) costs 0.6 s a
    command."""
    ps = np.asarray(p, dtype=float)
    m = len(ps)
    if m == 0:
        return []
    order = np.argsort(ps, kind="stable")
    scaled = ps[order] * m / np.arange(1, m + 1)
    q = np.minimum.accumulate(scaled[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(q, 1.0)
    return [float(x) for x in out]


def rate_with_ci(k_per_cluster: Any, n_per_cluster: Any, what: str = "items", draws: int = DEFAULT_DRAWS,
                 seed: int | None = DEFAULT_SEED, level: float = 0.95) -> Rate:
    """Rate.of(sum k, sum n) with its percentile cluster-bootstrap interval in `ci`."""
    k = np.asarray(k_per_cluster, dtype=float)
    n = np.asarray(n_per_cluster, dtype=float)
    rate = Rate.of(int(round(k.sum())), int(round(n.sum())), what)
    if rate.value is not None:
        rate.ci = cluster_bootstrap(k, n, draws=draws, seed=seed, level=level)
    return rate


KAPPA_PRIOR = 0.5  # Jeffreys' prior on the labels' table: half a pair in each cell


def cluster_bootstrap_kappa(a: Sequence[Any], b: Sequence[Any], clusters: Sequence[Any],
                            draws: int = DEFAULT_DRAWS, seed: int | None = DEFAULT_SEED,
                            level: float = 0.95) -> tuple[float, float] | None:
    """Interval of Cohen's kappa that keeps its coverage with few labels and a lopsided prevalence: the
    percentile cluster bootstrap with Jeffreys' prior on the labels' table. Each draw's table is the resampled
    one (whole clusters, e.g. the traces of one item, with replacement: the same seeded draws W as every other
    interval) plus, in every cell, a Gamma(KAPPA_PRIOR) pseudo-count (the prior's half a pair, drawn from a
    seeded stream of its own, `kappa_prior`); the interval is the percentiles of those draws' kappas, stretched
    to hold the estimate (an estimate of 1 from a sample without a disagreement would otherwise lie above it).

    Why the prior: a resample never holds a disagreement the sample lacks, so the plain percentile interval is
    far too narrow when one label is rare (its 95% interval held the true kappa 0.6 in 76% of samples of n = 30
    at prevalence 0.9, 33% at n = 20 and 0.95); with the prior, in at least 93.8% over n 10-200, prevalence
    0.5-0.95 and kappa 0-0.9 (bench/kappa_coverage.py, docs/METRICS.md "Kappa interval coverage"). None when
    there are no pairs or the kappa itself is undefined (both labelers use one and the same label only)."""
    if len(a) != len(b) or len(a) != len(clusters):
        raise ValueError("labels and clusters must have one entry per pair")
    if not len(a) or cohen_kappa(a, b)[0] is None:
        return None
    estimate = float(cohen_kappa(a, b)[0])  # type: ignore[arg-type]
    labels = sorted(set(a) | set(b), key=repr)
    m = len(labels)
    index = {label: i for i, label in enumerate(labels)}
    _, code = np.unique(np.asarray([str(c) for c in clusters], dtype=object), return_inverse=True)
    cells = np.zeros((int(code.max()) + 1, m * m))
    cell = np.fromiter((index[x] * m + index[y] for x, y in zip(a, b, strict=True)), dtype=np.int64, count=len(a))
    np.add.at(cells, (code, cell), 1.0)
    tables = resampled_sums(cells, draws=draws, seed=seed) + kappa_prior(draws, m * m, seed)
    lo, hi = _percentiles(_kappa_of_tables(tables, m)[:, None], level)
    return min(float(lo[0]), estimate), max(float(hi[0]), estimate)


def kappa_prior(draws: int, cells: int, seed: int | None = DEFAULT_SEED) -> np.ndarray:
    """The prior's pseudo-counts of `cluster_bootstrap_kappa` (draws x cells, Gamma(KAPPA_PRIOR) each), from the
    seeded stream [seed, 1] (the resample draws W come from the stream of `seed` itself)."""
    rng = np.random.default_rng(None if seed is None else [seed, 1])
    return rng.gamma(KAPPA_PRIOR, size=(draws, cells))


def _kappa_of_tables(tables: np.ndarray, m: int) -> np.ndarray:
    """Cohen's kappa of each row of flattened m x m tables (rater a's label by row); NaN where undefined."""
    table = tables.reshape(-1, m, m)
    n = table.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        p_o = np.trace(table, axis1=1, axis2=2) / n
        p_e = np.einsum("di,di->d", table.sum(axis=2), table.sum(axis=1)) / n**2
        out = (p_o - p_e) / (1.0 - p_e)
    out[np.isclose(p_e, 1.0)] = np.nan
    return out
