"""The header's "Copy link" copies the address of the view on the screen, which opens that same view."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]
RUNS = "synth-sb-binder-weak,synth-sb-balanced-direct"


def test_copy_link_copies_the_view_on_the_screen(demo_app, ui_browser):
    context = ui_browser.new_context(viewport={"width": 1440, "height": 1000})
    try:
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=demo_app)
        page = context.new_page()
        page.goto(f"{demo_app}/?benchmark=stembind&runs={RUNS}&tab=browse&group=sb-007")
        page.wait_for_selector("#cc-group-view [data-group='sb-007']", timeout=60_000)
        # landed: the app replaced the link's address by the view's own (which leaves out tab=browse)
        page.wait_for_function("location.search.includes('group=sb-007') && !location.search.includes('tab=')",
                               timeout=30_000)
        page.locator("#cc-copy-link").click()
        page.wait_for_function("document.querySelector('#cc-copy-link').dataset.copied", timeout=30_000)
        copied = page.evaluate("navigator.clipboard.readText()")
        assert copied == page.url
        got = {k: v[0] for k, v in parse_qs(urlparse(copied).query).items()}
        assert got["benchmark"] == "stembind" and got["runs"] == RUNS and got["group"] == "sb-007"
        # the copied address, opened in a fresh page, shows the same group
        other = context.new_page()
        other.goto(copied)
        other.wait_for_selector("#cc-group-view [data-group='sb-007']", timeout=60_000)
        other.close()
    finally:
        context.close()
