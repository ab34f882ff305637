"""FrameEvidence: accuracy, macro F1 and the joint metrics of one run (paper 000 §3, Eq. 1; Table 8, §7):
FQ1-GEM, NTS, DIS, per-variant and per-kind accuracy, the independence baseline, the uniform-random and
always-insufficient references, the insufficiency table."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd

from core.errors import MetricUndefined
from core.families.frameevidence.outcomes import (
    Frame,
    _complete,
    _group_layout,
    _item_columns,
    _joint_counts,
    _table,
    _valid_answers,
    groups,
)
from core.families.frameevidence.vocab import CLASSES, FQ1, FQ1_VARIANTS, FQ2, FQ2_VARIANTS
from core.metrics.common import (
    joint_random_reference,
    macro_prf_arrays,
    memoized,
    uniform_random_reference,
)
from core.schema import Rate

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
