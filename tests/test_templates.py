"""The UI's HTML comes from templates with autoescape (STYLE 22, ui/templating.py): every template of ui/templates/,
each page and each macro, rendered with hostile text in every string of its data, shows that text escaped and
never as markup; the report's JSON islands keep `</script>` and `<!--` from forming; and no ui/ module builds
HTML by f-string (the shape counter's pattern), so it cannot come back."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from markupsafe import Markup, escape

from ui.audit import ToolReading
from ui.calibration import Kappa
from ui.compare import Differences, DiffRow
from ui.report.page import HealthList, ModeRow, ProvenanceRun, RunModes, Section, WhyView
from ui.tables import TableCell, TableRow, TableView
from ui.templating import ENV, TEMPLATES, macro, render, script_json, style, trusted
from ui.trace_view import JudgedStage, Main, Side
from ui.views import common as vc
from ui.views.frameevidence import Fq2Column
from ui.views.stembind import Probe

ROOT = Path(__file__).resolve().parent.parent
H = "<script>alert('x')</script>\"&"  # in every string of every sample below
RAW = "<script>alert("
ESCAPED = str(escape(H))

# --------------------------------------------------------------------------- hostile data of each shape

LABEL = vc.RunLabel(H, H, True)
MARK = vc.Mark(H, H, H, H)
ROT = vc.Rotation(H, H)
RESPONSE = vc.Response(H, ROT, H, 7, H, H)
TRACE = vc.Trace(H, True, [vc.StageRow(H, H, True, [(H, H, H)], H)], H)
BOXES = vc.PanelBoxes(100, 80, [vc.PanelBox(*[H] * 16)])
THUMB = vc.Thumb(H, H, H, H, panels=BOXES, cross=True, caption=(H, H))
MISSING = vc.Thumb(H, H, missing=H)
OPTIONS = vc.Options([vc.Option(H, H, True, H, True), vc.Option(H, H, False)], False)
ANSWERS = [vc.Answer(MARK, LABEL)]
CARD = vc.Card(H, H, H, OPTIONS, ANSWERS, shows=H, hint=H, gloss=H)
ALL_RUNS = vc.AllRuns(H, [(H, H)], [H], [], [vc.AnswerRow(LABEL, True, [MARK], 1, 2, [])], 3, H)
DETAIL = vc.Detail(LABEL, [
    vc.DetailItem(H, H, H, MARK, [vc.Prob(H, H, H, H)], RESPONSE,
                  [vc.OtherPrediction(1, 2, MARK, ROT, H, H, True)], TRACE),
    vc.DetailItem(H, H, H, MARK, [], None, [], None)])
TABLE = TableView(H, H, [(H, H)], [TableRow(True, [(H, H, True)], [TableCell(H, H, H, H, H, H, H)])], H, [H], 3)
PCT = {"na": "", "text": H, "kn": H}
DIFFS = Differences(H, [DiffRow(H, H, PCT, {"na": H, "text": "", "kn": ""}, {"na": "", "cls": H, "text": H, "ci": H})],
                    H, H, H, 1)
KAPPA = Kappa(None, H, H, H, 1, H, H, H, H, H)
JOB = {"status": H, "held": H, "total": H, "done": H, "errors": H, "id": H, "run": H, "kind": H, "benchmark": H,
       "runner": H, "model": H, "user": H, "max": H, "value": H, "pct": H, "total_text": H, "earlier": H,
       "invalid_word": H, "invalid": H, "elapsed": H, "eta": H, "message": H}
STEMBIND_CAT = (H, H, H)
SIDE = Side((H, H), H, True, H, [(H, H, True, True)], H, H, H, True, H, H)
MAIN = Main([H], True, [JudgedStage(H, H, H, [("status", H), ("t", "")], True)], H, H, H, [H])

# each macro (template, name) -> calls of it, each a tuple of arguments
MACROS: dict[tuple[str, str], list[tuple[Any, ...]]] = {
    ("views/common.html", "run_label"): [(LABEL,)],
    ("views/common.html", "mark"): [(MARK,)],
    ("views/common.html", "message"): [(H,)],
    ("views/common.html", "chips"): [([(H, H)],)],
    ("views/common.html", "head"): [(H, H, [(H, H)])],
    ("views/common.html", "panel_boxes"): [(BOXES,)],
    ("views/common.html", "thumb"): [(THUMB,), (MISSING,)],
    ("views/common.html", "options"): [(OPTIONS,)],
    ("views/common.html", "answers"): [(ANSWERS,)],
    ("views/common.html", "card"): [(CARD,)],
    ("views/common.html", "answers_table"): [(ALL_RUNS,)],
    ("views/common.html", "all_runs"): [(ALL_RUNS,)],
    ("views/common.html", "rotated"): [(ROT,)],
    ("views/common.html", "response"): [(RESPONSE,)],
    ("views/common.html", "trace"): [(TRACE,)],
    ("views/common.html", "detail"): [(DETAIL,)],
    ("tables.html", "metric_table"): [(TABLE,)],
    ("jobs.html", "progress"): [(H, "judge", JOB)],
    ("run.html", "jobs"): [([{k: H for k in ("id", "run", "user", "kind", "status", "held", "sent", "errors",
                                               "started", "elapsed", "benchmark")}],)],
    ("data.html", "report"): [(H, H, 1, 2, H, [(H, H, H, H, H)], 3)],
    ("data.html", "uploaded"): [(H,)],
    ("judge.html", "first_failure"): [(H, H)],
    ("judge.html", "progress"): [(H, H, H, 2, 0, 1, H, True)],
    ("judge_job.html", "line"): [(H, True, H, H)],
    ("compare.html", "kpi"): [(H, H, H, H)],
    ("compare.html", "disagreement"): [(H, H)],
    ("compare.html", "pct"): [(PCT,), ({"na": H, "text": "", "kn": ""},)],
    ("compare.html", "differences"): [(DIFFS,)],
    ("compare.html", "summary"): [(LABEL, LABEL, H, [(H, H, H, H)], (H, H),
                                   {k: H for k in ("correct → correct", "correct → wrong", "wrong → correct",
                                                   "wrong → wrong")}, H, H, DIFFS)],
    ("compare.html", "marked"): [([(H, True), (H, False)], "del")],
    ("compare.html", "side_by_side"): [(H, H, [{"item_id": H, "cells": [(MARK, [(H, True)], [(H, False)])]}])],
    ("compare.html", "muted"): [(H,)],
    ("calibration.html", "reason"): [(H,)],
    ("calibration.html", "kappa"): [(KAPPA,), (Kappa(H),)],
    ("calibration.html", "pairs"): [({"heads": [H], "rows": [(H, H, H, [KAPPA])], "ceiling": [KAPPA],
                                      "gaps": [(H, [(H, H)])], "used": H, "rule": H},)],
    ("calibration.html", "second"): [({"second": H, "first": H, "stages": [H], "kappa": [KAPPA], "rho": [(H, H)],
                                       "shift": [H], "preserved": H, "runs": [(H, [H], H, True)]},)],
    ("calibration.html", "audit"): [([{"name": H, "reason": H},
                                      {"name": H, "reason": None, "title": H, "heads": [(H, H)],
                                       "rows": [(H, [H])]}],)],
    ("audit.html", "problems"): [({"total": H, "ok": H, "invalid": H, "api_error": H},
                                  [{"item_id": H, "group_id": H, "rot_rep": H, "mark": MARK, "status": H,
                                    "response": H, "tool": None, "gold": H}], True)],
    ("audit.html", "tool"): [(ToolReading(H, H, H, True, H),)],
    ("audit.html", "state"): [("reverted", H), ("stale", H)],
    ("audit.html", "history"): [([{"id": H, "item_id": H, "rot_rep": H, "method": H, "was": H, "now": H, "by": H,
                                   "created": H, "state": (H, H)}],)],
    ("audit.html", "described"): [(H, H, True, H, H, H)],
    ("audit.html", "reverted"): [(H,)],
    ("browse.html", "summary"): [(H, H, H, H, H, H, H, False), (H, H, H, H, H, H, H, False, H)],
    ("browse.html", "tags"): [(H, H, [(H, H, H)])],
    ("browse.html", "slice_line"): [(H, H)],
    ("health.html", "reviews"): [(H, [(H, H, H, H, H, H)]), (H, [])],
    ("metrics.html", "summary"): [(H, H, 2, H, 1), (H, H, 2, H, 1, H)],
    ("shell.html", "header"): [(H, H)],
    ("shell.html", "link_note"): [(H,)],
    ("shell.html", "glossary"): [({H: (H, H)},)],
}
# macros with no data at all (constant text)
CONSTANT = {("views/common.html", "synthetic_badge"), ("views/common.html", "cross"), ("judge.html", "keys_help"),
            ("judge.html", "waiting"), ("judge.html", "mode")}
# macros whose one argument is the app's own stylesheet (ui.templating.trusted), never data
STYLESHEET = {("style.html", "style"), ("browse.html", "review_keys")}
# `section` takes its body from the caller: rendered through a template below
CALLER = {("views/common.html", "section")}

VIEW = {"group_id": H, "chips": [(H, H)], "all_runs": ALL_RUNS, "detail": DETAIL}
PAGES: dict[str, list[dict[str, Any]]] = {
    # the family view's HTML: written by its own template (the one Markup of ui/views/__init__.py)
    "views/group.html": [{"group_id": H, "view": Markup("<div>view</div>")}],
    "views/generic.html": [{**VIEW, "images": [THUMB], "cards": [CARD]}],
    "views/stembind.html": [{**VIEW, "images": [THUMB], "cards": [CARD], "n_probes": 1, "probe_runs": [LABEL],
                             "decomposition": [vc.RunCounts(LABEL, True, [(H, H)], c)
                                               for c in (STEMBIND_CAT, (H, H, ""), None)],
                             "probes": [Probe(1, H, [(H, H, True)], H, [MARK])],
                             "all_runs": vc.AllRuns(H, [(H, H)], [H], [H],
                                                    [vc.AnswerRow(LABEL, True, [MARK], 1, 2, [STEMBIND_CAT])], 0, "")}],
    "views/spur.html": [{**VIEW, "pics": [THUMB], "legend": [(H, H)], "n_panels": H, "others": [H],
                         "runs": [vc.RunCounts(LABEL, True, [(H, H)], True)],
                         "stages": [(H, [CARD])]}],
    "views/frameevidence.html": [
        {**VIEW, "view": "fq1", "title": H, "images": [THUMB], "cards": [CARD]},
        {**VIEW, "view": "fq2", "title": H, "note": H, "question": H, "gloss": H, "options": OPTIONS,
         "cols": [Fq2Column(H, [THUMB], H, H, ANSWERS)]}],
    "table_page.html": [{"css": trusted("body { margin: 0; }"), "table": TABLE}],
    "trace_view.html": [{"header": H, "side": SIDE, "main": MAIN}, {"side": None}],
    "report.html": [{"title": H, "csp": H, "css": trusted("body { margin: 0; }"), "summary": H, "chart_error": H,
                     "provenance": [(H, H)], "provenance_runs": [ProvenanceRun(H, True, [H], H)],
                     "sections": [Section(H, [H], [TABLE])],
                     "why": WhyView([RunModes(H, H, [ModeRow(H, [H], [H], [H, H])], [[H, H]])], H,
                                    [HealthList(H, [H], [([H, H], H), ([H], "")])], H, H, [H]),
                     "islands": [(H, '{"text": "' + H + '"}')], "scripts": [trusted("var ok = 1;")]}],
}


def _templates() -> list[str]:
    return sorted(str(p.relative_to(TEMPLATES)) for p in TEMPLATES.rglob("*.html"))


def _macro_names(template: str) -> set[tuple[str, str]]:
    return {(template, name) for name in vars(ENV.get_template(template).module) if not name.startswith("_")}


def test_every_template_and_macro_has_hostile_data_here():
    """A template or macro added without a row here fails: each one is checked below."""
    covered = set(MACROS) | CONSTANT | STYLESHEET | CALLER
    for template in _templates():
        if template in PAGES:
            continue
        assert _macro_names(template), f"{template}: no macro and no page data in this test"
        assert _macro_names(template) <= covered, f"{template}: {sorted(_macro_names(template) - covered)}"
    assert {t for t, _ in covered} | set(PAGES) == set(_templates())


def _escaped(out: str, what: str) -> None:
    assert RAW not in out, f"{what}: hostile text written as markup"
    assert ESCAPED in out, f"{what}: the hostile text is not shown escaped"


@pytest.mark.parametrize(("template", "name"), sorted(MACROS))
def test_macro_escapes_hostile_text(template, name):
    for args in MACROS[(template, name)]:
        _escaped(macro(template, name)(*args), f"{template} {name}")


@pytest.mark.parametrize("template", sorted(PAGES))
def test_page_escapes_hostile_text(template):
    for context in PAGES[template]:
        out = render(template, **context)
        if context.get("side", True) is None:
            assert "No trace selected." in out
            continue
        _escaped(out, template)


def test_section_takes_its_body_from_the_caller_and_escapes_its_title():
    out = ENV.from_string('{% import "views/common.html" as c %}{% call c.section(t, cls) %}{{ body }}{% endcall %}'
                          ).render(t=H, cls=H, body=H)
    assert out.count(ESCAPED) == 3 and RAW not in out


@pytest.mark.parametrize(("template", "name"), sorted(CONSTANT | STYLESHEET))
def test_constant_and_stylesheet_macros(template, name):
    args: Callable[[], tuple[Any, ...]] = {("judge.html", "mode"): lambda: (False,),
                                           ("style.html", "style"): lambda: (trusted("a > b { c: d }"),),
                                           ("browse.html", "review_keys"): lambda: (trusted("a > b { c: d }"),)
                                           }.get((template, name), lambda: ())
    out = macro(template, name)(*args())
    assert out.strip().startswith("<")
    if (template, name) in STYLESHEET:
        assert "<style>a > b { c: d }</style>" in out  # the stylesheet as written: a CSS `>` is not escaped


def test_style_helper_is_one_style_element():
    assert style("a > b { c: d }") == "<style>a > b { c: d }</style>"


@pytest.mark.parametrize("text", ["</script><script>alert(1)</script>", "<!-- x -->", "a & b", "\u2028\u2029"])
def test_report_islands_cannot_close_their_script_element(text):
    out = render("report.html", **{**PAGES["report.html"][0], "islands": [("crosscheck-data", text)]})
    island = re.search(r'<script type="application/json" id="crosscheck-data">(.*?)</script>', out, re.S)
    assert island is not None and "<" not in island.group(1) and ">" not in island.group(1)
    assert "&" not in island.group(1) and "\u2028" not in island.group(1)
    assert island.group(1) == script_json(text)  # the one escape, undone by JSON.parse
    assert island.group(1).encode().decode("unicode_escape") == text


def test_an_undefined_name_fails_instead_of_printing_nothing():
    with pytest.raises(Exception, match="undefined"):
        render("views/group.html", group_id=H)


HTML_FSTRING = re.compile(r"""f["']{1,3}\s*<[a-zA-Z/]""")  # ../shared/tools/shape.py's html_fstrings


def test_no_ui_module_builds_html_by_fstring():
    found = [f"{p.relative_to(ROOT)}:{i}" for p in sorted((ROOT / "ui").rglob("*.py"))
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if HTML_FSTRING.search(line)]
    assert found == [], "HTML belongs in ui/templates/ (ui.templating.render / macro): " + ", ".join(found)
