"""The paper-protocol choices in the real app (issue 13): the Metrics tab's shortcut-filter model picker
(001 §2.3) and the Calibration tab's ceiling / consensus controls (002 C.3), each equal to the CLI."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from conftest import copy_store, run_cli
from uiharness import browser, open_page, open_section, running_app, wait_events

from core.judge import LexicalJudge
from db import judge_runs, judging
from db.importers import import_labels, import_predictions
from db.store import Store

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TRACES = "synth-sb-binder-weak"
OTHER = "other-text-v1"


@pytest.fixture(scope="module")
def store_db(demo_db, tmp_path_factory):
    """The demo plus three annotators on a frozen calibration sample and a second text-only SPUR model."""
    tmp = tmp_path_factory.mktemp("protocol")
    db = copy_store(demo_db, tmp / "s")
    store = Store(db)
    judge_runs.judge_run(store, TRACES, "lex", LexicalJudge(0.5))
    judge_runs.draw_sample(store, TRACES, "cal", per_operation=4, seed=0)
    sample = judging.sample_frame(store, "cal")
    jf = judging.judgements_frame(store, TRACES, ["lex"]).set_index("item_id")
    rng = np.random.default_rng(5)
    lines = []
    for ann, noise in (("A1", 0.3), ("A2", 0.1), ("A3", 0.1)):
        for item in sample["item_id"]:
            lines.append({"item_id": item, "annotator": ann, "kind": "human", **{
                s: int(jf.loc[item, s]) if rng.random() > noise else 1 - int(jf.loc[item, s])
                for s in ("S1", "S2", "S3", "S4")}})
    path = tmp / "labels.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    import_labels(store, path, TRACES)
    items = store.items_frame("spur")
    for t in range(3):
        r = np.random.default_rng(100 + t)
        pred = tmp / f"other{t}.jsonl"
        pred.write_text("".join(json.dumps({"item_id": i, "response": a if r.random() < 0.45 else
                                            ("B" if a != "B" else "A")}) + "\n"
                                for i, a in zip(items["item_id"], items["answer"], strict=True)))
        import_predictions(store, pred, f"textonly-other-s{t + 1}", model=OTHER, benchmark="spur",
                           config={"input_mode": "text", "seed": t + 1})
    store.close()
    return db


@pytest.fixture(scope="module")
def app(store_db):
    """The app on the module's store and a browser, shared by the module's tests."""
    with running_app(store_db) as url, browser() as b:
        yield url, b


@pytest.fixture
def page(app):
    """A fresh page for each test, its first events come back."""
    url, b = app
    p = open_page(b, viewport={"width": 1400, "height": 1000})
    p.goto(url)
    wait_events(p, 0)
    yield p
    p.context.close()


def choose(page, elem_id: str, option) -> None:
    page.locator(f"#{elem_id} input").first.click()
    page.get_by_role("option", name=option).first.click()


def _rows(page) -> list[str]:
    return [t.strip() for t in page.locator("#cc-shortcut tbody tr td:first-child").all_inner_texts()]


def test_shortcut_picker_one_model_or_the_labelled_pool(page, store_db):
    page.get_by_role("tab", name="Metrics").click()
    choose(page, "cc-benchmark", re.compile(r"^spur \("))
    page.locator(".cc-mtable[data-table='spur_table3']").wait_for(timeout=90_000)
    open_section(page, "Shortcuts", "#cc-shortcut tbody tr")
    assert _rows(page) == [OTHER, "synthetic/generalist-v1"]  # one row per model, no pool by default
    choose(page, "cc-shortcut-pick", OTHER)
    page.wait_for_function("document.querySelectorAll('#cc-shortcut tbody tr').length === 1", timeout=30_000)
    assert _rows(page) == [OTHER]
    choose(page, "cc-shortcut-pick", re.compile(r"^pooled"))
    pooled = page.locator("#cc-shortcut tbody tr", has_text="pooled: ")
    pooled.wait_for(timeout=30_000)
    assert _rows(page)[-1] == f"pooled: {OTHER} + synthetic/generalist-v1"
    cli = json.loads(run_cli("score", "--run", "synth-spur-generalist", "--shortcut-pool", "--json", db=store_db,
                             check=True).stdout)["metrics"]["shortcut"]
    cell = pooled.locator("td[data-path*='flagged']").first
    assert json.loads(cell.get_attribute("data-value")) == pytest.approx(cli["flagged"]["value"])


def test_calibration_ceiling_and_consensus_controls(page, store_db):
    page.get_by_role("tab", name="Calibration").click()
    page.locator("#cb-ceiling").wait_for(timeout=30_000)
    choose(page, "cb-run", re.compile(rf"{TRACES}$"))
    # the sample's option shows once the run's samples have come back (waiting for the pick's events hung when
    # the run was already picked: no event is sent then)
    choose(page, "cb-sample", re.compile(r"^cal "))
    choose(page, "cb-ceiling", "A2 – A3")
    page.keyboard.press("Escape")
    for name in ("A2", "A3"):
        choose(page, "cb-consensus", name)
    page.keyboard.press("Escape")
    page.locator("#cb-compute").click()
    row = page.locator("#cb-table tr.cb-ceiling", has_text="A2–A3 (chosen)")
    row.wait_for(timeout=60_000)
    cli = json.loads(run_cli("calibration", "--run", TRACES, "--sample", "cal", "--ceiling", "A2,A3", "--consensus",
                             "A2,A3", "--json", db=store_db, check=True).stdout)
    cells = row.locator("td.num b").all_inner_texts()
    assert cells == [f"{cli['human_ceiling'][s]['kappa']:.3f}" for s in ("S1", "S2", "S3", "S4")]
    assert "majority of A2, A3 (chosen)" in page.locator("#cb-summary").inner_text()
