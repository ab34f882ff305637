"""Every view is a link (ui/links.py): a query string opens its benchmark, runs, tab, Browse filters and group,
or Metrics sub-tab; the address follows the user; a reload keeps the view; Back returns to the previous view;
a link naming what the store lacks opens the nearest view with a one-line note. Also `resolve` without a
browser."""

from __future__ import annotations

import json
import re
from urllib.parse import parse_qs, urlparse

import pytest
from test_ui_browse import shared_app

RUNS = "synth-sb-binder-weak,synth-sb-balanced-direct"


def params(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(url).query).items()}


def test_resolve_keeps_what_exists_and_names_the_rest(demo_db):
    from db.store import Store
    from ui.links import query, resolve
    from ui.shell import TAB_IDS

    store = Store(demo_db)
    try:
        view, note = resolve(store, {"benchmark": "stembind", "runs": RUNS, "tab": "browse", "group": "sb-007",
                                     "pattern": "cat_cant_bind"}, TAB_IDS)
        assert note == "" and view is not None
        assert (view.benchmark, view.runs, view.group, view.pattern) == ("stembind", RUNS.split(","), "sb-007",
                                                                        "cat_cant_bind")
        assert params("?" + query(view.as_dict())) == {"benchmark": "stembind", "runs": RUNS, "group": "sb-007",
                                                       "pattern": "cat_cant_bind"}
        view, note = resolve(store, {"benchmark": "nope", "runs": "ghost", "tab": "x", "group": "g-9"}, TAB_IDS)
        assert view is not None and view.benchmark == store.benchmarks()[0]["name"] and view.tab == "browse"
        assert view.group == "" and len(view.runs) == 2
        for part in ("benchmark 'nope'", "run 'ghost'", "tab 'x'", "group 'g-9'"):
            assert part in note
        assert resolve(store, {}) == (None, "")
    finally:
        store.close()


def test_a_links_group_never_replaces_the_group_the_user_opened(demo_db):
    """Browse applies a link's group when the header's runs change while the page lands on the link; a group
    the user opened meanwhile stays (it was reopened on CI: Back then returned to the user's group)."""
    import gradio as gr

    from db.store import Store
    from ui.browse import linked_group
    from ui.links import resolve

    unchanged = (gr.update(),) * 4
    store = Store(demo_db)
    try:
        view, _ = resolve(store, {"benchmark": "stembind", "runs": RUNS, "group": "sb-007"})
        for shown in (None, "", "sb-007", " sb-007 "):
            q, group, html, opened = linked_group(store, "stembind", RUNS.split(","), view, shown)
            assert group.get("value") == opened == "sb-007" and 'data-group="sb-007"' in html
        assert linked_group(store, "stembind", RUNS.split(","), view, "sb-010") == unchanged
        assert linked_group(store, "stembind", RUNS.split(",")[:1], view, "") == unchanged  # other runs
    finally:
        store.close()


@pytest.fixture(scope="module")
def app(request, demo_db, tmp_path_factory):
    return shared_app(request, demo_db, tmp_path_factory)


# every address change of the page, kept in sessionStorage across its reloads: a failed wait for the address
# says how the history got there
ADDRESS_LOG_JS = """(() => {
  const log = (how, url) => { const a = JSON.parse(sessionStorage.getItem('ccAddr') || '[]');
    a.push(`${how} ${url} (entries ${history.length})`); sessionStorage.setItem('ccAddr', JSON.stringify(a)); };
  log('load', location.search);
  for (const how of ['pushState', 'replaceState']) {
    const orig = history[how].bind(history);
    history[how] = (s, t, url) => { orig(s, t, url); log(how, location.search); };
  }
  window.addEventListener('popstate', () => log('popstate', location.search));
})()"""


def wait_address(page, part: str, timeout: float = 30000) -> None:  # type: ignore[no-untyped-def]
    """Wait until the address holds `part`; on a timeout the page's address log is in the message."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function("(part) => location.search.includes(part)", arg=part, timeout=timeout)
    except PlaywrightTimeout:
        try:
            log = page.evaluate("() => sessionStorage.getItem('ccAddr')")
        except Exception as exc:  # noqa: BLE001 - a page off the app (about:blank after one Back too many) has none
            log = f"none readable at {page.url}: {exc}"
        raise AssertionError(f"the address never held {part!r}: {page.url}; its changes: {log}") from None


def open_page(app, query: str):  # type: ignore[no-untyped-def]
    page = app["browser"].new_page(viewport={"width": 1400, "height": 1000})
    page.add_init_script(ADDRESS_LOG_JS)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(app["url"] + "/?" + query)
    return page, errors


@pytest.mark.browser
@pytest.mark.slow
def test_link_opens_its_view_survives_reload_and_back(app):
    link = f"benchmark=stembind&runs={RUNS}&tab=browse&group=sb-007&pattern=cat_cant_bind"
    page, errors = open_page(app, link)
    try:
        page.wait_for_selector("#cc-group-view [data-group='sb-007']", timeout=60000)
        assert page.locator("#cc-benchmark input").first.input_value().startswith("stembind")
        page.wait_for_function("document.querySelector('#cc-browse-summary').innerText.includes('matching')",
                               timeout=30000)
        # landed: the address is the view's own (the default tab left out), which names the link's group
        page.wait_for_function("!location.search.includes('tab=')", timeout=30000)
        got = params(page.url)
        assert got["group"] == "sb-007" and got["runs"] == RUNS and got["pattern"] == "cat_cant_bind"
        # the user types another group's id key by key and presses Enter: the address follows the group opened,
        # one new history entry and never a half-typed id
        box = page.locator("#cc-browse-group textarea, #cc-browse-group input").first
        box.fill("")
        box.press_sequentially("sb-010", delay=150)
        box.press("Enter")
        page.wait_for_selector("#cc-group-view [data-group='sb-010']", timeout=30000)
        wait_address(page, "group=sb-010")
        log = json.loads(page.evaluate("() => sessionStorage.getItem('ccAddr')"))
        pushed = [line.split(" (entries")[0] for line in log if line.startswith("pushState ")]  # landing replaces
        assert len(pushed) == 1 and params(pushed[0])["group"] == "sb-010", log
        # Back returns to sb-007 (the page reloads on that address), and a reload keeps it
        page.go_back()
        wait_address(page, "group=sb-007")
        page.wait_for_selector("#cc-group-view [data-group='sb-007']", timeout=60000)
        page.reload()
        page.wait_for_selector("#cc-group-view [data-group='sb-007']", timeout=60000)
        assert params(page.url)["group"] == "sb-007"
        assert errors == []
    finally:
        page.close()


@pytest.mark.browser
@pytest.mark.slow
def test_another_benchmark_closes_a_group_it_lacks(app):
    """The header switched to another benchmark: the previous benchmark's group closes, and the address (the
    switch's own entry, then the runs it picks) names no group."""
    from test_ui_browse import choose

    page, errors = open_page(app, f"benchmark=stembind&runs={RUNS}&group=sb-007")
    try:
        page.wait_for_selector("#cc-group-view [data-group='sb-007']", timeout=60000)
        page.wait_for_function("!location.search.includes('tab=')", timeout=30000)  # landed
        choose(page, "cc-benchmark", re.compile(r"^spur \("))
        page.wait_for_selector("#cc-browse-list [role=gridcell]:has-text('spur-0')", timeout=30000)
        wait_address(page, "benchmark=spur")
        page.wait_for_function("!document.querySelector('#cc-group-view [data-group]')", timeout=30000)
        assert "group" not in params(page.url) and page.locator("#cc-browse-group input, #cc-browse-group "
                                                                "textarea").first.input_value() == ""
        assert errors == []
    finally:
        page.close()


@pytest.mark.browser
@pytest.mark.slow
def test_link_to_metrics_and_a_missing_run(app):
    page, errors = open_page(app, "benchmark=spur&runs=nope,synth-spur-generalist&tab=metrics&section=spur-1")
    try:
        page.wait_for_selector("#cc-metrics-summary", timeout=60000)
        assert re.search(r"run 'nope'.*nearest view", page.locator("#cc-link-note").inner_text())
        selected = page.locator("#cc-metrics-sections [role=tab][aria-selected=true]").first.inner_text()
        second = page.locator("#cc-metrics-sections [role=tab]").nth(1).inner_text()
        assert selected == second
        # the address names the link's view as the page opens, and is replaced once the view has landed
        page.wait_for_function("location.search.includes('tab=metrics') && !location.search.includes('nope')",
                               timeout=30000)
        assert params(page.url)["runs"] == "synth-spur-generalist" and params(page.url)["section"] == "spur-1"
        page.locator("#cc-tabs [role=tab]", has_text="Browse").first.click()
        page.wait_for_function("!location.search.includes('tab=metrics')", timeout=30000)
        page.go_back()
        page.wait_for_selector("#cc-metrics-summary", timeout=60000)
        assert "tab=metrics" in page.url and errors == []
    finally:
        page.close()


@pytest.mark.browser
@pytest.mark.slow
def test_link_lands_on_its_view_after_login(demo_db, tmp_path, ui_browser):
    from conftest import copy_store
    from uiharness import running_app

    from ui.auth import hash_password

    db = copy_store(demo_db, tmp_path / "store")
    users = tmp_path / "users.txt"
    users.write_text(f"ann:{hash_password('s3cret-pass')}\n", encoding="utf-8")
    with running_app(db, "--auth", str(users)) as url:
        page = ui_browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            page.goto(f"{url}/?benchmark=stembind&runs={RUNS}&group=sb-007")
            page.locator("input[type=text]").first.fill("ann")
            page.locator("input[type=password]").fill("s3cret-pass")
            page.get_by_role("button", name="Login").click()
            page.wait_for_selector("#cc-group-view [data-group='sb-007']", timeout=60000)
            assert params(page.url)["group"] == "sb-007"
        finally:
            page.close()


@pytest.mark.browser
@pytest.mark.slow
def test_link_to_the_benchmark_the_header_opens_on(app):
    """A link naming the store's first benchmark (the header's default, so no switch of benchmark fires) opens
    its runs and group, not the header's default picks (it did at 1,000 runs, and on the demo's first
    benchmark)."""
    runs = "synth-fe-camera-default,synth-fe-frameaware-first,synth-fe-frameaware"
    page, errors = open_page(app, f"benchmark=frameevidence&runs={runs}&tab=browse&group=fe-test-fq2-001")
    try:
        page.wait_for_selector("#cc-group-view [data-group='fe-test-fq2-001']", timeout=60000)
        page.wait_for_function("location.search.includes('group=fe-test-fq2-001')", timeout=30000)
        got = params(page.url)
        assert got["benchmark"] == "frameevidence" and got["runs"] == runs
        picked = page.locator("#cc-runs .token").all_inner_texts()
        assert [t.split(" ")[0] for t in picked] == runs.split(","), picked
        assert errors == []
    finally:
        page.close()
