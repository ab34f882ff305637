"""SPUR (001) group layout for Browse and Compare: the perception-right, reasoning-wrong figure pattern."""

from __future__ import annotations

import pandas as pd

from core.families.spur import metrics as sp


def _spur_pattern(out: pd.DataFrame, idx: pd.Index) -> pd.Series:
    """Figures whose perception items were all answered and right and whose reasoning has a wrong answer
    (the "perception correct" side of core.families.spur.metrics.reasoning_by_perception)."""
    stage = out["kind"].map(sp.STAGE_OF)
    perc = out[stage == "perception"].groupby("group_id")
    perc_ok = perc["correct"].all() & perc["answered"].all()
    reas = out[(stage == "reasoning") & out["answered"]]
    reas_bad = (~reas["correct"]).groupby(reas["group_id"]).any()
    hit = perc_ok.reindex(idx, fill_value=False) & reas_bad.reindex(idx, fill_value=False)
    return hit.astype(bool)
