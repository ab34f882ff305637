"""The one interface every runner shares: requests in, replies out, predictions built in one place.

A *task* is one key (item, rotation, repeat). A prompt strategy (core/prompts.py) turns a task into a
*dialog*: a generator that yields `Request`s (one per model call; multi-stage methods yield several) and
receives each reply's text. Runners only answer requests:

- batched runners (transformers) implement `generate(requests) -> list[Reply]`;
- concurrent runners (OpenAI-compatible) implement `async acall(request) -> Reply`;
- baselines implement `answer(task) -> shown letter` and never see a prompt.

The engine (core/runners/engine.py) drives dialogs, parses the final text with the family's parser and
commits each `core.schema.Prediction` as soon as it exists into a `PredictionSink` (db.store.Store in the
product). The three runner kinds and the sink are `typing.Protocol`s below; the engine and the judge type
against them. What a runner may add to answering (`identity()`, `warnings()`, `prepare()`, `aclose()`,
`requires_images`, `letter_token_strings()`, `kind`, `concurrency`) is declared once, with its default, on
`RunnerBase`, which every runner extends.

A prompt strategy is one typed `Strategy`: its dialogue (a generator over a `PromptContext`), its defaults and
what it adds to a run. core/prompts.py declares the built-in ones; a family brings its own in
`Family.strategies` (StemBind's SSA, core/families/stembind/ssa_prompt.py), and generic code lists both.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, runtime_checkable

from core.errors import RunnerError

if TYPE_CHECKING:
    import pandas as pd

    from core.schema import Prediction

__all__ = ["Request", "Reply", "ItemView", "Task", "Dialog", "RunnerError", "text_part", "image_part",
           "AnswerRunner", "BatchRunner", "AsyncRunner", "Runner", "RunnerBase", "ModelRunner", "PredictionSink", "PromptContext",
           "Demo", "Dialogue", "Strategy", "StrategyOption"]


def text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def image_part(path: Path) -> dict[str, Any]:
    return {"type": "image", "path": Path(path)}


@dataclass(slots=True)
class Request:
    """One model call. `messages` are chat turns whose `content` is a list of text / image parts, images in
    the order the model must see them. `probs_after` asks a runner that can (transformers) for option-letter
    probabilities at the generated position right after that text ("" = the first generated token)."""

    messages: list[dict[str, Any]]
    max_tokens: int
    temperature: float = 0.0
    letters: str = "ABCD"
    probs_after: str | None = None
    stage: str = "answer"

    def images(self) -> list[Path]:
        return [p["path"] for m in self.messages for p in m["content"] if p["type"] == "image"]


@dataclass(slots=True)
class Reply:
    """What one call gave back: text, or an error (then text is ""). `probs` are keyed by shown letter."""

    text: str = ""
    error: str | None = None
    tokens: int | None = None
    latency: float | None = None
    probs: dict[str, float] | None = None


@dataclass(slots=True)
class ItemView:
    """An item as prompts see it: everything but the gold answer, images as stored file paths."""

    item_id: str
    group_id: str
    split: str
    kind: str
    variant: str
    question: str
    options: dict[str, str]
    letters: str
    images: list[Path]
    meta: dict[str, Any] = field(default_factory=dict)
    stages: dict[str, str] | None = None


@dataclass(slots=True)
class Task:
    """One key to answer: the item view, the options as shown under `rotation`, and the repeat index."""

    view: ItemView
    rotation: int
    repeat: int
    shown: dict[str, str]
    images: list[Path]  # the images sent under the run's input mode, in order

    @property
    def key(self) -> tuple[str, int, int]:
        return (self.view.item_id, self.rotation, self.repeat)


# ---- what a strategy reads ------------------------------------------------------------------------------


def options_block(shown: dict[str, str]) -> str:
    return "\n".join(f"{letter}. {text}" for letter, text in shown.items())


def question_block(question: str, shown: dict[str, str], hint: Any = None) -> str:
    """The question and its options; an item's `meta.hint` (VLMEvalKit's hint column) goes first, as
    VLMEvalKit's MCQ prompt puts it (vlmeval/dataset/image_mcq.py: "Hint: ...")."""
    head = f"Hint: {hint.strip()}\n" if isinstance(hint, str) and hint.strip() else ""
    return f"{head}{question.strip()}\n\nOptions:\n{options_block(shown)}"


def image_parts(images: list[Any]) -> list[dict[str, Any]]:
    """Images in order; with several, each is labelled "Image i:" so that ordinal references resolve."""
    if len(images) <= 1:
        return [image_part(p) for p in images]
    parts: list[dict[str, Any]] = []
    for i, p in enumerate(images, 1):
        parts += [text_part(f"Image {i}:"), image_part(p)]
    return parts


def user(parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": "user", "content": parts}


@dataclass(slots=True)
class Demo:
    """One demonstration: a train item shown in original option order with its gold letter."""

    view: ItemView
    answer: str


@dataclass(slots=True)
class PromptContext:
    """Everything a strategy needs for one task. `option`: the value of the strategy's own option (StrategyOption,
    e.g. StemBind SSA's level); `item_text`: the text its `prepare` gave this item (SSA's irrelevant-S1 control)."""

    task: Task
    family: str
    max_tokens: int
    temperature: float = 0.0
    demos: list[Demo] = field(default_factory=list)  # the k-shot demonstrations (core.prompts.build_demo_pool)
    input_mode: str = "all"
    option: str | None = None
    item_text: str | None = None
    want_probs: bool = False

    def call(self, parts: list[dict[str, Any]], stage: str, style: str | None = None,
             history: list[dict[str, Any]] | None = None) -> Request:
        probs_after = None
        if self.want_probs and style is not None:
            probs_after = "<ANSWER>" if style == "tag" else ""
        return Request(messages=[*(history or []), user(parts)], max_tokens=self.max_tokens,
                       temperature=self.temperature, letters=self.task.view.letters, probs_after=probs_after,
                       stage=stage)

    @property
    def q(self) -> str:
        return question_block(self.task.view.question, self.task.shown, self.task.view.meta.get("hint"))

    @property
    def imgs(self) -> list[dict[str, Any]]:
        return image_parts(self.task.images)


Dialogue: TypeAlias = Generator[Request, str, str]
ItemText: TypeAlias = Callable[[ItemView], "str | None"]
# A strategy's hooks, each called once per run: `prepare(items, option, seed)` gives a text per item its dialogue
# reads as `ctx.item_text` (None: none at this option); `run_config(items, views, option, seed)` what it adds to
# the run's config, `views` being every item of the run's split it asks (not only a --limit's)
Prepare: TypeAlias = "Callable[[pd.DataFrame, str | None, int], ItemText | None]"
RunConfig: TypeAlias = "Callable[[pd.DataFrame, Sequence[ItemView], str | None, int], dict[str, Any]]"


@dataclass(frozen=True)
class StrategyOption:
    """A strategy's one setting beyond the common ones (StemBind SSA's level): the run config stores the value
    under `key`, the command line takes it as `flag`, the Run tab as a dropdown labelled `label`."""

    key: str                    # the run config key and RunSettings.options key ("ssa_level")
    flag: str                   # `run`'s option ("--ssa-level")
    label: str                  # the Run tab's dropdown ("SSA level")
    choices: tuple[str, ...]
    help: str = ""              # what the choices mean, for `run --help`


@dataclass(frozen=True)
class Strategy:
    """One prompt strategy: how a task becomes one or more model calls (core/prompts.py's, or a family's own)."""

    name: str                   # `run --strategy NAME`, the run config's `strategy`
    dialogue: Callable[[PromptContext], Dialogue]
    max_tokens: int             # the default output cap of each call
    # the final response's answer format: "tag" (<ANSWER>X</ANSWER>) after free reasoning, whatever the family;
    # "family" (its parser: one letter, StemBind's tag)
    final_style: Literal["tag", "family"] = "family"
    trace: bool = False         # its response is a reasoning trace worth keeping (the L2 judge reads it)
    kind: str | None = None     # the item kind it asks (StemBind SSA: "F"); None: every item
    option: StrategyOption | None = None
    prepare: Prepare | None = None
    run_config: RunConfig | None = None
    scope: str = ""             # a family's strategy: what it applies to, as a refusal names it


class Dialog:
    """Drives one task's strategy generator: `request` is the pending call, `feed(reply)` advances it."""

    __slots__ = ("task", "gen", "request", "replies", "stages", "done", "final", "error")

    def __init__(self, task: Task, gen: Generator[Request, str, str]) -> None:
        self.task = task
        self.gen = gen
        self.replies: list[Reply] = []
        self.stages: list[str] = []
        self.done = False
        self.final: str | None = None
        self.error: str | None = None
        self.request: Request | None = next(gen)

    def feed(self, reply: Reply) -> None:
        assert self.request is not None
        self.replies.append(reply)
        self.stages.append(self.request.stage)
        if reply.error is not None:
            self.done, self.error, self.request = True, reply.error, None
            self.gen.close()
            return
        try:
            self.request = self.gen.send(reply.text)
        except StopIteration as stop:
            self.done, self.final, self.request = True, stop.value, None

    def trace(self) -> str | None:
        """The whole transcript of a multi-call method; None for a single call (the response is the trace)."""
        if len(self.replies) <= 1:
            return None
        return "\n\n".join(f"[{stage}]\n{r.text}" for stage, r in zip(self.stages, self.replies, strict=True))


class RunnerBase:
    """What every runner may add to answering, each with its default; a runner overrides what it has."""

    kind = "runner"             # its kind as a judge run's config names it ("openai", "transformers", ...)
    concurrency = 1             # calls it answers at once (a concurrent runner's bound)
    requires_images = False     # its processor needs an image in every prompt (PaliGemma)

    def identity(self) -> dict[str, Any]:
        """What names the model and the prompt decisions it made at load (a run's config); {}: none."""
        return {}

    def warnings(self) -> list[str]:
        """Notes about the run's prompts, given as soon as it is loaded."""
        return []

    def prepare(self) -> None:
        """Set-up outside the request phase (an HTTP client, its lazily imported modules)."""

    def letter_token_strings(self, letters: str) -> dict[str, list[str]] | None:
        """The token strings of each option letter, where it reads option probabilities; None: it does not."""
        return None

    async def aclose(self) -> None:
        """Let go of what `prepare` opened."""


class Answering(Protocol):
    """RunnerBase's members, as the engine and the judge read them on any runner."""

    kind: str
    concurrency: int
    requires_images: bool

    def identity(self) -> dict[str, Any]: ...

    def warnings(self) -> list[str]: ...

    def prepare(self) -> None: ...

    def letter_token_strings(self, letters: str) -> dict[str, list[str]] | None: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class AnswerRunner(Answering, Protocol):
    """A baseline: the shown letter of a task, without a prompt (core/runners/baselines.py)."""

    def answer(self, task: Task) -> str: ...


@runtime_checkable
class BatchRunner(Answering, Protocol):
    """A batched runner: one reply per request, in order (core/runners/transformers_runner.py)."""

    def generate(self, requests: list[Request]) -> list[Reply]: ...


@runtime_checkable
class AsyncRunner(Answering, Protocol):
    """A concurrent runner: one awaited reply per request (core/runners/openai_runner.py)."""

    async def acall(self, request: Request) -> Reply: ...


ModelRunner = BatchRunner | AsyncRunner  # a runner that answers prompts (a run's model, or the judge's)
Runner = AnswerRunner | BatchRunner | AsyncRunner


class PredictionSink(Protocol):
    """Where a run's predictions go (db.store.Store in the product; tests use a small in-memory one)."""

    def benchmark_family(self, name: str) -> str: ...

    def items_frame(self, benchmark: str) -> Any: ...  # a pandas DataFrame, one row per item

    def image_path(self, digest: str) -> Path: ...

    def ensure_run(self, name: str, benchmark: str, config: dict[str, Any]) -> int: ...

    def set_run_status(self, run: str, status: str) -> None: ...

    def done_keys(self, run: str, statuses: tuple[str, ...] = ...) -> set[tuple[str, int, int]]: ...

    def add_predictions(self, run: str, predictions: Iterable[Prediction]) -> int: ...


def run_coroutine(coro: Any) -> Any:
    """`asyncio.run(coro)`, also from a thread that already runs an event loop (a notebook, Playwright's sync
    API): then the coroutine runs on a fresh loop in a helper thread and this thread waits for it."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()
