"""core.stats.ScoringContext: the scoring state is an object passed in, safe under threads (issue 17 point 5).

Two real stores (SQLite files under tmp_path, imported through db.importers) of two StemBind benchmarks of
the same shape (so their resample draws share cluster counts and their frames look alike) are scored from
several threads at once; each result must equal the one scored alone in the main thread.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from core import stats
from core.scoring import score_all, score_run
from db.frames import load_for_scoring
from db.importers import import_items, import_predictions
from db.store import Store

N_STEMS = 36
RUNS = [  # (name, config): direct / thinking pair with cap hits, a text-only partner and an SSA level
    ("direct", {"strategy": "direct", "input_mode": "all", "max_tokens": 100}),
    ("thinking", {"strategy": "thinking", "input_mode": "all", "max_tokens": 100}),
    ("text", {"strategy": "direct", "input_mode": "text", "max_tokens": 100}),
    ("h1", {"strategy": "direct", "input_mode": "all", "ssa_level": "H1", "max_tokens": 100}),
]


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _stembind_store(folder: Path, seed: int) -> Path:
    """N_STEMS stems of 2 P, 1 R and 1 F probes, and the runs of RUNS with seeded answers and token counts."""
    folder.mkdir()
    rng = np.random.default_rng(seed)
    items = []
    for s in range(N_STEMS):
        for j, kind in enumerate(["P", "P", "R", "F"]):
            item = {"benchmark": "stembind", "item_id": f"s{s}-{j}", "group_id": f"s{s}", "kind": kind,
                    "question": f"q{s}-{j}", "options": {c: c.lower() for c in "ABCD"},
                    "answer": "ABCD"[(s + j) % 4], "meta": {"operation": ("RI-Pos", "VP-Fold")[s % 2]}}
            if kind == "F":
                item["stages"] = {"S1": "scene", "S2": "rule", "S3": "bind", "S4": "answer"}
            items.append(item)
    store = Store(folder / "store.db")
    import_items(store, _jsonl(folder / "items.jsonl", items), name="sb")
    for name, config in RUNS:
        rows = []
        for item in items:
            right = rng.random() < 0.6
            letter = item["answer"] if right else "ABCD"[("ABCD".index(item["answer"]) + 1) % 4]
            rows.append({"item_id": item["item_id"], "response": f"<ANSWER>{letter}</ANSWER>",
                         "tokens": int(rng.integers(10, 130))})
        import_predictions(store, _jsonl(folder / f"{name}.jsonl", rows), name, model="m", config=config,
                           benchmark="sb")
    store.close()
    return folder / "store.db"


@pytest.fixture(scope="module")
def two_stores(tmp_path_factory) -> list[Path]:
    root = tmp_path_factory.mktemp("contexts")
    return [_stembind_store(root / "a", seed=1), _stembind_store(root / "b", seed=2)]


def _loaded(db: Path):
    """The StemBind benchmark's items and runs as scoring reads them."""
    store = Store(db)
    try:
        return load_for_scoring(store, "sb")
    finally:
        store.close()


def _score(db: Path, context: stats.ScoringContext | None = None) -> str:
    items, runs = _loaded(db)
    return json.dumps(score_all(items, runs, context=context), sort_keys=True)


def test_two_threads_scoring_two_stores_get_their_single_thread_results(two_stores):
    alone = [_score(db) for db in two_stores]
    assert alone[0] != alone[1]  # two different benchmarks: a shared cache would show
    assert '"ci"' in alone[0] and '"at_F_no_cap"' in alone[0]  # bootstraps and the cap-hit subsets ran
    jobs = two_stores * 3
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        together = list(pool.map(_score, jobs))
    assert together == alone * 3


def test_threads_sharing_one_context_take_turns_and_agree(two_stores):
    """One context per benchmark, as the UI keeps it: threads handed the same context score one at a time
    (the later ones find the first's work) and every result equals the fresh-context one."""
    alone = _score(two_stores[0])
    shared = stats.ScoringContext()
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(lambda _: _score(two_stores[0], shared), range(3)))
    assert results == [alone] * 3
    assert shared.memo  # the context kept the shared work
    shared.clear()
    assert not shared.memo


def test_a_context_is_seen_only_by_the_thread_that_activates_it():
    context = stats.ScoringContext()
    seen: list[object] = []
    with context.active():
        assert stats.current_context() is context
        worker = threading.Thread(target=lambda: seen.append(stats.current_context()))
        worker.start()
        worker.join()
    assert seen == [None]
    assert stats.current_context() is None


def test_score_run_uses_the_context_it_is_given(two_stores):
    items, runs = _loaded(two_stores[1])
    context = stats.ScoringContext()
    run = runs["direct"]
    others = [r for r in runs.values() if r is not run]
    first = score_run(items, run, others, context=context)
    assert context.memo  # item outcomes and partner frames stayed in the context
    assert score_run(items, run, others, context=context) == first == score_run(items, run, others)


def test_score_all_hands_every_run_to_the_family_prefetch_once(two_stores, monkeypatch):
    """The family declares its metrics' prefetch (its Family in the core.families registry), score_all calls it
    once with every run, and the metrics then find every resampled sum in the context: no resample stream is
    drawn after it (losing it from the family made score --all 2.5x slower, with equal numbers)."""
    import dataclasses
    import inspect

    from core import families
    from core.families.stembind import metrics

    package = families.get("stembind")
    assert inspect.unwrap(package.prefetch) is metrics.prefetch  # its member, loaded on first use
    calls: list[list[str]] = []
    streams = {"prefetch": 0, "after": 0}
    phase = ["before"]

    def spy(items, runs, seed):
        calls.append([r.name for r in runs])
        phase[0] = "prefetch"
        metrics.prefetch(items, runs, seed)
        phase[0] = "after"

    real_blocks = stats._index_blocks

    def counting_blocks(*args, **kwargs):
        if phase[0] in streams:
            streams[phase[0]] += 1
        return real_blocks(*args, **kwargs)

    spied, real_get = dataclasses.replace(package, prefetch=spy), families.get
    monkeypatch.setattr(families, "get", lambda name: spied if name == package.name else real_get(name))
    monkeypatch.setattr(stats, "_index_blocks", counting_blocks)
    items, runs = _loaded(two_stores[0])
    with_prefetch = score_all(items, runs)
    assert calls == [[name for name, _ in RUNS]]
    assert streams["prefetch"] > 0 and streams["after"] == 0, streams
    assert json.dumps(with_prefetch, sort_keys=True) == _score(two_stores[0])


def test_item_level_work_carried_to_a_fresh_context_gives_the_same_results(two_stores):
    """db.bulk.score_units scores a benchmark a batch of runs at a time, each batch in a fresh context that starts
    with the previous batch's item-level work (core.metrics.common.item_level): only the work of functions of the
    items frame alone is carried (never a run's), and a context starting with it scores every run as a fresh
    one does, without computing that work again."""
    from core.metrics.common import item_level
    from core.schema import RunData

    items, runs = _loaded(two_stores[0])
    first = stats.ScoringContext()
    alone = json.dumps(score_all(items, runs, names=["direct", "text"], context=first), sort_keys=True)
    kept = item_level(first.memo)
    names = {key[1] for key in kept}
    assert {"_item_info", "_stem_codes", "_outcome_base", "_has_split", "split_items"} <= names
    assert "_known_rows" not in names and "item_outcomes" not in names  # filled per run, or a run's
    assert not [key for key, (_, args, kw) in kept.items()
                if any(isinstance(v, RunData) for v in (*args, *kw.values()))]
    assert len(kept) < len(first.memo)
    later = stats.ScoringContext()
    later.memo.update(kept)
    rest = json.dumps(score_all(items, runs, names=["thinking", "h1"], context=later), sort_keys=True)
    assert item_level(later.memo).keys() == kept.keys()  # the carried work was found, none done again
    assert all(later.memo[key][0] is hit[0] for key, hit in kept.items())
    assert rest == json.dumps(score_all(items, runs, names=["thinking", "h1"]), sort_keys=True)
    assert alone == json.dumps(score_all(items, runs, names=["direct", "text"]), sort_keys=True)
