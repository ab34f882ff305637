"""Generic multiple-choice family: any kind; groups are whatever group_id says."""

from __future__ import annotations

from typing import Any

from core.report import Report
from core.schema import Item, RunData

NAME = "generic"
PARSER = "letter"


def validate(items: list[Item], file: str, report: Report) -> None:
    """Only the basic item rules (core/formats.py) apply."""


def score(items: Any, run: RunData, others: list[RunData], **kw: Any) -> dict[str, Any]:
    from core.families.generic import metrics as generic

    return generic.score(items, run, others, **kw)
