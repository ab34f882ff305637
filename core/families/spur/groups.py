"""SPUR (001) group layout for Browse and Compare: the perception-right, reasoning-wrong figure pattern."""

from __future__ import annotations

import numpy as np
import pandas as pd

from core import outcomes as core_outcomes
from core.families.spur import metrics as sp
from core.families.spur.vocab import STAGE_OF
from core.outcomes import GroupRules

# The item outcome is the metrics' (core.families.spur.metrics.item_outcomes): correct only when every
# prediction of the item is; an item without a prediction is left out (not answered).
EVERY_PREDICTION = True
UNANSWERED_IS_WRONG = False
PATTERNS = [
    ("perc_ok_reason_wrong", "Figure: perception right, reasoning wrong"),
]


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


def summary_patterns(lay: core_outcomes.Layout, s: core_outcomes.RunSummary) -> None:
    """Figures whose perception items were all answered and right and whose reasoning has an answered wrong
    item (the "perception correct" side of core.families.spur.metrics.reasoning_by_perception)."""
    stage = np.array([sp.STAGE_OF.get(k) for k in lay.kind], dtype=object)
    perc = stage == "perception"
    n_perc = np.bincount(lay.group[perc], minlength=lay.n_groups)
    perc_ok = (n_perc > 0) & (core_outcomes.per_group(lay, s.correct & s.answered, perc) == n_perc)
    reas_bad = core_outcomes.per_group(lay, s.answered & ~s.correct, stage == "reasoning") > 0
    s.patterns["perc_ok_reason_wrong"] = perc_ok & reas_bad


RULES: GroupRules = GroupRules(summary_patterns, tuple(PATTERNS), EVERY_PREDICTION, UNANSWERED_IS_WRONG)
