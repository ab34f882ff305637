"""The Audit tab's handlers on a real store (no browser): list the invalid parses, preview (nothing written),
apply a manual letter as an override (recorded with its author), revert it."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from core.errors import CrosscheckError
from db import overrides as dbo
from db.importers import import_items, import_predictions
from tests.conftest import fe_lines, write_benchmark
from ui import audit as ua

ITEM = "g1_0-cam"  # gold A


@pytest.fixture
def audited(tmp_path, store):
    import_items(store, write_benchmark(tmp_path / "fe", fe_lines()), name="fe")
    rows = [{"item_id": line["item_id"], "response": line["answer"]} for line in fe_lines()]
    rows[0] = {"item_id": ITEM, "response": "A or B"}  # two letters: invalid
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    import_predictions(store, path, "r")
    return store


def _status(store) -> tuple:
    return store.conn.execute(
        "SELECT p.status, p.answer FROM predictions_effective p JOIN items i ON i.id = p.item_pk"
        " WHERE i.item_id = ?", (ITEM,)).fetchone()


def test_list_preview_apply_revert(audited):
    store = audited
    upd = ua.on_bench(store, "fe", ["nope", "r"])
    assert upd["value"] == "r" and ("r", "r") in upd["choices"]
    listing, keys, history = ua.do_list(store, "r", "invalid")
    assert keys["choices"] == [f"{ITEM} · r0/rep0"] and keys["value"] == f"{ITEM} · r0/rep0"
    assert "A or B" in listing and "1 invalid" in listing and "no re-parse or manual answer" in history
    msg = ua.do_preview(store, "r", keys["value"], "manual", "A")
    assert "Preview" in msg and "nothing written yet" in msg and _status(store) == ("invalid", None)
    with pytest.raises(CrosscheckError, match="pick a run and a prediction first"):
        ua.do_apply(store, "r", None, "manual", "A", "invalid")
    res, listing, keys, history = ua.do_apply(store, "r", f"{ITEM} · r0/rep0", "manual", "A", "invalid",
                                              request=SimpleNamespace(username="carol"))
    assert "Applied" in res and "now <b>ok A</b>" in res and _status(store) == ("ok", "A")
    assert keys["choices"] == [] and "nothing to audit" in listing
    (o,) = dbo.overrides(store, "r")
    assert (o["by"], o["state"], o["method"]) == ("carol", "active", "manual") and "<b>active</b>" in history
    with pytest.raises(CrosscheckError, match="enter the id of an override"):
        ua.do_revert(store, "r", None, "invalid")
    res, listing, keys, history = ua.do_revert(store, "r", o["id"], "invalid")
    assert f"Reverted override #{o['id']}" in res and keys["choices"] == [f"{ITEM} · r0/rep0"]
    assert _status(store) == ("invalid", None) and "reverted" in history
    assert dbo.overrides(store, "r")[0]["state"] == "reverted"
