"""FrameEvidence metrics (paper 000: §3, §5, §6, §7, App. A, App. D).

Every function takes the items DataFrame (all splits; `split` picks the one scored, "test" by default) and
one or more `RunData`, or one run's joined frame (frame(); score() passes the same rows as a column Table,
see "column tables" below); see docs/METRICS.md (FrameEvidence) for each definition, its paper section, its
edge cases and its JSON key.

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

import dataclasses
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeAlias

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from core import stats
from core.comparison import turnover_counts
from core.errors import MetricUndefined
from core.families.frameevidence.vocab import CLASSES, FQ1, FQ1_VARIANTS, FQ2, FQ2_VARIANTS, VARIANTS
from core.metrics.common import (
    join,
    joint_random_reference,
    macro_prf_arrays,
    memoized,
    pair_flags,
    pair_rates,
    positions,
    rotation_rates,
    select,
    uniform_random_reference,
)
from core.schema import Rate, RunData

FRAME_PAIRS = (("cam", "obj"), ("cam", "scene"), ("obj", "scene"))
MISSING = "missing"  # status of an item the run never answered (counts as wrong)
OUTCOMES = ("correct", "insufficient", "wrong", "invalid")
# Strata of 000 §5 / App. D: key -> item column (n_images) or meta field.
STRATA = ("n_images", "relation", "scene", "source", "ordinal_change")
UNKNOWN = "unknown"
COMPARED = ("accuracy", "macro_f1", "fq1_gem", "nts", "dis")
SEED_METRICS = ("macro_precision", "macro_recall", "macro_f1", "accuracy", "fq1_gem", "nts", "dis")
ROTATION_SEED_METRICS = ("vanilla", "circular", "consistency")  # Table 6b's three-seed columns
# Table 13's two clusterings by default: the matched groups (the paper's "96 triplets") and the image / scene
# union components of App. D.6
DEFAULT_CLUSTERINGS = (stats.Clustering("group"), stats.Clustering("union"))
# Table 13's quantities, in the paper's order (the R1..R3 contrasts follow for each rotation the run has)
TABLE13_KEYS = ("repeat_accuracy", "primary_repeat_disagreement", "r0_repeat_disagreement",
                "repeat_minus_primary_accuracy", "repeat_minus_r0_accuracy", "both_correct", "consistency")
# Run-config keys that record bookkeeping rather than a setting; ignored when pairing runs.
BOOKKEEPING_KEYS = frozenset({"created", "created_at", "finished_at", "status", "note", "notes", "name"})

_PRED_DEFAULTS = {"rotation": 0, "repeat": 0, "status": MISSING, "answer": None}


# --------------------------------------------------------------------------- frames


def _meta(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, Mapping) else None


@memoized
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


@memoized
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


# --------------------------------------------------------------------------- joint metrics (§3, Eq. 1)


def fq1_gem(df: Frame) -> Rate:
    """FQ1 Group Exact Match: FQ1 groups with cam, obj and scene all correct / FQ1 groups (Eq. 1)."""
    # a complete group holds exactly one cam, obj and scene item (groups() refuses duplicates and strays), so
    # the groups whose FQ1 items are all correct are those with every variant correct
    return Rate.of(*_joint_counts(groups(df, FQ1), FQ1_VARIANTS), "FQ1 groups")


def nts(df: Frame) -> Rate:
    """Necessity Transition Success: FQ2 groups with MSS and deletion both correct / FQ2 groups (§3)."""
    return Rate.of(*_joint_counts(groups(df, FQ2), ("mss", "del")), "FQ2 groups")


def dis(df: Frame) -> Rate:
    """Distractor Invariance Success: FQ2 groups with MSS and addition both correct / FQ2 groups (§3)."""
    return Rate.of(*_joint_counts(groups(df, FQ2), ("mss", "add")), "FQ2 groups")


def variant_accuracy(df: Frame) -> dict[str, Rate]:
    """Accuracy of each variant (cam, obj, scene, mss, del, add) over the items of the split."""
    t = _table(df)
    variant, correct = t["variant"], t["correct"]
    out = {}
    for v in (*FQ1_VARIANTS, *FQ2_VARIANTS):
        m = variant == v
        out[v] = Rate.of(int((m & correct).sum()), int(m.sum()), f"{v} items")
    return out


def kind_accuracy(df: Frame) -> dict[str, Rate]:
    """Accuracy of FQ1 and of FQ2 items (000 §5 / Table 10 use FQ2-only accuracy over 144 items)."""
    t = _table(df)
    kind, correct = t["kind"], t["correct"]
    out = {}
    for k in (FQ1, FQ2):
        m = kind == k
        out[k] = Rate.of(int((m & correct).sum()), int(m.sum()), f"{k} items")
    return out


def independence(df: Frame) -> dict[str, Rate]:
    """Independence reference (§6.2): the product of the variant accuracies of each joint metric.

    Variant accuracies are taken over the groups the joint metric counts (complete groups), so the
    reference and the joint rate share their groups: fq1_gem -> acc(cam) acc(obj) acc(scene),
    nts -> acc(mss) acc(del), dis -> acc(mss) acc(add).
    """
    out: dict[str, Rate] = {}
    for key, kind, variants in (("fq1_gem", FQ1, FQ1_VARIANTS), ("nts", FQ2, ("mss", "del")),
                                ("dis", FQ2, ("mss", "add"))):
        g = groups(df, kind)
        done = _complete(g, variants)
        if not done.any():
            out[key] = Rate.undefined(f"no {kind} groups with {' and '.join(variants)} items")
            continue
        out[key] = Rate(float(np.prod([g[f"c_{v}"][done].mean() for v in variants])))
    return out


@memoized
def _uniform_random(items_scope: pd.DataFrame) -> dict[str, Rate]:
    return _uniform_random_of(items_scope)


def uniform_random(items_scope: pd.DataFrame) -> dict[str, Rate]:
    """See _uniform_random_of (shared between the runs of one split inside a stats.ScoringContext)."""
    return {k: dataclasses.replace(v) for k, v in _uniform_random(items_scope).items()}


def _uniform_random_of(items_scope: pd.DataFrame) -> dict[str, Rate]:
    """Exact finite-test expectations of independent uniform A-D guessing (000 App. A, Table 4 row).

    accuracy, macro recall = 1/4; macro precision / F1 average the exact expected classwise ratios under
    the split's gold supports (common.uniform_random_reference); each joint metric is (1/4)^m for its m
    answers per group: fq1_gem (1/4)^3, nts (1/4)^2 (the insufficient option is one of the four letters),
    dis (1/4)^2; undefined when the split has no group of that family.
    """
    out = dict(uniform_random_reference(items_scope, CLASSES))
    counts = items_scope.groupby("kind")["group_id"].nunique() if len(items_scope) else pd.Series(dtype=int)
    for key, kind, m in (("fq1_gem", FQ1, 3), ("nts", FQ2, 2), ("dis", FQ2, 2)):
        if counts.get(kind, 0):
            out[key] = joint_random_reference(m, len(CLASSES))
        else:
            out[key] = Rate.undefined(f"no {kind} groups")
    return out


_AI_KEYS = ("accuracy", "macro_precision", "macro_recall", "macro_f1", "fq1_gem", "nts", "dis")


@memoized
def _always_insufficient(items_scope: pd.DataFrame) -> dict[str, Any]:
    return _always_insufficient_of(items_scope)


def always_insufficient(items_scope: pd.DataFrame) -> dict[str, Any]:
    """See _always_insufficient_of (shared between the runs of one split inside a stats.ScoringContext)."""
    got = _always_insufficient(items_scope)
    out: dict[str, Any] = {k: dataclasses.replace(got[k]) for k in _AI_KEYS}
    out["kind_accuracy"] = {"FQ2": dataclasses.replace(got["kind_accuracy"]["FQ2"])}
    return out


def _always_insufficient_of(items_scope: pd.DataFrame) -> dict[str, Any]:
    """The always-insufficient control of 000 §5 ("33.33% from always selecting insufficient information"),
    exact from the gold answers: every FQ2 item answered with its meta.insufficient_option.

    kind_accuracy.FQ2 = FQ2 items whose gold is that option / FQ2 items (the deletions: 1/3 when every group
    is complete); nts = groups whose MSS and deletion golds are both the option / FQ2 groups holding both,
    dis likewise with the addition (0 on a valid release: the MSS gold is a spatial answer). The rule has no
    answer for FQ1 items (they have no insufficient option), so accuracy, macro P / R / F1 and fq1_gem carry
    a reason when the split has FQ1 items (accuracy = the FQ2 value otherwise).
    """
    t = _item_columns(items_scope, None)  # the scope is one split's items already

    def undefined(reason: str) -> dict[str, Any]:
        return {**{k: Rate.undefined(reason) for k in _AI_KEYS}, "kind_accuracy": {"FQ2": Rate.undefined(reason)}}

    fq2 = t["kind"] == FQ2 if len(t) else np.zeros(0, dtype=bool)
    if not fq2.any():
        return undefined("no FQ2 items")
    ins = t["insufficient"]
    lacking = fq2 & pd.isna(ins)
    if lacking.any():
        return undefined(f"FQ2 item {t['item_id'][lacking][0]!r} has no meta.insufficient_option")
    hit = fq2 & (t["gold"] == ins)
    fq2_acc = Rate.of(int(hit.sum()), int(fq2.sum()), "FQ2 items")
    out: dict[str, Any] = {"kind_accuracy": {"FQ2": fq2_acc}}
    has_fq1 = bool((t["kind"] == FQ1).any())
    no_fq1 = "the rule answers FQ2 items only (FQ1 items have no insufficient-information option); see FQ2 Acc"
    out["accuracy"] = Rate.undefined(no_fq1) if has_fq1 else dataclasses.replace(fq2_acc)
    for key in ("macro_precision", "macro_recall", "macro_f1"):
        out[key] = Rate.undefined(no_fq1 if has_fq1 else "a constant-option rule: see FQ2 Acc")
    out["fq1_gem"] = Rate.undefined(no_fq1 if has_fq1 else "no FQ1 groups")
    g = _group_layout(t, FQ2)[0]  # per FQ2 group, each variant's gold and insufficient option
    for key, v in (("nts", "del"), ("dis", "add")):
        done = _complete(g, ("mss", v))
        if not done.any():
            out[key] = Rate.undefined(f"no FQ2 groups with mss and {v} items")
            continue
        both = done & (g["gold_mss"] == g["ins_mss"]) & (g[f"gold_{v}"] == g[f"ins_{v}"])
        out[key] = Rate.of(int(both.sum()), int(done.sum()), "FQ2 groups")
    return out


def core_metrics(df: Frame) -> dict[str, Rate]:
    """accuracy, macro P / R / F1 over A-D, fq1_gem, nts, dis of one joined frame."""
    return {key: dataclasses.replace(rate) for key, rate in _core_metrics(df).items()}


@memoized
def _core_metrics(df: Frame) -> dict[str, Rate]:
    t = _table(df)
    # accuracy and macro P / R / F1 as common.accuracy and common.macro_prf compute them on a DataFrame
    accuracy = Rate.of(int(t["correct"].sum()), len(t), "predictions") if len(t) else Rate.of(0, 0, "items")
    return {"accuracy": accuracy, **macro_prf_arrays(t["gold"], _valid_answers(t), CLASSES),
            "fq1_gem": fq1_gem(t), "nts": nts(t), "dis": dis(t)}


# --------------------------------------------------------------------------- insufficiency (Table 8, §7)


def insufficiency(df: Frame) -> dict[str, Any]:
    """Insufficiency responses per FQ2 condition and insufficiency precision / recall (000 Table 8, §7).

    counts.v = valid answers equal to meta.insufficient_option among the v items (v = mss, del, add), out
    of all v items (invalid ones retained in the denominator, as Table 8); invalid.v counts the not-ok
    responses. recall = deletion items answered insufficient / deletion items; precision = deletion items
    answered insufficient / all insufficiency responses (MSS + deletion + addition).
    """
    t = _table(df)
    fq2 = t.rows(t["kind"] == FQ2)
    if fq2.empty:
        reason = "no FQ2 items"
        return {"counts": Rate.undefined(reason), "invalid": Rate.undefined(reason),
                "recall": Rate.undefined(reason), "precision": Rate.undefined(reason)}
    lacking = pd.isna(fq2["insufficient"])
    if lacking.any():
        raise MetricUndefined(f"FQ2 item {fq2['item_id'][lacking][0]!r} has no meta.insufficient_option")
    ok = fq2["status"] == "ok"
    chose = ok & (fq2["answer"] == fq2["insufficient"])  # insufficient is never None here
    by = {v: fq2["variant"] == v for v in FQ2_VARIANTS}
    counts = {v: Rate.of(int((chose & by[v]).sum()), int(by[v].sum()), f"{v} items") for v in FQ2_VARIANTS}
    invalid = {v: int((~ok & by[v]).sum()) for v in FQ2_VARIANTS}
    hits = int((chose & by["del"]).sum())
    return {"counts": counts, "invalid": invalid,
            "recall": Rate.of(hits, int(by["del"].sum()), "deletion items"),
            "precision": Rate.of(hits, int(chose.sum()), "insufficiency responses")}


# --------------------------------------------------------------------------- strata (§5, App. D)


def _value_key(value: Any) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return UNKNOWN
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _meta_values(metas: Iterable[Any], key: str) -> np.ndarray:
    """_value_key(meta[key]) of each meta dict."""
    return np.array([_value_key(_meta(m, key)) for m in metas], dtype=object)


def _group_stratum(g: Table, kind: str, key: str) -> np.ndarray:
    """A group's stratum: the anchor item's (cam / mss) value; for meta fields the first variant that has it."""
    variants = VARIANTS[kind]
    if key == "n_images":
        return np.array([_value_key(v) for v in g[f"n_images_{variants[0]}"]], dtype=object)
    out = np.full(len(g), UNKNOWN, dtype=object)
    for v in reversed(variants):  # the first variant with a value wins
        got = _meta_values(g[f"meta_{v}"], key)
        known = got != UNKNOWN
        out[known] = got[known]
    return out


def _stratum_sort_key(s: str) -> tuple[bool, int, str]:
    return (s == UNKNOWN, len(s) if s.isdigit() else 0, s)


def strata(df: Frame, keys: Iterable[str] = STRATA) -> dict[str, Any]:
    """Accuracy and joint metrics per stratum value (000 §5 Table 3, App. D Tables 15-18).

    Item accuracy uses each item's own value (n_images: the images it shows; a meta field missing on the
    item falls back to its group's value). Joint metrics use the group's value: n_images of the cam / MSS
    item (the evidence-set size of Table 16), a meta field from the first variant that has it (cam, obj,
    scene / mss, del, add). Items or groups without the field are under "unknown"; a field that no item
    has gives a reason.
    """
    t = _table(df)
    g1, g2 = groups(t, FQ1), groups(t, FQ2)
    joint = {"fq1_gem": (_joint_flags(g1, FQ1_VARIANTS), FQ1, "FQ1 groups"),
             "nts": (_joint_flags(g2, ("mss", "del")), FQ2, "FQ2 groups"),
             "dis": (_joint_flags(g2, ("mss", "add")), FQ2, "FQ2 groups")}
    out: dict[str, Any] = {}
    for key, layout in _strata_layout(t.items, tuple(keys)).items():
        if isinstance(layout, str):
            out[key] = Rate.undefined(layout)
            continue
        values, item_code, group_code = layout
        m = len(values)
        n_items = np.bincount(item_code, minlength=m)
        k_items = np.bincount(item_code, weights=t["correct"], minlength=m)
        counts = {metric: (np.bincount(group_code[kind], weights=k_flag, minlength=m),
                           np.bincount(group_code[kind], weights=n_flag, minlength=m))
                  for metric, ((k_flag, n_flag), kind, _) in joint.items()}
        table: dict[str, dict[str, Rate]] = {}
        for i, value in enumerate(values):
            table[value] = {"accuracy": Rate.of(int(k_items[i]), int(n_items[i]), "items")}
            for metric, (_, _, what) in joint.items():
                table[value][metric] = Rate.of(int(counts[metric][0][i]), int(counts[metric][1][i]), what)
        out[key] = table
    return out


# per stratum key: the sorted values, and the position in them of each item's and of each FQ1 / FQ2 group's value
_StrataCodes: TypeAlias = tuple[list[str], np.ndarray, dict[str, np.ndarray]]


@memoized
def _strata_layout(t: Table, keys: tuple[str, ...]) -> dict[str, _StrataCodes | str]:
    """The part of strata() that depends on the item columns `t` alone: per key, its _StrataCodes, or why the key
    has no strata."""
    g1, g2 = _group_layout(t, FQ1)[0], _group_layout(t, FQ2)[0]
    out: dict[str, _StrataCodes | str] = {}
    for key in keys:
        if key == "n_images":
            item_values = (np.array([_value_key(v) for v in t["n_images"]], dtype=object)
                           if "n_images" in t else np.full(len(t), UNKNOWN, dtype=object))
        else:
            item_values = _meta_values(t["meta"], key)
        group_values = {kind: _group_stratum(g, kind, key) if len(g) else np.empty(0, dtype=object)
                        for kind, g in ((FQ1, g1), (FQ2, g2))}
        if key != "n_images":
            by_group: dict[Any, str] = {}  # the FQ1 value first, as the group tables are concatenated
            for kind, g in ((FQ1, g1), (FQ2, g2)):
                for gid, value in zip(g.index, group_values[kind], strict=True):
                    by_group.setdefault(gid, value)
            unknown = item_values == UNKNOWN
            if by_group and unknown.any():
                item_values[unknown] = [by_group.get(gid, UNKNOWN) for gid in t["group_id"][unknown]]
        if bool((item_values == UNKNOWN).all()):
            out[key] = f"no item has {key if key == 'n_images' else 'meta.' + key}"
            continue
        values = sorted(set(item_values) | set(group_values[FQ1]) | set(group_values[FQ2]), key=_stratum_sort_key)
        code = {v: i for i, v in enumerate(values)}

        def codes(strata_values: np.ndarray, code: dict[str, int] = code) -> np.ndarray:
            return np.fromiter((code[v] for v in strata_values), dtype=np.int64, count=len(strata_values))

        out[key] = values, codes(item_values), {kind: codes(group_values[kind]) for kind in (FQ1, FQ2)}
    return out


# --------------------------------------------------------------------------- transitions (Figure 5, §6.3)


def _outcome(g: Table, v: str) -> np.ndarray:
    """Codes into OUTCOMES: correct / insufficient (wrong, chose the insufficient option) / wrong (another
    letter) / invalid (invalid, api_error or missing)."""
    ok = g[f"ok_{v}"]
    chose_ins = ok & (g[f"a_{v}"] == g[f"ins_{v}"])
    out = np.full(len(g), OUTCOMES.index("wrong"), dtype=np.int64)
    out[chose_ins] = OUTCOMES.index("insufficient")
    out[g[f"c_{v}"]] = OUTCOMES.index("correct")
    out[~ok] = OUTCOMES.index("invalid")
    return out


def transitions(df: Frame) -> dict[str, Any] | Rate:
    """Initial vs conditional success and MSS -> deletion / addition response transitions (Figure 5).

    initial = MSS correct / FQ2 groups (the horizontal rate of Figure 5, over all groups);
    conditional.del = NTS successes / MSS-correct groups, conditional.add = DIS successes / MSS-correct
    groups (the vertical rates, over each run's own MSS-correct subset), so NTS = initial x conditional.del
    and DIS = initial x conditional.add. answer_kept.v = groups whose v answer is valid and equals the valid
    MSS answer / groups. table.v[mss outcome][v outcome] counts groups; outcomes are correct, insufficient
    (wrong by choosing the insufficient option), wrong (another letter), invalid (invalid, api_error or
    missing).
    """
    g = groups(df, FQ2)
    if g.empty:
        return Rate.undefined("no FQ2 groups")
    out: dict[str, Any] = {"conditional": {}, "answer_kept": {}, "table": {}}
    has_mss, c_mss, ok_mss, a_mss = g["has_mss"], g["c_mss"], g["ok_mss"], g["a_mss"]
    out["initial"] = Rate.of(int(c_mss[has_mss].sum()), int(has_mss.sum()), "FQ2 groups")
    mss_outcome = _outcome(g, "mss")
    n_out = len(OUTCOMES)
    for v in ("del", "add"):
        done = has_mss & g[f"has_{v}"]
        base = c_mss[done]
        c_v = g[f"c_{v}"][done]
        out["conditional"][v] = Rate.of(int((base & c_v).sum()), int(base.sum()), "MSS-correct groups")
        kept = ok_mss[done] & g[f"ok_{v}"][done] & (a_mss[done] == g[f"a_{v}"][done])
        out["answer_kept"][v] = Rate.of(int(kept.sum()), int(done.sum()), "FQ2 groups")
        cells = np.bincount(mss_outcome[done] * n_out + _outcome(g, v)[done], minlength=n_out * n_out)
        out["table"][v] = {a: {b: int(cells[i * n_out + j]) for j, b in enumerate(OUTCOMES)}
                           for i, a in enumerate(OUTCOMES)}
    return out


# --------------------------------------------------------------------------- pairwise frames (§7, Figure 4)


def pairwise_frames(df: Frame) -> dict[str, Any] | Rate:
    """Frame pairs within FQ1 triplets (000 §7: "each FQ1 triplet yields three pairs with different gold
    directions"; "repeats a direction on 115/144 pairs"; "changes 94 pairs but answers both correctly on
    only 27").

    Over the pairs (cam-obj, cam-scene, obj-scene) of complete FQ1 groups whose gold letters differ:
    repeated = both valid with the same letter (option order is fixed within a group, so the same letter is
    the same direction), changed = both valid with different letters, invalid = at least one not valid,
    both_correct = both answers correct. same_gold_pairs counts the pairs left out because their golds
    agree; triplets_correct is FQ1-GEM's count.
    """
    g = groups(df, FQ1)
    g = g.rows(_complete(g, FQ1_VARIANTS))
    if g.empty:
        return Rate.undefined("no complete FQ1 groups")
    per_pair: dict[str, dict[str, np.ndarray]] = {}
    for u, v in FRAME_PAIRS:
        both_ok = g[f"ok_{u}"] & g[f"ok_{v}"]
        same = both_ok & (g[f"a_{u}"] == g[f"a_{v}"])
        per_pair[f"{u}-{v}"] = {
            "differ": g[f"gold_{u}"] != g[f"gold_{v}"], "repeated": same, "changed": both_ok & ~same,
            "invalid": ~both_ok, "both_correct": g[f"c_{u}"] & g[f"c_{v}"]}

    def rates(parts: list[dict[str, np.ndarray]]) -> dict[str, Rate]:
        n = sum(int(p["differ"].sum()) for p in parts)
        return {c: Rate.of(sum(int((p[c] & p["differ"]).sum()) for p in parts), n,
                           "pairs with different gold directions")
                for c in ("repeated", "changed", "invalid", "both_correct")}

    pairs = list(per_pair.values())
    k_gem = int(_all(g, "c", FQ1_VARIANTS).sum())
    return {**rates(pairs), "pairs": sum(int(p["differ"].sum()) for p in pairs),
            "same_gold_pairs": sum(int((~p["differ"]).sum()) for p in pairs),
            "triplets_correct": Rate.of(k_gem, len(g), "FQ1 groups"),
            "per_pair": {name: rates([p]) for name, p in per_pair.items()}}


# --------------------------------------------------------------------------- rotations and repeats (§6.4, Table 7)


def _present(values: np.ndarray) -> np.ndarray:
    """The distinct values of a prediction column, NaN / None left out (Series.dropna().unique())."""
    return pd.unique(values[pd.notna(values)])


def _rotations(run: RunData) -> list[int]:
    found = sorted(int(r) for r in _present(_pred_columns(run)["rotation"]))
    configured = (run.config or {}).get("rotations")
    if isinstance(configured, int) and not isinstance(configured, bool) and configured > 1:
        return sorted(set(range(configured)) | set(found))
    if isinstance(configured, (list, tuple)) and len(configured) > 1:
        return sorted({int(r) for r in configured} | set(found))
    return found


def rotations(items: pd.DataFrame, run: RunData, split: str | None = "test") -> dict[str, Any]:
    """Vanilla, Circular, Consistency, mean over rotations and Drop (000 App. A Eq. 2, Tables 6b / 12).

    Over every item of the split at repeat 0 (an item with no prediction at some rotation gets no credit,
    common.rotation_metrics); rotations are those the run config names (int n -> 0..n-1, or a list) and
    those found in its predictions. Undefined without a rotation other than 0.
    """
    rots = _rotations(run)
    if len(rots) < 2 or 0 not in rots:
        reason = "run has no option rotations besides 0"
        return {key: Rate.undefined(reason) for key in ("vanilla", "circular", "consistency", "mean_rotation",
                                                        "drop")} | {"per_rotation": {}}
    # items x rotations: each item's valid answer and correctness under each rotation (an item without a
    # prediction at some rotation: None and False there)
    tables = [_outcomes(items, run, split, rotation=r) for r in rots]
    answers = np.column_stack([_valid_answers(t) for t in tables])
    correct = np.column_stack([t["correct"] for t in tables])
    return rotation_rates(answers, correct, rots)


def repeat_table(items: pd.DataFrame, run: RunData, split: str | None = "test") -> dict[str, Any] | Rate:
    """Same-order repeat table (000 Table 7 and the paired rows of Table 13).

    Pairs the rotation-0 / repeat-0 answers with (a) each same-order repeat at rotation 0 ("repeat1",
    "repeat2", ...) and (b) each rotation r at repeat 0 ("R1".."R3"): at_least_one_correct, both_correct,
    consistency (both valid, same answer meaning), consistently_wrong, changed (common.pair_metrics), over
    every item of the split. differences.Rr = first repeat pair minus the R0-Rr pair for both_correct and
    consistency (Table 13). Undefined when the run has no same-order repeat.
    """
    preds = _pred_columns(run)
    reps = sorted(int(r) for r in _present(preds["repeat"][preds["rotation"] == 0]) if r != 0)
    if not reps:
        return Rate.undefined("run has no same-order repeat (rotation 0, repeat > 0)")

    def pair(rotation: int, repeat: int) -> dict[str, Rate]:
        """common.pair_metrics of the rotation-0 / repeat-0 answers with those at (rotation, repeat); both item
        tables hold every item of the split in the same order."""
        a, b = _outcomes(items, run, split), _outcomes(items, run, split, rotation=rotation, repeat=repeat)
        return pair_rates(_valid_answers(a), a["correct"], _valid_answers(b), b["correct"])

    out: dict[str, Any] = {f"repeat{r}": pair(0, r) for r in reps}
    rots = [r for r in sorted(int(x) for x in _present(preds["rotation"][preds["repeat"] == 0])) if r]
    for r in rots:
        out[f"R{r}"] = pair(r, 0)
    first = out[f"repeat{reps[0]}"]
    out["differences"] = {f"R{r}": {m: _diff(first[m], out[f"R{r}"][m], "a pair rate is undefined")
                                    for m in ("both_correct", "consistency")} for r in rots}
    return out


# --------------------------------------------------------------------------- Table 13: paired intervals


def _is_ordinary(run: RunData) -> bool:
    """The run's predictions are all at rotation 0, repeat 0 (an ordinary run: no rotation, no repeat)."""
    preds = _pred_columns(run)
    return bool((preds["rotation"] == 0).all() and (preds["repeat"] == 0).all())


def primary_run(run: RunData, others: Sequence[RunData]) -> RunData | str:
    """The ordinary run that Table 13 pairs with the repeat ("Paired with the primary run"), or why there is none.

    `config.primary_run` names it; otherwise it is the one run in `others` of the same benchmark, input mode,
    model, strategy and shots whose predictions are all at rotation 0, repeat 0.
    """
    named = (run.config or {}).get("primary_run")
    if named:
        found = [o for o in others if o.name == named and o.benchmark == run.benchmark]
        return found[0] if found else f"config.primary_run {named!r} is not a run of this benchmark"
    mode = _input_mode(run)
    found = [o for o in others if o.name != run.name and o.benchmark == run.benchmark and _input_mode(o) == mode
             and _identity(o) == _identity(run) and _is_ordinary(o)]
    if len(found) > 1:
        return (f"several ordinary runs could be the primary run ({', '.join(sorted(o.name for o in found))}); "
                "name one in config.primary_run")
    if not found:
        model, strategy, shots = _identity(run)
        return (f"no ordinary {mode!r} run (rotation 0, repeat 0 only) with model {model!r}, strategy "
                f"{strategy!r}, {shots} shots to pair as the primary run")
    return found[0]


def _cluster_codes(scope: pd.DataFrame, clustering: stats.Clustering) -> tuple[np.ndarray, int]:
    """Each item's cluster as a code 0..clusters-1 (sorted cluster names) and the cluster count (the same for
    every run of a split: memoized on the clustering's name and fields)."""
    return _cluster_codes_of(scope, clustering.name, tuple(clustering.fields))


@memoized
def _cluster_codes_of(scope: pd.DataFrame, name: str, fields: tuple[str, ...]) -> tuple[np.ndarray, int]:
    labels = stats.cluster_labels(scope, stats.Clustering(name, fields))
    names, code = np.unique(labels.astype(str), return_inverse=True)
    return code, len(names)


def repeat_intervals(items: pd.DataFrame, run: RunData, others: Sequence[RunData] = (), split: str | None = "test",
                     clusterings: Sequence[stats.Clustering] = DEFAULT_CLUSTERINGS, draws: int = stats.DEFAULT_DRAWS,
                     seed: int | None = stats.DEFAULT_SEED, level: float = 0.95) -> dict[str, Any] | Rate:
    """000 Table 13: the same-order repeat quantities with a 95% percentile cluster-bootstrap interval under
    each clustering (side by side; the paper's are the 96 groups and the 13 union components).

    With R0 = rotation 0 / repeat 0, the repeat = rotation 0 / first repeat > 0 and the primary run
    (primary_run), over every item of the split: repeat_accuracy; primary_repeat_disagreement and
    r0_repeat_disagreement (answers not both valid and equal: common.pair_flags "changed");
    repeat_minus_primary_accuracy, repeat_minus_r0_accuracy; both_correct and consistency of the R0-repeat pair;
    both_correct_minus_Rj and consistency_minus_Rj = the R0-repeat pair minus the R0-Rj pair, for each rotation
    j > 0 the run has. Every quantity is a sum of per-item values (0 / 1, or -1 / 0 / 1 for a difference) over
    the split's items, so one draw resamples whole clusters and takes the item-weighted ratio
    (stats.cluster_bootstrap_many, the same draws for every quantity). Per quantity: `estimate` and, per
    clustering name, the same Rate with its interval in `ci` (or a reason: a union field that no item has).
    `primary` is the primary run's name, or a reason (its rows then carry it too); the whole section is a
    reason without a repeat.
    """
    preds = _pred_columns(run)
    reps = sorted(int(r) for r in _present(preds["repeat"][preds["rotation"] == 0]) if r != 0)
    if not reps:
        return Rate.undefined("run has no same-order repeat (rotation 0, repeat > 0)")
    names = [c.name for c in clusterings]
    if not names or len(set(names)) < len(names):
        raise stats.UnknownClustering(f"clusterings must be distinct and at least one: {names}")
    r0, rep = _outcomes(items, run, split), _outcomes(items, run, split, rotation=0, repeat=reps[0])
    n = len(r0)
    if not n:
        return Rate.undefined(f"no items in split {split!r}")
    values, primary = _repeat_values(items, run, others, split, preds, r0, rep)
    keys = [k for k in TABLE13_KEYS if k in values] + [k for k in values if k not in TABLE13_KEYS]
    defined = [k for k in keys if not isinstance(values[k], str)]
    matrix = np.column_stack([np.asarray(values[k], dtype=float) for k in defined])
    out: dict[str, Any] = {"repeat": reps[0],
                           "primary": Rate.undefined(primary) if isinstance(primary, str) else primary.name,
                           "draws": draws, "seed": seed, "level": level, "clusterings": {}, "quantities": {}}
    intervals = _repeat_cluster_intervals(_scope(items, split), clusterings, matrix, out["clusterings"], draws,
                                          seed, level)
    for key in keys:
        out["quantities"][key] = _repeat_quantity(values[key], "minus" in key, n, clusterings, intervals,
                                                  defined.index(key) if key in defined else -1)
    return out


def _repeat_values(items: pd.DataFrame, run: RunData, others: Sequence[RunData], split: str | None,
                   preds: pd.DataFrame, r0: pd.DataFrame, rep: pd.DataFrame
                   ) -> tuple[dict[str, np.ndarray | str], RunData | str]:
    """repeat_intervals' per-item values of each quantity (or the reason it is undefined), and the primary
    run (or the reason there is none)."""
    a0, ar = _valid_answers(r0), _valid_answers(rep)
    c0, cr = r0["correct"], rep["correct"]
    same = pair_flags(a0, c0, ar, cr)
    values: dict[str, np.ndarray | str] = {"repeat_accuracy": cr}
    primary = primary_run(run, list(others))
    if isinstance(primary, str):
        values["primary_repeat_disagreement"] = values["repeat_minus_primary_accuracy"] = primary
    else:
        tp = _outcomes(items, primary, split)
        values["primary_repeat_disagreement"] = pair_flags(_valid_answers(tp), tp["correct"], ar, cr)["changed"]
        values["repeat_minus_primary_accuracy"] = cr.astype(np.int64) - tp["correct"]
    values["r0_repeat_disagreement"] = same["changed"]
    values["repeat_minus_r0_accuracy"] = cr.astype(np.int64) - c0
    values["both_correct"], values["consistency"] = same["both_correct"], same["consistency"]
    rots = [r for r in sorted(int(x) for x in _present(preds["rotation"][preds["repeat"] == 0])) if r]
    against = {r: pair_flags(a0, c0, _valid_answers(t), t["correct"])
               for r, t in ((r, _outcomes(items, run, split, rotation=r)) for r in rots)}
    for m in ("both_correct", "consistency"):  # the paper's order: every both-correct contrast, then consistency
        for r, other in against.items():
            values[f"{m}_minus_R{r}"] = same[m].astype(np.int64) - other[m]
    return values, primary


def _repeat_cluster_intervals(scope: pd.DataFrame, clusterings: Sequence[stats.Clustering], matrix: np.ndarray,
                              described: dict[str, Any], draws: int, seed: int | None, level: float
                              ) -> dict[str, tuple[np.ndarray, np.ndarray] | str]:
    """Per clustering name, the intervals of every column of `matrix` (items x quantities), or the reason
    there are none; each clustering's description (or reason) goes into `described`."""
    intervals: dict[str, tuple[np.ndarray, np.ndarray] | str] = {}
    for c in clusterings:
        try:
            code, n_clusters = _cluster_codes(scope, c)
        except MetricUndefined as exc:
            intervals[c.name] = str(exc)
            described[c.name] = Rate.undefined(str(exc))
            continue
        k = np.zeros((n_clusters, matrix.shape[1]))
        np.add.at(k, code, matrix)
        size = np.bincount(code, minlength=n_clusters).astype(float)
        described[c.name] = {"label": c.label, "clusters": n_clusters,
                             **({"fields": list(c.fields)} if c.name in stats.FIELD_CLUSTERINGS else {})}
        if seed is None:
            intervals[c.name] = "seed=None: no intervals"
            continue
        # products of a few columns: one BLAS thread is faster than several contending for the cores (and the
        # worker processes of score --all), with the same numbers
        with threadpool_limits(1, user_api="blas"):
            intervals[c.name] = stats.cluster_bootstrap_many(k, size, draws=draws, seed=seed, level=level)
    return intervals


def _repeat_quantity(value: np.ndarray | str, diff: bool, n: int, clusterings: Sequence[stats.Clustering],
                     intervals: dict[str, tuple[np.ndarray, np.ndarray] | str], j: int) -> dict[str, Rate]:
    """One quantity of repeat_intervals: its estimate over the n items and, per clustering, the same Rate
    with the interval of column j (or a reason)."""
    if isinstance(value, str):
        return {"estimate": Rate.undefined(value), **{c.name: Rate.undefined(value) for c in clusterings}}
    total = np.asarray(value, dtype=np.int64).sum()
    estimate = Rate(float(total) / n) if diff else Rate.of(int(total), n, "items")
    entry: dict[str, Rate] = {"estimate": estimate}
    for c in clusterings:
        got = intervals[c.name]
        if isinstance(got, str):
            entry[c.name] = Rate.undefined(got)
            continue
        rate = dataclasses.replace(estimate)
        lo, hi = got[0][j], got[1][j]
        if np.isfinite(lo) and np.isfinite(hi):
            rate.ci = (float(lo), float(hi))
        entry[c.name] = rate
    return entry


# --------------------------------------------------------------------------- two runs: turnover, decomposition


def turnover(items: pd.DataFrame, run_a: RunData, run_b: RunData, split: str | None = "test",
             a: tuple[int, int] = (0, 0), b: tuple[int, int] = (0, 0)) -> dict[str, Any]:
    """Item turnover from run_a to run_b (000 §6.2: "48 newly correct and 43 newly incorrect answers").

    a / b select (rotation, repeat). Over every item of the split: both_correct, newly_correct (wrong in a,
    correct in b), newly_incorrect, both_wrong, changed_answers (not both valid with the same letter),
    net = newly_correct - newly_incorrect (an int) and change = accuracy_b - accuracy_a.
    """
    # both item tables hold every item of the split in the same order
    ta = _outcomes(items, run_a, split, rotation=a[0], repeat=a[1])
    tb = _outcomes(items, run_b, split, rotation=b[0], repeat=b[1])
    answer_a, answer_b = ta["answer"], tb["answer"]
    same = (ta["status"] == "ok") & (tb["status"] == "ok") & (answer_a == answer_b) & pd.notna(answer_a)
    return turnover_counts(ta["correct"], tb["correct"], same)  # the one counting rule (core.comparison)


def decompose_change(items: pd.DataFrame, run_a: RunData, run_b: RunData,
                     split: str | None = "test") -> dict[str, Any]:
    """Paired decomposition of the NTS and DIS change from run_a to run_b (000 §7, App. D.3).

    For metric M with intervention variant v (nts: del, dis: add) over FQ2 groups complete in both runs:
    net = successes_b - successes_a splits exactly into
      shared_mss_correct: groups whose MSS is correct in both runs; gained / lost = v answer turned
        correct / wrong there (net = gained - lost);
      changed_coverage: groups whose MSS is correct in one run only; gained = successes among groups whose
        MSS became correct, lost = successes among groups whose MSS stopped being correct.
    "Shared MSS-correct groups account for four of Qwen's five net NTS gains" reads as shared.net = 4 of
    net = 5; "Qwen loses fourteen DIS successes through changed MSS coverage and one among shared groups"
    as coverage.net = -14, shared.net = -1.
    """
    # the group tables of both runs hold the same groups in the same order: those of the split's items
    ga, gb = groups(_outcomes(items, run_a, split), FQ2), groups(_outcomes(items, run_b, split), FQ2)
    if ga.empty:
        reason = "no FQ2 groups"
        return {"nts": Rate.undefined(reason), "dis": Rate.undefined(reason)}
    out: dict[str, Any] = {}
    for key, v in (("nts", "del"), ("dis", "add")):
        d = _complete(ga, ("mss", v))
        if not d.any():
            out[key] = Rate.undefined(f"no FQ2 groups with mss and {v} items")
            continue
        ma, mb, va, vb = ga["c_mss"][d], gb["c_mss"][d], ga[f"c_{v}"][d], gb[f"c_{v}"][d]
        sa, sb = ma & va, mb & vb
        shared = ma & mb
        only_b, only_a = ~ma & mb, ma & ~mb
        sh_gain, sh_loss = int((shared & ~va & vb).sum()), int((shared & va & ~vb).sum())
        cov_gain, cov_loss = int((only_b & vb).sum()), int((only_a & va).sum())
        n = int(d.sum())
        rate_a, rate_b = Rate.of(int(sa.sum()), n, "FQ2 groups"), Rate.of(int(sb.sum()), n, "FQ2 groups")
        out[key] = {
            "a": rate_a, "b": rate_b, "change": _diff(rate_b, rate_a, "no FQ2 groups"),
            "net": int(sb.sum() - sa.sum()),
            "shared_mss_correct": {"groups": int(shared.sum()), "gained": sh_gain, "lost": sh_loss,
                                   "net": sh_gain - sh_loss},
            "changed_coverage": {"mss_gained_groups": int(only_b.sum()), "mss_lost_groups": int(only_a.sum()),
                                 "gained": cov_gain, "lost": cov_loss, "net": cov_gain - cov_loss},
        }
    return out


# --------------------------------------------------------------------------- paired bootstrap (§6.2, App. D)


def _cluster_features(df: pd.DataFrame, keys: pd.Series, clusters: pd.Index) -> np.ndarray:
    """Per-cluster sums: correct, items, TP / support / predicted per class, and k / n of each joint metric."""
    valid = df["status"] == "ok"
    cols: dict[str, Any] = {"correct": df["correct"].astype(float), "items": np.ones(len(df))}
    for c in CLASSES:
        cols[f"tp_{c}"] = ((df["gold"] == c) & valid & (df["answer"] == c)).astype(float)
        cols[f"sup_{c}"] = (df["gold"] == c).astype(float)
        cols[f"pred_{c}"] = (valid & (df["answer"] == c)).astype(float)
    items_part = pd.DataFrame(cols, index=df.index).groupby(keys.to_numpy()).sum().reindex(clusters, fill_value=0)
    joint = pd.DataFrame(0.0, index=clusters, columns=["gem_k", "gem_n", "nts_k", "nts_n", "dis_k", "dis_n"])
    group_cluster = pd.Series(keys.to_numpy(), index=df["group_id"].to_numpy())
    group_cluster = group_cluster[~group_cluster.index.duplicated()]
    for prefix, kind, variants in (("gem", FQ1, FQ1_VARIANTS), ("nts", FQ2, ("mss", "del")),
                                   ("dis", FQ2, ("mss", "add"))):
        g = groups(df, kind)
        done = _complete(g, variants)
        if not done.any():
            continue
        g = g.rows(done)
        ok = pd.Series(_all(g, "c", variants).astype(float), index=g.index)
        where = group_cluster.reindex(g.index).to_numpy()
        joint[f"{prefix}_k"] = ok.groupby(where).sum().reindex(clusters, fill_value=0)
        joint[f"{prefix}_n"] = pd.Series(1.0, index=g.index).groupby(where).sum().reindex(clusters, fill_value=0)
    return np.hstack([items_part.to_numpy(dtype=float), joint.to_numpy(dtype=float)])


def _metrics_from_sums(s: np.ndarray) -> np.ndarray:
    """accuracy, macro_f1, fq1_gem, nts, dis from summed features (draws x features), NaN when undefined."""
    m = len(CLASSES)
    correct, total = s[:, 0], s[:, 1]
    tp, sup, pred = s[:, 2:2 + 3 * m:3], s[:, 3:2 + 3 * m:3], s[:, 4:2 + 3 * m:3]
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(pred > 0, tp / np.where(pred > 0, pred, 1), 0.0)
        recall = np.where(sup > 0, tp / np.where(sup > 0, sup, 1), 0.0)
        denom = precision + recall
        f1 = np.where(denom > 0, 2 * precision * recall / np.where(denom > 0, denom, 1), 0.0)
        j = 2 + 3 * m
        out = np.column_stack([correct / total, np.where(total > 0, f1.mean(axis=1), np.nan),
                               s[:, j] / s[:, j + 1], s[:, j + 2] / s[:, j + 3], s[:, j + 4] / s[:, j + 5]])
    return out


def compare(items: pd.DataFrame, run_a: RunData, run_b: RunData, split: str | None = "test",
            draws: int = stats.DEFAULT_DRAWS, seed: int | None = stats.DEFAULT_SEED, level: float = 0.95,
            by: str = "group_id", clustering: stats.Clustering | None = None) -> dict[str, Any]:
    """Paired differences run_b - run_a of accuracy, macro_f1, fq1_gem, nts and dis with percentile
    cluster-bootstrap intervals (000 §6.2 "paired 95% interval", App. D; clusters = groups by default, or
    any item column / "meta.<field>"; `clustering`, when given, replaces `by` with the exact-image or union
    components of stats.cluster_labels). Both runs are resampled with the same clusters in each draw;
    ratios are item- (group-) weighted sums over the drawn clusters. Each metric gives {"a", "b",
    "difference"} with the interval in difference.ci; a metric undefined for either run gives a reason.
    """
    fa, fb = frame(items, run_a, split), frame(items, run_b, split)
    if fa.empty:
        reason = f"no items in split {split!r}"
        return {m: Rate.undefined(reason) for m in COMPARED}
    fb = fb.set_index("item_id").loc[fa["item_id"]].reset_index()
    if clustering is not None:
        scope = _scope(items, split)  # the item columns (images among them) that frame() leaves out
        label = dict(zip(scope["item_id"], stats.cluster_labels(scope, clustering), strict=True))
        keys = fa["item_id"].map(label)
    else:
        keys = stats.cluster_key(fa, by)
    if keys.isna().any():
        raise MetricUndefined(f"{int(keys.isna().sum())} items have no value for cluster {by!r}")
    clusters = pd.Index(sorted(keys.unique(), key=str))
    xa, xb = _cluster_features(fa, keys, clusters), _cluster_features(fb, keys, clusters)
    # stats._bootstrap_stats resamples whole clusters (same draws for both runs); macro-F1 is not a ratio of
    # sums, so the public ratio helpers (cluster_bootstrap_diff) cannot express it.
    boot = stats._bootstrap_stats([xa, xb], lambda sa, sb: _metrics_from_sums(sb) - _metrics_from_sums(sa),
                                  draws, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a metric undefined in every draw (no FQ1 groups)
        lo, hi = stats._percentiles(boot, level)
    ma, mb = core_metrics(fa), core_metrics(fb)
    out: dict[str, Any] = {"clusters": len(clusters), "draws": draws, "seed": seed, "level": level,
                           "clustering": clustering.label if clustering is not None else by}
    for i, m in enumerate(COMPARED):
        diff = _diff(mb[m], ma[m], f"{m} is undefined for one of the runs")
        if diff.value is not None and np.isfinite(lo[i]) and np.isfinite(hi[i]):
            diff.ci = (float(lo[i]), float(hi[i]))
        out[m] = {"a": ma[m], "b": mb[m], "difference": diff}
    return out


# --------------------------------------------------------------------------- several runs: seeds, input modes


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


def multi_seed(items: pd.DataFrame, runs: Sequence[RunData], split: str | None = "test",
               ignore: Iterable[str] = ("seed",)) -> dict[str, Any]:
    """Mean and sample SD (ddof 1) over runs that differ only in seed (000 Table 11, Table 6a, Table 6b).

    Each metric's mean and SD are taken over the unrounded per-run rates (stats.mean_sd); values lists
    the per-run rates in run order. SEED_METRICS come from each run's rotation-0 / repeat-0 answers, Table 6b's
    vanilla / circular / consistency from its rotations (rotations(); a reason when a run has no rotation
    besides 0). Runs whose settings differ in a key outside `ignore` (and bookkeeping
    keys) or that repeat a seed raise MetricUndefined; one run gives the mean with an SD reason.
    """
    runs = list(runs)
    if not runs:
        raise MetricUndefined("no runs given")
    ignore = tuple(ignore)
    first = _settings(runs[0], ignore)
    for run in runs[1:]:
        other = _settings(run, ignore)
        if other != first:
            keys = sorted(k for k in set(first) | set(other) if first.get(k) != other.get(k))
            raise MetricUndefined(f"runs {runs[0].name!r} and {run.name!r} differ in {', '.join(keys)}, "
                                  f"not only in {' / '.join(ignore)}")
    seeds = [(r.config or {}).get("seed") for r in runs]
    if len({repr(s) for s in seeds}) < len(seeds):
        raise MetricUndefined(f"several runs share a seed: {seeds}")
    per_run = [core_metrics(_outcomes(items, r, split)) for r in runs]
    for p, r in zip(per_run, runs, strict=True):
        rot = rotations(items, r, split)
        p.update({m: rot[m] for m in ROTATION_SEED_METRICS})
    out: dict[str, Any] = {"runs": [r.name for r in runs], "seeds": seeds}
    for m in (*SEED_METRICS, *ROTATION_SEED_METRICS):
        values = [p[m].value for p in per_run]
        if any(v is None for v in values):
            reason = next(p[m].reason for p in per_run if p[m].value is None) or "undefined"
            out[m] = {"mean": Rate.undefined(reason), "sd": Rate.undefined(reason), "values": values}
            continue
        mean, sd, why = stats.mean_sd([float(v) for v in values if v is not None])
        out[m] = {"mean": Rate(mean), "sd": Rate(sd) if sd is not None else Rate.undefined(why or "undefined"),
                  "values": values}
    return out


def seed_siblings(run: RunData, others: Sequence[RunData]) -> list[RunData]:
    """Other runs of the same benchmark whose settings equal this run's except the seed (seed differs)."""
    mine = _settings(run, ("seed",))
    seed = (run.config or {}).get("seed")
    return [o for o in others if o.name != run.name and o.benchmark == run.benchmark
            and _settings(o, ("seed",)) == mine and (o.config or {}).get("seed") != seed]


def _identity(r: RunData) -> tuple[Any, ...]:
    """(model, strategy, shots): what pairs two runs of one configuration across input modes or executions."""
    cfg = r.config or {}
    return cfg.get("model"), cfg.get("strategy") or "direct", int(cfg.get("shots") or 0)


def _partner(run: RunData, others: Sequence[RunData], mode: str) -> RunData | str:
    """The run with the same model / strategy / shots in input mode `mode`, or why there is none."""
    ident = _identity
    found = [o for o in others if o.name != run.name and o.benchmark == run.benchmark
             and _input_mode(o) == mode and ident(o) == ident(run)]
    if len(found) > 1:
        mine = _settings(run, ("input_mode",))
        exact = [o for o in found if _settings(o, ("input_mode",)) == mine]
        if len(exact) == 1:
            return exact[0]
        return f"several {mode!r} runs match (model, strategy, shots): {', '.join(sorted(o.name for o in found))}"
    if not found:
        model, strategy, shots = ident(run)
        return f"no {mode!r} input-mode run with model {model!r}, strategy {strategy!r}, {shots} shots"
    return found[0]


def input_mode_deltas(items: pd.DataFrame, run: RunData, others: Sequence[RunData],
                      split: str | None = "test") -> dict[str, Any]:
    """All-images minus text-only and minus first-image (000 Table 5, Table 14, §6.3).

    The partner is the run in `others` with input mode "text" / "first" and the same model, strategy and
    shots (ties broken by every other setting). Per mode: partner (its name), delta.{accuracy, fq1_gem,
    nts, dis} = this run minus the partner, partner_scores (its rates), turnover and decomposition
    (decompose_change from the partner to this run). A run not in "all" mode, or no unique partner, gives
    a reason.
    """
    mode = _input_mode(run)
    out: dict[str, Any] = {}
    for other_mode in ("text", "first"):
        if mode != "all":
            out[other_mode] = Rate.undefined(f"this run's input mode is {mode!r}; deltas are taken from 'all' runs")
            continue
        partner = _partner(run, others, other_mode)
        if isinstance(partner, str):
            out[other_mode] = Rate.undefined(partner)
            continue
        mine, theirs = core_metrics(_outcomes(items, run, split)), core_metrics(_outcomes(items, partner, split))
        keys = ("accuracy", "fq1_gem", "nts", "dis")
        out[other_mode] = {
            "partner": partner.name,
            "delta": {k: _diff(mine[k], theirs[k], f"{k} is undefined for one of the runs") for k in keys},
            "partner_scores": {k: theirs[k] for k in keys},
            "turnover": turnover(items, partner, run, split),
            "decomposition": decompose_change(items, partner, run, split),
        }
    return out


# --------------------------------------------------------------------------- the metric set


def score(items: pd.DataFrame, run: RunData, others: Sequence[RunData] = (), split: str | None = "test",
          clusterings: Sequence[stats.Clustering] | None = None, **_: Any) -> dict[str, Any]:
    """Every FrameEvidence metric of one run on one split (SPEC §5); see docs/METRICS.md (FrameEvidence)."""
    others = list(others or [])
    scope = _scope(items, split)
    df = _outcomes(items, run, split)  # frame()'s rows as an item table
    out: dict[str, Any] = {"split": split, "items": len(df), "coverage": coverage(df)}
    out.update(core_metrics(df))
    out["independence"] = independence(df)
    out["variant_accuracy"] = variant_accuracy(df)
    out["kind_accuracy"] = kind_accuracy(df)
    out["reference"] = {"uniform_random": uniform_random(scope), "always_insufficient": always_insufficient(scope)}
    rot = rotations(items, run, split)
    out.update({k: rot[k] for k in ("vanilla", "circular", "consistency", "mean_rotation", "drop")})
    out["per_rotation"] = rot["per_rotation"]
    out["repeats"] = repeat_table(items, run, split)
    out["repeat_intervals"] = repeat_intervals(items, run, others, split, tuple(clusterings or DEFAULT_CLUSTERINGS))
    out["insufficiency"] = insufficiency(df)
    out["strata"] = strata(df)
    out["transitions"] = transitions(df)
    out["pairwise_frames"] = pairwise_frames(df)
    out["input_modes"] = input_mode_deltas(items, run, others, split)
    if (run.config or {}).get("seed") is None:
        out["seeds"] = Rate.undefined("run config has no seed")
    else:
        siblings = seed_siblings(run, others)
        out["seeds"] = (multi_seed(items, [run, *siblings], split) if siblings
                        else Rate.undefined("no other run differs from this one only in seed"))
    return out
