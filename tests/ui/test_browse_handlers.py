"""The Browse tab's handlers (ui/browse.py) called as plain functions on a real store (a copy of the demo), no
browser: the list's cells, pattern counts, filters and paging, the reset and field handlers, the group view, and
the list following an extraction-audit override. Expectations come from core.groups.group_summary over the
store's own run_data (the reference reader), never from the code under test."""

from __future__ import annotations

import math

import pytest
from conftest import copy_store

from core import groups as G
from core.families.stembind.groups import CATEGORY_LABELS
from ui import browse


@pytest.fixture(scope="module")
def store(demo_db, tmp_path_factory):
    from db.store import Store

    s = Store(copy_store(demo_db, tmp_path_factory.mktemp("browse-handlers")))
    yield s
    s.close()


def names(store, bench: str) -> list[str]:
    return [r["name"] for r in store.runs(bench, with_counts=False)]


def expected_cell(store, bench: str, run: str, gid: str) -> str:
    """The list cell of `run` on group `gid`, written from the reference summary."""
    row = G.group_summary(bench, store.items_frame(bench), store.run_data(run)).loc[gid]
    if int(row["n_answered"]) == 0:
        return "–"
    k, n = int(row["n_correct"]), int(row["n_items"])
    cat = f" {CATEGORY_LABELS[row['category']]}" if row["category"] else ""
    bad = int(row["n_invalid"]) + int(row["n_api_error"])
    return f"{'✓' if k == n else '✗'} {k}/{n}{cat}{f' ⚠{bad}' if bad else ''}"


@pytest.mark.parametrize("bench", ["frameevidence", "stembind", "spur"])
def test_list_cells_match_the_reference_summary(store, bench):
    runs = names(store, bench)
    res = browse.list_groups(store, bench, runs, None, None, None, None, None, None, 1)
    table = res["table"]
    headers = {r["name"]: browse.run_header(r) for r in store.runs(bench, with_counts=False)}
    assert list(table.columns[:4]) == ["group", "split", "kind", "items"]
    assert list(table.columns[4:-1]) == [headers[r] for r in runs] and table.columns[-1] == "question"
    assert len(table) == min(browse.PAGE_SIZE, res["n_groups"]) and res["total"] == res["n_groups"]
    for gid in table["group"].iloc[:: max(1, len(table) // 8)]:
        row = table.set_index("group").loc[gid]
        for run in runs:
            assert row[headers[run]] == expected_cell(store, bench, run, gid), (run, gid)


@pytest.mark.parametrize("bench", ["frameevidence", "stembind", "spur"])
def test_pattern_counts_and_filter_are_any_run(store, bench):
    runs = names(store, bench)[:3]
    items = store.items_frame(bench)
    summaries = [G.group_summary(bench, items, store.run_data(r)) for r in runs]
    res = browse.list_groups(store, bench, runs, None, None, None, None, None, None, 1)
    for key, _ in G.patterns(bench):
        hit = summaries[0][f"p_{key}"].copy()
        for s in summaries[1:]:
            hit |= s[f"p_{key}"]
        assert res["counts"][key] == int(hit.sum()), key
    key = max(res["counts"], key=lambda k: res["counts"][k])
    assert res["counts"][key] > 0
    got = browse.list_groups(store, bench, runs, None, None, None, None, key, None, 1)
    assert got["total"] == res["counts"][key]
    assert got["pages"] == max(1, math.ceil(got["total"] / browse.PAGE_SIZE))
    want = summaries[0][f"p_{key}"].copy()
    for s in summaries[1:]:
        want |= s[f"p_{key}"]
    assert set(got["table"]["group"]) <= set(want[want].index)


def test_filters_search_and_paging(store):
    runs = names(store, "frameevidence")[:2]
    everything = browse.list_groups(store, "frameevidence", runs, None, None, None, None, None, None, 1)
    fq2 = browse.list_groups(store, "frameevidence", runs, "test", "FQ2", None, None, None, None, 1)
    assert 0 < fq2["total"] < everything["total"]
    assert set(fq2["table"]["kind"]) == {"FQ2"} and set(fq2["table"]["split"]) == {"test"}
    gid = str(fq2["table"]["group"].iloc[0])
    hit = browse.list_groups(store, "frameevidence", runs, None, None, None, None, None, gid, 1)
    assert gid in set(hit["table"]["group"]) and hit["total"] < everything["total"]
    last = browse.list_groups(store, "frameevidence", runs, None, None, None, None, None, None, 10**6)
    assert last["page"] == last["pages"] == math.ceil(everything["total"] / browse.PAGE_SIZE)
    assert len(last["table"]) == everything["total"] - (last["pages"] - 1) * browse.PAGE_SIZE
    none = browse.list_groups(store, "frameevidence", runs, None, None, None, None, None, "no-such-words-xyz", 1)
    assert none["total"] == 0 and none["table"].empty and "<b>0</b>" in none["summary"]


def test_no_runs_and_no_benchmark(store):
    res = browse.list_groups(store, "stembind", [], None, None, None, None, "cat_solved", None, 1)
    assert list(res["table"].columns) == ["group", "split", "kind", "items", "question"]
    assert res["total"] == res["n_groups"] and set(res["counts"].values()) == {0}
    assert "pick runs in the header" in res["summary"]
    empty = browse.list_groups(store, None, None, None, None, None, None, None, None, 1)
    assert empty["total"] == 0 and "import one in the Data tab" in empty["summary"]
    # a run of another benchmark picked in the header is left out, not an error
    other = names(store, "spur")[0]
    res = browse.list_groups(store, "stembind", [other], None, None, None, None, None, None, 1)
    assert len(res["table"].columns) == 5


def test_reset_and_field_handlers(store):
    runs = names(store, "stembind")
    out = browse.reset(store, "stembind", runs[1:3])
    split, kind, field, value, detail, table, summary, page, pattern = out
    items = store.items_frame("stembind")
    assert {v for _, v in split["choices"]} == {"", *items["split"].unique()}
    assert {v for _, v in kind["choices"]} == {"", *items["kind"].unique()}
    assert detail["value"] == runs[1] and [v for _, v in detail["choices"]] == runs
    assert page["value"] == 1 and list(table.columns[4:6]) == [browse.run_header(r) for r in
                                                                store.runs("stembind", with_counts=False)[1:3]]
    assert [v for _, v in pattern["choices"]] == ["", *(k for k, _ in G.patterns("stembind"))]
    stratum = next(v for _, v in field["choices"] if v)
    vals = browse.field_values(store, "stembind", stratum)
    assert len(vals["choices"]) > 1 and vals["value"] == ""
    narrowed = browse.refresh_list(store, "stembind", runs, "", "", stratum, vals["choices"][1][1], "", "", 1)
    listed = narrowed[0].data  # a Styler over the list (its verdict cells coloured)
    assert 0 < len(listed) and stratum in listed.columns
    assert set(listed[stratum]) == {vals["choices"][1][1]}
    assert browse.reset(store, None, None)[4]["choices"] == []


def test_open_group_and_select_row(store):
    runs = names(store, "stembind")
    gid = str(browse.list_groups(store, "stembind", runs, None, None, None, None, None, None, 1)["table"]["group"][0])
    html = browse.open_group(store, "stembind", runs, f"  {gid} ", runs[0], True)
    assert f'data-group="{gid}"' in html and "cc-view-stembind" in html
    picked, view, shown = browse.select_row(store, "stembind", runs, runs[0], True, [gid, "test"])
    assert picked == shown == gid and view == html
    assert "No group &#39;nope&#39;" in browse.open_group(store, "stembind", runs, "nope", None, True)
    assert browse.select_row(store, "stembind", runs, None, True, None)[::2] == (None, "")
    # the header switched benchmark: a group it lacks closes (every part emptied), one it has stays
    import gradio as gr

    assert browse.kept_group(store, "stembind", gid) == (gr.update(),) * 3 == browse.kept_group(store, "spur", "")
    closed = browse.kept_group(store, "spur", gid)
    assert closed[::2] == ("", "") and "data-group" not in closed[1]
    # Enter in the Group box: the view, and the group it shows ("" for a half-typed or unknown id)
    assert browse.submit_group(store, "stembind", runs, f" {gid} ", runs[0], True) == (html, gid)
    assert browse.submit_group(store, "stembind", runs, gid[:-1], runs[0], True)[1] == ""
    assert browse.submit_group(store, "stembind", runs, "nope", None, True)[1] == ""
    # a group opened right after a benchmark switch, the run in detail still the previous benchmark's: the view
    # opens, detailing the first picked run (as the switch's reset then picks)
    other = names(store, "spur")[0]
    stale = browse.open_group(store, "stembind", runs, gid, other, True)
    assert f'data-group="{gid}"' in stale and stale == html


def test_list_follows_an_extraction_audit_override(store):
    """A manual answer applied in the audit changes the run's cell on the next list call (the cache is keyed
    by the run's version and the read goes through the override layer)."""
    from db import overrides as dbo
    from db import predictions

    run = "synth-sb-binder-weak"
    bad = next(predictions.problem_predictions(store, run).itertuples())
    gid, item = bad.group_id, bad.item_id
    before = browse.list_groups(store, "stembind", [run], None, None, None, None, None, gid, 1)
    cell = before["table"].set_index("group").loc[gid, browse.run_header(store.run(run))]
    assert "⚠" in cell and cell == expected_cell(store, "stembind", run, gid)
    dbo.apply(store, run, item, rotation=int(bad.rotation), repeat=int(bad.repeat), method="manual",
              letter=bad.gold, by="test")
    after = browse.list_groups(store, "stembind", [run], None, None, None, None, None, gid, 1)
    new = after["table"].set_index("group").loc[gid, browse.run_header(store.run(run))]
    assert new == expected_cell(store, "stembind", run, gid) and new != cell


def test_run_in_detail_takes_a_run_of_the_previous_benchmark(store):
    """Right after a benchmark switch the browser may send the previous benchmark's run in detail with a group
    it opens, before the new choices arrive: the app's own dropdown passes it on (the view then details the first
    picked run, test_open_group_and_select_row) instead of refusing the whole request."""
    from ui.shell import build

    demo = build(store)
    detail = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "cc-browse-detail")
    stale = names(store, "stembind")[0]
    assert detail.preprocess(stale) == stale
