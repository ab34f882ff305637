"""FrameEvidence (000) group layout for Browse and Compare: failure patterns and the FQ2 triplet's views."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from core import outcomes as core_outcomes
from core.families.frameevidence import metrics as fe
from core.families.frameevidence.vocab import FQ2_VARIANTS
from core.outcomes import GroupRules

# The item outcome is the metrics' (000 App. A): the rotation-0 / repeat-0 prediction; an item the run did not
# answer is "missing" (wrong in the metrics and in the turnover, "not answered" in the group marks).
EVERY_PREDICTION = False
UNANSWERED_IS_WRONG = True
PATTERNS = [
    ("fq1_0", "FQ1: 0 of 3 frames correct"),
    ("fq1_1", "FQ1: 1 of 3 frames correct"),
    ("fq1_2", "FQ1: 2 of 3 frames correct"),
    ("fq1_3", "FQ1: all 3 frames correct"),
    ("fq2_mss_del", "FQ2: MSS right, deletion wrong"),
    ("fq2_mss_add", "FQ2: MSS right, addition wrong"),
]


def _fe_patterns(out: pd.DataFrame, summ: pd.DataFrame, pats: dict[str, pd.Series]) -> None:
    idx = summ.index
    fq1 = out[out["kind"] == fe.FQ1]
    k1 = fq1.groupby("group_id")["correct"].sum()
    got1 = fq1.groupby("group_id")["answered"].any()
    for k in range(4):
        pats[f"fq1_{k}"] = ((k1 == k) & got1).reindex(idx, fill_value=False)
    fq2 = out[out["kind"] == fe.FQ2]
    if len(fq2):
        wide = fq2.pivot_table(index="group_id", columns="variant", values="correct", aggfunc="first")
        got = fq2.pivot_table(index="group_id", columns="variant", values="answered", aggfunc="first")
        for key, v in (("fq2_mss_del", "del"), ("fq2_mss_add", "add")):
            if "mss" in wide and v in wide:
                hit = wide["mss"].astype(bool) & ~wide[v].fillna(False).astype(bool) & got[v].fillna(False).astype(bool)
                pats[key] = hit.reindex(idx, fill_value=False)


def fq2_layout(members: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Where the views of an FQ2 triplet come from (000 §5), from the items' own images and positions.

    `members` maps variant (mss / del / add) to {"images": [hash...], "meta": {...}, "question": str}.
    Returns positions per variant (original view numbers I1..I5, from meta.original_positions or derived
    from the MSS order), the withheld view (hash and original position) of the deletion, the added view of
    the addition, and `ordinal_note`: a sentence when the deletion changes what "image k" of the question
    refers to, else None.
    """
    mss, dele, add = (members.get(v) for v in FQ2_VARIANTS)
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


def summary_patterns(lay: core_outcomes.Layout, s: core_outcomes.RunSummary) -> None:
    """FQ1: k of 3 frames right (groups with an answered FQ1 item); FQ2: the MSS item right and the deletion /
    addition item answered and wrong (the first item of each variant; a group without an MSS item counts its
    MSS side as right, as the pivot it replaces did)."""
    fq1 = lay.kind == fe.FQ1
    k1 = core_outcomes.per_group(lay, s.correct, fq1)
    got1 = core_outcomes.per_group(lay, s.answered, fq1) > 0
    for k in range(4):
        s.patterns[f"fq1_{k}"] = (k1 == k) & got1
    fq2 = lay.kind == fe.FQ2
    if not fq2.any():
        return
    firsts = {v: core_outcomes.first_of(lay, fq2 & (lay.variant == v)) for v in ("mss", "del", "add")}
    in_fq2 = np.bincount(lay.group[fq2], minlength=lay.n_groups) > 0
    if (firsts["mss"] < 0).all():
        return
    mss = firsts["mss"]
    mss_right = np.where(mss >= 0, s.correct[np.maximum(mss, 0)], True)
    for key, v in (("fq2_mss_del", "del"), ("fq2_mss_add", "add")):
        at = firsts[v]
        if (at < 0).all():
            continue
        has = at >= 0
        wrong = ~np.where(has, s.correct[np.maximum(at, 0)], False)
        got = np.where(has, s.answered[np.maximum(at, 0)], False)
        s.patterns[key] = in_fq2 & mss_right & wrong & got


RULES: GroupRules = GroupRules(summary_patterns, tuple(PATTERNS), EVERY_PREDICTION, UNANSWERED_IS_WRONG)
