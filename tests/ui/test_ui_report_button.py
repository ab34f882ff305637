"""The Metrics tab's "Download report" button writes the same one-file report as `app.py report`: its island
holds exactly the runs on the page, each run's metrics are `score --json`'s, and the file opens offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli
from test_ui_report import open_offline

pytestmark = [pytest.mark.browser, pytest.mark.slow]
RUNS = ["synth-sb-binder-weak", "synth-sb-balanced-direct"]


def test_download_report_from_metrics(demo_app, demo_db, ui_browser, tmp_path):
    page = ui_browser.new_page(viewport={"width": 1440, "height": 1000}, accept_downloads=True)
    try:
        page.goto(f"{demo_app}/?benchmark=stembind&runs={','.join(RUNS)}&tab=metrics")
        page.locator(".cc-mtable[data-table='sb_leaderboard']").wait_for(timeout=90_000)
        with page.expect_download(timeout=120_000) as d:
            page.locator(".cc-dl-report").first.click()
        saved = tmp_path / "from-metrics.html"
        d.value.save_as(saved)
    finally:
        page.close()
    text = saved.read_text(encoding="utf-8")
    data = json.loads(text.split('id="crosscheck-data">', 1)[1].split("</script>", 1)[0])
    assert data["benchmark"] == "stembind"
    assert sorted(data["runs"]) == sorted(RUNS)
    for run in RUNS:
        cli = json.loads(run_cli("score", "--run", run, "--json", db=demo_db, check=True).stdout)["metrics"]
        assert data["runs"][run]["metrics"] == cli, run
    assert "Metrics tab, Download report" in text  # provenance names what wrote it
    offline, refused, dialogs, errors = open_offline(ui_browser, Path(saved))
    try:
        assert offline.locator(".cc-mtable").count() >= 1
        assert refused == [] and dialogs == [] and errors == []
    finally:
        offline.close()
