"""The Chromium UI tests' session fixtures: one `python app.py serve` on the session's demo store for every test
that only reads (`demo_app`), and one Debian chromium for the session (`ui_browser`; each module opens its own
pages or context and closes them). A test that writes keeps its own store copy and server.

Every test that drives Chromium carries the `browser` marker (tests/test_browser_marker.py checks it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers import ROOT, copy_store, fe_lines, run_cli, write_benchmark, write_png  # noqa: F401 - re-exported
from uiharness import browser, running_app


@pytest.fixture(scope="session")
def demo_app(demo_db) -> Iterator[str]:
    """The base URL of one app serving the demo store, shared by the read-only UI tests of the session."""
    with running_app(demo_db) as url:
        yield url


@pytest.fixture(scope="session")
def ui_browser() -> Iterator[object]:
    """One Chromium for the session."""
    with browser() as b:
        yield b
