"""The items import (SPEC §3): an items JSONL, a zip holding it and its images, or another tool's files
(db/foreign.py), checked whole (line rules, the file-level rules, the images, the family's group rules) and
written in one transaction, or refused with every problem.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
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
    signature = _item_signature(items)
    existing = [b for b in store.benchmarks() if b["name"] == bench]
    if existing:
        old = store.benchmark(bench)
        if old["source_sha256"] == signature:
            report.counts = {"items": 0, "unchanged": len(items)}
            return ImportResult(bench, 0, True, report)
        report.error(path.name, 0, "(file)", f"benchmark {bench!r} already exists with other items; import under "
                     "another --name")
        refuse(report)
    for digest, (ext, _w, _h, data) in images.items():
        store.put_image_file(digest, ext, data)  # content-addressed: harmless if the import is killed later
    rows = [(d, ext, w, h, len(data)) for d, (ext, w, h, data) in images.items()]
    store.insert_benchmark(bench, family, str(path.name), signature, items, rows)
    report.counts = {"items": len(items), "images": len(images), "groups": len({it.group_id for it in items})}
    return ImportResult(bench, len(items), False, report)
