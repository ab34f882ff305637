"""Browse tab and group views in the real app (Debian chromium): each family's view renders the counts and
marks the store implies for a known group, filters change the list, thumbnails open full size, raw responses
open on demand, and the extraction audit records a manual answer. Expectations come from the store."""

from __future__ import annotations

import re

import pytest
from conftest import copy_store
from uiharness import browser, open_page, running_app

from core import groups as G
from core.families.frameevidence.groups import fq2_layout
from core.families.stembind.groups import CATEGORY_LABELS, CATEGORY_RULES

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def choose(page, elem_id: str, option) -> None:
    """Pick an option of a Gradio dropdown by its visible label (str or compiled regex)."""
    page.locator(f"#{elem_id} input").first.click()
    page.get_by_role("option", name=option).first.click()


def open_group(page, gid: str) -> None:
    box = page.locator("#cc-browse-group textarea, #cc-browse-group input").first
    box.fill(gid)
    box.press("Enter")
    page.wait_for_selector(f"#cc-group-view [data-group='{gid}']", timeout=30000)


def set_bench(page, name: str, first_group: str) -> None:
    choose(page, "cc-benchmark", re.compile(rf"^{name} \("))
    page.wait_for_selector(f"#cc-browse-list [role=gridcell]:has-text('{first_group}')", timeout=30000)


def table_counts(page) -> dict[str, str]:
    """run name -> the k/n cell of the view's all-runs table."""
    out = {}
    for row in page.locator("#cc-group-view table.cc-allruns tbody tr").all():
        run = row.locator(".cc-run")
        if run.count():
            out[run.first.get_attribute("title")] = row.locator(".cc-kn").inner_text().strip()
    return out


_SUMMARIES: dict[tuple[str, str], object] = {}


def summary(store, bench: str, run: str):
    """The run's group summary over the whole benchmark (core.groups, computed once per test module)."""
    key = (bench, run)
    if key not in _SUMMARIES:
        _SUMMARIES[key] = G.group_summary(bench, store.items_frame(bench), store.run_data(run))
    return _SUMMARIES[key]


def expected_counts(store, bench: str, gid: str) -> dict[str, str]:
    out = {}
    for r in store.runs(bench):
        row = summary(store, bench, r["name"]).loc[gid]
        if row["n_answered"]:
            out[r["name"]] = f"{int(row['n_correct'])}/{int(row['n_answered'])}"
    return out


_SHARED: dict[str, dict] = {}


def shared_app(request, demo_db, tmp_path_factory) -> dict:
    """One app for the UI test modules that read the demo store (Browse, Compare, safety, links, review; started
    by the first that needs it in the worker, stopped at session end): a copy of the demo store plus the Compare
    module's edited run and the safety module's XSS benchmark. Each test opens its own page. A module that writes
    keeps to what no other module's assertions read (Browse's audit override and review's tag, which it removes)."""
    if "app" in _SHARED:
        return _SHARED["app"]
    import contextlib

    import test_ui_compare
    import test_ui_safety

    from db.store import Store

    folder = tmp_path_factory.mktemp("uiapp")
    db = copy_store(demo_db, folder / "store")
    store = Store(db)
    extra = {"compare": test_ui_compare.prepare(store, folder), "safety": test_ui_safety.prepare(store, folder)}
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    stack = contextlib.ExitStack()
    url = stack.enter_context(running_app(db))
    b = stack.enter_context(browser())
    stack.callback(store.close)
    request.config.add_cleanup(lambda: (_SHARED.clear(), stack.close()))
    _SHARED["app"] = {"url": url, "store": store, "db": db, "browser": b, **extra}
    return _SHARED["app"]


def new_page(shared):
    """A fresh page (a context of its own) on the shared app, the Browse list shown; close it with
    `page.context.close()`."""
    page = open_page(shared["browser"], viewport={"width": 1400, "height": 1000})
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(shared["url"])
    page.wait_for_selector("#cc-browse-list [role=gridcell]", timeout=60000)
    return page, dialogs


@pytest.fixture
def env(request, demo_db, tmp_path_factory):
    """The shared app and a fresh page for each test."""
    app = shared_app(request, demo_db, tmp_path_factory)
    page, dialogs = new_page(app)
    yield {"page": page, "store": app["store"], "url": app["url"], "dialogs": dialogs}
    page.context.close()


def test_fq1_view_counts_and_marks(env):
    page, store = env["page"], env["store"]
    set_bench(page, "frameevidence", "fe-test-fq1-001")
    gid = "fe-test-fq1-002"
    open_group(page, gid)
    view = page.locator("#cc-group-view")
    assert view.locator(".cc-view-fq1").count() == 1
    assert [t.strip() for t in view.locator(".cc-images").first.locator(".cc-img-label").all_inner_texts()] == \
        [f"I{i + 1}" for i in range(len(store.items_frame("frameevidence").set_index("item_id")
                                           .loc[f"{gid}-cam", "images"]))]
    assert table_counts(page) == expected_counts(store, "frameevidence", gid)
    # each question column marks the first selected run right or wrong as its metric counts it
    items = store.items_frame("frameevidence")
    out = G.item_outcomes("frameevidence", items, store.run_data("synth-fe-frameaware")).set_index("item_id")
    for i, v in enumerate(("cam", "obj", "scene")):
        first = view.locator(".cc-cols .cc-col").nth(i).locator(".cc-ans").first.locator(".cc-mark")
        want = "cc-correct" if out.at[f"{gid}-{v}", "correct"] else "cc-"
        assert want in (first.get_attribute("class") or "")
        assert ("✓" in first.inner_text()) == bool(out.at[f"{gid}-{v}", "correct"])


def test_fq2_view_withheld_added_and_ordinal(env):
    page, store = env["page"], env["store"]
    set_bench(page, "frameevidence", "fe-test-fq1-001")
    items = store.items_frame("frameevidence")
    target = None
    for gid, part in items[(items["kind"] == "FQ2") & (items["split"] == "test")].groupby("group_id"):
        lay = fq2_layout({r["variant"]: r for r in part.to_dict("records")})
        if lay["ordinal_note"]:
            target = (gid, lay)
            break
    assert target is not None
    gid, lay = target
    open_group(page, gid)
    view = page.locator("#cc-group-view")
    assert view.locator(".cc-withheld .cc-img-label").inner_text().strip() == f"I{lay['withheld']['position']}"
    assert view.locator(".cc-withheld .cc-cross").count() == 1
    assert view.locator(".cc-added .cc-img-label").inner_text().strip() == f"I{lay['added']['position']}"
    assert "Ordinal reference shifts" in view.locator(".cc-callout").inner_text()
    assert table_counts(page) == expected_counts(store, "frameevidence", gid)


def test_filter_search_and_paging_change_the_list(env):
    page, store = env["page"], env["store"]
    set_bench(page, "frameevidence", "fe-test-fq1-001")
    items = store.items_frame("frameevidence")
    runs = [r["name"] for r in store.runs("frameevidence")][:2]  # the header's default selection
    summaries = [summary(store, "frameevidence", r) for r in runs]
    hit = G.match_patterns(summaries, "fq1_0")
    want = sorted(hit[hit].index)
    choose(page, "cc-browse-pattern", re.compile(r"^FQ1: 0 of 3 frames correct"))
    page.wait_for_selector(f"#cc-browse-summary:has-text('{len(want)} of')", timeout=30000)
    shown = page.locator("#cc-browse-list [data-col='0'][role=gridcell]").all_inner_texts()
    assert shown and set(s.strip() for s in shown) <= set(want)  # the table renders the rows in view
    choose(page, "cc-browse-pattern", "All groups")
    box = page.locator("#cc-browse-search textarea, #cc-browse-search input").first
    box.fill("fq2-01")
    box.press("Enter")
    n = len(G.filter_groups(G.group_index(items), items, query="fq2-01"))
    page.wait_for_selector(f"#cc-browse-summary:has-text('{n} of')", timeout=30000)
    box.fill("")
    box.press("Enter")
    total = items["group_id"].nunique()
    page.wait_for_selector(f"#cc-browse-summary:has-text('{total} of {total}')", timeout=30000)
    page.locator("#cc-browse-next").click()
    page.wait_for_selector("#cc-browse-summary:has-text('page 2 of')", timeout=30000)


def test_stembind_card_categories(env):
    page, store = env["page"], env["store"]
    set_bench(page, "stembind", "sb-001")
    gid = "sb-003"
    open_group(page, gid)
    view = page.locator("#cc-group-view")
    items = store.items_frame("stembind")
    want = {}
    for r in store.runs("stembind"):
        row = summary(store, "stembind", r["name"]).loc[gid]
        if row["n_answered"]:
            cat = row["category"]
            want[r["name"]] = (f"{CATEGORY_LABELS[cat]}: {CATEGORY_RULES[cat]}" if cat in CATEGORY_LABELS
                               else "incomplete")  # the label states its rule (002 §4.3)
    got = {}
    for tr in view.locator("table.cc-decomp tbody tr").all():
        got[tr.locator(".cc-run").get_attribute("title")] = tr.locator(".cc-cat").inner_text().strip()
    assert got == want
    n_p = int((items[items["group_id"] == gid]["kind"] == "P").sum())
    assert view.locator("table.cc-probes tbody tr").count() == n_p
    assert table_counts(page) == expected_counts(store, "stembind", gid)
    # the F trace of the detail run sits beside the S1..S4 targets
    assert view.locator(".cc-trace-grid .cc-stage").count() == 4
    f_pred = store.predictions_frame("synth-sb-binder-weak").set_index("item_id").loc[f"{gid}-F"]
    assert f_pred["trace"].splitlines()[0] in view.locator(".cc-trace pre").first.inner_text()


def test_spur_figure_boxes_toggle(env):
    page, store = env["page"], env["store"]
    set_bench(page, "spur", "spur-001")
    gid = "spur-002"
    open_group(page, gid)
    view = page.locator("#cc-group-view")
    items = store.items_frame("spur")
    panels = items[items["group_id"] == gid]["meta"].iloc[0]["panels"]
    assert view.locator("svg.cc-panels rect:not(.cc-panel-tag)").count() == len(panels)
    assert view.locator("svg.cc-panels rect.cc-panel-tag").count() == len(panels)  # one letter tag per box
    titles = view.locator(".cc-section-title").all_inner_texts()
    stages = [t for t in titles if t.startswith(("Perception", "Understanding", "Reasoning"))]
    want = [s for s in ("Perception", "Understanding", "Reasoning")
            if any(G.stage_of("spur", k) == s.lower() for k in items[items["group_id"] == gid]["kind"])]
    assert [s.split()[0] for s in stages] == want
    assert table_counts(page) == expected_counts(store, "spur", gid)
    page.locator("#cc-browse-boxes input").uncheck()
    page.wait_for_function("!document.querySelector('#cc-group-view svg.cc-panels')", timeout=30000)
    page.locator("#cc-browse-boxes input").check()
    page.wait_for_selector("#cc-group-view svg.cc-panels", timeout=30000)


def test_thumbnail_full_size_and_raw_response(env):
    page, store = env["page"], env["store"]
    set_bench(page, "frameevidence", "fe-test-fq1-001")
    gid = "fe-test-fq1-003"
    open_group(page, gid)
    view = page.locator("#cc-group-view")
    thumb = view.locator(".cc-images .cc-zoom").first
    page.wait_for_function("() => { const i = document.querySelector('#cc-group-view .cc-thumb-wrap img');"
                           " return i && i.complete && i.naturalWidth > 0; }", timeout=30000)
    thumb.locator("summary").click()
    full = thumb.locator(".cc-full img")
    full.wait_for(state="visible", timeout=10000)
    page.wait_for_function("() => { const i = document.querySelector('#cc-group-view .cc-zoom[open] .cc-full img');"
                           " return i && i.complete && i.naturalWidth > 0; }", timeout=30000)
    size = full.evaluate("i => i.naturalWidth")
    digest = store.items_frame("frameevidence").set_index("item_id").loc[f"{gid}-cam", "images"][0]
    assert size == store.conn.execute("SELECT width FROM images WHERE hash = ?", (digest,)).fetchone()[0]
    thumb.locator("summary").click()  # click again to close
    full.wait_for(state="hidden", timeout=10000)
    resp = store.predictions_frame("synth-fe-frameaware").query("rotation == 0 and repeat == 0").set_index(
        "item_id").loc[f"{gid}-cam", "response"]
    raw = view.locator(".cc-detail .cc-raw-details").first
    assert not raw.locator("pre").is_visible()
    raw.locator("summary").click()
    assert raw.locator("pre").inner_text().strip() == resp.strip()
    assert env["dialogs"] == []


def test_audit_manual_answer_recorded(env):
    page, store = env["page"], env["store"]
    set_bench(page, "stembind", "sb-001")
    page.locator("#cc-audit").get_by_text("Extraction audit").first.click()
    choose(page, "cc-audit-run", re.compile(r"^synth-sb-binder-weak"))
    page.wait_for_selector("#cc-audit-list .cc-audit-table", timeout=30000)
    from db import predictions

    n_invalid = predictions.count_statuses(store, "synth-sb-binder-weak")["invalid"]
    assert page.locator("#cc-audit-list .cc-audit-table tbody tr").count() == n_invalid
    first = predictions.problem_predictions(store, "synth-sb-binder-weak").iloc[0]
    choose(page, "cc-audit-method", "Manual letter")
    page.locator("#cc-audit-letter textarea, #cc-audit-letter input").first.fill(first["gold"])
    page.locator("#cc-audit-apply").click()
    page.wait_for_selector("#cc-audit-result:has-text('Applied')", timeout=30000)
    page.wait_for_selector("#cc-audit-history:has-text('manual')", timeout=30000)
    assert page.locator("#cc-audit-list .cc-audit-table tbody tr").count() == n_invalid - 1
    p = store.predictions_frame("synth-sb-binder-weak").set_index(["item_id", "rotation", "repeat"]).loc[
        (first["item_id"], int(first["rotation"]), int(first["repeat"]))]
    assert p["status"] == "ok" and p["answer"] == first["gold"]
    # a layer: the history says the override is what scores read; the imported row is unchanged
    assert "active" in page.locator("#cc-audit-history tbody tr").first.inner_text()
    raw = store.conn.execute(
        "SELECT p.status, p.answer FROM predictions p JOIN runs r ON r.id = p.run_id JOIN items i ON i.id = p.item_pk"
        " WHERE r.name = ? AND i.item_id = ? AND p.rotation = ? AND p.repeat = ?",
        ("synth-sb-binder-weak", first["item_id"], int(first["rotation"]), int(first["repeat"]))).fetchone()
    assert tuple(raw) == ("invalid", None)
