"""Where runs disagree (core/disagreement.py): the Rasch fit against an independent optimiser, planted abilities
and difficulties recovered, the map's order and its sampling at many runs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core import families, outcomes
from core.disagreement import (
    ALL_RIGHT,
    NONE_RIGHT,
    SOME_RIGHT,
    UNANSWERED,
    disagreement_map,
    group_counts,
    rasch,
)


def _simulate(n_runs: int, n_groups: int, seed: int = 4):
    rng = np.random.default_rng(seed)
    theta = np.linspace(-2, 2, n_runs)
    b = rng.normal(0, 1.2, n_groups)
    p = 1 / (1 + np.exp(-(theta[:, None] - b[None, :])))
    seen = rng.random((n_runs, n_groups)) > 0.05
    return theta, b, rng.random((n_runs, n_groups)) < p, seen


def test_rasch_is_the_penalised_likelihood_maximum():
    """The joint MAP against scipy's optimiser on the same binomial objective, and the standard errors by their
    formula."""
    from scipy.optimize import minimize

    rng = np.random.default_rng(8)
    n = rng.integers(0, 4, (12, 40)).astype(float)  # items answered per run and group (0: not answered)
    k = rng.binomial(n.astype(int), 0.6).astype(float)
    theta, se_t, b, se_b = rasch(k, n)
    lam = 1 / 9

    def neg(params: np.ndarray) -> float:
        t, d = params[:12], params[12:]
        eta = t[:, None] - d[None, :]
        ll = (k * eta - n * np.logaddexp(0, eta)).sum()
        return float(-(ll - lam / 2 * (t @ t + d @ d)))

    def grad(params: np.ndarray) -> np.ndarray:
        t, d = params[:12], params[12:]
        r = k - n / (1 + np.exp(-(t[:, None] - d[None, :])))
        return np.concatenate([-r.sum(axis=1) + lam * t, r.sum(axis=0) + lam * d])

    best = minimize(neg, np.zeros(52), jac=grad, method="L-BFGS-B",
                    options={"maxiter": 5000, "gtol": 1e-12, "ftol": 1e-15}).x
    assert theta == pytest.approx(best[:12], abs=1e-4)
    assert b == pytest.approx(best[12:], abs=1e-4)
    p = 1 / (1 + np.exp(-(theta[:, None] - b[None, :])))
    assert se_t == pytest.approx(1 / np.sqrt((n * p * (1 - p)).sum(axis=1) + lam))
    assert se_b == pytest.approx(1 / np.sqrt((n * p * (1 - p)).sum(axis=0) + lam))


def test_planted_abilities_and_difficulties_are_recovered():
    theta, b, y, seen = _simulate(30, 400)
    t_hat, _, b_hat, _ = rasch(y * seen, seen.astype(float))
    assert np.corrcoef(theta, t_hat)[0, 1] > 0.97
    assert np.corrcoef(b, b_hat)[0, 1] > 0.85


def _layout_and_runs(n_runs: int, n_groups: int, seed: int = 2):
    """Generic groups of two items; run r answers right with a probability rising with r; run 0 skips group 0."""
    rng = np.random.default_rng(seed)
    items = pd.DataFrame([{"item_id": f"g{g}-{i}", "group_id": f"g{g}", "kind": "Q", "variant": "", "answer": "A"}
                          for g in range(n_groups) for i in range(2)])
    lay = outcomes.layout(families.get("generic").groups, items)
    names, summ, k, n = [], [], [], []
    for r in range(n_runs):
        skill = 0.2 + 0.7 * r / max(n_runs - 1, 1)
        answers = np.where(rng.random(len(items)) < skill, "A", "B")
        preds = pd.DataFrame({"item_id": items["item_id"], "rotation": 0, "repeat": 0, "status": "ok",
                              "answer": answers})
        if r == 0:
            preds = preds[~preds["item_id"].str.startswith("g0-")]
        names.append(f"r{r:04d}")
        p = outcomes.preds_from_frame(lay, preds)
        summ.append(outcomes.summarise(lay, p))
        right, answered = group_counts(lay, p)
        k.append(right)
        n.append(answered)
    return lay, names, summ, np.array(k), np.array(n)


def test_the_map_orders_runs_by_ability_and_colours_joint_outcomes():
    lay, names, summ, k, n = _layout_and_runs(8, 60)
    m = disagreement_map("b", lay, names, k, n)
    assert [a.run for a in m.runs][0] == "r0007" and [a.run for a in m.runs][-1] == "r0000"
    assert [a.theta for a in m.runs] == sorted((a.theta for a in m.runs), reverse=True)
    assert [d.b for d in m.groups] == sorted(d.b for d in m.groups)
    assert m.note == ""
    row = [a.run for a in m.runs].index("r0000")
    col = [d.group for d in m.groups].index("g0")
    assert m.cells[row][col] == UNANSWERED
    s = summ[3]
    for c, d in enumerate(m.groups):
        g = list(lay.groups).index(d.group)
        want = ALL_RIGHT if s.n_correct[g] == 2 else SOME_RIGHT if s.n_correct[g] == 1 else NONE_RIGHT
        assert m.cells[[a.run for a in m.runs].index("r0003")][c] == want
    for a in m.runs:
        assert a.ci[0] < a.theta < a.ci[1]


def test_many_runs_are_sampled_evenly_and_said():
    lay, names, _, k, n = _layout_and_runs(400, 30)
    m = disagreement_map("b", lay, names, k, n, keep=["r0123"], max_runs=40)
    assert len(m.runs) == 40 and "r0123" in {a.run for a in m.runs}
    assert m.runs[0].theta == max(a.theta for a in m.abilities)  # the ends of the order are drawn
    assert m.runs[-1].theta == min(a.theta for a in m.abilities)
    assert m.note.startswith("40 of 400 runs drawn, evenly spaced by ability (the picked runs among them)")
    assert len(m.abilities) == 400 and len(m.cells) == 40
