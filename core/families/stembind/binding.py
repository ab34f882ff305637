"""StemBind binding metrics (002 §4.3, §4.5, D.2, D.5): the stem table and its decomposition, the binding
gap, the paired VisualGain and ThinkGain, and the stem-cluster bootstrap CIs of item rates."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from core import stats
from core.families.stembind.outcomes import (
    DEFAULT_SEED,
    _config,
    _known_rows,
    _pred_rows,
    _proportion_rate,
    _rate,
    _rows_of,
    _stem_codes,
    item_outcomes,
)
from core.families.stembind.vocab import (
    DECOMPOSITION,
    KINDS,
)
from core.metrics.common import memoized
from core.schema import Rate, RunData

# --------------------------------------------------------------------------- stem level (§4.3, D.2)


def stem_table(items: pd.DataFrame, outcomes: pd.DataFrame) -> pd.DataFrame:
    """One row per stem: item counts and correct counts per kind, and the joint flags of §4.3.

    Columns: n_P, n_R, n_F (items of the stem), got_P.. (items answered), k_P.. (items correct),
    complete (at least one P, R and F item, every item answered), p_any, p_all, r, f, category.
    """
    cols, stems = _stem_columns(items, outcomes)
    return pd.DataFrame(cols, index=stems)


def _stem_columns(items: pd.DataFrame, outcomes: pd.DataFrame) -> tuple[dict[str, np.ndarray], pd.Index]:
    """`stem_table`'s columns as arrays, and its index (the stems)."""
    codes = _stem_codes(items)
    stems = codes["stems"]
    n_stems = len(stems)
    size = n_stems * len(KINDS)
    n = np.bincount(codes["cell"][codes["cell"] >= 0], minlength=size).reshape(n_stems, len(KINDS))
    if len(outcomes):
        rows = _rows_of(items, outcomes)
        cell = np.where(rows >= 0, codes["cell"].take(np.maximum(rows, 0)), -1)
        ok = cell >= 0
        correct = outcomes["correct"].to_numpy(dtype=bool)
        got = np.bincount(cell[ok], minlength=size).reshape(n_stems, len(KINDS))
        k = np.bincount(cell[ok], weights=correct[ok], minlength=size).reshape(n_stems, len(KINDS)).astype(int)
    else:
        got = k = np.zeros((n_stems, len(KINDS)), dtype=int)
    cols: dict[str, np.ndarray] = {}
    for j, kind in enumerate(KINDS):
        cols[f"n_{kind}"] = n[:, j].astype(int)
        cols[f"got_{kind}"] = got[:, j].astype(int)
        cols[f"k_{kind}"] = k[:, j].astype(int)
    complete = (n >= 1).all(axis=1) & (got == n).all(axis=1)
    p_any, p_all, r, f = k[:, 0] >= 1, k[:, 0] == n[:, 0], k[:, 1] == n[:, 1], k[:, 2] == n[:, 2]
    category = decompose(p_any, r, f)
    category[~complete] = None
    cols.update(complete=complete, p_any=p_any, p_all=p_all, r=r, f=f, category=category)
    return cols, stems


def decompose(p_any: np.ndarray, r: np.ndarray, f: np.ndarray) -> np.ndarray:
    """§4.3 (ii): solved (F correct); cant_bind (>= 1 P and R correct, F wrong); cant_reason (>= 1 P correct,
    R wrong, F wrong); cant_see (no P correct, F wrong). Every stem lands in exactly one category."""
    p_any, r, f = (np.asarray(a, dtype=bool) for a in (p_any, r, f))
    return np.select(
        [f, p_any & r, p_any & ~r],
        ["solved", "cant_bind", "cant_reason"],
        default="cant_see",
    ).astype(object)


def stem_metrics(items: pd.DataFrame, run: RunData, seed: int | None = DEFAULT_SEED) -> dict[str, Any]:
    """decomposition, binding_gap (+ f_given_pr), stem_coherent and lucky_guess over complete stems."""
    return _stem_block(_stem_columns(items, item_outcomes(items, run))[0], seed)


def _stem_block(table: dict[str, np.ndarray], seed: int | None) -> dict[str, Any]:
    """The stem-level metrics of `_stem_columns`' columns."""
    complete = np.asarray(table["complete"], dtype=bool)
    category = np.asarray(table["category"], dtype=object)[complete]
    p_all, r, f = (np.asarray(table[c], dtype=bool)[complete] for c in ("p_all", "r", "f"))
    n = int(complete.sum())
    decomposition: dict[str, Any] = {
        cat: _rate(int((category == cat).sum()), n, "complete stems") for cat in DECOMPOSITION
    }
    decomposition["n_stems"] = n
    decomposition["n_incomplete"] = int((~complete).sum())
    # Among F-wrong stems, the share with R correct (§4.3 (ii): "about 56-71% have R correct").
    decomposition["r_correct_given_f_wrong"] = _rate(int(r[~f].sum()), int((~f).sum()), "F-wrong stems")

    return {
        "decomposition": decomposition,
        **binding_gap_from_flags(p_all, r, f, seed),
        "stem_coherent": _rate(int((p_all & r & f).sum()), n, "complete stems"),
        "lucky_guess": _rate(
            int((f & ~(p_all & r)).sum()), int(f.sum()), "stems with F correct",
            reason="no stem with F correct",
        ),
    }


def binding_gap_from_flags(p_all: np.ndarray, r: np.ndarray, f: np.ndarray, seed: int | None = DEFAULT_SEED) -> dict:
    """Strict Binding Gap (§4.3 (iii), D.2): BG = 1 - P(F=1 | P=1, R=1), P=1 only when every P probe of the
    stem is correct. k = stems of the stratum with F wrong, n = the stratum; percentile cluster bootstrap CI
    over the stratum's stems (one 0/1 observation per stem, so a resample's count of F-wrong stems is exactly
    Binomial(n, BG) and is drawn as such: stats.proportion_bootstrap)."""
    p_all, r, f = (np.asarray(a, dtype=bool) for a in (p_all, r, f))
    cond = p_all & r
    n = int(cond.sum())
    reason = "no stem has every P probe and the R probe correct"
    if n == 0:
        return {"binding_gap": Rate(None, 0, 0, reason=reason), "f_given_pr": Rate(None, 0, 0, reason=reason)}
    wrong = (~f[cond]).astype(int)
    gap = _proportion_rate(int(wrong.sum()), n, seed)
    solved = Rate.of(n - int(wrong.sum()), n)
    if gap.ci is not None:
        solved.ci = (1.0 - gap.ci[1], 1.0 - gap.ci[0])
    return {"binding_gap": gap, "f_given_pr": solved}


# --------------------------------------------------------------------------- paired runs


@memoized
def _paired_outcomes(items: pd.DataFrame, a: RunData, b: RunData) -> pd.DataFrame:
    """a's outcomes on the items b also answered (in a's order), with correct_a and correct_b."""
    oa = item_outcomes(items, a)
    ob = item_outcomes(items, b)
    rows_a, rows_b = _rows_of(items, oa), _rows_of(items, ob)
    index_b = np.full(len(items) + 1, -1, dtype=np.int64)  # item row -> row of ob (the last slot: outside)
    index_b[rows_b] = np.arange(len(rows_b))
    at = index_b.take(rows_a)
    keep = at >= 0
    both = oa[keep].reset_index(drop=True).rename(columns={"correct": "correct_a"})
    both.insert(len(both.columns), "correct_b", ob["correct"].to_numpy(dtype=bool).take(at[keep]))
    both = both[["item_id", "group_id", "kind", "operation", "family", "correct_a", "n_preds", "correct_b"]]
    _known_rows(items)[id(both)] = rows_a[keep]
    return both


def _paired_arrays(both: pd.DataFrame, mask: np.ndarray | None = None, stems: np.ndarray | None = None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per stem (in order of first appearance): correct items of a, of b, and items (ka, kb, n), over the rows
    of `both` (or those in `mask`). `stems`: each row's stem as an integer code (one code per group_id), which
    spares hashing the group ids."""
    group = both["group_id"].to_numpy(dtype=object) if stems is None else stems
    return _stem_sums(group, both["correct_a"].to_numpy(dtype=bool), both["correct_b"].to_numpy(dtype=bool), mask)


def _stem_sums(group: np.ndarray, ca: np.ndarray, cb: np.ndarray, mask: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`_paired_arrays` of the rows' stems (group ids or integer codes) and correct flags of a and b."""
    if mask is not None:
        group, ca, cb = group[mask], ca[mask], cb[mask]
    codes, uniques = pd.factorize(group, sort=False)
    m, keep = len(uniques), codes >= 0  # a missing group_id is in no stem (as groupby drops it)
    codes = codes[keep]
    ka = np.bincount(codes, weights=ca[keep], minlength=m).astype(int)
    kb = np.bincount(codes, weights=cb[keep], minlength=m).astype(int)
    n = np.bincount(codes, minlength=m).astype(int)
    return ka, kb, n


@memoized
def _kind_masks(frame: pd.DataFrame, items: pd.DataFrame | None = None) -> dict[str, np.ndarray]:
    """Row masks of each kind (P, R, F) of a frame with a kind column (read-only, shared); from the item rows
    when the frame was built here from `items`."""
    rows = _known_rows(items).get(id(frame)) if items is not None else None
    if rows is not None:
        kind_code = _stem_codes(items)["kind"].take(rows)
        return {k: kind_code == j for j, k in enumerate(KINDS)}
    kind = frame["kind"].to_numpy(dtype=object)
    return {k: np.asarray(kind == k, dtype=bool) for k in KINDS}


def _row_stems(items: pd.DataFrame, frame: pd.DataFrame) -> np.ndarray | None:
    """Each row's stem code when the frame's item rows are known (else None)."""
    rows = _known_rows(items).get(id(frame))
    return None if rows is None else _stem_codes(items)["stem"].take(rows)


def _paired_diff(both: pd.DataFrame, seed: int | None, what: str, mask: np.ndarray | None = None,
                 stems: np.ndarray | None = None) -> Rate:
    """Accuracy of b minus accuracy of a on the items both runs answered (the rows of `both`, or those in
    `mask`); paired cluster bootstrap by stem."""
    if len(both) == 0 or (mask is not None and not mask.any()):
        return Rate.undefined(f"no {what} answered by both runs")
    ka, kb, n = _paired_arrays(both, mask, stems)
    rate = Rate(kb.sum() / n.sum() - ka.sum() / n.sum(), n=int(n.sum()))
    if seed is not None:
        rate.ci = stats.cluster_bootstrap_diff(kb, n, ka, n, seed=seed)
    return rate


def visual_gain(items: pd.DataFrame, full_run: RunData, text_run: RunData, seed: int | None = DEFAULT_SEED) -> dict:
    """VG = Acc(full image) - Acc(text only) (§3.3, D.5) on the items both runs answered, overall and per kind."""
    both = _paired_outcomes(items, text_run, full_run)  # a = text, b = full: b - a
    stems = _row_stems(items, both)
    out: dict[str, Any] = {"overall": _paired_diff(both, seed, "items", stems=stems)}
    masks = _kind_masks(both, items)
    for kind in KINDS:
        out[kind] = _paired_diff(both, seed, f"{kind} items", masks[kind], stems)
    out["partner"] = text_run.name
    return out


def think_gain(items: pd.DataFrame, direct_run: RunData, thinking_run: RunData, seed: int | None = DEFAULT_SEED) -> dict:
    """ThinkGain@X = Acc_think,X - Acc_non-think,X for X in P, R, F (§4.5, D.4), on items both runs answered;
    beside it the same deltas without cap-hit items (`at_X_no_cap`, D.4 "Re-computing the paired ThinkGain
    deltas after excluding cap-hit items"): an item leaves when any prediction of it, in either run, reached
    that run's config.max_tokens."""
    both = _paired_outcomes(items, direct_run, thinking_run)  # a = direct, b = thinking
    masks = _kind_masks(both, items)
    stems = _row_stems(items, both)
    out: dict[str, Any] = {
        f"at_{kind}": _paired_diff(both, seed, f"{kind} items", masks[kind], stems) for kind in KINDS
    }
    keep, reason = _without_cap_hits(items, direct_run, thinking_run, both)
    if keep is None:
        for kind in KINDS:
            out[f"at_{kind}_no_cap"] = Rate.undefined(reason or "")
        out["n_cap_hit"] = Rate.undefined(reason or "")
    else:
        for kind in KINDS:
            out[f"at_{kind}_no_cap"] = _paired_diff(both, seed, f"{kind} items without a cap hit",
                                                    masks[kind] & keep, stems)
        out["n_cap_hit"] = Rate.of(int((~keep).sum()), len(both))
    out["direct"] = direct_run.name
    out["thinking"] = thinking_run.name
    return out


def cap_hit_items(items: pd.DataFrame, run: RunData) -> tuple[np.ndarray | None, str | None]:
    """Per item row, whether any prediction of `run` reached its config.max_tokens (D.4, Table 24 cap-hit);
    (None, reason) when the run has no max_tokens or records no output-token count. A prediction without a
    token count is taken as not at the cap."""
    cap = _config(run, "max_tokens")
    if not cap:
        return None, f"run {run.name!r}: the config has no max_tokens"
    preds = run.preds
    if preds is None or not len(preds) or "tokens" not in preds:
        return None, f"run {run.name!r} records no output-token counts"
    tokens = pd.to_numeric(preds["tokens"], errors="coerce").to_numpy(dtype=float)
    if np.isnan(tokens).all():
        return None, f"run {run.name!r} records no output-token counts"
    pos = _pred_rows(items, run)
    keep = pos >= 0
    at_cap = np.nan_to_num(tokens, nan=-np.inf) >= float(cap)
    return np.bincount(pos[keep], weights=at_cap[keep], minlength=len(items)) > 0, None


def _without_cap_hits(items: pd.DataFrame, direct_run: RunData, thinking_run: RunData, both: pd.DataFrame
                      ) -> tuple[np.ndarray | None, str | None]:
    """Per row of the pair's paired outcomes `both`: the item has no cap-hit prediction in either run (D.4);
    (None, reason) when a run has no max_tokens or token counts."""
    hit, reason = _cap_hit_items(items, direct_run, thinking_run)
    return (None, reason) if hit is None else (~hit.take(_rows_of(items, both)), None)


def _cap_hit_items(items: pd.DataFrame, a: RunData, b: RunData) -> tuple[np.ndarray | None, str | None]:
    hit_a, reason_a = cap_hit_items(items, a)
    hit_b, reason_b = cap_hit_items(items, b)
    if hit_a is None or hit_b is None:
        return None, reason_a or reason_b
    return hit_a | hit_b, None


@memoized
def _ci_arrays(outcomes: pd.DataFrame, masks: tuple[Any, ...], items: pd.DataFrame | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """Per stem (sorted by group_id): correct items and items under each mask (stems x masks). Memoized (the
    masks matched by identity): `prefetch` and the run's own CIs ask for the same arrays (shared, read-only)."""
    rows = _known_rows(items).get(id(outcomes)) if items is not None else None
    if rows is not None:  # stems ranked in sorted group_id order, from the item rows (no string hashing)
        layout = _stem_codes(items)
        ranks = layout["rank"].take(layout["stem"].take(rows))
        present = np.bincount(ranks, minlength=len(layout["rank"])) > 0
        codes = (np.cumsum(present) - 1).take(ranks)  # np.unique's inverse, without sorting the rows
    else:
        codes, _ = pd.factorize(outcomes["group_id"].to_numpy(dtype=object), sort=True)
    m = int(codes.max()) + 1 if len(codes) else 0
    keep = codes >= 0  # a missing group_id is in no stem (as groupby drops it)
    codes = codes[keep]
    correct = outcomes["correct"].to_numpy(dtype=bool)[keep]
    k = np.empty((m, len(masks)), dtype=np.int64)
    n = np.empty((m, len(masks)), dtype=np.int64)
    for i, mask in enumerate(masks):
        mk = np.asarray(mask, dtype=bool)[keep]
        n[:, i] = np.bincount(codes, weights=mk, minlength=m)
        k[:, i] = np.bincount(codes, weights=mk & correct, minlength=m)
    return k, n


def _attach_cis(outcomes: pd.DataFrame, pairs: list[tuple[Rate, Any]], seed: int | None,
                items: pd.DataFrame | None = None) -> None:
    """Percentile cluster-bootstrap CIs (clusters = stems, one shared resampling) for item-level rates."""
    pairs = [(rate, mask) for rate, mask in pairs if rate.value is not None]
    if seed is None or not pairs:
        return
    k, n = _ci_arrays(outcomes, tuple(m for _, m in pairs), items)
    lo, hi = stats.cluster_bootstrap_many(k, n, seed=seed)
    for i, (rate, _) in enumerate(pairs):
        rate.ci = (float(lo[i]), float(hi[i]))
