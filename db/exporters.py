"""Exporters: items and predictions in the import formats of SPEC §3, so an export re-imports unchanged, and a
benchmark's leaderboard as a spreadsheet (CSV or xlsx)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any, BinaryIO, TextIO

import pandas as pd

from db.store import Store

PRED_EXPORT_FIELDS = ("item_id", "question", "gold", "prediction", "correct", "response", "answer", "status",
                      "rotation", "repeat", "input_mode", "trace", "tokens", "error")
LEADERBOARD_FORMATS = ("csv", "xlsx")


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
    """Predictions of a run; `answer` is the letter as the model saw it (re-imports to the same rows). For a
    reader of the spreadsheet, each row also carries its item's `question` and `gold` letter, `prediction` (the
    answer as an option letter of the item as stored, what is compared with gold) and `correct` (status ok and
    prediction == gold: this prediction alone; a family whose items need every rotation right scores the
    item from all of its rows). The importer ignores these four."""
    df = store.predictions_frame(run)
    items = store.items_frame(store.run(run)["benchmark"]).set_index("item_id")
    question, gold = items["question"].to_dict(), items["answer"].to_dict()
    for row in df.itertuples(index=False):
        tokens = _none(row.tokens)
        pred = _none(row.answer)
        yield {"item_id": row.item_id, "question": question.get(row.item_id), "gold": gold.get(row.item_id),
               "prediction": pred, "correct": row.status == "ok" and pred is not None and pred == gold.get(row.item_id),
               "response": _none(row.response), "answer": _none(row.shown),
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


def leaderboard_frame(store: Store, benchmark: str, split: str | None = None) -> pd.DataFrame:
    """A row per run of `benchmark` (and the headline table's reference rows), a column per headline metric:
    the family's first Metrics table (Family.tables; the leaderboard / main-results table),
    scored as `score --all` (db.bulk.score_named), as core.report_tables.to_frame writes it (percent with
    the unit in the header, `_k`, `_n`, `_ci_low`, `_ci_high`, `_reason`), with each run's model and runner."""
    from core import families
    from core.errors import NotFound
    from core.report_tables import RunScore, to_frame
    from core.scoring import split_arg
    from db.bulk import score_named

    family = store.benchmark_family(benchmark)
    runs = store.runs(benchmark, with_counts=False)
    if not runs:
        raise NotFound(f"benchmark {benchmark!r} has no runs to rank")
    names = [r["name"] for r in runs]
    scores = score_named(store, benchmark, names, names, split_arg(split))
    scored = [RunScore(r["name"], scores[r["name"]]["metrics"], bool(r["synthetic"]), dict(r["config"] or {}),
                       r["runner"], scores[r["name"]].get("split", "test")) for r in runs]
    frame = to_frame(families.get(family).tables(scored)[0])
    meta = {r["name"]: r for r in runs}
    at = frame.columns.get_loc("synthetic")
    frame.insert(at, "runner", [meta[n]["runner"] if n in meta else "" for n in frame.iloc[:, 0]])
    frame.insert(at, "model", [meta[n]["model"] if n in meta else "" for n in frame.iloc[:, 0]])
    frame.insert(at, "split", scored[0].split)
    return frame


def write_leaderboard(frame: pd.DataFrame, out: BinaryIO, fmt: str, sheet: str = "leaderboard") -> None:
    """The leaderboard as CSV (UTF-8) or an xlsx workbook of one sheet."""
    if fmt == "csv":
        out.write(frame.to_csv(index=False).encode("utf-8"))
    elif fmt == "xlsx":
        buf = io.BytesIO()
        with pd.ExcelWriter(buf, engine="openpyxl") as xl:
            frame.to_excel(xl, sheet_name=sheet[:31], index=False)
        out.write(buf.getvalue())
    else:
        raise ValueError(f"unknown leaderboard format {fmt!r}; expected {' or '.join(LEADERBOARD_FORMATS)}")
