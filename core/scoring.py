"""Scoring entry points: pick the family's metric set for a run (pure; the caller brings the data).

- `score_run(items, run, others, compare=None, split="test")`: every metric of one run, plus `metrics["compare"]`
  (paired differences against another run of the same benchmark) when `compare` is given. Every family scores
  the `test` split by default; `split=None` scores every split (`score --split all`, `split_arg`).
- `score_all(items, runs, names=None, ..., context=None)`: the same for several runs of one benchmark, sharing
  the work (intermediate frames of partner runs, bootstrap resample counts) through a core.stats.ScoringContext
  (a fresh one per call by default, or one the caller keeps): results equal `score_run`'s for each run.

Paired differences (`compare`) are always this run minus the other run, with a percentile cluster-bootstrap
interval (clusters = groups: stems, figures, FrameEvidence groups; both runs resampled with the same clusters
in each draw, 20,000 draws, core.stats). Each is {"value": this - other, "ci": [lo, hi], "n": groups}, or a
reason. Headline rates per family: FrameEvidence accuracy, macro_f1, fq1_gem, nts, dis (over every item of the
split, an unanswered item counts as wrong: core.families.frameevidence.metrics.compare); StemBind p / r / f accuracy over
the items both runs answered, binding_gap and stem_coherent over the stems complete in both runs; SPUR the seven
tasks, the three stage averages and overall over the items both runs answered; generic accuracy (rotation 0,
repeat 0) and group exact match over the items both runs answered.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from core import families, stats
from core.errors import MetricUndefined
from core.gcpause import gc_paused
from core.metrics.common import memoized
from core.schema import Rate, RunData, to_jsonable

DEFAULT_SPLIT = "test"  # docs/METRICS.md: `score` scores the test split unless told otherwise
ALL_SPLITS = "all"  # the `--split` value that scores every split
NO_TEST_SPLIT = "all (no test split)"  # the label of a default scoring of a benchmark that has no test split


def resolve_split(items: Any, split: str | None) -> tuple[str | None, str]:
    """(the split to score, its label). The default split of a benchmark without test items (a VLMEvalKit
    MMBench_DEV TSV, a Hugging Face `validation` split) is every split, labelled so; any other choice is kept."""
    if split == DEFAULT_SPLIT and len(items) and not (items["split"] == DEFAULT_SPLIT).any():
        return None, NO_TEST_SPLIT
    return split, ALL_SPLITS if split is None else split


def split_arg(value: str | None) -> str | None:
    """The split a `--split` value names: nothing -> "test", "all" -> None (every split), else the value."""
    if value is None or not value.strip():
        return DEFAULT_SPLIT
    return None if value.strip() == ALL_SPLITS else value.strip()


def score_run(items: Any, run: RunData, others: list[RunData], compare: RunData | None = None,
              split: str | None = DEFAULT_SPLIT, context: stats.ScoringContext | None = None,
              **kw: Any) -> dict[str, Any]:
    """{"benchmark", "run", "family", "synthetic", "split", "metrics"} for one run ("split": the split scored, or
    "all"), with every Rate as {"value", "k", "n"} or a reason.

    `split` scores one split (default "test"), None every split: FrameEvidence takes it itself; for the other
    families the items are narrowed to it here (a split without items raises MetricUndefined). `compare` adds
    metrics["compare"] (this run minus `compare`); a run of another benchmark raises MetricUndefined.
    `context` (a core.stats.ScoringContext) shares work with other calls given the same one; by default the
    context active in this thread (score_all's), else a fresh one for this call.
    """
    module = families.get(run.family)
    if compare is not None and (compare.benchmark != run.benchmark or compare.family != run.family):
        raise MetricUndefined(f"cannot compare run {run.name!r} (benchmark {run.benchmark!r}) with run "
                              f"{compare.name!r} (benchmark {compare.benchmark!r}): paired differences need two "
                              "runs of the same benchmark")
    split, label = resolve_split(items, split)
    with _context(context).active():
        items = _narrow(module, items, split, kw)
        metrics = module.score(items, run, others, **kw)
        if compare is not None:
            metrics["compare"] = compare_runs(items, run, compare, **{k: v for k, v in kw.items()
                                                                      if k in ("split", "clusterings")})
    return {"benchmark": run.benchmark, "run": run.name, "family": run.family, "synthetic": bool(run.config.get("synthetic")),
            "split": label, "metrics": to_jsonable(metrics)}


def _context(context: stats.ScoringContext | None) -> stats.ScoringContext:
    """The context given, else the one active in this thread, else a fresh one."""
    return context or stats.current_context() or stats.ScoringContext()


def _narrow(module: Any, items: Any, split: str | None, kw: dict[str, Any]) -> Any:
    """Pass `split` to a family score() that takes it (None included: every split); otherwise keep only the
    items of that split (None: all of them)."""
    if "split" in inspect.signature(_metric_score(module)).parameters:
        kw["split"] = split
        return items
    if split is None:
        return items
    scoped = split_items(items, split)
    if scoped.empty:
        known = ", ".join(sorted(map(str, items["split"].unique()))) or "none"
        raise MetricUndefined(f"no items in split {split!r} (splits: {known}); score one of those, or all splits")
    return scoped


@memoized
def split_items(items: pd.DataFrame, split: str) -> pd.DataFrame:
    """The items of one split, renumbered from 0; `items` itself when every item is in it (then the bulk
    loader's item rows still apply). One frame per (items, split) inside a scoring context, so the metrics of
    every run of a score_all call share their memoized work (shared, read-only)."""
    mask = (items["split"] == split).to_numpy(dtype=bool)
    if mask.all() and isinstance(items.index, pd.RangeIndex) and items.index.start == 0 and items.index.step == 1:
        return items
    return items[mask].reset_index(drop=True)


def _metric_score(module: Any) -> Any:
    """The metric module's score() behind a family module (whose own score() forwards **kw)."""
    import importlib

    return importlib.import_module(f"core.families.{module.NAME}.metrics").score


def score_all(items: Any, runs: Mapping[str, RunData] | Iterable[RunData], names: Sequence[str] | None = None,
              compare: Mapping[str, RunData] | RunData | None = None, split: str | None = DEFAULT_SPLIT,
              per_run: Mapping[str, Mapping[str, Any]] | None = None, context: stats.ScoringContext | None = None,
              **kw: Any) -> dict[str, dict[str, Any]]:
    """`score_run` for each run in `names` (default: every run), each against all the others, sharing work.

    `runs` are every run of one benchmark (db.frames.load_benchmark_runs). Intermediate results of a run (item
    outcomes, joined frames, groups), bootstrap resample counts and resampled sums are shared through
    `context`, a core.stats.ScoringContext (default: a fresh one for this call); each result equals
    score_run's. A caller that scores the same loaded frames again (the UI, per benchmark) may keep one
    context beside the frames and pass it each time: the second call finds the first's work. The call holds
    the context for its whole run, so two threads with one context take turns and two threads with two
    contexts never share state. `compare` is one run to compare every scored run with, or {name: run}.
    `per_run` adds keyword arguments for single runs ({name: {"judgements": ...}}, db.frames.score_extras).
    """
    pool = list(runs.values()) if isinstance(runs, Mapping) else list(runs)
    by_name = {r.name: r for r in pool}
    wanted = list(names) if names is not None else list(by_name)
    missing = [n for n in wanted if n not in by_name]
    if missing:
        raise MetricUndefined(f"no run named {', '.join(map(repr, missing))} among the runs given")
    out: dict[str, dict[str, Any]] = {}
    split, label = resolve_split(items, split)
    ctx = context if context is not None else stats.ScoringContext()
    with gc_paused(), ctx.active():
        chosen = [by_name[n] for n in wanted]
        if chosen and chosen[0].family == "stembind" and kw.get("seed", stats.DEFAULT_SEED) is not None:
            from core.families.stembind import metrics as stembind

            scope = items if split is None else split_items(items, split)
            stembind.prefetch(scope, chosen, kw.get("seed", stats.DEFAULT_SEED))
        for run in chosen:
            other = compare.get(run.name) if isinstance(compare, Mapping) else compare
            others = [o for o in pool if o is not run]
            extra = dict((per_run or {}).get(run.name) or {})
            out[run.name] = score_run(items, run, others, compare=other, split=split, context=ctx,
                                      **{**kw, **extra})
            out[run.name]["split"] = label
    return out


# --------------------------------------------------------------------------- paired differences


def compare_runs(items: pd.DataFrame, run: RunData, other: RunData, split: str | None = "test",
                 draws: int = stats.DEFAULT_DRAWS, seed: int | None = stats.DEFAULT_SEED,
                 clusterings: Sequence[stats.Clustering] | None = None) -> dict[str, Any]:
    """metrics["compare"]: the family's headline rates as this run minus `other`, with paired cluster CIs.

    FrameEvidence resamples the first of `clusterings` (default: groups); the other families cluster by group.
    """
    if other.benchmark != run.benchmark or other.family != run.family:
        raise MetricUndefined(f"cannot compare run {run.name!r} with run {other.name!r} of another benchmark "
                              f"({other.benchmark!r}, not {run.benchmark!r})")
    if run.family == "frameevidence":
        clustering = clusterings[0] if clusterings else None
        return {"other": other.name, **_compare_frameevidence(items, run, other, split, draws, seed, clustering)}
    builders = {"stembind": _stembind_arrays, "spur": _spur_arrays, "generic": _generic_arrays}
    table = builders[run.family](items, run, other)
    return {"other": other.name, **_paired(table, draws, seed)}


def _paired(table: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] | str, draws: int,
            seed: int | None) -> dict[str, Rate]:
    """{metric: Rate(this - other, n = clusters, ci)} from per-cluster (k_this, n_this, k_other, n_other)."""
    if isinstance(table, str):
        return {"reason": table}  # type: ignore[dict-item]
    out: dict[str, Rate] = {}
    names = list(table)
    if not names:
        return out
    kt, nt, ko, no = (np.column_stack([table[m][i] for m in names]).astype(float) for i in range(4))
    n_clusters = kt.shape[0]
    defined = [j for j in range(len(names)) if nt[:, j].sum() > 0 and no[:, j].sum() > 0]
    lo = hi = None
    if seed is not None and defined and n_clusters:
        lo, hi = stats.cluster_bootstrap_diff(kt[:, defined], nt[:, defined], ko[:, defined], no[:, defined],
                                              draws=draws, seed=seed)
    for j, name in enumerate(names):
        if j not in defined:
            out[name] = Rate.undefined(f"{name} is undefined for {'this run' if nt[:, j].sum() == 0 else 'the other run'}"
                                       " on the groups both runs answered")
            continue
        rate = Rate(float(kt[:, j].sum() / nt[:, j].sum() - ko[:, j].sum() / no[:, j].sum()), n=int(
            np.count_nonzero((nt[:, j] > 0) | (no[:, j] > 0))))
        if lo is not None and hi is not None:
            i = defined.index(j)
            if np.isfinite(lo[i]) and np.isfinite(hi[i]):
                rate.ci = (float(lo[i]), float(hi[i]))
        out[name] = rate
    return out


def _per_cluster(keys: np.ndarray, index: pd.Index, values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Sums of each value column per cluster key, aligned on `index` (absent clusters give 0)."""
    frame = pd.DataFrame({k: np.asarray(v, dtype=float) for k, v in values.items()})
    summed = frame.groupby(keys).sum().reindex(index, fill_value=0.0)
    return {k: summed[k].to_numpy(dtype=float) for k in values}


def _item_pairs(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Outcomes (item_id, group_id, correct) of two runs on the items both answered: correct_t, correct_o."""
    both = a[["item_id", "group_id", "correct"]].merge(b[["item_id", "correct"]], on="item_id",
                                                       suffixes=("_t", "_o"))
    both["correct_t"] = both["correct_t"].astype(bool)
    both["correct_o"] = both["correct_o"].astype(bool)
    return both


def _masked(both: pd.DataFrame, masks: dict[str, np.ndarray], index: pd.Index
            ) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    ct, co = both["correct_t"].to_numpy(), both["correct_o"].to_numpy()
    values: dict[str, np.ndarray] = {}
    for name, m in masks.items():
        values[f"{name}/k_t"], values[f"{name}/k_o"], values[f"{name}/n"] = m & ct, m & co, m
    sums = _per_cluster(both["group_id"].to_numpy(), index, values)
    return {name: (sums[f"{name}/k_t"], sums[f"{name}/n"], sums[f"{name}/k_o"], sums[f"{name}/n"]) for name in masks}


def _stembind_arrays(items: pd.DataFrame, run: RunData, other: RunData) -> Any:
    from core.families.stembind import metrics as sb

    oa, ob = sb.item_outcomes(items, run), sb.item_outcomes(items, other)
    both = _item_pairs(oa, ob)
    if both.empty:
        return "no item answered by both runs"
    ta, tb = sb.stem_table(items, oa), sb.stem_table(items, ob)
    index = pd.Index(sorted(set(both["group_id"]) | set(ta.index[ta["complete"]])), name="group_id")
    kinds = both["item_id"].map(dict(zip(items["item_id"], items["kind"], strict=True)))
    out = _masked(both, {f"{k.lower()}_accuracy": (kinds == k).to_numpy() for k in sb.KINDS}, index)
    done = (ta["complete"] & tb["complete"]).reindex(index, fill_value=False).to_numpy(dtype=bool)
    ta, tb = ta.reindex(index), tb.reindex(index)

    def flags(t: pd.DataFrame, col: str) -> np.ndarray:
        return t[col].fillna(False).to_numpy(dtype=bool) & done

    cond_t, cond_o = flags(ta, "p_all") & flags(ta, "r"), flags(tb, "p_all") & flags(tb, "r")
    out["binding_gap"] = (cond_t & ~flags(ta, "f"), cond_t, cond_o & ~flags(tb, "f"), cond_o)
    out["stem_coherent"] = (cond_t & flags(ta, "f"), done, cond_o & flags(tb, "f"), done)
    return out


def _spur_arrays(items: pd.DataFrame, run: RunData, other: RunData) -> Any:
    from core.families.spur import metrics as spur

    both = _item_pairs(spur.item_outcomes(items, run), spur.item_outcomes(items, other))
    if both.empty:
        return "no item answered by both runs"
    kinds = both["item_id"].map(dict(zip(items["item_id"], items["kind"], strict=True))).to_numpy()
    stage = np.array([spur.STAGE_OF.get(k) for k in kinds], dtype=object)
    masks = {f"tasks.{t}": kinds == t for t in spur.TASKS}
    masks.update({s: stage == s for s in spur.STAGES})
    masks["overall"] = np.array([s is not None for s in stage])
    return _masked(both, masks, pd.Index(sorted(set(both["group_id"]))))


def _generic_arrays(items: pd.DataFrame, run: RunData, other: RunData) -> Any:
    from core.metrics import common

    def base(r: RunData) -> pd.DataFrame:
        return common.select(common.join(items, r.preds), rotation=0, repeat=0)

    both = _item_pairs(base(run), base(other))
    if both.empty:
        return "no item answered by both runs at rotation 0, repeat 0"
    index = pd.Index(sorted(set(both["group_id"])))
    out = _masked(both, {"accuracy": np.ones(len(both), dtype=bool)}, index)
    per = both.groupby("group_id")[["correct_t", "correct_o"]].all().reindex(index)
    ones = np.ones(len(index))
    out["group_exact_match"] = (per["correct_t"].to_numpy(dtype=float), ones, per["correct_o"].to_numpy(dtype=float),
                                ones)
    return out


def _compare_frameevidence(items: pd.DataFrame, run: RunData, other: RunData, split: str | None, draws: int,
                           seed: int | None, clustering: stats.Clustering | None = None) -> dict[str, Any]:
    from core.families.frameevidence import metrics as fe

    # run_b - run_a = this - other
    raw = fe.compare(items, other, run, split=split, draws=draws, seed=seed, clustering=clustering)
    out: dict[str, Any] = {"clustering": raw.get("clustering", "groups"), "clusters": int(raw.get("clusters", 0))}
    for m in fe.COMPARED:
        entry = raw[m]
        diff = entry["difference"] if isinstance(entry, dict) else entry
        if diff.value is None:
            out[m] = Rate.undefined(diff.reason or "undefined")
            continue
        rate = Rate(diff.value, n=int(raw.get("clusters", 0)))
        rate.ci = diff.ci
        out[m] = rate
    return out
