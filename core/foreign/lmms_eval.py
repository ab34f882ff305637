"""lmms-eval `--log_samples` files (EvolvingLMMs-Lab/lmms-eval, lmms_eval/evaluator.py): docs/FORMATS.md.

With --log_samples the evaluator writes, per task, one JSON object a line per document: `doc_id` (the
document's position in the task's dataset split), `doc` (the dataset row, images left out), `target`,
`arguments`, `resps` (the raw generations, a list per request) and `filtered_resps` (after the task's
filters, e.g. answer extraction), plus the metric values. Its evaluation tracker
(lmms_eval/loggers/evaluation_tracker.py, `save_results_samples`) writes `<date>_samples_<task>.jsonl` without
`doc` and `arguments`, and without `resps` where they equal `filtered_resps`: only `doc_id` and
`filtered_resps` are required.
"""

from __future__ import annotations

from typing import Any

from core.foreign.answers import cell_text, is_null
from core.report import Report

DEFAULT_KEYS = ("doc.index", "doc.idx", "doc.id", "doc.question_id")
REQUIRED = ("doc_id", "filtered_resps")
_REQUIRED = frozenset(REQUIRED)


def looks_like_samples(obj: Any) -> bool:
    return isinstance(obj, dict) and "doc_id" in obj and ("resps" in obj or "filtered_resps" in obj)


def _first_text(value: Any) -> str | None:
    """The first response of `resps` / `filtered_resps` ([[text]], [text] or text); None when there is none."""
    while isinstance(value, (list, tuple)):
        if not value:
            return None
        value = value[0]
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def key_value(obj: dict[str, Any], key: str) -> Any:
    """The value at a dotted path (`doc.index`, `doc_id`); None when absent."""
    node: Any = obj
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def choose_key(first: dict[str, Any]) -> str:
    """The default key: the first of DEFAULT_KEYS the first sample has, else doc_id (a position)."""
    return next((k for k in DEFAULT_KEYS if not is_null(key_value(first, k))), "doc_id")


def sample_fields(obj: Any, no: int, file: str, report: Report) -> tuple[str, str, dict[str, Any]] | None:
    """(filtered response, raw response, kept fields) of one sample line; None with the error reported."""
    if not isinstance(obj, dict):
        report.error(file, no, "(line)", "expected a JSON object (an lmms-eval sample)")
        return None
    if not obj.keys() >= _REQUIRED:
        missing = [k for k in REQUIRED if k not in obj]
        report.error(file, no, ",".join(missing), "missing (an lmms-eval sample has doc_id and filtered_resps, "
                     "and doc, target and resps where lmms-eval kept them)")
        return None
    filtered = _first_text(obj["filtered_resps"])
    raw = _first_text(obj["resps"]) if "resps" in obj else filtered  # left out by the tracker where equal
    if filtered is None and raw is None:
        report.error(file, no, "filtered_resps", "expected a response (a string, or a list holding one)")
        return None
    kept: dict[str, Any] = {"raw": raw or ""}
    target = obj.get("target")
    if target is not None and target != "":
        kept["target"] = target if isinstance(target, (str, list, dict)) else cell_text(target)
    return (filtered if filtered is not None else raw or ""), raw or "", kept
