"""SPUR (001): seven tasks in three stages over multi-panel scientific figures; letter parser."""

from __future__ import annotations

from typing import Any

from core.families.spur.vocab import STAGE_OF
from core.report import Report
from core.schema import Item, RunData

NAME = "spur"
PARSER = "letter"


def validate(items: list[Item], file: str, report: Report) -> None:
    """Every item names one of the seven tasks (001 §2)."""
    for it in items:
        if it.kind not in STAGE_OF:
            report.error(file, it.line, "kind", f"expected one of {', '.join(STAGE_OF)}, got {it.kind!r}")


def score(items: Any, run: RunData, others: list[RunData], **kw: Any) -> dict[str, Any]:
    from core.families.spur import metrics as spur

    return spur.score(items, run, others, **kw)
