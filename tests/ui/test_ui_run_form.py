"""The Run tab as a new user meets it (issue 26 point 5): the API-key field is empty with a hint that says so, and
a run against a keyless OpenAI-compatible server (a real local HTTP server) works on the first try; Cancel is
disabled while nothing runs (no error toast, no red badge), enabled while the run goes and disabled again after
it; the fitted baselines are offered only on a benchmark with a train split, and a split the benchmark lacks is
refused at Start, with why."""

from __future__ import annotations

import pytest
from conftest import fe_lines, write_benchmark
from serverstores import two_benchmarks
from uiharness import (
    browser,
    events_started,
    open_page,
    run_progress,
    running_app,
    settle,
    shot,
    wait_events,
    wait_run,
)

from core.runners.baselines import BASELINES

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    from chat_server import ChatServer

    from db.importers import import_items
    from db.store import Store

    folder = tmp_path_factory.mktemp("runform")
    db = two_benchmarks(folder)  # fe and gen: a test split only
    s = Store(db)
    import_items(s, write_benchmark(folder / "trained", fe_lines() + fe_lines(split="train", prefix="t")),
                 name="fe-trained")
    s.close()
    with ChatServer(latency=0.05) as chat, running_app(db) as url:
        yield url, chat


def fill(page, elem_id, text):
    box = page.locator(f"#{elem_id} input, #{elem_id} textarea").first
    box.fill(str(text))
    box.press("Tab")


def options(page, elem_id):
    page.locator(f"#{elem_id} input").click()
    page.get_by_role("option").first.wait_for(timeout=10_000)
    names = page.get_by_role("option").all_inner_texts()
    page.keyboard.press("Escape")
    return [n.replace("✓", "").strip() for n in names]


def errors(page):
    """Error toasts and the red error badges Gradio puts on an event's outputs."""
    return page.locator(".toast-body.error, .toast-body").all_inner_texts() + page.locator(
        "#cc-run-progress-box .error, #cc-run-resume-pick .error").all_inner_texts()


def test_run_form_for_a_new_user(app):
    url, chat = app
    with browser() as b:
        page = open_page(b, viewport={"width": 1440, "height": 1000})
        page.goto(url)
        page.get_by_role("tab", name="Run", exact=True).click()
        cancel = page.locator("#cc-run-cancel")
        cancel.wait_for(timeout=20_000)
        assert cancel.is_disabled()
        cancel.click(force=True)  # what an impatient user does: nothing happens
        settle(page, "Run")  # anything the click sent has come back
        assert errors(page) == [] and run_progress(page)["status"] == "idle"
        # the fitted baselines only where there is a train split, and the hint says why
        assert options(page, "cc-run-baseline") == ["random"]
        assert "fitted on the train split" in page.locator("#cc-run-baseline").inner_text()
        page.locator("#cc-run-benchmark input").click()
        page.get_by_role("option", name="fe-trained").first.click()
        page.wait_for_function("() => !document.querySelector('#cc-run-baseline').innerText.includes('random only')",
                               timeout=20_000)
        assert options(page, "cc-run-baseline") == list(BASELINES)
        page.locator("#cc-run-benchmark input").click()
        page.get_by_role("option", name="fe", exact=True).first.click()
        # a split the benchmark lacks is refused at Start, with why; nothing starts
        fill(page, "cc-run-name", "gui-dev")
        fill(page, "cc-run-split", "dev")
        page.locator("#cc-run-start").click()
        page.locator(".toast-body").first.wait_for(timeout=20_000)
        assert "no items in split 'dev' (splits: test)" in " ".join(errors(page))
        assert run_progress(page)["status"] == "idle" and cancel.is_disabled()
        page.locator(".toast-body .toast-close, .toast-close").first.click()
        # a keyless OpenAI-compatible server: the key field is empty and its hint says that is right
        fill(page, "cc-run-split", "test")
        fill(page, "cc-run-name", "gui-keyless")
        page.get_by_text("OpenAI-compatible server").click()
        key = page.locator("#cc-run-key-env input, #cc-run-key-env textarea").first
        key.wait_for(state="visible", timeout=20_000)
        assert key.input_value() == ""
        assert "empty: no key" in page.locator("#cc-run-key-env").inner_text()
        fill(page, "cc-run-base-url", chat.base_url)
        fill(page, "cc-run-api-model", "tiny-test-model")
        page.get_by_text("Decoding and execution").click()
        page.locator("#cc-run-concurrency input").fill("1")
        page.locator("#cc-run-concurrency input").press("Tab")
        chat.hold_from = len(chat.bodies) + 3  # the run is held at its 4th request: still going on when cancelled
        page.locator("#cc-run-start").click()
        wait_run(page, "gui-keyless", ("running",), timeout=60)
        page.wait_for_function("() => !document.querySelector('#cc-run-cancel').disabled", timeout=20_000)
        page.wait_for_function("() => Number(document.querySelector('#cc-run-progress').dataset.done) >= 2",
                               timeout=60_000)
        shot(page, "run-form-running.png")
        sent = events_started(page)
        cancel.click()
        chat.hold_from = None  # first: a request arriving from now on clears the gate no more
        chat.gate.set()  # the held request ends; the cancelled run takes no new task
        p = wait_run(page, "gui-keyless", ("cancelled",), timeout=60)
        assert p["done"] >= 2 and "errors 0" in p["text"]
        page.wait_for_function("() => document.querySelector('#cc-run-cancel').disabled", timeout=20_000)
        wait_events(page, sent)  # the cancel's events and the progress timer's last ticks have come back
        assert errors(page) == []
        shot(page, "run-form-cancelled.png")
    assert len(chat.bodies) >= 2
