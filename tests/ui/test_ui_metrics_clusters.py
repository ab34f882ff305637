"""The Metrics tab's bootstrap-cluster pickers (000 App. A, D.6) in the real app: Table 13's interval columns follow
the picks and equal `score --json --cluster ...`."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli
from uiharness import browser

from core.stats import Clustering
from ui.metrics import clusterings_of, union_field_choices

pytestmark = [pytest.mark.browser, pytest.mark.slow]
RUN = "synth-fe-frameaware"


@pytest.mark.parametrize("names, fields, expected", [
    ([], ["scene"], ()),  # nothing picked: the defaults of score
    (["group", "image"], [], (Clustering("group"), Clustering("image"))),
    (["union"], [], (Clustering("union", ("scene",)),)),
    (["image", "union"], ["scene", "source"], (Clustering("image"), Clustering("union", ("scene", "source")))),
    # 000 §6.3's scene clustering, picked in the Metrics and Compare tabs
    (["scene"], [], (Clustering("scene", ("scene",)),)),
    (["group", "scene"], ["template"], (Clustering("group"), Clustering("scene", ("template",)))),
])
def test_clusterings_of(names, fields, expected):
    assert clusterings_of(names, fields) == expected


def test_union_field_choices_lists_fields_shared_by_groups(store, tmp_path):
    from conftest import fe_lines, write_benchmark

    from db.importers import import_items

    lines = fe_lines(2, 2)
    for line in lines:
        line["meta"]["note"] = f"about {line['group_id']}"  # one value per group: links nothing
    import_items(store, write_benchmark(tmp_path / "b", lines), name="fe")
    # scene / relation / source / insufficient_option each have a value two groups share; original_positions
    # is a list, note is unique to each group
    assert union_field_choices(store, "fe") == ["insufficient_option", "relation", "scene", "source"]
    assert union_field_choices(store, None) == []


def _headers(page) -> list[str]:
    table = page.locator(".cc-mtable[data-table='fe_table13']")
    table.wait_for(timeout=120_000)
    return [h.strip() for h in table.locator("th").all_inner_texts()]


def test_picker_changes_table13_columns(demo_db, demo_app):
    cli = json.loads(run_cli("score", "--run", RUN, "--json", "--cluster", "group,image", db=demo_db,
                             check=True).stdout)["metrics"]["repeat_intervals"]
    with browser() as b:
        page = b.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(demo_app)
        page.get_by_role("tab", name="Metrics").click()
        page.locator(".cc-mtable[data-table='fe_table4']").wait_for(timeout=120_000)
        page.get_by_role("tab", name="Rotations · repeats · seeds").click()
        heads = _headers(page)
        assert "95% CI · groups (96)" in heads[2] + heads[3] + heads[4]
        assert any(h.startswith("95% CI · union (") for h in heads)
        pick = page.locator("#cc-metrics-cluster-pick")
        pick.locator(".token", has_text="union components").locator(".token-remove").click()
        pick.locator("input").click()
        page.get_by_role("option", name="exact-image components").click()
        page.locator("body").click(position={"x": 5, "y": 5})
        # the re-render opens a fresh set of section tabs: wait for the new table, then open its section
        page.wait_for_function("""() => [...document.querySelectorAll(".cc-mtable[data-table='fe_table13'] th")]
                                  .some(th => th.textContent.includes('image ('))""", timeout=120_000)
        page.get_by_role("tab", name="Rotations · repeats · seeds").click()
        heads = _headers(page)
        n_image = cli["clusterings"]["image"]["clusters"]
        assert heads[-2:] == ["95% CI · groups (96)", f"95% CI · image ({n_image})"]
        want = cli["quantities"]["repeat_accuracy"]["image"]["ci"]
        cell = page.locator(".cc-mtable[data-table='fe_table13'] tr", has_text="Repeat accuracy").locator("td").last
        assert cell.inner_text().strip() == f"[{100 * want[0]:.1f}, {100 * want[1]:.1f}]"


def test_compare_tab_handler_resamples_the_picked_clusters(store, tmp_path):
    """ui.compare.compare_runs with an exact-image clustering: two groups showing the same image bytes are one
    cluster, and the summary names the clustering."""
    import shutil

    from conftest import fe_lines, write_benchmark

    from db.importers import import_items, import_predictions
    from ui.compare import compare_runs, summary_html

    lines = fe_lines(2, 2)
    folder = tmp_path / "b"
    path = write_benchmark(folder, lines)
    shutil.copy(folder / "img/g1_0_1.png", folder / "img/g1_1_1.png")
    import_items(store, path, name="fe")
    for name, flip in (("a", "g1_0-cam"), ("b", "")):
        preds = tmp_path / f"{name}.jsonl"
        preds.write_text("".join(json.dumps({"item_id": x["item_id"], "response": "A" if x["item_id"] == flip
                                             and x["answer"] != "A" else ("B" if x["item_id"] == flip
                                                                           else x["answer"])}) + "\n"
                                 for x in lines), encoding="utf-8")
        import_predictions(store, preds, run=name, model="m")
    picked = clusterings_of(["image"], [])[0]
    res = compare_runs(store, "fe", "a", "b", "test", draws=500, clustering=picked)
    assert res["clusters"] == "exact-image components"
    assert res["differences"]["accuracy"]["difference"].value == pytest.approx(1 / 12)
    assert "Percentile cluster bootstrap over exact-image components" in summary_html(store, "fe", "a", "b", res, 500)
    assert compare_runs(store, "fe", "a", "b", "test", draws=500)["clusters"] == "groups"
