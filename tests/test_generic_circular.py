"""Generic family: VLMEvalKit's Circular / Consistency over circular copies (docs/METRICS.md), hand-computed."""

from __future__ import annotations

import pandas as pd
import pytest

from core.families.generic.metrics import circular_copies

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
    out = circular_copies(items, base)
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
