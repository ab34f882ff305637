"""FrameEvidence metrics (paper 000: §3, §5, §6, §7, App. A, App. D).

Every function takes the items DataFrame (all splits; `split` picks the one scored, "test" by default) and
one or more `RunData`, or one run's joined frame (frame(); score() passes the same rows as a column Table,
see "column tables" in outcomes.py); see docs/METRICS.md (FrameEvidence) for each definition, its paper
section, its edge cases and its JSON key.

Item outcome and groups: outcomes.py's docstring (every item of the split in the denominator, an
unanswered one wrong; a joint metric counts the groups holding every variant it needs).

The metrics live by what they measure, each module under 600 lines: outcomes.py (the joined outcome tables,
coverage, groups), accuracy.py (accuracy, macro F1, the joint metrics, references, insufficiency),
analyses.py (strata, transitions, pairwise frames), repeats.py (rotations, repeats, Table 13 intervals),
paired.py (two and several runs: turnover, decomposition, the paired bootstrap, seeds, input modes). This
module is the metric set (`score`) and the family's one import point: every public name is importable here.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from core.catalogue import Scores
from core.families.frameevidence import catalogue as c
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
    headline_intervals,
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
from core.families.protocol import ScoreOptions
from core.metrics.catalogue import ROTATION_METRICS
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


def score(items: pd.DataFrame, run: RunData, others: Sequence[RunData], options: ScoreOptions) -> Scores:
    """Every FrameEvidence metric of one run on `options.split` (SPEC §5, its catalogue); see docs/METRICS.md
    (FrameEvidence). `items` holds every split (the family `scores_splits`)."""
    split = options.split
    others = list(others or [])
    scope = _scope(items, split)
    df = _outcomes(items, run, split)  # frame()'s rows as an item table
    core = core_metrics(df)
    out = Scores({c.SPLIT: split, c.ITEMS: len(df), c.COVERAGE: coverage(df)})
    out.update({m: core[m.key] for m in (c.ACCURACY, c.MACRO_PRECISION, c.MACRO_RECALL, c.MACRO_F1, *c.JOINT)})
    if options.seed is not None:  # each headline rate's interval (None skips them, as in every family)
        for key, ci in headline_intervals(items, run, split, options.draws, options.seed).items():
            if core[key].value is not None:
                core[key].ci = ci
    out[c.INDEPENDENCE] = independence(df)
    out[c.VARIANT_ACCURACY] = variant_accuracy(df)
    out[c.KIND_ACCURACY] = kind_accuracy(df)
    out[c.REFERENCE] = {"uniform_random": uniform_random(scope), "always_insufficient": always_insufficient(scope)}
    rot = rotations(items, run, split)
    out.update({m: rot[m.key] for m in ROTATION_METRICS})
    out[c.PER_ROTATION] = rot["per_rotation"]
    out[c.REPEATS] = repeat_table(items, run, split)
    out[c.REPEAT_INTERVALS] = repeat_intervals(items, run, others, split,
                                               tuple(options.clusterings or DEFAULT_CLUSTERINGS))
    out[c.INSUFFICIENCY] = insufficiency(df)
    out[c.STRATA] = strata(df)
    out[c.TRANSITIONS] = transitions(df)
    out[c.PAIRWISE] = pairwise_frames(df)
    out[c.INPUT_MODES] = input_mode_deltas(items, run, others, split)
    if (run.config or {}).get("seed") is None:
        out[c.SEEDS] = Rate.undefined("run config has no seed")
    else:
        siblings = seed_siblings(run, others)
        out[c.SEEDS] = (multi_seed(items, [run, *siblings], split) if siblings
                        else Rate.undefined("no other run differs from this one only in seed"))
    return out
