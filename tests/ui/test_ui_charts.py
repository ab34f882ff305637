"""Metrics charts in the real app and Debian chromium: every chart of every sub-tab fits its container on
first sight at 1440 and 1024 px, its legend clears the plot area and the axes, and "Chart (HTML)" opens
offline with plotly.js inside."""

from __future__ import annotations

import re

import pytest
from uiharness import browser

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# Geometry of every visible chart: its container, the drawn SVG, the legend and what it must not cover.
GEOMETRY_JS = """() => [...document.querySelectorAll('.cc-chart')].filter((e) => e.offsetParent).map((e) => {
  const box = (el) => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const svg = e.querySelector('svg.main-svg');
  const legend = e.querySelector('g.legend');
  const avoid = [...e.querySelectorAll('.nsewdrag, .xtick text, .ytick text, .g-xtitle text, .g-ytitle text,'
                                       + ' .g-gtitle text')].map(box).filter((b) => b[2] > b[0]);
  return {container: e.getBoundingClientRect().width, svg: svg ? svg.getBoundingClientRect().width : null,
          legend: legend ? box(legend) : null, avoid,
          title: (e.querySelector('.g-gtitle text') || {}).textContent || ''};
})"""


SHOWN_JS = ("[...document.querySelectorAll('#cc-metrics-sections .cc-chart, #cc-metrics-sections .cc-mtable')]"
            ".filter((e) => e.offsetParent)")


def _overlap(a, b) -> bool:
    return a[0] < b[2] - 0.5 and b[0] < a[2] - 0.5 and a[1] < b[3] - 0.5 and b[1] < a[3] - 0.5


@pytest.fixture(scope="module")
def app(demo_app):
    return demo_app


def _pick_benchmark(page, bench: str) -> None:
    page.locator("#cc-benchmark input").click()
    page.get_by_role("option", name=bench).first.click()


@pytest.mark.parametrize("width", [1440, 1024])
def test_every_chart_fits_and_its_legend_clears_the_axes(app, width):
    seen = 0
    with browser() as b:
        page = b.new_page(viewport={"width": width, "height": 1000})
        page.goto(app)
        page.get_by_role("tab", name="Metrics").click()
        for bench, first_table in (("frameevidence", "fe_table4"), ("stembind", "sb_leaderboard"),
                                   ("spur", "spur_table3")):
            if bench != "frameevidence":
                _pick_benchmark(page, bench)
            page.locator(f".cc-mtable[data-table='{first_table}']").wait_for(timeout=90_000)
            tabs = page.locator("#cc-metrics-sections [role=tab]")
            for i in range(tabs.count()):
                label = tabs.nth(i).inner_text()
                if tabs.nth(i).get_attribute("aria-selected") != "true":  # (the first is open already)
                    page.evaluate(SHOWN_JS + ".forEach((e) => { e.dataset.ccShown = 'before'; })")
                    tabs.nth(i).click()
                    # the sub-tab's own charts or tables show (every section has one or the other)
                    page.wait_for_function(f"() => {SHOWN_JS}.some((e) => e.dataset.ccShown !== 'before')",
                                           timeout=60_000)
                n_charts = page.locator(".cc-chart").evaluate_all("els => els.filter(e => e.offsetParent).length")
                if n_charts == 0:
                    continue
                # the first drawing after the sub-tab opens (every chart drawn), no window resize
                page.wait_for_function("""() => [...document.querySelectorAll('.cc-chart')]
                    .filter((e) => e.offsetParent).every((e) => { const s = e.querySelector('svg.main-svg');
                    return s && Math.abs(s.getBoundingClientRect().width - e.getBoundingClientRect().width) <= 2; })""",
                                       timeout=15_000)
                for g in page.evaluate(GEOMETRY_JS):
                    where = f"{bench} / {label} / {g['title']} at {width}px"
                    assert abs(g["svg"] - g["container"]) <= 2, where
                    assert g["container"] <= width, where
                    if g["legend"] is not None:
                        assert g["avoid"], where
                        hits = [a for a in g["avoid"] if _overlap(g["legend"], a)]
                        assert not hits, f"legend covers {hits} in {where}"
                    seen += 1
    assert seen >= 25  # every chart of the three families was measured


def test_chart_html_opens_offline_with_plotly_inside(app, tmp_path):
    with browser() as b:
        page = b.new_page(viewport={"width": 1440, "height": 1000}, accept_downloads=True)
        page.goto(app)
        page.get_by_role("tab", name="Metrics").click()
        page.locator(".cc-mtable[data-table='fe_table4']").wait_for(timeout=90_000)
        with page.expect_download(timeout=60_000) as d:
            page.locator(".cc-dl-chart").first.click()
        path = tmp_path / "chart.html"
        d.value.save_as(path)
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"<script[^>]*\bsrc\s*=", text, re.I)  # no external script at all
        assert "Plotly" in text and len(text) > 1_000_000  # plotly.js itself is in the file
        # opened with every network request refused, the chart still draws
        ctx = b.new_context(offline=True)
        off = ctx.new_page()
        blocked: list[str] = []
        off.route(re.compile(r"^https?://"), lambda route: (blocked.append(route.request.url), route.abort()))
        off.goto(path.as_uri())
        off.locator("svg.main-svg").first.wait_for(timeout=30_000)
        assert off.locator(".bars path, .point").count() > 0
        assert "Table 4" in (off.locator(".g-gtitle").text_content() or "")
        assert blocked == []
        ctx.close()
