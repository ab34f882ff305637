"""StemBind SSA (002 §3.3, §4.4, App. C.5, D.3): the accuracy curve over the stage-augmentation levels H0..H4
and the irrelevant-S1 control, its isotonic envelope, and the leakage-guard count."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from core import stats
from core.families.stembind.outcomes import (
    _diff,
    _rows_of,
    _ssa_level,
    item_outcomes,
)
from core.families.stembind.vocab import (
    SSA_CONTROL,
    SSA_LEVELS,
)
from core.schema import Rate, RunData

# --------------------------------------------------------------------------- SSA (§4.4, C.5, D.3)


def ssa_curve(items: pd.DataFrame, runs_by_level: Mapping[str, RunData]) -> dict[str, Any]:
    """SSA accuracies per level on the F items every given run answered, raw deltas, isotonic gains and the
    irrelevant-S1 control (§3.3, §4.4, C.5, Table 22); see docs/METRICS.md (SSA) for both isotonic readings.

    Raw deltas: between consecutive present levels (e.g. "H3-H2") and against H0 (`vs_h0`). Isotonic gains
    (`isotonic`, `isotonic_gains`): per-item monotone envelopes, an item solved at one level counting as
    solved at every later level; the envelope accuracy never falls, and a step's gain counts the items first
    solved there, so it can exceed the raw gain when items solved before the step are lost at it. The fit
    of one isotonic regression to the level accuracies (weights = item counts) stays as `fit_isotonic` /
    `fit_isotonic_gains`; it can never exceed the raw gain at a rising step. Control: accuracy(irrelevant) -
    accuracy(H0).
    """
    levels = [lv for lv in SSA_LEVELS if lv in runs_by_level]
    if "H0" not in runs_by_level:
        return {"reason": "no H0 (raw input) run"}
    is_f = items["kind"].to_numpy(dtype=object) == "F"
    answered: dict[str, np.ndarray] = {}  # per level: item rows answered (F items only) and their outcome
    correct: dict[str, np.ndarray] = {}
    for lv in [*levels, *([SSA_CONTROL] if SSA_CONTROL in runs_by_level else [])]:
        o = item_outcomes(items, runs_by_level[lv])
        at = _rows_of(items, o)
        a = np.zeros(len(items), dtype=bool)
        c = np.zeros(len(items), dtype=bool)
        a[at[at >= 0]] = True
        c[at[at >= 0]] = o["correct"].to_numpy(dtype=bool)[at >= 0]
        answered[lv], correct[lv] = a & is_f, c
    common = np.logical_and.reduce(list(answered.values()))
    n_common = int(common.sum())
    if not n_common:
        return {"reason": "no F item answered under every SSA level"}
    acc = {lv: Rate.of(int((c & common).sum()), n_common) for lv, c in correct.items()}
    out: dict[str, Any] = {
        "n_items": n_common,
        "runs": {lv: runs_by_level[lv].name for lv in correct},
        "accuracy": acc,
        "raw_deltas": {f"{b}-{a}": _diff(acc[b], acc[a], "") for a, b in zip(levels, levels[1:], strict=False)},
        "vs_h0": {lv: _diff(acc[lv], acc["H0"], "") for lv in levels[1:]},
    }
    if len(levels) >= 2:
        steps = [f"{b}-{a}" for a, b in zip(levels, levels[1:], strict=False)]
        env = isotonic_envelope(np.stack([correct[lv][common] for lv in levels]))
        out["isotonic"] = {lv: float(v) for lv, v in zip(levels, env.mean(axis=1), strict=True)}
        out["isotonic_accuracy"] = {lv: Rate.of(int(env[i].sum()), n_common) for i, lv in enumerate(levels)}
        # k = items first solved at the step (the envelope never falls, so k >= 0)
        out["isotonic_gains"] = {s: Rate.of(int(env[i + 1].sum() - env[i].sum()), n_common)
                                 for i, s in enumerate(steps)}
        x = [float(SSA_LEVELS.index(lv)) for lv in levels]
        y = [float(acc[lv].value or 0.0) for lv in levels]  # every level is defined on the common items
        fit = stats.isotonic_fit(x, y, [float(n_common)] * len(levels))
        out["fit_isotonic"] = {lv: float(v) for lv, v in zip(levels, fit, strict=True)}
        out["fit_isotonic_gains"] = {s: Rate(float(fit[i + 1] - fit[i])) for i, s in enumerate(steps)}
        out["largest_raw_jump"] = max(out["raw_deltas"], key=lambda s: out["raw_deltas"][s].value)
        out["largest_isotonic_jump"] = max(out["isotonic_gains"], key=lambda s: out["isotonic_gains"][s].value)
        out["largest_fit_isotonic_jump"] = max(out["fit_isotonic_gains"],
                                               key=lambda s: out["fit_isotonic_gains"][s].value)
    if SSA_CONTROL in acc:
        out["irrelevant_minus_h0"] = _diff(acc[SSA_CONTROL], acc["H0"], "")
    out["text_removed"] = {lv: ssa_text_removed(runs_by_level[lv]) for lv in correct}
    return out


def ssa_text_removed(run: RunData) -> Rate:
    """F items whose injected stage text lost something to the leakage guard / F items of the split, as the
    runner recorded it in config.ssa_guard (002 C.5; core.prompts.ssa_guard_count)."""
    rec = (run.config or {}).get("ssa_guard")
    if not isinstance(rec, Mapping) or "text_removed" not in rec or "items" not in rec:
        if _ssa_level(run) is None:
            return Rate.undefined("not an SSA run (no stage text injected)")
        return Rate.undefined("the run config records no leakage-guard count (imported, or made before the guard)")
    return Rate.of(int(rec["text_removed"]), int(rec["items"]), "F items")


def isotonic_envelope(correct: np.ndarray) -> np.ndarray:
    """Per-item monotone envelope of a levels x items 0/1 table: an item solved at a level counts as solved at
    every later level (the running maximum down the level axis)."""
    return np.maximum.accumulate(np.asarray(correct, dtype=bool), axis=0)
