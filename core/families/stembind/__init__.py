"""StemBind (002): shared-stem Perception / Rule / Full probes; <ANSWER>X</ANSWER> parser; binding metrics."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from core.families.protocol import Family, deferred
from core.families.stembind.catalogue import CATALOGUE
from core.families.stembind.vocab import KINDS, OPERATIONS, SSA_CHOICES
from core.report import Report
from core.runners.base import Strategy, StrategyOption
from core.schema import Item

if TYPE_CHECKING:
    from core.families.stembind import compare as _compare
    from core.families.stembind import groups as _groups
    from core.families.stembind import judging as _judging
    from core.families.stembind import metrics as _metrics
    from core.families.stembind import ssa_prompt as _ssa_prompt
    from core.families.stembind import tables as _tables
else:  # imported on first use (protocol.deferred); not bound to their own names, which `from ... import` reads
    _compare, _groups, _judging, _metrics, _ssa_prompt, _tables = deferred(
        __name__, "compare", "groups", "judging", "metrics", "ssa_prompt", "tables")


def validate(items: list[Item], file: str, report: Report) -> None:
    """A stem has at least one P, exactly one R and one F; F carries S1..S4 (002 §3.1, App. A.2)."""
    stems: dict[str, list[Item]] = defaultdict(list)
    for it in items:
        if it.kind not in KINDS:
            report.error(file, it.line, "kind", f"expected P, R or F, got {it.kind!r}")
            continue
        op = it.meta.get("operation")
        if op is not None and op not in OPERATIONS:
            report.error(file, it.line, "meta.operation", f"unknown operation {op!r} (expected one of "
                         f"{', '.join(OPERATIONS)})")
        if it.kind == "F" and it.stages is None:
            report.error(file, it.line, "stages", "an F item must carry stages {S1, S2, S3, S4}")
        stems[it.group_id].append(it)
    for gid, members in stems.items():
        first = min(m.line for m in members)
        counts = {k: sum(m.kind == k for m in members) for k in KINDS}
        if counts["P"] < 1:
            report.error(file, first, "kind", f"stem {gid!r} has no P probe (expected at least one)")
        for k in ("R", "F"):
            if counts[k] != 1:
                report.error(file, first, "kind", f"stem {gid!r} has {counts[k]} {k} items (expected exactly one)")
        ops = {str(m.meta["operation"]) for m in members if m.meta.get("operation")}
        if len(ops) > 1:
            report.error(file, first, "meta.operation", f"stem {gid!r} mixes operations {sorted(ops)}")
        if not ops:
            report.warn(file, first, "meta.operation", f"stem {gid!r} names no operation; per-operation tables "
                        "will list it as unknown")


# SSA (002 §3.3, App. C.5): the F items asked with the verified text of stages S1..Sk injected (H0..H4), or another
# stem's S1 (the irrelevant-S1 control), through a leakage guard whose count goes into the run config
SSA = Strategy(
    "ssa", _ssa_prompt.ssa, 1024, "tag", trace=True, kind="F",
    option=StrategyOption("ssa_level", "--ssa-level", "SSA level", SSA_CHOICES, help="H0..H4 or irrelevant"),
    prepare=_ssa_prompt.irrelevant_source, run_config=_ssa_prompt.guard_record,
    scope="StemBind benchmarks (F items with S1..S4 stages)")

FAMILY = Family(
    name="stembind",
    parser="tag",
    kinds=KINDS,
    validate=validate,
    catalogue=CATALOGUE,
    score=_metrics.score,
    prefetch=_metrics.prefetch,
    groups=_groups.RULES,
    tables=_tables.tables,
    paired_arrays=_compare.paired_arrays,
    # stage_of stays {}: its S1..S4 are stages of one trace (vocab.STAGES), not of item kinds
    judging=_judging.JUDGING,  # L2 StepAcc, L3 AttrTag read the stored trace judgements (002 §3.3)
    strategies=(SSA,),
    units_by_model=True,
    view="ui.views.stembind",
)
