"""SPUR (001): seven tasks in three stages over multi-panel scientific figures; letter parser."""

from __future__ import annotations

from core.families.spur.compare import paired_arrays  # noqa: F401
from core.families.spur.groups import (  # noqa: F401 (the family protocol)
    EVERY_PREDICTION,
    PATTERNS,
    UNANSWERED_IS_WRONG,
    outcomes,
    summary_patterns,
)
from core.families.spur.metrics import score  # noqa: F401
from core.families.spur.tables import tables  # noqa: F401
from core.families.spur.vocab import STAGE_OF
from core.report import Report
from core.schema import Item

NAME = "spur"
PARSER = "letter"
OPTIONAL_GROUPS = False
CLUSTERINGS = False
SSA = False
JUDGED_TRACES = False


def validate(items: list[Item], file: str, report: Report) -> None:
    """Every item names one of the seven tasks (001 §2)."""
    for it in items:
        if it.kind not in STAGE_OF:
            report.error(file, it.line, "kind", f"expected one of {', '.join(STAGE_OF)}, got {it.kind!r}")
