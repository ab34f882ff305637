"""The plain handlers behind Browse's search, "Where it fails" panel and tags, on a copy of the demo store
(no browser): a tag becomes a slice field, a slice maps onto the filters it can, a bad query is one line."""

from __future__ import annotations

import pytest
from conftest import copy_store

from db import tags as dbt
from ui import browse, slices_panel
from ui.browse import step_group
from ui.browse_review import change_tag

BENCH = "stembind"


@pytest.fixture(scope="module")
def store(demo_db, tmp_path_factory):
    from db.store import Store

    s = Store(copy_store(demo_db, tmp_path_factory.mktemp("review_handlers") / "store"))
    yield s
    s.close()


def _value(update):
    return update.get("value") if isinstance(update, dict) else update


def test_a_tag_is_a_slice_and_a_slice_click_sets_the_filters_it_can(store):
    run = store.runs(BENCH)[0]["name"]
    tagged = [f"sb-{i:03d}" for i in range(1, 13)]
    for gid in tagged:
        html, _ = change_tag(store, BENCH, gid, "hard", "planted", None, remove=False)
        assert "data-tag=\"hard\"" in html
    assert set(dbt.tags_frame(store, BENCH)["by"]) == {"local"}
    _, chosen, _ = slices_panel.slices_table(store, BENCH, run, None)
    tag_slice = next(c for c in chosen if c["field"] == "tag:hard")
    assert tag_slice["n_groups"] == len(tagged)
    split, kind, field, value, tag, line = slices_panel.slice_filters(store, BENCH, tag_slice)
    assert (_value(split), _value(kind), _value(field), _value(tag)) == ("test", "", "", "hard")
    assert browse.list_groups(store, BENCH, [run], "test", None, None, None, None, None, 1, "hard")["total"] == 12
    two = {"fields": ["kind", "layout"], "values": ["F", "3x3"], "field": "kind & layout", "value": "F & 3x3",
           "split": "test"}
    split, kind, field, value, tag, line = slices_panel.slice_filters(store, BENCH, two)
    assert (_value(kind), _value(field), _value(value), _value(tag)) == ("F", "layout", "3x3", "")
    two_meta = {"fields": ["layout", "n_candidates"], "values": ["3x3", "8"], "field": "layout & n_candidates",
                "value": "3x3 & 8", "split": "test"}
    _, _, field_u, value_u, _, line = slices_panel.slice_filters(store, BENCH, two_meta)
    assert (_value(field_u), _value(value_u)) == ("layout", "3x3") and "without n_candidates = 8" in line


def test_bad_query_is_one_line_and_ids_still_found(store):
    runs = [r["name"] for r in store.runs(BENCH)][:2]
    bad = browse.list_groups(store, BENCH, runs, None, None, None, None, None, '"open', 1)
    assert bad["total"] == 0 and "bad search query" in bad["summary"] and "Traceback" not in bad["summary"]
    typed = browse.list_groups(store, BENCH, runs, None, None, None, None, None, "sb-003", 1)
    assert list(typed["ids"]) == ["sb-003"] and "cc-search-error" not in typed["summary"]


def test_step_moves_through_the_filtered_list_and_stops_at_its_ends(store):
    runs = [r["name"] for r in store.runs(BENCH)][:2]
    ids = [str(g) for g in browse.list_groups(store, BENCH, runs, None, None, None, None, None, None, 1)["ids"]]
    args = [BENCH, runs, None, None, None, None, None, None, 1, None]
    gid, _, page, shown = step_group(store, [*args, ids[49], None, True], +1)
    assert (gid, page, shown) == (ids[50], 2, ids[50])
    gid, _, page, _ = step_group(store, [*args, ids[0], None, True], -1)
    assert (gid, page) == (ids[0], 1)
    gid, _, _, _ = step_group(store, [*args, "", None, True], +1)
    assert gid == ids[0]
