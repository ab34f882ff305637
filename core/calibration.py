"""Judge calibration (paper 002 App. C.3, C.4, D.4): the frozen stratified sample, judge-human agreement,
the human ceiling, first-failure attribution under judge vs human consensus, second-judge robustness, and
error-audit summaries. Pure: frames in, dicts of Rates / numbers out; see docs/JUDGE.md for every rule.

Label frames handed in ("long" form): labeler, kind (judge | human), item_id, rotation, repeat, S1..S4 (the
store's stage columns) with 1 / 0 / None (None = not labeled at that stage). A trace key is (item_id, rotation,
repeat). What is the family's (the strata of a sample, the first-failure rule, the error audit) comes from its
`StageJudging` (core.families.stage_judging), handed in as `judging`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from core import stats
from core.errors import CalibrationChoice
from core.families.stage_judging import StageJudging
from core.schema import STAGES, Rate, RunData

KEY = ["item_id", "rotation", "repeat"]
DEFAULT_PER_OPERATION = 20


# --------------------------------------------------------------------------- the sample (C.3)


def _allocate(sizes: list[int], total: int) -> list[int]:
    """Spread `total` draws over bins as evenly as their sizes allow (a short bin's share goes to the others)."""
    take = [0] * len(sizes)
    left = min(total, sum(sizes))
    while left > 0:
        open_bins = [i for i, s in enumerate(sizes) if take[i] < s]
        share, extra = divmod(left, len(open_bins))
        for rank, i in enumerate(open_bins):
            add = min(sizes[i] - take[i], share + (1 if rank < extra else 0))
            take[i] += add
            left -= add
    return take


def _bins(frame: pd.DataFrame, bins: Iterable[str] | None) -> tuple[str, ...]:
    """The outcome bins in order: the family's (`StageJudging.outcome_bins`), else those present, sorted."""
    return tuple(bins) if bins is not None else tuple(sorted({str(b) for b in frame["outcome"].dropna()}))


def draw_sample(strata: pd.DataFrame, per_operation: int = DEFAULT_PER_OPERATION, seed: int = 0,
                bins: Iterable[str] | None = None) -> pd.DataFrame:
    """A seeded stratified sample of a family's trace strata (`StageJudging.trace_strata`): `per_operation`
    traces per operation (the stratum column), spread evenly over the outcome `bins` (StemBind, C.3: 20 per
    operation over F correct / F wrong with R correct / F wrong with R wrong). An operation with fewer traces
    gives all it has. Deterministic for a given seed and input (keys are sorted first); the result is shuffled
    once (seeded) so annotators do not see the strata in blocks. Adds `position` (0..)."""
    if per_operation < 1:
        raise ValueError("per_operation must be at least 1")
    order = _bins(strata, bins)
    rng = np.random.default_rng(seed)
    frame = strata.sort_values(KEY).reset_index(drop=True)
    picked = []
    ops = sorted({str(o) for o in frame["operation"].fillna("(none)")})
    for op in ops:
        sub = frame[frame["operation"].fillna("(none)").astype(str) == op]
        pools = [sub[sub["outcome"] == b] for b in order]
        take = _allocate([len(p) for p in pools], per_operation)
        for pool, k in zip(pools, take, strict=True):
            if k:
                picked.append(pool.iloc[np.sort(rng.permutation(len(pool))[:k])])
    if not picked:
        return frame.iloc[0:0].assign(position=pd.Series(dtype=int))
    sample = pd.concat(picked, ignore_index=True)
    sample = sample.iloc[rng.permutation(len(sample))].reset_index(drop=True)
    sample["position"] = np.arange(len(sample))
    return sample


def sample_summary(sample: pd.DataFrame, bins: Iterable[str] | None = None) -> pd.DataFrame:
    """Counts per operation x outcome bin (rows: operations; columns: `bins` as draw_sample orders them, and
    total)."""
    order = list(_bins(sample, bins)) if len(sample) or bins is not None else []
    if len(sample) == 0:
        return pd.DataFrame(columns=["operation", *order, "total"])
    tab = pd.crosstab(sample["operation"].fillna("(none)"), sample["outcome"]).reindex(columns=order, fill_value=0)
    tab["total"] = tab.sum(axis=1)
    return tab.reset_index().rename(columns={"index": "operation"})


# --------------------------------------------------------------------------- label sets


def judge_labels(judgements: pd.DataFrame) -> pd.DataFrame:
    """Judgements (judge, item_id, rotation, repeat, S1..S4, status) as long labels of kind judge; only
    status ok counts (a malformed judgement is no label)."""
    if judgements is None or len(judgements) == 0:
        return pd.DataFrame(columns=["labeler", "kind", *KEY, *STAGES])
    j = judgements[judgements["status"] == "ok"] if "status" in judgements else judgements
    return pd.DataFrame({"labeler": j["judge"].astype(str), "kind": "judge", "item_id": j["item_id"],
                         "rotation": j["rotation"].astype(int), "repeat": j["repeat"].astype(int),
                         **{s: list(j[s]) for s in STAGES}})


def long_labels(*frames: pd.DataFrame | None) -> pd.DataFrame:
    """Stack label frames (labeler, kind, item_id, rotation, repeat, S1..S4) into one; keys as ints."""
    cols = ["labeler", "kind", *KEY, *STAGES]
    parts = [f[cols] for f in frames if f is not None and len(f)]
    if not parts:
        return pd.DataFrame(columns=cols)
    out = pd.concat(parts, ignore_index=True)
    out["rotation"] = out["rotation"].astype(int)
    out["repeat"] = out["repeat"].astype(int)
    for s in STAGES:
        out[s] = pd.Series([None if v is None or (isinstance(v, float) and np.isnan(v)) else int(v) for v in out[s]],
                           index=out.index, dtype=object)
    if out.duplicated(["labeler", *KEY]).any():
        raise ValueError("one labeler has several labels for one trace (a judge name clashes with a label name?)")
    return out


def restrict(labels: pd.DataFrame, keys: Iterable[tuple[str, int, int]] | None) -> pd.DataFrame:
    """Only the traces in `keys` (None keeps all)."""
    if keys is None:
        return labels
    want = {(str(a), int(b), int(c)) for a, b, c in keys}
    mask = [(i, int(r), int(p)) in want for i, r, p in zip(labels["item_id"], labels["rotation"], labels["repeat"],
                                                              strict=True)]
    return labels[mask]


# --------------------------------------------------------------------------- agreement (C.3, C.4)


def _order(labelers: pd.DataFrame) -> list[tuple[str, str]]:
    """(name, kind) with judges first, then humans, each alphabetical."""
    pairs = {(str(n), str(k)) for n, k in zip(labelers["labeler"], labelers["kind"], strict=True)}
    return sorted(pairs, key=lambda p: (p[1] != "judge", p[0]))


def pair_kind(a_kind: str, b_kind: str) -> str:
    return "-".join(sorted((a_kind, b_kind), key=lambda k: k != "judge"))


def agreement(a: Iterable[Any], b: Iterable[Any]) -> dict[str, Any]:
    """Cohen's kappa (equal to sklearn's) and raw agreement of two label sequences, n, and the reason kappa is
    undefined (no overlap, or both raters use one and the same class only)."""
    xa, xb = list(a), list(b)
    kappa, reason = stats.cohen_kappa(xa, xb)
    raw = stats.raw_agreement(xa, xb)
    return {"kappa": kappa, "agreement": raw.value, "k": raw.k, "n": len(xa),
            "reason": reason if kappa is None else None}


SMALL_N = 30  # fewer paired labels than this: the kappa note says the interval is wide and kappa unstable
# Where the kappa interval's coverage was checked by simulation (bench/kappa_coverage.py: at least 90% of the
# 95% intervals hold the true kappa at n 10-200 and prevalence 0.5-0.95, and so, by symmetry, 0.05-0.5); outside
# it the note says so.
CHECKED_MIN_N = 10
CHECKED_PREVALENCE = (0.05, 0.95)


def kappa_details(a: Iterable[Any], b: Iterable[Any], clusters: Iterable[Any],
                  draws: int = stats.DEFAULT_DRAWS, seed: int | None = stats.DEFAULT_SEED) -> dict[str, Any]:
    """What a reader needs beside a kappa: its 95% interval (core.stats.cluster_bootstrap_kappa: the cluster
    bootstrap with Jeffreys' prior, clusters = the traces' items; None when kappa is undefined), the prevalence
    (share of label 1, "stage correct", over both labelers' labels; a prevalence near 0 or 1 keeps kappa low at
    high raw agreement), a small-n note (n < SMALL_N) and `kappa_note`, a plain sentence where the kappa or its
    interval must not be read at face value: one labeler gave a single label (kappa is 0 whatever the
    agreement), or n or the prevalence lies outside the range where the interval's coverage was checked."""
    xa, xb, keys = list(a), list(b), list(clusters)
    ci = stats.cluster_bootstrap_kappa(xa, xb, keys, draws=draws, seed=seed) if xa else None
    both = xa + xb
    prevalence = (sum(1 for x in both if x == 1) / len(both)) if both else None
    note = None
    if 0 < len(xa) < SMALL_N:
        note = f"n = {len(xa)} < {SMALL_N}: kappa is unstable at this size (see its interval)"
    return {"kappa_ci": ci, "prevalence": prevalence, "small_n": note,
            "kappa_note": _kappa_note(xa, xb, prevalence) if ci is not None else None}


def _kappa_note(xa: list[Any], xb: list[Any], prevalence: float | None) -> str | None:
    """The caveat of a defined kappa (kappa_details), or None."""
    single = [who for who, x in (("one labeler", xa), ("the other", xb)) if len(set(x)) == 1]
    if single:
        return (f"kappa is 0 by construction: {single[0]} gave the same label to all {len(xa)} traces, so chance "
                "alone explains the agreement; kappa cannot tell how well they agree here")
    lo, hi = CHECKED_PREVALENCE
    if len(xa) < CHECKED_MIN_N:
        return (f"n = {len(xa)}: too few labels to trust the interval (its coverage was checked from n = "
                f"{CHECKED_MIN_N})")
    if prevalence is not None and not lo <= prevalence <= hi:
        return (f"prevalence {100 * prevalence:.0f}%: one label is so rare that the interval is only a rough "
                f"guide (its coverage was checked for prevalences {100 * lo:.0f}-{100 * hi:.0f}%)")
    return None


def pairwise(labels: pd.DataFrame) -> list[dict[str, Any]]:
    """Per stage, every pair of labelers over the traces both labeled at that stage:
    {a, b, a_kind, b_kind, pair_kind, stage, kappa, agreement, k, n, reason, kappa_ci, prevalence, small_n,
    kappa_note}."""
    out = []
    order = _order(labels)
    by = {name: df.set_index(KEY) for name, df in labels.groupby("labeler")}
    for (a, ak), (b, bk) in combinations(order, 2):
        both = pd.merge(by[a][list(STAGES)], by[b][list(STAGES)], how="inner", left_index=True, right_index=True,
                        suffixes=("_a", "_b"))
        for s in STAGES:
            pair = both[[f"{s}_a", f"{s}_b"]].dropna()
            res = agreement(pair[f"{s}_a"].astype(int), pair[f"{s}_b"].astype(int))
            res.update(kappa_details(pair[f"{s}_a"].astype(int), pair[f"{s}_b"].astype(int),
                                     pair.index.get_level_values("item_id")))
            if res["n"] == 0:
                res["reason"] = "no trace labeled at this stage by both"
            out.append({"a": a, "b": b, "a_kind": ak, "b_kind": bk, "pair_kind": pair_kind(ak, bk), "stage": s,
                        **res})
    return out


def parse_pairs(text: str | None) -> list[tuple[str, str]] | None:
    """`--ceiling` text "A2,A3;A1,A2" as [("A2", "A3"), ("A1", "A2")]; empty or None -> None (every pair)."""
    if text is None or not str(text).strip():
        return None
    out: list[tuple[str, str]] = []
    for group in str(text).split(";"):
        names = [n.strip() for n in group.split(",")]
        if len(names) != 2 or not all(names):
            raise CalibrationChoice(f"ceiling pair {group.strip()!r}: expected two annotator names NAME,NAME "
                                    "(several pairs separated by ';')")
        if names[0] == names[1]:
            raise CalibrationChoice(f"ceiling pair {group.strip()!r}: an annotator cannot be paired with itself")
        out.append((names[0], names[1]))
    return out


def parse_names(text: str | None) -> list[str] | None:
    """`--consensus` text "A2,A3" as ["A2", "A3"]; empty or None -> None (every annotator)."""
    if text is None or not str(text).strip():
        return None
    names = [n.strip() for n in str(text).split(",")]
    if not all(names):
        raise CalibrationChoice(f"consensus annotators {text!r}: expected NAME,NAME,... without empty names")
    if len(set(names)) != len(names):
        raise CalibrationChoice(f"consensus annotators {text!r}: a name is given twice")
    return names


def annotators(labels: pd.DataFrame) -> list[str]:
    """The human labelers of `labels`, alphabetical."""
    return sorted({str(n) for n, k in zip(labels["labeler"], labels["kind"], strict=True) if k == "human"}) if len(
        labels) else []


def check_annotators(labels: pd.DataFrame, names: Iterable[str], what: str) -> None:
    """Every name is an annotator (human labeler) of `labels`, else CalibrationChoice naming the known ones."""
    known = annotators(labels)
    judges = {str(n) for n, k in zip(labels["labeler"], labels["kind"], strict=True) if k == "judge"} if len(
        labels) else set()
    for n in names:
        if n in judges:
            raise CalibrationChoice(f"{what}: {n!r} is a judge, not an annotator (annotators: "
                                    f"{', '.join(known) or 'none'})")
        if n not in known:
            raise CalibrationChoice(f"{what}: no annotator named {n!r} labeled these traces (annotators: "
                                    f"{', '.join(known) or 'none'})")


def human_ceiling(pairs: list[dict[str, Any]], chosen: Iterable[tuple[str, str]] | None = None) -> dict[str, Any]:
    """Per stage, the human ceiling: the mean kappa over the chosen annotator pairs with a defined kappa (C.3:
    "the A2-A3 pair ... serves as a human-human ceiling"); `chosen=None` takes every annotator pair. Each
    stage names the pairs it averaged (`pairs`)."""
    want = None if chosen is None else {frozenset(p) for p in chosen}
    out: dict[str, Any] = {}
    for s in STAGES:
        hh = [p for p in pairs if p["pair_kind"] == "human-human" and p["stage"] == s
              and (want is None or frozenset((p["a"], p["b"])) in want)]
        defined = [p for p in hh if p["kappa"] is not None]
        if not hh:
            out[s] = {"kappa": None, "n_pairs": 0, "pairs": [],
                      "reason": "fewer than two annotators labeled the same traces" if want is None
                      else "the chosen annotators labeled no trace in common"}
        elif not defined:
            out[s] = {"kappa": None, "n_pairs": len(hh), "pairs": [],
                      "reason": "; ".join(sorted({p["reason"] for p in hh}))}
        else:
            ks = [p["kappa"] for p in defined]
            out[s] = {"kappa": float(np.mean(ks)), "n_pairs": len(defined), "reason": None,
                      "pairs": [[p["a"], p["b"]] for p in defined], "min": float(min(ks)), "max": float(max(ks))}
    return out


def judge_vs_ceiling(pairs: list[dict[str, Any]], ceiling: dict[str, Any]) -> dict[str, Any]:
    """For each judge and stage: mean kappa against the annotators, and its gap to the human ceiling."""
    judges = sorted({p["a"] if p["a_kind"] == "judge" else p["b"] for p in pairs if p["pair_kind"] == "judge-human"})
    out: dict[str, Any] = {}
    for j in judges:
        row = {}
        for s in STAGES:
            ks = [p["kappa"] for p in pairs if p["pair_kind"] == "judge-human" and p["stage"] == s
                  and j in (p["a"], p["b"]) and p["kappa"] is not None]
            mean = float(np.mean(ks)) if ks else None
            ceil = ceiling.get(s, {}).get("kappa")
            row[s] = {"kappa_vs_humans": mean, "ceiling": ceil,
                      "gap": None if mean is None or ceil is None else float(ceil - mean),
                      "reason": None if ks else "no defined judge-annotator kappa at this stage"}
        out[j] = row
    return out


# --------------------------------------------------------------------------- consensus and first failure


def consensus(labels: pd.DataFrame, of: Iterable[str] | None = None) -> pd.DataFrame:
    """Human consensus per trace and stage: the majority flag of the annotators in `of` (default: every
    annotator) who labeled it; a tie is None (with two annotators, C.3's A2/A3 consensus: a flag where they
    agree). Columns: item_id, rotation, repeat, S1..S4, n_annotators."""
    humans = labels[labels["kind"] == "human"]
    if of is not None:
        humans = humans[humans["labeler"].astype(str).isin(set(of))]
    cols = [*KEY, *STAGES, "n_annotators"]
    if len(humans) == 0:
        return pd.DataFrame(columns=cols)
    rows = []
    for key, g in humans.groupby(KEY, sort=True):
        row: dict[str, Any] = dict(zip(KEY, key, strict=True))
        for s in STAGES:
            vals = [v for v in g[s] if v is not None and v == v]
            ones = sum(int(v) for v in vals)
            zeros = len(vals) - ones
            row[s] = None if ones == zeros else int(ones > zeros)
        row["n_annotators"] = len(g)
        rows.append(row)
    out = pd.DataFrame(rows, columns=cols)
    for s in STAGES:
        out[s] = pd.Series([None if v is None or v != v else int(v) for v in out[s]], index=out.index, dtype=object)
    return out


def first_failure_distribution(judge: pd.DataFrame, human: pd.DataFrame, strata: pd.DataFrame | None = None, *,
                               judging: StageJudging) -> dict[str, Any]:
    """First-failure shares under one judge vs the human consensus on the same traces (C.3), on the traces
    answered wrong (F-wrong) when `strata` says which are wrong (else on all traces both labeled); the rule is
    `judging`'s (a judge's unknown stage is skipped, the consensus stops at one: undecided)."""
    stages = judging.stages
    j = judge.set_index(KEY)[list(stages)]
    h = human.set_index(KEY)[list(stages)]
    both = pd.merge(j, h, how="inner", left_index=True, right_index=True, suffixes=("_j", "_h"))
    scope = "traces labeled by the judge and the annotators"
    if strata is not None and len(strata):
        wrong = strata.loc[~strata["f_correct"].astype(bool), KEY]
        wrong_keys = {(str(a), int(b), int(c)) for a, b, c in wrong.itertuples(index=False)}
        both = both[[k in wrong_keys for k in both.index]]
        scope = f"{judging.judged_kind}-wrong " + scope
    n = len(both)
    undecided = judging.undecided
    names = [*stages, judging.no_failure, undecided]
    jf = [judging.first_failure(row, unknown=judging.skip)
          for row in both[[f"{s}_j" for s in stages]].itertuples(index=False)]
    hf = [judging.first_failure(row, unknown=judging.stop)
          for row in both[[f"{s}_h" for s in stages]].itertuples(index=False)]
    out: dict[str, Any] = {"scope": scope, "n": n,
                           "judge": {s: Rate.of(jf.count(s), n, "traces") for s in names if s != undecided},
                           "human": {s: Rate.of(hf.count(s), n, "traces") for s in names}}
    known = [(a, b) for a, b in zip(jf, hf, strict=True) if b != undecided]
    out["same_first_failure"] = Rate.of(sum(a == b for a, b in known), len(known), "traces with a decided consensus")
    if n:
        out["leading"] = {"judge": max(stages, key=lambda s: jf.count(s)),
                          "human": max(stages, key=lambda s: hf.count(s))}
    return out


def inconsistency(labels: pd.DataFrame, judging: StageJudging) -> dict[str, Rate]:
    """Per labeler, the share of its labels whose flags put a true stage after a false one."""
    out = {}
    for name, g in labels.groupby("labeler"):
        flags = [[None if v is None or v != v else bool(v) for v in row] for row in
                 g[list(judging.stages)].itertuples(index=False)]
        out[str(name)] = Rate.of(sum(judging.inconsistent(f) for f in flags), len(flags), "labels")
    return out


# --------------------------------------------------------------------------- second judge (C.4)


def stage_accuracy(labels: pd.DataFrame) -> dict[str, Rate]:
    """L2 StepAcc per stage: share of traces marked correct among those with a known flag."""
    out = {}
    for s in STAGES:
        known = [int(v) for v in labels[s] if v is not None and v == v]
        out[s] = Rate.of(sum(known), len(known), f"traces with a known {s} flag")
    return out


def weakest_stage(acc: Mapping[str, Rate]) -> str | None:
    vals = {s: r.value for s, r in acc.items() if r.value is not None}
    return min(vals, key=lambda s: (vals[s], STAGES.index(s))) if vals else None


def second_judge(first: str, second: str, labels: pd.DataFrame,
                 by_run: Mapping[str, tuple[pd.DataFrame, pd.DataFrame]]) -> dict[str, Any]:
    """Second judge vs first (C.4): per-stage kappa / agreement on the traces both judged in `labels`; per
    model run, stage accuracies under each judge; Spearman rho of the model ranking by each stage's accuracy
    (needs >= 2 runs); whether each run's weakest stage is the same under both judges (k of n runs)."""
    sub = labels[labels["labeler"].isin([first, second])]
    pairs = [p for p in pairwise(sub) if {p["a"], p["b"]} == {first, second}]
    for p in pairs:  # report as first (a) vs second (b)
        if p["a"] != first:
            p["a"], p["b"], p["a_kind"], p["b_kind"] = first, second, p["b_kind"], p["a_kind"]
    runs: dict[str, Any] = {}
    for run, (fa, fb) in sorted(by_run.items()):
        acc_a, acc_b = stage_accuracy(fa), stage_accuracy(fb)
        wa, wb = weakest_stage(acc_a), weakest_stage(acc_b)
        runs[run] = {"first": acc_a, "second": acc_b, "weakest_first": wa, "weakest_second": wb,
                     "weakest_preserved": None if wa is None or wb is None else wa == wb}
    decided = [r for r in runs.values() if r["weakest_preserved"] is not None]
    out: dict[str, Any] = {"first": first, "second": second, "pairs": pairs, "runs": runs,
                           "weakest_preserved": Rate.of(sum(r["weakest_preserved"] for r in decided), len(decided),
                                                        "runs judged by both")}
    rho: dict[str, Any] = {}
    shift: dict[str, Any] = {}
    for s in STAGES:
        xs = [(r["first"][s].value, r["second"][s].value) for r in runs.values()]
        xs = [x for x in xs if x[0] is not None and x[1] is not None]
        value, reason = stats.spearman([x[0] for x in xs], [x[1] for x in xs]) if len(xs) >= 2 else (
            None, "fewer than 2 model runs judged by both judges")
        rho[s] = {"rho": value, "n_runs": len(xs), "reason": reason}
        shift[s] = (float(np.mean([x[1] - x[0] for x in xs])) if xs else None)
    out["spearman"] = rho
    out["mean_shift"] = shift
    return out


# --------------------------------------------------------------------------- error audit (D.4)


def audit_categories(human: pd.DataFrame) -> pd.DataFrame:
    """One error-audit category per trace from the annotators' labels: the most frequent category (None =
    no error counts as a value); ties go to the alphabetically first annotator's category."""
    rows = []
    for key, g in human.sort_values("labeler").groupby(KEY, sort=True):
        cats = [c if isinstance(c, str) and c else None for c in g["category"]]
        counts: dict[Any, int] = {}
        for c in cats:
            counts[c] = counts.get(c, 0) + 1
        top = max(counts.values())
        pick = next(c for c in cats if counts[c] == top)
        rows.append({**dict(zip(KEY, key, strict=True)), "category": pick})
    return pd.DataFrame(rows, columns=[*KEY, "category"])


def _strategy(run: RunData) -> str:
    return str((run.config or {}).get("strategy") or "direct")


def error_audit_summary(items: pd.DataFrame, runs: Mapping[str, RunData],
                        labels: Mapping[str, pd.DataFrame], judging: StageJudging) -> dict[str, Any]:
    """Error-audit categories per 100 judged items (`judging.error_audit`; StemBind: D.4, Table 25) and by
    trace-length tercile: per run, and pooled per strategy (direct vs thinking; terciles within the pooled
    strategy, as in D.4). `labels` maps a run name to its human labels with a category column."""
    error_audit = judging.error_audit
    families: dict[str, str] = {}
    per_run: dict[str, Any] = {}
    pooled_items: dict[str, list[pd.DataFrame]] = {}
    pooled_preds: dict[str, list[pd.DataFrame]] = {}
    pooled_labels: dict[str, list[pd.DataFrame]] = {}
    for name, run in sorted(runs.items()):
        lab = labels.get(name)
        if lab is None or len(lab) == 0:
            continue
        cats = audit_categories(lab)
        res = error_audit(items, run, cats)
        per_run[name] = {"strategy": _strategy(run), **res}
        if "reason" in res and len(res) == 1:
            continue
        strat = _strategy(run)
        tag = name + "\x1f"
        families.setdefault(strat, run.family)
        pooled_items.setdefault(strat, []).append(items.assign(item_id=tag + items["item_id"]))
        pooled_preds.setdefault(strat, []).append(run.preds.assign(item_id=tag + run.preds["item_id"]))
        pooled_labels.setdefault(strat, []).append(cats.assign(item_id=tag + cats["item_id"]))
    by_strategy: dict[str, Any] = {}
    for strat in sorted(pooled_items):
        pitems = pd.concat(pooled_items[strat], ignore_index=True)
        prun = RunData(name=f"pooled {strat}", benchmark="", family=families[strat], config={"strategy": strat},
                       preds=pd.concat(pooled_preds[strat], ignore_index=True))
        res = error_audit(pitems, prun, pd.concat(pooled_labels[strat], ignore_index=True))
        by_strategy[strat] = {"runs": sorted(n for n, r in per_run.items() if r["strategy"] == strat), **res}
    if not per_run:
        return {"reason": "no annotator label with an error-audit category on these runs"}
    return {"by_run": per_run, "by_strategy": by_strategy}


# --------------------------------------------------------------------------- the whole report


def report(labels: pd.DataFrame, strata: pd.DataFrame | None = None, primary_judge: str | None = None,
           second: tuple[str, Mapping[str, tuple[pd.DataFrame, pd.DataFrame]]] | None = None,
           ceiling: Iterable[tuple[str, str]] | None = None, consensus_of: Iterable[str] | None = None, *,
           judging: StageJudging) -> dict[str, Any]:
    """The Calibration tab and `calibration --json` in one dict: labelers, pairs, human ceiling, judge gaps,
    first-failure distribution (primary judge vs human consensus), inconsistency, second judge.

    `ceiling`: the annotator pairs whose kappa is the human ceiling (C.3: A2-A3; default every annotator
    pair); `consensus_of`: the annotators whose majority is the human consensus (C.3: A2/A3; default all).
    `ceiling_pairs` and `consensus_of` in the result name what was used; a name that is no annotator of
    `labels` raises CalibrationChoice."""
    chosen = None if ceiling is None else [(str(a), str(b)) for a, b in ceiling]
    cons = None if consensus_of is None else list(consensus_of)
    if chosen is not None:
        check_annotators(labels, [n for p in chosen for n in p], "ceiling")
    if cons is not None:
        check_annotators(labels, cons, "consensus")
    names = labels.groupby(["labeler", "kind"]).size().reset_index(name="n") if len(labels) else None
    out: dict[str, Any] = {
        "labelers": [] if names is None else [{"name": r.labeler, "kind": r.kind, "n": int(r.n)}
                                              for r in names.itertuples(index=False)],
        "n_traces": int(labels[KEY].drop_duplicates().shape[0]) if len(labels) else 0,
    }
    pairs = pairwise(labels) if len(labels) else []
    out["pairs"] = pairs
    ceiling_stages = human_ceiling(pairs, chosen)
    humans_all = annotators(labels)
    out["ceiling_pairs"] = ([list(p) for p in chosen] if chosen is not None
                            else [list(p) for p in combinations(humans_all, 2)])
    out["ceiling_rule"] = "chosen pairs" if chosen is not None else "every annotator pair"
    out["consensus_of"] = cons if cons is not None else humans_all
    out["consensus_rule"] = "chosen annotators" if cons is not None else "every annotator"
    out["human_ceiling"] = ceiling_stages
    out["judge_vs_ceiling"] = judge_vs_ceiling(pairs, ceiling_stages)
    out["inconsistent"] = inconsistency(labels, judging) if len(labels) else {}
    judges = [n for n, k in _order(labels) if k == "judge"] if len(labels) else []
    humans = labels[labels["kind"] == "human"] if len(labels) else labels
    primary = primary_judge or (judges[0] if judges else None)
    if primary is None:
        out["first_failure"] = {"reason": "no judge labels on these traces"}
    elif len(humans) == 0:
        out["first_failure"] = {"reason": "no annotator labels on these traces"}
    else:
        jl = labels[labels["labeler"] == primary]
        out["first_failure"] = {"judge_name": primary,
                                **first_failure_distribution(jl, consensus(labels, cons), strata, judging=judging)}
    if second is None:
        out["second_judge"] = {"reason": "needs two judges on these traces (choose a second judge)"}
    else:
        out["second_judge"] = second_judge(primary or "", second[0], labels, second[1])
    return out
