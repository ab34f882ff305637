"""Baselines (000 §5, Table 10) and the engine's resume rules, with a tiny in-memory sink."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from core.errors import RunnerError
from core.runners.baselines import Baseline
from core.runners.engine import RunSettings, build_tasks, run
from core.schema import Prediction


class MemorySink:
    """The store methods runners use, in memory (unit tests only; end-to-end tests use db.store.Store)."""

    def __init__(self, items: pd.DataFrame, family: str = "frameevidence") -> None:
        self.items, self.family = items, family
        self.configs: dict[str, dict] = {}
        self.preds: dict[str, dict[tuple, Prediction]] = {}
        self.status: dict[str, str] = {}
        self.commits = 0

    def ensure_run(self, name, benchmark, config):
        if name in self.configs and self.configs[name] != config:
            raise ValueError("different config")
        self.configs[name] = config
        self.preds.setdefault(name, {})
        return 1

    def done_keys(self, run, statuses=("ok", "invalid")):
        return {k for k, p in self.preds[run].items() if p.status in statuses}

    def add_predictions(self, run, predictions):
        self.commits += 1
        for p in predictions:
            self.preds[run][(p.item_id, p.rotation, p.repeat)] = p

    def set_run_status(self, run, status):
        self.status[run] = status

    def items_frame(self, benchmark):
        return self.items

    def image_path(self, digest):
        return Path(f"/img/{digest}.png")

    def benchmark_family(self, benchmark):
        return self.family


def fq2_items() -> pd.DataFrame:
    """FQ2-shaped items: answer letters depend on (image count, insufficiency letter) in train."""
    rows = []
    spec = [  # (split, n_images, insufficient, answer)
        ("train", 2, "D", "D"), ("train", 2, "D", "D"), ("train", 3, "D", "A"), ("train", 4, "C", "B"),
        ("train", 4, "C", "B"), ("train", 4, "D", "A"), ("train", 3, "C", "C"), ("train", 3, "C", "C"),
        ("test", 2, "D", "D"), ("test", 4, "C", "B"), ("test", 3, "C", "A"), ("test", 5, "D", "C"),
    ]
    for i, (split, n, ins, ans) in enumerate(spec):
        rows.append({"item_id": f"i{i}", "group_id": f"g{i // 3}", "split": split, "kind": "FQ2", "variant": "mss",
                     "question": "第一张图中，物体在哪个方向？" + ("左" * (i % 3)),
                     "options": {"A": "前", "B": "后", "C": "左", "D": "无法判断"}, "letters": "ABCD",
                     "answer": ans, "n_images": n, "images": [f"h{i}-{k}" for k in range(n)],
                     "meta": {"insufficient_option": ins}, "stages": None})
    return pd.DataFrame(rows)


def _answers(name, items, rotation=0):
    b = Baseline(name, items, seed=1)
    s = RunSettings(benchmark="b", run="r", runner="baseline", model=name, rotations=rotation + 1)
    tasks = [t for t in build_tasks(items, s, "frameevidence", str) if t.rotation == rotation]
    return {t.view.item_id: b.answer(t) for t in tasks}


def test_majority_letter_ties_break_alphabetically():
    # train answers: D D A B B A C C -> A, B, C, D: 2, 2, 2, 2 -> tie -> A
    assert set(_answers("majority", fq2_items()).values()) == {"A"}


def test_count_rule_table10():
    # per image count: 2 -> D; 3 -> C (C C A); 4 -> B (B B A); unseen 5 -> the kind's majority A
    assert _answers("count", fq2_items()) == {"i8": "D", "i9": "B", "i10": "C", "i11": "A"}


def test_count_insufficiency_rule_and_rotation():
    # (2, D) -> D; (4, C) -> B; (3, C) -> C; (5, D) unseen -> A
    assert _answers("count-insufficiency", fq2_items()) == {"i8": "D", "i9": "B", "i10": "C", "i11": "A"}
    # under rotation 1 the insufficiency letter is read from the shown options (D -> A, C -> D): unseen -> A
    assert _answers("count-insufficiency", fq2_items(), rotation=1) == {"i8": "A", "i9": "A", "i10": "A", "i11": "A"}


def test_random_is_seeded_per_key_and_uniform():
    items = fq2_items()
    a, b = _answers("random", items), _answers("random", items)
    assert a == b
    big = pd.concat([items.assign(item_id=items["item_id"] + f"-{k}") for k in range(200)])
    counts = pd.Series(_answers("random", big)).value_counts()
    assert set(counts.index) == set("ABCD") and counts.min() > 120


def test_tfidf_fits_train_and_predicts_allowed_letters():
    items = fq2_items()
    out = _answers("tfidf", items)
    assert set(out) == {"i8", "i9", "i10", "i11"} and set(out.values()) <= set("ABCD")
    # deterministic: identical text gives an identical answer
    assert _answers("tfidf", items) == out


def test_baselines_need_train():
    items = fq2_items()
    with pytest.raises(RunnerError, match="train"):
        Baseline("majority", items[items["split"] == "test"], seed=0)


def test_engine_resume_and_summary():
    sink = MemorySink(fq2_items())
    s = RunSettings(benchmark="b", run="maj", runner="baseline", model="count", rotations=4, repeats=2,
                    progress=False)
    out = run(sink, s)
    assert out["status"] == "done" and out["sent"] == 32 and sink.status["maj"] == "done"
    p = sink.preds["maj"][("i9", 1, 0)]
    assert p.status == "ok" and p.shown is not None and p.answer is not None
    again = run(sink, RunSettings(benchmark="b", run="maj", runner="baseline", model="count", rotations=4, repeats=2,
                                  progress=False))
    assert again["sent"] == 0 and again["skipped"] == 32
    with pytest.raises(ValueError):
        run(sink, RunSettings(benchmark="b", run="maj", runner="baseline", model="majority", rotations=4,
                              repeats=2, progress=False))
