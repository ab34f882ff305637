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
reason. The engine and the metric set per family are core.comparison's, shared with the Compare tab
(docs/METRICS.md, "Paired differences").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from core import comparison, families, stats
from core.errors import MetricUndefined
from core.families.protocol import ScoreOptions
from core.metrics.catalogue import COMPARE
from core.metrics.common import item_memoized
from core.schema import RunData

DEFAULT_SPLIT = "test"  # docs/METRICS.md: `score` scores the test split unless told otherwise
ALL_SPLITS = "all"  # the `--split` value that scores every split
NO_TEST_SPLIT = "all (no test split)"  # the label of a default scoring of a benchmark that has no test split
DEFAULT_OPTIONS = ScoreOptions()  # the test split, the default seed and draws, no family option


def resolve_split(items: Any, split: str | None) -> tuple[str | None, str]:
    """(the split to score, its label). The default split of a benchmark without test items (a VLMEvalKit
    MMBench_DEV TSV, a Hugging Face `validation` split) is every split, labelled so; any other choice is kept."""
    if split == DEFAULT_SPLIT and len(items) and not _has_split(items, DEFAULT_SPLIT):
        return None, NO_TEST_SPLIT
    return split, ALL_SPLITS if split is None else split


@item_memoized
def _has_split(items: pd.DataFrame, split: str) -> bool:
    """Whether an item of `items` is in `split` (asked for every run scored: once per items frame in a context)."""
    return bool((items["split"] == split).any())


def split_arg(value: str | None) -> str | None:
    """The split a `--split` value names: nothing -> "test", "all" -> None (every split), else the value."""
    if value is None or not value.strip():
        return DEFAULT_SPLIT
    return None if value.strip() == ALL_SPLITS else value.strip()


def score_run(items: Any, run: RunData, others: list[RunData], compare: RunData | None = None,
              options: ScoreOptions = DEFAULT_OPTIONS, context: stats.ScoringContext | None = None
              ) -> dict[str, Any]:
    """{"benchmark", "run", "family", "synthetic", "split", "metrics"} for one run ("split": the split scored, or
    "all"), with every Rate as {"value", "k", "n"} or a reason.

    `options.split` scores one split (default "test"), None every split: a family that `scores_splits` gets every
    item and scores that split itself; the others get the split's items alone (a split without items raises
    MetricUndefined). `compare` adds metrics["compare"] (this run minus `compare`); a run of another benchmark
    raises MetricUndefined. `context` (a core.stats.ScoringContext) shares work with other calls given the same
    one; by default the context active in this thread (score_all's), else a fresh one for this call.
    """
    family = families.get(run.family)
    if compare is not None:
        comparison.same_benchmark(run, compare)  # before scoring, not after
    marked = items
    items = without_groups_of(items, options.set_aside) if options.set_aside else items
    split, label = resolve_split(items, options.split)
    options = replace(options, split=split)
    with _context(context).active():
        scoped = items if family.scores_splits else _narrow(items, split)
        scores = family.score(scoped, run, others, options)
        if compare is not None:
            scores[COMPARE] = compare_runs(scoped, run, compare, split=split if family.scores_splits else None,
                                           clusterings=options.clusterings)
    out = {"benchmark": run.benchmark, "run": run.name, "family": run.family,
           "synthetic": bool(run.config.get("synthetic")), "split": label, "metrics": scores.json()}
    if options.set_aside:
        out["set_aside"] = set_aside_counts(marked, options.set_aside, split)
    return out


@item_memoized
def without_groups_of(items: pd.DataFrame, item_ids: frozenset[str]) -> pd.DataFrame:
    """`items` without every group holding one of `item_ids` (items a reviewer marked "gold is wrong": a group
    with a wrong gold letter cannot be scored jointly, so its whole group is set aside), renumbered from 0;
    `items` itself when none of them is there."""
    marked = items["item_id"].isin(item_ids).to_numpy(dtype=bool)
    if not marked.any():
        return items
    drop = items["group_id"].isin(set(items.loc[marked, "group_id"])).to_numpy(dtype=bool)
    return items[~drop].reset_index(drop=True)


def set_aside_counts(items: pd.DataFrame, item_ids: frozenset[str], split: str | None) -> dict[str, int]:
    """{"marked", "groups", "items"}: the marked items of `items` (before setting aside) in `split` (None: every
    split), their groups and every item of those groups: what `score` says it set aside."""
    items = items if split is None else items[(items["split"] == split).to_numpy(dtype=bool)]
    marked = items["item_id"].isin(item_ids).to_numpy(dtype=bool)
    groups = set(items.loc[marked, "group_id"])
    return {"marked": int(marked.sum()), "groups": len(groups),
            "items": int(items["group_id"].isin(groups).sum())}


def _context(context: stats.ScoringContext | None) -> stats.ScoringContext:
    """The context given, else the one active in this thread, else a fresh one."""
    return context or stats.current_context() or stats.ScoringContext()


def _narrow(items: Any, split: str | None) -> Any:
    """The items of `split` (None: all of them)."""
    if split is None:
        return items
    scoped = split_items(items, split)
    if scoped.empty:
        known = ", ".join(sorted(map(str, items["split"].unique()))) or "none"
        raise MetricUndefined(f"no items in split {split!r} (splits: {known}); score one of those, or all splits")
    return scoped


@item_memoized
def split_items(items: pd.DataFrame, split: str) -> pd.DataFrame:
    """The items of one split, renumbered from 0; `items` itself when every item is in it (then the bulk
    loader's item rows still apply). One frame per (items, split) inside a scoring context, so the metrics of
    every run of a score_all call share their memoized work (shared, read-only)."""
    mask = (items["split"] == split).to_numpy(dtype=bool)
    if mask.all() and isinstance(items.index, pd.RangeIndex) and items.index.start == 0 and items.index.step == 1:
        return items
    return items[mask].reset_index(drop=True)


def score_all(items: Any, runs: Mapping[str, RunData] | Iterable[RunData], names: Sequence[str] | None = None,
              compare: Mapping[str, RunData] | RunData | None = None, options: ScoreOptions = DEFAULT_OPTIONS,
              per_run: Mapping[str, RunExtras | None] | None = None, context: stats.ScoringContext | None = None
              ) -> dict[str, dict[str, Any]]:
    """`score_run` for each run in `names` (default: every run), each against all the others, sharing work.

    `runs` are every run of one benchmark (db.frames.load_benchmark_runs). Intermediate results of a run (item
    outcomes, joined frames, groups), bootstrap resample counts and resampled sums are shared through
    `context`, a core.stats.ScoringContext (default: a fresh one for this call); each result equals
    score_run's. A caller that scores the same loaded frames again (the UI, per benchmark) may keep one
    context beside the frames and pass it each time: the second call finds the first's work. The call holds
    the context for its whole run, so two threads with one context take turns and two threads with two
    contexts never share state. `compare` is one run to compare every scored run with, or {name: run}.
    `per_run` adds stored data single runs are scored with ({name: RunExtras}, db.frames.score_extras).
    """
    pool = list(runs.values()) if isinstance(runs, Mapping) else list(runs)
    by_name = {r.name: r for r in pool}
    wanted = list(names) if names is not None else list(by_name)
    missing = [n for n in wanted if n not in by_name]
    if missing:
        raise MetricUndefined(f"no run named {', '.join(map(repr, missing))} among the runs given")
    out: dict[str, dict[str, Any]] = {}
    ctx = context if context is not None else stats.ScoringContext()
    with ctx.active():
        marked = items
        items = without_groups_of(items, options.set_aside) if options.set_aside else items
        split, label = resolve_split(items, options.split)
        chosen = [by_name[n] for n in wanted]
        prefetch = families.get(chosen[0].family).prefetch if chosen else None
        if prefetch is not None and options.seed is not None:
            prefetch(items if split is None else split_items(items, split), chosen, options.seed)
        for run in chosen:
            other = compare.get(run.name) if isinstance(compare, Mapping) else compare
            others = [o for o in pool if o is not run]
            extra = (per_run or {}).get(run.name)
            run_options = replace(options, split=split) if extra is None else replace(
                options, split=split, judgements=extra.judgements, labels=extra.labels)
            out[run.name] = score_run(items, run, others, compare=other, options=run_options, context=ctx)
            out[run.name]["split"] = label
            if options.set_aside:  # counted on the items before they were set aside
                out[run.name]["set_aside"] = set_aside_counts(marked, options.set_aside, split)
    return out


@dataclass(frozen=True, eq=False)
class RunExtras:
    """Stored data one run is scored with beside its predictions (db.frames.score_extras): StemBind's trace
    judgements and error-audit labels."""

    judgements: pd.DataFrame | None = None
    labels: pd.DataFrame | None = None


# --------------------------------------------------------------------------- paired differences


def compare_runs(items: pd.DataFrame, run: RunData, other: RunData, split: str | None = "test",
                 draws: int = stats.DEFAULT_DRAWS, seed: int | None = stats.DEFAULT_SEED,
                 clusterings: Sequence[stats.Clustering] | None = None) -> dict[str, Any]:
    """metrics["compare"]: core.comparison.compare's differences, this run minus `other`, with paired cluster
    CIs (the Compare tab's numbers). FrameEvidence resamples the first of `clusterings` (default: groups)."""
    result = comparison.compare(items, run, other, split=split, draws=draws, seed=seed,
                                clustering=clusterings[0] if clusterings else None)
    return comparison.differences(result)
