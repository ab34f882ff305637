"""db.catalog.catalog_signature: it changes exactly when what the pickers list changes."""

from __future__ import annotations

import json

from db.catalog import catalog_signature
from db.importers import import_items, import_predictions


def _preds(path, items):
    path.write_text("".join(json.dumps({"item_id": i, "response": "A"}) + "\n" for i in items))
    return path


def test_signature_follows_benchmarks_runs_and_statuses(store, fe_bench, tmp_path):
    seen = [catalog_signature(store)]

    def changed() -> bool:
        now = catalog_signature(store)
        fresh = now != seen[-1]
        seen.append(now)
        return fresh

    assert not changed()                                           # reading it twice: the same
    import_items(store, fe_bench)
    assert changed()                                               # a benchmark
    import_items(store, fe_bench)
    assert not changed()                                           # an identical re-import adds nothing
    import_predictions(store, _preds(tmp_path / "a.jsonl", ["g1_0-cam"]), "r1")
    assert changed()                                               # a run
    import_predictions(store, _preds(tmp_path / "b.jsonl", ["g1_0-obj"]), "r1")
    assert not changed()                                           # more predictions of a listed run: no
    store.set_run_status("r1", "cancelled")
    assert changed()                                               # a status (the resume list shows it)
    store.ensure_run("empty", "items", {})
    assert changed()                                               # a run without predictions yet
