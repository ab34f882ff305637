"""Background jobs of this server process: a model run (the Run tab) or a trace judge (the Calibration tab's
*Run a judge*), one machinery for both.

A job executes in a worker thread owned by the server, not by the browser request: closing the tab leaves it
going, another browser sees it, and what it makes is committed as it is made (predictions by
core.runners.engine, judgements by db.judge_runs.judge_run), so a cancelled or killed job resumes where it
stopped. Every job (a start, a resume, a restart) is its own row of the job history (db/jobs.py), which
outlives the server. A tab starts a job with `JOBS.start(store, spec, user, work)` and returns at once; its
progress panel (`progress_html`) is a cheap poll of the job's in-memory counters on the "run-poll" queue,
driven by a gr.Timer that stops when the job does, and Cancel sets the job's `cancel` event.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from core.errors import CrosscheckError
from core.runners.engine import RunSettings
from core.runners.engine import run as engine_run
from db import jobs as dbjobs
from db.store import Store
from ui.templating import macro

if TYPE_CHECKING:
    import pandas as pd


class JobSpec(Protocol):
    """What the job table and the progress panel show of a job: the run it fills, its benchmark, runner and
    model (core.runners.engine.RunSettings for a model run; ui.judge_job.JudgeSettings for a judge)."""

    run: str
    benchmark: str
    runner: str
    model: str | None


class _CountingSink:
    """The store as the engine's sink, counting the statuses of committed predictions for the progress bar."""

    def __init__(self, store: Store, job: Job) -> None:
        self._store, self._job = store, job

    def benchmark_family(self, name: str) -> str:
        return self._store.benchmark_family(name)

    def items_frame(self, benchmark: str) -> pd.DataFrame:
        return self._store.items_frame(benchmark)

    def image_path(self, digest: str) -> Path:
        return self._store.image_path(digest)

    def ensure_run(self, name: str, benchmark: str, config: dict[str, Any]) -> int:
        return self._store.ensure_run(name, benchmark, config)

    def set_run_status(self, run: str, status: str) -> None:
        self._store.set_run_status(run, status)

    def done_keys(self, run: str, statuses: tuple[str, ...] = ("ok", "invalid")) -> set[tuple[str, int, int]]:
        return self._store.done_keys(run, statuses)

    def add_predictions(self, run: str, predictions: Any) -> int:
        preds = list(predictions)
        n = self._store.add_predictions(run, preds)
        for p in preds:
            self._job.count(p.status)
        return n


def engine_work(store: Store, job: Job) -> dict[str, Any]:
    """A model run (the Run tab): core.runners.engine over the store, counting what it commits."""
    if not isinstance(job.settings, RunSettings):
        raise TypeError("a model run's job needs RunSettings")
    return engine_run(_CountingSink(store, job), job.settings, progress=job.progress, cancel=job.cancel,
                      notify=job.notify)


# what a job executes in its worker thread: reports through job.progress / job.count / job.notify, stops when
# job.cancel is set, returns a summary {"status", "line", and, when it never reported progress, "tasks",
# "skipped", "sent"}
Work = Callable[[Store, "Job"], dict[str, Any]]


@dataclass
class Job:
    """One live job in this server process."""

    settings: JobSpec
    user: str | None
    work: Work = engine_work
    id: int = 0  # its row in run_jobs
    kind: str = "new"  # new | resume (the run held results when it started)
    held_before: int = 0  # results the run held when this job started
    started: float = field(default_factory=time.time)
    done: int = 0
    total: int | None = None
    counts: dict[str, int] = field(default_factory=dict)
    status: str = "starting"  # starting | running | done | cancelled | failed
    message: str = ""
    finished: float | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    thread: threading.Thread | None = None

    @property
    def live(self) -> bool:
        return self.status in ("starting", "running")

    def progress(self, done: int, total: int) -> None:
        with self.lock:
            self.done, self.total, self.status = done, total, "running"

    def count(self, status: str) -> None:
        """One committed result of `status` (ok, invalid, api_error; a judge's malformed counts as invalid)."""
        key = "invalid" if status == "malformed" else status
        with self.lock:
            self.counts[key] = self.counts.get(key, 0) + 1

    def notify(self, message: str) -> None:
        """A warning shown while the job goes on (the engine's prompt warnings)."""
        with self.lock:
            self.message = f"warning: {message}"

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            end = self.finished or time.time()
            elapsed = end - self.started
            eta = None
            if self.live and self.total and self.done:
                eta = elapsed / self.done * (self.total - self.done)
            return {"run": self.settings.run, "benchmark": self.settings.benchmark, "status": self.status,
                    "done": self.done, "total": self.total, "held": self.held_before + self.done,
                    "held_total": None if self.total is None else self.held_before + self.total,
                    "id": self.id, "kind": self.kind, "started": self.started,
                    "errors": self.counts.get("api_error", 0),
                    "invalid": self.counts.get("invalid", 0), "elapsed": elapsed, "eta": eta,
                    "message": self.message, "user": self.user, "runner": self.settings.runner,
                    "model": self.settings.model}


class Jobs:
    """The jobs started from the GUI in this process: the latest of each run (`jobs`, for Follow run) and every
    one by its id (`by_id`); the history of all jobs, of this process and earlier ones, is db/jobs.py."""

    STOP_WAIT = 60.0  # seconds a resume waits for a cancelled job of the same run to finish its last requests

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.jobs: dict[str, Job] = {}
        self.by_id: dict[int, Job] = {}

    def start(self, store: Store, s: JobSpec, user: str | None, work: Work = engine_work,
              held: int | None = None) -> Job:
        """Start `work` for `s.run` in a worker thread; `held`: the results the run holds in the job's scope
        when it starts (default: its predictions)."""
        with self.lock:
            old = self.jobs.get(s.run)
        if old is not None and old.live:
            if not old.cancel.is_set():
                raise CrosscheckError(f"run {s.run!r} is already running (started by {old.user or 'someone'})")
            if old.thread is not None:  # cancelled, finishing its requests in flight: resume right after it
                old.thread.join(self.STOP_WAIT)
            if old.live:
                raise CrosscheckError(f"run {s.run!r} is still stopping; try again in a moment")
        with self.lock:
            old = self.jobs.get(s.run)
            if old is not None and old.live:
                raise CrosscheckError(f"run {s.run!r} is already running (started by {old.user or 'someone'})")
            job_id, before = dbjobs.open_job(store, s.run, s.benchmark, s.runner, s.model, user, held=held)
            job = Job(settings=s, user=user, work=work, id=job_id, kind="resume" if before else "new",
                      held_before=before)
            self.jobs[s.run] = job
            self.by_id[job_id] = job
        job.thread = threading.Thread(target=self._work, args=(store, job), name=f"crosscheck-run-{s.run}",
                                      daemon=True)
        job.thread.start()
        return job

    @staticmethod
    def _work(store: Store, job: Job) -> None:
        try:
            summary = job.work(store, job)
        except Exception as exc:  # noqa: BLE001 - shown in the progress panel; the work marked its run failed
            with job.lock:
                job.status, job.message = "failed", f"{type(exc).__name__}: {exc}"
        else:
            with job.lock:
                job.status = summary.get("status", "done")
                job.message = str(summary.get("line", ""))
                if job.total is None:
                    job.total = summary.get("tasks", 0) - summary.get("skipped", 0)
                    job.done = summary.get("sent", 0)
        finally:
            with job.lock:
                job.finished = time.time()
                if job.status in ("starting", "running"):  # interrupted (KeyboardInterrupt, SystemExit)
                    job.status = "failed"
                end = (job.status, job.total, job.done, dict(job.counts), job.message)
            try:
                dbjobs.close_job(store, job.id, *end)
            except Exception:  # noqa: BLE001 - the history row stays open ("interrupted"); the run itself is safe
                pass
            store.close()  # this thread's connection

    def get(self, run: str | None) -> Job | None:
        with self.lock:
            return self.jobs.get(run) if run else None

    def all(self) -> list[Job]:
        with self.lock:
            return sorted(self.jobs.values(), key=lambda j: j.started, reverse=True)

    def any_live(self) -> bool:
        return any(j.live for j in self.all())


JOBS = Jobs()


def cancel_button(jobs: Jobs, run: str | None) -> Any:
    """Cancel is enabled only while the followed job runs (and has not been asked to stop)."""
    import gradio as gr

    job = jobs.get(run)
    return gr.update(interactive=job is not None and job.live and not job.cancel.is_set())


# --------------------------------------------------------------------------- the progress panel


def clock(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def progress_html(job: Job | None, elem_id: str = "cc-run-progress", idle: str = "run",
                  invalid: str = "invalid") -> str:
    """The panel of one job (element `elem_id`, its numbers also in data- attributes): what the run holds of all
    its tasks, earlier jobs included, the bar, errors, `invalid` (the word for invalid results), elapsed, ETA.
    Without a job, the idle line of the tab (`idle`: "run" or "judge", ui/templates/jobs.html)."""
    if job is None:
        return macro("jobs.html", "progress")(elem_id, idle, None)
    s = job.snapshot()
    held, total = s["held"], s["held_total"]  # what the run holds, of all its tasks (earlier jobs included)
    pct = 100.0 * held / total if total else (100.0 if s["status"] == "done" else 0.0)
    return macro("jobs.html", "progress")(elem_id, idle, {
        **s, "held": held, "total": "" if total is None else str(total), "max": total or 1,
        "value": held if total else (1 if s["status"] == "done" else 0), "pct": f"{pct:.0f}",
        "total_text": "…" if total is None else str(total), "model": str(s["model"] or ""),
        "user": s["user"] or "— (no sign-in)", "invalid_word": invalid, "elapsed": clock(s["elapsed"]),
        "earlier": f" ({s['held'] - s['done']} from earlier jobs)" if s["kind"] == "resume" else "",
        "eta": clock(s["eta"]) if s["status"] in ("running", "starting") else "—"})


# the status colours carry `html .gradio-container` to outrank Gradio's `.prose *` colour (assets/views.css)
PROGRESS_CSS = """
.cc-progress { border: 1px solid #d8d8d8; border-radius: 8px; padding: 10px 12px; font-size: 0.9rem; }
.cc-progress.cc-idle { color: #666; }
.cc-run-head { margin-bottom: 6px; }
progress.cc-bar { width: 100%; height: 14px; border: none; border-radius: 7px; overflow: hidden;
  background: #eceff3; appearance: none; -webkit-appearance: none; }
progress.cc-bar::-webkit-progress-bar { background: #eceff3; border-radius: 7px; }
progress.cc-bar::-webkit-progress-value { background: #2f6db5; border-radius: 7px; transition: width 0.4s ease; }
progress.cc-bar::-moz-progress-bar { background: #2f6db5; }
progress.cc-bar-done::-webkit-progress-value { background: #3a9a5b; }
progress.cc-bar-cancelled::-webkit-progress-value { background: #a07a1f; }
progress.cc-bar-failed::-webkit-progress-value { background: #b8423a; }
html .gradio-container .cc-st-running, html .gradio-container .cc-st-starting { color: #2f6db5; }
html .gradio-container .cc-st-done { color: #2f7d4a; } html .gradio-container .cc-st-cancelled { color: #8a6a1a; }
html .gradio-container .cc-st-failed { color: #b8423a; }
.cc-run-stats { display: flex; gap: 18px; margin-top: 6px; flex-wrap: wrap; font-variant-numeric: tabular-nums; }
.cc-run-msg { margin-top: 6px; color: #555; font-size: 0.82rem; }
.dark .cc-progress { border-color: #545d68; }
.dark .cc-progress.cc-idle, .dark .cc-run-msg { color: #adbac7; }
.dark progress.cc-bar, .dark progress.cc-bar::-webkit-progress-bar { background: #373e47; }
.dark .gradio-container .cc-st-running, .dark .gradio-container .cc-st-starting { color: #6cb6ff; }
.dark .gradio-container .cc-st-done { color: #57ab5a; } .dark .gradio-container .cc-st-cancelled { color: #daaa3f; }
.dark .gradio-container .cc-st-failed { color: #f47067; }
"""
