"""Every tab, at 1440 and 1024 px, in the light and the dark theme (issue 25, point 8): every visible text has a
contrast of at least 3:1 against the background it sits on (WCAG's floor for large text; 4.5:1 is asked of body
text, and a dark-mode bug, text the colour of its background, is near 1:1), nothing widens the page beyond the
window, and the charts' texts follow the theme."""

from __future__ import annotations

import pytest
from uiharness import VIEWS, shot, views

pytestmark = [pytest.mark.browser, pytest.mark.slow]
RUNS = "synth-sb-binder-weak,synth-sb-balanced-direct"
# each tab and what shows once it has drawn
TABS = [
    ("Browse", "browse", "#cc-browse-list"),
    ("Compare", "compare", "#cc-compare-summary"),
    ("Metrics", "metrics", ".cc-mtable[data-table='sb_leaderboard']"),
    ("Run", "run", "#cc-run-jobs"),
    ("Judge", "judge", "#jd-controls"),
    ("Calibration", "calibration", "#cb-controls"),
    ("Data", "data", "#cc-data-import"),
]
# the other families' group views, read in Browse after the tabs
GROUPS = [("frameevidence", "fe-test-fq2-001"), ("spur", "spur-001")]
MIN_CONTRAST = 3.0
# the visible texts of a tab with their contrast against the first opaque background behind them
LOW_CONTRAST = """([root, floor]) => {
  const rgb = s => (s.match(/[\\d.]+/g) || []).slice(0, 4).map(Number);
  const lum = ([r, g, b]) => { const f = c => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  const page = rgb(getComputedStyle(document.body).backgroundColor);
  const out = [];
  for (const el of document.querySelectorAll(root + ' *')) {
    if (el.closest('svg') || !el.offsetParent) continue;
    const own = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    if (!own) continue;
    const st = getComputedStyle(el);
    if (st.visibility === 'hidden' || Number(st.opacity) === 0) continue;
    const box = el.getBoundingClientRect();
    if (box.width < 1 || box.height < 1) continue;
    let bg = null;
    for (let x = el; x; x = x.parentElement) { const c = rgb(getComputedStyle(x).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) { bg = c; break; } }
    if (!bg) bg = page.length >= 3 ? page : [255, 255, 255];
    const fg = rgb(st.color);
    const [a, b] = [lum(fg), lum(bg)].sort((p, q) => q - p);
    const ratio = (a + 0.05) / (b + 0.05);
    if (ratio < floor) out.push(`${el.tagName.toLowerCase()}.${el.className} "${el.textContent.trim().slice(0, 40)}" ${ratio.toFixed(2)}`);
  }
  return out;
}"""
# each chart's paper (or what shows through it) follows the theme, and its axis and title texts stand out on it
CHART_TEXTS = """([floor, dark]) => {
  const rgb = s => (s.match(/[\\d.]+/g) || []).slice(0, 4).map(Number);
  const lum = ([r, g, b]) => { const f = c => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  const out = [];
  for (const plot of document.querySelectorAll('#cc-tab-metrics .cc-chart .js-plotly-plot')) {
    let bg = null;
    for (let x = plot.querySelector('.main-svg'); x; x = x.parentElement) { const c = rgb(getComputedStyle(x).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) { bg = c; break; } }
    bg = bg || rgb(getComputedStyle(document.body).backgroundColor);
    if ((lum(bg) < 0.2) !== dark) out.push(`chart paper rgb(${bg.slice(0, 3)}) in the ${dark ? 'dark' : 'light'} theme`);
    for (const t of plot.querySelectorAll('.xtick text, .ytick text, .g-gtitle text, .g-xtitle text, .g-ytitle text')) {
      const [a, b] = [lum(rgb(getComputedStyle(t).fill)), lum(bg)].sort((p, q) => q - p);
      const ratio = (a + 0.05) / (b + 0.05);
      if (ratio < floor) { out.push(`chart text "${t.textContent.slice(0, 30)}" ${ratio.toFixed(2)}`); break; }
    }
  }
  return out;
}"""


def test_every_tab_readable_in_both_themes(demo_app, ui_browser):
    """One page: each tab drawn once, then read at both widths in both themes."""
    width, scheme = VIEWS[0]
    page = ui_browser.new_page(viewport={"width": width, "height": 1000}, color_scheme=scheme)
    found: dict[str, list[str]] = {}

    def read(tab: str, root: str):  # type: ignore[no-untyped-def]
        def check(width: int, scheme: str) -> None:
            shot(page, f"{tab}-{width}-{scheme}.png")
            found[f"{tab} {width} {scheme}"] = page.evaluate(LOW_CONTRAST, [root, MIN_CONTRAST])
            wide = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
            assert wide[0] <= wide[1], (tab, width, scheme, wide)
            if tab == "metrics":
                assert page.locator("#cc-tab-metrics .cc-chart .xtick text").count() > 0
                found[f"charts {width} {scheme}"] = page.evaluate(CHART_TEXTS, [MIN_CONTRAST, scheme == "dark"])
        return check

    try:
        page.goto(f"{demo_app}/?benchmark=stembind&runs={RUNS}&tab=browse&group=sb-007")
        page.locator("#cc-group-view [data-group='sb-007']").wait_for(timeout=90_000)
        assert page.evaluate("document.body.classList.contains('dark')") == (scheme == "dark")
        for label, tab, ready in TABS:
            page.locator("#cc-tabs [role=tab]", has_text=label).first.click()
            page.locator(f"#cc-tab-{tab} {ready}").first.wait_for(timeout=90_000)
            if tab == "metrics":
                page.locator("#cc-tab-metrics .cc-chart .main-svg").first.wait_for(timeout=90_000)
            views(page, read(tab, f"#cc-tab-{tab}"))
        for bench, gid in GROUPS:  # loaded in the last view's theme (dark): Gradio sets it at load too
            page.goto(f"{demo_app}/?benchmark={bench}&tab=browse&group={gid}")
            page.locator(f"#cc-group-view [data-group='{gid}']").wait_for(timeout=90_000)
            assert page.evaluate("document.body.classList.contains('dark')") == (VIEWS[-1][1] == "dark")
            views(page, read(bench, "#cc-tab-browse"))
        found = {view: lines for view, lines in found.items() if lines}
        assert not found, "\n".join(f"{view}: {line}" for view, lines in found.items() for line in lines)
    finally:
        page.close()
