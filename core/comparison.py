"""One engine for comparing two runs of one benchmark (pure): `score --compare` (core.scoring.compare_runs)
and the Compare tab (ui/compare.py) read the same numbers from `compare` and `turnover`.

- Sign: every difference is **this run minus the other run**. `score --run THIS --compare OTHER`; in the
  Compare tab B (the right-hand run, "after") is this run and A ("before") the other, so the tab's B − A
  column and `score --run B --compare A` agree.
- Metrics: the family's (its package's `paired_arrays`, or its own `paired_differences` where a metric is not a ratio of
  sums, FrameEvidence's macro-F1), the same set for both callers (docs/METRICS.md, "Paired differences").
- Intervals: the percentile cluster bootstrap of core.stats (clusters = groups unless a FrameEvidence
  clustering is chosen), both runs resampled with the same clusters in each draw, 20,000 draws.
- Turnover (000 §6.2): one counting rule, `turnover_counts`, over the family's item outcomes.
- Disagreement (000 App. A "GPT cross-run stability"): the share of items whose answer letters differ, with its
  cluster-bootstrap interval under the same clustering (`disagreement`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from core import families, outcomes, stats
from core.catalogue import Column, key_of
from core.errors import MetricUndefined
from core.families.protocol import Arrays, Paired
from core.schema import Rate, RunData


def scope(items: pd.DataFrame, split: str | None) -> pd.DataFrame:
    """The items of `split` (every item when None), renumbered."""
    return items if split is None else items[items["split"] == split].reset_index(drop=True)


def same_benchmark(this: RunData, other: RunData) -> None:
    """Raises MetricUndefined unless the two runs are of one benchmark."""
    if other.benchmark != this.benchmark or other.family != this.family:
        raise MetricUndefined(f"cannot compare run {this.name!r} (benchmark {this.benchmark!r}) with run "
                              f"{other.name!r} (benchmark {other.benchmark!r}): paired differences need two "
                              "runs of the same benchmark")


# --------------------------------------------------------------------------- paired differences


def compare(items: pd.DataFrame, this: RunData, other: RunData, split: str | None = "test",
            draws: int = stats.DEFAULT_DRAWS, seed: int | None = stats.DEFAULT_SEED,
            clustering: stats.Clustering | None = None) -> dict[str, Any]:
    """{"other": name, "clustering": label, "clusters": n, "metrics": {metric: {"this", "other", "difference"}}}
    with each difference a Rate(this - other, n = clusters holding the metric's observations, ci), or
    {"other": name, "reason": ...} when the runs share nothing to compare.

    `clustering` (FrameEvidence only: its `capabilities.clusterings`) resamples exact-image or union components.
    """
    same_benchmark(this, other)
    fam = families.get(this.family)
    if clustering is not None and not fam.capabilities.clusterings:
        raise MetricUndefined(f"a {this.family} comparison clusters by group (no {clustering.label} clustering)")
    if fam.paired_differences is not None:  # a family computing its own intervals
        out = {"other": other.name, **fam.paired_differences(items, this, other, split, draws, seed, clustering)}
    else:
        assert fam.paired_arrays is not None  # Family holds exactly one of the two
        out = {"other": other.name, **paired(fam.paired_arrays(scope(items, split), this, other), draws, seed)}
    if "reason" not in out:
        out["disagreement"] = disagreement(items, this, other, split, draws, seed, clustering)
    return out


def first_letters(run: RunData) -> pd.Series:
    """Each item's answer letter at rotation 0, repeat 0 (None when that prediction is not ok), by item_id."""
    p = run.preds
    if p is None or p.empty:
        return pd.Series(dtype=object)
    first = p
    if "rotation" in p:
        first = first[first["rotation"].fillna(0).astype(int) == 0]
    if "repeat" in p:
        first = first[first["repeat"].fillna(0).astype(int) == 0]
    first = first.drop_duplicates("item_id", keep="last")
    letters = first["answer"].where(first["status"] == "ok", None)
    return pd.Series(letters.to_numpy(dtype=object), index=first["item_id"].to_numpy())


def disagreement(items: pd.DataFrame, this: RunData, other: RunData, split: str | None = "test",
                 draws: int = stats.DEFAULT_DRAWS, seed: int | None = stats.DEFAULT_SEED,
                 clustering: stats.Clustering | None = None) -> Rate:
    """Cross-run disagreement (000 App. A "GPT cross-run stability": "their answer letters differ on 136 items
    (47.22%) ... the 95% percentile interval for disagreement is [41.33, 56.61]%"): the share of items whose
    rotation-0 / repeat-0 answer letters differ, with its percentile cluster-bootstrap interval (item-weighted,
    whole clusters of `clustering`, groups by default). An item differs unless both runs gave the same valid
    letter (the rule of turnover's changed_answers). Items: every item of the split where the family counts an
    unanswered item (groups.unanswered_is_wrong, FrameEvidence), else the items both runs answered."""
    part = scope(items, split)
    a, b = first_letters(this), first_letters(other)
    ids = part["item_id"]
    if not families.get(this.family).groups.unanswered_is_wrong:
        part = part[ids.isin(a.index) & ids.isin(b.index)].reset_index(drop=True)
        ids = part["item_id"]
    if part.empty:
        return Rate.undefined("no items both runs answered" if len(scope(items, split)) else "no items in the split")
    la, lb = a.reindex(ids).to_numpy(dtype=object), b.reindex(ids).to_numpy(dtype=object)
    same = np.array([x is not None and x == y for x, y in zip(la, lb, strict=True)], dtype=bool)
    keys = stats.cluster_labels(part, clustering or stats.Clustering("group"))
    sums = pd.DataFrame({"k": (~same).astype(float), "n": 1.0}).groupby(keys).sum()
    rate = Rate.of(int((~same).sum()), len(part), "items")
    if seed is not None:
        rate.ci = stats.cluster_bootstrap(sums["k"].to_numpy(), sums["n"].to_numpy(), draws=draws, seed=seed)
    return rate


def paired(table: Paired | str, draws: int, seed: int | None) -> dict[str, Any]:
    """{"clustering": "groups", "clusters", "metrics", "columns"} from per-cluster (k_this, n_this, k_other,
    n_other) sums per metric (a str: the reason there is nothing to compare). "metrics" is keyed by each
    metric's JSON key, "columns" gives the declaration behind each key."""
    if isinstance(table, str):
        return {"reason": table}
    declared = list(table)
    names = [key_of(m) for m in declared]
    out: dict[str, Any] = {"clustering": "groups", "clusters": 0, "metrics": {},
                           "columns": dict(zip(names, declared, strict=True))}
    if not names:
        return out
    kt, nt, ko, no = (np.column_stack([table[m][i] for m in declared]).astype(float) for i in range(4))
    out["clusters"] = int(kt.shape[0])
    defined = [j for j in range(len(names)) if nt[:, j].sum() > 0 and no[:, j].sum() > 0]
    lo = hi = None
    if seed is not None and defined and kt.shape[0]:
        lo, hi = stats.cluster_bootstrap_diff(kt[:, defined], nt[:, defined], ko[:, defined], no[:, defined],
                                              draws=draws, seed=seed)
    for j, name in enumerate(names):
        what = f"observations of {name}"
        this_rate = Rate.of(int(round(kt[:, j].sum())), int(round(nt[:, j].sum())), what)
        other_rate = Rate.of(int(round(ko[:, j].sum())), int(round(no[:, j].sum())), what)
        if j not in defined:
            diff = Rate.undefined(f"{name} is undefined for {'this run' if nt[:, j].sum() == 0 else 'the other run'}"
                                  " on the groups both runs answered")
        else:
            diff = Rate(float(kt[:, j].sum() / nt[:, j].sum() - ko[:, j].sum() / no[:, j].sum()),
                        n=int(np.count_nonzero((nt[:, j] > 0) | (no[:, j] > 0))))
            if lo is not None and hi is not None:
                i = defined.index(j)
                if np.isfinite(lo[i]) and np.isfinite(hi[i]):
                    diff.ci = (float(lo[i]), float(hi[i]))
        out["metrics"][name] = {"this": this_rate, "other": other_rate, "difference": diff}
    return out


def differences(result: dict[str, Any]) -> dict[str, Any]:
    """`score --compare`'s `metrics.compare`: the result of `compare` with each metric's difference only."""
    out = {k: v for k, v in result.items() if k not in ("metrics", "columns")}
    out.update({m: e["difference"] for m, e in result.get("metrics", {}).items()})
    return out


def per_cluster(keys: np.ndarray, index: pd.Index, values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Sums of each value column per cluster key, aligned on `index` (absent clusters give 0)."""
    frame = pd.DataFrame({k: np.asarray(v, dtype=float) for k, v in values.items()})
    summed = frame.groupby(keys).sum().reindex(index, fill_value=0.0)
    return {k: summed[k].to_numpy(dtype=float) for k in values}


def item_pairs(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Outcomes (item_id, group_id, correct) of two runs on the items both answered: correct_t, correct_o."""
    both = a[["item_id", "group_id", "correct"]].merge(b[["item_id", "correct"]], on="item_id",
                                                       suffixes=("_t", "_o"))
    both["correct_t"] = both["correct_t"].astype(bool)
    both["correct_o"] = both["correct_o"].astype(bool)
    return both


def masked(both: pd.DataFrame, masks: dict[Column, np.ndarray], index: pd.Index) -> Paired:
    """Item-accuracy arrays per metric: the items of each mask, summed per group."""
    ct, co = both["correct_t"].to_numpy(), both["correct_o"].to_numpy()
    values: dict[str, np.ndarray] = {}
    for col, m in masks.items():
        name = key_of(col)
        values[f"{name}/k_t"], values[f"{name}/k_o"], values[f"{name}/n"] = m & ct, m & co, m
    sums = per_cluster(both["group_id"].to_numpy(), index, values)
    return {col: (sums[f"{key_of(col)}/k_t"], sums[f"{key_of(col)}/n"], sums[f"{key_of(col)}/k_o"],
                  sums[f"{key_of(col)}/n"]) for col in masks}


def group_exact_match(both: pd.DataFrame, index: pd.Index) -> Arrays:
    """One observation per group with items both runs answered: every such item correct."""
    per = both.groupby("group_id")[["correct_t", "correct_o"]].all()
    present = index.isin(per.index).astype(float)
    per = per.reindex(index, fill_value=False)
    return (per["correct_t"].to_numpy(dtype=float) * present, present,
            per["correct_o"].to_numpy(dtype=float) * present, present)


# --------------------------------------------------------------------------- turnover (000 §6.2)


def turnover_counts(correct_a: Any, correct_b: Any, same_answer: Any = None) -> dict[str, Any]:
    """Item turnover from a to b over paired item outcomes: both_correct, newly_correct (wrong in a, correct
    in b), newly_incorrect, both_wrong, changed_answers (when `same_answer` says which items kept one valid
    letter), net = newly_correct - newly_incorrect (an int), accuracy_a, accuracy_b, change = b - a."""
    ca, cb = np.asarray(correct_a, dtype=bool), np.asarray(correct_b, dtype=bool)
    n = len(ca)
    acc_a, acc_b = Rate.of(int(ca.sum()), n, "items"), Rate.of(int(cb.sum()), n, "items")
    out: dict[str, Any] = {
        "both_correct": Rate.of(int((ca & cb).sum()), n, "items"),
        "newly_correct": Rate.of(int((~ca & cb).sum()), n, "items"),
        "newly_incorrect": Rate.of(int((ca & ~cb).sum()), n, "items"),
        "both_wrong": Rate.of(int((~ca & ~cb).sum()), n, "items"),
    }
    if same_answer is not None:
        out["changed_answers"] = Rate.of(int((~np.asarray(same_answer, dtype=bool)).sum()), n, "items")
    out["net"] = int((~ca & cb).sum() - (ca & ~cb).sum())
    out["accuracy_a"], out["accuracy_b"] = acc_a, acc_b
    out["change"] = (Rate(acc_b.value - acc_a.value) if acc_a.value is not None and acc_b.value is not None
                     else Rate.undefined("no items"))
    return out


def turnover(items: pd.DataFrame, run_a: RunData, run_b: RunData, split: str | None = "test") -> dict[str, Any]:
    """Item turnover a -> b over the split's items, by the family's item outcome: every item of the split
    with an unanswered one wrong where the family says so (`unanswered_is_wrong`: FrameEvidence, 000 App. A),
    else the items both runs answered."""
    same_benchmark(run_a, run_b)
    rules = families.get(run_a.family).groups
    lay = outcomes.layout(rules, scope(items, split))
    answered_a, correct_a = outcomes.item_marks(lay, outcomes.preds_from_frame(lay, run_a.preds))
    answered_b, correct_b = outcomes.item_marks(lay, outcomes.preds_from_frame(lay, run_b.preds))
    keep = np.ones(len(lay.item_ids), dtype=bool) if rules.unanswered_is_wrong else answered_a & answered_b
    return turnover_counts(correct_a[keep], correct_b[keep])
