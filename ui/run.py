"""The Run tab: pick a runner and settings, start, watch a live progress bar, cancel, resume (SPEC §6, §8).

Runs execute as jobs of this server process (ui/jobs.py: `JOBS`, one machinery with the Calibration tab's
judge), not of the browser request: closing the tab leaves the run going, another browser sees it in the jobs
table, and every prediction is committed as it is made (core.runners.engine), so a cancelled or killed run
resumes where it stopped. Every job (a start, a resume, a restart) is its own row of the job history
(db/jobs.py), which outlives the server; progress counts the predictions the run holds (those from earlier jobs
included) against all of its tasks. The start / cancel handlers return at once and the progress display is a
cheap poll of in-memory counters on its own queue (concurrency_id "run-poll"), so a long run never blocks
anyone's browsing.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from core import prompts
from core.errors import CrosscheckError
from core.runners.base import StrategyOption
from core.runners.engine import DEFAULT_SEED, RunSettings
from core.schema import INPUT_MODES
from db import jobs as dbjobs
from db.catalog import catalog_signature
from db.store import Store
from ui.context import Ctx, keep, refreshed
from ui.handlers import bind, username
from ui.jobs import JOBS, PROGRESS_CSS, Jobs, cancel_button, clock, progress_html
from ui.runnable import baseline_choices, check_runnable
from ui.templating import macro, style

RUNNER_LABELS = [("Built-in baseline", "baseline"), ("Local transformers checkpoint", "transformers"),
                 ("OpenAI-compatible server (vLLM, SGLang, OpenAI ...)", "openai")]


# --------------------------------------------------------------------------- the job history


def job_rows(store: Store, limit: int = 50) -> list[dict[str, Any]]:
    """The job history, newest first: each stored job (db/jobs.py) with the live numbers of the jobs running in
    this process; an unfinished row of no live job was cut off by a server stop ("interrupted")."""
    out = []
    for row in dbjobs.recent_jobs(store, limit):
        job = JOBS.by_id.get(int(row["id"]))
        if job is not None and (job.live or row["finished"] is None):
            s = job.snapshot()
            row = {**row, "status": s["status"], "sent": s["done"], "total": s["total"], "api_error": s["errors"],
                   "elapsed": s["elapsed"]}
        elif row["finished"] is None:
            row = {**row, "status": "interrupted", "elapsed": None}
        else:
            row = {**row, "elapsed": _seconds_between(row["started"], row["finished"])}
        out.append(row)
    return out


def _seconds_between(a: str, b: str) -> float | None:
    from datetime import datetime

    try:
        return (datetime.fromisoformat(b) - datetime.fromisoformat(a)).total_seconds()
    except (TypeError, ValueError):
        return None


def _when(stamp: str | None) -> str:
    """A stored UTC time as "MM-DD HH:MM:SS"."""
    return (stamp or "")[5:19].replace("T", " ")


def jobs_html(store: Store) -> str:
    rows = []
    for r in job_rows(store):
        held_total = "…" if r["total"] is None else r["held_before"] + r["total"]
        rows.append({"id": int(r["id"]), "run": r["run"], "user": r["started_by"] or "—", "kind": r["kind"],
                     "status": r["status"], "held": f"{r['held_before'] + (r['sent'] or 0)} / {held_total}",
                     "sent": int(r["sent"] or 0), "errors": int(r["api_error"] or 0), "started": _when(r["started"]),
                     "elapsed": clock(r["elapsed"]), "benchmark": r["benchmark"]})
    return macro("run.html", "jobs")(rows)


CSS = """
.cc-jobs-wrap { overflow-x: auto; }
table.cc-jobs { border-collapse: collapse; font-size: 0.82rem; }
table.cc-jobs td { white-space: nowrap; }
table.cc-jobs td.cc-job-run { white-space: normal; overflow-wrap: anywhere; min-width: 7em; }
#cc-run-jobs table.cc-jobs { border: none; margin: 0; width: auto; }
#cc-run-jobs table.cc-jobs th, #cc-run-jobs table.cc-jobs td { padding: 3px 8px; border: none;
  border-bottom: 1px solid #e4e4e4; line-height: 1.35; vertical-align: top; }
#cc-run-jobs table.cc-jobs th { white-space: nowrap; font-weight: 600; background: #f6f7f9; }
.cc-jobs-wrap { max-height: 420px; overflow-y: auto; }
table.cc-jobs th, table.cc-jobs td { padding: 3px 10px; border-bottom: 1px solid #e4e4e4; text-align: left; }
"""


# --------------------------------------------------------------------------- settings from the form


def settings_from_form(benchmark: str, name: str, runner: str, baseline: str, model_path: str, base_url: str,
                       api_model: str, key_env: str, strategy: str, option: str | None, shots: float,
                       input_mode: str, rotations: float, repeats: float, split: str, max_tokens: float | None,
                       temperature: float, limit: float | None, concurrency: float, seed: float) -> RunSettings:
    model = {"baseline": baseline, "transformers": (model_path or "").strip(),
             "openai": (api_model or "").strip()}.get(runner)
    strategy = strategy if runner != "baseline" else "direct"  # a baseline answers without a prompt
    own = _option_of(strategy)
    s = RunSettings(
        benchmark=benchmark, run=(name or "").strip(), runner=runner, model=model or None,
        strategy=strategy, shots=int(shots or 0) if runner != "baseline" else 0,
        input_mode=input_mode, rotations=int(rotations or 1), repeats=int(repeats or 1), seed=int(seed),
        max_tokens=int(max_tokens) if max_tokens else None, temperature=float(temperature or 0.0),
        split=(split or "test").strip(), options={own.key: option} if own is not None and option else {},
        base_url=(base_url or "").strip() or None, api_key_env=(key_env or "").strip(),
        concurrency=max(1, int(concurrency or 1)), limit=int(limit) if limit else None, progress=False)
    if not s.run:
        raise CrosscheckError("give the run a name (it is how you find it in Browse and Metrics, and how you resume it)")
    if runner == "openai" and not s.base_url:
        raise CrosscheckError("the OpenAI-compatible runner needs a base URL, e.g. http://127.0.0.1:8000/v1")
    s.check()
    return s


def check_name(store: Store, s: RunSettings) -> None:
    """Refuse at once what the worker would refuse later: a name used by another benchmark or settings."""
    try:
        existing = store.run(s.run)
    except CrosscheckError:
        return
    if existing["benchmark"] != s.benchmark:
        raise CrosscheckError(f"run {s.run!r} belongs to benchmark {existing['benchmark']!r}; choose another name")
    if s.runner == "baseline":
        mine = s.identity()
        old = {k: v for k, v in existing["config"].items()}
        diff = sorted(k for k in set(old) | set(mine) if old.get(k) != mine.get(k))
        if diff:
            raise CrosscheckError(f"run {s.run!r} exists with other settings ({', '.join(diff)}): choose another name, "
                                  "or pick it under Resume to continue it with its own settings")


def form_from_config(config: dict[str, Any]) -> dict[str, Any]:
    """Form values that reproduce a stored run's identity (for Resume)."""
    runner = config.get("runner", "baseline")
    return {
        "runner": runner if runner in ("baseline", "transformers", "openai") else "baseline",
        "baseline": config.get("model") if runner == "baseline" else None,
        "model_path": config.get("model") if runner == "transformers" else None,
        "api_model": config.get("model") if runner == "openai" else None,
        "strategy": config.get("strategy") or "direct", "option": _option_value(config),
        "shots": config.get("shots") or 0, "input_mode": config.get("input_mode") or "all",
        "rotations": config.get("rotations") or 1, "repeats": config.get("repeats") or 1,
        "split": config.get("split") or "test", "max_tokens": config.get("max_tokens"),
        "temperature": config.get("temperature") or 0.0, "seed": config.get("seed", DEFAULT_SEED),
    }


def resumable(store: Store, benchmark: str | None, jobs: Jobs = JOBS) -> list[tuple[str, str]]:
    """Runs of the benchmark made by a runner (not imported) that did not finish."""
    if not benchmark:
        return []
    out = []
    for r in store.runs(benchmark):
        if r["runner"] in ("baseline", "transformers", "openai") and r["status"] != "done":
            job = jobs.get(r["name"])
            if job is not None and job.live and not job.cancel.is_set():
                continue  # running (a cancelled one still stopping is offered: Resume waits for it)
            out.append((f"{r['name']} ({r['status']}, {r['n_predictions']} predictions)", r["name"]))
    return out


# --------------------------------------------------------------------------- handlers


def on_runner(kind: str) -> tuple[Any, ...]:
    """The runner's own fields; a model runner unlocks strategy and shots (a baseline answers directly)."""
    model = kind != "baseline"
    return (gr.update(visible=kind == "baseline"), gr.update(visible=kind == "transformers"),
            gr.update(visible=kind == "openai"), gr.update(interactive=model), gr.update(interactive=model))


def _option_of(strategy: str | None) -> StrategyOption | None:
    """The strategy's own option (StrategyOption), None for a strategy without one or an unknown name."""
    return next((s.option for s in prompts.strategies() if s.name == strategy), None)


def _option_value(config: dict[str, Any]) -> str | None:
    """A stored run's value of its strategy's own option."""
    own = _option_of(config.get("strategy") or "direct")
    return config.get(own.key) if own is not None else None


def on_strategy(strategy: str) -> Any:
    """The option dropdown takes the picked strategy's own option (label and choices), hidden for one without."""
    own = _option_of(strategy)
    if own is None:
        return gr.update(visible=False, value=None)
    return gr.update(visible=True, label=own.label, choices=list(own.choices), value=None)


def follow_choices(jobs: Jobs, selected: str | None) -> Any:
    names = [j.settings.run for j in jobs.all()]
    return gr.update(choices=names, value=selected if selected in names else (names[0] if names else None))


def on_start(store: Store, jobs: Jobs, bench_v: str, name_v: str, runner_v: str, baseline_v: str,
             model_path_v: str, base_url_v: str, api_model_v: str, key_env_v: str, strategy_v: str,
             option_v: str | None, shots_v: float, input_v: str, rotations_v: float, repeats_v: float, split_v: str,
             max_tokens_v: float | None, temperature_v: float, limit_v: float | None, concurrency_v: float,
             seed_v: float, request: gr.Request | None = None) -> Any:
    """Start a job in a worker thread and return at once: Follow run picks it and the poll starts."""
    s = settings_from_form(bench_v, name_v, runner_v, baseline_v, model_path_v, base_url_v, api_model_v,
                           key_env_v, strategy_v, option_v, shots_v, input_v, rotations_v, repeats_v, split_v,
                           max_tokens_v, temperature_v, limit_v, concurrency_v, seed_v)
    check_name(store, s)
    check_runnable(store, s)
    jobs.start(store, s, username(request))
    return follow_choices(jobs, s.run), gr.Timer(active=True), cancel_button(jobs, s.run)


def on_cancel(store: Store, jobs: Jobs, run: str | None, bench_v: str | None) -> Any:
    """Ask the followed job to stop; it is offered for resume at once (Resume waits for the requests still in
    flight). The poll is started again: this answer may reach the page after the poll's last one, and the next
    tick then shows how the job ended."""
    job = jobs.get(run)
    if job is None or not job.live:
        raise CrosscheckError("no running job selected under Follow run")
    job.cancel.set()
    choices = resumable(store, job.settings.benchmark, jobs)
    pick = gr.update(choices=choices, value=job.settings.run) if job.settings.benchmark == bench_v else gr.update()
    return progress_html(job), pick, gr.Timer(active=True), cancel_button(jobs, run)


def on_tick(store: Store, jobs: Jobs, run: str | None) -> Any:
    """The poll: progress, job history, whether to keep polling, the catalog signature (a run that appears,
    gets its first predictions or ends changes what every picker lists) and the Cancel button's state."""
    return (progress_html(jobs.get(run)), jobs_html(store), gr.Timer(active=jobs.any_live()),
            catalog_signature(store), cancel_button(jobs, run))


def on_resume(store: Store, jobs: Jobs, run: str | None, key_env_v: str, base_url_v: str, concurrency_v: float,
              limit_v: float | None, request: gr.Request | None = None) -> Any:
    """Continue an unfinished run with its own stored settings (the key variable, URL, concurrency and limit
    are this job's)."""
    if not run:
        raise CrosscheckError("pick an unfinished run to resume")
    r = store.run(run)
    if run not in [c[1] for c in resumable(store, r["benchmark"], jobs)]:
        raise CrosscheckError(f"run {run!r} has nothing left to resume ({r['status']})")
    f = form_from_config(r["config"])
    s = settings_from_form(r["benchmark"], run, f["runner"], f["baseline"] or "random", f["model_path"] or "",
                           base_url_v, f["api_model"] or "", key_env_v, f["strategy"], f["option"],
                           f["shots"], f["input_mode"], f["rotations"], f["repeats"], f["split"],
                           f["max_tokens"], f["temperature"], limit_v, concurrency_v, f["seed"])
    jobs.start(store, s, username(request))
    return (follow_choices(jobs, run), gr.Timer(active=True),
            gr.update(choices=resumable(store, r["benchmark"], jobs), value=None), cancel_button(jobs, run))


def on_load(store: Store, jobs: Jobs, header_bench: str | None, selected: str | None) -> Any:
    names = [x["name"] for x in store.benchmarks()]
    b = header_bench if header_bench in names else None
    follow = follow_choices(jobs, selected)
    return (gr.update(choices=names, value=b) if b else gr.update(), follow, gr.Timer(active=jobs.any_live()),
            jobs_html(store), cancel_button(jobs, follow["value"]))


def follow_header(store: Store, b: str | None) -> Any:
    names = [x["name"] for x in store.benchmarks()]
    return gr.update(choices=names, value=b) if b in names else gr.update(choices=names)


def on_bench(store: Store, jobs: Jobs, b: str | None) -> Any:
    return gr.update(choices=resumable(store, b, jobs), value=None)


def refresh_pickers(store: Store, jobs: Jobs, b: str | None, current: str | None) -> tuple[Any, Any]:
    names = [x["name"] for x in store.benchmarks()]
    shown, b = b, keep(b, names, names[0] if names else None)
    choices = resumable(store, b, jobs)
    return refreshed(shown, names, b), refreshed(current, choices, keep(current, choices))


# --------------------------------------------------------------------------- the tab


def build_run(ctx: Ctx) -> None:
    gr.HTML(style(PROGRESS_CSS + CSS))
    with gr.Row():
        with gr.Column(scale=3):
            form = _form(ctx.store)
        with gr.Column(scale=2):
            side = _side(ctx.store)
    # the history under both columns, at full width: its eleven columns fit a 1440 px window without scrolling
    gr.Markdown("**Job history** (every start and resume is its own row; newest first)")
    side["jobs"] = gr.HTML(jobs_html(ctx.store), elem_id="cc-run-jobs")
    _wire(ctx, form, side, gr.Timer(1.0, active=False))


FORM_FIELDS = ("bench", "name", "runner", "baseline", "model_path", "base_url", "api_model", "key_env", "strategy",
               "option", "shots", "input_mode", "rotations", "repeats", "split", "max_tokens", "temperature",
               "limit", "concurrency", "seed")  # on_start's arguments, in order


def _form(store: Store) -> dict[str, Any]:
    benches = [b["name"] for b in store.benchmarks()]
    first = baseline_choices(store, benches[0] if benches else None, "random")
    f: dict[str, Any] = {}
    with gr.Row():
        f["bench"] = gr.Dropdown(benches, value=benches[0] if benches else None, label="Benchmark",
                                 elem_id="cc-run-benchmark", scale=2)
        f["name"] = gr.Textbox(label="Run name", placeholder="e.g. qwen2.5-vl-7b-direct", elem_id="cc-run-name",
                               scale=2, info="the same name and settings resume a run")
        f["split"] = gr.Textbox(value="test", label="Split", elem_id="cc-run-split", scale=1)
    f["runner"] = gr.Radio(RUNNER_LABELS, value="baseline", label="Runner", elem_id="cc-run-runner")
    with gr.Group(visible=True) as f["g_base"]:
        f["baseline"] = gr.Dropdown(first["choices"], value="random", label="Baseline", info=first["info"],
                                    elem_id="cc-run-baseline")
    with gr.Group(visible=False) as f["g_tf"]:
        f["model_path"] = gr.Textbox(label="Checkpoint folder", placeholder="/models/Qwen2.5-VL-7B-Instruct",
                                     info="any image-text-to-text checkpoint on this machine",
                                     elem_id="cc-run-model-path")
    with gr.Group(visible=False) as f["g_api"]:
        with gr.Row():
            f["base_url"] = gr.Textbox(label="Base URL", placeholder="http://127.0.0.1:8000/v1",
                                       elem_id="cc-run-base-url")
            f["api_model"] = gr.Textbox(label="Model", placeholder="Qwen/Qwen2.5-VL-7B-Instruct",
                                        elem_id="cc-run-api-model")
            f["key_env"] = gr.Textbox(value="", label="API key variable", placeholder="OPENAI_API_KEY",
                                      info="empty: no key (a vLLM or SGLang started without --api-key); else "
                                           "the name of the server's environment variable holding the key, "
                                           "never the key itself",
                                      elem_id="cc-run-key-env")
    _settings(f)
    with gr.Row():
        f["start"] = gr.Button("Start", variant="primary", elem_id="cc-run-start")
        f["cancel"] = gr.Button("Cancel", variant="stop", elem_id="cc-run-cancel", interactive=False)
    return f


def _settings(f: dict[str, Any]) -> None:
    with gr.Row():
        f["strategy"] = gr.Dropdown([s.name for s in prompts.strategies()], value="direct", label="Strategy",
                                    elem_id="cc-run-strategy", interactive=False)
        # the picked strategy's own option (a family's strategy may have one: its StrategyOption)
        f["option"] = gr.Dropdown([], value=None, label="Option", visible=False, elem_id="cc-run-option")
        f["shots"] = gr.Slider(0, prompts.MAX_SHOTS, value=0, step=1, label="Shots", interactive=False,
                               elem_id="cc-run-shots")
        f["input_mode"] = gr.Radio(list(INPUT_MODES), value="all", label="Input mode", elem_id="cc-run-input")
    with gr.Row():
        f["rotations"] = gr.Slider(1, 4, value=1, step=1, label="Rotations", elem_id="cc-run-rotations")
        f["repeats"] = gr.Number(value=1, minimum=1, precision=0, label="Repeats", elem_id="cc-run-repeats")
        f["limit"] = gr.Number(value=0, minimum=0, precision=0, label="Limit (first N items; 0 = all)",
                               elem_id="cc-run-limit")
    with gr.Accordion("Decoding and execution", open=False):
        with gr.Row():
            f["max_tokens"] = gr.Number(value=None, precision=0, label="Max tokens (empty or 0 = the strategy's "
                                        "default)", info="defaults: " + ", ".join(
                                            f"{s.name} {s.max_tokens}" for s in prompts.strategies()))
            f["temperature"] = gr.Number(value=0.0, label="Temperature")
            f["seed"] = gr.Number(value=DEFAULT_SEED, precision=0, label="Seed")
            f["concurrency"] = gr.Number(value=8, minimum=1, precision=0, label="Requests in flight (OpenAI)",
                                         elem_id="cc-run-concurrency")


def _side(store: Store) -> dict[str, Any]:
    s: dict[str, Any] = {}
    # a custom value passes: a script follows a job by its run's name (/on_tick, /on_cancel) without this
    # page's choices; a run with no job here shows the idle panel
    s["follow"] = gr.Dropdown([], value=None, label="Follow run", elem_id="cc-run-follow",
                              info="runs started from the GUI on this server", allow_custom_value=True)
    s["progress"] = gr.HTML(progress_html(None), elem_id="cc-run-progress-box")
    with gr.Row():
        # custom values allowed: the poll and Resume may carry a pick that a finished job just took off the
        # list (Resume then says so) instead of failing Gradio's choice check with a toast
        s["resume_pick"] = gr.Dropdown([], value=None, label="Resume an unfinished run", scale=3,
                                       elem_id="cc-run-resume-pick", allow_custom_value=True)
        s["resume"] = gr.Button("Resume", scale=1, size="sm", elem_id="cc-run-resume")
    return s


def _wire(ctx: Ctx, f: dict[str, Any], s: dict[str, Any], timer: gr.Timer) -> None:
    store, jobs = ctx.store, JOBS
    f["runner"].change(on_runner, f["runner"], [f["g_base"], f["g_tf"], f["g_api"], f["strategy"], f["shots"]],
                       queue=False)
    f["strategy"].change(on_strategy, f["strategy"], f["option"], queue=False)
    f["start"].click(bind(on_start, store, jobs), [f[k] for k in FORM_FIELDS], [s["follow"], timer, f["cancel"]],
                     concurrency_id="run-control", concurrency_limit=4)
    f["cancel"].click(bind(on_cancel, store, jobs), [s["follow"], f["bench"]],
                      [s["progress"], s["resume_pick"], timer, f["cancel"]], concurrency_id="run-control")
    poll = [s["progress"], s["jobs"], timer, ctx.changed, f["cancel"]]
    for event in (timer.tick, s["follow"].change):
        event(bind(on_tick, store, jobs), [s["follow"]], poll, concurrency_id="run-poll", concurrency_limit=None,
              show_progress="hidden")
    s["resume"].click(bind(on_resume, store, jobs), [s["resume_pick"], f["key_env"], f["base_url"],
                                                     f["concurrency"], f["limit"]],
                      [s["follow"], timer, s["resume_pick"], f["cancel"]], concurrency_id="run-control")
    ctx.page.load(bind(on_load, store, jobs), [ctx.benchmark, s["follow"]],
                  [f["bench"], s["follow"], timer, s["jobs"], f["cancel"]], queue=False)
    ctx.benchmark.change(bind(follow_header, store), ctx.benchmark, f["bench"], queue=False)
    f["bench"].change(bind(on_bench, store, jobs), f["bench"], s["resume_pick"])
    f["bench"].change(bind(baseline_choices, store), [f["bench"], f["baseline"]], f["baseline"], queue=False)
    ctx.on_refresh(bind(refresh_pickers, store, jobs), [f["bench"], s["resume_pick"]], [f["bench"], s["resume_pick"]])
