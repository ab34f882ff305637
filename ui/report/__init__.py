"""The one-file report (`app.py report`, the Metrics tab's "Download report"): one HTML file that opens from
file:// with no network request and holds the whole analysis of a benchmark's runs (docs/UI.md, "The one-file
report").

- collect.py gathers it: provenance, the Metrics tab's page (ui.metrics_page.metrics_page: the same scores, tables
  and charts as the screen) and the groups with every run's answer and trace;
- page.py writes it: inline styles, plotly.js once, the viewer (report.js), JSON islands, thumbnails.

`write_report` is the one entry point (cli.commands.cmd_report, the Metrics tab); `report`'s options are in
cli/arguments.py. This module imports neither gradio nor plotly until a report is written, so the CLI's parser
stays quick to build.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from db.store import Store

__all__ = ["GROUP_CHOICES", "report_html", "write_report"]
GROUP_CHOICES = "failing, all, or a number of groups"  # imported by nothing heavy: the CLI parser reads it


def report_html(store: Store, benchmark: str, runs: list[str] | None = None, split: str | None = None,
                groups: str | None = None, command: str = "", **kw: Any) -> str:
    """The report's HTML text (`kw`: collect's, e.g. the Metrics tab's score cache)."""
    from ui.report.collect import collect
    from ui.report.page import render

    return render(collect(store, benchmark, runs, split, groups, command, **kw))


def write_report(store: Store, out: Path, benchmark: str, runs: list[str] | None = None, split: str | None = None,
                 groups: str | None = None, command: str = "", **kw: Any) -> Path:
    """Write the report to `out` (through a temporary file, so a failed report leaves no partial file)."""
    text = report_html(store, benchmark, runs, split, groups, command, **kw)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, out)
    return out
