"""Prompt strategies: k-shot pools never touch test groups or images; SSA never carries the answer."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from core import prompts
from core.errors import RunnerError
from core.parsing import rotate_options
from core.runners.base import Dialog, Task
from core.runners.engine import RunSettings, build_tasks, make_view


def _row(item_id, group_id, split, kind, variant, images, answer="A", stages=None, options=None, meta=None):
    options = options or {"A": "前", "B": "后", "C": "左", "D": "右"}
    return {"item_id": item_id, "group_id": group_id, "split": split, "kind": kind, "variant": variant,
            "question": f"Q {item_id}", "options": options, "letters": "".join(options), "answer": answer,
            "n_images": len(images), "images": images, "meta": meta or {}, "stages": stages}


def fe_items() -> pd.DataFrame:
    """FrameEvidence-shaped items: 4 train groups per kind, 2 test groups; traps for the demo pool."""
    rows = []
    for split, n in (("train", 4), ("test", 2)):
        for g in range(n):
            for kind, variants in prompts.DEMO_ORDER.items():
                gid = f"{split}-{kind}-{g}"
                imgs = [f"h-{gid}-{k}" for k in range(3)]
                for v in reversed(variants):  # stored out of order on purpose
                    rows.append(_row(f"{gid}-{v}", gid, split, kind, v, imgs, answer="ABCD"[g % 4]))
    # trap 1: a train group that shares an image with a test item
    rows.append(_row("trap-img-cam", "trap-img", "train", "FQ1", "cam", ["h-test-FQ1-0-1"]))
    # trap 2: a group id that has items in both train and test
    rows.append(_row("trap-grp-a", "trap-grp", "train", "FQ1", "cam", ["h-x1"]))
    rows.append(_row("trap-grp-b", "trap-grp", "test", "FQ1", "obj", ["h-x2"]))
    return pd.DataFrame(rows)


def _view(r):
    return make_view(r, lambda h: Path(f"/img/{h}.png"))


@pytest.mark.parametrize("seed", [0, 1, 2, 20260722])
def test_demo_pool_never_holds_test_groups_or_images(seed):
    items = fe_items()
    pool = prompts.build_demo_pool(items, seed, "test", _view)
    test = items[items["split"] == "test"]
    test_groups, test_images = set(test["group_id"]), {h for imgs in test["images"] for h in imgs}
    assert set(pool) == {"FQ1", "FQ2"}
    for kind, demos in pool.items():
        assert len(demos) == 3
        for d in demos:
            assert d.view.split == "train"
            assert d.view.group_id not in test_groups
            assert d.view.group_id not in ("trap-img", "trap-grp")
            assert not {p.stem for p in d.view.images} & test_images
            assert d.view.kind == kind
        # one group, in the paper's variant order
        assert len({d.view.group_id for d in demos}) == 1
        assert [d.view.variant for d in demos] == list(prompts.DEMO_ORDER[kind])


def test_demo_pool_is_seeded_and_prefixes_nest():
    items = fe_items()
    a = prompts.build_demo_pool(items, 7, "test", _view)
    b = prompts.build_demo_pool(items, 7, "test", _view)
    assert [d.view.item_id for d in a["FQ1"]] == [d.view.item_id for d in b["FQ1"]]
    seeds = {prompts.build_demo_pool(items, s, "test", _view)["FQ1"][0].view.group_id for s in range(12)}
    assert len(seeds) > 1  # the seed chooses among the clean train groups
    # k-shot prompts for k = 1..3 are nested prefixes of one another
    s = RunSettings(benchmark="b", run="r", runner="openai", model="m", shots=3)
    task = build_tasks(items, s, "frameevidence", lambda h: Path(f"/img/{h}.png"))[0]
    texts = []
    for k in (1, 2, 3):
        ctx = prompts.PromptContext(task=task, family="frameevidence", max_tokens=8, demos=a[task.view.kind][:k])
        req = Dialog(task, prompts.dialogue("direct", ctx)).request
        texts.append([prompts.render_text(req).split("\n[user]")[0]])
        assert sum(m["role"] == "assistant" for m in req.messages) == k
    demo_text = [prompts.render_text(Dialog(task, prompts.dialogue("direct", prompts.PromptContext(
        task=task, family="frameevidence", max_tokens=8, demos=a[task.view.kind][:k]))).request) for k in (1, 2, 3)]
    # the k-shot transcript before the test question starts with the (k-1)-shot demos
    assert demo_text[1].startswith(demo_text[0].rsplit("[user]", 1)[0])
    assert demo_text[2].startswith(demo_text[1].rsplit("[user]", 1)[0])


def test_kshot_never_sends_test_images_end_to_end():
    items = fe_items()
    s = RunSettings(benchmark="b", run="r", runner="openai", model="m", shots=3)
    from core.runners.engine import _dialog_factory

    make = _dialog_factory(items, s, "frameevidence", lambda h: Path(f"/img/{h}.png"))
    tasks = build_tasks(items, s, "frameevidence", lambda h: Path(f"/img/{h}.png"))
    test_images = {h for imgs in items[items["split"] == "test"]["images"] for h in imgs}
    for t in tasks:
        req = make(t).request
        demo_imgs = [p["path"].stem for m in req.messages[:-1] for p in m["content"] if p["type"] == "image"]
        assert len(req.messages) == 7 and demo_imgs
        assert not set(demo_imgs) & test_images


def test_kshot_without_enough_clean_train_groups_is_an_error():
    items = fe_items()
    items = items[~items["split"].eq("train") | items["group_id"].str.startswith("trap")]
    s = RunSettings(benchmark="b", run="r", runner="openai", model="m", shots=1)
    from core.runners.engine import _dialog_factory

    make = _dialog_factory(items, s, "frameevidence", lambda h: Path(f"/img/{h}.png"))
    task = build_tasks(items, s, "frameevidence", lambda h: Path(f"/img/{h}.png"))[0]
    with pytest.raises(RunnerError, match="train demonstrations"):
        make(task)


# ---- SSA ------------------------------------------------------------------------------------------------

LEAKY = {
    "S1": "Encode: the stem shows three panels; the answer is (C) as we will see.",
    "S2": "Infer: the rule is rotation by 90 degrees; option C fits. <ANSWER>C</ANSWER>",
    "S3": "Map: apply it to the last panel, which gives two black squares.",
    "S4": "Apply: the target is two black squares, choose C.",
}


def sb_items(answer="C") -> pd.DataFrame:
    opts = {"A": "one white circle", "B": "three dots", "C": "two black squares", "D": "a star"}
    rows = [_row(f"sb{i}-F", f"stem{i}", "test", "F", "", [f"h{i}"], answer=answer,
                 stages={k: v.replace("C", "C") + f" #{i}" for k, v in LEAKY.items()}, options=opts) for i in range(3)]
    rows.append(_row("sb0-P", "stem0", "test", "P", "", ["h0"], answer="A", options=opts))
    return pd.DataFrame(rows)


def _ssa_prompt(items, level, rotation=0, seed=3):
    s = RunSettings(benchmark="b", run="r", runner="openai", model="m", strategy="ssa", ssa_level=level,
                    rotations=rotation + 1)
    from core.runners.engine import _dialog_factory

    make = _dialog_factory(items, s, "stembind", lambda h: Path(f"/img/{h}.png"))
    tasks = [t for t in build_tasks(items, s, "stembind", lambda h: Path(f"/img/{h}.png")) if t.rotation == rotation]
    assert all(t.view.kind == "F" for t in tasks)  # SSA runs F items only
    return {t.view.item_id: prompts.render_text(make(t).request) for t in tasks}, tasks


@pytest.mark.parametrize("level", prompts.SSA_LEVELS)
@pytest.mark.parametrize("rotation", [0, 1, 3])
def test_ssa_prompts_never_contain_the_answer(level, rotation):
    items = sb_items()
    texts, tasks = _ssa_prompt(items, level, rotation)
    for t in tasks:
        text = texts[t.view.item_id]
        injected = text.split("Verified analysis so far", 1)[1] if "Verified analysis" in text else ""
        assert ("Verified analysis" in text) == (level != "H0")
        gold_shown = "ABCD"[("ABCD".index("C") + rotation) % 4]
        assert "<ANSWER>C</ANSWER>" not in text and "<ANSWER>" not in injected.split("Give your final")[0]
        for marker in ("(C)", "option C", "choose C", "answer is", "two black squares"):
            assert marker not in injected.split("Give your final")[0]
        assert f"({gold_shown})" not in injected
        # the gold option's text appears once: in the options list, not in the injected stages
        assert text.count("two black squares") == 1


@pytest.mark.parametrize("level,shown,hidden", [
    ("H0", [], ["S1", "S2", "S3", "S4"]),
    ("H1", ["S1"], ["S2", "S3", "S4"]),
    ("H2", ["S1", "S2"], ["S3", "S4"]),
    ("H3", ["S1", "S2", "S3"], ["S4"]),
    ("H4", ["S1", "S2", "S3", "S4"], []),
])
def test_ssa_levels_are_cumulative_and_never_downstream(level, shown, hidden):
    texts, _ = _ssa_prompt(sb_items(), level)
    text = texts["sb1-F"]
    for s in shown:
        assert f"{s} ({prompts.STAGE_NAMES[s]})" in text and "#1" in text
    for s in hidden:
        assert f"{s} (" not in text and LEAKY[s].split(":")[0] + ":" not in text


def test_ssa_irrelevant_uses_another_stems_s1():
    texts, _ = _ssa_prompt(sb_items(), "irrelevant")
    for item_id, text in texts.items():
        own = item_id[2]
        assert "S1 (Encode)" in text and f"#{own}" not in text and "S2 (" not in text


def test_prompts_do_not_depend_on_the_gold_answer():
    for level in prompts.SSA_LEVELS:
        a, _ = _ssa_prompt(sb_items(answer="C"), level)
        b, _ = _ssa_prompt(sb_items(answer="A"), level)
        assert a == b
    assert "answer" not in prompts.ItemView.__slots__  # prompts never see a gold field


def test_ssa_needs_stembind_and_stages():
    items = sb_items()
    s = RunSettings(benchmark="b", run="r", runner="openai", model="m", strategy="ssa", ssa_level="H1")
    with pytest.raises(RunnerError, match="StemBind"):
        build_tasks(items, s, "generic", str)
    with pytest.raises(RunnerError, match="ssa-level"):
        RunSettings(benchmark="b", run="r", runner="openai", model="m", strategy="ssa").check()


# ---- strategies ----------------------------------------------------------------------------------------

def _run_dialog(strategy, family="spur", input_mode="all"):
    items = sb_items()
    s = RunSettings(benchmark="b", run="r", runner="openai", model="m", strategy=strategy, input_mode=input_mode)
    task = build_tasks(items, s, family, lambda h: Path(f"/img/{h}.png"))[0]
    ctx = prompts.PromptContext(task=task, family=family, max_tokens=8)
    d = Dialog(task, prompts.dialogue(strategy, ctx))
    requests = []
    while not d.done:
        requests.append(d.request)
        d.feed(__import__("core.runners.base", fromlist=["Reply"]).Reply(text=f"reply {len(requests)} <ANSWER>B</ANSWER>"))
    return d, requests


@pytest.mark.parametrize("strategy,calls,stages", [
    ("direct", 1, ["answer"]), ("thinking", 1, ["thinking"]), ("vot", 1, ["answer"]),
    ("ddcot", 3, ["decompose", "sub-answers", "answer"]), ("vic", 2, ["plan", "answer"]),
    ("cantor", 3, ["decision", "experts", "answer"]),
])
def test_mcot_pipelines(strategy, calls, stages):
    d, reqs = _run_dialog(strategy)
    assert len(reqs) == calls and [r.stage for r in reqs] == stages
    for prev, req in zip(reqs, reqs[1:], strict=False):  # each stage sees the previous stage's output
        assert any("reply" in prompts.render_text(req) for _ in [0]) or prev is None
    if strategy == "vic":
        assert reqs[0].images() == [] and reqs[1].images()  # the plan is written before looking
    else:
        assert all(r.images() for r in reqs)
    assert (d.trace() is None) == (calls == 1)


def test_input_modes_and_rotation():
    items = pd.DataFrame([_row("x", "g", "test", "Q", "", ["h1", "h2", "h3"])])
    for mode, n in (("all", 3), ("first", 1), ("text", 0)):
        s = RunSettings(benchmark="b", run="r", runner="openai", model="m", input_mode=mode, rotations=4, repeats=2)
        tasks = build_tasks(items, s, "generic", lambda h: Path(f"/img/{h}.png"))
        assert len(tasks) == 8 and all(len(t.images) == n for t in tasks)
        assert [p.stem for p in tasks[0].images] == ["h1", "h2", "h3"][:n]
    t = tasks[2]  # rotation 1: the option at index i is shown at (i + 1) mod 4
    assert t.rotation == 1 and t.shown == rotate_options(items.iloc[0]["options"], 1) == {
        "A": "右", "B": "前", "C": "后", "D": "左"}
    text = prompts.render_text(Dialog(t, prompts.dialogue("direct", prompts.PromptContext(
        task=t, family="generic", max_tokens=8))).request)
    assert "A. 右\nB. 前\nC. 后\nD. 左" in text


def test_direct_prompt_formats_per_family():
    for family, needle in (("frameevidence", "letter of the correct option only"), ("stembind", "<ANSWER>X</ANSWER>")):
        d, reqs = _run_dialog("direct", family)
        assert needle in prompts.render_text(reqs[0])


def test_task_key():
    items = pd.DataFrame([_row("x", "g", "test", "Q", "", [])])
    s = RunSettings(benchmark="b", run="r", runner="openai", model="m", rotations=2, repeats=2)
    keys = [t.key for t in build_tasks(items, s, "generic", str)]
    assert keys == [("x", 0, 0), ("x", 0, 1), ("x", 1, 0), ("x", 1, 1)]
    assert isinstance(build_tasks(items, s, "generic", str)[0], Task)
