"""The Metrics tab in the real app: values equal `score --json`; CSV and LaTeX exports download and parse."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from conftest import run_cli
from uiharness import open_page

from core.report_tables import parse_latex_rows

pytestmark = [pytest.mark.browser, pytest.mark.slow]
RUN = "synth-fe-frameaware"


@pytest.fixture(scope="module")
def app(demo_app):
    return demo_app


@pytest.fixture
def page(app, ui_browser):
    """A fresh page for each test, on the Metrics tab's first drawing."""
    p = open_page(ui_browser, viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    p.goto(app)
    p.get_by_role("tab", name="Metrics").click()
    p.locator(".cc-mtable[data-table='fe_table4']").wait_for(timeout=90_000)
    yield p
    p.context.close()


def _node(metrics, path):
    for key in path:
        metrics = metrics[key]
    return metrics


def test_values_equal_score_json(page, demo_db):
    cli = json.loads(run_cli("score", "--run", RUN, "--json", db=demo_db, check=True).stdout)["metrics"]
    cells = page.locator(f".cc-mtable td[data-run='{RUN}']")
    n = cells.count()
    assert n >= 20
    checked = 0
    for i in range(n):
        td = cells.nth(i)
        path = json.loads(td.get_attribute("data-path"))
        shown = json.loads(td.get_attribute("data-value"))
        node = _node(cli, path)
        want = node["value"] if isinstance(node, dict) else node
        if isinstance(want, float):
            assert shown == pytest.approx(want, abs=1e-12), path
        else:
            assert shown == want, path
        title = td.get_attribute("title") or ""
        if isinstance(node, dict) and "k" in node and node.get("value") is not None:
            assert f"k/n = {node['k']}/{node['n']}" in title  # k / n on hover
        if isinstance(node, dict) and node.get("value") is None:
            assert td.inner_text() == "n/a" and node["reason"] in title
        checked += 1
    assert checked == n
    # the Table 4 accuracy as shown (percent, one decimal) and the uniform-random reference row
    t4 = page.locator(".cc-mtable[data-table='fe_table4']")
    acc = t4.locator(f"td[data-run='{RUN}'][data-path='[\"accuracy\"]']").first
    assert acc.inner_text() == f"{100 * cli['accuracy']['value']:.1f}"
    assert t4.locator("tr.cc-ref").inner_text().startswith("Uniform random")
    assert t4.locator(".cc-synth").count() >= 1  # synthetic badge on demo runs


def test_sort_by_header(page):
    t4 = page.locator(".cc-mtable[data-table='fe_table4']")
    t4.locator("th", has_text="Acc").click()
    first = t4.locator("tbody tr").first.locator("td").first.inner_text()
    t4.locator("th", has_text="Acc").click()
    assert t4.locator("tbody tr").first.locator("td").first.inner_text() != first or t4.locator("tbody tr").count() <= 2
    assert t4.locator("tbody tr").last.get_attribute("class") == "cc-ref"  # the reference row stays last


def test_csv_and_latex_downloads_parse(page):

    csv_btn = page.locator(".cc-dl-csv").first
    tex_btn = page.locator(".cc-dl-tex").first
    with page.expect_download(timeout=30_000) as d:
        csv_btn.click()
    df = pd.read_csv(io.StringIO(open(d.value.path(), encoding="utf-8").read()))
    assert "Acc (%)" in df.columns and "Acc_k" in df.columns  # #24: on the screen's scale, the unit in the header
    assert df["Run"].iloc[-1] == "Uniform random (exact)"
    with page.expect_download(timeout=30_000) as d:
        tex_btn.click()
    tex = open(d.value.path(), encoding="utf-8").read()
    assert r"\toprule" in tex and r"\bottomrule" in tex
    rows = parse_latex_rows(tex)
    assert len(rows) == len(df) and all(len(r) == 8 for r in rows)


@pytest.mark.parametrize("bench,table", [("stembind", "sb_leaderboard"), ("spur", "spur_table3")])
def test_other_families_render(page, bench, table):
    page.locator("#cc-benchmark input").click()
    page.get_by_role("option", name=bench).first.click()
    page.locator(f".cc-mtable[data-table='{table}']").wait_for(timeout=90_000)
    assert page.locator(f".cc-mtable[data-table='{table}'] td[data-run]").count() > 0
    assert page.locator(".cc-chart").count() >= 1


def test_a_redraw_keeps_the_section_being_read(app, ui_browser):
    """Picking runs redraws the tab: the sub-tab the user opened stays open when the new drawing has it (the
    first opens only on a drawing without it, or the first drawing of another family)."""
    from uiharness import metrics_drawing, open_section, wait_new_drawing

    p = ui_browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        p.goto(app)
        p.get_by_role("tab", name="Metrics").click()
        p.locator(".cc-mtable[data-table='fe_table4']").wait_for(timeout=90_000)
        selected = "#cc-metrics-sections [role=tab][aria-selected=true]"
        assert p.locator(selected).inner_text().strip() == "Overview"
        # the sub-tab's select event reaches the server before the runs change
        with p.expect_response(lambda r: "/run/" in r.url and r.request.method == "POST", timeout=30_000):
            open_section(p, "Insufficiency", ".cc-mtable[data-table='fe_insufficiency']")
        before = metrics_drawing(p)
        p.locator("#cc-runs .token .token-remove").last.click()  # one run fewer: a new drawing
        wait_new_drawing(p, before)
        assert p.locator(selected).inner_text().strip() == "Insufficiency"
        p.locator(".cc-mtable[data-table='fe_insufficiency']").wait_for(state="visible", timeout=30_000)
        before = metrics_drawing(p)
        p.locator("#cc-benchmark input").click()
        p.get_by_role("option", name="stembind").first.click()
        p.locator(".cc-mtable[data-table='sb_leaderboard']").wait_for(timeout=90_000)
        wait_new_drawing(p, before)
        assert p.locator(selected).inner_text().strip() == p.locator("#cc-metrics-sections [role=tab]").first.inner_text().strip()
    finally:
        p.close()
