"""Paired comparison of two runs of one benchmark (one engine for `score --compare` and the Compare tab)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from core import stats
from core.families.frameevidence import metrics as fe
from core.families.spur import metrics as sp
from core.families.stembind import metrics as sb
from core.groups import item_outcomes
from core.schema import Rate, RunData


def _paired(table: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] | str, draws: int,
            seed: int | None) -> dict[str, Rate]:
    """{metric: Rate(this - other, n = clusters, ci)} from per-cluster (k_this, n_this, k_other, n_other)."""
    if isinstance(table, str):
        return {"reason": table}  # type: ignore[dict-item]
    out: dict[str, Rate] = {}
    names = list(table)
    if not names:
        return out
    kt, nt, ko, no = (np.column_stack([table[m][i] for m in names]).astype(float) for i in range(4))
    n_clusters = kt.shape[0]
    defined = [j for j in range(len(names)) if nt[:, j].sum() > 0 and no[:, j].sum() > 0]
    lo = hi = None
    if seed is not None and defined and n_clusters:
        lo, hi = stats.cluster_bootstrap_diff(kt[:, defined], nt[:, defined], ko[:, defined], no[:, defined],
                                              draws=draws, seed=seed)
    for j, name in enumerate(names):
        if j not in defined:
            out[name] = Rate.undefined(f"{name} is undefined for {'this run' if nt[:, j].sum() == 0 else 'the other run'}"
                                       " on the groups both runs answered")
            continue
        rate = Rate(float(kt[:, j].sum() / nt[:, j].sum() - ko[:, j].sum() / no[:, j].sum()), n=int(
            np.count_nonzero((nt[:, j] > 0) | (no[:, j] > 0))))
        if lo is not None and hi is not None:
            i = defined.index(j)
            if np.isfinite(lo[i]) and np.isfinite(hi[i]):
                rate.ci = (float(lo[i]), float(hi[i]))
        out[name] = rate
    return out


def _per_cluster(keys: np.ndarray, index: pd.Index, values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Sums of each value column per cluster key, aligned on `index` (absent clusters give 0)."""
    frame = pd.DataFrame({k: np.asarray(v, dtype=float) for k, v in values.items()})
    summed = frame.groupby(keys).sum().reindex(index, fill_value=0.0)
    return {k: summed[k].to_numpy(dtype=float) for k in values}


def _item_pairs(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Outcomes (item_id, group_id, correct) of two runs on the items both answered: correct_t, correct_o."""
    both = a[["item_id", "group_id", "correct"]].merge(b[["item_id", "correct"]], on="item_id",
                                                       suffixes=("_t", "_o"))
    both["correct_t"] = both["correct_t"].astype(bool)
    both["correct_o"] = both["correct_o"].astype(bool)
    return both


def _masked(both: pd.DataFrame, masks: dict[str, np.ndarray], index: pd.Index
            ) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    ct, co = both["correct_t"].to_numpy(), both["correct_o"].to_numpy()
    values: dict[str, np.ndarray] = {}
    for name, m in masks.items():
        values[f"{name}/k_t"], values[f"{name}/k_o"], values[f"{name}/n"] = m & ct, m & co, m
    sums = _per_cluster(both["group_id"].to_numpy(), index, values)
    return {name: (sums[f"{name}/k_t"], sums[f"{name}/n"], sums[f"{name}/k_o"], sums[f"{name}/n"]) for name in masks}


def turnover(family: str, items: pd.DataFrame, run_a: RunData, run_b: RunData,
             split: str | None = "test") -> dict[str, Any]:
    """Item turnover a -> b (000 §6.2): both_correct, newly_correct, newly_incorrect, both_wrong, net.

    FrameEvidence delegates to core.families.frameevidence.metrics.turnover (every item of the split, unanswered =
    wrong); the other families count the items both runs answered."""
    scope = items if split is None else items[items["split"] == split]
    if family == "frameevidence":
        return fe.turnover(items, run_a, run_b, split=split)
    oa = item_outcomes(family, scope, run_a)
    ob = item_outcomes(family, scope, run_b)
    m = oa.merge(ob[["item_id", "answered", "correct"]], on="item_id", suffixes=("_a", "_b"))
    m = m[m["answered_a"] & m["answered_b"]]
    n = len(m)
    ca, cb = m["correct_a"], m["correct_b"]
    return {
        "both_correct": Rate.of(int((ca & cb).sum()), n, "items"),
        "newly_correct": Rate.of(int((~ca & cb).sum()), n, "items"),
        "newly_incorrect": Rate.of(int((ca & ~cb).sum()), n, "items"),
        "both_wrong": Rate.of(int((~ca & ~cb).sum()), n, "items"),
        "net": int((~ca & cb).sum() - (ca & ~cb).sum()),
        "accuracy_a": Rate.of(int(ca.sum()), n, "items"), "accuracy_b": Rate.of(int(cb.sum()), n, "items"),
    }


def _metric_masks(family: str, out: pd.DataFrame) -> list[tuple[str, pd.Series]]:
    """(metric name, item mask) of the item-accuracy metrics compared for `family`."""
    masks: list[tuple[str, pd.Series]] = [("accuracy", pd.Series(True, index=out.index))]
    if family == "stembind":
        masks += [(f"{k.lower()}_accuracy", out["kind"] == k) for k in sb.KINDS]
    elif family == "spur":
        stage = out["kind"].map(sp.STAGE_OF)
        masks += [(s, stage == s) for s in sp.STAGES]
    return masks


def paired_differences(family: str, items: pd.DataFrame, run_a: RunData, run_b: RunData,
                       split: str | None = "test", draws: int = stats.DEFAULT_DRAWS,
                       seed: int | None = stats.DEFAULT_SEED, clustering: stats.Clustering | None = None
                       ) -> dict[str, Any]:
    """metric -> {"a", "b", "difference"} with the paired percentile cluster-bootstrap CI (clusters = groups)
    of b - a in difference.ci, or a Rate with a reason when the metric is undefined.

    FrameEvidence: core.families.frameevidence.metrics.compare (accuracy, macro_f1, fq1_gem, nts, dis), resampling
    `clustering`'s clusters when given (exact-image or union components, 000 App. A / D.6). The other
    families: item accuracy (overall; per P / R / F kind for StemBind; per stage for SPUR) and group exact
    match, over the items (groups) both runs answered, both runs resampled with the same groups per draw.
    """
    if family == "frameevidence":
        res = fe.compare(items, run_a, run_b, split=split, draws=draws, seed=seed, clustering=clustering)
        return {m: res[m] for m in fe.COMPARED}
    scope = items if split is None else items[items["split"] == split]
    oa = item_outcomes(family, scope, run_a)
    ob = item_outcomes(family, scope, run_b)
    m = oa.merge(ob[["item_id", "answered", "correct"]], on="item_id", suffixes=("_a", "_b"))
    m = m[m["answered_a"] & m["answered_b"]].reset_index(drop=True)
    if m.empty:
        reason = "no items answered by both runs"
        return {name: Rate.undefined(reason) for name, _ in _metric_masks(family, m)} | {
            "group_exact_match": Rate.undefined(reason)}
    names, ka, na, kb, nb = [], [], [], [], []
    gkeys = m["group_id"].to_numpy()
    for name, mask in _metric_masks(family, m):
        mask = mask.astype(bool)
        names.append(name)
        ka.append((m["correct_a"] & mask).astype(float).groupby(gkeys).sum())
        kb.append((m["correct_b"] & mask).astype(float).groupby(gkeys).sum())
        cnt = mask.astype(float).groupby(gkeys).sum()
        na.append(cnt)
        nb.append(cnt)
    # group exact match: one observation per group
    ga = m.groupby("group_id")["correct_a"].all().astype(float)
    gb = m.groupby("group_id")["correct_b"].all().astype(float)
    names.append("group_exact_match")
    ka.append(ga)
    kb.append(gb)
    na.append(pd.Series(1.0, index=ga.index))
    nb.append(pd.Series(1.0, index=ga.index))
    clusters = ga.index
    A = [np.column_stack([s.reindex(clusters, fill_value=0).to_numpy() for s in arr]) for arr in (ka, na, kb, nb)]
    out: dict[str, Any] = {}
    lo = hi = None
    if seed is not None and draws > 0:
        lo, hi = stats.cluster_bootstrap_diff(A[2], A[3], A[0], A[1], draws=draws, seed=seed)
    what = {"group_exact_match": "groups"}
    for j, name in enumerate(names):
        k_a, n_a, k_b, n_b = (int(round(A[i][:, j].sum())) for i in range(4))
        ra, rb = Rate.of(k_a, n_a, what.get(name, "items")), Rate.of(k_b, n_b, what.get(name, "items"))
        if ra.value is None or rb.value is None:
            diff = Rate.undefined(f"no {what.get(name, 'items')} for {name}")
        else:
            diff = Rate(rb.value - ra.value)
            if lo is not None and hi is not None and np.isfinite(lo[j]) and np.isfinite(hi[j]):
                diff.ci = (float(lo[j]), float(hi[j]))
        out[name] = {"a": ra, "b": rb, "difference": diff}
    return out
