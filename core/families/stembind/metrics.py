"""StemBind metrics (paper 002: §3.3, §4.3-4.5, App. A.2, A.3, C.3, C.5, D.2-D.5): `score`, the metric set of one
run, its partner runs and `prefetch`; the measures themselves live by what they measure in outcomes.py (item
outcomes, accuracies), binding.py (stem level, binding gap, VisualGain, ThinkGain), ssa.py (the SSA curve) and
traces.py (L2 / L3, tokens, error audit), and are re-exported here.

Every function takes the items DataFrame of the split being scored and one or more `RunData`; see
docs/METRICS.md (StemBind) for each definition, its paper section and its edge cases.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from core import stats
from core.catalogue import Scores
from core.families.protocol import ScoreOptions
from core.families.stembind import catalogue as c
from core.families.stembind.binding import (
    _attach_cis,
    _ci_arrays,
    _kind_masks,
    _paired_arrays,
    _paired_outcomes,
    _row_stems,
    _stem_block,
    _stem_columns,
    _stem_sums,
    _without_cap_hits,
    binding_gap_from_flags,
    cap_hit_items,
    decompose,
    stem_metrics,
    stem_table,
    think_gain,
    visual_gain,
)
from core.families.stembind.outcomes import (
    DEFAULT_SEED,
    FAMILIES,
    _accuracy_block,
    _config,
    _input_mode,
    _ssa_level,
    _strategy,
    accuracies,
    item_outcomes,
    operation_family,
)
from core.families.stembind.ssa import isotonic_envelope, ssa_curve, ssa_text_removed
from core.families.stembind.stages import _flag, first_failure, inconsistent
from core.families.stembind.traces import ERROR_CATEGORIES, TERCILES, error_audit, l2_profile, token_stats
from core.families.stembind.vocab import DECOMPOSITION, KINDS, NO_FAILURE, SSA_CONTROL, SSA_LEVELS, STAGES
from core.schema import Rate, RunData

# the measures re-exported here, where the family package, the tests and the benches import them
__all__ = [
    "DECOMPOSITION", "DEFAULT_SEED", "ERROR_CATEGORIES", "FAMILIES", "KINDS", "NO_FAILURE", "SSA_CONTROL",
    "SSA_LEVELS", "STAGES", "TERCILES", "_flag", "accuracies", "binding_gap_from_flags", "cap_hit_items",
    "decompose", "error_audit", "find_ssa_runs", "find_text_partner", "find_think_partner", "first_failure",
    "inconsistent", "isotonic_envelope", "item_outcomes", "l2_profile", "operation_family", "prefetch", "score",
    "ssa_curve", "ssa_text_removed", "stem_metrics", "stem_table", "think_gain", "token_stats", "visual_gain",
]

# --------------------------------------------------------------------------- partners and score


def _same_model(a: RunData, b: RunData) -> bool:
    return a.benchmark == b.benchmark and _config(a, "model") == _config(b, "model")


def _pick(candidates: list[RunData]) -> RunData | None:
    return sorted(candidates, key=lambda r: r.name)[0] if candidates else None


def find_text_partner(run: RunData, others: Iterable[RunData]) -> RunData | None:
    """Same model and strategy, same SSA level, input_mode text."""
    return _pick([
        o for o in others
        if o is not run and _same_model(run, o) and _strategy(o) == _strategy(run)
        and _ssa_level(o) == _ssa_level(run) and _input_mode(o) == "text"
    ])


def find_think_partner(run: RunData, others: Iterable[RunData]) -> RunData | None:
    """Same model, input mode and SSA level, the other of direct / thinking."""
    want = {"direct": "thinking", "thinking": "direct"}.get(_strategy(run))
    return _pick([
        o for o in others
        if o is not run and _same_model(run, o) and _strategy(o) == want
        and _input_mode(o) == _input_mode(run) and _ssa_level(o) == _ssa_level(run)
    ])


def find_ssa_runs(run: RunData, others: Iterable[RunData]) -> dict[str, RunData]:
    """Runs of the same model and input mode keyed by ssa_level, whatever their strategy (a run of the SSA
    protocol says strategy "ssa"; the run scored is usually the model's direct or thinking run); the unaugmented
    run of the scored run's strategy stands for H0 when no run says H0 explicitly."""
    pool = [run, *[o for o in others if o is not run]]
    same = [o for o in pool if _same_model(run, o) and _input_mode(o) == _input_mode(run)
            and (_ssa_level(o) is not None or _strategy(o) == _strategy(run))]
    by_level: dict[str, RunData] = {}
    for level in (*SSA_LEVELS, SSA_CONTROL):
        pick = _pick([o for o in same if _ssa_level(o) == level])
        if pick is not None:
            by_level[level] = pick
    if by_level and "H0" not in by_level:
        base = [o for o in same if _ssa_level(o) is None]
        if base:
            by_level["H0"] = run if run in base else _pick(base)  # type: ignore[assignment]
    return by_level


def prefetch(items: pd.DataFrame, runs: Iterable[RunData], seed: int | None = DEFAULT_SEED) -> None:
    """Resample, in one pass, the per-stem columns that `score` will bootstrap for each of `runs`.

    Only useful inside an active `stats.ScoringContext` (scoring many runs at once); otherwise it does nothing. The
    columns are built by the same helpers as the metrics (item-rate CIs by kind over sorted stems; paired
    differences overall and by kind over stems in order of appearance, for the runs in a VG or ThinkGain pair
    among `runs`), so each later request finds its
    resampled sums in the cache. A request that differs (a partner that left items unanswered) is simply
    computed when asked: the cache only ever returns the sums of the very columns asked for.
    """
    context = stats.current_context()
    if context is None or seed is None:
        return
    cache = context.draws
    by_size: dict[int, list[np.ndarray]] = {}
    runs = list(runs)
    think = _think_pairs(runs)
    paired = _paired_masks(runs, think)
    for run in runs:
        out = item_outcomes(items, run)
        if not len(out):
            continue
        masks = _kind_masks(out, items)
        k, n = _ci_arrays(out, tuple(masks[kind] for kind in KINDS), items)
        by_size.setdefault(k.shape[0], []).extend([k, n])
        if id(run) not in paired:
            continue
        stems = _row_stems(items, out)
        group = out["group_id"].to_numpy(dtype=object) if stems is None else stems
        correct = out["correct"].to_numpy(dtype=bool)
        for mask in [None, *(masks[kind] for kind in KINDS)] if paired[id(run)] else [masks[kind] for kind in KINDS]:
            if mask is None or mask.any():
                ka, _, nn = _stem_sums(group, correct, correct, mask)
                by_size.setdefault(len(ka), []).extend([ka[:, None], nn[:, None]])
    for direct, thinking in think:  # ThinkGain without cap-hit items: subsets of the stems
        both = _paired_outcomes(items, direct, thinking)
        keep, _ = _without_cap_hits(items, direct, thinking, both)
        if keep is None:
            continue
        masks, stems = _kind_masks(both, items), _row_stems(items, both)
        for kind in KINDS:
            if (masks[kind] & keep).any():
                ka, kb, nn = _paired_arrays(both, masks[kind] & keep, stems)
                by_size.setdefault(len(ka), []).extend([kb[:, None], nn[:, None], ka[:, None]])
    for columns in by_size.values():
        stacked = np.hstack(columns).astype(float)
        cache.prefetch(stacked[:, ~_duplicate_columns(stacked)], stats.DEFAULT_DRAWS, seed)


def _paired_masks(runs: list[RunData], think: list[tuple[RunData, RunData]]) -> dict[int, bool]:
    """id(run) -> whether its paired-difference columns over every item are wanted (True: it is in a VG pair,
    whose overall difference takes them) or only those by kind (False: ThinkGain alone), for each run of `runs`
    in a pair that `score` finds among them; a run in no pair has none resampled (nothing asks for them)."""
    paired: dict[int, bool] = {id(r): False for pair in think for r in pair}
    for run in runs:
        if _input_mode(run) != "text":
            partner = find_text_partner(run, [o for o in runs if o is not run])
            if partner is not None:
                paired[id(run)] = paired[id(partner)] = True
    return paired


def _think_pairs(runs: Iterable[RunData]) -> list[tuple[RunData, RunData]]:
    """The (direct, thinking) pairs `score` finds among `runs` (find_think_partner), each once."""
    pool = list(runs)
    pairs: dict[tuple[int, int], tuple[RunData, RunData]] = {}
    for run in pool:
        partner = find_think_partner(run, [o for o in pool if o is not run])
        if partner is not None and _strategy(run) in ("direct", "thinking"):
            direct, thinking = (run, partner) if _strategy(run) == "direct" else (partner, run)
            pairs.setdefault((id(direct), id(thinking)), (direct, thinking))
    return list(pairs.values())


def _duplicate_columns(a: np.ndarray) -> np.ndarray:
    """Columns equal to an earlier column."""
    seen: set[bytes] = set()
    dup = np.zeros(a.shape[1], dtype=bool)
    for j in range(a.shape[1]):
        key = np.ascontiguousarray(a[:, j]).tobytes()
        dup[j] = key in seen
        seen.add(key)
    return dup


def _or_reason(value: dict[str, Any]) -> Any:
    return Rate.undefined(value["reason"]) if set(value) == {"reason"} else value


def score(items: pd.DataFrame, run: RunData, others: Sequence[RunData], options: ScoreOptions) -> Scores:
    """Every StemBind metric of `run` (its catalogue); paired metrics find their partner in `others` or give a
    reason. `options.judgements`: the run's trace judgements (L2 StepAcc, L3 AttrTag); `options.labels`:
    error-audit labels with a `category` column (adds `error_audit`); `options.seed=None` skips the bootstrap
    CIs."""
    seed = options.seed
    others = [o for o in others if o is not run]
    outcomes = item_outcomes(items, run)
    acc = _accuracy_block(outcomes, items)
    masks = _kind_masks(outcomes, items)
    _attach_cis(outcomes, [(acc[f"{k.lower()}_accuracy"], masks[k]) for k in KINDS], seed, items)
    stem = _stem_block(_stem_columns(items, outcomes)[0], seed)
    result = Scores({c.P_ACCURACY: acc["p_accuracy"], c.R_ACCURACY: acc["r_accuracy"], c.F_ACCURACY: acc["f_accuracy"],
                     c.RF_GAP: acc["rf_gap"], c.BY_OPERATION: acc["by_operation"], c.BY_FAMILY: acc["by_family"],
                     c.DECOMPOSITION_BLOCK: stem["decomposition"], c.BINDING_GAP: stem["binding_gap"],
                     c.F_GIVEN_PR: stem["f_given_pr"], c.STEM_COHERENT: stem["stem_coherent"],
                     c.LUCKY_GUESS: stem["lucky_guess"]})

    if _input_mode(run) == "text":
        result[c.VG] = Rate.undefined("this run is itself text-only")
    else:
        partner = find_text_partner(run, others)
        result[c.VG] = (visual_gain(items, run, partner, seed) if partner is not None else Rate.undefined(
            "no text-only run of the same model and strategy"))

    if _strategy(run) not in ("direct", "thinking"):
        result[c.THINK_GAIN] = Rate.undefined(f"strategy {_strategy(run)!r} has no direct / thinking pair")
    else:
        partner = find_think_partner(run, others)
        if partner is None:
            result[c.THINK_GAIN] = Rate.undefined("no paired direct / thinking run of the same model")
        else:
            direct, thinking = (run, partner) if _strategy(run) == "direct" else (partner, run)
            result[c.THINK_GAIN] = think_gain(items, direct, thinking, seed)

    if _strategy(run) == "ssa":
        result[c.SSA_TEXT_REMOVED] = ssa_text_removed(run)
    levels = find_ssa_runs(run, others)
    result[c.SSA] = (_or_reason(ssa_curve(items, levels)) if levels else Rate.undefined(
        "no SSA runs (config ssa_level) of this model"))

    l2 = l2_profile(items, run, options.judgements)
    result[c.L2] = _or_reason({k: v for k, v in l2.items() if k != "attr_tag"})
    result[c.L3_ATTR_TAG] = l2["attr_tag"] if "attr_tag" in l2 else Rate.undefined(l2.get("reason", ""))
    result[c.TOKENS] = _or_reason(token_stats(items, run))
    if options.labels is not None:
        result[c.ERROR_AUDIT] = _or_reason(error_audit(items, run, options.labels))
    return result
