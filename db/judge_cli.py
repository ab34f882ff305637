"""CLI handlers of `python app.py judge ...` and `python app.py calibration ...` (options: cli/arguments.py).

judge: judge the traces of a run (the judged kind of its family's stage judging, StemBind's F items) with the lexical judge, an OpenAI-compatible model or a local
transformers model; the judgements are their own run (`--judge-run NAME`, config = the judge's identity);
each judgement is committed as soon as it exists, and a rerun resumes (ok and malformed judgements are kept,
api errors are retried).

calibration: draw a frozen stratified sample (`--draw-sample NAME`), or report judge-human agreement
(`--json` prints {"run", "pairs": [{"a", "b", "stage", "kappa", "agreement", "n", ...}], ...}).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from core.errors import CrosscheckError, NotFound
from core.schema import to_jsonable
from db import judging
from db.store import Store

if TYPE_CHECKING:
    import pandas as pd


def make_judge(args: argparse.Namespace) -> Any:
    from core.judge import LexicalJudge, ModelJudge

    if args.judge_runner == "lexical":
        return LexicalJudge(threshold=args.threshold)
    if args.judge_runner == "openai":
        from core.runners.openai_runner import OpenAIRunner

        runner = OpenAIRunner(args.base_url, args.model, api_key_env=args.api_key_env,
                              concurrency=args.concurrency, timeout=args.timeout, max_retries=args.max_retries)
        return ModelJudge(runner, max_tokens=args.max_tokens)
    if not args.model:
        raise CrosscheckError("--judge-runner transformers needs --model CHECKPOINT_DIR")
    from core.runners.transformers_runner import TransformersRunner

    local = TransformersRunner(args.model, chat_template=getattr(args, "chat_template", None))
    return ModelJudge(local, max_tokens=args.max_tokens, batch_size=args.batch_size)


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


def judge_run(store: Store, traces_run: str, judge_run_name: str, judge: Any, sample: str | None = None,
              limit: int | None = None, progress: Any = None, cancel: threading.Event | None = None
              ) -> dict[str, Any]:
    """Judge every not-yet-judged trace of `traces_run` (of `sample`; the first `limit`); returns counts (see
    core.judge.summarize) and "status": done, or cancelled when `cancel` was set before every trace was judged.
    `progress(judged, to_judge, status)` is called after each judgement is stored."""
    from core.judge import summarize

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


def run_judge(store: Store, args: argparse.Namespace) -> int:
    judge = make_judge(args)
    t0 = time.perf_counter()
    s = judge_run(store, args.run, args.judge_run, judge, sample=args.sample, limit=args.limit)
    print(f"judge run {args.judge_run!r} on {args.run!r}: {s['n']} traces judged in {time.perf_counter() - t0:.1f} s "
          f"({s['ok']} ok, {s['malformed']} malformed, {s['api_error']} api_error; {s['inconsistent']} with "
          f"inconsistent flags), {s['skipped_already_judged']} already judged")
    ff = ", ".join(f"{k} {v}" for k, v in s["first_failure"].items())
    print(f"first failure: {ff}")
    return 0 if s["api_error"] == 0 else 1


def draw(store: Store, run: str, name: str, per_operation: int = 20, seed: int = 0) -> dict[str, Any]:
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


def run_calibration(store: Store, args: argparse.Namespace) -> int:
    if args.draw_sample:
        res = draw(store, args.run, args.draw_sample, args.per_operation, args.seed)
        if args.json:
            print(json.dumps(res, ensure_ascii=False, indent=2))
        else:
            verb = "already frozen with the same traces" if res["status"] == "unchanged" else "drawn and frozen"
            print(f"calibration sample {res['name']!r}: {res['n']} traces {verb}")
            for row in res["table"]:
                print("  " + "  ".join(f"{k}={v}" for k, v in row.items()))
        return 0
    from core import calibration as cal

    rep = to_jsonable(judging.calibration_report(store, args.run, sample=args.sample, judge=args.judge,
                                                 second=args.second_judge, ceiling=cal.parse_pairs(args.ceiling),
                                                 consensus_of=cal.parse_names(args.consensus)))
    if args.json:
        print(json.dumps(rep, ensure_ascii=False, indent=2))
        return 0
    print(f"run {rep['run']!r}" + (f", sample {rep['sample']!r} ({rep['n_sample']} traces)" if rep["sample"] else "")
          + f": {rep['n_traces']} labeled traces")
    for lab in rep["labelers"]:
        print(f"  {lab['kind']:<6} {lab['name']}: {lab['n']} labels")
    print(f"{'pair':<44} {'stage':<5} {'kappa':>7} {'agree':>7} {'n':>5}")
    for p in rep["pairs"]:
        k = "n/a" if p["kappa"] is None else f"{p['kappa']:.3f}"
        a = "n/a" if p["agreement"] is None else f"{p['agreement']:.3f}"
        why = f"  ({p['reason']})" if p["reason"] else ""
        print(f"{p['a'] + ' vs ' + p['b']:<44.44} {p['stage']:<5} {k:>7} {a:>7} {p['n']:>5}{why}")
    ceil = rep["human_ceiling"]
    used = "; ".join(f"{a}-{b}" for a, b in rep["ceiling_pairs"]) or "none"
    print(f"human ceiling ({rep['ceiling_rule']}: {used}): " + ", ".join(
        f"{s} {'n/a' if c['kappa'] is None else format(c['kappa'], '.3f')}" for s, c in ceil.items()))
    print(f"human consensus ({rep['consensus_rule']}): majority of {', '.join(rep['consensus_of']) or 'none'}")
    ff = rep["first_failure"]
    if "reason" in ff:
        print(f"first failure: n/a ({ff['reason']})")
    else:
        print(f"first failure ({ff['scope']}, n={ff['n']}): judge {ff['judge_name']}: " + ", ".join(
            f"{k} {v['k']}" for k, v in ff["judge"].items()) + " | consensus: " + ", ".join(
            f"{k} {v['k']}" for k, v in ff["human"].items()))
    sys.stdout.flush()
    return 0
