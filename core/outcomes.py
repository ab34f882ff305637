"""Item and group outcomes of runs as numpy arrays (pure): the engine behind core.groups.group_summary and the
Browse list, where one list call summarises up to hundreds of runs.

A benchmark's items are laid out once (`layout`: group code, kind, variant and gold answer per item row); a
run's predictions come as four arrays (`Preds`: item row, first prediction, status code, answer), read
columnar by db.predictions.outcome_arrays or taken from a predictions frame (`preds_from_frame`). `summarise`
turns them into per-item and per-group counts and the family's failure patterns with a few `np.bincount`s,
no pandas group-by; `frame` gives core.groups.group_summary's DataFrame.

The rules are core.groups' (its module docstring): StemBind and SPUR items are right only when every prediction
is; the other families read the rotation-0 / repeat-0 prediction (`Family.groups.every_prediction`). The pattern
rules of a family are its `Family.groups.summary_patterns(layout, summary)` (core/families/<name>/groups.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import pandas as pd

from core.schema import STATUSES

OTHER_STATUS = len(STATUSES)  # the status code of a text outside STATUSES
_OK, _INVALID, _API_ERROR = (STATUSES.index(s) for s in ("ok", "invalid", "api_error"))


class SummaryPatterns(Protocol):
    """Sets the family's failure patterns (and categories) of one run's group summary in place."""

    def __call__(self, lay: Layout, summary: RunSummary, /) -> None: ...


@dataclass(frozen=True)
class GroupRules:
    """A family's settings of the one item-outcome rule (`item_marks`) and its failure patterns, from its groups.py
    (Browse marks, Compare turnover, the group views, the report): `Family.groups`."""

    summary_patterns: SummaryPatterns
    patterns: tuple[tuple[str, str], ...]     # (key, label): the Browse failure patterns
    every_prediction: bool                    # an item is correct only when every one of its predictions is,
    #                                           else its rotation-0 / repeat-0 prediction decides
    unanswered_is_wrong: bool                 # turnover counts every item of the split, an unanswered one as
    #                                           wrong, else the items both runs answered
    category_labels: Mapping[str, str] = field(default_factory=dict)  # a group's category (RunSummary.category)
    #                                           as the Browse list names it (StemBind's decomposition)


@dataclass(frozen=True)
class Layout:
    """A benchmark's items as arrays, in item row order, with the groups in order of first appearance."""

    rules: GroupRules             # the family's (Family.groups)
    item_ids: np.ndarray          # object, per item
    groups: pd.Index              # group ids (name "group_id")
    group: np.ndarray             # int64 code into `groups`, per item
    kind: np.ndarray              # object, per item
    variant: np.ndarray           # object, per item
    gold: np.ndarray              # object, per item
    n_items: np.ndarray           # int64, per group

    @property
    def n_groups(self) -> int:
        return len(self.groups)


def layout(rules: GroupRules, items: pd.DataFrame) -> Layout:
    """The Layout of `items` (columns item_id, group_id, kind, variant, answer) under a family's rules."""
    codes, uniques = pd.factorize(items["group_id"], sort=False)
    group = np.asarray(codes, dtype=np.int64)
    return Layout(rules=rules, item_ids=items["item_id"].to_numpy(dtype=object),
                  groups=pd.Index(uniques, name="group_id", dtype=object), group=group,
                  kind=items["kind"].to_numpy(dtype=object), variant=items["variant"].to_numpy(dtype=object),
                  gold=items["answer"].to_numpy(dtype=object),
                  n_items=np.bincount(group, minlength=len(uniques)).astype(np.int64))


@dataclass(frozen=True)
class Preds:
    """A run's predictions as arrays, one entry per prediction: the row of its item in the Layout (-1: not
    among its items), whether it is the rotation-0 / repeat-0 one, its status code (index in STATUSES,
    OTHER_STATUS otherwise) and its answer (None when missing)."""

    row: np.ndarray      # int64
    first: np.ndarray    # bool
    status: np.ndarray   # uint8
    answer: np.ndarray   # object


def status_codes(statuses: np.ndarray) -> np.ndarray:
    """STATUSES index per status text (OTHER_STATUS for any other)."""
    out = np.full(len(statuses), OTHER_STATUS, dtype=np.uint8)
    for code, name in enumerate(STATUSES):
        out[statuses == name] = code
    return out


def preds_from_frame(lay: Layout, preds: pd.DataFrame | None) -> Preds:
    """Preds of a predictions frame (item_id, rotation, repeat, status, answer)."""
    if preds is None or len(preds) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return Preds(empty, empty.astype(bool), empty.astype(np.uint8), empty.astype(object))
    row_of = pd.Series(np.arange(len(lay.item_ids)), index=pd.Index(lay.item_ids, dtype=object))
    row_of = row_of[~row_of.index.duplicated()]
    row = row_of.reindex(preds["item_id"].to_numpy(dtype=object)).fillna(-1).to_numpy(dtype=np.int64)
    first = (preds["rotation"].to_numpy() == 0) & (preds["repeat"].to_numpy() == 0)
    return Preds(row=row, first=first, status=status_codes(preds["status"].to_numpy(dtype=object)),
                 answer=preds["answer"].to_numpy(dtype=object))


@dataclass(frozen=True)
class RunSummary:
    """One run over a Layout: per item answered / correct, per group the counts, StemBind category (None for
    an incomplete stem or another family) and each failure pattern of the family."""

    answered: np.ndarray      # bool, per item
    correct: np.ndarray       # bool, per item
    n_answered: np.ndarray    # int64, per group
    n_correct: np.ndarray     # int64, per group
    n_invalid: np.ndarray     # int64, per group
    n_api_error: np.ndarray   # int64, per group
    category: np.ndarray      # object, per group
    patterns: dict[str, np.ndarray] = field(default_factory=dict)  # key -> bool per group


def item_marks(lay: Layout, p: Preds) -> tuple[np.ndarray, np.ndarray]:
    """(answered, correct) per item row: the one item-outcome rule of Browse, Compare, the group views and the
    report. An item is answered when it has a prediction (its rotation-0 / repeat-0 one, unless the family's
    `every_prediction`), and correct when every such prediction is ok and its letter is the gold one; invalid and
    api_error count wrong (000 App. A). The metrics' per-item tables follow the same rule (tests/test_groups.py)."""
    n = len(lay.item_ids)
    known = p.row >= 0
    if not lay.rules.every_prediction:
        known &= p.first
    rows = p.row[known]
    ok = (p.status[known] == _OK) & (p.answer[known] == lay.gold[rows])
    n_pred = np.bincount(rows, minlength=n)
    n_ok = np.bincount(rows, weights=ok, minlength=n)
    answered = n_pred > 0
    return answered, answered & (n_ok == n_pred)


def outcome_label(answered: bool, correct: bool, status: object) -> str:
    """How every view marks one item of one run (or one prediction): correct, wrong, invalid, api_error or
    missing, from the rule's (answered, correct) and the status of the prediction shown. The group views, the
    report's data island and its viewer read this one label."""
    if not answered:
        return "missing"
    if correct:
        return "correct"
    return str(status) if status in ("invalid", "api_error") else "wrong"


def per_group(lay: Layout, values: np.ndarray, where: np.ndarray | None = None) -> np.ndarray:
    """Sum of `values` (per item) within each group, over the items in `where` when given."""
    g = lay.group if where is None else lay.group[where]
    v = values if where is None else values[where]
    return np.bincount(g, weights=v, minlength=lay.n_groups).astype(np.int64)


def summarise(lay: Layout, p: Preds) -> RunSummary:
    """The RunSummary of one run's predictions."""
    answered, correct = item_marks(lay, p)
    known = p.row >= 0
    g_pred = lay.group[p.row[known]]
    status = p.status[known]
    out = RunSummary(
        answered=answered, correct=correct,
        n_answered=per_group(lay, answered), n_correct=per_group(lay, correct),
        n_invalid=np.bincount(g_pred[status == _INVALID], minlength=lay.n_groups).astype(np.int64),
        n_api_error=np.bincount(g_pred[status == _API_ERROR], minlength=lay.n_groups).astype(np.int64),
        category=np.full(lay.n_groups, None, dtype=object))
    lay.rules.summary_patterns(lay, out)
    out.patterns["invalid"] = out.n_invalid > 0
    out.patterns["api_error"] = out.n_api_error > 0
    return out


# --------------------------------------------------------------------------- the families' pattern rules


def first_of(lay: Layout, where: np.ndarray) -> np.ndarray:
    """Per group, the first item row (in row order) among `where`, -1 when none."""
    rows = np.flatnonzero(where)
    first = np.full(lay.n_groups, -1, dtype=np.int64)
    groups, at = np.unique(lay.group[rows], return_index=True)
    first[groups] = rows[at]
    return first



def frame(lay: Layout, s: RunSummary, keys: list[str]) -> pd.DataFrame:
    """core.groups.group_summary's DataFrame (index group_id) with one `p_<key>` column per key of `keys`."""
    df = pd.DataFrame({"n_items": lay.n_items, "n_answered": s.n_answered, "n_correct": s.n_correct,
                       "n_invalid": s.n_invalid, "n_api_error": s.n_api_error}, index=lay.groups)
    df["all_correct"] = (s.n_answered > 0) & (s.n_correct == lay.n_items)
    df["category"] = pd.Series(s.category, index=lay.groups, dtype=object)
    none = np.zeros(lay.n_groups, dtype=bool)
    for key in keys:
        df[f"p_{key}"] = s.patterns.get(key, none).astype(bool)
    return df
