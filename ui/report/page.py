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
            + " · rates in %; hover a value for k / n and its 95% interval; click a column header to sort")


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
        sections=_sections(data), islands=[(DATA_ID, dumps(data.island)), (CHARTS_ID, charts),
                                           (IMAGES_ID, dumps(data.images))],
        scripts=[trusted(s) for s in scripts])
