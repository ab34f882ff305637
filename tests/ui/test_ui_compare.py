"""Compare tab in the real app: two runs with known differences (a copy of a run with three answers turned
right and two turned wrong) show those turnover counts, the group transitions the store implies, the
paired CIs, and a list of exactly the changed groups, each opening its view."""

from __future__ import annotations

import json
import re

import pytest
from test_ui_browse import new_page, shared_app

from core import groups as G

pytestmark = [pytest.mark.browser, pytest.mark.slow]

BASE = "baseline-fe-majority"
EDITED = "edited-majority"


def choose(page, elem_id: str, option) -> None:
    page.locator(f"#{elem_id} input").first.click()
    page.get_by_role("option", name=option).first.click()


def prepare(store, folder) -> dict:
    """Import EDITED: BASE's predictions with three wrong answers made right and two right ones made wrong,
    each in a different group. Returns the changed item ids."""
    from db.importers import import_predictions

    items = store.items_frame("frameevidence").set_index("item_id")
    preds = store.predictions_frame(BASE)
    gold = preds["item_id"].map(items["answer"])
    right = preds[(preds["status"] == "ok") & (preds["answer"] == gold)]["item_id"].tolist()
    wrong = preds[(preds["status"] == "ok") & (preds["answer"] != gold)]["item_id"].tolist()
    gained, lost, seen = [], [], set()
    for pool, out, n in ((wrong, gained, 3), (right, lost, 2)):
        for iid in pool:
            g = items.at[iid, "group_id"]
            if g not in seen and len(out) < n:
                out.append(iid)
                seen.add(g)
    lines = []
    for p in preds.to_dict("records"):
        letter = p["answer"]
        if p["item_id"] in gained:
            letter = items.at[p["item_id"], "answer"]
        elif p["item_id"] in lost:
            letter = next(c for c in "ABCD" if c != items.at[p["item_id"], "answer"])
        line = {"item_id": p["item_id"], "response": p["response"] if letter == p["answer"] else letter}
        if p["status"] == "ok":
            line["answer"] = letter
        lines.append(line)
    path = folder / "edited.jsonl"
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    import_predictions(store, path, EDITED, model="majority-edited", benchmark="frameevidence",
                       config={"runner": "import", "model": "majority-edited"})
    return {"gained": gained, "lost": lost}


@pytest.fixture
def env(request, demo_db, tmp_path_factory):
    """The shared app and a fresh page for each test."""
    app = shared_app(request, demo_db, tmp_path_factory)
    page, _ = new_page(app)
    yield {"page": page, "store": app["store"], **app["compare"]}
    page.context.close()


def test_compare_known_differences(env):
    page, store = env["page"], env["store"]
    page.get_by_role("tab", name="Compare").click()
    choose(page, "cc-compare-a", re.compile(rf"^{BASE}"))
    choose(page, "cc-compare-b", re.compile(rf"^{EDITED}"))
    page.locator("#cc-compare-go").click()
    page.wait_for_selector(f"#cc-compare-summary:has-text('{EDITED}')", timeout=60000)
    kpis = {k.locator(".cc-muted").first.inner_text().strip(): k.locator("b").inner_text().strip()
            for k in page.locator("#cc-compare-summary .cc-kpi").all()}
    assert kpis["newly correct"] == "3" and kpis["newly incorrect"] == "2" and kpis["net"] == "+1"
    items = store.items_frame("frameevidence")
    test_items = items[items["split"] == "test"]
    trans = G.group_transitions("frameevidence", test_items, store.run_data(BASE), store.run_data(EDITED))
    counts = G.transition_counts(trans)
    cells = page.locator("#cc-compare-summary table.cc-transitions tbody td").all_inner_texts()
    assert [int(c) for c in cells] == [counts["correct → correct"], counts["correct → wrong"],
                                       counts["wrong → correct"], counts["wrong → wrong"]]
    changed = sorted(items.set_index("item_id").loc[env["gained"] + env["lost"], "group_id"])
    assert sorted(trans.index[trans["changed"]]) == changed
    page.wait_for_selector("#cc-compare-changed [role=gridcell]", timeout=30000)
    shown = page.locator("#cc-compare-changed [data-col='0'][role=gridcell]").all_inner_texts()
    assert sorted(s.strip() for s in shown) == changed
    # paired CIs: the accuracy difference is +1 item over the test split, with an interval around it
    acc_row = page.locator("#cc-compare-summary table.cc-ci-table tr", has_text="accuracy").first.inner_text()
    n_test = len(test_items)
    assert f"{100 / n_test:+.1f} pts" in acc_row and "[" in acc_row
    choose(page, "cc-compare-filter", "Newly wrong somewhere")
    page.wait_for_function(f"document.querySelectorAll(\"#cc-compare-changed [data-col='0'][role=gridcell]\")"
                           f".length === {len(env['lost'])}", timeout=30000)
    page.locator("#cc-compare-changed [data-col='0'][role=gridcell]").first.click()
    lost_groups = set(items.set_index("item_id").loc[env["lost"], "group_id"])
    page.wait_for_selector("#cc-compare-view [data-group]", timeout=30000)
    assert page.locator("#cc-compare-view [data-group]").get_attribute("data-group") in lost_groups
    assert page.locator("#cc-compare-view .cc-answers .cc-run").count() >= 2  # both runs beside each question
