"""Dry runs of the importers (the Data tab's validation report before committing) and label export.

A dry run calls the real importer inside `Store.dry_run()`, where the single write path (`Store.write`, STYLE
7) opens the same `BEGIN IMMEDIATE` transaction and then rolls it back: every rule of db/importers.py runs, against the
store's current contents (unknown items, duplicate keys, a run name taken with other settings, changed
labels), and the report carries the same counts and warnings as the real import, yet nothing is committed.
Items use `db.importers.validate_items_file` (no store needed) plus the name check of `import_items`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from core.errors import ImportRefused
from core.report import Report
from db import importers
from db.store import Store


def validate_predictions(store: Store, path: str | os.PathLike[str], run: str, model: str | None = None,
                         config: dict[str, Any] | None = None, benchmark: str | None = None,
                         replace: bool = False) -> Report:
    """The report `import_predictions` would give (counts included), with nothing written."""
    try:
        with store.dry_run():
            result = importers.import_predictions(store, path, run, model=model, config=config,
                                                  benchmark=benchmark, replace=replace)
    except ImportRefused as exc:
        report = exc.report if isinstance(exc.report, Report) else Report()
        if not report.errors:
            report.error(Path(path).name, 0, "(file)", str(exc))
        return report
    return result.report


def validate_labels(store: Store, path: str | os.PathLike[str], run: str) -> Report:
    """The report `import_labels` would give (counts included), with nothing written."""
    try:
        with store.dry_run():
            result = importers.import_labels(store, path, run)
    except ImportRefused as exc:
        report = exc.report if isinstance(exc.report, Report) else Report()
        if not report.errors:
            report.error(Path(path).name, 0, "(file)", str(exc))
        return report
    return result.report


def validate_items(store: Store, path: str | os.PathLike[str], name: str | None = None) -> Report:
    """`validate_items_file` plus the store-level rule of `import_items`: a taken name must hold identical items
    (checked by the real import, which then reports "unchanged"); here a taken name is a warning."""
    path = Path(path)
    report = importers.validate_items_file(path)
    bench = name or path.stem
    if any(b["name"] == bench for b in store.benchmarks()):
        report.warn(path.name, 0, "name", f"benchmark {bench!r} exists: the import changes nothing if the items are "
                    "identical and is refused otherwise (choose another name)")
    return report
