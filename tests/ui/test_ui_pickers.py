"""Every picker shows what is in the store (issue 14 point 2): data added by the CLI while the server runs is
listed after a reload; data imported in the Data tab is listed at once, with no Refresh and no error toast."""

from __future__ import annotations

import json

import pytest
from conftest import copy_store, fe_lines, run_cli, write_benchmark
from uiharness import browser, events_started, open_page, running_app, wait_events

from db.store import Store

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def options(page, elem_id):
    """The choices a dropdown offers, read by opening it as a user would."""
    page.locator(f"#{elem_id} input").first.click()
    listbox = page.locator("ul[role=listbox]").first
    listbox.wait_for()
    texts = [t.replace("✓", "").strip() for t in listbox.locator("li").all_inner_texts()]
    page.keyboard.press("Escape")
    page.locator("#cc-header h3").first.click()       # close it and move the focus away
    return texts


def options_after(page, elem_id, sent):
    """The choices of a dropdown once what the page sent since `sent` (an events_started reading) has come back
    (a refresh of the choices may be on its way until then)."""
    wait_events(page, sent)
    return options(page, elem_id)


def options_until(page, elem_id, ok, timeout=30.0):
    """A dropdown's choices once `ok(choices)` holds, opened again until it does (each look is a user's action,
    with no pause between): after an import the page keeps sending events, so there is no moment when
    everything has come back to wait for."""
    import time

    deadline = time.time() + timeout
    while not ok(got := options(page, elem_id)) and time.time() < deadline:
        pass
    return got


def pick(page, elem_id, label):
    page.locator(f"#{elem_id} input").first.click()
    page.locator("ul[role=listbox] li").filter(has_text=label).first.click()


def toasts(page):
    return page.locator(".toast-body").all_inner_texts()


def has(opts, name):
    return any(name in o for o in opts)


@pytest.fixture
def served(demo_db, tmp_path):
    db = copy_store(demo_db, tmp_path / "store")
    with running_app(db) as url:
        yield url, db


def _preds(path, items, answer="A"):
    path.write_text("".join(json.dumps({"item_id": i, "response": answer}) + "\n" for i in items))
    return path


def test_cli_additions_show_after_reload(served, tmp_path):
    url, db = served
    with browser() as b:
        page = open_page(b, viewport={"width": 1440, "height": 1000})
        page.goto(url)
        page.get_by_role("tab", name="Browse").wait_for()
        assert not has(options(page, "cc-benchmark"), "cli-bench")
        # while the server runs: a benchmark and a run by the CLI, and an unfinished StemBind run
        bench = write_benchmark(tmp_path / "cli", fe_lines(prefix="c"))
        run_cli("import", str(bench), "--name", "cli-bench", db=db, check=True)
        _preds(tmp_path / "p.jsonl", [x["item_id"] for x in fe_lines(prefix="c")])
        run_cli("import-predictions", str(tmp_path / "p.jsonl"), "--run", "cli-run", db=db, check=True)
        run_cli("run", "--benchmark", "stembind", "--run", "cli-sb", "--runner", "baseline", "--model", "random",
                "--no-progress", db=db, check=True)
        s = Store(db)
        s.set_run_status("cli-sb", "cancelled")       # as a run stopped half-way leaves it
        s.close()
        page.reload()
        page.get_by_role("tab", name="Browse").wait_for()
        assert has(options(page, "cc-benchmark"), "cli-bench")
        pick(page, "cc-benchmark", "cli-bench")
        page.locator("#cc-runs").get_by_text("cli-run").first.wait_for()   # the header selects its runs
        sent = events_started(page)
        page.get_by_role("tab", name="Data").click()
        assert options_after(page, "cc-data-export-run", sent) == ["cli-run"]
        page.get_by_role("tab", name="Calibration").click()
        assert has(options(page, "cb-run"), "cli-sb")
        page.get_by_role("tab", name="Judge").click()
        assert has(options(page, "jd-run"), "cli-sb")
        page.get_by_role("tab", name="Run").click()
        sent = events_started(page)
        pick(page, "cc-run-benchmark", "stembind")
        assert has(options_after(page, "cc-run-resume-pick", sent), "cli-sb (cancelled")
        assert toasts(page) == []


def test_data_tab_import_shows_everywhere_without_reload(served, tmp_path):
    url, db = served
    import zipfile

    folder = write_benchmark(tmp_path / "up", fe_lines(prefix="u"), name="items.jsonl").parent
    bench = tmp_path / "uploaded.zip"                     # the items with their images, as a user uploads them
    with zipfile.ZipFile(bench, "w") as z:
        for f in sorted(folder.rglob("*")):
            if f.is_file():
                z.write(f, f.relative_to(folder).as_posix())
    preds = _preds(tmp_path / "ui_preds.jsonl", [x["item_id"] for x in fe_lines(prefix="u")])
    with browser() as b:
        page = open_page(b, viewport={"width": 1440, "height": 1000})
        page.goto(url)
        page.get_by_role("tab", name="Data").click()
        page.locator("#cc-data-name input, #cc-data-name textarea").first.fill("uploaded")
        page.locator("#cc-data-upload input[type=file]").set_input_files(str(bench))
        page.locator("#cc-data-uploaded[data-file='uploaded.zip']").wait_for(timeout=60_000)  # a loaded 2-core CI machine is slow
        page.locator("#cc-data-validate").click()
        page.locator("#cc-data-verdict[data-file='uploaded.zip'][data-committed='0']").wait_for(timeout=60_000)
        assert page.locator("#cc-data-verdict").get_attribute("data-ok") == "1", page.locator("#cc-data-report").inner_text()
        page.locator("#cc-data-import").click()
        page.get_by_text("Imported.").wait_for(timeout=60_000)
        # the header now shows the new benchmark (no Refresh pressed)
        page.locator("#cc-benchmark input").first.wait_for()
        page.wait_for_function("() => document.querySelector('#cc-benchmark input').value.startsWith('uploaded')")
        # predictions into a new run of it
        page.get_by_text("Predictions (JSONL or CSV) into a run").click()
        page.locator("#cc-data-run input, #cc-data-run textarea").first.fill("ui-run")
        page.locator("#cc-data-upload button[aria-label='Clear']").first.click()
        page.locator("#cc-data-upload input[type=file]").set_input_files(str(preds))
        page.locator("#cc-data-uploaded[data-file='ui_preds.jsonl']").wait_for(timeout=60_000)
        page.locator("#cc-data-validate").click()
        # this file's verdict (the "Imported." of the items above is a verdict too)
        page.locator("#cc-data-verdict[data-ok='1'][data-file='ui_preds.jsonl'][data-committed='0']").wait_for(
            timeout=30_000)
        page.locator("#cc-data-import").click()
        page.locator("#cc-data-verdict[data-ok='1'][data-file='ui_preds.jsonl'][data-committed='1']").wait_for(
            timeout=30_000)
        assert page.locator("#cc-data-verdict").inner_text() == "Imported."
        page.locator("#cc-runs").get_by_text("ui-run").first.wait_for(timeout=20_000)  # selected in the header
        assert has(options(page, "cc-benchmark"), "uploaded (frameevidence, 12 items)")
        assert options_until(page, "cc-data-export-run", lambda o: o == ["ui-run"]) == ["ui-run"]
        with page.expect_response(lambda r: "/gradio_api/run/predict" in r.url):  # the tab's select event
            page.get_by_role("tab", name="Run").click()
        assert has(options(page, "cc-run-benchmark"), "uploaded")
        assert toasts(page) == [], toasts(page)
    s = Store(db)
    assert s.run("ui-run")["n_predictions"] == 12
    s.close()
