"""StemBind-like generator (paper 002 §3, App. A, E.5): shared stems with P / R / F probes and S1-S4 targets.

Seven of the nine operations are generated: RI-Pos, RI-Sty, RI-Attr, RI-Qty, RI-Rel (3x3 matrices) and
VP-Rot, VP-Fold (1xN sequences). A stem is one PNG: the matrix or sequence on top (last cell "?") and the
lettered F candidates below. Cells are glyph lists: {"shape", "color", "fill", "slot", "angle", "mirror"}
plus, for RI-Rel, a stroke set and, for VP-Fold, a hole set. The rule parameters live in `meta.rule` and every
cell (and candidate) in `meta.grid` / `meta.candidates`, so the F gold can be re-derived from the rule and the
P golds from the S1 scene graph. Distractors are the target cell with one rule parameter perturbed.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from core.demo.common import font, rng_for, save_png, text_center, write_jsonl
from core.families.stembind.vocab import RI_OPERATIONS

W, H = 448, 476
COLORS = {"red": "#d62728", "blue": "#1f77b4", "green": "#2ca02c", "orange": "#ff7f0e", "purple": "#9467bd",
          "black": "#222222"}
SHAPES = ("circle", "square", "triangle", "diamond", "hexagon")
FILLS = ("outline", "striped", "solid")
BORDER = ("top-left", "top-middle", "top-right", "middle-right", "bottom-right", "bottom-middle", "bottom-left",
          "middle-left")
BORDER_XY = ((0, 0), (1, 0), (2, 0), (2, 1), (2, 2), (1, 2), (0, 2), (0, 1))
STROKES = {"top edge": (0, 0, 1, 0), "bottom edge": (0, 1, 1, 1), "left edge": (0, 0, 0, 1),
           "right edge": (1, 0, 1, 1), "main diagonal": (0, 0, 1, 1), "anti-diagonal": (1, 0, 0, 1),
           "vertical midline": (0.5, 0, 0.5, 1), "horizontal midline": (0, 0.5, 1, 0.5)}
OPERATIONS = (*RI_OPERATIONS, "VP-Rot", "VP-Fold")  # the operations the demo draws (002 §3.1 names)
LOAD = {"RI-Pos": "mixed", "RI-Sty": "perception-heavy", "RI-Attr": "mixed", "RI-Qty": "perception-heavy",
        "RI-Rel": "rule-heavy", "VP-Rot": "mixed", "VP-Fold": "rule-heavy"}


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else ("es" if word.endswith("x") else "s"))


# ---------------------------------------------------------------- drawing


def _poly(shape: str, cx: float, cy: float, r: float, angle: float = 0.0) -> list[tuple[float, float]]:
    n, off = {"triangle": (3, -90), "square": (4, -45), "diamond": (4, -90), "hexagon": (6, 0)}[shape]
    return [(cx + r * math.cos(math.radians(off + angle + 360 * k / n)),
             cy + r * math.sin(math.radians(off + angle + 360 * k / n))) for k in range(n)]


def draw_glyph(img: Image.Image, cx: float, cy: float, r: float, g: dict[str, Any]) -> None:
    d = ImageDraw.Draw(img)
    col = COLORS[g.get("color", "black")]
    shape, fill = g.get("shape", "circle"), g.get("fill", "solid")
    if shape == "flag":
        _draw_flag(d, cx, cy, r, g.get("angle", 0), g.get("mirror", False), col)
        return
    box = [cx - r, cy - r, cx + r, cy + r]
    pts = None if shape == "circle" else _poly(shape, cx, cy, r * (1.15 if shape == "square" else 1.0))
    solid = col if fill == "solid" else "white"
    if pts is None:
        d.ellipse(box, fill=solid, outline=col, width=3)
    else:
        d.polygon(pts, fill=solid, outline=col, width=3)
    if fill == "striped":
        mask = Image.new("L", img.size, 0)
        md = ImageDraw.Draw(mask)
        if pts is None:
            md.ellipse(box, fill=255)
        else:
            md.polygon(pts, fill=255)
        hatch = Image.new("RGB", img.size, "white")
        hd = ImageDraw.Draw(hatch)
        for k in range(-int(2 * r), int(2 * r) + 1, 6):
            hd.line([cx - r + k, cy + r, cx + r + k, cy - r], fill=col, width=2)
        x0, y0, x1, y1 = (int(v) for v in (cx - r - 2, cy - r - 2, cx + r + 3, cy + r + 3))
        img.paste(hatch.crop((x0, y0, x1, y1)), (x0, y0), mask.crop((x0, y0, x1, y1)))
        d = ImageDraw.Draw(img)
        if pts is None:
            d.ellipse(box, outline=col, width=3)
        else:
            d.polygon(pts, outline=col, width=3)


def _draw_flag(d: ImageDraw.ImageDraw, cx: float, cy: float, r: float, angle: float, mirror: bool, col: str):
    # a chiral glyph: a pole pointing "up" with a pennant on its right (left when mirrored), then rotated
    s = -1 if mirror else 1
    raw = [(0, r), (0, -r)], [(0, -r), (s * 0.9 * r, -0.6 * r), (0, -0.2 * r)]
    a = math.radians(angle)

    def rot(p):
        return cx + p[0] * math.cos(a) - p[1] * math.sin(a), cy + p[0] * math.sin(a) + p[1] * math.cos(a)

    d.line([rot(p) for p in raw[0]], fill="#222222", width=4)
    d.polygon([rot(p) for p in raw[1]], fill=col, outline="#222222")
    d.ellipse([rot((0, r))[0] - 4, rot((0, r))[1] - 4, rot((0, r))[0] + 4, rot((0, r))[1] + 4], fill="#222222")


def draw_cell(img: Image.Image, box: tuple[int, int, int, int], cell: dict[str, Any] | None) -> None:
    d = ImageDraw.Draw(img)
    x0, y0, x1, y1 = box
    d.rectangle(box, fill="white", outline="#444444", width=2)
    if cell is None:
        text_center(d, ((x0 + x1) / 2, (y0 + y1) / 2), "?", font(34, "bold"), fill="#888888")
        return
    size = x1 - x0
    if "strokes" in cell:
        m = 0.18 * size
        for name in cell["strokes"]:
            a, b, c, e = STROKES[name]
            d.line([x0 + m + a * (size - 2 * m), y0 + m + b * (size - 2 * m), x0 + m + c * (size - 2 * m),
                    y0 + m + e * (size - 2 * m)], fill="#222222", width=4)
        return
    if "holes" in cell:
        m = 0.12 * size
        d.rectangle([x0 + m, y0 + m, x1 - m, y1 - m], fill="#fdf6e3", outline="#555555", width=2)
        step = (size - 2 * m) / 4
        for (hx, hy) in cell["holes"]:
            cx, cy = x0 + m + (hx + 0.5) * step, y0 + m + (hy + 0.5) * step
            d.ellipse([cx - step * 0.28, cy - step * 0.28, cx + step * 0.28, cy + step * 0.28], fill="#222222")
        return
    glyphs = cell["glyphs"]
    n = len(glyphs)
    if any("slot" in g for g in glyphs):
        step = size / 3
        for g in glyphs:
            sx, sy = BORDER_XY[g["slot"]] if isinstance(g["slot"], int) else g["slot"]
            draw_glyph(img, x0 + (sx + 0.5) * step, y0 + (sy + 0.5) * step, step * 0.32, g)
        return
    k = 1 if n == 1 else (2 if n <= 4 else 3)
    step = size / k
    r = step * (0.3 if n > 1 else 0.3 * 1.1)
    for i, g in enumerate(glyphs):
        draw_glyph(img, x0 + (i % k + 0.5) * step, y0 + (i // k + 0.5) * step, r, g)


def draw_fold_panel(img: Image.Image, box: tuple[int, int, int, int], rule: dict[str, Any], folded: bool) -> None:
    d = ImageDraw.Draw(img)
    x0, y0, x1, y1 = box
    size = x1 - x0
    d.rectangle(box, fill="white", outline="#444444", width=2)
    m = 0.12 * size
    px0, py0, px1, py1 = x0 + m, y0 + m, x1 - m, y1 - m
    step = (size - 2 * m) / 4
    if not folded:
        d.rectangle([px0, py0, px1, py1], fill="#fdf6e3", outline="#555555", width=2)
        if rule["axis"] == "vertical":
            for yy in range(int(py0), int(py1), 8):
                d.line([(px0 + px1) / 2, yy, (px0 + px1) / 2, yy + 4], fill="#c0392b", width=2)
            text_center(d, ((px0 + px1) / 2, (py0 + py1) / 2), "←" if rule["kept"] == "left" else "→",
                        font(22, "bold"), fill="#c0392b")
        else:
            for xx in range(int(px0), int(px1), 8):
                d.line([xx, (py0 + py1) / 2, xx + 4, (py0 + py1) / 2], fill="#c0392b", width=2)
            text_center(d, ((px0 + px1) / 2, (py0 + py1) / 2), "↑" if rule["kept"] == "top" else "↓",
                        font(22, "bold"), fill="#c0392b")
        return
    # folded: only the kept half, darker (two layers), with the punched holes
    if rule["axis"] == "vertical":
        hx0 = px0 if rule["kept"] == "left" else (px0 + px1) / 2
        d.rectangle([hx0, py0, hx0 + (px1 - px0) / 2, py1], fill="#e8d9b0", outline="#555555", width=2)
    else:
        hy0 = py0 if rule["kept"] == "top" else (py0 + py1) / 2
        d.rectangle([px0, hy0, px1, hy0 + (py1 - py0) / 2], fill="#e8d9b0", outline="#555555", width=2)
    for (hx, hy) in rule["punched"]:
        cx, cy = px0 + (hx + 0.5) * step, py0 + (hy + 0.5) * step
        d.ellipse([cx - step * 0.28, cy - step * 0.28, cx + step * 0.28, cy + step * 0.28], fill="#222222")


def render_stem(stem: dict[str, Any]) -> Image.Image:
    img = Image.new("RGB", (W, H), "#f4f4f4")
    d = ImageDraw.Draw(img)
    grid, cands, layout = stem["grid"], stem["candidates"], stem["layout"]
    if layout == "3x3":
        cs = 76
        ox = (W - 3 * cs) // 2
        for i, row in enumerate(grid):
            for j, cell in enumerate(row):
                draw_cell(img, (ox + j * cs, 10 + i * cs, ox + (j + 1) * cs, 10 + (i + 1) * cs), cell)
        top = 10 + 3 * cs + 14
    else:
        cells = grid[0]
        cs = 78
        ox = (W - len(cells) * cs) // 2
        for j, cell in enumerate(cells):
            box = (ox + j * cs, 40, ox + (j + 1) * cs, 40 + cs)
            if stem["operation"] == "VP-Fold" and cell is not None:
                draw_fold_panel(img, box, stem["rule"], folded=cell.get("stage") == "folded")
            else:
                draw_cell(img, box, cell)
            if j < len(cells) - 1:
                text_center(d, (ox + (j + 1) * cs, 40 + cs + 12), "→", font(14, "bold"), fill="#666666")
        text_center(d, (W / 2, 18), stem["caption"], font(14, "latin"))
        top = 40 + cs + 36
    d.line([10, top - 6, W - 10, top - 6], fill="#999999", width=1)
    n = len(cands)
    per_row = 4
    cw = 68
    for k, cell in enumerate(cands):
        i, j = divmod(k, per_row)
        ox = (W - per_row * (cw + 20)) // 2 + 10
        x0, y0 = ox + j * (cw + 20), top + 22 + i * (cw + 30)
        text_center(d, (x0 + cw / 2, y0 - 11), "ABCDEFGH"[k], font(16, "bold"))
        draw_cell(img, (x0, y0, x0 + cw, y0 + cw), cell)
    del n
    return img


# ---------------------------------------------------------------- stems, one builder per operation


def _desc(g: dict[str, Any]) -> str:
    return f"{g['color']} {g['fill']} {g['shape']}"


def stem_qty(rng) -> dict[str, Any]:
    d = rng.choice([1, 1, 2, -1])
    colors = rng.sample(list(COLORS)[:5], 3)
    shapes = rng.sample(SHAPES, 3)
    rows = []
    for i in range(3):
        a = rng.randint(1, 3) if d > 0 else rng.randint(3 + 2 * (d == -1), 6)
        a = max(a, 1 - 2 * d) if d < 0 else a
        rows.append([{"glyphs": [{"shape": shapes[i], "color": colors[i], "fill": "solid"}] * (a + j * d)}
                     for j in range(3)])
    target = rows[2][2]
    n_t = len(target["glyphs"])
    g = target["glyphs"][0]
    pert = [{"glyphs": [g] * (n_t + 1)}, {"glyphs": [g] * max(1, n_t - 1)},
            {"glyphs": [{**g, "shape": shapes[0]}] * n_t}, {"glyphs": [{**g, "color": colors[1]}] * n_t},
            {"glyphs": [g] * (n_t + 2)}, {"glyphs": [{**g, "shape": shapes[1]}] * (n_t + 1)},
            {"glyphs": [g] * max(1, n_t - 2)}]
    sign = "increases" if d > 0 else "decreases"
    return {"grid": rows, "target": target, "perturbations": pert,
            "rule": {"type": "count_progression", "step": d},
            "rule_text": f"In every row the number of shapes {sign} by {abs(d)} from left to right; shape and colour stay fixed within a row.",
            "rule_wrong": [f"In every row the number of shapes {sign} by {abs(d) + 1} from left to right.",
                           "The number of shapes is the same in every cell of a row.",
                           "In every column the shape changes while the count stays fixed.",
                           "The third cell of a row has the sum of the first two cells' counts."]}


def stem_pos(rng) -> dict[str, Any]:
    k = rng.choice([1, 2, 3, -1])
    shape, color = rng.choice(SHAPES), rng.choice(list(COLORS)[:5])
    g0 = {"shape": shape, "color": color, "fill": "solid"}
    rows = []
    for _i in range(3):
        s = rng.randrange(8)
        rows.append([{"glyphs": [{**g0, "slot": (s + j * k) % 8}]} for j in range(3)])
    t = rows[2][2]["glyphs"][0]["slot"]
    pert = [{"glyphs": [{**g0, "slot": (t + delta) % 8}]} for delta in (k, -k, 1, -1, 4, 2, -2) if delta % 8]
    direction = "clockwise" if k > 0 else "counter-clockwise"
    return {"grid": rows, "target": rows[2][2], "perturbations": pert,
            "rule": {"type": "border_walk", "step": k},
            "rule_text": f"In every row the {shape} moves {abs(k)} step(s) {direction} around the border of the cell from left to right.",
            "rule_wrong": [f"In every row the {shape} moves {abs(k) + 1} step(s) {direction} around the border.",
                           f"In every row the {shape} moves {abs(k)} step(s) {'counter-clockwise' if k > 0 else 'clockwise'} around the border.",
                           f"The {shape} stays in the same position along each row.",
                           f"The {shape} jumps to the mirror-image position in each next cell."]}


def stem_attr(rng) -> dict[str, Any]:
    shapes = rng.sample(SHAPES, 3)
    colors = rng.sample(list(COLORS)[:5], 3)
    bind = dict(zip(shapes, colors, strict=False))
    rows = []
    for i in range(3):
        order = shapes[i:] + shapes[:i]
        if rng.random() < 0.5:
            order = [order[0], order[2], order[1]]
        rows.append([{"glyphs": [{"shape": s, "color": bind[s], "fill": "solid"}]} for s in order])
    missing = rows[2][2]["glyphs"][0]
    others = [s for s in shapes if s != missing["shape"]]
    pert = [{"glyphs": [{**missing, "color": bind[others[0]]}]}, {"glyphs": [{**missing, "color": bind[others[1]]}]},
            {"glyphs": [{**missing, "shape": others[0]}]}, {"glyphs": [{"shape": others[1], "color": bind[others[1]], "fill": "solid"}]},
            {"glyphs": [{**missing, "fill": "outline"}]}, {"glyphs": [{**missing, "shape": others[1], "color": bind[others[0]]}]},
            {"glyphs": [{**missing}, {**missing}]}]
    return {"grid": rows, "target": rows[2][2], "perturbations": pert,
            "rule": {"type": "shape_colour_binding", "binding": bind},
            "rule_text": "Each row contains each of the three shapes once, and every shape always keeps its own colour.",
            "rule_wrong": ["Each row contains the three colours once, but colours move to a new shape in every row.",
                           "Each column repeats the same shape with a new colour.",
                           "The third cell of each row overlays the first two cells.",
                           "The shapes rotate by 90 degrees along each row."]}


def stem_sty(rng) -> dict[str, Any]:
    order = list(FILLS)
    if rng.random() < 0.5:
        order = order[::-1]
    shapes = rng.sample(SHAPES, 3)
    color = rng.choice(list(COLORS)[:5])
    rows = [[{"glyphs": [{"shape": shapes[i], "color": color, "fill": order[(i + j) % 3]}]} for j in range(3)]
            for i in range(3)]
    t = rows[2][2]["glyphs"][0]
    wrong_fills = [f for f in FILLS if f != t["fill"]]
    pert = [{"glyphs": [{**t, "fill": wrong_fills[0]}]}, {"glyphs": [{**t, "fill": wrong_fills[1]}]},
            {"glyphs": [{**t, "shape": shapes[0]}]}, {"glyphs": [{**t, "shape": shapes[1], "fill": wrong_fills[0]}]},
            {"glyphs": [{**t, "color": "black"}]}, {"glyphs": [{**t, "shape": shapes[1]}]},
            {"glyphs": [{**t, "fill": wrong_fills[1], "shape": shapes[0]}]}]
    seq = " -> ".join(order)
    return {"grid": rows, "target": rows[2][2], "perturbations": pert,
            "rule": {"type": "fill_cycle", "order": order},
            "rule_text": f"Along every row the fill style continues the cycle {seq}; each row starts one step later; the shape is fixed within a row.",
            "rule_wrong": [f"Along every row the fill style follows {' -> '.join(order[::-1])}.",
                           "Every cell of a row has the same fill style.",
                           "The fill style is fixed within each column.",
                           "The shape changes along each row while the fill stays fixed."]}


def _op(name: str, a: set[str], b: set[str]) -> set[str]:
    return a | b if name == "union" else (a ^ b if name == "xor" else a & b)


def stem_rel(rng) -> dict[str, Any]:
    op = rng.choice(["union", "xor", "intersection"])
    names = list(STROKES)
    rows: list[Any] = []
    while len(rows) < 3:
        a = set(rng.sample(names, rng.randint(2, 4)))
        b = set(rng.sample(names, rng.randint(2, 4)))
        outs = {o: frozenset(_op(o, a, b)) for o in ("union", "xor", "intersection")}
        if not outs[op] or len(set(outs.values())) < 3:
            continue
        rows.append([{"strokes": sorted(a)}, {"strokes": sorted(b)}, {"strokes": sorted(outs[op])}])
    a, b = set(rows[2][0]["strokes"]), set(rows[2][1]["strokes"])
    t = set(rows[2][2]["strokes"])
    pert = [{"strokes": sorted(_op(o, a, b))} for o in ("union", "xor", "intersection") if o != op]
    extra = [s for s in names if s not in t]
    pert += [{"strokes": sorted(t | {extra[0]})}, {"strokes": sorted(t - {sorted(t)[0]})} if len(t) > 1 else {"strokes": sorted(t | {extra[1]})},
             {"strokes": sorted(a)}, {"strokes": sorted(b)}, {"strokes": sorted(t | set(extra[1:3]))}]
    text = {"union": "overlays (unites) the lines of the first two cells",
            "xor": "keeps only the lines that appear in exactly one of the first two cells",
            "intersection": "keeps only the lines common to the first two cells"}
    return {"grid": rows, "target": rows[2][2], "perturbations": pert,
            "rule": {"type": "set_operation", "op": op},
            "rule_text": f"In every row the third cell {text[op]}.",
            "rule_wrong": [f"In every row the third cell {text[o]}." for o in text if o != op]
            + ["In every row the third cell repeats the first cell rotated by 90 degrees.",
               "In every row the number of lines increases by one."]}


def stem_rot(rng) -> dict[str, Any]:
    step = rng.choice([45, 90, -45, -90, 135])
    a0 = rng.choice(range(0, 360, 45))
    color = rng.choice(list(COLORS)[:5])
    mirror = rng.random() < 0.3
    cells = [{"glyphs": [{"shape": "flag", "color": color, "angle": (a0 + k * step) % 360, "mirror": mirror}]}
             for k in range(4)]
    t_angle = (a0 + 4 * step) % 360
    g = {"shape": "flag", "color": color, "angle": t_angle, "mirror": mirror}
    pert = [{"glyphs": [{**g, "mirror": not mirror}]}, {"glyphs": [{**g, "angle": (a0 + 3 * step) % 360}]},
            {"glyphs": [{**g, "angle": (a0 + 5 * step) % 360}]}, {"glyphs": [{**g, "angle": (t_angle + 180) % 360}]},
            {"glyphs": [{**g, "angle": (a0 - 4 * step) % 360}]}, {"glyphs": [{**g, "angle": (a0 + 5 * step) % 360, "mirror": not mirror}]},
            {"glyphs": [{**g, "angle": (t_angle + 90) % 360}]}]
    direction = "clockwise" if step > 0 else "counter-clockwise"
    return {"grid": [cells + [None]], "target": {"glyphs": [g]}, "perturbations": pert,
            "rule": {"type": "rotation", "step": step, "start": a0},
            "caption": "Which panel continues the sequence?",
            "rule_text": f"Each panel rotates the flag by {abs(step)} degrees {direction}; the flag is never mirrored.",
            "rule_wrong": [f"Each panel rotates the flag by {abs(step)} degrees {'counter-clockwise' if step > 0 else 'clockwise'}.",
                           f"Each panel rotates the flag by {abs(step) + 45} degrees {direction}.",
                           "Each panel mirrors the flag left-to-right.",
                           "The flag alternates between two orientations."]}


def stem_fold(rng) -> dict[str, Any]:
    axis = rng.choice(["vertical", "horizontal"])
    kept = rng.choice(["left", "right"]) if axis == "vertical" else rng.choice(["top", "bottom"])
    half = {"left": [(x, y) for x in (0, 1) for y in range(4)], "right": [(x, y) for x in (2, 3) for y in range(4)],
            "top": [(x, y) for x in range(4) for y in (0, 1)], "bottom": [(x, y) for x in range(4) for y in (2, 3)]}[kept]
    punched = sorted(rng.sample(half, rng.randint(1, 3)))

    def mirror(h, ax):
        return (3 - h[0], h[1]) if ax == "vertical" else (h[0], 3 - h[1])

    other = "horizontal" if axis == "vertical" else "vertical"
    full = sorted(set(punched) | {mirror(h, axis) for h in punched})
    wrong_ax = sorted(set(punched) | {mirror(h, other) for h in punched})
    shifted = sorted(set(punched) | {((mirror(h, axis)[0] + (1 if axis == "horizontal" else 0)) % 4,
                                      (mirror(h, axis)[1] + (1 if axis == "vertical" else 0)) % 4) for h in punched})
    moved = sorted({mirror(h, axis) for h in punched})
    free = [(x, y) for x in range(4) for y in range(4) if (x, y) not in full]
    plus_one = sorted(set(full) | {free[0]})
    pert = [{"holes": punched}, {"holes": wrong_ax}, {"holes": shifted}, {"holes": moved}, {"holes": plus_one},
            {"holes": sorted(set(full) - {full[0]})} if len(full) > 1 else {"holes": [free[1]]},
            {"holes": sorted({mirror(h, other) for h in punched})}]
    rule = {"type": "fold_punch", "axis": axis, "kept": kept, "punched": [list(h) for h in punched]}
    return {"grid": [[{"stage": "flat"}, {"stage": "folded"}, None]], "target": {"holes": full},
            "perturbations": pert, "rule": rule,
            "caption": "Fold along the red line, punch, unfold: which sheet results?",
            "rule_text": f"Unfolding reflects every punched hole across the {axis} fold line, so each hole appears twice, mirror-symmetric about the fold.",
            "rule_wrong": ["Unfolding keeps the holes only where they were punched.",
                           f"Unfolding reflects every punched hole across the {other} midline.",
                           "Unfolding moves every hole to the other half without keeping the original.",
                           "Unfolding doubles the holes next to each original hole."]}


BUILDERS = {"RI-Qty": stem_qty, "RI-Pos": stem_pos, "RI-Attr": stem_attr, "RI-Sty": stem_sty, "RI-Rel": stem_rel,
            "VP-Rot": stem_rot, "VP-Fold": stem_fold}


def canon(cell: dict[str, Any]) -> str:
    """A canonical key of a cell (to keep candidates distinct)."""
    if "strokes" in cell:
        return "S:" + ",".join(sorted(cell["strokes"]))
    if "holes" in cell:
        return "H:" + ",".join(f"{h[0]}{h[1]}" for h in sorted(tuple(h) for h in cell["holes"]))
    return "G:" + "|".join(sorted(
        f"{g.get('shape')}/{g.get('color')}/{g.get('fill')}/{g.get('slot')}/{g.get('angle')}/{g.get('mirror')}"
        for g in cell["glyphs"]))


# ---------------------------------------------------------------- text of S1 .. S4 and probes


def _a(word: str) -> str:
    return ("an " if word[:1] in "aeiou" else "a ") + word


def describe_cell(cell: dict[str, Any] | None, op: str) -> str:
    if cell is None:
        return "?"
    if "strokes" in cell:
        return "lines: " + ", ".join(cell["strokes"])
    if "holes" in cell:
        return "holes at " + ", ".join(f"(column {h[0] + 1}, row {h[1] + 1})" for h in cell["holes"])
    if "stage" in cell:
        return {"flat": "the flat sheet with the fold line", "folded": "the folded sheet with punched holes"}[cell["stage"]]
    gs = cell["glyphs"]
    g = gs[0]
    if op == "RI-Pos":
        return f"{_a(g['color'])} {g['shape']} at the {BORDER[g['slot']]}"
    if op == "VP-Rot":
        return f"a {'mirrored ' if g['mirror'] else ''}flag pointing {g['angle']} degrees"
    if op == "RI-Qty":
        return f"{len(gs)} {g['color']} {g['shape']}" + ("s" if len(gs) != 1 else "")
    return f"{_a(g['color'])} {g['fill']} {g['shape']}"


def stages_for(stem: dict[str, Any], gold: str) -> dict[str, str]:
    op, grid = stem["operation"], stem["grid"]
    if stem["layout"] == "3x3":
        s1 = " ".join(f"Row {i + 1}: " + "; ".join(describe_cell(c, op) for c in row) + "." for i, row in enumerate(grid))
        s3 = ("The missing cell is row 3, column 3. Row 3 shows " + describe_cell(grid[2][0], op) + " then "
              + describe_cell(grid[2][1], op) + ", so the row-3 instance of the rule is needed there.")
    else:
        s1 = "Panels: " + "; ".join(f"{k + 1}: {describe_cell(c, op)}" for k, c in enumerate(grid[0])) + "."
        if op == "VP-Fold":
            r = stem["rule"]
            s1 += (f" The sheet is folded along the {r['axis']} midline keeping the {r['kept']} half; holes punched at "
                   + ", ".join(f"(column {h[0] + 1}, row {h[1] + 1})" for h in r["punched"]) + ".")
        s3 = f"The missing panel is panel {len(grid[0])}; it must be the next instance after panel {len(grid[0]) - 1}."
    s4 = f"The missing cell shows {describe_cell(stem['target'], op)}; only candidate {gold} matches, so the answer is {gold}."
    return {"S1": s1, "S2": stem["rule_text"], "S3": s3, "S4": s4}


def p_probes(rng, stem: dict[str, Any], sid: str, n: int) -> list[dict[str, Any]]:
    """Perception probes from the S1 scene graph: each asks one attribute of one visible cell."""
    op, grid = stem["operation"], stem["grid"]
    cells = [(i, j, c) for i, row in enumerate(grid) for j, c in enumerate(row) if c is not None]
    pool: list[tuple[str, Any, list[Any], dict[str, Any]]] = []
    for i, j, c in cells:
        where = f"row {i + 1}, column {j + 1}" if stem["layout"] == "3x3" else f"panel {j + 1}"
        loc = {"row": i, "col": j}
        if "glyphs" in c:
            g = c["glyphs"][0]
            if op == "RI-Qty":
                pool.append((f"How many shapes are in the cell at {where}?", len(c["glyphs"]),
                             list(range(1, 10)), {**loc, "attribute": "count"}))
            if op == "VP-Rot":
                pool.append((f"In which direction does the flag in {where} point (degrees clockwise from up)?",
                             g["angle"], list(range(0, 360, 45)), {**loc, "attribute": "angle"}))
                continue
            pool.append((f"What shape is in the cell at {where}?", g["shape"], list(SHAPES), {**loc, "attribute": "shape"}))
            pool.append((f"What colour is the shape in the cell at {where}?", g["color"], list(COLORS)[:5],
                         {**loc, "attribute": "color"}))
            if op in ("RI-Sty",):
                pool.append((f"What is the fill style of the shape at {where}?", g["fill"], list(FILLS),
                             {**loc, "attribute": "fill"}))
            if op == "RI-Pos":
                pool.append((f"Where inside the cell at {where} is the shape?", BORDER[g["slot"]], list(BORDER),
                             {**loc, "attribute": "slot"}))
        elif "strokes" in c:
            pool.append((f"How many line segments are drawn in the cell at {where}?", len(c["strokes"]),
                         list(range(1, 9)), {**loc, "attribute": "n_strokes"}))
            pool.append((f"Does the cell at {where} contain the main diagonal (top-left to bottom-right)?",
                         "yes" if "main diagonal" in c["strokes"] else "no", ["yes", "no"],
                         {**loc, "attribute": "has_main_diagonal"}))
            pool.append((f"Does the cell at {where} contain the top edge?",
                         "yes" if "top edge" in c["strokes"] else "no", ["yes", "no"], {**loc, "attribute": "has_top_edge"}))
    if op == "VP-Fold":
        r = stem["rule"]
        pool += [("How many holes are punched in the folded sheet?", len(r["punched"]), [1, 2, 3, 4, 5],
                  {"attribute": "n_punched"}),
                 ("Along which line is the sheet folded?", f"{r['axis']} midline", ["vertical midline", "horizontal midline"],
                  {"attribute": "axis"}),
                 ("Which half of the sheet remains visible after folding?", r["kept"], ["left", "right", "top", "bottom"],
                  {"attribute": "kept"})]
        for h in r["punched"][:2]:
            pool.append((f"Is there a punched hole at column {h[0] + 1}, row {h[1] + 1} of the folded sheet's grid?", "yes",
                         ["yes", "no"], {"attribute": "hole_at", "hole": list(h)}))
    if op != "RI-Rel" and op != "VP-Fold":
        pool.append(("How many candidate answers are shown below the line?", len(stem["candidates"]),
                     [4, 5, 6, 7, 8], {"attribute": "n_candidates"}))
    rng.shuffle(pool)
    out = []
    for k, (q, gold, domain, probe) in enumerate(pool[:n]):
        wrong = [v for v in domain if v != gold]
        opts = [gold] + rng.sample(wrong, min(3, len(wrong)))
        rng.shuffle(opts)
        letters = "ABCD"[: len(opts)]
        options = {L: str(v) for L, v in zip(letters, opts, strict=False)}
        out.append({"question": q, "options": options, "answer": letters[opts.index(gold)], "probe": probe,
                    "probe_index": k + 1})
    return out


SPLITS = (("test", 120),)


def build_stem(rng, op: str) -> dict[str, Any]:
    while True:
        st = BUILDERS[op](rng)
        st["operation"] = op
        st["layout"] = "3x3" if op.startswith("RI") else "1xN"
        if st["layout"] == "3x3":
            st["grid"][2][2] = None  # the missing cell; the target stays in st["target"]
        st.setdefault("caption", "")
        key_t = canon(st["target"])
        distinct: dict[str, dict[str, Any]] = {}
        for c in st["perturbations"]:
            k = canon(c)
            if k != key_t and k not in distinct:
                distinct[k] = c
        n_cand = rng.choice([4, 6, 8])
        if len(distinct) + 1 < n_cand:
            n_cand = 4
        if len(distinct) + 1 < n_cand:
            continue
        cands = [st["target"]] + list(distinct.values())[: n_cand - 1]
        rng.shuffle(cands)
        st["candidates"] = cands
        st["gold_index"] = next(i for i, c in enumerate(cands) if canon(c) == key_t)
        return st


def generate(root: Path, seed: int = 0, n_stems: int = 120) -> dict[str, Any]:
    """Write stembind.jsonl and img/ under root; returns {"items_file", "n_items", "n_groups", "items"}."""
    root.mkdir(parents=True, exist_ok=True)
    items: list[dict[str, Any]] = []
    for s in range(n_stems):
        op = OPERATIONS[s % len(OPERATIONS)]
        sid = f"sb-{s + 1:03d}"
        rng = rng_for("stembind", seed, sid)
        st = build_stem(rng, op)
        img = save_png(render_stem(st), root, f"img/{sid}.png")
        fam = op.split("-")[0]
        load = LOAD[op] if rng.random() < 0.75 else rng.choice(["perception-heavy", "rule-heavy", "mixed"])
        base_meta = {"operation": op, "family": fam, "perception_load": load, "synthetic": True,
                     "layout": st["layout"], "rule": st["rule"], "grid": st["grid"], "candidates": st["candidates"]}
        for p in p_probes(rng, st, sid, rng.choice([6, 6, 7, 7, 8])):
            items.append({"benchmark": "stembind", "item_id": f"{sid}-P{p['probe_index']}", "group_id": sid,
                          "split": "test", "kind": "P", "variant": p["probe"]["attribute"], "images": [img],
                          "question": "Look at the puzzle image. " + p["question"] + " Answer with <ANSWER>X</ANSWER>.",
                          "options": p["options"], "answer": p["answer"],
                          "meta": {**{k: base_meta[k] for k in ("operation", "family", "perception_load", "synthetic")},
                                   "probe": p["probe"], "grid": st["grid"], "rule": st["rule"],
                                   "candidates": st["candidates"]}})
        r_opts = [st["rule_text"]] + rng.sample(st["rule_wrong"], 3)
        rng.shuffle(r_opts)
        items.append({"benchmark": "stembind", "item_id": f"{sid}-R", "group_id": sid, "split": "test", "kind": "R",
                      "variant": "rule", "images": [img],
                      "question": "Which rule governs the puzzle in the image? Answer with <ANSWER>X</ANSWER>.",
                      "options": dict(zip("ABCD", r_opts, strict=False)), "answer": "ABCD"[r_opts.index(st["rule_text"])],
                      "meta": {**base_meta}})
        gold = "ABCDEFGH"[st["gold_index"]]
        n = len(st["candidates"])
        q = ("Which candidate completes the matrix (replaces the '?')?" if st["layout"] == "3x3"
             else "Which candidate is the missing panel '?'?")
        items.append({"benchmark": "stembind", "item_id": f"{sid}-F", "group_id": sid, "split": "test", "kind": "F",
                      "variant": "full", "images": [img],
                      "question": q + " Think step by step, then give the final choice as <ANSWER>X</ANSWER>.",
                      "options": {L: f"candidate {L}" for L in "ABCDEFGH"[:n]}, "answer": gold,
                      "stages": stages_for(st, gold), "meta": {**base_meta, "n_candidates": n}})
    path = root / "stembind.jsonl"
    write_jsonl(path, items)
    return {"items_file": path.name, "n_items": len(items), "n_groups": n_stems, "items": items}
