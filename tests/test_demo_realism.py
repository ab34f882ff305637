"""The demo looks like data (issue 14.10): its text-only runs answer near chance, not 0%, and the SSA panel of
the SSA runs' model finds them (find_ssa_runs matches SSA-protocol runs whatever their strategy)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from core.demo import SMALL, generate_all
from core.schema import RunData
from db.frames import PRED_COLUMNS


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("demo")
    return root, generate_all(root, seed=3, sizes=SMALL)


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _items(demo, family: str) -> dict[str, dict]:
    root, manifest = demo
    return {it["item_id"]: it for it in _jsonl(root / manifest["benchmarks"][family]["items_file"])}


def _run(demo, name: str) -> RunData:
    root, manifest = demo
    spec = manifest["runs"][name]
    rows = [{c: r.get(c) for c in PRED_COLUMNS} | {"rotation": r.get("rotation", 0), "repeat": r.get("repeat", 0),
                                                   "input_mode": r.get("input_mode", "all")}
            for r in _jsonl(root / spec["file"])]
    return RunData(name, spec["benchmark"], spec["benchmark"], spec["config"], pd.DataFrame(rows, columns=PRED_COLUMNS))


@pytest.mark.parametrize("run,family", [
    ("synth-fe-frameaware-text", "frameevidence"),
    ("synth-sb-balanced-text", "stembind"),
    ("synth-spur-textonly-s1", "spur"),
])
def test_text_only_runs_answer_near_chance(run, family, demo):
    """Accuracy over the answered rows lies within 3 binomial SDs (plus the profile's position bias, 0.1) of
    chance, 1 / number of options averaged over the items; and never 0."""
    root, manifest = demo
    items = _items(demo, family)
    rows = [r for r in _jsonl(root / manifest["runs"][run]["file"]) if r["status"] == "ok"]
    assert manifest["runs"][run]["config"]["input_mode"] == "text" and len(rows) >= 20
    right = sum(r["answer"] == items[r["item_id"]]["answer"] for r in rows)  # rotation 0: shown = original
    acc = right / len(rows)
    chance = sum(1 / len(items[r["item_id"]]["options"]) for r in rows) / len(rows)
    sd = math.sqrt(chance * (1 - chance) / len(rows))
    assert right > 0
    assert abs(acc - chance) <= 3 * sd + 0.1, (acc, chance)


def test_text_only_run_is_worse_than_its_full_image_partner(demo):
    items = _items(demo, "frameevidence")
    acc = {}
    for name in ("synth-fe-frameaware", "synth-fe-frameaware-text"):
        preds = _run(demo, name).preds
        ok = preds[(preds["status"] == "ok") & (preds["rotation"] == 0) & (preds["repeat"] == 0)]
        acc[name] = float((ok["answer"].map(lambda a: a) == ok["item_id"].map(lambda i: items[i]["answer"])).mean())
    assert acc["synth-fe-frameaware"] > acc["synth-fe-frameaware-text"] + 0.15


def _f(name: str, **config) -> RunData:
    cfg = {"model": "m", "strategy": "direct", "input_mode": "all", **config}
    return RunData(name, "sb", "stembind", cfg, pd.DataFrame(columns=PRED_COLUMNS))


@pytest.mark.parametrize("scored,others,want", [
    # the SSA protocol's runs say strategy ssa; a thinking run of the model finds them (explicit H0)
    (_f("think", strategy="thinking"), [_f("h0", strategy="ssa", ssa_level="H0"),
                                        _f("h3", strategy="ssa", ssa_level="H3")], {"H0": "h0", "H3": "h3"}),
    # no explicit H0: the scored run (unaugmented, its own strategy) stands for it
    (_f("direct"), [_f("h2", strategy="ssa", ssa_level="H2")], {"H0": "direct", "H2": "h2"}),
    # an unaugmented run of another strategy does not stand for H0
    (_f("direct"), [_f("think", strategy="thinking"), _f("h1", strategy="ssa", ssa_level="H1")],
     {"H0": "direct", "H1": "h1"}),
    # another model's or another input mode's SSA runs are not this run's
    (_f("direct"), [_f("x", model="other", strategy="ssa", ssa_level="H2"),
                    _f("t", input_mode="text", strategy="ssa", ssa_level="H2")], {}),
    # SSA runs scored among themselves still form their curve
    (_f("h4", strategy="ssa", ssa_level="H4"), [_f("h0", strategy="ssa", ssa_level="H0"), _f("direct")],
     {"H0": "h0", "H4": "h4"}),
])
def test_find_ssa_runs(scored, others, want):
    from core.families.stembind.metrics import find_ssa_runs

    assert {lv: r.name for lv, r in find_ssa_runs(scored, others).items()} == want


def test_demo_ssa_panel_finds_the_models_ssa_runs(demo):
    """The Stages · SSA table of the model's own (thinking) run lists every level, as for an SSA run."""
    from core.families.stembind import metrics as sb

    _, manifest = demo
    items_df = pd.DataFrame(list(_items(demo, "stembind").values()))
    names = [n for n, r in manifest["runs"].items() if r["benchmark"] == "stembind"]
    runs = {n: _run(demo, n) for n in names}
    base = runs["synth-sb-binder-weak"]
    levels = sb.find_ssa_runs(base, runs.values())
    assert set(levels) == {"H0", "H1", "H2", "H3", "H4", "irrelevant"}
    assert all(r.config["strategy"] == "ssa" for r in levels.values())
    curve = sb.ssa_curve(items_df, levels)
    assert "reason" not in curve and set(curve["accuracy"]) >= {"H0", "H4"}
