"""A fifth benchmark family that exists only in the tests: "parity", whose groups pair one odd and one even item.

Its whole definition is this package: the Family below, its own metric (catalogue.py, metrics.py: the parity gap,
odd minus even accuracy, beside generic's metrics), its own table and Metrics control (tables.py: the parity-gap
table for the picked runs or every run of the benchmark), its own prompt strategy with an option (prompt.py:
"parity-hint") and its view (view.py). It reuses generic's outcomes, patterns and comparison. Importing it
registers it (`core.families.register`); no file outside it names any of these, and the generic paths (import,
score, Browse, Compare, Metrics, the run engine, export) are all it needs. tests/test_fifth_family.py drives them.
"""

from __future__ import annotations

from collections import defaultdict

from core import families
from core.families.generic import FAMILY as GENERIC
from core.families.protocol import TableControl
from core.report import Report
from core.runners.base import Strategy, StrategyOption
from core.schema import Item
from tests.fifth_family import catalogue, metrics, prompt, tables

KINDS = ("odd", "even")


def validate(items: list[Item], file: str, report: Report) -> None:
    """Every item is odd or even; a group holds one of each."""
    members: dict[str, list[Item]] = defaultdict(list)
    for it in items:
        if it.kind not in KINDS:
            report.error(file, it.line, "kind", f"expected odd or even, got {it.kind!r}")
        members[it.group_id].append(it)
    for gid, group in members.items():
        if sorted(m.kind for m in group) != sorted(KINDS):
            report.error(file, min(m.line for m in group), "kind", f"group {gid!r} must hold one odd and one even item")


HINT = Strategy("parity-hint", prompt.parity_hint, 64, run_config=prompt.run_config,
                option=StrategyOption("parity_hint", "--parity-hint", "Parity hint", prompt.CHOICES,
                                      help="truthful (the item's own parity) or misleading (the other one)"))
ROWS = TableControl(tables.GAP_TABLE, "parity-rows", "Parity gap of", tables.choices, tables.redraw)

FAMILY = families.register(families.Family(
    name="parity",
    parser="letter",
    kinds=KINDS,
    validate=validate,
    catalogue=catalogue.CATALOGUE,
    score=metrics.score,
    groups=GENERIC.groups,  # the rotation-0 / repeat-0 prediction decides an item; generic patterns
    tables=tables.tables,
    paired_arrays=GENERIC.paired_arrays,
    strategies=(HINT,),
    controls=(ROWS,),
    view="tests.fifth_family.view",
))
