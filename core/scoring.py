"""Scoring entry points: pick the family's metric set for a run (pure; the caller brings the data).

- `score_run(items, run, others, compare=None, split="test")`: every metric of one run, plus `metrics["compare"]`
  (paired differences against another run of the same benchmark) when `compare` is given. Every family scores
  the `test` split by default; `split=None` scores every split (`score --split all`, `split_arg`).
- `score_all(items, runs, names=None, ...)`: the same for several runs of one benchmark, sharing the work
  (intermediate frames of partner runs, bootstrap resample counts): results equal `score_run`'s for each run.

Paired differences (`compare`) are always this run minus the other run, with a percentile cluster-bootstrap
interval (clusters = groups: stems, figures, FrameEvidence groups; both runs resampled with the same clusters
in each draw, 20,000 draws, core.stats). Each is {"value": this - other, "ci": [lo, hi], "n": groups}, or a
reason. The engine and the metric set per family are core.comparison's, shared with the Compare tab
(docs/METRICS.md, "Paired differences").
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from core import comparison, families, stats
from core.errors import MetricUndefined
from core.gcpause import gc_paused
from core.schema import RunData, to_jsonable

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
              split: str | None = DEFAULT_SPLIT, **kw: Any) -> dict[str, Any]:
    """{"benchmark", "run", "family", "synthetic", "split", "metrics"} for one run ("split": the split scored, or
    "all"), with every Rate as {"value", "k", "n"} or a reason.

    `split` scores one split (default "test"), None every split: FrameEvidence takes it itself; for the other
    families the items are narrowed to it here (a split without items raises MetricUndefined). `compare` adds
    metrics["compare"] (this run minus `compare`); a run of another benchmark raises MetricUndefined.
    """
    module = families.get(run.family)
    if compare is not None:
        comparison.same_benchmark(run, compare)  # before scoring, not after
    split, label = resolve_split(items, split)
    items = _narrow(module, items, split, kw)
    metrics = module.score(items, run, others, **kw)
    if compare is not None:
        # the items are narrowed to the split already unless the family's score() takes `split` itself
        metrics["compare"] = compare_runs(items, run, compare, split=kw.get("split"),
                                          clusterings=kw.get("clusterings"))
    return {"benchmark": run.benchmark, "run": run.name, "family": run.family, "synthetic": bool(run.config.get("synthetic")),
            "split": label, "metrics": to_jsonable(metrics)}


def _narrow(module: Any, items: Any, split: str | None, kw: dict[str, Any]) -> Any:
    """Pass `split` to a family score() that takes it (None included: every split); otherwise keep only the
    items of that split (None: all of them)."""
    if "split" in inspect.signature(_metric_score(module)).parameters:
        kw["split"] = split
        return items
    if split is None:
        return items
    scoped = items[items["split"] == split].reset_index(drop=True)
    if scoped.empty:
        known = ", ".join(sorted(map(str, items["split"].unique()))) or "none"
        raise MetricUndefined(f"no items in split {split!r} (splits: {known}); score one of those, or all splits")
    return scoped


def _metric_score(module: Any) -> Any:
    """The metric module's score() behind a family module (whose own score() forwards **kw)."""
    import importlib

    return importlib.import_module(f"core.families.{module.NAME}.metrics").score


def score_all(items: Any, runs: Mapping[str, RunData] | Iterable[RunData], names: Sequence[str] | None = None,
              compare: Mapping[str, RunData] | RunData | None = None, split: str | None = DEFAULT_SPLIT,
              per_run: Mapping[str, Mapping[str, Any]] | None = None, **kw: Any) -> dict[str, dict[str, Any]]:
    """`score_run` for each run in `names` (default: every run), each against all the others, sharing work.

    `runs` are every run of one benchmark (db.frames.load_benchmark_runs). Within the call, intermediate
    results of a run (item outcomes, joined frames, groups) are computed once and bootstrap resample counts
    and resampled sums are shared (core.stats.shared_draws); each result equals score_run's. `compare` is one
    run to compare every scored run with, or {name: run}. `per_run` adds keyword arguments for single runs
    ({name: {"judgements": ...}}, db.frames.score_extras).
    """
    from core.metrics.common import shared_work

    pool = list(runs.values()) if isinstance(runs, Mapping) else list(runs)
    by_name = {r.name: r for r in pool}
    wanted = list(names) if names is not None else list(by_name)
    missing = [n for n in wanted if n not in by_name]
    if missing:
        raise MetricUndefined(f"no run named {', '.join(map(repr, missing))} among the runs given")
    out: dict[str, dict[str, Any]] = {}
    split, label = resolve_split(items, split)
    with gc_paused(), shared_work(), stats.shared_draws():
        chosen = [by_name[n] for n in wanted]
        prefetch = getattr(families.get(chosen[0].family), "prefetch", None) if chosen else None
        if prefetch is not None and kw.get("seed", stats.DEFAULT_SEED) is not None:
            prefetch(comparison.scope(items, split), chosen, kw.get("seed", stats.DEFAULT_SEED))
        for run in chosen:
            other = compare.get(run.name) if isinstance(compare, Mapping) else compare
            others = [o for o in pool if o is not run]
            extra = dict((per_run or {}).get(run.name) or {})
            out[run.name] = score_run(items, run, others, compare=other, split=split, **{**kw, **extra})
            out[run.name]["split"] = label
    return out


# --------------------------------------------------------------------------- paired differences


def compare_runs(items: pd.DataFrame, run: RunData, other: RunData, split: str | None = "test",
                 draws: int = stats.DEFAULT_DRAWS, seed: int | None = stats.DEFAULT_SEED,
                 clusterings: Sequence[stats.Clustering] | None = None) -> dict[str, Any]:
    """metrics["compare"]: core.comparison.compare's differences, this run minus `other`, with paired cluster
    CIs (the Compare tab's numbers). FrameEvidence resamples the first of `clusterings` (default: groups)."""
    result = comparison.compare(items, run, other, split=split, draws=draws, seed=seed,
                                clustering=clusterings[0] if clusterings else None)
    return comparison.differences(result)
