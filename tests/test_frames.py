"""db.frames (the bulk loader that scoring uses) returns the same frames as the Store's own readers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from db.frames import (
    ITEM_COLUMNS,
    PRED_COLUMNS,
    SCORING_COLUMNS,
    SCORING_ITEM_COLUMNS,
    load_benchmark_runs,
    load_for_scoring,
    scoring_item_columns,
)
from db.store import Store


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert list(a.columns) == list(b.columns)
    assert list(a.dtypes) == list(b.dtypes)
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True), check_dtype=True)


@pytest.mark.parametrize("columns, item_columns", [(PRED_COLUMNS, ITEM_COLUMNS), (SCORING_COLUMNS, ITEM_COLUMNS),
                                                   (SCORING_COLUMNS, SCORING_ITEM_COLUMNS)])
def test_bulk_frames_equal_the_store_frames(demo_db, columns, item_columns):
    store = Store(demo_db)
    try:
        seen = 0
        for b in store.benchmarks():
            wanted = item_columns
            if item_columns == SCORING_ITEM_COLUMNS:
                items, runs = load_for_scoring(store, b["name"])
                # FrameEvidence also reads its image hashes (the exact-image / union bootstrap clusterings)
                wanted = scoring_item_columns(b["family"])
            else:
                items, runs = load_benchmark_runs(store, b["name"], columns, item_columns=item_columns)
            assert list(items.columns) == list(wanted)
            _same(items, store.items_frame(b["name"])[list(wanted)])
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


@pytest.mark.parametrize("columns", [PRED_COLUMNS, SCORING_COLUMNS])
def test_bulk_frames_with_mixed_columns(store, tmp_path, columns):
    """A run whose input modes, traces, errors, tokens and statuses vary row by row reads back the same either
    way (SCORING_COLUMNS: the packed read, checked to be the path taken)."""
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
    items, runs = load_benchmark_runs(store, "fe", columns)
    want = store.run_data("mixed").preds
    _same(runs["mixed"].preds, want[list(runs["mixed"].preds.columns)])
    assert set(runs["mixed"].preds["status"]) == {"ok", "invalid", "api_error"}
    assert runs["mixed"].preds["tokens"].isna().any() and runs["mixed"].preds["trace"].notna().any()
    if columns == SCORING_COLUMNS:
        from db.frames import _runs
        from db.predictions import _packed_frame

        run_id = next(r[0] for r in _runs(store, "fe") if r[1] == "mixed")
        pks = store.conn.execute("SELECT id FROM items ORDER BY id").fetchall()
        lookup = np.full(max(p for (p,) in pks) + 1, -1, dtype=np.int64)
        lookup[[p for (p,) in pks]] = np.arange(len(pks))
        packed = _packed_frame(store, run_id, (lookup, items["item_id"].to_numpy(dtype=object)),
                               list(runs["mixed"].preds.columns), None)
        assert packed is not None
        _same(packed, want[list(packed.columns)])


def test_packed_read_tells_a_missing_token_count_from_minus_one(store, tmp_path):
    """The packed read marks a missing token count as -1: a run with a real count of -1 (or below) reads which
    counts are missing apart, so both reads give the same tokens (NaN only where the count is NULL)."""
    import json

    from db.importers import import_items, import_predictions
    from db.predictions import _packed_frame
    from tests.conftest import fe_lines, write_benchmark

    lines = fe_lines(2, 2)
    import_items(store, write_benchmark(tmp_path / "fe", lines, "fe.jsonl"), name="fe")
    for run, counts in (("plain", [5, None, 0, 7]), ("negative", [2, None, 6, 1])):
        rows = [{"item_id": ln["item_id"], "response": "A", "tokens": counts[i % 4]} for i, ln in enumerate(lines)]
        path = tmp_path / f"{run}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        import_predictions(store, path, run)
    store.conn.execute("UPDATE predictions SET tokens = tokens - 3 WHERE tokens IS NOT NULL AND run_id ="
                       " (SELECT id FROM runs WHERE name = 'negative')")  # -1, NULL, 3, -2 (the import refuses counts < 0)
    store.conn.commit()
    items, runs = load_for_scoring(store, "fe", traces=False)
    pks = store.conn.execute("SELECT id FROM items ORDER BY id").fetchall()
    lookup = np.full(max(p for (p,) in pks) + 1, -1, dtype=np.int64)
    lookup[[p for (p,) in pks]] = np.arange(len(pks))
    for run in ("plain", "negative"):
        want = store.run_data(run).preds
        run_id = store.run(run)["id"]
        packed = _packed_frame(store, run_id, (lookup, items["item_id"].to_numpy(dtype=object)), ["item_id", "tokens"],
                               None)
        assert packed is not None
        _same(packed, want[["item_id", "tokens"]])
        _same(runs[run].preds[["item_id", "tokens"]], want[["item_id", "tokens"]])
    tokens = runs["negative"].preds["tokens"]
    assert tokens.isna().any() and (tokens == -1).any() and (tokens == -2).any()


def test_bulk_scoring_equals_scoring_each_run_from_store_frames(demo_db):
    """score_all over the bulk loader's scoring frames (the columns metrics read, item rows known, shared work and
    draws) gives, for every run
    of each demo benchmark, exactly what score_run gives from the Store's own frames."""
    import json

    from core.scoring import score_all, score_run

    store = Store(demo_db)
    try:
        for b in store.benchmarks():
            items, runs = load_for_scoring(store, b["name"])
            together = score_all(items, runs)
            plain_items = store.items_frame(b["name"])
            plain = {name: store.run_data(name) for name in runs}
            for name in runs:
                alone = score_run(plain_items, plain[name], [r for n, r in plain.items() if n != name])
                assert json.dumps(together[name], sort_keys=True) == json.dumps(alone, sort_keys=True), name
    finally:
        store.close()


def test_scoring_without_the_trace_texts_gives_the_same_scores(demo_db):
    """load_for_scoring(traces=False), what score --all and the Metrics tab read (no labels), leaves the trace
    texts out and scores every demo run exactly as the read with them does."""
    import json

    from core.scoring import score_all
    from db.frames import score_extras

    store = Store(demo_db)
    try:
        for b in store.benchmarks():
            items, runs = load_for_scoring(store, b["name"], traces=False)
            _, full = load_for_scoring(store, b["name"])
            assert all("trace" not in r.preds for r in runs.values())
            assert all("trace" in r.preds for r in full.values())
            extras = {n: score_extras(store, n, r.family) for n, r in runs.items()}
            assert (json.dumps(score_all(items, runs, per_run=extras), sort_keys=True)
                    == json.dumps(score_all(items, full, per_run=extras), sort_keys=True)), b["name"]
    finally:
        store.close()


def test_score_benchmarks_on_worker_processes_equals_score_each_run(demo_db):
    """db.bulk splits runs into units (StemBind / FrameEvidence by model) over worker processes (the weight
    threshold lowered: the demo store is light); every result
    equals what `score --run NAME --json` computes with all of the benchmark's runs at hand."""
    import json

    from core.scoring import score_all
    from db.bulk import score_benchmarks, units
    from db.frames import score_extras

    store = Store(demo_db)
    try:
        work = units(store)
        assert {b["name"] for b in store.benchmarks()} == {bench for bench, _, _ in work}
        assert len(work) > len(store.benchmarks())  # at least one benchmark splits by model
        fanned = score_benchmarks(store, jobs=2, min_weight=0)
        here = score_benchmarks(store, jobs=1)
        assert json.dumps(fanned, sort_keys=True) == json.dumps(here, sort_keys=True)
        for b in store.benchmarks():
            items, runs = load_benchmark_runs(store, b["name"], SCORING_COLUMNS)
            assert list(fanned[b["name"]]) == list(runs)
            for name, run in runs.items():
                alone = score_all(items, runs, names=[name], per_run={name: score_extras(store, name, run.family)})[name]
                assert json.dumps(fanned[b["name"]][name], sort_keys=True) == json.dumps(alone, sort_keys=True)
    finally:
        store.close()


def test_scoring_a_batch_at_a_time_equals_scoring_every_run_together(demo_db):
    """score --all loads and scores a batch of whole units at a time (memory bounded by the batch, issue 27):
    batches of one unit give exactly what one batch of every run gives, run for run."""
    import json

    from db.bulk import batches, score_units, units

    store = Store(demo_db)
    try:
        work = units(store)
        assert len(batches(work, 1)) == len(work) > len(batches(work, 10**6)) == len(store.benchmarks())
        one_by_one = score_units(store, work, batch_runs=1)
        together = score_units(store, work, batch_runs=10**6)
        assert sum(map(len, together.values())) == sum(len(names) for _, names, _ in work)
        assert json.dumps(one_by_one, sort_keys=True) == json.dumps(together, sort_keys=True)
    finally:
        store.close()


def test_score_all_keeps_light_work_in_its_own_process(demo_db, monkeypatch):
    """score --all starts no worker for units lighter than ALL_MIN_WEIGHT (the demo store): the workers' start
    would cost more than they save."""
    import db.bulk as bulk

    def no_pool(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("scoring workers were started")

    monkeypatch.setattr(bulk, "ScoringPool", no_pool)
    store = Store(demo_db)
    try:
        assert sum(w for _, _, w in bulk.units(store)) < bulk.ALL_MIN_WEIGHT
        scored = bulk.score_benchmarks(store, jobs=2)
        assert sum(map(len, scored.values())) == len(store.runs(with_counts=False))
    finally:
        store.close()


def test_score_benchmarks_refuses_an_unknown_benchmark(demo_db):
    from db.bulk import score_benchmarks

    store = Store(demo_db)
    try:
        with pytest.raises(Exception, match="no-such-benchmark"):
            score_benchmarks(store, ["no-such-benchmark"], jobs=2)
    finally:
        store.close()


def test_score_benchmarks_reports_a_failing_worker(demo_db, tmp_path):
    """A worker that fails makes the whole call fail with its error (never a partial result): here a prediction
    of one run names an item its benchmark lacks (written with the foreign-key checks off), which the worker
    scoring that run's unit refuses."""
    import sqlite3

    from db.bulk import score_benchmarks
    from tests.helpers import copy_store

    path = copy_store(demo_db, tmp_path / "copy")
    raw = sqlite3.connect(path)
    run_id, pk = raw.execute("SELECT run_id, item_pk FROM predictions ORDER BY run_id LIMIT 1").fetchone()
    raw.execute("PRAGMA foreign_keys = OFF")
    raw.execute("UPDATE predictions SET item_pk = 999999 WHERE run_id = ? AND item_pk = ?", (run_id, pk))
    raw.commit()
    raw.close()
    store = Store(path)
    try:
        with pytest.raises(RuntimeError, match="scoring worker failed: ValueError: run id .*: a prediction's item "
                                               "is not among the benchmark's items"):
            score_benchmarks(store, jobs=2, min_weight=0)
    finally:
        store.close()


def test_cli_score_all_prints_one_json_line_per_run(demo_db, tmp_path):
    """`score --all --json` prints, per run, the same JSON as `score --run NAME --json`."""
    import json

    from tests.conftest import copy_store, run_cli

    db = copy_store(demo_db, tmp_path / "copy")
    store = Store(db)
    bench = next(b["name"] for b in store.benchmarks() if b["family"] == "stembind")
    names = [r["name"] for r in store.runs(bench, with_counts=False)]
    store.close()
    out = run_cli("score", "--all", "--benchmark", bench, "--jobs", "2", "--json", db=db, check=True).stdout
    lines = [json.loads(line) for line in out.splitlines()]
    assert [ln["run"] for ln in lines] == names
    for line in lines[:2]:
        one = json.loads(run_cli("score", "--run", line["run"], "--json", db=db, check=True).stdout)
        assert one == line
    bad = run_cli("score", "--all", "--compare", names[0], db=db)
    assert bad.returncode != 0 and "--all takes neither" in bad.stderr and "Traceback" not in bad.stderr
    bad = run_cli("score", db=db)
    assert bad.returncode != 0 and "--run NAME (or --all)" in bad.stderr


def test_outcome_arrays_equal_the_store_frames(demo_db):
    """The Browse list's columnar read (every run of a benchmark in one query) gives, per prediction, the item,
    the rotation-0 / repeat-0 flag, the status and the answer of Store.predictions_frame, in some order."""
    from core.schema import STATUSES
    from db.predictions import outcome_arrays, pk_rows

    store = Store(demo_db)
    try:
        seen = 0
        for b in store.benchmarks():
            keys = store.item_keys(int(b["id"]))
            pks = [v[0] for v in keys.values()]
            ids = list(keys)
            runs = store.runs(b["name"], with_counts=False)
            got = outcome_arrays(store, [r["id"] for r in runs], pk_rows(pks))
            for r in runs:
                cols = got[r["id"]]
                mine = sorted(zip([ids[i] for i in cols.row], cols.first.tolist(),
                                  [(STATUSES + ("other",))[int(c)] for c in cols.status], cols.answer.tolist(),
                                  strict=True), key=repr)
                ref = store.predictions_frame(r["name"])
                want = sorted(zip(ref["item_id"], ((ref["rotation"] == 0) & (ref["repeat"] == 0)).tolist(),
                                  ref["status"], ref["answer"], strict=True), key=repr)
                assert len(mine) == len(ref) and mine == want, r["name"]
                seen += 1
        assert seen == len(store.runs(with_counts=False))
        assert outcome_arrays(store, [], pk_rows(pks)) == {}
    finally:
        store.close()


def test_key_rows_finds_each_key_or_says_it_is_missing():
    """The rows of traces / input modes read apart from the packed columns: each key's row by binary search,
    and None (the caller reads the run row by row) for a key written after the packed read."""
    from db.packed import key_rows as _key_rows

    pk = np.array([3, 3, 5, 9, 9, 9], dtype=np.int64)
    rotation = np.array([0, 1, 0, 0, 0, 2], dtype=np.int64)
    repeat = np.array([0, 0, 0, 0, 1, 0], dtype=np.int64)
    found = _key_rows((pk, rotation, repeat), [np.array([9, 3, 9]), np.array([2, 1, 0]), np.array([0, 0, 1])])
    assert found is not None and found.tolist() == [5, 1, 4]
    assert _key_rows((pk, rotation, repeat), [np.array([4]), np.array([0]), np.array([0])]) is None  # not there
    assert _key_rows((pk, rotation, repeat), [np.array([9]), np.array([3]), np.array([0])]) is None  # past the end


def test_packed_read_of_values_holding_the_separator(store, tmp_path):
    """Traces come back from the packed read joined by U+001E; a trace holding that character makes the count
    differ and the run's traces are read by key instead: the frame equals the row path's either way."""
    import json

    from db.importers import import_items, import_predictions
    from tests.conftest import fe_lines, write_benchmark

    lines = fe_lines(2, 2)
    import_items(store, write_benchmark(tmp_path / "fe", lines, "fe.jsonl"), name="fe")
    for run, odd in (("plain", "step one, step two"), ("odd", "step one\x1estep two")):
        rows = [{"item_id": ln["item_id"], "response": "A", "trace": odd if i % 3 == 0 else ("" if i % 3 == 1 else None),
                 "input_mode": ("all", "text")[i % 2]} for i, ln in enumerate(lines)]
        path = tmp_path / f"{run}.jsonl"
        path.write_text("".join(json.dumps({k: v for k, v in r.items() if v is not None}) + "\n" for r in rows),
                        encoding="utf-8")
        import_predictions(store, path, run)
    _, runs = load_benchmark_runs(store, "fe", SCORING_COLUMNS)
    for run in ("plain", "odd"):
        want = store.run_data(run).preds
        _same(runs[run].preds, want[list(runs[run].preds.columns)])
    assert "step one\x1estep two" in set(runs["odd"].preds["trace"].dropna())


def test_packed_numbers_parse_integers_and_fall_back_to_floats():
    """Token counts come back from the packed read comma-joined: parsed as integers (the fast path) and as
    floats when a stored value is not an integer; either way float64, equal to the row path's values."""
    from db.packed import numbers as _numbers

    assert _numbers("3,0,-2,41").tolist() == [3.0, 0.0, -2.0, 41.0]
    assert _numbers("3,2.5,1e3").tolist() == [3.0, 2.5, 1000.0]
    assert _numbers("7").dtype == np.float64


def test_runs_cache_reads_again_exactly_the_runs_that_changed(demo_db, tmp_path):
    """A scoring worker keeps the runs it read (runs_cache) by version: an unchanged run is not read again (the
    same RunData comes back), and an override on one run, or a live run's new predictions on another, has
    exactly that run read again, with its new values; the frames equal a fresh load's throughout."""
    from core.schema import Prediction
    from db import overrides as dbo
    from tests.helpers import copy_store

    store = Store(copy_store(demo_db, tmp_path / "copy"))
    try:
        bench = "frameevidence"
        items_cache: dict = {}
        cache: dict = {}

        def load() -> dict:
            _, runs = load_for_scoring(store, bench, items_cache=items_cache, runs_cache=cache)
            _, fresh = load_for_scoring(store, bench)
            for name, run in runs.items():
                _same(run.preds, fresh[name].preds)
            return runs

        first = load()
        assert all(load()[n] is first[n] for n in first)  # nothing changed: nothing read again
        names = list(first)
        edited, grown = names[0], names[1]
        item = first[edited].preds["item_id"].iloc[0]
        letter = "B" if first[edited].preds["answer"].iloc[0] == "A" else "A"
        dbo.apply(store, edited, item, method="manual", letter=letter)
        preds = first[grown].preds
        store.add_predictions(grown, [Prediction(item_id=preds["item_id"].iloc[0], rotation=0, repeat=9,
                                                 response="A", answer="A", shown="A", status="ok")])
        third = load()
        assert [n for n in names if third[n] is not first[n]] == [edited, grown]
        assert third[edited].preds["answer"].iloc[0] == letter
        assert len(third[grown].preds) == len(preds) + 1
    finally:
        store.close()
