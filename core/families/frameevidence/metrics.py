"""FrameEvidence metrics (paper 000: §3, §5, §6, §7, App. A, App. D).

Every function takes the items DataFrame (all splits; `split` picks the one scored, "test" by default) and
one or more `RunData`, or one run's joined frame (frame(); score() passes the same rows as a column Table,
see "column tables" in outcomes.py); see docs/METRICS.md (FrameEvidence) for each definition, its paper
section, its edge cases and its JSON key.

Item outcome. The main metrics use each run's rotation-0 / repeat-0 predictions. As in the paper ("All
model-mode comparisons use the full question and group counts"), every item of the split is in the
denominator: an item without a prediction counts as wrong (status "missing", like invalid and api_error),
and `coverage` says how many items were answered. A prediction is correct when status == "ok" and its
original-order letter equals the gold letter (core.metrics.common.join).

Groups. An FQ1 group holds one cam, obj and scene item; an FQ2 group one mss, del and add item (validated
at import by core.families.frameevidence). A joint metric counts the groups that hold every variant it
needs; two items of one variant in one group, or a variant outside the family, raise MetricUndefined.

The metrics live by what they measure, each module under 600 lines: outcomes.py (the joined outcome tables,
coverage, groups), accuracy.py (accuracy, macro F1, the joint metrics, references, insufficiency),
analyses.py (strata, transitions, pairwise frames), repeats.py (rotations, repeats, Table 13 intervals),
paired.py (two and several runs: turnover, decomposition, the paired bootstrap, seeds, input modes). This
module is the metric set (`score`) and the family's one import point: every public name is importable here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from core import stats
from core.families.frameevidence.accuracy import (
    always_insufficient,
    core_metrics,
    dis,
    fq1_gem,
    independence,
    insufficiency,
    kind_accuracy,
    nts,
    uniform_random,
    variant_accuracy,
)
from core.families.frameevidence.analyses import (
    FRAME_PAIRS,
    OUTCOMES,
    STRATA,
    UNKNOWN,
    pairwise_frames,
    strata,
    transitions,
)
from core.families.frameevidence.outcomes import (
    BOOKKEEPING_KEYS,
    MISSING,
    Frame,
    Table,
    _outcomes,
    _scope,
    coverage,
    frame,
    groups,
)
from core.families.frameevidence.paired import (
    COMPARED,
    ROTATION_SEED_METRICS,
    SEED_METRICS,
    compare,
    decompose_change,
    input_mode_deltas,
    multi_seed,
    seed_siblings,
    turnover,
)
from core.families.frameevidence.repeats import (
    DEFAULT_CLUSTERINGS,
    TABLE13_KEYS,
    primary_run,
    repeat_intervals,
    repeat_table,
    rotations,
)
from core.families.frameevidence.vocab import CLASSES, FQ1, FQ1_VARIANTS, FQ2, FQ2_VARIANTS, VARIANTS
from core.schema import Rate, RunData

__all__ = [  # the family's metric names, as before the split (tests and the family's modules read them here)
    "BOOKKEEPING_KEYS",
    "CLASSES",
    "COMPARED",
    "DEFAULT_CLUSTERINGS",
    "FQ1",
    "FQ1_VARIANTS",
    "FQ2",
    "FQ2_VARIANTS",
    "FRAME_PAIRS",
    "Frame",
    "MISSING",
    "OUTCOMES",
    "ROTATION_SEED_METRICS",
    "SEED_METRICS",
    "STRATA",
    "TABLE13_KEYS",
    "Table",
    "UNKNOWN",
    "VARIANTS",
    "always_insufficient",
    "compare",
    "core_metrics",
    "coverage",
    "decompose_change",
    "dis",
    "fq1_gem",
    "frame",
    "groups",
    "independence",
    "input_mode_deltas",
    "insufficiency",
    "kind_accuracy",
    "multi_seed",
    "nts",
    "pairwise_frames",
    "primary_run",
    "repeat_intervals",
    "repeat_table",
    "rotations",
    "score",
    "seed_siblings",
    "strata",
    "transitions",
    "turnover",
    "uniform_random",
    "variant_accuracy",
]


# --------------------------------------------------------------------------- the metric set


def score(items: pd.DataFrame, run: RunData, others: Sequence[RunData] = (), split: str | None = "test",
          clusterings: Sequence[stats.Clustering] | None = None, **_: Any) -> dict[str, Any]:
    """Every FrameEvidence metric of one run on one split (SPEC §5); see docs/METRICS.md (FrameEvidence)."""
    others = list(others or [])
    scope = _scope(items, split)
    df = _outcomes(items, run, split)  # frame()'s rows as an item table
    out: dict[str, Any] = {"split": split, "items": len(df), "coverage": coverage(df)}
    out.update(core_metrics(df))
    out["independence"] = independence(df)
    out["variant_accuracy"] = variant_accuracy(df)
    out["kind_accuracy"] = kind_accuracy(df)
    out["reference"] = {"uniform_random": uniform_random(scope), "always_insufficient": always_insufficient(scope)}
    rot = rotations(items, run, split)
    out.update({k: rot[k] for k in ("vanilla", "circular", "consistency", "mean_rotation", "drop")})
    out["per_rotation"] = rot["per_rotation"]
    out["repeats"] = repeat_table(items, run, split)
    out["repeat_intervals"] = repeat_intervals(items, run, others, split, tuple(clusterings or DEFAULT_CLUSTERINGS))
    out["insufficiency"] = insufficiency(df)
    out["strata"] = strata(df)
    out["transitions"] = transitions(df)
    out["pairwise_frames"] = pairwise_frames(df)
    out["input_modes"] = input_mode_deltas(items, run, others, split)
    if (run.config or {}).get("seed") is None:
        out["seeds"] = Rate.undefined("run config has no seed")
    else:
        siblings = seed_siblings(run, others)
        out["seeds"] = (multi_seed(items, [run, *siblings], split) if siblings
                        else Rate.undefined("no other run differs from this one only in seed"))
    return out
