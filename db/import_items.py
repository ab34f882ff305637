"""The items import (SPEC §3): an items JSONL, a zip holding it and its images, or another tool's files
(db/foreign.py), checked whole (line rules, the file-level rules, the images, the family's group rules) and
written in one transaction, or refused with every problem.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any

from core import families
from core.formats import parse_item
from core.report import Report
from core.schema import Item
from db.import_common import ImageSet, ImportResult, check_item_set, json_lines, read_text, refuse
from db.store import Store

MAX_ZIP_BYTES = 8 * 1024**3  # total uncompressed size of an items zip


def _safe_extract(zpath: Path, dest: Path, report: Report) -> Path | None:
    """Extract a zip into `dest` (`extract_zip`); returns the items JSONL it holds."""
    if not extract_zip(zpath, dest, report):
        return None
    root = dest.resolve()
    name = zpath.name
    found = sorted(p for p in root.rglob("*.jsonl") if "__MACOSX" not in p.parts)
    if len(found) != 1:
        report.error(name, 0, "(file)", f"expected exactly one .jsonl file in the zip, found {len(found)}"
                     + (f": {', '.join(str(p.relative_to(root)) for p in found)}" if found else ""))
        return None
    return found[0]


def extract_zip(zpath: Path, dest: Path, report: Report) -> bool:
    """Extract a zip into `dest`, refusing members that escape it or are links, and a zip that expands past
    MAX_ZIP_BYTES (counted while extracting, whatever its directory says); False with the problem in `report`."""
    name = zpath.name
    try:
        zf = zipfile.ZipFile(zpath)
    except (zipfile.BadZipFile, OSError) as exc:
        report.error(name, 0, "(file)", f"not a readable zip file ({exc})")
        return False
    with zf:
        members = zf.infolist()
        total = sum(m.file_size for m in members)
        if total > MAX_ZIP_BYTES:
            report.error(name, 0, "(file)", f"expands to {total} bytes, over the {MAX_ZIP_BYTES} byte limit")
            return False
        root = dest.resolve()
        _check_members(members, root, name, report)
        if not report.ok:
            return False
        try:
            return _extract_members(zf, members, root, name, report)
        except (zipfile.BadZipFile, NotImplementedError, OSError, EOFError) as exc:
            report.error(name, 0, "(file)", f"not a readable zip file ({type(exc).__name__}: {exc})")
            return False


def _check_members(members: list[zipfile.ZipInfo], root: Path, name: str, report: Report) -> None:
    """Members that would escape `root` or are links, reported."""
    for m in members:
        pure = PurePosixPath(m.filename.replace("\\", "/"))
        if pure.is_absolute() or ".." in pure.parts or not (root / pure).resolve().is_relative_to(root):
            report.error(name, 0, m.filename, "zip member escapes the extraction folder; refused")
        elif stat.S_ISLNK(m.external_attr >> 16):
            report.error(name, 0, m.filename, "zip member is a symbolic link; refused")


def _extract_members(zf: zipfile.ZipFile, members: list[zipfile.ZipInfo], root: Path, name: str,
                     report: Report) -> bool:
    """Copy the members' bytes out, stopping once they pass MAX_ZIP_BYTES in all."""
    written = 0
    for m in members:
        if m.is_dir():
            continue
        target = root / PurePosixPath(m.filename.replace("\\", "/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        with zf.open(m) as src, open(target, "wb") as out:
            while chunk := src.read(1 << 20):
                written += len(chunk)
                if written > MAX_ZIP_BYTES:
                    report.error(name, 0, m.filename, f"the zip expands past the {MAX_ZIP_BYTES} byte limit")
                    return False
                out.write(chunk)
    return True


def read_items(jsonl: Path, report: Report, display: str | None = None) -> tuple[str | None, list[Item], dict]:
    """Parse and validate an items JSONL with its images; returns (family, items, images by hash)."""
    name = display or jsonl.name
    text = read_text(jsonl, report)
    if text is None:
        return None, [], {}
    items: list[Item] = []
    for no, obj in json_lines(text, name, report):
        it = parse_item(obj, name, no, report)
        if it is not None:
            items.append(it)
    fams = check_item_set(items, name, report)
    images = ImageSet(jsonl.parent, report)
    for it in items:
        images.attach(it, it.image_names, name, it.line)
    family = fams.pop() if len(fams) == 1 else None
    if family is not None and report.ok:
        families.get(family).validate(items, name, report)
    return family, items, images.images


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
    from db import foreign  # other tools' readers, imported when a file needs them

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
    refuse(report)
    assert family is not None
    return write_items(store, bench, path.name, family, items, images, report)


def write_items(store: Store, bench: str, source: str, family: str, items: list[Item], images: dict,
                report: Report, *, subset: bool = False) -> ImportResult:
    """Write checked items as benchmark `bench` in one transaction, or find them there already: the same items
    (in any order; with `subset`, some of them, as an Inspect log run with --limit holds) under an existing name
    are "unchanged", other items are refused with the first difference. `source` names the file."""
    signature = _item_signature(items)
    if store.conn.execute("SELECT 1 FROM benchmarks WHERE name = ?", (bench,)).fetchone() is not None:
        old = store.benchmark(bench)
        diff = None if old["source_sha256"] == signature else first_difference(store.items(bench), items, subset)
        if diff is None:
            report.counts = {"items": 0, "unchanged": len(items)}
            return ImportResult(bench, 0, True, report)
        report.error(source, 0, "(file)", f"benchmark {bench!r} already exists with other items ({diff}); import "
                     "under another --name")
        refuse(report)
    for digest, (ext, _w, _h, data) in images.items():
        store.put_image_file(digest, ext, data)  # content-addressed: harmless if the import is killed later
    rows = [(d, ext, w, h, len(data)) for d, (ext, w, h, data) in images.items()]
    store.insert_benchmark(bench, family, source, signature, items, rows)
    report.counts = {"items": len(items), "images": len(images), "groups": len({it.group_id for it in items})}
    return ImportResult(bench, len(items), False, report)


_COMPARED = ("family", "group_id", "split", "kind", "variant", "question", "options", "answer", "images", "meta",
             "stages")


def _compared(it: Item) -> tuple[Any, ...]:
    """An item's fields in the order of `_COMPARED` (its id and file line aside)."""
    return (it.benchmark, it.group_id, it.split, it.kind, it.variant, it.question, it.options, it.answer, it.images,
            it.meta, it.stages)


def first_difference(old: list[Item], new: list[Item], subset: bool = False) -> str | None:
    """The first difference between a benchmark's stored items and new ones, matched by item id (order aside):
    an item only one side has (with `subset`, new items may be fewer), or a field that differs. None when they
    agree."""
    stored = {it.item_id: it for it in old}
    for it in new:
        was = stored.get(it.item_id)
        if was is None:
            return f"item {it.item_id!r} is not in it"
        for name, a, b in zip(_COMPARED, _compared(was), _compared(it), strict=True):
            if a != b:
                return f"item {it.item_id!r} {name}: {str(a)!r:.60} there, {str(b)!r:.60} here"
    if not subset and len(new) < len(stored):
        ids = {it.item_id for it in new}
        missing = next(k for k in stored if k not in ids)
        return f"item {missing!r} is missing here"
    return None
