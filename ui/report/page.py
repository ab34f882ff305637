"""The one-file report as HTML: provenance, the Metrics tables and charts, the groups viewer, and its data.

Every byte the page needs is inside it (styles, plotly.js once, the viewer's script, thumbnails as data URLs),
and its Content-Security-Policy lets it fetch nothing (`default-src 'none'`) and run only its own scripts,
named by hash: a script that model text smuggled into the page would not run even if it were not escaped.
Data goes in once, as JSON islands (ui/templates/report.html, the `script_json` filter of ui.templating), with
`<`, `>` and `&` written as \\u escapes so no text can close the island's <script> element; the viewer builds the
groups from them with textContent only.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ui.report.collect import ReportData
from ui.tables import CSS as TABLE_CSS
from ui.tables import SORT_JS, TableView, table_data
from ui.templating import render as render_template
from ui.templating import trusted

HERE = Path(__file__).resolve().parent
DATA_ID, CHARTS_ID, IMAGES_ID = "crosscheck-data", "crosscheck-charts", "crosscheck-images"


def dumps(value: Any) -> str:
    """The island's JSON: NaN and infinities are not JSON, so they are refused rather than written."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    return str(get_plotlyjs())


def _script_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


@dataclass(slots=True, frozen=True)
class ProvenanceRun:
    name: str
    synthetic: bool
    cells: list[str]  # model, runner, created, updated
    config: str  # JSON


@dataclass(slots=True, frozen=True)
class Section:
    """A Metrics section: its title, its charts (drawn by the viewer from the charts island) and tables."""

    title: str
    charts: list[str]
    tables: list[TableView]


@dataclass(slots=True, frozen=True)
class ModeRow:
    """One failure mode as the report's table shows it; `groups` and `examples` link to the groups viewer."""

    label: str
    cells: list[str]  # failing, passing, difference [95% CI], q, stability
    examples: list[str]
    groups: list[str]


@dataclass(slots=True, frozen=True)
class RunModes:
    run: str
    line: str
    rows: list[ModeRow]
    terms: list[list[str]]  # term, failing, passing, z, q


@dataclass(slots=True, frozen=True)
class HealthList:
    """One item-health list: its title, header and rows (cells, the row's group: a link to the viewer)."""

    title: str
    heads: list[str]
    rows: list[tuple[list[str], str]]


@dataclass(slots=True, frozen=True)
class WhyView:
    """The report's "Why it fails" section (ui/templates/report.html)."""

    modes: list[RunModes]
    health_line: str
    health: list[HealthList]
    map_line: str
    map_chart: str  # the map's key in the charts island ("" without a map)
    notes: list[str]


def _pp(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:+.1f}"


def _modes(found: Any) -> RunModes:
    rows = [ModeRow(m.label, [f"{m.n_failing} ({100 * m.share_failing:.0f}%)", f"{m.n_passing} ({100 * m.share_passing:.0f}%)",
                              f"{_pp(m.diff)}" + (f" [{_pp(m.ci[0])}, {_pp(m.ci[1])}]" if m.ci else ""),
                              "–" if m.q is None else f"{m.q:.3g}", f"{m.stability:.2f}"],
                    list(m.examples), list(m.groups)) for m in found.modes]
    vs = f"the items it lost against {found.compare!r}" if found.compare else "its failing items"
    line = (f"{len(found.modes)} modes in what it said ({vs}: {found.n_failing} failing, {found.n_passing} passing "
            f"answers on split {found.split}); difference in points, 95% cluster-bootstrap interval, BH q, "
            "stability under resampled groups." + (f" {found.note}." if found.note else ""))
    terms = [[t.term, str(t.failing), str(t.passing), f"{t.z:.2f}", f"{t.q:.3g}"] for t in found.terms[:15]]
    return RunModes(found.run, line, rows, terms)


def _health(h: Any) -> list[HealthList]:
    top = 20
    return [
        HealthList("Suspect gold letters", ["item", "gold", "consensus", "support", "runs behind it"],
                   [([s.item_id, s.gold, s.consensus, f"{s.support:.2f}", f"{len(s.runs)} of {s.n_runs}"], s.group_id)
                    for s in h.suspect_gold[:top]]),
        HealthList("Unstable items", ["item", "flipped", "expected", "p", "q"],
                   [([u.item_id, f"{u.flips} of {u.n_runs} runs", f"{u.expected:.1f}", f"{u.p:.3g}", f"{u.q:.3g}"],
                     u.group_id) for u in h.unstable[:top]]),
        HealthList("Ambiguous items", ["item", "gold", "split between", "runs"],
                   [([a.item_id, a.gold, f"{a.letters[0]} {100 * a.shares[0]:.0f}% · {a.letters[1]} "
                      f"{100 * a.shares[1]:.0f}%", str(a.n_runs)], a.group_id) for a in h.ambiguous[:top]]),
        HealthList("Negative discrimination", ["item", "r", "runs", "p", "q"],
                   [([n.item_id, f"{n.r:+.2f}", str(n.n_runs), f"{n.p:.3g}", f"{n.q:.3g}"], n.group_id)
                    for n in h.negative_discrimination[:top]]),
        HealthList("Duplicate images", ["groups", "images", "distance", "splits"],
                   [([", ".join(d.groups), str(len(d.images)), str(d.distance), ", ".join(d.splits)], d.groups[0])
                    for d in h.duplicates[:top]]),
        HealthList("Accuracy with and without the suspects", ["run", "accuracy", "without", "difference [95% CI]"],
                   [([a.run, "–" if a.accuracy.value is None else f"{100 * a.accuracy.value:.1f}",
                      "–" if a.without.value is None else f"{100 * a.without.value:.1f}",
                      _pp(a.diff) + (f" [{_pp(a.ci[0])}, {_pp(a.ci[1])}]" if a.ci else "")], "")
                    for a in h.accuracy_without_suspects]),
    ]


def _why(data: ReportData) -> WhyView:
    from ui.report.collect import MAP_CHART

    why = data.why
    h = why.health
    health_line = "" if h is None else (
        f"{h.n_items} items read through {h.n_runs} runs ({h.counts.get('annotators', h.n_runs)} as annotators); "
        "each list most suspect first, the first 20 shown (the data island holds the lists whole).")
    m = why.map
    map_line = "" if m is None else (
        f"{m.n_runs} runs x {m.n_groups} groups; runs by ability, groups by difficulty (a Rasch fit); each cell a "
        "run's joint outcome on a group. Click a cell to open its group below." + (f" Drawn: {m.note}." if m.note else ""))
    return WhyView([_modes(f) for f in why.modes], health_line, _health(h) if h is not None else [], map_line,
                   MAP_CHART if m is not None else "", list(why.notes))


def _provenance(data: ReportData) -> tuple[list[tuple[str, str]], list[ProvenanceRun]]:
    """(what, value) rows of the tool, store and benchmark, and one row per run."""
    p = data.island["provenance"]
    rows = [("Crosscheck", f"{p['crosscheck_version']} · commit {p['git_commit']}"),
            ("Store (content sha256)", p["store_sha256"]),
            ("Benchmark", f"{data.island['benchmark']} ({data.island['family']}) · {p['benchmark_items']} items · "
                          f"source {p['benchmark_source']}"),
            ("Benchmark (content sha256)", p["benchmark_sha256"] or "unknown"),
            ("Split scored", p["split"]), ("Written by", p["command"])]
    runs = [ProvenanceRun(r["name"], bool(r["synthetic"]), [str(r[k] or "") for k in ("model", "runner", "created", "updated")],
                          json.dumps(r["config"], ensure_ascii=False, sort_keys=True)) for r in p["runs"]]
    return [(k, str(v)) for k, v in rows], runs


def _sections(data: ReportData) -> list[Section]:
    page = data.page
    return [Section(title, chart_keys, [table_data(page.tables[k]) for k in table_keys])
            for _, title, table_keys, chart_keys in page.sections()]


def summary_line(data: ReportData) -> str:
    runs = data.page.runs
    synth = sum(r.synthetic for r in runs)
    return (f"{len(runs)} run{'s' if len(runs) != 1 else ''} · split {runs[0].split}"
            + (f" · {synth} synthetic (generated demo data)" if synth else "")
            + " · rates in %; hover a value for k / n and its 95% interval; click a column header to sort"
            + (f" · {data.page.aside}" if data.page.aside else ""))


def render(data: ReportData) -> str:
    """The whole file."""
    css = TABLE_CSS + (HERE / "report.css").read_text(encoding="utf-8")
    # the Metrics tab's own column sorting (ui.tables.SORT_JS), attached to each table here
    sort = f"document.querySelectorAll('.cc-mtable').forEach((element) => {{{SORT_JS}}});"
    scripts = [plotly_js(), (HERE / "report.js").read_text(encoding="utf-8") + sort]
    csp = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; font-src data:; "
           f"script-src {' '.join(_script_hash(s) for s in scripts)}")
    charts = "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in data.charts.items()) + "}"
    provenance, runs = _provenance(data)
    return render_template(
        "report.html", title=f"Crosscheck report: {data.island['benchmark']}", csp=csp, css=trusted(css),
        provenance=provenance, provenance_runs=runs, summary=summary_line(data), chart_error=data.page.chart_error or "",
        sections=_sections(data), why=_why(data), islands=[(DATA_ID, dumps(data.island)), (CHARTS_ID, charts),
                                           (IMAGES_ID, dumps(data.images))],
        scripts=[trusted(s) for s in scripts])
