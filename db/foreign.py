"""Imports from other tools' files (VLMEvalKit, lmms-eval, Hugging Face datasets): docs/FORMATS.md.

This module reads the files (TSV, xlsx, parquet, arrow, JSON) and hands the rows to the pure readers in
core/foreign/, which turn each into the object an items- or predictions-JSONL line would be. Those objects
then go through the same checks as the JSONL import (core.formats, the family's group rules, the image checks,
db.import_predictions.import_prediction_lines for predictions), so a file with any bad row writes nothing,
errors name the file, the line (the header is line 1) or row, the column and what was expected, and a re-import
is a no-op. This module calls the importers' shared helpers (db/import_common.py) and no importer:
db/import_items.py and db/import_predictions.py call it.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core import families
from core.errors import CrosscheckError
from core.foreign import hf, inspect_log, lmms_eval, vlmevalkit
from core.foreign.answers import cell_text, is_null
from core.report import Report
from core.schema import Item
from db.import_common import finish_items, json_lines, read_text, refuse, resolve_benchmark
from db.store import Store

ITEM_FORMATS = ("auto", "jsonl", "vlmevalkit", "hf", "inspect")
PREDICTION_FORMATS = ("vlmevalkit", "lmms-eval", "inspect")
PARQUET = (".parquet",)

csv.field_size_limit(sys.maxsize)  # base64 image cells are long


# ---- format detection ---------------------------------------------------------------------------------------


def item_format(path: Path, fmt: str, report: Report) -> str | None:
    """jsonl, vlmevalkit or hf for an items path (`auto`: by extension, and a folder is a datasets folder)."""
    if fmt not in ITEM_FORMATS:
        report.error(path.name, 0, "--format", f"unknown items format {fmt!r} (expected {', '.join(ITEM_FORMATS)})")
        return None
    if fmt != "auto":
        return fmt
    suffix = path.suffix.lower()
    if path.is_dir() or suffix in (*PARQUET, ".arrow"):
        return "hf"
    if inspect_log.looks_like_log(path):
        return "inspect"
    if suffix == ".tsv":
        return "vlmevalkit"
    return "jsonl"


def refuse_options_for_jsonl(path: Path, report: Report, family: str | None = None, mapping: str | None = None,
                             preset: str | None = None, group_by: str | None = None) -> None:
    """--family, --map, --preset and --group-by belong to other tools' files: a JSONL names its family on every
    line."""
    for flag, value in (("--family", family), ("--map", mapping), ("--preset", preset), ("--group-by", group_by)):
        if value:
            report.error(path.name, 0, flag, f"{flag} applies to VLMEvalKit and Hugging Face files; an items "
                         "JSONL names its family in each line's `benchmark` field")


def prediction_format(path: Path, fmt: str) -> str:
    """jsonl, csv, vlmevalkit or lmms-eval for a predictions path (`auto`: by extension and columns)."""
    if fmt != "auto":
        if fmt not in ("jsonl", "csv", *PREDICTION_FORMATS):
            raise CrosscheckError(f"unknown predictions format {fmt!r} (expected auto, jsonl, csv, vlmevalkit or "
                                  "lmms-eval)")
        return fmt
    suffix = path.suffix.lower()
    if suffix in (".xlsx", ".tsv"):
        return "vlmevalkit"
    if inspect_log.looks_like_log(path):
        return "inspect"
    head = _head(path)
    if suffix == ".json":  # one JSON document is VLMEvalKit's; one object a line is a JSONL file named .json
        line = next((x for x in head.split("\n") if x.strip()), "")
        try:
            first = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            return "vlmevalkit"
        if isinstance(first, dict) and "item_id" in first:
            return "jsonl"
        return "lmms-eval" if lmms_eval.looks_like_samples(first) else "vlmevalkit"
    if suffix == ".csv":
        first = head.split("\n", 1)[0]
        cols = next(csv.reader([first]), [])
        return "vlmevalkit" if "index" in cols and "prediction" in cols and "item_id" not in cols else "csv"
    line = next((x for x in head.split("\n") if x.strip()), "")
    try:
        obj = json.loads(line)
    except (json.JSONDecodeError, RecursionError):
        return "jsonl"  # the JSONL path reports the line
    return "lmms-eval" if lmms_eval.looks_like_samples(obj) else "jsonl"


def _head(path: Path, size: int = 1 << 20) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(size).decode("utf-8-sig", errors="replace")
    except OSError:
        return ""


# ---- reading tables -----------------------------------------------------------------------------------------


def read_delimited(path: Path, report: Report, delimiter: str) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """(header, [(line of the row's first physical line, {column: cell})]); the header is line 1."""
    text = read_text(path, report)
    if text is None:
        return [], []
    name = path.name
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(reader)
    except (StopIteration, csv.Error) as exc:
        report.error(name, 1, "(header)", f"expected a header row ({exc})")
        return [], []
    if len(set(header)) != len(header):
        dup = sorted({c for c in header if header.count(c) > 1})
        report.error(name, 1, "(header)", f"repeated column name(s): {', '.join(dup)}")
    rows = []
    width = len(header)
    start = reader.line_num + 1
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            report.error(name, start, "(line)", f"malformed row ({exc})")
            break
        if cells and any(map(str.strip, cells)):
            if len(cells) > width:
                report.error(name, start, "(line)", f"{len(cells)} cells but the header names {width} columns")
            else:
                rows.append((start, dict(zip(header, cells if len(cells) == width else cells + [""] * (width - len(cells)),
                                             strict=True))))
        start = reader.line_num + 1
    return header, rows


def read_xlsx(path: Path, report: Report) -> tuple[list[str], list[tuple[int, dict[str, Any]]]]:
    """The first sheet of a workbook (VLMEvalKit writes one with pandas' to_excel); the header is row 1, and a
    row's line is its row number in the sheet. Read by python-calamine (a Rust reader: a 43,290-row prediction
    table in a tenth of the time openpyxl's read-only mode takes, docs/FORMATS.md), its cells given as openpyxl
    gives them (`_xlsx_cell`)."""
    try:
        from python_calamine import CalamineWorkbook
    except ImportError as exc:
        raise CrosscheckError("reading an .xlsx needs python-calamine (pip install -r requirements.txt)") from exc
    try:
        cells = CalamineWorkbook.from_path(str(path)).get_sheet_by_index(0).to_python(skip_empty_area=False)
    except Exception as exc:  # the reader raises its own types, and OS or zip errors, for an unreadable file
        report.error(path.name, 0, "(file)", f"not a readable .xlsx workbook ({type(exc).__name__}: {exc})")
        return [], []
    if not cells:
        report.error(path.name, 0, "(file)", "the sheet is empty (expected a header row)")
        return [], []
    header = ["" if c is None else str(c) for c in map(_xlsx_cell, cells[0])]
    used = [(k, h) for k, h in enumerate(header) if h]
    rows = []
    for no, row in enumerate(cells[1:], start=2):
        if all(is_null(c) for c in row):
            continue
        rows.append((no, {h: _xlsx_cell(row[k]) if k < len(row) else None for k, h in used}))
    return header, rows


def _xlsx_cell(value: Any) -> Any:
    """A cell as openpyxl reads it: None for an empty cell (calamine gives ""), an int for a whole number
    (calamine gives every number as a float; Excel and pandas write whole numbers without a decimal point, which
    openpyxl reads as int)."""
    if value == "":
        return None
    if type(value) is float and value.is_integer():
        return int(value)
    return value


# ---- items --------------------------------------------------------------------------------------------------


def read_items(path: Path, fmt: str, report: Report, family: str | None = None, mapping: str | None = None,
               preset: str | None = None, group_by: str | None = None) -> tuple[str | None, list[Item], dict]:
    """(family, items, images by hash) of a VLMEvalKit TSV, a Hugging Face parquet / arrow dataset or an Inspect
    log's samples (db/inspect_log.py)."""
    if fmt == "inspect":
        if mapping or preset:
            report.error(path.name, 0, "--map" if mapping else "--preset", "applies to Hugging Face files only")
            return None, [], {}
        from db import inspect_log as inspect_items

        return inspect_items.read_items(path, report, family, group_by)
    if group_by:
        report.error(path.name, 0, "--group-by", "applies to Inspect logs only")
        return None, [], {}
    fam = family or families.DEFAULT
    try:
        families.get(fam)
    except CrosscheckError as exc:
        report.error(path.name, 0, "--family", str(exc))
        return None, [], {}
    if fmt == "vlmevalkit":
        if mapping or preset:
            report.error(path.name, 0, "--map" if mapping else "--preset", "applies to Hugging Face files only")
            return None, [], {}
        return _read_vlmevalkit(path, fam, report)
    return _read_hf(path, fam, report, mapping, preset)


def _read_vlmevalkit(path: Path, family: str, report: Report) -> tuple[str | None, list[Item], dict]:
    header, rows = read_delimited(path, report, "\t")
    name = path.name
    if not report.ok:
        return None, [], {}
    for col in ("index", "question", "answer"):
        if col not in header:
            report.error(name, 1, col, f"missing column (a VLMEvalKit dataset TSV has index, question, A..H, "
                         f"answer; this one has {', '.join(header)})")
    if not report.ok:
        return None, [], {}
    pics = vlmevalkit.read_images(rows, name, report)
    indices = {row.get("index", "").strip() for _no, row in rows}
    objs: list[tuple[str, int, dict[str, Any], list[Any]]] = []
    for (no, row), imgs in zip(rows, pics, strict=True):
        obj = vlmevalkit.item_object(row, no, family, name, report, indices)
        if obj is not None:
            objs.append((name, no, obj, imgs.blobs or imgs.paths))
    return finish_items(name, family, objs, path.parent, report)


def _hf_tables(path: Path, report: Report) -> list[tuple[str, str | None, Any]]:
    """(display name, split or None, pyarrow Table) of each file of a parquet file / folder / save_to_disk."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def arrow(p: Path) -> Any:
        with pa.memory_map(str(p)) as src:  # datasets writes the IPC stream format; accept the file format too
            try:
                return pa.ipc.open_stream(src).read_all()
            except pa.ArrowInvalid:
                src.seek(0)
                return pa.ipc.open_file(src).read_all()

    def saved(folder: Path, split: str | None) -> list[tuple[str, str | None, Any]]:
        state = json.loads((folder / "state.json").read_text())
        names = [f["filename"] for f in state.get("_data_files", [])]
        return [(str((folder / n).relative_to(root)), split, arrow(folder / n)) for n in names]

    root = path if path.is_dir() else path.parent
    try:
        if path.is_file():
            if path.suffix.lower() == ".arrow":
                return [(path.name, None, arrow(path))]
            return [(path.name, None, pq.read_table(path))]
        if not path.is_dir():
            report.error(path.name, 0, "(file)", f"no such file or folder: {path}")
            return []
        if (path / "dataset_dict.json").is_file():  # DatasetDict.save_to_disk: one folder per split
            splits = json.loads((path / "dataset_dict.json").read_text()).get("splits", [])
            return [t for s in splits for t in saved(path / s, s)]
        if (path / "state.json").is_file():  # Dataset.save_to_disk
            return saved(path, None)
        shards = sorted(path.rglob("*.parquet"))
        if not shards:
            report.error(path.name, 0, "(file)", "a folder with no .parquet files and no save_to_disk layout "
                         "(state.json or dataset_dict.json)")
        return [(str(p.relative_to(root)), None, pq.read_table(p)) for p in shards]
    except (OSError, ValueError, KeyError, json.JSONDecodeError, pa.ArrowException) as exc:
        report.error(path.name, 0, "(file)", f"not a readable parquet / arrow dataset ({type(exc).__name__}: {exc})")
        return []


def _read_hf(path: Path, family: str, report: Report, mapping: str | None,
             preset: str | None) -> tuple[str | None, list[Item], dict]:
    tables = _hf_tables(path, report)
    if not report.ok or not tables:
        return None, [], {}
    columns = list(tables[0][2].column_names)
    for file, _split, t in tables[1:]:
        if list(t.column_names) != columns:
            report.error(file, 0, "(columns)", f"columns {', '.join(t.column_names)} differ from the first file's "
                         f"({', '.join(columns)})")
    try:
        m = hf.resolve(columns, mapping, preset, tables[0][0])
    except hf.BadMap as exc:
        report.error(tables[0][0], 0, "--map", str(exc))
    if not report.ok:
        return None, [], {}
    unused = [c for c in columns if c not in m.used()]
    if unused:
        report.warn(tables[0][0], 0, ",".join(unused), "column(s) not mapped and not imported (keep one with "
                    "--map ...,meta.NAME=COLUMN)")
    rows: list[tuple[str, int, dict[str, Any]]] = []
    split_of: dict[str, str | None] = {}
    for file, split, t in tables:
        split_of[file] = split
        rows.extend((file, no, row) for no, row in enumerate(t.to_pylist(), start=1))
    objs = hf.item_objects(rows, m, family, report)
    for file, _no, obj, _imgs in objs:
        if "split" not in obj and split_of.get(file):
            obj["split"] = split_of[file]
    base = path if path.is_dir() else path.parent
    return finish_items(path.name, family, objs, base, report)  # type: ignore[arg-type]


# ---- predictions --------------------------------------------------------------------------------------------


def _vlmevalkit_rows(path: Path, report: Report) -> list[tuple[int, dict[str, Any]]]:
    suffix = path.suffix.lower()
    if suffix == ".xlsx":
        header, rows = read_xlsx(path, report)
    elif suffix in (".tsv", ".csv"):
        header, rows = read_delimited(path, report, "\t" if suffix == ".tsv" else ",")  # type: ignore[assignment]
    else:
        return _vlmevalkit_json(path, report)
    if report.ok and header and ("index" not in header or "prediction" not in header):
        report.error(path.name, 1, "(header)", "expected columns index and prediction (a VLMEvalKit prediction "
                     f"file); this one has {', '.join(h for h in header if h)}")
    return rows


def _vlmevalkit_json(path: Path, report: Report) -> list[tuple[int, dict[str, Any]]]:
    """A list of objects with index and prediction, or an object mapping index -> prediction (entry numbers
    from 1 stand for lines)."""
    text = read_text(path, report)
    if text is None:
        return []
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        report.error(path.name, exc.lineno, "(file)", f"malformed JSON ({exc.msg} at column {exc.colno})")
        return []
    except RecursionError:
        report.error(path.name, 0, "(file)", "malformed JSON (nested too deep)")
        return []
    if isinstance(data, dict):
        return [(k, v if isinstance(v, dict) and "prediction" in v and "index" in v else
                 {"index": idx, "prediction": v.get("prediction") if isinstance(v, dict) else v})
                for k, (idx, v) in enumerate(data.items(), start=1)]
    if isinstance(data, list) and all(isinstance(v, dict) for v in data):
        return list(enumerate(data, start=1))
    report.error(path.name, 0, "(file)", "expected a list of {index, prediction} objects or an object mapping "
                 "index to prediction")
    return []


@dataclass(slots=True)
class PredictionLines:
    """Another tool's predictions read as predictions lines, what db.import_predictions.import_prediction_lines
    takes: `objs` (line, object), the report so far, the run's config, the benchmark, and `after`, which writes
    what the tool kept beside each response (the prediction_sources table) in the import's transaction."""

    objs: list[tuple[int, dict[str, Any]]]
    report: Report
    config: dict[str, Any]
    benchmark: str | None
    after: Callable[[sqlite3.Connection, int], None]
    model: str | None = None  # the model the file names (an Inspect log's), used when --model is not given


def read_predictions(store: Store, path: Path, kind: str, run: str, *, config: dict[str, Any] | None = None,
                     benchmark: str | None = None, key: str | None = None) -> PredictionLines:
    """VLMEvalKit prediction tables or lmms-eval samples for run `run`, as the lines of the one predictions
    path; what the tool kept beside each response (its extracted letter, its raw response) goes with them.
    Raises ImportRefused when the rows cannot be read into lines or their benchmark cannot be told."""
    if kind == "inspect":
        return _inspect_lines(store, path, run, config, benchmark)
    report = Report()
    name = path.name
    objs: list[tuple[int, dict[str, Any]]] = []
    kept: dict[int, dict[str, Any]] = {}
    cfg = dict(config or {})
    golds: dict[int, str] = {}
    if kind == "vlmevalkit":
        for no, row in _vlmevalkit_rows(path, report):
            got = vlmevalkit.prediction_object(row, no, name, report)
            if got is not None:
                objs.append((no, got[0]))
                kept[no] = got[1]
                if not is_null(row.get("answer")):
                    golds[no] = cell_text(row["answer"]).strip()
    else:
        objs, kept, bench = _lmms_objects(store, path, run, benchmark, key, report)
        benchmark = bench or benchmark
    if not objs and report.ok:
        report.error(name, 0, "(file)", "no predictions in the file")
    if objs and report.ok:
        benchmark = resolve_benchmark(store, run, benchmark, str(objs[0][1]["item_id"]), report, name)
    refuse(report)
    cfg.setdefault("source_format", kind)
    if kind == "vlmevalkit" and benchmark:
        _check_gold(store, benchmark, objs, golds, name, report)
    b = store.benchmark(benchmark) if benchmark else None
    keys = store.item_keys(int(b["id"])) if b else {}
    line_item = {no: obj["item_id"] for no, obj in objs}

    def after(conn: sqlite3.Connection, run_id: int) -> None:
        rows = [(run_id, keys[line_item[no]][0], kind, json.dumps(k, ensure_ascii=False, sort_keys=True))
                for no, k in kept.items() if k and line_item.get(no) in keys]
        conn.executemany("INSERT OR REPLACE INTO prediction_sources (run_id, item_pk, rotation, repeat, tool, kept)"
                         " VALUES (?, ?, 0, 0, ?, ?)", rows)

    return PredictionLines(objs, report, cfg, benchmark, after)


def _inspect_lines(store: Store, path: Path, run: str, config: dict[str, Any] | None,
                   benchmark: str | None) -> PredictionLines:
    """An Inspect log's samples as predictions lines (db/inspect_log.py), its eval (task, ids, scores) in the
    run's config and Inspect's score of each sample kept beside the prediction."""
    from db import inspect_log as inspect_items

    report = Report()
    read = inspect_items.read_log(path, report)
    if read is not None and read.lines and report.ok:
        benchmark = resolve_benchmark(store, run, benchmark, str(read.lines[0][1]["item_id"]), report, path.name)
    refuse(report)
    assert read is not None and benchmark is not None
    cfg = {**read.header.run_config(), **(config or {})}
    return PredictionLines(read.lines, report, cfg, benchmark, inspect_items.sources_writer(store, benchmark, read),
                           read.model or None)


def _check_gold(store: Store, benchmark: str, objs: list[tuple[int, dict[str, Any]]], golds: dict[int, str],
                name: str, report: Report) -> None:
    """A prediction table repeats the dataset's `answer`: one that differs from the item's gold letter is
    warned about (the table may belong to another version of the dataset)."""
    if not golds:
        return
    b = store.benchmark(benchmark)
    gold = dict(store.conn.execute("SELECT item_id, answer FROM items WHERE benchmark_id = ?", (b["id"],)).fetchall())
    for no, obj in objs:
        mine, theirs = gold.get(obj["item_id"]), golds.get(no)
        if mine is not None and theirs is not None and theirs != mine:
            report.warn(name, no, "answer", f"the table's answer {theirs!r:.20} differs from item "
                        f"{obj['item_id']!r}'s gold {mine!r} in benchmark {benchmark!r} (another dataset version?)")


def _item_order(store: Store, benchmark: str) -> tuple[list[str], list[str]]:
    """The benchmark's item ids in import order (lmms-eval's doc_id is a position in one split of the dataset),
    and its splits."""
    b = store.benchmark(benchmark)
    rows = store.conn.execute("SELECT item_id, split FROM items WHERE benchmark_id = ? ORDER BY id",
                              (b["id"],)).fetchall()
    return [r[0] for r in rows], sorted({r[1] for r in rows})


def _lmms_objects(store: Store, path: Path, run: str, benchmark: str | None, key: str | None,
                  report: Report) -> tuple[list[tuple[int, dict[str, Any]]], dict[int, dict[str, Any]], str | None]:
    name = path.name
    text = read_text(path, report)
    if text is None:
        return [], {}, None
    samples = []  # (line, key value, response, kept): the sample itself is let go once read
    use = key
    for no, obj in json_lines(text, name, report):
        got = lmms_eval.sample_fields(obj, no, name, report)
        if got is not None:
            use = use or lmms_eval.choose_key(obj)  # the first sample's
            samples.append((no, lmms_eval.key_value(obj, use), got[0], got[2]))
    if not samples or use is None:
        return [], {}, None
    order: list[str] | None = None
    if use == "doc_id":
        bench = resolve_benchmark(store, run, benchmark, None, report, name)
        if bench is None:
            report.error(name, 0, "--benchmark", "the samples' doc_id is a position in the benchmark's items: "
                         "name the benchmark with --benchmark (or pass --key doc.FIELD)")
            return [], {}, None
        benchmark = bench
        order, splits = _item_order(store, bench)
        if len(splits) > 1:  # a doc_id counts within one split: positions over several would pick wrong items
            report.error(name, samples[0][0], "doc_id", f"benchmark {bench!r} holds several splits "
                         f"({', '.join(splits)}) and lmms-eval's doc_id is a position within one of them: "
                         "pass --key doc.FIELD naming an id the samples carry")
            return [], {}, None
    objs, kept = [], {}
    for no, value, response, extra in samples:
        if is_null(value):
            report.error(name, no, use, f"missing (the key chosen for this file is {use}; pass --key FIELD)")
            continue
        if order is not None:
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < len(order):
                report.error(name, no, "doc_id", f"expected a position 0..{len(order) - 1} in benchmark "
                             f"{benchmark!r}'s items, got {value!r:.40}")
                continue
            item_id = order[value]
        else:
            item_id = cell_text(value)
        objs.append((no, {"item_id": item_id, "response": response}))
        kept[no] = extra
    return objs, kept, benchmark


def prediction_sources(store: Store, run: str) -> dict[str, dict[str, Any]]:
    """item_id -> {tool, and what the tool kept: extracted, hit, log, raw, target} for an imported run."""
    cur = store.conn.execute("SELECT i.item_id, s.tool, s.kept FROM prediction_sources s JOIN runs r ON r.id = s.run_id"
                       " JOIN items i ON i.id = s.item_pk WHERE r.name = ? AND s.rotation = 0 AND s.repeat = 0",
                       (run,))
    return {item_id: {"tool": tool, **json.loads(k)} for item_id, tool, k in cur}
