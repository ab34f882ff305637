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
from pathlib import Path
from typing import Any

from ui.report.collect import ReportData
from ui.tables import CSS as TABLE_CSS
from ui.tables import SORT_JS, table_data
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


def _provenance(data: ReportData) -> dict[str, Any]:
    p = data.island["provenance"]
    rows = [("Crosscheck", f"{p['crosscheck_version']} · commit {p['git_commit']}"),
            ("Store (content sha256)", p["store_sha256"]),
            ("Benchmark", f"{data.island['benchmark']} ({data.island['family']}) · {p['benchmark_items']} items · "
                          f"source {p['benchmark_source']}"),
            ("Benchmark (content sha256)", p["benchmark_sha256"] or "unknown"),
            ("Split scored", p["split"]), ("Written by", p["command"])]
    runs = [{"name": r["name"], "synthetic": bool(r["synthetic"]),
             "cells": [str(r[k] or "") for k in ("model", "runner", "created", "updated")],
             "config": json.dumps(r["config"], ensure_ascii=False, sort_keys=True)} for r in p["runs"]]
    return {"rows": [(k, str(v)) for k, v in rows], "runs": runs}


def _sections(data: ReportData) -> list[dict[str, Any]]:
    """The Metrics sections: each one's title, chart keys and tables (ui.tables.table_data)."""
    page = data.page
    return [{"title": title, "charts": chart_keys, "tables": [table_data(page.tables[k]) for k in table_keys]}
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
    return render_template(
        "report.html", title=f"Crosscheck report: {data.island['benchmark']}", csp=csp, css=trusted(css),
        provenance=_provenance(data), summary=summary_line(data), chart_error=data.page.chart_error or "",
        sections=_sections(data), islands=[(DATA_ID, dumps(data.island)), (CHARTS_ID, charts),
                                           (IMAGES_ID, dumps(data.images))],
        scripts=[trusted(s) for s in scripts])
