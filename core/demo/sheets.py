"""Contact sheets of generated items (docs/screenshots/contact_<family>.png): images with question, options
and gold, so a person can check that the pictures answer the questions. `python -m core.demo.sheets OUTDIR`."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from core.demo import SMALL, generate_all
from core.demo.common import font, read_jsonl


def _text_block(lines: list[str], width: int, size: int = 15) -> Image.Image:
    f = font(size)
    wrapped: list[str] = []
    for line in lines:
        cur = ""
        for ch in line:
            if f.getlength(cur + ch) > width - 16:
                wrapped.append(cur)
                cur = ch
            else:
                cur += ch
        wrapped.append(cur)
    img = Image.new("RGB", (width, 10 + (size + 6) * len(wrapped)), "white")
    d = ImageDraw.Draw(img)
    for k, line in enumerate(wrapped):
        d.text((8, 5 + (size + 6) * k), line, font=f, fill="black")
    return img


def _stack(parts: list[Image.Image], horizontal: bool = False, gap: int = 6) -> Image.Image:
    if horizontal:
        w, h = sum(p.width for p in parts) + gap * (len(parts) - 1), max(p.height for p in parts)
    else:
        w, h = max(p.width for p in parts), sum(p.height for p in parts) + gap * (len(parts) - 1)
    out = Image.new("RGB", (w, h), "#dddddd")
    pos = 0
    for p in parts:
        out.paste(p, (pos, 0) if horizontal else (0, pos))
        pos += (p.width if horizontal else p.height) + gap
    return out


def _q(it: dict[str, Any], gloss: bool = False) -> list[str]:
    opts = "  ".join(f"{k}. {v}" for k, v in it["options"].items())
    lines = [f"[{it['item_id']}] {it['question']}", f"    {opts}    gold: {it['answer']}"]
    if gloss and "question_en" in it["meta"]:
        lines.append(f"    EN: {it['meta']['question_en']} -> {it['meta'].get('answer_en')}")
    return lines


def frameevidence_sheet(root: Path, items: list[dict[str, Any]]) -> Image.Image:
    groups: dict[str, list[dict[str, Any]]] = {}
    for it in items:
        if it["split"] == "test":
            groups.setdefault(it["group_id"], []).append(it)
    fq1 = [g for g in groups.values() if g[0]["kind"] == "FQ1"][:2]
    fq2 = [g for g in groups.values() if g[0]["kind"] == "FQ2"][:2]
    blocks = []
    for g in fq1:
        ims = [Image.open(root / p).convert("RGB") for p in g[0]["images"]]
        labelled = [_stack([_text_block([f"图{k + 1}"], im.width, 14), im], gap=0) for k, im in enumerate(ims)]
        row = _stack(labelled, horizontal=True)
        text = _text_block(sum((_q(it, True) for it in g), []), max(row.width, 1200))
        blocks.append(_stack([row, text], gap=0))
    for g in fq2:
        add = next(it for it in g if it["variant"] == "add")
        ims = [Image.open(root / p).convert("RGB") for p in add["images"]]
        labelled = [_stack([_text_block([f"I{pos}"], im.width, 14), im], gap=0)
                    for pos, im in zip(add["meta"]["original_positions"], ims, strict=False)]
        row = _stack(labelled, horizontal=True)
        lines = []
        for it in g:
            lines.append(f"{it['variant']}: images I{it['meta']['original_positions']}  gold {it['answer']} "
                         f"({it['meta']['answer_en']})  ordinal change: {it['meta']['ordinal_change']}")
        lines += _q(g[0], True)
        blocks.append(_stack([row, _text_block(lines, max(row.width, 1200))], gap=0))
    return _stack(blocks, gap=14)


def _single_image_sheet(root: Path, items: list[dict[str, Any]], n_groups: int, pick: Any, width: int) -> Image.Image:
    groups: dict[str, list[dict[str, Any]]] = {}
    for it in items:
        groups.setdefault(it["group_id"], []).append(it)
    cells = []
    for g in list(groups.values())[:n_groups]:
        im = Image.open(root / g[0]["images"][0]).convert("RGB")
        lines = sum((_q(it) for it in pick(g)), [])
        cells.append(_stack([im, _text_block(lines, max(im.width, width), 13)], gap=0))
    rows = [_stack(cells[i:i + 2], horizontal=True, gap=14) for i in range(0, len(cells), 2)]
    return _stack(rows, gap=14)


def stembind_sheet(root: Path, items: list[dict[str, Any]]) -> Image.Image:
    def pick(g):
        return [it for it in g if it["kind"] in ("F", "R")] + [it for it in g if it["kind"] == "P"][:2]
    return _single_image_sheet(root, items, 8, pick, 620)


def spur_sheet(root: Path, items: list[dict[str, Any]]) -> Image.Image:
    return _single_image_sheet(root, items, 2, lambda g: g, 800)


def write_sheets(out: Path, seed: int = 0) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        manifest = generate_all(root, seed=seed, sizes=SMALL)
        written = []
        for fam, fn in (("frameevidence", frameevidence_sheet), ("stembind", stembind_sheet), ("spur", spur_sheet)):
            path = root / manifest["benchmarks"][fam]["items_file"]
            sheet = fn(path.parent, read_jsonl(path))
            target = out / f"contact_{fam}.png"
            sheet.save(target, optimize=True)
            written.append(target)
    return written


if __name__ == "__main__":  # pragma: no cover
    for p in write_sheets(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots")):
        print(p)
