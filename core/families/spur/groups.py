"""SPUR (001) group layout for Browse and Compare: the perception-right, reasoning-wrong figure pattern."""

from __future__ import annotations

import pandas as pd

from core.families.spur import metrics as sp
from core.families.spur.vocab import STAGE_OF

# The item outcome is the metrics' (core.families.spur.metrics.item_outcomes): correct only when every
# prediction of the item is; an item without a prediction is left out (not answered).
EVERY_PREDICTION = True
UNANSWERED_IS_WRONG = False
PATTERNS = [
    ("perc_ok_reason_wrong", "Figure: perception right, reasoning wrong"),
]
outcomes = sp.item_outcomes


def _spur_pattern(out: pd.DataFrame, idx: pd.Index) -> pd.Series:
    """Figures whose perception items were all answered and right and whose reasoning has a wrong answer
    (the "perception correct" side of core.families.spur.metrics.reasoning_by_perception)."""
    stage = out["kind"].map(STAGE_OF)
    perc = out[stage == "perception"].groupby("group_id")
    perc_ok = perc["correct"].all() & perc["answered"].all()
    reas = out[(stage == "reasoning") & out["answered"]]
    reas_bad = (~reas["correct"]).groupby(reas["group_id"]).any()
    hit = perc_ok.reindex(idx, fill_value=False) & reas_bad.reindex(idx, fill_value=False)
    return hit.astype(bool)


def group_patterns(items: pd.DataFrame, out: pd.DataFrame, summ: pd.DataFrame) -> dict[str, pd.Series]:
    return {"perc_ok_reason_wrong": _spur_pattern(out, summ.index)}
