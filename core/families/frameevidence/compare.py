"""FrameEvidence (000) paired comparison for the engine (core.comparison): macro-F1 is not a ratio of sums, so
the family computes its own intervals (core.families.frameevidence.metrics.compare, §6.2, App. D) and hands
them back as this run minus the other."""

from __future__ import annotations

from typing import Any

import pandas as pd

from core import stats
from core.families.frameevidence import catalogue
from core.families.frameevidence import metrics as fe
from core.schema import Rate, RunData


def paired_differences(items: pd.DataFrame, this: RunData, other: RunData, split: str | None, draws: int, seed: int | None,
            clustering: stats.Clustering | None = None) -> dict[str, Any]:
    """accuracy, macro_f1, fq1_gem, nts, dis over every item of the split (an unanswered item counts wrong)."""
    raw = fe.compare(items, other, this, split=split, draws=draws, seed=seed, clustering=clustering)  # b - a
    clusters = int(raw.get("clusters", 0))
    out: dict[str, Any] = {"clustering": raw.get("clustering", "groups"), "clusters": clusters, "metrics": {},
                           "columns": {m.key: m for m in catalogue.COMPARED}}
    for m in fe.COMPARED:
        entry = raw[m]
        if not isinstance(entry, dict):  # no items in the split: every metric carries the reason
            out["metrics"][m] = {"this": entry, "other": entry, "difference": entry}
            continue
        diff = entry["difference"]
        if diff.value is None:
            rate = Rate.undefined(diff.reason or "undefined")
        else:
            rate = Rate(diff.value, n=clusters)
            rate.ci = diff.ci
        out["metrics"][m] = {"this": entry["b"], "other": entry["a"], "difference": rate}
    return out
