"""FrameEvidence metrics at their edges (docs/METRICS.md, FrameEvidence): the exact reasons, the documented keys,
the split passed through to every part, the pairing defaults, stratum order. Each test pins behaviour that a
mutant of the metrics changed while every other test still passed (docs/TESTING.md, "Mutation testing")."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from bootstrap_ref import statistic_interval
from test_frameevidence_metrics import (
    LETTERS,
    PAPER,
    SMALL,
    SMALL_ANSWERS,
    counts_answers,
    decomposition_runs,
    fq1_group,
    fq2_group,
    fq2_only,
    item,
    items_df,
    macro_f1_of,
    preds_df,
    run,
    wrong,
)

from core.errors import MetricUndefined
from core.families.frameevidence import metrics as fe
from core.stats import Clustering
from tests.helpers import family_score

# --------------------------------------------------------------------------- reasons


def test_always_insufficient_reasons_without_fq1_items():
    """On FQ2-only items the rule's accuracy is its FQ2 accuracy; macro P / R / F1 and FQ1-GEM say why not."""
    out = family_score(fe.score, fq2_only(), run("r"), [])["reference"]["always_insufficient"]
    for key in ("macro_precision", "macro_recall", "macro_f1"):
        assert out[key].reason == "a constant-option rule: see FQ2 Acc"
    assert out["fq1_gem"].reason == "no FQ1 groups"
    assert out["accuracy"].value == out["kind_accuracy"]["FQ2"].value == pytest.approx(48 / 144)


def test_insufficiency_names_the_item_without_its_option():
    rows = fq2_group("h", "B", "D")
    rows[1] = item("h-del", "h", "FQ2", "del", "D", 1, {})  # no meta.insufficient_option
    df = fe.frame(items_df(rows), run("r", preds_df({"h-mss": "B"})))
    with pytest.raises(MetricUndefined, match=r"^FQ2 item 'h-del' has no meta\.insufficient_option$"):
        fe.insufficiency(df)


def test_reasons_name_the_missing_denominator():
    only1 = fe.frame(items_df(fq1_group("g", "ABC")), run("r", preds_df({"g-cam": "A"})))
    assert fe.nts(only1).reason == fe.dis(only1).reason == "no FQ2 groups to count"
    answered = fe.frame(items_df(fq2_group("h", "B", "D")), run("r", preds_df({"h-mss": "B", "h-del": "A"})))
    assert fe.insufficiency(answered)["precision"].reason == "no insufficiency responses to count"
    # a group without its deletion item: nothing to count for the deletion's rates
    t = fe.transitions(fe.frame(items_df(fq2_group("h", "B", "D")[::2]), run("r", preds_df({"h-mss": "B"}))))
    assert t["answer_kept"]["del"].reason == "no FQ2 groups to count"
    assert t["conditional"]["del"].reason == "no MSS-correct groups to count"
    assert (t["answer_kept"]["add"].k, t["answer_kept"]["add"].n) == (0, 1)


def test_pairwise_frames_when_every_pair_shares_its_gold():
    p = fe.pairwise_frames(fe.frame(items_df(fq1_group("g", "AAA")), run("r", preds_df({"g-cam": "A"}))))
    assert (p["pairs"], p["same_gold_pairs"]) == (0, 3)
    for key in ("repeated", "changed", "invalid", "both_correct"):
        assert p[key].reason == "no pairs with different gold directions to count"


# --------------------------------------------------------------------------- strata


def test_strata_values_in_numeric_order_unknown_last():
    """Stratum values: text first (by its text), then numbers in numeric order ("9" before "10"), "unknown"
    last; every value has the four documented rates."""
    rows = (fq1_group("a", "ABC", 10, {"relation": "10"}) + fq1_group("b", "ABC", 9, {"relation": "axial"})
            + fq1_group("c", "ABC", 2, {"relation": "9"}) + fq1_group("d", "ABC", 3))
    out = fe.strata(fe.frame(items_df(rows), run("r", preds_df({"a-cam": "A"}))))
    assert list(out["n_images"]) == ["2", "3", "9", "10"]
    assert list(out["relation"]) == ["axial", "9", "10", "unknown"]
    for table in (out["n_images"], out["relation"]):
        assert all(set(rates) == {"accuracy", "fq1_gem", "nts", "dis"} for rates in table.values())
    assert (out["relation"]["10"]["accuracy"].k, out["relation"]["10"]["accuracy"].n) == (1, 3)


def test_strata_reasons_of_a_value_without_groups():
    """n_images 4 is shown by SMALL's g4 addition item only; its group's value is its MSS's 3."""
    four = fe.strata(fe.frame(SMALL, run("r", preds_df(SMALL_ANSWERS))))["n_images"]["4"]
    assert four["fq1_gem"].reason == "no FQ1 groups to count"
    assert four["nts"].reason == four["dis"].reason == "no FQ2 groups to count"
    assert (four["accuracy"].k, four["accuracy"].n) == (0, 1)


def test_items_without_meta_are_unknown():
    rows = fq1_group("g", "ABC", meta={"relation": "axial"}) + [
        dict(r, meta=None) for r in fq1_group("h", "ABC")]
    out = fe.strata(fe.frame(items_df(rows), run("r", preds_df({"h-cam": "A", "g-cam": "A"}))))
    assert {v: (r["accuracy"].k, r["accuracy"].n) for v, r in out["relation"].items()} == {
        "axial": (1, 3), "unknown": (1, 3)}


# --------------------------------------------------------------------------- the split passed through


def _two_splits() -> pd.DataFrame:
    """PAPER's items on the test split and two FQ1 groups and one FQ2 group on a dev split."""
    dev = fq1_group("d1", "ABC", split="dev") + fq1_group("d2", "BCD", split="dev") + \
        fq2_group("d3", "B", "D", split="dev")
    return items_df([*PAPER.to_dict("records"), *dev])


def test_seeds_in_score_use_the_split_scored():
    items = _two_splits()
    a = run("a", preds_df({"d1-cam": "A", "d1-obj": "B", "d1-scene": "C"}), model="m", seed=1)
    b = run("b", preds_df({"d1-cam": "A", "d2-cam": "B"}), model="m", seed=2)
    seeds = family_score(fe.score, items, a, [b], split="dev")["seeds"]
    assert seeds["runs"] == ["a", "b"]
    assert seeds["accuracy"]["values"] == [3 / 9, 2 / 9]


def test_compare_on_another_split():
    items = _two_splits()
    a = run("a", preds_df({"d1-cam": "A", "d2-cam": "B"}))
    b = run("b", preds_df({"d1-cam": "A", "d2-cam": "B", "d2-obj": "C", "d3-mss": "B"}))
    out = fe.compare(items, a, b, split="dev", draws=200, seed=3)
    assert out["clusters"] == 3
    assert out["accuracy"]["difference"].value == pytest.approx(2 / 9)


def test_table13_primary_run_on_the_split_scored():
    """The primary run is read over the split's items, like the run itself (here items of another split too)."""
    items = items_df(fq1_group("g", "ABC") + fq1_group("h", "BCD") + fq1_group("x", "ABC", split="dev"))
    gold = dict(zip(items["item_id"], items["answer"], strict=True))
    test_ids = [i for i in gold if not i.startswith("x")]
    r = run("r", preds_df({i: gold[i] for i in test_ids}), preds_df({i: wrong(gold[i]) for i in test_ids}, repeat=1),
            model="m")
    primary = run("p", preds_df({i: gold[i] for i in gold}), model="m")
    out = fe.repeat_intervals(items, r, [primary], draws=200)
    assert out["repeat"] == 1 and out["primary"] == "p"
    q = out["quantities"]["repeat_minus_primary_accuracy"]["estimate"]
    assert q.value == pytest.approx(-1.0)


# --------------------------------------------------------------------------- Table 13 sections


def test_table13_rows_without_a_primary_run_keep_their_place():
    items = items_df(fq1_group("g", "ABC") + fq1_group("h", "BCD"))
    gold = dict(zip(items["item_id"], items["answer"], strict=True))
    r = run("r", preds_df(gold), preds_df(gold, repeat=1), model="m")
    out = fe.repeat_intervals(items, r, [], draws=200)
    assert list(out["quantities"]) == ["repeat_accuracy", "primary_repeat_disagreement", "r0_repeat_disagreement",
                                       "repeat_minus_primary_accuracy", "repeat_minus_r0_accuracy", "both_correct",
                                       "consistency"]
    why = out["primary"].reason
    assert why.startswith("no ordinary 'all' run")
    for key in ("primary_repeat_disagreement", "repeat_minus_primary_accuracy"):
        assert out["quantities"][key]["estimate"].reason == out["quantities"][key]["group"].reason == why


def test_table13_a_refused_clustering_leaves_the_next_one_standing():
    items = items_df(fq1_group("g", "ABC") + fq1_group("h", "BCD"))
    gold = dict(zip(items["item_id"], items["answer"], strict=True))
    r = run("r", preds_df(gold), preds_df(gold, repeat=1), model="m")
    out = fe.repeat_intervals(items, r, [], clusterings=(Clustering("union", ("nofield",)), Clustering("group")),
                              draws=200)
    assert out["clusterings"]["union"].reason == "union clustering: no item has meta.nofield"
    assert out["clusterings"]["group"] == {"label": "groups", "clusters": 2}
    assert out["quantities"]["repeat_accuracy"]["group"].ci == (1.0, 1.0)


def test_configured_rotation_list_of_two():
    """config.rotations = [0, 1] names two rotations even when the predictions hold rotation 0 only: an item
    without its rotation-1 answer gets no circular credit."""
    items = items_df(fq1_group("g", "ABC"))
    out = fe.rotations(items, run("r", preds_df({"g-cam": "A", "g-obj": "B", "g-scene": "C"}), rotations=[0, 1]))
    assert (out["vanilla"].k, out["circular"].k, out["circular"].n) == (3, 0, 3)


# --------------------------------------------------------------------------- two and several runs


def test_decomposition_keys_and_counts():
    """000 §7 Qwen: every documented count of the decomposition, not only the nets."""
    base, lora = decomposition_runs([
        (1, "111", "111"), (4, "101", "111"), (1, "101", "100"), (14, "101", "000"), (1, "000", "110"),
        (1, "101", "101"),
    ])
    d = fe.decompose_change(fq2_only(), base, lora)
    assert d["nts"]["change"].value == pytest.approx(5 / 48)
    assert d["dis"]["change"].value == pytest.approx(-15 / 48)
    assert d["nts"]["shared_mss_correct"] == {"groups": 7, "gained": 4, "lost": 0, "net": 4}
    assert d["nts"]["changed_coverage"] == {"mss_gained_groups": 1, "mss_lost_groups": 14, "gained": 1,
                                            "lost": 0, "net": 1}
    assert d["dis"]["shared_mss_correct"] == {"groups": 7, "gained": 0, "lost": 1, "net": -1}
    assert d["dis"]["changed_coverage"] == {"mss_gained_groups": 1, "mss_lost_groups": 14, "gained": 0,
                                            "lost": 14, "net": -14}


def test_input_mode_turnover_runs_from_the_partner():
    items = fq2_only()
    ins = {i: m["insufficient_option"] for i, m in zip(items["item_id"], items["meta"], strict=True)}
    all_run = run("all", preds_df(counts_answers(60, 0, 7, 17, items)), input_mode="all", model="gpt")
    # no strategy and no shots: a direct zero-shot run, the partner of one that says so
    text_run = run("text", preds_df(ins, input_mode="text"), input_mode="text", model="gpt", strategy="direct",
                   shots=0)
    text = fe.input_mode_deltas(items, all_run, [text_run])["text"]
    assert text["partner"] == "text"
    assert text["turnover"] == fe.turnover(items, text_run, all_run)
    tv = text["turnover"]
    assert (tv["newly_correct"].k, tv["newly_incorrect"].k, tv["net"]) == (43, 31, 60 - 48)


def test_multi_seed_of_no_runs():
    with pytest.raises(MetricUndefined, match=r"^no runs given$"):
        fe.multi_seed(PAPER, [])


def test_compare_clusters_by_a_meta_field_of_numbers_and_text():
    """Cluster values compare by their text, so a meta field holding numbers and text clusters too."""
    rows = [dict(r, meta={**r["meta"], "scene": s}) for g, s in (("a", 1), ("b", "kitchen"), ("c", 1))
            for r in fq1_group(g, "ABC")]
    items = items_df(rows)
    gold = dict(zip(items["item_id"], items["answer"], strict=True))
    out = fe.compare(items, run("a", preds_df(gold)), run("b", preds_df(gold)), by="meta.scene", draws=100)
    assert out["clusters"] == 2 and out["clustering"] == "meta.scene"
    assert out["accuracy"]["difference"].ci == (0.0, 0.0)


def test_compare_joint_intervals_without_complete_fq1_groups():
    """No FQ1 group: FQ1-GEM has no interval, NTS and DIS keep theirs."""
    items = fq2_only()
    gold = dict(zip(items["item_id"], items["answer"], strict=True))
    out = fe.compare(items, run("a", preds_df(gold)), run("b", preds_df({})), draws=200)
    assert out["fq1_gem"]["difference"].ci is None
    assert out["nts"]["difference"].ci == out["dis"]["difference"].ci == (-1.0, -1.0)


def test_compare_macro_f1_interval_with_a_class_of_one_item():
    """Class D has one gold item: a draw's recall of D is 1 when that item is drawn and answered D. The
    interval equals the independent macro-F1 computation on the same drawn groups (tests/bootstrap_ref.py)."""
    items = items_df(fq1_group("g1", "ABC") + fq1_group("g2", "CAB") + fq1_group("g3", "BCD")
                     + fq1_group("g4", "ABC") + fq1_group("g5", "BAC"))
    gold = items["answer"].to_numpy()
    ids = items["item_id"].to_numpy()
    answers_a = {i: g for i, g in zip(ids, gold, strict=True)}
    answers_b = {i: (g if n % 2 else wrong(g)) for n, (i, g) in enumerate(zip(ids, gold, strict=True))}
    out = fe.compare(items, run("a", preds_df(answers_a)), run("b", preds_df(answers_b)), draws=500, seed=11)
    groups = sorted(items["group_id"].unique())
    rows = [items.index[items["group_id"] == g].to_numpy() for g in groups]
    pred_a = np.array([answers_a[i] for i in ids])
    pred_b = np.array([answers_b[i] for i in ids])

    def f1_difference(drawn):
        at = np.concatenate([rows[g] for g in drawn])
        return macro_f1_of(gold[at], pred_b[at]) - macro_f1_of(gold[at], pred_a[at])

    expected = statistic_interval([np.arange(len(groups))], f1_difference, draws=500, seed=11)
    assert out["macro_f1"]["difference"].ci == pytest.approx(expected, rel=1e-12, abs=1e-15)
    assert set(gold) == set(LETTERS)
