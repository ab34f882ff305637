"""StemBind (002) paired arrays of the comparison engine (core.comparison): P / R / F and overall item
accuracy and stem exact match over the items both runs answered, binding gap and StemCoherent over the stems
complete in both runs (§4.3)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from core.catalogue import Column
from core.comparison import Paired, group_exact_match, item_pairs, masked
from core.families.stembind import catalogue as c
from core.families.stembind import metrics as sb
from core.families.stembind.vocab import KINDS
from core.metrics.catalogue import ACCURACY, GROUP_EXACT_MATCH
from core.schema import RunData


def paired_arrays(items: pd.DataFrame, run: RunData, other: RunData) -> Paired | str:
    oa, ob = sb.item_outcomes(items, run), sb.item_outcomes(items, other)
    both = item_pairs(oa, ob)
    if both.empty:
        return "no item answered by both runs"
    ta, tb = sb.stem_table(items, oa), sb.stem_table(items, ob)
    index = pd.Index(sorted(set(both["group_id"]) | set(ta.index[ta["complete"]])), name="group_id")
    kinds = both["item_id"].map(dict(zip(items["item_id"], items["kind"], strict=True)))
    masks: dict[Column, np.ndarray] = {ACCURACY: np.ones(len(both), dtype=bool),
                                       **{c.KIND_ACCURACY[k]: (kinds == k).to_numpy() for k in KINDS}}
    out = masked(both, masks, index)
    out[GROUP_EXACT_MATCH] = group_exact_match(both, index)
    done = (ta["complete"] & tb["complete"]).reindex(index, fill_value=False).to_numpy(dtype=bool)
    ta, tb = ta.reindex(index), tb.reindex(index)

    def flags(t: pd.DataFrame, col: str) -> np.ndarray:
        return t[col].fillna(False).to_numpy(dtype=bool) & done

    cond_t, cond_o = flags(ta, "p_all") & flags(ta, "r"), flags(tb, "p_all") & flags(tb, "r")
    out[c.BINDING_GAP] = (cond_t & ~flags(ta, "f"), cond_t, cond_o & ~flags(tb, "f"), cond_o)
    out[c.STEM_COHERENT] = (cond_t & flags(ta, "f"), done, cond_o & flags(tb, "f"), done)
    return out
