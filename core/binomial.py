"""Exact binomial references (scipy.stats.binom, imported inside the functions): the expected rate,
interval and tail of uniform guessing. core.stats re-exports every name here."""

from __future__ import annotations

import numpy as np

from core.errors import MetricUndefined

# --------------------------------------------------------------------------- exact binomial references


def uniform_guess_rate(n_options: int = 4, joint: int = 1) -> float:
    """Expected rate under independent uniform guessing: (1 / n_options) ** joint (joint answers per unit)."""
    if n_options < 1 or joint < 1:
        raise ValueError("n_options and joint must be positive")
    return (1.0 / n_options) ** joint


def binom_distribution(n: int, p: float) -> np.ndarray:
    """Exact pmf of the number of successes in n independent trials: entry k is P(X = k)."""
    from scipy.stats import binom

    return binom.pmf(np.arange(n + 1), n, p)


def binom_expected_rate(n: int, p: float) -> float:
    """Expected rate X / n of a Binomial(n, p) count (= p for n > 0)."""
    if n <= 0:
        raise MetricUndefined("no trials")
    return float((np.arange(n + 1) * binom_distribution(n, p)).sum() / n)


def binom_interval(n: int, p: float, level: float = 0.95) -> tuple[float, float]:
    """Central interval of the rate X / n under Binomial(n, p), from exact quantiles (as rates)."""
    from scipy.stats import binom

    if n <= 0:
        raise MetricUndefined("no trials")
    lo, hi = binom.interval(level, n, p)
    return float(lo) / n, float(hi) / n


def binom_sf(k: int, n: int, p: float) -> float:
    """P(X >= k) under Binomial(n, p): how often pure guessing reaches k successes."""
    from scipy.stats import binom

    return float(binom.sf(k - 1, n, p))
