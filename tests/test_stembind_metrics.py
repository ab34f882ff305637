"""StemBind metrics (paper 002) on hand-computed tables and the paper's own rebuildable numbers."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from bootstrap_ref import diff_interval, proportion_interval, ratio_interval
from hypothesis import given, settings
from hypothesis import strategies as st

from core.families.stembind import metrics as sb
from core.schema import PRED_COLUMNS, Rate, RunData, to_jsonable
from tests.helpers import family_score

# --------------------------------------------------------------------------- builders


def _item(item_id: str, stem: str, kind: str, op: str, load: str = "mixed") -> dict:
    return {
        "item_id": item_id, "group_id": stem, "split": "test", "kind": kind, "variant": "", "question": "q",
        "options": {"A": "a", "B": "b"}, "letters": "AB", "answer": "A", "n_images": 1, "images": [],
        "meta": {"operation": op, "perception_load": load}, "stages": {"S1": "s"} if kind == "F" else None,
    }


def make_items(stems: list[tuple[str, str, int]], load: str = "mixed") -> pd.DataFrame:
    """stems: (stem id, operation, number of P probes); each stem also gets one R and one F item."""
    rows = []
    for stem, op, n_p in stems:
        rows += [_item(f"{stem}-P{i}", stem, "P", op, load) for i in range(n_p)]
        rows += [_item(f"{stem}-R", stem, "R", op, load), _item(f"{stem}-F", stem, "F", op, load)]
    return pd.DataFrame(rows)


def make_run(name: str, correct: dict[str, bool], tokens: dict[str, float] | None = None, **config) -> RunData:
    """A run answering each item of `correct` with the gold letter A (True) or B (False)."""
    rows = [{
        "item_id": item_id, "rotation": 0, "repeat": 0, "status": "ok", "answer": "A" if ok else "B",
        "shown": None, "response": "", "input_mode": config.get("input_mode", "all"), "trace": "trace",
        "tokens": (tokens or {}).get(item_id, float("nan")), "latency": None, "probs": None, "error": None,
    } for item_id, ok in correct.items()]
    cfg = {"model": "m", "strategy": "direct", "input_mode": "all", **config}
    return RunData(name, "sb", "stembind", cfg, pd.DataFrame(rows, columns=list(PRED_COLUMNS)))


def stem_correct(stem: str, p: list[bool], r: bool, f: bool) -> dict[str, bool]:
    out = {f"{stem}-P{i}": ok for i, ok in enumerate(p)}
    out[f"{stem}-R"] = r
    out[f"{stem}-F"] = f
    return out


def pattern_run(patterns: list[tuple[list[bool], bool, bool]], op: str = "RI-Pos", **config):
    stems = [(f"s{i}", op, len(p)) for i, (p, _, _) in enumerate(patterns)]
    correct: dict[str, bool] = {}
    for i, (p, r, f) in enumerate(patterns):
        correct |= stem_correct(f"s{i}", p, r, f)
    return make_items(stems), make_run("run", correct, **config)


# --------------------------------------------------------------------------- P / R / F accuracies


def test_accuracies_overall_per_operation_and_family():
    items = make_items([("a", "RI-Pos", 2), ("b", "VP-Fold", 3), ("c", "RI-Qty", 1)])
    correct = {i: True for i in items["item_id"]}
    correct |= {"a-F": False, "b-P0": False, "c-R": False}
    out = family_score(sb.score, items, make_run("r", correct), seed=None)
    assert (out["p_accuracy"].k, out["p_accuracy"].n) == (5, 6)
    assert (out["r_accuracy"].k, out["r_accuracy"].n) == (2, 3)
    assert (out["f_accuracy"].k, out["f_accuracy"].n) == (2, 3)
    assert out["rf_gap"].value == pytest.approx(0.0)
    assert (out["by_operation"]["RI-Pos"]["f"].k, out["by_operation"]["RI-Pos"]["f"].n) == (0, 1)
    assert out["by_operation"]["RI-Pos"]["rf_gap"].value == pytest.approx(1.0)
    assert out["by_operation"]["RI-Qty"]["rf_gap"].value == pytest.approx(-1.0)
    assert (out["by_family"]["RI"]["p"].k, out["by_family"]["RI"]["p"].n) == (3, 3)
    assert (out["by_family"]["VP"]["p"].k, out["by_family"]["VP"]["p"].n) == (2, 3)
    assert list(out["by_operation"]) == ["RI-Pos", "RI-Qty", "VP-Fold"]  # paper order, present ones


def test_rf_gap_sign_is_r_minus_f():
    items, run = pattern_run([([True], True, False), ([True], True, False), ([True], True, True), ([True], False, True)])
    out = family_score(sb.score, items, run, seed=None)
    assert out["r_accuracy"].value == pytest.approx(0.75)
    assert out["f_accuracy"].value == pytest.approx(0.5)
    assert out["rf_gap"].value == pytest.approx(0.25)


def test_invalid_and_api_error_are_wrong_and_repeats_need_all_correct():
    items = make_items([("a", "RI-Pos", 1)])
    preds = pd.DataFrame([
        {"item_id": "a-P0", "rotation": 0, "repeat": 0, "status": "invalid", "answer": None},
        {"item_id": "a-R", "rotation": 0, "repeat": 0, "status": "ok", "answer": "A"},
        {"item_id": "a-R", "rotation": 1, "repeat": 0, "status": "ok", "answer": "B"},
        {"item_id": "a-F", "rotation": 0, "repeat": 0, "status": "api_error", "answer": None},
    ])
    out = family_score(sb.score, items, RunData("r", "sb", "stembind", {"model": "m"}, preds), seed=None)
    assert out["p_accuracy"].k == 0 and out["r_accuracy"].k == 0 and out["f_accuracy"].k == 0
    assert out["decomposition"]["cant_see"].k == 1


def test_missing_predictions_make_a_stem_incomplete():
    items = make_items([("a", "RI-Pos", 2), ("b", "RI-Pos", 1)])
    correct = stem_correct("a", [True, True], True, True) | {"b-P0": True, "b-R": True}  # b-F unanswered
    out = family_score(sb.score, items, make_run("r", correct), seed=None)
    assert out["decomposition"]["n_stems"] == 1
    assert out["decomposition"]["n_incomplete"] == 1
    assert out["f_accuracy"].n == 1


# --------------------------------------------------------------------------- decomposition (§4.3 (ii))

DECOMPOSITION_CASES = [
    # P probes,            R,     F,     category
    ([True, True, True], True, True, "solved"),
    ([False, False], False, True, "solved"),  # F correct is solved whatever P / R say
    ([True, False, False], True, False, "cant_bind"),  # at least one P (not all) suffices
    ([True, True], True, False, "cant_bind"),
    ([True, False], False, False, "cant_reason"),
    ([False, False, False], True, False, "cant_see"),  # no P correct, R correct: still can't see
    ([False], False, False, "cant_see"),
]


@pytest.mark.parametrize(("p", "r", "f", "category"), DECOMPOSITION_CASES)
def test_decomposition_rows(p, r, f, category):
    items, run = pattern_run([(p, r, f)])
    out = family_score(sb.score, items, run, seed=None)
    shares = {c: out["decomposition"][c].k for c in sb.DECOMPOSITION}
    assert shares == {c: int(c == category) for c in sb.DECOMPOSITION}


def test_decomposition_table_counts():
    items, run = pattern_run([case[:3] for case in DECOMPOSITION_CASES])
    dec = family_score(sb.score, items, run, seed=None)["decomposition"]
    assert {c: (dec[c].k, dec[c].n) for c in sb.DECOMPOSITION} == {
        "solved": (2, 7), "cant_bind": (2, 7), "cant_reason": (1, 7), "cant_see": (2, 7)}
    # Among the 5 F-wrong stems, R is correct on 3 (the two can't-bind and one can't-see stem).
    assert (dec["r_correct_given_f_wrong"].k, dec["r_correct_given_f_wrong"].n) == (3, 5)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.lists(st.booleans(), min_size=1, max_size=8), st.booleans(), st.booleans()),
                min_size=1, max_size=25))
def test_decomposition_is_an_exhaustive_partition(patterns):
    p_any = np.array([any(p) for p, _, _ in patterns])
    r = np.array([r for _, r, _ in patterns])
    f = np.array([f for _, _, f in patterns])
    cats = sb.decompose(p_any, r, f)
    assert set(cats) <= set(sb.DECOMPOSITION)
    # each stem in exactly one category, and that category follows the paper's definition
    for (p, rr, ff), cat in zip(patterns, cats, strict=True):
        member = {
            "solved": ff,
            "cant_bind": (not ff) and any(p) and rr,
            "cant_reason": (not ff) and any(p) and not rr,
            "cant_see": (not ff) and not any(p),
        }
        assert sum(member.values()) == 1
        assert member[cat]
    # the same partition through the DataFrame path used by score()
    table = sb.stem_table(*_items_and_outcomes(patterns))
    assert table["complete"].all()
    assert list(table["category"]) == list(cats)


def _items_and_outcomes(patterns):
    items, run = pattern_run(patterns)
    return items, sb.item_outcomes(items, run)


# --------------------------------------------------------------------------- binding gap (§4.3 (iii), D.2)


def test_binding_gap_strict_denominator():
    patterns = [
        ([True, True], True, False),  # in stratum, F wrong
        ([True, True], True, True),  # in stratum, F right
        ([True, True, True], True, False),  # in stratum, F wrong
        ([True, False], True, False),  # not all P: can't bind, but outside the strict stratum
        ([True, True], False, True),  # R wrong: outside
    ]
    items, run = pattern_run(patterns)
    out = family_score(sb.score, items, run)
    bg = out["binding_gap"]
    assert (bg.k, bg.n) == (2, 3)
    assert bg.value == pytest.approx(2 / 3)
    assert bg.ci is not None and bg.ci[0] <= bg.value <= bg.ci[1]
    assert bg.ci == proportion_interval(2, 3)  # one 0/1 observation per stem of the stratum
    assert (out["f_given_pr"].k, out["f_given_pr"].n) == (1, 3)
    # item rates resample stems s0..s4 whole: P probes right / P probes and F right / 1 per stem, by hand
    assert out["p_accuracy"].ci == ratio_interval([2, 2, 3, 1, 2], [2, 2, 3, 2, 2])
    assert out["f_accuracy"].ci == ratio_interval([0, 1, 0, 0, 1], [1, 1, 1, 1, 1])
    assert out["p_accuracy"].ci[0] <= out["p_accuracy"].value <= out["p_accuracy"].ci[1]
    assert out["decomposition"]["cant_bind"].k == 3  # looser than the stratum: 3 vs 2


def test_binding_gap_undefined_without_stratum():
    items, run = pattern_run([([False, True], True, False), ([True], False, True)])
    out = family_score(sb.score, items, run)
    assert out["binding_gap"].value is None and out["binding_gap"].n == 0
    assert "every P probe" in out["binding_gap"].reason
    # F | P, R is 1 - BG over the same stems (docs/METRICS.md): undefined alike, over none of them
    fpr = out["f_given_pr"]
    assert (fpr.value, fpr.k, fpr.n, fpr.reason) == (None, 0, 0, out["binding_gap"].reason)


def test_paper_pooled_binding_gap_d2():
    """§4.3 (iii): F solved 48.8% of the time on n = 1,385 stems, BG = 0.512."""
    n, solved = 1385, 676
    f = np.arange(n) < solved
    out = sb.binding_gap_from_flags(np.ones(n, bool), np.ones(n, bool), f, seed=None)
    assert out["binding_gap"].n == 1385
    assert round(out["binding_gap"].value, 3) == 0.512
    assert round(out["f_given_pr"].value, 3) == 0.488


def test_paper_derivation_checked_binding_gap_ci_d2():
    """D.2: 1,100 pooled observations, F wrong 48% of the time, 95% CI [0.45, 0.51]."""
    n, wrong = 1100, 528
    f = np.arange(n) >= wrong
    bg = sb.binding_gap_from_flags(np.ones(n, bool), np.ones(n, bool), f)["binding_gap"]
    assert round(bg.value, 2) == 0.48
    assert (round(bg.ci[0], 2), round(bg.ci[1], 2)) == (0.45, 0.51)
    # at full precision (an off-by-one in k or n still rounds to the paper's 2 decimals)
    assert bg.value == 528 / 1100 and (bg.k, bg.n) == (528, 1100)
    assert bg.ci == proportion_interval(528, 1100)
    solved = sb.binding_gap_from_flags(np.ones(n, bool), np.ones(n, bool), f)["f_given_pr"]
    assert solved.ci == (1 - bg.ci[1], 1 - bg.ci[0])


# --------------------------------------------------------------------------- StemCoherent, lucky guesses


def test_stem_coherent_and_lucky_guess():
    patterns = [
        ([True, True], True, True),  # coherent
        ([True, False], True, True),  # F right, a P wrong: lucky
        ([True, True], False, True),  # F right, R wrong: lucky
        ([True, True], True, False),
    ]
    items, run = pattern_run(patterns)
    out = family_score(sb.score, items, run, seed=None)
    assert (out["stem_coherent"].k, out["stem_coherent"].n) == (1, 4)
    assert (out["lucky_guess"].k, out["lucky_guess"].n) == (2, 3)


def test_lucky_guess_undefined_without_solved_stems():
    items, run = pattern_run([([True], True, False)])
    out = family_score(sb.score, items, run, seed=None)
    assert out["lucky_guess"].value is None and out["lucky_guess"].reason


# --------------------------------------------------------------------------- VG, ThinkGain


def _three_stems():
    return make_items([("a", "RI-Pos", 1), ("b", "RI-Pos", 1)])


def test_vg_against_text_partner_in_others():
    items = _three_stems()
    full = make_run("full", {i: True for i in items["item_id"]})
    text = make_run("text", {i: i.endswith("P0") for i in items["item_id"]}, input_mode="text")
    other_model = make_run("x", {i: True for i in items["item_id"]}, input_mode="text", model="other")
    out = family_score(sb.score, items, full, [other_model, text])
    vg = out["vg"]
    assert vg["partner"] == "text"
    assert vg["overall"].value == pytest.approx(1 - 2 / 6)
    assert vg["P"].value == pytest.approx(0.0)
    assert vg["R"].value == pytest.approx(1.0) and vg["F"].value == pytest.approx(1.0)
    assert vg["overall"].ci is not None
    # paired by stem (a, b): the full run 3 of 3 items, the text run 1 of 3 in each
    assert vg["overall"].ci == diff_interval([3, 3], [3, 3], [1, 1], [3, 3])


@pytest.mark.parametrize(("others", "reason"), [
    ([], "no text-only run"),
    ([make_run("t", {}, input_mode="text", strategy="thinking")], "no text-only run"),
])
def test_vg_reason_without_partner(others, reason):
    items = _three_stems()
    out = family_score(sb.score, items, make_run("full", {i: True for i in items["item_id"]}), others, seed=None)
    assert isinstance(out["vg"], Rate) and out["vg"].value is None and reason in out["vg"].reason


def test_think_gain_is_thinking_minus_direct_either_way():
    items = _three_stems()
    direct = make_run("d", {i: not i.endswith("P0") for i in items["item_id"]})
    thinking = make_run("t", {i: not i.endswith("-F") for i in items["item_id"]}, strategy="thinking")
    for run, others in ((direct, [thinking]), (thinking, [direct])):
        tg = family_score(sb.score, items, run, others, seed=None)["think_gain"]
        assert tg["at_P"].value == pytest.approx(1.0)
        assert tg["at_R"].value == pytest.approx(0.0)
        assert tg["at_F"].value == pytest.approx(-1.0)
        assert (tg["direct"], tg["thinking"]) == ("d", "t")
    explicit = sb.think_gain(items, direct, thinking, seed=None)
    assert explicit["at_F"].value == pytest.approx(-1.0)


# Two stems (a, b) with P0, R, F each. Per run: the items answered wrong and the items whose output hit the
# cap (tokens = max_tokens = 100; every other prediction uses 10 tokens). Expected: plain and no-cap deltas.
THINK_CAP_CASES = [
    # thinking loses a-F at the cap and solves b-F; direct the other way round: plain F 0, without a-F +1
    pytest.param({"b-F"}, set(), {"a-F"}, {"a-F"}, {"F": 0.0, "R": 0.0, "P": 0.0},
                 {"F": 1.0, "R": 0.0, "P": 0.0}, 1, id="thinking-cap-hit-F"),
    # the direct run hits the cap on a-R (and still answers right): a-R leaves both runs
    pytest.param({"b-R"}, {"a-R"}, {"a-R", "b-R"}, set(), {"F": 0.0, "R": -0.5, "P": 0.0},
                 {"F": 0.0, "R": 0.0, "P": 0.0}, 1, id="direct-cap-hit-R"),
    # no cap hit: the recomputed deltas equal the plain ones
    pytest.param(set(), set(), {"a-P0", "b-F"}, set(), {"F": -0.5, "R": 0.0, "P": -0.5},
                 {"F": -0.5, "R": 0.0, "P": -0.5}, 0, id="no-cap-hit"),
]


@pytest.mark.parametrize(("d_wrong", "d_cap", "t_wrong", "t_cap", "plain", "no_cap", "n_hit"), THINK_CAP_CASES)
def test_think_gain_without_cap_hit_items(d_wrong, d_cap, t_wrong, t_cap, plain, no_cap, n_hit):
    items = _three_stems()
    ids = list(items["item_id"])

    def run(name, wrong, cap, strategy):
        return make_run(name, {i: i not in wrong for i in ids}, {i: 100.0 if i in cap else 10.0 for i in ids},
                        strategy=strategy, max_tokens=100)

    tg = family_score(sb.score, items, run("d", d_wrong, d_cap, "direct"), [run("t", t_wrong, t_cap, "thinking")],
                  seed=None)["think_gain"]
    for kind in ("P", "R", "F"):
        assert tg[f"at_{kind}"].value == pytest.approx(plain[kind])
        assert tg[f"at_{kind}_no_cap"].value == pytest.approx(no_cap[kind])
    assert (tg["n_cap_hit"].k, tg["n_cap_hit"].n) == (n_hit, 6)


def test_think_gain_without_cap_hit_needs_tokens_and_cap():
    items = _three_stems()
    ids = list(items["item_id"])
    direct = make_run("d", {i: True for i in ids}, {i: 5.0 for i in ids}, max_tokens=64)
    no_cap = make_run("t", {i: True for i in ids}, {i: 5.0 for i in ids}, strategy="thinking")
    no_tokens = make_run("t", {i: True for i in ids}, strategy="thinking", max_tokens=64)
    for other, reason in ((no_cap, "no max_tokens"), (no_tokens, "no output-token counts")):
        tg = sb.think_gain(items, direct, other, seed=None)
        assert tg["at_F"].value == pytest.approx(0.0)
        assert tg["at_F_no_cap"].value is None and reason in tg["at_F_no_cap"].reason


def test_think_gain_reason_without_pair():
    items = _three_stems()
    out = family_score(sb.score, items, make_run("d", {i: True for i in items["item_id"]}), seed=None)
    assert out["think_gain"].value is None and "paired" in out["think_gain"].reason


# --------------------------------------------------------------------------- SSA


def _f_run(name: str, n_correct: int, n: int = 10, **config) -> RunData:
    return make_run(name, {f"s{i}-F": i < n_correct for i in range(n)}, **config)


def test_ssa_curve_raw_deltas_isotonic_gains_and_control():
    items = make_items([(f"s{i}", "RI-Pos", 1) for i in range(10)])
    acc = {"H0": 6, "H1": 4, "H2": 5, "H3": 8, "H4": 9, "irrelevant": 5}
    runs = {lv: _f_run(lv, k, ssa_level=lv) for lv, k in acc.items()}
    out = sb.ssa_curve(items, runs)
    assert out["n_items"] == 10
    assert {lv: out["accuracy"][lv].k for lv in acc} == acc
    raw = {k: round(v.value, 10) for k, v in out["raw_deltas"].items()}
    assert raw == {"H1-H0": -0.2, "H2-H1": 0.1, "H3-H2": 0.3, "H4-H3": 0.1}
    assert out["vs_h0"]["H4"].value == pytest.approx(0.3)
    # per-item envelopes: s0..s5 solved at H0 stay solved; s6, s7 first solved at H3, s8 at H4
    assert out["isotonic"] == pytest.approx({"H0": 0.6, "H1": 0.6, "H2": 0.6, "H3": 0.8, "H4": 0.9})
    gains = {k: (v.k, v.n) for k, v in out["isotonic_gains"].items()}
    assert gains == {"H1-H0": (0, 10), "H2-H1": (0, 10), "H3-H2": (2, 10), "H4-H3": (1, 10)}
    # the one isotonic fit of the accuracies pools H0..H2 to their mean 0.5
    assert out["fit_isotonic"] == pytest.approx({"H0": 0.5, "H1": 0.5, "H2": 0.5, "H3": 0.8, "H4": 0.9})
    fit = {k: round(v.value, 10) for k, v in out["fit_isotonic_gains"].items()}
    assert fit == {"H1-H0": 0.0, "H2-H1": 0.0, "H3-H2": 0.3, "H4-H3": 0.1}
    assert out["largest_raw_jump"] == "H3-H2" and out["largest_isotonic_jump"] == "H3-H2"
    assert out["largest_fit_isotonic_jump"] == "H3-H2"
    assert out["irrelevant_minus_h0"].value == pytest.approx(-0.1)


def _pattern_ssa_runs(patterns: list[str]) -> tuple[pd.DataFrame, dict[str, RunData]]:
    """patterns: one string of 0/1 per F item, one character per level H0..H4 in order."""
    items = make_items([(f"s{i}", "RI-Pos", 1) for i in range(len(patterns))])
    runs = {lv: make_run(lv, {f"s{i}-F": p[j] == "1" for i, p in enumerate(patterns)}, ssa_level=lv)
            for j, lv in enumerate(sb.SSA_LEVELS)}
    return items, runs


# Items as H0..H4 outcome strings; expected H3-H2 raw gain, isotonic (envelope) gain, fitted-curve gain.
SSA_ENVELOPE_CASES = [
    # a: solved at H2, lost at H3; b, c: first solved at H3; d: always solved; six never solved.
    # raw H3-H2 = (3 - 2) / 10; envelope: a stays solved, b and c are new: 2 / 10; fit = raw (already rising)
    pytest.param(["00101", "00011", "00011", "11111", *["00000"] * 6], 0.1, 0.2, 0.1, id="loss-hidden-by-raw"),
    # every item monotone already: the envelope is the raw curve
    pytest.param(["00011", "00111", "01111", "00001", "00000"], 0.2, 0.2, 0.2, id="monotone-items"),
    # items flip back and forth: 2 of 4 solved at H1, H2 and H3 each (raw H3-H2 = 0); only the third item is
    # first solved at H3 (envelope 1 / 4); H4 solves none, so the fit pools H1..H4 and its gain is 0
    pytest.param(["01010", "01100", "00010", "00100"], 0.0, 0.25, 0.0, id="flip-flop"),
    # a solved item that is lost never counts again: raw falls, the envelope stays
    pytest.param(["11100", "00000"], -0.5, 0.0, 0.0, id="loss-only"),
]


@pytest.mark.parametrize(("patterns", "raw", "envelope", "fit"), SSA_ENVELOPE_CASES)
def test_ssa_isotonic_gain_is_per_item_envelope(patterns, raw, envelope, fit):
    items, runs = _pattern_ssa_runs(patterns)
    out = sb.ssa_curve(items, runs)
    assert out["raw_deltas"]["H3-H2"].value == pytest.approx(raw)
    assert out["isotonic_gains"]["H3-H2"].value == pytest.approx(envelope)
    assert out["fit_isotonic_gains"]["H3-H2"].value == pytest.approx(fit, abs=1e-9)
    env = list(out["isotonic"].values())
    assert env == sorted(env)  # the envelope accuracy never falls


def test_ssa_isotonic_gain_can_exceed_raw_gain_at_a_rising_step():
    """002 §4.4 reports H2->H3 +10.9 pp raw and +14.5 pp isotonic: only the envelope reading can do that."""
    items, runs = _pattern_ssa_runs(["00101", "00011", "00011", "11111", *["00000"] * 6])
    out = sb.ssa_curve(items, runs)
    raw, iso = out["raw_deltas"]["H3-H2"].value, out["isotonic_gains"]["H3-H2"].value
    assert raw > 0 and iso > raw
    assert out["fit_isotonic_gains"]["H3-H2"].value <= raw + 1e-12


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="01", min_size=5, max_size=5), min_size=1, max_size=12))
def test_fitted_isotonic_gain_never_exceeds_a_rising_raw_gain(patterns):
    items, runs = _pattern_ssa_runs(patterns)
    out = sb.ssa_curve(items, runs)
    for step, raw in out["raw_deltas"].items():
        if raw.value > 0:
            assert out["fit_isotonic_gains"][step].value <= raw.value + 1e-9
        assert out["isotonic_gains"][step].value >= 0


def test_ssa_common_items_only_and_found_by_score():
    items = make_items([(f"s{i}", "RI-Pos", 1) for i in range(4)])
    base = make_run("base", {f"s{i}-F": i < 1 for i in range(4)})  # no ssa_level: stands for H0
    h3 = make_run("h3", {f"s{i}-F": True for i in range(3)}, ssa_level="H3")  # s3-F missing
    out = family_score(sb.score, items, base, [h3], seed=None)["ssa"]
    assert out["runs"] == {"H0": "base", "H3": "h3"}
    assert out["n_items"] == 3
    assert out["raw_deltas"]["H3-H0"].value == pytest.approx(2 / 3)


def test_ssa_reasons():
    items = make_items([("s0", "RI-Pos", 1)])
    run = make_run("r", {"s0-F": True})
    assert "no SSA runs" in family_score(sb.score, items, run, seed=None)["ssa"].reason
    only_h2 = make_run("h2", {"s0-F": True}, ssa_level="H2", strategy="thinking")
    assert "no H0" in sb.ssa_curve(items, {"H2": only_h2})["reason"]


# --------------------------------------------------------------------------- L2 / L3

FLAG_CASES = [
    # S1..S4,                 first failure, inconsistent
    ((1, 1, 1, 1), "none", False),
    ((0, 0, 0, 0), "S1", False),
    ((1, 0, 0, 0), "S2", False),
    ((1, 1, 0, 1), "S3", True),
    ((0, 1, 1, 1), "S1", True),
    ((1, None, 0, 1), "S3", True),  # unknown stages are stepped over
    ((None, None, None, None), "none", False),
]


@pytest.mark.parametrize(("flags", "first", "incons"), FLAG_CASES)
def test_first_failure_and_inconsistency(flags, first, incons):
    norm = [sb._flag(v) for v in flags]
    assert sb.first_failure(norm) == first
    assert sb.inconsistent(norm) is incons


# One first-failure function (issue 17): an unknown stage (None / NaN) before the first false one is stepped
# over under the "skip" policy (judges, L2) and stops the scan as "undecided" under "stop" (the annotators'
# consensus); after the first false one it changes nothing (002 App. C.3).
FIRST_FAILURE_POLICY_CASES = [
    # S1..S4,                        skip,   stop
    ((1, 1, 1, 1), "none", "none"),
    ((1, 0, 0, 1), "S2", "S2"),
    ((1, None, 0, 1), "S3", "undecided"),
    ((None, 0, 1, 1), "S2", "undecided"),
    ((float("nan"), 1, 1, 0), "S4", "undecided"),
    ((1, 0, None, 1), "S2", "S2"),
    ((1, 1, 1, None), "none", "undecided"),
    ((None, None, None, None), "none", "undecided"),
    (("1", "0", "1", "1"), "S2", "S2"),
    ((True, True, False, None), "S3", "S3"),
]


@pytest.mark.parametrize(("flags", "skip", "stop"), FIRST_FAILURE_POLICY_CASES)
def test_first_failure_unknown_stage_policy(flags, skip, stop):
    from core.families.stembind import stages

    assert stages.first_failure(flags) == skip
    assert stages.first_failure(flags, unknown=stages.SKIP) == skip
    assert stages.first_failure(flags, unknown=stages.STOP) == stop


def test_first_failure_refuses_an_unknown_policy():
    from core.families.stembind import stages

    with pytest.raises(ValueError, match="unknown-stage policy 'guess'"):
        stages.first_failure((1, 1, 1, 1), unknown="guess")


def test_l2_profile_step_acc_histograms_and_attr_tag():
    items = make_items([("a", "RI-Pos", 1), ("b", "RI-Pos", 1), ("c", "VP-Rot", 1), ("d", "VP-Rot", 1)])
    items.loc[items["item_id"].isin(["c-F", "d-F"]), "meta"] = [
        {"operation": "VP-Rot", "perception_load": "perception-heavy"}] * 2
    run = make_run("r", {"a-F": True, "b-F": False, "c-F": False, "d-F": False})
    judgements = pd.DataFrame([
        {"item_id": "a-F", "S1": 1, "S2": 1, "S3": 1, "S4": 1, "first_failure": None, "status": "ok"},
        {"item_id": "b-F", "S1": 1, "S2": 1, "S3": 0, "S4": 1, "first_failure": "S3", "status": "ok"},
        {"item_id": "c-F", "S1": 0, "S2": 1, "S3": 0, "S4": None, "first_failure": "S1", "status": "ok"},
        {"item_id": "d-F", "S1": 1, "S2": 0, "S3": 0, "S4": 0, "first_failure": "S3", "status": "ok"},
        {"item_id": "d-F", "S1": 1, "S2": 1, "S3": 1, "S4": 1, "first_failure": None, "status": "invalid",
         "rotation": 1},
        {"item_id": "a-P0", "S1": 1, "S2": 1, "S3": 1, "S4": 1, "first_failure": None, "status": "ok"},
    ])
    out = family_score(sb.score, items, run, judgements=judgements, seed=None)
    l2 = out["l2"]
    assert l2["n_traces"] == 4
    assert {s: (r.k, r.n) for s, r in l2["step_acc"].items()} == {
        "S1": (3, 4), "S2": (3, 4), "S3": (1, 4), "S4": (2, 3)}
    assert {s: r.k for s, r in l2["first_failure"].items()} == {"S1": 1, "S2": 1, "S3": 1, "S4": 0, "none": 1}
    assert {s: (r.k, r.n) for s, r in l2["first_failure_f_wrong"].items()} == {
        "S1": (1, 3), "S2": (1, 3), "S3": (1, 3), "S4": (0, 3)}
    assert (l2["inconsistent"].k, l2["inconsistent"].n) == (2, 4)
    assert l2["first_failure_disagreements"] == 1  # d-F: the judge said S3, the rule gives S2
    assert set(l2) == {"n_traces", "step_acc", "first_failure", "first_failure_f_wrong", "inconsistent",
                       "first_failure_disagreements"}  # L3's AttrTag has its own key, below
    assert out["l3_attr_tag"] == {
        "mixed": {"S1": 0, "S2": 0, "S3": 1, "S4": 0, "none": 1},
        "perception-heavy": {"S1": 1, "S2": 1, "S3": 0, "S4": 0, "none": 0},
    }


def test_l2_reason_without_judgements():
    items, run = pattern_run([([True], True, True)])
    out = family_score(sb.score, items, run, seed=None)
    assert out["l2"].value is None and "no trace judgements" in out["l2"].reason
    assert out["l3_attr_tag"].value is None


def test_paper_inconsistent_share_s44():
    """§4.4: 23.8%-26.9% of the 2,298 judged traces carry inconsistent flags (547 and 618 of 2,298)."""
    n = 2298
    items = make_items([(f"s{i}", "RI-Pos", 1) for i in range(n)])
    run = make_run("r", {f"s{i}-F": False for i in range(n)})
    for k, share in ((547, 0.238), (618, 0.269)):
        flags = [(0, 1, 1, 1) if i < k else (1, 1, 0, 0) for i in range(n)]
        judgements = pd.DataFrame([{"item_id": f"s{i}-F", "S1": a, "S2": b, "S3": c, "S4": d}
                                   for i, (a, b, c, d) in enumerate(flags)])
        l2 = sb.l2_profile(items, run, judgements)
        assert round(l2["inconsistent"].value, 3) == share


def test_paper_first_failure_share_c3():
    """C.3: on the 115 F-wrong traces of the 180-trace sample, S3 leads at 48% under the judge (55 / 115)."""
    items = make_items([(f"s{i}", "RI-Pos", 1) for i in range(180)])
    run = make_run("r", {f"s{i}-F": i >= 115 for i in range(180)})
    judgements = pd.DataFrame([
        {"item_id": f"s{i}-F", "S1": 1, "S2": 1, "S3": 0 if i < 55 else 1, "S4": 0 if 55 <= i < 115 else 1}
        for i in range(180)])
    l2 = sb.l2_profile(items, run, judgements)
    s3 = l2["first_failure_f_wrong"]["S3"]
    assert (s3.k, s3.n) == (55, 115) and round(s3.value, 2) == 0.48


# --------------------------------------------------------------------------- tokens and error audit


def test_token_stats_mean_p95_cap_hit():
    items = make_items([("a", "RI-Pos", 3)])
    ids = list(items["item_id"])
    tokens = dict(zip(ids, [10.0, 20.0, 30.0, 40.0, 100.0], strict=True))
    out = family_score(sb.score, items, make_run("r", {i: True for i in ids}, tokens, max_tokens=100), seed=None)["tokens"]
    assert out["n"] == 5 and out["mean"] == pytest.approx(40.0)
    assert out["p95"] == pytest.approx(88.0)  # linear interpolation: 40 + 0.8 * 60
    assert (out["cap_hit"].k, out["cap_hit"].n) == (1, 5)


def test_token_stats_reasons():
    items = make_items([("a", "RI-Pos", 1)])
    run = make_run("r", {"a-P0": True})
    assert "no output-token" in family_score(sb.score, items, run, seed=None)["tokens"].reason
    out = sb.token_stats(items, make_run("r", {"a-P0": True}, {"a-P0": 5.0}))
    assert out["cap_hit"].value is None and "max_tokens" in out["cap_hit"].reason


def test_error_audit_per_100_and_terciles():
    items = make_items([(f"s{i}", "RI-Pos", 1) for i in range(6)])
    lengths = [50.0, 10.0, 60.0, 20.0, 40.0, 30.0]
    run = make_run("r", {f"s{i}-F": False for i in range(6)}, {f"s{i}-F": t for i, t in enumerate(lengths)})
    cats = ["correspondence_drift", None, "correspondence_drift", "perception_error", "rule_mutation", ""]
    labels = pd.DataFrame({"item_id": [f"s{i}-F" for i in range(6)], "category": cats})
    out = sb.error_audit(items, run, labels)
    assert out["n_items"] == 6
    assert out["per_100"]["correspondence_drift"] == pytest.approx(100 * 2 / 6)
    assert out["per_100"]["rule_absent"] == 0.0
    assert (out["no_error"].k, out["no_error"].n) == (2, 6)
    # ranks by length: s1 (10), s3 (20) short; s5 (30), s4 (40) middle; s0 (50), s2 (60) long
    ter = out["by_tercile"]
    assert ter["short"]["per_100"]["perception_error"] == pytest.approx(50.0)
    assert ter["middle"]["per_100"]["rule_mutation"] == pytest.approx(50.0)
    assert ter["long"]["per_100"]["correspondence_drift"] == pytest.approx(100.0)
    assert {t: ter[t]["n_items"] for t in ter} == {"short": 2, "middle": 2, "long": 2}
    in_score = family_score(sb.score, items, run, labels=labels, seed=None)["error_audit"]
    assert in_score["per_100"] == out["per_100"]


def test_paper_error_audit_direct_rates_d4():
    """D.4: correspondence drift 13.8 (direct) and 22.4 (thinking) per 100 of 1,800 F items (248 and 403)."""
    n = 1800
    items = make_items([(f"s{i}", "RI-Pos", 1) for i in range(n)])
    for k, per_100 in ((248, 13.8), (403, 22.4)):
        labels = pd.DataFrame({"item_id": [f"s{i}-F" for i in range(n)],
                               "category": ["correspondence_drift" if i < k else None for i in range(n)]})
        assert round(sb.error_audit(items, None, labels)["per_100"]["correspondence_drift"], 1) == per_100


def test_error_audit_reasons():
    items = make_items([("a", "RI-Pos", 1)])
    assert "reason" in sb.error_audit(items, None, pd.DataFrame({"item_id": ["a-F"]}))
    dup = pd.DataFrame({"item_id": ["a-F", "a-F"], "category": ["rule_absent", None]})
    assert "several labels" in sb.error_audit(items, None, dup)["reason"]


# --------------------------------------------------------------------------- score as a whole


def test_score_keys_and_json():
    items, run = pattern_run([([True, True], True, False), ([True], True, True)])
    out = family_score(sb.score, items, run, [])
    for key in ("p_accuracy", "r_accuracy", "f_accuracy", "by_operation", "by_family", "rf_gap", "decomposition",
                "binding_gap", "f_given_pr", "stem_coherent", "lucky_guess", "vg", "think_gain", "ssa", "l2",
                "l3_attr_tag", "tokens"):
        assert key in out
    js = to_jsonable(out)
    assert js["binding_gap"]["k"] == 1 and js["binding_gap"]["n"] == 2
    assert "reason" in js["vg"] and "reason" in js["think_gain"] and "reason" in js["ssa"]
    assert js["p_accuracy"]["ci"][0] <= js["p_accuracy"]["value"] <= js["p_accuracy"]["ci"][1]


def test_empty_run_gives_reasons_not_zeros():
    items = make_items([("a", "RI-Pos", 1)])
    out = family_score(sb.score, items, make_run("r", {}), seed=None)
    assert out["p_accuracy"].value is None and out["p_accuracy"].reason
    assert out["decomposition"]["solved"].value is None
    assert out["binding_gap"].value is None
    assert not any(isinstance(v, float) and math.isnan(v) for v in to_jsonable(out).values())


# --------------------------------------------------------------------------- survivors of `make mutation` (#28)


def test_vg_per_kind_intervals_and_reason_without_common_items():
    """Each kind's VG carries its own paired interval at the seed given (stems a, b: the full run 1 of 1 P
    probe in each, the text run 0 of 1 in a and 1 of 1 in b); no item answered by both runs gives the reason."""
    items = _three_stems()
    full = make_run("full", {i: True for i in items["item_id"]})
    text = make_run("text", {i: i != "a-P0" for i in items["item_id"]}, input_mode="text")
    vg = sb.visual_gain(items, full, text, seed=11)
    assert vg["P"].value == pytest.approx(0.5)
    assert vg["P"].ci == diff_interval([1, 1], [1, 1], [0, 1], [1, 1], seed=11)
    apart = make_run("text", {"elsewhere": True}, input_mode="text")
    none = sb.visual_gain(items, full, apart, seed=None)
    assert none["overall"].value is None and none["overall"].reason == "no items answered by both runs"
    assert none["F"].reason == "no F items answered by both runs"


def test_think_gain_cap_hit_count_undefined_with_the_reason():
    items = _three_stems()
    ids = list(items["item_id"])
    direct = make_run("d", {i: True for i in ids}, {i: 5.0 for i in ids})  # no max_tokens
    thinking = make_run("t", {i: True for i in ids}, {i: 5.0 for i in ids}, strategy="thinking", max_tokens=64)
    tg = sb.think_gain(items, direct, thinking, seed=None)
    assert tg["n_cap_hit"].value is None and tg["n_cap_hit"].reason == "run 'd': the config has no max_tokens"


def test_cap_hit_items_include_the_first_item_row():
    items = _three_stems()
    run = make_run("d", {"a-P0": True, "b-F": True}, {"a-P0": 64.0, "b-F": 3.0}, max_tokens=64)
    hit, reason = sb.cap_hit_items(items, run)
    assert reason is None and hit.tolist() == [True, False, False, False, False, False]


def test_error_audit_rates_of_absent_categories_and_the_no_run_reason():
    items = make_items([("a", "RI-Pos", 1), ("b", "RI-Pos", 1)])
    labels = pd.DataFrame({"item_id": ["a-F", "b-F"], "category": ["rule_absent", None]})
    out = sb.error_audit(items, None, labels)
    assert (out["rates"]["rule_absent"].k, out["rates"]["rule_absent"].n) == (1, 2)
    assert (out["rates"]["rule_mutation"].k, out["rates"]["rule_mutation"].n) == (0, 2)
    assert out["by_tercile"] == {"reason": "no run given for trace lengths"}


def test_error_audit_labels_with_numeric_item_ids_match_the_items():
    """Labels read from a spreadsheet may give item ids as numbers; they still name the items."""
    rows = [_item("1", "s1", "P", "RI-Pos"), _item("2", "s1", "F", "RI-Pos"), _item("3", "s2", "F", "RI-Pos")]
    items = pd.DataFrame(rows)
    out = sb.error_audit(items, None, pd.DataFrame({"item_id": [2, 3], "category": ["rule_absent", None]}))
    assert out["n_items"] == 2 and (out["rates"]["rule_absent"].k, out["no_error"].k) == (1, 1)


def test_l2_profile_matches_judgements_to_their_own_repeat():
    """Two repeats of one F item, wrong in repeat 0 and right in repeat 1: only repeat 0's judgement is an
    F-wrong trace (judgements and predictions are matched on item, rotation and repeat)."""
    items = make_items([("a", "RI-Pos", 1)])
    preds = pd.concat([make_run("r", {"a-F": False}).preds, make_run("r", {"a-F": True}).preds.assign(repeat=1)],
                      ignore_index=True)
    run = RunData("r", "sb", "stembind", {"model": "m"}, preds)
    judged = pd.DataFrame({"item_id": ["a-F", "a-F"], "repeat": [0, 1], "S1": [1, 1], "S2": [0, 1],
                           "S3": [1, 1], "S4": [1, 1]})
    out = sb.l2_profile(items, run, judged)
    f_wrong = out["first_failure_f_wrong"]
    assert (f_wrong["S2"].k, f_wrong["S2"].n) == (1, 1) and f_wrong["S1"].k == 0


def test_find_ssa_runs_prefers_an_explicit_h0_and_finds_the_base_for_an_ssa_run():
    """A run that says H0 stands for H0 over the unaugmented run; scoring an SSA-level run, the model's
    unaugmented run of the same strategy stands for H0."""
    base = make_run("base", {"s0-F": True})
    h0 = make_run("h0", {"s0-F": True}, ssa_level="H0")
    h3 = make_run("h3", {"s0-F": True}, ssa_level="H3")
    assert {k: r.name for k, r in sb.find_ssa_runs(base, [h0, h3]).items()} == {"H0": "h0", "H3": "h3"}
    assert {k: r.name for k, r in sb.find_ssa_runs(h3, [base]).items()} == {"H0": "base", "H3": "h3"}


def test_prefetch_then_score_gives_the_numbers_of_score_alone():
    """`prefetch` resamples, in one pass, the columns `score` will bootstrap for a direct / thinking pair
    (ThinkGain without cap-hit items included); the numbers are those of `score` without it."""
    items = _three_stems()
    ids = list(items["item_id"])
    direct = make_run("d", {i: i != "a-P0" for i in ids}, {i: 100.0 if i == "b-F" else 10.0 for i in ids},
                      max_tokens=100)
    thinking = make_run("t", {i: i != "b-R" for i in ids}, {i: 10.0 for i in ids}, strategy="thinking",
                        max_tokens=100)
    alone = _scored_alone_and_prefetched(items, direct, [thinking])
    assert alone["think_gain"]["n_cap_hit"]["k"] == 1


def _scored_alone_and_prefetched(items, run, others) -> dict:
    """`score` of `run` alone, checked equal to its score after the batch prefetch of `run` and `others` inside
    a ScoringContext (the prefetch changes what is computed ahead, never a number)."""
    from core import stats

    alone = to_jsonable(family_score(sb.score, items, run, others))
    with stats.ScoringContext().active():
        sb.prefetch(items, [run, *others])
        shared = to_jsonable(family_score(sb.score, items, run, others))
    assert shared == alone
    return alone


def test_vg_interval_resamples_stems_in_the_order_the_pair_first_answers_them():
    """The paired interval's clusters are the stems in order of first appearance among the paired rows (the
    text run's order): a text run answering stem b first resamples (b, a), inside a ScoringContext too."""
    from core import stats

    items = make_items([("a", "RI-Pos", 2), ("b", "RI-Pos", 1)])
    order = ["b-P0", "b-R", "b-F", "a-P0", "a-P1", "a-R", "a-F"]
    text = make_run("text", {i: i in ("b-P0", "a-R") for i in order}, input_mode="text")
    full = make_run("full", {i: True for i in items["item_id"]})
    expected = diff_interval([3, 4], [3, 4], [1, 1], [3, 4], seed=5)  # full minus text over (b, a)
    assert sb.visual_gain(items, full, text, seed=5)["overall"].ci == expected
    with stats.ScoringContext().active():
        assert sb.visual_gain(items, full, text, seed=5)["overall"].ci == expected


def test_vg_interval_clusters_in_first_answer_order_with_many_stems():
    """With twelve stems of uneven size the interval depends on the clusters' order; it is the order in which
    the paired rows first answer the stems (the text run's order, here the reverse of the sorted stem ids), not
    the sorted order."""
    stems = [(f"s{i:02d}", "RI-Pos", 1 + i % 4) for i in range(12)]
    items = make_items(stems)
    order = [i for stem, _, _ in reversed(stems) for i in items.loc[items["group_id"] == stem, "item_id"]]
    text = make_run("text", {i: n % 3 == 0 for n, i in enumerate(order)}, input_mode="text")
    text_ok = {i: bool(text.preds.loc[text.preds["item_id"] == i, "answer"].iloc[0] == "A") for i in order}
    full = make_run("full", {i: (n * 5) % 7 < 4 for n, i in enumerate(items["item_id"])})
    full_ok = dict(zip(full.preds["item_id"], full.preds["answer"].eq("A"), strict=True))

    def per_stem(stem_order):
        rows = [items.loc[items["group_id"] == s, "item_id"].tolist() for s in stem_order]
        return ([sum(full_ok[i] for i in r) for r in rows], [len(r) for r in rows],
                [sum(text_ok[i] for i in r) for r in rows])

    kb, n, ka = per_stem([s for s, _, _ in reversed(stems)])
    expected = diff_interval(kb, n, ka, n, seed=5)
    kb_sorted, n_sorted, ka_sorted = per_stem([s for s, _, _ in stems])
    assert expected != diff_interval(kb_sorted, n_sorted, ka_sorted, n_sorted, seed=5)  # the order matters here
    assert sb.visual_gain(items, full, text, seed=5)["overall"].ci == expected


def test_ssa_text_removed_reasons():
    assert sb.ssa_text_removed(make_run("plain", {})).reason == "not an SSA run (no stage text injected)"
    assert sb.ssa_text_removed(make_run("h3", {}, ssa_level="H3")).reason == (
        "the run config records no leakage-guard count (imported, or made before the guard)")
    got = sb.ssa_text_removed(make_run("h3", {}, ssa_level="H3", ssa_guard={"items": 4, "text_removed": 1}))
    assert (got.k, got.n) == (1, 4)


def test_error_audit_terciles_keep_the_label_order_among_equal_lengths():
    """Thirty traces of two lengths (10 and 20 tokens, alternating): equal lengths rank in the labels' order
    (docs/METRICS.md), as a stable sort of the lengths gives them."""
    n = 30
    items = make_items([(f"s{i:02d}", "RI-Pos", 1) for i in range(n)])
    lengths = [10.0 if i % 2 == 0 else 20.0 for i in range(n)]
    run = make_run("r", {f"s{i:02d}-F": False for i in range(n)}, {f"s{i:02d}-F": t for i, t in enumerate(lengths)})
    cats = ["perception_error" if i < 10 else "rule_mutation" if i < 20 else None for i in range(n)]
    labels = pd.DataFrame({"item_id": [f"s{i:02d}-F" for i in range(n)], "category": cats})
    ranked = sorted(range(n), key=lambda i: lengths[i])  # Python's sort is stable
    expected = {name: [cats[i] for i in ranked[10 * t:10 * t + 10]] for t, name in enumerate(("short", "middle",
                                                                                                "long"))}
    ter = sb.error_audit(items, run, labels)["by_tercile"]
    for name, got in expected.items():
        assert ter[name]["n_items"] == 10
        assert ter[name]["rates"]["perception_error"].k == got.count("perception_error"), name
        assert ter[name]["rates"]["rule_mutation"].k == got.count("rule_mutation"), name
    assert ter["short"]["rates"]["perception_error"].k == 5  # labels 0, 2, .., 8 of the first ten


def test_l2_profile_of_a_single_judgement():
    items = make_items([("a", "RI-Pos", 1)])
    judged = pd.DataFrame({"item_id": ["a-F"], "S1": [1], "S2": [0], "S3": [1], "S4": [1]})
    out = sb.l2_profile(items, make_run("r", {"a-F": False}), judged)
    assert out["n_traces"] == 1 and out["first_failure"]["S2"].k == 1
    on_p = judged.assign(item_id="a-P0")
    assert sb.l2_profile(items, make_run("r", {"a-F": False}), on_p) == {"reason": "no usable judgement of an F item"}


def test_prefetch_with_a_kind_left_unanswered_in_one_stem():
    """A run that answered no P probe of stem b: its P columns cover fewer stems than the rest; prefetch then
    score still gives the numbers of score alone."""
    items = _three_stems()
    run = make_run("r", {i: not i.endswith("-R") for i in items["item_id"] if not i.startswith("b-P")})
    _scored_alone_and_prefetched(items, run, [])


def test_decompose_reads_0_1_flags_as_truth_values():
    """Flags given as 0 / 1 integers decompose as the same booleans (§4.3 (ii))."""
    got = sb.decompose(np.array([1, 1, 0, 1]), np.array([1, 0, 1, 1]), np.array([0, 0, 0, 1]))
    assert list(got) == ["cant_bind", "cant_reason", "cant_see", "solved"]
    assert list(got) == list(sb.decompose(*(np.array(a, dtype=bool) for a in ([1, 1, 0, 1], [1, 0, 1, 1],
                                                                                [0, 0, 0, 1]))))


# --------------------------------------------------------------------------- survivors of the redrawn sample (#28)


def test_score_of_a_text_run_gives_the_vg_reason_under_vg():
    items = _three_stems()
    out = family_score(sb.score, items, make_run("text", {i: True for i in items["item_id"]}, input_mode="text"), seed=None)
    assert out["vg"].value is None and out["vg"].reason == "this run is itself text-only"


def test_score_of_an_ssa_run_carries_its_text_removed_share():
    items = _three_stems()
    run = make_run("h3", {i: True for i in items["item_id"]}, strategy="ssa", ssa_level="H3",
                   ssa_guard={"items": 2, "text_removed": 1})
    got = family_score(sb.score, items, run, seed=None)["ssa_text_removed"]
    assert (got.k, got.n) == (1, 2) and got.value == pytest.approx(0.5)
    assert "ssa_text_removed" not in family_score(sb.score, items, make_run("d", {"a-P0": True}), seed=None)


def test_ssa_text_removed_with_no_f_items_names_them():
    got = sb.ssa_text_removed(make_run("h3", {}, ssa_level="H3", ssa_guard={"items": 0, "text_removed": 0}))
    assert got.value is None and got.reason == "no F items to count"


def test_l3_attr_tag_carries_the_l2_reason():
    items, run = pattern_run([([True], True, True)])
    out = family_score(sb.score, items, run, seed=None)
    assert out["l3_attr_tag"].reason == out["l2"].reason and "no trace judgements" in out["l3_attr_tag"].reason


def test_rf_gap_reason_when_r_or_f_is_unanswered():
    items = _three_stems()
    out = family_score(sb.score, items, make_run("r", {"a-P0": True, "a-F": True}), seed=None)
    assert out["r_accuracy"].value is None
    assert out["rf_gap"].value is None and out["rf_gap"].reason == "R or F accuracy is undefined"
    assert out["by_operation"]["RI-Pos"]["rf_gap"].reason == "R or F accuracy is undefined"


def test_operations_outside_the_paper_follow_its_own_in_text_order():
    """by_operation: the paper's operations in its order (only present ones), then any other in text order."""
    items = make_items([("a", "zz-new", 1), ("b", "VP-Fold", 1), ("c", "RI-Pos", 1), ("d", "aa-new", 1)])
    run = make_run("r", {i: True for i in items["item_id"]})
    acc = sb.accuracies(items, run)
    assert list(acc["by_operation"]) == ["RI-Pos", "VP-Fold", "aa-new", "zz-new"]
    assert acc["by_operation"]["zz-new"]["p"].k == 1 and acc["by_operation"]["zz-new"]["p"].n == 1


def test_items_without_meta_have_no_operation():
    items = make_items([("a", "RI-Pos", 1), ("b", "RI-Pos", 1)])
    items["meta"] = [None if s == "b" else m for s, m in zip(items["group_id"], items["meta"], strict=True)]
    acc = sb.accuracies(items, make_run("r", {i: True for i in items["item_id"]}))
    assert list(acc["by_operation"]) == ["RI-Pos"] and acc["by_operation"]["RI-Pos"]["p"].n == 1
    assert acc["p_accuracy"].n == 2


def test_accuracies_and_stem_metrics_alone_equal_score():
    items, run = pattern_run([([True, True], True, False), ([True], True, True), ([False], False, False)])
    out = family_score(sb.score, items, run, seed=3)
    acc = sb.accuracies(items, run)
    assert (acc["p_accuracy"].k, acc["p_accuracy"].n) == (out["p_accuracy"].k, out["p_accuracy"].n) == (3, 4)
    assert (acc["f_accuracy"].k, acc["f_accuracy"].n) == (1, 3)
    stem = sb.stem_metrics(items, run, seed=3)
    assert stem["binding_gap"] == out["binding_gap"]
    assert stem["decomposition"]["cant_bind"] == out["decomposition"]["cant_bind"]
    assert (stem["decomposition"]["cant_bind"].k, stem["decomposition"]["cant_bind"].n) == (1, 3)


def test_r_correct_given_f_wrong_reason_without_f_wrong_stems():
    items, run = pattern_run([([True], True, True), ([False], False, True)])
    got = family_score(sb.score, items, run, seed=None)["decomposition"]["r_correct_given_f_wrong"]
    assert got.value is None and got.reason == "no F-wrong stems to count"


def test_think_partner_is_the_same_model_with_the_other_strategy():
    items = _three_stems()
    direct = make_run("d", {i: True for i in items["item_id"]})
    other_model = make_run("x", {i: True for i in items["item_id"]}, model="other")
    same_strategy = make_run("d2", {i: True for i in items["item_id"]})
    assert sb.find_think_partner(direct, [other_model, same_strategy]) is None
    thinking = make_run("t", {i: True for i in items["item_id"]}, strategy="thinking")
    assert sb.find_think_partner(direct, [other_model, same_strategy, thinking]) is thinking


def test_a_run_without_a_strategy_is_direct():
    items = _three_stems()
    bare = make_run("bare", {i: True for i in items["item_id"]})
    bare = RunData(bare.name, bare.benchmark, bare.family, {k: v for k, v in bare.config.items() if k != "strategy"},
                   bare.preds)
    thinking = make_run("t", {i: not i.endswith("-F") for i in items["item_id"]}, strategy="thinking")
    tg = family_score(sb.score, items, bare, [thinking], seed=None)["think_gain"]
    assert (tg["direct"], tg["thinking"]) == ("bare", "t") and tg["at_F"].value == pytest.approx(-1.0)


def test_think_gain_reasons_name_the_kind_both_ways():
    items = _three_stems()
    ids = [i for i in items["item_id"] if not i.endswith("P0")]
    direct = make_run("d", {i: True for i in ids}, {i: 5.0 for i in ids}, max_tokens=64)
    thinking = make_run("t", {i: True for i in ids}, {i: 5.0 for i in ids}, strategy="thinking", max_tokens=64)
    tg = sb.think_gain(items, direct, thinking, seed=None)
    assert tg["at_P"].reason == "no P items answered by both runs"
    assert tg["at_P_no_cap"].reason == "no P items without a cap hit answered by both runs"
    assert tg["at_F_no_cap"].value == pytest.approx(0.0)


def test_cap_hit_items_reason_without_a_tokens_column():
    items = _three_stems()
    run = make_run("d", {"a-P0": True}, {"a-P0": 3.0}, max_tokens=64)
    run = RunData(run.name, run.benchmark, run.family, run.config, run.preds.drop(columns=["tokens"]))
    assert sb.cap_hit_items(items, run) == (None, "run 'd' records no output-token counts")


def test_accuracy_interval_keeps_a_stem_the_run_answered_once():
    """Stem a (one P probe), of which the run answered only a-P0, is still a cluster of the P accuracy's
    interval (per stem, sorted by group_id: k = 1, 0, 1, 2, 3, 1, 2 of n = 1, 3, 3, ...), in a ScoringContext
    too, where the stems are coded from the item rows."""
    from core import stats

    p_right = [0, 1, 2, 3, 1, 2]
    items = make_items([("a", "RI-Pos", 1)] + [(s, "RI-Pos", 3) for s in "bcdefg"])
    correct = {"a-P0": True}
    for stem, k in zip("bcdefg", p_right, strict=True):
        correct |= stem_correct(stem, [j < k for j in range(3)], True, False)
    run = make_run("r", correct)
    with stats.ScoringContext().active():
        inside = family_score(sb.score, items, run, seed=7)
    expected = ratio_interval([1, *p_right], [1] + [3] * 6, seed=7)
    assert expected != ratio_interval(p_right, [3] * 6, seed=7)  # stem a matters here
    for out in (family_score(sb.score, items, run, seed=7), inside):
        assert (out["p_accuracy"].k, out["p_accuracy"].n) == (10, 19)
        assert out["p_accuracy"].ci == expected


# --------------------------------------------------------------------------- rows for the redrawn mutation sample


def test_vg_counts_the_items_both_runs_answered_and_masks_the_pair_not_the_items():
    """The text run left a-P0 unanswered: VG is over the 5 items both answered (P over b-P0 alone)."""
    items = _three_stems()
    full = make_run("full", {i: True for i in items["item_id"]})
    text = make_run("text", {i: i == "b-R" for i in items["item_id"] if i != "a-P0"}, input_mode="text")
    vg = sb.visual_gain(items, full, text, seed=None)
    assert (vg["overall"].value, vg["overall"].n) == (pytest.approx(1 - 1 / 5), 5)
    assert (vg["P"].value, vg["P"].n) == (pytest.approx(1.0), 1)
    assert (vg["R"].value, vg["R"].n) == (pytest.approx(0.5), 2)
    assert (vg["F"].value, vg["F"].n) == (pytest.approx(1.0), 2)


def test_lucky_guess_reason_names_f():
    items, run = pattern_run([([True], True, False)])
    assert family_score(sb.score, items, run, seed=None)["lucky_guess"].reason == "no stem with F correct"


def test_stem_table_ignores_an_outcome_row_outside_the_items():
    items, run = pattern_run([([True], True, True), ([False], False, False)])
    out = sb.item_outcomes(items, run)
    stray = out.iloc[[0]].assign(item_id="zz-R", group_id="zz")
    table = sb.stem_table(items, pd.concat([out, stray], ignore_index=True))
    assert list(table["got_R"]) == [1, 1] and list(table["k_R"]) == [1, 0]
    assert list(table["got_P"]) == [1, 1] and list(table["category"]) == ["solved", "cant_see"]


def test_cap_hit_items_reason_for_a_run_without_predictions():
    items = _three_stems()
    run = RunData("r", "sb", "stembind", {"model": "m", "max_tokens": 10}, None)
    assert sb.cap_hit_items(items, run) == (None, "run 'r' records no output-token counts")


def test_text_partner_is_the_first_by_name():
    items = _three_stems()
    full = make_run("full", {i: True for i in items["item_id"]})
    t2 = make_run("t2", {i: True for i in items["item_id"]}, input_mode="text")
    t1 = make_run("t1", {i: False for i in items["item_id"]}, input_mode="text")
    assert sb.find_text_partner(full, [t2, t1]) is t1
    assert family_score(sb.score, items, full, [t2, t1], seed=None)["vg"]["partner"] == "t1"


def test_ssa_runs_keep_to_the_input_mode_of_the_run():
    base = make_run("base", {})
    h3_text = make_run("h3t", {}, ssa_level="H3", input_mode="text")
    h3 = make_run("h3", {}, ssa_level="H3")
    assert sb.find_ssa_runs(base, [h3_text]) == {}
    assert sb.find_ssa_runs(base, [h3_text, h3]) == {"H3": h3, "H0": base}


def test_prefetch_for_a_vg_pair_with_a_kind_answered_in_fewer_stems():
    """The full run answered no P probe of stem b: its paired P columns cover one stem of two."""
    items = _three_stems()
    full = make_run("full", {i: not i.endswith("-R") for i in items["item_id"] if i != "b-P0"})
    text = make_run("text", {i: i.endswith("-F") for i in items["item_id"]}, input_mode="text")
    alone = _scored_alone_and_prefetched(items, full, [text])
    assert alone["vg"]["P"]["n"] == 1


def test_accuracies_of_items_without_any_operation():
    items = _three_stems()
    items["meta"] = None
    out = family_score(sb.score, items, make_run("r", {i: i != "a-F" for i in items["item_id"]}), seed=None)
    assert out["by_operation"] == {} and out["by_family"] == {}
    assert (out["f_accuracy"].k, out["f_accuracy"].n) == (1, 2)


def test_ssa_curve_with_the_first_item_row_an_f_item():
    items = make_items([("s0", "RI-Pos", 0), ("s1", "RI-Pos", 0)])  # rows: s0-R, s0-F, ...
    items = pd.concat([items.iloc[[1]], items.drop(index=1)], ignore_index=True)  # s0-F first
    h0 = make_run("h0", {i: i != "s0-F" for i in items["item_id"]}, ssa_level="H0")
    h3 = make_run("h3", {i: True for i in items["item_id"]}, ssa_level="H3")
    out = sb.ssa_curve(items, {"H0": h0, "H3": h3})
    assert out["n_items"] == 2
    assert {lv: (r.k, r.n) for lv, r in out["accuracy"].items()} == {"H0": (1, 2), "H3": (2, 2)}


def test_ssa_text_removed_needs_both_counts():
    run = make_run("h3", {}, ssa_level="H3", ssa_guard={"text_removed": 1})
    assert sb.ssa_text_removed(run).reason == (
        "the run config records no leakage-guard count (imported, or made before the guard)")


def _audit_run(tokens, traces):
    items = make_items([(f"s{i}", "RI-Pos", 1) for i in range(3)])
    run = make_run("r", {f"s{i}-F": False for i in range(3)})
    run.preds["tokens"] = pd.Series(tokens, dtype=object)
    run.preds["trace"] = pd.Series(traces, dtype=object)
    labels = pd.DataFrame({"item_id": [f"s{i}-F" for i in range(3)],
                           "category": ["rule_absent", None, "perception_error"]})
    return items, run, labels


def test_error_audit_terciles_by_trace_characters_without_tokens():
    items, run, labels = _audit_run([None, None, None], ["x" * 30, "x" * 10, "x" * 20])
    ter = sb.error_audit(items, run, labels)["by_tercile"]
    assert ter["short"]["per_100"]["rule_absent"] == 0.0 and ter["short"]["no_error"].k == 1
    assert ter["middle"]["per_100"]["perception_error"] == 100.0
    assert ter["long"]["per_100"]["rule_absent"] == 100.0


def test_error_audit_reads_a_token_text_that_is_no_number_as_missing():
    items, run, labels = _audit_run([5, "n/a", 1], ["x" * 30, "x" * 10, "x" * 20])
    ter = sb.error_audit(items, run, labels)["by_tercile"]
    assert ter["long"]["per_100"]["rule_absent"] == 100.0  # by characters: s0 (30) is the longest


def test_error_audit_reason_when_a_trace_is_missing_and_tokens_too():
    items, run, labels = _audit_run([None, None, None], ["x" * 30, None, "x" * 20])
    assert sb.error_audit(items, run, labels)["by_tercile"] == {
        "reason": "trace lengths unknown (no tokens and no trace text)"}


def test_l2_status_unset_counts_and_f_wrong_reason_and_unknown_load():
    items = make_items([("a", "RI-Pos", 1), ("b", "RI-Pos", 1)])
    items.loc[items["item_id"] == "b-F", "meta"] = [{"operation": "RI-Pos"}]
    run = make_run("r", {"a-F": True, "b-F": True})
    judgements = pd.DataFrame([
        {"item_id": "a-F", "S1": 1, "S2": 1, "S3": 1, "S4": 1, "status": "ok"},
        {"item_id": "b-F", "S1": 0, "S2": 1, "S3": 1, "S4": 1, "status": None},
    ])
    out = family_score(sb.score, items, run, judgements=judgements, seed=None)
    assert out["l2"]["n_traces"] == 2
    assert {s: r.reason for s, r in out["l2"]["first_failure_f_wrong"].items()} == {
        s: "no F-wrong judged traces to count" for s in ("S1", "S2", "S3", "S4")}
    assert out["l3_attr_tag"] == {
        "mixed": {"S1": 0, "S2": 0, "S3": 0, "S4": 0, "none": 1},
        "unknown": {"S1": 1, "S2": 0, "S3": 0, "S4": 0, "none": 0},
    }


def test_token_stats_of_a_text_column_reads_numbers_and_skips_the_rest():
    items = make_items([("a", "RI-Pos", 1)])
    run = make_run("r", {"a-P0": True, "a-R": True, "a-F": True}, max_tokens=20)
    run.preds["tokens"] = pd.Series(["10", "n/a", 20], dtype=object)
    out = sb.token_stats(items, run)
    assert (out["n"], out["mean"]) == (2, pytest.approx(15.0))
    assert (out["cap_hit"].k, out["cap_hit"].n) == (1, 2)
