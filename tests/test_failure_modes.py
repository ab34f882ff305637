"""Failure modes (core/failure_modes.py, `app.py failure-modes`): planted data with known answers, the interval
against the same seeded draws computed here independently, the log-odds z against the 2008 paper's formula, and
the CLI's JSON."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from core import stats
from core.failure_modes import Documents, failure_modes, find_modes, log_odds
from core.schema import PRED_COLUMNS, RunData

VOCAB = [f"{a}{b}" for a in ("lo", "ra", "ne", "pi", "su", "ko", "ta", "vu") for b in
         ("mar", "bel", "dix", "fon", "gur", "hap", "jel", "kin", "lup", "mov", "nes", "pol", "qir", "rum", "sef")]
MIRROR = "the image looks mirrored so left and right are swapped"
COUNT = "I count five objects though the rows hold four"
COMMON = "carefully"  # as common in passes as in failures


def planted_run(n_groups: int = 240, per_group: int = 2, seed: int = 5) -> tuple[pd.DataFrame, RunData, dict]:
    """Generic items (`per_group` per group, gold A-D) and one run: a third of the groups fail by reading the image
    as mirrored (MIRROR in the trace of every failing item), a third by miscounting (COUNT), the rest pass; every
    trace holds filler words, and COMMON in half of the traces whatever the outcome. Returns (items, run, the
    groups of each planted mode)."""
    rng = np.random.default_rng(seed)
    items, preds = [], []
    planted: dict[str, set[str]] = {"mirror": set(), "count": set()}
    for g in range(n_groups):
        gid = f"g{g:03d}"
        kind = ("mirror", "count", "pass")[g % 3]
        for i in range(per_group):
            iid = f"{gid}-{i}"
            gold = "ABCD"[int(rng.integers(4))]
            items.append({"item_id": iid, "group_id": gid, "split": "test", "kind": "Q", "variant": "",
                          "question": "?", "options": {k: k for k in "ABCD"}, "letters": "ABCD", "answer": gold,
                          "images": [], "meta": {}, "stages": None, "n_images": 0})
            fails = kind != "pass" and rng.random() < 0.9
            words = list(rng.choice(VOCAB, 14))
            if rng.random() < 0.5:
                words.insert(int(rng.integers(len(words))), COMMON)
            trace = " ".join(words)
            if fails:
                planted[kind].add(gid)
                trace += ". " + (MIRROR if kind == "mirror" else COUNT) + "."
            letter = gold if not fails else "ABCD"[("ABCD".index(gold) + 1) % 4]
            preds.append({"item_id": iid, "rotation": 0, "repeat": 0, "status": "ok", "answer": letter,
                          "shown": letter, "response": f"Answer: {letter}", "input_mode": "all", "trace": trace,
                          "tokens": 20.0, "latency": None, "probs": None, "error": None})
    run = RunData("planted", "bench", "generic", {}, pd.DataFrame(preds, columns=list(PRED_COLUMNS)))
    return pd.DataFrame(items), run, planted


@pytest.fixture(scope="module")
def planted():
    items, run, modes = planted_run()
    return items, run, modes, failure_modes(items, run)


def _mode_with(found, word: str):
    return next(m for m in found.modes if any(word in t for t in m.terms))


@pytest.mark.parametrize("word,kind", [("mirrored", "mirror"), ("count", "count")])
def test_the_two_planted_modes_are_found_significant_and_hold_their_groups(planted, word, kind):
    _, _, groups, found = planted
    mode = _mode_with(found, word)
    assert mode.q is not None and mode.q < 0.05
    assert mode.ci is not None and mode.ci[0] > 0
    assert mode.share_failing > 0.4 and mode.share_passing < 0.05
    held = set(mode.groups) & groups[kind]
    assert len(held) >= 0.8 * len(groups[kind])
    assert len(set(mode.groups) - groups[kind]) <= 0.1 * len(mode.groups)  # few groups of the other mode
    assert set(mode.examples) <= groups[kind] and len(mode.examples) == 3
    assert mode.stability >= 0.8
    sentence = set((MIRROR if kind == "mirror" else COUNT).lower().split())
    assert all(set(t.split()) <= sentence for t in mode.terms[:3])  # named by its planted words
    assert mode.label == " · ".join(mode.terms[:3])


def test_the_two_planted_modes_come_first(planted):
    _, _, _, found = planted
    firsts = {t for m in found.modes[:2] for t in m.terms}
    assert any("mirrored" in t for t in firsts) and any("count" in t for t in firsts)


def test_a_word_as_common_in_passes_as_in_failures_is_not_flagged(planted):
    _, _, _, found = planted
    flagged = {t.term for t in found.terms if t.q < 0.05}
    assert COMMON not in flagged
    assert {"mirrored", "count"} <= flagged
    assert not any(COMMON in t for m in found.modes[:2] for t in m.terms)


def test_the_interval_is_the_seeded_cluster_bootstrap_computed_independently(planted):
    """Each planted mode's interval from the resample counts of core.stats (the same draws), its shares summed
    here by hand per group: the mode holds no passing document and every failing document of its groups."""
    items, run, _, found = planted
    from core.failure_modes import documents

    docs = documents("generic", items, run)
    groups, gcode = np.unique(docs.groups.astype(str), return_inverse=True)
    w = stats.resample_counts(len(groups), 2000, stats.DEFAULT_SEED).astype(float)
    for mode in found.modes[:2]:
        in_mode = np.isin(docs.groups, list(mode.groups)) & docs.failing
        assert (int(in_mode.sum()), mode.n_passing) == (mode.n_failing, 0)
        kf = np.bincount(gcode[in_mode], minlength=len(groups))
        nf = np.bincount(gcode[docs.failing], minlength=len(groups))
        d = (w @ kf) / (w @ nf)  # minus a passing share of 0 in every draw
        assert mode.ci == pytest.approx(tuple(np.percentile(d, [2.5, 97.5])), abs=1e-12)
        assert mode.diff == pytest.approx(kf.sum() / nf.sum())


def test_hand_made_interval_and_bh():
    """Twelve groups of one failing and one passing document each; eight failing documents say one thing, the
    rest another: the difference and its interval as the resampled shares give them, q as scipy's BH."""
    texts, fail, grp = [], [], []
    for g in range(12):
        for bad in (True, False):
            texts.append(("alpha beta gamma delta" if bad and g < 8 else "omega sigma kappa theta") + f" g{g}")
            fail.append(bad)
            grp.append(f"g{g:02d}")
    docs = Documents(np.array([f"i{i}" for i in range(24)], dtype=object), np.array(grp, dtype=object),
                     np.array(fail), texts, np.array([None] * 24, dtype=object))
    found = find_modes(docs, draws=500)
    alpha = _mode_with(found, "alpha")
    assert (alpha.n_failing, alpha.n_passing) == (8, 0)
    assert alpha.diff == pytest.approx(8 / 12)
    w = stats.resample_counts(12, 500, stats.DEFAULT_SEED).astype(float)
    kf = np.array([1.0] * 8 + [0.0] * 4)
    d = (w @ kf) / w.sum(axis=1)
    assert alpha.ci == pytest.approx(tuple(np.percentile(d, [2.5, 97.5])), abs=1e-12)
    ps = [m.p for m in found.modes]
    from scipy.stats import false_discovery_control

    assert [m.q for m in found.modes] == pytest.approx(list(false_discovery_control(ps, method="bh")), abs=1e-12)


def test_log_odds_z_by_the_papers_formula():
    """Monroe, Colaresi & Quinn 2008 eq. 16-22, term by term with plain floats."""
    yi, yj, a = np.array([30.0, 5.0, 12.0]), np.array([4.0, 25.0, 12.0]), np.array([3.0, 3.0, 4.0])
    delta, z = log_odds(yi, yj, a)
    ni, nj, a0 = yi.sum(), yj.sum(), a.sum()
    for w in range(3):
        d = np.log((yi[w] + a[w]) / (ni + a0 - yi[w] - a[w])) - np.log((yj[w] + a[w]) / (nj + a0 - yj[w] - a[w]))
        assert delta[w] == pytest.approx(d)
        assert z[w] == pytest.approx(d / np.sqrt(1 / (yi[w] + a[w]) + 1 / (yj[w] + a[w])))
    assert z[0] > 0 > z[1]


def test_deterministic_and_json_shape(planted):
    items, run, _, found = planted
    again = failure_modes(items, run)
    assert again.json() == found.json()
    out = found.json()
    assert set(out) >= {"modes", "terms"}
    assert set(out["modes"][0]) >= {"id", "label", "terms", "n_failing", "n_passing", "share_failing",
                                    "share_passing", "diff", "ci", "p", "q", "stability", "groups", "examples"}
    assert set(out["terms"][0]) >= {"term", "failing", "passing", "z", "q"}
    json.dumps(out, allow_nan=False)


def test_compare_reads_the_items_lost_against_the_other_run(planted):
    items, run, groups, _ = planted
    # the other run is right everywhere except on the "count" groups, where it fails as this run does
    other_preds = run.preds.copy()
    gold = dict(zip(items["item_id"], items["answer"], strict=True))
    gid = dict(zip(items["item_id"], items["group_id"], strict=True))
    other_preds["answer"] = [a if gid[i] in groups["count"] else gold[i]
                             for i, a in zip(other_preds["item_id"], other_preds["answer"], strict=True)]
    other = RunData("other", "bench", "generic", {}, other_preds)
    found = failure_modes(items, run, other=other)
    assert found.compare == "other"
    lost = {g for m in found.modes for g in m.groups}
    assert lost <= groups["mirror"] and len(lost) >= 0.8 * len(groups["mirror"])
