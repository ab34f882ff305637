"""Generic family: VLMEvalKit's Circular / Consistency over circular copies (docs/METRICS.md), hand-computed."""

from __future__ import annotations

import pandas as pd
import pytest

from core.families.generic.metrics import circular_copies
from tests.helpers import by_key, family_score

OPTS = {"A": "cat", "B": "dog", "C": "cow"}
# copy k shows the option originally at i at (i + k) mod 3: gold "cat" is A, B, C in copies 0, 1, 2
ROT = [OPTS, {"A": "cow", "B": "cat", "C": "dog"}, {"A": "dog", "B": "cow", "C": "cat"}]
GOLD = ["A", "B", "C"]


def frames(groups: list[list[str | None]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One circular group per entry; each entry lists the letter answered in each copy (None: invalid,
    "-": no prediction)."""
    items, preds = [], []
    for g, answers in enumerate(groups):
        for k, letter in enumerate(answers):
            item_id = f"{g + k * 1_000_000}"
            items.append({"item_id": item_id, "group_id": str(g), "meta": {"copy": k}, "options": ROT[k],
                          "answer": GOLD[k]})
            if letter != "-":
                preds.append({"item_id": item_id, "status": "ok" if letter else "invalid", "answer": letter,
                              "correct": letter == GOLD[k]})
    return pd.DataFrame(items), pd.DataFrame(preds, columns=["item_id", "status", "answer", "correct"])


@pytest.mark.parametrize("groups, circular, consistency, vanilla, mean", [
    ([["A", "B", "C"]], (1, 1), (1, 1), (1, 1), (3, 3)),  # right in every copy
    ([["B", "C", "A"]], (0, 1), (1, 1), (0, 1), (0, 3)),  # "dog" every time: consistent, never right
    ([["A", "A", "C"]], (0, 1), (0, 1), (1, 1), (2, 3)),  # copy 1 picks "cow": neither
    ([["A", None, "C"]], (0, 1), (0, 1), (1, 1), (2, 3)),  # an invalid copy breaks both
    ([["A", "-", "C"]], (0, 1), (0, 1), (1, 1), (2, 3)),  # a missing copy gives no credit
    ([["A", "B", "C"], ["B", "C", "A"], ["A", "A", "A"], ["C", "B", "C"]], (1, 4), (2, 4), (2, 4), (6, 12)),
])
def test_circular_copies(groups, circular, consistency, vanilla, mean):
    items, base = frames(groups)
    out = by_key(circular_copies(items, base))
    assert out is not None
    for key, (k, n) in (("circular", circular), ("consistency", consistency), ("vanilla", vanilla),
                        ("mean_rotation", mean)):
        assert (out[key].k, out[key].n) == (k, n), key
    assert out["drop"].value == pytest.approx(vanilla[0] / vanilla[1] - circular[0] / circular[1])


def test_no_circular_group_gives_none():
    items = pd.DataFrame([{"item_id": "a", "group_id": "g", "meta": {}, "options": OPTS, "answer": "A"},
                          {"item_id": "b", "group_id": "g", "meta": {"copy": 1}, "options": OPTS, "answer": "A"},
                          {"item_id": "c", "group_id": "h", "meta": {"copy": 0}, "options": OPTS, "answer": "A"}])
    assert circular_copies(items, pd.DataFrame(columns=["item_id", "status", "answer", "correct"])) is None


# VLMEvalKit's circular table reports circular accuracy per category and per l2-category (issue 25, point 5):
# (groups' answers, kinds, l2-categories, expected {category: (k, n)} per kind and per l2-category)
CATEGORY_CASES = {
    "two_kinds": ([["A", "B", "C"], ["A", "A", "C"], ["A", "B", "C"]], ["ocr", "ocr", "count"], None,
                  {"ocr": (1, 2), "count": (1, 1)}, None),
    "l2_beside_kind": ([["A", "B", "C"], ["B", "C", "A"], ["A", "B", "C"], ["A", "-", "C"]],
                       ["ocr", "ocr", "count", "count"], ["perception", "reasoning", "reasoning", "perception"],
                       {"ocr": (1, 2), "count": (1, 2)}, {"perception": (1, 2), "reasoning": (1, 2)}),
}


@pytest.mark.parametrize("case", sorted(CATEGORY_CASES))
def test_circular_per_category_over_copies(case):
    groups, kinds, l2, per_kind, per_l2 = CATEGORY_CASES[case]
    items, base = frames(groups)
    items["kind"] = [kinds[int(g)] for g in items["group_id"]]
    if l2 is not None:
        items["meta"] = [{**m, "l2-category": l2[int(g)]} for m, g in zip(items["meta"], items["group_id"], strict=True)]
    out = by_key(circular_copies(items, base))
    by = out["circular_by_category"]
    assert {c: (r.k, r.n) for c, r in by["kind"].items()} == per_kind
    assert ("l2-category" in by) == (per_l2 is not None)
    if per_l2 is not None:
        assert {c: (r.k, r.n) for c, r in by["l2-category"].items()} == per_l2
    assert sum(r.k for r in by["kind"].values()) == out["circular"].k  # the categories split the circular count


def test_circular_per_kind_over_rotations_in_score_json():
    """A run with rotations 0 and 1: per kind, the items right under both rotations (score --json's keys)."""
    from core.families.generic.metrics import score
    from core.schema import PRED_COLUMNS, RunData, to_jsonable

    items = pd.DataFrame([{"item_id": f"i{i}", "group_id": f"g{i}", "split": "test", "kind": "xy"[i % 2],
                           "variant": "", "question": "q", "options": {"A": "a", "B": "b"}, "letters": "AB",
                           "answer": "A", "n_images": 0, "images": [], "meta": {}, "stages": None} for i in range(4)])
    right = {("i0", 0), ("i0", 1), ("i1", 0), ("i1", 1), ("i2", 0), ("i3", 1)}
    preds = pd.DataFrame([{"item_id": f"i{i}", "rotation": r, "repeat": 0, "status": "ok",
                           "answer": "A" if (f"i{i}", r) in right else "B", "shown": None, "response": "",
                           "input_mode": "all", "trace": None, "tokens": float("nan"), "latency": None, "probs": None,
                           "error": None} for i in range(4) for r in (0, 1)], columns=list(PRED_COLUMNS))
    out = to_jsonable(family_score(score, items, RunData("r", "b", "generic", {}, preds), seed=None))
    by = out["circular_by_category"]["kind"]
    assert {c: (r["k"], r["n"]) for c, r in by.items()} == {"x": (1, 2), "y": (1, 2)}
    assert out["circular"]["k"] == 2 and "l2-category" not in out["circular_by_category"]


def test_two_copy_group_with_one_copy_predicted():
    """Two copies are a circular group (at least two items); the unpredicted copy gives no credit and breaks
    consistency. The run's only prediction is copy 0's."""
    items, base = frames([["A", "-"]])
    out = by_key(circular_copies(items, base))
    assert out is not None
    assert [(out[k].k, out[k].n) for k in ("circular", "consistency", "vanilla", "mean_rotation")] == [
        (0, 1), (0, 1), (1, 1), (1, 2)]
    assert out["circular_over"] == "copies"


def test_items_without_a_group_leave_the_circular_groups_whole():
    """An item with no group id (and no copy) is in no circular group; every real group still counts."""
    items, base = frames([["A", "B", "C"], ["B", "C", "A"]])
    lone = pd.DataFrame([{"item_id": "lone", "group_id": None, "meta": {}, "options": OPTS, "answer": "A"}])
    out = by_key(circular_copies(pd.concat([items, lone], ignore_index=True), base))
    assert (out["circular"].k, out["circular"].n) == (1, 2)
    assert (out["consistency"].k, out["consistency"].n) == (2, 2)


def test_l2_category_missing_on_some_groups_is_none():
    """docs/METRICS.md: `l2-category` is "(none)" for the circular units whose items do not carry it."""
    items, base = frames([["A", "B", "C"], ["A", "A", "C"]])
    items["kind"] = "ocr"
    items["meta"] = [{**m, "l2-category": "perception"} if g == "0" else m
                     for m, g in zip(items["meta"], items["group_id"], strict=True)]
    by = by_key(circular_copies(items, base))["circular_by_category"]
    assert {c: (r.k, r.n) for c, r in by["l2-category"].items()} == {"(none)": (0, 1), "perception": (1, 1)}


def test_drop_without_copy_0_items_gives_the_reason():
    """A circular group of copies 1 and 2 only: Circular stands, Vanilla (over copy-0 items) and Drop say why not."""
    items, base = frames([["A", "B", "C"]])
    out = by_key(circular_copies(items.iloc[1:], base.iloc[1:]))
    assert out is not None and (out["circular"].k, out["circular"].n) == (1, 1)
    assert out["vanilla"].reason == "no items to count"
    assert out["drop"].reason == "no copy-0 items"
