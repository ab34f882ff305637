"""core.metrics.common and core.families.generic.metrics: hand-computed tables and paper 000's own numbers."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from bootstrap_ref import ratio_interval
from sklearn.metrics import f1_score, precision_score, recall_score

from core import stats
from core.families.generic import metrics as generic
from core.metrics import common
from core.metrics.catalogue import ROTATION_METRICS
from core.schema import RunData
from tests.helpers import family_score

OPTS = {"A": "左", "B": "前", "C": "后", "D": "右"}


def items_frame(golds: list[str], groups: list[str] | None = None, kinds: list[str] | None = None,
                split: str = "test") -> pd.DataFrame:
    n = len(golds)
    return pd.DataFrame({
        "item_id": [f"i{i}" for i in range(n)],
        "group_id": groups or [f"g{i}" for i in range(n)],
        "split": [split] * n,
        "kind": kinds or ["K"] * n,
        "variant": ["v"] * n,
        "question": ["q"] * n,
        "options": [OPTS] * n,
        "letters": ["ABCD"] * n,
        "answer": golds,
        "n_images": [1] * n,
        "images": [[]] * n,
        "meta": [{}] * n,
        "stages": [None] * n,
    })


def preds_frame(answers: list[str | None], rotation: int = 0, repeat: int = 0,
                item_ids: list[str] | None = None) -> pd.DataFrame:
    """Predictions; None is invalid, "" is api_error."""
    n = len(answers)
    status = ["ok" if a else ("api_error" if a == "" else "invalid") for a in answers]
    return pd.DataFrame({
        "item_id": item_ids or [f"i{i}" for i in range(n)],
        "rotation": [rotation] * n,
        "repeat": [repeat] * n,
        "status": status,
        "answer": [a or None for a in answers],
        "shown": [a or None for a in answers],
        "response": [a or "" for a in answers],
        "input_mode": ["all"] * n,
        "trace": [None] * n, "tokens": [np.nan] * n, "latency": [np.nan] * n,
        "probs": [None] * n, "error": [None] * n,
    })


def joined(golds, answers, **kw) -> pd.DataFrame:
    return common.join(items_frame(golds, **kw), preds_frame(answers))


# --------------------------------------------------------------------------- join, accuracy, GEM


def test_join_columns_and_correct():
    df = joined(["A", "B", "C", "D"], ["A", None, "", "C"])
    assert {"gold", "correct", "group_id", "kind", "variant", "split", "letters", "meta"} <= set(df.columns)
    assert df["correct"].tolist() == [True, False, False, False]
    assert df["status"].tolist() == ["ok", "invalid", "api_error", "ok"]


def test_join_scope_is_the_items_frame():
    items = items_frame(["A", "B"])
    preds = preds_frame(["A", "B", "C"], item_ids=["i0", "i1", "other-split-item"])
    assert common.join(items, preds)["item_id"].tolist() == ["i0", "i1"]


@pytest.mark.parametrize(("golds", "answers", "k", "n"), [
    (["A", "B", "C", "D"], ["A", "B", "C", "D"], 4, 4),
    (["A", "B", "C", "D"], ["A", "A", "A", "A"], 1, 4),
    (["A", "B", "C", "D"], [None, "", "C", "C"], 1, 4),  # invalid and api_error count as wrong
    (["A"], ["B"], 0, 1),
])
def test_accuracy(golds, answers, k, n):
    rate = common.accuracy(joined(golds, answers))
    assert (rate.k, rate.n, rate.value) == (k, n, pytest.approx(k / n))


def test_accuracy_empty_has_reason():
    rate = common.accuracy(joined([], []))
    assert rate.value is None and rate.reason


@pytest.mark.parametrize(("groups", "answers", "k", "n"), [
    (["g1", "g1", "g1", "g2", "g2", "g2"], ["A", "B", "C", "A", "B", "C"], 2, 2),
    (["g1", "g1", "g1", "g2", "g2", "g2"], ["A", "B", "D", "A", "B", "C"], 1, 2),
    (["g1", "g1", "g1", "g2", "g2", "g2"], ["A", "B", None, "A", "", "C"], 0, 2),
    (["g1", "g2", "g3", "g3", "g3", "g3"], ["A", "B", "C", "A", "B", "C"], 3, 3),
])
def test_group_exact_match(groups, answers, k, n):
    df = joined(["A", "B", "C", "A", "B", "C"], answers, groups=groups)
    rate = common.group_exact_match(df)
    assert (rate.k, rate.n) == (k, n)


def test_group_exact_match_no_groups():
    rate = common.group_exact_match(joined([], []))
    assert rate.value is None and "groups" in rate.reason


# --------------------------------------------------------------------------- macro P/R/F1 (000 App. A)


def test_macro_prf_hand_computed():
    # gold A A B B C D ; pred A B B invalid A api_error
    df = joined(["A", "A", "B", "B", "C", "D"], ["A", "B", "B", None, "A", ""])
    out = common.macro_prf(df, "ABCD")
    # A: TP1 pred2 sup2 -> P .5 R .5 F .5 ; B: TP1 pred2 sup2 -> .5 .5 .5 ; C: TP0 pred0 sup1 -> 0 0 0 ; D: 0 0 0
    assert out["macro_precision"].value == pytest.approx(0.25)
    assert out["macro_recall"].value == pytest.approx(0.25)
    assert out["macro_f1"].value == pytest.approx(0.25)
    assert out["macro_f1"].k is None and out["macro_f1"].n is None


def test_macro_prf_f1_is_mean_of_classwise_f1():
    # A: TP2 pred3 sup2 -> P 2/3 R 1 F .8 ; B: TP1 pred1 sup2 -> P 1 R .5 F 2/3 ; C, D absent
    df = joined(["A", "A", "B", "B"], ["A", "A", "B", "A"])
    out = common.macro_prf(df, "AB")
    assert out["macro_precision"].value == pytest.approx((2 / 3 + 1) / 2)
    assert out["macro_recall"].value == pytest.approx(0.75)
    assert out["macro_f1"].value == pytest.approx((0.8 + 2 / 3) / 2)  # not 2PR/(P+R) of the macro means


@pytest.mark.parametrize("seed", range(12))
def test_macro_prf_matches_sklearn(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 80))
    golds = rng.choice(list("ABCD"), n).tolist()
    choices = ["A", "B", "C", "D", None, ""]
    answers = [g if rng.random() < 0.4 else choices[int(rng.integers(0, 6))] for g in golds]
    out = common.macro_prf(joined(golds, answers), "ABCD")
    y_pred = [a if a else "X" for a in answers]  # invalid: a label outside A-D (false negative only)
    kw = {"labels": list("ABCD"), "average": "macro", "zero_division": 0}
    assert out["macro_precision"].value == pytest.approx(precision_score(golds, y_pred, **kw))
    assert out["macro_recall"].value == pytest.approx(recall_score(golds, y_pred, **kw))
    assert out["macro_f1"].value == pytest.approx(f1_score(golds, y_pred, **kw))


def test_macro_prf_empty_has_reason():
    out = common.macro_prf(joined([], []))
    assert all(rate.value is None and rate.reason for rate in out.values())


# --------------------------------------------------------------------------- exact uniform reference


def test_uniform_reference_reproduces_paper_row():
    """000 Table 4 "Uniform random": P 25.00, R 25.00, F1 24.93, Acc 25.00 under supports 75/70/69/74."""
    items = items_frame(["A"] * 75 + ["B"] * 70 + ["C"] * 69 + ["D"] * 74)
    ref = common.uniform_random_reference(items, "ABCD")
    assert round(100 * ref["macro_f1"].value, 2) == 24.93
    assert round(100 * ref["macro_precision"].value, 2) == 25.00
    assert ref["macro_recall"].value == pytest.approx(0.25)
    assert ref["accuracy"].value == pytest.approx(0.25)
    assert ref["macro_f1"].value == pytest.approx(0.249268143, abs=1e-9)


@pytest.mark.parametrize("golds", [["A", "A", "B", "D"], ["A", "B", "B"], ["C", "C", "C", "A"]])
def test_uniform_reference_equals_enumeration(golds):
    """Exact expectation = mean of macro P/R/F1 over every equally likely guess vector (small tests)."""
    items = items_frame(golds)
    ref = common.uniform_random_reference(items, "ABCD")
    totals = np.zeros(3)
    guesses = list(itertools.product("ABCD", repeat=len(golds)))
    df = common.join(items, preds_frame(golds))
    for guess in guesses:
        out = common.macro_prf(df.assign(answer=list(guess)), "ABCD")
        totals += [out["macro_precision"].value, out["macro_recall"].value, out["macro_f1"].value]
    mean = totals / len(guesses)
    assert ref["macro_precision"].value == pytest.approx(mean[0], abs=1e-12)
    assert ref["macro_recall"].value == pytest.approx(mean[1], abs=1e-12)
    assert ref["macro_f1"].value == pytest.approx(mean[2], abs=1e-12)


@pytest.mark.parametrize(("n_answers", "expected"), [(3, 0.015625), (2, 0.0625), (1, 0.25)])
def test_joint_random_reference(n_answers, expected):
    """000 Table 4: GEM 1.56 = (1/4)^3, NTS and DIS 6.25 = (1/4)^2."""
    assert common.joint_random_reference(n_answers).value == pytest.approx(expected)


def test_uniform_reference_no_items():
    ref = common.uniform_random_reference(items_frame([]))
    assert ref["macro_f1"].value is None and ref["macro_f1"].reason


# --------------------------------------------------------------------------- rotations (000 App. A, Table 12)


def rotation_preds(table: dict[int, list[str | None]]) -> pd.DataFrame:
    return pd.concat([preds_frame(answers, rotation=r) for r, answers in table.items()], ignore_index=True)


@pytest.mark.parametrize(("table", "expected"), [
    # gold A B C ; item 0 always right, item 1 always the same wrong, item 2 mixed
    ({0: ["A", "C", "C"], 1: ["A", "C", "D"], 2: ["A", "C", "C"], 3: ["A", "C", "A"]},
     {"vanilla": (2, 3), "circular": (1, 3), "consistency": (2, 3), "mean_rotation": (6, 12)}),
    # an invalid answer breaks consistency even when the others agree
    ({0: ["A", "C", "C"], 1: ["A", "C", "C"], 2: ["A", None, "C"], 3: ["A", "C", "C"]},
     {"vanilla": (2, 3), "circular": (2, 3), "consistency": (2, 3), "mean_rotation": (8, 12)}),
    # all invalid: nothing consistent
    ({0: [None, None, ""], 1: [None, None, ""], 2: [None, None, ""], 3: [None, None, ""]},
     {"vanilla": (0, 3), "circular": (0, 3), "consistency": (0, 3), "mean_rotation": (0, 12)}),
])
def test_rotation_metrics_hand_tables(table, expected):
    df = common.join(items_frame(["A", "B", "C"]), rotation_preds(table))
    out = common.rotation_metrics(df)
    for key, (k, n) in expected.items():
        assert (out[key].k, out[key].n) == (k, n), key
    assert out["drop"].value == pytest.approx(out["vanilla"].value - out["circular"].value)


def test_rotation_metrics_missing_rotation_gives_no_credit():
    table = {0: ["A", "B"], 1: ["A", "B"], 2: ["A", "B"], 3: ["A"]}
    preds = pd.concat([preds_frame(a, rotation=r, item_ids=[f"i{i}" for i in range(len(a))])
                       for r, a in table.items()], ignore_index=True)
    out = common.rotation_metrics(common.join(items_frame(["A", "B"]), preds))
    assert (out["circular"].k, out["consistency"].k, out["circular"].n) == (1, 1, 2)


def gpt_circular_supplement() -> pd.DataFrame:
    """000 App. A "Circular metrics": 288 items, per-rotation correct 131/120/122/120, 54 fully correct
    sets and 78 consistent sets (54 correct + 24 repeating one wrong answer)."""
    n = 288
    golds = ["A"] * n
    answers = {r: ["B"] * n for r in range(4)}
    for r in range(4):  # items 0-53: correct under every rotation
        for i in range(54):
            answers[r][i] = "A"
    # items 54-77: the same wrong answer "B" under every rotation (consistent, wrong) -- already "B"
    # items 78-287 (210 items): correct under some rotations only, so neither circular nor consistent
    windows = {0: [range(0, 77)], 1: [range(77, 143)], 2: [range(143, 210), range(0, 1)], 3: [range(1, 67)]}
    for i in range(78, n):
        for r in range(4):
            answers[r][i] = "C"
    for r, ranges in windows.items():
        for span in ranges:
            for j in span:
                answers[r][78 + j] = "A"
    preds = rotation_preds(answers)
    return common.join(items_frame(golds), preds)


def test_gpt_circular_supplement():
    out = common.rotation_metrics(gpt_circular_supplement())
    assert [out["per_rotation"][str(r)].k for r in range(4)] == [131, 120, 122, 120]
    assert (out["circular"].k, out["circular"].n) == (54, 288)
    assert (out["consistency"].k, out["consistency"].n) == (78, 288)
    assert (out["mean_rotation"].k, out["mean_rotation"].n) == (493, 1152)
    # Table 12, GPT-5.6 0-shot: Vanilla 45.49, Mean rot. 42.80, Circular 18.75, Consistency 27.08, Drop 26.74
    percent = {key: round(100 * out[key].value, 2) for key in ("vanilla", "mean_rotation", "circular", "consistency")}
    assert percent == {"vanilla": 45.49, "mean_rotation": 42.80, "circular": 18.75, "consistency": 27.08}
    assert round(100 * out["drop"].value, 2) == 26.74


def test_rotation_metrics_refuses_duplicate_repeats():
    df = common.join(items_frame(["A"]), pd.concat([preds_frame(["A"]), preds_frame(["A"], repeat=1)]))
    with pytest.raises(ValueError):
        common.rotation_metrics(df)


# --------------------------------------------------------------------------- paired answers (000 Table 7)


def pair_frames(both: int, only_a: int, only_b: int, same_wrong: int, other_wrong: int):
    """Two answer sets over one 'A'-gold item list built from the outcome counts of a 2 x 2 table."""
    a = ["A"] * both + ["A"] * only_a + ["B"] * only_b + ["C"] * same_wrong + ["C"] * other_wrong
    b = ["A"] * both + ["B"] * only_a + ["A"] * only_b + ["C"] * same_wrong + ["D"] * other_wrong
    items = items_frame(["A"] * len(a))
    return common.join(items, preds_frame(a)), common.join(items, preds_frame(b, repeat=1))


# Columns of 000 Table 7 (GPT, n = 288) rebuilt from App. A counts: rotation 0 has 131 correct answers,
# the repeat 130, R1 120, R2 122, R3 120; joint counts 82 / 90 / 88 / 81, consistency 154 / 171 / 158 / 148.
TABLE7 = {
    "Repeat": ((82, 49, 48, 72, 37), (62.15, 28.47, 53.47, 25.00)),
    "R1": ((90, 41, 30, 81, 46), (55.90, 31.25, 59.38, 28.12)),
    "R2": ((88, 43, 34, 70, 53), (57.29, 30.56, 54.86, 24.31)),
    "R3": ((81, 50, 39, 67, 51), (59.03, 28.12, 51.39, 23.26)),
}


@pytest.mark.parametrize("column", list(TABLE7))
def test_table7_pairs(column):
    counts, percents = TABLE7[column]
    assert sum(counts) == 288
    a, b = pair_frames(*counts)
    out = common.pair_metrics(a, b)
    got = tuple(round(100 * out[k].value, 2) for k in
                ("at_least_one_correct", "both_correct", "consistency", "consistently_wrong"))
    assert got == pytest.approx(percents, abs=0.006)
    assert out["consistency"].k + out["changed"].k == 288


def test_repeat_changes_134_answers():
    """000 App. A: rotation 0 vs the same-order repeat changes 134 of 288 answers (46.53%)."""
    a, b = pair_frames(82, 49, 48, 72, 37)
    out = common.pair_metrics(a, b)
    assert (out["changed"].k, out["changed"].n) == (134, 288)
    assert round(100 * out["changed"].value, 2) == 46.53


@pytest.mark.parametrize(("a", "b", "expected"), [
    # gold A A A
    (["A", "B", None], ["A", "B", None],
     {"at_least_one_correct": 1, "both_correct": 1, "consistency": 2, "consistently_wrong": 1, "changed": 1}),
    (["A", "A", "C"], ["B", "A", "D"],
     {"at_least_one_correct": 2, "both_correct": 1, "consistency": 1, "consistently_wrong": 0, "changed": 2}),
])
def test_pair_metrics_hand_tables(a, b, expected):
    items = items_frame(["A", "A", "A"])
    out = common.pair_metrics(common.join(items, preds_frame(a)), common.join(items, preds_frame(b)))
    assert {k: out[k].k for k in expected} == expected
    assert all(out[k].n == 3 for k in expected)


def test_repeat_and_rotation_pair_selectors():
    items = items_frame(["A", "B"])
    preds = pd.concat([preds_frame(["A", "B"]), preds_frame(["A", "C"], repeat=1),
                       preds_frame(["B", "B"], rotation=1)], ignore_index=True)
    df = common.join(items, preds)
    assert common.repeat_pairs(df)["both_correct"].k == 1
    assert common.rotation_pairs(df, rotations=[1])["R1"]["both_correct"].k == 1


def test_pair_metrics_missing_item_counts_as_changed():
    items = items_frame(["A", "A"])
    a = common.join(items, preds_frame(["A", "A"]))
    b = common.join(items, preds_frame(["A"]))
    out = common.pair_metrics(a, b)
    assert (out["consistency"].k, out["changed"].k, out["changed"].n) == (1, 1, 2)


# --------------------------------------------------------------------------- generic family


def generic_items() -> pd.DataFrame:
    return items_frame(["A", "B", "C", "A", "B", "D"], groups=["g1", "g1", "g1", "g2", "g2", "g2"],
                       kinds=["x", "x", "y", "y", "y", "y"])


def test_generic_score_single_rotation():
    run = RunData("r", "bench", "generic", {}, preds_frame(["A", "B", "C", "A", None, "D"]))
    out = family_score(generic.score, generic_items(), run, [], seed=1, draws=500)
    assert (out["accuracy"].k, out["accuracy"].n) == (5, 6)
    assert out["accuracy"].ci[0] <= out["accuracy"].value <= out["accuracy"].ci[1]
    assert out["accuracy"].ci == ratio_interval([3, 2], [3, 3], draws=500, seed=1)  # g1 3 of 3, g2 2 of 3
    assert {k: (r.k, r.n) for k, r in out["per_kind"].items()} == {"x": (2, 2), "y": (3, 4)}
    assert (out["group_exact_match"].k, out["group_exact_match"].n) == (1, 2)
    # its interval resamples the groups, one 0/1 observation each: g1 all right, g2 not
    assert out["group_exact_match"].ci == ratio_interval([1, 0], [1, 1], draws=500, seed=1)
    # classes used as gold: A B C D ; B has recall 1/2, precision 1
    assert out["macro_recall"].value == pytest.approx((1 + 0.5 + 1 + 1) / 4)
    assert out["macro_precision"].value == pytest.approx(1.0)
    assert out["circular"].value is None and "single" in out["circular"].reason
    assert out["n_predictions"] == 6


def test_generic_letter_matrix_and_strata_by_hand():
    items = generic_items()
    items["meta"] = [{"topic": t} for t in ("a", "a", "b", "b", "b", "a")]
    run = RunData("r", "bench", "generic", {}, preds_frame(["A", "C", "C", "B", None, "D"]))
    out = family_score(generic.score, items, run, [], seed=1, draws=200)
    # gold A B C A B D; predicted A C C B (invalid) D
    assert out["letters"] == {"A": {"A": 1, "B": 1, "C": 0, "D": 0, "none": 0},
                              "B": {"A": 0, "B": 0, "C": 1, "D": 0, "none": 1},
                              "C": {"A": 0, "B": 0, "C": 1, "D": 0, "none": 0},
                              "D": {"A": 0, "B": 0, "C": 0, "D": 1, "none": 0}}
    assert {v: (r.k, r.n) for v, r in out["per_stratum"]["topic"].items()} == {"a": (2, 3), "b": (1, 3)}


def test_generic_score_with_rotations():
    golds = ["A", "B", "C", "A", "B", "D"]
    preds = pd.concat([
        preds_frame(["A", "B", "C", "A", "B", "D"], rotation=0),
        preds_frame(["A", "B", "C", "B", "B", "D"], rotation=1),
        preds_frame(["A", "B", "A", "C", "B", "D"], rotation=2),
        preds_frame(["A", "B", "C", "A", "B", None], rotation=3),
    ], ignore_index=True)
    run = RunData("r", "bench", "generic", {"rotations": 4}, preds)
    out = family_score(generic.score, generic_items(), run, [], seed=None)
    assert len(golds) == 6
    assert (out["vanilla"].k, out["vanilla"].n) == (6, 6)
    assert (out["circular"].k, out["circular"].n) == (3, 6)  # items 0, 1, 4
    assert (out["consistency"].k, out["consistency"].n) == (3, 6)
    assert out["drop"].value == pytest.approx(0.5)
    assert out["accuracy"].ci is None and out["group_exact_match"].ci is None  # seed=None skips intervals
    assert out["circular_over"] == "rotations"
    assert (out["accuracy"].k, out["accuracy"].n) == (6, 6)  # rotation 0 only


def test_generic_score_empty_run():
    run = RunData("r", "bench", "generic", {}, preds_frame([]))
    out = family_score(generic.score, generic_items(), run, [])
    assert out["accuracy"].value is None and out["accuracy"].reason
    assert out["group_exact_match"].value is None
    assert out["macro_f1"].value is None
    assert out["per_kind"] == {}


# --------------------------------------------------------------------------- generic family: intervals, rotations,
# strata, copies (the survivors of `make mutation`'s generic-metrics target, issue 28)


def test_generic_intervals_resample_the_groups_with_the_seed_given():
    """Twelve groups of one to three items: the accuracy and per-kind intervals equal the independent
    reference on the same seeded draws at full precision (a different seed would give other percentiles)."""
    sizes = [1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3]
    right = [1, 1, 2, 0, 2, 1, 1, 0, 3, 1, 1, 2]
    groups = [f"g{g:02d}" for g, size in enumerate(sizes) for _ in range(size)]
    kinds = ["x" if int(g[1:]) % 2 else "y" for g in groups]
    answers = [("A" if i < right[g] else "B") for g, size in enumerate(sizes) for i in range(size)]
    run = RunData("r", "bench", "generic", {}, preds_frame(answers))
    out = family_score(generic.score, items_frame(["A"] * len(groups), groups=groups, kinds=kinds), run, [], seed=7, draws=400)
    assert (out["accuracy"].k, out["accuracy"].n) == (15, 24)
    assert out["accuracy"].ci == ratio_interval(right, sizes, draws=400, seed=7)
    odd = [g for g in range(12) if g % 2]
    assert out["per_kind"]["x"].ci == ratio_interval([right[g] for g in odd], [sizes[g] for g in odd], draws=400,
                                                     seed=7)


def test_generic_score_is_the_same_inside_a_scoring_context():
    """A ScoringContext resamples the accuracy's and the group exact match's group columns in one pass
    (core.stats.ScoringContext: "results are identical with or without one")."""
    from core.schema import to_jsonable

    items = generic_items()
    run = RunData("r", "bench", "generic", {}, preds_frame(["A", "B", "C", "A", None, "D"]))
    alone = to_jsonable(family_score(generic.score, items, run, [], seed=3, draws=300))
    with stats.ScoringContext().active():
        shared = to_jsonable(family_score(generic.score, items, run, [], seed=3, draws=300))
    assert shared == alone


def test_generic_rotations_use_repeat_0_and_give_circular_by_kind():
    """Rotation metrics over repeat 0 only (a repeat's rows at rotation 0 do not enter them), and circular accuracy
    per kind over items: items 0, 1 (kind x) and 4 (kind y) are right under every rotation."""
    preds = pd.concat([
        preds_frame(["A", "B", "C", "A", "B", "D"], rotation=0),
        preds_frame(["A", "B", "C", "B", "B", "D"], rotation=1),
        preds_frame(["A", "B", "A", "C", "B", "D"], rotation=2),
        preds_frame(["A", "B", "C", "A", "B", None], rotation=3),
        preds_frame(["D", "D", "D", "D", "D", "D"], rotation=0, repeat=1),
    ], ignore_index=True)
    out = family_score(generic.score, generic_items(), RunData("r", "bench", "generic", {}, preds), [], seed=None)
    assert (out["circular"].k, out["circular"].n) == (3, 6)
    assert out["circular_over"] == "rotations"
    assert {k: (r.k, r.n) for k, r in out["circular_by_category"]["kind"].items()} == {"x": (2, 2), "y": (1, 4)}
    assert set(out["circular_by_category"]) == {"kind"}  # no item carries meta.l2-category


def test_generic_rotations_without_rotation_0_give_the_reason():
    preds = pd.concat([preds_frame(["A", "B", "C", "A", "B", "D"], rotation=r) for r in (1, 2)], ignore_index=True)
    out = family_score(generic.score, generic_items(), RunData("r", "bench", "generic", {}, preds), [], seed=None)
    for key in (m.key for m in ROTATION_METRICS):
        assert out[key].value is None and out[key].reason == "the run has no rotation 0", key


@pytest.mark.parametrize(("n_values", "shown"), [(16, True), (17, False)])
def test_generic_per_stratum_takes_meta_fields_of_2_to_16_values(n_values, shown):
    """docs/METRICS.md: a meta stratum with 2-16 values; the image count (Browse's n_images stratum) is not one."""
    items = items_frame(["A"] * n_values)
    items["meta"] = [{"topic": f"t{i:02d}"} for i in range(n_values)]
    items["n_images"] = [1 + i % 2 for i in range(n_values)]
    run = RunData("r", "bench", "generic", {}, preds_frame(["A", "B"] * (n_values // 2) + ["A"] * (n_values % 2)))
    out = family_score(generic.score, items, run, [], seed=None)["per_stratum"]
    assert "n_images" not in out
    assert ("topic" in out) is shown
    if shown:
        assert {v: (r.k, r.n) for v, r in out["topic"].items()} == {f"t{i:02d}": (1 - i % 2, 1) for i in range(16)}


def test_generic_per_stratum_of_rows_without_meta_is_empty():
    assert generic.per_stratum(joined(["A", "B"], ["A", "B"]).drop(columns="meta")) == {}


def test_generic_score_over_circular_copies():
    """A single-rotation run over items holding circular copies (meta.copy): Circular and Consistency over the
    copies (docs/METRICS.md "Circular copies"), besides the item accuracy."""
    items = items_frame(["A", "B", "A", "B", "C"], groups=["g", "g", "h", "h", "solo"])
    items["meta"] = [{"copy": 0}, {"copy": 1}, {"copy": 0}, {"copy": 1}, {}]
    items["options"] = [OPTS, {"A": "前", "B": "左", "C": "后", "D": "右"}] * 2 + [OPTS]
    run = RunData("r", "bench", "generic", {}, preds_frame(["A", "B", "A", "A", "C"]))
    out = family_score(generic.score, items, run, [], seed=None)
    assert out["circular_over"] == "copies"
    assert (out["circular"].k, out["circular"].n) == (1, 2)  # g right in both copies, h not
    assert (out["consistency"].k, out["consistency"].n) == (1, 2)  # g chose 左 twice; h 左 then 前
    assert (out["vanilla"].k, out["vanilla"].n) == (2, 2)
    assert (out["accuracy"].k, out["accuracy"].n) == (4, 5)


def test_generic_rotations_of_a_single_rotation_give_the_reason():
    preds = preds_frame(["A", "B", "C", "A", "B", "D"], rotation=0)
    out = family_score(generic.score, generic_items(), RunData("r", "bench", "generic", {}, preds), [], seed=None)
    for key in (m.key for m in ROTATION_METRICS):
        assert out[key].value is None and out[key].reason == "the run has a single option rotation", key


def test_generic_macro_classes_are_the_gold_letters():
    """Two-option items (gold A or B): macro recall averages A and B only, not four letters."""
    items = items_frame(["A", "B", "A", "B"])
    out = family_score(generic.score, items, RunData("r", "bench", "generic", {}, preds_frame(["A", "A", "A", "B"])), [], seed=None)
    assert out["macro_recall"].value == pytest.approx((1 + 0.5) / 2)
    assert out["macro_precision"].value == pytest.approx((2 / 3 + 1) / 2)


def test_generic_two_rotations_win_over_circular_copies():
    """Items that hold circular copies, scored from a run with two option rotations: the rotations count
    (circular over items), as for any run with several rotations."""
    items = generic_items()
    items["meta"] = [{"copy": k} for k in (0, 1, 2, 0, 1, 2)]
    preds = pd.concat([preds_frame(["A", "B", "C", "A", "B", "D"], rotation=r) for r in (0, 1)], ignore_index=True)
    out = family_score(generic.score, items, RunData("r", "bench", "generic", {}, preds), [], seed=None)
    assert out["circular_over"] == "rotations"
    assert (out["circular"].k, out["circular"].n) == (6, 6)
