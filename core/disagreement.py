"""Where runs disagree: a map of runs x groups (issue #38 point 3; docs/METRICS.md "Where runs disagree").

Each cell is one run's joint outcome on one group by the family's item outcome (core.outcomes.item_marks), over
the items the run answered: every one right, some, none, or none answered. Runs are ordered by ability and groups
by difficulty from a Rasch (one-parameter item-response) fit (Rasch 1960) in which each item of a group shares the
group's difficulty: P(an item of group g right for run r) = sigmoid(theta_r - b_g), the k items right of the n
answered counted as binomial; fitted by joint maximum a posteriori (alternating Newton steps, a normal
N(0, PRIOR_SD^2) prior on every parameter so that a run or a group with all right or all wrong keeps a finite
estimate), each with a 95% Wald interval from the posterior curvature given the other side's estimates (theta +-
1.96 / sqrt(sum n p (1 - p) + 1 / PRIOR_SD^2), the "model standard error" item-response software reports for
joint estimation). A model interval rather than the cluster bootstrap: an ability is a fitted parameter, and a
bootstrap would refit the model on every draw.

At most MAX_RUNS runs and MAX_GROUPS groups are drawn: beyond that, runs evenly spaced along the ability order
(the runs named in `keep` always among them) and groups evenly spaced along the difficulty order; `note` says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core import outcomes
from core.schema import as_json

MAX_RUNS = 60
MAX_GROUPS = 300
PRIOR_SD = 3.0
ITERATIONS = 200
STEP = 2.0  # the largest Newton step of one parameter (logits)
TOLERANCE = 1e-5
# a cell's joint outcome
UNANSWERED, NONE_RIGHT, SOME_RIGHT, ALL_RIGHT = 0, 1, 2, 3
OUTCOMES = ("not answered", "none right", "some right", "all right")


@dataclass(frozen=True, slots=True)
class Ability:
    run: str
    theta: float
    ci: tuple[float, float]
    right: int       # groups with every answered item right
    answered: int    # groups answered


@dataclass(frozen=True, slots=True)
class Difficulty:
    group: str
    b: float
    ci: tuple[float, float]
    right: int       # runs with every answered item right
    answered: int    # runs that answered it


@dataclass(frozen=True, slots=True)
class DisagreementMap:
    """The map (module docstring): `runs` strongest first and `groups` easiest first as drawn, `cells[r][g]` the
    joint outcome (OUTCOMES index) of run r on group g; the fits of every run and group, not only those drawn."""

    benchmark: str
    runs: tuple[Ability, ...]
    groups: tuple[Difficulty, ...]
    cells: tuple[tuple[int, ...], ...]
    n_runs: int
    n_groups: int
    note: str
    abilities: tuple[Ability, ...]
    difficulties: tuple[Difficulty, ...]

    def json(self) -> dict[str, object]:
        out: dict[str, object] = as_json(self)
        return out


def joint_outcomes(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """runs x groups: the joint outcome code of each run on each group from its items right `k` of those it
    answered `n` (a run of the StemBind SSA protocol answers the F items alone)."""
    return np.where(n == 0, UNANSWERED, np.where(k >= n, ALL_RIGHT, np.where(k > 0, SOME_RIGHT, NONE_RIGHT))
                    ).astype(np.int8)


def group_counts(lay: outcomes.Layout, preds: outcomes.Preds) -> tuple[np.ndarray, np.ndarray]:
    """(items right, items answered) per group of one run's predictions, by the one item-outcome rule."""
    answered, correct = outcomes.item_marks(lay, preds)
    return outcomes.per_group(lay, correct & answered), outcomes.per_group(lay, answered)


def rasch(k: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(theta, its standard error, b, its standard error) of the Rasch model for `k` items right of `n` answered
    (runs x groups; n = 0: not answered), by joint MAP (module docstring)."""
    n_r, n_g = k.shape
    w = n.astype(float)
    kk = k.astype(float)
    lam = 1.0 / PRIOR_SD**2
    theta, b = np.zeros(n_r), np.zeros(n_g)
    for _ in range(ITERATIONS):
        p = 1.0 / (1.0 + np.exp(-(theta[:, None] - b[None, :])))
        info_r = (w * p * (1 - p)).sum(axis=1) + lam
        step_t = np.clip(((kk - w * p).sum(axis=1) - lam * theta) / info_r, -STEP, STEP)
        theta = theta + step_t
        p = 1.0 / (1.0 + np.exp(-(theta[:, None] - b[None, :])))
        info_g = (w * p * (1 - p)).sum(axis=0) + lam
        step_b = np.clip((-(kk - w * p).sum(axis=0) - lam * b) / info_g, -STEP, STEP)
        b = b + step_b
        # the likelihood does not change when every theta and b move together, so the prior alone fixes that
        # direction: its exact optimum along it is a shift by minus their common mean (without it, the alternating
        # steps crawl along that flat direction: 12.5 s against 0.4 s at 1,000 runs x 2,298 groups)
        shift = (theta.sum() + b.sum()) / (n_r + n_g)
        theta, b = theta - shift, b - shift
        if max(np.abs(step_t).max(initial=0.0), np.abs(step_b).max(initial=0.0)) < TOLERANCE:
            break
    p = 1.0 / (1.0 + np.exp(-(theta[:, None] - b[None, :])))
    se_t = 1.0 / np.sqrt((w * p * (1 - p)).sum(axis=1) + lam)
    se_b = 1.0 / np.sqrt((w * p * (1 - p)).sum(axis=0) + lam)
    return theta, se_t, b, se_b


def _spaced(order: np.ndarray, limit: int, keep: np.ndarray | None = None) -> np.ndarray:
    """At most `limit` of the positions in `order`, evenly spaced along it (the `keep` ones always), in its order;
    the ends of the order are always among them."""
    if len(order) <= limit:
        return order
    kept = set(keep.tolist()) if keep is not None else set()
    rest = np.array([i for i in order.tolist() if i not in kept], dtype=np.int64)
    room = max(limit - len(kept), 0)
    chosen = kept | (set(rest[np.linspace(0, len(rest) - 1, room).round().astype(int)].tolist()) if room else set())
    return np.array([i for i in order.tolist() if i in chosen], dtype=np.int64)


def disagreement_map(benchmark: str, lay: outcomes.Layout, names: Sequence[str], k: np.ndarray, n: np.ndarray,
                     keep: Sequence[str] = (), max_runs: int = MAX_RUNS, max_groups: int = MAX_GROUPS
                     ) -> DisagreementMap:
    """The map of the runs `names` from their items right `k` of those answered `n` (runs x groups of `lay`,
    `group_counts` of each run, in that order); `keep`: runs always drawn."""
    k, n = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
    codes = joint_outcomes(k, n)
    seen = codes != UNANSWERED
    theta, se_t, b, se_b = rasch(k, n)
    right_r, ans_r = (codes == ALL_RIGHT).sum(axis=1), seen.sum(axis=1)
    right_g, ans_g = (codes == ALL_RIGHT).sum(axis=0), seen.sum(axis=0)
    abilities = tuple(Ability(str(n), float(t), (float(t - 1.96 * s), float(t + 1.96 * s)), int(k), int(a))
                      for n, t, s, k, a in zip(names, theta, se_t, right_r, ans_r, strict=True))
    difficulties = tuple(Difficulty(str(g), float(d), (float(d - 1.96 * s), float(d + 1.96 * s)), int(k), int(a))
                         for g, d, s, k, a in zip(lay.groups, b, se_b, right_g, ans_g, strict=True))
    run_order = np.lexsort((np.arange(len(names)), -theta))
    group_order = np.lexsort((np.arange(lay.n_groups), b))
    wanted = np.array([i for i, n in enumerate(names) if n in set(keep)], dtype=np.int64)
    rows = _spaced(run_order, max_runs, wanted)
    cols = _spaced(group_order, max_groups)
    parts = []
    if len(rows) < len(names):
        parts.append(f"{len(rows):,} of {len(names):,} runs drawn, evenly spaced by ability"
                     + (" (the picked runs among them)" if len(wanted) else ""))
    if len(cols) < lay.n_groups:
        parts.append(f"{len(cols):,} of {lay.n_groups:,} groups drawn, evenly spaced by difficulty")
    note = "; ".join(parts) + ("; every run and group is in the fit" if parts else "")
    return DisagreementMap(benchmark, tuple(abilities[i] for i in rows), tuple(difficulties[g] for g in cols),
                           tuple(tuple(int(c) for c in codes[r, cols]) for r in rows), len(names), lay.n_groups,
                           note, abilities, difficulties)
