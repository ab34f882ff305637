"""Scoring entry point: picks the family's metric set for a run (pure; the caller brings the data)."""

from __future__ import annotations

from typing import Any

from core import families
from core.schema import RunData, to_jsonable


def score_run(items: Any, run: RunData, others: list[RunData], **kw: Any) -> dict[str, Any]:
    """{"benchmark", "run", "metrics"} for one run, with every Rate as {"value", "k", "n"} or a reason."""
    metrics = families.get(run.family).score(items, run, others, **kw)
    return {"benchmark": run.benchmark, "run": run.name, "family": run.family, "synthetic": bool(run.config.get("synthetic")),
            "metrics": to_jsonable(metrics)}
