"""StemBind metrics (paper 002: §3.3, §4.3-4.5, App. A.2, A.3, C.3, C.5, D.2-D.5).

Every function takes the items DataFrame of the split being scored and one or more `RunData`; see
docs/METRICS.md (StemBind) for each definition, its paper section and its edge cases.

Item outcome. A StemBind item is answered once per run in the paper. When a run holds several predictions
of one item (rotations, repeats), the item counts as correct only when every one of its predictions is
correct, so that accuracies and the stem-level metrics rest on the same per-item outcome. Items without
any prediction are left out of accuracies; stems with a missing prediction are left out of stem metrics
(reported as `n_incomplete`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from core import stats
from core.families.stembind.stages import _flag, first_failure, inconsistent
from core.families.stembind.vocab import (
    DECOMPOSITION,
    KINDS,
    NO_FAILURE,
    OPERATION_FAMILIES,
    OPERATIONS,
    SSA_CONTROL,
    SSA_LEVELS,
    STAGES,
)
from core.metrics.common import join, memoized, positions
from core.schema import Rate, RunData

FAMILIES = OPERATION_FAMILIES
# App. D.4, Table 25: first decisive error of a trace.
ERROR_CATEGORIES = (
    "correspondence_drift", "rule_mutation", "distractor_capture", "late_answer_switching",
    "perception_error", "rule_absent",
)
TERCILES = ("short", "middle", "long")
DEFAULT_SEED = stats.DEFAULT_SEED

_OUTCOME_COLUMNS = ["item_id", "group_id", "kind", "operation", "family", "correct", "n_preds"]


# --------------------------------------------------------------------------- helpers


def operation_family(operation: Any) -> str | None:
    """RI or VP from an operation label (A.1), None for anything else."""
    if isinstance(operation, str):
        if operation.startswith("RI-"):
            return "RI"
        if operation.startswith("VP-"):
            return "VP"
    return None


def _meta(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, Mapping) else None


def _config(run: RunData, key: str, default: Any = None) -> Any:
    value = (run.config or {}).get(key, default)
    return default if value is None else value


@memoized
def _input_mode(run: RunData) -> str:
    """The run's input mode: its config's, else the most frequent in its predictions (asked of every partner
    candidate of every run scored: memoized)."""
    mode = (run.config or {}).get("input_mode")
    if mode:
        return str(mode)
    preds = run.preds
    if preds is not None and len(preds) and "input_mode" in preds:
        column = preds["input_mode"].to_numpy(dtype=object)
        if column[0] is not None and (column == column[0]).all():  # one mode for every prediction (the usual)
            return str(column[0])
        modes = preds["input_mode"].dropna()
        if len(modes):
            return str(modes.mode().iloc[0])
    return "all"


def _strategy(run: RunData) -> str:
    return str(_config(run, "strategy", "direct"))


def _ssa_level(run: RunData) -> str | None:
    level = (run.config or {}).get("ssa_level")
    return str(level) if level else None


def _diff(a: Rate, b: Rate, reason: str) -> Rate:
    """a - b as a Rate holding only the value (a difference has no k / n)."""
    if a.value is None or b.value is None:
        return Rate.undefined(reason)
    return Rate(a.value - b.value)


def _rate(k: int, n: int, what: str, reason: str | None = None) -> Rate:
    if n == 0:
        return Rate(None, int(k), 0, reason=reason or f"no {what} to count")
    return Rate.of(int(k), int(n))


def _proportion_rate(k: int, n: int, seed: int | None) -> Rate:
    """k / n over n clusters of one 0/1 observation each, with its percentile cluster-bootstrap CI."""
    rate = Rate.of(k, n)
    if n and seed is not None:
        rate.ci = stats.proportion_bootstrap(k, n, seed=seed)
    return rate


# --------------------------------------------------------------------------- per-item outcomes


@memoized
def _joined(items: pd.DataFrame, run: RunData) -> pd.DataFrame:
    """common.join of the run's predictions (shared, read-only)."""
    return join(items, run.preds)


@memoized
def _pred_rows(items: pd.DataFrame, run: RunData) -> np.ndarray:
    """Item row of each of the run's predictions (-1 outside `items`); the bulk loader's rows when `items` is
    the frame it loaded."""
    if run.item_rows is not None and run.rows_in is items:
        return run.item_rows
    return positions(items, run.preds["item_id"])


@memoized
def _known_rows(items: pd.DataFrame) -> dict[int, np.ndarray]:
    """id(frame) -> item rows of the frames built here from item rows (outcomes, paired outcomes); kept
    inside a stats.ScoringContext, where those frames stay alive (memoized results), so ids are not reused."""
    return {}


def _rows_of(items: pd.DataFrame, frame: pd.DataFrame) -> np.ndarray:
    """Item row of each row of a frame with an item_id column (an outcomes frame), -1 outside `items`."""
    known = _known_rows(items).get(id(frame))
    if known is not None:
        return known
    return positions(items, frame["item_id"]) if len(frame) else np.empty(0, dtype=np.int64)


@memoized
def item_outcomes(items: pd.DataFrame, run: RunData) -> pd.DataFrame:
    """One row per item of `items` that `run` answered: group_id, kind, operation, family, correct, n_preds.

    `correct` is True only when every prediction of the item (all rotations and repeats) is correct. Rows are
    in the order of each item's first prediction.
    """
    preds = run.preds
    if preds is None or len(preds) == 0:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in _OUTCOME_COLUMNS})
    pos = _pred_rows(items, run)
    keep = pos >= 0
    if not keep.any():
        return pd.DataFrame({c: pd.Series(dtype=object) for c in _OUTCOME_COLUMNS})
    status = preds["status"].to_numpy(dtype=object)
    answer = preds["answer"].to_numpy(dtype=object)
    gold = items["answer"].to_numpy(dtype=object)
    row_ok = (status == "ok") & (answer == gold.take(np.where(keep, pos, 0))) & pd.notna(answer)
    pos, row_ok = pos[keep], np.asarray(row_ok, dtype=bool)[keep]
    n_items = len(items)
    n_preds = np.bincount(pos, minlength=n_items)
    n_ok = np.bincount(pos, weights=row_ok, minlength=n_items)
    seen = np.flatnonzero(n_preds)
    if len(seen) == len(pos) and (len(pos) < 2 or bool((np.diff(pos) > 0).all())):
        order = pos  # one prediction per item, in item order (the store's order)
    else:
        first = np.full(n_items, len(pos), dtype=np.int64)
        np.minimum.at(first, pos, np.arange(len(pos)))
        order = seen[np.argsort(first[seen], kind="stable")]
    if len(order) == n_items and (n_items < 2 or bool((np.diff(order) == 1).all())) and (
            n_items == 0 or order[0] == 0):
        # every item answered, in item order (a complete run from the store): the item columns as they are
        out = _outcome_base(items).copy(deep=False)
        out["correct"] = n_ok == n_preds
        out["n_preds"] = n_preds.astype(np.int64)
        _known_rows(items)[id(out)] = order
        return out
    info = _item_info(items)
    out = pd.DataFrame({
        "item_id": pd.Series(info["item_id"].take(order), dtype=object),
        "group_id": pd.Series(info["group_id"].take(order), dtype=object),
        "kind": pd.Series(info["kind"].take(order), dtype=object),
        "operation": pd.Series(info["operation"].take(order), dtype=object),
        "family": pd.Series(info["family"].take(order), dtype=object),
        "correct": n_ok.take(order) == n_preds.take(order),
        "n_preds": n_preds.take(order).astype(np.int64),
    })
    _known_rows(items)[id(out)] = order
    return out


@memoized
def _op_codes(items: pd.DataFrame) -> tuple[np.ndarray, Any]:
    """Per item row, a code of its meta.operation (-1 when it has none), and the operations by code."""
    codes, values = pd.factorize(_item_info(items)["operation"], sort=False)
    return codes.astype(np.int64), values


@memoized
def _outcome_base(items: pd.DataFrame) -> pd.DataFrame:
    """item_id, group_id, kind, operation, family of every item, in item order (shared, read-only)."""
    info = _item_info(items)
    return pd.DataFrame({c: pd.Series(info[c], dtype=object) for c in _OUTCOME_COLUMNS[:5]})


@memoized
def _item_info(items: pd.DataFrame) -> dict[str, np.ndarray]:
    """item_id, group_id, kind, meta.operation and its RI / VP family per item row (read once per items frame)."""
    operation = np.array([_meta(m, "operation") for m in items["meta"]], dtype=object)
    try:
        codes, distinct = pd.factorize(pd.Series(operation, dtype=object), sort=False, use_na_sentinel=False)
    except TypeError:  # an unhashable meta value: one call per item
        codes, distinct = np.arange(len(operation)), operation
    families = np.array([operation_family(o) for o in distinct], dtype=object)  # once per distinct operation
    return {
        "item_id": items["item_id"].to_numpy(dtype=object),
        "group_id": items["group_id"].to_numpy(dtype=object),
        "kind": items["kind"].to_numpy(dtype=object),
        "operation": operation,
        "family": families.take(codes) if len(codes) else np.array([], dtype=object),
    }


def _accuracy(outcomes: pd.DataFrame, kind: str) -> Rate:
    sub = outcomes[outcomes["kind"] == kind]
    return _rate(int(sub["correct"].sum()), len(sub), f"{kind} items")


def accuracies(items: pd.DataFrame, run: RunData) -> dict[str, Any]:
    """P / R / F accuracy overall, per operation and per RI / VP family, with the R-F gap of each (§4.2-4.3)."""
    out = item_outcomes(items, run)
    return _accuracy_block(out)


def _accuracy_block(out: pd.DataFrame, items: pd.DataFrame | None = None) -> dict[str, Any]:
    # correct / answered counts per (operation, kind) cell in one bincount, then the rates of each block
    correct = out["correct"].to_numpy(dtype=bool)
    rows = _known_rows(items).get(id(out)) if items is not None else None
    if rows is not None:  # codes of the outcome rows' items (no string comparisons)
        kcode = _stem_codes(items)["kind"].take(rows)
        item_ops, op_values = _op_codes(items)
        op_code = item_ops.take(rows)
    else:
        kind = out["kind"].to_numpy(dtype=object)
        kcode = np.full(len(out), -1, dtype=np.int64)
        for j, k in enumerate(KINDS):
            kcode[kind == k] = j
        op_code, op_values = pd.factorize(out["operation"].to_numpy(dtype=object), sort=False)
    n_ops = len(op_values)

    def cells(codes: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
        ok = (codes >= 0) & (kcode >= 0)
        cell = codes[ok] * len(KINDS) + kcode[ok]
        n = np.bincount(cell, minlength=m * len(KINDS)).reshape(m, len(KINDS))
        k = np.bincount(cell, weights=correct[ok], minlength=m * len(KINDS)).reshape(m, len(KINDS))
        return k.astype(int), n

    def block(k_row: np.ndarray, n_row: np.ndarray) -> dict[str, Rate]:
        p, r, f = (_rate(int(k_row[j]), int(n_row[j]), f"{kk} items") for j, kk in enumerate(KINDS))
        return {"p": p, "r": r, "f": f, "rf_gap": _diff(r, f, "R or F accuracy is undefined")}

    k_all, n_all = cells(np.zeros(len(out), dtype=np.int64), 1)
    overall = block(k_all[0], n_all[0])
    k_op, n_op = cells(op_code, n_ops)
    rows_of_op = np.bincount(op_code[op_code >= 0], minlength=n_ops)  # an operation counts if a row has it
    index_of = {v: i for i, v in enumerate(op_values) if rows_of_op[i]}
    ops_present = [op for op in OPERATIONS if op in index_of]
    ops_present += sorted(v for v in index_of if v not in OPERATIONS)
    fam_of = np.array([FAMILIES.index(f) if (f := operation_family(v)) in FAMILIES else -1 for v in op_values],
                      dtype=np.int64)
    fam_code = np.where(op_code >= 0, fam_of.take(np.maximum(op_code, 0)) if n_ops else -1, -1)
    k_fam, n_fam = cells(fam_code, len(FAMILIES))
    fam_rows = np.bincount(fam_code[fam_code >= 0], minlength=len(FAMILIES))
    return {
        "p_accuracy": overall["p"],
        "r_accuracy": overall["r"],
        "f_accuracy": overall["f"],
        "rf_gap": overall["rf_gap"],
        "by_operation": {op: block(k_op[index_of[op]], n_op[index_of[op]]) for op in ops_present},
        "by_family": {fam: block(k_fam[j], n_fam[j]) for j, fam in enumerate(FAMILIES) if fam_rows[j]},
    }


# --------------------------------------------------------------------------- stem level (§4.3, D.2)


def stem_table(items: pd.DataFrame, outcomes: pd.DataFrame) -> pd.DataFrame:
    """One row per stem: item counts and correct counts per kind, and the joint flags of §4.3.

    Columns: n_P, n_R, n_F (items of the stem), got_P.. (items answered), k_P.. (items correct),
    complete (at least one P, R and F item, every item answered), p_any, p_all, r, f, category.
    """
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
    return pd.DataFrame(cols, index=stems)


@memoized
def _stem_codes(items: pd.DataFrame) -> dict[str, Any]:
    """Stems in order of first appearance, and per item row its (stem, kind) cell: stem * 3 + kind (P, R, F),
    -1 for a kind outside P / R / F."""
    codes, uniques = pd.factorize(items["group_id"].to_numpy(dtype=object), sort=False)
    kind = items["kind"].to_numpy(dtype=object)
    kind_code = np.full(len(items), -1, dtype=np.int64)
    for j, k in enumerate(KINDS):
        kind_code[kind == k] = j
    cell = np.where((kind_code >= 0) & (codes >= 0), codes * len(KINDS) + kind_code, -1)
    rank = np.empty(len(uniques), dtype=np.int64)  # each stem's place in sorted group_id order
    rank[np.argsort(np.asarray(uniques, dtype=object), kind="stable")] = np.arange(len(uniques))
    return {"stems": pd.Index(uniques, dtype=object, name="group_id"), "cell": cell, "stem": codes,
            "rank": rank, "kind": kind_code}


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
    table = stem_table(items, item_outcomes(items, run))
    return _stem_block(table, seed)


def _stem_block(table: pd.DataFrame, seed: int | None) -> dict[str, Any]:
    complete = table["complete"].to_numpy(dtype=bool)
    category = table["category"].to_numpy(dtype=object)[complete]
    p_all, r, f = (table[c].to_numpy(dtype=bool)[complete] for c in ("p_all", "r", "f"))
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
    ca, cb = both["correct_a"].to_numpy(dtype=bool), both["correct_b"].to_numpy(dtype=bool)
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


# --------------------------------------------------------------------------- L2 / L3 (§3.3, §4.4, A.3, C.3)


def _trace_keys(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.copy()
    for col in ("rotation", "repeat"):
        if col not in frame:
            frame[col] = 0
        frame[col] = frame[col].fillna(0).astype(int)
    frame["item_id"] = frame["item_id"].astype(str)
    return frame


def _pred_correct(items: pd.DataFrame, run: RunData) -> pd.DataFrame:
    joined = _trace_keys(_joined(items, run))
    return joined[["item_id", "rotation", "repeat", "correct", *[c for c in ("tokens", "trace") if c in joined]]]


def l2_profile(items: pd.DataFrame, run: RunData, judgements: pd.DataFrame | None) -> dict[str, Any]:
    """L2 StepAcc per stage, first-failure histogram (all judged traces and F-wrong traces), share of traces
    with inconsistent flags, and L3 AttrTag (first failure x perception load)."""
    if judgements is None or len(judgements) == 0:
        return {"reason": "no trace judgements for this run"}
    j = _trace_keys(judgements)
    if "status" in j:
        j = j[j["status"].fillna("ok") == "ok"]
    f_items = items[items["kind"] == "F"]
    j = j[j["item_id"].isin(set(f_items["item_id"]))]
    if len(j) == 0:
        return {"reason": "no usable judgement of an F item"}
    flags = [[_flag(v) for v in row] for row in j[list(STAGES)].itertuples(index=False, name=None)]
    ff = [first_failure(fl) for fl in flags]
    n = len(flags)
    step_acc = {}
    for i, stage in enumerate(STAGES):
        known = [bool(fl[i]) for fl in flags if fl[i] is not None]
        step_acc[stage] = _rate(sum(known), len(known), f"traces with a known {stage} flag")
    j = j.assign(first_failure_rule=ff)
    correct = _pred_correct(items, run)
    j = j.merge(correct[["item_id", "rotation", "repeat", "correct"]], on=["item_id", "rotation", "repeat"],
                how="left")
    wrong = j[j["correct"].eq(False)]
    order = [*STAGES, NO_FAILURE]
    out: dict[str, Any] = {
        "n_traces": n,
        "step_acc": step_acc,
        "first_failure": {s: Rate.of(ff.count(s), n) for s in order},
        "first_failure_f_wrong": {
            s: _rate(int((wrong["first_failure_rule"] == s).sum()), len(wrong), "F-wrong judged traces")
            for s in STAGES
        },
        "inconsistent": Rate.of(sum(inconsistent(fl) for fl in flags), n),
    }
    if "first_failure" in j:
        given = j["first_failure"].map(lambda v: NO_FAILURE if v is None or v != v or v == "" else str(v))
        out["first_failure_disagreements"] = int((given != j["first_failure_rule"]).sum())
    load = j["item_id"].map(items.set_index("item_id")["meta"].map(lambda m: _meta(m, "perception_load")))
    tab = pd.crosstab(load.fillna("unknown"), j["first_failure_rule"])
    out["attr_tag"] = {
        str(lv): {s: int(tab.loc[lv, s]) if s in tab.columns else 0 for s in order} for lv in tab.index
    }
    return out


# --------------------------------------------------------------------------- tokens and error audit (D.4)


def token_stats(items: pd.DataFrame, run: RunData) -> dict[str, Any]:
    """Output-token mean, p95 (linear interpolation) and cap-hit rate (tokens >= max_tokens), Table 24."""
    preds = run.preds
    has = preds is not None and len(preds) and "tokens" in preds
    if has:
        in_scope = _pred_rows(items, run) >= 0
        tokens = pd.to_numeric(preds["tokens"][in_scope], errors="coerce")
    else:
        tokens = pd.Series(dtype=float)
    known = tokens.dropna()
    if len(known) == 0:
        return {"reason": "the run records no output-token counts"}
    cap = _config(run, "max_tokens")
    out: dict[str, Any] = {
        "n": len(known),
        "mean": float(known.mean()),
        "p95": float(np.percentile(known.to_numpy(dtype=float), 95)),
        "max_tokens": cap,
    }
    if cap:
        out["cap_hit"] = Rate.of(int((known >= float(cap)).sum()), len(known))
    else:
        out["cap_hit"] = Rate.undefined("the run config has no max_tokens")
    return out


def error_audit(items: pd.DataFrame, run: RunData | None, labels: pd.DataFrame) -> dict[str, Any]:
    """First decisive error per 100 F items (D.4, Table 25), overall and by trace-length tercile.

    `labels`: item_id, rotation, repeat (default 0), category (empty or None = no error on that trace).
    Every labeled F trace counts in the denominator. Terciles: traces ranked by output tokens (or by trace
    characters when tokens are missing) split into three equal-count thirds; needs `run`.
    """
    if labels is None or len(labels) == 0 or "category" not in labels:
        return {"reason": "no error-audit labels with a category"}
    lab = _trace_keys(labels)
    lab = lab[lab["item_id"].isin(set(items.loc[items["kind"] == "F", "item_id"]))]
    if len(lab) == 0:
        return {"reason": "no error-audit label on an F item"}
    if lab.duplicated(["item_id", "rotation", "repeat"]).any():
        return {"reason": "several labels for one trace; pass the labels of one annotator (or a consensus)"}
    lab = lab.assign(category=lab["category"].map(lambda v: None if v is None or v != v or v == "" else str(v)))
    cats = [*ERROR_CATEGORIES, *sorted(set(lab["category"].dropna()) - set(ERROR_CATEGORIES))]
    out: dict[str, Any] = _per_100(lab, cats)
    if run is None:
        out["by_tercile"] = {"reason": "no run given for trace lengths"}
        return out
    preds = _pred_correct(items, run)
    lab = lab.merge(preds, on=["item_id", "rotation", "repeat"], how="left")
    length = pd.to_numeric(lab.get("tokens"), errors="coerce") if "tokens" in lab else None
    if length is None or length.isna().any():
        if "trace" in lab and lab["trace"].map(lambda t: isinstance(t, str)).all():
            length = lab["trace"].str.len().astype(float)
        else:
            out["by_tercile"] = {"reason": "trace lengths unknown (no tokens and no trace text)"}
            return out
    rank = np.empty(len(lab), dtype=int)
    rank[np.argsort(length.to_numpy(dtype=float), kind="stable")] = np.arange(len(lab))
    tercile = (rank * 3) // len(lab)
    out["by_tercile"] = {TERCILES[t]: _per_100(lab[tercile == t], cats) for t in range(3) if (tercile == t).any()}
    return out


def _per_100(lab: pd.DataFrame, cats: list[str]) -> dict[str, Any]:
    n = len(lab)
    counts = lab["category"].value_counts()
    return {
        "n_items": n,
        "per_100": {c: 100.0 * int(counts.get(c, 0)) / n for c in cats},
        "rates": {c: Rate.of(int(counts.get(c, 0)), n) for c in cats},
        "no_error": Rate.of(int(lab["category"].isna().sum()), n),
    }


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


def _ci_arrays(outcomes: pd.DataFrame, masks: list[Any], items: pd.DataFrame | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """Per stem (sorted by group_id): correct items and items under each mask (stems x masks)."""
    rows = _known_rows(items).get(id(outcomes)) if items is not None else None
    if rows is not None:  # stems ranked in sorted group_id order, from the item rows (no string hashing)
        layout = _stem_codes(items)
        _, codes = np.unique(layout["rank"].take(layout["stem"].take(rows)), return_inverse=True)
        codes = codes.reshape(-1)
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
    k, n = _ci_arrays(outcomes, [m for _, m in pairs], items)
    lo, hi = stats.cluster_bootstrap_many(k, n, seed=seed)
    for i, (rate, _) in enumerate(pairs):
        rate.ci = (float(lo[i]), float(hi[i]))


def prefetch(items: pd.DataFrame, runs: Iterable[RunData], seed: int | None = DEFAULT_SEED) -> None:
    """Resample, in one pass, the per-stem columns that `score` will bootstrap for each of `runs`.

    Only useful inside an active `stats.ScoringContext` (scoring many runs at once); otherwise it does nothing. The
    columns are built by the same helpers as the metrics (item-rate CIs by kind over sorted stems; paired
    differences overall and by kind over stems in order of appearance), so each later request finds its
    resampled sums in the cache. A request that differs (a partner that left items unanswered) is simply
    computed when asked: the cache only ever returns the sums of the very columns asked for.
    """
    context = stats.current_context()
    if context is None or seed is None:
        return
    cache = context.draws
    by_size: dict[int, list[np.ndarray]] = {}
    for run in runs:
        out = item_outcomes(items, run)
        if not len(out):
            continue
        masks = _kind_masks(out, items)
        k, n = _ci_arrays(out, [masks[kind] for kind in KINDS], items)
        by_size.setdefault(k.shape[0], []).extend([k, n])
        both = out.assign(correct_a=out["correct"], correct_b=out["correct"])
        stems = _row_stems(items, out)
        for mask in [None, *(masks[kind] for kind in KINDS)]:
            if mask is None or mask.any():
                ka, _, nn = _paired_arrays(both, mask, stems)
                by_size.setdefault(len(ka), []).extend([ka[:, None], nn[:, None]])
    for direct, thinking in _think_pairs(runs):  # ThinkGain without cap-hit items: subsets of the stems
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


def score(
    items: pd.DataFrame,
    run: RunData,
    others: Iterable[RunData] = (),
    judgements: pd.DataFrame | None = None,
    labels: pd.DataFrame | None = None,
    seed: int | None = DEFAULT_SEED,
) -> dict[str, Any]:
    """Every StemBind metric of `run`; paired metrics find their partner in `others` or give a reason.

    `labels` (optional): error-audit labels with a `category` column (adds `error_audit`). `seed=None` skips
    the bootstrap CIs.
    """
    others = [o for o in others if o is not run]
    outcomes = item_outcomes(items, run)
    result: dict[str, Any] = _accuracy_block(outcomes, items)
    masks = _kind_masks(outcomes, items)
    _attach_cis(outcomes, [(result[f"{k.lower()}_accuracy"], masks[k]) for k in KINDS], seed, items)
    result.update(_stem_block(stem_table(items, outcomes), seed))

    if _input_mode(run) == "text":
        result["vg"] = Rate.undefined("this run is itself text-only")
    else:
        partner = find_text_partner(run, others)
        result["vg"] = (visual_gain(items, run, partner, seed) if partner is not None else Rate.undefined(
            "no text-only run of the same model and strategy"))

    if _strategy(run) not in ("direct", "thinking"):
        result["think_gain"] = Rate.undefined(f"strategy {_strategy(run)!r} has no direct / thinking pair")
    else:
        partner = find_think_partner(run, others)
        if partner is None:
            result["think_gain"] = Rate.undefined("no paired direct / thinking run of the same model")
        else:
            direct, thinking = (run, partner) if _strategy(run) == "direct" else (partner, run)
            result["think_gain"] = think_gain(items, direct, thinking, seed)

    if _strategy(run) == "ssa":
        result["ssa_text_removed"] = ssa_text_removed(run)
    levels = find_ssa_runs(run, others)
    result["ssa"] = (_or_reason(ssa_curve(items, levels)) if levels else Rate.undefined(
        "no SSA runs (config ssa_level) of this model"))

    l2 = l2_profile(items, run, judgements)
    result["l2"] = _or_reason({k: v for k, v in l2.items() if k != "attr_tag"})
    result["l3_attr_tag"] = l2["attr_tag"] if "attr_tag" in l2 else Rate.undefined(l2.get("reason", ""))
    result["tokens"] = _or_reason(token_stats(items, run))
    if labels is not None:
        result["error_audit"] = _or_reason(error_audit(items, run, labels))
    return result
