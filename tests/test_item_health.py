"""Item health (core/item_health.py, `app.py item-health`): planted data with known answers (wrong gold letters,
items that flip across repeats, a split vote, an item strong runs fail, duplicate images), the statistics against
independent computations (Poisson-binomial tail by enumeration, BH against scipy, the accuracy interval from the
same seeded draws)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from core import families, outcomes, stats
from core.item_health import _poisson_binomial_tail, item_health, phash

LETTERS = "ABCD"


def _items(n_groups: int, per_group: int = 2) -> pd.DataFrame:
    rows = []
    for g in range(n_groups):
        for i in range(per_group):
            rows.append({"item_id": f"g{g:03d}-{i}", "group_id": f"g{g:03d}", "split": "test", "kind": "Q",
                         "variant": "", "question": "?", "options": {k: k for k in LETTERS}, "letters": LETTERS,
                         "answer": "A", "images": [f"img{g:03d}"], "meta": {}, "stages": None, "n_images": 1})
    return pd.DataFrame(rows)


def planted(seed: int = 11) -> dict:
    """300 groups x 2 items, true letters drawn at random; 20 runs of abilities 0.35-0.95, each answering 3
    repeats. Planted: 12 items whose gold letter is not the true one; 10 items every run answers at random on each
    repeat (they flip); 6 items the weakest runs get right and the strongest wrong; 4 items half the runs answer
    the gold letter and half the next one."""
    rng = np.random.default_rng(seed)
    items = _items(300)
    n = len(items)
    truth = rng.integers(0, 4, n)
    order = rng.permutation(n)
    wrong_gold, flippers, negative, split = (order[:12], order[12:22], order[22:28], order[28:32])
    gold = truth.copy()
    gold[wrong_gold] = (truth[wrong_gold] + 1 + rng.integers(0, 3, 12)) % 4
    items["answer"] = [LETTERS[g] for g in gold]
    abilities = np.linspace(0.35, 0.95, 20)
    runs = {}
    for r, ability in enumerate(abilities):
        rows = []
        for i in range(n):
            stable = rng.random() < ability
            base = truth[i] if stable else (truth[i] + 1 + rng.integers(0, 3)) % 4
            if i in negative:
                base = (gold[i] + 1) % 4 if ability > 0.65 else gold[i]
            if i in split:
                base = gold[i] if r % 2 else (gold[i] + 1) % 4
            for rep in range(3):
                letter = base
                if i in flippers:
                    letter = rng.integers(0, 4)
                elif rng.random() < 0.03:  # the run's own repeat noise
                    letter = rng.integers(0, 4)
                rows.append({"item_id": items["item_id"][i], "rotation": 0, "repeat": rep, "status": "ok",
                             "answer": LETTERS[int(letter)]})
        runs[f"run{r:02d}"] = pd.DataFrame(rows)
    ids = items["item_id"].to_numpy()
    return {"items": items, "runs": runs, "wrong_gold": set(ids[wrong_gold]), "flippers": set(ids[flippers]),
            "negative": set(ids[negative]), "split": set(ids[split]), "abilities": abilities}


def _health(p: dict, hashes=None):
    fam = families.get("generic")
    lay = outcomes.layout(fam.groups, p["items"])
    preds = {name: outcomes.preds_from_frame(lay, df) for name, df in p["runs"].items()}
    return item_health("bench", p["items"], lay, preds, hashes)


@pytest.fixture(scope="module")
def found():
    p = planted()
    return p, _health(p)


def test_wrong_gold_letters_are_ranked_first(found):
    p, h = found
    first = [s.item_id for s in h.suspect_gold[:len(p["wrong_gold"])]]
    assert set(first) == p["wrong_gold"]
    truth_of = {s.item_id: s for s in h.suspect_gold}
    items = p["items"].set_index("item_id")
    for iid in p["wrong_gold"]:
        s = truth_of[iid]
        assert s.gold == items.loc[iid, "answer"] and s.consensus != s.gold
        assert s.support > 0.9 and len(s.runs) >= 8
        assert "run19" in s.runs  # the strongest run answers the true letter
    # the fitted reliabilities follow the planted abilities
    rel = np.array([h.reliability[f"run{r:02d}"] for r in range(20)])
    assert np.corrcoef(rel, p["abilities"])[0, 1] > 0.95


def test_items_planted_to_flip_are_ranked_first_as_unstable(found):
    p, h = found
    first = [u.item_id for u in h.unstable[:len(p["flippers"])]]
    assert set(first) == p["flippers"]
    for u in h.unstable[:10]:
        assert u.flip_rate > 0.5 and u.flips > u.expected and u.q < 0.05


def test_negative_discrimination_and_ambiguous(found):
    p, h = found
    assert set(p["negative"]) <= {n.item_id for n in h.negative_discrimination[:10]}
    for n in h.negative_discrimination[:6]:
        assert n.r < 0
    # the split items, and the negative ones (half the runs, the strong half, on another letter) come first
    first = {a.item_id for a in h.ambiguous[:10]}
    assert first == p["split"] | p["negative"]
    gold = dict(zip(p["items"]["item_id"], p["items"]["answer"], strict=True))
    for a in (a for a in h.ambiguous if a.item_id in p["split"]):
        assert set(a.letters) == {gold[a.item_id], LETTERS[(LETTERS.index(gold[a.item_id]) + 1) % 4]}
        assert a.split >= 0.45


def test_accuracy_without_the_suspects_by_the_same_draws(found):
    """The run's accuracy with and without the suspects and their difference, from the resample counts of
    core.stats (the same seeded draws) summed here by hand."""
    p, h = found
    acc = {a.run: a for a in h.accuracy_without_suspects}
    a = acc["run19"]
    suspects = {s.item_id for s in h.suspect_gold}
    items = p["items"]
    df = p["runs"]["run19"]
    first = df[df["repeat"] == 0].set_index("item_id")["answer"]
    right = (first.reindex(items["item_id"]).to_numpy() == items["answer"].to_numpy())
    gcode = pd.factorize(items["group_id"])[0]
    keep = ~items["item_id"].isin(suspects).to_numpy()
    k_all, n_all = np.bincount(gcode, weights=right), np.bincount(gcode)
    k_wo, n_wo = np.bincount(gcode, weights=right & keep), np.bincount(gcode, weights=keep)
    assert (a.accuracy.k, a.accuracy.n, a.without.k, a.without.n) == (k_all.sum(), n_all.sum(), k_wo.sum(),
                                                                       n_wo.sum())
    w = stats.resample_counts(len(n_all), 2000, stats.DEFAULT_SEED).astype(float)
    d = (w @ k_wo) / (w @ n_wo) - (w @ k_all) / (w @ n_all)
    assert a.ci == pytest.approx(tuple(np.percentile(d, [2.5, 97.5])), abs=1e-12)
    assert a.diff > 0  # the strongest run loses points on the wrong golds
    assert a.without.ci == pytest.approx(tuple(np.percentile((w @ k_wo) / (w @ n_wo), [2.5, 97.5])), abs=1e-12)


def test_poisson_binomial_tail_against_enumeration():
    rates = np.array([0.1, 0.3, 0.05, 0.6])
    present = np.array([[1, 1, 0], [1, 0, 1], [1, 1, 1], [0, 1, 1]], dtype=bool)
    x = np.array([2, 1, 3])
    got = _poisson_binomial_tail(rates, present, x)
    for i in range(3):
        want = 0.0
        for flips in itertools.product([0, 1], repeat=4):
            if any(f and not present[j, i] for j, f in enumerate(flips)) or sum(flips) < x[i]:
                continue
            want += np.prod([rates[j] if f else 1 - rates[j] for j, f in enumerate(flips) if present[j, i]])
        assert got[i] == pytest.approx(want, abs=1e-12)


def test_unstable_q_is_bh_against_scipy(found):
    from scipy.stats import false_discovery_control

    _, h = found
    # every listed item's q among all tested: recomputing BH over the listed p's alone would differ; check the
    # ordering property and one full recomputation on a hand-made list instead
    qs = [u.q for u in h.unstable]
    assert all(a <= b + 1e-12 for a, b in itertools.pairwise(qs))
    ps = [0.001, 0.2, 0.03, 0.04, 0.9]
    assert stats.bh_q(ps) == pytest.approx(list(false_discovery_control(ps, method="bh")), abs=1e-12)


def _pattern(seed: int, size: int = 64) -> Image.Image:
    rng = np.random.default_rng(seed)
    blocks = rng.integers(0, 255, (8, 8), dtype=np.uint8)
    return Image.fromarray(np.kron(blocks, np.ones((size // 8, size // 8), dtype=np.uint8))).convert("RGB")


def test_duplicate_images_across_groups_and_splits():
    p = planted()
    items = p["items"]
    # group g001 shows g000's image again (identical file), g002 a slightly brighter copy of g003's, in train
    images = [list(x) for x in items["images"]]
    for i, gid in enumerate(items["group_id"]):
        if gid == "g001":
            images[i] = ["img000"]
    items = items.assign(images=images)
    items.loc[items["group_id"] == "g002", "split"] = "train"
    base = _pattern(3)
    brighter = Image.eval(base, lambda v: min(255, v + 12))
    hashes = {f"img{g:03d}": phash(_pattern(100 + g)) for g in range(300)}
    hashes["img002"], hashes["img003"] = phash(brighter), phash(base)
    hashes["img299"] = phash(Image.new("RGB", (64, 64), (30, 30, 30)))  # flat: matched only exactly
    assert hashes["img299"] is None
    h = _health({**p, "items": items}, hashes)
    found = {d.groups: d for d in h.duplicates}
    assert ("g002", "g003") in found and found[("g002", "g003")].cross_split and found[("g002", "g003")].distance <= 4
    assert ("g000", "g001") in found and found[("g000", "g001")].distance == 0
    assert h.duplicates[0].groups == ("g002", "g003")  # across splits first
    assert len(h.duplicates) == 2  # random patterns are far apart


def test_json_shape(found):
    _, h = found
    out = h.json()
    assert set(out) >= {"suspect_gold", "unstable", "ambiguous", "negative_discrimination", "duplicates",
                        "accuracy_without_suspects"}
    assert set(out["suspect_gold"][0]) >= {"item_id", "group_id", "gold", "consensus", "support", "runs"}
    assert set(out["unstable"][0]) >= {"item_id", "group_id", "flip_rate"}
    json.dumps(out, allow_nan=False)
