"""SPUR (001): seven tasks in three stages over multi-panel scientific figures; letter parser."""

from __future__ import annotations

from core.families.protocol import Capabilities, Family
from core.families.spur import compare, groups, metrics
from core.families.spur.tables import SHORTCUT_TABLE, tables
from core.families.spur.vocab import STAGE_OF, TASKS
from core.report import Report
from core.schema import Item


def validate(items: list[Item], file: str, report: Report) -> None:
    """Every item names one of the seven tasks (001 §2)."""
    for it in items:
        if it.kind not in STAGE_OF:
            report.error(file, it.line, "kind", f"expected one of {', '.join(STAGE_OF)}, got {it.kind!r}")


FAMILY = Family(
    name="spur",
    parser="letter",
    kinds=TASKS,
    validate=validate,
    score=metrics.score,
    groups=groups.RULES,
    tables=tables,
    paired_arrays=compare.paired_arrays,
    stage_of=STAGE_OF,
    capabilities=Capabilities(shortcut_table=SHORTCUT_TABLE),  # the text-only shortcut filter (001 §2.3)
    view="ui.views.spur",
)
