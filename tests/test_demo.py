"""Embedded demo: golds re-derived by independent code from the stored geometry / rule / numbers, the group
rules of each family, determinism, and the import through the real importers into a real SQLite store."""

from __future__ import annotations

import hashlib
import json
import math
from collections import defaultdict
from pathlib import Path

import pytest

from core.demo import SMALL, generate_all

FAMILIES = ("frameevidence", "stembind", "spur")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("demo")
    return root, generate_all(root, seed=3, sizes=SMALL)


def _items(demo: tuple[Path, dict], family: str) -> list[dict]:
    root, manifest = demo
    path = root / manifest["benchmarks"][family]["items_file"]
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _groups(items: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = defaultdict(list)
    for it in items:
        out[it["group_id"]].append(it)
    return out


# ------------------------------------------------------------------ FrameEvidence: independent geometry

WORDS = {"axial": {0: "前", 90: "右", 180: "后", 270: "左"},
         "quadrant": {45: "右前", 135: "右后", 225: "左后", 315: "左前"}}


def _direction(meta: dict, heading: float) -> str:
    objs = {o["name"]: o for o in meta["objects"]}
    t, r = objs[meta["target"]], objs[meta["relatum"]]
    ang = math.degrees(math.atan2(t["x"] - r["x"], t["y"] - r["y"]))  # clockwise from north
    rel = (ang - heading) % 360
    table = WORDS[meta["relation"]]
    best = min(table, key=lambda c: min(abs(rel - c), 360 - abs(rel - c)))
    gap = min(abs(rel - best), 360 - abs(rel - best))
    assert gap <= 15, f"relation not clear-cut ({gap:.1f} degrees off an axis)"
    return table[best]


def _frame_heading(meta: dict, views: list[dict]) -> float | None:
    if meta["frame"] == "cam":
        k = meta["camera_ordinal"]
        return views[k - 1]["heading"] if k <= len(views) else None
    if meta["frame"] == "obj":
        facing = {o["name"]: o["facing"] for o in meta["objects"]}[meta["anchor"]]
        return facing if meta["convention"] == "front" else (facing + 180) % 360
    return meta["landmark"]["heading"]


def _connected(views: list[dict], a: str, b: str) -> bool:
    """Whether the shown views link a to b through co-visible objects (bridge objects)."""
    reach, changed = {a}, True
    while changed:
        changed = False
        for v in views:
            vis = set(v["visible"])
            if vis & reach and not vis <= reach:
                reach |= vis
                changed = True
    return b in reach


def test_frameevidence_golds_rederived(demo):
    items = _items(demo, "frameevidence")
    assert items
    for it in items:
        m = it["meta"]
        assert len(m["views"]) == len(it["images"])
        heading = _frame_heading(m, m["views"])
        sufficient = heading is not None and _connected(m["views"], m["target"], m["relatum"])
        if it["kind"] == "FQ1":
            assert sufficient
        want = _direction(m, heading) if sufficient else "信息不足，无法确定"
        assert it["options"][it["answer"]] == want, it["item_id"]


def test_frameevidence_group_rules(demo):
    items = _items(demo, "frameevidence")
    root = demo[0] / "frameevidence"
    for _gid, its in _groups(items).items():
        v = {it["variant"]: it for it in its}
        if its[0]["kind"] == "FQ1":
            assert set(v) == {"cam", "obj", "scene"}
            assert v["cam"]["images"] == v["obj"]["images"] == v["scene"]["images"]
            assert v["cam"]["options"] == v["obj"]["options"] == v["scene"]["options"]
            assert len({it["answer"] for it in its}) >= 2
            assert 2 <= len(v["cam"]["images"]) <= 4
        else:
            assert set(v) == {"mss", "del", "add"}
            mss, dele, add = v["mss"], v["del"], v["add"]
            assert mss["question"] == dele["question"] == add["question"]
            assert mss["options"] == dele["options"] == add["options"]
            assert len(dele["images"]) == len(mss["images"]) - 1 and set(dele["images"]) < set(mss["images"])
            assert len(add["images"]) == len(mss["images"]) + 1 and set(mss["images"]) < set(add["images"])
            assert [i for i in add["images"] if i in mss["images"]] == mss["images"]
            assert [i for i in mss["images"] if i in dele["images"]] == dele["images"]
            assert dele["answer"] == mss["meta"]["insufficient_option"]
            assert add["answer"] == mss["answer"] != dele["answer"]
            assert mss["meta"]["original_positions"] == sorted(mss["meta"]["original_positions"])
            assert mss["meta"]["ordinal_change"] in ("removed", "shifted", "stable", "none")
            # each MSS view is required: dropping any one breaks the link from relatum to target
            for k in range(len(mss["meta"]["views"])):
                rest = mss["meta"]["views"][:k] + mss["meta"]["views"][k + 1:]
                assert not _connected(rest, mss["meta"]["target"], mss["meta"]["relatum"])
        for it in its:
            assert len(set(it["images"])) == len(it["images"])
            assert all((root / p).is_file() for p in it["images"])
            assert "question_en" in it["meta"] and "options_en" in it["meta"]


def test_frameevidence_images_stay_in_one_split(demo):
    items = _items(demo, "frameevidence")
    root = demo[0] / "frameevidence"
    split_of: dict[str, str] = {}
    for it in items:
        for p in it["images"]:
            h = hashlib.sha256((root / p).read_bytes()).hexdigest()
            assert split_of.setdefault(h, it["split"]) == it["split"]
    assert {"train", "test"} <= {it["split"] for it in items}


# ------------------------------------------------------------------ StemBind: rule re-application

BORDER = ("top-left", "top-middle", "top-right", "middle-right", "bottom-right", "bottom-middle", "bottom-left",
          "middle-left")


def _key(cell: dict) -> str:
    if "strokes" in cell:
        return "S" + repr(sorted(cell["strokes"]))
    if "holes" in cell:
        return "H" + repr(sorted(tuple(h) for h in cell["holes"]))
    return "G" + repr(sorted(json.dumps(g, sort_keys=True) for g in cell["glyphs"]))


def _expected_cell(meta: dict) -> dict:
    op, g, rule = meta["operation"], meta["grid"], meta["rule"]
    if op == "RI-Qty":
        a, b = g[2][0]["glyphs"], g[2][1]["glyphs"]
        return {"glyphs": [b[0]] * (2 * len(b) - len(a))}
    if op == "RI-Pos":
        s0, s1 = g[2][0]["glyphs"][0]["slot"], g[2][1]["glyphs"][0]["slot"]
        return {"glyphs": [{**g[2][1]["glyphs"][0], "slot": (2 * s1 - s0) % 8}]}
    if op == "RI-Attr":
        bind = {c["glyphs"][0]["shape"]: c["glyphs"][0]["color"] for row in g[:2] for c in row}
        used = {c["glyphs"][0]["shape"] for c in g[2][:2]}
        (shape,) = set(bind) - used
        return {"glyphs": [{"shape": shape, "color": bind[shape], "fill": "solid"}]}
    if op == "RI-Sty":
        order = [c["glyphs"][0]["fill"] for c in g[0]]
        f1 = g[2][1]["glyphs"][0]["fill"]
        return {"glyphs": [{**g[2][1]["glyphs"][0], "fill": order[(order.index(f1) + 1) % 3]}]}
    if op == "RI-Rel":
        ops = {"union": lambda a, b: a | b, "xor": lambda a, b: a ^ b, "intersection": lambda a, b: a & b}
        fits = [n for n, f in ops.items()
                if all(f(set(r[0]["strokes"]), set(r[1]["strokes"])) == set(r[2]["strokes"]) for r in g[:2])]
        assert fits == [rule["op"]]
        return {"strokes": sorted(ops[fits[0]](set(g[2][0]["strokes"]), set(g[2][1]["strokes"])))}
    if op == "VP-Rot":
        cells = [c["glyphs"][0] for c in g[0] if c is not None]
        step = (cells[1]["angle"] - cells[0]["angle"]) % 360
        assert all((b["angle"] - a["angle"]) % 360 == step for a, b in zip(cells, cells[1:], strict=False))
        return {"glyphs": [{**cells[-1], "angle": (cells[-1]["angle"] + step) % 360}]}
    if op == "VP-Fold":
        holes = {tuple(h) for h in rule["punched"]}
        mirror = {(3 - x, y) if rule["axis"] == "vertical" else (x, 3 - y) for x, y in holes}
        return {"holes": sorted(holes | mirror)}
    raise AssertionError(op)


def _probe_truth(meta: dict, probe: dict) -> object:
    attr = probe["attribute"]
    if "row" in probe:
        cell = meta["grid"][probe["row"]][probe["col"]]
        if "strokes" in cell:
            return {"n_strokes": len(cell["strokes"]),
                    "has_main_diagonal": "yes" if "main diagonal" in cell["strokes"] else "no",
                    "has_top_edge": "yes" if "top edge" in cell["strokes"] else "no"}[attr]
        g = cell["glyphs"][0]
        if attr == "count":
            return len(cell["glyphs"])
        if attr == "slot":
            return BORDER[g["slot"]]
        return g[attr]
    r = meta["rule"]
    return {"n_candidates": len(meta["candidates"]), "n_punched": len(r.get("punched", [])),
            "axis": f"{r.get('axis')} midline", "kept": r.get("kept"),
            "hole_at": "yes" if probe.get("hole") in r.get("punched", []) else "no"}[attr]


def test_stembind_golds_rederived(demo):
    items = _items(demo, "stembind")
    ops = set()
    for gid, its in _groups(items).items():
        kinds = [it["kind"] for it in its]
        assert kinds.count("R") == 1 and kinds.count("F") == 1 and kinds.count("P") >= 1
        f = next(it for it in its if it["kind"] == "F")
        m = f["meta"]
        ops.add(m["operation"])
        assert set(f["stages"]) == {"S1", "S2", "S3", "S4"} and all(f["stages"].values())
        assert 4 <= len(m["candidates"]) <= 8
        want = _key(_expected_cell(m))
        matches = [i for i, c in enumerate(m["candidates"]) if _key(c) == want]
        assert len(matches) == 1, (gid, m["operation"])
        assert f["answer"] == "ABCDEFGH"[matches[0]]
        assert f["answer"] in f["stages"]["S4"]
        for p in (it for it in its if it["kind"] == "P"):
            probe = p["meta"]["probe"]
            truth = _probe_truth(p["meta"], probe)
            assert p["options"][p["answer"]] == str(truth), p["item_id"]
    assert len(ops) >= 5 and any(o.startswith("RI") for o in ops) and any(o.startswith("VP") for o in ops)


# ------------------------------------------------------------------ SPUR: answers from the numbers


def _trend_word(vals: list[float]) -> str:
    if (max(vals) - min(vals)) / vals[0] < 0.15:
        return "stays about the same"
    diffs = [b - a for a, b in zip(vals, vals[1:], strict=False)]
    if all(d > 0 for d in diffs):
        return "increases steadily"
    if all(d < 0 for d in diffs):
        return "decreases steadily"
    return "first increases, then decreases"


def test_spur_golds_rederived(demo):
    items = _items(demo, "spur")
    kinds = set()
    for it in items:
        m, ex, t = it["meta"], it["meta"]["experiment"], it["meta"]["target"]
        panels = {p["letter"]: p for p in m["panels"]}
        assert 8 <= len(panels) <= 16
        assert len({p["type"] for p in m["panels"]}) >= 4
        gold = it["options"][it["answer"]]
        kinds.add(it["kind"])
        if it["kind"] == "NP":
            if t["quantity"] == "marker_level":
                v = ex["marker_level"][ex["conditions"].index(t["condition"])]
            else:
                v = ex["curves"][t["condition"]][-1]
            nums = {k: float(o) for k, o in it["options"].items()}
            assert min(nums, key=lambda k: abs(nums[k] - v)) == it["answer"]
        elif it["kind"] == "MP":
            assert panels[t["panel"]]["morphology_name"] == gold
        elif it["kind"] == "IL":
            p = panels[gold.split()[-1]]
            assert p["type"] == "stain" and p["condition"] == t["condition"] and p["set"] == 1
        elif it["kind"] == "TA":
            assert gold == _trend_word([panels[x]["positive"] for x in t["panels"]])
            assert m["n_relations"] == len(t["panels"]) - 1
        elif it["kind"] == "HI":
            blot = _trend_word(ex["blot"]).replace("increases steadily", "increases").replace(
                "decreases steadily", "decreases").replace("first increases, then decreases", "rises then falls")
            viab = _trend_word(ex["viability"]).replace("increases steadily", "increases").replace(
                "decreases steadily", "decreases").replace("first increases, then decreases", "rises then falls")
            assert gold == f"The {ex['marker']} band {blot} while viability {viab}"
        elif it["kind"] == "Qual":
            word = _trend_word(ex["marker_level"])
            key = {"increases steadily": "increases", "decreases steadily": "suppresses",
                   "first increases, then decreases": "intermediate", "stays about the same": "no clear effect"}[word]
            assert key in gold
        else:
            pct = 100 * (ex["marker_level"][3] / ex["marker_level"][0] - 1)
            nums = {k: float(o.rstrip("%")) for k, o in it["options"].items()}
            assert min(nums, key=lambda k: abs(nums[k] - pct)) == it["answer"]
        assert m["stage"] and m["discipline"] and m["paradigm"] and m["staining"]
    assert kinds == {"NP", "MP", "IL", "TA", "HI", "Qual", "Quant"}


# ------------------------------------------------------------------ runs, determinism, import


def test_synthetic_runs_cover_the_views(demo):
    root, manifest = demo
    runs = manifest["runs"]
    assert all(r["config"]["synthetic"] is True and name.startswith("synth-") for name, r in runs.items())
    fe = [json.loads(x) for x in (root / runs["synth-fe-frameaware"]["file"]).read_text().splitlines()]
    assert {r["rotation"] for r in fe} == {0, 1, 2, 3} and {r["repeat"] for r in fe} == {0, 1}
    modes = {r["config"]["input_mode"] for r in runs.values() if r["benchmark"] == "frameevidence"}
    assert {"all", "text", "first"} <= modes
    levels = {r["config"].get("ssa_level") for r in runs.values()}
    assert {"H0", "H1", "H2", "H3", "H4", "irrelevant"} <= levels
    strategies = {(r["config"]["model"], r["config"]["strategy"]) for r in runs.values() if r["benchmark"] == "stembind"}
    assert ("synthetic/balanced-v1", "direct") in strategies and ("synthetic/balanced-v1", "thinking") in strategies
    statuses = set()
    traces = 0
    for r in runs.values():
        for line in (root / r["file"]).read_text().splitlines():
            row = json.loads(line)
            statuses.add(row["status"])
            traces += bool(row.get("trace"))
    assert statuses == {"ok", "invalid", "api_error"} and traces > 0


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(p.relative_to(root).as_posix().encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def test_generation_is_deterministic(tmp_path: Path):
    sizes = {"frameevidence": {"splits": (("test", 2), ("train", 1))}, "stembind": {"n_stems": 7},
             "spur": {"n_figures": 2}}
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    generate_all(a, seed=5, sizes=sizes)
    generate_all(b, seed=5, sizes=sizes)
    generate_all(c, seed=6, sizes=sizes)
    assert _digest(a) == _digest(b) != _digest(c)


def test_demo_store_imports_through_the_importers(tmp_path: Path):
    import db.importers as importers
    from db.demo import build_demo_store
    from db.store import Store

    assert hasattr(importers, "import_items") and hasattr(importers, "import_predictions")
    store = Store(tmp_path / "demo.sqlite")
    messages: list[str] = []
    out = build_demo_store(store, tmp_path / "work", seed=1, progress=messages.append, sizes=SMALL)
    assert set(out["benchmarks"]) == set(FAMILIES)
    assert out["seconds"] >= 0 and any("Demo store ready" in m for m in messages)
    runs = {r["name"]: r for r in store.runs()}
    assert all(r["synthetic"] for n, r in runs.items() if n.startswith("synth-"))
    assert not any(r["synthetic"] for n, r in runs.items() if n.startswith("baseline-"))
    assert len(store.items("stembind")) == out["benchmarks"]["stembind"]["items"]
    again = build_demo_store(store, tmp_path / "work", seed=1, progress=None, sizes=SMALL)
    assert all(b["unchanged"] for b in again["benchmarks"].values())
    assert not any(n.startswith("synth-") for n in again["runs"])
