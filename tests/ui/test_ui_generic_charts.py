"""The generic family's "Letters and strata" Metrics sub-tab in the real app (Debian chromium): the
predicted-vs-gold letter matrix and the per-stratum accuracy, on a small planted benchmark whose counts are
known by construction."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from conftest import run_cli, write_benchmark
from uiharness import browser, running_app, shot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LETTERS = "ABCD"


def _plant(folder):
    """24 items in 12 groups; topic x / y; predictions: gold A answered B on every `y` item, one invalid."""
    items, preds = [], []
    for i in range(24):
        gold = LETTERS[i % 4]
        topic = "x" if i < 12 else "y"
        items.append({"benchmark": "generic", "item_id": f"q{i}", "group_id": f"g{i // 2}", "split": "test",
                      "kind": "mc", "variant": "", "images": [f"img/{i}.png"], "question": f"question {i}",
                      "options": {k: f"option {k}" for k in LETTERS}, "answer": gold, "meta": {"topic": topic}})
        answer = "B" if (topic == "y" and gold == "A") else gold
        resp = "no idea" if i == 5 else f"<ANSWER>{answer}</ANSWER>"
        preds.append({"item_id": f"q{i}", "response": resp})
    path = write_benchmark(folder, items)
    ppath = folder / "preds.jsonl"
    ppath.write_text("".join(json.dumps(p) + "\n" for p in preds), encoding="utf-8")
    return path, ppath, items, preds


def test_letter_matrix_and_strata_charts(tmp_path):
    db = tmp_path / "store.db"
    path, ppath, items, preds = _plant(tmp_path / "bench")
    run_cli("import", str(path), db=db, check=True)
    run_cli("import-predictions", str(ppath), "--run", "planted", "--benchmark", "items", db=db, check=True)
    want: Counter = Counter()
    for it, p in zip(items, preds, strict=True):
        got = p["response"][8] if p["response"].startswith("<ANSWER>") else "none"
        want[(it["answer"], got)] += 1
    with running_app(db) as url, browser() as b:
        page = b.new_page(viewport={"width": 1440, "height": 1000})
        page.goto(url)
        page.get_by_role("tab", name="Metrics").click()
        page.locator(".cc-mtable[data-table='generic_main']").wait_for(timeout=90_000)
        page.locator("#cc-metrics-sections [role=tab]", has_text="Letters and strata").click()
        table = page.locator(".cc-mtable[data-table='generic_letters']")
        table.wait_for(timeout=60_000)
        heads = [h.strip() for h in table.locator("thead th").all_inner_texts()]
        cols = heads[2:]
        assert cols == ["A", "B", "C", "D", "none"]
        got = Counter()
        for td in table.locator("td[data-path]").all():
            path = json.loads(td.get_attribute("data-path") or "[]")
            value = json.loads(td.get_attribute("data-value") or "null")
            assert path[0] == "letters"
            if value:
                got[(path[1], path[2])] = int(value)
        assert got == +want
        strata = {tuple(json.loads(td.get_attribute("data-path") or "[]")): json.loads(td.get_attribute("data-value"))
                  for td in page.locator(".cc-mtable[data-table='generic_strata'] td[data-path]").all()}
        # x: every item right but the invalid one (11/12); y: the three gold-A items answered B (9/12)
        assert strata == {("per_stratum", "topic", "x"): pytest.approx(11 / 12),
                          ("per_stratum", "topic", "y"): pytest.approx(9 / 12)}
        page.wait_for_function("() => [...document.querySelectorAll('.cc-chart')].filter(e => e.offsetParent)"
                               ".some(e => (e.textContent || '').includes('Predicted vs gold letter'))",
                               timeout=60_000)
        shot(page, "generic_letters.png")
