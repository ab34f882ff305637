"""core.stats against sklearn / scipy references and hand-checked degenerate cases."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from bootstrap_ref import (
    diff_interval,
    drawn_indices,
    percentile_interval,
    proportion_interval,
    ratio_interval,
    resampled,
)
from scipy.stats import binom, spearmanr
from sklearn.isotonic import IsotonicRegression
from sklearn.metrics import cohen_kappa_score

from core import stats
from core.errors import MetricUndefined

# --------------------------------------------------------------------------- agreement


@pytest.mark.parametrize("seed", range(20))
def test_cohen_kappa_matches_sklearn(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    n_classes = int(rng.integers(2, 5))
    a = rng.integers(0, n_classes, n).tolist()
    b = [x if rng.random() < 0.6 else int(rng.integers(0, n_classes)) for x in a]
    value, reason = stats.cohen_kappa(a, b)
    expected = cohen_kappa_score(a, b)
    if np.isnan(expected):
        assert value is None and reason
    else:
        assert reason is None
        assert value == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(("a", "b", "kappa"), [
    ([True, False, True, True], [True, False, False, True], 0.5),
    (["x", "y"], ["y", "x"], -1.0),
    ([1, 1, 0, 0], [1, 1, 0, 0], 1.0),
    ([1, 1, 1, 1], [1, 1, 1, 0], 0.0),  # one rater constant: p_e = p_o
])
def test_cohen_kappa_hand_values(a, b, kappa):
    assert stats.cohen_kappa(a, b) == (pytest.approx(kappa), None)


@pytest.mark.parametrize(("a", "b", "reason_part"), [
    ([], [], "no paired labels"),
    ([1, 1, 1], [1, 1, 1], "expected agreement is 1"),
    (["s"], ["s"], "expected agreement is 1"),
])
def test_cohen_kappa_degenerate(a, b, reason_part):
    value, reason = stats.cohen_kappa(a, b)
    assert value is None
    assert reason_part in reason


def test_cohen_kappa_takes_labels_of_mixed_types():
    """Labels are compared as values whatever their type (a missing label None beside strings, a number beside
    its text): the same kappa as the labels renamed to integers."""
    a, b = ["yes", None, "yes", "no", 1, "1"], ["yes", None, "no", "no", "1", "1"]
    code = {"yes": 0, None: 1, "no": 2, 1: 3, "1": 4}
    assert stats.cohen_kappa(a, b) == (pytest.approx(cohen_kappa_score([code[x] for x in a], [code[x] for x in b]),
                                                     abs=1e-12), None)


def test_cohen_kappa_length_mismatch():
    with pytest.raises(ValueError):
        stats.cohen_kappa([1, 0], [1])


@pytest.mark.parametrize(("a", "b", "k", "n"), [
    ([1, 0, 1], [1, 1, 1], 2, 3),
    (["A"], ["A"], 1, 1),
])
def test_raw_agreement(a, b, k, n):
    rate = stats.raw_agreement(a, b)
    assert (rate.k, rate.n) == (k, n)
    assert rate.value == pytest.approx(k / n)


def test_raw_agreement_empty_has_reason():
    rate = stats.raw_agreement([], [])
    assert rate.value is None and rate.reason


# --------------------------------------------------------------------------- correlation, mean, isotonic


@pytest.mark.parametrize("seed", range(15))
def test_spearman_matches_scipy(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(3, 40))
    x = rng.integers(0, 6, n).astype(float)  # ties on purpose
    y = x + rng.normal(0, 2, n)
    if np.all(x == x[0]):
        x[0] += 1
    value, reason = stats.spearman(x, y)
    assert reason is None
    assert value == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)


@pytest.mark.parametrize(("x", "y", "reason_part"), [
    ([], [], "fewer than 2"),
    ([1.0], [2.0], "fewer than 2"),
    ([1, 1, 1], [1, 2, 3], "constant"),
    ([1, 2, 3], [5, 5, 5], "constant"),
    ([1, 2, float("nan")], [1, 2, 3], "NaN"),
])
def test_spearman_degenerate(x, y, reason_part):
    value, reason = stats.spearman(x, y)
    assert value is None and reason_part in reason


@pytest.mark.parametrize(("values", "mean", "sd", "has_reason"), [
    ([36.00, 34.72, 37.50], 36.073333, 1.391450, False),
    ([1.0, 1.0], 1.0, 0.0, False),
    ([5.0], 5.0, None, True),
    ([], None, None, True),
])
def test_mean_sd(values, mean, sd, has_reason):
    m, s, reason = stats.mean_sd(values)
    assert (reason is not None) == has_reason
    assert m == (pytest.approx(mean, abs=1e-6) if mean is not None else None)
    assert s == (pytest.approx(sd, abs=1e-6) if sd is not None else None)


def test_mean_sd_is_sample_sd():
    values = [0.3576, 0.3472, 0.3750]
    assert stats.mean_sd(values)[1] == pytest.approx(np.std(values, ddof=1))


@pytest.mark.parametrize("seed", range(5))
def test_isotonic_matches_sklearn(seed):
    rng = np.random.default_rng(seed)
    x = np.arange(5, dtype=float)
    y = rng.random(5)
    w = rng.integers(1, 10, 5).astype(float)
    expected = IsotonicRegression(increasing=True).fit_transform(x, y, sample_weight=w)
    fitted = stats.isotonic_fit(x, y, w)
    np.testing.assert_allclose(fitted, expected)
    assert np.all(np.diff(fitted) >= -1e-12)


def test_isotonic_pools_violators():
    np.testing.assert_allclose(stats.isotonic_fit([0, 1, 2], [0.5, 0.3, 0.9]), [0.4, 0.4, 0.9])


@pytest.mark.parametrize(("seed", "n", "ties", "zeros"), [(0, 5, False, False), (1, 12, True, False),
                                                          (2, 12, True, True), (3, 40, True, True),
                                                          (4, 1, False, False), (5, 30, False, True)])
def test_isotonic_equals_sklearn_exactly(seed, n, ties, zeros):
    """The same numbers as sklearn, bit for bit: unsorted x, repeated x (pooled into a weighted mean) and
    zero weights (left out of the fit, read by interpolation, clipped beyond the fitted range)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, max(2, n // 3), n).astype(float) if ties else rng.permutation(n).astype(float)
    y = rng.random(n)
    w = rng.integers(0 if zeros else 1, 6, n).astype(float)
    if not (w > 0).any():
        w[0] = 1.0
    expected = IsotonicRegression(increasing=True, out_of_bounds="clip").fit_transform(x, y, sample_weight=w)
    np.testing.assert_array_equal(stats.isotonic_fit(x, y, w), expected)


def test_isotonic_refuses_bad_input():
    with pytest.raises(ValueError, match="same length"):
        stats.isotonic_fit([0, 1], [0.5])
    with pytest.raises(ValueError, match="positive weight"):
        stats.isotonic_fit([0, 1], [0.5, 0.2], [0, 0])


def test_agreement_reasons_and_refusals_are_the_documented_ones():
    """The exact reasons and messages (a report shows them), on the smallest input of each case."""
    length = r"^label sequences differ in length: 2 vs 1$"
    with pytest.raises(ValueError, match=length):
        stats.raw_agreement([1, 0], [1])
    with pytest.raises(ValueError, match=length):
        stats.cohen_kappa([1, 0], [1])
    assert stats.raw_agreement([], []).reason == "no paired labels to count"
    assert stats.cohen_kappa([], []) == (None, "no paired labels")
    assert stats.cohen_kappa([1], [1]) == (None, "expected agreement is 1: both raters use a single class only")
    assert stats.spearman([1.0], [2.0]) == (None, "fewer than 2 paired values")
    assert stats.spearman([1.0, float("nan")], [1.0, 2.0]) == (None, "input contains NaN")
    assert stats.spearman([1.0, 2.0], [1.0, float("nan")]) == (None, "input contains NaN")
    assert stats.spearman([1.0, None, 3.0], [1.0, 2.0, 3.0]) == (None, "input contains NaN")  # a missing value
    assert stats.spearman([1.0, 2.0, 3.0], [1.0, None, 3.0]) == (None, "input contains NaN")
    assert stats.spearman([3.0, 3.0], [1.0, 2.0]) == (None, "constant input: rank correlation undefined")
    assert stats.spearman([1.0, 2.0], [3.0, 3.0]) == (None, "constant input: rank correlation undefined")
    for x, y in (([1.0, 2.0], [1.0]), ([[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.0], [4.0, 3.0]])):
        with pytest.raises(ValueError, match=r"^x and y must be 1-D sequences of the same length$"):
            stats.spearman(x, y)
    assert stats.mean_sd([]) == (None, None, "no values")
    assert stats.mean_sd([2.5]) == (2.5, None, "fewer than 2 values: sample SD undefined")
    with pytest.raises(ValueError, match=r"^x, y and sample_weight must be 1-D sequences of the same length$"):
        stats.isotonic_fit([0, 1], [0.5])
    with pytest.raises(ValueError, match=r"^x, y and sample_weight must be 1-D sequences of the same length$"):
        stats.isotonic_fit([[0, 1]], [[0.5, 0.2]])
    with pytest.raises(ValueError, match=r"^x, y and sample_weight must be 1-D sequences of the same length$"):
        stats.isotonic_fit([0, 1], [0.5, 0.2], [1.0])
    with pytest.raises(ValueError, match=r"^isotonic regression needs at least one point of positive weight$"):
        stats.isotonic_fit([0, 1], [0.5, 0.2], [0, -1])


@pytest.mark.parametrize(("x", "y", "rho"), [
    ([1.0, 2.0], [1.0, 2.0], 1.0), ([1.0, 2.0], [2.0, 1.0], -1.0),  # two values: the smallest defined case
    ([1.0, 2.0, 3.0], [1.0, 3.0, 2.0], 0.5),
])
def test_spearman_hand_values(x, y, rho):
    assert stats.spearman(x, y) == (pytest.approx(rho, abs=1e-12), None)


@pytest.mark.parametrize(("x", "y", "w", "fitted"), [
    # a single point of positive weight: every x reads it (clipped on both sides)
    ([0.0, 1.0, 2.0], [0.2, 0.9, 0.4], [0.0, 1.0, 0.0], [0.9, 0.9, 0.9]),
    # one x twice pools into the weighted mean (0.2 * 1 + 0.8 * 3) / 4 = 0.65, whatever the rows' order
    ([1.0, 0.0, 1.0], [0.8, 0.1, 0.2], [3.0, 1.0, 1.0], [0.65, 0.1, 0.65]),
    # a violator pools with its weights: (0.9 * 1 + 0.3 * 3) / 4 = 0.45
    ([0.0, 1.0, 2.0], [0.9, 0.3, 1.0], [1.0, 3.0, 1.0], [0.45, 0.45, 1.0]),
    # zero weight between two points: read by interpolation, not fitted
    ([0.0, 1.0, 2.0], [0.2, 0.0, 0.6], [1.0, 0.0, 1.0], [0.2, 0.4, 0.6]),
])
def test_isotonic_hand_values(x, y, w, fitted):
    np.testing.assert_allclose(stats.isotonic_fit(x, y, w), fitted, rtol=0, atol=1e-15)


def test_isotonic_weights_default_to_one():
    np.testing.assert_array_equal(stats.isotonic_fit([0.0, 1.0, 1.0], [0.6, 0.1, 0.5]),
                                  stats.isotonic_fit([0.0, 1.0, 1.0], [0.6, 0.1, 0.5], [1.0, 1.0, 1.0]))
    np.testing.assert_allclose(stats.isotonic_fit([0.0, 1.0, 1.0], [0.6, 0.1, 0.5]), [0.4, 0.4, 0.4])


# --------------------------------------------------------------------------- binomial references


@pytest.mark.parametrize(("n_options", "joint", "expected"), [
    (4, 1, 0.25), (4, 2, 0.0625), (4, 3, 0.015625), (5, 1, 0.2),
])
def test_uniform_guess_rate(n_options, joint, expected):
    assert stats.uniform_guess_rate(n_options, joint) == pytest.approx(expected)


def test_binom_helpers():
    pmf = stats.binom_distribution(288, 0.25)
    assert pmf.sum() == pytest.approx(1.0)
    assert stats.binom_expected_rate(288, 0.25) == pytest.approx(0.25)
    lo, hi = stats.binom_interval(288, 0.25)
    qlo, qhi = binom.interval(0.95, 288, 0.25)
    assert (lo, hi) == (pytest.approx(qlo / 288), pytest.approx(qhi / 288))
    assert lo < 0.25 < hi
    assert stats.binom_sf(0, 10, 0.25) == pytest.approx(1.0)
    assert stats.binom_sf(10, 10, 0.25) == pytest.approx(0.25**10)


def test_binom_no_trials():
    with pytest.raises(MetricUndefined):
        stats.binom_expected_rate(0, 0.25)


@pytest.mark.parametrize(("n_options", "joint", "expected"), [
    # the edges: one option is always right, one joint answer per unit is the plain rate
    (1, 1, 1.0), (1, 5, 1.0), (2, 1, 0.5),
])
def test_uniform_guess_rate_edges(n_options, joint, expected):
    assert stats.uniform_guess_rate(n_options, joint) == expected


def test_uniform_guess_rate_defaults_to_one_answer_of_four_options():
    assert (stats.uniform_guess_rate(), stats.uniform_guess_rate(5), stats.uniform_guess_rate(joint=2)) == \
        (0.25, 0.2, 0.0625)


@pytest.mark.parametrize(("n_options", "joint"), [(0, 1), (4, 0), (-1, 1), (4, -2)])
def test_uniform_guess_rate_refuses_no_options_or_no_answers(n_options, joint):
    with pytest.raises(ValueError, match=r"^n_options and joint must be positive$"):
        stats.uniform_guess_rate(n_options, joint)


@pytest.mark.parametrize(("n", "p"), [(1, 0.3), (2, 0.25), (7, 0.5)])
def test_binom_references_at_small_n(n, p):
    """One to a few trials, each entry against scipy's own pmf (an entry too many or too few shows)."""
    pmf = stats.binom_distribution(n, p)
    assert pmf.shape == (n + 1,)
    assert list(pmf) == pytest.approx([binom.pmf(k, n, p) for k in range(n + 1)], rel=1e-12)
    assert stats.binom_expected_rate(n, p) == pytest.approx(p, rel=1e-12)
    assert stats.binom_sf(1, n, p) == pytest.approx(1 - (1 - p) ** n, rel=1e-12)
    assert stats.binom_sf(n, n, p) == pytest.approx(p**n, rel=1e-12)
    lo, hi = stats.binom_interval(n, p, level=0.5)
    qlo, qhi = binom.interval(0.5, n, p)
    assert (lo, hi) == (qlo / n, qhi / n)


def test_binom_interval_default_level_is_95():
    assert stats.binom_interval(40, 0.25) == tuple(q / 40 for q in binom.interval(0.95, 40, 0.25))
    assert stats.binom_interval(1, 0.5) == (0.0, 1.0)


@pytest.mark.parametrize("n", [0, -1])
def test_binom_no_trials_is_named(n):
    with pytest.raises(MetricUndefined, match=r"^no trials$"):
        stats.binom_expected_rate(n, 0.25)
    with pytest.raises(MetricUndefined, match=r"^no trials$"):
        stats.binom_interval(n, 0.25)


# --------------------------------------------------------------------------- cluster bootstrap


def _clusters(seed: int = 0, n_clusters: int = 48):
    rng = np.random.default_rng(seed)
    n = rng.integers(1, 7, n_clusters)
    k = rng.binomial(n, 0.4)
    return k, n


def test_bootstrap_contains_point_and_is_deterministic():
    k, n = _clusters()
    point = k.sum() / n.sum()
    lo, hi = stats.cluster_bootstrap(k, n, draws=5000, seed=7)
    assert 0 <= lo < point < hi <= 1
    assert stats.cluster_bootstrap(k, n, draws=5000, seed=7) == (lo, hi)
    assert stats.cluster_bootstrap(k, n, draws=5000, seed=8) != (lo, hi)


def test_bootstrap_matches_per_draw_loop():
    """The vectorised draws equal a plain loop over the same resampled index matrix."""
    k, n = _clusters(3)
    draws, seed = 2000, 11
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(k), size=(draws, len(k)))
    ratios = np.array([k[row].sum() / n[row].sum() for row in idx])
    expected = np.percentile(ratios, [2.5, 97.5])
    assert stats.cluster_bootstrap(k, n, draws=draws, seed=seed) == pytest.approx(tuple(expected))


def test_bootstrap_blocks_do_not_change_the_stream(monkeypatch):
    """Drawing in memory-bounded blocks gives the same interval as one block (same random stream)."""
    k, n = _clusters(4)
    whole = stats.cluster_bootstrap(k, n, draws=3000, seed=5)
    monkeypatch.setattr(stats, "_BLOCK_CELLS", 48 * 7)  # blocks of 7 draws
    assert stats.cluster_bootstrap(k, n, draws=3000, seed=5) == pytest.approx(whole)


def test_bootstrap_constant_rate_has_zero_width():
    k = np.array([2, 3, 1])
    assert stats.cluster_bootstrap(k, k, draws=500) == (1.0, 1.0)


def test_bootstrap_many_equals_single():
    k1, n = _clusters(5)
    k2 = np.minimum(n, k1 + 1)
    lo, hi = stats.cluster_bootstrap_many(np.column_stack([k1, k2]), n, draws=3000, seed=3)
    assert (lo[0], hi[0]) == pytest.approx(stats.cluster_bootstrap(k1, n, draws=3000, seed=3))
    assert (lo[1], hi[1]) == pytest.approx(stats.cluster_bootstrap(k2, n, draws=3000, seed=3))


def test_bootstrap_diff_uses_the_same_clusters():
    k, n = _clusters(6)
    # identical runs: every draw's difference is exactly 0
    assert stats.cluster_bootstrap_diff(k, n, k, n, draws=1000) == (0.0, 0.0)
    kb = np.maximum(0, k - 1)
    lo, hi = stats.cluster_bootstrap_diff(k, n, kb, n, draws=3000, seed=2)
    point = k.sum() / n.sum() - kb.sum() / n.sum()
    assert 0 < lo <= point <= hi


def test_bootstrap_diff_two_dimensional():
    k, n = _clusters(8)
    ka = np.column_stack([k, k])
    na = np.column_stack([n, n])
    lo, hi = stats.cluster_bootstrap_diff(ka, na, ka, na, draws=200)
    np.testing.assert_array_equal(lo, [0.0, 0.0])
    np.testing.assert_array_equal(hi, [0.0, 0.0])


def test_bootstrap_without_clusters():
    with pytest.raises(MetricUndefined):
        stats.cluster_bootstrap([], [])


def test_rate_with_ci():
    k, n = _clusters(9)
    rate = stats.rate_with_ci(k, n, draws=1000)
    assert (rate.k, rate.n) == (int(k.sum()), int(n.sum()))
    assert rate.ci[0] <= rate.value <= rate.ci[1]
    empty = stats.rate_with_ci([0], [0], draws=10)
    assert empty.value is None and empty.reason and empty.ci is None


def test_cluster_arrays_from_frame():
    df = pd.DataFrame({
        "group_id": ["g2", "g1", "g1", "g2", "g3"],
        "meta": [{"scene": "s1"}, {"scene": "s1"}, {"scene": "s1"}, {"scene": "s2"}, {"scene": "s2"}],
        "correct": [True, False, True, True, False],
        "joint": [1.0, None, None, 0.0, 1.0],
    })
    arrays = stats.cluster_arrays(df, "group_id", ["correct", "joint"])
    assert arrays.keys == ["g1", "g2", "g3"]
    np.testing.assert_array_equal(arrays.k, [[1, 0], [2, 1], [0, 1]])
    np.testing.assert_array_equal(arrays.n, [[2, 0], [2, 2], [1, 1]])
    by_scene = stats.cluster_arrays(df, "meta.scene", ["correct"])
    assert by_scene.keys == ["s1", "s2"]
    np.testing.assert_array_equal(by_scene.k[:, 0], [2, 1])
    k_tot, n_tot = arrays.totals()
    np.testing.assert_array_equal(k_tot, [3, 2])
    np.testing.assert_array_equal(n_tot, [5, 3])


def test_cluster_arrays_counts_a_text_cell_as_not_counted():
    """A success cell that is not a number (a text left in an object column) is NaN: outside that metric's
    denominator, like None, never an error."""
    df = pd.DataFrame({"group_id": ["g1", "g1", "g2", "g2"], "correct": pd.Series([True, "n/a", False, 1], dtype=object)})
    arrays = stats.cluster_arrays(df, "group_id", ["correct"])
    np.testing.assert_array_equal(arrays.k[:, 0], [1, 1])
    np.testing.assert_array_equal(arrays.n[:, 0], [1, 2])


def test_draw_cache_takes_only_columns_exact_in_float32():
    """The shared W (float32) serves a column only when clusters x its largest value stays below 2**24, the bound
    of the largest resampled sum (not columns x value): above it `sums` declines and the block-wise float64 path
    sums the draws."""
    bound = stats._EXACT_F32
    n_clusters = 2000
    over = np.full((n_clusters, 1), float(bound // n_clusters + 1))  # 2,000 x 8,389 > 2**24; 1 column x 8,389 is not
    under = np.random.default_rng(4).integers(0, bound // n_clusters, (n_clusters, 1)).astype(float)
    under[7] = bound // n_clusters - 1  # its largest value: clusters x it just under 2**24
    assert stats.DrawCache().sums([over], 20, 3) is None
    got = stats.DrawCache().sums([under], 20, 3)
    assert got is not None
    np.testing.assert_array_equal(got[0], np.vstack([w @ under for w in stats._draw_blocks(n_clusters, 20, 3)]))


def test_cluster_arrays_refuses_missing_cluster():
    df = pd.DataFrame({"meta": [{"scene": "s1"}, {}], "correct": [True, False]})
    with pytest.raises(MetricUndefined, match="1 rows"):
        stats.cluster_arrays(df, "meta.scene", ["correct"])


@pytest.mark.parametrize("n", [1, 2, 7, 96, 2298, 70_001])
def test_resample_indices_are_uniform_and_seeded(n):
    from scipy.stats import chisquare

    idx = stats.resample_indices(n, 20_000 // max(1, n // 50) + 1, np.random.default_rng(3))
    assert idx.dtype == np.int64 and idx.min() >= 0 and idx.max() < n
    again = stats.resample_indices(n, idx.shape[0], np.random.default_rng(3))
    assert np.array_equal(idx, again)
    if 1 < n <= 2298:
        counts = np.bincount(idx.ravel(), minlength=n)
        assert chisquare(counts).pvalue > 1e-4  # uniform over the clusters


@pytest.mark.parametrize(("n_clusters", "draws", "scale", "negative"), [
    (1, 50, 1, False), (7, 301, 3, False), (96, 2000, 7, False), (96, 2000, 7, True), (1678, 401, 1, False),
    (40, 500, 2**20, False),  # fields too wide to share a word: one column per word
])
def test_gathered_sums_equal_the_resample_counts_product(n_clusters, draws, scale, negative):
    """The resampled sums taken straight from the drawn indices equal W @ columns over the same draws."""
    rng = np.random.default_rng(n_clusters)
    columns = rng.integers(0, scale + 1, (n_clusters, 5)).astype(float)
    if negative:
        columns[:, 2] -= scale
    expected = np.vstack([w @ columns for w in stats._draw_blocks(n_clusters, draws, 9)])
    np.testing.assert_array_equal(stats._gathered_sums(columns, draws, 9), expected)


def test_draw_caches_sharing_weights_give_the_same_sums_and_keep_the_latest():
    """A scoring worker's DrawCaches share their W's across requests (core.stats.DrawCache `weights`): each
    request's sums equal a fresh cache's, the W is built on the first request and reused by the next, and the
    shared dict keeps only the latest SHARED_WEIGHTS of them."""
    rng = np.random.default_rng(5)
    shared: dict = {}
    for n_clusters in (40, 41, 40, 42):
        columns = rng.integers(0, 4, (n_clusters, 3)).astype(float)
        fresh = stats.DrawCache().sums([columns], 500, 11)[0]
        before = shared.get((n_clusters, 500, 11))
        got = stats.DrawCache(weights=shared).sums([columns], 500, 11)[0]
        np.testing.assert_array_equal(got, fresh)
        assert (n_clusters, 500, 11) in shared
        if before is not None:
            assert shared[(n_clusters, 500, 11)] is before  # reused, not drawn again
        assert len(shared) <= stats.DrawCache.SHARED_WEIGHTS
    assert list(shared) == [(40, 500, 11), (42, 500, 11)]  # 41 was the least recently used


def test_a_draw_cache_over_max_cells_gathers_and_a_held_w_is_used():
    """A W over `max_cells` is never built: pass after pass its sums are a fresh cache's, gathered from the drawn
    indices; a W the shared dict holds is used as it is."""
    rng = np.random.default_rng(8)
    columns = rng.integers(0, 5, (60, 9)).astype(float)
    fresh = stats.DrawCache().sums([columns], 400, 4)[0]
    over = stats.DrawCache(max_cells=60 * 400 - 1)
    for _ in range(2):
        np.testing.assert_array_equal(over.sums([columns], 400, 4)[0], fresh)
        over._sums.clear()
    assert over._weights == {}
    shared = {(60, 400, 4): np.zeros((400, 60), dtype=np.float32)}  # held: used as it is
    assert not stats.DrawCache(weights=shared).sums([np.ones((60, 1))], 400, 4)[0].any()


# --------------------------------------------------------------------------- exact intervals (tests/bootstrap_ref.py)


@pytest.mark.parametrize(("n_clusters", "draws", "block_cells"), [
    (1, 50, None), (7, 3001, None), (48, 20_000, None), (2298, 120, None),
    (7, 301, 22),  # blocks of 3 draws = 21 cells: an odd block leaves the last raw word's high half unused
])
def test_draw_stream_is_the_documented_one(monkeypatch, n_clusters, draws, block_cells):
    """The drawn indices are the documented stream, rebuilt independently from the raw generator output."""
    if block_cells is not None:
        monkeypatch.setattr(stats, "_BLOCK_CELLS", block_cells)
    got = np.vstack(list(stats._index_blocks(n_clusters, draws, 13)))
    np.testing.assert_array_equal(got, drawn_indices(n_clusters, draws, 13))


@pytest.mark.parametrize(("seed", "n_clusters", "draws"), [(0, 48, 5000), (3, 48, 2000), (6, 5, 20_000),
                                                           (9, 200, 1000), (12, 1, 300)])
def test_bootstrap_equals_the_reference_exactly(seed, n_clusters, draws):
    """cluster_bootstrap and rate_with_ci equal the independent per-draw computation at full precision, with and
    without a ScoringContext (its DrawCache), and hold the estimate."""
    k, n = _clusters(seed, n_clusters)
    expected = ratio_interval(k, n, draws=draws, seed=seed + 1)
    assert stats.cluster_bootstrap(k, n, draws=draws, seed=seed + 1) == expected
    with stats.ScoringContext().active():
        assert stats.cluster_bootstrap(k, n, draws=draws, seed=seed + 1) == expected
    rate = stats.rate_with_ci(k, n, draws=draws, seed=seed + 1)
    assert rate.ci == expected
    assert expected[0] <= rate.value <= expected[1]


def test_bootstrap_many_and_diff_equal_the_reference_exactly():
    k1, n = _clusters(5)
    k2 = np.minimum(n, k1 + 1)
    lo, hi = stats.cluster_bootstrap_many(np.column_stack([k1, k2]), n, draws=3000, seed=3)
    assert (lo[0], hi[0]) == ratio_interval(k1, n, draws=3000, seed=3)
    assert (lo[1], hi[1]) == ratio_interval(k2, n, draws=3000, seed=3)
    nb = np.maximum(1, n - 1)
    kb = np.minimum(nb, k2)
    expected = diff_interval(k1, n, kb, nb, draws=3000, seed=4)
    assert stats.cluster_bootstrap_diff(k1, n, kb, nb, draws=3000, seed=4) == expected
    assert expected[0] <= k1.sum() / n.sum() - kb.sum() / nb.sum() <= expected[1]
    lo2, hi2 = stats.cluster_bootstrap_diff(np.column_stack([k1, kb]), np.column_stack([n, nb]),
                                            np.column_stack([kb, k1]), np.column_stack([nb, n]), draws=3000, seed=4)
    assert (lo2[0], hi2[0]) == expected
    assert (lo2[1], hi2[1]) == diff_interval(kb, nb, k1, n, draws=3000, seed=4)


def test_zero_over_zero_draws_are_left_out():
    """A draw whose denominator is 0 (only empty clusters drawn) is left out of the percentiles, not counted as
    a rate of 0 or 1: with one non-empty cluster of rate 1 among three, every defined draw is 1, while about
    30% of the draws (2/3 cubed) are 0 / 0."""
    k, n = np.array([1.0, 0.0, 0.0]), np.array([1.0, 0.0, 0.0])
    assert stats.cluster_bootstrap(k, n, draws=2000, seed=1) == (1.0, 1.0)
    assert stats.cluster_bootstrap(0 * k, n, draws=2000, seed=1) == (0.0, 0.0)
    assert stats.cluster_bootstrap_diff(k, n, 0 * k, n, draws=2000, seed=1) == (1.0, 1.0)
    # 0 / 0 in 1/16 of the draws beside rates between 1/2 (only the second cluster drawn, about 27% of the
    # defined draws) and 2/3 (only the first, as often): counted as 0 or 1 they would move an end to 0 or 1
    k4, n4 = np.array([2.0, 0.0, 1.0, 0.0]), np.array([3.0, 0.0, 2.0, 0.0])
    got = stats.cluster_bootstrap(k4, n4, draws=4000, seed=2)
    assert got == ratio_interval(k4, n4, draws=4000, seed=2)
    assert got == (1 / 2, 2 / 3)


@pytest.mark.parametrize(("k", "n", "seed"), [(528, 1100, stats.DEFAULT_SEED), (3, 7, 1), (0, 5, 2), (40, 40, 3)])
def test_proportion_bootstrap_equals_the_reference_exactly(k, n, seed):
    """stats.proportion_bootstrap equals Binomial(n, k / n) / n on its seeded stream at full precision, holds
    k / n, and sits within two counts of the exact binomial quantiles (the method, independent of the draws)."""
    lo, hi = stats.proportion_bootstrap(k, n, seed=seed)
    assert (lo, hi) == proportion_interval(k, n, seed=seed)
    assert lo <= k / n <= hi
    assert abs(lo * n - binom.ppf(0.025, n, k / n)) <= 2 and abs(hi * n - binom.ppf(0.975, n, k / n)) <= 2


def _kappa_of_table(table: np.ndarray) -> float:
    """Cohen's kappa of an m x m table of (pseudo-)counts, written out here; NaN when undefined."""
    n = table.sum()
    p_o = np.trace(table) / n
    p_e = float(table.sum(axis=1) @ table.sum(axis=0)) / n**2
    return np.nan if np.isclose(p_e, 1.0) else (p_o - p_e) / (1 - p_e)


@pytest.mark.parametrize(("seed", "level"), [(9, 0.95), (4, 0.8)])
def test_cluster_bootstrap_kappa_equals_the_reference(seed, level):
    """The kappa interval: per draw, the table of the pairs of the drawn clusters (core.stats' documented stream,
    cluster ids in text order) plus Jeffreys' prior, a Gamma(1/2) pseudo-count in each cell from the stream
    [seed, 1] (cells row-major by rater a's label, labels in repr order); the percentile interval of those
    draws' kappas, stretched to hold the estimate."""
    rng = np.random.default_rng(seed)
    a = [int(x) for x in rng.integers(0, 3, 45)]
    b = [x if rng.random() < 0.7 else int(rng.integers(0, 3)) for x in a]
    clusters = [i // 3 for i in range(45)]  # 15 items of 3 traces; ids in text order: 0, 1, 10, 11, ...
    keys = sorted({str(c) for c in clusters})
    labels = sorted(set(a) | set(b), key=repr)
    m = len(labels)
    prior = np.random.default_rng([seed + 1, 1]).gamma(0.5, size=(400, m * m))
    values = []
    for d, row in enumerate(drawn_indices(len(keys), 400, seed + 1)):
        table = prior[d].reshape(m, m).copy()
        for i in row:
            for x, y, c in zip(a, b, clusters, strict=True):
                if str(c) == keys[i]:
                    table[labels.index(x), labels.index(y)] += 1
        values.append(_kappa_of_table(table))
    lo, hi = percentile_interval(np.array(values), level)
    estimate = stats.cohen_kappa(a, b)[0]
    given = {} if level == 0.95 else {"level": level}  # 95% is the default
    got = stats.cluster_bootstrap_kappa(a, b, clusters, draws=400, seed=seed + 1, **given)
    np.testing.assert_allclose(got, (min(lo, estimate), max(hi, estimate)), rtol=1e-12, atol=1e-12)
    assert got[0] <= estimate <= got[1]


def test_kappa_interval_is_stretched_to_hold_the_estimate():
    """No disagreement in 20 pairs: kappa 1, and no draw with the prior reaches 1; the interval ends at 1."""
    a = b = [1] * 18 + [0, 0]
    lo, hi = stats.cluster_bootstrap_kappa(a, b, list(range(20)), draws=2000)
    assert stats.cohen_kappa(a, b)[0] == 1.0 and hi == 1.0 and lo < 0.6


def test_cluster_bootstrap_kappa_refusals_and_undefined():
    with pytest.raises(ValueError, match="^labels and clusters must have one entry per pair$"):
        stats.cluster_bootstrap_kappa([1, 2], [1, 2], [0])
    with pytest.raises(ValueError, match="^labels and clusters must have one entry per pair$"):
        stats.cluster_bootstrap_kappa([1], [1, 2], [0])
    assert stats.cluster_bootstrap_kappa([], [], []) is None
    assert stats.cluster_bootstrap_kappa([1, 1, 1], [1, 1, 1], [0, 1, 2], draws=50) is None  # one class: undefined
    mixed = stats.cluster_bootstrap_kappa([1, "x", 1, "x", 1], [1, "x", "x", "x", 1], [0, 1, 2, 3, 4], draws=50)
    assert mixed is not None and mixed[0] <= mixed[1]  # labels of mixed types, as cohen_kappa takes them


def test_bootstrap_refusal_messages():
    with pytest.raises(ValueError, match=r"^per-cluster arrays must be 1-D \(clusters\) or 2-D \(clusters x metrics\)$"):
        stats.cluster_bootstrap_many(np.ones((2, 2, 2)), np.ones((2, 2, 2)))
    with pytest.raises(ValueError, match=r"^k and n shapes differ: \(3, 2\) vs \(4, 2\)$"):
        stats.cluster_bootstrap_many(np.ones((3, 2)), np.ones((4, 2)))
    with pytest.raises(MetricUndefined, match="^no clusters to resample$"):
        stats.cluster_bootstrap([], [])


def test_cluster_bootstrap_passes_its_level_on():
    k, n = _clusters(1)
    assert stats.cluster_bootstrap(k, n, draws=500, seed=2, level=0.5) == ratio_interval(k, n, draws=500, seed=2,
                                                                                         level=0.5)


def test_resampled_sums_and_percentile_interval_are_the_documented_ones():
    rng = np.random.default_rng(2)
    cols = rng.integers(0, 5, (9, 3)).astype(float)
    got = stats.resampled_sums(cols, draws=300, seed=6)
    np.testing.assert_array_equal(got, resampled([cols], 300, 6)[0])
    np.testing.assert_array_equal(stats.resampled_sums(cols[:, 0], draws=300, seed=6)[:, 0], got[:, 0])
    values = np.where(rng.random((300, 2)) < 0.1, np.nan, rng.random((300, 2)))
    lo, hi = stats.percentile_interval(values)
    assert [(lo[j], hi[j]) for j in range(2)] == [percentile_interval(values[:, j]) for j in range(2)]
    lo, hi = stats.percentile_interval(values, level=0.5)
    assert (lo[0], hi[0]) == percentile_interval(values[:, 0], level=0.5)
