"""Generic multiple-choice metrics (SPEC §5 "Generic"): accuracy, macro P/R/F1, per-kind accuracy,
group exact match, and Circular / Consistency when the run has several rotations.

Definitions are those of core.metrics.common (docs/METRICS.md). Item rates use rotation 0 and
repeat 0 (the ordinary evaluation); rotation metrics use repeat 0 over every rotation in the run.
Rates carry a percentile cluster-bootstrap interval over groups (20,000 draws, core.stats).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from core import stats
from core.catalogue import Metric, Value
from core.catalogue import Scores as Scores
from core.families.generic import catalogue as c
from core.families.protocol import ScoreOptions
from core.metrics import common
from core.metrics.catalogue import ROTATION_METRICS
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


def _per_kind(base: pd.DataFrame, seed: int | None, draws: int) -> dict[str, Rate]:
    """Accuracy per kind, each with the cluster-bootstrap interval over the groups holding that kind's rows
    (as `_with_group_ci` of the kind's rows). The per-group counts of every kind come from one groupby, and the
    kinds with as many groups (the same resample draws) are resampled in one pass (DrawCache.prefetch)."""
    rates = common.accuracy_by(base, "kind")
    if seed is None or base.empty:
        return rates
    per = base.groupby(["kind", "group_id"], sort=True)["correct"].agg(["sum", "size"])
    kinds = per.index.get_level_values(0).to_numpy(dtype=object)
    starts = np.flatnonzero(np.r_[True, kinds[1:] != kinds[:-1]]) if len(kinds) else np.zeros(0, dtype=np.int64)
    bounds = dict(zip((str(kinds[i]) for i in starts), zip(starts, [*starts[1:], len(kinds)], strict=True),
                      strict=True))
    k_all, n_all = per["sum"].to_numpy(dtype=float), per["size"].to_numpy(dtype=float)
    wanted = {kind: bounds[kind] for kind, rate in rates.items() if rate.value is not None and kind in bounds}
    context = stats.current_context()
    if context is not None:
        from threadpoolctl import threadpool_limits

        by_size: dict[int, list[np.ndarray]] = {}
        for lo, hi in wanted.values():
            by_size.setdefault(int(hi - lo), []).extend([k_all[lo:hi], n_all[lo:hi]])
        with threadpool_limits(1, user_api="blas"):  # small products: a second BLAS thread spins more than it helps
            for columns in by_size.values():
                context.draws.prefetch(np.column_stack(columns), draws, seed)
    for kind, (lo, hi) in wanted.items():
        rates[kind].ci = stats.cluster_bootstrap(k_all[lo:hi], n_all[lo:hi], draws=draws, seed=seed)
    return rates


def _gem_with_ci(df: pd.DataFrame, seed: int | None, draws: int) -> Rate:
    """Group exact match; its interval resamples groups (one 0/1 observation each)."""
    rate = common.group_exact_match(df)
    if seed is not None and rate.value is not None:
        ok = df.groupby("group_id")["correct"].all().to_numpy(dtype=float)
        rate.ci = stats.cluster_bootstrap(ok, np.ones_like(ok), draws=draws, seed=seed)
    return rate


def _rotation_block(joined: pd.DataFrame) -> dict[Metric, Value]:
    """Circular metrics over repeat 0, or reasons when the run has a single rotation."""
    rotations = sorted(int(r) for r in joined["rotation"].unique()) if len(joined) else []
    if len(rotations) < 2:
        return {m: Rate.undefined("the run has a single option rotation") for m in ROTATION_METRICS}
    if rotations[0] != 0:
        return {m: Rate.undefined("the run has no rotation 0") for m in ROTATION_METRICS}
    scope = common.select(joined, rotation=None, repeat=0)
    block = common.rotation_metrics(scope, rotations)
    items = scope.drop_duplicates("item_id")
    solved = scope.groupby("item_id")["correct"].agg(lambda c: bool(c.all()) and len(c) == len(rotations))
    by_category = _circular_by_category(items, solved.reindex(items["item_id"]).fillna(False).to_numpy(dtype=bool),
                                        "items")
    return {**{m: block[m.key] for m in ROTATION_METRICS}, c.CIRCULAR_BY_CATEGORY: by_category}  # type: ignore[misc]




def _copy_answers(items: pd.DataFrame, at: np.ndarray, base: pd.DataFrame
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per item row of `at`, from its first row in `base`: whether it has a valid answer, the answer letter and
    whether it is correct (an item without a row: not valid, not correct)."""
    pos = common.positions(items, base["item_id"])  # each base row's item row (-1: not an item of `items`)
    known = np.flatnonzero(pos >= 0)
    item_rows, first = np.unique(pos[known], return_index=True)  # return_index: each item's first base row
    row_of = np.full(len(items), -1, dtype=np.int64)
    row_of[item_rows] = known[first]
    take = row_of[at]
    found = take >= 0
    take = np.where(found, take, 0)
    ok = np.zeros(len(at), dtype=bool)
    letter = np.full(len(at), None, dtype=object)
    correct = np.zeros(len(at), dtype=bool)
    if len(base):
        ok = found & (base["status"].to_numpy(dtype=object).take(take) == "ok")
        letter[ok] = base["answer"].to_numpy(dtype=object).take(take)[ok]
        correct[ok] = np.asarray(base["correct"].to_numpy(dtype=object).take(take)[ok], dtype=bool)
    return ok, letter, correct


def _copy_numbers(meta: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Per item: whether its meta carries an integer `copy` (VLMEvalKit's k; a bool is none), and whether that is 0."""
    copies = [m.get("copy") if isinstance(m, dict) else None for m in meta]
    has = np.array([isinstance(c, int) and not isinstance(c, bool) for c in copies], dtype=bool)
    return has, has & np.array([c == 0 for c in copies], dtype=bool)


def circular_copies(items: pd.DataFrame, base: pd.DataFrame) -> dict[Metric, Value] | None:
    """VLMEvalKit's circular scores over circular copies (docs/METRICS.md "Circular copies"); None when the
    items have no circular group.

    A circular group is a group of at least two items that all carry an integer `meta.copy` (0 = the original
    question; VLMEvalKit's copies at index + k * 1,000,000 carry k). Over the N such groups: Circular = groups
    with every copy answered correctly; Consistency = groups where every copy has a valid answer and they all
    choose the same option text (right or wrong); Vanilla = accuracy on the copy-0 items; mean_rotation = all
    correct copy answers / all copies; Drop = Vanilla - Circular. A copy without a prediction gives no credit.
    Array code over the items (a few numpy passes, no Python function per group).
    """
    has, original = _copy_numbers(items["meta"])
    gcode, _ = pd.factorize(items["group_id"].to_numpy(dtype=object))  # -1: no group (in no circular group)
    gcode = np.where(gcode < 0, gcode.max(initial=-1) + 1, gcode)
    size = np.bincount(gcode)
    whole = (np.bincount(gcode, weights=has, minlength=len(size)) == size) & (size >= 2)
    whole[-1:] &= not pd.isna(items["group_id"]).any()
    at = np.flatnonzero(whole[gcode])
    if not len(at):
        return None
    scope_code, _ = pd.factorize(gcode[at])  # the circular groups in order of first appearance
    n = int(scope_code.max()) + 1
    ok, letter, correct = _copy_answers(items, at, base)
    options = items["options"].to_numpy(dtype=object)[at]
    text = [o.get(a) if k and isinstance(o, dict) else None for k, o, a in zip(ok, options, letter, strict=True)]
    text_code, _ = pd.factorize(np.array(text, dtype=object))  # -1: no valid answer, or no such option
    t_min = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    t_max = np.full(n, -1, dtype=np.int64)
    np.minimum.at(t_min, scope_code, text_code)
    np.maximum.at(t_max, scope_code, text_code)
    solved = np.bincount(scope_code, weights=~correct, minlength=n) == 0  # every copy correct
    consistent = int(((t_min >= 0) & (t_min == t_max)).sum())
    firsts = at[np.unique(scope_code, return_index=True)[1]]  # each group's first item row, in group order
    by_category = _circular_by_category(items.iloc[firsts], solved, "circular groups")
    originals = original[at]
    vanilla = Rate.of(int(correct[originals].sum()), int(originals.sum()))
    circular = Rate.of(int(solved.sum()), n, "circular groups")
    drop = (Rate(vanilla.value - circular.value) if vanilla.value is not None and circular.value is not None
            else Rate.undefined("no copy-0 items"))
    return {c.VANILLA: vanilla, c.CIRCULAR: circular, c.CONSISTENCY: Rate.of(consistent, n, "circular groups"),
            c.MEAN_ROTATION: Rate.of(int(correct.sum()), len(correct), "copies"), c.DROP: drop,
            c.CIRCULAR_OVER: "copies", c.CIRCULAR_BY_CATEGORY: by_category}


CATEGORY_FIELD = "l2-category"  # VLMEvalKit's second category column (meta.l2-category); `kind` holds `category`


def _category_of(units: pd.DataFrame) -> dict[str, np.ndarray]:
    """Each unit's categories, by name: kind (VLMEvalKit's `category`) and meta.l2-category where units have it."""
    out = {"kind": units["kind"].fillna("").astype(str).to_numpy(dtype=object)} if "kind" in units else {}
    l2 = [m.get(CATEGORY_FIELD) if isinstance(m, dict) else None for m in units["meta"]]
    if any(v is not None for v in l2):
        out[CATEGORY_FIELD] = np.array(["(none)" if v is None else str(v) for v in l2], dtype=object)
    return out


def _circular_by_category(units: pd.DataFrame, solved: np.ndarray, what: str) -> dict[str, dict[str, Rate]]:
    """Circular accuracy per category, as VLMEvalKit's circular table reports it: per kind (its `category`)
    and per meta.l2-category, each the share of circular units (groups of copies, or items over rotations) of
    that category answered correctly in every copy / rotation. `units` holds each unit's first row and
    `solved` (aligned with it) whether the unit is answered correctly throughout."""
    out: dict[str, dict[str, Rate]] = {}
    for name, cats in _category_of(units).items():
        code, values = pd.factorize(cats)
        k = np.bincount(code, weights=solved, minlength=len(values))
        size = np.bincount(code, minlength=len(values))
        at = {v: i for i, v in enumerate(values)}
        out[name] = {cat: Rate.of(int(k[at[cat]]), int(size[at[cat]]), what) for cat in sorted(values)}
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


def score(items: pd.DataFrame, run: RunData, others: Sequence[RunData], options: ScoreOptions) -> Scores:
    """The generic metric set of one run (its catalogue; JSON keys as in docs/METRICS.md).

    `options.seed=None` skips the bootstrap intervals. `others` is unused (no paired metric in this family).
    """
    seed, draws = options.seed, options.draws
    joined = common.join(items, run.preds)
    base = common.select(joined, rotation=0, repeat=0)
    _prefetch_group_columns(base, seed, draws)
    prf = common.macro_prf(base, _classes(base))
    out = Scores({
        c.ACCURACY: _with_group_ci(common.accuracy(base), base, seed, draws),
        c.MACRO_PRECISION: prf["macro_precision"], c.MACRO_RECALL: prf["macro_recall"], c.MACRO_F1: prf["macro_f1"],
        c.PER_KIND: _per_kind(base, seed, draws),
        c.GROUP_EXACT_MATCH: _gem_with_ci(base, seed, draws),
        c.LETTERS: letter_matrix(base, _classes(base)),
        c.PER_STRATUM: per_stratum(base),
    })
    rotations = joined["rotation"].nunique() if len(joined) else 0
    copies = circular_copies(items, base) if rotations < 2 else None
    if copies is not None:  # VLMEvalKit's circular copies stand for the rotations the run does not have
        out.update(copies)
    else:
        out.update(_rotation_block(joined))
        if rotations >= 2:
            out[c.CIRCULAR_OVER] = "rotations"
    out[c.N_PREDICTIONS] = int(len(joined))
    return out
