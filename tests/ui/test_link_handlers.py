"""Links without a browser (ui/links.py): what the address bar gets from a view and what a page opened on that
address shows, through the functions the page calls (`by_user` writes the address, `landing` and `resolve` read
it as Gradio hands over its query parameters, Compare's `compare_link` and `linked_pickers` act on it). The
browser side (history, reload, Back) is tests/ui/test_ui_links.py."""

from __future__ import annotations

import json
from urllib.parse import parse_qsl

import gradio as gr
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ui import compare, links
from ui.shell import TAB_IDS

RUNS = ["r1", "r2"]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A FrameEvidence benchmark "fe" (groups g1_0, g1_1, g2_0, g2_1) with two runs."""
    from helpers import fe_lines, write_benchmark

    from db.importers import import_items, import_predictions
    from db.store import Store

    tmp = tmp_path_factory.mktemp("links")
    s = Store(tmp / "store.db")
    lines = fe_lines(2, 2)
    import_items(s, write_benchmark(tmp / "fe", lines), name="fe")
    for run in RUNS:
        path = tmp / f"{run}.jsonl"
        path.write_text("".join(json.dumps({"item_id": x["item_id"], "response": "A"}) + "\n" for x in lines),
                        encoding="utf-8")
        import_predictions(s, path, run)
    yield s
    s.close()


def _address(tab: str = "browse", q: str = "", group: str = "", a: str = "", b: str = "") -> str:
    """The query string the page writes into the address bar when the user shows this view (`by_user`)."""
    address, _ = links.by_user(None, tab, "fe", RUNS, "", "", "", q, group, a, b, "")
    assert address.startswith("push:")
    return address.removeprefix("push:")


def _opened(store, address: str):  # type: ignore[no-untyped-def]
    """The view a page opened on `address` shows: its query parameters as Starlette (Gradio's
    gr.Request.query_params) parses them, resolved by `landing`'s own `resolve`."""
    params = dict(parse_qsl(address, keep_blank_values=True))
    view, note = links.resolve(store, params, TAB_IDS)
    assert view is not None
    return view, note


def test_a_search_with_reserved_characters_reads_back_as_itself(store):
    """The audit's case: `left & right #2` read back as `left ` when the address was not URL-encoded."""
    view, note = _opened(store, _address(q="left & right #2"))
    assert view.q == "left & right #2" and note == ""
    view, _ = _opened(store, _address(group="g2_0", q="a=b&c=d?e+f %20 100%"))
    assert (view.group, view.q) == ("g2_0", "a=b&c=d?e+f %20 100%")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=240))
def test_any_search_text_reads_back_as_itself(store, text):
    """Any text typed into Browse's search box, written into the address and read back from it, is the text
    (as the view keeps it: without surrounding white space, at most 200 characters)."""
    view, note = _opened(store, _address(q=text))
    assert view.q == text.strip()[:200]
    assert note == ""


HOSTILE = "<img src=x onerror=alert(1)>\"'&"


@pytest.mark.parametrize("key", ["benchmark", "runs", "tab", "split", "kind", "pattern", "group", "a", "b",
                                 "section"])
def test_every_note_a_link_prints_is_escaped(store, key):
    """Each value a link names that the store lacks is named in the page's note, escaped: the note never holds
    markup from the address."""
    params = {"benchmark": "fe", key: HOSTILE}
    _, html, *_ = links.landing(store, "fe", params, TAB_IDS)
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html, key
    assert html.count("<") == html.count(">") == 2  # the note's own <div ...> and </div>


def test_the_note_of_a_store_without_benchmarks_is_escaped(tmp_path):
    from db.store import Store

    empty = Store(tmp_path / "empty.db")
    try:
        link, html, *_ = links.landing(empty, None, {"benchmark": HOSTILE}, TAB_IDS)
    finally:
        empty.close()
    assert link is None and html == "<div class='cc-link-note'>the store holds no benchmark yet</div>"


def test_a_link_naming_a_missing_compare_run_lands_on_the_nearest_view(store):
    """`?tab=compare&a=ghost&b=r2`: the page opens Compare on the benchmark with run A left to its picker (not
    "ghost"), says which run it lacks, and compares nothing rather than raising."""
    link, html, *_ = links.landing(store, "fe", {"benchmark": "fe", "tab": "compare", "a": "ghost", "b": "r2"},
                                   TAB_IDS)
    view = links.View.of(link)
    assert view is not None and (view.tab, view.a, view.b) == ("compare", "", "r2")
    assert "This link names run " in html and "ghost" in html and "nearest view" in html
    assert compare.compare_link(store, view, "changed", "group", []) == (gr.skip(),) * 4  # nothing to compare
    a, b, _ = compare.linked_pickers(store, "fe", RUNS, view)
    assert a.get("value") != "ghost" and "ghost" not in str(a.get("choices"))
