"""Calibration: kappa / agreement equal scikit-learn's (random sets and degenerate cases), pairwise tables over
traces both labeled, the frozen stratified sample, consensus first failure, the second judge, and
`calibration --json` over a real store with a judge run and imported labels."""

from __future__ import annotations

import argparse
import json
import math
import re

import numpy as np
import pandas as pd
import pytest
from conftest import copy_store
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score

import app
from cli.commands import cmd_calibration
from core import calibration as cal
from core.errors import CalibrationChoice
from core.families.stembind import judging as sbj
from core.families.stembind.judging import JUDGING
from core.judge import LexicalJudge
from core.schema import to_jsonable
from db import judge_runs, judging
from db.importers import import_labels
from db.store import Store

RUN = "synth-sb-binder-weak"


@pytest.mark.parametrize("seed", range(12))
def test_kappa_and_agreement_equal_sklearn_on_random_sets(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    p = rng.uniform(0.1, 0.9)
    a = (rng.random(n) < p).astype(int)
    b = np.where(rng.random(n) < rng.uniform(0.5, 0.95), a, 1 - a)
    res = cal.agreement(a, b)
    want = cohen_kappa_score(a, b)
    if math.isnan(want):
        assert res["kappa"] is None and res["reason"]
    else:
        assert res["kappa"] == pytest.approx(want, abs=1e-12)
    assert res["agreement"] == pytest.approx(float(np.mean(a == b)))
    assert res["n"] == n


@pytest.mark.parametrize("a, b", [
    ([1, 1, 1], [1, 1, 1]),        # one class, both raters: undefined
    ([0, 0], [0, 0]),
    ([1, 1, 1, 1], [1, 0, 1, 1]),  # one rater constant: kappa 0
    ([1, 0, 1, 0], [0, 1, 0, 1]),  # total disagreement: -1
    ([1, 0], [1, 0]),              # perfect: 1
    ([1], [0]),
])
def test_kappa_degenerate_cases_match_sklearn(a, b):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = cohen_kappa_score(a, b)
    res = cal.agreement(a, b)
    if math.isnan(want):
        assert res["kappa"] is None and "single class" in res["reason"]
    else:
        assert res["kappa"] == pytest.approx(want) and res["reason"] is None


def test_no_overlap_has_a_reason():
    res = cal.agreement([], [])
    assert res["kappa"] is None and res["n"] == 0 and res["reason"]


def _long(rows):
    return cal.long_labels(pd.DataFrame(rows, columns=["labeler", "kind", "item_id", "rotation", "repeat",
                                                       "S1", "S2", "S3", "S4"]))


def test_pairwise_uses_only_traces_both_labeled_and_known_stages():
    rows = []
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 2, size=(30, 4))
    for who, kind, keep, noise in (("J", "judge", range(30), 0.1), ("A1", "human", range(0, 20), 0.15),
                                   ("A2", "human", range(10, 30), 0.15)):
        for i in keep:
            flags = [int(v) if rng.random() > noise else 1 - int(v) for v in truth[i]]
            if who == "A2" and i == 15:
                flags[2] = None  # A2 left S3 unlabeled on one trace
            rows.append([who, kind, f"t{i}", 0, 0, *flags])
    labels = _long(rows)
    pairs = cal.pairwise(labels)
    assert {(p["a"], p["b"]) for p in pairs} == {("J", "A1"), ("J", "A2"), ("A1", "A2")}
    by = labels.set_index(["labeler", "item_id"])
    for p in pairs:
        both = sorted(set(by.loc[p["a"]].index) & set(by.loc[p["b"]].index))
        xa = [by.loc[(p["a"], t), p["stage"]] for t in both]
        xb = [by.loc[(p["b"], t), p["stage"]] for t in both]
        keep = [i for i in range(len(both)) if xa[i] is not None and xb[i] is not None]
        assert p["n"] == len(keep)
        assert p["kappa"] == pytest.approx(cohen_kappa_score([xa[i] for i in keep], [xb[i] for i in keep]))
    a1a2 = [p for p in pairs if p["pair_kind"] == "human-human"]
    assert {p["n"] for p in a1a2 if p["stage"] != "S3"} == {10} and [p["n"] for p in a1a2 if p["stage"] == "S3"] == [9]
    ceiling = cal.human_ceiling(pairs)
    assert ceiling["S1"]["kappa"] == pytest.approx([p for p in a1a2 if p["stage"] == "S1"][0]["kappa"])
    gaps = cal.judge_vs_ceiling(pairs, ceiling)["J"]
    for s in ("S1", "S2", "S3", "S4"):
        jh = [p["kappa"] for p in pairs if p["pair_kind"] == "judge-human" and p["stage"] == s]
        assert gaps[s]["kappa_vs_humans"] == pytest.approx(np.mean(jh))


def test_consensus_and_first_failure_distribution():
    labels = _long([
        ["J", "judge", "a", 0, 0, 1, 1, 0, 0], ["H1", "human", "a", 0, 0, 1, 1, 0, 0],
        ["H2", "human", "a", 0, 0, 1, 0, 0, 0],                 # tie at S2 -> undecided
        ["J", "judge", "b", 0, 0, 1, 0, 1, 1], ["H1", "human", "b", 0, 0, 1, 0, 0, 0],
        ["H2", "human", "b", 0, 0, 1, 0, 1, 0],                 # both say S2 -> S2
        ["J", "judge", "c", 0, 0, 1, 1, 1, 1], ["H1", "human", "c", 0, 0, 1, 1, 1, 1],
        ["H2", "human", "c", 0, 0, 1, 1, 1, 1],
    ])
    cons = cal.consensus(labels).set_index("item_id")
    assert cons.loc["a", "S2"] is None and cons.loc["b", "S2"] == 0 and cons.loc["c", "S4"] == 1
    strata = pd.DataFrame({"item_id": ["a", "b", "c"], "rotation": 0, "repeat": 0, "f_correct": [False, False, True]})
    ff = cal.first_failure_distribution(labels[labels["labeler"] == "J"], cons.reset_index(), strata, judging=JUDGING)
    assert ff["n"] == 2 and ff["scope"].startswith("F-wrong")
    assert ff["judge"]["S3"].k == 1 and ff["judge"]["S2"].k == 1
    assert ff["human"]["undecided"].k == 1 and ff["human"]["S2"].k == 1
    assert ff["same_first_failure"].k == 1 and ff["same_first_failure"].n == 1


# Four traces. S1: A2 and A3 agree everywhere (kappa 1); A1 agrees with each on half the traces with both
# raters at 50% ones (kappa (0.5 - 0.5) / (1 - 0.5) = 0). S2 differs per annotator, for the consensus.
PROTOCOL_S1 = {"A1": [1, 0, 1, 0], "A2": [1, 1, 0, 0], "A3": [1, 1, 0, 0]}
PROTOCOL_S2 = {"A1": [0, 0, 1, 1], "A2": [1, 0, 1, 0], "A3": [1, 0, 0, 0]}


def _protocol_labels():
    rows = [["J", "judge", f"t{i}", 0, 0, 1, 1, 1, 1] for i in range(4)]
    for who in ("A1", "A2", "A3"):
        rows += [[who, "human", f"t{i}", 0, 0, PROTOCOL_S1[who][i], PROTOCOL_S2[who][i], 1, 1] for i in range(4)]
    return _long(rows)


@pytest.mark.parametrize(("ceiling", "kappa", "used"), [
    (None, 1 / 3, [["A1", "A2"], ["A1", "A3"], ["A2", "A3"]]),     # mean of 0, 0 and 1
    ("A2,A3", 1.0, [["A2", "A3"]]),                                 # 002 C.3: the A2-A3 pair
    ("A3,A2", 1.0, [["A3", "A2"]]),                                 # a pair in either order
    ("A1,A2;A2,A3", 0.5, [["A1", "A2"], ["A2", "A3"]]),
    ("A1,A3", 0.0, [["A1", "A3"]]),
])
def test_human_ceiling_uses_the_chosen_pairs(ceiling, kappa, used):
    rep = cal.report(_protocol_labels(), ceiling=cal.parse_pairs(ceiling), judging=JUDGING)
    assert rep["human_ceiling"]["S1"]["kappa"] == pytest.approx(kappa)
    assert rep["human_ceiling"]["S1"]["n_pairs"] == len(used)
    assert rep["ceiling_pairs"] == used
    assert rep["ceiling_rule"] == ("every annotator pair" if ceiling is None else "chosen pairs")
    gap = rep["judge_vs_ceiling"]["J"]["S1"]
    assert gap["ceiling"] == pytest.approx(kappa)


# Consensus S1 / S2 per trace, and the first failure of each trace under it (the judge passes every stage;
# S3 and S4 are 1 for everyone): a stage left undecided before the first failure makes it "undecided".
@pytest.mark.parametrize(("of", "s1", "s2", "first"), [
    (None, [1, 1, 0, 0], [1, 0, 1, 0], ["none", "S2", "S1", "S1"]),            # majority of A1, A2, A3
    ("A2,A3", [1, 1, 0, 0], [1, 0, None, 0], ["none", "S2", "S1", "S1"]),      # 002 C.3: A2/A3 consensus
    ("A1", [1, 0, 1, 0], [0, 0, 1, 1], ["S2", "S1", "none", "S1"]),
    ("A1,A3", [1, None, None, 0], [None, 0, None, None], ["undecided", "undecided", "undecided", "S1"]),
])
def test_consensus_of_the_chosen_annotators(of, s1, s2, first):
    labels = _protocol_labels()
    names = cal.parse_names(of)
    cons = cal.consensus(labels, names).set_index("item_id")
    assert [cons.loc[f"t{i}", "S1"] for i in range(4)] == s1
    assert [cons.loc[f"t{i}", "S2"] for i in range(4)] == s2
    rep = cal.report(labels, primary_judge="J", consensus_of=names, judging=JUDGING)
    assert rep["consensus_of"] == (names or ["A1", "A2", "A3"])
    human = rep["first_failure"]["human"]
    assert {k: v.k for k, v in human.items() if v.k} == {f: first.count(f) for f in set(first)}


@pytest.mark.parametrize(("ceiling", "consensus", "message"), [
    ("A2", None, "expected two annotator names"),
    ("A2,A3,A1", None, "expected two annotator names"),
    ("A2,A2", None, "paired with itself"),
    ("A2,A4", None, "no annotator named 'A4' labeled these traces (annotators: A1, A2, A3)"),
    ("J,A2", None, "'J' is a judge, not an annotator"),
    ("A2,;A2,A3", None, "expected two annotator names"),
    (None, "A2,,A3", "without empty names"),
    (None, "A2,A2", "given twice"),
    (None, "A9", "no annotator named 'A9'"),
])
def test_calibration_choices_refused_with_a_reason(ceiling, consensus, message):
    with pytest.raises(CalibrationChoice, match=re.escape(message)):
        cal.report(_protocol_labels(), ceiling=cal.parse_pairs(ceiling), consensus_of=cal.parse_names(consensus),
                   judging=JUDGING)


def test_draw_sample_is_stratified_seeded_and_deterministic():
    rows = []
    for op in ("RI-Pos", "VP-Rot"):
        for i in range(40):
            outcome = sbj.OUTCOME_BINS[0] if i < 30 else (sbj.OUTCOME_BINS[1] if i < 38 else sbj.OUTCOME_BINS[2])
            rows.append({"item_id": f"{op}-{i}", "rotation": 0, "repeat": 0, "operation": op, "outcome": outcome,
                         "f_correct": outcome == sbj.OUTCOME_BINS[0]})
    strata = pd.DataFrame(rows)
    s1 = cal.draw_sample(strata, per_operation=12, seed=7)
    s2 = cal.draw_sample(strata.sample(frac=1, random_state=1), per_operation=12, seed=7)
    assert list(s1["item_id"]) == list(s2["item_id"])  # input order does not matter
    assert list(s1["position"]) == list(range(24))
    tab = cal.sample_summary(s1).set_index("operation")
    # 12 over bins of sizes 30 / 8 / 2: 2 from the short bin, the rest shared evenly
    assert list(tab.loc["RI-Pos", list(sbj.OUTCOME_BINS)]) == [5, 5, 2]
    assert set(cal.draw_sample(strata, per_operation=12, seed=8)["item_id"]) != set(s1["item_id"])
    assert len(cal.draw_sample(strata, per_operation=100, seed=0)) == 80  # all there is


def test_second_judge_rank_and_weakest_stage():
    rng = np.random.default_rng(0)
    by_run = {}
    accs = {"m1": [0.9, 0.8, 0.4, 0.7], "m2": [0.7, 0.6, 0.3, 0.65], "m3": [0.5, 0.45, 0.2, 0.5]}
    for run, acc in accs.items():
        def frame(name, shift, run=run, acc=acc):
            rows = [[name, "judge", f"{run}-{i}", 0, 0, *[int(rng.random() < a + shift) for a in acc]]
                    for i in range(200)]
            return _long(rows)
        by_run[run] = (frame("J1", 0.0), frame("J2", 0.02))
    labels = pd.concat([by_run["m1"][0], by_run["m1"][1]], ignore_index=True)
    out = cal.second_judge("J1", "J2", labels, by_run)
    assert {p["stage"] for p in out["pairs"]} == {"S1", "S2", "S3", "S4"} and all(p["a"] == "J1" for p in out["pairs"])
    s3a = [out["runs"][r]["first"]["S3"].value for r in sorted(by_run)]
    s3b = [out["runs"][r]["second"]["S3"].value for r in sorted(by_run)]
    assert out["spearman"]["S3"]["rho"] == pytest.approx(spearmanr(s3a, s3b).statistic)
    assert out["weakest_preserved"].k == 3 and all(r["weakest_first"] == "S3" for r in out["runs"].values())
    one = cal.second_judge("J1", "J2", labels, {"m1": by_run["m1"]})
    assert one["spearman"]["S1"]["rho"] is None and "fewer than 2" in one["spearman"]["S1"]["reason"]


# ---------------------------------------------------------------------------- the store and the CLI


@pytest.fixture
def labeled_store(demo_db, tmp_path):
    db = copy_store(demo_db, tmp_path / "s")
    store = Store(db)
    judge_runs.judge_run(store, RUN, "lex", LexicalJudge(0.5))
    res = judge_runs.draw_sample(store, RUN, "cal", per_operation=4, seed=0)
    assert res["status"] == "saved"
    sample = judging.sample_frame(store, "cal")
    jf = judging.judgements_frame(store, RUN, ["lex"]).set_index("item_id")
    rng = np.random.default_rng(5)
    lines = []
    for ann in ("A1", "A2", "A3"):
        for item in sample["item_id"]:
            flags = {s: int(jf.loc[item, s]) if rng.random() > 0.2 else 1 - int(jf.loc[item, s])
                     for s in ("S1", "S2", "S3", "S4")}
            lines.append({"item_id": item, "annotator": ann, "kind": "human", **flags,
                          "category": str(rng.choice(JUDGING.audit_categories)) if rng.random() < 0.5 else None})
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    import_labels(store, path, RUN)
    return store, sample, lines


def test_sample_is_frozen_and_reusable(labeled_store):
    store, sample, _ = labeled_store
    again = judge_runs.draw_sample(store, RUN, "cal", per_operation=4, seed=0)
    assert again["status"] == "unchanged"
    with pytest.raises(judging.SampleFrozen):
        judge_runs.draw_sample(store, RUN, "cal", per_operation=4, seed=1)
    assert list(judging.sample_frame(store, "cal")["item_id"]) == list(sample["item_id"])
    assert set(sample["outcome"]) <= set(sbj.OUTCOME_BINS)
    assert (sample.groupby("operation").size() <= 4).all()


def test_calibration_json_equals_sklearn(labeled_store, capsys):
    store, sample, lines = labeled_store
    args = argparse.Namespace(command="calibration", db=store.path, run=RUN, sample="cal", judge=None,
                              second_judge=None, json=True, draw_sample=None,
                              per_operation=20, seed=0, ceiling=None, consensus=None)
    assert cmd_calibration(args) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["n_sample"] == len(sample) and rep["n_traces"] == len(sample)
    jf = judging.judgements_frame(store, RUN, ["lex"]).set_index("item_id")
    human = pd.DataFrame(lines).set_index(["annotator", "item_id"])
    assert len(rep["pairs"]) == 6 * 4  # lex, A1, A2, A3: 6 pairs x 4 stages
    for p in rep["pairs"]:
        assert set(p) >= {"a", "b", "stage", "kappa", "agreement", "n"}
        def seq(who, p=p):
            return [int(jf.loc[i, p["stage"]]) if who == "lex" else int(human.loc[(who, i), p["stage"]])
                    for i in sample["item_id"]]
        xa, xb = seq(p["a"]), seq(p["b"])
        assert p["n"] == len(sample)
        want = cohen_kappa_score(xa, xb)
        if math.isnan(want):
            assert p["kappa"] is None and p["reason"]
        else:
            assert p["kappa"] == pytest.approx(want)
        assert p["agreement"] == pytest.approx(np.mean(np.array(xa) == np.array(xb)))
    hh = [p["kappa"] for p in rep["pairs"] if p["pair_kind"] == "human-human" and p["stage"] == "S2"]
    assert rep["human_ceiling"]["S2"]["kappa"] == pytest.approx(np.mean([k for k in hh if k is not None]))
    ff = rep["first_failure"]
    assert ff["judge_name"] == "lex" and ff["scope"].startswith("F-wrong")
    assert sum(v["k"] for v in ff["human"].values()) == ff["n"]
    assert "by_strategy" in rep["error_audit"] and "thinking" in rep["error_audit"]["by_strategy"]
    assert rep["second_judge"]["reason"]


def test_calibration_second_judge_over_runs(labeled_store, capsys):
    store, _, _ = labeled_store
    for run in ("synth-sb-balanced-direct", "synth-sb-balanced-thinking"):
        judge_runs.judge_run(store, run, "lex", LexicalJudge(0.5))
    for run in (RUN, "synth-sb-balanced-direct", "synth-sb-balanced-thinking"):
        judge_runs.judge_run(store, run, "lex-strict", LexicalJudge(0.8))
    rep = judging.calibration_report(store, RUN, sample="cal", judge="lex", second="lex-strict")
    sj = rep["second_judge"]
    assert set(sj["runs"]) == {RUN, "synth-sb-balanced-direct", "synth-sb-balanced-thinking"}
    assert sj["spearman"]["S3"]["n_runs"] == 3
    assert sj["weakest_preserved"].n == 3
    from ui.calibration import second_html

    page = second_html(to_jsonable(rep))
    for run, r in to_jsonable(sj)["runs"].items():  # the mark of each run is coloured (#14 point 6)
        row = page.split(f"<td>{run}</td>", 1)[1].split("</tr>", 1)[0]
        want = "<span class='cc-correct'>✓</span>" if r["weakest_preserved"] else "<span class='cc-wrong'>✗</span>"
        assert want in row, (run, row)


def test_calibration_cli_ceiling_and_consensus(labeled_store, capsys):
    store, sample, lines = labeled_store
    args = argparse.Namespace(command="calibration", db=store.path, run=RUN, sample="cal", judge=None,
                              second_judge=None, json=True, draw_sample=None,
                              per_operation=20, seed=0, ceiling="A2,A3", consensus="A2,A3")
    assert cmd_calibration(args) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["ceiling_pairs"] == [["A2", "A3"]] and rep["consensus_of"] == ["A2", "A3"]
    human = pd.DataFrame(lines).set_index(["annotator", "item_id"])
    for s in ("S1", "S2", "S3", "S4"):
        xa = [int(human.loc[("A2", i), s]) for i in sample["item_id"]]
        xb = [int(human.loc[("A3", i), s]) for i in sample["item_id"]]
        want = cohen_kappa_score(xa, xb)
        got = rep["human_ceiling"][s]
        assert got["pairs"] == ([["A2", "A3"]] if not math.isnan(want) else [])
        if not math.isnan(want):
            assert got["kappa"] == pytest.approx(want) and got["n_pairs"] == 1
    # the consensus of two annotators decides a stage only where they agree
    ff = rep["first_failure"]
    assert sum(v["k"] for v in ff["human"].values()) == ff["n"]
    args.json, args.ceiling, args.consensus = False, None, None
    assert cmd_calibration(args) == 0
    out = capsys.readouterr().out
    assert "human ceiling (every annotator pair: A1-A2; A1-A3; A2-A3)" in out
    assert "human consensus (every annotator): majority of A1, A2, A3" in out


def test_calibration_cli_refuses_an_unknown_annotator(labeled_store, capsys):
    store, _, _ = labeled_store
    rc = app.main(["calibration", "--db", str(store.path), "--run", RUN, "--ceiling", "A2,A9"])
    assert rc == 2
    assert "no annotator named 'A9' labeled these traces (annotators: A1, A2, A3)" in capsys.readouterr().err


# Issue 25 point 6 / issue 39 point 4: every kappa with its interval (the cluster bootstrap with Jeffreys'
# prior), the prevalence, a small-n note and a note where kappa or its interval is not to be read at face value.
# (labels a, labels b, clusters, kappa, prevalence, small-n note?, words of kappa_note or None)
KAPPA_DETAIL_CASES = {
    # the audit's "kappa 0.000 with [0.000, 0.000] at 78% agreement and n = 9": one labeler says 1 throughout
    "kappa_zero_at_78pct_n9": ([1] * 9, [1] * 7 + [0, 0], list(range(9)), 0.0, 16 / 18, True, "by construction"),
    "kappa_zero_at_80pct_n10": ([1] * 10, [1] * 8 + [0, 0], list(range(10)), 0.0, 0.9, True, "by construction"),
    "perfect_balanced_40": ([1, 0] * 20, [1, 0] * 20, list(range(40)), 1.0, 0.5, False, None),
    "n8_below_the_checked_sizes": ([1, 0] * 4, [1, 0, 0, 0] * 2, list(range(8)), 0.5, 0.375, True, "n = 8"),
    "prevalence_beyond_the_checked_range": ([1] * 98 + [0, 0], [1] * 99 + [0], list(range(100)), 49 / 74, 0.985,
                                            False, "prevalence 98%"),
    # one class only: kappa undefined, no interval and no note
    "one_class": ([1] * 5, [1] * 5, list(range(5)), None, 1.0, True, None),
}


@pytest.mark.parametrize("case", sorted(KAPPA_DETAIL_CASES))
def test_kappa_details(case):
    from core import stats
    from core.calibration import kappa_details

    a, b, clusters, kappa, prevalence, small, words = KAPPA_DETAIL_CASES[case]
    assert stats.cohen_kappa(a, b)[0] == (pytest.approx(kappa) if kappa is not None else None)
    got = kappa_details(a, b, clusters, draws=2000)
    if kappa is None:
        assert got["kappa_ci"] is None
    else:
        assert got["kappa_ci"] == stats.cluster_bootstrap_kappa(a, b, clusters, draws=2000)
        assert got["kappa_ci"][0] <= kappa <= got["kappa_ci"][1]
    assert got["prevalence"] == pytest.approx(prevalence)
    assert (got["small_n"] is not None) == small
    assert (got["kappa_note"] is None) if words is None else (words in got["kappa_note"])


def test_a_kappa_of_zero_from_one_single_labeler_is_never_shown_as_certain():
    """The audit's case (kappa 0.000, 78% agreement, n = 9; the plain bootstrap gave [0.000, 0.000], every draw
    exactly 0): the interval is wide and the note says kappa is 0 by construction."""
    from core.calibration import kappa_details

    got = kappa_details([1] * 9, [1] * 7 + [0, 0], list(range(9)))
    lo, hi = got["kappa_ci"]
    assert lo < -0.1 and hi > 0.5
    assert got["kappa_note"].startswith("kappa is 0 by construction: one labeler gave the same label to all 9")


def _coverage(n: int, prevalence: float, kappa: float, reps: int, seed: int) -> float:
    """Share of the shown 95% intervals (kappa defined) holding the true kappa, over `reps` samples of n pairs
    (one per item) of two labelers with the same prevalence and the given kappa (bench/kappa_coverage.py)."""
    from core import stats

    p, q = prevalence, 1 - prevalence
    probs = [p * p + kappa * p * q, p * q * (1 - kappa), p * q * (1 - kappa), q * q + kappa * p * q]
    rng = np.random.default_rng(seed)
    shown = hit = 0
    for _ in range(reps):
        cell = rng.choice(4, size=n, p=probs)
        ci = stats.cluster_bootstrap_kappa([int(c < 2) for c in cell], [int(c in (0, 2)) for c in cell],
                                           list(range(n)), draws=2000, seed=int(rng.integers(2**31)))
        if ci is not None:
            shown += 1
            hit += ci[0] <= kappa <= ci[1]
    return hit / shown


@pytest.mark.parametrize("kappa", [0.6, 0.9])
def test_kappa_interval_coverage_at_n30_prevalence_09(kappa):
    """The audit's cell: n = 30 at prevalence 0.9, where the plain percentile bootstrap's 95% interval held the
    true kappa in 74% of samples (the audit; bench/kappa_coverage.py: 76% at kappa 0.6, 41% at 0.9). Over 300
    samples the interval with Jeffreys' prior holds it in at least 90% (the bench: 96.9% and 98.0% over 1,000)."""
    assert _coverage(30, 0.9, kappa, reps=300, seed=39) >= 0.90


def test_kappa_interval_resamples_whole_clusters():
    """Two traces per item: resampling items (whole clusters) differs from resampling traces, and one cluster
    holding every trace leaves only the prior's spread (a narrower interval)."""
    from core import stats

    a, b = [1, 0, 1, 0, 1, 1, 0, 0], [1, 0, 0, 0, 1, 1, 1, 0]
    one = stats.cluster_bootstrap_kappa(a, b, ["x"] * 8, draws=2000)
    by_trace = stats.cluster_bootstrap_kappa(a, b, list(range(8)), draws=2000)
    by_item = stats.cluster_bootstrap_kappa(a, b, [0, 0, 1, 1, 2, 2, 3, 3], draws=2000)
    kappa = stats.cohen_kappa(a, b)[0]
    assert by_item != by_trace
    assert by_trace[0] < one[0] <= kappa <= one[1] < by_trace[1]


def test_calibration_prints_the_interval_the_tab_shows(labeled_store, capsys):
    """`calibration` prints, on each pair's line, the interval the Calibration tab shows for it (the same text,
    core.report_tables.signed_interval of `kappa_ci` to 3 digits), and each pair's notes."""
    from core.report_tables import signed_interval
    from ui.calibration import pairs_table

    store, _, _ = labeled_store
    args = argparse.Namespace(command="calibration", db=store.path, run=RUN, sample="cal", judge=None,
                              second_judge=None, json=True, draw_sample=None,
                              per_operation=20, seed=0, ceiling=None, consensus=None)
    assert cmd_calibration(args) == 0
    rep = json.loads(capsys.readouterr().out)
    args.json = False
    assert cmd_calibration(args) == 0
    text = capsys.readouterr().out
    tab = pairs_table(rep, JUDGING)
    lines = text.splitlines()
    shown = 0
    for p in rep["pairs"]:
        at = next(i for i, line in enumerate(lines) if line.startswith(f"{p['a']} vs {p['b']}")
                  and line.split()[3] == p["stage"])
        if p["kappa_ci"] is None:
            assert " n/a " in lines[at]
            continue
        interval = signed_interval(p["kappa_ci"], scale=1, digits=3)
        assert interval in lines[at] and f"95% CI {interval}" in tab
        notes = [x for x in (p["kappa_note"], p["small_n"]) if x]
        assert [line.strip() for line in lines[at + 1:at + 1 + len(notes)]] == notes
        shown += 1
    assert shown >= 6

