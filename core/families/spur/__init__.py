"""SPUR (001): seven tasks in three stages over multi-panel scientific figures; letter parser."""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.families.protocol import Family, TableControl, deferred
from core.families.spur.catalogue import CATALOGUE
from core.families.spur.vocab import SHORTCUT_TABLE, STAGE_OF, TASKS
from core.report import Report
from core.schema import Item

if TYPE_CHECKING:
    from core.families.spur import compare as _compare
    from core.families.spur import control as _control
    from core.families.spur import groups as _groups
    from core.families.spur import metrics as _metrics
    from core.families.spur import tables as _tables
else:  # imported on first use (protocol.deferred); not bound to their own names, which `from ... import` reads
    _compare, _control, _groups, _metrics, _tables = deferred(__name__, "compare", "control", "groups", "metrics",
                                                              "tables")


def validate(items: list[Item], file: str, report: Report) -> None:
    """Every item names one of the seven tasks (001 §2)."""
    for it in items:
        if it.kind not in STAGE_OF:
            report.error(file, it.line, "kind", f"expected one of {', '.join(STAGE_OF)}, got {it.kind!r}")


# the text-only shortcut filter's model (001 §2.3): the Metrics tab's picker above its table, the `metrics`
# endpoint's `shortcut_model` (and `score --shortcut-model` / `--shortcut-pool`, ScoreOptions.shortcut_model)
SHORTCUT = TableControl(
    SHORTCUT_TABLE, "shortcut", "Shortcut filter model (001 §2.3: one model's randomized text-only trials)",
    _control.choices, _control.redraw, argument="shortcut_model", pick=_control.pick,
    scope="SPUR benchmarks (001 §2.3)")

FAMILY = Family(
    name="spur",
    parser="letter",
    kinds=TASKS,
    validate=validate,
    catalogue=CATALOGUE,
    score=_metrics.score,
    groups=_groups.RULES,
    tables=_tables.tables,
    paired_arrays=_compare.paired_arrays,
    stage_of=STAGE_OF,
    controls=(SHORTCUT,),
    view="ui.views.spur",
)
