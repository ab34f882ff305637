"""StemBind's stage judging (002 §3.3, App. C.3, C.4, D.4): what the generic judge, labels, calibration and
trace view read about its S1-S4 traces, as one `StageJudging` (`JUDGING`).

- the stages S1 Encode, S2 Infer, S3 Map, S4 Apply (002 §3.1) of the Full (F) item's trace;
- the first-failure rule (core.families.stembind.stages: the first stage marked false walking S1 -> S4);
- the judge's prompt pieces (prompt version l2-v2; docs/JUDGE.md): system message, per-stage grading rules,
  reply format, the task metadata shown;
- calibration strata (C.3): per operation, the F traces spread over three outcome bins (F correct; F wrong
  with the stem's R probe correct; F wrong with R wrong);
- the error audit (D.4, Table 25): six first-decisive-error categories and the per-100-items summary.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from core.families.stage_judging import StageJudging
from core.families.stembind.stages import SKIP, STOP, first_failure, inconsistent
from core.families.stembind.traces import ERROR_CATEGORIES, error_audit
from core.families.stembind.vocab import NO_FAILURE, STAGE_NAMES, STAGES, UNDECIDED
from core.metrics.common import join
from core.schema import RunData

PROMPT_VERSION = "l2-v2"  # v2: the stages carry the 002 §3.1 names (S1 Encode ... S4 Apply)

SYSTEM_PROMPT = (
    "You are a strict grader of visual-reasoning traces. You compare a model's free-text reasoning trace with "
    "four verified ground-truth stage targets and decide, stage by stage, whether the trace gets that stage "
    "right. You never solve the puzzle yourself and you never reward a stage the trace does not state."
)

STAGE_RULES = {
    "S1": f"S1 {STAGE_NAMES['S1']}: the trace describes the visible panels / elements consistently with the S1 target "
          "(right entities, attributes and counts; a missing or wrong key element is 0).",
    "S2": f"S2 {STAGE_NAMES['S2']}: the trace states the rule of the S2 target or an equivalent rule (a different or "
          "mutated rule is 0; no rule stated is 0).",
    "S3": f"S3 {STAGE_NAMES['S3']}: the trace applies the rule to the right slot / instance as in the S3 target (applying a "
          "correct rule to the wrong row, panel or instance is 0).",
    "S4": f"S4 {STAGE_NAMES['S4']}: the trace's final choice follows from its mapping and matches the S4 target's option "
          "(a correct option reached by a wrong mapping is still 1 here; a switch to another option is 0).",
}

OUTPUT_SPEC = (
    "Reply with one JSON object and nothing else, exactly these keys:\n"
    '{"S1": 0 or 1, "S2": 0 or 1, "S3": 0 or 1, "S4": 0 or 1, "first_failure": "S1" | "S2" | "S3" | "S4" | '
    '"none", "rationale": "<one short sentence>"}\n'
    "Judge every stage on its own (do not stop at the first failure); first_failure is the first stage you "
    "marked 0, walking S1 -> S4, or \"none\"."
)

KEY = ["item_id", "rotation", "repeat"]
STRATUM = "operation"  # C.3: the sample is stratified by operation
OUTCOME_BINS = ("F correct", "F wrong, R correct", "F wrong, R wrong")


def trace_strata(items: pd.DataFrame, run: RunData) -> pd.DataFrame:
    """One row per F-item prediction of `run`: item_id, rotation, repeat, group_id, operation, f_correct,
    r_correct, outcome. r_correct: the stem's R probe(s) all answered correctly by the same run (an R probe
    never answered, invalid or api_error counts as not correct); outcome: one of OUTCOME_BINS."""
    from core.families.stembind.metrics import item_outcomes

    cols = [*KEY, "group_id", "operation", "f_correct", "r_correct", "outcome"]
    f_items = items[items["kind"] == "F"]
    joined = join(f_items, run.preds) if len(f_items) else None
    if joined is None or len(joined) == 0:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in cols})
    outcomes = item_outcomes(items[items["kind"] == "R"], run)
    r_by_stem = outcomes.groupby("group_id")["correct"].all() if len(outcomes) else pd.Series(dtype=bool)
    out = joined[["item_id", "rotation", "repeat", "group_id", "meta", "correct"]].copy()
    out["operation"] = [m.get(STRATUM) if isinstance(m, Mapping) else None for m in out["meta"]]
    out["f_correct"] = out["correct"].astype(bool)
    out["r_correct"] = [bool(r_by_stem.get(g, False)) for g in out["group_id"]]
    out["outcome"] = [OUTCOME_BINS[0] if f else (OUTCOME_BINS[1] if r else OUTCOME_BINS[2])
                      for f, r in zip(out["f_correct"], out["r_correct"], strict=True)]
    out["rotation"] = out["rotation"].astype(int)
    out["repeat"] = out["repeat"].astype(int)
    return out[cols].sort_values(KEY).reset_index(drop=True)


JUDGING: StageJudging = StageJudging(
    stages=STAGES,
    stage_names=STAGE_NAMES,
    judged_kind="F",
    first_failure=first_failure,
    inconsistent=inconsistent,
    no_failure=NO_FAILURE,
    undecided=UNDECIDED,
    skip=SKIP,
    stop=STOP,
    prompt_version=PROMPT_VERSION,
    system_prompt=SYSTEM_PROMPT,
    stage_rules=STAGE_RULES,
    output_spec=OUTPUT_SPEC,
    prompt_meta=("operation", "perception_load", "layout", "family"),
    answer_stage="S4",
    stratum=STRATUM,
    outcome_bins=OUTCOME_BINS,
    trace_strata=trace_strata,
    audit_categories=ERROR_CATEGORIES,
    error_audit=error_audit,
)
