"""Judging a run's traces and drawing calibration samples: what `python app.py judge` and `python app.py
calibration` (cli.commands) and the Calibration tab (ui.judge_job, ui.calibration) share, with typed arguments.

`judge_run` judges the traces of a run (the judged kind of its family's stage judging, StemBind's F items) with
a judge of core.judge (`make_judge(JudgeSpec(...))`: the lexical judge, an OpenAI-compatible model or a local
transformers model); the judgements are their own run (config = the judge's identity); each judgement is
committed as soon as it exists, and a rerun resumes (ok and malformed judgements are kept, api errors are
retried). `draw_sample` draws and freezes a stratified calibration sample (db.judging.save_sample).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from core.errors import CrosscheckError, NotFound
from core.judge import LexicalJudge, ModelJudge, summarize
from db import judging
from db.store import Store

if TYPE_CHECKING:
    import pandas as pd


def scope_frame(store: Store, traces_run: str, sample: str | None = None) -> pd.DataFrame:
    """The traces of `traces_run` a judge would judge: all of them, or those of calibration sample `sample`;
    refuses a sample of another run and an empty scope."""
    stage_judging = judging.stage_judging(store, traces_run)
    frame = judging.trace_records(store, traces_run)
    if sample:
        sf = judging.sample_frame(store, sample)
        if set(sf["run"]) != {traces_run}:
            raise CrosscheckError(f"calibration sample {sample!r} belongs to run {sf['run'].iloc[0]!r}")
        frame = judging.trace_records(store, traces_run, zip(sf["item_id"], sf["rotation"], sf["repeat"], strict=True))
    if len(frame) == 0:
        stages = stage_judging.stages
        raise CrosscheckError(f"run {traces_run!r} has no {stage_judging.judged_kind}-item traces with "
                              f"{stages[0]}-{stages[-1]} targets to judge")
    return frame


def pending(store: Store, frame: pd.DataFrame, traces_run: str, judge_run_name: str) -> pd.DataFrame:
    """The traces of `frame` judge run `judge_run_name` has not judged yet (ok and malformed judgements are
    kept; api errors are asked again); all of them for a judge run not created yet."""
    try:
        done = judging.judged_keys(store, judge_run_name, traces_run)
    except NotFound:
        done = set()
    keep = [(i, int(r), int(p)) not in done for i, r, p in zip(frame["item_id"], frame["rotation"], frame["repeat"],
                                                                 strict=True)]
    return frame[keep]


def judge_run(store: Store, traces_run: str, judge_run_name: str, judge: LexicalJudge | ModelJudge,
              sample: str | None = None, limit: int | None = None,
              progress: Callable[[int, int, str], None] | None = None, cancel: threading.Event | None = None
              ) -> dict[str, Any]:
    """Judge every not-yet-judged trace of `traces_run` (of `sample`; the first `limit`); returns counts (see
    core.judge.summarize) and "status": done, or cancelled when `cancel` was set before every trace was judged.
    `progress(judged, to_judge, status)` is called after each judgement is stored."""
    stage_judging = judging.stage_judging(store, traces_run)
    frame = scope_frame(store, traces_run, sample)
    jid = judging.ensure_judge_run(store, judge_run_name, traces_run, judge.identity(stage_judging))
    rid = store.run(traces_run)["id"]
    todo = pending(store, frame, traces_run, judge_run_name)
    already = len(frame) - len(todo)
    if limit is not None:
        todo = todo.head(max(0, limit))
    pks = {(r.item_id, int(r.rotation), int(r.repeat)): int(r.item_pk) for r in todo.itertuples(index=False)}
    results = []
    store.set_run_status(judge_run_name, "running")

    def on_result(inp: Any, j: Any) -> None:
        judging.write_judgement(store, jid, rid, pks[inp.key], inp.rotation, inp.repeat, j)
        results.append(j)
        if progress is not None:
            progress(len(results), len(todo), j.status)

    status = "failed"
    try:
        judge.judge_many(judging.judge_inputs(todo, stage_judging), on_result,
                         should_stop=None if cancel is None else cancel.is_set)
        status = "done" if len(results) == len(todo) else "cancelled" if cancel and cancel.is_set() else "failed"
    finally:
        store.set_run_status(judge_run_name, status)
    summary = summarize(results, stage_judging)
    summary.update({"judge_run": judge_run_name, "run": traces_run, "skipped_already_judged": already,
                    "status": status, "to_judge": len(todo)})
    return summary


def draw_sample(store: Store, run: str, name: str, per_operation: int = 20, seed: int = 0) -> dict[str, Any]:
    """Draw and freeze a calibration sample of `run`'s traces; returns {status, name, n, table}."""
    from core import calibration as cal

    r = store.run(run)
    stage_judging = judging.stage_judging(store, run)
    strata = stage_judging.trace_strata(store.items_frame(r["benchmark"]), store.run_data(run))
    bins = stage_judging.outcome_bins
    sample = cal.draw_sample(strata, per_operation=per_operation, seed=seed, bins=bins)
    res = judging.save_sample(store, name, run, sample, seed=seed, per_operation=per_operation)
    res["table"] = cal.sample_summary(sample, bins).to_dict(orient="records")
    return res
