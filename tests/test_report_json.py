"""core.report_json: a Table as the Metrics endpoint's JSON (pure). Values hand-written."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from core.report_json import cell_json, table_json
from core.report_tables import Cell, Row, Table


@pytest.mark.parametrize("cell,want", [
    # a rate with its interval: the fraction, k / n, [lo, hi], shown as percent
    (Cell({"value": 0.5416666, "k": 156, "n": 288, "ci": [0.48, 0.6]}, ("accuracy",), "a"),
     {"value": 0.5416666, "k": 156, "n": 288, "interval": [0.48, 0.6], "reason": None, "display": "54.2",
      "path": ["accuracy"], "run": "a"}),
    # a paired difference (no k): signed points, n clusters
    (Cell({"value": -0.0637, "n": 755, "ci": [-0.1, -0.028]}, ("compare", "accuracy"), "a", kind="diff"),
     {"value": -0.0637, "k": None, "n": 755, "interval": [-0.1, -0.028], "reason": None, "display": "-6.4"}),
    # undefined: no value, its reason
    (Cell({"value": None, "k": 0, "n": 0, "reason": "no FQ2 groups to count"}, ("nts",), "a"),
     {"value": None, "k": 0, "n": 0, "interval": None, "reason": "no FQ2 groups to count", "display": "n/a"}),
    # not computed for this run at all
    (Cell(None, ("ssa",), "a"), {"value": None, "interval": None, "reason": "not computed for this run",
                                 "display": "n/a"}),
    # a plain count and a text cell
    (Cell(120, ("tokens", "n"), "a"), {"value": 120, "k": None, "interval": None, "reason": None, "display": "120"}),
    (Cell("partner-run", None, "a", kind="text"), {"value": "partner-run", "path": None, "display": "partner-run"}),
    # NaN never reaches the JSON: null with a reason
    (Cell(math.nan, ("x",), "a"), {"value": None, "reason": "undefined", "display": "n/a"}),
    # numpy scalars (metric code's) become plain numbers: JSON encoders other than json's would write text
    (Cell({"value": np.float64(0.25), "k": np.int64(1), "n": np.int64(4), "ci": [np.float64(0.1), 0.5]}, ("a",), "a"),
     {"value": 0.25, "k": 1, "n": 4, "interval": [0.1, 0.5], "reason": None, "display": "25.0"}),
    # mean ± SD keeps its SD
    (Cell({"value": 0.5, "sd": 0.05}, ("seeds", "acc"), "a", kind="mean_sd"),
     {"value": 0.5, "sd": 0.05, "display": "50.0 ± 5.0"}),
])
def test_cell_json(cell, want):
    got = cell_json("Acc", cell)
    assert got["column"] == "Acc" and got["kind"] == cell.kind
    assert {k: got[k] for k in want} == want
    assert all(type(got[k]) in (int, float, str, list, type(None)) for k in ("value", "k", "n", "interval"))
    assert all(type(v) is float for v in got["interval"] or [])
    json.dumps(got, allow_nan=False)


def test_table_json_keeps_rows_labels_and_reasons():
    table = Table("fe_table4", "Table 4", ["Run"], ["Acc", "NTS"], [
        Row(["m"], [Cell({"value": 0.5, "k": 1, "n": 2}, ("accuracy",), "m"),
                    Cell({"value": None, "reason": "no FQ2 groups"}, ("nts",), "m")], "m", synthetic=True),
        Row(["Uniform random"], [Cell({"value": 0.25}), Cell({"value": 0.0625})], reference=True),
    ], note="a note")
    out = table_json(table)
    assert (out["key"], out["title"], out["index"], out["columns"], out["note"]) == (
        "fe_table4", "Table 4", ["Run"], ["Acc", "NTS"], "a note")
    assert [(r["labels"], r["run"], r["synthetic"], r["reference"]) for r in out["rows"]] == [
        (["m"], "m", True, False), (["Uniform random"], None, False, True)]
    assert [c["value"] for c in out["rows"][1]["cells"]] == [0.25, 0.0625]
    assert out["reasons"] == ["NTS: no FQ2 groups"]
