"""Generic-family paired arrays of the comparison engine (core.comparison): accuracy and group exact match
over the items both runs answered at rotation 0, repeat 0."""

from __future__ import annotations

import numpy as np
import pandas as pd

from core.comparison import Paired, group_exact_match, item_pairs, masked
from core.groups import answered_outcomes
from core.metrics.catalogue import ACCURACY, GROUP_EXACT_MATCH
from core.schema import RunData


def paired_arrays(items: pd.DataFrame, run: RunData, other: RunData) -> Paired | str:
    both = item_pairs(answered_outcomes(run.family, items, run), answered_outcomes(other.family, items, other))
    if both.empty:
        return "no item answered by both runs at rotation 0, repeat 0"
    index = pd.Index(sorted(set(both["group_id"])))
    out = masked(both, {ACCURACY: np.ones(len(both), dtype=bool)}, index)
    out[GROUP_EXACT_MATCH] = group_exact_match(both, index)
    return out
