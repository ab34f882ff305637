"""FrameEvidence-like generator (paper 000 §3-4, App. A): rendered multi-view scenes, FQ1 and FQ2 triplets.

World convention: x east, y north, headings in degrees clockwise from north (0 = north, 90 = east).
Every object has a position and a facing heading; every view is a pinhole camera on the floor plane with a
cardinal heading. A relation of a target T to a relatum R in a frame with forward heading h is the angle of
T - R measured clockwise from h: 0 front, 90 right, 180 back, -90 left. Layouts put T - R within 12 degrees
of an axis (axial relations) or of a diagonal (quadrant relations), so every frame reads unambiguously.

FQ1: 2-4 views each showing the whole layout; the same T / R asked in the camera frame (a named view's
heading), an object frame (a named anchor's front, or its back under the backward convention) and the scene
frame (window / main door / north); at least two of the three golds differ.

FQ2: a chain R - B1 - ... - T where each view shows one adjacent pair only (tight views), so every view is
required (subset-minimal) and bridge objects link the views. Deletion drops one required view (gold =
insufficient information); addition restores the set and inserts one hard view showing a chain object and a
distractor, which preserves the answer. All geometry is stored in `meta` so golds can be re-derived.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from core.demo.common import font, rng_for, save_png, text_center, write_jsonl
from core.families.frameevidence.vocab import FQ1, FQ1_VARIANTS, FQ2

W, H = 448, 336
HORIZON = 84
FOCAL = 235.0

AXIAL = {0: ("前", "front"), 90: ("右", "right"), 180: ("后", "back"), -90: ("左", "left")}
QUADRANT = {45: ("右前", "front-right"), 135: ("右后", "back-right"), -135: ("左后", "back-left"),
            -45: ("左前", "front-left")}
INSUFFICIENT = ("信息不足，无法确定", "insufficient information, cannot be determined")
HEADING_ZH = {0: "北", 90: "东", 180: "南", 270: "西"}

# name, English, shape, colour, height
INVENTORY: dict[str, list[tuple[str, str, str, str, float]]] = {
    "tabletop": [
        ("杯子", "cup", "cyl", "#d9534f", 0.32), ("书本", "book", "box", "#3b6fb6", 0.3),
        ("台灯", "desk lamp", "cone", "#e0a800", 0.55), ("花瓶", "vase", "cyl", "#8e44ad", 0.5),
        ("闹钟", "alarm clock", "ball", "#16a085", 0.3), ("手机", "phone", "box", "#34495e", 0.3),
        ("苹果", "apple", "ball", "#c0392b", 0.32), ("眼镜盒", "glasses case", "box", "#7f5a3c", 0.3),
        ("笔筒", "pen holder", "cyl", "#2e86c1", 0.36), ("相框", "photo frame", "box", "#b9770e", 0.42),
    ],
    "indoor": [
        ("椅子", "chair", "box", "#a0522d", 0.5), ("沙发", "sofa", "box", "#5d6d7e", 0.42),
        ("书架", "bookshelf", "box", "#6e2c00", 0.75), ("电视", "TV", "box", "#1b2631", 0.5),
        ("盆栽", "potted plant", "cone", "#1e8449", 0.6), ("冰箱", "fridge", "box", "#aab7b8", 0.8),
        ("钢琴", "piano", "box", "#17202a", 0.5), ("落地灯", "floor lamp", "cone", "#d4ac0d", 0.8),
        ("鱼缸", "fish tank", "cyl", "#3498db", 0.45), ("衣柜", "wardrobe", "box", "#935116", 0.85),
    ],
    "outdoor": [
        ("长椅", "bench", "box", "#784212", 0.35), ("路灯", "street lamp", "cyl", "#566573", 0.9),
        ("邮筒", "mailbox", "cyl", "#27ae60", 0.5), ("雕像", "statue", "cone", "#7b7d7d", 0.8),
        ("垃圾桶", "trash bin", "cyl", "#2874a6", 0.42), ("售货亭", "kiosk", "box", "#ca6f1e", 0.75),
        ("自行车", "bicycle", "box", "#c0392b", 0.4), ("大树", "tree", "cone", "#196f3d", 1.0),
        ("喷泉", "fountain", "ball", "#5dade2", 0.45), ("指示牌", "signpost", "box", "#f1c40f", 0.65),
    ],
}
LANDMARK = {  # scene type -> (Chinese name, English, how the question names the scene axis)
    "tabletop": ("窗户", "window", "以窗户所在的方向为前方", "taking the window side as front"),
    "indoor": ("大门", "main door", "以房间大门所在的方向为前方", "taking the main door side as front"),
    "outdoor": ("北", "north", "以正北方向为前方", "taking north as front"),
}
PALETTE = {
    "tabletop": {"sky": "#efe6d8", "floor": "#c8a77e", "grid": "#b08d62"},
    "indoor": {"sky": "#dde3ea", "floor": "#b9b2a6", "grid": "#a39b8e"},
    "outdoor": {"sky": "#bfe0f5", "floor": "#a9cf8f", "grid": "#8fb874"},
}


# ---------------------------------------------------------------- geometry


def unit(heading: float) -> tuple[float, float]:
    r = math.radians(heading)
    return math.sin(r), math.cos(r)


def bearing(dx: float, dy: float) -> float:
    return math.degrees(math.atan2(dx, dy))


def norm180(a: float) -> float:
    a = (a + 180.0) % 360.0 - 180.0
    return 180.0 if a == -180.0 else a


def relation_in_frame(target: tuple[float, float], relatum: tuple[float, float], frame_heading: float,
                      relation: str) -> tuple[str, str]:
    """(Chinese, English) direction of target from relatum in a frame whose front is frame_heading."""
    a = norm180(bearing(target[0] - relatum[0], target[1] - relatum[1]) - frame_heading)
    table = AXIAL if relation == "axial" else QUADRANT
    best = min(table, key=lambda c: abs(norm180(a - c)))
    return table[best]


def _project(cam: tuple[float, float], heading: float, height: float, p: tuple[float, float]):
    f = unit(heading)
    r = (f[1], -f[0])  # right of heading h = heading h + 90
    dx, dy = p[0] - cam[0], p[1] - cam[1]
    z = dx * f[0] + dy * f[1]
    x = dx * r[0] + dy * r[1]
    if z <= 0.15:
        return None
    return W / 2 + FOCAL * x / z, HORIZON + FOCAL * height / z, z


# ---------------------------------------------------------------- rendering


def render_view(scene: str, objects: list[dict[str, Any]], view: dict[str, Any], landmark_heading: int) -> Image.Image:
    """Draw one camera view: sky / wall, floor grid, landmark marker, compass, objects with facing arrows."""
    pal = PALETTE[scene]
    img = Image.new("RGB", (W, H), pal["floor"])
    d = ImageDraw.Draw(img)
    d.rectangle([0, 0, W, HORIZON], fill=pal["sky"])
    cam, h, ch = tuple(view["cam"]), view["heading"], view["height"]
    # floor grid (world-aligned lines every 0.5): ground lines stay straight in perspective, so each line is
    # clipped to the part in front of the camera (depth >= 0.4) and drawn between its projected end points
    f = unit(h)
    for k in range(-8, 9):
        for vertical in (True, False):
            a, b = ((k * 0.5, -4.0), (k * 0.5, 4.0)) if vertical else ((-4.0, k * 0.5), (4.0, k * 0.5))
            za = (a[0] - cam[0]) * f[0] + (a[1] - cam[1]) * f[1]
            zb = (b[0] - cam[0]) * f[0] + (b[1] - cam[1]) * f[1]
            if za < 0.4 and zb < 0.4:
                continue
            if za < 0.4 or zb < 0.4:
                t = (0.4 - za) / (zb - za)
                c = (a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]))
                a, b = (c, b) if za < 0.4 else (a, c)
            pa, pb = _project(cam, h, ch, a), _project(cam, h, ch, b)
            if pa and pb:
                d.line([pa[0], pa[1], pb[0], pb[1]], fill=pal["grid"], width=1)
    d.line([0, HORIZON, W, HORIZON], fill="#555555", width=2)
    _draw_landmark(d, scene, h, landmark_heading)
    _draw_compass(d, h)
    small, label_font = font(13), font(15)
    drawn = []
    for ob in objects:
        if ob["name"] not in view["visible"]:
            continue
        q = _project(cam, h, ch, (ob["x"], ob["y"]))
        if q is None:
            continue
        drawn.append((q[2], ob, q))
    labels: list[tuple[float, float, str]] = []
    for z, ob, q in sorted(drawn, key=lambda t: -t[0]):
        sx, sy, _ = q
        s = FOCAL / z
        w, hh = 0.34 * s, ob["h"] * s
        # facing arrow on the floor
        fx, fy = unit(ob["facing"])
        tip = _project(cam, h, ch, (ob["x"] + 0.42 * fx, ob["y"] + 0.42 * fy))
        if tip is not None:
            _arrow(d, (sx, sy), (tip[0], tip[1]), "#e0201b", max(2, int(s / 45)))
        col = ob["color"]
        if ob["shape"] == "box":
            d.rectangle([sx - w / 2, sy - hh, sx + w / 2, sy], fill=col, outline="black")
        elif ob["shape"] == "cyl":
            e = w * 0.25
            d.rectangle([sx - w / 2, sy - hh, sx + w / 2, sy], fill=col, outline=None)
            d.ellipse([sx - w / 2, sy - e, sx + w / 2, sy + e], fill=col, outline="black")
            d.ellipse([sx - w / 2, sy - hh - e, sx + w / 2, sy - hh + e], fill="#ffffff", outline="black")
            d.line([sx - w / 2, sy - hh, sx - w / 2, sy], fill="black")
            d.line([sx + w / 2, sy - hh, sx + w / 2, sy], fill="black")
        elif ob["shape"] == "cone":
            d.polygon([(sx - w / 2, sy), (sx + w / 2, sy), (sx, sy - hh)], fill=col, outline="black")
        else:
            r = min(w, hh) / 2 + 2
            d.ellipse([sx - r, sy - 2 * r, sx + r, sy], fill=col, outline="black")
        labels.append((sx, sy - hh, ob["name"]))
    placed: list[tuple[float, float, float, float]] = []
    for sx, top, name in sorted(labels, key=lambda t: t[1]):
        ly = top - 12
        for _ in range(6):
            box = (sx - 22, ly - 10, sx + 22, ly + 10)
            if not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in placed):
                break
            ly -= 21
        placed.append((sx - 22, ly - 10, sx + 22, ly + 10))
        if ly < top - 14:
            d.line([sx, ly + 9, sx, top], fill="#333333", width=1)
        text_center(d, (sx, ly), name, label_font, fill="black", bg="#ffffff")
    del small
    return img


def _arrow(d: ImageDraw.ImageDraw, a: tuple[float, float], b: tuple[float, float], col: str, width: int) -> None:
    d.line([a, b], fill=col, width=width)
    ang = math.atan2(b[1] - a[1], b[0] - a[0])
    L = 8 + width
    for s in (2.6, -2.6):
        d.line([b, (b[0] - L * math.cos(ang + s / 6), b[1] - L * math.sin(ang + s / 6))], fill=col, width=width)
    d.polygon([b, (b[0] - L * math.cos(ang + 0.45), b[1] - L * math.sin(ang + 0.45)),
               (b[0] - L * math.cos(ang - 0.45), b[1] - L * math.sin(ang - 0.45))], fill=col)


def _draw_landmark(d: ImageDraw.ImageDraw, scene: str, heading: int, lm_heading: int) -> None:
    name = LANDMARK[scene][0]
    rel = int(norm180(lm_heading - heading))
    f = font(16)
    if rel == 0:
        if scene == "tabletop":
            d.rectangle([W / 2 - 60, 22, W / 2 + 60, HORIZON - 14], fill="#aed6f1", outline="#5d6d7e", width=4)
            d.line([W / 2, 22, W / 2, HORIZON - 14], fill="#5d6d7e", width=3)
            text_center(d, (W / 2, 14), "窗户", f, bg="#ffffff")
        elif scene == "indoor":
            d.rectangle([W / 2 - 26, 18, W / 2 + 26, HORIZON], fill="#8b5a2b", outline="black", width=2)
            d.ellipse([W / 2 + 12, 60, W / 2 + 19, 67], fill="#f4d03f")
            text_center(d, (W / 2, 10), "大门", f, bg="#ffffff")
        else:
            text_center(d, (W / 2, 28), "▲ 北", font(18), bg="#ffffff")
    elif rel == 90:
        text_center(d, (W - 58, HORIZON - 16), f"{name} →", f, bg="#ffffff")
    elif rel == -90:
        text_center(d, (58, HORIZON - 16), f"← {name}", f, bg="#ffffff")
    else:
        text_center(d, (W / 2, H - 14), f"{name}在相机身后", font(14), bg="#ffffff")


def _draw_compass(d: ImageDraw.ImageDraw, heading: int) -> None:
    cx, cy, r = W - 26, 26, 18
    d.ellipse([cx - r, cy - r, cx + r, cy + r], fill="#ffffff", outline="#333333", width=2)
    a = math.radians(-heading)  # screen direction of north: up = camera forward
    tx, ty = cx + (r - 4) * math.sin(a), cy - (r - 4) * math.cos(a)
    d.line([cx, cy, tx, ty], fill="#c0392b", width=3)
    lx, ly = cx + (r + 9) * math.sin(a), cy - (r + 9) * math.cos(a)
    lx, ly = min(max(lx, 8), W - 8), min(max(ly, 8), H - 8)
    text_center(d, (lx, ly), "北", font(12), fill="#c0392b", bg="#ffffff", pad=1)


# ---------------------------------------------------------------- layouts


def _place_free(rng, taken: list[tuple[float, float]], lim: float = 1.15, gap: float = 0.62):
    for _ in range(200):
        p = (rng.uniform(-lim, lim), rng.uniform(-lim, lim))
        if all(math.dist(p, q) >= gap for q in taken):
            return p
    return None


def _make_objects(rng, scene: str, n: int) -> list[dict[str, Any]]:
    chosen = rng.sample(INVENTORY[scene], n)
    return [{"name": c[0], "name_en": c[1], "shape": c[2], "color": c[3], "h": c[4],
             "facing": rng.choice([0, 90, 180, 270]), "x": 0.0, "y": 0.0} for c in chosen]


def _sector_vector(rng, relation: str, length: float) -> tuple[float, float]:
    centers = [0, 90, 180, 270] if relation == "axial" else [45, 135, 225, 315]
    a = rng.choice(centers) + rng.uniform(-12, 12)
    return length * unit(a)[0], length * unit(a)[1]


def fq1_layout(rng, scene: str, relation: str) -> dict[str, Any] | None:
    objs = _make_objects(rng, scene, rng.choice([4, 5]))
    T, R = objs[0], objs[1]
    v = _sector_vector(rng, relation, rng.uniform(0.95, 1.45))
    R["x"], R["y"] = rng.uniform(-0.4, 0.4), rng.uniform(-0.4, 0.4)
    T["x"], T["y"] = R["x"] + v[0], R["y"] + v[1]
    if max(abs(T["x"]), abs(T["y"])) > 1.25:
        return None
    taken = [(R["x"], R["y"]), (T["x"], T["y"])]
    for ob in objs[2:]:
        p = _place_free(rng, taken)
        if p is None:
            return None
        ob["x"], ob["y"] = p
        taken.append(p)
    for ob in objs:
        ob["x"], ob["y"] = round(ob["x"], 3), round(ob["y"], 3)
    return {"objects": objs, "target": T["name"], "relatum": R["name"]}


def _view_at(heading: int, look_at: tuple[float, float], dist: float, visible: list[str]) -> dict[str, Any]:
    f = unit(heading)
    return {"heading": heading, "cam": [round(look_at[0] - dist * f[0], 3), round(look_at[1] - dist * f[1], 3)],
            "height": 1.15, "visible": visible}


def _in_fov(view: dict[str, Any], objs: list[dict[str, Any]]) -> bool:
    for ob in objs:
        q = _project(tuple(view["cam"]), view["heading"], view["height"], (ob["x"], ob["y"]))
        if q is None or q[2] < 0.9 or not (40 < q[0] < W - 40) or q[1] > H - 24:
            return False
    return True


# ---------------------------------------------------------------- items


def _question(frame_text: str, T: str, R: str, fq2: bool) -> str:
    q = f"{frame_text}，{T}位于{R}的什么方向？"
    if fq2:
        q = "请综合所有图片回答。" + q + "如果图片提供的信息不足以判断，请选择表示信息不足的选项。"
    return q + "请只回答一个选项字母。"


def _frame_text(frame: str, scene: str, anchor: str | None, convention: str | None, ordinal: int | None,
                anchor_en: str | None = None):
    if frame == "cam":
        return (f"以第{ordinal}张图片的相机朝向为前方",
                f"taking the camera heading of image {ordinal} as front")
    if frame == "obj":
        if convention == "front":
            return f"以{anchor}的正面朝向为前方", f"taking the direction the {anchor_en} faces as front"
        return f"以{anchor}的背面朝向为前方", f"taking the direction the back of the {anchor_en} faces as front"
    return LANDMARK[scene][2], LANDMARK[scene][3]


def _frame_heading(frame: str, objs: dict[str, dict[str, Any]], views: list[dict[str, Any]], anchor: str | None,
                   convention: str | None, ordinal: int | None, lm_heading: int) -> int:
    if frame == "cam":
        assert ordinal is not None, "a camera-frame question names its camera ordinal"
        return int(views[ordinal - 1]["heading"])
    if frame == "obj":
        assert anchor is not None, "an object-frame question names its anchor"
        f = objs[anchor]["facing"]
        return f if convention == "front" else (f + 180) % 360
    return lm_heading


def _options(rng, relation: str, gold_zh: str | None, fq2: bool) -> tuple[dict[str, str], dict[str, str]]:
    table = AXIAL if relation == "axial" else QUADRANT
    words = [v for v in table.values()]
    if fq2:
        others = [w for w in words if w[0] != gold_zh]
        words = [next(w for w in words if w[0] == gold_zh)] + rng.sample(others, 2) + [INSUFFICIENT]
    rng.shuffle(words)
    return ({L: w[0] for L, w in zip("ABCD", words, strict=False)}, {L: w[1] for L, w in zip("ABCD", words, strict=False)})


def _letter(options: dict[str, str], text: str) -> str:
    return next(k for k, v in options.items() if v == text)


def _render_all(root: Path, gid: str, scene: str, objs: list[dict[str, Any]], views: list[dict[str, Any]],
                lm: int) -> list[str]:
    return [save_png(render_view(scene, objs, v, lm), root, f"img/{gid}_v{i + 1}.png") for i, v in enumerate(views)]


def _public_objects(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"name": o["name"], "name_en": o["name_en"], "x": o["x"], "y": o["y"], "facing": o["facing"],
             "shape": o["shape"]} for o in objs]


def make_fq1_group(root: Path, gid: str, split: str, rng, scene: str, relation: str) -> list[dict[str, Any]]:
    while True:
        lay = fq1_layout(rng, scene, relation)
        if lay is None:
            continue
        objs = lay["objects"]
        byname = {o["name"]: o for o in objs}
        lm = 0 if scene == "outdoor" else rng.choice([0, 90, 180, 270])
        n_views = rng.choice([2, 3, 4])
        views = [_view_at(hd, (0.0, 0.0), 3.0, [o["name"] for o in objs])
                 for hd in rng.sample([0, 90, 180, 270], n_views)]
        if not all(_in_fov(v, objs) for v in views):
            continue
        ordinal = rng.randint(1, n_views)
        anchor = rng.choice([lay["relatum"], lay["relatum"], objs[2]["name"]])
        convention = rng.choice(["front", "front", "back"])
        T, R = byname[lay["target"]], byname[lay["relatum"]]
        specs = {}
        for frame in FQ1_VARIANTS:
            fh = _frame_heading(frame, byname, views, anchor, convention, ordinal, lm)
            specs[frame] = (fh, relation_in_frame((T["x"], T["y"]), (R["x"], R["y"]), fh, relation))
        if len({s[1][0] for s in specs.values()}) >= 2:
            break
    opts, opts_en = _options(rng, relation, None, False)
    images = _render_all(root, gid, scene, objs, views, lm)
    items = []
    for frame in FQ1_VARIANTS:
        fh, (zh, en) = specs[frame]
        ft, ft_en = _frame_text(frame, scene, anchor, convention, ordinal, byname[anchor]["name_en"])
        meta = {
            "scene": scene, "relation": relation, "source": "rendered", "synthetic": True, "frame": frame,
            "target": T["name"], "relatum": R["name"], "anchor": anchor if frame == "obj" else None,
            "convention": convention if frame == "obj" else None,
            "camera_ordinal": ordinal if frame == "cam" else None,
            "landmark": {"name": LANDMARK[scene][0], "name_en": LANDMARK[scene][1], "heading": lm},
            "objects": _public_objects(objs), "views": views, "image_count": len(images),
            "question_en": f"{ft_en}, in which direction is the {T['name_en']} from the {R['name_en']}? "
                           "Answer with one option letter.",
            "options_en": opts_en, "answer_en": en,
        }
        items.append({
            "benchmark": "frameevidence", "item_id": f"{gid}-{frame}", "group_id": gid, "split": split,
            "kind": "FQ1", "variant": frame, "images": list(images),
            "question": _question(ft, T["name"], R["name"], False), "options": dict(opts),
            "answer": _letter(opts, zh), "meta": meta,
        })
    return items


def fq2_layout(rng, scene: str, relation: str, m: int) -> dict[str, Any] | None:
    objs = _make_objects(rng, scene, m + 2)  # chain of m + 1 objects plus one distractor
    chain, distractor = objs[: m + 1], objs[m + 1]
    total = _sector_vector(rng, relation, rng.uniform(1.3, 1.8))
    steps = []
    acc = (0.0, 0.0)
    for _ in range(m - 1):
        a = rng.uniform(0, 360)
        ln = rng.uniform(0.75, 1.1)
        s = (ln * unit(a)[0], ln * unit(a)[1])
        steps.append(s)
        acc = (acc[0] + s[0], acc[1] + s[1])
    last = (total[0] - acc[0], total[1] - acc[1])
    if not (0.7 <= math.hypot(*last) <= 1.5):
        return None
    steps.append(last)
    pts = [(0.0, 0.0)]
    for s in steps:
        pts.append((pts[-1][0] + s[0], pts[-1][1] + s[1]))
    cx, cy = sum(p[0] for p in pts) / len(pts), sum(p[1] for p in pts) / len(pts)
    pts = [(p[0] - cx, p[1] - cy) for p in pts]
    if any(max(abs(p[0]), abs(p[1])) > 1.5 for p in pts):
        return None
    if any(math.dist(pts[i], pts[j]) < 0.65 for i in range(len(pts)) for j in range(i + 1, len(pts))):
        return None
    for ob, p in zip(chain, pts, strict=False):
        ob["x"], ob["y"] = round(p[0], 3), round(p[1], 3)
    host = rng.randrange(len(chain))
    for _ in range(100):
        a = rng.uniform(0, 360)
        ln = rng.uniform(0.75, 1.0)
        p = (chain[host]["x"] + ln * unit(a)[0], chain[host]["y"] + ln * unit(a)[1])
        if all(math.dist(p, q) >= 0.7 for q in pts) and max(abs(p[0]), abs(p[1])) < 1.8:
            distractor["x"], distractor["y"] = round(p[0], 3), round(p[1], 3)
            break
    else:
        return None
    return {"objects": objs, "chain": [o["name"] for o in chain], "distractor": distractor["name"],
            "host": chain[host]["name"]}


def _pair_view(rng, objs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A tight view of two objects from a cardinal heading that keeps them well apart on screen."""
    mid = (sum(o["x"] for o in objs) / 2, sum(o["y"] for o in objs) / 2)
    for hd in rng.sample([0, 90, 180, 270], 4):
        v = _view_at(hd, mid, 2.3, [o["name"] for o in objs])
        if not _in_fov(v, objs):
            continue
        xs = [_project(tuple(v["cam"]), hd, v["height"], (o["x"], o["y"]))[0] for o in objs]
        if abs(xs[0] - xs[1]) >= 70:
            return v
    return None


def ordinal_change(ordinal: int | None, deleted_pos: int, n_mss: int) -> tuple[str, str]:
    """Reference-change class of a deletion (000 §5, Table 3) and where the ordinal now points."""
    if ordinal is None:
        return "none", "no_ordinal"
    if deleted_pos == ordinal:
        cls = "removed"
    elif deleted_pos < ordinal:
        cls = "shifted"
    else:
        cls = "stable"
    after = "same_image" if cls == "stable" else ("out_of_range" if ordinal > n_mss - 1 else "other_image")
    return cls, after


def make_fq2_group(root: Path, gid: str, split: str, rng, scene: str, relation: str) -> list[dict[str, Any]]:
    while True:
        m = rng.choice([2, 3, 3])
        lay = fq2_layout(rng, scene, relation, m)
        if lay is None:
            continue
        objs = lay["objects"]
        byname = {o["name"]: o for o in objs}
        chain = [byname[n] for n in lay["chain"]]
        maybe_views = [_pair_view(rng, [chain[i], chain[i + 1]]) for i in range(m)]
        hard = _pair_view(rng, [byname[lay["host"]], byname[lay["distractor"]]])
        if hard is None or any(v is None for v in maybe_views):
            continue
        mss_views = [v for v in maybe_views if v is not None]
        frame = rng.choice(["cam", "cam", "scene", "obj"])
        ordinal = rng.randint(1, m) if frame == "cam" else None
        anchor = rng.choice([chain[0]["name"], chain[-1]["name"]]) if frame == "obj" else None
        convention = rng.choice(["front", "front", "back"]) if frame == "obj" else None
        lm = 0 if scene == "outdoor" else rng.choice([0, 90, 180, 270])
        break
    T, R = chain[-1], chain[0]
    fh = _frame_heading(frame, byname, mss_views, anchor, convention, ordinal, lm)
    zh, en = relation_in_frame((T["x"], T["y"]), (R["x"], R["y"]), fh, relation)
    # original views I1..I(m+1): the hard view is interleaved, but after the camera ordinal so that the
    # ordinal keeps its binding in the addition variant
    lo = (ordinal or 0)
    hard_idx = rng.randint(lo, m)  # insert before MSS position hard_idx (0-based), i.e. after `lo` views
    originals = mss_views[:hard_idx] + [hard] + mss_views[hard_idx:]
    images = _render_all(root, gid, scene, objs, originals, lm)
    mss_pos = [i + 1 for i in range(m + 1) if i != hard_idx]
    deleted = rng.randint(1, m)  # position within the MSS order (1-based)
    del_pos = [p for k, p in enumerate(mss_pos, 1) if k != deleted]
    add_pos = list(range(1, m + 2))
    change, after = ordinal_change(ordinal, deleted, m)
    opts, opts_en = _options(rng, relation, zh, True)
    ins = _letter(opts, INSUFFICIENT[0])
    ft, ft_en = _frame_text(frame, scene, anchor, convention, ordinal,
                            byname[anchor]["name_en"] if anchor else None)
    question = _question(ft, T["name"], R["name"], True)
    items = []
    for variant, pos in (("mss", mss_pos), ("del", del_pos), ("add", add_pos)):
        gold = ins if variant == "del" else _letter(opts, zh)
        meta = {
            "scene": scene, "relation": relation, "source": "rendered", "synthetic": True, "frame": frame,
            "target": T["name"], "relatum": R["name"], "anchor": anchor, "convention": convention,
            "camera_ordinal": ordinal, "bridges": [c["name"] for c in chain[1:-1]],
            "distractor": lay["distractor"], "chain": lay["chain"],
            "landmark": {"name": LANDMARK[scene][0], "name_en": LANDMARK[scene][1], "heading": lm},
            "objects": _public_objects(objs), "views": [originals[p - 1] for p in pos],
            "original_positions": pos, "image_count": len(pos), "insufficient_option": ins,
            "mss_size": m, "deleted_position": deleted, "added_position": hard_idx + 1,
            "ordinal_change": change, "ordinal_after_deletion": after,
            "question_en": f"Using all images, {ft_en}, in which direction is the {T['name_en']} from the "
                           f"{R['name_en']}? If the images are insufficient, choose the insufficient option.",
            "options_en": opts_en, "answer_en": INSUFFICIENT[1] if variant == "del" else en,
        }
        items.append({
            "benchmark": "frameevidence", "item_id": f"{gid}-{variant}", "group_id": gid, "split": split,
            "kind": "FQ2", "variant": variant, "images": [images[p - 1] for p in pos], "question": question,
            "options": dict(opts), "answer": gold, "meta": meta,
        })
    return items


SPLITS = (("test", 48), ("train", 16), ("dev", 4))  # groups per family (FQ1, FQ2) per split


def generate(root: Path, seed: int = 0, splits: tuple[tuple[str, int], ...] = SPLITS) -> dict[str, Any]:
    """Write frameevidence.jsonl and img/ under root; returns {"items_file", "n_items", "n_groups"}."""
    root.mkdir(parents=True, exist_ok=True)
    items: list[dict[str, Any]] = []
    scenes = ("tabletop", "indoor", "outdoor")
    g = 0
    for split, n in splits:
        for fam in (FQ1, FQ2):
            for i in range(n):
                g += 1
                gid = f"fe-{split}-{fam.lower()}-{i + 1:03d}"
                rng = rng_for("frameevidence", seed, gid)
                scene, relation = scenes[i % 3], ("axial", "quadrant")[(i // 3) % 2]
                maker = make_fq1_group if fam == "FQ1" else make_fq2_group
                items.extend(maker(root, gid, split, rng, scene, relation))
    path = root / "frameevidence.jsonl"
    write_jsonl(path, items)
    return {"items_file": path.name, "n_items": len(items), "n_groups": g, "items": items}
