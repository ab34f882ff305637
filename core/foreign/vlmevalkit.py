"""VLMEvalKit's files (open-compass/VLMEvalKit): dataset TSVs and prediction tables. docs/FORMATS.md.

Dataset TSV (vlmeval/dataset/image_base.py, ImageBaseDataset.__init__ / dump_image; vlmeval/smp/file.py
`load` reads it with pandas, tab-separated): one row per question with `index`, `question`, `hint`, option
columns `A`..`H` (an empty cell is an absent option), `answer` (a letter), `category`, `l2-category`, `split`,
`image` and `image_path`. An `image` cell holds base64 image bytes, the text of a Python list of base64 strings
(several images, `toliststr`), or, when it is at most 64 characters long, the `index` of another row whose
cell holds the image. Circular copies of a question (its options rotated) are rows whose index agrees modulo
1,000,000 (vlmeval/dataset/image_mcq.py, `data['index'] % int(1e6)`): they form one group here.

Prediction tables (vlmeval/inference.py writes `{model}_{dataset}.xlsx`; the MCQ evaluation writes
`..._result.xlsx` beside it): the dataset's columns less `image`, plus `prediction` (the raw response) and,
after answer extraction, the extracted letter and `hit` / `log`.
"""

from __future__ import annotations

import ast
import base64
import binascii
from dataclasses import dataclass
from typing import Any

from core.foreign.answers import cell_text, is_null, letter_of
from core.report import Report
from core.schema import LETTERS

CIRCULAR = 1_000_000  # VLMEvalKit's offset between circular copies of one question
REFERENCE_MAX = 64  # an image cell this short is another row's index (image_base.py)
ITEM_COLUMNS = ("index", "question", "hint", *LETTERS, "answer", "category", "split", "image")
_ITEM_COLUMNS = frozenset(ITEM_COLUMNS)
PRED_EXTRACTED = ("extracted", "opt", "pred")  # the extracted letter, under the names the MCQ evaluators use
PRED_KEPT = ("hit", "log")  # the evaluator's verdict and its log, kept beside the prediction


@dataclass(slots=True)
class RowImages:
    """The images of one row: decoded bytes (from `image`) or file names (from `image_path` alone)."""

    blobs: list[bytes]
    paths: list[str]


_NO_IMAGES = RowImages([], [])  # the images of a row without any (never changed: callers only read them)


def int_index(value: Any) -> int | None:
    """The integer value of an index cell ("12", 12, 12.0), or None when it is not an integer."""
    text = cell_text(value).strip()
    if text.lstrip("-").isdigit():
        return int(text)
    return None


def _cell_list(text: str) -> list[str] | None:
    """`toliststr`: a cell that is the text of a Python list gives its strings; any other cell, itself."""
    if text.startswith("[") and text.endswith("]"):
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return None
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return value
        return None
    return [text]


def _decode(text: str) -> bytes | None:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def read_images(rows: list[tuple[int, dict[str, str]]], file: str, report: Report) -> list[RowImages]:
    """Each row's images, following VLMEvalKit's rules; a bad cell or a dangling reference is an error."""
    if all("image" not in r and "image_path" not in r for _no, r in rows):  # a TSV without images: one
        return [_NO_IMAGES] * len(rows)  # shared, read-only record (not 10,000 records for the collector to walk)
    by_index = {r.get("index", ""): (no, r.get("image", "")) for no, r in rows}
    decoded: dict[str, bytes | None] = {}  # a referenced cell is decoded once
    out = []
    for no, row in rows:
        cell = row.get("image", "")
        if not cell.strip():
            paths = _cell_list(row.get("image_path", "").strip()) if row.get("image_path", "").strip() else []
            if paths is None:
                report.error(file, no, "image_path", "expected a file name or the text of a list of file names")
                paths = []
            out.append(RowImages([], paths))
            continue
        if len(cell) <= REFERENCE_MAX:
            target = by_index.get(cell.strip())
            if target is None:
                report.error(file, no, "image", f"{cell.strip()!r:.70} names no row's index (a cell of at most "
                             f"{REFERENCE_MAX} characters is a reference to the row holding the image)")
                out.append(RowImages([], []))
                continue
            if len(target[1]) <= REFERENCE_MAX:
                report.error(file, no, "image", f"refers to row {cell.strip()!r} (line {target[0]}), whose image "
                             "cell is itself a reference (expected base64 image data there)")
                out.append(RowImages([], []))
                continue
            cell, where = target[1], f" (from the row with index {cell.strip()}, line {target[0]})"
        else:
            where = ""
        parts = _cell_list(cell.strip())
        if parts is None:
            report.error(file, no, "image", "expected base64 image data or the text of a Python list of base64 "
                         f"strings{where}")
            out.append(RowImages([], []))
            continue
        blobs = []
        for k, part in enumerate(parts):
            if part not in decoded:
                decoded[part] = _decode(part.strip())
            data = decoded[part]
            if data is None or not data:
                which = f"image {k + 1} of {len(parts)}" if len(parts) > 1 else "the cell"
                report.error(file, no, "image", f"{which} is not valid base64{where}")
            else:
                blobs.append(data)
        out.append(RowImages(blobs, []))
    return out


def item_object(row: dict[str, str], no: int, family: str, file: str, report: Report,
                indices: set[str] | frozenset[str] = frozenset()) -> dict[str, Any] | None:
    """The items-JSONL object of one dataset row (images apart); None when the row cannot be one.

    An integer index i >= 1,000,000 is a circular copy of the row with index i mod 1,000,000 when that row is in
    the file (`indices`): it joins that row's group with `meta.copy` = i div 1,000,000. Any other row is its own
    group (copy 0 when its index is an integer).
    """
    index = row.get("index", "").strip()
    if not index:
        report.error(file, no, "index", "missing (expected the row's index, an integer)")
        return None
    value = int_index(index)
    # a cell is filled when it is not is_null: for the text cells of a TSV, when it holds more than blanks
    options = {c: v for c in LETTERS
               if (v := row.get(c)) is not None and (v.strip() if type(v) is str else not is_null(v))}
    meta: dict[str, Any] = {}
    group = index
    if value is not None and value >= 0 and (value < CIRCULAR or str(value % CIRCULAR) in indices):
        group = str(value % CIRCULAR)
        meta["copy"] = value // CIRCULAR
    for col, text in row.items():
        if col not in _ITEM_COLUMNS and col is not None and (text.strip() if type(text) is str else not is_null(text)):
            meta[col] = text
    if not is_null(row.get("hint")):
        meta["hint"] = row["hint"]
    raw_answer = row.get("answer")
    answer: Any = raw_answer
    if options and not is_null(raw_answer) and raw_answer not in options:
        letter, why = letter_of(raw_answer, options)
        if letter is None:
            report.error(file, no, "answer", why)
            return None
        answer = letter
    obj: dict[str, Any] = {"benchmark": family, "item_id": index, "group_id": group,
                           "split": row.get("split") or "test", "kind": row.get("category") or "",
                           "question": row.get("question", ""), "options": options, "answer": answer,
                           "meta": meta}
    if is_null(raw_answer):
        obj.pop("answer")
    return obj


def prediction_object(row: dict[str, Any], no: int, file: str, report: Report) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(predictions-JSONL object, what the tool kept beside it) of one prediction-table row."""
    index = row.get("index")
    if is_null(index):
        report.error(file, no, "index", "missing (expected the item's index)")
        return None
    if "prediction" not in row:
        report.error(file, no, "prediction", "missing (expected the raw model response)")
        return None
    pred = row.get("prediction")
    obj = {"item_id": cell_text(index).strip(), "response": "" if is_null(pred) else cell_text(pred)}
    kept: dict[str, Any] = {}
    for col in PRED_EXTRACTED:
        if col in row and not is_null(row[col]):
            kept["extracted"] = cell_text(row[col]).strip()
            break
    for col in PRED_KEPT:
        if col in row and not is_null(row[col]):
            kept[col] = row[col] if isinstance(row[col], (int, float, str)) else str(row[col])
    return obj, kept
