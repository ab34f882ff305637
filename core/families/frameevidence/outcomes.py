"""FrameEvidence: the joined outcome tables every metric reads (paper 000 §3, App. A): one row per item
of the split with the run's prediction (frame, _outcomes), the column Table the metrics read, and the
group tables of the joint metrics.

Item outcome. The main metrics use each run's rotation-0 / repeat-0 predictions. As in the paper ("All
model-mode comparisons use the full question and group counts"), every item of the split is in the
denominator: an item without a prediction counts as wrong (status "missing", like invalid and api_error),
and `coverage` says how many items were answered. A prediction is correct when status == "ok" and its
original-order letter equals the gold letter (core.metrics.common.join).

Groups. An FQ1 group holds one cam, obj and scene item; an FQ2 group one mss, del and add item (validated
at import by core.families.frameevidence). A joint metric counts the groups that hold every variant it
needs; two items of one variant in one group, or a variant outside the family, raise MetricUndefined.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeAlias

import numpy as np
import pandas as pd

from core.errors import MetricUndefined
from core.families.frameevidence.vocab import VARIANTS
from core.metrics.common import (
    item_memoized,
    join,
    memoized,
    positions,
    select,
)
from core.schema import Rate, RunData

MISSING = "missing"  # status of an item the run never answered (counts as wrong)
# Run-config keys that record bookkeeping rather than a setting; ignored when pairing runs.
BOOKKEEPING_KEYS = frozenset({"created", "created_at", "finished_at", "status", "note", "notes", "name"})

_PRED_DEFAULTS = {"rotation": 0, "repeat": 0, "status": MISSING, "answer": None}


# --------------------------------------------------------------------------- frames


def _meta(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, Mapping) else None


@item_memoized
def _scope(items: pd.DataFrame, split: str | None) -> pd.DataFrame:
    """Items of one split (None = every split)."""
    scope = items if split is None else items[items["split"] == split]
    return scope.reset_index(drop=True)


def _preds(run: RunData | pd.DataFrame) -> pd.DataFrame:
    preds = run.preds if isinstance(run, RunData) else run
    if preds is None or "item_id" not in preds.columns:
        preds = pd.DataFrame({"item_id": pd.Series(dtype=object)})
    if preds.empty:
        preds = preds.astype({"item_id": object})
    missing = {c: v for c, v in _PRED_DEFAULTS.items() if c not in preds.columns}
    return preds.assign(**missing) if missing else preds


def _name(run: RunData | pd.DataFrame) -> str:
    return run.name if isinstance(run, RunData) else "predictions"


@memoized
def frame(items: pd.DataFrame, run: RunData | pd.DataFrame, split: str | None = "test", rotation: int = 0,
          repeat: int = 0) -> pd.DataFrame:
    """One row per item of the split: its prediction at (rotation, repeat) joined with the item columns.

    Columns of common.join plus `insufficient` (meta.insufficient_option). Items without a prediction get
    status "missing", answer None, correct False. Two predictions for one key raise MetricUndefined.
    score() reads the same rows as a column table instead (_outcomes).
    """
    scope = _scope(items, split)
    chosen = select(_preds(run), rotation=rotation, repeat=repeat)
    df = join(scope, chosen)
    ids = pd.Index(df["item_id"].to_numpy(dtype=object), dtype=object)
    if ids.has_duplicates:
        dup = df["item_id"].duplicated()
        raise MetricUndefined(f"run {_name(run)!r} has several predictions for item {df['item_id'][dup].iloc[0]!r} "
                              f"at rotation {rotation}, repeat {repeat}")
    absent = scope.iloc[0:0] if len(ids) == len(scope) else scope[~scope["item_id"].isin(df["item_id"])]
    if len(absent):
        filler = pd.DataFrame({"item_id": absent["item_id"].to_numpy(), "rotation": rotation, "repeat": repeat,
                               "status": MISSING, "answer": None})
        df = pd.concat([df, join(absent, filler)], ignore_index=True) if len(df) else join(absent, filler)
    df["correct"] = df["correct"].astype(bool)
    if "meta" in df:
        df["insufficient"] = pd.Series([_meta(m, "insufficient_option") for m in df["meta"].to_numpy()],
                                       index=df.index, dtype=object)
    else:
        df["insufficient"] = None
    return df


# --------------------------------------------------------------------------- column tables
#
# The metrics read their frames column by column, a few hundred reads per run; a pandas column read costs
# microseconds of bookkeeping each time, more than the arithmetic it feeds. So they work on a Table: named
# numpy arrays of one length. Two kinds are used:
#
# - an item table (_outcomes): one row per item of the split, in the items' order, with the item columns
#   item_id, group_id, kind, variant, n_images, meta (those the items have), gold (the item's answer) and
#   insufficient (meta.insufficient_option), and the run's prediction at one (rotation, repeat): status
#   ("missing" without one), answer (None without one) and correct (bool). It holds the rows of frame()
#   (frame() keeps the predictions' order instead), and a metric given a frame() DataFrame reads it as a
#   Table of its columns (_table); no metric depends on the row order.
# - a group table (groups): one row per group of a kind, its ids in `index`.
#
# Every run's item table of a split shares the split's item columns (_item_columns, its `items`), so the work
# that depends on the items alone (which item is in which group, the strata values) is memoized on those
# and done once per split inside a stats.ScoringContext.


class Table:
    """Named numpy columns of `n` rows; `index` labels the rows (a group table's group ids, else row numbers)."""

    __slots__ = ("_items", "columns", "index", "n")

    def __init__(self, columns: dict[str, np.ndarray], n: int, index: np.ndarray | None = None,
                 items: Table | None = None) -> None:
        self.columns, self.n, self._items = columns, n, items
        self.index = np.arange(n) if index is None else index

    @property
    def items(self) -> Table:
        """The table holding this one's item columns, row for row: the split's _item_columns for an item table
        of _outcomes, else this table itself."""
        return self if self._items is None else self._items

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    def __contains__(self, name: object) -> bool:
        return name in self.columns

    def __len__(self) -> int:
        return self.n

    @property
    def empty(self) -> bool:
        return self.n == 0

    def rows(self, mask: np.ndarray) -> Table:
        """The rows where `mask` is True."""
        return Table({name: col[mask] for name, col in self.columns.items()}, int(mask.sum()), self.index[mask])


# what the metrics of one joined frame take: frame()'s DataFrame or the item table of _outcomes
Frame: TypeAlias = pd.DataFrame | Table


def _array(df: pd.DataFrame, name: str) -> np.ndarray:
    """A DataFrame column as the metrics read it: bool for correct, as stored for n_images, else object."""
    if name == "correct":
        return df[name].to_numpy(dtype=bool)
    return df[name].to_numpy() if name == "n_images" else df[name].to_numpy(dtype=object)


def _table(df: Frame) -> Table:
    return df if isinstance(df, Table) else _table_of(df)


@memoized
def _table_of(df: pd.DataFrame) -> Table:
    return Table({name: _array(df, name) for name in df.columns}, len(df))


@item_memoized
def _item_columns(items: pd.DataFrame, split: str | None) -> Table:
    """The item columns of an item table (see above) for the items of the split."""
    scope = _scope(items, split)
    cols = {name: _array(scope, name) for name in ("item_id", "group_id", "kind", "variant", "n_images", "meta")
            if name in scope}
    cols["gold"] = scope["answer"].to_numpy()
    if "meta" in cols:
        insufficient = (_meta(m, "insufficient_option") for m in cols["meta"])
        cols["insufficient"] = np.fromiter(insufficient, dtype=object, count=len(scope))
    else:
        cols["insufficient"] = np.full(len(scope), None, dtype=object)
    return Table(cols, len(scope))


@memoized
def _pred_columns(run: RunData | pd.DataFrame) -> dict[str, np.ndarray]:
    """The prediction columns the metrics read: item_id, rotation, repeat, status, answer."""
    preds = _preds(run)
    return {"item_id": preds["item_id"].to_numpy(dtype=object), "rotation": preds["rotation"].to_numpy(),
            "repeat": preds["repeat"].to_numpy(), "status": preds["status"].to_numpy(dtype=object),
            "answer": preds["answer"].to_numpy(dtype=object)}


@memoized
def _pred_rows(items: pd.DataFrame, run: RunData | pd.DataFrame, split: str | None) -> np.ndarray:
    """Each prediction's item row in the split (-1 for an item outside it)."""
    return positions(_scope(items, split), _pred_columns(run)["item_id"])


@memoized
def _outcomes(items: pd.DataFrame, run: RunData | pd.DataFrame, split: str | None = "test", rotation: int = 0,
              repeat: int = 0) -> Table:
    """frame() as an item table (see above): the same rows, in the items' order, and the same errors."""
    base = _item_columns(items, split)
    preds = _pred_columns(run)
    chosen = np.flatnonzero((preds["rotation"] == rotation) & (preds["repeat"] == repeat))  # as common.select
    at = _pred_rows(items, run, split)[chosen]  # the item row of each chosen prediction
    inside = at >= 0  # predictions of items outside the split are left out, as by common.join
    at, chosen = at[inside], chosen[inside]
    n = len(base)
    if len(at) and np.bincount(at, minlength=n).max() > 1:
        first = int(np.argmax(pd.Index(at).duplicated()))  # the first repeated item, in the predictions' order
        raise MetricUndefined(f"run {_name(run)!r} has several predictions for item "
                              f"{base['item_id'][at[first]]!r} at rotation {rotation}, repeat {repeat}")
    status = np.full(n, MISSING, dtype=object)
    status[at] = preds["status"][chosen]
    answer = np.full(n, None, dtype=object)
    answer[at] = preds["answer"][chosen]
    correct = np.asarray((status == "ok") & (answer == base["gold"]) & pd.notna(answer), dtype=bool)  # as join
    return Table({**base.columns, "status": status, "answer": answer, "correct": correct}, n, items=base)


def _valid_answers(t: Table) -> np.ndarray:
    """Each row's answer where its status is ok, else None."""
    answer = t["answer"].copy()
    answer[t["status"] != "ok"] = None
    return answer


def coverage(df: Frame) -> Rate:
    """Items with a prediction (any status) / items of the split."""
    t = _table(df)
    return Rate.of(int((t["status"] != MISSING).sum()), len(t), "items")


def _spread(values: np.ndarray | bool, where: np.ndarray, n: int, empty: bool | None) -> np.ndarray:
    """An n-row column holding values[i] at row where[i] and `empty` elsewhere (bool when `empty` is False)."""
    out = np.full(n, empty, dtype=bool if empty is False else object)
    out[where] = values
    return out


@memoized
def _group_layout(t: Table, kind: str) -> tuple[Table, np.ndarray, np.ndarray, np.ndarray]:
    """The part of groups() that depends on the item columns `t` alone: the group table's columns has_v, gold_v,
    ins_v, n_images_v, meta_v and id_v; the rows of `t` of that kind; and of each, its group's row and its
    variant's position in VARIANTS[kind]. A variant outside the family or two items of one variant in a group
    raise MetricUndefined."""
    variants = VARIANTS[kind]
    rows = np.flatnonzero(t["kind"] == kind)
    names = t["variant"][rows]
    code = {v: j for j, v in enumerate(variants)}
    variant = np.array([code.get(v, -1) for v in names], dtype=np.int64)
    if (variant < 0).any():
        i = rows[variant < 0][0]
        raise MetricUndefined(f"{kind} item {t['item_id'][i]!r} has variant {t['variant'][i]!r}; "
                              f"expected one of {', '.join(variants)}")
    index, at = np.unique(t["group_id"][rows], return_inverse=True)  # sorted group ids; each row's group
    cell = at * len(variants) + variant
    if len(np.unique(cell)) < len(cell):
        i = rows[np.argmax(pd.Index(cell).duplicated())]
        raise MetricUndefined(f"group {t['group_id'][i]!r} has more than one {t['variant'][i]!r} item")
    n = len(index)
    cols: dict[str, np.ndarray] = {}
    for j, v in enumerate(variants):
        mine = variant == j
        cols[f"has_{v}"] = _spread(True, at[mine], n, False)
        for name, src in (("gold", "gold"), ("ins", "insufficient"), ("n_images", "n_images"), ("meta", "meta"),
                          ("id", "item_id")):
            cols[f"{name}_{v}"] = (_spread(t[src][rows[mine]], at[mine], n, None) if src in t
                                   else np.full(n, None, dtype=object))
    return Table(cols, n, index), rows, at, variant


@memoized
def groups(df: Frame, kind: str) -> Table:
    """One row per group of `kind` (index: the group ids, sorted) with, per variant v, the columns

    has_v (the group holds a v item), c_v (correct), ok_v (status ok), a_v (answer, None unless ok),
    gold_v, ins_v (insufficient-option letter), n_images_v, meta_v, id_v (item id); None where the group
    lacks a v item (False for the flags).
    """
    t = _table(df)
    layout, rows, at, variant = _group_layout(t.items, kind)
    ok, correct, answer = t["status"][rows] == "ok", t["correct"][rows], _valid_answers(t)[rows]
    n = len(layout)
    cols = dict(layout.columns)
    for j, v in enumerate(VARIANTS[kind]):
        mine = variant == j
        cols[f"c_{v}"] = _spread(correct[mine], at[mine], n, False)
        cols[f"ok_{v}"] = _spread(ok[mine], at[mine], n, False)
        cols[f"a_{v}"] = _spread(answer[mine], at[mine], n, None)
    return Table(cols, n, layout.index)


def _all(g: Table, prefix: str, variants: Sequence[str]) -> np.ndarray:
    """Per group: the flag column `prefix`_v is True for every v of `variants`."""
    return np.logical_and.reduce([g[f"{prefix}_{v}"] for v in variants])


def _complete(g: Table, variants: Sequence[str]) -> np.ndarray:
    """Per group: it holds an item of every variant of `variants`."""
    return _all(g, "has", variants)


def _joint_flags(g: Table, variants: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per group: (holds every variant and all are correct, holds every variant)."""
    has = _complete(g, variants)
    return has & _all(g, "c", variants), has


def _joint_counts(g: Table, variants: Sequence[str]) -> tuple[int, int]:
    """(groups with every variant correct, groups holding every variant)."""
    k, n = _joint_flags(g, variants)
    return int(k.sum()), int(n.sum())


def _diff(a: Rate, b: Rate, reason: str) -> Rate:
    """a - b as a value-only Rate (a difference has no k / n)."""
    if a.value is None or b.value is None:
        return Rate.undefined(reason)
    return Rate(a.value - b.value)


# --------------------------------------------------------------------------- a run's settings (pairing runs)


def _settings(run: RunData, ignore: Iterable[str]) -> dict[str, Any]:
    skip = set(ignore) | BOOKKEEPING_KEYS
    return {k: v for k, v in (run.config or {}).items() if k not in skip}


def _input_mode(run: RunData) -> str:
    mode = (run.config or {}).get("input_mode")
    if mode:
        return str(mode)
    preds = _preds(run)
    if "input_mode" in preds and preds["input_mode"].notna().any():
        return str(preds["input_mode"].dropna().mode().iloc[0])
    return "all"


def _identity(r: RunData) -> tuple[Any, ...]:
    """(model, strategy, shots): what pairs two runs of one configuration across input modes or executions."""
    cfg = r.config or {}
    return cfg.get("model"), cfg.get("strategy") or "direct", int(cfg.get("shots") or 0)
