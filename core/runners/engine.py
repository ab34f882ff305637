"""The run engine: settings -> tasks -> predictions committed one by one into a sink.

The sink is a core.runners.base.PredictionSink: db.store.Store in the product (core/ never imports it); any
object with `ensure_run`, `done_keys(run, statuses)`, `add_predictions`, `set_run_status`, `items_frame`,
`image_path` and `benchmark_family` works (tests use a small in-memory one). The runner is one of the
Protocols of core.runners.base (AnswerRunner for baselines, BatchRunner, AsyncRunner).

Resumability (SPEC §6): a task is keyed by (item, rotation, repeat); every prediction is committed as soon as
it exists (batched runners commit after each batch, concurrent runners commit each answer before their
worker takes the next task, coalescing answers that arrive together into one transaction), so a killed run
loses at most the calls in flight. Re-running the same settings skips every key that has a prediction;
`retry_errors` re-sends only the keys stored as api_error. The run config holds every setting that changes
answers; a different one under the same run name is refused by the store.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core import prompts
from core.errors import RunnerError
from core.parsing import parse_answer, rotate_options, unrotate
from core.runners.base import (
    AnswerRunner,
    AsyncRunner,
    BatchRunner,
    Demo,
    Dialog,
    ItemView,
    PredictionSink,
    Reply,
    Runner,
    Strategy,
    Task,
    run_coroutine,
)
from core.schema import INPUT_MODES, Prediction

if TYPE_CHECKING:
    import pandas as pd

RUNNERS = ("baseline", "transformers", "openai")
# Runners that generate on this machine: an empty generation is the model's (invalid) answer, where an empty
# body from an endpoint is a failed call (api_error).
LOCAL_RUNNERS = ("transformers",)
DEFAULT_SEED = 20260722  # 000 §6.1: the demonstration pool's selection seed


@dataclass(slots=True)
class RunSettings:
    """Every setting of a live run. `identity()` is the part stored as the run config (what changes answers)."""

    benchmark: str
    run: str
    runner: str
    model: str | None = None
    strategy: str = "direct"
    shots: int = 0
    input_mode: str = "all"
    rotations: int = 1
    repeats: int = 1
    seed: int = DEFAULT_SEED
    max_tokens: int | None = None
    temperature: float = 0.0
    split: str = "test"
    # the strategy's own option (its StrategyOption's key -> value), stored in the run config under that key
    options: dict[str, str] = field(default_factory=dict)
    probs: bool = False
    chat_template: str | None = None  # transformers: a Jinja file overriding the checkpoint's (its sha256 is in the config)
    # execution settings (do not change answers; not part of the run's identity)
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = 8
    batch_size: int = 8
    timeout: float = 120.0
    max_retries: int = 5
    backoff: float = 1.0
    retry_errors: bool = False
    limit: int | None = None
    progress: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def check(self) -> None:
        if self.runner not in RUNNERS:
            raise RunnerError(f"unknown runner {self.runner!r}; expected one of {', '.join(RUNNERS)}")
        strategy = prompts.strategy(self.strategy)  # an unknown one: RunnerError naming the known ones
        if not 0 <= self.shots <= prompts.MAX_SHOTS:
            raise RunnerError(f"--shots must be 0..{prompts.MAX_SHOTS}, got {self.shots}")
        if self.shots and self.strategy not in ("direct", "thinking"):
            raise RunnerError("k-shot demonstrations apply to the direct and thinking strategies only")
        if self.input_mode not in INPUT_MODES:
            raise RunnerError(f"unknown input mode {self.input_mode!r}; expected one of {', '.join(INPUT_MODES)}")
        if not 1 <= self.rotations <= 4:
            raise RunnerError(f"--rotations must be 1..4 (rotations 0..N-1), got {self.rotations}")
        if self.repeats < 1:
            raise RunnerError(f"--repeats must be at least 1, got {self.repeats}")
        self._check_option(strategy)
        if self.runner == "baseline":
            from core.runners.baselines import BASELINES

            if self.model not in BASELINES:
                raise RunnerError(f"--runner baseline needs --model, one of {', '.join(BASELINES)}")
        elif not self.model:
            raise RunnerError(f"--runner {self.runner} needs --model")
        if self.probs and self.runner != "transformers":
            raise RunnerError("--probs (option-letter probabilities) needs the transformers runner")
        if self.chat_template and self.runner != "transformers":
            raise RunnerError("--chat-template applies to the transformers runner only")

    def _check_option(self, strategy: Strategy) -> None:
        """The strategy's own option is given, one of its choices; no other strategy's option is."""
        opt = strategy.option
        for key in self.options:
            if opt is None or key != opt.key:
                owner = next((s for s in prompts.strategies() if s.option and s.option.key == key), None)
                if owner is None or owner.option is None:
                    raise RunnerError(f"no strategy takes the option {key!r}")
                raise RunnerError(f"{owner.option.flag} applies to --strategy {owner.name} only")
        if opt is not None and self.options.get(opt.key) not in opt.choices:
            raise RunnerError(f"--strategy {strategy.name} needs {opt.flag}, one of {', '.join(opt.choices)}")

    @property
    def option(self) -> str | None:
        """The value of the strategy's own option (None when it has none)."""
        opt = prompts.strategy(self.strategy).option
        return self.options.get(opt.key) if opt is not None else None

    def identity(self, model: str | None = None) -> dict[str, Any]:
        cfg: dict[str, Any] = {
            "runner": self.runner, "model": model or self.model, "split": self.split, "input_mode": self.input_mode,
            "rotations": self.rotations, "repeats": self.repeats, "seed": self.seed, "synthetic": False,
        }
        if self.runner != "baseline":
            cfg.update(strategy=self.strategy, shots=self.shots, max_tokens=self.max_tokens_or_default(),
                       temperature=self.temperature)
            cfg.update(self.options)  # the strategy's own option (check: no other)
            if self.runner == "transformers":
                cfg["probs"] = self.probs
        cfg.update(self.extra)
        return cfg

    def max_tokens_or_default(self) -> int:
        return int(self.max_tokens or prompts.strategy(self.strategy).max_tokens)


# ---- tasks ----------------------------------------------------------------------------------------------


def make_view(row: Any, image_path: Callable[[str], Any]) -> ItemView:
    return ItemView(
        item_id=str(row["item_id"]), group_id=str(row["group_id"]), split=str(row["split"]), kind=str(row["kind"]),
        variant=str(row["variant"]), question=str(row["question"]), options=dict(row["options"]),
        letters=str(row["letters"]) if row.get("letters") else "".join(row["options"]),
        images=[image_path(h) for h in row["images"]], meta=dict(row["meta"] or {}),
        stages=dict(row["stages"]) if isinstance(row.get("stages"), dict) else None)


def asked_rows(items: pd.DataFrame, s: RunSettings, family: str) -> pd.DataFrame:
    """The items of the run's split that its strategy asks (a family's strategy may ask one kind,
    Strategy.kind); a strategy of another family is refused (prompts.usable), and so is a split without such
    items."""
    kind = prompts.usable(s.strategy, family).kind
    rows = items[items["split"] == s.split]
    if kind is not None:
        rows = rows[rows["kind"] == kind]
    if rows.empty:
        raise RunnerError(f"benchmark {s.benchmark!r} has no items in split {s.split!r}"
                          + (f" of kind {kind}" if kind is not None else ""))
    return rows


def build_tasks(items: Any, s: RunSettings, family: str, image_path: Callable[[str], Any]) -> list[Task]:
    rows = asked_rows(items, s, family)
    if s.limit:
        rows = rows.head(int(s.limit))
    tasks = []
    for _, row in rows.iterrows():
        view = make_view(row, image_path)
        images = prompts.select_images(view.images, s.input_mode)
        for rot in range(s.rotations):
            shown = rotate_options(view.options, rot)
            for rep in range(s.repeats):
                tasks.append(Task(view=view, rotation=rot, repeat=rep, shown=shown, images=images))
    return tasks


# ---- predictions ----------------------------------------------------------------------------------------


def to_prediction(task: Task, dialog: Dialog | None, style: str, s: RunSettings, keep_trace: bool) -> Prediction:
    """Parse the dialog's final response with `style` and map the shown letter back (SPEC §3)."""
    assert dialog is not None
    replies = dialog.replies
    tokens = sum(r.tokens for r in replies if r.tokens is not None) if any(
        r.tokens is not None for r in replies) else None
    latency = sum(r.latency for r in replies if r.latency is not None) if replies else None
    letters = task.view.letters
    base: dict[str, Any] = dict(item_id=task.view.item_id, rotation=task.rotation, repeat=task.repeat, input_mode=s.input_mode,
                tokens=tokens, latency=latency)
    if dialog.error is not None:
        partial = dialog.trace()
        return Prediction(response="", status="api_error", error=dialog.error, trace=partial, **base)
    response = dialog.final or ""
    status, shown = parse_answer(response, letters=letters, style=style, options=task.shown)
    answer = unrotate(shown, letters, task.rotation) if status == "ok" and shown else None
    probs = replies[-1].probs if replies else None
    if probs:
        probs = {unrotate(k, letters, task.rotation): v for k, v in probs.items() if k in letters}
    trace = dialog.trace() or (response if keep_trace else None)
    error = "empty response" if status == "api_error" else None
    if status == "api_error" and s.runner in LOCAL_RUNNERS:  # the model answered nothing: its answer, not a failed call
        status, error = "invalid", None
    return Prediction(response=response, status=status, answer=answer, shown=shown if status == "ok" else None,
                      trace=trace, probs=probs or None, error=error, **base)


# ---- the run --------------------------------------------------------------------------------------------


class _Progress:
    def __init__(self, total: int, enabled: bool, callback: Callable[[int, int], None] | None) -> None:
        self.total, self.done, self.callback = total, 0, callback
        self.counts = {"ok": 0, "invalid": 0, "api_error": 0}
        self.bar = None
        if enabled and total:
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="pred", file=sys.stderr, dynamic_ncols=True)

    def add(self, preds: Iterable[Prediction]) -> None:
        n = 0
        for p in preds:
            self.counts[p.status] = self.counts.get(p.status, 0) + 1
            n += 1
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
            self.bar.set_postfix(ok=self.counts["ok"], invalid=self.counts["invalid"], err=self.counts["api_error"],
                                 refresh=False)
        if self.callback:
            self.callback(self.done, self.total)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def make_runner(s: RunSettings, items: Any) -> Runner:
    if s.runner == "baseline":
        from core.runners.baselines import Baseline

        return Baseline(str(s.model), items, s.seed)
    if s.runner == "transformers":
        from core.runners.transformers_runner import TransformersRunner

        return TransformersRunner(str(s.model), chat_template=s.chat_template)
    from core.runners.openai_runner import OpenAIRunner

    return OpenAIRunner(s.base_url, str(s.model), api_key_env=s.api_key_env, concurrency=s.concurrency,
                        timeout=s.timeout, max_retries=s.max_retries, backoff=s.backoff)


def run(sink: PredictionSink, s: RunSettings, runner: Runner | None = None,
        progress: Callable[[int, int], None] | None = None,
        cancel: threading.Event | None = None, notify: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Execute run `s` into `sink`; returns the summary dict (with `line`, the one-line summary).

    `runner` may be passed in (an already loaded model, or a test double); `progress(done, total)` is called
    after each commit; setting `cancel` stops taking new tasks (the summary's status is then "cancelled").
    `notify(message)` gets each warning about the run's prompts as soon as the runner is loaded (they are
    also in the summary's `warnings` and at the end of its line).
    """
    s.check()
    t0 = time.perf_counter()
    family = sink.benchmark_family(s.benchmark)
    items = sink.items_frame(s.benchmark)
    tasks = build_tasks(items, s, family, sink.image_path)
    if runner is None:
        runner = make_runner(s, items)
    if s.input_mode == "text" and runner.requires_images:
        raise RunnerError(f"{s.model}: this checkpoint's processor needs an image in every prompt; "
                          "--input-mode text cannot run on it")
    ident = dict(runner.identity()) or {"model": s.model}
    config = s.identity(ident.pop("model", s.model))
    config.update(ident)  # prompt decisions the runner made at load (chat template file, images_separated, ...)
    model_id = config["model"]
    tokens = runner.letter_token_strings(_all_letters(tasks)) if s.probs else None
    if tokens is not None:
        config["probs_tokens"] = tokens
    warnings = list(runner.warnings())
    for w in warnings:
        if notify is not None:
            notify(w)
    strategy = prompts.strategy(s.strategy)
    if strategy.run_config is not None:  # what the strategy records in the run config
        views = [make_view(row, sink.image_path) for _, row in asked_rows(items, s, family).iterrows()]
        config.update(strategy.run_config(items, views, s.option, s.seed))
    sink.ensure_run(s.run, s.benchmark, config)
    pending = _pending(sink, s, tasks)
    sink.set_run_status(s.run, "running")
    bar = _Progress(len(pending), s.progress, progress)
    status = "done"
    if pending:
        runner.prepare()  # set-up outside the request phase (an HTTP client, its lazily imported modules)
    t_send = time.perf_counter()
    try:
        if s.runner == "baseline":
            if not isinstance(runner, AnswerRunner):
                raise RunnerError(f"{type(runner).__name__} is not a baseline (it has no answer(task))")
            _run_baseline(sink, s, runner, pending, bar, cancel)
        else:
            make_dialog = _dialog_factory(items, s, family, sink.image_path)
            style = prompts.final_style(s.strategy, family)
            keep = strategy.trace
            if isinstance(runner, AsyncRunner):
                run_coroutine(_run_async(sink, s, runner, pending, make_dialog, style, keep, bar, cancel))
            elif isinstance(runner, BatchRunner):
                _run_batched(sink, s, runner, pending, make_dialog, style, keep, bar, cancel)
            else:
                raise RunnerError(f"{type(runner).__name__} answers no prompts (neither acall nor generate)")
        if cancel is not None and cancel.is_set():
            status = "cancelled"
    except KeyboardInterrupt:
        sink.set_run_status(s.run, "cancelled")
        raise
    except BaseException:
        sink.set_run_status(s.run, "failed")
        raise
    finally:
        bar.close()
    send_seconds = time.perf_counter() - t_send
    left = sink.done_keys(s.run, statuses=("api_error",))
    sink.set_run_status(s.run, status)
    return _summary(s, model_id, status, len(tasks), len(pending), bar, len(left), t0, send_seconds, warnings)


def _pending(sink: PredictionSink, s: RunSettings, tasks: list[Task]) -> list[Task]:
    """The tasks still to send: those without a prediction, or with `retry_errors` those stored as api_error."""
    if s.retry_errors:
        todo_keys = sink.done_keys(s.run, statuses=("api_error",))
        return [t for t in tasks if t.key in todo_keys]
    done = sink.done_keys(s.run, statuses=("ok", "invalid", "api_error"))
    return [t for t in tasks if t.key not in done]


def _summary(s: RunSettings, model_id: str, status: str, n_tasks: int, n_pending: int, bar: _Progress,
             n_left: int, t0: float, send_seconds: float, warnings: list[str]) -> dict[str, Any]:
    """The run's summary dict, with `line`, the one-line summary the CLI prints."""
    seconds = time.perf_counter() - t0
    summary: dict[str, Any] = {
        "run": s.run, "benchmark": s.benchmark, "runner": s.runner, "model": model_id, "status": status,
        "tasks": n_tasks, "skipped": n_tasks - n_pending, "sent": bar.done, **bar.counts,
        "api_error_stored": n_left, "seconds": round(time.perf_counter() - t0, 3),
        "send_seconds": round(send_seconds, 3), "warnings": warnings,
    }
    rate = f", {bar.done / seconds:.1f}/s" if seconds > 0 and bar.done else ""
    summary["line"] = (
        f"run {s.run!r} {status}: {bar.done} answered now ({bar.counts['ok']} ok, {bar.counts['invalid']} invalid, "
        f"{bar.counts['api_error']} api_error), {summary['skipped']} already done, {n_tasks} keys in all, "
        f"{summary['seconds']:.1f} s{rate}"
        + (f"; {n_left} api_error stored (re-send them with --retry-errors)" if n_left else "")
        + "".join(f"; warning: {w}" for w in warnings))
    return summary


def _all_letters(tasks: list[Task]) -> str:
    seen: dict[str, None] = {}
    for t in tasks:
        seen.update(dict.fromkeys(t.view.letters))
    return "".join(seen)


def _dialog_factory(items: Any, s: RunSettings, family: str, image_path: Callable[[str], Any]
                    ) -> Callable[[Task], Dialog]:
    pool: dict[str, list[Demo]] = {}
    if s.shots:
        pool = prompts.build_demo_pool(items, s.seed, s.split, lambda r: make_view(r, image_path))
    strategy = prompts.strategy(s.strategy)
    item_text = strategy.prepare(items, s.option, s.seed) if strategy.prepare is not None else None
    max_tokens = s.max_tokens_or_default()

    def make(task: Task) -> Dialog:
        demos = pool.get(task.view.kind, [])[: s.shots] if s.shots else []
        if s.shots and len(demos) < s.shots:
            raise RunnerError(f"{s.shots}-shot needs {s.shots} train demonstrations of kind {task.view.kind!r}; "
                              f"the train split offers {len(demos)} outside the evaluated groups and images")
        ctx = prompts.PromptContext(
            task=task, family=family, max_tokens=max_tokens, temperature=s.temperature, demos=demos,
            input_mode=s.input_mode, option=s.option, item_text=item_text(task.view) if item_text else None,
            want_probs=s.probs)
        return Dialog(task, strategy.dialogue(ctx))

    return make


def _run_baseline(sink: PredictionSink, s: RunSettings, runner: AnswerRunner, pending: list[Task],
                  bar: _Progress, cancel: threading.Event | None) -> None:
    chunk = max(1, s.batch_size) * 32
    for i in range(0, len(pending), chunk):
        if cancel is not None and cancel.is_set():
            return
        preds = []
        for t in pending[i:i + chunk]:
            shown = runner.answer(t)
            preds.append(Prediction(item_id=t.view.item_id, response=shown, status="ok", shown=shown,
                                    answer=unrotate(shown, t.view.letters, t.rotation), rotation=t.rotation,
                                    repeat=t.repeat, input_mode=s.input_mode))
        sink.add_predictions(s.run, preds)
        bar.add(preds)


def _run_batched(sink: PredictionSink, s: RunSettings, runner: BatchRunner, pending: list[Task],
                 make_dialog: Callable[[Task], Dialog], style: str, keep: bool, bar: _Progress,
                 cancel: threading.Event | None) -> None:
    """Batches of `batch_size` tasks advance stage by stage; each batch is committed when it completes."""
    size = max(1, s.batch_size)
    for i in range(0, len(pending), size):
        if cancel is not None and cancel.is_set():
            return
        dialogs = [make_dialog(t) for t in pending[i:i + size]]
        while True:
            live = [d for d in dialogs if not d.done]
            if not live:
                break
            try:
                replies = runner.generate([d.request for d in live if d.request is not None])  # all (not done)
            except (RuntimeError, ValueError) as exc:  # a batch the model cannot run: record, never guess
                replies = [Reply(error=f"{type(exc).__name__}: {exc}"[:2000]) for _ in live]
            for d, r in zip(live, replies, strict=True):
                d.feed(r)
        preds = [to_prediction(d.task, d, style, s, keep) for d in dialogs]
        sink.add_predictions(s.run, preds)
        bar.add(preds)


class _Committer:
    """Commits predictions on the event loop's own thread: answers that arrive in the same loop iteration
    share one transaction, run by a callback scheduled with `call_soon` (a WAL commit at synchronous=NORMAL
    takes well under a millisecond, cheaper than handing rows to a writer thread and waking the loop again).
    A worker awaits its commit before taking the next task, so sent-but-uncommitted keys never exceed the
    concurrency bound."""

    def __init__(self, sink: PredictionSink, run: str, bar: _Progress, loop: asyncio.AbstractEventLoop) -> None:
        self.sink, self.run, self.bar, self.loop = sink, run, bar, loop
        self.pending: list[tuple[Prediction, asyncio.Future[None]]] = []

    def submit(self, pred: Prediction) -> asyncio.Future[None]:
        fut: asyncio.Future[None] = self.loop.create_future()
        if not self.pending:
            self.loop.call_soon(self._flush)
        self.pending.append((pred, fut))
        return fut

    def _flush(self) -> None:
        batch, self.pending = self.pending, []
        if not batch:
            return
        try:
            self.sink.add_predictions(self.run, [p for p, _ in batch])
        except BaseException as exc:  # noqa: BLE001 - handed to every waiting worker
            for _, fut in batch:
                if not fut.done():
                    fut.set_exception(exc)
            return
        self.bar.add(p for p, _ in batch)
        for _, fut in batch:
            if not fut.done():
                fut.set_result(None)

    def close(self) -> None:
        self._flush()


async def _run_async(sink: PredictionSink, s: RunSettings, runner: AsyncRunner, pending: list[Task],
                     make_dialog: Callable[[Task], Dialog], style: str, keep: bool, bar: _Progress,
                     cancel: threading.Event | None) -> None:
    committer = _Committer(sink, s.run, bar, asyncio.get_running_loop())
    queue = iter(pending)

    async def worker() -> None:
        for task in queue:
            if cancel is not None and cancel.is_set():
                return
            dialog = make_dialog(task)
            while not dialog.done:
                assert dialog.request is not None
                dialog.feed(await runner.acall(dialog.request))
            await committer.submit(to_prediction(task, dialog, style, s, keep))

    try:
        await asyncio.gather(*(worker() for _ in range(max(1, min(s.concurrency, len(pending) or 1)))))
    finally:
        committer.close()
        await runner.aclose()
