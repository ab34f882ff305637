"""The Data tab: dry-run validation (db/validate.py) writes nothing; a bad upload shows its error with the
line number in the real app and leaves the store unchanged; a good one imports after validation."""

from __future__ import annotations

import json

import pytest
from uiharness import browser, running_app

from db import validate
from db.importers import import_items


@pytest.fixture
def fe_store(store, fe_bench):
    import_items(store, fe_bench)
    return store


def _preds(tmp_path, lines, name="preds.jsonl"):
    f = tmp_path / name
    f.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return f


def test_dry_run_predictions_reports_counts_and_writes_nothing(fe_store, tmp_path):
    good = _preds(tmp_path, [{"item_id": "g1_0-cam", "response": "A"}, {"item_id": "g1_0-obj", "response": "B C"}])
    before = fe_store.counts()
    rep = validate.validate_predictions(fe_store, good, "r1")
    assert rep.ok and rep.counts["predictions"] == 2 and rep.counts["invalid"] == 1
    assert fe_store.counts() == before
    bad = _preds(tmp_path, [{"item_id": "g1_0-cam", "response": "A"}, {"item_id": "nope", "response": "A"}], "bad.jsonl")
    rep = validate.validate_predictions(fe_store, bad, "r1")
    assert [(i.line, i.field) for i in rep.errors] == [(2, "item_id")]
    assert fe_store.counts() == before


def test_dry_run_labels_and_items(fe_store, tmp_path, fe_bench):
    from db.importers import import_predictions

    import_predictions(fe_store, _preds(tmp_path, [{"item_id": "g1_0-cam", "response": "A"}]), "r1")
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"item_id": "g1_0-cam", "annotator": "ann", "S1": 1, "S2": 0}) + "\n"
                      + json.dumps({"item_id": "g1_0-cam", "annotator": "ann", "S1": 7}) + "\n")
    before = fe_store.counts()
    rep = validate.validate_labels(fe_store, labels, "r1")
    assert [(i.line, i.field) for i in rep.errors] == [(2, "S1")]
    assert fe_store.counts() == before
    labels.write_text(json.dumps({"item_id": "g1_0-cam", "annotator": "ann", "S1": 1, "S2": 0}) + "\n")
    rep = validate.validate_labels(fe_store, labels, "r1")
    assert rep.ok and rep.counts == {"labels": 1, "unchanged": 0} and fe_store.counts() == before
    rep = validate.validate_items(fe_store, fe_bench)
    assert rep.ok and any("exists" in w.message for w in rep.warnings)


@pytest.mark.browser
@pytest.mark.slow
def test_bad_upload_shows_error_and_store_unchanged(tmp_path, fe_bench):
    from db.store import Store

    db = tmp_path / "data.db"
    s = Store(db)
    import_items(s, fe_bench)
    before = s.counts()
    s.close()
    bad = _preds(tmp_path, [{"item_id": "g1_0-cam", "response": "A"}, {"item_id": "g1_0-obj", "rotation": 9,
                                                                       "response": "B"}], "bad_preds.jsonl")
    good = _preds(tmp_path, [{"item_id": "g1_0-cam", "response": "A"}], "good_preds.jsonl")
    with running_app(db) as url, browser() as b:
        page = b.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url)
        page.get_by_role("tab", name="Data").click()
        page.get_by_text("Predictions (JSONL or CSV) into a run").click()
        page.locator("#cc-data-run input, #cc-data-run textarea").first.fill("ui-import")
        page.locator("#cc-data-upload input[type=file]").set_input_files(str(bad))
        page.locator("#cc-data-uploaded[data-file='bad_preds.jsonl']").wait_for(timeout=60_000)
        page.locator("#cc-data-validate").click()
        verdict = page.locator("#cc-data-verdict[data-file='bad_preds.jsonl'][data-committed='0']")
        verdict.wait_for(timeout=30_000)
        assert verdict.get_attribute("data-ok") == "0"
        report = page.locator("#cc-data-report").inner_text()
        assert "rotation" in report and "2" in report  # the field and its line number
        assert page.locator("#cc-data-import").is_disabled()
        s = Store(db)
        assert s.counts() == before  # nothing written
        s.close()
        # a good file validates, then imports and the run appears
        page.locator("#cc-data-upload button[aria-label='Clear']").first.click()
        page.locator("#cc-data-upload input[type=file]").set_input_files(str(good))
        page.locator("#cc-data-uploaded[data-file='good_preds.jsonl']").wait_for(timeout=60_000)
        page.locator("#cc-data-validate").click()
        page.locator("#cc-data-verdict[data-ok='1'][data-file='good_preds.jsonl'][data-committed='0']").wait_for(
            timeout=30_000)
        page.locator("#cc-data-import").click()
        page.get_by_text("Imported.").wait_for(timeout=30_000)
    s = Store(db)
    assert s.run("ui-import")["n_predictions"] == 1
    s.close()
