"""stembind paired arrays of the comparison engine (core.comparison)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from core.comparison import _item_pairs, _masked
from core.schema import RunData


def _stembind_arrays(items: pd.DataFrame, run: RunData, other: RunData) -> Any:
    from core.families.stembind import metrics as sb

    oa, ob = sb.item_outcomes(items, run), sb.item_outcomes(items, other)
    both = _item_pairs(oa, ob)
    if both.empty:
        return "no item answered by both runs"
    ta, tb = sb.stem_table(items, oa), sb.stem_table(items, ob)
    index = pd.Index(sorted(set(both["group_id"]) | set(ta.index[ta["complete"]])), name="group_id")
    kinds = both["item_id"].map(dict(zip(items["item_id"], items["kind"], strict=True)))
    out = _masked(both, {f"{k.lower()}_accuracy": (kinds == k).to_numpy() for k in sb.KINDS}, index)
    done = (ta["complete"] & tb["complete"]).reindex(index, fill_value=False).to_numpy(dtype=bool)
    ta, tb = ta.reindex(index), tb.reindex(index)

    def flags(t: pd.DataFrame, col: str) -> np.ndarray:
        return t[col].fillna(False).to_numpy(dtype=bool) & done

    cond_t, cond_o = flags(ta, "p_all") & flags(ta, "r"), flags(tb, "p_all") & flags(tb, "r")
    out["binding_gap"] = (cond_t & ~flags(ta, "f"), cond_t, cond_o & ~flags(tb, "f"), cond_o)
    out["stem_coherent"] = (cond_t & flags(ta, "f"), done, cond_o & flags(tb, "f"), done)
    return out
