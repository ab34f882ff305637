"""Generic multiple-choice metrics (SPEC §5 "Generic"): accuracy, macro P/R/F1, per-kind accuracy,
group exact match, and Circular / Consistency when the run has several rotations.

Definitions are those of core.metrics.common (docs/METRICS.md). Item rates use rotation 0 and
repeat 0 (the ordinary evaluation); rotation metrics use repeat 0 over every rotation in the run.
Rates carry a percentile cluster-bootstrap interval over groups (20,000 draws, core.stats).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from core import stats
from core.metrics import common
from core.schema import Rate, RunData


def _classes(df: pd.DataFrame) -> str:
    """The letters used as gold answers in the scored rows, in letter order."""
    return "".join(sorted({str(g) for g in df["gold"].dropna()}))


def _with_group_ci(rate: Rate, df: pd.DataFrame, seed: int | None, draws: int) -> Rate:
    """Attach a cluster-bootstrap interval (clusters = groups) to an item accuracy computed from `df`."""
    if seed is None or rate.value is None or df.empty:
        return rate
    per = df.groupby("group_id")["correct"].agg(["sum", "size"])
    rate.ci = stats.cluster_bootstrap(per["sum"].to_numpy(), per["size"].to_numpy(), draws=draws, seed=seed)
    return rate


def _gem_with_ci(df: pd.DataFrame, seed: int | None, draws: int) -> Rate:
    """Group exact match; its interval resamples groups (one 0/1 observation each)."""
    rate = common.group_exact_match(df)
    if seed is not None and rate.value is not None:
        ok = df.groupby("group_id")["correct"].all().to_numpy(dtype=float)
        rate.ci = stats.cluster_bootstrap(ok, np.ones_like(ok), draws=draws, seed=seed)
    return rate


def _rotation_block(joined: pd.DataFrame) -> dict[str, Any]:
    """Circular metrics over repeat 0, or reasons when the run has a single rotation."""
    rotations = sorted(int(r) for r in joined["rotation"].unique()) if len(joined) else []
    keys = ("vanilla", "circular", "consistency", "mean_rotation", "drop")
    if len(rotations) < 2:
        return {k: Rate.undefined("the run has a single option rotation") for k in keys}
    if rotations[0] != 0:
        return {k: Rate.undefined("the run has no rotation 0") for k in keys}
    block = common.rotation_metrics(common.select(joined, rotation=None, repeat=0), rotations)
    return {k: block[k] for k in keys}


def score(items: pd.DataFrame, run: RunData, others: list[RunData] | None = None, *,
          seed: int | None = stats.DEFAULT_SEED, draws: int = stats.DEFAULT_DRAWS) -> dict[str, Any]:
    """The generic metric set of one run (JSON keys as in docs/METRICS.md).

    `seed=None` skips the bootstrap intervals. `others` is unused (no paired metric in this family).
    """
    joined = common.join(items, run.preds)
    base = common.select(joined, rotation=0, repeat=0)
    out: dict[str, Any] = {
        "accuracy": _with_group_ci(common.accuracy(base), base, seed, draws),
        **common.macro_prf(base, _classes(base)),
        "per_kind": {kind: _with_group_ci(rate, base[base["kind"] == kind], seed, draws)
                     for kind, rate in common.accuracy_by(base, "kind").items()},
        "group_exact_match": _gem_with_ci(base, seed, draws),
    }
    out.update(_rotation_block(joined))
    out["n_predictions"] = int(len(joined))
    return out
