"""Inspect AI logs as items and predictions (docs/FORMATS.md, "Inspect AI logs").

core/foreign/inspect_log.py reads the log (streamed, within its limits) and turns each sample into the objects an
items-JSONL and a predictions-JSONL line would be; this module runs them through the importers' own checks:
the items through `db.import_common.finish_items` (core.formats.parse_item, the images, the family's rules), the
predictions through `db.import_predictions.import_prediction_lines` (its caller passes `lines`), with an `after`
hook that writes Inspect's own score of each sample beside it (the prediction_sources table). One pass over the
samples gives both, so `open` reads a 20,000-sample log once. It imports no importer: db/foreign.py and db/open.py
call it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core import families
from core.foreign import inspect_log
from core.formats import check_prediction_line, prediction_fields
from core.report import Report
from core.schema import Item
from db.import_common import finish_items
from db.store import Store

FORMAT = "inspect"


@dataclass(slots=True)
class LogRead:
    """One log read: its header, its items (one per sample id, from the sample's first epoch) and images, its
    prediction lines (line k = the k-th sample) with what Inspect kept beside each, and the report so far."""

    header: inspect_log.Header
    report: Report
    family: str | None = None
    items: list[Item] = field(default_factory=list)
    images: dict[str, Any] = field(default_factory=dict)
    lines: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    kept: dict[int, dict[str, Any]] = field(default_factory=dict)
    n_samples: int = 0

    @property
    def model(self) -> str:
        return self.header.model

    @property
    def task(self) -> str:
        return self.header.task

    def hits(self) -> dict[tuple[str, int], bool]:
        """(item_id, repeat) -> whether Inspect's score says correct, for each sample it scored."""
        return {(obj["item_id"], obj.get("repeat", 0)): bool(self.kept[no]["hit"])
                for no, obj in self.lines if "hit" in self.kept.get(no, {})}


def read_log(path: Path, report: Report, family: str | None = None, group_by: str | None = None,
             progress: Callable[[int], None] | None = None) -> LogRead | None:
    """Read an Inspect log's samples once into items and prediction lines; None (the problem in `report`, naming
    the file and entry) when the log cannot be read. A log whose eval is still running, was cancelled or stopped
    with an error gives what it holds, with a warning saying so. `progress(n)` is told each sample read."""
    fam = family or families.DEFAULT
    name = path.name
    try:
        families.get(fam)
    except Exception as exc:  # UnknownFamily: a CrosscheckError naming the families
        report.error(name, 0, "--family", str(exc))
        return None
    try:
        with inspect_log.LogFile(path) as log:
            read = LogRead(log.header, report, n_samples=log.n_samples)
            rows = _samples(log, read, fam, group_by, progress)
    except inspect_log.BadLog as exc:
        report.error(name, 0, "(file)", str(exc))
        return None
    note = inspect_log.STATUS_NOTES.get(read.header.status)
    if note:
        why = str(read.header.error.get("message") or "no message")[:200]
        report.warn(name, 0, "status", note.format(n=len(read.lines), error=why))
    if not rows and report.ok:
        report.error(name, 0, "(file)", "the log holds no samples (an eval started but with no sample finished, or "
                     "written with log_samples=False)")
        return read
    _check_lines(read, name, report)
    if report.ok:
        read.family, read.items, read.images = finish_items(name, fam, rows, path.parent, report)
    return read


def _samples(log: inspect_log.LogFile, read: LogRead, family: str, group_by: str | None,
             progress: Callable[[int], None] | None) -> list[tuple[str, int, dict[str, Any], list[Any]]]:
    """One pass over the log's samples: the item objects (one per sample id, from its first epoch in the log)
    returned, each sample's prediction line and kept score added to `read`."""
    name, report = log.name, read.report
    scorer = log.header.scorer()
    rows: list[tuple[str, int, dict[str, Any], list[Any]]] = []
    seen: set[str] = set()
    for no, (_where, sample) in enumerate(log.samples(), start=1):
        if progress is not None:
            progress(1)
        sid = str(sample["id"]) if isinstance(sample, dict) and "id" in sample else None
        if sid is None or sid not in seen:
            got = inspect_log.item_object(sample, name, no, family, report, group_by)
            if got is None:
                continue
            seen.add(got[0]["item_id"])
            rows.append((name, no, got[0], got[1]))
        line, kept = inspect_log.prediction_object(sample, scorer)
        read.lines.append((no, line))
        if kept:
            read.kept[no] = kept
    return rows


def _check_lines(read: LogRead, name: str, report: Report) -> None:
    """The prediction lines' field rules (core.formats.PREDICTION_LINE) and one sample per (id, epoch), checked
    before anything is written, so a log whose items would be written and whose predictions then refused is
    refused whole."""
    first: dict[tuple[str, int, int], int] = {}
    for no, obj in read.lines:
        f = prediction_fields(obj) or check_prediction_line(obj, name, no, report)
        if f is None:
            continue
        key = (f[0], f[4], f[5])
        if key in first:
            report.error(name, no, "id", f"sample {key[0]!r} epoch {key[2] + 1} appears twice (first as sample "
                         f"{first[key]})")
        else:
            first[key] = no


def read_items(path: Path, report: Report, family: str | None = None,
               group_by: str | None = None) -> tuple[str | None, list[Item], dict]:
    """(family, items, images) of an Inspect log, for `import --format inspect` (db/foreign.py)."""
    read = read_log(path, report, family, group_by)
    if read is None or not report.ok:
        return None, [], {}
    return read.family, read.items, read.images


def sources_writer(store: Store, benchmark: str, read: LogRead) -> Callable[[sqlite3.Connection, int], None]:
    """The `after` hook of the predictions import: Inspect's score of each sample (value, answer, whether it says
    correct) written beside the prediction (prediction_sources, tool "inspect") in the import's transaction."""
    b = store.benchmark(benchmark)
    keys = store.item_keys(int(b["id"]))

    def after(conn: sqlite3.Connection, run_id: int) -> None:
        rows = []
        for no, obj in read.lines:
            kept = read.kept.get(no)
            repeat = obj.get("repeat", 0)
            if kept and obj["item_id"] in keys and isinstance(repeat, int):
                rows.append((run_id, keys[obj["item_id"]][0], repeat, FORMAT,
                             json.dumps(kept, ensure_ascii=False, sort_keys=True)))
        conn.executemany("INSERT OR REPLACE INTO prediction_sources (run_id, item_pk, rotation, repeat, tool, kept)"
                         " VALUES (?, ?, 0, ?, ?, ?)", rows)

    return after
