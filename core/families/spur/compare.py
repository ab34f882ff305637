"""spur paired arrays of the comparison engine (core.comparison)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from core.comparison import _item_pairs, _masked
from core.schema import RunData


def _spur_arrays(items: pd.DataFrame, run: RunData, other: RunData) -> Any:
    from core.families.spur import metrics as spur

    both = _item_pairs(spur.item_outcomes(items, run), spur.item_outcomes(items, other))
    if both.empty:
        return "no item answered by both runs"
    kinds = both["item_id"].map(dict(zip(items["item_id"], items["kind"], strict=True))).to_numpy()
    stage = np.array([spur.STAGE_OF.get(k) for k in kinds], dtype=object)
    masks = {f"tasks.{t}": kinds == t for t in spur.TASKS}
    masks.update({s: stage == s for s in spur.STAGES})
    masks["overall"] = np.array([s is not None for s in stage])
    return _masked(both, masks, pd.Index(sorted(set(both["group_id"]))))
