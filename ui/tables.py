"""Metric tables as sortable HTML (k / n and intervals on hover) and their CSV / LaTeX / HTML / chart export files.

Pure formatting lives in core.report_tables; this module only turns it into HTML and files. Every label and
value is escaped (run names are user input)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.report_tables import Cell, Table, display, reasons, sort_key, to_csv, to_latex, tooltip, value_of
from ui.glossary import header_tip
from ui.templating import macro, render, trusted

if TYPE_CHECKING:
    import pandas as pd
    from pandas.io.formats.style import Styler

# Attached once per table container (gr.HTML js_on_load): click a header to sort by it, again to reverse;
# reference rows stay at the bottom; undefined cells sort last.
SORT_JS = """
element.addEventListener('click', (e) => {
  const th = e.target.closest('th[data-col]'); if (!th) return;
  const table = th.closest('table'); const body = table.tBodies[0]; const col = +th.dataset.col;
  const asc = th.dataset.dir !== 'asc';
  table.querySelectorAll('th').forEach(h => { delete h.dataset.dir; });
  th.dataset.dir = asc ? 'asc' : 'desc';
  const all = [...body.rows]; const refs = all.filter(r => r.classList.contains('cc-ref'));
  const rows = all.filter(r => !r.classList.contains('cc-ref'));
  const key = r => { const s = r.cells[col].dataset.sort; if (s === undefined || s === '') return null;
                     const n = Number(s); return Number.isNaN(n) ? s.toLowerCase() : n; };
  rows.sort((a, b) => { const x = key(a), y = key(b); if (x === null && y === null) return 0;
    if (x === null) return 1; if (y === null) return -1; return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1); });
  [...rows, ...refs].forEach(r => body.appendChild(r));
});
"""



def _head_tip(header: str) -> str:
    """A header's hover text: its glossary terms with their paper sections (ui.glossary), then how to sort."""
    tip = header_tip(str(header))
    return f"{tip} · click to sort" if tip else "click to sort"


@dataclass(slots=True, frozen=True)
class TableCell:
    """One value's cell: its text, class, sort key and hover text; a metric's run, path (JSON) and value (JSON)
    as data- attributes (tests and scripts read them), `run` None for a cell that is no metric's."""

    text: str
    cls: str
    sort: str
    tip: str
    run: str | None = None
    path: str = ""
    value: str = ""


@dataclass(slots=True, frozen=True)
class TableRow:
    ref: bool  # a reference row (kept at the bottom when sorting)
    labels: list[tuple[str, str, bool]]  # (sort key, text, synthetic badge)
    cells: list[TableCell]


@dataclass(slots=True, frozen=True)
class TableView:
    """What the `metric_table` macro (ui/templates/tables.html) lays out: title, sortable header (hover text,
    text), rows, the note and the n/a reasons (the first eight, `more` past them)."""

    key: str
    title: str
    heads: list[tuple[str, str]]
    rows: list[TableRow]
    note: str
    why: list[str]
    more: int


def _cell(cell: Cell) -> TableCell:
    text = display(cell)
    cls = "cc-na" if text == "n/a" else ("cc-num cc-wrap" if len(text) > 16 else "cc-num")  # long text wraps
    if cell.run is None or cell.path is None:
        return TableCell(text, cls, str(sort_key(cell)), tooltip(cell))
    return TableCell(text, cls, str(sort_key(cell)), tooltip(cell), cell.run,
                     json.dumps(list(cell.path), ensure_ascii=False), json.dumps(value_of(cell.node)))


def table_data(table: Table) -> TableView:
    why = reasons(table)
    return TableView(table.key, table.title, [(_head_tip(h), str(h)) for h in [*table.index, *table.columns]],
                     [TableRow(row.reference, [(str(label).lower(), str(label), row.synthetic and label == row.run)
                                               for label in row.labels], [_cell(c) for c in row.cells])
                      for row in table.rows], table.notes, why[:8], len(why) - 8)


def table_html(table: Table) -> str:
    """One table: title, sortable header, rows (data-run / data-path / data-value for tests), notes."""
    return macro("tables.html", "metric_table")(table_data(table))


# --------------------------------------------------------------------------- ✓ / ✗ verdicts in a gr.Dataframe

# The colours are assets/views.css's (`--cc-green`, `--cc-red`), the same as every view's marks.
VERDICT_STYLE = {"✓": "color: var(--cc-green); font-weight: 600", "✗": "color: var(--cc-red); font-weight: 600"}
_VERDICT = re.compile(r"^([✓✗]) \d+/\d+")


def verdict(k: int, n: int) -> str:
    """A group's verdict in a table cell: ✓ when all `n` items are right, else ✗, then k/n."""
    return f"{'✓' if k == n else '✗'} {k}/{n}"


def verdict_style(value: Any) -> str:
    """The CSS of one cell: green for a ✓ verdict, red for a ✗ one (a cell that starts like `verdict`'s text),
    nothing for any other cell (a question or a name that happens to start with a mark stays plain)."""
    m = _VERDICT.match(value) if isinstance(value, str) else None
    return VERDICT_STYLE[m.group(1)] if m else ""


def with_verdicts(table: pd.DataFrame) -> Styler:
    """`table` for a gr.Dataframe with its ✓ / ✗ verdict cells green / red. Gradio renders a pandas Styler's
    cell styles (its documented way to colour cells); the values, and so sorting, search and select events,
    are the table's own."""
    return table.style.map(verdict_style)


EXPORT_TTL_S = 15 * 60  # a download is fetched within seconds of being written; older files are removed


def export_dir() -> Path:
    d = Path(tempfile.gettempdir()) / "crosscheck-exports"
    d.mkdir(parents=True, exist_ok=True)
    return d


def prune_exports(now: float | None = None, ttl: float = EXPORT_TTL_S) -> None:
    """Remove export folders written more than `ttl` seconds ago (a long-running server keeps no old files)."""
    now = time.time() if now is None else now
    for folder in export_dir().iterdir():
        try:
            if now - folder.stat().st_mtime > ttl:
                shutil.rmtree(folder) if folder.is_dir() else folder.unlink()
        except FileNotFoundError:  # another request removed it first
            pass


def _write(name: str, text: str) -> Path:
    """Write `text` under a content-addressed folder (same content, same path; no clashes between users) when a
    download is requested; folders older than EXPORT_TTL_S go first."""
    prune_exports()
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    folder = export_dir() / digest
    folder.mkdir(exist_ok=True)
    path = folder / name
    if not path.exists():
        path.write_text(text, encoding="utf-8")
    os.utime(folder)  # fresh again: pruning counts from the last request
    return path


def safe_name(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text)[:80] or "table"


def table_files(table: Table, prefix: str) -> tuple[Path, Path]:
    """(CSV path, LaTeX path) of one table."""
    base = safe_name(f"{prefix}_{table.key}")
    return _write(f"{base}.csv", to_csv(table)), _write(f"{base}.tex", to_latex(table))


def table_page(table: Table) -> str:
    """One table as a standalone HTML page (its styles inside, no script): opens anywhere, pastes into a
    document or a spreadsheet with its title, notes and n/a reasons."""
    return render("table_page.html", css=trusted(CSS), table=table_data(table)) + "\n"


def table_html_file(table: Table, prefix: str) -> Path:
    """The HTML download of one table (table_page)."""
    return _write(f"{safe_name(f'{prefix}_{table.key}')}.html", table_page(table))


def chart_file(html_text: str, prefix: str, key: str) -> Path:
    return _write(f"{safe_name(prefix + '_' + key)}.html", html_text)


def report_file(html_text: str, benchmark: str) -> Path:
    """The one-file report (ui/report) as a download."""
    return _write(f"{safe_name(benchmark)}_report.html", html_text)


CSS = """
.cc-aside { font-weight: 600; color: #9a6700; }
.dark .cc-aside { color: #d29922; }
.cc-mtable { margin: 4px 0 2px 0; }
.cc-mtitle { font-weight: 600; font-size: 0.95rem; margin: 2px 0 6px 0; }
.cc-scroll { overflow-x: auto; }
table.cc-sortable { border-collapse: collapse; font-size: 0.86rem; font-variant-numeric: tabular-nums; width: auto; }
table.cc-sortable th { cursor: pointer; user-select: none; border-bottom: 2px solid #444; padding: 4px 10px;
  text-align: right; white-space: nowrap; background: transparent; }
table.cc-sortable th:first-child, table.cc-sortable td.cc-label { text-align: left; }
table.cc-sortable th[data-dir='asc']::after { content: ' ▲'; font-size: 0.7em; }
table.cc-sortable th[data-dir='desc']::after { content: ' ▼'; font-size: 0.7em; }
table.cc-sortable td { padding: 3px 10px; border-bottom: 1px solid #e4e4e4; text-align: right; white-space: nowrap; }
table.cc-sortable td.cc-num[title] { cursor: help; }
table.cc-sortable td.cc-na { color: #999; cursor: help; }
table.cc-sortable tr.cc-ref td { border-top: 1.5px solid #444; font-style: italic; color: #555; }
table.cc-sortable tbody tr:hover { background: rgba(47, 109, 181, 0.07); }
.cc-synth { display: inline-block; font-size: 0.68rem; padding: 0 5px; border-radius: 7px; background: #f3e3c3;
  color: #7a4b00; border: 1px solid #e0c48f; margin-left: 4px; vertical-align: 1px; font-style: normal; }
.cc-note { font-size: 0.78rem; color: #666; margin-top: 4px; max-width: 980px; }
.cc-why { font-size: 0.78rem; color: #8a5a00; margin-top: 3px; }
.cc-why ul { margin: 0 0 0 18px; padding: 0; }
"""
