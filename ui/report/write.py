"""The report's entry point: gather (collect.py), lay out (page.py), write one file (`app.py report`,
cli.commands.cmd_report; the Metrics tab's "Download report", ui.metrics.report_download)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from db.store import Store
from ui.report.collect import collect
from ui.report.page import render


def report_html(store: Store, benchmark: str, runs: list[str] | None = None, split: str | None = None,
                groups: str | None = None, command: str = "", **kw: Any) -> str:
    """The report's HTML text (`kw`: collect's, e.g. the Metrics tab's score cache)."""
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
