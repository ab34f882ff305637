"""generic paired arrays of the comparison engine (core.comparison)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from core.comparison import _item_pairs, _masked
from core.schema import RunData


def _generic_arrays(items: pd.DataFrame, run: RunData, other: RunData) -> Any:
    from core.metrics import common

    def base(r: RunData) -> pd.DataFrame:
        return common.select(common.join(items, r.preds), rotation=0, repeat=0)

    both = _item_pairs(base(run), base(other))
    if both.empty:
        return "no item answered by both runs at rotation 0, repeat 0"
    index = pd.Index(sorted(set(both["group_id"])))
    out = _masked(both, {"accuracy": np.ones(len(both), dtype=bool)}, index)
    per = both.groupby("group_id")[["correct_t", "correct_o"]].all().reindex(index)
    ones = np.ones(len(index))
    out["group_exact_match"] = (per["correct_t"].to_numpy(dtype=float), ones, per["correct_o"].to_numpy(dtype=float),
                                ones)
    return out
