"""`core.report_tables.Table` as plain JSON: what the Metrics endpoint (`api_name="metrics"`, ui/metrics.py)
returns for each table, so a script reads a hosted instance's tables without scraping HTML (docs/UI.md).

A table is {"key", "title", "index", "columns", "rows", "note", "reasons"} (and "aside", what its scores set
aside, when they did); a row is {"labels", "run",
"synthetic", "reference", "cells"}; a cell is {"column", "run", "path", "kind", "value", "k", "n", "interval",
"reason", "display"}: `value` is the fraction, count or text of `score --json` at `path` in the run's metrics
(None when it cannot be computed, and then `reason` says why), `interval` its 95% interval [lo, hi] or None,
`display` the text the tab shows (percent, one decimal). A mean ± SD cell adds "sd".
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from core.report_tables import Cell, Row, Table, display, is_rate, reason_of, reasons, value_of


def plain(value: Any) -> Any:
    """A number as Python's own int or float (metric values can be numpy scalars, which JSON encoders such as
    orjson, Gradio's, do not write as numbers); NaN and infinities as None; anything else as it is."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    number = float(value)
    return number if math.isfinite(number) else None


def cell_json(column: str, cell: Cell) -> dict[str, Any]:
    node = cell.node
    why = reason_of(node)
    value = plain(value_of(node)) if why is None else None
    if why is None and value is None and value_of(node) is not None:
        why = "undefined"  # an infinite value
    rate = node if is_rate(node) else {}
    ci = rate.get("ci")
    out: dict[str, Any] = {"column": column, "run": cell.run, "path": list(cell.path) if cell.path else None,
                           "kind": cell.kind, "value": value, "k": plain(rate.get("k")), "n": plain(rate.get("n")),
                           "interval": [plain(ci[0]), plain(ci[1])] if ci else None, "reason": why,
                           "display": display(cell)}
    if "sd" in rate:
        out["sd"] = plain(rate["sd"])
    return out


def row_json(columns: list[str], row: Row) -> dict[str, Any]:
    return {"labels": list(row.labels), "run": row.run, "synthetic": row.synthetic, "reference": row.reference,
            "cells": [cell_json(c, cell) for c, cell in zip(columns, row.cells, strict=True)]}


def table_json(table: Table) -> dict[str, Any]:
    """One table as JSON (the module docstring gives the shape)."""
    out = {"key": table.key, "title": table.title, "index": list(table.index), "columns": list(table.columns),
           "rows": [row_json(table.columns, r) for r in table.rows], "note": table.note,
           "reasons": reasons(table)}
    if table.aside:  # only when the scores set groups aside (a reviewer's "gold is wrong")
        out["aside"] = table.aside
    return out
