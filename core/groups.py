"""Group-level views of runs for Browse and Compare (pure: pandas / numpy over the frames of ARCHITECTURE).

Family-agnostic: the item outcome is the family's own (`outcomes`, `every_prediction` of its `Family`, written
in core/families/<name>/groups.py, read through the registry core.families.get), so a group's marks agree with
its metrics; so are its failure patterns (`patterns`, `summary_patterns`).

Failure patterns (SPEC §8, issue 6) are computed per group and per run; a group matches a pattern in a run
when the run answered it and the rule holds. `any` run of a selection matches when one of them does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from core import families, outcomes
from core.schema import RunData

# Failure patterns of every family (each family's own are its package's PATTERNS).
COMMON_PATTERNS = [
    ("invalid", "Has an invalid response"),
    ("api_error", "Has an api_error response"),
]
TRANSITIONS = ("correct → correct", "correct → wrong", "wrong → correct", "wrong → wrong")

_OUT_COLS = ["item_id", "group_id", "kind", "variant", "answered", "correct"]


def patterns(family: str) -> list[tuple[str, str]]:
    """Every failure pattern of `family` as (key, label)."""
    return [*families.get(family).groups.patterns, *COMMON_PATTERNS]


# --------------------------------------------------------------------------- item outcomes


def item_outcomes(family: str, items: pd.DataFrame, run: RunData | pd.DataFrame) -> pd.DataFrame:
    """One row per item of `items`: item_id, group_id, kind, variant, answered (bool), correct (bool), by the one
    item-outcome rule (core.outcomes.item_marks under the family's `every_prediction`)."""
    preds = run.preds if isinstance(run, RunData) else run
    base = items[["item_id", "group_id", "kind", "variant"]].reset_index(drop=True)
    lay = outcomes.layout(families.get(family).groups, items)
    answered, correct = outcomes.item_marks(lay, outcomes.preds_from_frame(lay, preds))
    return base.assign(answered=answered, correct=correct)[_OUT_COLS]


def answered_outcomes(family: str, items: pd.DataFrame, run: RunData) -> pd.DataFrame:
    """item_outcomes of the items `run` answered (item_id, group_id, correct, ...): a paired comparison's rows."""
    out = item_outcomes(family, items, run)
    return out[out["answered"].to_numpy(dtype=bool)].reset_index(drop=True)


# --------------------------------------------------------------------------- group summaries and patterns


def group_summary(family: str, items: pd.DataFrame, run: RunData | pd.DataFrame) -> pd.DataFrame:
    """One row per group of `items` (index group_id) for one run.

    Columns: n_items, n_answered, n_correct, n_invalid, n_api_error, all_correct (answered and every item
    correct), category (StemBind decomposition of a complete stem, else None), and one bool column
    `p_<key>` per failure pattern of the family. Computed by core.outcomes (the Browse list's engine).
    """
    preds = run.preds if isinstance(run, RunData) else run
    lay = outcomes.layout(families.get(family).groups, items)
    summary = outcomes.summarise(lay, outcomes.preds_from_frame(lay, preds))
    return outcomes.frame(lay, summary, [key for key, _ in patterns(family)])


def match_patterns(summaries: Sequence[pd.DataFrame], key: str | None) -> pd.Series | None:
    """Groups matching pattern `key` in any of the runs' summaries (None when no pattern is chosen)."""
    if not key or not summaries:
        return None
    col = f"p_{key}"
    hits = [s[col] for s in summaries if col in s]
    if not hits:
        return None
    out = hits[0].copy()
    for h in hits[1:]:
        out = out | h.reindex(out.index, fill_value=False)
    return out


def pattern_counts(family: str, summaries: Sequence[pd.DataFrame], within: pd.Index | None = None) -> dict[str, int]:
    """Groups matching each pattern in any of the runs (within `within` when given)."""
    counts = {}
    for key, _ in patterns(family):
        hit = match_patterns(summaries, key)
        if hit is None:
            counts[key] = 0
            continue
        if within is not None:
            hit = hit.reindex(within, fill_value=False)
        counts[key] = int(hit.sum())
    return counts


# --------------------------------------------------------------------------- the group index (Browse list)


def _scalar(v: Any) -> bool:
    return isinstance(v, (str, int, float, bool)) and not (isinstance(v, float) and v != v)


def strata_fields(items: pd.DataFrame, max_values: int = 40) -> dict[str, list[str]]:
    """Meta fields usable as strata (scalar values, 2..max_values distinct) -> their sorted values;
    `n_images` is always offered when images vary."""
    values: dict[str, set[str]] = {}
    dead: set[str] = {"synthetic"}
    for m in items["meta"]:
        if not isinstance(m, Mapping):
            continue
        for k, v in m.items():
            if k in dead:
                continue
            if not _scalar(v):
                dead.add(k)
                values.pop(k, None)
                continue
            seen = values.setdefault(k, set())
            seen.add(str(v))
            if len(seen) > max_values:
                dead.add(k)
                values.pop(k, None)
    out = {k: sorted(v) for k, v in sorted(values.items()) if 2 <= len(v) <= max_values}
    n_img = sorted({str(int(n)) for n in items["n_images"]}, key=int) if "n_images" in items else []
    if len(n_img) > 1:
        out = {"n_images": n_img, **out}
    return out


def item_stratum(items: pd.DataFrame, field: str) -> pd.Series:
    """The value of stratum `field` per item (as text; None when absent), an object Series on `items`' index
    (pandas' own string inference would turn None into NaN, which reads as the text "nan")."""
    if field == "n_images":
        return pd.Series([str(int(n)) for n in items["n_images"]], index=items.index, dtype=object)
    return pd.Series([str(m[field]) if isinstance(m, Mapping) and _scalar(m.get(field)) else None
                      for m in items["meta"]], index=items.index, dtype=object)


@dataclass(slots=True)
class GroupIndex:
    """One row per group: split, kinds, n_items, a short label, and the lowercased text the search box sees."""

    frame: pd.DataFrame


def group_index(items: pd.DataFrame) -> GroupIndex:
    """The Browse list's base table (index group_id, in first-appearance order)."""
    split: dict[str, str] = {}
    kinds: dict[str, dict[str, None]] = {}
    count: dict[str, int] = {}
    question: dict[str, str] = {}
    text: dict[str, list[str]] = {}
    for gid, sp_, kind, iid, q in zip(items["group_id"], items["split"], items["kind"], items["item_id"],
                                      items["question"], strict=True):
        if gid not in split:
            split[gid] = sp_
            kinds[gid] = {}
            count[gid] = 0
            question[gid] = str(q or "")[:90]
            text[gid] = [str(gid).lower()]
        kinds[gid][str(kind)] = None
        count[gid] += 1
        text[gid].append(f"{iid} {q or ''}".lower())
    order = list(split)
    frame = pd.DataFrame({
        "split": [split[g] for g in order], "kinds": [" ".join(kinds[g]) for g in order],
        "n_items": [count[g] for g in order], "question": [question[g] for g in order],
        "search": [" ".join(text[g]) for g in order],
    }, index=pd.Index(order, name="group_id"))
    return GroupIndex(frame)


def filter_groups(index: GroupIndex, items: pd.DataFrame, split: str | None = None, kind: str | None = None,
                  field: str | None = None, value: str | None = None, query: str | None = None) -> pd.Index:
    """Groups passing the plain filters (pattern filters are applied by the caller with match_patterns)."""
    f = index.frame
    mask = pd.Series(True, index=f.index)
    if split:
        mask &= f["split"] == split
    if kind:
        mask &= f["kinds"].str.split().map(lambda ks: kind in ks)
    if field and value:
        hit = items.loc[item_stratum(items, field) == value, "group_id"].unique()
        mask &= f.index.isin(hit)
    if query and query.strip():
        for word in query.lower().split():
            mask &= f["search"].str.contains(word, regex=False)
    return f.index[mask.to_numpy()]


# --------------------------------------------------------------------------- two runs (Compare)


def group_transitions(family: str, items: pd.DataFrame, run_a: RunData, run_b: RunData) -> pd.DataFrame:
    """One row per group answered by both runs (index group_id): n_items, k_a, k_b (items correct),
    newly_correct, newly_incorrect (items), all_a, all_b (every item correct), transition (group level,
    one of TRANSITIONS), changed (some item changed correctness)."""
    oa = item_outcomes(family, items, run_a)
    ob = item_outcomes(family, items, run_b).set_index("item_id").reindex(oa["item_id"])
    both = oa.assign(answered_b=ob["answered"].to_numpy(dtype=bool), correct_b=ob["correct"].to_numpy(dtype=bool))
    ca, cb = both["correct"], both["correct_b"]
    both = both.assign(nc=(~ca & cb).astype(int), ni=(ca & ~cb).astype(int))
    grp = both.groupby("group_id", sort=False)
    t = pd.DataFrame({
        "n_items": grp.size(),
        "got_a": grp["answered"].any(), "got_b": grp["answered_b"].any(),
        "k_a": grp["correct"].sum(), "k_b": grp["correct_b"].sum(),
        "newly_correct": grp["nc"].sum(), "newly_incorrect": grp["ni"].sum(),
    })
    t = t[t["got_a"] & t["got_b"]].drop(columns=["got_a", "got_b"])
    t = t.astype({c: int for c in ("n_items", "k_a", "k_b", "newly_correct", "newly_incorrect")})
    t["all_a"] = t["k_a"] == t["n_items"]
    t["all_b"] = t["k_b"] == t["n_items"]
    labels = np.select([t["all_a"] & t["all_b"], t["all_a"] & ~t["all_b"], ~t["all_a"] & t["all_b"]],
                       list(TRANSITIONS[:3]), default=TRANSITIONS[3])
    t["transition"] = labels
    t["changed"] = (t["newly_correct"] + t["newly_incorrect"]) > 0
    return t


def transition_counts(t: pd.DataFrame) -> dict[str, int]:
    """Groups per group-level transition (every label present, 0 when none)."""
    return {lab: int((t["transition"] == lab).sum()) for lab in TRANSITIONS}


# --------------------------------------------------------------------------- one group's structure


def stage_of(family: str, kind: str) -> str | None:
    """The stage of an item kind in `family` (SPUR's tasks; None where kinds have no stage)."""
    return families.get(family).stage_of.get(kind)


def ordered(values: Iterable[str], order: Sequence[str]) -> list[str]:
    """`values` with those in `order` first (in that order), then the rest sorted."""
    vals = list(dict.fromkeys(values))
    return [o for o in order if o in vals] + sorted(v for v in vals if v not in order)


# --------------------------------------------------------------------------- one group, without pandas


def group_outcomes(family: str, items: Sequence[Mapping[str, Any]],
                   preds: Sequence[Mapping[str, Any]]) -> dict[str, tuple[bool, bool]]:
    """item_id -> (answered, correct) for one group's items and one run's predictions of them: item_outcomes'
    rule (core.outcomes.item_marks) over plain records, so that opening a single group costs microseconds per
    run."""
    ids = [str(it["item_id"]) for it in items]
    row_of = {iid: i for i, iid in enumerate(ids)}
    lay = outcomes.Layout(rules=families.get(family).groups, item_ids=np.array(ids, dtype=object),
                          groups=pd.Index([], dtype=object), group=np.zeros(len(ids), dtype=np.int64),
                          kind=np.empty(0, dtype=object), variant=np.empty(0, dtype=object),
                          gold=np.array([it["answer"] for it in items], dtype=object),
                          n_items=np.zeros(0, dtype=np.int64))
    p = outcomes.Preds(
        row=np.array([row_of.get(str(r["item_id"]), -1) for r in preds], dtype=np.int64),
        first=np.array([int(r.get("rotation") or 0) == 0 and int(r.get("repeat") or 0) == 0 for r in preds],
                       dtype=bool),
        status=outcomes.status_codes(np.array([r.get("status") for r in preds], dtype=object)),
        answer=np.array([r.get("answer") for r in preds], dtype=object))
    answered, correct = outcomes.item_marks(lay, p)
    return {iid: (bool(a), bool(c)) for iid, a, c in zip(ids, answered, correct, strict=True)}
