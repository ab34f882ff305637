"""The Data tab's handlers on a real store (no browser): validate writes nothing and enables Import only for a
good file; a refused import writes nothing and leaves the header alone; a good one imports and moves the
header; labels export re-imports unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.errors import CrosscheckError
from db.catalog import catalog_signature
from db.importers import import_items
from tests.conftest import fe_lines, write_benchmark
from ui import data as ud


@pytest.fixture
def fe(store, tmp_path):
    import_items(store, write_benchmark(tmp_path / "fe", fe_lines()), name="fe")
    return store


def _file(path: Path, lines: list[dict]) -> str:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("kind, visible", [
    ("items", (True, False, False, False)),
    ("predictions", (False, True, True, True)),
    ("labels", (False, True, False, False)),
])
def test_on_kind(kind, visible):
    out = ud.on_kind(kind)
    assert tuple(u["visible"] for u in out[:4]) == visible and out[4] == {"__type__": "update", "interactive": False}
    assert out[5] == ""


def test_validate_then_import_predictions(fe, tmp_path):
    bad = _file(tmp_path / "bad.jsonl", [{"item_id": "g1_0-cam", "response": "A"}, {"item_id": "nope", "response": "A"}])
    before = fe.counts()
    html, button = ud.on_validate(fe, "predictions", bad, "", "r1", "", "fe", "")
    assert "1 error: nothing will be written" in html and "nope" in html and button["interactive"] is False
    html, button, bench, runs, sig = ud.on_import(fe, "predictions", bad, "", "r1", "", "fe", "", [])
    assert "Import refused" in html and "data-ok='0'" in html and bench == runs == sig == {"__type__": "update"}
    assert fe.counts() == before
    good = _file(tmp_path / "good.jsonl", [{"item_id": "g1_0-cam", "response": "A"}])
    html, button = ud.on_validate(fe, "predictions", good, "", "r1", "", "fe", "")
    assert "Valid: press <b>Import</b>" in html and button["interactive"] is True and fe.counts() == before
    html, button, bench, runs, sig = ud.on_import(fe, "predictions", good, "", "r1", "", "fe", "", [])
    assert "Imported." in html and button["interactive"] is False
    assert bench["value"] == "fe" and runs["value"] == ["r1"] and sig == catalog_signature(fe)
    assert fe.counts()["predictions"] == before["predictions"] + 1
    with pytest.raises(CrosscheckError, match="name the run the file belongs to"):
        ud.on_validate(fe, "predictions", good, "", " ", "", "fe", "")
    with pytest.raises(CrosscheckError, match="choose a file to upload first"):
        ud.on_validate(fe, "items", None, "", "", "", None, "")


def test_labels_round_trip_and_export_errors(fe, tmp_path):
    ud.on_import(fe, "predictions", _file(tmp_path / "p.jsonl", [{"item_id": "g1_0-cam", "response": "A"}]), "",
                 "r1", "", "fe", "", [])
    with pytest.raises(CrosscheckError, match="has no stage labels yet"):
        ud.on_export(fe, "labels", "fe", "r1")
    labels = _file(tmp_path / "l.jsonl", [{"item_id": "g1_0-cam", "annotator": "ann", "S1": 1, "S2": 0}])
    html = ud.on_import(fe, "labels", labels, "", "r1", "", "fe", "", ["r1"])[0]
    assert "labels: 1, unchanged: 0" in html
    out = Path(ud.on_export(fe, "labels", "fe", "r1"))
    assert out.name == "r1_labels.jsonl"
    assert [json.loads(x) for x in out.read_text().splitlines()] == [
        {"item_id": "g1_0-cam", "rotation": 0, "repeat": 0, "annotator": "ann", "kind": "human", "S1": 1, "S2": 0}]
    assert "labels: 0, unchanged: 1" in ud.on_import(fe, "labels", str(out), "", "r1", "", "fe", "", ["r1"])[0]
    with pytest.raises(CrosscheckError, match="pick the run to export"):
        ud.on_export(fe, "metrics", "fe", None)
    assert ud.runs_of(fe, "fe")["value"] == "r1"
