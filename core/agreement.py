"""Agreement and correlation: Cohen's kappa and raw agreement, Spearman rho, mean +- sample SD, isotonic
regression. Undefined values come back as None with a stated reason, never as a silent 0 (STYLE 5).
core.stats re-exports every name here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from core.schema import Rate

# --------------------------------------------------------------------------- agreement and correlation


def raw_agreement(a: Sequence[Any], b: Sequence[Any]) -> Rate:
    """Share of positions where the two label sequences agree (k agreeing / n pairs)."""
    if len(a) != len(b):
        raise ValueError(f"label sequences differ in length: {len(a)} vs {len(b)}")
    k = sum(1 for x, y in zip(a, b, strict=True) if x == y)
    return Rate.of(k, len(a), "paired labels")


def cohen_kappa(a: Sequence[Any], b: Sequence[Any]) -> tuple[float | None, str | None]:
    """Cohen's kappa of two raters (unweighted), equal to sklearn.metrics.cohen_kappa_score.

    kappa = (p_o - p_e) / (1 - p_e) with p_o the observed agreement and p_e the agreement expected from
    the two raters' marginal label shares. Returns (None, reason) when there are no pairs or p_e = 1
    (both raters use one and the same class only).
    """
    if len(a) != len(b):
        raise ValueError(f"label sequences differ in length: {len(a)} vs {len(b)}")
    n = len(a)
    if n == 0:
        return None, "no paired labels"
    labels = sorted(set(a) | set(b), key=repr)
    index = {label: i for i, label in enumerate(labels)}
    ia = np.fromiter((index[x] for x in a), dtype=int, count=n)
    ib = np.fromiter((index[x] for x in b), dtype=int, count=n)
    table = np.zeros((len(labels), len(labels)))
    np.add.at(table, (ia, ib), 1.0)
    p_o = np.trace(table) / n
    p_e = float(table.sum(axis=1) @ table.sum(axis=0)) / n**2
    if np.isclose(p_e, 1.0):
        return None, "expected agreement is 1: both raters use a single class only"
    return float((p_o - p_e) / (1.0 - p_e)), None


def spearman(x: Sequence[float], y: Sequence[float]) -> tuple[float | None, str | None]:
    """Spearman rho (average ranks for ties), equal to scipy.stats.spearmanr; (None, reason) if undefined."""
    xa = np.asarray(x, dtype=float)
    ya = np.asarray(y, dtype=float)
    if xa.shape != ya.shape or xa.ndim != 1:
        raise ValueError("x and y must be 1-D sequences of the same length")
    if len(xa) < 2:
        return None, "fewer than 2 paired values"
    if np.isnan(xa).any() or np.isnan(ya).any():
        return None, "input contains NaN"
    if np.all(xa == xa[0]) or np.all(ya == ya[0]):
        return None, "constant input: rank correlation undefined"
    from scipy.stats import spearmanr

    return float(spearmanr(xa, ya).statistic), None


def mean_sd(values: Sequence[float]) -> tuple[float | None, float | None, str | None]:
    """Mean and sample standard deviation (ddof = 1); the SD is None with a reason below 2 values."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return None, None, "no values"
    if arr.size == 1:
        return float(arr[0]), None, "fewer than 2 values: sample SD undefined"
    return float(arr.mean()), float(arr.std(ddof=1)), None


def isotonic_fit(x: Sequence[float], y: Sequence[float], sample_weight: Sequence[float] | None = None
                 ) -> np.ndarray:
    """Increasing isotonic regression of y on x; fitted values at x, equal to sklearn's
    `IsotonicRegression(increasing=True, out_of_bounds="clip").fit_transform`.

    The same steps as sklearn, without importing it (about 1 s, once per scoring process): points of zero
    weight are left out of the fit, points of one x pool into their weighted mean y (weights summed), the
    pooled points are fitted by scipy.optimize.isotonic_regression (pool adjacent violators: what sklearn
    calls), and every x reads the fit by linear interpolation between the pooled x (constant beyond them).
    """
    from scipy.optimize import isotonic_regression

    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    w = np.ones_like(ys) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    if not (xs.shape == ys.shape == w.shape) or xs.ndim != 1:
        raise ValueError("x, y and sample_weight must be 1-D sequences of the same length")
    keep = w > 0
    if not keep.any():
        raise ValueError("isotonic regression needs at least one point of positive weight")
    order = np.lexsort((ys[keep], xs[keep]))
    xk, yk, wk = xs[keep][order], ys[keep][order], w[keep][order]
    ux, at = np.unique(xk, return_inverse=True)
    weights = np.bincount(at, weights=wk, minlength=len(ux))
    means = np.bincount(at, weights=yk * wk, minlength=len(ux)) / weights
    fitted = np.asarray(isotonic_regression(means, weights=weights, increasing=True).x, dtype=float)
    return np.interp(xs, ux, fitted)
