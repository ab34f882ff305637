"""FrameEvidence: the reference-frame analyses of one run: strata (§5, App. D), transitions (Figure 5,
§6.3), pairwise frames (§7, Figure 4)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeAlias

import numpy as np

from core.families.frameevidence.outcomes import (
    Frame,
    Table,
    _all,
    _complete,
    _group_layout,
    _joint_flags,
    _meta,
    _table,
    groups,
)
from core.families.frameevidence.vocab import FQ1, FQ1_VARIANTS, FQ2, VARIANTS
from core.metrics.common import (
    memoized,
)
from core.schema import Rate

FRAME_PAIRS = (("cam", "obj"), ("cam", "scene"), ("obj", "scene"))
OUTCOMES = ("correct", "insufficient", "wrong", "invalid")
# Strata of 000 §5 / App. D: key -> item column (n_images) or meta field.
STRATA = ("n_images", "relation", "scene", "source", "ordinal_change")
UNKNOWN = "unknown"

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
