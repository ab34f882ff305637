"""FrameEvidence: rotations and repeats (§6.4, Table 7) and Table 13's paired repeat intervals over
bootstrap clusterings (App. D.6)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from core import stats
from core.errors import MetricUndefined
from core.families.frameevidence.outcomes import (
    _diff,
    _identity,
    _input_mode,
    _outcomes,
    _pred_columns,
    _scope,
    _valid_answers,
)
from core.metrics.common import (
    memoized,
    pair_flags,
    pair_rates,
    rotation_rates,
)
from core.schema import Rate, RunData

# Table 13's two clusterings by default: the matched groups (the paper's "96 triplets") and the image / scene
# union components of App. D.6
DEFAULT_CLUSTERINGS = (stats.Clustering("group"), stats.Clustering("union"))
# Table 13's quantities, in the paper's order (the R1..R3 contrasts follow for each rotation the run has)
TABLE13_KEYS = ("repeat_accuracy", "primary_repeat_disagreement", "r0_repeat_disagreement",
                "repeat_minus_primary_accuracy", "repeat_minus_r0_accuracy", "both_correct", "consistency")

# --------------------------------------------------------------------------- rotations and repeats (§6.4, Table 7)


def _present(values: np.ndarray) -> np.ndarray:
    """The distinct values of a prediction column, NaN / None left out (Series.dropna().unique())."""
    return pd.unique(values[pd.notna(values)])


def _rotations(run: RunData) -> list[int]:
    found = sorted(int(r) for r in _present(_pred_columns(run)["rotation"]))
    configured = (run.config or {}).get("rotations")
    if isinstance(configured, int) and not isinstance(configured, bool) and configured > 1:
        return sorted(set(range(configured)) | set(found))
    if isinstance(configured, (list, tuple)) and len(configured) > 1:
        return sorted({int(r) for r in configured} | set(found))
    return found


def rotations(items: pd.DataFrame, run: RunData, split: str | None = "test") -> dict[str, Any]:
    """Vanilla, Circular, Consistency, mean over rotations and Drop (000 App. A Eq. 2, Tables 6b / 12).

    Over every item of the split at repeat 0 (an item with no prediction at some rotation gets no credit,
    common.rotation_metrics); rotations are those the run config names (int n -> 0..n-1, or a list) and
    those found in its predictions. Undefined without a rotation other than 0.
    """
    rots = _rotations(run)
    if len(rots) < 2 or 0 not in rots:
        reason = "run has no option rotations besides 0"
        return {key: Rate.undefined(reason) for key in ("vanilla", "circular", "consistency", "mean_rotation",
                                                        "drop")} | {"per_rotation": {}}
    # items x rotations: each item's valid answer and correctness under each rotation (an item without a
    # prediction at some rotation: None and False there)
    tables = [_outcomes(items, run, split, rotation=r) for r in rots]
    answers = np.column_stack([_valid_answers(t) for t in tables])
    correct = np.column_stack([t["correct"] for t in tables])
    return rotation_rates(answers, correct, rots)


def repeat_table(items: pd.DataFrame, run: RunData, split: str | None = "test") -> dict[str, Any] | Rate:
    """Same-order repeat table (000 Table 7 and the paired rows of Table 13).

    Pairs the rotation-0 / repeat-0 answers with (a) each same-order repeat at rotation 0 ("repeat1",
    "repeat2", ...) and (b) each rotation r at repeat 0 ("R1".."R3"): at_least_one_correct, both_correct,
    consistency (both valid, same answer meaning), consistently_wrong, changed (common.pair_metrics), over
    every item of the split. differences.Rr = first repeat pair minus the R0-Rr pair for both_correct and
    consistency (Table 13). Undefined when the run has no same-order repeat.
    """
    preds = _pred_columns(run)
    reps = sorted(int(r) for r in _present(preds["repeat"][preds["rotation"] == 0]) if r != 0)
    if not reps:
        return Rate.undefined("run has no same-order repeat (rotation 0, repeat > 0)")

    def pair(rotation: int, repeat: int) -> dict[str, Rate]:
        """common.pair_metrics of the rotation-0 / repeat-0 answers with those at (rotation, repeat); both item
        tables hold every item of the split in the same order."""
        a, b = _outcomes(items, run, split), _outcomes(items, run, split, rotation=rotation, repeat=repeat)
        return pair_rates(_valid_answers(a), a["correct"], _valid_answers(b), b["correct"])

    out: dict[str, Any] = {f"repeat{r}": pair(0, r) for r in reps}
    rots = [r for r in sorted(int(x) for x in _present(preds["rotation"][preds["repeat"] == 0])) if r]
    for r in rots:
        out[f"R{r}"] = pair(r, 0)
    first = out[f"repeat{reps[0]}"]
    out["differences"] = {f"R{r}": {m: _diff(first[m], out[f"R{r}"][m], "a pair rate is undefined")
                                    for m in ("both_correct", "consistency")} for r in rots}
    return out


# --------------------------------------------------------------------------- Table 13: paired intervals


def _is_ordinary(run: RunData) -> bool:
    """The run's predictions are all at rotation 0, repeat 0 (an ordinary run: no rotation, no repeat)."""
    preds = _pred_columns(run)
    return bool((preds["rotation"] == 0).all() and (preds["repeat"] == 0).all())


def primary_run(run: RunData, others: Sequence[RunData]) -> RunData | str:
    """The ordinary run that Table 13 pairs with the repeat ("Paired with the primary run"), or why there is none.

    `config.primary_run` names it; otherwise it is the one run in `others` of the same benchmark, input mode,
    model, strategy and shots whose predictions are all at rotation 0, repeat 0.
    """
    named = (run.config or {}).get("primary_run")
    if named:
        found = [o for o in others if o.name == named and o.benchmark == run.benchmark]
        return found[0] if found else f"config.primary_run {named!r} is not a run of this benchmark"
    mode = _input_mode(run)
    found = [o for o in others if o.name != run.name and o.benchmark == run.benchmark and _input_mode(o) == mode
             and _identity(o) == _identity(run) and _is_ordinary(o)]
    if len(found) > 1:
        return (f"several ordinary runs could be the primary run ({', '.join(sorted(o.name for o in found))}); "
                "name one in config.primary_run")
    if not found:
        model, strategy, shots = _identity(run)
        return (f"no ordinary {mode!r} run (rotation 0, repeat 0 only) with model {model!r}, strategy "
                f"{strategy!r}, {shots} shots to pair as the primary run")
    return found[0]


def _cluster_codes(scope: pd.DataFrame, clustering: stats.Clustering) -> tuple[np.ndarray, int]:
    """Each item's cluster as a code 0..clusters-1 (sorted cluster names) and the cluster count (the same for
    every run of a split: memoized on the clustering's name and fields)."""
    return _cluster_codes_of(scope, clustering.name, tuple(clustering.fields))


@memoized
def _cluster_codes_of(scope: pd.DataFrame, name: str, fields: tuple[str, ...]) -> tuple[np.ndarray, int]:
    labels = stats.cluster_labels(scope, stats.Clustering(name, fields))
    names, code = np.unique(labels.astype(str), return_inverse=True)
    return code, len(names)


def repeat_intervals(items: pd.DataFrame, run: RunData, others: Sequence[RunData] = (), split: str | None = "test",
                     clusterings: Sequence[stats.Clustering] = DEFAULT_CLUSTERINGS, draws: int = stats.DEFAULT_DRAWS,
                     seed: int | None = stats.DEFAULT_SEED, level: float = 0.95) -> dict[str, Any] | Rate:
    """000 Table 13: the same-order repeat quantities with a 95% percentile cluster-bootstrap interval under
    each clustering (side by side; the paper's are the 96 groups and the 13 union components).

    With R0 = rotation 0 / repeat 0, the repeat = rotation 0 / first repeat > 0 and the primary run
    (primary_run), over every item of the split: repeat_accuracy; primary_repeat_disagreement and
    r0_repeat_disagreement (answers not both valid and equal: common.pair_flags "changed");
    repeat_minus_primary_accuracy, repeat_minus_r0_accuracy; both_correct and consistency of the R0-repeat pair;
    both_correct_minus_Rj and consistency_minus_Rj = the R0-repeat pair minus the R0-Rj pair, for each rotation
    j > 0 the run has. Every quantity is a sum of per-item values (0 / 1, or -1 / 0 / 1 for a difference) over
    the split's items, so one draw resamples whole clusters and takes the item-weighted ratio
    (stats.cluster_bootstrap_many, the same draws for every quantity). Per quantity: `estimate` and, per
    clustering name, the same Rate with its interval in `ci` (or a reason: a union field that no item has).
    `primary` is the primary run's name, or a reason (its rows then carry it too); the whole section is a
    reason without a repeat.
    """
    preds = _pred_columns(run)
    reps = sorted(int(r) for r in _present(preds["repeat"][preds["rotation"] == 0]) if r != 0)
    if not reps:
        return Rate.undefined("run has no same-order repeat (rotation 0, repeat > 0)")
    names = [c.name for c in clusterings]
    if not names or len(set(names)) < len(names):
        raise stats.UnknownClustering(f"clusterings must be distinct and at least one: {names}")
    r0, rep = _outcomes(items, run, split), _outcomes(items, run, split, rotation=0, repeat=reps[0])
    n = len(r0)
    if not n:
        return Rate.undefined(f"no items in split {split!r}")
    values, primary = _repeat_values(items, run, others, split, preds, r0, rep)
    keys = [k for k in TABLE13_KEYS if k in values] + [k for k in values if k not in TABLE13_KEYS]
    defined = [k for k in keys if not isinstance(values[k], str)]
    matrix = np.column_stack([np.asarray(values[k], dtype=float) for k in defined])
    out: dict[str, Any] = {"repeat": reps[0],
                           "primary": Rate.undefined(primary) if isinstance(primary, str) else primary.name,
                           "draws": draws, "seed": seed, "level": level, "clusterings": {}, "quantities": {}}
    intervals = _repeat_cluster_intervals(_scope(items, split), clusterings, matrix, out["clusterings"], draws,
                                          seed, level)
    for key in keys:
        out["quantities"][key] = _repeat_quantity(values[key], "minus" in key, n, clusterings, intervals,
                                                  defined.index(key) if key in defined else -1)
    return out


def _repeat_values(items: pd.DataFrame, run: RunData, others: Sequence[RunData], split: str | None,
                   preds: pd.DataFrame, r0: pd.DataFrame, rep: pd.DataFrame
                   ) -> tuple[dict[str, np.ndarray | str], RunData | str]:
    """repeat_intervals' per-item values of each quantity (or the reason it is undefined), and the primary
    run (or the reason there is none)."""
    a0, ar = _valid_answers(r0), _valid_answers(rep)
    c0, cr = r0["correct"], rep["correct"]
    same = pair_flags(a0, c0, ar, cr)
    values: dict[str, np.ndarray | str] = {"repeat_accuracy": cr}
    primary = primary_run(run, list(others))
    if isinstance(primary, str):
        values["primary_repeat_disagreement"] = values["repeat_minus_primary_accuracy"] = primary
    else:
        tp = _outcomes(items, primary, split)
        values["primary_repeat_disagreement"] = pair_flags(_valid_answers(tp), tp["correct"], ar, cr)["changed"]
        values["repeat_minus_primary_accuracy"] = cr.astype(np.int64) - tp["correct"]
    values["r0_repeat_disagreement"] = same["changed"]
    values["repeat_minus_r0_accuracy"] = cr.astype(np.int64) - c0
    values["both_correct"], values["consistency"] = same["both_correct"], same["consistency"]
    rots = [r for r in sorted(int(x) for x in _present(preds["rotation"][preds["repeat"] == 0])) if r]
    against = {r: pair_flags(a0, c0, _valid_answers(t), t["correct"])
               for r, t in ((r, _outcomes(items, run, split, rotation=r)) for r in rots)}
    for m in ("both_correct", "consistency"):  # the paper's order: every both-correct contrast, then consistency
        for r, other in against.items():
            values[f"{m}_minus_R{r}"] = same[m].astype(np.int64) - other[m]
    return values, primary


def _repeat_cluster_intervals(scope: pd.DataFrame, clusterings: Sequence[stats.Clustering], matrix: np.ndarray,
                              described: dict[str, Any], draws: int, seed: int | None, level: float
                              ) -> dict[str, tuple[np.ndarray, np.ndarray] | str]:
    """Per clustering name, the intervals of every column of `matrix` (items x quantities), or the reason
    there are none; each clustering's description (or reason) goes into `described`."""
    intervals: dict[str, tuple[np.ndarray, np.ndarray] | str] = {}
    for c in clusterings:
        try:
            code, n_clusters = _cluster_codes(scope, c)
        except MetricUndefined as exc:
            intervals[c.name] = str(exc)
            described[c.name] = Rate.undefined(str(exc))
            continue
        k = np.zeros((n_clusters, matrix.shape[1]))
        np.add.at(k, code, matrix)
        size = np.bincount(code, minlength=n_clusters).astype(float)
        described[c.name] = {"label": c.label, "clusters": n_clusters,
                             **({"fields": list(c.fields)} if c.name == "union" else {})}
        if seed is None:
            intervals[c.name] = "seed=None: no intervals"
            continue
        # products of a few columns: one BLAS thread is faster than several contending for the cores (and the
        # worker processes of score --all), with the same numbers
        with threadpool_limits(1, user_api="blas"):
            intervals[c.name] = stats.cluster_bootstrap_many(k, size, draws=draws, seed=seed, level=level)
    return intervals


def _repeat_quantity(value: np.ndarray | str, diff: bool, n: int, clusterings: Sequence[stats.Clustering],
                     intervals: dict[str, tuple[np.ndarray, np.ndarray] | str], j: int) -> dict[str, Rate]:
    """One quantity of repeat_intervals: its estimate over the n items and, per clustering, the same Rate
    with the interval of column j (or a reason)."""
    if isinstance(value, str):
        return {"estimate": Rate.undefined(value), **{c.name: Rate.undefined(value) for c in clusterings}}
    total = np.asarray(value, dtype=np.int64).sum()
    estimate = Rate(float(total) / n) if diff else Rate.of(int(total), n, "items")
    entry: dict[str, Rate] = {"estimate": estimate}
    for c in clusterings:
        got = intervals[c.name]
        if isinstance(got, str):
            entry[c.name] = Rate.undefined(got)
            continue
        rate = dataclasses.replace(estimate)
        lo, hi = got[0][j], got[1][j]
        if np.isfinite(lo) and np.isfinite(hi):
            rate.ci = (float(lo), float(hi))
        entry[c.name] = rate
    return entry
