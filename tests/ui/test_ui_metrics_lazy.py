"""The Metrics tab in the real app works only when it has to: nothing is scored or drawn while another tab is
shown (picking runs on Browse does not score them), and re-renders write no files; a download writes its file
when pressed, once per content."""

from __future__ import annotations

import pytest
from uiharness import (
    browser,
    events_started,
    metrics_drawing,
    open_page,
    running_app,
    wait_events,
    wait_new_drawing,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SUMMARY = "#cc-metrics-summary"


def _files(root) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_metrics_draw_only_when_shown_and_write_files_on_request(demo_db, tmp_path, monkeypatch):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    with browser() as b:  # launched first: only the server runs with the watched temp folder
        monkeypatch.setenv("TMPDIR", str(tmp))  # the server's exports and Gradio's cache
        monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp / "gradio"))
        with running_app(demo_db) as url:
            _check(b, url, tmp)


def _check(b, url, tmp) -> None:
    if True:
        page = open_page(b, viewport={"width": 1440, "height": 1000}, accept_downloads=True)
        page.goto(url)
        page.locator("#cc-runs").wait_for()
        wait_events(page, 0)  # the page load's events have come back
        assert page.locator(SUMMARY).count() == 0  # page load on Browse: Metrics not scored
        page.get_by_role("tab", name="Metrics").click()
        page.locator(SUMMARY).wait_for(timeout=90_000)
        assert "2 runs" in page.locator(SUMMARY).inner_text()
        before = _files(tmp)

        # back on Browse, drop one run: the hidden Metrics tab keeps its drawing (nothing scored)
        page.get_by_role("tab", name="Browse").click()
        first = metrics_drawing(page)
        assert first is not None
        sent = events_started(page)
        page.locator("#cc-runs .token .token-remove").last.click()
        wait_events(page, sent)  # Browse's answer to the change has come back
        assert page.locator("#cc-runs .token").count() == 1
        assert "2 runs" in (page.locator(SUMMARY).text_content() or "")
        assert metrics_drawing(page) == first

        # opening the tab draws the new picks once; opening it again with the same picks draws nothing
        page.get_by_role("tab", name="Metrics").click()
        second = wait_new_drawing(page, first)
        assert "1 run " in page.locator(SUMMARY).inner_text()
        page.get_by_role("tab", name="Browse").click()
        sent = events_started(page)
        page.get_by_role("tab", name="Metrics").click()
        wait_events(page, sent)  # the tab's select event has come back
        assert metrics_drawing(page) == second

        # Refresh redraws; no drawing writes a file
        last = second
        for _ in range(3):
            page.locator("#cc-refresh").click()
            last = wait_new_drawing(page, last)
        assert _files(tmp) == before

        # a download writes its file when pressed, and the same table again writes nothing more
        with page.expect_download(timeout=60_000) as d:
            page.locator(".cc-dl-csv").first.click()
        assert "Run," in open(d.value.path(), encoding="utf-8").read()
        after_one = _files(tmp)
        assert any(f.endswith(".csv") for f in after_one - before)
        with page.expect_download(timeout=60_000):
            page.locator(".cc-dl-csv").first.click()
        assert _files(tmp) == after_one
