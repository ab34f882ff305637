"""score_run(..., compare=other) paired differences (this run minus the other) and score_all's shared work."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from bootstrap_ref import diff_interval

from core.errors import MetricUndefined
from core.families.protocol import ScoreOptions
from core.schema import PRED_COLUMNS, RunData
from core.scoring import compare_runs, score_all, score_run

# --------------------------------------------------------------------------- builders


def _items(family: str, rows: list[tuple[str, str, str]]) -> pd.DataFrame:
    """rows: (item_id, group_id, kind); gold A of options A / B."""
    return pd.DataFrame([{
        "item_id": iid, "group_id": gid, "split": "test", "kind": kind, "variant": "", "question": "q",
        "options": {"A": "a", "B": "b"}, "letters": "AB", "answer": "A", "n_images": 0, "images": [],
        "meta": {"operation": "RI-Pos"} if family == "stembind" else {}, "stages": None,
    } for iid, gid, kind in rows])


def _run(name: str, family: str, correct: dict[str, bool], benchmark: str = "b", **config) -> RunData:
    preds = pd.DataFrame([{
        "item_id": iid, "rotation": 0, "repeat": 0, "status": "ok", "answer": "A" if ok else "B", "shown": None,
        "response": "", "input_mode": "all", "trace": None, "tokens": float("nan"), "latency": None, "probs": None,
        "error": None} for iid, ok in correct.items()], columns=list(PRED_COLUMNS))
    return RunData(name, benchmark, family, {"model": name, **config}, preds)


def _stembind():
    rows = []
    for s in range(4):  # 4 stems x (2 P, 1 R, 1 F)
        rows += [(f"s{s}-P0", f"s{s}", "P"), (f"s{s}-P1", f"s{s}", "P"), (f"s{s}-R", f"s{s}", "R"),
                 (f"s{s}-F", f"s{s}", "F")]
    return _items("stembind", rows)


def _generic():
    return _items("generic", [(f"i{i}", f"g{i // 2}", "x") for i in range(8)])  # 4 groups of 2


def _spur():
    tasks = ["NP", "MP", "IL", "TA", "HI", "Qual", "Quant"]
    return _items("spur", [(f"f{f}-{t}", f"f{f}", t) for f in range(3) for t in tasks])


# --------------------------------------------------------------------------- identical runs: 0 with CI [0, 0]


@pytest.mark.parametrize(("family", "make", "keys"), [
    ("generic", _generic, ["accuracy", "group_exact_match"]),
    ("stembind", _stembind, ["p_accuracy", "r_accuracy", "f_accuracy", "binding_gap", "stem_coherent"]),
    ("spur", _spur, ["tasks.NP", "perception", "understanding", "reasoning", "overall"]),
])
def test_identical_runs_give_zero_with_zero_interval(family, make, keys):
    items = make()
    correct = {iid: i % 3 != 0 for i, iid in enumerate(items["item_id"])}
    if family == "stembind":  # stems s0, s1, s2 have every P and R right (binding gap defined); s0, s1 miss F
        correct = {iid: not iid.endswith("-F") or iid.startswith("s2") for iid in items["item_id"]}
        correct["s3-P0"] = False
    a, b = _run("a", family, correct), _run("b", family, correct)
    out = score_run(items, a, [b], compare=b)["metrics"]["compare"]
    assert out["other"] == "b"
    for key in keys:
        assert out[key]["value"] == 0.0, key
        assert out[key]["ci"] == [0.0, 0.0], key
        # n = groups that hold the metric's observations (the binding gap's stratum: 3 stems)
        assert out[key]["n"] == (3 if key == "binding_gap" else items["group_id"].nunique())


# --------------------------------------------------------------------------- k more correct


def test_generic_k_more_correct():
    items = _generic()
    base = dict.fromkeys(items["item_id"], False)
    other = _run("other", "generic", base)
    better = _run("this", "generic", base | {"i0": True, "i1": True, "i4": True})  # 3 more of 8; group g0 complete
    out = compare_runs(items, better, other)
    assert out["accuracy"].value == pytest.approx(3 / 8)
    assert out["accuracy"].n == 4
    assert out["group_exact_match"].value == pytest.approx(1 / 4)
    lo, hi = out["accuracy"].ci
    assert 0 <= lo <= 3 / 8 <= hi <= 1
    # groups g0..g3 resampled whole, this run 2, 0, 1, 0 of 2 right, the other none
    assert (lo, hi) == diff_interval([2, 0, 1, 0], [2, 2, 2, 2], [0, 0, 0, 0], [2, 2, 2, 2])
    # the other direction is the negative (this run minus the other, consistently)
    assert compare_runs(items, other, better)["accuracy"].value == pytest.approx(-3 / 8)


def test_stembind_k_more_correct_by_kind_and_stem_metrics():
    items = _stembind()
    ids = list(items["item_id"])
    other = _run("other", "stembind", {i: not i.endswith("-F") for i in ids})  # every P, R right; F all wrong
    this = _run("this", "stembind", {i: True for i in ids} | {"s0-F": False})  # 3 more F correct of 4
    out = compare_runs(items, this, other)
    assert out["p_accuracy"].value == 0.0 and out["r_accuracy"].value == 0.0
    assert out["f_accuracy"].value == pytest.approx(3 / 4)
    # binding gap: 1/4 F wrong among 4 P-and-R-correct stems vs 4/4 -> -3/4; stem_coherent 3/4 - 0
    assert out["binding_gap"].value == pytest.approx(1 / 4 - 1)
    assert out["stem_coherent"].value == pytest.approx(3 / 4)
    assert out["f_accuracy"].n == 4


def test_spur_one_more_correct_task():
    items = _spur()
    base = dict.fromkeys(items["item_id"], True)
    other = _run("other", "spur", base | {"f0-NP": False, "f1-NP": False})
    this = _run("this", "spur", base | {"f1-NP": False})
    out = compare_runs(items, this, other)
    assert out["tasks.NP"].value == pytest.approx(1 / 3)
    assert out["tasks.MP"].value == 0.0
    assert out["perception"].value == pytest.approx(1 / 9)
    assert out["overall"].value == pytest.approx(1 / 21)
    assert out["understanding"].ci == (0.0, 0.0)


def test_frameevidence_compare_is_this_minus_other(store, fe_bench):
    from db.frames import load_benchmark_runs
    from db.importers import import_items, import_predictions

    import_items(store, fe_bench, name="fe")
    items, _ = load_benchmark_runs(store, "fe")
    gold = dict(zip(items["item_id"], items["answer"], strict=True))
    wrong = {g: "C" if g != "C" else "A" for g in "ABCD"}
    first = next(iter(gold))
    for name, flip in (("a", {first}), ("b", set())):  # b answers one more item correctly than a
        path = fe_bench.parent / f"{name}.jsonl"
        path.write_text("".join(json.dumps({"item_id": i, "response": wrong[g] if i in flip else g}) + "\n"
                                for i, g in gold.items()), encoding="utf-8")
        import_predictions(store, path, name)
    _, runs = load_benchmark_runs(store, "fe")
    out = score_run(items, runs["b"], [runs["a"]], compare=runs["a"])["metrics"]["compare"]
    assert out["other"] == "a"
    assert out["accuracy"]["value"] == pytest.approx(1 / len(gold))
    assert out["accuracy"]["n"] == items["group_id"].nunique()
    assert out["accuracy"]["ci"][0] <= out["accuracy"]["value"] <= out["accuracy"]["ci"][1]
    # groups resampled whole: b right on every item, a wrong on `first` only
    group_of = dict(zip(items["item_id"], items["group_id"], strict=True))
    order = sorted(items["group_id"].unique())
    n = [float((items["group_id"] == g).sum()) for g in order]
    k_a = [size - (g == group_of[first]) for g, size in zip(order, n, strict=True)]
    assert tuple(out["accuracy"]["ci"]) == diff_interval(n, n, k_a, n)
    same = score_run(items, runs["a"], [runs["b"]], compare=runs["a"])["metrics"]["compare"]
    assert same["accuracy"] == {"value": 0.0, "n": items["group_id"].nunique(), "ci": [0.0, 0.0]}


def test_compare_needs_the_same_benchmark():
    items = _generic()
    a = _run("a", "generic", dict.fromkeys(items["item_id"], True))
    b = _run("b", "generic", dict.fromkeys(items["item_id"], True), benchmark="other-bench")
    with pytest.raises(MetricUndefined, match="same benchmark"):
        score_run(items, a, [], compare=b)


# --------------------------------------------------------------------------- score_all == score_run


@pytest.mark.parametrize(("family", "make"), [("generic", _generic), ("stembind", _stembind), ("spur", _spur)])
def test_score_all_equals_score_run(family, make):
    items = make()
    ids = list(items["item_id"])
    runs = {f"r{j}": _run(f"r{j}", family, {i: (n + j) % 3 != 0 for n, i in enumerate(ids)},
                          input_mode="text" if j == 2 else "all") for j in range(3)}
    together = score_all(items, runs, compare=runs["r0"])
    for name, run in runs.items():
        alone = score_run(items, run, [o for o in runs.values() if o is not run], compare=runs["r0"])
        assert json.dumps(together[name], sort_keys=True) == json.dumps(alone, sort_keys=True)


def test_split_narrows_items_for_families_without_a_split_argument():
    items = _generic()
    items.loc[items["group_id"] == "g3", "split"] = "dev"
    run = _run("r", "generic", dict.fromkeys(items["item_id"], True))
    assert score_run(items, run, [], options=ScoreOptions(split="test"))["metrics"]["accuracy"]["n"] == 6
    with pytest.raises(MetricUndefined, match="no items in split"):
        score_run(items, run, [], options=ScoreOptions(split="train"))


# --------------------------------------------------------------------------- one engine (issue 17)


@pytest.mark.parametrize(("family", "make", "metrics"), [
    ("generic", _generic, ["accuracy", "group_exact_match"]),
    ("stembind", _stembind, ["accuracy", "p_accuracy", "r_accuracy", "f_accuracy", "group_exact_match",
                             "binding_gap", "stem_coherent"]),
    ("spur", _spur, ["tasks.NP", "tasks.MP", "tasks.IL", "tasks.TA", "tasks.HI", "tasks.Qual", "tasks.Quant",
                     "perception", "understanding", "reasoning", "overall", "group_exact_match"]),
])
def test_score_compare_and_the_compare_tab_read_one_engine(family, make, metrics):
    """core.comparison.compare gives the Compare tab's this / other / difference; score --compare prints the
    same differences; swapping the runs flips every sign (this − other)."""
    from core import comparison
    from ui.compare import differences_html

    items = make()
    ids = list(items["item_id"])
    this = _run("this", family, {i: n % 2 == 0 for n, i in enumerate(ids)})
    other = _run("other", family, {i: n % 3 == 0 for n, i in enumerate(ids)})
    res = comparison.compare(items, this, other, draws=500)
    assert list(res["metrics"]) == metrics
    flat = compare_runs(items, this, other, draws=500)
    back = comparison.compare(items, other, this, draws=500)["metrics"]
    for m, e in res["metrics"].items():
        assert flat[m] == e["difference"], m
        if e["difference"].value is not None:
            assert e["difference"].value == pytest.approx(e["this"].value - e["other"].value), m
            assert back[m]["difference"].value == pytest.approx(-e["difference"].value), m
    acc = res["metrics"]["overall" if family == "spur" else "accuracy"]["difference"]
    html = differences_html({"comparison": res, "differences": res["metrics"], "clusters": "groups"}, 500)
    assert f"{acc.value * 100:+.1f} pts" in html and "B − A (this − other)" in html


TURNOVER_CASES = [
    # correct a, correct b,                    both, newly correct, newly incorrect, both wrong, net
    ([1, 1, 0, 0, 1], [1, 0, 1, 0, 1], 2, 1, 1, 1, 0),
    ([0, 0, 0], [1, 1, 0], 0, 2, 0, 1, 2),
    ([1, 1, 1, 1], [0, 0, 0, 1], 1, 0, 3, 0, -3),
]


@pytest.mark.parametrize(("ca", "cb", "both", "gained", "lost", "neither", "net"), TURNOVER_CASES)
def test_turnover_counts_table(ca, cb, both, gained, lost, neither, net):
    from core.comparison import turnover_counts

    t = turnover_counts([bool(x) for x in ca], [bool(x) for x in cb])
    assert (t["both_correct"].k, t["newly_correct"].k, t["newly_incorrect"].k, t["both_wrong"].k) == (
        both, gained, lost, neither)
    assert t["net"] == net and t["both_correct"].n == len(ca)
    assert t["change"].value == pytest.approx((sum(cb) - sum(ca)) / len(ca))


def test_turnover_counts_the_items_both_runs_answered():
    """Generic / StemBind / SPUR: an item one run did not answer is left out (UNANSWERED_IS_WRONG False)."""
    from core.comparison import turnover

    items = _generic()
    a = _run("a", "generic", {"i0": True, "i1": False, "i2": True, "i3": False})
    b = _run("b", "generic", {"i0": False, "i1": True, "i2": True, "i5": True})  # i3 / i5 answered once
    t = turnover(items, a, b)
    assert t["both_correct"].n == 3
    assert (t["both_correct"].k, t["newly_correct"].k, t["newly_incorrect"].k, t["net"]) == (1, 1, 1, 0)


# --------------------------------------------------------------------------- cross-run disagreement (000 App. A)


def _lettered(name: str, family: str, letters: dict[str, str | None]) -> RunData:
    """A run answering each item with the letter given (None: an invalid response)."""
    preds = pd.DataFrame([{
        "item_id": iid, "rotation": 0, "repeat": 0, "status": "ok" if x else "invalid", "answer": x, "shown": x,
        "response": "", "input_mode": "all", "trace": None, "tokens": float("nan"), "latency": None, "probs": None,
        "error": None} for iid, x in letters.items()], columns=list(PRED_COLUMNS))
    return RunData(name, "b", family, {"model": name}, preds)


def _paper_items(n_items: int, n_groups: int) -> pd.DataFrame:
    return _items("generic", [(f"i{i}", f"g{i % n_groups:02d}", "x") for i in range(n_items)])


# (items, groups, this run's letters, the other's, expected k, n, expected interval or None)
DISAGREEMENT_CASES = {
    # 000 App. A: "Their answer letters differ on 136 items (47.22%)" of 288
    "paper_136_of_288": (288, 12, lambda i: "A", lambda i: "B" if i < 136 else "A", 136, 288, None),
    # every group holds one differing item of two: every draw gives 1/2, the interval is [0.5, 0.5]
    "same_share_in_every_group": (8, 4, lambda i: "A", lambda i: "B" if i < 4 else "A", 4, 8, (0.5, 0.5)),
    # all disagreement in one of two equal groups: draws give 0, 1/2 or 1 -> [0, 1]
    "one_group_disagrees": (8, 2, lambda i: "A", lambda i: "B" if i % 2 == 0 else "A", 4, 8, (0.0, 1.0)),
    # an invalid response never agrees, not even with another invalid one (turnover's changed_answers)
    "invalid_differs": (4, 2, lambda i: None if i == 0 else "A", lambda i: None if i < 2 else "A", 2, 4, None),
    "identical_runs": (6, 3, lambda i: "AB"[i % 2], lambda i: "AB"[i % 2], 0, 6, (0.0, 0.0)),
}


@pytest.mark.parametrize("case", sorted(DISAGREEMENT_CASES))
def test_cross_run_disagreement_table(case):
    from core.comparison import disagreement

    n_items, n_groups, this_l, other_l, k, n, ci = DISAGREEMENT_CASES[case]
    items = _paper_items(n_items, n_groups)
    ids = list(items["item_id"])
    this = _lettered("this", "generic", {iid: this_l(i) for i, iid in enumerate(ids)})
    other = _lettered("other", "generic", {iid: other_l(i) for i, iid in enumerate(ids)})
    rate = disagreement(items, this, other, draws=2000)
    assert (rate.k, rate.n) == (k, n)
    assert rate.value == pytest.approx(k / n)
    lo, hi = rate.ci
    assert lo <= rate.value <= hi
    if ci is not None:
        assert (lo, hi) == pytest.approx(ci)
    assert disagreement(items, other, this, draws=2000).ci == rate.ci  # symmetric


def test_disagreement_is_in_score_compare_and_follows_the_clustering():
    """score --compare carries the rate; a coarser clustering (one cluster) gives the degenerate interval."""
    from core import stats
    from core.comparison import disagreement

    items = _paper_items(8, 4)
    items["images"] = [["h-shared"] for _ in range(8)]  # every group shares an image: one image component
    ids = list(items["item_id"])
    this = _lettered("this", "generic", dict.fromkeys(ids, "A"))
    other = _lettered("other", "generic", {iid: "B" if i < 2 else "A" for i, iid in enumerate(ids)})
    out = score_run(items, this, [other], compare=other)["metrics"]["compare"]
    assert (out["disagreement"]["k"], out["disagreement"]["n"]) == (2, 8)
    grouped = disagreement(items, this, other, draws=2000)
    one = disagreement(items, this, other, draws=2000, clustering=stats.Clustering("image"))
    assert one.ci == pytest.approx((0.25, 0.25)) and grouped.ci[1] > 0.25
