"""FrameEvidence: two and several runs: turnover and the change decomposition, the paired cluster bootstrap
of `compare` (§6.2, App. D), seeds and input-mode deltas."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from core import stats
from core.comparison import turnover_counts
from core.errors import MetricUndefined
from core.families.frameevidence import catalogue
from core.families.frameevidence.accuracy import core_metrics
from core.families.frameevidence.outcomes import (
    _all,
    _complete,
    _diff,
    _identity,
    _input_mode,
    _outcomes,
    _scope,
    _settings,
    frame,
    groups,
)
from core.families.frameevidence.repeats import rotations
from core.families.frameevidence.vocab import CLASSES, FQ1, FQ1_VARIANTS, FQ2
from core.schema import Rate, RunData

COMPARED = tuple(m.key for m in catalogue.COMPARED)
HEADLINE = tuple(m.key for m in catalogue.TABLE4)  # macro P / R / F1, accuracy, fq1_gem, nts, dis
SEED_METRICS = ("macro_precision", "macro_recall", "macro_f1", "accuracy", "fq1_gem", "nts", "dis")
ROTATION_SEED_METRICS = ("vanilla", "circular", "consistency")  # Table 6b's three-seed columns

# --------------------------------------------------------------------------- two runs: turnover, decomposition


def turnover(items: pd.DataFrame, run_a: RunData, run_b: RunData, split: str | None = "test",
             a: tuple[int, int] = (0, 0), b: tuple[int, int] = (0, 0)) -> dict[str, Any]:
    """Item turnover from run_a to run_b (000 §6.2: "48 newly correct and 43 newly incorrect answers").

    a / b select (rotation, repeat). Over every item of the split: both_correct, newly_correct (wrong in a,
    correct in b), newly_incorrect, both_wrong, changed_answers (not both valid with the same letter),
    net = newly_correct - newly_incorrect (an int) and change = accuracy_b - accuracy_a.
    """
    # both item tables hold every item of the split in the same order
    ta = _outcomes(items, run_a, split, rotation=a[0], repeat=a[1])
    tb = _outcomes(items, run_b, split, rotation=b[0], repeat=b[1])
    answer_a, answer_b = ta["answer"], tb["answer"]
    same = (ta["status"] == "ok") & (tb["status"] == "ok") & (answer_a == answer_b) & pd.notna(answer_a)
    return turnover_counts(ta["correct"], tb["correct"], same)  # the one counting rule (core.comparison)


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
    # the group tables of both runs hold the same groups in the same order: those of the split's items
    ga, gb = groups(_outcomes(items, run_a, split), FQ2), groups(_outcomes(items, run_b, split), FQ2)
    if ga.empty:
        reason = "no FQ2 groups"
        return {"nts": Rate.undefined(reason), "dis": Rate.undefined(reason)}
    out: dict[str, Any] = {}
    for key, v in (("nts", "del"), ("dis", "add")):
        d = _complete(ga, ("mss", v))
        if not d.any():
            out[key] = Rate.undefined(f"no FQ2 groups with mss and {v} items")
            continue
        ma, mb, va, vb = ga["c_mss"][d], gb["c_mss"][d], ga[f"c_{v}"][d], gb[f"c_{v}"][d]
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
    code = clusters.get_indexer(keys.to_numpy())
    m = len(clusters)

    def per_cluster(at: np.ndarray, weights: np.ndarray) -> np.ndarray:
        return np.bincount(at, weights=np.asarray(weights, dtype=float), minlength=m)

    valid = (df["status"] == "ok").to_numpy()
    gold, answer = df["gold"].to_numpy(dtype=object), df["answer"].to_numpy(dtype=object)
    cols = [per_cluster(code, df["correct"].to_numpy(dtype=float)), per_cluster(code, np.ones(len(df)))]
    for c in CLASSES:
        said = valid & (answer == c)
        cols += [per_cluster(code, (gold == c) & said), per_cluster(code, gold == c), per_cluster(code, said)]
    group_cluster = dict(zip(df["group_id"].to_numpy(), code, strict=True))
    for kind, variants in ((FQ1, FQ1_VARIANTS), (FQ2, ("mss", "del")), (FQ2, ("mss", "add"))):
        g = groups(df, kind)
        done = _complete(g, variants)
        if not done.any():
            cols += [np.zeros(m), np.zeros(m)]
            continue
        g = g.rows(done)
        at = np.fromiter((group_cluster[x] for x in g.index), dtype=np.int64, count=len(g.index))
        cols += [per_cluster(at, _all(g, "c", variants)), per_cluster(at, np.ones(len(at)))]
    return np.column_stack(cols)


def _metrics_from_sums(s: np.ndarray) -> np.ndarray:
    """accuracy, macro_f1, fq1_gem, nts, dis (COMPARED) from summed features (draws x features), NaN when
    undefined."""
    return _headline_from_sums(s)[:, [HEADLINE.index(m) for m in COMPARED]]


def _headline_from_sums(s: np.ndarray) -> np.ndarray:
    """The HEADLINE metrics (000 Table 4) from summed features (draws x features), NaN when undefined."""
    m = len(CLASSES)
    correct, total = s[:, 0], s[:, 1]
    tp, sup, pred = s[:, 2:2 + 3 * m:3], s[:, 3:2 + 3 * m:3], s[:, 4:2 + 3 * m:3]
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(pred > 0, tp / np.where(pred > 0, pred, 1), 0.0)
        recall = np.where(sup > 0, tp / np.where(sup > 0, sup, 1), 0.0)
        denom = precision + recall
        f1 = np.where(denom > 0, 2 * precision * recall / np.where(denom > 0, denom, 1), 0.0)
        j = 2 + 3 * m
        macro = [np.where(total > 0, x.mean(axis=1), np.nan) for x in (precision, recall, f1)]
        out = np.column_stack([*macro, correct / total, s[:, j] / s[:, j + 1], s[:, j + 2] / s[:, j + 3],
                               s[:, j + 4] / s[:, j + 5]])
    return out


def headline_intervals(items: pd.DataFrame, run: RunData, split: str | None = "test",
                       draws: int = stats.DEFAULT_DRAWS, seed: int | None = stats.DEFAULT_SEED,
                       level: float = 0.95) -> dict[str, tuple[float, float] | None]:
    """The 95% percentile cluster-bootstrap interval of each HEADLINE metric of one run (000 App. D: whole
    groups resampled with replacement, 20,000 draws, seed 20261010, item- / group-weighted sums; the same
    draws and per-group sums as `compare`'s paired intervals). None for a metric undefined in every draw."""
    df = frame(items, run, split)
    if df.empty:
        return {m: None for m in HEADLINE}
    keys = stats.cluster_key(df, "group_id")
    clusters = pd.Index(sorted(keys.unique(), key=str))
    sums = stats.resampled_sums(_cluster_features(df, keys, clusters), draws=draws, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a metric undefined in every draw (no FQ1 groups)
        lo, hi = stats.percentile_interval(_headline_from_sums(sums), level)
    return {m: (float(lo[i]), float(hi[i])) if np.isfinite(lo[i]) and np.isfinite(hi[i]) else None
            for i, m in enumerate(HEADLINE)}


def compare(items: pd.DataFrame, run_a: RunData, run_b: RunData, split: str | None = "test",
            draws: int = stats.DEFAULT_DRAWS, seed: int | None = stats.DEFAULT_SEED, level: float = 0.95,
            by: str = "group_id", clustering: stats.Clustering | None = None) -> dict[str, Any]:
    """Paired differences run_b - run_a of accuracy, macro_f1, fq1_gem, nts and dis with percentile
    cluster-bootstrap intervals (000 §6.2 "paired 95% interval", App. D; clusters = groups by default, or
    any item column / "meta.<field>"; `clustering`, when given, replaces `by` with the exact-image or union
    components of stats.cluster_labels). Both runs are resampled with the same clusters in each draw;
    ratios are item- (group-) weighted sums over the drawn clusters. Each metric gives {"a", "b",
    "difference"} with the interval in difference.ci; a metric undefined for either run gives a reason.
    """
    fa, fb = frame(items, run_a, split), frame(items, run_b, split)
    if fa.empty:
        reason = f"no items in split {split!r}"
        return {m: Rate.undefined(reason) for m in COMPARED}
    fb = fb.set_index("item_id").loc[fa["item_id"]].reset_index()
    if clustering is not None:
        scope = _scope(items, split)  # the item columns (images among them) that frame() leaves out
        label = dict(zip(scope["item_id"], stats.cluster_labels(scope, clustering), strict=True))
        keys = fa["item_id"].map(label)
    else:
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
    out: dict[str, Any] = {"clusters": len(clusters), "draws": draws, "seed": seed, "level": level,
                           "clustering": clustering.label if clustering is not None else by}
    for i, m in enumerate(COMPARED):
        diff = _diff(mb[m], ma[m], f"{m} is undefined for one of the runs")
        if diff.value is not None and np.isfinite(lo[i]) and np.isfinite(hi[i]):
            diff.ci = (float(lo[i]), float(hi[i]))
        out[m] = {"a": ma[m], "b": mb[m], "difference": diff}
    return out


# --------------------------------------------------------------------------- several runs: seeds, input modes


def multi_seed(items: pd.DataFrame, runs: Sequence[RunData], split: str | None = "test",
               ignore: Iterable[str] = ("seed",)) -> dict[str, Any]:
    """Mean and sample SD (ddof 1) over runs that differ only in seed (000 Table 11, Table 6a, Table 6b).

    Each metric's mean and SD are taken over the unrounded per-run rates (stats.mean_sd); values lists
    the per-run rates in run order. SEED_METRICS come from each run's rotation-0 / repeat-0 answers, Table 6b's
    vanilla / circular / consistency from its rotations (rotations(); a reason when a run has no rotation
    besides 0). Runs whose settings differ in a key outside `ignore` (and bookkeeping
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
    per_run = [core_metrics(_outcomes(items, r, split)) for r in runs]
    for p, r in zip(per_run, runs, strict=True):
        rot = rotations(items, r, split)
        p.update({m: rot[m] for m in ROTATION_SEED_METRICS})
    out: dict[str, Any] = {"runs": [r.name for r in runs], "seeds": seeds}
    for m in (*SEED_METRICS, *ROTATION_SEED_METRICS):
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
    ident = _identity
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
        mine, theirs = core_metrics(_outcomes(items, run, split)), core_metrics(_outcomes(items, partner, split))
        keys = ("accuracy", "fq1_gem", "nts", "dis")
        out[other_mode] = {
            "partner": partner.name,
            "delta": {k: _diff(mine[k], theirs[k], f"{k} is undefined for one of the runs") for k in keys},
            "partner_scores": {k: theirs[k] for k in keys},
            "turnover": turnover(items, partner, run, split),
            "decomposition": decompose_change(items, partner, run, split),
        }
    return out
