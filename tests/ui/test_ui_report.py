"""The one-file report in Chromium, opened from file:// with every request outside the file refused: it draws
its tables, charts and a group's images, its island's numbers are `score --json`'s, `#group=G` opens group G
and j / k step through the groups, and model text (the XSS payloads of test_ui_safety, plus one that tries to
close the JSON island) stays text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli
from test_ui_safety import RUN, XSS, XSS2, prepare

RUNS = ["synth-sb-binder-weak", "synth-sb-balanced-direct"]
CLOSER = "</script><script>alert(3)</script><!--"


def open_offline(browser, path: Path, fragment: str = "") -> tuple:  # type: ignore[no-untyped-def]
    """A page on the report with every request other than the file itself refused (and recorded)."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    refused: list[str] = []
    dialogs: list[str] = []
    errors: list[str] = []

    def route(r) -> None:  # type: ignore[no-untyped-def]
        if r.request.url.split("#")[0] == path.as_uri():
            r.continue_()
        else:
            refused.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri() + fragment)
    page.wait_for_selector("body[data-ready='1']", timeout=30000)
    return page, refused, dialogs, errors


@pytest.fixture(scope="module")
def sb_report(demo_db, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("report") / "stembind report.html"  # a space: the file URL is quoted
    run_cli("report", "--benchmark", "stembind", "--runs", ",".join(RUNS), "--groups", "12", "-o", str(out),
            db=demo_db, check=True, timeout=300)
    return out


@pytest.mark.browser
@pytest.mark.slow
def test_offline_report_draws_tables_charts_and_images(ui_browser, sb_report, demo_db):
    page, refused, dialogs, errors = open_offline(ui_browser, sb_report)
    try:
        data = json.loads(sb_report.read_text(encoding="utf-8").split('id="crosscheck-data">', 1)[1]
                          .split("</script>", 1)[0])
        assert page.locator(".cc-mtable").count() == len(data["tables"])
        tabs = page.locator(".cc-sec-tab")
        for i in range(tabs.count()):  # every sub-tab draws its charts when opened
            tabs.nth(i).click()
            sec = page.locator(f".cc-sec[data-sec='{i}']")
            n = sec.locator(".cc-chart").count()
            if n:
                page.wait_for_function(f"document.querySelectorAll(\".cc-sec[data-sec='{i}'] .cc-chart .main-svg\")"
                                       f".length >= {n}", timeout=30000)
        view = page.locator("#cc-g-view")
        assert view.locator(f"[data-group='{data['groups'][0]['id']}']").count() == 1
        sizes = view.locator("img").evaluate_all("imgs => imgs.map(i => i.complete && i.naturalWidth)")
        assert sizes and all(w and w > 0 for w in sizes)
        # the page's numbers: the island, and each table cell's value, are score --json's
        shown = page.evaluate("JSON.parse(document.getElementById('crosscheck-data').textContent).runs")
        for name in RUNS:
            cli = json.loads(run_cli("score", "--run", name, "--json", db=demo_db, check=True).stdout)["metrics"]
            assert shown[name]["metrics"] == cli
            cells = page.locator(f"td[data-run='{name}'][data-path]").evaluate_all(
                "tds => tds.map(td => [JSON.parse(td.dataset.path), JSON.parse(td.dataset.value)])")
            assert len(cells) > 20
            for path, value in cells:
                node = cli
                for key in path:
                    node = node.get(key) if isinstance(node, dict) else None
                expected = node.get("value") if isinstance(node, dict) else node
                assert value == expected or (isinstance(expected, bool) and value == int(expected)), path
        assert refused == [] and dialogs == [] and errors == []
    finally:
        page.close()


@pytest.mark.browser
@pytest.mark.slow
def test_link_opens_group_and_keys_step(ui_browser, sb_report):
    data = json.loads(sb_report.read_text(encoding="utf-8").split('id="crosscheck-data">', 1)[1]
                      .split("</script>", 1)[0])
    ids = [g["id"] for g in data["groups"]]
    page, refused, _, _ = open_offline(ui_browser, sb_report, f"#group={ids[3]}")
    try:
        page.wait_for_selector(f"#cc-g-view [data-group='{ids[3]}']")
        page.keyboard.press("j")
        page.wait_for_selector(f"#cc-g-view [data-group='{ids[4]}']")
        assert page.evaluate("location.hash") == f"#group={ids[4]}"
        page.keyboard.press("k")
        page.keyboard.press("k")
        page.wait_for_selector(f"#cc-g-view [data-group='{ids[2]}']")
        page.fill("#cc-g-search", ids[5])
        assert page.locator("#cc-g-list li[data-group]").count() == 1
        page.fill("#cc-g-search", "")
        pattern = next(p for p in data["patterns"] if any(p[0] in g["patterns"] for g in data["groups"]))
        page.select_option("#cc-g-pattern", pattern[0])
        want = sum(pattern[0] in g["patterns"] for g in data["groups"])
        assert page.locator("#cc-g-list li[data-group]").count() == want
        page.evaluate("location.hash = '#group=no-such-group'")
        page.wait_for_selector("#cc-g-view:has-text('Group no-such-group is not in this report')")
        assert refused == []
    finally:
        page.close()


@pytest.mark.browser
@pytest.mark.slow
def test_model_text_stays_text_in_a_report(ui_browser, tmp_path):
    from db.importers import import_predictions
    from db.store import Store
    from ui.report.write import write_report

    store = Store(tmp_path / "store.db")
    try:
        prepare(store, tmp_path)
        path = tmp_path / "closer.jsonl"
        path.write_text(json.dumps({"item_id": "x0-0", "response": CLOSER, "trace": CLOSER}) + "\n", encoding="utf-8")
        import_predictions(store, path, "closer", model=XSS, benchmark="xss", config={"runner": XSS2})
        out = write_report(store, tmp_path / "xss.html", "xss", groups="all", command=XSS)
    finally:
        store.close()
    text = out.read_text(encoding="utf-8")
    assert CLOSER not in text and XSS not in text and XSS2 not in text  # escaped wherever they are written
    page, refused, dialogs, errors = open_offline(ui_browser, out, "#group=grp-0")
    try:
        page.wait_for_selector("#cc-g-view [data-group='grp-0']")
        view = page.locator("#cc-g-view")
        assert XSS in view.locator(".cc-question").first.inner_text()
        assert XSS2 in view.locator(".cc-opts").first.inner_text()
        for pre in view.locator("details").all():
            pre.locator("summary").click()
        assert CLOSER in view.inner_text() and XSS in page.locator("#cc-provenance").inner_text()
        assert page.locator("img[src='x']").count() == 0
        assert page.evaluate("document.scripts.length") == 5  # three JSON islands, plotly.js, the viewer
        assert dialogs == [] and errors == [] and refused == []
        assert page.evaluate("JSON.parse(document.getElementById('crosscheck-data').textContent)"
                             ".provenance.runs.find(r => r.name === 'closer').model") == XSS
        assert RUN in page.evaluate("JSON.parse(document.getElementById('crosscheck-data').textContent).run_order")
    finally:
        page.close()
