"""StemBind trace metrics (002 §3.3, §4.4, App. A.3, C.3, D.4): L2 StepAcc and the first-failure profile of
judged traces, L3 AttrTag, output-token statistics and the error audit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from core.families.stembind.outcomes import (
    _config,
    _joined,
    _meta,
    _pred_rows,
    _rate,
)
from core.families.stembind.stages import _flag, first_failure, inconsistent
from core.families.stembind.vocab import (
    NO_FAILURE,
    STAGES,
)
from core.schema import Rate, RunData

# App. D.4, Table 25: first decisive error of a trace.
ERROR_CATEGORIES = (
    "correspondence_drift", "rule_mutation", "distractor_capture", "late_answer_switching",
    "perception_error", "rule_absent",
)
TERCILES = ("short", "middle", "long")

# --------------------------------------------------------------------------- L2 / L3 (§3.3, §4.4, A.3, C.3)


def _trace_keys(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.copy()
    for col in ("rotation", "repeat"):
        if col not in frame:
            frame[col] = 0
        frame[col] = frame[col].fillna(0).astype(int)
    frame["item_id"] = frame["item_id"].astype(str)
    return frame


def _pred_correct(items: pd.DataFrame, run: RunData) -> pd.DataFrame:
    joined = _trace_keys(_joined(items, run))
    return joined[["item_id", "rotation", "repeat", "correct", *[c for c in ("tokens", "trace") if c in joined]]]


def l2_profile(items: pd.DataFrame, run: RunData, judgements: pd.DataFrame | None) -> dict[str, Any]:
    """L2 StepAcc per stage, first-failure histogram (all judged traces and F-wrong traces), share of traces
    with inconsistent flags, and L3 AttrTag (first failure x perception load)."""
    if judgements is None or len(judgements) == 0:
        return {"reason": "no trace judgements for this run"}
    j = _trace_keys(judgements)
    if "status" in j:
        j = j[j["status"].fillna("ok") == "ok"]
    f_items = items[items["kind"] == "F"]
    j = j[j["item_id"].isin(set(f_items["item_id"]))]
    if len(j) == 0:
        return {"reason": "no usable judgement of an F item"}
    flags = [[_flag(v) for v in row] for row in j[list(STAGES)].itertuples(index=False, name=None)]
    ff = [first_failure(fl) for fl in flags]
    n = len(flags)
    step_acc = {}
    for i, stage in enumerate(STAGES):
        known = [bool(fl[i]) for fl in flags if fl[i] is not None]
        step_acc[stage] = _rate(sum(known), len(known), f"traces with a known {stage} flag")
    j = j.assign(first_failure_rule=ff)
    correct = _pred_correct(items, run)
    j = j.merge(correct[["item_id", "rotation", "repeat", "correct"]], on=["item_id", "rotation", "repeat"],
                how="left")
    wrong = j[j["correct"].eq(False)]
    order = [*STAGES, NO_FAILURE]
    out: dict[str, Any] = {
        "n_traces": n,
        "step_acc": step_acc,
        "first_failure": {s: Rate.of(ff.count(s), n) for s in order},
        "first_failure_f_wrong": {
            s: _rate(int((wrong["first_failure_rule"] == s).sum()), len(wrong), "F-wrong judged traces")
            for s in STAGES
        },
        "inconsistent": Rate.of(sum(inconsistent(fl) for fl in flags), n),
    }
    if "first_failure" in j:
        given = j["first_failure"].map(lambda v: NO_FAILURE if v is None or v != v or v == "" else str(v))
        out["first_failure_disagreements"] = int((given != j["first_failure_rule"]).sum())
    load = j["item_id"].map(items.set_index("item_id")["meta"].map(lambda m: _meta(m, "perception_load")))
    tab = pd.crosstab(load.fillna("unknown"), j["first_failure_rule"])
    out["attr_tag"] = {
        str(lv): {s: int(tab.loc[lv, s]) if s in tab.columns else 0 for s in order} for lv in tab.index
    }
    return out


# --------------------------------------------------------------------------- tokens and error audit (D.4)


def token_stats(items: pd.DataFrame, run: RunData) -> dict[str, Any]:
    """Output-token mean, p95 (linear interpolation) and cap-hit rate (tokens >= max_tokens), Table 24."""
    preds = run.preds
    has = preds is not None and len(preds) and "tokens" in preds
    if has:
        in_scope = _pred_rows(items, run) >= 0
        column = preds["tokens"]
        if column.dtype == np.float64:  # the loaders' column: the same values without a Series per step
            tokens = column.to_numpy()[in_scope]
        else:
            tokens = pd.to_numeric(column[in_scope], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    else:
        tokens = np.empty(0, dtype=float)
    known = tokens[~np.isnan(tokens)]
    if len(known) == 0:
        return {"reason": "the run records no output-token counts"}
    cap = _config(run, "max_tokens")
    out: dict[str, Any] = {
        "n": len(known),
        "mean": float(known.sum() / np.float64(len(known))),  # as pandas' mean: the sum over the count
        "p95": float(np.percentile(known, 95)),
        "max_tokens": cap,
    }
    if cap:
        out["cap_hit"] = Rate.of(int((known >= float(cap)).sum()), len(known))
    else:
        out["cap_hit"] = Rate.undefined("the run config has no max_tokens")
    return out


def error_audit(items: pd.DataFrame, run: RunData | None, labels: pd.DataFrame) -> dict[str, Any]:
    """First decisive error per 100 F items (D.4, Table 25), overall and by trace-length tercile.

    `labels`: item_id, rotation, repeat (default 0), category (empty or None = no error on that trace).
    Every labeled F trace counts in the denominator. Terciles: traces ranked by output tokens (or by trace
    characters when tokens are missing) split into three equal-count thirds; needs `run`.
    """
    if labels is None or len(labels) == 0 or "category" not in labels:
        return {"reason": "no error-audit labels with a category"}
    lab = _trace_keys(labels)
    lab = lab[lab["item_id"].isin(set(items.loc[items["kind"] == "F", "item_id"]))]
    if len(lab) == 0:
        return {"reason": "no error-audit label on an F item"}
    if lab.duplicated(["item_id", "rotation", "repeat"]).any():
        return {"reason": "several labels for one trace; pass the labels of one annotator (or a consensus)"}
    lab = lab.assign(category=lab["category"].map(lambda v: None if v is None or v != v or v == "" else str(v)))
    cats = [*ERROR_CATEGORIES, *sorted(set(lab["category"].dropna()) - set(ERROR_CATEGORIES))]
    out: dict[str, Any] = _per_100(lab, cats)
    if run is None:
        out["by_tercile"] = {"reason": "no run given for trace lengths"}
        return out
    preds = _pred_correct(items, run)
    lab = lab.merge(preds, on=["item_id", "rotation", "repeat"], how="left")
    length = pd.to_numeric(lab.get("tokens"), errors="coerce") if "tokens" in lab else None
    if length is None or length.isna().any():
        if "trace" in lab and lab["trace"].map(lambda t: isinstance(t, str)).all():
            length = lab["trace"].str.len().astype(float)
        else:
            out["by_tercile"] = {"reason": "trace lengths unknown (no tokens and no trace text)"}
            return out
    rank = np.empty(len(lab), dtype=int)
    rank[np.argsort(length.to_numpy(dtype=float), kind="stable")] = np.arange(len(lab))
    tercile = (rank * 3) // len(lab)
    out["by_tercile"] = {TERCILES[t]: _per_100(lab[tercile == t], cats) for t in range(3) if (tercile == t).any()}
    return out


def _per_100(lab: pd.DataFrame, cats: list[str]) -> dict[str, Any]:
    n = len(lab)
    counts = lab["category"].value_counts()
    return {
        "n_items": n,
        "per_100": {c: 100.0 * int(counts.get(c, 0)) / n for c in cats},
        "rates": {c: Rate.of(int(counts.get(c, 0)), n) for c in cats},
        "no_error": Rate.of(int(lab["category"].isna().sum()), n),
    }
