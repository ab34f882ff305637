"""StemBind item outcomes and accuracies (002 §4.3 (i), App. A.2): the shared helpers of every StemBind
metric module (run config, item rows, rates) and the per-item outcome they all rest on.

Item outcome. A StemBind item is answered once per run in the paper. When a run holds several predictions
of one item (rotations, repeats), the item counts as correct only when every one of its predictions is
correct, so that accuracies and the stem-level metrics rest on the same per-item outcome. Items without
any prediction are left out of accuracies; stems with a missing prediction are left out of stem metrics
(reported as `n_incomplete`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from core import stats
from core.families.stembind.vocab import (
    KINDS,
    OPERATION_FAMILIES,
    OPERATIONS,
)
from core.metrics.common import item_memoized, join, memoized, positions
from core.schema import Rate, RunData

FAMILIES = OPERATION_FAMILIES
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
    gold, gold_missing = _gold(items)
    row_ok = np.asarray((status == "ok") & (answer == gold.take(np.where(keep, pos, 0))), dtype=bool)
    if gold_missing:  # a missing answer is wrong; one can only equal a missing gold answer
        row_ok[row_ok] = pd.notna(answer[row_ok])
    pos, row_ok = pos[keep], row_ok[keep]
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


@item_memoized
def _gold(items: pd.DataFrame) -> tuple[np.ndarray, bool]:
    """The items' gold answers, and whether one is missing."""
    gold = items["answer"].to_numpy(dtype=object)
    return gold, bool(pd.isna(gold).any())


@item_memoized
def _op_codes(items: pd.DataFrame) -> tuple[np.ndarray, Any]:
    """Per item row, a code of its meta.operation (-1 when it has none), and the operations by code."""
    codes, values = pd.factorize(_item_info(items)["operation"], sort=False)
    return codes.astype(np.int64), values


@item_memoized
def _outcome_base(items: pd.DataFrame) -> pd.DataFrame:
    """item_id, group_id, kind, operation, family of every item, in item order (shared, read-only)."""
    info = _item_info(items)
    return pd.DataFrame({c: pd.Series(info[c], dtype=object) for c in _OUTCOME_COLUMNS[:5]})


@item_memoized
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


@item_memoized
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
