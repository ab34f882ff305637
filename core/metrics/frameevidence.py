"""FrameEvidence metrics (paper 000: §3, §5, §6, §7, App. A, App. D).

Every function takes the items DataFrame (all splits; `split` picks the one scored, "test" by default) and
one or more `RunData`; see docs/metrics/frameevidence.md for each definition, its paper section, its edge
cases and its JSON key.

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
from typing import Any

import numpy as np
import pandas as pd

from core import stats
from core.errors import MetricUndefined
from core.metrics.common import (
    accuracy,
    join,
    joint_random_reference,
    macro_prf,
    memoized,
    pair_metrics,
    rotation_metrics,
    select,
    uniform_random_reference,
)
from core.schema import Rate, RunData

CLASSES = "ABCD"
FQ1, FQ2 = "FQ1", "FQ2"
FQ1_VARIANTS = ("cam", "obj", "scene")
FQ2_VARIANTS = ("mss", "del", "add")
VARIANTS = {FQ1: FQ1_VARIANTS, FQ2: FQ2_VARIANTS}
FRAME_PAIRS = (("cam", "obj"), ("cam", "scene"), ("obj", "scene"))
MISSING = "missing"  # status of an item the run never answered (counts as wrong)
OUTCOMES = ("correct", "insufficient", "wrong", "invalid")
# Strata of 000 §5 / App. D: key -> item column (n_images) or meta field.
STRATA = ("n_images", "relation", "scene", "source", "ordinal_change")
UNKNOWN = "unknown"
COMPARED = ("accuracy", "macro_f1", "fq1_gem", "nts", "dis")
SEED_METRICS = ("macro_precision", "macro_recall", "macro_f1", "accuracy", "fq1_gem", "nts", "dis")
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


def coverage(df: pd.DataFrame) -> Rate:
    """Items with a prediction (any status) / items of the split."""
    return Rate.of(int((df["status"] != MISSING).sum()), len(df), "items")


@memoized
def groups(df: pd.DataFrame, kind: str) -> pd.DataFrame:
    """One row per group of `kind` (index group_id) with, per variant v, the columns

    has_v (the group holds a v item), c_v (correct), ok_v (status ok), a_v (answer, None unless ok),
    gold_v, ins_v (insufficient-option letter), n_images_v, id_v (item id).
    """
    variants = VARIANTS[kind]
    sub = df[df["kind"] == kind]
    stray = sub[~sub["variant"].isin(variants)]
    if len(stray):
        raise MetricUndefined(f"{kind} item {stray['item_id'].iloc[0]!r} has variant {stray['variant'].iloc[0]!r}; "
                              f"expected one of {', '.join(variants)}")
    dup = sub.duplicated(["group_id", "variant"])
    if dup.any():
        row = sub[dup].iloc[0]
        raise MetricUndefined(f"group {row['group_id']!r} has more than one {row['variant']!r} item")
    index = pd.Index(sorted(sub["group_id"].unique()), name="group_id")
    n = len(index)
    at = index.get_indexer(sub["group_id"].to_numpy(dtype=object))
    variant = sub["variant"].to_numpy(dtype=object)

    def column(name: str) -> np.ndarray:
        if name in sub:
            return sub[name].to_numpy(dtype=object)
        return np.full(len(sub), None, dtype=object)

    status = column("status")
    ok_rows = status == "ok"
    correct = column("correct")
    answer = column("answer")
    cols: dict[str, Any] = {}
    for v in variants:
        rows = variant == v
        where = at[rows]
        for name in ("has", "c", "ok"):
            cols[f"{name}_{v}"] = np.zeros(n, dtype=bool)
        for name in ("a", "gold", "ins", "n_images", "meta", "id"):
            cols[f"{name}_{v}"] = np.full(n, None, dtype=object)
        cols[f"has_{v}"][where] = True
        cols[f"c_{v}"][where] = [bool(c) for c in correct[rows]]
        cols[f"ok_{v}"][where] = ok_rows[rows]
        cols[f"a_{v}"][where] = np.where(ok_rows[rows], answer[rows], None)
        for name, src in (("gold", "gold"), ("ins", "insufficient"), ("n_images", "n_images"), ("meta", "meta"),
                          ("id", "item_id")):
            cols[f"{name}_{v}"][where] = column(src)[rows]
    return pd.DataFrame(cols, index=index)


def _complete(g: pd.DataFrame, variants: Sequence[str]) -> pd.Series:
    if g.empty:
        return pd.Series(dtype=bool)
    has = np.logical_and.reduce([g[f"has_{v}"].to_numpy(dtype=bool) for v in variants])
    return pd.Series(has, index=g.index, copy=False)


def _joint_counts(g: pd.DataFrame, variants: Sequence[str], rows: np.ndarray | None = None) -> tuple[int, int]:
    """(groups with every variant correct, groups holding every variant), optionally within a row mask."""
    if g.empty:
        return 0, 0
    has = np.logical_and.reduce([g[f"has_{v}"].to_numpy(dtype=bool) for v in variants])
    if rows is not None:
        has = has & rows
    ok = np.logical_and.reduce([g[f"c_{v}"].to_numpy(dtype=bool) for v in variants])
    return int((has & ok).sum()), int(has.sum())


def _diff(a: Rate, b: Rate, reason: str) -> Rate:
    """a - b as a value-only Rate (a difference has no k / n)."""
    if a.value is None or b.value is None:
        return Rate.undefined(reason)
    return Rate(a.value - b.value)


# --------------------------------------------------------------------------- joint metrics (§3, Eq. 1)


def fq1_gem(df: pd.DataFrame) -> Rate:
    """FQ1 Group Exact Match: FQ1 groups with cam, obj and scene all correct / FQ1 groups (Eq. 1)."""
    # a complete group holds exactly one cam, obj and scene item (groups() refuses duplicates and strays), so
    # the groups whose FQ1 items are all correct are those with every variant correct
    return Rate.of(*_joint_counts(groups(df, FQ1), FQ1_VARIANTS), "FQ1 groups")


def nts(df: pd.DataFrame) -> Rate:
    """Necessity Transition Success: FQ2 groups with MSS and deletion both correct / FQ2 groups (§3)."""
    return Rate.of(*_joint_counts(groups(df, FQ2), ("mss", "del")), "FQ2 groups")


def dis(df: pd.DataFrame) -> Rate:
    """Distractor Invariance Success: FQ2 groups with MSS and addition both correct / FQ2 groups (§3)."""
    return Rate.of(*_joint_counts(groups(df, FQ2), ("mss", "add")), "FQ2 groups")


def variant_accuracy(df: pd.DataFrame) -> dict[str, Rate]:
    """Accuracy of each variant (cam, obj, scene, mss, del, add) over the items of the split."""
    variant, correct = df["variant"].to_numpy(dtype=object), df["correct"].to_numpy(dtype=bool)
    out = {}
    for v in (*FQ1_VARIANTS, *FQ2_VARIANTS):
        m = variant == v
        out[v] = Rate.of(int((m & correct).sum()), int(m.sum()), f"{v} items")
    return out


def kind_accuracy(df: pd.DataFrame) -> dict[str, Rate]:
    """Accuracy of FQ1 and of FQ2 items (000 §5 / Table 10 use FQ2-only accuracy over 144 items)."""
    kind, correct = df["kind"].to_numpy(dtype=object), df["correct"].to_numpy(dtype=bool)
    out = {}
    for k in (FQ1, FQ2):
        m = kind == k
        out[k] = Rate.of(int((m & correct).sum()), int(m.sum()), f"{k} items")
    return out


def independence(df: pd.DataFrame) -> dict[str, Rate]:
    """Independence reference (§6.2): the product of the variant accuracies of each joint metric.

    Variant accuracies are taken over the groups the joint metric counts (complete groups), so the
    reference and the joint rate share their groups: fq1_gem -> acc(cam) acc(obj) acc(scene),
    nts -> acc(mss) acc(del), dis -> acc(mss) acc(add).
    """
    out: dict[str, Rate] = {}
    for key, kind, variants in (("fq1_gem", FQ1, FQ1_VARIANTS), ("nts", FQ2, ("mss", "del")),
                                ("dis", FQ2, ("mss", "add"))):
        g = groups(df, kind)
        done = _complete(g, variants).to_numpy(dtype=bool)
        if not done.any():
            out[key] = Rate.undefined(f"no {kind} groups with {' and '.join(variants)} items")
            continue
        out[key] = Rate(float(np.prod([g[f"c_{v}"].to_numpy(dtype=bool)[done].mean() for v in variants])))
    return out


@memoized
def _uniform_random(items_scope: pd.DataFrame) -> dict[str, Rate]:
    return _uniform_random_of(items_scope)


def uniform_random(items_scope: pd.DataFrame) -> dict[str, Rate]:
    """See _uniform_random_of (shared between the runs of one split inside common.shared_work)."""
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


def core_metrics(df: pd.DataFrame) -> dict[str, Rate]:
    """accuracy, macro P / R / F1 over A-D, fq1_gem, nts, dis of one joined frame."""
    return {key: dataclasses.replace(rate) for key, rate in _core_metrics(df).items()}


@memoized
def _core_metrics(df: pd.DataFrame) -> dict[str, Rate]:
    return {"accuracy": accuracy(df) if len(df) else Rate.of(0, 0, "items"), **macro_prf(df, CLASSES),
            "fq1_gem": fq1_gem(df), "nts": nts(df), "dis": dis(df)}


# --------------------------------------------------------------------------- insufficiency (Table 8, §7)


def insufficiency(df: pd.DataFrame) -> dict[str, Any]:
    """Insufficiency responses per FQ2 condition and insufficiency precision / recall (000 Table 8, §7).

    counts.v = valid answers equal to meta.insufficient_option among the v items (v = mss, del, add), out
    of all v items (invalid ones retained in the denominator, as Table 8); invalid.v counts the not-ok
    responses. recall = deletion items answered insufficient / deletion items; precision = deletion items
    answered insufficient / all insufficiency responses (MSS + deletion + addition).
    """
    fq2 = df[df["kind"] == FQ2]
    if fq2.empty:
        reason = "no FQ2 items"
        return {"counts": Rate.undefined(reason), "invalid": Rate.undefined(reason),
                "recall": Rate.undefined(reason), "precision": Rate.undefined(reason)}
    lacking = fq2[fq2["insufficient"].isna()]
    if len(lacking):
        raise MetricUndefined(f"FQ2 item {lacking['item_id'].iloc[0]!r} has no meta.insufficient_option")
    chose = (fq2["status"] == "ok") & (fq2["answer"] == fq2["insufficient"])
    by = {v: fq2["variant"] == v for v in FQ2_VARIANTS}
    counts = {v: Rate.of(int((chose & by[v]).sum()), int(by[v].sum()), f"{v} items") for v in FQ2_VARIANTS}
    invalid = {v: int(((fq2["status"] != "ok") & by[v]).sum()) for v in FQ2_VARIANTS}
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


@memoized
def _stratum_cache() -> dict[tuple[int, str], str]:
    """(id of an item's meta dict, key) -> its stratum value, inside common.shared_work (where the items frame
    holding the dicts stays alive, so ids are not reused); a fresh dict outside it."""
    return {}


def _meta_values(metas: Iterable[Any], key: str) -> np.ndarray:
    """_value_key(meta[key]) of each meta dict, looked up once per dict and key while work is shared."""
    cache = _stratum_cache()
    out = []
    for m in metas:
        k = (id(m), key)
        value = cache.get(k)
        if value is None:
            value = cache[k] = _value_key(_meta(m, key))
        out.append(value)
    return np.array(out, dtype=object)


def _group_stratum(g: pd.DataFrame, kind: str, key: str) -> np.ndarray:
    """A group's stratum: the anchor item's (cam / mss) value; for meta fields the first variant that has it."""
    variants = VARIANTS[kind]
    if key == "n_images":
        return np.array([_value_key(v) for v in g[f"n_images_{variants[0]}"].to_numpy()], dtype=object)
    out = np.full(len(g), UNKNOWN, dtype=object)
    for v in reversed(variants):  # the first variant with a value wins
        got = _meta_values(g[f"meta_{v}"].to_numpy(), key)
        known = got != UNKNOWN
        out[known] = got[known]
    return out


def _joint_flags(g: pd.DataFrame, variants: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per group: (holds every variant and all are correct, holds every variant)."""
    if g.empty:
        return np.zeros(0, dtype=bool), np.zeros(0, dtype=bool)
    has = np.logical_and.reduce([g[f"has_{v}"].to_numpy(dtype=bool) for v in variants])
    ok = np.logical_and.reduce([g[f"c_{v}"].to_numpy(dtype=bool) for v in variants])
    return has & ok, has


def _stratum_sort_key(s: str) -> tuple[bool, int, str]:
    return (s == UNKNOWN, len(s) if s.isdigit() else 0, s)


def strata(df: pd.DataFrame, keys: Iterable[str] = STRATA) -> dict[str, Any]:
    """Accuracy and joint metrics per stratum value (000 §5 Table 3, App. D Tables 15-18).

    Item accuracy uses each item's own value (n_images: the images it shows; a meta field missing on the
    item falls back to its group's value). Joint metrics use the group's value: n_images of the cam / MSS
    item (the evidence-set size of Table 16), a meta field from the first variant that has it (cam, obj,
    scene / mss, del, add). Items or groups without the field are under "unknown"; a field that no item
    has gives a reason.
    """
    g1, g2 = groups(df, FQ1), groups(df, FQ2)
    joint = {"fq1_gem": (g1, _joint_flags(g1, FQ1_VARIANTS), FQ1, "FQ1 groups"),
             "nts": (g2, _joint_flags(g2, ("mss", "del")), FQ2, "FQ2 groups"),
             "dis": (g2, _joint_flags(g2, ("mss", "add")), FQ2, "FQ2 groups")}
    correct = df["correct"].to_numpy(dtype=bool)
    group_ids = df["group_id"].to_numpy(dtype=object)
    out: dict[str, Any] = {}
    for key in keys:
        if key == "n_images":
            item_values = (np.array([_value_key(v) for v in df["n_images"].to_numpy()], dtype=object)
                           if "n_images" in df else np.full(len(df), UNKNOWN, dtype=object))
        else:
            item_values = _meta_values(df["meta"].to_numpy(), key)
        group_values = {kind: _group_stratum(g, kind, key) if len(g) else np.empty(0, dtype=object)
                        for kind, g in ((FQ1, g1), (FQ2, g2))}
        if key != "n_images":
            by_group: dict[Any, str] = {}  # the FQ1 value first, as the group tables are concatenated
            for kind, g in ((FQ1, g1), (FQ2, g2)):
                for gid, value in zip(g.index, group_values[kind], strict=True):
                    by_group.setdefault(gid, value)
            unknown = item_values == UNKNOWN
            if by_group and unknown.any():
                item_values[unknown] = [by_group.get(gid, UNKNOWN) for gid in group_ids[unknown]]
        if bool((item_values == UNKNOWN).all()):
            out[key] = Rate.undefined(f"no item has {key if key == 'n_images' else 'meta.' + key}")
            continue
        values = sorted(set(item_values) | set(group_values[FQ1]) | set(group_values[FQ2]), key=_stratum_sort_key)
        code = {v: i for i, v in enumerate(values)}
        m = len(values)
        item_code = np.fromiter((code[v] for v in item_values), dtype=np.int64, count=len(item_values))
        n_items = np.bincount(item_code, minlength=m)
        k_items = np.bincount(item_code, weights=correct, minlength=m)
        counts = {}
        for metric, (g, (k_flag, n_flag), kind, _) in joint.items():
            gcode = np.fromiter((code[v] for v in group_values[kind]), dtype=np.int64, count=len(g))
            counts[metric] = (np.bincount(gcode, weights=k_flag, minlength=m), np.bincount(gcode, weights=n_flag,
                                                                                            minlength=m))
        table: dict[str, dict[str, Rate]] = {}
        for i, value in enumerate(values):
            table[value] = {"accuracy": Rate.of(int(k_items[i]), int(n_items[i]), "items")}
            for metric, (_, _, _, what) in joint.items():
                table[value][metric] = Rate.of(int(counts[metric][0][i]), int(counts[metric][1][i]), what)
        out[key] = table
    return out


# --------------------------------------------------------------------------- transitions (Figure 5, §6.3)


def _outcome(g: pd.DataFrame, v: str) -> np.ndarray:
    """Codes into OUTCOMES: correct / insufficient (wrong, chose the insufficient option) / wrong (another
    letter) / invalid (invalid, api_error or missing)."""
    ok = g[f"ok_{v}"].to_numpy(dtype=bool)
    chose_ins = ok & (g[f"a_{v}"].to_numpy(dtype=object) == g[f"ins_{v}"].to_numpy(dtype=object))
    out = np.full(len(g), OUTCOMES.index("wrong"), dtype=np.int64)
    out[chose_ins] = OUTCOMES.index("insufficient")
    out[g[f"c_{v}"].to_numpy(dtype=bool)] = OUTCOMES.index("correct")
    out[~ok] = OUTCOMES.index("invalid")
    return out


def transitions(df: pd.DataFrame) -> dict[str, Any] | Rate:
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
    col = {c: g[c].to_numpy(dtype=bool) for c in ("has_mss", "c_mss", "ok_mss")}
    a_mss = g["a_mss"].to_numpy(dtype=object)
    has_mss = col["has_mss"]
    out["initial"] = Rate.of(int(col["c_mss"][has_mss].sum()), int(has_mss.sum()), "FQ2 groups")
    mss_outcome = _outcome(g, "mss")
    n_out = len(OUTCOMES)
    for v in ("del", "add"):
        done = has_mss & g[f"has_{v}"].to_numpy(dtype=bool)
        base = col["c_mss"][done]
        c_v = g[f"c_{v}"].to_numpy(dtype=bool)[done]
        out["conditional"][v] = Rate.of(int((base & c_v).sum()), int(base.sum()), "MSS-correct groups")
        kept = (col["ok_mss"][done] & g[f"ok_{v}"].to_numpy(dtype=bool)[done]
                & (a_mss[done] == g[f"a_{v}"].to_numpy(dtype=object)[done]))
        out["answer_kept"][v] = Rate.of(int(kept.sum()), int(done.sum()), "FQ2 groups")
        cells = np.bincount(mss_outcome[done] * n_out + _outcome(g, v)[done], minlength=n_out * n_out)
        out["table"][v] = {a: {b: int(cells[i * n_out + j]) for j, b in enumerate(OUTCOMES)}
                           for i, a in enumerate(OUTCOMES)}
    return out


# --------------------------------------------------------------------------- pairwise frames (§7, Figure 4)


def pairwise_frames(df: pd.DataFrame) -> dict[str, Any] | Rate:
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
    g = g[_complete(g, FQ1_VARIANTS)] if len(g) else g
    if g.empty:
        return Rate.undefined("no complete FQ1 groups")
    col = {c: g[c].to_numpy() for c in g.columns}
    per_pair: dict[str, dict[str, np.ndarray]] = {}
    for u, v in FRAME_PAIRS:
        both_ok = col[f"ok_{u}"].astype(bool) & col[f"ok_{v}"].astype(bool)
        same = both_ok & (col[f"a_{u}"] == col[f"a_{v}"])
        per_pair[f"{u}-{v}"] = {
            "differ": col[f"gold_{u}"] != col[f"gold_{v}"], "repeated": same, "changed": both_ok & ~same,
            "invalid": ~both_ok, "both_correct": col[f"c_{u}"].astype(bool) & col[f"c_{v}"].astype(bool)}

    def rates(parts: list[dict[str, np.ndarray]]) -> dict[str, Rate]:
        n = sum(int(p["differ"].sum()) for p in parts)
        return {c: Rate.of(sum(int((p[c] & p["differ"]).sum()) for p in parts), n,
                           "pairs with different gold directions")
                for c in ("repeated", "changed", "invalid", "both_correct")}

    pairs = list(per_pair.values())
    k_gem = int(np.logical_and.reduce([col[f"c_{v}"].astype(bool) for v in FQ1_VARIANTS]).sum())
    return {**rates(pairs), "pairs": sum(int(p["differ"].sum()) for p in pairs),
            "same_gold_pairs": sum(int((~p["differ"]).sum()) for p in pairs),
            "triplets_correct": Rate.of(k_gem, len(g), "FQ1 groups"),
            "per_pair": {name: rates([p]) for name, p in per_pair.items()}}


# --------------------------------------------------------------------------- rotations and repeats (§6.4, Table 7)


def _rotations(run: RunData) -> list[int]:
    preds = _preds(run)
    found = sorted(int(r) for r in preds["rotation"].dropna().unique())
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
    df = pd.concat([frame(items, run, split, rotation=r) for r in rots], ignore_index=True)
    df = df[(df["status"] != MISSING) | (df["rotation"] == 0)]  # an unanswered item stays in N once
    return rotation_metrics(df, rots)


def repeat_table(items: pd.DataFrame, run: RunData, split: str | None = "test") -> dict[str, Any] | Rate:
    """Same-order repeat table (000 Table 7 and the paired rows of Table 13).

    Pairs the rotation-0 / repeat-0 answers with (a) each same-order repeat at rotation 0 ("repeat1",
    "repeat2", ...) and (b) each rotation r at repeat 0 ("R1".."R3"): at_least_one_correct, both_correct,
    consistency (both valid, same answer meaning), consistently_wrong, changed (common.pair_metrics), over
    every item of the split. differences.Rr = first repeat pair minus the R0-Rr pair for both_correct and
    consistency (Table 13). Undefined when the run has no same-order repeat.
    """
    preds = _preds(run)
    reps = sorted(int(r) for r in preds.loc[preds["rotation"] == 0, "repeat"].dropna().unique() if r != 0)
    if not reps:
        return Rate.undefined("run has no same-order repeat (rotation 0, repeat > 0)")
    base = frame(items, run, split)
    out: dict[str, Any] = {f"repeat{r}": pair_metrics(base, frame(items, run, split, repeat=r)) for r in reps}
    rots = [r for r in sorted(int(x) for x in preds.loc[preds["repeat"] == 0, "rotation"].dropna().unique()) if r]
    for r in rots:
        out[f"R{r}"] = pair_metrics(base, frame(items, run, split, rotation=r))
    first = out[f"repeat{reps[0]}"]
    out["differences"] = {f"R{r}": {m: _diff(first[m], out[f"R{r}"][m], "a pair rate is undefined")
                                    for m in ("both_correct", "consistency")} for r in rots}
    return out


# --------------------------------------------------------------------------- two runs: turnover, decomposition


def turnover(items: pd.DataFrame, run_a: RunData, run_b: RunData, split: str | None = "test",
             a: tuple[int, int] = (0, 0), b: tuple[int, int] = (0, 0)) -> dict[str, Any]:
    """Item turnover from run_a to run_b (000 §6.2: "48 newly correct and 43 newly incorrect answers").

    a / b select (rotation, repeat). Over every item of the split: both_correct, newly_correct (wrong in a,
    correct in b), newly_incorrect, both_wrong, changed_answers (not both valid with the same letter),
    net = newly_correct - newly_incorrect (an int) and change = accuracy_b - accuracy_a.
    """
    fa = frame(items, run_a, split, rotation=a[0], repeat=a[1])
    fb = frame(items, run_b, split, rotation=b[0], repeat=b[1])
    # the items of both frames (an inner join on item_id; each frame has one row per item)
    at = pd.Index(fb["item_id"].to_numpy(dtype=object), dtype=object).get_indexer(fa["item_id"].to_numpy(dtype=object))
    keep = at >= 0
    at = at[keep]
    n = int(keep.sum())
    ca = fa["correct"].to_numpy(dtype=bool)[keep]
    cb = fb["correct"].to_numpy(dtype=bool).take(at)
    answer_a, answer_b = fa["answer"].to_numpy(dtype=object)[keep], fb["answer"].to_numpy(dtype=object).take(at)
    same = ((fa["status"].to_numpy(dtype=object)[keep] == "ok") & (fb["status"].to_numpy(dtype=object).take(at) == "ok")
            & (answer_a == answer_b) & pd.notna(answer_a))
    acc_a, acc_b = Rate.of(int(ca.sum()), n, "items"), Rate.of(int(cb.sum()), n, "items")
    return {
        "both_correct": Rate.of(int((ca & cb).sum()), n, "items"),
        "newly_correct": Rate.of(int((~ca & cb).sum()), n, "items"),
        "newly_incorrect": Rate.of(int((ca & ~cb).sum()), n, "items"),
        "both_wrong": Rate.of(int((~ca & ~cb).sum()), n, "items"),
        "changed_answers": Rate.of(int((~same).sum()), n, "items"),
        "net": int((~ca & cb).sum() - (ca & ~cb).sum()),
        "accuracy_a": acc_a, "accuracy_b": acc_b,
        "change": _diff(acc_b, acc_a, "no items"),
    }


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
    ga, gb = groups(frame(items, run_a, split), FQ2), groups(frame(items, run_b, split), FQ2)
    if ga.empty:
        reason = "no FQ2 groups"
        return {"nts": Rate.undefined(reason), "dis": Rate.undefined(reason)}
    gb = gb.reindex(ga.index)
    out: dict[str, Any] = {}
    for key, v in (("nts", "del"), ("dis", "add")):
        done = _complete(ga, ("mss", v))
        if not done.any():
            out[key] = Rate.undefined(f"no FQ2 groups with mss and {v} items")
            continue
        d = done.to_numpy(dtype=bool)

        def flag(t: pd.DataFrame, col: str, d: np.ndarray = d) -> np.ndarray:
            """The column on the groups counted; a group the other run lacks (NaN after reindex) is False."""
            values = t[col].to_numpy(dtype=object)[d]
            return np.array([x is not None and x == x and bool(x) for x in values], dtype=bool)

        ma, mb, va, vb = flag(ga, "c_mss"), flag(gb, "c_mss"), flag(ga, f"c_{v}"), flag(gb, f"c_{v}")
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
        g = g[done]
        ok = g[[f"c_{v}" for v in variants]].all(axis=1).astype(float)
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
            by: str = "group_id") -> dict[str, Any]:
    """Paired differences run_b - run_a of accuracy, macro_f1, fq1_gem, nts and dis with percentile
    cluster-bootstrap intervals (000 §6.2 "paired 95% interval", App. D; clusters = groups by default, or
    any item column / "meta.<field>"). Both runs are resampled with the same clusters in each draw;
    ratios are item- (group-) weighted sums over the drawn clusters. Each metric gives {"a", "b",
    "difference"} with the interval in difference.ci; a metric undefined for either run gives a reason.
    """
    fa, fb = frame(items, run_a, split), frame(items, run_b, split)
    if fa.empty:
        reason = f"no items in split {split!r}"
        return {m: Rate.undefined(reason) for m in COMPARED}
    fb = fb.set_index("item_id").loc[fa["item_id"]].reset_index()
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
    out: dict[str, Any] = {"clusters": len(clusters), "draws": draws, "seed": seed, "level": level}
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
    """Mean and sample SD (ddof 1) over runs that differ only in seed (000 Table 11, Table 6a).

    Each metric's mean and SD are taken over the unrounded per-run rates (stats.mean_sd); values lists
    the per-run rates in run order. Runs whose settings differ in a key outside `ignore` (and bookkeeping
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
    per_run = [core_metrics(frame(items, r, split)) for r in runs]
    out: dict[str, Any] = {"runs": [r.name for r in runs], "seeds": seeds}
    for m in SEED_METRICS:
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


def _partner(run: RunData, others: Sequence[RunData], mode: str) -> RunData | str:
    """The run with the same model / strategy / shots in input mode `mode`, or why there is none."""
    def ident(r: RunData) -> tuple[Any, ...]:
        cfg = r.config or {}
        return cfg.get("model"), cfg.get("strategy") or "direct", int(cfg.get("shots") or 0)

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
        mine, theirs = core_metrics(frame(items, run, split)), core_metrics(frame(items, partner, split))
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
          **_: Any) -> dict[str, Any]:
    """Every FrameEvidence metric of one run on one split (SPEC §5); see docs/metrics/frameevidence.md."""
    others = list(others or [])
    scope = _scope(items, split)
    df = frame(items, run, split)
    out: dict[str, Any] = {"split": split, "items": len(df), "coverage": coverage(df)}
    out.update(core_metrics(df))
    out["independence"] = independence(df)
    out["variant_accuracy"] = variant_accuracy(df)
    out["kind_accuracy"] = kind_accuracy(df)
    out["reference"] = {"uniform_random": uniform_random(scope)}
    rot = rotations(items, run, split)
    out.update({k: rot[k] for k in ("vanilla", "circular", "consistency", "mean_rotation", "drop")})
    out["per_rotation"] = rot["per_rotation"]
    out["repeats"] = repeat_table(items, run, split)
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
