"""Shared helpers of the demo generators: fonts, seeded RNGs, PNG and JSONL writing.

Pure: no SQL, no UI. Every generator writes SPEC §3 items JSONL plus PNG images into one folder.
"""

from __future__ import annotations

import hashlib
import json
import random
import warnings
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw, ImageFont

# Standard Debian / Ubuntu locations (fonts-noto-cjk, fonts-wqy-*, fonts-dejavu-core). Index = face in a .ttc.
CJK_FONT_CANDIDATES: tuple[tuple[str, int], ...] = (
    ("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc", 2),  # SC face
    ("/usr/share/fonts/opentype/noto/NotoSansCJKsc-Regular.otf", 0),
    ("/usr/share/fonts/truetype/noto/NotoSansCJK-Regular.ttc", 2),
    ("/usr/share/fonts/opentype/noto/NotoSerifCJK-Regular.ttc", 2),
    ("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc", 0),
    ("/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc", 0),
    ("/usr/share/fonts/truetype/arphic/uming.ttc", 0),
)
LATIN_FONT_CANDIDATES: tuple[tuple[str, int], ...] = (
    ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 0),
    ("/usr/share/fonts/truetype/dejavu/DejaVuSansCondensed.ttf", 0),
)
BOLD_FONT_CANDIDATES: tuple[tuple[str, int], ...] = (
    ("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf", 0),
)

PNG_KW = {"optimize": False, "compress_level": 1}


@cache
def font_path(kind: str = "cjk") -> tuple[str, int] | None:
    """The first installed font of `kind` (cjk | latin | bold), or None (warns once for CJK)."""
    table = {"cjk": CJK_FONT_CANDIDATES, "latin": LATIN_FONT_CANDIDATES, "bold": BOLD_FONT_CANDIDATES}[kind]
    for path, index in table:
        if Path(path).is_file():
            return path, index
    if kind == "cjk":
        warnings.warn(
            "No CJK font found (install fonts-noto-cjk); Chinese labels in the demo images will fall back "
            "to DejaVu / the Pillow default font and may show as boxes.",
            RuntimeWarning,
            stacklevel=2,
        )
        return font_path("latin")
    if kind == "bold":
        return font_path("latin")
    return None


@cache
def font(size: int, kind: str = "cjk") -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """A font of `size` pixels; falls back to Pillow's default font when no TrueType font exists."""
    found = font_path(kind)
    if found is not None:
        try:
            return ImageFont.truetype(found[0], size, index=found[1])
        except OSError:  # pragma: no cover - a broken font file
            pass
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # pragma: no cover - Pillow < 10.1
        return ImageFont.load_default()


def rng_for(*parts: Any) -> random.Random:
    """A Random seeded from the parts' text: stable across processes and PYTHONHASHSEED."""
    return random.Random("|".join(str(p) for p in parts))


def text_center(draw: ImageDraw.ImageDraw, xy: tuple[float, float], text: str, fnt: Any,
                fill: Any = "black", bg: Any = None, pad: int = 2) -> None:
    """Draw `text` centred on `xy`, optionally on a filled box (for labels over busy pictures)."""
    x0, y0, x1, y1 = draw.textbbox((0, 0), text, font=fnt)
    w, h = x1 - x0, y1 - y0
    left, top = xy[0] - w / 2 - x0, xy[1] - h / 2 - y0
    if bg is not None:
        draw.rectangle([xy[0] - w / 2 - pad, xy[1] - h / 2 - pad, xy[0] + w / 2 + pad, xy[1] + h / 2 + pad],
                       fill=bg)
    draw.text((left, top), text, font=fnt, fill=fill)


def save_png(img: Image.Image, root: Path, rel: str) -> str:
    """Save `img` under root/rel (creating folders) and return rel (a POSIX path relative to root)."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    img.save(path, format="PNG", **PNG_KW)
    return rel


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> int:
    """Write rows as JSON lines (UTF-8, no ASCII escaping); returns the number written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, sort_keys=False) + "\n")
            n += 1
    return n


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Read a JSONL file written by write_jsonl."""
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def file_hash(path: Path) -> str:
    """SHA-256 of a file's bytes (the content hash the store keys images by)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def letters(n: int) -> str:
    return "ABCDEFGH"[:n]
