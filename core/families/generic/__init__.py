"""Generic multiple-choice family: any kind; groups are whatever group_id says."""

from __future__ import annotations

from core.families.generic import compare, groups, metrics
from core.families.generic.tables import tables
from core.families.protocol import Capabilities, Family
from core.report import Report
from core.schema import Item


def validate(items: list[Item], file: str, report: Report) -> None:
    """Only the basic item rules (core/formats.py) apply."""


FAMILY = Family(
    name="generic",
    parser="letter",
    kinds=(),  # any kind
    validate=validate,
    score=metrics.score,
    outcomes=groups.outcomes,
    summary_patterns=groups.summary_patterns,
    tables=tables,
    patterns=tuple(groups.PATTERNS),
    every_prediction=groups.EVERY_PREDICTION,
    unanswered_is_wrong=groups.UNANSWERED_IS_WRONG,
    paired_arrays=compare.paired_arrays,
    capabilities=Capabilities(optional_groups=True),  # group_id and kind may be left out: each item its own group
    view="ui.views.generic",
)
