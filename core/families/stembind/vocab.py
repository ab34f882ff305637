"""StemBind (002) vocabulary, defined once; every prompt, judge rubric, metric, table, view, demo and bench
imports it from here (or from the package, which re-exports it)."""

from __future__ import annotations

from core.schema import STAGE_NAMES, STAGES

# §3.1: every stem is probed three ways on the same visual evidence: Perception, Rule, Full.
KINDS = ("P", "R", "F")
# §3.1, Figure 1: nine operations in two families, Rule Induction (RI) and Visual Processing (VP).
RI_OPERATIONS = ("RI-Pos", "RI-Sty", "RI-Attr", "RI-Qty", "RI-Rel")
VP_OPERATIONS = ("VP-Fold", "VP-View", "VP-Rot", "VP-Closure")
OPERATIONS = RI_OPERATIONS + VP_OPERATIONS
OPERATION_FAMILIES = ("RI", "VP")
# §4.3 (ii): the stem-level failure decomposition.
DECOMPOSITION = ("solved", "cant_bind", "cant_reason", "cant_see")
# §3.3, App. C.5: SSA levels H0 (raw input) .. H4 (target-instance description), and the irrelevant-S1 control.
SSA_LEVELS = ("H0", "H1", "H2", "H3", "H4")
SSA_CONTROL = "irrelevant"
SSA_CHOICES = (*SSA_LEVELS, SSA_CONTROL)
# The first-failure value of a trace with no failing stage (App. C.3), and of an attribution a stage left
# unknown before the first failure cannot decide (core.families.stembind.stages.first_failure, policy "stop").
NO_FAILURE = "none"
UNDECIDED = "undecided"

__all__ = ["DECOMPOSITION", "KINDS", "NO_FAILURE", "OPERATIONS", "OPERATION_FAMILIES", "RI_OPERATIONS",
           "SSA_CHOICES", "SSA_CONTROL", "SSA_LEVELS", "STAGES", "STAGE_NAMES", "UNDECIDED", "VP_OPERATIONS"]
