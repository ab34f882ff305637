"""StemBind S1–S4 stage rules (002 §3.1 stages, App. C.3 first failure): one place for every caller."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from core.families.stembind.vocab import NO_FAILURE, STAGES


def _flag(value: Any) -> bool | None:
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return None
    if isinstance(value, str):
        v = value.strip().lower()
        if v in ("1", "true", "yes", "y", "t"):
            return True
        if v in ("0", "false", "no", "n", "f"):
            return False
        return None
    return bool(value)


def first_failure(flags: Iterable[bool | None]) -> str:
    """The first stage marked false walking S1 -> S4 (C.3); unknown stages are stepped over; "none" if none."""
    for stage, flag in zip(STAGES, flags, strict=False):
        if flag is False:
            return stage
    return NO_FAILURE


def inconsistent(flags: Iterable[bool | None]) -> bool:
    """A stage marked true after an earlier stage marked false (the flags break the S1 -> S4 order)."""
    seen_false = False
    for flag in flags:
        if flag is False:
            seen_false = True
        elif flag is True and seen_false:
            return True
    return False
