"""SPUR (001) paired arrays of the comparison engine (core.comparison): the seven tasks, the three stage
averages, overall accuracy and figure exact match, over the items both runs answered."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from core.comparison import group_exact_match, item_pairs, masked
from core.families.spur import metrics as sp
from core.families.spur.vocab import STAGE_OF, STAGES, TASKS
from core.schema import RunData


def paired_arrays(items: pd.DataFrame, run: RunData, other: RunData) -> Any:
    both = item_pairs(sp.item_outcomes(items, run), sp.item_outcomes(items, other))
    if both.empty:
        return "no item answered by both runs"
    kinds = both["item_id"].map(dict(zip(items["item_id"], items["kind"], strict=True))).to_numpy()
    stage = np.array([STAGE_OF.get(k) for k in kinds], dtype=object)
    masks = {f"tasks.{t}": kinds == t for t in TASKS}
    masks.update({s: stage == s for s in STAGES})
    masks["overall"] = np.array([s is not None for s in stage])
    index = pd.Index(sorted(set(both["group_id"])))
    out = masked(both, masks, index)
    out["group_exact_match"] = group_exact_match(both, index)
    return out
