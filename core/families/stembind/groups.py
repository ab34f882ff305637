"""StemBind (002) group layout for Browse and Compare: the decomposition category of a stem."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from core import outcomes as core_outcomes
from core.families.stembind import metrics as sb
from core.families.stembind.vocab import KINDS
from core.outcomes import GroupRules

# The item outcome is the metrics' (core.families.stembind.metrics.item_outcomes): correct only when every
# prediction of the item is; an item without a prediction is left out (not answered).
EVERY_PREDICTION = True
UNANSWERED_IS_WRONG = False
PATTERNS = [
    ("cat_solved", "Stem: solved"),
    ("cat_cant_bind", "Stem: can't bind (P and R right, F wrong)"),
    ("cat_cant_reason", "Stem: can't reason (P right, R and F wrong)"),
    ("cat_cant_see", "Stem: can't see (no P right, F wrong)"),
]

CATEGORY_LABELS = {"solved": "solved", "cant_bind": "can't bind", "cant_reason": "can't reason",
                   "cant_see": "can't see"}


# The rule of each category, as core.families.stembind.metrics.decompose applies it (002 §4.3 (ii)); views print it.
CATEGORY_RULES = {"solved": "F right", "cant_bind": "at least one P right, R right, F wrong",
                  "cant_reason": "at least one P right, R wrong, F wrong", "cant_see": "no P right, F wrong"}


def _decomposition(items: pd.DataFrame, out: pd.DataFrame, idx: pd.Index) -> pd.Series:
    """StemBind category per stem (core.families.stembind.metrics.stem_table rules), None for incomplete stems."""
    o = out.assign(c=out["correct"].astype(int), a=out["answered"].astype(int), one=1)
    tab = o.pivot_table(index="group_id", columns="kind", values=["c", "a", "one"], aggfunc="sum", fill_value=0)

    def col(v: str, k: str) -> np.ndarray:
        return tab[(v, k)].reindex(idx, fill_value=0).to_numpy() if (v, k) in tab.columns else np.zeros(len(idx), int)

    n = {k: col("one", k) for k in KINDS}
    a = {k: col("a", k) for k in KINDS}
    c = {k: col("c", k) for k in KINDS}
    complete = np.logical_and.reduce([(n[k] >= 1) & (a[k] == n[k]) for k in KINDS])
    cats = sb.decompose(c["P"] >= 1, c["R"] == n["R"], c["F"] == n["F"])
    return pd.Series([cat if done else None for cat, done in zip(cats, complete, strict=True)], index=idx, dtype=object)


def stem_category(items: Sequence[Mapping[str, Any]], outcomes: Mapping[str, tuple[bool, bool]]) -> str | None:
    """The decomposition category of one stem (core.families.stembind.metrics.stem_table / decompose), None when the
    stem is not complete (no P, R or F item, or an item the run did not answer)."""
    kinds: dict[str, list[tuple[bool, bool]]] = {k: [] for k in KINDS}
    for it in items:
        if it["kind"] in kinds:
            kinds[it["kind"]].append(outcomes.get(str(it["item_id"]), (False, False)))
    if any(not v for v in kinds.values()) or not all(a for v in kinds.values() for a, _ in v):
        return None
    return _category(any(c for _, c in kinds["P"]), all(c for _, c in kinds["R"]), all(c for _, c in kinds["F"]))


@functools.cache
def _category(p_any: bool, r: bool, f: bool) -> str:
    """sb.decompose of one stem (eight cases, each computed once: a group view asks once per run)."""
    return str(sb.decompose(np.array([p_any]), np.array([r]), np.array([f]))[0])


def summary_patterns(lay: core_outcomes.Layout, s: core_outcomes.RunSummary) -> None:
    """The category of each complete stem (core.families.stembind.metrics.stem_table rules, decompose)."""
    n, a, c = {}, {}, {}
    for k in sb.KINDS:
        is_k = lay.kind == k
        n[k] = np.bincount(lay.group[is_k], minlength=lay.n_groups)
        a[k] = core_outcomes.per_group(lay, s.answered, is_k)
        c[k] = core_outcomes.per_group(lay, s.correct, is_k)
    complete = np.logical_and.reduce([(n[k] >= 1) & (a[k] == n[k]) for k in sb.KINDS])
    cats = sb.decompose(c["P"] >= 1, c["R"] == n["R"], c["F"] == n["F"])
    s.category[complete] = cats[complete]
    for cat in sb.DECOMPOSITION:
        s.patterns[f"cat_{cat}"] = s.category == cat


RULES: GroupRules = GroupRules(summary_patterns, tuple(PATTERNS), EVERY_PREDICTION, UNANSWERED_IS_WRONG, CATEGORY_LABELS)
