"""db.frames (the bulk loader that scoring uses) returns the same frames as the Store's own readers."""

from __future__ import annotations

import pandas as pd
import pytest

from db.frames import PRED_COLUMNS, SCORING_COLUMNS, load_benchmark_runs
from db.store import Store


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert list(a.columns) == list(b.columns)
    assert list(a.dtypes) == list(b.dtypes)
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True), check_dtype=True)


@pytest.mark.parametrize("columns", [PRED_COLUMNS, SCORING_COLUMNS])
def test_bulk_frames_equal_the_store_frames(demo_db, columns):
    store = Store(demo_db)
    try:
        seen = 0
        for b in store.benchmarks():
            items, runs = load_benchmark_runs(store, b["name"], columns)
            _same(items, store.items_frame(b["name"]))
            for name, run in runs.items():
                want = store.run_data(name)
                assert (run.name, run.benchmark, run.family, run.config) == (
                    want.name, want.benchmark, want.family, want.config)
                _same(run.preds, want.preds[list(run.preds.columns)])
                assert list(run.preds.columns) == [c for c in PRED_COLUMNS if c in columns]
                seen += 1
        assert seen >= 10
    finally:
        store.close()


def test_bulk_frames_with_mixed_columns(store, tmp_path):
    """A run whose input modes, traces, errors and statuses vary row by row reads back the same either way."""
    import json

    from db.importers import import_items, import_predictions
    from tests.conftest import fe_lines, write_benchmark

    lines = fe_lines(2, 2)
    import_items(store, write_benchmark(tmp_path / "fe", lines, "fe.jsonl"), name="fe")
    rows = []
    for i, ln in enumerate(lines):
        rec = {"item_id": ln["item_id"], "response": "A" if i % 3 else "no idea", "input_mode": ("all", "text")[i % 2],
               "tokens": i if i % 4 else None}
        if i % 5 == 0:
            rec.update(status="api_error", response="", error="HTTP 503")
        if i % 2:
            rec["trace"] = f"thinking {i}"
        rows.append(rec)
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    import_predictions(store, path, "mixed")
    _, runs = load_benchmark_runs(store, "fe")
    _same(runs["mixed"].preds, store.run_data("mixed").preds)
    assert set(runs["mixed"].preds["status"]) == {"ok", "invalid", "api_error"}
