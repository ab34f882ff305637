"""Readable at a glance, in the real app and Debian chromium: ✓ / ✗ green and red in every view (the group views,
the Browse list, Compare's changed groups, the Judge tab), Esc closes
a zoomed image, SPUR box letters clear of the printed ones, one complete font for bold text, the 002 §3.1
stage names, the "can't bind" rule, and "shown D → original C" for rotated answers."""

from __future__ import annotations

import re

import pytest
from uiharness import events_started, open_page, wait_events

import core.judge
import core.prompts
import core.schema
import ui.views.common
from core import groups as core_groups
from core.families.stembind import ssa_prompt
from core.families.stembind.judging import JUDGING

pytestmark = [pytest.mark.browser, pytest.mark.slow]
GREEN, RED = "rgb(26, 127, 55)", "rgb(207, 34, 46)"
VIEW = "#cc-group-view"


def test_one_set_of_stage_names():
    assert core.schema.STAGE_NAMES == {"S1": "Encode", "S2": "Infer", "S3": "Map", "S4": "Apply"}  # 002 §3.1
    for module in (ssa_prompt, ui.views.common):
        assert module.STAGE_NAMES is core.schema.STAGE_NAMES, module.__name__
    assert JUDGING.stage_names is core.schema.STAGE_NAMES  # the judge reads them from StemBind's stage judging
    prompt = core.judge.build_prompt(core.judge.JudgeInput(
        item_id="x", trace="t", final_answer="A", stages={s: f"target {s}" for s in core.schema.STAGES},
        judging=JUDGING))
    for s, name in core.schema.STAGE_NAMES.items():
        assert f"{s} ({name})" in prompt and f"{s} {name}:" in prompt  # targets and rubric
    assert not re.search(r"\b(See|Select)\b", prompt)


@pytest.fixture
def page(demo_app, ui_browser):
    """A fresh page for each test (the app and the browser are shared), its first events come back."""
    p = open_page(ui_browser, viewport={"width": 1440, "height": 1000})
    p.goto(demo_app)
    p.locator("#cc-browse-list").wait_for(timeout=60_000)
    wait_events(p, 0)
    yield p
    p.context.close()


def _groups(db, bench):
    from db.store import Store

    s = Store(db)
    try:
        return s, s.items_frame(bench)
    except Exception:
        s.close()
        raise


def _open(page, bench, gid, wait=".cc-mark"):
    if page.locator("#cc-benchmark input").input_value().split(" ")[0] != bench:
        page.locator("#cc-benchmark input").click()
        sent = events_started(page)
        page.get_by_role("option", name=bench).first.click()
        wait_events(page, sent)  # the benchmark's list and pickers have come back
    box = page.locator("#cc-browse-group textarea, #cc-browse-group input").first
    box.fill(gid)
    box.press("Enter")
    page.locator(f"{VIEW} [data-group='{gid}']").wait_for(timeout=60_000)
    page.locator(f"{VIEW} {wait}").first.wait_for(timeout=30_000)


def _colours(page, root, cls):
    return page.locator(f"{root} .{cls} .cc-sym").evaluate_all(
        "els => els.map(e => getComputedStyle(e).color)")


def _assert_marks(page, root):
    right, wrong = _colours(page, root, "cc-correct"), _colours(page, root, "cc-wrong")
    assert right and wrong, root
    assert set(right) == {GREEN} and set(wrong) == {RED}


def test_marks_green_and_red_and_rotations_in_frameevidence(page, demo_db):
    s, items = _groups(demo_db, "frameevidence")
    s.close()
    gid = next(g for g in dict.fromkeys(items["group_id"]) if "fq1" in g)
    _open(page, "frameevidence", gid)
    _assert_marks(page, VIEW)
    # the detail run answers under rotations: each rotated answer names both letters
    rot = page.locator(f"{VIEW} .cc-rot")
    assert rot.count() > 0
    for text in rot.all_inner_texts():
        m = re.fullmatch(r"shown ([A-H]) → original ([A-H])", text.strip())
        assert m and m.group(1) != m.group(2), text
    # Esc closes the zoomed image
    page.locator(f"{VIEW} .cc-zoom summary").first.click()
    assert page.locator(f"{VIEW} details.cc-zoom[open]").count() == 1
    page.keyboard.press("Escape")
    page.wait_for_function("() => !document.querySelector('details.cc-zoom[open]')", timeout=5_000)


def test_stembind_stage_names_cant_bind_rule_and_marks(page, demo_db):
    s, items = _groups(demo_db, "stembind")
    run = s.run_data("synth-sb-binder-weak")
    s.close()
    summary = core_groups.group_summary("stembind", items, run)
    gid = str(summary.index[summary["category"] == "cant_bind"][0])
    _open(page, "stembind", gid, ".cc-cat")
    view = page.locator(VIEW)
    badge = view.locator(".cc-cat-cant_bind").first
    assert "can't bind: at least one P right, R right, F wrong" in badge.inner_text()
    heads = " ".join(view.locator(".cc-stage-head").all_inner_texts())
    for s_, name in core.schema.STAGE_NAMES.items():
        assert f"{s_} {name}" in heads.replace("\n", " ")
    assert not re.search(r"\b(perceive|See|Select)\b", heads)
    _assert_marks(page, VIEW)


def test_spur_box_letters_clear_of_printed_letters_and_marks(page, demo_db):
    s, items = _groups(demo_db, "spur")
    s.close()
    gid = str(items["group_id"].iloc[0])
    _open(page, "spur", gid, ".cc-panels")
    boxes = page.locator(f"{VIEW} svg.cc-panels g").evaluate_all("""gs => gs.map(g => {
        const r = g.querySelector('rect'); const t = g.querySelector('text');
        return {x: +r.getAttribute('x'), y: +r.getAttribute('y'), w: +r.getAttribute('width'),
                h: +r.getAttribute('height'), tx: +t.getAttribute('x'), ty: +t.getAttribute('y')}; })""")
    assert len(boxes) >= 8
    for b in boxes:  # the figure prints its letter top-left; the box's letter sits in the bottom-right quarter
        assert b["tx"] > b["x"] + b["w"] / 2 and b["ty"] > b["y"] + b["h"] / 2, b
    marks = page.locator(f"{VIEW} .cc-correct, {VIEW} .cc-wrong").evaluate_all(
        "els => els.map(e => [e.className, getComputedStyle(e).color])")
    assert marks
    for cls, colour in marks:
        assert colour == (GREEN if "cc-correct" in cls else RED), cls


def test_compare_marks_and_one_complete_bold_font(page):
    page.get_by_role("tab", name="Compare").click()
    page.locator("#cc-compare-go").click()
    cell = page.locator("#cc-compare-changed [data-col='0'][role=gridcell]").first
    cell.wait_for(timeout=90_000)
    cell.click()
    page.locator("#cc-compare-view [data-group] .cc-mark").first.wait_for(timeout=60_000)
    _assert_marks(page, "#cc-compare-view")
    # bold text (600) uses the complete Bold face of the one family, never Gradio's subset SemiBold file
    title = page.locator("#cc-compare-view .cc-section-title").first
    assert title.evaluate("e => getComputedStyle(e).fontFamily").startswith('"Crosscheck Sans"')
    assert title.evaluate("e => getComputedStyle(e).fontWeight") == "600"
    faces = page.evaluate("""() => [...document.styleSheets].flatMap(s => { try { return [...s.cssRules]; }
        catch (e) { return []; } }).filter(r => r instanceof CSSFontFaceRule
        && r.style.getPropertyValue('font-family').includes('Crosscheck Sans'))
        .map(r => [r.style.getPropertyValue('font-weight'), r.style.getPropertyValue('src')])""")
    bold = [src for weight, src in faces if weight.startswith("600")]
    assert len(bold) == 1 and "SourceSansPro-Bold.woff2" in bold[0] and "SemiBold" not in bold[0]
    page.evaluate("() => document.fonts.load('600 16px \"Crosscheck Sans\"')")
    loaded = page.evaluate("() => [...document.fonts].filter(f => f.family.includes('Crosscheck Sans')"
                           " && f.status === 'loaded').map(f => f.weight)")
    assert "600 900" in loaded
    size = page.evaluate("""async () => (await (await fetch('static/fonts/SourceSansPro/SourceSansPro-Bold.woff2'))
        .arrayBuffer()).byteLength""")
    assert size > 50_000  # the complete face (the SemiBold subset is 5 KB)


VERDICT_CELL = re.compile(r"^([✓✗]) \d+/\d+")


def _dataframe_verdicts(page, root):
    """(text, computed colour) of every cell of a gr.Dataframe that holds a ✓ / ✗ verdict, and the colours of
    the others."""
    cells = page.locator(f"{root} [role=gridcell]").evaluate_all(
        "els => els.map(e => [e.innerText.trim(), getComputedStyle(e.querySelector('span') || e).color])")
    marked = [(t, c) for t, c in cells if VERDICT_CELL.match(t)]
    plain = {c for t, c in cells if not VERDICT_CELL.match(t)}
    return marked, plain


def _assert_verdicts(marked, plain):
    right = {c for t, c in marked if t.startswith("✓")}
    wrong = {c for t, c in marked if t.startswith("✗")}
    assert right == {GREEN} and wrong == {RED}, marked[:6]
    assert not plain & {GREEN, RED}  # group ids, counts and questions stay in the text colour


def test_browse_list_marks_green_and_red(page, demo_db):
    page.get_by_role("tab", name="Browse").click()
    if page.locator("#cc-benchmark input").input_value().split(" ")[0] != "frameevidence":
        page.locator("#cc-benchmark input").click()
        page.get_by_role("option", name="frameevidence").first.click()
    page.locator("#cc-browse-list [role=gridcell]").first.wait_for(timeout=60_000)
    page.wait_for_function("() => [...document.querySelectorAll('#cc-browse-list [role=gridcell]')]"
                           ".some(e => /^[✓✗] \\d+\\/\\d+/.test(e.innerText.trim()))", timeout=60_000)
    _assert_verdicts(*_dataframe_verdicts(page, "#cc-browse-list"))


def test_compare_changed_groups_marks_green_and_red(page):
    page.get_by_role("tab", name="Compare").click()
    page.locator("#cc-compare-go").click()
    page.locator("#cc-compare-changed [data-col='1'][role=gridcell]").first.wait_for(timeout=90_000)
    marked, plain = _dataframe_verdicts(page, "#cc-compare-changed")
    # the A correct / B correct columns: one verdict per changed group and run
    assert len(marked) == 2 * page.locator("#cc-compare-changed [data-col='0'][role=gridcell]").count()
    _assert_verdicts(marked, plain)
    page.get_by_role("tab", name="Browse").click()


def test_judge_trace_marks_green_and_red(page):
    """The Judge tab's stage flags (✓ kept, ✗ after un-ticking a stage) and its final-answer verdict are the
    views' green and red; nothing is saved (no Enter)."""
    page.get_by_role("tab", name="Judge").click()
    who = page.locator("#jd-who textarea, #jd-who input").first
    who.fill("readable")
    page.locator("#jd-progress").click()
    page.locator("#jd-start").click()
    page.get_by_text("Queue of").wait_for(timeout=60_000)
    page.locator("#jd-view .jt-flag.t").first.wait_for(timeout=30_000)
    page.locator("#jd-s2 input[type=checkbox]").uncheck()
    page.locator("#jd-view .jt-flag.f").first.wait_for(timeout=30_000)
    colours = page.locator("#jd-view .jt-flag.t, #jd-view .jt-flag.f, #jd-view .jt-ok, #jd-view .jt-bad").evaluate_all(
        "els => els.map(e => [e.className, getComputedStyle(e).color])")
    right = {c for cls, c in colours if "jt-ok" in cls or cls.endswith(" t")}
    wrong = {c for cls, c in colours if "jt-bad" in cls or cls.endswith(" f")}
    assert right == {GREEN} and wrong == {RED}, colours
    assert any("jt-ok" in cls or "jt-bad" in cls for cls, _ in colours)  # the final answer's verdict
    page.locator("#jd-s2 input[type=checkbox]").check()
    page.get_by_role("tab", name="Browse").click()
