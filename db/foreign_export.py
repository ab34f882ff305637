"""Exports in VLMEvalKit's layouts (`export items|predictions --format vlmevalkit`): docs/FORMATS.md.

Items go out as a dataset TSV VLMEvalKit's ImageBaseDataset loads (vlmeval/dataset/image_base.py): `index`
(the item id), `question`, `hint`, `A`..`H`, `answer`, `category` (the kind), `split`, `image` (base64; the
text of a Python list for several images; an image already written for an earlier row is that row's index,
as VLMEvalKit saves space) and every meta field as a column. Predictions go out as the prediction table its
evaluators read (vlmeval/inference.py): the dataset's columns without `image`, plus `prediction`.
"""

from __future__ import annotations

import base64
import csv
import json
from collections.abc import Iterator
from typing import Any, TextIO

from core.foreign.vlmevalkit import REFERENCE_MAX
from core.schema import LETTERS, Item
from db.store import Store

SKIP_META = {"copy", "hint"}  # `copy` is implied by the index, `hint` has its own column


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _columns(items: list[Item]) -> list[str]:
    width = max((len(it.options) for it in items), default=0)
    meta = list(dict.fromkeys(k for it in items for k in it.meta if k not in SKIP_META))
    return ["index", "question", "hint", *LETTERS[:width], "answer", "category", "split", "image", *meta]


def _rows(store: Store, items: list[Item], with_images: bool) -> Iterator[dict[str, str]]:
    first_row: dict[tuple[str, ...], str] = {}
    for it in items:
        row = {"index": it.item_id, "question": it.question, "hint": _cell(it.meta.get("hint")),
               "answer": it.answer, "category": it.kind, "split": it.split}
        row.update({letter: text for letter, text in it.options.items()})
        row.update({k: _cell(v) for k, v in it.meta.items() if k not in SKIP_META})
        if with_images:
            key = tuple(it.images)
            if len(key) == 1 and key in first_row and len(first_row[key]) <= REFERENCE_MAX:
                row["image"] = first_row[key]
            elif key:
                blobs = [base64.b64encode(store.image_path(h).read_bytes()).decode("ascii") for h in key]
                row["image"] = blobs[0] if len(blobs) == 1 else repr(blobs)
                first_row.setdefault(key, it.item_id)
            else:
                row["image"] = ""
        yield row


def write_vlmevalkit_items(store: Store, benchmark: str, out: TextIO) -> int:
    """A dataset TSV of the benchmark's items; returns the row count."""
    items = store.items(benchmark)
    writer = csv.DictWriter(out, fieldnames=_columns(items), delimiter="\t", lineterminator="\n")
    writer.writeheader()
    n = 0
    for row in _rows(store, items, with_images=True):
        writer.writerow(row)
        n += 1
    return n


def write_vlmevalkit_predictions(store: Store, run: str, out: TextIO) -> int:
    """A prediction TSV of the run (rotation 0, repeat 0: VLMEvalKit has neither): the item columns without
    `image`, then `prediction` (the raw response). Returns the row count."""
    row_info = store.run(run)
    items = {it.item_id: it for it in store.items(row_info["benchmark"])}
    preds = store.predictions_frame(run)
    preds = preds[(preds["rotation"] == 0) & (preds["repeat"] == 0)]
    chosen = [items[i] for i in preds["item_id"] if i in items]
    cols = [c for c in _columns(chosen) if c != "image"] + ["prediction"]
    writer = csv.DictWriter(out, fieldnames=cols, delimiter="\t", lineterminator="\n")
    writer.writeheader()
    responses = dict(zip(preds["item_id"], preds["response"], strict=True))
    n = 0
    for row in _rows(store, chosen, with_images=False):
        resp = responses.get(row["index"])
        row["prediction"] = "" if resp is None or (isinstance(resp, float) and resp != resp) else str(resp)
        writer.writerow(row)
        n += 1
    return n
