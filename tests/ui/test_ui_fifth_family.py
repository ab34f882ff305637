"""The fifth test family's own Metrics control in a real browser (tests/fifth_family/; tests/test_fifth_family.py
drives its other generic paths and builds the store): the app runs in this process, where importing the family
registered it (a separately started `app.py serve` would not know it), and the tab draws the family's dropdown
above its table; picking a value redraws the table. Every name comes from the family's objects, so this file
names none of it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from uiharness import open_page

from tests.fifth_family import FAMILY, ROWS, view
from tests.test_fifth_family import BENCH, build_store

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[str]:
    """The real app (ui.shell.launch: the Gradio Blocks on its FastAPI app under uvicorn) on a port of its own,
    in a thread of this process."""
    from ui.shell import launch

    store = build_store(tmp_path_factory.mktemp("family-ui"))
    server = launch(store, port=0, prevent_thread_lock=True)
    try:
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        store.close()


def test_the_family_control_redraws_its_table(served, ui_browser):
    title = view.VIEW.charts.sections[-1][0]  # the family's own section, holding its table
    rows = f"#cc-{ROWS.name} tbody tr"
    page = open_page(ui_browser, viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{served}/?benchmark={BENCH}&runs=a&tab=metrics")
        page.locator("#cc-metrics-summary").wait_for(timeout=90_000)
        page.get_by_role("tab", name=title).click()
        page.locator(rows).first.wait_for(timeout=30_000)
        first = [t.strip() for t in page.locator(f"{rows} td:first-child").all_inner_texts()]
        assert first == ["a"]  # the picked run, as the family's `tables` draws it
        label = ROWS.choices([])[1][0]
        page.locator(f"#cc-{ROWS.name}-pick input").first.click()
        page.get_by_role("option", name=label).first.click()
        page.wait_for_function(f"document.querySelectorAll('{rows}').length === 2", timeout=30_000)
        assert [t.strip() for t in page.locator(f"{rows} td:first-child").all_inner_texts()] == ["a", "b"]
        assert FAMILY.name in page.locator("#cc-metrics-summary").inner_text()
    finally:
        page.context.close()
