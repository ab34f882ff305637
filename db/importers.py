"""Importers for items (JSONL or zip), predictions (JSONL or CSV) and labels (JSONL) — SPEC §3.

Every import validates the whole file first and writes nothing when any line is bad; the write itself is one
`BEGIN IMMEDIATE` transaction, so a killed import leaves no partial rows. Re-importing the same file changes
nothing.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import stat
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import orjson

from core import families
from core.errors import ImportRefused, NotFound
from core.formats import fast_prediction, parse_item, parse_label, parse_prediction_fields
from core.parsing import OK, fast_parse, parse_answer, rotate_options, unrotate
from core.report import Report
from core.schema import Item, Prediction
from db.store import Store, config_hash, now

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
    name = path.name
    if not path.is_file():
        report.error(name, 0, "(file)", f"no such file: {path}")
        return None
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")  # a UTF-8 BOM is accepted and dropped
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        report.error(name, line, "(line)", f"not valid UTF-8 ({exc.reason})")
        return None
    if not text.strip():
        report.error(name, 0, "(file)", "the file is empty (expected one JSON object a line)")
        return None
    return text


def _json_lines(text: str, name: str, report: Report) -> list[tuple[int, Any]]:
    out = []
    loads = orjson.loads
    for no, line in enumerate(text.split("\n"), start=1):
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
    from PIL import Image, UnidentifiedImageError

    data = path.read_bytes()
    try:
        with Image.open(io.BytesIO(data)) as im:
            width, height = im.size
            fmt = im.format or ""
            if width * height > MAX_IMAGE_PIXELS:
                report.error(file, line, "images", f"{rel!r} is {width}x{height} pixels, over the "
                             f"{MAX_IMAGE_PIXELS:,} pixel limit (possible decompression bomb)")
                return None
            im.verify()
    except Image.DecompressionBombError:
        report.error(file, line, "images", f"{rel!r} is over the pixel limit (possible decompression bomb)")
        return None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        report.error(file, line, "images", f"{rel!r} is not a readable image ({type(exc).__name__})")
        return None
    if fmt not in IMAGE_FORMATS:
        report.error(file, line, "images", f"{rel!r} is a {fmt or 'unknown'} image (expected PNG, JPEG, WEBP, GIF or BMP)")
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


def _item_signature(items: list[Item]) -> str:
    blob = json.dumps([[it.item_id, it.group_id, it.split, it.kind, it.variant, it.question, it.options, it.answer,
                        it.images, it.meta, it.stages] for it in items], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def validate_items_file(path: str | os.PathLike[str]) -> Report:
    """Validate an items JSONL or zip without touching any store (the Data tab's dry run)."""
    report = Report()
    with tempfile.TemporaryDirectory(prefix="crosscheck-zip-") as tmp:
        _read_items_any(Path(path), Path(tmp), report)
    return report


def _read_items_any(path: Path, tmp: Path, report: Report) -> tuple[str | None, list[Item], dict]:
    if path.suffix.lower() == ".zip":
        jsonl = _safe_extract(path, tmp, report)
        if jsonl is None:
            return None, [], {}
        return read_items(jsonl, report, display=f"{path.name}:{jsonl.relative_to(tmp)}")
    return read_items(path, report)


def import_items(store: Store, path: str | os.PathLike[str], name: str | None = None) -> ImportResult:
    """Import an items JSONL (or a zip holding it and its images) as benchmark `name` (default: file stem)."""
    path = Path(path)
    bench = name or path.stem
    report = Report()
    with tempfile.TemporaryDirectory(prefix="crosscheck-zip-") as tmp:
        family, items, images = _read_items_any(path, Path(tmp), report)
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


def import_predictions(store: Store, path: str | os.PathLike[str], run: str, model: str | None = None,
                       config: dict[str, Any] | None = None, benchmark: str | None = None,
                       replace: bool = False) -> ImportResult:
    """Import predictions (JSONL or CSV) into run `run` in one transaction; see docs/FORMATS.md."""
    path = Path(path)
    name = path.name
    report = Report()
    objs = _read_prediction_objects(path, report)
    preds: list[Prediction] = []
    for no, obj in objs:
        p = fast_prediction(obj, no) or parse_prediction_fields(obj, name, no, report)
        if p is not None:
            preds.append(p)
    if not preds and report.ok:
        report.error(name, 0, "(file)", "no predictions in the file")
    bench = _resolve_benchmark(store, run, benchmark, preds[0].item_id if preds else None, report, name)
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
    for p in preds:
        info = keys.get(p.item_id)
        if info is None:
            report.error(name, p.line, "item_id", f"unknown item {p.item_id!r} (not in benchmark {bench!r})")
            continue
        key = (p.item_id, p.rotation, p.repeat)
        if key in seen:
            report.error(name, p.line, "item_id", f"duplicate prediction for {p.item_id!r} rotation {p.rotation} "
                         f"repeat {p.repeat} (first on line {seen[key]})")
            continue
        seen[key] = p.line
        if not p.status and p.shown is None and p.rotation == 0:
            decided = fast_parse(p.response, info[1], parser)  # the common clean answer, decided inline
            if decided is not None:
                p.status, p.shown = decided
                p.answer = p.shown
                continue
        resolve_prediction(p, info[1], parser, name, report, options_of(info[0]))
    _refuse(report)
    cfg = {"runner": "import", "model": model, **(config or {})}
    digest = config_hash(cfg)
    existing = store.conn.execute("SELECT id, benchmark_id, config_hash FROM runs WHERE name = ?", (run,)).fetchone()
    if existing is not None and (existing[1] != b["id"] or existing[2] != digest):
        report.error(name, 0, "--run", f"run {run!r} already exists with another benchmark, model or settings; "
                     "choose another --run name")
        _refuse(report)
    run_id = existing[0] if existing else None
    rows = [(p, keys[p.item_id][0]) for p in preds]
    if run_id is not None:
        old = {(r[0], r[1], r[2]): r[3:] for r in store.conn.execute(
            "SELECT item_pk, rotation, repeat, response, shown, answer, status, error, input_mode, trace, tokens"
            " FROM predictions WHERE run_id = ?", (run_id,))}
        fresh = []
        for p, pk in rows:
            prev = old.get((pk, p.rotation, p.repeat))
            now_row = (p.response, p.shown, p.answer, p.status, p.error, p.input_mode, p.trace, p.tokens)
            if prev is None:
                fresh.append((p, pk))
            elif tuple(prev) != now_row:
                if not replace:
                    report.error(name, p.line, "response", f"run {run!r} already has a different prediction for "
                                 f"{p.item_id!r} rotation {p.rotation} repeat {p.repeat}; use --replace to overwrite")
                else:
                    fresh.append((p, pk))
        _refuse(report)
        rows = fresh
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    with store.write() as conn:
        if run_id is None:
            cur = conn.execute(
                "INSERT INTO runs (name, benchmark_id, runner, model, config, config_hash, status, synthetic, created,"
                " updated) VALUES (?, ?, 'import', ?, ?, ?, 'imported', ?, ?, ?)",
                (run, b["id"], model or "", json.dumps(cfg, sort_keys=True, ensure_ascii=False), digest,
                 int(bool(cfg.get("synthetic"))), now(), now()))
            run_id = int(cur.lastrowid or 0)
        conn.executemany(store.PRED_INSERT.replace("INSERT", "INSERT OR REPLACE", 1),
                         [(run_id, pk, p.rotation, p.repeat, p.response, p.shown, p.answer, p.status, p.error,
                           p.input_mode, p.trace, p.tokens, p.latency,
                           None if p.probs is None else json.dumps(p.probs, ensure_ascii=False, sort_keys=True))
                          for p, pk in rows])
        if rows:
            conn.execute("INSERT INTO imports (kind, file, sha256, target, rows, created) VALUES "
                         "('predictions', ?, ?, ?, ?, ?)", (name, sha, run, len(rows), now()))
    statuses = {s: sum(p.status == s for p, _ in rows) for s in ("ok", "invalid", "api_error")}
    report.counts = {"predictions": len(rows), "unchanged": len(preds) - len(rows), **statuses}
    return ImportResult(run, len(rows), not rows, report)


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
            pk = keys[lab.item_id][0]
            vals = [None if lab.flags[s] is None else int(bool(lab.flags[s])) for s in ("S1", "S2", "S3", "S4")]
            new = {"S1": vals[0], "S2": vals[1], "S3": vals[2], "S4": vals[3], "first_failure": lab.first_failure,
                   "category": lab.category, "note": lab.note, "kind": lab.kind}
            row = conn.execute(
                "SELECT id, S1, S2, S3, S4, first_failure, category, note, kind FROM labels WHERE run_id = ? AND"
                " item_pk = ? AND rotation = ? AND repeat = ? AND labeler = ?",
                (run_id, pk, lab.rotation, lab.repeat, lab.labeler)).fetchone()
            if row is not None:
                old = dict(zip(("S1", "S2", "S3", "S4", "first_failure", "category", "note", "kind"), row[1:],
                               strict=True))
                if old == new:
                    continue
                conn.execute("UPDATE labels SET S1=?, S2=?, S3=?, S4=?, first_failure=?, category=?, note=?, kind=?,"
                             " updated=? WHERE id = ?", (*vals, lab.first_failure, lab.category, lab.note, lab.kind,
                                                         now(), row[0]))
                label_id = row[0]
            else:
                old = None
                cur = conn.execute(
                    "INSERT INTO labels (run_id, item_pk, rotation, repeat, labeler, kind, S1, S2, S3, S4,"
                    " first_failure, category, note, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (run_id, pk, lab.rotation, lab.repeat, lab.labeler, lab.kind, *vals, lab.first_failure,
                     lab.category, lab.note, now()))
                label_id = cur.lastrowid
            conn.execute("INSERT INTO label_audit (label_id, labeler, changed_by, at, old, new) VALUES (?, ?, ?, ?, ?, ?)",
                         (label_id, lab.labeler, f"import:{name}", now(),
                          None if old is None else json.dumps(old), json.dumps(new)))
            written += 1
    report.counts = {"labels": written, "unchanged": len(labels) - written}
    return ImportResult(run, written, written == 0, report)
