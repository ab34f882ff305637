"""Exporters: items and predictions in the import formats of SPEC §3, so an export re-imports unchanged."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from typing import Any, TextIO

from db.store import Store

PRED_EXPORT_FIELDS = ("item_id", "response", "answer", "status", "rotation", "repeat", "input_mode", "trace",
                      "tokens", "error")


def item_records(store: Store, benchmark: str) -> Iterator[dict[str, Any]]:
    """Items as SPEC §3 objects; `images` are the paths as imported; `tags` the group's tags (db/tags.py) as
    [{tag, note, by, created}] on each of its items, None (left out of JSONL) for an untagged group."""
    from db.tags import tags_frame

    tags: dict[str, list[dict[str, Any]]] = {}
    for t in tags_frame(store, benchmark).itertuples(index=False):
        tags.setdefault(str(t.group_id), []).append({"tag": t.tag, "note": _none(t.note), "by": t.by,
                                                     "created": t.created})
    for it in store.items(benchmark):
        rec: dict[str, Any] = {"benchmark": it.benchmark, "item_id": it.item_id, "group_id": it.group_id,
                               "split": it.split, "kind": it.kind, "variant": it.variant, "images": it.image_names,
                               "question": it.question, "options": it.options, "answer": it.answer, "meta": it.meta}
        if it.stages is not None:
            rec["stages"] = it.stages
        rec["tags"] = tags.get(it.group_id)
        yield rec


def _none(v: Any) -> Any:
    """None for SQL NULLs that pandas turned into NaN."""
    return None if isinstance(v, float) and v != v else v


def prediction_records(store: Store, run: str) -> Iterator[dict[str, Any]]:
    """Predictions of a run; `answer` is the letter as the model saw it (re-imports to the same rows)."""
    df = store.predictions_frame(run)
    for row in df.itertuples(index=False):
        tokens = _none(row.tokens)
        yield {"item_id": row.item_id, "response": _none(row.response), "answer": _none(row.shown),
               "status": row.status, "rotation": int(row.rotation), "repeat": int(row.repeat),
               "input_mode": row.input_mode, "trace": _none(row.trace),
               "tokens": None if tokens is None else int(tokens), "error": _none(row.error)}


def write_records(records: Iterator[dict[str, Any]], out: TextIO, fmt: str, fields: tuple[str, ...] | None = None) -> int:
    """Write records as JSONL or CSV (nested values JSON-encoded in CSV); returns the count."""
    n = 0
    if fmt == "jsonl":
        for rec in records:
            out.write(json.dumps({k: v for k, v in rec.items() if v is not None}, ensure_ascii=False) + "\n")
            n += 1
        return n
    if fmt != "csv":
        raise ValueError(f"unknown export format {fmt!r}; expected jsonl or csv")
    writer = None
    for rec in records:
        if writer is None:
            writer = csv.DictWriter(out, fieldnames=list(fields or rec.keys()), extrasaction="ignore")
            writer.writeheader()
        writer.writerow({k: (json.dumps(v, ensure_ascii=False) if isinstance(v, (dict, list)) else
                             ("" if v is None else v)) for k, v in rec.items()})
        n += 1
    return n
