"""Prompt strategies: how a task becomes one or more model calls (SPEC §6).

Every strategy is a typed `core.runners.base.Strategy` whose dialogue is a generator `fn(ctx) -> Generator[Request,
str, str]`: it yields requests, receives each reply's text, and returns the final response that the family's
parser reads. Prompts are built from an `ItemView`, which has no gold answer field at all, so no strategy can leak
the test answer by construction. `BUILTIN` are the strategies every family takes; a family brings its own in
`Family.strategies` (StemBind's SSA, core/families/stembind/ssa_prompt.py), and `strategies()` lists both.

- direct: FrameEvidence / generic / SPUR ask for one letter; StemBind asks for <ANSWER>X</ANSWER> (002 C.1).
- k-shot (direct or thinking, k = 0..3): a fixed, seeded demonstration pool of train groups (000 §6.1 and
  App. A "Few-shot construction"), nested prefixes, FQ1 demos in cam / obj / scene order, FQ2 in mss / del /
  add order, never a group or an image of the evaluated split or of test.
- thinking (002 C.1): same images and answer space, longer reasoning, final choice in <ANSWER>X</ANSWER>.
- SPUR MCoT methods (001 §3.1): DDCoT (decompose -> answer sub-questions -> joint answer, 3 calls), VoT
  (one call, visualize the state after each step), VIC (a text-only reasoning plan written before looking,
  then the plan followed with the images, 2 calls), Cantor (decision generation naming expert sub-tasks ->
  the model acting as those experts -> answer synthesis, 3 calls).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from core import families
from core.errors import RunnerError
from core.families.frameevidence.vocab import VARIANTS
from core.runners.base import (
    Demo,
    Dialogue,
    ItemView,
    PromptContext,
    Request,
    Strategy,
    image_parts,
    question_block,
    text_part,
    user,
)

__all__ = ["BUILTIN", "DEMO_ORDER", "MAX_SHOTS", "Demo", "ItemView", "PromptContext", "answer_instruction",
           "build_demo_pool", "dialogue", "final_style", "image_parts", "question_block",
           "render_text", "strategies", "strategy", "usable"]

DEMO_ORDER = VARIANTS  # 000 App. A
MAX_SHOTS = 3


def family_style(family: str) -> str:
    """The family's parser style (its `parser`: "tag" for StemBind); "letter" for an unknown family."""
    return families.get(family).parser if families.known(family) else "letter"


def final_style(name: str, family: str) -> str:
    """The parser style of a strategy's final response: "tag" for a strategy whose final call holds free
    reasoning (thinking, VoT, VIC, SSA: a one-letter parser would read a reasoning trace as conflicting letters),
    else the family's own format (direct, the last call of DDCoT / Cantor)."""
    return "tag" if strategy(name).final_style == "tag" else family_style(family)


# ---- text blocks --------------------------------------------------------------------------------------


def answer_instruction(style: str, letters: str) -> str:
    listed = ", ".join(letters)
    if style == "tag":
        return f"Give your final choice as <ANSWER>X</ANSWER>, where X is one of {listed}."
    return f"Answer with the letter of the correct option only ({listed})."


def formatted_answer(style: str, letter: str) -> str:
    return f"<ANSWER>{letter}</ANSWER>" if style == "tag" else letter


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [text_part(text)]}


# ---- k-shot demonstration pool --------------------------------------------------------------------------


def demo_order_key(kind: str, variant: str, item_id: str) -> tuple[int, str]:
    order = DEMO_ORDER.get(kind)
    if order and variant in order:
        return (order.index(variant), item_id)
    return (len(order or ()), item_id)


def build_demo_pool(items: Any, seed: int, split: str, view_of: Callable[[Any], ItemView],
                    size: int = MAX_SHOTS) -> dict[str, list[Demo]]:
    """Per item kind, up to `size` demonstrations from train groups chosen with `seed`.

    Candidate groups lie wholly in the train split, share no group id with the evaluated split or test, and
    share no image with any item of those splits. Per kind, candidate groups are shuffled with
    random.Random(f"{seed}:{kind}") and demos are taken from the first group in variant order (FQ1 cam / obj /
    scene, FQ2 mss / del / add, otherwise item id), continuing into the next group only when one group has
    fewer than `size` items of that kind. The pool does not depend on k, so 1-, 2- and 3-shot take nested
    prefixes of the same list.
    """
    held_out = items[items["split"].isin({split, "test"})]
    bad_groups = set(held_out["group_id"])
    bad_images = {h for imgs in held_out["images"] for h in imgs}
    train = items[items["split"] == "train"]
    ok_groups = []
    for gid, g in train.groupby("group_id", sort=True):
        if gid in bad_groups or set(items.loc[items["group_id"] == gid, "split"]) != {"train"}:
            continue
        if any(h in bad_images for imgs in g["images"] for h in imgs):
            continue
        ok_groups.append(str(gid))
    pool: dict[str, list[Demo]] = {}
    for kind in sorted(set(train["kind"])):
        groups = [gid for gid in ok_groups if ((train["group_id"] == gid) & (train["kind"] == kind)).any()]
        random.Random(f"{seed}:{kind}").shuffle(groups)
        demos: list[Demo] = []
        for gid in groups:
            rows = train[(train["group_id"] == gid) & (train["kind"] == kind)]
            rows = sorted((r for _, r in rows.iterrows()),
                          key=lambda r: demo_order_key(kind, str(r["variant"]), str(r["item_id"])))
            demos += [Demo(view_of(r), str(r["answer"])) for r in rows]
            if len(demos) >= size:
                break
        pool[kind] = demos[:size]
    return pool


def demo_messages(demos: list[Demo], style: str, input_mode: str) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = []
    for d in demos:
        imgs = select_images(d.view.images, input_mode)
        text = question_block(d.view.question, d.view.options, d.view.meta.get("hint")) + "\n\n" + answer_instruction(style, d.view.letters)
        msgs += [user(image_parts(imgs) + [text_part(text)]), assistant(formatted_answer(style, d.answer))]
    return msgs


def select_images(images: list[Any], input_mode: str) -> list[Any]:
    if input_mode == "all":
        return list(images)
    if input_mode == "first":
        return list(images[:1])
    if input_mode == "text":
        return []
    raise RunnerError(f"unknown input mode {input_mode!r}; expected all, first or text")


# ---- strategies -----------------------------------------------------------------------------------------


def direct(ctx: PromptContext) -> Dialogue:
    style = family_style(ctx.family)
    lead = "Solve the problem. " if style == "tag" else ""
    history = demo_messages(ctx.demos, style, ctx.input_mode)
    text = f"{lead}{ctx.q}\n\n{answer_instruction(style, ctx.task.view.letters)}"
    return (yield ctx.call(ctx.imgs + [text_part(text)], "answer", style, history))


def thinking(ctx: PromptContext) -> Dialogue:
    history = demo_messages(ctx.demos, "tag", ctx.input_mode)
    text = (f"{ctx.q}\n\nThink through the problem step by step before answering; take as long as you need. "
            f"{answer_instruction('tag', ctx.task.view.letters)}")
    return (yield ctx.call(ctx.imgs + [text_part(text)], "thinking", "tag", history))


def ddcot(ctx: PromptContext) -> Dialogue:
    sub = yield ctx.call(ctx.imgs + [text_part(
        f"{ctx.q}\n\nDo not answer the question yet. Decompose it into the sub-questions that must be answered "
        "first. Number them, and mark each sub-question that needs information from the image(s) with "
        "[visual].")], "decompose")
    subs = yield ctx.call(ctx.imgs + [text_part(
        f"Question:\n{ctx.q}\n\nSub-questions:\n{sub}\n\nAnswer each sub-question briefly using the image(s). "
        "If the image(s) do not show the needed information, answer 'uncertain' rather than guessing. "
        "Do not answer the main question.")], "sub-answers")
    style = family_style(ctx.family)
    return (yield ctx.call(ctx.imgs + [text_part(
        f"{ctx.q}\n\nSub-questions and answers (they may contain errors; check them against the image(s)):\n"
        f"{sub}\n{subs}\n\nThink jointly about this rationale and the image(s). "
        f"{answer_instruction(style, ctx.task.view.letters)}")], "answer", style))


def vot(ctx: PromptContext) -> Dialogue:
    return (yield ctx.call(ctx.imgs + [text_part(
        f"{ctx.q}\n\nReason step by step. After each reasoning step, visualize the current state: describe "
        "(or draw in text) what the relevant part of the figure looks like at that point, then continue. "
        f"{answer_instruction('tag', ctx.task.view.letters)}")], "answer", "tag"))


def vic(ctx: PromptContext) -> Dialogue:
    plan = yield ctx.call([text_part(
        f"{ctx.q}\n\nYou cannot see the image(s) yet. Before looking, write a numbered chain of reasoning "
        "steps (a plan) that would answer this question: which visual evidence to extract and how to combine "
        "it. Do not answer the question.")], "plan")
    return (yield ctx.call(ctx.imgs + [text_part(
        f"{ctx.q}\n\nReasoning plan written before looking at the image(s):\n{plan}\n\nFollow the plan step by "
        f"step using the image(s). {answer_instruction('tag', ctx.task.view.letters)}")], "answer", "tag"))


CANTOR_EXPERTS = (
    "TextIntel Extractor (reads text, labels and numbers in the figure)",
    "ObjectQuant Locator (locates and counts objects or panels)",
    "VisionIQ Analyst (describes visual content and relations)",
    "ChartSense Expert (reads charts, axes, bars and trends)",
)


def cantor(ctx: PromptContext) -> Dialogue:
    experts = "\n".join(f"- {e}" for e in CANTOR_EXPERTS)
    decision = yield ctx.call(ctx.imgs + [text_part(
        f"{ctx.q}\n\nAs a decision generator, analyse what this question requires and what the image(s) "
        f"contain. Then assign sub-tasks to the experts below that are needed, one line each, as "
        f"'Expert: sub-task'. Do not answer the question.\nExperts:\n{experts}")], "decision")
    findings = yield ctx.call(ctx.imgs + [text_part(
        f"Question:\n{ctx.q}\n\nSub-tasks assigned to experts:\n{decision}\n\nAct as each named expert in turn and "
        "carry out its sub-task on the image(s), reporting only what you observe.")], "experts")
    style = family_style(ctx.family)
    return (yield ctx.call(ctx.imgs + [text_part(
        f"{ctx.q}\n\nDecision analysis:\n{decision}\n\nExpert findings:\n{findings}\n\nSynthesize the analysis "
        f"and the findings into an answer. {answer_instruction(style, ctx.task.view.letters)}")], "answer",
        style))


BUILTIN: tuple[Strategy, ...] = (
    Strategy("direct", direct, 64),
    Strategy("thinking", thinking, 2048, "tag", trace=True),
    Strategy("ddcot", ddcot, 1024, trace=True),
    Strategy("vot", vot, 2048, "tag", trace=True),
    Strategy("vic", vic, 1024, "tag", trace=True),
    Strategy("cantor", cantor, 1024, trace=True),
)


def strategies() -> tuple[Strategy, ...]:
    """Every strategy a run may name: the built-in ones, then each family's own (core.families.names order)."""
    found = [*BUILTIN, *(s for name in families.names() for s in families.get(name).strategies)]
    names = [s.name for s in found]
    if len(set(names)) < len(names):
        raise TypeError(f"two strategies share a name: {sorted(n for n in set(names) if names.count(n) > 1)}")
    return tuple(found)


def strategy(name: str) -> Strategy:
    """The strategy called `name`; RunnerError naming the known ones."""
    known = strategies()
    found = next((s for s in known if s.name == name), None)
    if found is None:
        raise RunnerError(f"unknown strategy {name!r}; expected one of {', '.join(s.name for s in known)}")
    return found


def usable(name: str, family: str) -> Strategy:
    """The strategy `name` for a benchmark of `family`: a built-in one, or one of the family's own (a strategy
    of another family is refused, naming what it applies to)."""
    found = strategy(name)
    if any(found is s for s in (*BUILTIN, *families.get(family).strategies)):
        return found
    owner = next(f for f in families.names() if any(found is s for s in families.get(f).strategies))
    raise RunnerError(f"strategy {name!r} applies to {found.scope or owner + ' benchmarks'}")


def dialogue(name: str, ctx: PromptContext) -> Dialogue:
    return strategy(name).dialogue(ctx)


def render_text(request: Request) -> str:
    """A request as plain text with <image:NAME> markers (for tests, logs and the GUI's prompt preview)."""
    out = []
    for m in request.messages:
        body = "".join(p["text"] if p["type"] == "text" else f"<image:{p['path'].name}>" for p in m["content"])
        out.append(f"[{m['role']}] {body}")
    return "\n".join(out)
