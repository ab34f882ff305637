"""The Run tab in the real app: a baseline runs to completion and appears in the header's run picker; an
OpenAI-compatible run (a real local HTTP server with latency) shows a moving progress bar, cancels, resumes
to completion with nothing twice; two other browser sessions browse while it runs."""

from __future__ import annotations

import pytest
from conftest import copy_store
from uiharness import browser, run_progress, running_app, wait_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def chat():
    from chat_server import ChatServer

    server = ChatServer(latency=0.05).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def db(demo_db, tmp_path_factory):
    return copy_store(demo_db, tmp_path_factory.mktemp("run"))


@pytest.fixture(scope="module")
def app(db):
    with running_app(db) as url:
        yield url


def fill(page, elem_id, text):
    box = page.locator(f"#{elem_id} input, #{elem_id} textarea").first
    box.fill(str(text))
    box.press("Tab")


def progress(page):
    p = run_progress(page)
    return p["status"], p["done"], p["total"]


def test_baseline_runs_to_completion_and_appears_in_picker(app, db):
    with browser() as b:
        page = b.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(app)
        page.get_by_role("tab", name="Run", exact=True).click()
        fill(page, "cc-run-name", "gui-random-r4")
        page.locator("#cc-run-rotations input[type=number]").fill("4")
        page.locator("#cc-run-rotations input[type=number]").press("Tab")
        page.locator("#cc-run-start").click()
        p = wait_run(page, "gui-random-r4", ("done", "failed"))
        status, done, total = p["status"], p["done"], p["total"]
        assert status == "done", page.locator("#cc-run-progress").inner_text()
        assert total == str(done) and done == 288 * 4
        assert "done 1152 / 1152" in page.locator("#cc-run-progress").inner_text()
        # the new run is offered by the header's picker (Browse / Metrics follow it): no restart, no Refresh
        page.locator("#cc-runs input").click()
        page.get_by_role("option", name="gui-random-r4").wait_for(timeout=20_000)
    from db.store import Store

    s = Store(db)
    assert s.run("gui-random-r4")["status"] == "done" and s.run("gui-random-r4")["n_predictions"] == 1152
    s.close()


def test_openai_run_moves_cancels_resumes_while_others_browse(app, db, chat):
    with browser() as b:
        page = b.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(app)
        page.get_by_role("tab", name="Run", exact=True).click()
        fill(page, "cc-run-name", "gui-api")
        page.get_by_text("OpenAI-compatible server").click()
        fill(page, "cc-run-base-url", chat.base_url)
        fill(page, "cc-run-api-model", "tiny-test-model")
        fill(page, "cc-run-key-env", "")
        page.get_by_text("Decoding and execution").click()
        page.locator("#cc-run-concurrency input").fill("1")
        page.locator("#cc-run-concurrency input").press("Tab")
        chat.hold_from = 200  # the first job is held at its 201st request: the cancel always lands before its end
        page.locator("#cc-run-start").click()
        wait_run(page, "gui-api", ("running",), timeout=60)
        # the done count, read in the page at every frame, until it has shown three values
        page.evaluate("() => { window.__ccDone = []; }")
        page.wait_for_function("""() => { const e = document.getElementById('cc-run-progress');
            const d = Number((e && e.dataset.done) || 0), s = window.__ccDone;
            if (s[s.length - 1] !== d) s.push(d);
            return new Set(s).size >= 3; }""", timeout=60_000)
        seen = page.evaluate("() => window.__ccDone")
        assert len(set(seen)) >= 3 and seen == sorted(seen), seen  # the bar moves forward
        page.locator("#cc-run-cancel").click()
        # resume at once: the cancelled run is offered for resume by the cancel itself (no Refresh, no wait for
        # its last request), and Resume starts a new job as soon as the old one has stopped
        page.wait_for_function("() => document.querySelector('#cc-run-resume-pick input').value.startsWith('gui-api')",
                               timeout=10_000)
        chat.hold_from = None
        chat.gate.set()  # a request held at the 201st ends; the cancelled job takes no new task
        # the resumed job answers fast and is held at its second request (at concurrency 1 the cancelled job sends
        # at most the one request it had started): it is still going on when the others look
        chat.latency, chat.hold_from = 0.005, len(chat.bodies) + 1
        fill(page, "cc-run-base-url", chat.base_url)
        page.locator("#cc-run-resume").click()
        page.wait_for_function("() => document.querySelector('#cc-run-progress').dataset.job !== undefined &&"
                               " document.querySelectorAll('#cc-run-jobs tr[data-run=\"gui-api\"]').length == 2",
                               timeout=60_000)
        first = page.locator("#cc-run-jobs tr[data-run='gui-api']").last  # newest first: the older job is last
        assert first.get_attribute("data-status") == "cancelled"
        done = int(first.locator(".cc-job-held").inner_text().split("/")[0])
        assert 0 < done < 288
        wait_run(page, "gui-api", ("running",), timeout=60)
        # progress counts what the run holds: the earlier job's predictions included, of all 288 tasks
        _, held, total = progress(page)
        assert int(total) == 288 and held >= done
        assert "from earlier jobs" in page.locator("#cc-run-progress").inner_text()
        # "Started by" shows without scrolling the history table
        wrap = page.locator("#cc-run-jobs .cc-jobs-wrap").bounding_box()
        head = page.locator("#cc-run-jobs th", has_text="Started by").bounding_box()
        assert head["x"] >= wrap["x"] and head["x"] + head["width"] <= wrap["x"] + wrap["width"], (head, wrap)
        # two other sessions browse while the run goes on
        others = [b.new_page(viewport={"width": 1200, "height": 900}) for _ in range(2)]
        for other in others:
            other.goto(app)
        for other in others:  # each sees the run going on ...
            other.get_by_role("tab", name="Run", exact=True).click()
            assert "running" in other.locator("#cc-run-jobs tr", has_text="gui-api").first.inner_text(timeout=20_000)
        chat.hold_from = None  # first: a request arriving from now on clears the gate no more
        chat.gate.set()
        for other in others:  # ... and browses the metrics meanwhile
            other.get_by_role("tab", name="Metrics").click()
            other.locator(".cc-mtable[data-table='fe_table4']").wait_for(timeout=60_000)
        p = wait_run(page, "gui-api", ("done", "failed"), timeout=120)
        status, done2, total2 = p["status"], p["done"], p["total"]
        assert status == "done" and int(total2) == 288 and done2 == 288
        # every job keeps its own row: the cancelled one keeps its numbers, the resume adds a row
        page.wait_for_function("() => document.querySelector('#cc-run-jobs tr[data-run=\"gui-api\"]')"
                               ".dataset.status == 'done'", timeout=20_000)
        rows = page.locator("#cc-run-jobs tr[data-run='gui-api']")
        assert rows.count() == 2
        assert [rows.nth(i).get_attribute("data-status") for i in range(2)] == ["done", "cancelled"]
        assert rows.nth(0).locator(".cc-job-held").inner_text().replace(" ", "") == "288/288"
        assert int(rows.nth(1).locator(".cc-job-held").inner_text().split("/")[0]) == done
        assert "resume" in rows.nth(0).inner_text() and "new" in rows.nth(1).inner_text()
    from db.store import Store

    s = Store(db)
    r = s.run("gui-api")
    assert r["status"] == "done" and r["n_predictions"] == 288
    from db.jobs import recent_jobs

    hist = [j for j in recent_jobs(s) if j["run"] == "gui-api"]
    assert [(j["kind"], j["status"]) for j in hist] == [("resume", "done"), ("new", "cancelled")]
    assert hist[1]["held_before"] == 0 and hist[1]["sent"] == done
    assert hist[0]["held_before"] == done and hist[0]["held_before"] + hist[0]["sent"] == 288
    s.close()
    sent = [body for body in chat.bodies]
    assert len(sent) == 288  # nothing twice
