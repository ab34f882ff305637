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
against them. What a runner may add (`identity()`, `warnings()`, `prepare()`, `aclose()`, `requires_images`,
`letter_token_strings()`) is read with hasattr / getattr where it is used.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from core.errors import RunnerError

if TYPE_CHECKING:
    from core.schema import Prediction

__all__ = ["Request", "Reply", "ItemView", "Task", "Dialog", "RunnerError", "text_part", "image_part",
           "AnswerRunner", "BatchRunner", "AsyncRunner", "Runner", "ModelRunner", "PredictionSink"]


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


@runtime_checkable
class AnswerRunner(Protocol):
    """A baseline: the shown letter of a task, without a prompt (core/runners/baselines.py)."""

    def answer(self, task: Task) -> str: ...


@runtime_checkable
class BatchRunner(Protocol):
    """A batched runner: one reply per request, in order (core/runners/transformers_runner.py)."""

    def generate(self, requests: list[Request]) -> list[Reply]: ...


@runtime_checkable
class AsyncRunner(Protocol):
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
