"""SPUR-like generator (paper 001 §2): multi-panel experimental figures and seven-task questions.

Each figure is drawn from one seeded experiment: a treatment at four doses (or groups), a marker level per
condition, a second read-out (viability) and a growth curve. Panels (8-16, lettered A, B, C ...) are staining
fields (one per condition, optionally a second staining set), bar charts with error bars and condition labels,
kinetic line curves and a blot-like band strip over lanes. Every number behind a panel is stored in
`meta.experiment`, every panel's box and type in `meta.panels`, so each answer can be recomputed.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from core.demo.common import font, rng_for, save_png, text_center, write_jsonl
from core.families.spur.vocab import STAGE_OF, TASKS

PW, PH, COLS = 200, 170, 4
STAGE = STAGE_OF
DISCIPLINES = ("Cell Biology", "Molecular Biology", "Oncology", "Immunology", "Neuroscience", "Pharmacology",
               "Microbiology")
PARADIGMS = {"CE": "Cell Experiments", "AE": "Animal Experiments", "OS": "Observational Studies",
             "IS": "Interventional Studies", "P&I": "Pathology & Imaging"}
STAINING = ("Cell", "Tissue", "Microorganism", "Subcellular/Organelle")
MORPHS = {  # drawing primitive -> name per staining category
    "Cell": {"round": "round cells", "spindle": "spindle-shaped cells", "cluster": "clustered cells",
             "fragment": "fragmented (apoptotic) cells"},
    "Tissue": {"round": "round glandular nuclei", "spindle": "elongated fibrous nuclei",
               "cluster": "nested cell clusters", "fragment": "necrotic debris"},
    "Microorganism": {"round": "cocci (spherical)", "spindle": "bacilli (rod-shaped)", "cluster": "colonies",
                      "fragment": "lysed fragments"},
    "Subcellular/Organelle": {"round": "vesicular puncta", "spindle": "tubular organelles",
                              "cluster": "aggregated puncta", "fragment": "fragmented organelles"},
}
POSITIVE_COLOUR = {"Cell": "green", "Subcellular/Organelle": "red", "Tissue": "brown", "Microorganism": "dark purple"}
STAIN_NAMES = {"Cell": ("Ki-67 IF", "TUNEL"), "Tissue": ("IHC", "H&E"), "Microorganism": ("Gram stain", "Live/Dead"),
               "Subcellular/Organelle": ("MitoTracker", "LC3 puncta")}
MARKERS = ("p-AKT", "Caspase-3", "LC3-II", "p-ERK", "NF-kB p65", "Bcl-2", "HIF-1a", "Cyclin D1")
TREATMENTS = ("Drug X", "Compound 7", "Metformin", "Rapamycin", "siRNA-K", "IL-6", "LPS", "Cisplatin")
PROFILES = {"up": (1.0, 1.45, 1.95, 2.6), "down": (1.0, 0.74, 0.52, 0.32), "peak": (1.0, 1.7, 2.2, 1.3),
            "flat": (1.0, 1.03, 0.97, 1.01)}
TREND_TEXT = {"up": "increases steadily", "down": "decreases steadily", "peak": "first increases, then decreases",
              "flat": "stays about the same"}


def _trend(values: list[float]) -> str:
    """Trend word of a series (the same rule the generator uses to label it; tests re-derive independently)."""
    rel = [v / values[0] for v in values]
    if max(rel) - min(rel) < 0.15:
        return "flat"
    if all(b > a for a, b in zip(values, values[1:], strict=False)):
        return "up"
    if all(b < a for a, b in zip(values, values[1:], strict=False)):
        return "down"
    return "peak"


# ---------------------------------------------------------------- experiment


def make_experiment(rng) -> dict[str, Any]:
    paradigm = rng.choice(list(PARADIGMS))
    staining = rng.choice(STAINING)
    treatment, marker = rng.choice(TREATMENTS), rng.choice(MARKERS)
    if paradigm in ("AE", "IS"):
        conds = ["Sham", "Model", f"Model+{treatment} L", f"Model+{treatment} H"]
    else:
        u = rng.choice([(1, 5, 10), (2, 10, 20), (0.5, 1, 5)])
        conds = ["Ctrl"] + [f"{treatment} {d}uM" for d in u]
    shape = rng.choice(["up", "down", "peak", "flat", "up", "down"])
    base = rng.choice([20, 30, 40, 50, 60])
    marker_lv = [round(base * f * rng.uniform(0.96, 1.04), 1) for f in PROFILES[shape]]
    viab_shape = rng.choice(["up", "down", "flat"])
    viab = [round(min(98.0, 80 * f * rng.uniform(0.97, 1.03) / (1.9 if viab_shape == "up" else 1.0)), 1)
            for f in PROFILES[viab_shape]]
    sds = [round(v * rng.uniform(0.06, 0.14), 1) for v in marker_lv]
    vsds = [round(v * rng.uniform(0.04, 0.1), 1) for v in viab]
    mx = max(marker_lv)
    counts = [int(round(3 + 19 * v / mx)) for v in marker_lv]
    growth = {c: round(rng.uniform(0.02, 0.05) * (1.6 - 0.5 * f if shape == "down" else 0.7 + 0.3 * f), 4)
              for c, f in zip(conds, PROFILES[shape], strict=False)}
    y0 = rng.choice([10, 15, 20])
    times = [0, 12, 24, 36, 48]
    curves = {c: [round(y0 * math.exp(growth[c] * t), 1) for t in times] for c in (conds[0], conds[-1])}
    morph = {c: rng.choice(list(MORPHS[staining])) for c in conds}
    return {"paradigm": paradigm, "staining": staining, "treatment": treatment, "marker": marker,
            "conditions": conds, "marker_shape": shape, "marker_level": marker_lv, "marker_sd": sds,
            "viability_shape": viab_shape, "viability": viab, "viability_sd": vsds, "positive_counts": counts,
            "times": times, "curves": curves, "morphology": morph,
            "stain_names": list(STAIN_NAMES[staining]), "blot": [round(v / mx, 3) for v in marker_lv],
            "second_set": None}


# ---------------------------------------------------------------- drawing


def _nice_max(v: float) -> float:
    for e in range(-1, 5):
        for m in (1, 1.2, 1.6, 2, 2.4, 3.2, 4, 6, 8):
            if m * 10 ** e >= v:
                return m * 10 ** e
    return v


def _axes(d, x0, y0, x1, y1, ymax, ylabel):
    d.line([x0, y0, x0, y1, x1, y1], fill="black", width=1)
    f = font(10, "latin")
    for k in range(5):
        v = ymax * k / 4
        y = y1 - (y1 - y0) * k / 4
        d.line([x0 - 3, y, x0, y], fill="black")
        lab = f"{v:g}"
        text_center(d, (x0 - 14, y), lab, f)
        d.line([x0 + 1, y, x1, y], fill="#eeeeee")
    if ylabel:
        d.text((x0 + 4, y0 - 14), ylabel, font=f, fill="black")


def _short(c: str) -> str:
    """Axis label of a condition: 'Ctrl', '5µM', 'Sham', 'Model', '+L', '+H'."""
    if c in ("Ctrl", "Sham", "Model"):
        return c
    if c.startswith("Model+"):
        return "+" + c.split(" ")[-1]
    return c.split(" ")[-1].replace("uM", "µM")


def draw_bar(d, box, conds, means, sds, ylabel, title):
    x0, y0 = box[0], box[1]
    ymax = _nice_max(max(m + s for m, s in zip(means, sds, strict=False)) * 1.1)
    ax = (x0 + 34, y0 + 34, x0 + PW - 8, y0 + PH - 26)
    _axes(d, *ax, ymax, ylabel)
    cols = ["#7f7f7f", "#9ecae1", "#4292c6", "#08519c"]
    bw = (ax[2] - ax[0]) / len(conds)
    f = font(10, "latin")
    for k, (c, m, s) in enumerate(zip(conds, means, sds, strict=False)):
        bx = ax[0] + k * bw + bw * 0.18
        top = ax[3] - (ax[3] - ax[1]) * m / ymax
        d.rectangle([bx, top, bx + bw * 0.64, ax[3]], fill=cols[k % 4], outline="black")
        cx = bx + bw * 0.32
        e0, e1 = ax[3] - (ax[3] - ax[1]) * (m - s) / ymax, ax[3] - (ax[3] - ax[1]) * (m + s) / ymax
        d.line([cx, e0, cx, e1], fill="black", width=1)
        d.line([cx - 4, e1, cx + 4, e1], fill="black")
        text_center(d, (cx, ax[3] + 9), _short(c), f)
    text_center(d, (x0 + PW / 2 + 10, y0 + 12), title, font(11, "latin"))
    return ymax


def draw_line(d, box, times, curves, title):
    x0, y0 = box[0], box[1]
    ymax = _nice_max(max(max(v) for v in curves.values()) * 1.05)
    ax = (x0 + 34, y0 + 34, x0 + PW - 10, y0 + PH - 26)
    _axes(d, *ax, ymax, "cells (x1000)")
    f = font(10, "latin")
    for t in times:
        x = ax[0] + (ax[2] - ax[0]) * t / times[-1]
        d.line([x, ax[3], x, ax[3] + 3], fill="black")
        text_center(d, (x, ax[3] + 9), f"{t}h", f)
    cols = ["#444444", "#d62728"]
    for k, (c, vals) in enumerate(curves.items()):
        pts = [(ax[0] + (ax[2] - ax[0]) * t / times[-1], ax[3] - (ax[3] - ax[1]) * v / ymax) for t, v in zip(times, vals, strict=False)]
        d.line(pts, fill=cols[k], width=2)
        for p in pts:
            d.ellipse([p[0] - 3, p[1] - 3, p[0] + 3, p[1] + 3], fill=cols[k])
        d.line([ax[0] + 6, ax[1] + 6 + 12 * k, ax[0] + 20, ax[1] + 6 + 12 * k], fill=cols[k], width=2)
        d.text((ax[0] + 23, ax[1] + 12 * k), c, font=f, fill=cols[k])
    text_center(d, (x0 + PW / 2 + 10, y0 + 12), title, font(11, "latin"))
    return ymax


def draw_blot(d, box, conds, intensities, marker, title):
    x0, y0 = box[0], box[1]
    bx0, bx1 = x0 + 58, x0 + PW - 10
    lw = (bx1 - bx0) / len(conds)
    f = font(10, "latin")
    for k, c in enumerate(conds):
        text_center(d, (bx0 + (k + 0.5) * lw, y0 + 36), _short(c), f)
    for row, (name, vals) in enumerate(((marker, intensities), ("b-actin", [0.85] * len(conds)))):
        ry = y0 + 52 + row * 46
        d.rectangle([bx0, ry, bx1, ry + 34], fill="#e9e9e9", outline="#888888")
        text_center(d, (x0 + 30, ry + 17), name, f)
        for k, v in enumerate(vals):
            g = int(225 - 205 * v)
            cx = bx0 + (k + 0.5) * lw
            hw, hh = lw * 0.36, 4 + 6 * v
            d.ellipse([cx - hw, ry + 17 - hh, cx + hw, ry + 17 + hh], fill=(g, g, g))
    text_center(d, (x0 + PW / 2 + 10, y0 + 12), title, font(11, "latin"))


def draw_stain(img, box, category, morph, n_pos, rng, title, n_total=26):
    d = ImageDraw.Draw(img)
    x0, y0 = box[0], box[1]
    fx0, fy0, fx1, fy1 = x0 + 8, y0 + 24, x0 + PW - 8, y0 + PH - 6
    dark = category in ("Cell", "Subcellular/Organelle")
    bg = {"Cell": "#0b0b14", "Subcellular/Organelle": "#070712", "Tissue": "#f3d9e4", "Microorganism": "#fbfbf5"}[category]
    neg = {"Cell": "#3a4fd8", "Subcellular/Organelle": "#4a4ac8", "Tissue": "#7a5aa8", "Microorganism": "#d88fb0"}[category]
    pos = {"Cell": "#36e24a", "Subcellular/Organelle": "#ff5050", "Tissue": "#8b4513", "Microorganism": "#5b2a86"}[category]
    d.rectangle([fx0, fy0, fx1, fy1], fill=bg)
    scale = 0.7 if category in ("Microorganism", "Subcellular/Organelle") else 1.0
    centers = []
    if morph == "cluster":
        hubs = [(rng.uniform(fx0 + 25, fx1 - 25), rng.uniform(fy0 + 20, fy1 - 20)) for _ in range(3)]
    for k in range(n_total):
        for _ in range(60):
            if morph == "cluster":
                h = hubs[k % 3]
                p = (h[0] + rng.gauss(0, 11), h[1] + rng.gauss(0, 9))
            else:
                p = (rng.uniform(fx0 + 8, fx1 - 8), rng.uniform(fy0 + 8, fy1 - 8))
            if fx0 + 5 < p[0] < fx1 - 5 and fy0 + 5 < p[1] < fy1 - 5 and all(math.dist(p, q) > 9 * scale for q in centers):
                centers.append(p)
                break
    for k, (cx, cy) in enumerate(centers):
        col = pos if k < n_pos else neg
        if morph == "round" or morph == "cluster":
            r = 5.5 * scale
            d.ellipse([cx - r, cy - r, cx + r, cy + r], fill=col, outline="#ffffff" if not dark else None)
        elif morph == "spindle":
            a = rng.uniform(0, math.pi)
            L, w = 10 * scale, 3 * scale
            pts = [(cx + L * math.cos(a), cy + L * math.sin(a)), (cx - w * math.sin(a), cy + w * math.cos(a)),
                   (cx - L * math.cos(a), cy - L * math.sin(a)), (cx + w * math.sin(a), cy - w * math.cos(a))]
            d.polygon(pts, fill=col)
        else:
            for _ in range(3):
                ox, oy = rng.uniform(-5, 5), rng.uniform(-5, 5)
                d.ellipse([cx + ox - 1.8, cy + oy - 1.8, cx + ox + 1.8, cy + oy + 1.8], fill=col)
    d.line([fx1 - 40, fy1 - 8, fx1 - 12, fy1 - 8], fill="white" if dark else "black", width=2)  # scale bar
    text_center(d, (x0 + PW / 2 + 10, y0 + 12), title, font(11 if len(title) < 27 else 9, "latin"))
    return len(centers)


# ---------------------------------------------------------------- figure and questions


def build_figure(rng, fid: str) -> tuple[Image.Image, dict[str, Any]]:
    ex = make_experiment(rng)
    conds = ex["conditions"]
    plan: list[dict[str, Any]] = []
    for c in conds:
        plan.append({"type": "stain", "set": 1, "condition": c})
    plan.append({"type": "bar", "readout": f"{ex['marker']} level (a.u.)", "series": "marker"})
    plan.append({"type": "blot"})
    plan.append({"type": "line"})
    plan.append({"type": "bar", "readout": "viability (%)", "series": "viability"})
    if rng.random() < 0.6:
        second = [int(round(3 + 19 * v / max(ex["viability"]))) for v in ex["viability"]]
        ex["second_set"] = {"name": ex["stain_names"][1], "positive_counts": second}
        for c in conds:
            plan.append({"type": "stain", "set": 2, "condition": c})
    extra = rng.randint(0, 16 - len(plan))
    extra_morph = {}
    for k in range(extra):
        c = conds[k % 4]
        plan.append({"type": "stain", "set": 3, "condition": c})  # high-magnification insets of set 1
        extra_morph[c] = ex["morphology"][c]
    rows = math.ceil(len(plan) / COLS)
    img = Image.new("RGB", (PW * COLS, PH * rows), "white")
    d = ImageDraw.Draw(img)
    panels = []
    for k, p in enumerate(plan):
        letter = "ABCDEFGHIJKLMNOP"[k]
        bx, by = (k % COLS) * PW, (k // COLS) * PH
        box = [bx, by, bx + PW, by + PH]
        info = {"letter": letter, "type": p["type"], "box": box}
        if p["type"] == "stain":
            i = conds.index(p["condition"])
            if p["set"] == 2:
                n_pos = ex["second_set"]["positive_counts"][i]
                title = f"{ex['stain_names'][1]}: {p['condition']}"
            else:
                n_pos = ex["positive_counts"][i]
                title = f"{ex['stain_names'][0]}: {p['condition']}" + (" x40" if p["set"] == 3 else "")
            morph = ex["morphology"][p["condition"]]
            total = 26
            if p["set"] == 3:
                total, n_pos = 14, int(round(n_pos * 14 / 26))
            drawn = draw_stain(img, box, ex["staining"], morph, n_pos, rng, title, n_total=total)
            n_pos = min(n_pos, drawn)
            info.update({"condition": p["condition"], "set": p["set"], "positive": n_pos, "morphology": morph,
                         "morphology_name": MORPHS[ex["staining"]][morph], "staining": ex["staining"], "title": title})
        elif p["type"] == "bar":
            vals = ex["marker_level"] if p["series"] == "marker" else ex["viability"]
            sds = ex["marker_sd"] if p["series"] == "marker" else ex["viability_sd"]
            ymax = draw_bar(d, box, conds, vals, sds, "", p["readout"])
            info.update({"series": p["series"], "readout": p["readout"], "ymax": ymax, "title": p["readout"]})
        elif p["type"] == "blot":
            draw_blot(d, box, conds, ex["blot"], ex["marker"], f"Western blot: {ex['marker']}")
            info.update({"title": f"Western blot: {ex['marker']}"})
        else:
            ymax = draw_line(d, box, ex["times"], ex["curves"], "Growth kinetics")
            info.update({"ymax": ymax, "title": "Growth kinetics"})
        d.text((bx + 4, by + 2), letter, font=font(18, "bold"), fill="black")
        d.rectangle(box, outline="#cccccc")
        panels.append(info)
    return img, {"experiment": ex, "panels": panels}


def _mc(rng, gold: str, wrong: list[str]) -> tuple[dict[str, str], str]:
    opts = [gold] + rng.sample([w for w in dict.fromkeys(wrong) if w != gold], 3)
    rng.shuffle(opts)
    return dict(zip("ABCD", opts, strict=False)), "ABCD"[opts.index(gold)]


def _fmt(v: float) -> str:
    return f"{v:.0f}" if v >= 10 else f"{v:.1f}"


# One builder per SPUR task: (rng, experiment, the figure's panels by role) -> (question, gold, wrong options,
# target, number of cross-panel relations). The order of the rng calls is part of the demo's seeded output.
Question = tuple[str, str, list[str], dict[str, Any], int]


def _q_np(rng, ex: dict[str, Any], fp: dict[str, Any]) -> Question:
    conds, bar_m, line = ex["conditions"], fp["bar_m"], fp["line"]
    if rng.random() < 0.6:
        i = rng.randrange(4)
        v = ex["marker_level"][i]
        q = f"In panel {bar_m['letter']}, what is the approximate mean {ex['marker']} level of the '{conds[i]}' group?"
        wrong = [_fmt(v * f) for f in (0.5, 0.7, 1.4, 1.8, 2.3)]
        return q, _fmt(v), wrong, {"panel": bar_m["letter"], "quantity": "marker_level", "condition": conds[i]}, 0
    c = rng.choice(list(ex["curves"]))
    v = ex["curves"][c][-1]
    q = f"In panel {line['letter']}, approximately what value does the '{c}' curve reach at 48 h?"
    wrong = [_fmt(v * f) for f in (0.45, 0.65, 1.5, 1.9, 2.4)]
    return q, _fmt(v), wrong, {"panel": line["letter"], "quantity": "curve_48h", "condition": c}, 0


def _q_mp(rng, ex: dict[str, Any], fp: dict[str, Any]) -> Question:
    p = rng.choice(fp["stain1"])
    names = MORPHS[ex["staining"]]
    q = f"Which morphology predominates in the staining field of panel {p['letter']}?"
    wrong = [v for k, v in names.items() if k != p["morphology"]]
    return q, names[p["morphology"]], wrong, {"panel": p["letter"], "quantity": "morphology"}, 0


def _q_il(rng, ex: dict[str, Any], fp: dict[str, Any]) -> Question:
    conds, stain1 = ex["conditions"], fp["stain1"]
    i = rng.randrange(4)
    p = stain1[i]
    q = f"Which panel shows the {ex['stain_names'][0]} staining of the '{conds[i]}' group?"
    others = [x for x in fp["panels"] if x["letter"] != p["letter"]]
    wrong = [f"Panel {x['letter']}" for x in stain1 if x is not p] + [f"Panel {x['letter']}" for x in others]
    return q, f"Panel {p['letter']}", wrong, {"panel": p["letter"], "quantity": "condition", "condition": conds[i]}, 0


def _q_ta(rng, ex: dict[str, Any], fp: dict[str, Any]) -> Question:
    k = rng.choice([2, 3, 4, 4])
    sub = fp["stain1"][:k]
    letters = ", ".join(p["letter"] for p in sub)
    q = (f"Across panels {letters} (in order of increasing treatment), how does the number of "
         f"{POSITIVE_COLOUR[ex['staining']]} (positively stained) objects change?")
    gold = TREND_TEXT[_trend([p["positive"] for p in sub])]
    return q, gold, list(TREND_TEXT.values()), {"panels": [p["letter"] for p in sub], "quantity": "positive_trend"}, k - 1


def _q_hi(rng, ex: dict[str, Any], fp: dict[str, Any]) -> Question:
    blot, bar_v = fp["blot"], fp["bar_v"]
    mt, vt = _trend(ex["blot"]), _trend(ex["viability"])
    word = {"up": "increases", "down": "decreases", "peak": "rises then falls", "flat": "stays about the same"}
    q = (f"Comparing the {ex['marker']} band in panel {blot['letter']} with viability in panel {bar_v['letter']} "
         "across the conditions, which statement is supported?")
    gold = f"The {ex['marker']} band {word[mt]} while viability {word[vt]}"
    wrong = [f"The {ex['marker']} band {word[a]} while viability {word[b]}" for a in word for b in word]
    return q, gold, wrong, {"panels": [blot["letter"], bar_v["letter"]], "quantity": "blot_vs_viability"}, 1


def _q_qual(rng, ex: dict[str, Any], fp: dict[str, Any]) -> Question:
    bar_m, blot = fp["bar_m"], fp["blot"]
    mt = _trend(ex["marker_level"])
    t, m = ex["treatment"], ex["marker"]
    text = {"up": f"{t} increases {m} in a dose-dependent manner",
            "down": f"{t} suppresses {m} in a dose-dependent manner",
            "peak": f"{t} raises {m} at intermediate doses but the effect declines at the highest dose",
            "flat": f"{t} has no clear effect on {m}"}
    q = (f"Taking panels {bar_m['letter']} and {blot['letter']} together, what is the most plausible conclusion "
         f"about {t}?")
    return q, text[mt], list(text.values()), {"panels": [bar_m["letter"], blot["letter"]],
                                                "quantity": "marker_direction"}, 0


def _q_quant(rng, ex: dict[str, Any], fp: dict[str, Any]) -> Question:
    conds, bar_m = ex["conditions"], fp["bar_m"]
    v0, v3 = ex["marker_level"][0], ex["marker_level"][3]
    pct = round((v3 / v0 - 1) * 10) * 10

    def show(p: int) -> str:
        return f"{'+' if p >= 0 else ''}{p}%"
    q = (f"According to panel {bar_m['letter']}, by roughly how much does '{conds[3]}' change the {ex['marker']} "
         f"level relative to '{conds[0]}'?")
    wrong = [show(pct + d) for d in (-60, -40, 40, 60, 90)] + [show(-pct if pct else 50)]
    return q, show(pct), wrong, {"panel": bar_m["letter"], "quantity": "pct_change", "from": conds[0],
                                 "to": conds[3]}, 0


_QUESTIONS = {"NP": _q_np, "MP": _q_mp, "IL": _q_il, "TA": _q_ta, "HI": _q_hi, "Qual": _q_qual}


def make_question(rng, task: str, fig: dict[str, Any]) -> dict[str, Any]:
    ex, panels = fig["experiment"], fig["panels"]
    fp = {"panels": panels, "stain1": [p for p in panels if p["type"] == "stain" and p["set"] == 1],
          "bar_m": next(p for p in panels if p["type"] == "bar" and p["series"] == "marker"),
          "bar_v": next(p for p in panels if p["type"] == "bar" and p["series"] == "viability"),
          "blot": next(p for p in panels if p["type"] == "blot"),
          "line": next(p for p in panels if p["type"] == "line")}
    q, gold, wrong, target, n_rel = _QUESTIONS.get(task, _q_quant)(rng, ex, fp)  # any other task: Quant
    opts, ans = _mc(rng, gold, wrong)
    return {"question": q, "options": opts, "answer": ans, "target": target, "n_relations": n_rel}


def generate(root: Path, seed: int = 0, n_figures: int = 40, per_figure: int = 4) -> dict[str, Any]:
    """Write spur.jsonl and img/ under root; returns {"items_file", "n_items", "n_groups", "items"}."""
    root.mkdir(parents=True, exist_ok=True)
    items: list[dict[str, Any]] = []
    for f in range(n_figures):
        fid = f"spur-{f + 1:03d}"
        rng = rng_for("spur", seed, fid)
        img, fig = build_figure(rng, fid)
        rel = save_png(img, root, f"img/{fid}.png")
        discipline = DISCIPLINES[f % len(DISCIPLINES)]
        for k in range(per_figure):
            task = TASKS[(f * per_figure + k) % len(TASKS)]
            qq = make_question(rng, task, fig)
            ex = fig["experiment"]
            items.append({
                "benchmark": "spur", "item_id": f"{fid}-q{k + 1}-{task}", "group_id": fid, "split": "test",
                "kind": task, "variant": STAGE[task], "images": [rel],
                "question": qq["question"] + " Answer with the option letter.", "options": qq["options"],
                "answer": qq["answer"],
                "meta": {"stage": STAGE[task], "discipline": discipline, "paradigm": ex["paradigm"],
                         "paradigm_name": PARADIGMS[ex["paradigm"]], "staining": ex["staining"],
                         "n_relations": qq["n_relations"], "n_panels": len(fig["panels"]),
                         "panels": fig["panels"], "experiment": ex, "target": qq["target"], "synthetic": True},
            })
    path = root / "spur.jsonl"
    write_jsonl(path, items)
    return {"items_file": path.name, "n_items": len(items), "n_groups": n_figures, "items": items}
