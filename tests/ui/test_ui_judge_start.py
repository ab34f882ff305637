"""*Run a judge* in the Calibration tab, in the real app and Debian chromium (issue 25 point 6): an annotator
starts the lexical judge and sees its progress and then its agreement with the annotators in the kappa table;
an endpoint judge against a real local chat server with the key field left empty updates its progress while it
runs, and a base URL that is not a URL is refused in one line before anything starts. Every wait is for a
condition. Screenshots go to $CROSSCHECK_SHOTS when it is set."""

from __future__ import annotations

import pytest
from conftest import copy_store
from uiharness import browser, running_app, shot

from db import judging
from db import labels as dbl
from db.store import Store

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RUN = "synth-sb-binder-weak"
REPLY = '{"S1": 1, "S2": 1, "S3": 0, "S4": 1, "first_failure": "S3"}'
PROGRESS = "document.querySelector('#cj-progress')"


@pytest.fixture(scope="module")
def app(demo_db, tmp_path_factory):
    """The app on a copy of the demo store where two annotators labeled the first eight traces of RUN, and a
    keyless chat server answering every judge prompt with the same flags."""
    from chat_server import ChatServer

    db = copy_store(demo_db, tmp_path_factory.mktemp("uijudgestart"))
    store = Store(db)
    n = len(judging.trace_records(store, RUN))
    for i, k in enumerate(judging.trace_records(store, RUN).iloc[:8].itertuples(index=False)):
        for who, flip in (("ann-a", 0), ("ann-b", 1)):
            flags = [1, 1, (i + flip) % 2, (i // 2) % 2]
            dbl.save_label(store, RUN, (k.item_id, int(k.rotation), int(k.repeat)), who,
                           dict(zip(("S1", "S2", "S3", "S4"), flags, strict=True)))
    store.close()
    with ChatServer(latency=0.02, responder=lambda body: REPLY) as chat, running_app(db) as url:
        yield url, chat, n


@pytest.fixture()
def page(app):
    with browser() as b:
        p = b.new_page(viewport={"width": 1440, "height": 1000})
        p.goto(app[0])
        p.get_by_role("tab", name="Calibration").click()
        p.locator("#cj-start").wait_for(timeout=60_000)
        yield p


def fill(page, elem_id, text):
    box = page.locator(f"#{elem_id} input, #{elem_id} textarea").first
    box.fill(str(text))
    box.press("Tab")


def panel(page):
    return page.locator("#cj-progress").evaluate(
        "e => ({status: e.dataset.status, run: e.dataset.run || null, done: Number(e.dataset.done || 0),"
        " total: e.dataset.total, text: e.innerText})")


def test_lexical_then_endpoint_judge_from_the_tab(app, page):
    """One page, one scenario: the endpoint judge follows the lexical one (the panel still names it when the
    endpoint's URL is refused)."""
    _lexical_judge(app, page)
    _endpoint_judge_with_an_empty_key(app, page)


def _lexical_judge(app, page):
    _, _, n = app
    assert page.locator("#cj-cancel").is_disabled() and panel(page)["status"] == "idle"
    name = page.locator("#cj-name input, #cj-name textarea").first
    assert name.input_value() == "stembind-judge-lexical"  # the name proposed for the benchmark's lexical judge
    page.locator("#cb-ff").get_by_text("no judge labels").wait_for(timeout=60_000)  # before: the annotators only
    shot(page, "judge-start-before.png")
    page.locator("#cj-start").click()
    page.wait_for_function(f"() => {PROGRESS} && {PROGRESS}.dataset.run === 'stembind-judge-lexical' && "
                           f"{PROGRESS}.dataset.status === 'done'", timeout=90_000)
    p = panel(page)
    assert (p["done"], p["total"]) == (n, str(n)) and f"done {n} / {n} (100%)" in p["text"]
    assert "judge:lexical" in p["text"] and f"{n} traces judged: {n} ok" in p["text"]
    assert page.locator("#cj-progress progress").get_attribute("value") == str(n)
    # the report is computed again with the new judge: its pairs with both annotators, the first-failure chart
    page.locator("#cj-msg-box").get_by_text("finished; the tables below show its agreement").wait_for(timeout=60_000)
    table = page.locator("#cb-table")
    table.get_by_text("stembind-judge-lexical").first.wait_for(timeout=60_000)
    rows = table.locator("tr", has_text="judge-human")
    assert rows.count() == 2 and "ann-a" in rows.nth(0).inner_text() + rows.nth(1).inner_text()
    assert page.locator("#cb-judge input").input_value() == "stembind-judge-lexical"
    page.locator("#cb-ff").get_by_text("judge stembind-judge-lexical").first.wait_for(timeout=30_000)
    assert page.locator("#cj-cancel").is_disabled()
    shot(page, "judge-start-after-lexical.png")


def _endpoint_judge_with_an_empty_key(app, page):
    url, chat, n = app
    page.locator("#cj-kind").get_by_text("OpenAI-compatible endpoint").click()
    key = page.locator("#cj-key-env input, #cj-key-env textarea").first
    key.wait_for(state="visible", timeout=20_000)
    assert key.input_value() == "" and "empty: no key" in page.locator("#cj-key-env").inner_text()
    # not a URL: refused in one line, nothing starts
    fill(page, "cj-base-url", "127.0.0.1:8000/v1")
    fill(page, "cj-model", "judge-m")
    page.wait_for_function("() => document.querySelector('#cj-name input, #cj-name textarea').value === "
                           "'stembind-judge-judge-m'", timeout=20_000)
    page.locator("#cj-start").click()
    refusal = page.locator("#cj-msg-box .cj-refused")
    refusal.wait_for(timeout=30_000)
    assert refusal.inner_text() == ("Not started: '127.0.0.1:8000/v1' is not a URL: the base URL reads like "
                                    "http://127.0.0.1:8000/v1")
    assert page.locator(".toast-body").count() == 0 and panel(page)["run"] == "stembind-judge-lexical"
    sent = len(chat.bodies)
    fill(page, "cj-base-url", chat.base_url)
    fill(page, "cj-concurrency", 1)
    fill(page, "cj-limit", 12)
    chat.hold_from = sent + 6  # held at its 7th trace: the panel is seen moving before the judge ends
    page.locator("#cj-start").click()
    # the panel moves while the judge runs, and Cancel is enabled meanwhile
    page.wait_for_function(f"() => {PROGRESS} && {PROGRESS}.dataset.run === 'stembind-judge-judge-m' && "
                           f"{PROGRESS}.dataset.status === 'running' && Number({PROGRESS}.dataset.done) >= 2 && "
                           f"Number({PROGRESS}.dataset.done) < 12", timeout=60_000)
    page.wait_for_function("() => !document.querySelector('#cj-cancel').disabled", timeout=20_000)
    shot(page, "judge-start-during.png")
    chat.hold_from = None  # first: a request arriving from now on clears the gate no more
    chat.gate.set()
    page.wait_for_function(f"() => {PROGRESS}.dataset.run === 'stembind-judge-judge-m' && "
                           f"{PROGRESS}.dataset.status === 'done'", timeout=90_000)
    p = panel(page)
    assert (p["done"], p["total"]) == (12, "12") and "errors 0" in p["text"] and "12 ok" in p["text"]
    assert len(chat.bodies) - sent == 12 and all(b["model"] == "judge-m" for b in chat.bodies[sent:])
    page.locator("#cb-table").get_by_text("stembind-judge-judge-m").first.wait_for(timeout=60_000)
    assert page.locator("#cb-judge input").input_value() == "stembind-judge-judge-m"
    page.wait_for_function("() => document.querySelector('#cj-cancel').disabled", timeout=20_000)
    shot(page, "judge-start-after-endpoint.png")
