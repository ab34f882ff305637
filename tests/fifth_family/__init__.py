"""A fifth benchmark family that exists only in the tests (#22 point 6): "parity", whose groups pair one odd
and one even item. Its whole definition is this package (the Family below and its view, view.py); no file
outside it names it, and importing it registers it (`core.families.register`). It reuses the generic family's
metrics, outcomes, patterns, comparison and tables, so the generic paths (import, score, Browse, Compare,
Metrics, export) are all it needs. tests/test_fifth_family.py drives them."""

from __future__ import annotations

from collections import defaultdict

from core import families
from core.families.generic import FAMILY as GENERIC
from core.report import Report
from core.schema import Item

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


FAMILY = families.register(families.Family(
    name="parity",
    parser="letter",
    kinds=KINDS,
    validate=validate,
    catalogue=GENERIC.catalogue,
    score=GENERIC.score,  # accuracy, macro P / R / F1, group exact match, ...
    groups=GENERIC.groups,  # the rotation-0 / repeat-0 prediction decides an item; generic patterns
    tables=GENERIC.tables,
    paired_arrays=GENERIC.paired_arrays,
    view="tests.fifth_family.view",
))
