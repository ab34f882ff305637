"""The Data tab takes a dropped Inspect log or zipped folder the way `app.py open` takes a path (issue 40):
the handlers on a real store, then the real app in a real browser with a screenshot of the report."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from uiharness import browser, running_app

from core.errors import ImportRefused
from db.store import Store
from tests.conftest import ROOT
from ui import data as ud


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("inspect")
    subprocess.run([sys.executable, str(ROOT / "tests" / "inspect_logs.py"), str(out)], check=True, timeout=300,
                   capture_output=True)
    return out


def test_open_kind_shows_no_run_fields():
    out = ud.on_kind("open")
    assert tuple(u["visible"] for u in out[:4]) == (False, False, False, False)


def test_a_dropped_log_opens_and_a_zipped_folder_reports_what_it_skipped(store, logs, tmp_path):
    html, button = ud.on_validate(store, "open", str(logs / "mc.eval"), "", "", "", None, "")
    assert button["interactive"] is True and store.counts()["items"] == 0
    html, button, bench, runs, _sig = ud.on_import(store, "open", str(logs / "mc.eval"), "", "", "", None, "", [])
    assert "Imported." in html and bench["value"] == "mc" and runs["value"] == ["mockllm/model"]
    folder = tmp_path / "lab.zip"
    with zipfile.ZipFile(folder, "w") as zf:
        zf.write(logs / "mc.json", "logs/mc.json")
        zf.write(logs / "mc.eval", "logs/again.eval")
        zf.writestr("logs/notes.txt", "a note")
    html, *_rest = ud.on_import(store, "open", str(folder), "", "", "", "mc", "", [])
    assert "Imported." in html and "already imported" in html and "notes.txt" in html
    assert {r["name"] for r in store.runs("mc")} == {"mockllm/model", "mockllm/other"}


def test_nothing_recognized_is_refused(store, tmp_path):
    junk = tmp_path / "junk.zip"
    with zipfile.ZipFile(junk, "w") as zf:
        zf.writestr("a.txt", "x")
        zf.writestr("b.md", "y")
    with pytest.raises(ImportRefused, match="not a format Crosscheck reads"):
        ud.opened(store, junk, None)


@pytest.mark.browser
def test_a_log_dropped_in_the_browser_is_opened(logs, tmp_path):
    db = tmp_path / "data.db"
    Store(db).close()
    with running_app(db) as url, browser() as b:
        page = b.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url)
        page.get_by_role("tab", name="Data").click()
        page.get_by_text("A log or a zipped folder").click()
        page.locator("#cc-data-upload input[type=file]").set_input_files(str(logs / "cancelled.eval"))
        page.locator("#cc-data-uploaded[data-file='cancelled.eval']").wait_for(timeout=60_000)
        page.locator("#cc-data-validate").click()
        page.locator("#cc-data-verdict[data-ok='1'][data-file='cancelled.eval']").wait_for(timeout=30_000)
        page.locator("#cc-data-import").click()
        page.locator("#cc-data-verdict[data-committed='1'][data-file='cancelled.eval']").wait_for(timeout=60_000)
        report = page.locator("#cc-data-report").inner_text()
        assert "Imported." in report and "runs: 1" in report and "the eval was cancelled" in report
        if os.environ.get("CROSSCHECK_SHOTS"):
            page.screenshot(path=os.environ["CROSSCHECK_SHOTS"], full_page=False)
    s = Store(db)
    assert [r["n_predictions"] for r in s.runs("mc")] == [3]
    s.close()
