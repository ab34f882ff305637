"""SPUR metrics (paper 001: §2.1, §2.3, §3, Tables 2-5, Figure 5, App. C.2).

Groups are figures (`group_id`). See docs/METRICS.md (SPUR) for each definition and its edge cases.

Item outcome. As in StemBind, an item with several predictions (rotations, repeats) counts as correct only
when every one of them is correct; items without a prediction are left out of every rate.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from core import stats
from core.catalogue import Scores
from core.errors import MetricUndefined
from core.families.protocol import ScoreOptions
from core.families.spur import catalogue as c
from core.families.spur.vocab import STAGE_OF, STAGES, TASKS
from core.metrics.common import join, memoized
from core.schema import Rate, RunData

STAINING = ("Cell", "Tissue", "Microorganism", "Subcellular/Organelle")
PARADIGMS = ("CE", "AE", "OS", "IS", "P&I")
# §2.3: GPT-4o answered each question text-only 10 times; >= 5 correct was discarded.
SHORTCUT_RUNS = 10
SHORTCUT_K = 5
DEFAULT_SEED = stats.DEFAULT_SEED

_OUTCOME_COLUMNS = ["item_id", "group_id", "kind", "stage", "correct", "n_preds"]


def _meta(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, Mapping) else None


@memoized
def item_outcomes(items: pd.DataFrame, run: RunData) -> pd.DataFrame:
    """One row per answered item: group_id, kind (task), stage, correct (all of its predictions correct)."""
    joined = join(items, run.preds)
    if joined is None or len(joined) == 0:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in _OUTCOME_COLUMNS})
    out = joined.groupby("item_id", sort=False).agg(
        correct=("correct", "all"), n_preds=("correct", "size")).reset_index()
    info = items.set_index("item_id")
    out["group_id"] = out["item_id"].map(info["group_id"])
    out["kind"] = out["item_id"].map(info["kind"])
    out["stage"] = out["kind"].map(STAGE_OF)
    out["correct"] = out["correct"].astype(bool)
    return out[_OUTCOME_COLUMNS]


def _rate(sub: pd.DataFrame, what: str) -> Rate:
    """Accuracy of the rows of `sub` (k correct / n answered), or a reason when there are none."""
    n = len(sub)
    if n == 0:
        return Rate(None, 0, 0, reason=f"no {what} to count")
    return Rate.of(int(sub["correct"].sum()), n)


def accuracies(outcomes: pd.DataFrame, seed: int | None = None) -> dict[str, Any]:
    """Per-task accuracy, stage micro averages and the overall micro average (Table 3).

    With `seed`, every rate gets a percentile cluster-bootstrap CI over figures (one shared resampling).
    """
    masks: list[tuple[str, pd.Series]] = [(t, outcomes["kind"] == t) for t in TASKS]
    masks += [(s, outcomes["stage"] == s) for s in STAGES]
    # Table 3's Overall is the micro average over all items of the seven tasks (it is rebuilt from the
    # per-task numbers that way, not as the mean of the three stage averages).
    masks.append(("overall", outcomes["stage"].notna()))
    rates = [_rate(outcomes[m], f"{name} items" if name != "overall" else "items") for name, m in masks]
    defined = [i for i, rate in enumerate(rates) if rate.value is not None]
    if seed is not None and defined:
        correct = outcomes["correct"].astype(bool)
        k = pd.DataFrame({i: (masks[i][1] & correct).astype(int) for i in defined})
        n = pd.DataFrame({i: masks[i][1].astype(int) for i in defined})
        groups = outcomes["group_id"].to_numpy()
        lo, hi = stats.cluster_bootstrap_many(
            k.groupby(groups).sum().to_numpy(), n.groupby(groups).sum().to_numpy(), seed=seed)
        for j, i in enumerate(defined):
            rates[i].ci = (float(lo[j]), float(hi[j]))
    named = dict(zip([name for name, _ in masks], rates, strict=True))
    return {
        "tasks": {t: named[t] for t in TASKS},
        **{s: named[s] for s in STAGES},
        "overall": named["overall"],
    }


def _sort_key(value: Any) -> tuple:
    return (0, float(value), "") if isinstance(value, (int, float)) else (1, 0.0, str(value))


def _by_meta(items: pd.DataFrame, outcomes: pd.DataFrame, key: str, order: Iterable[Any] = ()) -> dict[str, Rate]:
    """Accuracy per value of meta[key] over `outcomes` (items without the key are left out); values in
    `order` first, then the others sorted (numbers numerically)."""
    lookup = {i: _meta(m, key) for i, m in zip(items["item_id"], items["meta"], strict=True)}
    values = pd.Series([lookup.get(i) for i in outcomes["item_id"]], index=outcomes.index, dtype=object)
    present = [v for v in dict.fromkeys(values) if v is not None and v == v]
    ranked = [o for o in order if o in present] + sorted((v for v in present if v not in order), key=_sort_key)
    return {str(v): _rate(outcomes[values == v], f"items with {key} {v}") for v in ranked}


def breakdowns(items: pd.DataFrame, outcomes: pd.DataFrame) -> dict[str, Any]:
    """Figure 5 / App. C.2: staining category (perception stage, deviation from the perception micro average),
    number of relations (understanding stage, and per task), paradigm (reasoning stage)."""
    perception = outcomes[outcomes["stage"] == "perception"]
    micro = _rate(perception, "perception items")
    staining = {}
    for cat, rate in _by_meta(items, perception, "staining", STAINING).items():
        dev = Rate(rate.value - micro.value) if rate.value is not None and micro.value is not None else \
            Rate.undefined("no perception items")
        staining[cat] = {"accuracy": rate, "deviation": dev}
    understanding = outcomes[outcomes["stage"] == "understanding"]
    relations: dict[str, Any] = {"understanding": _by_meta(items, understanding, "n_relations")}
    for task in STAGES["understanding"]:
        relations[task] = _by_meta(items, understanding[understanding["kind"] == task], "n_relations")
    reasoning = outcomes[outcomes["stage"] == "reasoning"]
    return {
        "by_staining": staining,
        "by_n_relations": relations,
        "by_paradigm": _by_meta(items, reasoning, "paradigm", PARADIGMS),
    }


def reasoning_by_perception(items: pd.DataFrame, run: RunData) -> dict[str, Any]:
    """Reasoning accuracy split by perception correctness on the same figure (Table 5).

    Rule: a reasoning item (Qual, Quant) is on the "perception correct" side when its figure has at least one
    perception item (NP, MP, IL) and the run answered every one of them correctly; "perception incorrect" when
    at least one of them was answered wrong. Reasoning items whose figure has no perception item, or one
    that the run did not answer, are left out (`n_excluded`).
    """
    return _reasoning_split(items, item_outcomes(items, run))


def _reasoning_split(items: pd.DataFrame, outcomes: pd.DataFrame) -> dict[str, Any]:
    stage = items["kind"].map(STAGE_OF)
    need = items[stage == "perception"].groupby("group_id").size()
    perc = outcomes[outcomes["stage"] == "perception"].groupby("group_id")["correct"].agg(["sum", "size"])
    perc = perc.reindex(need.index, fill_value=0)
    answered_all = perc["size"] == need
    figure_ok = (perc["sum"] == need) & answered_all
    figure_bad = perc["size"] > perc["sum"]  # some perception item answered wrong
    reasoning = outcomes[outcomes["stage"] == "reasoning"]
    ok = reasoning["group_id"].map(lambda g: bool(figure_ok.get(g, False))).astype(bool)
    bad = reasoning["group_id"].map(lambda g: bool(figure_bad.get(g, False))).astype(bool)
    return {
        "perception_correct": _rate(reasoning[ok], "reasoning items on figures with all perception correct"),
        "perception_incorrect": _rate(reasoning[bad], "reasoning items on figures with a perception error"),
        "n_excluded": int((~ok & ~bad).sum()),
    }


def shortcut_flags(items: pd.DataFrame, text_runs: Iterable[RunData], k: int | None = SHORTCUT_K) -> pd.DataFrame:
    """§2.3 textual-shortcut filter: count, per item, the correct answers over every text-only prediction in
    `text_runs` (each run, rotation and repeat is one randomized trial) and flag the item when at least `k` are
    correct. `k=None` flags at least half of the item's own trials (5 of 10 in the paper).

    Returns one row per item of `items`: item_id, n_trials, n_correct, flagged (False when n_trials == 0).
    """
    frames = []
    for run in text_runs:
        joined = join(items, run.preds)
        if joined is not None and len(joined):
            frames.append(joined[["item_id", "correct"]])
    ids = items["item_id"].astype(str)
    if frames:
        allp = pd.concat(frames, ignore_index=True)
        agg = allp.groupby("item_id")["correct"].agg(["size", "sum"])
        n_trials = ids.map(agg["size"]).fillna(0).astype(int).to_numpy()
        n_correct = ids.map(agg["sum"]).fillna(0).astype(int).to_numpy()
    else:
        n_trials = np.zeros(len(ids), dtype=int)
        n_correct = np.zeros(len(ids), dtype=int)
    need = np.array([math.ceil(t / 2) for t in n_trials]) if k is None else np.full(len(ids), int(k))
    flagged = (n_trials > 0) & (n_correct >= need)
    return pd.DataFrame({"item_id": ids.to_numpy(), "n_trials": n_trials, "n_correct": n_correct, "flagged": flagged})


def _model(run: RunData) -> str:
    return str((run.config or {}).get("model") or run.name)


def _shortcut_block(items: pd.DataFrame, runs: list[RunData], k: int | None, label: str, pooled: bool
                    ) -> dict[str, Any]:
    flags = shortcut_flags(items, runs, k)
    tried = flags[flags["n_trials"] > 0]
    return {
        "model": label,
        "pooled": pooled,
        "flagged": Rate.of(int(tried["flagged"].sum()), len(tried)) if len(tried) else
        Rate(None, 0, 0, reason="no item has a text-only prediction"),
        "k": "half of the trials" if k is None else k,
        "trials": {"min": int(tried["n_trials"].min()), "max": int(tried["n_trials"].max())} if len(tried) else
        {"min": 0, "max": 0},
        "runs": sorted(r.name for r in runs),
        "flagged_items": tried.loc[tried["flagged"], "item_id"].tolist(),
    }


def shortcut_summary(items: pd.DataFrame, text_runs: Iterable[RunData], model: str | None = None,
                     pool: bool = False, k: int | None = None) -> dict[str, Any]:
    """§2.3 filter per text-only model (one model's randomized text-only trials flag an item), for `score`.

    `by_model`: one block per model (config.model) of `text_runs`: {model, pooled, flagged, k, trials {min,
    max}, runs, flagged_items}. The headline (the same keys at the top level) is `model`'s block when given,
    the only model's when there is one, the pool of every model when `pool` (labelled "pooled: a + b",
    `pooled: true`); with several models and no choice the headline `flagged` gives the reason. A `model`
    with no text-only run raises MetricUndefined naming the models there are."""
    if model is not None and pool:
        raise MetricUndefined("choose one shortcut model or pool them all, not both")
    by: dict[str, list[RunData]] = {}
    for r in text_runs:
        by.setdefault(_model(r), []).append(r)
    models = sorted(by)
    if model is not None and model not in by:
        raise MetricUndefined(f"no text-only run of model {model!r} for the shortcut filter (text-only models: "
                              f"{', '.join(models) or 'none'})")
    out: dict[str, Any] = {"models": models,
                           "by_model": {m: _shortcut_block(items, by[m], k, m, False) for m in models}}
    if pool:
        head = _shortcut_block(items, [r for m in models for r in by[m]], k, "pooled: " + " + ".join(models), True)
    elif model is not None or len(models) == 1:
        head = out["by_model"][model if model is not None else models[0]]
    else:
        why = (f"{len(models)} text-only models ({', '.join(models)}): the filter is counted per model (001 "
               "§2.3); choose one (score --shortcut-model ID) or pool them (--shortcut-pool)")
        head = {"model": None, "pooled": False, "flagged": Rate.undefined(why), "k": "half of the trials" if k is None
                else k, "runs": [], "flagged_items": []}
    out.update(head)
    return out


def _input_mode(run: RunData) -> str:
    mode = (run.config or {}).get("input_mode")
    if mode:
        return str(mode)
    preds = run.preds
    if preds is not None and len(preds) and "input_mode" in preds and preds["input_mode"].notna().any():
        return str(preds["input_mode"].dropna().mode().iloc[0])
    return "all"


def text_only_runs(runs: Iterable[RunData]) -> list[RunData]:
    """The runs made without images (input mode `text`: config, else the predictions' own mode)."""
    return [r for r in runs if _input_mode(r) == "text"]


def _strategy(run: RunData) -> str:
    return str((run.config or {}).get("strategy") or "direct")


def _diff(a: Rate, b: Rate) -> Rate:
    if a.value is None or b.value is None:
        return Rate.undefined(a.reason or b.reason or "undefined")
    return Rate(a.value - b.value)


def score(items: pd.DataFrame, run: RunData, others: Sequence[RunData], options: ScoreOptions) -> Scores:
    """Every SPUR metric of `run` (its catalogue). `options.seed=None` skips the bootstrap CIs;
    `options.shortcut_model` / `shortcut_pool` / `shortcut_k`: the text-only model whose trials flag shortcut
    items, or the labelled pool of every such model (shortcut_summary)."""
    others = [o for o in others if o is not run]
    outcomes = item_outcomes(items, run)
    acc = accuracies(outcomes, options.seed)
    parts = breakdowns(items, outcomes)
    result = Scores({c.TASKS: acc["tasks"], c.PERCEPTION: acc["perception"], c.UNDERSTANDING: acc["understanding"],
                     c.REASONING: acc["reasoning"], c.OVERALL: acc["overall"], c.BY_STAINING: parts["by_staining"],
                     c.BY_N_RELATIONS: parts["by_n_relations"], c.BY_PARADIGM: parts["by_paradigm"]})
    split = _reasoning_split(items, outcomes)
    direct = None
    if _strategy(run) != "direct":
        direct = sorted(
            [o for o in others if o.benchmark == run.benchmark
             and (o.config or {}).get("model") == (run.config or {}).get("model")
             and _strategy(o) == "direct" and _input_mode(o) == _input_mode(run)],
            key=lambda r: r.name)
    if direct:
        base = reasoning_by_perception(items, direct[0])
        split["vs_direct"] = {
            "direct": direct[0].name,
            "perception_correct": _diff(split["perception_correct"], base["perception_correct"]),
            "perception_incorrect": _diff(split["perception_incorrect"], base["perception_incorrect"]),
        }
    result[c.REASONING_BY_PERCEPTION] = split

    text_runs = text_only_runs([run, *others])
    if text_runs or options.shortcut_model is not None:
        result[c.SHORTCUT] = shortcut_summary(items, text_runs, options.shortcut_model, options.shortcut_pool,
                                              options.shortcut_k)
    else:
        result[c.SHORTCUT] = Rate.undefined("no text-only run of this benchmark")
    return result
