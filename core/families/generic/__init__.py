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
    groups=groups.RULES,
    tables=tables,
    paired_arrays=compare.paired_arrays,
    capabilities=Capabilities(optional_groups=True),  # group_id and kind may be left out: each item its own group
    view="ui.views.generic",
)
