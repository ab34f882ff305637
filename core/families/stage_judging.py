"""The stage-judging capability: a family whose free traces are judged stage by stage (StemBind S1-S4, 002 §3.3).

A family that has it sets `Family.judging` to one `StageJudging`; the generic judge (core.judge), labels
(db.labels), calibration (core.calibration, db.judging) and trace-view code (ui.judge, ui.calibration,
ui.trace_view) read the stage keys and names, the judged item kind, the judge's prompt pieces, the first-failure
rule, the calibration strata and the error-audit hooks from it and never name a family. A family without it
(`of(name) is None`) shows no Judge controls.

The store keeps a judgement's or a label's flags in the stage columns S1..S4 of `judgements` and `labels`
(db/schema.py, core.schema.STAGES): a family's stage keys are those column names, in order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from core.schema import STAGES as STORED_STAGES

if TYPE_CHECKING:
    import pandas as pd

    from core.schema import RunData


class FirstFailure(Protocol):
    """The first failing stage of a flag sequence (`unknown`: what an unknown flag does, SKIP or STOP)."""

    def __call__(self, flags: Iterable[object], unknown: str = ...) -> str: ...


@dataclass(frozen=True)
class StageJudging:
    """What the generic trace judge, labels, calibration and trace view need to know about a family's stages."""

    stages: tuple[str, ...]            # stage keys in order, e.g. ("S1", "S2", "S3", "S4")
    stage_names: Mapping[str, str]     # key -> display name (002 §3.1: Encode, Infer, Map, Apply)
    judged_kind: str                   # the item kind whose traces are judged (StemBind: "F")
    # the first-failure rule (002 App. C.3)
    first_failure: FirstFailure        # flags in stage order -> a stage key, `no_failure` or `undecided`
    inconsistent: Callable[[Iterable[bool | None]], bool]  # a true stage after a false one
    no_failure: str                    # the first failure of a trace with no failing stage ("none")
    undecided: str                     # the first failure an unknown stage leaves open under `stop` ("undecided")
    skip: str                          # unknown-stage policy: step over it (a judge's flags, the L2 histogram)
    stop: str                          # unknown-stage policy: stop there (the annotators' consensus)
    # the judge's prompt (docs/JUDGE.md)
    prompt_version: str                # recorded in a model judge's identity
    system_prompt: str
    stage_rules: Mapping[str, str]     # stage key -> how to grade it
    output_spec: str                   # the reply format asked for
    prompt_meta: tuple[str, ...]       # the item `meta` keys the judge sees
    answer_stage: str | None           # the stage whose target names the answer option (the lexical judge checks it)
    # calibration sampling (002 App. C.3)
    stratum: str                       # the item `meta` field the sample is stratified by ("operation")
    outcome_bins: tuple[str, ...]      # the outcome bins spread evenly within a stratum
    trace_strata: Callable[[pd.DataFrame, RunData], pd.DataFrame]  # one row per judged trace: keys, stratum, bin
    # the error audit (002 App. D.4)
    audit_categories: tuple[str, ...]  # the categories an annotator may give a trace
    error_audit: Callable[[pd.DataFrame, RunData | None, pd.DataFrame], dict[str, Any]]

    def __post_init__(self) -> None:
        if not self.stages or any(s not in STORED_STAGES for s in self.stages):
            raise ValueError(f"stage keys {self.stages} must be among the stored stage columns {STORED_STAGES}")
        if set(self.stage_names) != set(self.stages) or set(self.stage_rules) != set(self.stages):
            raise ValueError("stage_names and stage_rules must name every stage, and only those")
