"""The one-file report as HTML: provenance, the Metrics tables and charts, the groups viewer, and its data.

Every byte the page needs is inside it (styles, plotly.js once, the viewer's script, thumbnails as data URLs),
and its Content-Security-Policy lets it fetch nothing (`default-src 'none'`) and run only its own scripts,
named by hash: a script that model text smuggled into the page would not run even if it were not escaped.
Data goes in once, as JSON islands (`island`), with `<`, `>` and `&` written as \\u escapes so no text can
close the island's <script> element; the viewer builds the groups from them with textContent only.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from pathlib import Path
from typing import Any

from ui.report.collect import ReportData
from ui.tables import CSS as TABLE_CSS
from ui.tables import SORT_JS, table_html

HERE = Path(__file__).resolve().parent
DATA_ID, CHARTS_ID, IMAGES_ID = "crosscheck-data", "crosscheck-charts", "crosscheck-images"
_ISLAND_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026", 0x2028: "\\u2028",
                   0x2029: "\\u2029"}


def island_text(text: str) -> str:
    """JSON text made safe inside <script type="application/json">: no `</script>` or `<!--` can form."""
    return text.translate(_ISLAND_ESCAPES)


def island(element_id: str, text: str) -> str:
    return f'<script type="application/json" id="{element_id}">{island_text(text)}</script>'


def dumps(value: Any) -> str:
    """The island's JSON: NaN and infinities are not JSON, so they are refused rather than written."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    return str(get_plotlyjs())


def _script_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def _provenance_html(data: ReportData) -> str:
    esc = html.escape
    p = data.island["provenance"]
    rows = [("Crosscheck", f"{p['crosscheck_version']} · commit {p['git_commit']}"),
            ("Store (content sha256)", p["store_sha256"]),
            ("Benchmark", f"{data.island['benchmark']} ({data.island['family']}) · {p['benchmark_items']} items · "
                          f"source {p['benchmark_source']}"),
            ("Benchmark (content sha256)", p["benchmark_sha256"] or "unknown"),
            ("Split scored", p["split"]), ("Written by", p["command"])]
    head = "".join(f"<tr><th>{esc(k)}</th><td><code>{esc(str(v))}</code></td></tr>" for k, v in rows)
    runs = "".join(
        f"<tr><td>{esc(r['name'])}{' <span class=cc-synth>synthetic</span>' if r['synthetic'] else ''}</td>"
        f"<td>{esc(str(r['model'] or ''))}</td><td>{esc(str(r['runner'] or ''))}</td>"
        f"<td>{esc(str(r['created'] or ''))}</td><td>{esc(str(r['updated'] or ''))}</td>"
        f"<td><code>{esc(json.dumps(r['config'], ensure_ascii=False, sort_keys=True))}</code></td></tr>"
        for r in p["runs"])
    return (f"<section id='cc-provenance'><h2>Provenance</h2><table class='cc-prov'>{head}</table>"
            "<table class='cc-sortable cc-prov-runs'><thead><tr><th>Run</th><th>Model</th><th>Runner</th>"
            f"<th>Created</th><th>Updated</th><th>Config</th></tr></thead><tbody>{runs}</tbody></table></section>")


def _metrics_html(data: ReportData) -> str:
    esc = html.escape
    page = data.page
    tabs, bodies = [], []
    for n, (_, title, table_keys, chart_keys) in enumerate(page.sections()):
        tabs.append(f"<button type='button' class='cc-sec-tab' data-sec='{n}'>{esc(title)}</button>")
        charts = "".join(f"<div class='cc-chart' data-chart='{esc(k)}'></div>" for k in chart_keys)
        tables = "".join(table_html(page.tables[k]) for k in table_keys)
        bodies.append(f"<div class='cc-sec' data-sec='{n}' data-title='{esc(title)}' hidden>"
                      f"<div class='cc-charts'>{charts}</div>{tables}</div>")
    error = (f"<p class='cc-note'>Charts could not be drawn ({esc(page.chart_error)}); the tables are complete.</p>"
             if page.chart_error else "")
    return (f"<section id='cc-metrics'><h2>Metrics</h2><p class='cc-muted'>{esc(summary_line(data))}</p>{error}"
            f"<nav class='cc-sec-tabs'>{''.join(tabs)}</nav>{''.join(bodies)}</section>")


def summary_line(data: ReportData) -> str:
    runs = data.page.runs
    synth = sum(r.synthetic for r in runs)
    return (f"{len(runs)} run{'s' if len(runs) != 1 else ''} · split {runs[0].split}"
            + (f" · {synth} synthetic (generated demo data)" if synth else "")
            + " · rates in %; hover a value for k / n and its 95% interval; click a column header to sort")


GROUPS_HTML = """
<section id="cc-groups"><h2>Groups</h2>
<div class="cc-gbar"><label>Failure pattern <select id="cc-g-pattern"></select></label>
<label>Search <input id="cc-g-search" type="search" placeholder="group id or question text"></label>
<span id="cc-g-count" class="cc-muted"></span><span class="cc-muted">j / k: next / previous group</span></div>
<div class="cc-gpane"><ol id="cc-g-list"></ol><div id="cc-g-view"><p class="cc-muted">Pick a group.</p></div></div>
</section>
"""


def render(data: ReportData) -> str:
    """The whole file."""
    css = TABLE_CSS + (HERE / "report.css").read_text(encoding="utf-8")
    # the Metrics tab's own column sorting (ui.tables.SORT_JS), attached to each table here
    sort = f"document.querySelectorAll('.cc-mtable').forEach((element) => {{{SORT_JS}}});"
    scripts = [plotly_js(), (HERE / "report.js").read_text(encoding="utf-8") + sort]
    csp = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; font-src data:; "
           f"script-src {' '.join(_script_hash(s) for s in scripts)}")
    charts = "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in data.charts.items()) + "}"
    title = f"Crosscheck report: {data.island['benchmark']}"
    return "".join([
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<meta http-equiv='Content-Security-Policy' content=\"{csp}\">",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{html.escape(title)}</title><style>{css}</style></head><body>",
        f"<header><h1>{html.escape(title)}</h1></header>",
        _provenance_html(data), _metrics_html(data), GROUPS_HTML,
        island(DATA_ID, dumps(data.island)), island(CHARTS_ID, charts), island(IMAGES_ID, dumps(data.images)),
        *(f"<script>{s}</script>" for s in scripts),
        "</body></html>"])
