"""Issue 16 "Done when", in the real app and Chromium: an MMBench-style TSV with circular copies and its
VLMEvalKit .xlsx, imported with two commands, show their circular groups in Browse (copies, hint) and the
circular metrics in Metrics; the audit shows VLMEvalKit's extracted letter beside the raw response."""

from __future__ import annotations

import re

import pytest
from conftest import run_cli
from test_import_foreign import mmbench_rows, prediction_table, write_tsv, write_xlsx
from uiharness import browser, open_page, running_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def choose(page, elem_id: str, option) -> None:
    page.locator(f"#{elem_id} input").first.click()
    page.get_by_role("option", name=option).first.click()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The app on a store of VLMEvalKit files and a browser, shared by the module's tests."""
    root = tmp_path_factory.mktemp("uiforeign")
    db = root / "s.db"
    run_cli("import", str(write_tsv(root / "MMBench_DEV_EN.tsv", mmbench_rows())), "--name", "mmb", db=db,
            check=True)
    recs = prediction_table()
    recs[4]["prediction"] = "I cannot tell; maybe A, maybe B."  # index 1: invalid for Crosscheck's parser
    run_cli("import-predictions", str(write_xlsx(root / "Qwen_MMBench_DEV_EN.xlsx", recs)), "--run", "qwen",
            db=db, check=True)
    with running_app(db) as url, browser() as b:
        yield url, b


@pytest.fixture
def page(served):
    """A fresh page for each test, on the Browse list."""
    url, b = served
    p = open_page(b, viewport={"width": 1400, "height": 1000})
    p.goto(url)
    p.wait_for_selector("#cc-browse-list [role=gridcell]:has-text('What colour')", timeout=90000)
    yield p
    p.context.close()


def open_group(page, gid: str) -> None:
    box = page.locator("#cc-browse-group textarea, #cc-browse-group input").first
    box.fill(gid)
    box.press("Enter")
    page.wait_for_selector(f"#cc-group-view [data-group='{gid}']", timeout=60000)


def test_browse_shows_the_circular_group_and_the_hint(page):
    open_group(page, "0")
    view = page.locator("#cc-group-view")
    assert "circular copies 4" in view.locator(".cc-chips").first.inner_text().replace("\n", " ")
    titles = [t.strip() for t in view.locator(".cc-col-title").all_inner_texts()]
    assert [t.split(" ")[:3] for t in titles] == [["colour", "·", "copy"]] * 4
    assert [re.search(r"copy (\d)", t).group(1) for t in titles] == ["0", "1", "2", "3"]
    assert view.locator(".cc-images .cc-img-label").count() == 1  # the copies share the original's image
    open_group(page, "1")
    hints = page.locator("#cc-group-view .cc-hint").all_inner_texts()
    assert hints == ["Hint: Look at the sky."] * 2


def test_metrics_show_the_circular_scores(page):
    page.get_by_role("tab", name="Metrics").click()
    table = page.locator("table:has(th:has-text('Circular'))").first
    table.wait_for(timeout=90000)
    heads = [h.strip() for h in table.locator("thead th").all_inner_texts()]
    row = [c.strip() for c in table.locator("tbody tr").first.locator("td").all_inner_texts()]
    cells = dict(zip(heads, row, strict=True))
    # Q1's original is now invalid: circular groups Q0 (all right), Q1 (both wrong), Q3 (same wrong text)
    assert cells["Circular"] == "33.3" and cells["Consistency"] == "66.7" and cells["Vanilla"] == "33.3"
    page.get_by_role("tab", name="Browse").click()


def test_audit_shows_the_extracted_letter(page):
    page.get_by_text("Extraction audit").first.click()
    choose(page, "cc-audit-run", "qwen")
    page.locator("#cc-audit-list-btn").click()
    listing = page.locator("#cc-audit-list table")
    listing.wait_for(timeout=60000)
    assert "the tool's answer" in listing.locator("thead").inner_text()
    cells = [c.strip() for c in listing.locator("tbody tr").first.locator("td").all_inner_texts()]
    assert cells[0] == "1" and "maybe A, maybe B." in cells[4] and cells[5] == "vlmevalkit extracted B"


def test_data_tab_validates_and_imports_a_vlmevalkit_tsv(page, tmp_path):
    rows = mmbench_rows()
    bad = write_tsv(tmp_path / "bad_mmb.tsv", [dict(r, image="77") if r["index"] == "1000000" else r for r in rows])
    good = write_tsv(tmp_path / "mmb_ui.tsv", rows)
    page.get_by_role("tab", name="Data").click()
    page.get_by_text("Items (benchmark JSONL or zip)").click()
    page.locator("#cc-data-upload input[type=file]").set_input_files(str(bad))
    page.locator("#cc-data-uploaded[data-file='bad_mmb.tsv']").wait_for(timeout=60_000)
    page.locator("#cc-data-validate").click()
    page.locator("#cc-data-verdict[data-ok='0'][data-file='bad_mmb.tsv'][data-committed='0']").wait_for(timeout=60_000)
    report = page.locator("#cc-data-report").inner_text()
    assert "names no row's index" in report and "image" in report
    assert page.locator("#cc-data-import").is_disabled()
    page.locator("#cc-data-upload button[aria-label='Clear']").first.click()
    page.locator("#cc-data-upload input[type=file]").set_input_files(str(good))
    page.locator("#cc-data-uploaded[data-file='mmb_ui.tsv']").wait_for(timeout=60_000)
    page.locator("#cc-data-validate").click()
    page.locator("#cc-data-verdict[data-ok='1'][data-file='mmb_ui.tsv'][data-committed='0']").wait_for(timeout=60_000)
    page.locator("#cc-data-import").click()
    page.get_by_text("Imported.").wait_for(timeout=60_000)
    assert "items: 9" in page.locator("#cc-data-report").inner_text()
