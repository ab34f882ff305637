"""Slices (core/slices.py, `app.py slices`): planted data with known answers, the interval against the same seeded
draws computed here independently, Benjamini-Hochberg against its definition and the 1995 paper's example."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core import stats
from core.errors import MetricUndefined
from core.groups import item_stratum
from core.slices import find_slices, slice_fields, slices_of_run

ROOT = Path(__file__).resolve().parents[1]


def _items(n_groups: int, per_group: int, meta: dict[str, list[str]]) -> pd.DataFrame:
    """Items of one split: `per_group` items per group; meta values given per group."""
    rows = []
    for g in range(n_groups):
        for i in range(per_group):
            rows.append({"item_id": f"g{g}-{i}", "group_id": f"g{g}", "split": "test", "kind": "Q", "variant": "",
                         "n_images": 1, "meta": {k: v[g] for k, v in meta.items()}})
    return pd.DataFrame(rows)


def _outcome(correct: np.ndarray, answered: np.ndarray | None = None) -> pd.DataFrame:
    answered = np.ones(len(correct), dtype=bool) if answered is None else answered
    return pd.DataFrame({"answered": answered, "correct": correct & answered})


@pytest.fixture(scope="module")
def planted() -> tuple[pd.DataFrame, pd.DataFrame]:
    """300 groups of 3 items; items of colour 'red' groups are right 35% of the time, the rest 80%; 'shape' and
    'size' are drawn independently of correctness."""
    rng = np.random.default_rng(7)
    g = 300
    meta = {"colour": list(rng.choice(["red", "blue", "green"], g)),
            "shape": list(rng.choice(["square", "circle", "triangle", "star"], g)),
            "size": list(rng.choice(["s", "m", "l"], g))}
    items = _items(g, 3, meta)
    red = items["meta"].map(lambda m: m["colour"] == "red").to_numpy()
    correct = rng.random(len(items)) < np.where(red, 0.35, 0.80)
    return items, _outcome(correct)


def test_a_planted_gap_ranks_first_and_independent_fields_stay_above_q_005(planted):
    items, out = planted
    found = find_slices(items, out)
    assert (found[0].field, found[0].value) == ("colour", "red")
    assert found[0].q is not None and found[0].q < 0.05
    assert found[0].ci is not None and found[0].ci[1] < 0 < 0.0 - found[0].diff
    for s in found:
        if s.field in ("shape", "size"):
            assert s.q is not None and s.q >= 0.05, (s.field, s.value, s.q)
    # every slice is one value against the rest of the split: slice + rest = the whole split
    for s in found:
        assert s.accuracy.n + s.rest.n == len(items)
        assert s.accuracy.k + s.rest.k == int(out["correct"].sum())
    diffs = [s.diff for s in found]
    assert diffs == sorted(diffs)  # worst first


def _bh_by_definition(p: list[float]) -> list[float]:
    """q_(i) = min over j >= i of p_(j) m / j (Benjamini & Hochberg 1995), written out here."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    q = [0.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, p[i] * m / rank)
        q[i] = running
    return q


def test_q_values_are_benjamini_hochberg(planted):
    items, out = planted
    found = find_slices(items, out)
    ps = [s.p for s in found]
    assert all(p is not None for p in ps)
    assert [s.q for s in found] == pytest.approx(_bh_by_definition(ps), abs=1e-12)


def test_bh_on_the_1995_paper_example_rejects_four():
    """Benjamini & Hochberg (1995) §4: 15 p-values; at q* = 0.05 the procedure rejects the four smallest."""
    from core.stats import bh_q as _bh

    p = [0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459, 0.3240, 0.4262, 0.5719,
         0.6528, 0.7590, 1.0000]
    q = _bh(p)
    assert q == pytest.approx(_bh_by_definition(p), abs=1e-12)
    assert sum(x <= 0.05 for x in q) == 4
    from scipy.stats import false_discovery_control  # an independent implementation

    rng = np.random.default_rng(3)
    for ps in (p, list(rng.random(40) ** 3), [0.2, 0.2, 0.01, 0.2, 1.0]):
        assert _bh(ps) == pytest.approx(list(false_discovery_control(ps, method="bh")), abs=1e-12)


def test_the_interval_equals_the_same_seeded_draws_computed_here():
    """5 groups, slice = meta a == 'x'; the percentile interval and p from stats.resample_indices' stream."""
    items = _items(5, 2, {"a": ["x", "x", "y", "y", "y"], "b": ["u", "v", "u", "v", "u"]})
    correct = np.array([1, 0, 1, 1, 0, 0, 1, 1, 1, 0], dtype=bool)
    found = {(s.field, s.value): s for s in find_slices(items, _outcome(correct), min_groups=1, draws=500, seed=11)}
    s = found[("a", "x")]
    idx = stats.resample_indices(5, 500, np.random.default_rng(11))
    in_slice = np.array([1, 1, 0, 0, 0], dtype=bool)
    kg = correct.reshape(5, 2).sum(axis=1).astype(float)
    ng = np.full(5, 2.0)
    diffs = []
    for row in idx:
        ks, ns = kg[row][in_slice[row]].sum(), ng[row][in_slice[row]].sum()
        kr, nr = kg[row][~in_slice[row]].sum(), ng[row][~in_slice[row]].sum()
        diffs.append(ks / ns - kr / nr if ns and nr else np.nan)
    d = np.array(diffs)
    lo, hi = np.nanpercentile(d, [2.5, 97.5])
    assert s.ci == (pytest.approx(lo, abs=1e-15), pytest.approx(hi, abs=1e-15))
    b = int((~np.isnan(d)).sum())
    le, ge = int((d <= 0).sum()), int((d >= 0).sum())
    assert s.p == pytest.approx(min(1.0, 2 * min((le + 1) / (b + 1), (ge + 1) / (b + 1))), abs=1e-15)
    assert s.diff == pytest.approx(3 / 4 - 3 / 6)
    assert s.ci[0] <= s.diff <= s.ci[1]


def test_a_hand_computed_case():
    """Two groups of one item: slice right, rest wrong. Every draw holding both gives +1 (interval [1, 1]); the
    draws holding one side only are left out; p = 2 / (B + 1) for the B usable draws."""
    items = _items(2, 1, {"a": ["x", "y"]})
    found = find_slices(items, _outcome(np.array([True, False])), min_groups=1, draws=400, seed=3)
    s = next(f for f in found if f.value == "x")
    idx = stats.resample_indices(2, 400, np.random.default_rng(3))
    usable = int(((idx == 0).any(axis=1) & (idx == 1).any(axis=1)).sum())
    assert s.diff == 1.0 and s.ci == (1.0, 1.0)
    assert s.p == pytest.approx(2 / (usable + 1))


def test_min_groups_and_unanswered_rules():
    items = _items(12, 1, {"a": ["x"] * 3 + ["y"] * 9})
    correct = np.array([False] * 3 + [True] * 9)
    answered = np.array([True, True, False] + [True] * 9)
    out = _outcome(correct, answered)
    assert [s.value for s in find_slices(items, out, min_groups=3)] == []  # x has 2 answered groups
    counted = find_slices(items, out, min_groups=3, count_unanswered=True)
    assert [(s.value, s.accuracy.n) for s in counted][0] == ("x", 3)  # the unanswered item counts as wrong
    assert {s.value for s in find_slices(items, out, min_groups=2)} == {"x", "y"}


def test_depth_two_adds_pairs_and_compare_is_paired(planted):
    items, out = planted
    one = find_slices(items, out)
    two = find_slices(items, out, depth=2)
    pairs = [s for s in two if len(s.fields) == 2]
    assert pairs and len(two) == len(one) + len(pairs)
    assert {s.field for s in pairs} >= {"colour & shape", "colour & size", "shape & size"}
    # q is over every slice tested, both depths together (not per depth)
    assert [s.q for s in two] == pytest.approx(_bh_by_definition([s.p for s in two]), abs=1e-12)
    q1 = {(s.field, s.value): s.q for s in one}
    assert any(abs(s.q - q1[(s.field, s.value)]) > 1e-9 for s in two if len(s.fields) == 1)
    # compare: the other run is right on every red item: red is where this run lost most
    red = items["meta"].map(lambda m: m["colour"] == "red").to_numpy()
    other = _outcome(out["correct"].to_numpy() | red)
    cmp = find_slices(items, out, other=other)
    assert (cmp[0].field, cmp[0].value) == ("colour", "red")
    assert cmp[0].other is not None and cmp[0].other.value == 1.0 and cmp[0].diff < 0
    assert cmp[0].accuracy.n == cmp[0].other.n


def test_fields_offered_and_refused():
    items = _items(4, 1, {"a": ["x", "y", "x", "y"], "id": ["1", "2", "3", "4"], "one": ["z"] * 4})
    assert set(slice_fields(items)) == {"a", "id"}  # 'one' has a single value; kind and variant do not vary
    with pytest.raises(MetricUndefined, match="no stratum 'nope'.*a, id"):
        slice_fields(items, only=["nope"])
    many = _items(60, 1, {"id": [str(i) for i in range(60)]})
    assert "id" not in slice_fields(many)  # more than 50 values: an identifier, not a stratum


def _third(n_groups: int = 30) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One item per group; `colour` on the first third of the items only (red / blue), `size` on every item."""
    items = _items(n_groups, 1, {"size": ["s" if g % 2 else "l" for g in range(n_groups)]})
    for g in range(n_groups // 3):
        items.at[g, "meta"] = {**items.at[g, "meta"], "colour": "red" if g % 2 else "blue"}
    correct = np.array([g % 3 != 0 for g in range(n_groups)])
    return items, _outcome(correct)


def test_a_field_on_a_third_of_the_items_makes_slices_of_that_third_only():
    """Items without a field are in no slice of it (no "nan" slice, no "None" slice): colour's slices hold the
    ten items that have one, and BH's family is the real slices only. The rest of a slice is the rest of the
    split, the items without the field included."""
    items, out = _third()
    found = find_slices(items, out, min_groups=1, depth=2)
    colour = [s for s in found if s.fields == ("colour",)]
    assert sorted(s.value for s in colour) == ["blue", "red"]
    assert sum(s.n_items for s in colour) == 10
    assert all(s.n_items + s.rest.n == 30 for s in colour)
    assert all(v in {"red", "blue", "s", "l"} for s in found for v in s.values)
    pairs = {s.value for s in found if s.fields == ("colour", "size")}
    assert pairs == {"red & s", "blue & l"}  # colour on its third only: groups 0-9, odd red & s, even blue & l
    assert len(found) == 2 + 2 + 2  # colour (2), size (2), colour & size (2): nothing for the missing values
    assert [s.q for s in found] == pytest.approx(_bh_by_definition([s.p for s in found]), abs=1e-12)


def test_a_missing_value_as_pandas_writes_it_is_no_slice():
    """A field given as pandas' own string Series (None read back as NaN) still makes no "nan" slice."""
    items, out = _third()
    colour = pd.Series([m.get("colour") for m in items["meta"]])
    assert colour.isna().sum() == 20 and not any(v is None for v in colour)  # NaN, not None
    found = find_slices(items, out, fields={"colour": colour}, min_groups=1)
    assert sorted(s.value for s in found) == ["blue", "red"]


def test_item_stratum_and_slice_fields_say_none_where_a_value_is_missing():
    items, _ = _third()
    items["variant"] = ["x" if g < 5 else "y" if g < 10 else "" for g in range(30)]
    assert item_stratum(items, "colour").tolist() == ["blue", "red"] * 5 + [None] * 20
    fields = slice_fields(items)
    assert fields["colour"].tolist() == ["blue", "red"] * 5 + [None] * 20
    assert fields["variant"].tolist() == ["x"] * 5 + ["y"] * 5 + [None] * 20


def test_frameevidence_store_has_no_phantom_slices(demo_db):
    """The audit's case: on the FrameEvidence demo store, fields that only FQ2 items carry (mss_size,
    deleted_position, ...) made a "nan" slice each, and depth-2 pairs such as "add & nan", which enlarged BH's
    family and shifted every q. Every slice value is now one that some item of the split holds."""
    from db.frames import load_for_scoring
    from db.store import Store

    store = Store(demo_db)
    try:
        items, runs = load_for_scoring(store, "frameevidence", names=["synth-fe-frameaware"])
    finally:
        store.close()
    _, found = slices_of_run(items, runs["synth-fe-frameaware"], depth=2)
    test = items[items["split"] == "test"].reset_index(drop=True)
    fields = slice_fields(test)
    held = {name: set(v.dropna()) for name, v in fields.items()}
    assert "mss_size" in held and fields["mss_size"].isna().any()  # a field some items lack
    assert found and all(v in held[f] for s in found for f, v in zip(s.fields, s.values, strict=True))
    for name in ("mss_size", "deleted_position", "added_position"):
        assert sum(s.n_items for s in found if s.fields == (name,)) <= fields[name].notna().sum()
    assert [s.q for s in found] == pytest.approx(_bh_by_definition([s.p for s in found]), abs=1e-12)


def test_slices_of_one_split_are_computed_over_that_split_only(demo_db):
    """FrameEvidence's demo store has dev, test and train items: a slice of `test` and its rest hold the test
    items only, and a caller's extra field (a tag on every dev / train item and a third of the test groups) is
    narrowed to the split with them."""
    from db.frames import load_for_scoring
    from db.store import Store

    store = Store(demo_db)
    try:
        items, runs = load_for_scoring(store, "frameevidence", names=["synth-fe-frameaware"])
    finally:
        store.close()
    assert set(items["split"]) == {"dev", "test", "train"}
    test_groups = sorted(set(items.loc[items["split"] == "test", "group_id"]))
    tagged = set(test_groups[::3])
    tag = pd.Series(["tagged" if sp != "test" or g in tagged else None
                     for sp, g in zip(items["split"], items["group_id"], strict=True)], dtype=object)
    n_test = int((items["split"] == "test").sum())
    n_tagged = int(((items["split"] == "test") & items["group_id"].isin(tagged)).sum())
    for split in ("test", "dev"):
        label, found = slices_of_run(items, runs["synth-fe-frameaware"], split=split, min_groups=1,
                                     extra={"tag": tag})
        n_split = int((items["split"] == split).sum())
        assert label == split and found
        assert all(s.n_items + s.rest.n == n_split for s in found)  # FrameEvidence counts every item
        if split == "test":
            assert [s.n_items for s in found if s.fields == ("tag",)] == [n_tagged] and n_split == n_test


def _cli(*args: str, db: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "app.py"), *args, "--db", str(db)], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)


def test_cli_json_and_errors(demo_db):
    r = _cli("slices", "--run", "synth-sb-binder-weak", "--json", db=demo_db)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    first = doc["slices"][0]
    assert set(first) >= {"field", "value", "n_items", "n_groups", "accuracy", "rest", "diff", "ci", "p", "q"}
    assert set(first["accuracy"]) == {"k", "n", "value"}
    assert first["ci"][0] <= first["diff"] <= first["ci"][1]
    assert [s["diff"] for s in doc["slices"]] == sorted(s["diff"] for s in doc["slices"])
    bad = _cli("slices", "--run", "synth-sb-binder-weak", "--by", "nope", db=demo_db)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "nope" in bad.stderr
    text = _cli("slices", "--run", "synth-sb-binder-weak", "--compare", "synth-sb-balanced-direct", db=demo_db)
    assert text.returncode == 0 and "synth-sb-binder-weak - synth-sb-balanced-direct" in text.stdout
