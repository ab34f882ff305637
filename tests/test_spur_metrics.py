"""SPUR metrics (paper 001) on hand-computed tables and Table 3's own numbers."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from bootstrap_ref import ratio_interval

from core import stats
from core.errors import MetricUndefined
from core.families.spur import metrics as spur
from core.schema import PRED_COLUMNS, Rate, RunData, to_jsonable
from tests.helpers import family_score


def _item(item_id: str, figure: str, task: str, **meta) -> dict:
    return {
        "item_id": item_id, "group_id": figure, "split": "test", "kind": task, "variant": "", "question": "q",
        "options": {"A": "a", "B": "b"}, "letters": "AB", "answer": "A", "n_images": 1, "images": [],
        "meta": {"discipline": "Cell Biology", **meta}, "stages": None,
    }


def make_items(rows: list[tuple]) -> pd.DataFrame:
    """rows: (item_id, figure, task, meta dict)."""
    return pd.DataFrame([_item(i, g, t, **m) for i, g, t, m in rows])


def make_run(name: str, correct: dict[str, bool], repeats: int = 1, **config) -> RunData:
    rows = [{
        "item_id": item_id, "rotation": 0, "repeat": rep, "status": "ok", "answer": "A" if ok else "B",
        "shown": None, "response": "", "input_mode": config.get("input_mode", "all"), "trace": None,
        "tokens": float("nan"), "latency": None, "probs": None, "error": None,
    } for item_id, ok in correct.items() for rep in range(repeats)]
    cfg = {"model": "m", "strategy": "direct", "input_mode": "all", **config}
    return RunData(name, "spur", "spur", cfg, pd.DataFrame(rows, columns=list(PRED_COLUMNS)))


# --------------------------------------------------------------------------- tasks, stages, overall

TASK_TABLE = [
    # task, n items, k correct
    ("NP", 4, 1), ("MP", 2, 2), ("IL", 2, 1), ("TA", 3, 1), ("HI", 1, 1), ("Qual", 2, 2), ("Quant", 4, 1),
]


def _task_items_and_run():
    rows, correct = [], {}
    for task, n, k in TASK_TABLE:
        for i in range(n):
            item_id = f"{task}-{i}"
            rows.append((item_id, f"fig{i % 3}", task, {}))
            correct[item_id] = i < k
    return make_items(rows), make_run("r", correct)


@pytest.mark.parametrize(("task", "n", "k"), TASK_TABLE)
def test_task_accuracy(task, n, k):
    items, run = _task_items_and_run()
    rate = family_score(spur.score, items, run, seed=None)["tasks"][task]
    assert (rate.k, rate.n) == (k, n)


@pytest.mark.parametrize(("key", "k", "n"), [
    ("perception", 4, 8),  # NP 1/4 + MP 2/2 + IL 1/2 (micro, not the mean of 0.25, 1, 0.5)
    ("understanding", 2, 4),
    ("reasoning", 3, 6),
    ("overall", 9, 18),  # micro over every item
])
def test_stage_micro_averages_and_overall(key, k, n):
    items, run = _task_items_and_run()
    out = family_score(spur.score, items, run)
    assert (out[key].k, out[key].n) == (k, n)
    assert out[key].ci is not None and out[key].ci[0] <= out[key].value <= out[key].ci[1]
    # the interval: figures fig0..fig2 resampled whole, k / n per figure counted from TASK_TABLE by hand
    stage = {"perception": ("NP", "MP", "IL"), "understanding": ("TA", "HI"), "reasoning": ("Qual", "Quant"),
             "overall": tuple(t for t, _, _ in TASK_TABLE)}[key]
    per_k, per_n = np.zeros(3), np.zeros(3)
    for task, size, right in TASK_TABLE:
        for i in range(size if task in stage else 0):
            per_n[i % 3] += 1
            per_k[i % 3] += i < right
    assert out[key].ci == ratio_interval(per_k, per_n, seed=stats.DEFAULT_SEED)


# Table 3 rows (NP, MP, IL, P micro, TA, HI, U micro, Qual, Quant, R micro, Overall), in %.
TABLE3 = {
    "Gemini 3 Pro Preview": (61.26, 67.74, 59.67, 62.92, 51.04, 59.23, 51.77, 90.31, 58.90, 70.29, 60.57),
    "GPT-5.1": (58.73, 61.72, 54.47, 58.33, 51.18, 50.78, 51.15, 86.52, 56.36, 67.23, 57.68),
    "GLM-4.5V": (57.70, 61.99, 57.65, 59.12, 55.71, 68.46, 56.83, 80.94, 58.48, 66.59, 59.87),
    "Ministral 3 8B": (51.57, 57.03, 57.03, 55.19, 57.49, 66.15, 58.25, 70.85, 53.53, 59.77, 57.21),
}
# Table 2 counts, with Qual / Quant as Table 3's averages imply: 319 Qual and 567 Quant (Table 2 prints
# 567 / 319; only the swapped pair reproduces Table 3's reasoning and overall micro averages, and it matches
# Table 1's 36.1% / 63.9% Qual / Quant split).
COUNTS = {"NP": 636, "MP": 634, "IL": 621, "TA": 1357, "HI": 130, "Qual": 319, "Quant": 567}


@pytest.mark.parametrize("model", list(TABLE3))
def test_paper_table3_micro_averages(model):
    row = TABLE3[model]
    acc = dict(zip(spur.TASKS, [row[0], row[1], row[2], row[4], row[5], row[7], row[8]], strict=True))
    rows, correct = [], {}
    for task in spur.TASKS:
        n = COUNTS[task]
        k = round(acc[task] / 100 * n)
        for i in range(n):
            rows.append((f"{task}-{i}", f"f{i}", task, {}))
            correct[f"{task}-{i}"] = i < k
    out = family_score(spur.score, make_items(rows), make_run("r", correct), seed=None)
    assert out["overall"].n == 4264
    for key, paper in (("perception", row[3]), ("understanding", row[6]), ("reasoning", row[9]),
                       ("overall", row[10])):
        # per-task inputs are rounded to integer counts, so allow 0.1 pp
        assert 100 * out[key].value == pytest.approx(paper, abs=0.1), key


# --------------------------------------------------------------------------- breakdowns


def test_staining_deviation_from_perception_micro():
    rows = [
        ("np0", "f0", "NP", {}), ("np1", "f0", "NP", {}),  # no staining tag: in the micro average only
        ("mp0", "f1", "MP", {"staining": "Cell"}), ("mp1", "f1", "MP", {"staining": "Cell"}),
        ("mp2", "f2", "MP", {"staining": "Microorganism"}), ("il0", "f2", "IL", {"staining": "Tissue"}),
        ("ta0", "f2", "TA", {"staining": "Cell"}),  # not a perception item: ignored here
    ]
    correct = {"np0": True, "np1": False, "mp0": True, "mp1": True, "mp2": False, "il0": True, "ta0": False}
    out = family_score(spur.score, make_items(rows), make_run("r", correct), seed=None)
    micro = 4 / 6
    st = out["by_staining"]
    assert list(st) == ["Cell", "Tissue", "Microorganism"]  # paper order of the present categories
    assert (st["Cell"]["accuracy"].k, st["Cell"]["accuracy"].n) == (2, 2)
    assert st["Cell"]["deviation"].value == pytest.approx(1 - micro)
    assert st["Microorganism"]["deviation"].value == pytest.approx(0 - micro)
    assert st["Tissue"]["deviation"].value == pytest.approx(1 - micro)


def test_relations_and_paradigm_breakdowns():
    rows = [
        ("ta0", "f0", "TA", {"n_relations": 1}), ("ta1", "f0", "TA", {"n_relations": 1}),
        ("ta2", "f1", "TA", {"n_relations": 4}), ("hi0", "f1", "HI", {"n_relations": 1}),
        ("q0", "f0", "Qual", {"paradigm": "CE"}), ("q1", "f1", "Quant", {"paradigm": "IS"}),
        ("q2", "f1", "Quant", {"paradigm": "IS"}), ("np0", "f0", "NP", {"paradigm": "CE", "n_relations": 2}),
    ]
    correct = {"ta0": True, "ta1": False, "ta2": False, "hi0": True, "q0": True, "q1": True, "q2": False,
               "np0": True}
    out = family_score(spur.score, make_items(rows), make_run("r", correct), seed=None)
    rel = out["by_n_relations"]
    assert {k: (v.k, v.n) for k, v in rel["understanding"].items()} == {"1": (2, 3), "4": (0, 1)}
    assert {k: (v.k, v.n) for k, v in rel["TA"].items()} == {"1": (1, 2), "4": (0, 1)}
    assert {k: (v.k, v.n) for k, v in rel["HI"].items()} == {"1": (1, 1)}
    assert {k: (v.k, v.n) for k, v in out["by_paradigm"].items()} == {"CE": (1, 1), "IS": (1, 2)}


# --------------------------------------------------------------------------- Table 5 split

SPLIT_CASES = [
    # perception items of the figure (answers), reasoning answers, expected side
    ([True, True], [True, False], "perception_correct"),
    ([True, False], [True, True], "perception_incorrect"),
    ([False], [False], "perception_incorrect"),
    ([], [True], "excluded"),  # figure without perception items
    ([True, None], [True], "excluded"),  # a perception item the run did not answer
    ([False, None], [False], "perception_incorrect"),  # one known error is enough
    ([None], [True], "excluded"),  # the figure's only perception item not answered
]


@pytest.mark.parametrize(("perc", "reas", "side"), SPLIT_CASES)
def test_reasoning_by_perception_rule(perc, reas, side):
    rows, correct = [], {}
    for i, ok in enumerate(perc):
        rows.append((f"p{i}", "fig", ("NP", "MP", "IL")[i % 3], {}))
        if ok is not None:
            correct[f"p{i}"] = ok
    for i, ok in enumerate(reas):
        rows.append((f"r{i}", "fig", "Qual", {}))
        correct[f"r{i}"] = ok
    out = spur.reasoning_by_perception(make_items(rows), make_run("r", correct))
    if side == "excluded":
        assert out["n_excluded"] == len(reas)
        assert out["perception_correct"].n == 0 and out["perception_incorrect"].n == 0
        assert out["perception_correct"].reason
    else:
        assert (out[side].k, out[side].n) == (sum(reas), len(reas))
        assert out["n_excluded"] == 0


def test_reasoning_split_vs_direct_in_score():
    rows = [("p0", "a", "NP", {}), ("r0", "a", "Qual", {}), ("r1", "a", "Quant", {}),
            ("p1", "b", "MP", {}), ("r2", "b", "Qual", {})]
    items = make_items(rows)
    direct = make_run("direct", {"p0": True, "r0": True, "r1": False, "p1": False, "r2": True})
    cot = make_run("vot", {"p0": True, "r0": True, "r1": True, "p1": False, "r2": False}, strategy="VoT")
    out = family_score(spur.score, items, cot, [direct], seed=None)["reasoning_by_perception"]
    assert out["perception_correct"].value == pytest.approx(1.0)
    assert out["vs_direct"]["perception_correct"].value == pytest.approx(0.5)
    assert out["vs_direct"]["perception_incorrect"].value == pytest.approx(-1.0)
    assert out["vs_direct"]["direct"] == "direct"


def test_vs_direct_takes_the_first_by_name_of_the_models_direct_runs_in_its_input_mode():
    """The direct run compared against: same benchmark, same model, strategy direct and the same input mode;
    of several, the first by name (whatever order the runs come in)."""
    rows = [("p0", "a", "NP", {}), ("r0", "a", "Qual", {}), ("p1", "b", "MP", {}), ("r1", "b", "Qual", {})]
    items = make_items(rows)
    cot = make_run("vot", {"p0": True, "r0": True, "p1": False, "r1": True}, strategy="VoT")
    others = [make_run("direct-b", {"p0": True, "r0": False, "p1": False, "r1": False}),
              make_run("direct-a", {"p0": True, "r0": True, "p1": False, "r1": False}),
              make_run("aaa-other-model", {"p0": True, "r0": False, "p1": False, "r1": True}, model="other"),
              make_run("aaa-cot", {"p0": True, "r0": False, "p1": False, "r1": True}, strategy="CoT"),
              make_run("aaa-text", {"p0": True, "r0": False, "p1": False, "r1": True}, input_mode="text")]
    vs = family_score(spur.score, items, cot, others, seed=None)["reasoning_by_perception"]["vs_direct"]
    assert vs["direct"] == "direct-a"
    assert vs["perception_correct"].value == pytest.approx(0.0)  # 1.0 - direct-a's 1.0
    assert vs["perception_incorrect"].value == pytest.approx(1.0)  # 1.0 - direct-a's 0.0


# --------------------------------------------------------------------------- text-only shortcut filter


@pytest.mark.parametrize(("n_correct", "k", "flagged"), [
    (4, 5, False), (5, 5, True), (10, 5, True), (0, 5, False), (3, 3, True), (4, None, False), (5, None, True),
])
def test_shortcut_flags_k_of_10(n_correct, k, flagged):
    items = make_items([("q", "f", "TA", {})])
    runs = [make_run(f"t{i}", {"q": i < n_correct}, input_mode="text") for i in range(10)]
    out = spur.shortcut_flags(items, runs, k)
    assert out.loc[0, "n_trials"] == 10 and out.loc[0, "n_correct"] == n_correct
    assert out["n_trials"].dtype.kind == out["n_correct"].dtype.kind == "i"  # counts, not floats
    assert bool(out.loc[0, "flagged"]) is flagged


def test_shortcut_flags_count_repeats_as_trials_and_unanswered_items():
    items = make_items([("q", "f", "TA", {}), ("u", "f", "TA", {})])
    run = make_run("t", {"q": True}, repeats=10, input_mode="text")  # one run, 10 randomized repeats
    out = spur.shortcut_flags(items, [run], 5).set_index("item_id")
    assert out.loc["q", "n_trials"] == 10 and bool(out.loc["q", "flagged"])
    assert out.loc["u", "n_trials"] == 0 and not bool(out.loc["u", "flagged"])


def test_shortcut_in_score():
    items = make_items([("a", "f", "NP", {}), ("b", "f", "TA", {})])
    full = make_run("full", {"a": True, "b": True})
    text = make_run("text", {"a": True, "b": False}, input_mode="text")
    out = family_score(spur.score, items, full, [text], seed=None)["shortcut"]
    assert (out["flagged"].k, out["flagged"].n) == (1, 2)
    assert out["flagged_items"] == ["a"] and out["runs"] == ["text"]
    assert family_score(spur.score, items, full, [], seed=None)["shortcut"].reason


# Two text-only models with 10 randomized trials each (001 §2.3). Item "q": gpt answers it 6 of 10 times, qwen 2
# of 10 (pooled 8 of 20: not flagged); item "r": gpt 4, qwen 6 (pooled 10 of 20: flagged by the pool only
# through qwen's share); item "s": never right.
SHORTCUT_TRIALS = {"gpt-4o": {"q": 6, "r": 4, "s": 0}, "qwen": {"q": 2, "r": 6, "s": 0}}


def _two_model_runs():
    items = make_items([("q", "f", "TA", {}), ("r", "f", "TA", {}), ("s", "f", "TA", {})])
    runs = [make_run(f"{m}-t{i}", {it: i < n for it, n in per.items()}, input_mode="text", model=m)
            for m, per in SHORTCUT_TRIALS.items() for i in range(10)]
    return items, make_run("full", {"q": True, "r": True, "s": True}, model="gpt-4o"), runs


@pytest.mark.parametrize(("model", "pool", "label", "flagged", "items_flagged"), [
    ("gpt-4o", False, "gpt-4o", (1, 3), ["q"]),
    ("qwen", False, "qwen", (1, 3), ["r"]),
    (None, True, "pooled: gpt-4o + qwen", (1, 3), ["r"]),   # q: 8/20 < 10, r: 10/20 >= 10
])
def test_shortcut_counted_per_model_and_pooled_only_on_request(model, pool, label, flagged, items_flagged):
    items, full, text = _two_model_runs()
    out = family_score(spur.score, items, full, text, seed=None, shortcut_model=model, shortcut_pool=pool)["shortcut"]
    assert out["model"] == label and out["pooled"] is pool
    assert (out["flagged"].k, out["flagged"].n) == flagged and out["flagged_items"] == items_flagged
    assert out["trials"] == ({"min": 20, "max": 20} if pool else {"min": 10, "max": 10})
    # every model's own count is always there, never pooled
    by = out["by_model"]
    assert by["gpt-4o"]["flagged_items"] == ["q"] and by["qwen"]["flagged_items"] == ["r"]
    assert len(by["gpt-4o"]["runs"]) == 10 and not by["qwen"]["pooled"]


def test_shortcut_with_several_models_and_no_choice_gives_a_reason():
    items, full, text = _two_model_runs()
    out = family_score(spur.score, items, full, text, seed=None)["shortcut"]
    assert out["flagged"].value is None and "2 text-only models (gpt-4o, qwen)" in out["flagged"].reason
    assert out["models"] == ["gpt-4o", "qwen"] and set(out["by_model"]) == {"gpt-4o", "qwen"}
    one = family_score(spur.score, items, full, [r for r in text if r.config["model"] == "qwen"], seed=None)["shortcut"]
    assert one["model"] == "qwen" and one["flagged_items"] == ["r"]  # a single model needs no choice


@pytest.mark.parametrize(("model", "pool", "message"), [
    ("gpt-5", False, "no text-only run of model 'gpt-5' for the shortcut filter (text-only models: gpt-4o, qwen)"),
    ("qwen", True, "not both"),
])
def test_shortcut_choice_refused(model, pool, message):
    items, full, text = _two_model_runs()
    with pytest.raises(MetricUndefined, match=re.escape(message)):
        family_score(spur.score, items, full, text, seed=None, shortcut_model=model, shortcut_pool=pool)


# --------------------------------------------------------------------------- edge cases


def test_repeats_need_every_prediction_correct():
    items = make_items([("a", "f", "NP", {})])
    preds = pd.DataFrame([
        {"item_id": "a", "rotation": 0, "repeat": 0, "status": "ok", "answer": "A"},
        {"item_id": "a", "rotation": 0, "repeat": 1, "status": "invalid", "answer": None},
    ])
    out = family_score(spur.score, items, RunData("r", "spur", "spur", {}, preds), seed=None)
    assert (out["tasks"]["NP"].k, out["tasks"]["NP"].n) == (0, 1)


def test_missing_tasks_give_reasons_and_json():
    items = make_items([("a", "f", "NP", {})])
    out = family_score(spur.score, items, make_run("r", {"a": True}))
    assert out["tasks"]["Quant"].value is None and "no Quant items" in out["tasks"]["Quant"].reason
    assert out["reasoning"].value is None
    assert out["overall"].k == 1
    js = to_jsonable(out)
    assert js["tasks"]["NP"] == {"value": 1.0, "k": 1, "n": 1, "ci": [1.0, 1.0]}
    assert isinstance(out["shortcut"], Rate)


def test_score_cli_shortcut_model_and_pool(tmp_path, capsys):
    """`score --shortcut-model ID` / `--shortcut-pool` on a real store: SPUR items and ten text-only trials of
    each of two models imported as predictions."""
    import json

    import app
    from db.importers import import_items, import_predictions
    from db.store import Store

    db = tmp_path / "s.db"
    store = Store(db)
    lines = [{"benchmark": "spur", "item_id": i, "group_id": "fig1", "kind": "TA", "question": f"What changes? {i}",
              "options": {"A": "it rises", "B": "it falls"}, "answer": "A", "meta": {"discipline": "Cell Biology"}}
             for i in ("q", "r", "s")]
    items_path = tmp_path / "items.jsonl"
    items_path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    import_items(store, items_path, name="sp")
    for model, per in SHORTCUT_TRIALS.items():
        for t in range(10):
            pred = tmp_path / f"{model}-{t}.jsonl"
            pred.write_text("".join(json.dumps({"item_id": it, "response": "A" if t < n else "B"}) + "\n"
                                    for it, n in per.items()))
            import_predictions(store, pred, f"{model}-t{t}", model=model, benchmark="sp",
                               config={"input_mode": "text"})
    full = tmp_path / "full.jsonl"
    full.write_text("".join(json.dumps({"item_id": it, "response": "A"}) + "\n" for it in ("q", "r", "s")))
    import_predictions(store, full, "full", model="gpt-4o", benchmark="sp")

    def shortcut(*flags):
        capsys.readouterr()
        assert app.main(["score", "--db", str(db), "--run", "full", "--json", *flags]) == 0
        return json.loads(capsys.readouterr().out)["metrics"]["shortcut"]

    assert "2 text-only models" in shortcut()["flagged"]["reason"]
    assert shortcut("--shortcut-model", "qwen")["flagged_items"] == ["r"]
    pooled = shortcut("--shortcut-pool")
    assert pooled["model"] == "pooled: gpt-4o + qwen" and pooled["pooled"] is True
    assert app.main(["score", "--db", str(db), "--run", "full", "--shortcut-model", "gpt-5"]) == 2
    assert "text-only models: gpt-4o, qwen" in capsys.readouterr().err


# --------------------------------------------------------------------------- survivors of the mutation run (#28)


def test_breakdown_values_numbers_numerically_then_text_then_paper_order_first():
    """App. C.2's relation counts read as numbers (2 before 10), a non-numeric count after every number; the
    paradigms in 001's order (CE, AE, OS, IS, P&I) first, any other value after them in text order."""
    rows = [("t0", "f0", "TA", {"n_relations": 10}), ("t1", "f0", "TA", {"n_relations": "many"}),
            ("t2", "f1", "TA", {"n_relations": 2}), ("t3", "f1", "TA", {"n_relations": 1.5}),
            ("h0", "f0", "HI", {"n_relations": 3}), ("h1", "f1", "HI", {}),
            ("q0", "f0", "Qual", {"paradigm": "ZZ"}), ("q1", "f0", "Qual", {"paradigm": "IS"}),
            ("q2", "f1", "Quant", {"paradigm": "AA"}), ("q3", "f1", "Quant", {"paradigm": "CE"})]
    correct = {"t0": True, "t1": False, "t2": True, "t3": True, "h0": True, "h1": False, "q0": True, "q1": False,
               "q2": True, "q3": True}
    out = family_score(spur.score, make_items(rows), make_run("r", correct), seed=None)
    assert list(out["by_n_relations"]["understanding"]) == ["1.5", "2", "3", "10", "many"]
    # an item without the field is left out, and a whole count stays a whole count beside it
    assert {k: (v.k, v.n) for k, v in out["by_n_relations"]["HI"].items()} == {"3": (1, 1)}
    assert list(out["by_paradigm"]) == ["CE", "IS", "AA", "ZZ"]
    assert {k: (v.k, v.n) for k, v in out["by_paradigm"].items()} == {"CE": (1, 1), "IS": (0, 1), "AA": (1, 1),
                                                                        "ZZ": (1, 1)}


CORRECT_SIDE = "no reasoning items on figures with all perception correct to count"
ERROR_SIDE = "no reasoning items on figures with a perception error to count"


@pytest.mark.parametrize("vot_perception_right", [True, False])
def test_vs_direct_difference_undefined_with_the_empty_side_s_reason(vot_perception_right):
    """One figure, its perception item right in one run and wrong in the other: each side is empty in one of
    the two runs, so both VoT - direct differences are undefined, each with its empty side's reason."""
    items = make_items([("p0", "a", "NP", {}), ("r0", "a", "Qual", {})])
    direct = make_run("direct", {"p0": not vot_perception_right, "r0": False})
    vot = make_run("vot", {"p0": vot_perception_right, "r0": True}, strategy="VoT")
    vs = family_score(spur.score, items, vot, [direct], seed=None)["reasoning_by_perception"]["vs_direct"]
    assert (vs["perception_correct"].value, vs["perception_correct"].reason) == (None, CORRECT_SIDE)
    assert (vs["perception_incorrect"].value, vs["perception_incorrect"].reason) == (None, ERROR_SIDE)


def test_shortcut_block_half_of_uneven_trials_and_its_keys():
    """`k=None`: each item needs half of its own trials (001 §2.3's 5 of 10), rounded up: 2 of 4 trials flags,
    2 of 5 does not; the block names its runs sorted, its trial range and its rule."""
    items = make_items([("q", "f", "TA", {}), ("r", "f", "TA", {}), ("s", "f", "TA", {})])
    runs = [make_run(f"t{i}", {"q": i < 2, **({"r": i < 2} if i < 4 else {})}, input_mode="text")
            for i in (4, 0, 3, 1, 2)]  # q: 2 of 5 trials, r: 2 of 4, s: never asked
    out = spur.shortcut_summary(items, runs)
    assert out["model"] == "m" and out["pooled"] is False and out["models"] == ["m"]
    assert (out["flagged"].k, out["flagged"].n) == (1, 2) and out["flagged_items"] == ["r"]
    assert out["k"] == "half of the trials" and out["trials"] == {"min": 4, "max": 5}
    assert out["runs"] == ["t0", "t1", "t2", "t3", "t4"]
    fixed = spur.shortcut_summary(items, runs, k=2)
    assert fixed["k"] == 2 and fixed["flagged_items"] == ["q", "r"]


def test_shortcut_block_without_any_text_prediction_gives_its_reason():
    items = make_items([("q", "f", "TA", {})])
    other = make_run("t", {"elsewhere": True}, input_mode="text")  # answers no item of this benchmark
    out = spur.shortcut_summary(items, [other])
    assert out["flagged"].value is None and out["flagged"].reason == "no item has a text-only prediction"
    assert (out["flagged"].k, out["flagged"].n) == (0, 0) and out["trials"] == {"min": 0, "max": 0}
    assert out["flagged_items"] == []
    flags = spur.shortcut_flags(items, [other])
    assert flags.to_dict("records") == [{"item_id": "q", "n_trials": 0, "n_correct": 0, "flagged": False}]


@pytest.mark.parametrize(("k", "shown"), [(None, "half of the trials"), (3, 3)])
def test_shortcut_headline_with_several_models_and_no_choice(k, shown):
    items, _, text = _two_model_runs()
    out = spur.shortcut_summary(items, text, k=k)
    assert out["model"] is None and out["pooled"] is False and out["k"] == shown
    assert out["runs"] == [] and out["flagged_items"] == []
    assert out["flagged"].reason == ("2 text-only models (gpt-4o, qwen): the filter is counted per model (001 "
                                     "§2.3); choose one (score --shortcut-model ID) or pool them (--shortcut-pool)")


def test_shortcut_model_refused_when_there_is_no_text_only_run():
    with pytest.raises(MetricUndefined, match=re.escape("(text-only models: none)")):
        spur.shortcut_summary(make_items([("q", "f", "TA", {})]), [], model="gpt-4o")
