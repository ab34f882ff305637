"""The stage-judging capability: a family whose free traces are judged stage by stage (StemBind S1-S4, 002 §3.3).

A family that has it sets `Family.judging` to one `StageJudging`; the generic judge, labels and calibration code
read the stage names, the judged item kind and the prompt from it and never name a family. A family without it
(`judging is None`) shows no Judge controls.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class StageJudging:
    """What the generic trace judge needs to know about a family's reasoning stages."""

    stages: tuple[str, ...]            # stage keys in order, e.g. ("S1", "S2", "S3", "S4")
    stage_names: Mapping[str, str]     # key -> display name (002 §3.1: Encode, Infer, Map, Apply)
    judged_kind: str                   # the item kind whose traces are judged (StemBind: "F")
