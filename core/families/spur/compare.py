"""SPUR (001) paired arrays of the comparison engine (core.comparison): the seven tasks, the three stage
averages, overall accuracy and figure exact match, over the items both runs answered."""

from __future__ import annotations

import numpy as np
import pandas as pd

from core.catalogue import Column
from core.comparison import Paired, group_exact_match, item_pairs, masked
from core.families.spur import catalogue as c
from core.families.spur import metrics as sp
from core.families.spur.vocab import STAGE_OF, STAGES, TASKS
from core.metrics.catalogue import GROUP_EXACT_MATCH
from core.schema import RunData


def paired_arrays(items: pd.DataFrame, run: RunData, other: RunData) -> Paired | str:
    both = item_pairs(sp.item_outcomes(items, run), sp.item_outcomes(items, other))
    if both.empty:
        return "no item answered by both runs"
    kinds = both["item_id"].map(dict(zip(items["item_id"], items["kind"], strict=True))).to_numpy()
    stage = np.array([STAGE_OF.get(k) for k in kinds], dtype=object)
    masks: dict[Column, np.ndarray] = {c.TASK.at(t): kinds == t for t in TASKS}
    masks.update({c.STAGE_METRICS[s]: stage == s for s in STAGES})
    masks[c.OVERALL] = np.array([s is not None for s in stage])
    index = pd.Index(sorted(set(both["group_id"])))
    out = masked(both, masks, index)
    out[GROUP_EXACT_MATCH] = group_exact_match(both, index)
    return out
