"""StemBind S1–S4 stage rules (002 §3.1 stages, App. C.3 first failure): one place for every caller."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from core.families.stembind.vocab import NO_FAILURE, STAGES, UNDECIDED


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


# What first_failure does with a stage whose flag is unknown (None / NaN), walking S1 -> S4:
SKIP = "skip"  # step over it; a later false stage is the first failure (a judge's flags, 002 App. C.3)
STOP = "stop"  # stop the scan there and report UNDECIDED (a consensus tie must not move the failure later)
UNKNOWN_POLICIES = (SKIP, STOP)


def first_failure(flags: Iterable[Any], unknown: str = SKIP) -> str:
    """The first stage marked false walking S1 -> S4 (002 App. C.3), NO_FAILURE ("none") when none is.

    Flags are read as _flag reads them (booleans, 0 / 1, "true" / "0" ...); None, NaN or any other text
    is an unknown stage, handled by `unknown`: SKIP ("skip", the
    default: the L2 histogram, a judgement's stored first failure, the Judge tab) steps over it; STOP
    ("stop": the annotators' consensus in calibration) stops the scan and returns UNDECIDED ("undecided")
    when an unknown stage comes before the first false one. Either way an unknown stage is never a failure.
    """
    if unknown not in UNKNOWN_POLICIES:
        raise ValueError(f"unknown-stage policy {unknown!r}; expected one of {', '.join(UNKNOWN_POLICIES)}")
    for stage, value in zip(STAGES, flags, strict=False):
        flag = _flag(value)
        if flag is None:
            if unknown == STOP:
                return UNDECIDED
            continue
        if not flag:
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
