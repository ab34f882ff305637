"""Generic multiple-choice family: any kind; groups are whatever group_id says."""

from __future__ import annotations

from core.families.generic.compare import paired_arrays  # noqa: F401
from core.families.generic.groups import (  # noqa: F401 (the family protocol)
    EVERY_PREDICTION,
    PATTERNS,
    UNANSWERED_IS_WRONG,
    outcomes,
    summary_patterns,
)
from core.families.generic.metrics import score  # noqa: F401
from core.families.generic.tables import tables  # noqa: F401
from core.report import Report
from core.schema import Item

NAME = "generic"
PARSER = "letter"
KINDS: tuple[str, ...] = ()  # any kind
STAGE_OF: dict[str, str] = {}
OPTIONAL_GROUPS = True  # group_id and kind may be left out: each item is its own group
CLUSTERINGS = False
SSA = False
JUDGED_TRACES = False


def validate(items: list[Item], file: str, report: Report) -> None:
    """Only the basic item rules (core/formats.py) apply."""
