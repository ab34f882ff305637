"""Why it fails in the real app (Debian chromium, issue #38): the "Why it fails" panel narrows Browse to a failure
mode and the review keys walk it; an item-health row opens its group; a suspect marked "gold is wrong" is set
aside in Metrics with the notice. Expectations come from the CLI (`failure-modes --json`, `item-health --json`,
`score --set-aside-marked --json`), never from the UI code."""

from __future__ import annotations

import json

import pytest
from conftest import copy_store, run_cli
from uiharness import open_page, running_app, shot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

BENCH = "stembind"
RUN = "synth-sb-mirror-repeats"
LINK = f"/?benchmark={BENCH}&runs={RUN}"


def shown_group(page) -> str | None:
    return page.locator("#cc-group-view .cc-group[data-group]").first.get_attribute("data-group")


def wait_group(page, gid: str) -> None:
    page.wait_for_selector(f"#cc-group-view .cc-group[data-group='{gid}']", timeout=30000)


def landed(page, url: str) -> None:
    page.goto(url + LINK)
    page.wait_for_selector("#cc-browse-list [role=gridcell]:has-text('sb-001')", timeout=60000)
    page.wait_for_selector(f"#cc-runs :text('{RUN}')", timeout=30000)


def list_ids(page) -> list[str]:
    return [s.strip() for s in page.locator("#cc-browse-list [data-col='0'][role=gridcell]").all_inner_texts()]


def test_a_mode_narrows_browse_and_the_keys_walk_it(demo_app, demo_db, ui_browser):
    modes = json.loads(run_cli("failure-modes", "--run", RUN, "--json", db=demo_db, check=True).stdout)["modes"]
    first = modes[0]
    page = open_page(ui_browser, viewport={"width": 1400, "height": 900})
    try:
        landed(page, demo_app)
        page.locator("#cc-why").get_by_text("Why it fails").first.click()
        page.wait_for_selector("#cc-why-table [role=gridcell]", timeout=60000)
        labels = page.locator("#cc-why-table [role=gridcell][data-col='0']").all_inner_texts()
        assert [t.strip() for t in labels] == [m["label"] for m in modes]
        page.locator("#cc-why-table [role=gridcell][data-col='0']").first.click()
        page.wait_for_selector(f"#cc-browse-summary:has-text('{len(first['groups'])} of 120 groups')", timeout=60000)
        assert first["label"] in page.locator("#cc-browse-focus").inner_text()
        ids = list_ids(page)  # the rows drawn (the table draws those in sight), in the benchmark's group order
        assert len(ids) >= 3 and ids == sorted(first["groups"])[:len(ids)]
        page.wait_for_function("(m) => location.search.includes('mode=' + m)", arg=str(first["id"]))
        assert f"mode_run={RUN}" in page.url.replace("%2D", "-")
        shot(page, "why_mode.png")
        page.locator("body").click(position={"x": 5, "y": 5})  # the keys act when no box has the focus
        page.keyboard.press("j")
        wait_group(page, ids[0])
        page.keyboard.press("j")
        wait_group(page, ids[1])
        page.keyboard.press("k")
        wait_group(page, ids[0])
        # Show every group takes the filter off
        page.locator("#cc-browse-focus-clear").click()
        page.wait_for_selector("#cc-browse-summary:has-text('120 of 120 groups')", timeout=30000)
    finally:
        page.context.close()


def test_an_item_health_row_opens_its_group(demo_app, demo_db, ui_browser):
    health = json.loads(run_cli("item-health", "--benchmark", BENCH, "--json", db=demo_db, check=True).stdout)
    flip = health["unstable"][1]
    page = open_page(ui_browser, viewport={"width": 1400, "height": 900})
    try:
        landed(page, demo_app)
        page.locator("#cc-health").get_by_text("Item health").first.click()
        page.wait_for_selector("#cc-health-table [role=gridcell]", timeout=60000)
        page.locator("#cc-health-list input").first.click()
        page.get_by_role("option", name="Unstable items").first.click()
        page.wait_for_selector(f"#cc-health-table [role=gridcell][data-col='0']:has-text('{flip['item_id']}')",
                               timeout=60000)
        page.locator(f"#cc-health-table [role=gridcell][data-col='0']:has-text('{flip['item_id']}')").first.click()
        wait_group(page, flip["group_id"])
        box = page.locator("#cc-health-item textarea, #cc-health-item input").first
        assert box.input_value() == flip["item_id"]
        assert shown_group(page) == flip["group_id"]
    finally:
        page.context.close()


def test_a_suspect_marked_gold_is_wrong_is_set_aside_in_metrics(demo_db, ui_browser, tmp_path):
    db = copy_store(demo_db, tmp_path)
    suspect = json.loads(run_cli("item-health", "--benchmark", BENCH, "--json", db=db, check=True).stdout)[
        "suspect_gold"][0]
    with running_app(db) as url:
        page = open_page(ui_browser, viewport={"width": 1400, "height": 900})
        try:
            landed(page, url)
            page.locator("#cc-health").get_by_text("Item health").first.click()
            cell = f"#cc-health-table [role=gridcell][data-col='0']:has-text('{suspect['item_id']}')"
            page.wait_for_selector(cell, timeout=60000)
            page.locator(cell).first.click()
            wait_group(page, suspect["group_id"])
            page.locator("#cc-health-verdict").get_by_text("gold is wrong").click()
            page.locator("#cc-health-note textarea, #cc-health-note input").first.fill("the picture agrees")
            page.locator("#cc-health-save").click()
            page.wait_for_selector(f"#cc-health-marks li[data-item='{suspect['item_id']}']", timeout=30000)
            assert "gold is wrong" in page.locator("#cc-health-marks").inner_text()
            page.get_by_role("tab", name="Metrics", exact=True).click()
            page.wait_for_selector("#cc-metrics-summary", timeout=60000)
            assert page.locator("#cc-metrics-aside").count() == 0
            page.locator("#cc-metrics-aside-toggle input").check()
            page.wait_for_selector("#cc-metrics-aside", timeout=60000)
            notice = page.locator("#cc-metrics-aside").inner_text()
            aside = json.loads(run_cli("score", "--run", RUN, "--json", "--set-aside-marked", db=db,
                                       check=True).stdout)
            counts = aside["set_aside"]
            assert notice.startswith(f"Set aside: {counts['marked']} item(s) a reviewer marked “gold is wrong”")
            assert f"({counts['items']} items in all)" in notice
            cell = page.locator(f"td[data-run='{RUN}'][data-path='[\"p_accuracy\"]']").first
            assert json.loads(cell.get_attribute("data-value")) == pytest.approx(aside["metrics"]["p_accuracy"]["value"])
            assert page.locator(".cc-note:has-text('Set aside:')").count() >= 1  # each table says it too
            shot(page, "why_metrics_aside.png")
        finally:
            page.context.close()
