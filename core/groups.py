"""Group-level views of runs for Browse and Compare (pure: pandas / numpy over the frames of ARCHITECTURE).

The item outcome is the family's own (so a group's marks agree with its metrics):

- frameevidence: the rotation-0 / repeat-0 prediction (core.families.frameevidence.metrics.frame); an item the run
  did not answer is "missing" (wrong in the metrics, "not answered" here);
- stembind, spur: correct only when every prediction of the item is correct (their item_outcomes);
- generic: the rotation-0 / repeat-0 prediction (core.families.generic.metrics).

Failure patterns (SPEC §8, issue 6) are computed per group and per run; a group matches a pattern in a run
when the run answered it and the rule holds. `any` run of a selection matches when one of them does.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from core import outcomes, stats
from core.families.frameevidence import metrics as fe
from core.families.spur import metrics as sp
from core.families.stembind import metrics as sb
from core.metrics import common
from core.schema import Rate, RunData

# (key, label) per family, in display order; COMMON applies to every family.
PATTERNS: dict[str, list[tuple[str, str]]] = {
    "frameevidence": [
        ("fq1_0", "FQ1: 0 of 3 frames correct"),
        ("fq1_1", "FQ1: 1 of 3 frames correct"),
        ("fq1_2", "FQ1: 2 of 3 frames correct"),
        ("fq1_3", "FQ1: all 3 frames correct"),
        ("fq2_mss_del", "FQ2: MSS right, deletion wrong"),
        ("fq2_mss_add", "FQ2: MSS right, addition wrong"),
    ],
    "stembind": [
        ("cat_solved", "Stem: solved"),
        ("cat_cant_bind", "Stem: can't bind (P and R right, F wrong)"),
        ("cat_cant_reason", "Stem: can't reason (P right, R and F wrong)"),
        ("cat_cant_see", "Stem: can't see (no P right, F wrong)"),
    ],
    "spur": [
        ("perc_ok_reason_wrong", "Figure: perception right, reasoning wrong"),
    ],
    "generic": [
        ("some_wrong", "Group: some items wrong"),
        ("all_wrong", "Group: every item wrong"),
    ],
}
COMMON_PATTERNS = [
    ("invalid", "Has an invalid response"),
    ("api_error", "Has an api_error response"),
]
CATEGORY_LABELS = {"solved": "solved", "cant_bind": "can't bind", "cant_reason": "can't reason",
                   "cant_see": "can't see"}
# The rule of each category, as core.families.stembind.metrics.decompose applies it (002 §4.3 (ii)); views print it.
CATEGORY_RULES = {"solved": "F right", "cant_bind": "at least one P right, R right, F wrong",
                  "cant_reason": "at least one P right, R wrong, F wrong", "cant_see": "no P right, F wrong"}
TRANSITIONS = ("correct → correct", "correct → wrong", "wrong → correct", "wrong → wrong")

_OUT_COLS = ["item_id", "group_id", "kind", "variant", "answered", "correct"]


def patterns(family: str) -> list[tuple[str, str]]:
    """Every failure pattern of `family` as (key, label)."""
    return [*PATTERNS.get(family, PATTERNS["generic"]), *COMMON_PATTERNS]


# --------------------------------------------------------------------------- item outcomes


def item_outcomes(family: str, items: pd.DataFrame, run: RunData) -> pd.DataFrame:
    """One row per item of `items`: item_id, group_id, kind, variant, answered (bool), correct (bool)."""
    base = items[["item_id", "group_id", "kind", "variant"]].reset_index(drop=True)
    if items.empty:
        return base.assign(answered=pd.Series(dtype=bool), correct=pd.Series(dtype=bool))
    if family == "frameevidence":
        df = fe.frame(items, run, split=None)
        got = dict(zip(df["item_id"], df["status"] != fe.MISSING, strict=True))
        ok = dict(zip(df["item_id"], df["correct"], strict=True))
    elif family in ("stembind", "spur"):
        out = (sb if family == "stembind" else sp).item_outcomes(items, run)
        got = {i: True for i in out["item_id"]}
        ok = dict(zip(out["item_id"], out["correct"], strict=True))
    else:
        joined = common.select(common.join(items, run.preds), rotation=0, repeat=0)
        joined = joined.drop_duplicates("item_id")
        got = {i: True for i in joined["item_id"]}
        ok = dict(zip(joined["item_id"], joined["correct"], strict=True))
    base["answered"] = [bool(got.get(i, False)) for i in base["item_id"]]
    base["correct"] = [bool(ok.get(i, False)) and bool(got.get(i, False)) for i in base["item_id"]]
    return base[_OUT_COLS]


def item_outcomes_fast(family: str, items: pd.DataFrame, preds: pd.DataFrame) -> pd.DataFrame:
    """item_outcomes from a bare predictions frame (item_id, rotation, repeat, status, answer), vectorised
    (core.outcomes.item_marks): the same rules, checked against the family functions in tests/test_groups.py."""
    base = items[["item_id", "group_id", "kind", "variant"]].reset_index(drop=True)
    lay = outcomes.layout(family, items)
    answered, correct = outcomes.item_marks(lay, outcomes.preds_from_frame(lay, preds))
    return base.assign(answered=answered, correct=correct)


# --------------------------------------------------------------------------- group summaries and patterns


def group_summary(family: str, items: pd.DataFrame, run: RunData | pd.DataFrame) -> pd.DataFrame:
    """One row per group of `items` (index group_id) for one run.

    Columns: n_items, n_answered, n_correct, n_invalid, n_api_error, all_correct (answered and every item
    correct), category (StemBind decomposition of a complete stem, else None), and one bool column
    `p_<key>` per failure pattern of the family. Computed by core.outcomes (the Browse list's engine).
    """
    preds = run.preds if isinstance(run, RunData) else run
    lay = outcomes.layout(family, items)
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
    """The value of stratum `field` per item (as text; None when absent)."""
    if field == "n_images":
        return items["n_images"].map(lambda n: str(int(n)))
    return items["meta"].map(lambda m: str(m[field]) if isinstance(m, Mapping) and _scalar(m.get(field)) else None)


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


# --------------------------------------------------------------------------- one group's structure


def fq2_layout(members: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Where the views of an FQ2 triplet come from (000 §5), from the items' own images and positions.

    `members` maps variant (mss / del / add) to {"images": [hash...], "meta": {...}, "question": str}.
    Returns positions per variant (original view numbers I1..I5, from meta.original_positions or derived
    from the MSS order), the withheld view (hash and original position) of the deletion, the added view of
    the addition, and `ordinal_note`: a sentence when the deletion changes what "image k" of the question
    refers to, else None.
    """
    mss, dele, add = (members.get(v) for v in ("mss", "del", "add"))
    out: dict[str, Any] = {"positions": {}, "withheld": None, "added": None, "ordinal_note": None}
    if mss is None:
        return out

    def positions(m: Mapping[str, Any]) -> list[int]:
        pos = (m.get("meta") or {}).get("original_positions")
        if isinstance(pos, list) and len(pos) == len(m["images"]):
            return [int(p) for p in pos]
        return []

    for v, m in (("mss", mss), ("del", dele), ("add", add)):
        if m is not None:
            out["positions"][v] = positions(m)
    mss_pos = out["positions"]["mss"] or list(range(1, len(mss["images"]) + 1))
    out["positions"]["mss"] = mss_pos
    pos_of = dict(zip(mss["images"], mss_pos, strict=False))
    if dele is not None:
        gone = [h for h in mss["images"] if h not in set(dele["images"])]
        if gone:
            out["withheld"] = {"hash": gone[0], "position": pos_of.get(gone[0])}
        if not out["positions"]["del"]:
            out["positions"]["del"] = [pos_of.get(h) for h in dele["images"]]
    if add is not None:
        new = [h for h in add["images"] if h not in pos_of]
        if not out["positions"]["add"]:
            spare = next(p for p in itertools.count(1) if p not in set(mss_pos))  # I5 beside a 4-image MSS
            out["positions"]["add"] = [pos_of.get(h) or spare for h in add["images"]]
        if new:
            i = add["images"].index(new[0])
            out["added"] = {"hash": new[0], "position": out["positions"]["add"][i], "index": i}
    ordinal = _question_ordinal(mss)
    if ordinal and dele is not None:
        before = mss_pos[ordinal - 1] if ordinal <= len(mss_pos) else None
        del_pos = out["positions"]["del"]
        after = del_pos[ordinal - 1] if ordinal <= len(del_pos) else None
        if before != after:
            if after is None:
                out["ordinal_note"] = (f"The question names image {ordinal}: I{before} in the MSS item, but the "
                                       f"deletion item has only {len(del_pos)} image(s), so image {ordinal} no "
                                       "longer exists there.")
            else:
                out["ordinal_note"] = (f"The question names image {ordinal}: I{before} in the MSS item, but I{after} "
                                       "in the deletion item (the deletion shifts the ordinal reference).")
    return out


def _question_ordinal(m: Mapping[str, Any]) -> int | None:
    """The image ordinal the question refers to ("第2张", "image 2"), or meta.camera_ordinal."""
    import re

    meta = m.get("meta") or {}
    v = meta.get("camera_ordinal")
    if isinstance(v, int) and not isinstance(v, bool) and v > 0:
        return v
    q = str(m.get("question") or "")
    hit = re.search(r"第\s*(\d+)\s*张", q) or re.search(r"\bimage\s+(\d+)\b", q, flags=re.IGNORECASE)
    return int(hit.group(1)) if hit else None


def stage_of(family: str, kind: str) -> str | None:
    """The SPUR stage of a task kind (None for other families)."""
    return sp.STAGE_OF.get(kind) if family == "spur" else None


def ordered(values: Iterable[str], order: Sequence[str]) -> list[str]:
    """`values` with those in `order` first (in that order), then the rest sorted."""
    vals = list(dict.fromkeys(values))
    return [o for o in order if o in vals] + sorted(v for v in vals if v not in order)


# --------------------------------------------------------------------------- one group, without pandas


def group_outcomes(family: str, items: Sequence[Mapping[str, Any]],
                   preds: Sequence[Mapping[str, Any]]) -> dict[str, tuple[bool, bool]]:
    """item_id -> (answered, correct) for one group's items and one run's predictions of them.

    The same rules as item_outcomes (tests/test_groups.py checks both agree on the demo store), written over
    plain records so that opening a single group costs microseconds per run.
    """
    gold = {str(it["item_id"]): it["answer"] for it in items}
    by_item: dict[str, list[Mapping[str, Any]]] = {}
    for p in preds:
        by_item.setdefault(str(p["item_id"]), []).append(p)
    out: dict[str, tuple[bool, bool]] = {}
    every = family in ("stembind", "spur")
    for iid, g in gold.items():
        ps = by_item.get(iid, [])
        if not every:
            ps = [p for p in ps if int(p.get("rotation") or 0) == 0 and int(p.get("repeat") or 0) == 0][:1]
        if not ps:
            out[iid] = (False, False)
            continue
        out[iid] = (True, all(p.get("status") == "ok" and p.get("answer") == g for p in ps))
    return out


def stem_category(items: Sequence[Mapping[str, Any]], outcomes: Mapping[str, tuple[bool, bool]]) -> str | None:
    """The decomposition category of one stem (core.families.stembind.metrics.stem_table / decompose), None when the
    stem is not complete (no P, R or F item, or an item the run did not answer)."""
    kinds: dict[str, list[tuple[bool, bool]]] = {k: [] for k in sb.KINDS}
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
