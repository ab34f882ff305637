"""StemBind's stage-judging capability (002 §3.3): its S1-S4 trace stages and the judged item kind."""

from __future__ import annotations

from core.families.stage_judging import StageJudging
from core.families.stembind.vocab import STAGE_NAMES, STAGES

JUDGING = StageJudging(stages=STAGES, stage_names=STAGE_NAMES, judged_kind="F")
