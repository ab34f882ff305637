"""*Run a judge* in the Calibration tab (issue 25 point 6): start the lexical judge or an OpenAI-compatible
endpoint judge on the traces run and scope picked above, watch it, cancel it, and see its agreement with the
annotators when it ends, without a shell.

The judge is what `python app.py judge` runs (core.judge.make_judge, db.judge_runs.judge_run); it runs as a job of
the server (ui/jobs.py, the Run tab's machinery: a worker thread, the job history, the "run-poll" timer, the
progress panel), so closing the page leaves it going. Start refuses at once, with why and before anything is
stored, what cannot run: no traces run, a run of a family without stage judging, a scope no annotator has
labeled (nothing to compare the judge with), an endpoint base URL that is not an http(s) URL, no model, an API
key variable the server lacks, a judge-run name taken by a model run, another benchmark or other judge
settings. The same name and settings continue a judge run (only the traces it has not judged, api errors
again). When the followed job ends, the tab's Judge picker takes the new judge run and the report is computed
again. Handlers are module-level functions of the store, the job table and plain values
(tests/ui/test_judge_job_handlers.py).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import gradio as gr

from core import families
from core.errors import CrosscheckError, NotFound
from core.judge import JudgeSpec, LexicalJudge, ModelJudge, make_judge
from db import judge_runs, judging
from db import labels as dbl
from db.store import Store
from ui.context import Ctx
from ui.handlers import bind, username
from ui.jobs import JOBS, PROGRESS_CSS, Job, Jobs, Work, cancel_button, progress_html
from ui.templating import macro, style

KINDS = [("Lexical (no model)", "lexical"), ("OpenAI-compatible endpoint (vLLM, SGLang, OpenAI ...)", "openai")]
PANEL = "cj-progress"  # the progress panel's element id
STYLE = """
.cj-msg { min-height: 1.3em; font-size: 0.9rem; }
html .gradio-container .cj-refused, html .gradio-container .cj-refused * { color: #b8423a; }
.dark .gradio-container .cj-refused, .dark .gradio-container .cj-refused * { color: #f47067; }
"""


@dataclass(slots=True)
class JudgeSettings:
    """A judge job: the judge run it fills (`run`, the job's run), the traces it judges and the judge."""

    run: str
    benchmark: str
    runner: str  # judge:lexical | judge:openai (the job history's runner column)
    model: str | None
    traces_run: str
    sample: str | None = None
    limit: int | None = None
    threshold: float = 0.5
    base_url: str | None = None
    api_key_env: str = ""
    concurrency: int = 8
    max_tokens: int = 512

    @property
    def kind(self) -> str:
        return self.runner.split(":", 1)[1]

    def judge_spec(self) -> JudgeSpec:
        """The judge core.judge.make_judge builds (the other settings: `python app.py judge`'s defaults)."""
        return JudgeSpec(runner=self.kind, threshold=self.threshold, base_url=self.base_url, model=self.model,
                         api_key_env=self.api_key_env, concurrency=self.concurrency, max_tokens=self.max_tokens)


def default_name(store: Store, traces_run: str | None, kind: str | None, threshold: float | None,
                 model: str | None) -> str:
    """The judge-run name the form proposes: the benchmark, "judge" and the judge (one judge run can then judge
    every traces run of the benchmark, as the second-judge ranking needs)."""
    try:
        bench = store.run(traces_run)["benchmark"] if traces_run else ""
    except NotFound:
        bench = ""
    if kind == "openai":
        who = (model or "").strip().rstrip("/").rsplit("/", 1)[-1] or "endpoint"  # Qwen/Qwen2.5-VL -> Qwen2.5-VL
    else:
        t = 0.5 if threshold is None else float(threshold)
        who = "lexical" if t == 0.5 else f"lexical-{t:g}"
    return "-".join(x for x in (bench, "judge", who) if x)


def is_url(text: str) -> bool:
    parts = urlsplit(text)
    return parts.scheme in ("http", "https") and bool(parts.netloc) and " " not in text


def settings_from_form(store: Store, traces_run: str | None, sample: str | None, kind: str, name: str,
                       threshold: float | None, base_url: str, model: str, key_env: str, concurrency: float | None,
                       max_tokens: float | None, limit: float | None) -> JudgeSettings:
    """The form's values as a judge job, refusing what cannot run before anything is stored."""
    if not traces_run:
        raise CrosscheckError("choose a traces run first (the run whose traces the judge reads)")
    r = store.run(traces_run)
    if families.judging_of(str(r["family"])) is None:
        raise CrosscheckError(f"run {traces_run!r} is of the {r['family']} family, which has no stage-judged traces: "
                              "there is nothing to judge")
    name = (name or "").strip()
    if not name:
        raise CrosscheckError("give the judge run a name (the Judge picker lists it by that name)")
    if kind not in ("lexical", "openai"):
        raise CrosscheckError(f"unknown judge {kind!r}; expected lexical or openai")
    url, key_env = (base_url or "").strip(), (key_env or "").strip()
    if kind == "openai":
        if not url:
            raise CrosscheckError("the endpoint judge needs the server's base URL, e.g. http://127.0.0.1:8000/v1")
        if not is_url(url):
            raise CrosscheckError(f"{url!r} is not a URL: the base URL reads like http://127.0.0.1:8000/v1")
        if not (model or "").strip():
            raise CrosscheckError("the endpoint judge needs the model id the server serves")
        if key_env and not os.environ.get(key_env):
            raise CrosscheckError(f"the server's environment has no variable {key_env} (the API key variable); "
                                  "leave the field empty for a server without a key")
    t = 0.5 if threshold is None else float(threshold)
    if kind == "lexical" and not 0.0 < t <= 1.0:
        raise CrosscheckError(f"the lexical judge's threshold must be above 0 and at most 1, got {t:g}")
    return JudgeSettings(run=name, benchmark=str(r["benchmark"]), runner=f"judge:{kind}",
                         model=(model or "").strip() if kind == "openai" else "lexical-overlap",
                         traces_run=traces_run, sample=sample or None, limit=int(limit) if limit else None,
                         threshold=t, base_url=url if kind == "openai" else None,
                         api_key_env=key_env, concurrency=max(1, int(concurrency or 1)),
                         max_tokens=max(1, int(max_tokens or 512)))


def check_name(store: Store, js: JudgeSettings, identity: dict[str, Any]) -> None:
    """The judge-run name is new, or a judge run of the same benchmark with the same settings (it continues)."""
    try:
        old = store.run(js.run)
    except NotFound:
        return
    if old["config"].get("role") != "judge":
        raise CrosscheckError(f"{js.run!r} is a model run of benchmark {old['benchmark']!r}, not a judge run: choose "
                              "another name")
    if old["benchmark"] != js.benchmark:
        raise CrosscheckError(f"judge run {js.run!r} judges benchmark {old['benchmark']!r}; choose another name")
    mine = json.loads(json.dumps(judging.judge_run_config(identity)))
    diff = sorted(k for k in set(mine) | set(old["config"]) if mine.get(k) != old["config"].get(k))
    if diff:
        raise CrosscheckError(f"judge run {js.run!r} exists with other settings ({', '.join(diff)}): choose another "
                              "name, or the same settings to continue it")


def check_labels(store: Store, js: JudgeSettings, frame: Any) -> None:
    """Some annotator has labeled a trace of the scope: else the judge's agreement has nothing to compare with."""
    labels = dbl.labels_frame(store, js.traces_run, kind="human")
    scope = set(zip(frame["item_id"], frame["rotation"].astype(int), frame["repeat"].astype(int), strict=True))
    if not any(k in scope for k in zip(labels["item_id"], labels["rotation"].astype(int),
                                       labels["repeat"].astype(int), strict=True)):
        where = f"calibration sample {js.sample!r}" if js.sample else f"run {js.traces_run!r}"
        raise CrosscheckError(f"no annotator has labeled a trace of {where} yet, so there is nothing to compare a "
                              "judge with: label traces in the Judge tab (or import labels) first")


def judge_work(js: JudgeSettings, judge: LexicalJudge | ModelJudge) -> Work:
    """The job's work: db.judge_runs.judge_run, reporting each stored judgement to the job."""

    def work(store: Store, job: Job) -> dict[str, Any]:
        def progress(done: int, total: int, status: str) -> None:
            job.progress(done, total)
            job.count(status)

        s = judge_runs.judge_run(store, js.traces_run, js.run, judge, sample=js.sample, limit=js.limit,
                                 progress=progress, cancel=job.cancel)
        again = " (started again, the same judge run asks them again)" if s["api_error"] else ""
        line = (f"{s['n']} traces judged: {s['ok']} ok, {s['malformed']} malformed, {s['api_error']} api "
                f"errors{again}; {s['skipped_already_judged']} judged before")
        return {"status": s["status"], "line": line, "tasks": s["to_judge"], "skipped": 0, "sent": s["n"]}

    return work


def start(store: Store, jobs: Jobs, js: JudgeSettings, user: str | None) -> Job:
    """Refuse what cannot run, then start the judge as a job."""
    try:
        judge = make_judge(js.judge_spec())
    except ValueError as exc:  # the lexical judge's threshold (a CrosscheckError is one too)
        raise CrosscheckError(str(exc)) from exc
    check_name(store, js, judge.identity(judging.stage_judging(store, js.traces_run)))
    frame = judge_runs.scope_frame(store, js.traces_run, js.sample)
    check_labels(store, js, frame)
    held = len(frame) - len(judge_runs.pending(store, frame, js.traces_run, js.run))
    return jobs.start(store, js, user, work=judge_work(js, judge), held=held)


# --------------------------------------------------------------------------- handlers


def panel(jobs: Jobs, name: str | None) -> str:
    return progress_html(jobs.get(name), elem_id=PANEL, idle="judge", invalid="malformed")


def line(text: str, refused: bool = False, run: str = "", rest: str = "") -> str:
    """The message line under the form: `text`, then a judge run's name in bold and `rest` when `run` is given;
    red when `refused`."""
    return macro("judge_job.html", "line")(text, refused, run, rest)


def on_kind(store: Store, traces_run: str | None, kind: str, threshold: float | None, model: str | None) -> Any:
    """The endpoint fields and the threshold for the judge picked, and the name proposed for it."""
    return (gr.update(visible=kind == "openai"), gr.update(visible=kind == "lexical"),
            gr.update(value=default_name(store, traces_run, kind, threshold, model)))


def on_name_inputs(store: Store, traces_run: str | None, kind: str, threshold: float | None,
                   model: str | None) -> Any:
    return gr.update(value=default_name(store, traces_run, kind, threshold, model))


def on_start(store: Store, jobs: Jobs, traces_run: str | None, sample: str | None, kind: str, name: str,
             threshold: float | None, base_url: str, model: str, key_env: str, concurrency: float | None,
             max_tokens: float | None, limit: float | None, request: gr.Request | None = None) -> Any:
    """Start the judge and follow it: the followed name, the poll, Cancel, the panel and one line; a refusal is
    that line alone (nothing started, nothing stored)."""
    try:
        js = settings_from_form(store, traces_run, sample, kind, name, threshold, base_url, model, key_env,
                                concurrency, max_tokens, limit)
        start(store, jobs, js, username(request))
    except CrosscheckError as exc:
        return gr.update(), gr.update(), gr.update(), gr.update(), line(
            f"Not started: {exc}", refused=True)
    scope = f"calibration sample {js.sample}" if js.sample else "all traces"
    return (js.run, gr.Timer(active=True), cancel_button(jobs, js.run), panel(jobs, js.run),
            line("Started judge run ", run=js.run, rest=f" on {js.traces_run} ({scope})."))


def on_cancel(jobs: Jobs, name: str | None) -> Any:
    """Ask the followed judge to stop (what it judged stays; the same name and settings continue it)."""
    job = jobs.get(name)
    if job is None or not job.live:
        return gr.update(), cancel_button(jobs, name), line("Nothing to cancel: no judge of this page is running.",
                                                            refused=True)
    job.cancel.set()
    return gr.Timer(active=True), cancel_button(jobs, name), line(f"Cancelling {name}: the judgements stored "
                                                                  "so far stay.")


def poll(jobs: Jobs, name: str | None) -> list[Any]:
    """The poll's panel, whether to keep polling, and Cancel, for the followed judge `name`."""
    job = jobs.get(name)
    return [panel(jobs, name), gr.Timer(active=job is not None and job.live), cancel_button(jobs, name)]


def ended(jobs: Jobs, name: str | None) -> tuple[JudgeSettings, str] | None:
    """The followed judge job's settings and status once it has ended (None while it runs, or without one)."""
    job = jobs.get(name)
    if job is None or job.live or not isinstance(job.settings, JudgeSettings):
        return None
    return job.settings, job.status


def ended_line(js: JudgeSettings, status: str) -> str:
    word = {"done": "finished", "cancelled": "was cancelled", "failed": "failed"}.get(status, status)
    return line("Judge run ", run=js.run, rest=f" {word}; the tables below show its agreement with the annotators.",
                refused=status == "failed")


def on_load(jobs: Jobs) -> Any:
    """A page opened while a judge runs follows it."""
    live = next((j.settings.run for j in jobs.all() if isinstance(j.settings, JudgeSettings) and j.live), None)
    return live, gr.Timer(active=live is not None), cancel_button(jobs, live), panel(jobs, live)


# --------------------------------------------------------------------------- the layout (inside the Calibration tab)


FORM = ("run", "sample", "j_kind", "j_name", "j_threshold", "j_base_url", "j_model", "j_key_env", "j_concurrency",
        "j_max_tokens", "j_limit")  # on_start's form arguments, in order (run and sample: the tab's pickers)


def layout(store: Store, c: dict[str, Any], run0: str | None) -> None:
    """The form, Start / Cancel, the progress panel and the message line, into the tab's components `c`."""
    gr.HTML(style(PROGRESS_CSS + STYLE))
    with gr.Accordion("Run a judge on the traces run and scope above (lexical, or a model behind an "
                      "OpenAI-compatible endpoint)", open=True, elem_id="cj-box"):
        with gr.Row(equal_height=True):
            c["j_kind"] = gr.Radio(KINDS, value="lexical", label="Judge", scale=3, elem_id="cj-kind")
            c["j_name"] = gr.Textbox(default_name(store, run0, "lexical", 0.5, None), label="Judge run name",
                                     scale=2, max_lines=1, elem_id="cj-name",
                                     info="the same name and settings continue a judge run")
            c["j_threshold"] = gr.Number(0.5, label="Token-recall threshold", minimum=0.01, maximum=1.0, step=0.05,
                                         scale=1, elem_id="cj-threshold",
                                         info="a stage is correct when a step recalls this share of its target")
            c["j_limit"] = gr.Number(0, label="Limit (first N traces; 0 = all)", minimum=0, precision=0, scale=1,
                                     elem_id="cj-limit")
        with gr.Column(visible=False, elem_id="cj-endpoint") as c["j_endpoint"], gr.Group():
            with gr.Row(equal_height=True):
                c["j_base_url"] = gr.Textbox(label="Base URL", placeholder="http://127.0.0.1:8000/v1", max_lines=1,
                                             elem_id="cj-base-url", info="the server's /v1 address")
                c["j_model"] = gr.Textbox(label="Model", placeholder="Qwen/Qwen2.5-VL-72B-Instruct", max_lines=1,
                                          elem_id="cj-model", info="the model id the server serves")
            with gr.Row(equal_height=True):
                c["j_key_env"] = gr.Textbox(value="", label="API key variable", placeholder="OPENAI_API_KEY",
                                            scale=2, max_lines=1, elem_id="cj-key-env",
                                            info="empty: no key (a vLLM or SGLang started without --api-key); else "
                                                 "the name of the server's environment variable holding the key, "
                                                 "never the key itself")
                c["j_concurrency"] = gr.Number(8, label="Requests in flight", minimum=1, precision=0, scale=1,
                                               elem_id="cj-concurrency")
                c["j_max_tokens"] = gr.Number(512, label="Max tokens", minimum=1, precision=0, scale=1,
                                              elem_id="cj-max-tokens")
        with gr.Row(equal_height=False):
            c["j_start"] = gr.Button("Start judge", variant="primary", scale=0, min_width=180, elem_id="cj-start")
            c["j_cancel"] = gr.Button("Cancel", variant="stop", scale=0, min_width=140, interactive=False,
                                      elem_id="cj-cancel")
            c["j_msg"] = gr.HTML(line(""), scale=4, elem_id="cj-msg-box")
        c["j_panel"] = gr.HTML(panel(JOBS, None), elem_id="cj-progress-box")
    c["j_follow"] = gr.State(None)
    c["j_timer"] = gr.Timer(1.0, active=False)


def wire(ctx: Ctx, c: dict[str, Any]) -> None:
    """The judge and name fields, Start / Cancel on the "run-control" queue as in the Run tab, and following a
    running judge on page load (the poll itself is the Calibration tab's: calibration.on_judge_tick)."""
    store, jobs = ctx.store, JOBS
    name_in = [c["run"], c["j_kind"], c["j_threshold"], c["j_model"]]
    c["j_kind"].change(bind(on_kind, store), name_in, [c["j_endpoint"], c["j_threshold"], c["j_name"]],
                       api_visibility="private", queue=False)
    for src in (c["run"], c["j_threshold"], c["j_model"]):
        src.change(bind(on_name_inputs, store), name_in, c["j_name"], api_visibility="private", queue=False)
    follow = [c["j_follow"], c["j_timer"], c["j_cancel"], c["j_panel"]]
    c["j_start"].click(bind(on_start, store, jobs), [c[k] for k in FORM], [*follow, c["j_msg"]],
                       api_visibility="private", concurrency_id="run-control", concurrency_limit=4)
    c["j_cancel"].click(bind(on_cancel, jobs), c["j_follow"], [c["j_timer"], c["j_cancel"], c["j_msg"]],
                        api_visibility="private", concurrency_id="run-control")
    ctx.page.load(bind(on_load, jobs), None, follow, api_visibility="private", queue=False)
