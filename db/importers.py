"""Importers for items (JSONL or zip), predictions (JSONL or CSV) and labels (JSONL) — SPEC §3.

Every import validates the whole file and writes nothing when any line is bad; the write itself is one
`BEGIN IMMEDIATE` transaction, so a killed import leaves no partial rows. (A long predictions file for a new
run is validated while it is written, by a worker process, and that transaction is rolled back at the first
problem; see `import_predictions`.) Re-importing the same file changes nothing.
"""

from __future__ import annotations

import csv
import gc
import hashlib
import io
import json
import multiprocessing
import os
import shutil
import sqlite3
import stat
import tempfile
import threading
import zipfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from operator import itemgetter
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

import orjson

from core import families
from core.errors import ImportRefused, NotFound
from core.formats import (
    PredictionFields,
    fast_prediction,
    fast_prediction_fields,
    parse_item,
    parse_label,
    parse_prediction_fields,
    plain_prediction,
    prediction_key,
)
from core.gcpause import gc_paused
from core.parsing import OK, fast_parse, full_parse, parse_answer, rotate_options, unrotate
from core.report import Report
from core.schema import Item, Prediction
from db import labels as dbl
from db import overrides
from db.store import Store, config_hash, now

_T = TypeVar("_T")

MAX_IMAGE_PIXELS = 40_000_000  # larger images are refused as possible decompression bombs
MAX_ZIP_BYTES = 8 * 1024**3  # total uncompressed size of an items zip
IMAGE_FORMATS = {"PNG": "png", "JPEG": "jpg", "WEBP": "webp", "GIF": "gif", "BMP": "bmp"}


@dataclass(slots=True)
class ImportResult:
    """What an import did: rows written (0 when unchanged) and the validation report."""

    target: str
    rows: int
    unchanged: bool
    report: Report


def _refuse(report: Report) -> None:
    if not report.ok:
        raise ImportRefused(report.summary(), report)


def _read_text(path: Path, report: Report) -> str | None:
    return _read_text_and_digest(path, report, digest=False)[0]


def _read_text_and_digest(path: Path, report: Report, digest: bool = True) -> tuple[str | None, str]:
    """The file's text (None, with the error in `report`, when unreadable or empty) and, with `digest`, the
    SHA-256 of its bytes."""
    name = path.name
    if not path.is_file():
        report.error(name, 0, "(file)", f"no such file: {path}")
        return None, ""
    raw = path.read_bytes()
    sha = hashlib.sha256(raw).hexdigest() if digest else ""
    try:
        text = raw.decode("utf-8-sig")  # a UTF-8 BOM is accepted and dropped
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        report.error(name, line, "(line)", f"not valid UTF-8 ({exc.reason})")
        return None, sha
    if not text.strip():
        report.error(name, 0, "(file)", "the file is empty (expected one JSON object a line)")
        return None, sha
    return text, sha


def _json_lines(text: str, name: str, report: Report) -> list[tuple[int, Any]]:
    return _json_line_objs(text.split("\n"), 1, name, report)


def _json_line_objs(lines: list[str], first: int, name: str, report: Report) -> list[tuple[int, Any]]:
    """(line number, object) of each JSON line; `first` is the number of lines[0]. Blank lines are skipped."""
    out = []
    loads = orjson.loads
    for no, line in enumerate(lines, start=first):
        try:
            out.append((no, loads(line)))
        except orjson.JSONDecodeError:
            if not line.strip():
                continue  # blank lines are allowed and skipped
            try:
                out.append((no, json.loads(line)))  # orjson is stricter about a few forms; json decides
            except json.JSONDecodeError as exc:
                report.error(name, no, "(line)", f"malformed JSON ({exc.msg} at column {exc.colno})")
    return out


# ---- items --------------------------------------------------------------------------------------------------


def _safe_extract(zpath: Path, dest: Path, report: Report) -> Path | None:
    """Extract a zip into `dest`, refusing members that escape it or are links; returns the items JSONL."""
    name = zpath.name
    try:
        zf = zipfile.ZipFile(zpath)
    except (zipfile.BadZipFile, OSError) as exc:
        report.error(name, 0, "(file)", f"not a readable zip file ({exc})")
        return None
    with zf:
        members = zf.infolist()
        total = sum(m.file_size for m in members)
        if total > MAX_ZIP_BYTES:
            report.error(name, 0, "(file)", f"expands to {total} bytes, over the {MAX_ZIP_BYTES} byte limit")
            return None
        root = dest.resolve()
        for m in members:
            mode = m.external_attr >> 16
            pure = PurePosixPath(m.filename.replace("\\", "/"))
            target = (root / pure).resolve()
            if pure.is_absolute() or ".." in pure.parts or not target.is_relative_to(root):
                report.error(name, 0, m.filename, "zip member escapes the extraction folder; refused")
            elif stat.S_ISLNK(mode):
                report.error(name, 0, m.filename, "zip member is a symbolic link; refused")
        if not report.ok:
            return None
        for m in members:
            if m.is_dir():
                continue
            target = root / PurePosixPath(m.filename.replace("\\", "/"))
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(m) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
    found = sorted(p for p in root.rglob("*.jsonl") if "__MACOSX" not in p.parts)
    if len(found) != 1:
        report.error(name, 0, "(file)", f"expected exactly one .jsonl file in the zip, found {len(found)}"
                     + (f": {', '.join(str(p.relative_to(root)) for p in found)}" if found else ""))
        return None
    return found[0]


def _resolve_image(base: Path, rel: str, file: str, line: int, report: Report) -> Path | None:
    pure = PurePosixPath(rel.replace("\\", "/"))
    if pure.is_absolute() or Path(rel).is_absolute() or (len(rel) > 1 and rel[1] == ":"):
        report.error(file, line, "images", f"{rel!r} is an absolute path; paths must be relative to the JSONL's folder")
        return None
    if ".." in pure.parts:
        report.error(file, line, "images", f"{rel!r} contains '..'; paths must stay inside the JSONL's folder")
        return None
    path = base / pure
    if not path.exists() and not path.is_symlink():
        report.error(file, line, "images", f"{rel!r}: no such image file")
        return None
    real = path.resolve()
    if not real.is_relative_to(base.resolve()):
        report.error(file, line, "images", f"{rel!r} is a link out of the JSONL's folder; refused")
        return None
    if not real.is_file():
        report.error(file, line, "images", f"{rel!r} is not a file")
        return None
    return real


def _load_image(path: Path, rel: str, file: str, line: int, report: Report) -> tuple[str, str, int, int, bytes] | None:
    return check_image_bytes(path.read_bytes(), rel, file, line, report)


def check_image_bytes(data: bytes, rel: str, file: str, line: int, report: Report,
                      fld: str = "images") -> tuple[str, str, int, int, bytes] | None:
    """(content hash, extension, width, height, bytes) of a readable image within the limits; None with the
    error (naming `rel`, and the column `fld`) in `report` otherwise."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as im:
            width, height = im.size
            fmt = im.format or ""
            if width * height > MAX_IMAGE_PIXELS:
                report.error(file, line, fld, f"{rel!r} is {width}x{height} pixels, over the "
                             f"{MAX_IMAGE_PIXELS:,} pixel limit (possible decompression bomb)")
                return None
            im.verify()
    except Image.DecompressionBombError:
        report.error(file, line, fld, f"{rel!r} is over the pixel limit (possible decompression bomb)")
        return None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        report.error(file, line, fld, f"{rel!r} is not a readable image ({type(exc).__name__})")
        return None
    if fmt not in IMAGE_FORMATS:
        report.error(file, line, fld, f"{rel!r} is a {fmt or 'unknown'} image (expected PNG, JPEG, WEBP, GIF or BMP)")
        return None
    return hashlib.sha256(data).hexdigest()[:32], IMAGE_FORMATS[fmt], width, height, data


def read_items(jsonl: Path, report: Report, display: str | None = None) -> tuple[str | None, list[Item], dict]:
    """Parse and validate an items JSONL with its images; returns (family, items, images by hash)."""
    name = display or jsonl.name
    text = _read_text(jsonl, report)
    if text is None:
        return None, [], {}
    items: list[Item] = []
    for no, obj in _json_lines(text, name, report):
        it = parse_item(obj, name, no, report)
        if it is not None:
            items.append(it)
    fams = check_item_set(items, name, report)
    base = jsonl.parent
    images: dict[str, tuple[str, int, int, bytes]] = {}
    by_path: dict[Path, str] = {}
    for it in items:
        for rel in it.image_names:
            path = _resolve_image(base, rel, name, it.line, report)
            if path is None:
                continue
            if path not in by_path:
                loaded = _load_image(path, rel, name, it.line, report)
                if loaded is None:
                    continue
                digest, ext, w, h, data = loaded
                by_path[path] = digest
                images[digest] = (ext, w, h, data)
            it.images.append(by_path[path])
    family = fams.pop() if len(fams) == 1 else None
    if family is not None and report.ok:
        families.get(family).validate(items, name, report)
    return family, items, images


def check_item_set(items: list[Item], name: str, report: Report) -> set[str]:
    """The file-level item rules: some items, unique item ids, one family (returned as a set of names)."""
    if not items and report.ok:
        report.error(name, 0, "(file)", "no items in the file")
    seen: dict[str, int] = {}
    for it in items:
        if it.item_id in seen:
            report.error(name, it.line, "item_id", f"duplicate item_id {it.item_id!r} (first on line {seen[it.item_id]})")
        else:
            seen[it.item_id] = it.line
    fams = {it.benchmark for it in items}
    if len(fams) > 1:
        report.error(name, 0, "benchmark", f"one file must hold one family, found {', '.join(sorted(fams))}")
    return fams


def _item_signature(items: list[Item]) -> str:
    blob = json.dumps([[it.item_id, it.group_id, it.split, it.kind, it.variant, it.question, it.options, it.answer,
                        it.images, it.meta, it.stages] for it in items], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def validate_items_file(path: str | os.PathLike[str], **foreign_opts: Any) -> Report:
    """Validate an items JSONL or zip (or another tool's files) without touching any store (the Data tab's
    dry run)."""
    report = Report()
    with tempfile.TemporaryDirectory(prefix="crosscheck-zip-") as tmp:
        _read_items_any(Path(path), Path(tmp), report, **foreign_opts)
    return report


def _read_items_any(path: Path, tmp: Path, report: Report, **foreign_opts: Any) -> tuple[str | None, list[Item], dict]:
    """Items of a JSONL, a zip, or another tool's files (db/foreign.py: `fmt`, `family`, `mapping`, `preset`)."""
    from db import foreign

    fmt = foreign.item_format(path, foreign_opts.pop("fmt", None) or "auto", report)
    if fmt is None:
        return None, [], {}
    if fmt != "jsonl":
        return foreign.read_items(path, fmt, report, **foreign_opts)
    foreign.refuse_options_for_jsonl(path, report, **foreign_opts)
    if not report.ok:
        return None, [], {}
    if path.suffix.lower() == ".zip":
        jsonl = _safe_extract(path, tmp, report)
        if jsonl is None:
            return None, [], {}
        return read_items(jsonl, report, display=f"{path.name}:{jsonl.relative_to(tmp)}")
    return read_items(path, report)


def import_items(store: Store, path: str | os.PathLike[str], name: str | None = None,
                 **foreign_opts: Any) -> ImportResult:
    """Import an items JSONL (or a zip holding it and its images) as benchmark `name` (default: file stem).

    `foreign_opts` (fmt, family, mapping, preset) read other tools' files instead: db/foreign.py.
    """
    path = Path(path)
    bench = name or path.stem
    report = Report()
    with tempfile.TemporaryDirectory(prefix="crosscheck-zip-") as tmp:
        family, items, images = _read_items_any(path, Path(tmp), report, **foreign_opts)
    _refuse(report)
    assert family is not None
    signature = _item_signature(items)
    existing = [b for b in store.benchmarks() if b["name"] == bench]
    if existing:
        old = store.benchmark(bench)
        if old["source_sha256"] == signature:
            report.counts = {"items": 0, "unchanged": len(items)}
            return ImportResult(bench, 0, True, report)
        report.error(path.name, 0, "(file)", f"benchmark {bench!r} already exists with other items; import under "
                     "another --name")
        _refuse(report)
    for digest, (ext, _w, _h, data) in images.items():
        store.put_image_file(digest, ext, data)  # content-addressed: harmless if the import is killed later
    rows = [(d, ext, w, h, len(data)) for d, (ext, w, h, data) in images.items()]
    store.insert_benchmark(bench, family, str(path.name), signature, items, rows)
    report.counts = {"items": len(items), "images": len(images), "groups": len({it.group_id for it in items})}
    return ImportResult(bench, len(items), False, report)


# ---- predictions --------------------------------------------------------------------------------------------


def _read_prediction_objects(path: Path, report: Report) -> list[tuple[int, Any]]:
    text = _read_text(path, report)
    if text is None:
        return []
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text))
        if not reader.fieldnames or "item_id" not in reader.fieldnames:
            report.error(path.name, 1, "(header)", "expected a CSV header naming at least item_id and response")
            return []
        out = []
        for row in reader:
            obj = {k: v for k, v in row.items() if k is not None and v != ""}
            if "response" in reader.fieldnames and "response" not in obj:
                obj["response"] = ""
            out.append((reader.line_num, obj))
        return out
    return _json_lines(text, path.name, report)


def _resolve_benchmark(store: Store, run: str, benchmark: str | None, first_item: str | None,
                       report: Report, name: str) -> str | None:
    if benchmark is not None:
        return benchmark
    row = store.conn.execute("SELECT b.name FROM runs r JOIN benchmarks b ON b.id = r.benchmark_id WHERE r.name = ?",
                             (run,)).fetchone()
    if row is not None:
        return str(row[0])
    if first_item is None:
        return None
    hits = store.conn.execute(
        "SELECT b.name FROM items i JOIN benchmarks b ON b.id = i.benchmark_id WHERE i.item_id = ?", (first_item,)
    ).fetchall()
    if len(hits) == 1:
        return str(hits[0][0])
    if not hits:
        report.error(name, 0, "item_id", f"item {first_item!r} is in no imported benchmark; import the items first")
    else:
        report.error(name, 0, "item_id", f"item {first_item!r} is in several benchmarks "
                     f"({', '.join(h[0] for h in hits)}); name one with --benchmark")
    return None


def resolve_prediction(p: Prediction, letters: str, parser: str, name: str, report: Report,
                       options: Callable[[], dict[str, str] | None] | dict[str, str] | None = None) -> None:
    """Fill status / answer of one prediction: given letter (as shown) or the family's parser, then unrotate.

    `options` (the item's option texts, or a function returning them) is only consulted when the response
    needs the full parsing rules (option-text answers); clean answers are decided without it.
    """
    if p.rotation >= len(letters):
        report.error(name, p.line, "rotation", f"rotation {p.rotation} needs more than the item's {len(letters)} options")
        return
    given = p.status or None
    if given in ("invalid", "api_error"):
        if p.shown is not None:
            report.error(name, p.line, "answer", f"status {given} cannot carry an answer letter")
        p.answer = p.shown = None
        p.status = given
        return
    if p.shown is not None:
        if p.shown not in letters:
            report.error(name, p.line, "answer", f"{p.shown!r} is not an option letter of this item (expected one of {letters})")
            return
        status: str = OK
        letter: str | None = p.shown
    else:
        decided = fast_parse(p.response, letters, parser)
        if decided is None:
            opts = options() if callable(options) else options
            shown_options = rotate_options(opts, p.rotation) if opts else None
            decided = parse_answer(p.response, letters, parser, shown_options)
        status, letter = decided[0], decided[1]
        if given == "ok" and status != OK:
            report.error(name, p.line, "status", f"says ok but the response has no readable answer ({status}); "
                         "give the letter in `answer` or drop `status`")
            return
    p.status = status
    p.shown = letter
    if letter is None or p.rotation == 0:
        p.answer = letter
    else:
        p.answer = unrotate(letter, letters, p.rotation)


_PredRow = tuple[Any, ...]  # (run id, item pk, rotation, repeat, response, shown, answer, status, error, input_mode,
#                             trace, tokens, latency, probs): one predictions row, in the column order of PRED_INSERT
_PlainRow = tuple[Any, ...]  # (item pk, response, letter, status, tokens): the row of a line with no other field
_Rows = tuple[list[_PlainRow], list[_PredRow]]


def _plain_insert(run_id: int) -> str:
    """The INSERT of plain rows into run `run_id`: rotation and repeat 0, answer = shown, input mode all, no
    error, trace, latency or probs, all written as constants (fewer values to bind per row)."""
    return ("INSERT INTO predictions (run_id, item_pk, rotation, repeat, response, shown, answer, status, error,"
            " input_mode, trace, tokens, latency, probs) VALUES"
            f" ({int(run_id)}, ?1, 0, 0, ?2, ?3, ?3, ?4, NULL, 'all', NULL, ?5, NULL, NULL)")


def _full_row(run_id: int, r: _PlainRow) -> _PredRow:
    return (run_id, r[0], 0, 0, r[1], r[2], r[2], r[3], None, "all", None, r[4], None, None)

_After = Callable[[sqlite3.Connection, int], None]  # (write connection, run id) inside the import's transaction
PIPELINE_MIN_LINES = 4_000  # a new run from a JSONL file this long is parsed in a worker process while this one writes
_CHUNK = 500  # lines per chunk: one unit of work, and one message from the worker


class _Fallback(Exception):
    """The fast path met something that only the reference path reports exactly (a bad line, a conflict)."""


def _fields(obj: Any, no: int, name: str, scratch: Report) -> PredictionFields:
    """The fields of one predictions line (see `fast_prediction_fields`); _Fallback when the line has a problem."""
    f = fast_prediction_fields(obj)
    if f is not None:
        return f
    p = parse_prediction_fields(obj, name, no, scratch)
    if p is None:
        raise _Fallback
    return (p.item_id, p.response, p.status, p.shown, p.rotation, p.repeat, p.input_mode, p.trace, p.tokens, p.error)


class _RowBuilder:
    """Predictions rows straight from JSON objects, by the rules of `parse_prediction_fields` and
    `resolve_prediction`, for files without problems: anything the reference path would report raises _Fallback.

    With `dedup` it checks for duplicate keys itself (across calls: one builder per file); without, the rows must
    go as plain INSERTs into a run that has none yet, where the table's primary key (run, item, rotation, repeat)
    refuses a duplicate (-> _Fallback)."""

    def __init__(self, name: str, keys: dict[str, tuple[int, str, str]], parser: str,
                 options: Callable[[], dict[int, dict[str, str]]], run_id: int, dedup: bool) -> None:
        self.name, self.keys, self.parser, self.run_id, self.dedup = name, keys, parser, run_id, dedup
        self._options_loader = options
        self._options: dict[int, dict[str, str]] | None = None
        self.seen: set[tuple[int, int, int]] = set()
        self.scratch = Report()

    def fields(self, obj: Any, no: int) -> PredictionFields:
        return _fields(obj, no, self.name, self.scratch)

    def options_of(self, pk: int) -> dict[str, str] | None:
        if self._options is None:
            self._options = self._options_loader()
        return self._options.get(pk)

    def rows(self, objs: list[tuple[int, Any]]) -> _Rows:
        """(plain rows, other rows) of the lines, each list in file order."""
        plain: list[_PlainRow] = []
        out: list[_PredRow] = []
        add_plain, append, keys_get = plain.append, out.append, self.keys.get
        seen, add_seen, dedup = self.seen, self.seen.add, self.dedup
        fields_of, fields, parser, run_id = fast_prediction_fields, self.fields, self.parser, self.run_id
        for no, obj in objs:
            simple = plain_prediction(obj)
            if simple is not None:  # the usual line: no status, answer, rotation or repeat to consider
                item_id, response, tokens = simple
                info = keys_get(item_id)
                if info is None:
                    raise _Fallback  # unknown item
                pk, letters = info[0], info[1]
                if not letters:
                    raise _Fallback  # rotation 0 needs one option
                if dedup:
                    key = (pk, 0, 0)
                    if key in seen:
                        raise _Fallback  # duplicate
                    add_seen(key)
                decided = fast_parse(response, letters, parser)
                if decided is None:
                    decided = full_parse(response, letters, parser, self.options_of(pk) or None)
                add_plain((pk, response, decided[1], decided[0], tokens))
                continue
            f = fields_of(obj) or fields(obj, no)
            item_id, response, given, shown, rotation, repeat, input_mode, trace, tokens, error = f
            info = keys_get(item_id)
            if info is None:
                raise _Fallback  # unknown item
            pk, letters = info[0], info[1]
            if dedup:
                key = (pk, rotation, repeat)
                if key in seen:
                    raise _Fallback  # duplicate
                add_seen(key)
            if rotation >= len(letters):
                raise _Fallback
            if given == "invalid" or given == "api_error":
                if shown is not None:
                    raise _Fallback
                status, letter = given, None
            elif shown is not None:
                if shown not in letters:
                    raise _Fallback
                status, letter = OK, shown
            else:
                decided = fast_parse(response, letters, parser)
                if decided is None:
                    opts = self.options_of(pk)
                    if opts and rotation:  # rotation 0 shows the options as they are (the parser only reads them)
                        opts = rotate_options(opts, rotation)
                    decided = full_parse(response, letters, parser, opts or None)
                status, letter = decided
                if given == "ok" and status != OK:
                    raise _Fallback
            answer = letter if letter is None or rotation == 0 else unrotate(letter, letters, rotation)
            append((run_id, pk, rotation, repeat, response, letter, answer, status, error, input_mode, trace, tokens,
                    None, None))
        if not self.scratch.ok:
            raise _Fallback
        return plain, out


def import_predictions(store: Store, path: str | os.PathLike[str], run: str, model: str | None = None,
                       config: dict[str, Any] | None = None, benchmark: str | None = None,
                       replace: bool = False, fmt: str = "auto", key: str | None = None) -> ImportResult:
    """Import predictions (JSONL or CSV) into run `run` in one transaction; see docs/FORMATS.md.

    `fmt` vlmevalkit / lmms-eval (or auto, by extension and columns) reads another tool's predictions through
    db/foreign.py, which validates them by the reference path's rules; `key` picks lmms-eval's item key.

    A file without problems takes the fast path (row tuples built directly; a long JSONL file for a new run is
    parsed in a worker process while this one writes, inside the same transaction). Anything else, or any
    surprise on the way, rolls that back and goes through the reference path, which validates line by line and
    reports every problem before writing. Both decide every line by the same rules.
    """
    path = Path(path)
    from db import foreign

    kind = foreign.prediction_format(path, fmt)
    if kind in foreign.PREDICTION_FORMATS:
        with gc_paused():  # rows are acyclic dicts and tuples
            return foreign.import_predictions(store, path, kind, run, model=model, config=config,
                                              benchmark=benchmark, replace=replace, key=key)
    try:
        with gc_paused():  # the fast path allocates only acyclic tuples and dicts
            result = _import_predictions_fast(store, path, run, model, config, benchmark, replace)
    except _Fallback:
        result = None
    if result is not None:
        return result
    report = Report()
    objs = _read_prediction_objects(path, report)
    return _import_predictions_reference(store, path, objs, report, run, model, config, benchmark, replace)


def _run_config(model: str | None, config: dict[str, Any] | None) -> tuple[dict[str, Any], str]:
    cfg = {"runner": "import", "model": model, **(config or {})}
    return cfg, config_hash(cfg)


def _insert_run(conn: sqlite3.Connection, run: str, b: dict[str, Any], model: str | None,
                cfg: dict[str, Any], digest: str) -> int:
    cur = conn.execute(
        "INSERT INTO runs (name, benchmark_id, runner, model, config, config_hash, status, synthetic, created,"
        " updated) VALUES (?, ?, 'import', ?, ?, ?, 'imported', ?, ?, ?)",
        (run, b["id"], model or "", json.dumps(cfg, sort_keys=True, ensure_ascii=False), digest,
         int(bool(cfg.get("synthetic"))), now(), now()))
    return int(cur.lastrowid or 0)


def _counts(n_lines: int, n_rows: int, statuses: Counter[str]) -> dict[str, int]:
    return {"predictions": n_rows, "unchanged": n_lines - n_rows,
            **{s: statuses[s] for s in ("ok", "invalid", "api_error")}}


def _pipeline_possible() -> bool:
    """A worker process helps only with a second core, and is forked and used only by a single-threaded process
    (the CLI, scripts; not the UI's request threads)."""
    return ((os.cpu_count() or 1) > 1 and threading.active_count() == 1
            and "fork" in multiprocessing.get_all_start_methods())


def _import_predictions_fast(store: Store, path: Path, run: str, model: str | None, config: dict[str, Any] | None,
                             benchmark: str | None, replace: bool) -> ImportResult | None:
    """The reference path's result for a file it accepts; None or _Fallback otherwise (nothing written then)."""
    name = path.name
    scratch = Report()
    csv_file = path.suffix.lower() == ".csv"
    text: str | None = None
    sha = ""
    lines: list[str] = []
    objs: list[tuple[int, Any]] = []
    try:
        if csv_file:
            objs = _read_prediction_objects(path, scratch)
            first = objs[0] if objs else None
        else:
            text, sha = _read_text_and_digest(path, scratch)
            lines = text.split("\n") if text is not None else []
            first = next((o for i, line in enumerate(lines) if line.strip()
                          for o in _json_line_objs([line], i + 1, name, scratch)), None)
        if first is None or not scratch.ok:
            return None
        bench = _resolve_benchmark(store, run, benchmark, _fields(first[1], first[0], name, scratch)[0], scratch, name)
        if bench is None or not scratch.ok:
            return None
        b = store.benchmark(bench)
        parser = (config or {}).get("parser") or families.get(b["family"]).PARSER
    except _Fallback:
        raise
    except Exception:
        return None  # the reference path reports (or raises) it in its own order
    bid = int(b["id"])
    keys = store.item_keys(bid)
    cfg, digest = _run_config(model, config)
    existing = store.conn.execute("SELECT id, benchmark_id, config_hash FROM runs WHERE name = ?", (run,)).fetchone()
    if existing is not None and (existing[1] != b["id"] or existing[2] != digest):
        return None
    if existing is None and text is not None and len(lines) >= PIPELINE_MIN_LINES:
        worker = _Worker.get()
        if worker is not None:
            return _import_pipelined(store, path, run, model, b, cfg, digest, keys, parser, text, sha, lines, worker)
    if not csv_file:
        objs = _json_line_objs(lines, 1, name, scratch)
        if not scratch.ok:
            return None
    # the id SQLite gives a new run (the largest plus one), checked again inside the write transaction
    run_id = existing[0] if existing else store.conn.execute("SELECT coalesce(max(id), 0) + 1 FROM runs").fetchone()[0]
    try:
        plain, rows = _RowBuilder(name, keys, parser, lambda: store.item_options(bid), run_id,
                                  existing is not None).rows(objs)
    except _Fallback:
        raise
    except Exception:
        return None
    if existing is not None:  # compared with the stored rows as whole rows (file order does not matter here)
        rows, plain = [_full_row(run_id, r) for r in plain] + rows, []
    return _write_predictions(store, path, run, model, b, cfg, digest, existing, rows, None, replace, plain=plain)


def _chunk_bounds(lines: list[str], size: int) -> list[tuple[int, int, int]]:
    """(start, end, number of the first line) of each chunk of `size` lines (`lines` = text.split("\\n")), such
    that text[start:end].split("\\n") gives exactly those lines."""
    bounds, pos = [], 0
    for k in range(0, len(lines), size):
        part = lines[k: k + size]
        n = sum(map(len, part)) + len(part)  # the lines and their newlines
        bounds.append((pos, pos + n - 1, k + 1))  # without the newline after the chunk's last line
        pos += n
    return bounds


def _build_chunk(builder: _RowBuilder, text: str, bounds: list[tuple[int, int, int]], k: int) -> _Rows:
    """Rows of chunk `k` of the file's text (see `_chunk_bounds`); _Fallback at any problem."""
    start, end, first = bounds[k]
    objs = _json_line_objs(text[start:end].split("\n"), first, builder.name, builder.scratch)
    if not builder.scratch.ok:
        raise _Fallback
    return builder.rows(objs)


def _constant(value: _T) -> Callable[[], _T]:
    return lambda: value


class _Worker:
    """The import worker: one forked helper process, started by the first long import of a (single-threaded)
    process and kept for the rest of its life, so its memory is warm and its copy-on-write pages are copied
    once, not per file. It builds the rows of the chunks it is asked for, from the item keys and options it is
    sent and the file, which it reads itself (and checks against the importer's SHA-256); it never touches the
    store. It exits when this process ends (or its pipe closes)."""

    _current: _Worker | None = None
    MAX_CONTEXTS = 4  # benchmarks whose keys and options the worker keeps

    def __init__(self) -> None:
        ctx = multiprocessing.get_context("fork")
        self.conn, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=_worker_main, args=(child, self.conn), daemon=True,
                                name="crosscheck-import-worker")
        self.proc.start()
        child.close()
        self.owner = os.getpid()
        self.jobs = 0
        self.due = 0  # answers the worker still owes (for chunks built here meanwhile, or of an abandoned job)
        # id(keys) -> (keys, options): held here so that an id names one mapping for as long as the worker has it
        self.contexts: dict[int, tuple[dict[str, tuple[int, str, str]], dict[int, dict[str, str]]]] = {}

    @classmethod
    def get(cls) -> _Worker | None:
        """The worker, started if needed; None where none can be used (one core, threads, no fork)."""
        if not _pipeline_possible():
            return None
        w = cls._current
        if w is not None and (w.owner != os.getpid() or not w.proc.is_alive()):
            if w.owner == os.getpid():
                w.close()
            w = cls._current = None
        if w is None:
            w = cls._current = cls()
        return w

    def settle(self) -> None:
        """Read the answers still due, so that nothing large is in flight when a job starts (both sides blocked on
        sending would wait forever); a worker that does not answer within a minute is stopped."""
        while self.due > 0:
            if not self.conn.poll(60):
                self.close()
                raise _Fallback
            self.conn.recv()
            self.due -= 1

    def close(self) -> None:
        self.conn.close()
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join()
        if _Worker._current is self:
            _Worker._current = None

    def context(self, keys: dict[str, tuple[int, str, str]], options: dict[int, dict[str, str]]) -> int:
        """The worker's name for these keys and options, sending them first when it lacks them."""
        token = id(keys)
        held = self.contexts.get(token)
        if held is None or held[1] is not options:
            while len(self.contexts) >= self.MAX_CONTEXTS:
                old = next(iter(self.contexts))
                self.conn.send(("drop", old))
                del self.contexts[old]
            self.conn.send(("context", token, keys, options))
            self.contexts[token] = (keys, options)
        return token


def _worker_main(conn: Connection, parent_end: Connection) -> None:
    """The worker process's loop (see _Worker): ("rows", job, k, rows) or ("fallback", job) for each ("build", job,
    k); quietly exits when the pipe closes or on any signal."""
    parent_end.close()
    gc.freeze()  # the inherited heap: its collections would copy every page of it
    try:
        os.nice(10)  # spare time only: on a busy machine the process that writes must not wait for this one
    except OSError:
        pass
    contexts: dict[int, tuple[dict[str, tuple[int, str, str]], dict[int, dict[str, str]]]] = {}
    job: tuple[int, _RowBuilder, str, list[tuple[int, int, int]]] | None = None
    try:
        while True:
            msg = conn.recv()
            if msg[0] == "build":
                if job is None or job[0] != msg[1]:
                    conn.send(("fallback", msg[1]))
                    continue
                try:
                    rows = _build_chunk(job[1], job[2], job[3], msg[2])
                except Exception:
                    conn.send(("fallback", msg[1]))
                    continue
                conn.send(("rows", msg[1], msg[2], rows))
            elif msg[0] == "job":
                job = None  # until the file is read and found unchanged; meanwhile every build answers fallback
                _, job_id, token, parser, run_id, name, file, sha, size = msg
                try:
                    raw = Path(file).read_bytes()
                    if hashlib.sha256(raw).hexdigest() == sha:
                        text = raw.decode("utf-8-sig")
                        keys, options = contexts[token]
                        job = (job_id, _RowBuilder(name, keys, parser, _constant(options), run_id, False), text,
                               _chunk_bounds(text.split("\n"), size))
                except Exception:  # reported as fallback by the builds
                    pass
            elif msg[0] == "context":
                contexts[msg[1]] = (msg[2], msg[3])
            elif msg[0] == "drop":
                contexts.pop(msg[1], None)
    except BaseException:  # the parent is gone, or a signal: nothing to report to anyone
        pass
    finally:
        conn.close()


def _import_pipelined(store: Store, path: Path, run: str, model: str | None, b: dict[str, Any],
                      cfg: dict[str, Any], digest: str, keys: dict[str, tuple[int, str, str]], parser: str,
                      text: str, sha: str, lines: list[str], worker: _Worker) -> ImportResult:
    """A new run from a long JSONL file, in one write transaction: the worker builds chunks of rows while this
    process inserts them in file order, and builds chunks itself whenever the next one is not there yet (so a
    busy machine, where the low-priority worker gets little time, loses little). The first problem anywhere rolls
    it all back (-> _Fallback)."""
    options = store.item_options(int(b["id"]))  # sent to the worker, which must not query the store
    bounds = _chunk_bounds(lines, _CHUNK)
    n_chunks = len(bounds)
    n_rows, statuses = 0, Counter[str]()
    conn_w = worker.conn
    with store.write() as conn:
        run_id = _insert_run(conn, run, b, model, cfg, digest)
        if conn.execute("SELECT 1 FROM predictions WHERE run_id = ? LIMIT 1", (run_id,)).fetchone() is not None:
            raise _Fallback  # leftover rows under a reused run id: the reference path replaces them (OR REPLACE)
        builder = _RowBuilder(path.name, keys, parser, _constant(options), run_id, False)
        built: dict[int, _Rows] = {}
        plain_insert = _plain_insert(run_id)
        done = given = 0  # chunks written; chunks handed out (to the worker or built here)

        def receive() -> None:
            msg = conn_w.recv()
            worker.due -= 1
            if msg[1] != job:
                return  # an answer to an earlier, abandoned job
            if msg[0] != "rows":
                raise _Fallback
            if msg[2] >= done:  # else built here meanwhile (the same rows) and written
                built.setdefault(msg[2], msg[3])

        def build(k: int) -> None:
            try:
                built[k] = _build_chunk(builder, text, bounds, k)
            except Exception as exc:
                raise _Fallback from exc

        try:
            worker.settle()
            job = worker.jobs = worker.jobs + 1
            # the worker reads the file itself (cheaper than sending its text) and checks it is the same
            conn_w.send(("job", job, worker.context(keys, options), parser, run_id, path.name, str(path), sha,
                         _CHUNK))
            while done < n_chunks:
                while worker.due < 2 and given < n_chunks:  # keep the worker busy, a chunk ahead
                    conn_w.send(("build", job, given))
                    given += 1
                    worker.due += 1
                while worker.due and conn_w.poll():
                    receive()
                chunk = built.pop(done, None)
                if chunk is not None:
                    plain, rows = chunk
                    try:
                        conn.executemany(plain_insert, plain)
                        if rows:
                            conn.executemany(store.PRED_INSERT, rows)
                    except sqlite3.IntegrityError:
                        raise _Fallback from None  # a duplicate key: the reference path reports its lines
                    n_rows += len(plain) + len(rows)
                    statuses.update(map(itemgetter(3), plain))
                    statuses.update(map(itemgetter(7), rows))
                    done += 1
                elif given < n_chunks:  # the worker has the next chunk: build a later one meanwhile
                    build(given)
                    given += 1
                else:  # the worker has every chunk still missing: build the next one here too
                    build(done)
        except (OSError, EOFError) as exc:
            worker.close()
            raise _Fallback from exc
        except (_Fallback, sqlite3.Error):
            raise  # the worker is fine: answers still due are read before its next job
        except BaseException:
            worker.close()  # in an unknown state (an interrupt mid-message): a later import starts a new one
            raise
        conn.execute("INSERT INTO imports (kind, file, sha256, target, rows, created) VALUES "
                     "('predictions', ?, ?, ?, ?, ?)", (path.name, sha, run, n_rows, now()))
    report = Report()
    report.counts = _counts(n_rows, n_rows, statuses)
    return ImportResult(run, n_rows, False, report)


def _import_predictions_reference(store: Store, path: Path, objs: list[tuple[int, Any]], report: Report, run: str,
                                  model: str | None, config: dict[str, Any] | None, benchmark: str | None,
                                  replace: bool, after: _After | None = None) -> ImportResult:
    """Line-by-line validation that reports every problem (file, line, field) before refusing: a line's field
    errors do not hide its unknown item, duplicate key or letter errors, nor any other line's (issue 14.4).
    `after` writes rows that go with the predictions (db/foreign.py) in the same transaction."""
    name = path.name
    lines: list[tuple[int, Prediction | None, tuple[str, int, int] | None]] = []
    for no, obj in objs:
        p = fast_prediction(obj, no) or parse_prediction_fields(obj, name, no, report)
        lines.append((no, p, (p.item_id, p.rotation, p.repeat) if p is not None else prediction_key(obj)))
    if not objs and report.ok:
        report.error(name, 0, "(file)", "no predictions in the file")
    first = next((key[0] for _, _, key in lines if key is not None), None)
    bench = _resolve_benchmark(store, run, benchmark, first, report, name)
    if bench is None:  # nothing to check items against
        if report.ok:
            report.error(name, 0, "item_id", "no line names a readable item_id; cannot tell the benchmark")
        _refuse(report)
    assert bench is not None
    b = store.benchmark(bench)
    parser = (config or {}).get("parser") or families.get(b["family"]).PARSER
    keys = store.item_keys(int(b["id"]))
    option_cache: dict[int, dict[str, str]] = {}

    def options_of(pk: int) -> Callable[[], dict[str, str] | None]:
        def load() -> dict[str, str] | None:
            if not option_cache:
                option_cache.update(store.item_options(int(b["id"])))
            return option_cache.get(pk)
        return load

    seen: dict[tuple[str, int, int], int] = {}
    preds: list[Prediction] = []  # the lines without any problem, in file order
    for no, p, key in lines:
        if key is None:
            continue
        info = keys.get(key[0])
        if info is None:
            report.error(name, no, "item_id", f"unknown item {key[0]!r} (not in benchmark {bench!r})")
            continue
        if key in seen:
            report.error(name, no, "item_id", f"duplicate prediction for {key[0]!r} rotation {key[1]} "
                         f"repeat {key[2]} (first on line {seen[key]})")
            continue
        seen[key] = no
        if p is None:
            continue
        before = len(report.errors)
        resolve_prediction(p, info[1], parser, name, report, options_of(info[0]))
        if len(report.errors) == before:
            preds.append(p)
    cfg, digest = _run_config(model, config)
    existing = store.conn.execute("SELECT id, benchmark_id, config_hash FROM runs WHERE name = ?", (run,)).fetchone()
    if existing is not None and (existing[1] != b["id"] or existing[2] != digest):
        report.error(name, 0, "--run", f"run {run!r} already exists with another benchmark, model or settings; "
                     "choose another --run name")
        _refuse(report)
    run_id = existing[0] if existing else 0  # a new run's id is filled in when it is written
    rows = [(run_id, keys[p.item_id][0], p.rotation, p.repeat, p.response, p.shown, p.answer, p.status, p.error,
             p.input_mode, p.trace, p.tokens, p.latency,
             None if p.probs is None else json.dumps(p.probs, ensure_ascii=False, sort_keys=True)) for p in preds]
    # the good lines still meet the run's stored rows there, so their conflicts are listed with the rest
    return _write_predictions(store, path, run, model, b, cfg, digest, existing, rows, preds, replace, report,
                              after=after)


def _write_predictions(store: Store, path: Path, run: str, model: str | None, b: dict[str, Any],
                       cfg: dict[str, Any], digest: str, existing: tuple[Any, ...] | None, rows: list[_PredRow],
                       preds: list[Prediction] | None, replace: bool, report: Report | None = None,
                       plain: list[_PlainRow] | tuple[()] = (), after: _After | None = None) -> ImportResult:
    """Write validated rows (one per file line, in order, with `preds` their predictions) in one transaction;
    with an existing run only the new or (with `replace`) changed ones, refusing other changes. Without `preds`
    (the fast path) a refusal raises _Fallback instead, for the reference path to report; its `plain` rows (of a
    new run only) go in too."""
    name = path.name
    report = report if report is not None else Report()
    n_lines = len(rows) + len(plain)
    if existing is not None:
        old = {(r[0], r[1], r[2]): r[3:] for r in store.conn.execute(
            "SELECT item_pk, rotation, repeat, response, shown, answer, status, error, input_mode, trace, tokens"
            " FROM predictions WHERE run_id = ?", (existing[0],))}
        fresh = []
        replaced: dict[tuple[int, int, int], str | None] = {}  # key -> the new raw response
        lines_of: dict[tuple[int, int, int], int] = {}
        for i, row in enumerate(rows):
            prev = old.get((row[1], row[2], row[3]))
            if prev is None:
                fresh.append(row)
            elif tuple(prev) != row[4:12]:  # response, shown, answer, status, error, input_mode, trace, tokens
                if not replace:
                    if preds is None:
                        raise _Fallback
                    p = preds[i]
                    report.error(name, p.line, "response", f"run {run!r} already has a different prediction for "
                                 f"{p.item_id!r} rotation {p.rotation} repeat {p.repeat}; use --replace to overwrite")
                else:
                    fresh.append(row)
                    replaced[(row[1], row[2], row[3])] = row[4]
                    if preds is not None:
                        lines_of[(row[1], row[2], row[3])] = preds[i].line
        rows = fresh
        if replaced and preds is None and overrides.live_keys(store, existing[0]) & replaced.keys():
            raise _Fallback  # the reference path reports each override with its file line
    _refuse(report)  # every problem of the file (from the reference path's checks, or conflicts found here)
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    with store.write() as conn:
        if existing is None:
            run_id = _insert_run(conn, run, b, model, cfg, digest)
            if rows and rows[0][0] != run_id:  # another writer took the expected id meanwhile
                rows = [(run_id, *row[1:]) for row in rows]
        else:
            run_id = existing[0]
        # Rows of a run that has none yet are plain INSERTs (keys unique: checked by the reference path, or by the
        # primary key for the fast path's); OR REPLACE would add a lookup per row. Rows of an existing run replace
        # the old ones with the same key.
        empty = conn.execute("SELECT 1 FROM predictions WHERE run_id = ? LIMIT 1", (run_id,)).fetchone() is None
        if preds is None and existing is None and not empty:
            raise _Fallback  # leftover rows under a reused run id: the reference path replaces them (OR REPLACE)
        if empty:
            try:
                conn.executemany(_plain_insert(run_id), plain)
                conn.executemany(store.PRED_INSERT, rows)
            except sqlite3.IntegrityError:
                if preds is None:
                    raise _Fallback from None  # a duplicate key: the reference path reports its lines
                raise
        else:
            if existing is not None and replace:
                settled = overrides.settle_replaced(conn, run_id, replaced, f"import of {name}")
                ids = {v[0]: k for k, v in store.item_keys(int(b["id"])).items()}
                _report_settled(report, name, run, settled, lines_of, ids)
            # what another tool kept beside a replaced response no longer goes with it (the new file's own
            # extras, if any, are written by `after` below)
            conn.executemany("DELETE FROM prediction_sources WHERE run_id = ? AND item_pk = ? AND rotation = ?"
                             " AND repeat = ?", [(run_id, *k) for k in replaced])
            conn.executemany(store.PRED_INSERT.replace("INSERT", "INSERT OR REPLACE", 1), rows)
        n_rows = len(rows) + len(plain)
        if n_rows and existing is not None:  # caches keyed on (updated, count) see the replaced rows
            conn.execute("UPDATE runs SET updated = ? WHERE id = ?", (now(), run_id))
        if n_rows and after is not None:
            after(conn, run_id)
        if n_rows:
            conn.execute("INSERT INTO imports (kind, file, sha256, target, rows, created) VALUES "
                         "('predictions', ?, ?, ?, ?, ?)", (name, sha, run, n_rows, now()))
    statuses = Counter(map(itemgetter(7), rows))
    statuses.update(map(itemgetter(3), plain))
    report.counts = {**_counts(n_lines, n_rows, statuses), **report.counts}
    return ImportResult(run, n_rows, not n_rows, report)


def _report_settled(report: Report, name: str, run: str, settled: list[dict[str, Any]],
                    lines_of: dict[tuple[int, int, int], int], item_ids: dict[int, str]) -> None:
    """One warning per extraction-audit override a --replace import met, saying what became of it."""
    for o in settled:
        key = (o["item_pk"], o["rotation"], o["repeat"])
        what = f"{item_ids.get(o['item_pk'], o['item_pk'])!r} rotation {o['rotation']} repeat {o['repeat']}"
        made = f"override #{o['id']} ({o['method']}: {o['new_status']} {o['new_answer'] or ''})".replace(" )", ")")
        if o["outcome"] == "kept":
            msg = f"{made} of {what} kept: the replaced row has the same raw response, so it still reads the override"
        else:
            msg = (f"{made} of {what} is now stale and inactive: the replaced row has another raw response, so it "
                   f"reads as imported; audit it again in run {run!r} if needed")
        report.warn(name, lines_of.get(key, 0), "response", msg)
    if settled:
        report.counts["overrides_kept"] = sum(o["outcome"] == "kept" for o in settled)
        report.counts["overrides_stale"] = sum(o["outcome"] == "stale" for o in settled)


# ---- labels -------------------------------------------------------------------------------------------------


def import_labels(store: Store, path: str | os.PathLike[str], run: str) -> ImportResult:
    """Import stage labels (human or judge) for the traces of run `run`; changes are kept in label_audit."""
    path = Path(path)
    name = path.name
    report = Report()
    text = _read_text(path, report)
    labels = []
    if text is not None:
        for no, obj in _json_lines(text, name, report):
            lab = parse_label(obj, name, no, report)
            if lab is not None:
                labels.append(lab)
    try:
        r = store.run(run)
    except NotFound as exc:
        report.error(name, 0, "--run", str(exc))
        _refuse(report)
        raise
    run_id = r["id"]
    keys = store.item_keys(int(store.benchmark(r["benchmark"])["id"]))
    present = {(row[0], row[1], row[2]) for row in store.conn.execute(
        "SELECT item_pk, rotation, repeat FROM predictions WHERE run_id = ?", (run_id,))}
    seen: dict[tuple[Any, ...], int] = {}
    for lab in labels:
        info = keys.get(lab.item_id)
        if info is None:
            report.error(name, lab.line, "item_id", f"unknown item {lab.item_id!r} (not in benchmark {r['benchmark']!r})")
            continue
        if (info[0], lab.rotation, lab.repeat) not in present:
            report.error(name, lab.line, "item_id", f"run {run!r} has no trace for {lab.item_id!r} rotation "
                         f"{lab.rotation} repeat {lab.repeat}")
            continue
        key = (lab.item_id, lab.rotation, lab.repeat, lab.labeler)
        if key in seen:
            report.error(name, lab.line, "item_id", f"duplicate label by {lab.labeler!r} (first on line {seen[key]})")
        seen[key] = lab.line
    if not labels and report.ok:
        report.error(name, 0, "(file)", "no labels in the file")
    _refuse(report)
    written = 0
    with store.write() as conn:
        for lab in labels:
            flags = [None if lab.flags[s] is None else int(bool(lab.flags[s])) for s in ("S1", "S2", "S3", "S4")]
            new = {**dict(zip(("S1", "S2", "S3", "S4"), flags, strict=True)), "first_failure": lab.first_failure,
                   "category": lab.category, "note": lab.note, "kind": lab.kind}
            row_key = dbl.LabelKey(run_id, keys[lab.item_id][0], lab.rotation, lab.repeat, lab.labeler)
            written += dbl.upsert(conn, row_key, new, f"import:{name}")[0] == "saved"
    report.counts = {"labels": written, "unchanged": len(labels) - written}
    return ImportResult(run, written, written == 0, report)
