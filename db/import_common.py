"""What every importer shares (SPEC §3): the result and the refusal, reading a file's text and its JSON lines,
finding a run's benchmark, the file-level item rules, and the images of an items import, each read and checked
once (`ImageSet`, the one image loop of the JSONL / zip import and of other tools' files, db/foreign.py).

The importers by concern call this module; it calls none of them: db/import_items.py (items JSONL or zip),
db/import_predictions.py (predictions of every format), db/import_labels.py (labels), db/foreign.py (other
tools' files). db/importers.py is their public entry.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import orjson

from core.errors import ImportRefused
from core.report import Report
from core.schema import Item
from db.store import Store

MAX_IMAGE_PIXELS = 40_000_000  # larger images are refused as possible decompression bombs
IMAGE_FORMATS = {"PNG": "png", "JPEG": "jpg", "WEBP": "webp", "GIF": "gif", "BMP": "bmp"}


@dataclass(slots=True)
class ImportResult:
    """What an import did: rows written (0 when unchanged) and the validation report."""

    target: str
    rows: int
    unchanged: bool
    report: Report


def refuse(report: Report) -> None:
    """Raise ImportRefused with every problem of `report`, if it has any."""
    if not report.ok:
        raise ImportRefused(report.summary(), report)


def read_text(path: Path, report: Report) -> str | None:
    """The file's text; None, with the error in `report`, when it is missing, not UTF-8 or empty."""
    name = path.name
    if not path.is_file():
        report.error(name, 0, "(file)", f"no such file: {path}")
        return None
    raw = path.read_bytes()
    if raw[:4] == b"PK\x03\x04":  # a zip is never a text file: say what it looks like instead of "not UTF-8"
        report.error(name, 0, "(file)", "a zip archive, not a UTF-8 text file (an Inspect .eval log: --format "
                     "inspect; a zip of an items JSONL and its images: app.py import; a zipped folder: app.py open)")
        return None
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


def json_lines(text: str, name: str, report: Report) -> Iterator[tuple[int, Any]]:
    """(line number, object) of each JSON line of `text`, decoded as the caller takes them, so that a line's object
    is let go once the caller is done with it (a whole file's dicts held at once outlive the collector's young
    generations, and its full collections then walk them again and again); blank lines are skipped, a malformed
    one reported."""
    lines = text.split("\n")
    if lines and not lines[-1]:
        lines.pop()  # the file's last newline
    for no, line in enumerate(lines, start=1):
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            if not line.strip():
                continue  # blank lines are allowed and skipped
            obj = _lenient(no, line, name, report)  # orjson is stricter about a few forms; json decides
            if obj is _REFUSED:
                continue
        yield no, obj


def _lenient(no: int, line: str, name: str, report: Report) -> Any:
    """One line by `json` (NaN, numbers beyond a float...), or _REFUSED with its problem reported: malformed,
    nested deeper than Python's recursion allows, or holding a lone surrogate escape ("\\ud800"), which no
    UTF-8 text (nor the store) can hold."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        report.error(name, no, "(line)", f"malformed JSON ({exc.msg} at column {exc.colno})")
        return _REFUSED
    except RecursionError:
        report.error(name, no, "(line)", "malformed JSON (nested too deep)")
        return _REFUSED
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        report.error(name, no, "(line)", f"not valid Unicode text (a lone surrogate "
                     f"{exc.object[exc.start:exc.end].encode('unicode_escape').decode('ascii')})")
        return _REFUSED
    return obj


_REFUSED = object()  # a line _lenient reported and left out


def resolve_benchmark(store: Store, run: str, benchmark: str | None, first_item: str | None,
                      report: Report, name: str) -> str | None:
    """The benchmark predictions of `run` belong to: `benchmark` when given, else the existing run's, else the one
    benchmark holding item `first_item`; None (an error in `report` when an item id was there to go by)."""
    if benchmark is not None:
        return benchmark
    row = store.conn.execute("SELECT b.name FROM runs r JOIN benchmarks b ON b.id = r.benchmark_id WHERE r.name = ?",
                             (run,)).fetchone()
    if row is not None:
        return str(row[0])
    if first_item is None:
        return None
    hits = store.conn.execute(  # per benchmark by its (benchmark_id, item_id) index, not a scan of every item
        "SELECT b.name FROM benchmarks b WHERE EXISTS (SELECT 1 FROM items i WHERE i.benchmark_id = b.id"
        " AND i.item_id = ?)", (first_item,)).fetchall()
    if len(hits) == 1:
        return str(hits[0][0])
    if not hits:
        report.error(name, 0, "item_id", f"item {first_item!r} is in no imported benchmark; import the items first")
    else:
        report.error(name, 0, "item_id", f"item {first_item!r} is in several benchmarks "
                     f"({', '.join(h[0] for h in hits)}); name one with --benchmark")
    return None


def finish_items(name: str, family: str, rows: Sequence[tuple[str, int, dict[str, Any], Sequence[Any]]], base: Path,
                 report: Report) -> tuple[str | None, list[Item], dict]:
    """Items from other tools' item objects and their images (bytes or file names relative to `base`), checked as
    the JSONL import checks them: core.formats.parse_item, the images (`ImageSet`), the file-level rules and the
    family's group rules. Returns (family or None when any problem, items, images by hash)."""
    from core import families
    from core.formats import parse_item

    items: list[Item] = []
    images = ImageSet(base, report)
    for file, no, obj, pics in rows:
        it = parse_item(obj, file, no, report)
        if it is None:
            continue
        if pics:
            images.attach(it, pics, file, no, named=True)
        items.append(it)
    fams = check_item_set(items, name, report)
    if fams and report.ok:
        families.get(family).validate(items, name, report)
    return (family if report.ok else None), items, images.images


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


# ---- images -------------------------------------------------------------------------------------------------


def resolve_image(base: Path, rel: str, file: str, line: int, report: Report) -> Path | None:
    """The image file `rel` names inside `base`; None with the error in `report` for an absolute path, a `..`, a
    link out of `base`, a missing file or a folder."""
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


class ImageSet:
    """The images of one items import: `images` maps content hash -> (extension, width, height, bytes). Each
    image file and each image content is read and checked once, however many items name it."""

    def __init__(self, base: Path, report: Report) -> None:
        self.base = base  # the folder relative image paths are read in
        self.report = report
        self.images: dict[str, tuple[str, int, int, bytes]] = {}
        self._by_path: dict[Path, tuple[str, str]] = {}
        self._by_content: dict[bytes, tuple[str, str]] = {}

    def attach(self, item: Item, pics: Sequence[Any], file: str, line: int, named: bool = False) -> None:
        """Read and check each of one item's images and add its content hash to `item.images` (with `named`, its
        stored file name to `item.image_names` too). A str is a path relative to `base` (a problem is reported
        under `images`, naming the path); bytes, or an object with `data` (core.foreign's images), is the image
        itself (reported under its `column`, default "image", numbered when the item has several). An image
        with a problem is left out, the problem in the report."""
        for k, pic in enumerate(pics):
            data = pic if isinstance(pic, bytes) else getattr(pic, "data", None)
            if data is not None:
                column = getattr(pic, "column", "image")
                got = self._content(data, f"{column} {k + 1}" if len(pics) > 1 else column, file, line, column)
            else:
                got = self._file(pic if isinstance(pic, str) else pic.path, file, line)
            if got is not None:
                item.images.append(got[0])
                if named:
                    item.image_names.append(f"{got[0]}.{got[1]}")

    def _file(self, rel: str, file: str, line: int) -> tuple[str, str] | None:
        path = resolve_image(self.base, rel, file, line, self.report)
        if path is None:
            return None
        if path not in self._by_path:
            got = self._keep(check_image_bytes(path.read_bytes(), rel, file, line, self.report))
            if got is None:
                return None
            self._by_path[path] = got
        return self._by_path[path]

    def _content(self, data: bytes, label: str, file: str, line: int, column: str) -> tuple[str, str] | None:
        if data not in self._by_content:
            got = self._keep(check_image_bytes(data, label, file, line, self.report, fld=column))
            if got is None:
                return None
            self._by_content[data] = got
        return self._by_content[data]

    def _keep(self, loaded: tuple[str, str, int, int, bytes] | None) -> tuple[str, str] | None:
        if loaded is None:
            return None
        digest, ext, width, height, data = loaded
        self.images[digest] = (ext, width, height, data)
        return digest, ext
