"""Generic multiple-choice metrics (SPEC §5 "Generic"): accuracy, macro P/R/F1, per-kind accuracy,
group exact match, and Circular / Consistency when the run has several rotations.

Definitions are those of core.metrics.common (docs/METRICS.md). Item rates use rotation 0 and
repeat 0 (the ordinary evaluation); rotation metrics use repeat 0 over every rotation in the run.
Rates carry a percentile cluster-bootstrap interval over groups (20,000 draws, core.stats).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from core import stats
from core.metrics import common
from core.schema import Rate, RunData


def _classes(df: pd.DataFrame) -> str:
    """The letters used as gold answers in the scored rows, in letter order."""
    return "".join(sorted({str(g) for g in df["gold"].dropna()}))


def _with_group_ci(rate: Rate, df: pd.DataFrame, seed: int | None, draws: int) -> Rate:
    """Attach a cluster-bootstrap interval (clusters = groups) to an item accuracy computed from `df`."""
    if seed is None or rate.value is None or df.empty:
        return rate
    per = df.groupby("group_id")["correct"].agg(["sum", "size"])
    rate.ci = stats.cluster_bootstrap(per["sum"].to_numpy(), per["size"].to_numpy(), draws=draws, seed=seed)
    return rate


def _prefetch_group_columns(df: pd.DataFrame, seed: int | None, draws: int) -> None:
    """Resample the accuracy's and the group exact match's per-group columns in one pass over the draws (they
    share the groups; a benchmark of many groups otherwise draws them once per rate). The same numbers."""
    context = stats.current_context()
    if context is None or seed is None or df.empty:
        return
    per = df.groupby("group_id")["correct"].agg(["sum", "size", "all"])
    columns = np.column_stack([per["sum"], per["size"], per["all"], np.ones(len(per))]).astype(float)
    context.draws.prefetch(columns, draws, seed)


def _gem_with_ci(df: pd.DataFrame, seed: int | None, draws: int) -> Rate:
    """Group exact match; its interval resamples groups (one 0/1 observation each)."""
    rate = common.group_exact_match(df)
    if seed is not None and rate.value is not None:
        ok = df.groupby("group_id")["correct"].all().to_numpy(dtype=float)
        rate.ci = stats.cluster_bootstrap(ok, np.ones_like(ok), draws=draws, seed=seed)
    return rate


def _rotation_block(joined: pd.DataFrame) -> dict[str, Any]:
    """Circular metrics over repeat 0, or reasons when the run has a single rotation."""
    rotations = sorted(int(r) for r in joined["rotation"].unique()) if len(joined) else []
    keys = ROTATION_KEYS
    if len(rotations) < 2:
        return {k: Rate.undefined("the run has a single option rotation") for k in keys}
    if rotations[0] != 0:
        return {k: Rate.undefined("the run has no rotation 0") for k in keys}
    scope = common.select(joined, rotation=None, repeat=0)
    block = common.rotation_metrics(scope, rotations)
    items = scope.drop_duplicates("item_id")
    solved = scope.groupby("item_id")["correct"].agg(lambda c: bool(c.all()) and len(c) == len(rotations))
    by_category = _circular_by_category(items, lambda ids: solved.reindex(ids).fillna(False).to_numpy(dtype=bool),
                                        "items")
    return {**{k: block[k] for k in keys}, "circular_by_category": by_category}


ROTATION_KEYS = ("vanilla", "circular", "consistency", "mean_rotation", "drop")


def _copy_answers(item_ids: np.ndarray, base: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per item of `item_ids`, from its first row in `base`: whether it has a valid answer, the answer letter
    and whether it is correct (an item without a row: not valid, not correct)."""
    first = base.drop_duplicates("item_id")
    at = pd.Index(first["item_id"].to_numpy(dtype=object), dtype=object).get_indexer(item_ids)
    found = at >= 0
    take = np.where(found, at, 0)
    ok = np.zeros(len(item_ids), dtype=bool)
    letter = np.full(len(item_ids), None, dtype=object)
    correct = np.zeros(len(item_ids), dtype=bool)
    if len(first):
        ok = found & (first["status"].to_numpy(dtype=object).take(take) == "ok")
        letter[ok] = first["answer"].to_numpy(dtype=object).take(take)[ok]
        correct[ok] = np.asarray(first["correct"].to_numpy(dtype=object).take(take)[ok], dtype=bool)
    return ok, letter, correct


def circular_copies(items: pd.DataFrame, base: pd.DataFrame) -> dict[str, Any] | None:
    """VLMEvalKit's circular scores over circular copies (docs/METRICS.md "Circular copies"); None when the
    items have no circular group.

    A circular group is a group of at least two items that all carry an integer `meta.copy` (0 = the original
    question; VLMEvalKit's copies at index + k * 1,000,000 carry k). Over the N such groups: Circular = groups
    with every copy answered correctly; Consistency = groups where every copy has a valid answer and they all
    choose the same option text (right or wrong); Vanilla = accuracy on the copy-0 items; mean_rotation = all
    correct copy answers / all copies; Drop = Vanilla - Circular. A copy without a prediction gives no credit.
    """
    copy = [m.get("copy") if isinstance(m, dict) else None for m in items["meta"]]
    has = np.array([isinstance(c, int) and not isinstance(c, bool) for c in copy], dtype=bool)
    gcode, _ = pd.factorize(items["group_id"].to_numpy(dtype=object))  # -1: no group (in no circular group)
    gcode = np.where(gcode < 0, gcode.max(initial=-1) + 1, gcode)
    size = np.bincount(gcode)
    whole = (np.bincount(gcode, weights=has, minlength=len(size)) == size) & (size >= 2)
    whole[-1:] &= not pd.isna(items["group_id"]).any()
    in_scope = whole[gcode]
    if not in_scope.any():
        return None
    at = np.flatnonzero(in_scope)
    scope_code, _ = pd.factorize(gcode[at])
    ok, letter, correct = _copy_answers(items["item_id"].to_numpy(dtype=object)[at], base)
    options = items["options"].to_numpy(dtype=object)[at]
    text = [o.get(a) if k and isinstance(o, dict) else None for k, o, a in zip(ok, options, letter, strict=True)]
    text_code, _ = pd.factorize(np.array(text, dtype=object))  # -1: no valid answer, or no such option
    per = pd.DataFrame({"g": scope_code, "t": text_code, "c": correct}).groupby("g", sort=False)
    stats_ = per.agg(t_min=("t", "min"), t_max=("t", "max"), c_all=("c", "all"))
    n = len(stats_)
    circ = int(stats_["c_all"].sum())
    consistent = int(((stats_["t_min"] >= 0) & (stats_["t_min"] == stats_["t_max"])).sum())
    scope = items.iloc[at]
    # stats_ rows follow the groups' first appearance in scope (groupby sort=False over factorized codes)
    solved = pd.Series(stats_["c_all"].to_numpy(dtype=bool), index=pd.unique(scope["group_id"].to_numpy(dtype=object)))
    by_category = _circular_by_category(scope, lambda ids: solved.reindex(ids.unique()).to_numpy(dtype=bool),
                                        "circular groups")
    originals = np.array([copy[i] == 0 for i in at], dtype=bool)
    vanilla = Rate.of(int(correct[originals].sum()), int(originals.sum()))
    circular = Rate.of(circ, n, "circular groups")
    drop = (Rate(vanilla.value - circular.value) if vanilla.value is not None and circular.value is not None
            else Rate.undefined("no copy-0 items"))
    return {"vanilla": vanilla, "circular": circular, "consistency": Rate.of(consistent, n, "circular groups"),
            "mean_rotation": Rate.of(int(correct.sum()), len(correct), "copies"), "drop": drop,
            "circular_over": "copies", "circular_by_category": by_category}


CATEGORY_FIELD = "l2-category"  # VLMEvalKit's second category column (meta.l2-category); `kind` holds `category`


def _category_of(items: pd.DataFrame) -> dict[str, pd.Series]:
    """Each item's categories, by name: kind (VLMEvalKit's `category`) and meta.l2-category where items have it."""
    out = {"kind": items["kind"].fillna("").astype(str)} if "kind" in items else {}
    l2 = items["meta"].map(lambda m: m.get(CATEGORY_FIELD) if isinstance(m, dict) else None)
    if l2.notna().any():
        # a missing value may come back as None or NaN (pandas' string dtype turns None into NaN)
        out[CATEGORY_FIELD] = l2.map(str, na_action="ignore").fillna("(none)")
    return out


def _circular_by_category(units: pd.DataFrame, solved_of: Any, what: str) -> dict[str, dict[str, Rate]]:
    """Circular accuracy per category, as VLMEvalKit's circular table reports it: per kind (its `category`)
    and per meta.l2-category, each the share of circular units (groups of copies, or items over rotations) of
    that category answered correctly in every copy / rotation. A unit's category is its first row's."""
    first = units.drop_duplicates("group_id" if what == "circular groups" else "item_id")
    key = first["group_id" if what == "circular groups" else "item_id"]
    out: dict[str, dict[str, Rate]] = {}
    for name, cats in _category_of(first).items():
        out[name] = {}
        for cat in sorted(cats.unique()):
            ids = key[(cats == cat).to_numpy()]
            solved = solved_of(ids)
            out[name][cat] = Rate.of(int(solved.sum()), len(solved), what)
    return out


NO_LETTER = "none"  # the predicted-letter column of an invalid or api_error response


def letter_matrix(base: pd.DataFrame, classes: str) -> dict[str, dict[str, int]]:
    """Predicted vs gold: gold letter -> predicted letter (or `none` for an invalid / api_error response) ->
    predictions, on the rows scored (rotation 0, repeat 0); every gold class and every letter predicted."""
    if base.empty:
        return {}
    pred = base["answer"].where(base["status"] == "ok").map(lambda v: NO_LETTER if pd.isna(v) else str(v))
    counts = pd.crosstab(base["gold"].astype(str), pred)
    cols = sorted(c for c in counts.columns if c != NO_LETTER) + ([NO_LETTER] if NO_LETTER in counts.columns else [])
    return {str(g): {str(c): int(counts.at[g, c]) for c in cols} for g in sorted(set(classes) | set(counts.index))
            if g in counts.index}


def per_stratum(base: pd.DataFrame) -> dict[str, dict[str, Rate]]:
    """Accuracy per value of every meta stratum (a scalar field with 2-16 values, Browse's Stratum filter:
    core.groups.strata_fields), k / n predictions without an interval (one per value would multiply the
    bootstrap's cost by the number of values)."""
    from core.groups import item_stratum, strata_fields  # core.groups reads the families' registry

    if base.empty or "meta" not in base:
        return {}
    out: dict[str, dict[str, Rate]] = {}
    for name in strata_fields(base, max_values=16):
        if name == "n_images":
            continue
        vals = item_stratum(base, name)
        out[name] = {str(v): common.accuracy(base[(vals == v).to_numpy()]) for v in sorted(vals.dropna().unique())}
    return out


def score(items: pd.DataFrame, run: RunData, others: list[RunData] | None = None, *,
          seed: int | None = stats.DEFAULT_SEED, draws: int = stats.DEFAULT_DRAWS) -> dict[str, Any]:
    """The generic metric set of one run (JSON keys as in docs/METRICS.md).

    `seed=None` skips the bootstrap intervals. `others` is unused (no paired metric in this family).
    """
    joined = common.join(items, run.preds)
    base = common.select(joined, rotation=0, repeat=0)
    _prefetch_group_columns(base, seed, draws)
    out: dict[str, Any] = {
        "accuracy": _with_group_ci(common.accuracy(base), base, seed, draws),
        **common.macro_prf(base, _classes(base)),
        "per_kind": {kind: _with_group_ci(rate, base[base["kind"] == kind], seed, draws)
                     for kind, rate in common.accuracy_by(base, "kind").items()},
        "group_exact_match": _gem_with_ci(base, seed, draws),
        "letters": letter_matrix(base, _classes(base)),
        "per_stratum": per_stratum(base),
    }
    rotations = joined["rotation"].nunique() if len(joined) else 0
    copies = circular_copies(items, base) if rotations < 2 else None
    if copies is not None:  # VLMEvalKit's circular copies stand for the rotations the run does not have
        out.update(copies)
    else:
        out.update(_rotation_block(joined))
        if rotations >= 2:
            out["circular_over"] = "rotations"
    out["n_predictions"] = int(len(joined))
    return out
