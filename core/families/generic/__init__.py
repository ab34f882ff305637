"""Generic multiple-choice family: any kind; groups are whatever group_id says."""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.families.generic.catalogue import CATALOGUE
from core.families.protocol import Capabilities, Family, deferred
from core.report import Report
from core.schema import Item

if TYPE_CHECKING:
    from core.families.generic import compare as _compare
    from core.families.generic import groups as _groups
    from core.families.generic import metrics as _metrics
    from core.families.generic import tables as _tables
else:  # imported on first use (protocol.deferred); not bound to their own names, which `from ... import` reads
    _compare, _groups, _metrics, _tables = deferred(__name__, "compare", "groups", "metrics", "tables")


def validate(items: list[Item], file: str, report: Report) -> None:
    """Only the basic item rules (core/formats.py) apply."""


FAMILY = Family(
    name="generic",
    parser="letter",
    kinds=(),  # any kind
    validate=validate,
    catalogue=CATALOGUE,
    score=_metrics.score,
    groups=_groups.RULES,
    tables=_tables.tables,
    paired_arrays=_compare.paired_arrays,
    capabilities=Capabilities(optional_groups=True),  # group_id and kind may be left out: each item its own group
    view="ui.views.generic",
)
