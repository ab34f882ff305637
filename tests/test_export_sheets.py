"""Spreadsheets (#24): `export leaderboard` (a row per run, a column per headline metric with k, n and its
interval, percent with the unit in the header; CSV and xlsx hold the same values, equal to `score --json`'s),
the predictions export's question / gold / prediction / correct columns, and a Metrics table as HTML."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pandas as pd
import pytest
from conftest import ROOT, run_cli


def export_bytes(db, *args: str) -> bytes:
    proc = subprocess.run([sys.executable, str(ROOT / "app.py"), "export", *args, "--db", str(db)],
                          capture_output=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout


@pytest.fixture(scope="module")
def boards(demo_db) -> dict:
    csv = export_bytes(demo_db, "leaderboard", "--benchmark", "stembind")
    xlsx = export_bytes(demo_db, "leaderboard", "--benchmark", "stembind", "--format", "xlsx")
    return {"csv": pd.read_csv(io.BytesIO(csv)), "xlsx": pd.read_excel(io.BytesIO(xlsx), engine="openpyxl")}


def test_leaderboard_rows_are_runs_and_values_are_score_json_in_percent(boards, demo_db):
    from db.store import Store

    df = boards["csv"].set_index("Run")
    store = Store(demo_db)
    try:
        runs = store.runs("stembind", with_counts=False)
    finally:
        store.close()
    assert list(df.index) == [r["name"] for r in runs]
    assert df.loc[runs[0]["name"], "model"] == runs[0]["model"]
    name = "synth-sb-binder-weak"
    m = json.loads(run_cli("score", "--run", name, "--json", db=demo_db, check=True).stdout)["metrics"]
    f = m["f_accuracy"]
    row = df.loc[name]
    assert row["F (%)"] == pytest.approx(100 * f["value"]) and row["F_k"] == f["k"] and row["F_n"] == f["n"]
    assert (row["F_ci_low (%)"], row["F_ci_high (%)"]) == pytest.approx((100 * f["ci"][0], 100 * f["ci"][1]))
    assert row["split"] == "test"


def test_frameevidence_leaderboard_has_the_intervals_of_score_json(demo_db):
    """FrameEvidence's leaderboard (000 Table 4: P, R, F1, Acc, GEM, NTS, DIS) carries each metric's 95% interval
    as the other families' do (`_ci_low` / `_ci_high`, percent), equal to `score --all --json`'s for every run;
    the exact uniform-random reference row has none. CSV and xlsx alike."""
    board = pd.read_csv(io.BytesIO(export_bytes(demo_db, "leaderboard", "--benchmark", "frameevidence")))
    xlsx = export_bytes(demo_db, "leaderboard", "--benchmark", "frameevidence", "--format", "xlsx")
    pd.testing.assert_frame_equal(board, pd.read_excel(io.BytesIO(xlsx), engine="openpyxl"), check_dtype=False)
    lines = run_cli("score", "--all", "--benchmark", "frameevidence", "--json", db=demo_db, check=True).stdout
    scores = {d["run"]: d["metrics"] for d in map(json.loads, lines.splitlines())}
    columns = {"P": "macro_precision", "R": "macro_recall", "F1": "macro_f1", "Acc": "accuracy", "GEM": "fq1_gem",
               "NTS": "nts", "DIS": "dis"}
    rows = board.set_index("Run")
    assert set(scores) <= set(rows.index) and len(scores) >= 4
    for run, metrics in scores.items():
        for label, key in columns.items():
            ci = metrics[key]["ci"]
            got = (rows.loc[run, f"{label}_ci_low (%)"], rows.loc[run, f"{label}_ci_high (%)"])
            assert got == pytest.approx((100 * ci[0], 100 * ci[1]), abs=1e-8), (run, label)
            assert got[0] <= rows.loc[run, f"{label} (%)"] <= got[1]
    reference = [r for r in rows.index if r not in scores]
    assert reference and rows.loc[reference, [f"{x}_ci_low (%)" for x in columns]].isna().all().all()


def test_leaderboard_xlsx_equals_csv(boards):
    csv, xlsx = boards["csv"], boards["xlsx"]
    assert list(csv.columns) == list(xlsx.columns)
    pd.testing.assert_frame_equal(csv, xlsx, check_dtype=False)


def test_leaderboard_refuses_what_it_cannot_write(demo_db):
    proc = run_cli("export", "leaderboard", "--benchmark", "stembind", "--format", "jsonl", db=demo_db)
    assert proc.returncode == 2 and "--format csv or xlsx" in proc.stderr and proc.stdout == ""
    proc = run_cli("export", "items", "--benchmark", "stembind", "--format", "xlsx", db=demo_db)
    assert proc.returncode == 2 and "xlsx is for export leaderboard" in proc.stderr
    proc = run_cli("export", "leaderboard", "--benchmark", "nope", db=demo_db)
    assert proc.returncode == 2 and "no benchmark named 'nope'" in proc.stderr


def test_predictions_export_has_question_gold_prediction_correct(demo_db):
    from db.store import Store

    df = pd.read_csv(io.BytesIO(export_bytes(demo_db, "predictions", "--run", "synth-spur-generalist",
                                             "--format", "csv")), keep_default_na=False)
    assert list(df.columns[:6]) == ["item_id", "question", "gold", "prediction", "correct", "response"]
    store = Store(demo_db)
    try:
        items = store.items_frame("spur").set_index("item_id")
        preds = store.predictions_frame("synth-spur-generalist")
    finally:
        store.close()
    assert len(df) == len(preds)
    for row in df.head(50).itertuples(index=False):
        assert row.question == items.loc[row.item_id, "question"] and row.gold == items.loc[row.item_id, "answer"]
        assert row.correct == (row.status == "ok" and row.prediction == row.gold)
    assert df["correct"].any() and not df["correct"].all()


def test_metrics_table_exports_as_html():
    from core import families
    from core.report_tables import RunScore
    from ui.tables import table_html_file

    metrics = {"p_accuracy": {"value": 0.5, "k": 1, "n": 2, "ci": [0.1, 0.9]}}
    table = families.get("stembind").tables([RunScore("<b>run</b>", metrics)])[0]
    text = table_html_file(table, "sb").read_text(encoding="utf-8")
    assert text.startswith("<!doctype html>") and "<script" not in text
    assert "&lt;b&gt;run&lt;/b&gt;" in text and "<b>run</b>" not in text
    assert ">50.0<" in text and "95% CI [10.0, 90.0]" in text and table.title in text
