"""Browse's search, "Where it fails" panel, review keys and tags in the real app (Debian chromium), on the shared
app's copy of the demo store (the tag test writes a tag and removes it). Expectations come from the store and the
CLI, never from the UI code."""

from __future__ import annotations

import json
import re
from collections import defaultdict

import pytest
from conftest import run_cli
from test_ui_browse import shared_app
from uiharness import open_page, settle

from core import groups as G

pytestmark = [pytest.mark.browser, pytest.mark.slow]

BENCH = "stembind"


def choose(page, elem_id: str, option) -> None:
    page.locator(f"#{elem_id} input").first.click()
    page.get_by_role("option", name=option).first.click()


def shown_group(page) -> str | None:
    return page.locator("#cc-group-view .cc-group[data-group]").first.get_attribute("data-group")


def wait_group(page, gid: str) -> None:
    page.wait_for_selector(f"#cc-group-view .cc-group[data-group='{gid}']", timeout=30000)


def search(page, text: str) -> None:
    box = page.locator("#cc-browse-search textarea, #cc-browse-search input").first
    box.fill(text)
    box.press("Enter")


def in_viewport(page, selector: str) -> bool:
    return bool(page.evaluate(
        "s => { const r = document.querySelector(s).getBoundingClientRect();"
        " return r.top >= -2 && r.top < window.innerHeight; }", selector))


@pytest.fixture(scope="module")
def served(request, demo_db, tmp_path_factory):
    """The shared app (tests/ui/test_ui_browse.py `shared_app`: a copy of the demo store, one server and browser
    for the modules that read it) and the benchmark's runs the header selects by default. Its other modules add
    only a FrameEvidence run and a generic benchmark, and write nothing on this benchmark but one audit override
    (Browse), which the expectations here read from the store as they do the UI; the tag test removes its tag."""
    app = shared_app(request, demo_db, tmp_path_factory)
    runs = [r["name"] for r in app["store"].runs(BENCH)][:2]  # the header's default selection
    return {**app, "runs": runs}


@pytest.fixture
def env(served):
    """A fresh page for each test, on the benchmark's Browse list."""
    page = open_page(served["browser"], viewport={"width": 1400, "height": 900})
    page.goto(served["url"])
    page.wait_for_selector("#cc-browse-list [role=gridcell]", timeout=60000)
    choose(page, "cc-benchmark", re.compile(rf"^{BENCH} \("))
    page.wait_for_selector("#cc-browse-list [role=gridcell]:has-text('sb-001')", timeout=30000)
    # the benchmark's chained events (its runs, then every tab's pickers from them) come back before a test picks:
    # Compare's run pickers answered after a test had picked its runs and put the defaults back (a clean-clone run)
    settle(page, "Browse", via="Compare")
    yield {"page": page, "store": served["store"], "db": served["db"], "runs": served["runs"]}
    page.context.close()


def _words(text: str) -> set[str]:
    return set(re.findall(r"[^\W_]+", text.lower()))  # FTS5's unicode61 tokens: letters and digits


def _word_groups(store, runs: list[str]) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(word -> groups whose picked runs' responses / traces or items' texts hold it, word -> groups whose trace
    of the first picked run holds it), by a plain regex scan."""
    out: dict[str, set[str]] = defaultdict(set)
    first: dict[str, set[str]] = defaultdict(set)
    items = store.items_frame(BENCH)
    group_of = dict(zip(items["item_id"], items["group_id"], strict=True))
    for r in items.itertuples():
        for w in _words(" ".join([str(r.question), json.dumps(r.options), json.dumps(r.meta)])):
            out[w].add(r.group_id)
    for run in runs:
        for p in store.predictions_frame(run).itertuples():
            for w in _words(f"{p.response or ''} {p.trace or ''}"):
                out[w].add(group_of[p.item_id])
            if run == runs[0]:
                for w in _words(str(p.trace or "")):
                    first[w].add(group_of[p.item_id])
    return out, first


def test_search_finds_trace_words_marks_them_and_explains_a_bad_query(env):
    page, store, runs = env["page"], env["store"], env["runs"]
    words, in_trace = _word_groups(store, runs)
    items = store.items_frame(BENCH)
    # a word of the first run's traces, in few groups
    word = next(w for w in sorted(in_trace) if len(w) >= 6 and w.isalpha() and 1 <= len(words[w]) <= 5)
    want = words[word] | set(G.filter_groups(G.group_index(items), items, query=word))  # ids / question text too
    search(page, word)
    page.wait_for_selector(f"#cc-browse-summary:has-text('{len(want)} of 120 groups')", timeout=30000)
    shown = {s.strip() for s in page.locator("#cc-browse-list [data-col='0'][role=gridcell]").all_inner_texts()}
    assert shown == want
    gid = sorted(in_trace[word])[0]
    page.locator(f"#cc-browse-list [data-col='0'][role=gridcell]:has-text('{gid}')").first.click()
    wait_group(page, gid)
    marks = page.locator("#cc-group-view mark").all_text_contents()  # some in closed <details>
    assert marks and {m.lower() for m in marks} == {word}
    # a group id typed is still found, and a bad query is one line, not an error dialog
    search(page, "sb-003")
    page.wait_for_selector("#cc-browse-summary:has-text('1 of 120 groups')", timeout=30000)
    search(page, '"unbalanced')
    page.wait_for_selector("#cc-browse-summary .cc-search-error:has-text('bad search query')", timeout=30000)
    assert page.locator("#cc-browse-summary:has-text('0 of 120 groups')").count() == 1
    assert page.locator(".toast-body").count() == 0
    search(page, "")
    page.wait_for_selector("#cc-browse-summary:has-text('120 of 120 groups')", timeout=30000)


def test_keys_walk_the_filtered_list_across_pages(env):
    page, store, runs = env["page"], env["store"], env["runs"]
    from ui.browse import list_groups

    ids = [str(g) for g in list_groups(store, BENCH, runs, None, None, None, None, None, None, 1)["ids"]]
    assert ids[:3] == [s.strip() for s in
                       page.locator("#cc-browse-list [data-col='0'][role=gridcell]").all_inner_texts()[:3]]
    page.locator(f"#cc-browse-list [data-col='0'][role=gridcell]:has-text('{ids[0]}')").first.click()
    wait_group(page, ids[0])
    page.wait_for_function("() => { const r = document.querySelector('#cc-group-view').getBoundingClientRect();"
                           " return r.top >= -2 && r.top < 40; }", timeout=10000)  # brought into view
    page.keyboard.press("j")
    wait_group(page, ids[1])
    page.keyboard.press("k")
    wait_group(page, ids[0])
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press("ArrowRight")
    wait_group(page, ids[1])
    # a key typed in a box is text, not a move: j in the search box, then k moves back from ids[1]
    box = page.locator("#cc-browse-search textarea, #cc-browse-search input").first
    box.click()
    box.press("j")
    assert box.input_value() == "j"
    box.fill("")
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("ArrowLeft")
    wait_group(page, ids[0])
    # across pages: the last group of page 1, then j opens the first of page 2 and the list follows
    gbox = page.locator("#cc-browse-group textarea, #cc-browse-group input").first
    gbox.fill(ids[49])
    gbox.press("Enter")
    wait_group(page, ids[49])
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("j")
    wait_group(page, ids[50])
    page.wait_for_selector("#cc-browse-summary:has-text('page 2 of 3')", timeout=30000)
    page.wait_for_selector(f"#cc-browse-list [role=gridcell]:has-text('{ids[50]}')", timeout=30000)
    page.keyboard.press("Escape")
    page.wait_for_function("() => { const r = document.querySelector('#cc-browse-list').getBoundingClientRect();"
                           " return r.bottom > 0 && r.top < window.innerHeight; }", timeout=10000)
    assert not in_viewport(page, "#cc-group-view") or in_viewport(page, "#cc-browse-list")


def test_slice_click_filters_browse(env):
    page, store, db, runs = env["page"], env["store"], env["db"], env["runs"]
    got = run_cli("slices", "--run", runs[0], "--json", db=db, check=True)
    first = json.loads(got.stdout)["slices"][0]
    page.locator("#cc-slices").get_by_text("Where it fails").click()
    page.wait_for_selector("#cc-slices-table [role=gridcell]", timeout=60000)
    cells = page.locator("#cc-slices-table [role=gridcell][data-col='0']")
    assert cells.first.inner_text().strip() == f"{first['field']} = {first['value']}"
    assert page.locator("#cc-slices-table [role=gridcell][data-col='2']").first.inner_text().startswith(
        f"{first['accuracy']['k']}/{first['accuracy']['n']}")
    items = store.items_frame(BENCH)
    test = items[items["split"] == "test"]
    (field,), (value,) = first["fields"], first["values"]
    assert field not in ("kind", "variant") and not field.startswith("tag:")  # the demo's worst is a meta stratum
    n = test.loc[G.item_stratum(test, field) == value, "group_id"].nunique()
    cells.first.click()
    page.wait_for_selector(f"#cc-browse-summary:has-text('{n} of 120 groups')", timeout=30000)
    assert page.locator("#cc-browse-field input").first.input_value() == field
    assert page.locator("#cc-browse-value input").first.input_value() == value
    assert page.locator("#cc-browse-split input").first.input_value() == "test"


def test_tag_a_group_filter_by_it_and_remove_it(env):
    page, store = env["page"], env["store"]
    from db import tags as dbt

    gbox = page.locator("#cc-browse-group textarea, #cc-browse-group input").first
    gbox.fill("sb-007")
    gbox.press("Enter")
    wait_group(page, "sb-007")
    page.wait_for_selector("#cc-tags-list[data-group='sb-007']", timeout=30000)
    page.locator("#cc-tag-name textarea, #cc-tag-name input").first.fill("recheck")
    page.locator("#cc-tag-note textarea, #cc-tag-note input").first.fill("odd rule text")
    page.locator("#cc-tag-add").click()
    page.wait_for_selector("#cc-tags-list .cc-tag[data-tag='recheck']", timeout=30000)
    rows = dbt.tags_frame(store, BENCH)
    assert rows[["group_id", "tag", "note", "by"]].values.tolist() == [["sb-007", "recheck", "odd rule text", "local"]]
    for sel in ("#cc-browse-split", "#cc-browse-field"):  # the slice test's filters off
        choose(page, sel.lstrip("#"), re.compile(r"^(All|None)$"))
    page.wait_for_selector("#cc-browse-summary:has-text('120 of 120 groups')", timeout=30000)
    choose(page, "cc-browse-tag", "recheck")
    page.wait_for_selector("#cc-browse-summary:has-text('1 of 120 groups')", timeout=30000)
    from db.exporters import item_records

    exported = {r["group_id"]: r["tags"] for r in item_records(store, BENCH)}
    assert [(t["tag"], t["note"], t["by"]) for t in exported["sb-007"]] == [("recheck", "odd rule text", "local")]
    assert all(v is None for g, v in exported.items() if g != "sb-007")
    # an id half-typed in the Group box (no Enter) is not the group shown: the tag row still acts on sb-007
    gbox.fill("sb-00")
    page.locator("#cc-tag-name textarea, #cc-tag-name input").first.fill("recheck")
    page.locator("#cc-tag-remove").click()
    page.wait_for_selector("#cc-tags-list[data-group='sb-007']:has-text('No tags on this group')", timeout=30000)
    assert dbt.tags_frame(store, BENCH).empty


def test_compare_shows_both_runs_side_by_side_with_differences_marked(env):
    page, store = env["page"], env["store"]
    a, b = "synth-sb-balanced-direct", "synth-sb-balanced-thinking"
    page.get_by_role("tab", name="Compare").click()
    choose(page, "cc-compare-a", re.compile(rf"^{a}"))
    choose(page, "cc-compare-b", re.compile(rf"^{b}"))
    page.locator("#cc-compare-go").click()
    page.wait_for_selector("#cc-compare-changed [data-col='0'][role=gridcell]", timeout=60000)
    page.locator("#cc-compare-changed [data-col='0'][role=gridcell]").first.click()
    page.wait_for_selector("#cc-compare-view #cc-compare-sbs", timeout=30000)
    gid = page.locator("#cc-compare-view .cc-group[data-group]").first.get_attribute("data-group")
    items = store.items_frame(BENCH)
    ids = set(items.loc[items["group_id"] == gid, "item_id"])
    pa, pb = ({p.item_id: p for p in store.predictions_frame(r).itertuples()
               if p.item_id in ids and p.rotation == 0 and p.repeat == 0} for r in (a, b))
    rows = page.locator("#cc-compare-sbs tr[data-item]")
    assert {r.get_attribute("data-item") for r in rows.all()} == set(pa) | set(pb)
    differ = 0
    for iid in sorted(set(pa) & set(pb)):
        cells = page.locator(f"#cc-compare-sbs tr[data-item='{iid}'] td")
        ra, rb = str(pa[iid].response or ""), str(pb[iid].response or "")
        assert cells.nth(0).locator(".cc-diff-resp").text_content() == ra
        assert cells.nth(1).locator(".cc-diff-resp").text_content() == rb
        marked = cells.nth(0).locator(".cc-diff-resp del").count() + cells.nth(1).locator(".cc-diff-resp ins").count()
        assert (marked > 0) == (ra.split() != rb.split())
        differ += ra.split() != rb.split()
    assert differ  # a changed group: some response differs
    page.get_by_role("tab", name="Browse").click()
