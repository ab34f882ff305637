"""Extraction-audit overrides as a layer over the imported predictions (issue 14.3, db/overrides.py): the stored
imported row never changes; scoring, Browse, the trace judge and export read the override through one view;
re-importing the identical file is a no-op; `--replace` keeps or marks stale each override and says so."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from conftest import fe_lines, run_cli, write_benchmark

BAD = "A or B"  # the FrameEvidence parser refuses two letters: invalid
ITEM = "g1_0-cam"  # gold A


def write_preds(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def pred_rows(first: dict | None = None) -> list[dict]:
    rows = [{"item_id": line["item_id"], "response": line["answer"]} for line in fe_lines()]
    rows[0] = {"item_id": ITEM, "response": BAD, **(first or {})}
    return rows


def imported_row(store, run: str = "r") -> tuple:
    """The row as stored by the import (not the read view)."""
    return store.conn.execute(
        "SELECT p.status, p.answer, p.shown, p.response FROM predictions p JOIN runs r ON r.id = p.run_id"
        " JOIN items i ON i.id = p.item_pk WHERE r.name = ? AND i.item_id = ?", (run, ITEM)).fetchone()


def reads(store, run: str = "r") -> dict[str, tuple]:
    """(status, answer) of ITEM as each reader sees it: scoring loader, export, Browse group and outcome reads."""
    from core.schema import STATUSES
    from db import frames, predictions
    from db.exporters import prediction_records

    _, runs = frames.load_for_scoring(store, "fe")
    sc = runs[run].preds.set_index("item_id").loc[ITEM]
    keys = store.item_keys(int(store.benchmark("fe")["id"]))
    pk = keys[ITEM][0]
    rid = store.run(run)["id"]
    grp = next(p for p in predictions.group_prediction_records(store, [rid], [pk])[rid] if p["item_id"] == ITEM)
    pks = [v[0] for v in keys.values()]
    cols = predictions.outcome_arrays(store, [rid], predictions.pk_rows(pks))[rid]  # the Browse list's read
    at = int(list(cols.row).index(pks.index(pk)))
    out = {"status": STATUSES[int(cols.status[at])], "answer": cols.answer[at]}
    exp = next(r for r in prediction_records(store, run) if r["item_id"] == ITEM)
    return {"scoring": (sc["status"], sc["answer"]), "browse": (grp["status"], grp["answer"]),
            "outcomes": (out["status"], out["answer"]), "export": (exp["status"], exp["answer"])}


def accuracy(store, run: str = "r") -> tuple[int, int]:
    from core.scoring import score_run
    from db import frames

    items, runs = frames.load_for_scoring(store, "fe")
    m = score_run(items, runs[run], [])["metrics"]["accuracy"]
    return m["k"], m["n"]


@pytest.fixture
def audited(tmp_path, store):
    from db.importers import import_items, import_predictions

    import_items(store, write_benchmark(tmp_path / "fe", fe_lines()), name="fe")
    path = write_preds(tmp_path / "p.jsonl", pred_rows())
    import_predictions(store, path, "r")
    return store, path


def test_override_is_a_layer_read_by_every_reader(audited):
    from db import overrides as dbo

    store, _ = audited
    before = imported_row(store)
    assert before[:2] == ("invalid", None)
    assert accuracy(store) == (11, 12)
    o = dbo.apply(store, "r", ITEM, method="manual", letter="A", by="ann")
    assert imported_row(store) == before  # the imported row is never written
    assert set(reads(store).values()) == {("ok", "A")}
    assert accuracy(store) == (12, 12)
    second = dbo.apply(store, "r", ITEM, method="manual", letter="B", by="bob")
    assert second["old_answer"] == "A"  # what it read before: the first override
    assert set(reads(store).values()) == {("ok", "B")}
    assert [x["state"] for x in dbo.overrides(store, "r")] == ["active", "superseded"]
    dbo.revert(store, second["id"], by="bob")
    assert set(reads(store).values()) == {("ok", "A")}  # back to the earlier active override
    dbo.revert(store, o["id"])
    assert set(reads(store).values()) == {("invalid", None)}
    assert accuracy(store) == (11, 12)
    assert [x["state"] for x in dbo.overrides(store, "r")] == ["reverted", "reverted"]
    assert imported_row(store) == before


def test_reimport_identical_file_after_override_is_a_no_op(audited):
    from db import overrides as dbo
    from db.importers import import_predictions

    store, path = audited
    dbo.apply(store, "r", ITEM, method="manual", letter="A")
    for replace in (False, True):
        res = import_predictions(store, path, "r", replace=replace)
        assert res.unchanged and res.rows == 0 and not res.report.issues
        assert set(reads(store).values()) == {("ok", "A")}
        assert [x["state"] for x in dbo.overrides(store, "r")] == ["active"]


@pytest.mark.parametrize("change,outcome,reads_as", [
    ({"trace": "looked at the first image"}, "kept", ("ok", "A")),  # same raw response: kept
    ({"response": "B or C"}, "stale", ("invalid", None)),  # another raw response: stale, reads as imported
    ({"response": "C"}, "stale", ("ok", "C")),
])
def test_replace_keeps_or_marks_stale_and_reports_each_override(change, outcome, reads_as, audited, tmp_path):
    from db import overrides as dbo
    from db.importers import import_predictions

    store, _ = audited
    o = dbo.apply(store, "r", ITEM, method="manual", letter="A")
    changed = write_preds(tmp_path / "p2.jsonl", pred_rows(change))
    res = import_predictions(store, changed, "r", replace=True)
    assert res.rows == 1
    [w] = res.report.warnings
    assert w.line == 1 and f"override #{o['id']}" in w.message and ITEM in w.message
    assert ("kept" if outcome == "kept" else "stale and inactive") in w.message
    assert res.report.counts[f"overrides_{outcome}"] == 1
    assert set(reads(store).values()) == {reads_as}
    [rec] = dbo.overrides(store, "r")
    assert rec["state"] == ("active" if outcome == "kept" else "stale")
    assert (rec["stale_reason"] is None) == (outcome == "kept")
    if outcome == "stale":  # putting the old response back does not silently revive it
        import_predictions(store, write_preds(tmp_path / "p3.jsonl", pred_rows()), "r", replace=True)
        assert dbo.overrides(store, "r")[0]["state"] == "stale"
        assert set(reads(store).values()) == {("invalid", None)}


def test_replace_via_cli_prints_what_happens_to_each_override(audited, tmp_path):
    from db import overrides as dbo

    store, _ = audited
    o = dbo.apply(store, "r", ITEM, method="parser:tag")  # still invalid, but an override all the same
    changed = write_preds(tmp_path / "p2.jsonl", pred_rows({"response": "D"}))
    proc = run_cli("import-predictions", str(changed), "--run", "r", "--replace", db=store.path)
    assert proc.returncode == 0, proc.stderr
    assert f"p2.jsonl:1: response: override #{o['id']}" in proc.stderr and "stale and inactive" in proc.stderr


def test_runner_rewrite_with_other_response_deactivates_override(audited):
    """A live run that rewrites a prediction (Store.add_predictions) with another raw response: the view no
    longer applies the override, and the history says stale."""
    from core.schema import Prediction
    from db import overrides as dbo

    store, _ = audited
    dbo.apply(store, "r", ITEM, method="manual", letter="A")
    store.add_predictions("r", [Prediction(item_id=ITEM, response="C", shown="C", answer="C", status="ok")])
    assert set(reads(store).values()) == {("ok", "C")}
    assert dbo.overrides(store, "r")[0]["state"] == "stale"


def test_migration_puts_back_rows_rewritten_in_place(tmp_path, audited):
    """A store from before the layer (migration 004 not applied; the override had rewritten the row): opening it
    restores the imported values and reads the override through the view."""
    from db.store import Store

    store, _ = audited
    db = store.path
    pk = store.item_keys(int(store.benchmark("fe")["id"]))[ITEM][0]
    store.close()
    conn = sqlite3.connect(db)
    conn.executescript("DROP VIEW predictions_effective; ALTER TABLE prediction_overrides DROP COLUMN response;"
                       " ALTER TABLE prediction_overrides DROP COLUMN stale;"
                       " ALTER TABLE prediction_overrides DROP COLUMN stale_reason;"
                       " DELETE FROM _migrations WHERE name = '004_override_layer';")
    conn.execute("INSERT INTO prediction_overrides (run_id, item_pk, rotation, repeat, method, old_status, new_status,"
                 " new_answer, new_shown, created) VALUES (1, ?, 0, 0, 'manual', 'invalid', 'ok', 'A', 'A', 'x')", (pk,))
    conn.execute("UPDATE predictions SET status = 'ok', answer = 'A', shown = 'A' WHERE item_pk = ?", (pk,))
    conn.commit()
    conn.close()
    s = Store(db)
    try:
        assert imported_row(s)[:3] == ("invalid", None, None)
        assert set(reads(s).values()) == {("ok", "A")}
    finally:
        s.close()


def test_retry_errors_leaves_an_overridden_api_error_alone(audited, tmp_path):
    """`run --retry-errors` asks the store which keys hold api_error through the same view as scoring: one the
    audit overrode is not sent again (so its override is never replaced behind the annotator's back)."""
    from db import overrides as dbo
    from db.importers import import_predictions

    store, _ = audited
    rows = pred_rows({"response": "", "status": "api_error", "error": "timeout"})
    import_predictions(store, write_preds(tmp_path / "e.jsonl", rows), "e")
    assert store.done_keys("e", statuses=("api_error",)) == {(ITEM, 0, 0)}
    dbo.apply(store, "e", ITEM, method="manual", letter="A", by="ann")
    assert store.done_keys("e", statuses=("api_error",)) == set()
    assert (ITEM, 0, 0) in store.done_keys("e", statuses=("ok",))
    assert imported_row(store, "e")[0] == "api_error"  # the imported row itself is unchanged


def test_replace_marks_the_run_updated(audited, tmp_path):
    """Caches keyed on a run's version (revision, updated), the Metrics tab's and Browse's, see a --replace import
    that changed rows but not their number."""
    from db.importers import import_predictions

    store, _ = audited
    with store.write() as conn:
        conn.execute("UPDATE runs SET updated = '2000-01-01T00:00:00+00:00' WHERE name = 'r'")
    import_predictions(store, write_preds(tmp_path / "p2.jsonl", pred_rows({"response": "C"})), "r", replace=True)
    assert store.run("r")["updated"] != "2000-01-01T00:00:00+00:00"


def test_two_overrides_in_one_second_each_change_the_runs_version(audited):
    """The Metrics tab's and Browse's caches key on db.browse.run_versions: an override and its revert leave the
    prediction count as it was, and `updated` holds whole seconds, so each change moves the run's revision on
    (here `updated` is pinned to one value, as two clicks within one second leave it) and the cached scores
    follow every click."""
    from db import overrides as dbo
    from db.browse import run_versions
    from ui.scores import ScoreCache

    store, _ = audited
    pinned = "2026-01-01T00:00:00+00:00"

    def pin() -> None:
        with store.write() as conn:
            conn.execute("UPDATE runs SET updated = ? WHERE name = 'r'", (pinned,))

    cache = ScoreCache()

    def acc() -> tuple[int, int]:
        m = cache.scores(store, "fe", ["r"])["r"]["metrics"]["accuracy"]
        return m["k"], m["n"]

    pin()
    seen = [run_versions(store, ["r"])["r"]]
    assert acc() == (11, 12)
    o = dbo.apply(store, "r", ITEM, method="manual", letter="A")
    pin()
    seen.append(run_versions(store, ["r"])["r"])
    assert acc() == (12, 12)
    dbo.revert(store, o["id"])
    pin()
    seen.append(run_versions(store, ["r"])["r"])
    assert acc() == (11, 12)
    assert len(set(seen)) == 3 and cache.computed == 3
