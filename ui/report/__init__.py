"""The one-file report (`app.py report`, the Metrics tab's "Download report"): one HTML file that opens from
file:// with no network request and holds the whole analysis of a benchmark's runs (docs/UI.md, "The one-file
report").

- collect.py gathers it: provenance, the Metrics tab's page (ui.metrics_page.metrics_page: the same scores, tables
  and charts as the screen) and the groups with every run's answer and trace;
- page.py writes it: inline styles, plotly.js once, the viewer (report.js), JSON islands, thumbnails.

`write_report` is the one entry point; `add_arguments` / `cmd_report` are the CLI's. This module imports
neither gradio nor plotly until a report is written, so the CLI's parser stays quick to build.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from db.store import Store

__all__ = ["add_arguments", "cmd_report", "report_html", "write_report"]
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


def add_arguments(p: argparse.ArgumentParser) -> None:
    """`report`'s own options (app.py adds --db and -v)."""
    p.add_argument("--benchmark", required=True)
    p.add_argument("--runs", help="RUN1,RUN2,... (default: every run of the benchmark)")
    p.add_argument("--split", help="the split to score, as score --split (default: test; 'all': every split)")
    p.add_argument("--groups", default="failing", help=f"the groups the file holds: {GROUP_CHOICES} "
                   "(failing ones first; default: failing)")
    p.add_argument("-o", "--output", type=Path, required=True, help="the HTML file to write")


def cmd_report(args: argparse.Namespace, store: Store) -> int:
    from ui.report.collect import BadReportRequest

    t0 = time.perf_counter()
    names = [n.strip() for n in (args.runs or "").split(",") if n.strip()] or None
    if args.output.suffix.lower() not in (".html", ".htm"):
        raise BadReportRequest(f"-o {args.output}: the report is one HTML file; name it FILE.html")
    command = shlex.join(["python", "app.py", *sys.argv[1:]]) if sys.argv[1:2] == ["report"] else "app.py report"
    out = write_report(store, args.output, args.benchmark, names, args.split, args.groups, command)
    size = out.stat().st_size / 1e6
    print(f"report of {args.benchmark!r} written to {out} ({size:.1f} MB, {time.perf_counter() - t0:.1f} s)")
    return 0
