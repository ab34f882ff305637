"""The parity family's score: generic's metrics, and the parity gap (catalogue.PARITY_GAP) from its per-kind
accuracies."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from core.catalogue import Scores
from core.families.generic import catalogue as generic
from core.families.generic.metrics import score as generic_score
from core.families.protocol import ScoreOptions
from core.schema import Rate, RunData
from tests.fifth_family.catalogue import PARITY_GAP


def score(items: pd.DataFrame, run: RunData, others: Sequence[RunData], options: ScoreOptions) -> Scores:
    result = generic_score(items, run, others, options)
    per_kind = result.get(generic.PER_KIND)
    odd, even = (per_kind.get(k) if isinstance(per_kind, dict) else None for k in ("odd", "even"))
    if isinstance(odd, Rate) and isinstance(even, Rate) and odd.value is not None and even.value is not None:
        result[PARITY_GAP] = Rate(odd.value - even.value)
    else:
        result[PARITY_GAP] = Rate.undefined("no answered odd or even items")
    return result
