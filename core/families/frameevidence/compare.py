"""frameevidence paired arrays of the comparison engine (core.comparison)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from core import stats
from core.schema import Rate, RunData


def _compare_frameevidence(items: pd.DataFrame, run: RunData, other: RunData, split: str | None, draws: int,
                           seed: int | None, clustering: stats.Clustering | None = None) -> dict[str, Any]:
    from core.families.frameevidence import metrics as fe

    # run_b - run_a = this - other
    raw = fe.compare(items, other, run, split=split, draws=draws, seed=seed, clustering=clustering)
    out: dict[str, Any] = {"clustering": raw.get("clustering", "groups"), "clusters": int(raw.get("clusters", 0))}
    for m in fe.COMPARED:
        entry = raw[m]
        diff = entry["difference"] if isinstance(entry, dict) else entry
        if diff.value is None:
            out[m] = Rate.undefined(diff.reason or "undefined")
            continue
        rate = Rate(diff.value, n=int(raw.get("clusters", 0)))
        rate.ci = diff.ci
        out[m] = rate
    return out
