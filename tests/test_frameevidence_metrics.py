"""core.families.frameevidence.metrics: hand-computed tables and the numbers paper 000 states in its text.

Paper numbers are rebuilt from synthetic items / predictions constructed to have the stated counts (the
paper's per-item predictions are not public); each test names the table or section it comes from.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from bootstrap_ref import diff_interval, ratio_interval, statistic_interval
from sklearn.metrics import f1_score

from core.errors import MetricUndefined
from core.families.frameevidence import metrics as fe
from core.schema import Rate, RunData, to_jsonable
from tests.helpers import family_score

LETTERS = "ABCD"
OPTS = {"A": "前", "B": "后", "C": "左", "D": "右"}


def pct(rate: Rate) -> float:
    assert rate.value is not None, rate.reason
    return rate.value * 100


# --------------------------------------------------------------------------- builders


def item(item_id, group_id, kind, variant, answer, n_images=2, meta=None, split="test"):
    return {"item_id": item_id, "group_id": group_id, "split": split, "kind": kind, "variant": variant,
            "question": "q", "options": OPTS, "letters": LETTERS, "answer": answer, "n_images": n_images,
            "images": [], "meta": dict(meta or {}), "stages": None}


def fq1_group(gid, golds, n_images=2, meta=None, split="test"):
    return [item(f"{gid}-{v}", gid, "FQ1", v, a, n_images, meta, split)
            for v, a in zip(fe.FQ1_VARIANTS, golds, strict=True)]


def fq2_group(gid, mss, ins, n_mss=2, meta=None, del_meta=None, split="test"):
    meta = dict(meta or {})
    return [item(f"{gid}-mss", gid, "FQ2", "mss", mss, n_mss, {**meta, "insufficient_option": ins}, split),
            item(f"{gid}-del", gid, "FQ2", "del", ins, n_mss - 1,
                 {**meta, **(del_meta or {}), "insufficient_option": ins}, split),
            item(f"{gid}-add", gid, "FQ2", "add", mss, n_mss + 1, {**meta, "insufficient_option": ins}, split)]


def items_df(rows):
    return pd.DataFrame(rows)


def preds_df(answers: dict, rotation=0, repeat=0, input_mode="all"):
    """answers: item_id -> letter (ok), None (invalid) or "" (api_error)."""
    ids = list(answers)
    vals = [answers[i] for i in ids]
    return pd.DataFrame({
        "item_id": ids, "rotation": rotation, "repeat": repeat,
        "status": ["ok" if a else ("api_error" if a == "" else "invalid") for a in vals],
        "answer": [a or None for a in vals], "shown": [a or None for a in vals],
        "response": [a or "" for a in vals], "input_mode": input_mode, "trace": None, "tokens": np.nan,
        "latency": np.nan, "probs": None, "error": None,
    })


def run(name, *pred_frames, **config):
    preds = pd.concat(pred_frames, ignore_index=True) if pred_frames else preds_df({})
    return RunData(name, "fe", "frameevidence", config, preds)


def wrong(gold, k=1):
    return LETTERS[(LETTERS.index(gold) + k) % 4]


# --------------------------------------------------------------------------- a hand-computed table

SMALL = items_df(
    fq1_group("g1", "ABC", 2, {"relation": "axial", "scene": "tabletop"})
    + fq1_group("g2", "DAA", 3, {"relation": "quadrant", "scene": "indoor"})
    + fq2_group("g3", "B", "D", 2, {"relation": "axial", "scene": "tabletop"}, {"ordinal_change": "removed"})
    + fq2_group("g4", "C", "A", 3, {"relation": "quadrant", "scene": "indoor"}, {"ordinal_change": "shifted"})
    + fq1_group("t1", "ABC", 2, split="train")
)
SMALL_ANSWERS = {
    "g1-cam": "A", "g1-obj": "B", "g1-scene": "C",       # triplet solved
    "g2-cam": "D", "g2-obj": "D", "g2-scene": None,      # repeated direction, invalid
    "g3-mss": "B", "g3-del": "D", "g3-add": "B",         # NTS and DIS success
    "g4-mss": "C", "g4-del": "C", "g4-add": "A",         # spatial answer after deletion; insufficient after addition
    "t1-cam": "D",                                       # another split: never scored on test
}


@pytest.fixture
def small():
    """SMALL scored afresh for each test (43 ms): a module-scoped score would run inside the first test only, so
    mutation testing (mutmut maps each function to the tests during which it runs) would check a mutant of
    strata, say, against test_small_rates alone."""
    r = run("small", preds_df(SMALL_ANSWERS), model="m", strategy="direct", shots=0, input_mode="all")
    return family_score(fe.score, SMALL, r, [])


@pytest.mark.parametrize("key, k, n", [
    ("accuracy", 8, 12), ("fq1_gem", 1, 2), ("nts", 1, 2), ("dis", 1, 2), ("coverage", 12, 12),
])
def test_small_rates(small, key, k, n):
    assert (small[key].k, small[key].n) == (k, n)
    assert small[key].value == pytest.approx(k / n)


@pytest.mark.parametrize("key, value", [
    # precision A 1/2, B 1, C 2/3, D 2/3; recall A 1/4, B 1, C 2/3, D 1; F1 A 1/3, B 1, C 2/3, D 4/5
    ("macro_precision", (0.5 + 1 + 2 / 3 + 2 / 3) / 4),
    ("macro_recall", (0.25 + 1 + 2 / 3 + 1) / 4),
    ("macro_f1", (1 / 3 + 1 + 2 / 3 + 0.8) / 4),
])
def test_small_macro(small, key, value):
    assert small[key].value == pytest.approx(value)


@pytest.mark.parametrize("variant, k, n", [
    ("cam", 2, 2), ("obj", 1, 2), ("scene", 1, 2), ("mss", 2, 2), ("del", 1, 2), ("add", 1, 2),
])
def test_small_variant_accuracy(small, variant, k, n):
    r = small["variant_accuracy"][variant]
    assert (r.k, r.n) == (k, n)


@pytest.mark.parametrize("key, value", [("fq1_gem", 1 * 0.5 * 0.5), ("nts", 1 * 0.5), ("dis", 1 * 0.5)])
def test_small_independence(small, key, value):
    assert small["independence"][key].value == pytest.approx(value)


def test_independence_takes_the_complete_groups_only():
    """§6.2: each variant accuracy of the reference is taken over the groups its joint metric counts. g2 lacks
    its scene item and g4 its addition item: over all groups cam and obj would be 1/2 (reference 1/4) and DIS's
    mss and add 1/2 (1/4); over the complete groups they are 1."""
    items = items_df(fq1_group("g1", "ABC") + fq1_group("g2", "ABC")[:2] + fq2_group("g3", "B", "D")
                     + fq2_group("g4", "C", "A")[:2])
    answers = {"g1-cam": "A", "g1-obj": "B", "g1-scene": "C", "g2-cam": "B", "g2-obj": "C",
               "g3-mss": "B", "g3-del": "C", "g3-add": "B", "g4-mss": "A", "g4-del": "A"}
    out = fe.independence(fe.frame(items, run("r", preds_df(answers))))
    assert {key: rate.value for key, rate in out.items()} == {"fq1_gem": 1.0, "nts": 0.25, "dis": 1.0}


@pytest.mark.parametrize("key, value", [
    ("accuracy", 0.25), ("macro_recall", 0.25), ("fq1_gem", 1 / 64), ("nts", 1 / 16), ("dis", 1 / 16),
])
def test_small_uniform_reference(small, key, value):
    assert small["reference"]["uniform_random"][key].value == pytest.approx(value)


def test_small_insufficiency(small):
    ins = small["insufficiency"]
    assert {v: (r.k, r.n) for v, r in ins["counts"].items()} == {"mss": (0, 2), "del": (1, 2), "add": (1, 2)}
    assert ins["invalid"] == {"mss": 0, "del": 0, "add": 0}
    assert (ins["recall"].k, ins["recall"].n) == (1, 2)
    assert (ins["precision"].k, ins["precision"].n) == (1, 2)


def test_small_transitions(small):
    t = small["transitions"]
    assert (t["initial"].k, t["initial"].n) == (2, 2)
    assert (t["conditional"]["del"].k, t["conditional"]["del"].n) == (1, 2)
    assert (t["conditional"]["add"].k, t["conditional"]["add"].n) == (1, 2)
    assert (t["answer_kept"]["del"].k, t["answer_kept"]["add"].k) == (1, 1)
    assert t["table"]["del"]["correct"] == {"correct": 1, "insufficient": 0, "wrong": 1, "invalid": 0}
    assert t["table"]["add"]["correct"] == {"correct": 1, "insufficient": 1, "wrong": 0, "invalid": 0}
    assert t["table"]["add"]["wrong"] == {"correct": 0, "insufficient": 0, "wrong": 0, "invalid": 0}


def test_small_pairwise(small):
    p = small["pairwise_frames"]
    # g1: 3 pairs with different golds, all changed and both correct; g2 (D, A, A): obj-scene share a gold.
    assert (p["pairs"], p["same_gold_pairs"]) == (5, 1)
    assert {k: p[k].k for k in ("repeated", "changed", "invalid", "both_correct")} == {
        "repeated": 1, "changed": 3, "invalid": 1, "both_correct": 3}
    assert p["per_pair"]["obj-scene"]["both_correct"].n == 1
    assert (p["triplets_correct"].k, p["triplets_correct"].n) == (1, 2)


@pytest.mark.parametrize("key, value, field, k, n", [
    ("relation", "axial", "accuracy", 6, 6), ("relation", "axial", "fq1_gem", 1, 1),
    ("relation", "axial", "nts", 1, 1), ("relation", "quadrant", "accuracy", 2, 6),
    ("relation", "quadrant", "dis", 0, 1), ("scene", "indoor", "fq1_gem", 0, 1),
    # item image counts: g3 del shows 1 image, g4 add 4; groups use the cam / MSS image count.
    ("n_images", "1", "accuracy", 1, 1), ("n_images", "2", "accuracy", 4, 5), ("n_images", "3", "accuracy", 3, 5),
    ("n_images", "4", "accuracy", 0, 1), ("n_images", "2", "nts", 1, 1), ("n_images", "3", "dis", 0, 1),
    ("n_images", "2", "fq1_gem", 1, 1), ("n_images", "4", "nts", 0, 0),
    # ordinal_change is only on deletion items: the group's value spreads to its other items.
    ("ordinal_change", "removed", "accuracy", 3, 3), ("ordinal_change", "removed", "nts", 1, 1),
    ("ordinal_change", "shifted", "nts", 0, 1), ("ordinal_change", "unknown", "accuracy", 4, 6),
    ("ordinal_change", "unknown", "fq1_gem", 1, 2),
])
def test_small_strata(small, key, value, field, k, n):
    r = small["strata"][key][value][field]
    assert (r.k, r.n) == (k, n)


def test_small_undefined_strata_and_sections(small):
    assert small["strata"]["source"].value is None and "meta.source" in small["strata"]["source"].reason
    assert small["strata"]["n_images"]["4"]["fq1_gem"].reason
    for key in ("vanilla", "circular", "consistency", "mean_rotation", "drop"):
        assert small[key].value is None and small[key].reason
    assert small["repeats"].reason and small["seeds"].reason
    assert small["input_modes"]["text"].reason and small["input_modes"]["first"].reason


def test_score_is_json(small):
    text = json.dumps(to_jsonable(small))
    assert '"fq1_gem": {"value": 0.5, "k": 1, "n": 2}' in text


def test_other_split_and_missing_predictions():
    r = run("partial", preds_df({"t1-cam": "A", "t1-obj": "B", "g1-cam": "A"}))
    train = family_score(fe.score, SMALL, r, [], split="train")
    assert (train["accuracy"].k, train["accuracy"].n, train["fq1_gem"].n) == (2, 3, 1)
    assert train["nts"].value is None and "FQ2" in train["nts"].reason
    test = family_score(fe.score, SMALL, r, [])
    # unanswered items stay in every denominator and count as wrong (000 App. A: full counts)
    assert (test["accuracy"].k, test["accuracy"].n) == (1, 12)
    assert (test["coverage"].k, test["coverage"].n) == (1, 12)
    assert test["macro_recall"].value == pytest.approx(0.25 / 4)  # A: 1 of 4 supports
    assert test["insufficiency"]["precision"].reason  # no insufficiency responses at all


def test_invalid_and_api_error_are_wrong_and_false_negatives():
    rows = fq1_group("g", "ABC")
    r = run("r", preds_df({"g-cam": None, "g-obj": "", "g-scene": "C"}))
    out = family_score(fe.score, items_df(rows), r, [])
    assert (out["accuracy"].k, out["fq1_gem"].k) == (1, 0)
    assert out["macro_recall"].value == pytest.approx((0 + 0 + 1 + 0) / 4)
    assert out["macro_precision"].value == pytest.approx((0 + 0 + 1 + 0) / 4)


def test_no_fq2_groups_and_no_fq1_groups_give_reasons():
    only1 = family_score(fe.score, items_df(fq1_group("g", "ABC")), run("r", preds_df({"g-cam": "A"})), [])
    for key in ("nts", "dis"):
        assert only1[key].value is None and only1[key].reason
        assert only1["independence"][key].reason and only1["reference"]["uniform_random"][key].reason
    assert only1["insufficiency"]["recall"].reason and only1["transitions"].reason
    only2 = family_score(fe.score, items_df(fq2_group("h", "B", "D")), run("r", preds_df({"h-mss": "B"})), [])
    assert only2["fq1_gem"].reason and only2["pairwise_frames"].reason
    assert only2["reference"]["uniform_random"]["fq1_gem"].reason
    empty = family_score(fe.score, items_df(fq2_group("h", "B", "D")), run("r"), [], split="dev")
    assert empty["accuracy"].reason and empty["macro_f1"].reason and empty["nts"].reason


def test_duplicate_predictions_and_broken_groups_raise():
    twice = pd.concat([preds_df({"g1-cam": "A"}), preds_df({"g1-cam": "B"})], ignore_index=True)
    with pytest.raises(MetricUndefined, match="several predictions"):
        family_score(fe.score, SMALL, run("r", twice), [])
    doubled = items_df(fq1_group("g", "ABC") + [item("g-cam2", "g", "FQ1", "cam", "D")])
    with pytest.raises(MetricUndefined, match="more than one 'cam'"):
        fe.fq1_gem(fe.frame(doubled, run("r")))


def test_incomplete_group_is_left_out_of_joint_metrics():
    rows = fq2_group("h", "B", "D")[:2] + fq2_group("k", "C", "A")  # h lacks its addition item
    df = fe.frame(items_df(rows), run("r", preds_df({"h-mss": "B", "h-del": "D", "k-mss": "C", "k-add": "C"})))
    assert (fe.nts(df).k, fe.nts(df).n) == (1, 2)
    assert (fe.dis(df).k, fe.dis(df).n) == (1, 1)


# --------------------------------------------------------------------------- paper-sized test split


def paper_items() -> pd.DataFrame:
    """48 FQ1 + 48 FQ2 test groups (288 items) with the gold supports of 000 §5: A-D = 75, 70, 69, 74.

    FQ1 golds cycle through ABC, BCD, CDA, DAB (three distinct directions, 36 per letter); FQ2 groups
    (mss = add = x, del = insufficient y != x) give A 39, B 34, C 33, D 38.
    """
    rows = []
    triples = ["ABC", "BCD", "CDA", "DAB"]
    for g in range(48):
        rows += fq1_group(f"f{g:02d}", triples[g % 4], 2 + g % 3)
    mss = list("A" * 12 + "B" * 11 + "C" * 10 + "D" * 15)
    ins = list("A" * 15 + "B" * 12 + "C" * 13 + "D" * 8)
    ins = ins[20:] + ins[:20]
    assert all(x != y for x, y in zip(mss, ins, strict=True))
    for g in range(48):
        rows += fq2_group(f"e{g:02d}", mss[g], ins[g], 2 + g % 3)
    return items_df(rows)


PAPER = paper_items()


def answers_with(correct: set[str], items: pd.DataFrame = PAPER, k=1) -> dict:
    """Correct letters for the ids in `correct`, the gold + k-th letter otherwise."""
    return {i: (g if i in correct else wrong(g, k)) for i, g in zip(items["item_id"], items["answer"], strict=True)}


def test_paper_supports():
    assert PAPER["answer"].value_counts().sort_index().tolist() == [75, 70, 69, 74]
    assert PAPER.groupby("kind")["group_id"].nunique().tolist() == [48, 48]


@pytest.mark.parametrize("key, paper", [
    # 000 Table 4, "Uniform random / Expected": P 25.00, R 25.00, F1 24.93, Acc 25.00, GEM 1.56, NTS 6.25, DIS 6.25
    ("macro_precision", 25.00), ("macro_recall", 25.00), ("macro_f1", 24.93), ("accuracy", 25.00),
    ("fq1_gem", 1.56), ("nts", 6.25), ("dis", 6.25),
])
def test_uniform_random_row_of_table4(key, paper):
    ref = fe.uniform_random(PAPER)
    assert pct(ref[key]) == pytest.approx(paper, abs=0.005)


def test_uniform_random_joint_expectations_are_exact():
    ref = fe.uniform_random(PAPER)
    assert ref["fq1_gem"].value == (1 / 4) ** 3 and ref["nts"].value == (1 / 4) ** 2 == ref["dis"].value
    assert ref["macro_f1"].value == pytest.approx(0.2492681434, abs=1e-9)  # exact binomial double sum


def test_constant_answers_cannot_solve_fq1_or_nts():
    """§3: at least two FQ1 golds differ; deletion gold is the insufficient option, never the MSS gold."""
    for letter in LETTERS:
        out = family_score(fe.score, PAPER, run("c", preds_df({i: letter for i in PAPER["item_id"]})), [])
        assert out["fq1_gem"].k == 0 and out["nts"].k == 0
        assert out["pairwise_frames"]["repeated"].k == 144 and out["pairwise_frames"]["both_correct"].k == 0


def fq2_only() -> pd.DataFrame:
    """48 FQ2 groups: 11 with spatial answer A, 12 with insufficient option A (Table 10 majority rule)."""
    rows = []
    for g in range(48):
        mss = "A" if g < 11 else "BCD"[g % 3]
        ins = "A" if 11 <= g < 23 else ("B" if mss != "B" else "C")
        rows += fq2_group(f"e{g:02d}", mss, ins, 2 + g % 3)
    return items_df(rows)


def test_table10_majority_letter_row():
    """000 Table 10 "Majority letter": test Acc 23.61, NTS 0.00, DIS 22.92 ("solves 11/48 addition pairs")."""
    items = fq2_only()
    out = family_score(fe.score, items, run("maj", preds_df({i: "A" for i in items["item_id"]})), [])
    assert (out["accuracy"].k, out["accuracy"].n) == (34, 144) and pct(out["accuracy"]) == pytest.approx(23.61, abs=.005)
    assert (out["nts"].k, out["dis"].k, out["dis"].n) == (0, 11, 48)
    assert pct(out["dis"]) == pytest.approx(22.92, abs=0.005)


def test_always_insufficient_rule():
    """000 §5: always selecting insufficient information gives 33.33% on 144 FQ2 items; NTS = DIS = 0."""
    items = fq2_only()
    ins = {i: m["insufficient_option"] for i, m in zip(items["item_id"], items["meta"], strict=True)}
    out = family_score(fe.score, items, run("ins", preds_df(ins)), [])
    assert pct(out["accuracy"]) == pytest.approx(33.33, abs=0.005)
    assert (out["nts"].k, out["dis"].k) == (0, 0)
    assert out["insufficiency"]["recall"].value == 1 and pct(out["insufficiency"]["precision"]) == pytest.approx(
        100 / 3)


def test_count_plus_schema_rule_counts():
    """000 §5 / App. A: 54/144 correct (37.50%), 3/48 MSS/deletion and 1/48 MSS/addition pairs (6.25, 2.08)."""
    items = fq2_only()
    gids = sorted(items["group_id"].unique())
    correct = {f"{g}-mss" for g in gids[:4]} | {f"{g}-del" for g in gids[:3]} | {f"{gids[3]}-add"}
    correct |= {f"{g}-del" for g in gids[4:44]} | {f"{g}-add" for g in gids[40:46]}
    assert len(correct) == 54
    out = family_score(fe.score, items, run("rule", preds_df(answers_with(correct, items, k=2))), [])
    assert [round(pct(out[k]), 2) for k in ("accuracy", "nts", "dis")] == [37.50, 6.25, 2.08]


@pytest.mark.parametrize("mss, dele, add, recall, precision", [
    (2, 3, 2, 6.25, 42.86),    # 000 Table 8 / §7: Qwen2.5-VL-7B Base
    (30, 38, 24, 79.17, 41.30),  # Qwen2.5-VL-7B LoRA ("recall rises from 6.25% to 79.17%, precision 42.86 -> 41.30")
    (0, 6, 0, 12.50, 100.0),   # MiniCPM-V 4.5
])
def test_table8_insufficiency_precision_recall(mss, dele, add, recall, precision):
    items = fq2_only()
    gids = sorted(items["group_id"].unique())
    ins_of = {i: m["insufficient_option"] for i, m in zip(items["item_id"], items["meta"], strict=True)}
    answers = {}
    for v, count in (("mss", mss), ("del", dele), ("add", add)):
        for n, g in enumerate(gids):
            i = f"{g}-{v}"
            answers[i] = ins_of[i] if n < count else next(x for x in LETTERS if x != ins_of[i])
    out = fe.insufficiency(fe.frame(items, run("r", preds_df(answers))))
    assert [out["counts"][v].k for v in fe.FQ2_VARIANTS] == [mss, dele, add]
    assert out["counts"]["del"].n == 48
    assert pct(out["recall"]) == pytest.approx(recall, abs=0.005)
    assert pct(out["precision"]) == pytest.approx(precision, abs=0.005)


# --------------------------------------------------------------------------- runs built to given counts


def counts_answers(acc: int, gem: int, nts_k: int, dis_k: int, items: pd.DataFrame = PAPER) -> dict:
    """Answers with exactly `acc` correct items, `gem` solved FQ1 triplets, `nts_k` / `dis_k` FQ2 successes."""
    g1 = sorted(items.loc[items["kind"] == "FQ1", "group_id"].unique())
    g2 = sorted(items.loc[items["kind"] == "FQ2", "group_id"].unique())
    correct = {f"{g}-{v}" for g in g1[:gem] for v in fe.FQ1_VARIANTS}
    top = max(nts_k, dis_k)
    correct |= {f"{g}-mss" for g in g2[:top]} | {f"{g}-del" for g in g2[:nts_k]} | {f"{g}-add" for g in g2[:dis_k]}
    filler = [f"{g}-{v}" for g in g1[gem:] for v in ("cam", "obj")]
    filler += [f"{g}-{v}" for g in g2[top:] for v in ("del", "add")]
    extra = acc - len(correct)
    assert 0 <= extra <= len(filler)
    return answers_with(correct | set(filler[:extra]), items)


@pytest.mark.parametrize("family, rows, expected", [
    # 000 Table 11 per-seed rows (counts from the %: acc /288, GEM, NTS, DIS /48) -> "Mean" row
    ("InternVL3-8B", [(95, 0, 5, 7), (89, 0, 4, 5), (96, 1, 5, 6)],
     {"accuracy": (32.41, 1.31), "fq1_gem": (0.69, 1.20), "nts": (9.72, 1.20), "dis": (12.50, 2.08)}),
    ("Qwen2.5-VL-7B", [(103, 0, 4, 6), (100, 0, 4, 6), (108, 0, 7, 6)],
     {"accuracy": (36.00, 1.40), "fq1_gem": (0.00, 0.00), "nts": (10.42, 3.61), "dis": (12.50, 0.00)}),
])
def test_table11_multi_seed_mean_sd(family, rows, expected):
    runs = [run(f"{family}-{s}", preds_df(counts_answers(*row)), model=family, strategy="direct", shots=0, seed=s)
            for s, row in zip((20260722, 20260723, 20260724), rows, strict=True)]
    for r, row in zip(runs, rows, strict=True):
        out = family_score(fe.score, PAPER, r, [])
        assert (out["accuracy"].k, out["fq1_gem"].k, out["nts"].k, out["dis"].k) == row
    ms = fe.multi_seed(PAPER, runs)
    assert ms["seeds"] == [20260722, 20260723, 20260724]
    for key, (mean, sd) in expected.items():
        assert pct(ms[key]["mean"]) == pytest.approx(mean, abs=0.005)
        assert pct(ms[key]["sd"]) == pytest.approx(sd, abs=0.005)
    # score finds the seed siblings on its own
    seeds = family_score(fe.score, PAPER, runs[0], runs[1:] + [run("other", model="x", seed=1)])["seeds"]
    assert seeds["runs"] == [r.name for r in runs]
    assert pct(seeds["accuracy"]["mean"]) == pytest.approx(expected["accuracy"][0], abs=0.005)


def test_multi_seed_refuses_runs_differing_in_more_than_seed():
    a, b = run("a", seed=1, model="m", shots=0), run("b", seed=2, model="m", shots=3)
    with pytest.raises(MetricUndefined, match="shots"):
        fe.multi_seed(PAPER, [a, b])
    with pytest.raises(MetricUndefined, match="share a seed"):
        fe.multi_seed(PAPER, [a, run("c", seed=1, model="m", shots=0)])
    one = fe.multi_seed(PAPER, [a])
    assert one["accuracy"]["mean"].value == 0 and one["accuracy"]["sd"].reason
    # LoRA adapters: the model path differs per seed; the caller names what may differ
    c = run("c", seed=2, model="m2", shots=0)
    assert fe.multi_seed(PAPER, [a, c], ignore=("seed", "model"))["runs"] == ["a", "c"]


def test_turnover_gpt_two_to_three_shot():
    """000 §6.2: GPT's 1.74-point two-to-three-shot gain = 48 newly correct - 43 newly incorrect."""
    ids = list(PAPER["item_id"])
    both = set(ids[:96])
    a_only, b_only = set(ids[96:139]), set(ids[139:187])
    ra = run("2-shot", preds_df(answers_with(both | a_only)))
    rb = run("3-shot", preds_df(answers_with(both | b_only)))
    t = fe.turnover(PAPER, ra, rb)
    assert (t["newly_correct"].k, t["newly_incorrect"].k, t["net"]) == (48, 43, 5)
    assert t["change"].value * 100 == pytest.approx(1.74, abs=0.005)


def test_turnover_primary_vs_repeat():
    """000 Same-order control: 77 both, 40 only primary, 53 only repeat, 118 neither; 128/288 changed;
    repeat minus primary accuracy 4.51 points (Table 13)."""
    ids = list(PAPER["item_id"])
    both, prim, rep = set(ids[:77]), set(ids[77:117]), set(ids[117:170])
    neither_changed = set(ids[170:205])  # 35 items wrong in both runs with different wrong letters
    a = answers_with(both | prim)
    b = answers_with(both | rep)
    for i in neither_changed:
        b[i] = wrong(PAPER.set_index("item_id").at[i, "answer"], 2)
    t = fe.turnover(PAPER, run("primary", preds_df(a)), run("repeat", preds_df(b)))
    assert [t[k].k for k in ("both_correct", "newly_incorrect", "newly_correct", "both_wrong")] == [77, 40, 53, 118]
    assert t["changed_answers"].k == 128
    assert t["change"].value * 100 == pytest.approx(4.51, abs=0.005)


def paired_answers(base: dict, both: int, b_total: int, consistent: int, gold: dict) -> dict:
    """Second answer set against `base`: `both` items correct in both, `b_total` correct in the second,
    `consistent` items with the same valid answer (the both-correct ones plus shared wrong answers)."""
    base_right = [i for i in base if base[i] == gold[i]]
    base_wrong = [i for i in base if base[i] != gold[i]]
    out = {}
    for n, i in enumerate(base_right):
        out[i] = gold[i] if n < both else wrong(gold[i], 2)
    only_b = b_total - both
    same_wrong = consistent - both
    for n, i in enumerate(base_wrong):
        if n < only_b:
            out[i] = gold[i]
        elif n < only_b + same_wrong:
            out[i] = base[i]
        else:
            out[i] = wrong(gold[i], 2)
    return out


@pytest.fixture(scope="module")
def gpt_rotation_run():
    """GPT zero-shot Circular run of 000: R0 131 correct; repeat 130 (82 both, consistency 154); R1-R3 with
    120 / 122 / 120 correct, both-correct 90 / 88 / 81 and consistency 171 / 158 / 148 against R0."""
    gold = dict(zip(PAPER["item_id"], PAPER["answer"], strict=True))
    ids = list(gold)
    r0 = {i: (gold[i] if n < 131 else wrong(gold[i])) for n, i in enumerate(ids)}
    frames = [preds_df(r0), preds_df(paired_answers(r0, 82, 130, 154, gold), repeat=1)]
    for r, (both, total, cons) in zip((1, 2, 3), ((90, 120, 171), (88, 122, 158), (81, 120, 148)), strict=True):
        frames.append(preds_df(paired_answers(r0, both, total, cons, gold), rotation=r))
    return run("gpt-circular", *frames, model="gpt", rotations=4)


@pytest.mark.parametrize("column, paper", [
    # 000 Table 7: At least one correct / Both correct / Consistency / Consistently wrong
    ("repeat1", (62.15, 28.47, 53.47, 25.00)),
    ("R1", (55.90, 31.25, 59.38, 28.12)),
    ("R2", (57.29, 30.56, 54.86, 24.31)),
    ("R3", (59.03, 28.12, 51.39, 23.26)),
])
def test_table7_paired_runs(gpt_rotation_run, column, paper):
    table = fe.repeat_table(PAPER, gpt_rotation_run)
    got = table[column]
    keys = ("at_least_one_correct", "both_correct", "consistency", "consistently_wrong")
    assert [round(pct(got[k]), 2) for k in keys] == list(paper)


@pytest.mark.parametrize("column, both, consistency", [
    # 000 Table 13: "Both correct, difference from R0-Rj" and "Consistency, difference from R0-Rj"
    ("R1", -2.78, -5.90), ("R2", -2.08, -1.39), ("R3", 0.35, 2.08),
])
def test_table13_pair_differences(gpt_rotation_run, column, both, consistency):
    d = fe.repeat_table(PAPER, gpt_rotation_run)["differences"][column]
    assert d["both_correct"].value * 100 == pytest.approx(both, abs=0.005)
    assert d["consistency"].value * 100 == pytest.approx(consistency, abs=0.005)


def test_table7_changed_answers(gpt_rotation_run):
    """000: "Pairing with rotation zero gives counts of 82, 49, 48 and 109, with 134 changed answers"."""
    assert fe.repeat_table(PAPER, gpt_rotation_run)["repeat1"]["changed"].k == 134


def circular_answers() -> list[dict]:
    """Four rotations with 131 / 120 / 122 / 120 correct, 54 items correct under all four and 78 consistent."""
    gold = dict(zip(PAPER["item_id"], PAPER["answer"], strict=True))
    ids = list(gold)
    rest = ids[78:]  # 210 items, each correct under some rotations and wrong under others
    blocks = {0: set(rest[0:77]), 1: set(rest[77:143]), 2: set(rest[143:210]) | {rest[0]}, 3: set(rest[1:67])}
    out = []
    for r in range(4):
        ans = {}
        for n, i in enumerate(ids):
            if n < 54 or i in blocks[r]:
                ans[i] = gold[i]
            elif n < 78:
                ans[i] = wrong(gold[i])  # the same wrong answer under every rotation: consistent
            else:
                ans[i] = wrong(gold[i], 1 + r % 3)
        out.append(ans)
    return out


def test_table12_gpt_circular_row():
    """000 Table 12, GPT-5.6 0-shot: Vanilla 45.49, Mean rot. 42.80, Circular 18.75, Consistency 27.08,
    Drop 26.74 (four rotations with 131, 120, 122, 120 correct; 54 fully correct, 78 consistent sets)."""
    frames = [preds_df(a, rotation=r) for r, a in enumerate(circular_answers())]
    out = family_score(fe.score, PAPER, run("gpt", *frames, rotations=4), [])
    assert [out["per_rotation"][str(r)].k for r in range(4)] == [131, 120, 122, 120]
    assert (out["circular"].k, out["consistency"].k) == (54, 78)
    got = [round(pct(out[k]), 2) for k in ("vanilla", "mean_rotation", "circular", "consistency", "drop")]
    assert got == [45.49, 42.80, 18.75, 27.08, 26.74]
    assert out["vanilla"].k == out["accuracy"].k  # Vanilla uses the rotation run's own rotation-0 answers


def test_missing_rotation_gives_no_circular_credit():
    rows = fq1_group("g", "ABC")
    frames = [preds_df({"g-cam": "A", "g-obj": "B", "g-scene": "C"}, rotation=r) for r in range(3)]
    out = fe.rotations(items_df(rows), run("r", *frames, rotations=4))
    assert (out["circular"].k, out["consistency"].k, out["circular"].n) == (0, 0, 3)
    assert (out["mean_rotation"].k, out["mean_rotation"].n) == (9, 12)


# --------------------------------------------------------------------------- decomposition (§7, App. D.3)


def decomposition_runs(patterns: list[tuple[int, str, str]]) -> tuple[RunData, RunData]:
    """FQ2 answers from (groups, run-a pattern, run-b pattern); a pattern is 3 flags mss/del/add (1 = correct)."""
    items = fq2_only()
    gids = sorted(items["group_id"].unique())
    gold = dict(zip(items["item_id"], items["answer"], strict=True))
    a, b, n = {}, {}, 0
    for count, pa, pb in patterns:
        for g in gids[n:n + count]:
            for v, fa, fb in zip(fe.FQ2_VARIANTS, pa, pb, strict=True):
                i = f"{g}-{v}"
                a[i] = gold[i] if fa == "1" else wrong(gold[i])
                b[i] = gold[i] if fb == "1" else wrong(gold[i])
        n += count
    for g in gids[n:]:
        for v in fe.FQ2_VARIANTS:
            a[f"{g}-{v}"] = b[f"{g}-{v}"] = wrong(gold[f"{g}-{v}"])
    return run("base", preds_df(a)), run("lora", preds_df(b))


def test_decomposition_qwen():
    """000 §7 with Table 4 counts: Qwen NTS 1 -> 6 (shared MSS-correct groups give 4 of the 5 net gains) and
    DIS 21 -> 6 ("loses fourteen DIS successes through changed MSS coverage and one among shared groups")."""
    base, lora = decomposition_runs([
        (1, "111", "111"), (4, "101", "111"), (1, "101", "100"), (14, "101", "000"), (1, "000", "110"),
        (1, "101", "101"),
    ])
    d = fe.decompose_change(fq2_only(), base, lora)
    assert (d["nts"]["a"].k, d["nts"]["b"].k, d["nts"]["net"]) == (1, 6, 5)
    assert d["nts"]["shared_mss_correct"]["net"] == 4 and d["nts"]["changed_coverage"]["net"] == 1
    assert (d["dis"]["a"].k, d["dis"]["b"].k, d["dis"]["net"]) == (21, 6, -15)
    assert d["dis"]["shared_mss_correct"]["net"] == -1 and d["dis"]["changed_coverage"]["net"] == -14
    assert [round(pct(d[k][s]), 2) for k in ("nts", "dis") for s in ("a", "b")] == [2.08, 12.50, 43.75, 12.50]


def test_decomposition_internvl():
    """000 §7: InternVL's unchanged NTS (4 -> 4) = +1 on shared groups offset by changed coverage; DIS 10 -> 4
    loses three through each route."""
    base, lora = decomposition_runs([
        (3, "111", "111"), (1, "101", "111"), (1, "110", "010"), (3, "101", "100"), (3, "101", "000"),
    ])
    d = fe.decompose_change(fq2_only(), base, lora)
    assert (d["nts"]["a"].k, d["nts"]["b"].k) == (4, 4)
    assert (d["nts"]["shared_mss_correct"]["net"], d["nts"]["changed_coverage"]["net"]) == (1, -1)
    assert (d["dis"]["a"].k, d["dis"]["b"].k) == (10, 4)
    assert (d["dis"]["shared_mss_correct"]["lost"], d["dis"]["changed_coverage"]["lost"]) == (3, 3)


def test_decomposition_without_fq2_groups():
    items = items_df(fq1_group("g", "ABC"))
    d = fe.decompose_change(items, run("a"), run("b"))
    assert d["nts"].reason and d["dis"].reason


# --------------------------------------------------------------------------- pairwise frames (§7)


def test_pairwise_gpt_three_shot():
    """000 §7: GPT three-shot "changes 94 pairs but answers both correctly on only 27" of 144 pairs, with
    three complete triplets."""
    gold = dict(zip(PAPER["item_id"], PAPER["answer"], strict=True))
    g1 = sorted(PAPER.loc[PAPER["kind"] == "FQ1", "group_id"].unique())
    answers = {}
    for n, g in enumerate(g1):
        c, o, s = (gold[f"{g}-{v}"] for v in fe.FQ1_VARIANTS)
        fourth = next(x for x in LETTERS if x not in (c, o, s))
        if n < 3:
            trip = (c, o, s)              # solved: 3 changed pairs, 3 both correct
        elif n < 21:
            trip = (c, o, c)              # 2 changed, 1 repeated, 1 both correct
        elif n < 31:
            trip = (fourth,) * 3          # 3 repeated
        elif n < 33:
            trip = (fourth, fourth, c)    # 1 repeated, 2 changed
        else:
            trip = (o, s, c)              # 3 changed, all wrong
        answers.update({f"{g}-{v}": a for v, a in zip(fe.FQ1_VARIANTS, trip, strict=True)})
    p = fe.pairwise_frames(fe.frame(PAPER, run("gpt3", preds_df(answers))))
    assert (p["pairs"], p["changed"].k, p["repeated"].k, p["both_correct"].k) == (144, 94, 50, 27)
    assert p["triplets_correct"].k == 3


# --------------------------------------------------------------------------- input modes (Table 5 / 14)


def test_input_mode_deltas_and_text_only_insufficiency():
    """000 §6.3: without images GPT always selects insufficiency for FQ2, so its text-only NTS and DIS are 0."""
    items = fq2_only()
    ins = {i: m["insufficient_option"] for i, m in zip(items["item_id"], items["meta"], strict=True)}
    base = dict(model="gpt", strategy="direct", shots=0)
    all_run = run("all", preds_df(counts_answers(60, 0, 7, 17, items)), input_mode="all", **base)
    text_run = run("text", preds_df(ins, input_mode="text"), input_mode="text", **base)
    other = run("other-model", preds_df(ins), input_mode="first", model="x", strategy="direct", shots=0)
    out = family_score(fe.score, items, all_run, [text_run, other])
    text = out["input_modes"]["text"]
    assert text["partner"] == "text"
    assert (text["partner_scores"]["nts"].k, text["partner_scores"]["dis"].k) == (0, 0)
    assert text["delta"]["accuracy"].value == pytest.approx((60 - 48) / 144)
    assert text["delta"]["nts"].value == pytest.approx(7 / 48) and text["delta"]["dis"].value == pytest.approx(17 / 48)
    assert text["delta"]["fq1_gem"].reason  # no FQ1 groups
    assert text["decomposition"]["dis"]["net"] == 17
    assert "no 'first' input-mode run" in out["input_modes"]["first"].reason
    # the text-only run itself gets reasons; two matching partners are ambiguous
    assert "input mode is 'text'" in family_score(fe.score, items, text_run, [all_run])["input_modes"]["text"].reason
    # two matching partners: the one whose other settings equal this run's wins; two such are ambiguous
    twin = run("text2", preds_df(ins), input_mode="text", temperature=1.0, **base)
    assert fe.input_mode_deltas(items, all_run, [text_run, twin])["text"]["partner"] == "text"
    clash = fe.input_mode_deltas(items, all_run, [text_run, twin, run("text3", input_mode="text", **base)])
    assert "several 'text' runs" in clash["text"].reason


# --------------------------------------------------------------------------- paired bootstrap


def macro_f1_of(gold: np.ndarray, pred: np.ndarray) -> float:
    """Macro-F1 over A-D from its definition: per class P = TP / predicted (0 when none predicted), R = TP /
    support (0 when no support), F1 = 2PR / (P + R) (0 when both are 0); the mean of the four."""
    scores = []
    for c in "ABCD":
        tp = int(np.sum((gold == c) & (pred == c)))
        predicted, support = int(np.sum(pred == c)), int(np.sum(gold == c))
        p = tp / predicted if predicted else 0.0
        r = tp / support if support else 0.0
        scores.append(2 * p * r / (p + r) if p + r else 0.0)
    return sum(scores) / 4


def test_compare_paired_bootstrap():
    a = run("a", preds_df(counts_answers(95, 1, 5, 7)))
    b = run("b", preds_df(counts_answers(110, 3, 9, 6)))
    out = fe.compare(PAPER, a, b, draws=2000, seed=7)
    assert out["clusters"] == 96
    for key, (ka, kb, n) in {"accuracy": (95, 110, 288), "fq1_gem": (1, 3, 48), "nts": (5, 9, 48),
                             "dis": (7, 6, 48)}.items():
        d = out[key]["difference"]
        assert d.value == pytest.approx((kb - ka) / n)
        lo, hi = d.ci
        assert lo <= d.value <= hi
    mf1 = out["macro_f1"]
    assert mf1["difference"].value == pytest.approx(mf1["b"].value - mf1["a"].value)
    assert mf1["difference"].ci[0] < mf1["difference"].ci[1]
    # at full precision against an independent computation on the same drawn groups (tests/bootstrap_ref.py)
    answers_a, answers_b = counts_answers(95, 1, 5, 7), counts_answers(110, 3, 9, 6)
    groups = sorted(PAPER["group_id"].unique())
    rows = [PAPER.index[PAPER["group_id"] == g].to_numpy() for g in groups]
    gold = PAPER["answer"].to_numpy()
    ids = PAPER["item_id"].to_numpy()
    correct_a = np.array([answers_a[i] == g for i, g in zip(ids, gold, strict=True)])
    correct_b = np.array([answers_b[i] == g for i, g in zip(ids, gold, strict=True)])
    per_group = {"accuracy": (lambda c: [c[r].sum() for r in rows], lambda: [len(r) for r in rows])}
    for key, kind, variants in (("fq1_gem", "FQ1", fe.FQ1_VARIANTS), ("nts", "FQ2", ("mss", "del")),
                                ("dis", "FQ2", ("mss", "add"))):
        def joint(c, kind=kind, variants=variants):
            return [float(PAPER["kind"][r[0]] == kind and all(c[i] for i in r if PAPER["variant"][i] in variants))
                    for r in rows]
        per_group[key] = (joint, lambda kind=kind: [float(PAPER["kind"][r[0]] == kind) for r in rows])
    for key, (k_of, n_of) in per_group.items():
        n = n_of()
        assert out[key]["difference"].ci == diff_interval(k_of(correct_b), n, k_of(correct_a), n, draws=2000, seed=7)
    pred_a = np.array([answers_a[i] for i in ids])
    pred_b = np.array([answers_b[i] for i in ids])
    assert macro_f1_of(gold, pred_a) == pytest.approx(f1_score(gold, pred_a, labels=list("ABCD"), average="macro"))

    def f1_difference(drawn):
        at = np.concatenate([rows[g] for g in drawn])
        return macro_f1_of(gold[at], pred_b[at]) - macro_f1_of(gold[at], pred_a[at])

    expected = statistic_interval([np.arange(len(groups))], f1_difference, draws=2000, seed=7)
    assert mf1["difference"].ci == pytest.approx(expected, rel=1e-12, abs=1e-15)
    assert expected[0] <= mf1["difference"].value <= expected[1]
    again = fe.compare(PAPER, a, b, draws=2000, seed=7)
    assert again["nts"]["difference"].ci == out["nts"]["difference"].ci  # seeded
    same = fe.compare(PAPER, a, a, draws=500, seed=1)
    assert all(same[k]["difference"].ci == (0.0, 0.0) for k in fe.COMPARED)


def macro_prf_of(gold: np.ndarray, pred: np.ndarray) -> tuple[float, float, float]:
    """Macro precision, recall and F1 over A-D from their definitions (as macro_f1_of)."""
    p_, r_ = [], []
    for c in "ABCD":
        tp = int(np.sum((gold == c) & (pred == c)))
        predicted, support = int(np.sum(pred == c)), int(np.sum(gold == c))
        p_.append(tp / predicted if predicted else 0.0)
        r_.append(tp / support if support else 0.0)
    return sum(p_) / 4, sum(r_) / 4, macro_f1_of(gold, pred)


def test_headline_intervals_equal_the_reference():
    """Each 000 Table 4 metric of one run with its 95% percentile cluster-bootstrap interval (whole groups, the
    seeded draws of tests/bootstrap_ref.py): the rates as ratios of the drawn groups' sums, macro P / R / F1 from
    their definitions over the drawn groups' items; each holds its estimate."""
    answers = counts_answers(95, 1, 5, 7)
    got = fe.headline_intervals(PAPER, run("a", preds_df(answers)), draws=2000, seed=7)
    groups = sorted(PAPER["group_id"].unique())
    rows = [PAPER.index[PAPER["group_id"] == g].to_numpy() for g in groups]
    gold = PAPER["answer"].to_numpy()
    pred = np.array([answers[i] for i in PAPER["item_id"]])
    correct = pred == gold
    assert got["accuracy"] == ratio_interval([correct[r].sum() for r in rows], [len(r) for r in rows],
                                             draws=2000, seed=7)
    for key, kind, variants in (("fq1_gem", "FQ1", fe.FQ1_VARIANTS), ("nts", "FQ2", ("mss", "del")),
                                ("dis", "FQ2", ("mss", "add"))):
        k = [float(PAPER["kind"][r[0]] == kind and all(correct[i] for i in r if PAPER["variant"][i] in variants))
             for r in rows]
        assert got[key] == ratio_interval(k, [float(PAPER["kind"][r[0]] == kind) for r in rows], draws=2000, seed=7)
    for i, key in enumerate(("macro_precision", "macro_recall", "macro_f1")):
        def one(drawn, i=i):
            at = np.concatenate([rows[g] for g in drawn])
            return macro_prf_of(gold[at], pred[at])[i]

        expected = statistic_interval([np.arange(len(groups))], one, draws=2000, seed=7)
        assert got[key] == pytest.approx(expected, rel=1e-12, abs=1e-15), key
    out = family_score(fe.score, PAPER, run("a", preds_df(answers)), draws=2000, seed=7)
    for key, ci in got.items():
        assert out[key].ci == ci and ci[0] <= out[key].value <= ci[1], key


def test_compare_undefined_metric_has_reason():
    items = fq2_only()
    out = fe.compare(items, run("a", preds_df({"e00-mss": "A"})), run("b"), draws=200)
    assert out["fq1_gem"]["difference"].reason and out["fq1_gem"]["difference"].ci is None
    assert out["nts"]["difference"].value == pytest.approx(0.0)


# --------------------------------------------------------------------------- through the store


def test_score_through_store_and_family(store, tmp_path):
    """Items and predictions imported into a real SQLite store, scored through core.scoring (the CLI path)."""
    from conftest import fe_lines, write_benchmark

    from core.scoring import score_run
    from db.importers import import_items, import_predictions

    lines = fe_lines(3, 3)
    import_items(store, write_benchmark(tmp_path / "bench", lines), name="fe")
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps({"item_id": x["item_id"], "response": "D" if x["variant"] == "obj"
                                         else x["answer"]}) + "\n" for x in lines), encoding="utf-8")
    import_predictions(store, preds, run="r1", model="m")
    out = score_run(store.items_frame("fe"), store.run_data("r1"), [])
    m = out["metrics"]
    # obj golds are all B, answered D: every FQ1 triplet fails; FQ2 is answered with its golds
    assert {k: m["accuracy"][k] for k in ("value", "k", "n")} == {"value": 15 / 18, "k": 15, "n": 18}
    assert m["accuracy"]["ci"][0] <= 15 / 18 <= m["accuracy"]["ci"][1]
    assert (m["fq1_gem"]["k"], m["nts"]["k"], m["dis"]["k"]) == (0, 3, 3)
    assert m["insufficiency"]["recall"]["value"] == 1.0
    json.dumps(m)
