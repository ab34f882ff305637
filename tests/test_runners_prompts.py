"""Prompt strategies: k-shot pools never touch test groups or images; SSA never carries the answer."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import prompts
from core.errors import RunnerError
from core.families.stembind import ssa_prompt
from core.families.stembind.vocab import STAGE_NAMES
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
    s = RunSettings(benchmark="b", run="r", runner="openai", model="m", strategy="ssa", options={"ssa_level": level},
                    rotations=rotation + 1)
    from core.runners.engine import _dialog_factory

    make = _dialog_factory(items, s, "stembind", lambda h: Path(f"/img/{h}.png"))
    tasks = [t for t in build_tasks(items, s, "stembind", lambda h: Path(f"/img/{h}.png")) if t.rotation == rotation]
    assert all(t.view.kind == "F" for t in tasks)  # SSA runs F items only
    return {t.view.item_id: prompts.render_text(make(t).request) for t in tasks}, tasks


@pytest.mark.parametrize("level", ssa_prompt.SSA_LEVELS)
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
        stages = injected.split("Give your final")[0]
        for marker in ("(C)", "option C", "choose C", "answer is (", f"({gold_shown})"):
            assert marker not in stages
        # the gold option's text: in the options list, and in S4's target-instance description only (H4)
        assert text.count("two black squares") == (2 if level == "H4" else 1)
        if level == "H4":
            assert "S4 (Apply): Apply: the target is two black squares, choose [withheld]." in text


# Real-looking StemBind options (002 App. A): an annotator's stage text names the answer in many ways.
SB_OPTIONS = {"A": "a 2x2 grid of dots", "B": "three black triangles", "C": "a white square inside a circle",
              "D": "two crossed lines"}

# (stage text, what must remain, fragments that must be gone)
GUARD_CASES = [
    ("Map: the row-wise XOR leaves one shape in the last cell, candidate C.",
     "Map: the row-wise XOR leaves one shape in the last cell, candidate [withheld].", ["C."]),
    ("Map: the last cell keeps the outer ring only (C).", "Map: the last cell keeps the outer ring only [withheld].",
     ["(C)"]),
    ("Map: so option C fits, while A and B break the count.",
     "Map: so option [withheld] fits, while [withheld] and [withheld] break the count.", ["C", "B"]),
    ("Map: Option-C is consistent with both rows.", "Map: Option-[withheld] is consistent with both rows.", ["-C"]),
    ("Map: the answer is c, the only one with a closed contour.",
     "Map: the answer is [withheld], the only one with a closed contour.", [" c,"]),
    ("Map: C is correct because the count drops by one.",
     "Map: [withheld] is correct because the count drops by one.", ["C is"]),
    ("Map: A is ruled out; so is D.", "Map: [withheld] is ruled out; so is [withheld].", ["A is", "D."]),
    ("Map: the correct choice is [C].", "Map: the correct choice is [withheld].", ["[C]"]),
    ("Map: B and A break the count.", "Map: [withheld] and [withheld] break the count.", ["A break"]),
    # a capital A opening a sentence is the letter wherever the parser would read it so (parsing.LETTER_FOLLOWERS)
    ("Map: the rule holds. A corresponds to the rotated panel.",
     "Map: the rule holds. [withheld] corresponds to the rotated panel.", ["A corresponds"]),
    ("Map: A best fits the count.", "Map: [withheld] best fits the count.", ["A best"]),
    ("Map: A describes the last cell.", "Map: [withheld] describes the last cell.", ["A describes"]),
    ("Map: the answer is A because the ring stays.", "Map: the answer is [withheld] because the ring stays.",
     ["A because"]),
    ("Map: it must be A given the rotation.", "Map: it must be [withheld] given the rotation.", ["A given"]),
    ("Map: C) keeps the rotation.", "Map: [withheld] keeps the rotation.", ["C)"]),
    ("Map: pick Ⓒ.", "Map: pick [withheld].", ["Ⓒ"]),
    ("Map: => C", "Map: => [withheld]", ["C"]),
    ("Map: <ANSWER>C</ANSWER>", "Map: [withheld]", ["<ANSWER>", "C<"]),
    ("Map: the third option matches the rule.", "Map: [withheld] matches the rule.", ["third option"]),
    ("Map: the last candidate keeps both strokes.", "Map: [withheld] keeps both strokes.", ["last candidate"]),
    ("Map: so we pick option 3.", "Map: so we pick [withheld].", ["option 3"]),
    ("Map: choice number three is consistent.", "Map: [withheld] is consistent.", ["number three"]),
    ("映射：逐行异或后只剩一个图形，选C。", "映射：逐行异或后只剩一个图形，选[withheld]。", ["选C"]),
    ("映射：答案是Ｃ。", "映射：答案是[withheld]。", ["Ｃ"]),
    ("映射：答案为（Ｃ）", "映射：答案为[withheld]", ["（Ｃ）"]),
    ("映射：C项符合规律，A项不符合。", "映射：[withheld]项符合规律，[withheld]项不符合。", ["C项", "A项"]),
    ("映射：C选项保留外圈。", "映射：[withheld]选项保留外圈。", ["C选项"]),
    ("映射：正确答案为第三个选项。", "映射：正确答案为[withheld]。", ["第三个选项"]),
    ("映射：故选第三个。", "映射：故选[withheld]。", ["第三个"]),
    ("映射：选项【C】正确。", "映射：选项[withheld]正确。", ["【C】"]),
    # kept: the English article, shape words, dimensions, letters inside words, upstream content
    ("Encode: A 3x3 grid; each row rotates by 90 degrees.", "Encode: A 3x3 grid; each row rotates by 90 degrees.",
     []),
    ("Encode: A rotation of the C-shaped stroke in 3-D.", "Encode: A rotation of the C-shaped stroke in 3-D.", []),
    ("Encode: CAD-style panels, ABC order in row 1.", "Encode: CAD-style panels, ABC order in row 1.", []),
    # 002 §3.3 "no condition includes the answer letter": a capital A opening a sentence is the letter unless a
    # whole noun phrase follows (modifiers: a number, a listed adjective, an adjective ending; then a head noun)
    ("Map: A keeps the count.", "Map: [withheld] keeps the count.", ["A keeps"]),
    ("Map: A repeats the pattern.", "Map: [withheld] repeats the pattern.", ["A repeats"]),
    ("Map: A clearly fits.", "Map: [withheld] clearly fits.", ["A clearly"]),
    ("Map: the ring stays. A went unchanged.", "Map: the ring stays. [withheld] went unchanged.", ["A went"]),
    ("Map: A left the dot out.", "Map: [withheld] left the dot out.", ["A left"]),
    ("Encode: A grid of nine cells.", "Encode: A grid of nine cells.", []),
    ("Encode: A 90-degree turn per row.", "Encode: A 90-degree turn per row.", []),
    ("Infer: A diagonal symmetry holds. A progression of dots.",
     "Infer: A diagonal symmetry holds. A progression of dots.", []),
    ("Encode: A black triangle sits in each cell.", "Encode: A black triangle sits in each cell.", []),
    # option texts that single some options out are downstream (S4) content before S4
    ("Map: the last cell shows a white square inside a circle.", "Map: the last cell shows [withheld].",
     ["white square"]),
    ("Map: not three black triangles, but A WHITE SQUARE INSIDE A CIRCLE.", "Map: not [withheld], but [withheld].",
     ["triangles", "SQUARE"]),
]


# 002 C.5 forbids the answer and downstream content, not the scene's words: a stage naming every option text keeps
# them; one naming some but not all singles them out and loses them (options square / circle / triangle).
SHAPES = {"A": "square", "B": "circle", "C": "triangle"}
OPTION_TEXT_CASES = [
    ("Encode: Each row holds a square, a circle and a triangle.",
     "Encode: Each row holds a square, a circle and a triangle.", {}),
    ("Encode: Each row holds a SQUARE, a circle and a triangle; C ends it.",
     "Encode: Each row holds a SQUARE, a circle and a triangle; [withheld] ends it.", {"letter": 1}),
    ("Map: the last cell takes the circle.", "Map: the last cell takes the [withheld].", {"option text": 1}),
    ("Map: not the square but the triangle.", "Map: not the [withheld] but the [withheld].", {"option text": 2}),
    ("Map: the squares of row 1 rotate.", "Map: the squares of row 1 rotate.", {}),
]


@pytest.mark.parametrize(("text", "kept", "kinds"), OPTION_TEXT_CASES)
def test_ssa_guard_keeps_option_texts_unless_they_single_one_out(text, kept, kinds):
    out = ssa_prompt.scrub_stage_text(text, SHAPES, "ABC")
    assert out.text == kept
    assert {k: out.kinds.count(k) for k in set(out.kinds)} == kinds
    assert len(out.kinds) == len(out.removed)


@pytest.mark.parametrize("rotation", [0, 1, 2, 3])
@pytest.mark.parametrize("s3", ["Map: A keeps the count.", "Map: A repeats the pattern.", "Map: A clearly fits."])
def test_ssa_prompt_with_gold_a_never_shows_the_letter_in_any_rotation(s3, rotation):
    stages = {"S1": "Encode: A grid of nine cells holds a square, a circle and a triangle.",
              "S2": "Infer: each row rotates.", "S3": s3, "S4": "Apply: the target is the square."}
    items = pd.DataFrame([_row("f0", "g0", "test", "F", "", ["h0"], answer="A", stages=stages, options=SHAPES)])
    texts, _ = _ssa_prompt(items, "H4", rotation)
    injected = texts["f0"].split("Verified analysis so far", 1)[1].split("Give your final")[0]
    assert s3.split(": ", 1)[1] not in injected and "S3 (Map): Map: [withheld] " in injected
    assert "A grid of nine cells holds a square, a circle and a triangle." in injected  # verified S1 stays
    assert "Apply: the target is the square." in injected


@pytest.mark.parametrize(("text", "kept", "gone"), GUARD_CASES)
def test_ssa_guard_removes_every_reference_to_an_option(text, kept, gone):
    out = ssa_prompt.scrub_stage_text(text, SB_OPTIONS, "ABCD")
    assert out.text == kept
    for g in gone:
        assert g not in out.text
    assert bool(out.removed) == (kept != text)


@pytest.mark.parametrize(("text", "kept"), [
    ("Apply: the target is a white square inside a circle, candidate C.",
     "Apply: the target is a white square inside a circle, candidate [withheld]."),
    ("Apply: the target keeps two crossed lines, so (D).", "Apply: the target keeps two crossed lines, so [withheld]."),
    ("应用：目标是圆内的白色方块，即选项C。", "应用：目标是圆内的白色方块，即选项[withheld]。"),
    ("Apply: the target is a white square inside a circle.", "Apply: the target is a white square inside a circle."),
])
def test_ssa_guard_keeps_the_s4_target_instance_description(text, kept):
    assert ssa_prompt.scrub_stage_text(text, SB_OPTIONS, "ABCD", keep_options=True).text == kept


def test_ssa_guard_count_goes_into_the_run_config(tmp_path):
    clean = {"S1": "Encode: three panels per row.", "S2": "Infer: rotate by 90 degrees.",
             "S3": "Map: the last cell keeps one stroke.", "S4": "Apply: the target has one stroke."}
    leaky = {**clean, "S3": "Map: the last cell keeps one stroke, candidate C."}
    rows = [_row("f0", "g0", "test", "F", "", ["h0"], stages=clean, options=SB_OPTIONS),
            _row("f1", "g1", "test", "F", "", ["h1"], stages=leaky, options=SB_OPTIONS),
            _row("f2", "g2", "test", "F", "", ["h2"], stages={**clean, "S4": "Apply: choose (B)."}, options=SB_OPTIONS)]
    items = pd.DataFrame(rows)
    views = [_view(r) for _, r in items.iterrows()]
    record = {lv: ssa_prompt.guard_record(items, views, lv, 0)["ssa_guard"] for lv in ("H0", "H2", "H3", "H4")}
    assert record == {"H0": {"items": 3, "text_removed": 0, "removed": {}},
                      "H2": {"items": 3, "text_removed": 0, "removed": {}},
                      "H3": {"items": 3, "text_removed": 1, "removed": {"letter": 1}},
                      "H4": {"items": 3, "text_removed": 2, "removed": {"letter": 2}}}


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
        assert f"{s} ({STAGE_NAMES[s]})" in text and "#1" in text
    for s in hidden:
        assert f"{s} (" not in text and LEAKY[s].split(":")[0] + ":" not in text


def test_ssa_irrelevant_uses_another_stems_s1():
    texts, _ = _ssa_prompt(sb_items(), "irrelevant")
    for item_id, text in texts.items():
        own = item_id[2]
        assert "S1 (Encode)" in text and f"#{own}" not in text and "S2 (" not in text


def test_prompts_do_not_depend_on_the_gold_answer():
    for level in ssa_prompt.SSA_LEVELS:
        a, _ = _ssa_prompt(sb_items(answer="C"), level)
        b, _ = _ssa_prompt(sb_items(answer="A"), level)
        assert a == b
    assert "answer" not in prompts.ItemView.__slots__  # prompts never see a gold field


def test_ssa_needs_stembind_and_stages():
    items = sb_items()
    s = RunSettings(benchmark="b", run="r", runner="openai", model="m", strategy="ssa", options={"ssa_level": "H1"})
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


def test_ssa_run_records_the_guard_count_and_score_shows_it(tmp_path, monkeypatch, capsys):
    """End to end: a StemBind benchmark in a real store, an SSA H3 run against the real chat server; the run's
    config holds the count, the prompts sent carry no letter, and `score --json` reports the count."""
    import json

    from chat_server import ChatServer, request_text

    import app
    from db.importers import import_items
    from db.store import Store

    clean = {"S1": "Encode: three panels per row.", "S2": "Infer: each row rotates by 90 degrees.",
             "S3": "Map: the last cell keeps one stroke.", "S4": "Apply: the target has one stroke."}
    lines = []
    for s in range(3):
        stages = {**clean, "S3": "Map: the last cell keeps one stroke, candidate C."} if s == 1 else clean
        base = {"benchmark": "stembind", "group_id": f"s{s}", "split": "test", "options": SB_OPTIONS,
                "question": "Which option completes the matrix?", "meta": {"operation": "RI-Pos"}}
        lines += [{**base, "item_id": f"s{s}-P0", "kind": "P", "answer": "A"},
                  {**base, "item_id": f"s{s}-R", "kind": "R", "answer": "B"},
                  {**base, "item_id": f"s{s}-F", "kind": "F", "answer": "C", "stages": stages}]
    path = tmp_path / "sb.jsonl"
    path.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n", encoding="utf-8")
    db = tmp_path / "s.db"
    import_items(Store(db), path, name="sb")
    monkeypatch.setenv("CC_TEST_KEY", "sk-test")
    monkeypatch.setenv("CROSSCHECK_OPENAI_TRANSPORT", "lean")
    with ChatServer(responder=lambda b: "<ANSWER>C</ANSWER>") as server:
        assert app.main(["run", "--db", str(db), "--benchmark", "sb", "--runner", "openai", "--model", "m",
                         "--base-url", server.base_url, "--api-key-env", "CC_TEST_KEY", "--no-progress",
                         "--run", "h3", "--strategy", "ssa", "--ssa-level", "H3"]) == 0
    sent = [request_text(b) for b in server.bodies]
    assert len(sent) == 3 and not any("candidate C" in t for t in sent)
    assert sum("candidate [withheld]" in t for t in sent) == 1
    assert Store(db).run("h3")["config"]["ssa_guard"] == {"items": 3, "text_removed": 1, "removed": {"letter": 1}}
    capsys.readouterr()
    assert app.main(["score", "--db", str(db), "--run", "h3", "--json"]) == 0
    metrics = json.loads(capsys.readouterr().out)["metrics"]
    assert metrics["ssa_text_removed"] == {"value": pytest.approx(1 / 3), "k": 1, "n": 3}


# Phrasings an annotator may use, each with the letter slot {L}; the letter comes as ASCII, full-width or
# circled, and each phrasing ends a sentence that opens with neutral upstream text.
PHRASINGS = ["candidate {L}.", "so ({L})", "option {L} fits", "the answer is {L}", "{L} is correct", "pick {L}",
             "=> {L}", "[{L}]", "{L}) keeps the rotation", "选{L}", "答案是{L}。", "{L}项符合", "{L}选项", "（{L}）",
             "答案：{L}", "so {L}, not the others", "{L} and {L} break it", "go with {L}"]
NEUTRAL = ["Map: the row-wise XOR leaves one shape.", "A 3x3 grid rotates by 90 degrees.", "映射：逐行异或。",
           "The count drops by one per row."]
FORMS = {"ascii": lambda c: c, "full-width": lambda c: chr(ord(c) + 0xFEE0), "circled": lambda c: chr(ord(c) + 0x2475)}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(PHRASINGS), st.sampled_from("ABCD"), st.sampled_from(sorted(FORMS)),
                          st.sampled_from(NEUTRAL)), min_size=1, max_size=5))
def test_ssa_guard_leaves_no_letter_in_any_phrasing(parts):
    text = " ".join(f"{n} {p.format(L=FORMS[f](c))}." for p, c, f, n in parts)  # one sentence each
    out = ssa_prompt.scrub_stage_text(text, SB_OPTIONS, "ABCD").text
    folded = out.translate(ssa_prompt._FOLD)
    for m in re.finditer(r"(?<![A-Za-z0-9])[A-D](?![A-Za-z0-9])", folded):
        # the only capital left standing alone is the article of "A 3x3 grid"
        assert folded[m.start():m.start() + 6] == "A 3x3 ", (text, out)
    assert out.count("A 3x3 grid") == text.count("A 3x3 grid")  # upstream content stays


# ---- the SSA guard, rule by rule (issue 28: rows that kill make mutation's survivors in core/prompts.py) ----

# (text, what must remain, the removed pieces with their kinds)
GUARD_ROWS = [
    # a lowercase "a" after a cue word is the article when a word follows that does not make it the letter
    ("Map: choose a shape with one stroke.", "Map: choose a shape with one stroke.", []),
    ("Map: pick a or b.", "Map: pick [withheld] or b.", [("a", "letter")]),
    # bracketed and enumerating lowercase letters go with their brackets
    ("Map: keep (c) out.", "Map: keep [withheld] out.", [("(c)", "letter")]),
    ("Map: b) keeps the ring.", "Map: [withheld] keeps the ring.", [("b)", "letter")]),
    # shape words keep their letter whatever the case after the hyphen, and the letters after them still go
    ("Encode: a C-Shape in row 2.", "Encode: a C-Shape in row 2.", []),
    ("Encode: the C-shaped stroke; candidate B.", "Encode: the C-shaped stroke; candidate [withheld].",
     [("B", "letter")]),
    # a letter outside the item's letters stays ("X" is no option), touching references merge into one
    ("Map: row X stays; option C.", "Map: row X stays; option [withheld].", [("C", "letter")]),
    ("Map: keep (C)(D) out.", "Map: keep [withheld] out.", [("(C)(D)", "letter")]),
    # the cue is looked for in the 40 characters before the letter
    ("Map: options" + " " * 33 + "c.", "Map: options [withheld].", [("c", "letter")]),
    ("Map: options" + " " * 34 + "c.", "Map: options" + " " * 34 + "c.", []),
    # kinds and removed pieces of tags and positions; runs of space collapse only where something was removed
    ("Map:  <answer>C</answer>  and </ANSWER>", "Map: [withheld] and [withheld]",
     [("<answer>C</answer>", "tag"), ("</ANSWER>", "tag")]),
    ("Map:  the third option  fits.", "Map: [withheld] fits.", [("the third option", "position")]),
    ("Map:  two  rows  rotate.", "Map:  two  rows  rotate.", []),
]


@pytest.mark.parametrize(("text", "kept", "removed"), GUARD_ROWS)
def test_ssa_guard_rule_rows(text, kept, removed):
    out = ssa_prompt.scrub_stage_text(text, SB_OPTIONS, "ABCD")
    assert out.text == kept
    assert list(zip(out.removed, out.kinds, strict=True)) == removed


# (options, text, what must remain): option texts as whole words, longer ones first, adjacent ones merged
OPTION_ROWS = [
    ({"A": "square", "B": "black square", "C": "circle"}, "Map: the last cell takes the black square.",
     "Map: the last cell takes the [withheld]."),
    ({"A": "左上", "B": "右下", "C": "中间偏左"}, "映射：目标在左上。", "映射：目标在[withheld]。"),
    ({"A": "L-shape", "B": "T-shape", "C": "circle"}, "Map: an XL-shape stays.", "Map: an XL-shape stays."),
    ({"A": "L-shape", "B": "T-shape", "C": "circle"}, "Map: two L-shapes rotate.", "Map: two L-shapes rotate."),
    ({"A": "L-shape", "B": "T-shape", "C": "circle"}, "Map: the L-shape rotates.", "Map: the [withheld] rotates."),
    ({"A": "row 1", "B": "row 2", "C": "row 3"}, "Map: row 12 repeats.", "Map: row 12 repeats."),
    ({"A": "三角形", "B": "圆形", "C": "方块", "D": "星"}, "映射：圆形三角形保留。", "映射：[withheld]保留。"),
    ({"A": "三角形", "B": "圆形", "C": "方块", "D": "星"}, "映射：三角形圆形保留。", "映射：[withheld]保留。"),
]


@pytest.mark.parametrize(("options", "text", "kept"), OPTION_ROWS)
def test_ssa_guard_option_text_rows(options, text, kept):
    out = ssa_prompt.scrub_stage_text(text, options)
    assert out.text == kept
    assert set(out.kinds) <= {"option text"}


def test_ssa_guard_letters_default_to_the_option_keys():
    text = "Map: option C fits, and so does option D."
    assert ssa_prompt.scrub_stage_text(text, SB_OPTIONS).text == ssa_prompt.scrub_stage_text(text, SB_OPTIONS, "ABCD").text
    assert ssa_prompt.scrub_stage_text(text, SB_OPTIONS).text == "Map: option [withheld] fits, and so does option [withheld]."
    assert ssa_prompt.scrub_stage_text("Map: row X stays; option C.", SB_OPTIONS).text == \
        "Map: row X stays; option [withheld]."  # the keys are the letters, nothing between them
    # given letters win over the keys; only Latin letters count (a digit among them is no letter)
    assert ssa_prompt.scrub_stage_text(text, SB_OPTIONS, "AB").text == text
    assert ssa_prompt.scrub_stage_text("Map: 2 strokes per row, option B.", SB_OPTIONS, "AB2").text == \
        "Map: 2 strokes per row, option [withheld]."


def _sb_view(stages, item_id="f0", group_id="g0"):
    return _view(_row(item_id, group_id, "test", "F", "", ["h0"], stages=stages, options=SB_OPTIONS))


def test_ssa_block_text():
    view = _sb_view({"S1": "Encode: three panels.", "S2": "Infer: option C fits.", "S3": "c", "S4": "d"})
    assert ssa_prompt.ssa_block(view, SB_OPTIONS, "H0", None) == ""
    assert ssa_prompt.ssa_block(view, SB_OPTIONS, "H2", None) == (
        "Verified analysis so far (continue from here):\nS1 (Encode): Encode: three panels.\n"
        "S2 (Infer): Infer: option [withheld] fits.")


def test_ssa_stage_texts_refusals_name_the_problem():
    view = _sb_view({"S1": "a", "S2": "b"})
    with pytest.raises(RunnerError, match=r"^unknown SSA level 'H9'; expected one of H0, H1, H2, H3, H4, irrelevant$"):
        ssa_prompt.ssa_stage_texts(view, "H9", None)
    with pytest.raises(RunnerError, match=r"^item f0: no other stem's S1 text for the irrelevant-S1 control$"):
        ssa_prompt.ssa_stage_texts(view, "irrelevant", None)
    with pytest.raises(RunnerError, match=r"^item f0: SSA level H3 needs stage S3, which the item lacks$"):
        ssa_prompt.ssa_stage_texts(view, "H3", None)


def test_ssa_guard_count_at_the_irrelevant_control():
    views = [_sb_view({"S1": "Encode: rows."}, f"f{i}", f"g{i}") for i in range(3)]
    count = ssa_prompt.ssa_guard_count(views, "irrelevant", lambda v: f"Encode: {v.item_id}, candidate C.")
    assert count == {"items": 3, "text_removed": 3, "removed": {"letter": 3}}
    assert ssa_prompt.ssa_guard_count(views, "H1", None) == {"items": 3, "text_removed": 0, "removed": {}}


def test_irrelevant_s1_pick_is_seeded_over_the_other_stems_in_item_order():
    import random

    # item ids, group ids and S1 texts sort three different ways; the rows come in a fourth order
    rows = [("f3", "g1", "Encode: alpha"), ("f1", "g4", "Encode: delta"), ("f4", "g2", "Encode: beta"),
            ("f2", "g3", "Encode: gamma"), ("f5", "g5", "Encode: epsilon")]
    items = pd.DataFrame([_row(i, g, "test", "F", "", ["h"], stages={"S1": s1}, options=SB_OPTIONS)
                          for i, g, s1 in rows])
    for seed in (0, 1, 7):
        pick = ssa_prompt.irrelevant_s1_source(items, seed)
        for item_id, gid, _ in rows:
            others = [s1 for i, g, s1 in sorted(rows) if g != gid]
            view = _view(items[items["item_id"] == item_id].iloc[0].to_dict())
            assert pick(view) == random.Random(f"{seed}:irrelevant:{item_id}").choice(others)


# 002 §3.3, App. C.5 ("no condition includes the answer letter"): a sentence-initial "A" is the article only when a
# whole noun phrase follows it, whatever the word after it. The seven adverbs an audit found reaching the H4 prompt:
SEVEN_ADVERBS = ["further", "hence", "likewise", "nevertheless", "nonetheless", "otherwise", "regardless"]
# a generated set: common English adverbs, verbs (as a sentence's finite verb) and nouns after the "A"
ADVERBS = SEVEN_ADVERBS + """also again already always anyway certainly clearly consequently correctly definitely
elsewhere entirely equally especially eventually evidently exactly finally first fully generally however indeed
instead just later likely mainly meanwhile merely moreover mostly naturally necessarily never now obviously
often only partly perhaps plainly possibly precisely presumably probably quite rather really similarly simply
somehow sometimes soon still subsequently surely then therefore thus together too truly ultimately usually
very visibly yet""".split()
VERBS = """keeps holds fits matches breaks follows repeats rotates mirrors shifts flips turns completes continues
satisfies violates preserves reflects reverses swaps moves counts contains shows gives yields remains stays
kept held broke went made took gave showed moved turned rotated mirrored shifted completed continued satisfied
violated preserved reflected reversed swapped counted contained yielded remained stayed differs differed""".split()
NOUNS = """grid row column panel cell matrix figure shape pattern sequence pair line dot stroke arrow star square
circle triangle ring cross rule step turn shift count number object block piece tile layer frame border curve arc
rotation reflection progression translation arrangement alignment movement thickness brightness symmetry
quantity density difference sequence structure texture closure""".split()


@pytest.mark.parametrize("adverb", SEVEN_ADVERBS)
def test_ssa_guard_withholds_the_letter_before_an_adverb(adverb):
    out = ssa_prompt.scrub_stage_text(f"Map: A {adverb} keeps the count.", SB_OPTIONS, "ABCD")
    assert out.text == f"Map: [withheld] {adverb} keeps the count.", out.text


def _rotations(options: dict[str, str]) -> list[dict[str, str]]:
    texts = list(options.values())
    return [{k: texts[(i - r) % len(texts)] for i, k in enumerate(options)} for r in range(len(texts))]


def test_ssa_guard_tells_the_letter_from_the_article_by_what_follows():
    """Over every common adverb and verb after a sentence-initial A, under every rotation of the options, the letter
    is withheld; over common nouns (and an adjective before one) the article stays."""
    for shown in _rotations(SB_OPTIONS):
        for word in ADVERBS:
            text = ssa_prompt.scrub_stage_text(f"Map: A {word} keeps the count. A {word} fits.", shown, "ABCD").text
            assert text == f"Map: [withheld] {word} keeps the count. [withheld] {word} fits.", text
        for verb in VERBS:
            text = ssa_prompt.scrub_stage_text(f"Map: A {verb} the count.", shown, "ABCD").text
            assert text == f"Map: [withheld] {verb} the count.", text
        for noun in NOUNS:
            for phrase in (f"A {noun}", f"A diagonal {noun}", f"A 3x3 {noun}"):
                text = ssa_prompt.scrub_stage_text(f"Encode: {phrase} holds the count.", shown, "ABCD").text
                assert text == f"Encode: {phrase} holds the count.", text


@pytest.mark.parametrize("rotation", range(4))
def test_ssa_h4_prompt_withholds_the_letter_before_an_adverb(rotation):
    """The audit's case end to end: "A likewise keeps the count." in S3 reaches no H4 prompt under any rotation."""
    items = sb_items()
    items["stages"] = [None if s is None else {**s, "S3": "Map: A likewise keeps the count."} for s in items["stages"]]
    texts, _ = _ssa_prompt(items, "H4", rotation=rotation)
    for text in texts.values():
        assert "A likewise" not in text and "[withheld] likewise keeps the count." in text
