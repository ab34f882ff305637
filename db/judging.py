"""All SQL of judging and calibration: traces to judge, judgements and frozen calibration samples (SPEC §7,
issue 8). Labels and their audit rows live in the one labels repository, db/labels.py.

The traces of a run are the predictions of the judged item kind its family's `StageJudging` names
(db.labels.stage_judging, re-exported here), passed to SQL as a parameter; a run of a family without stage
judging has no traces (NotJudged).

A calibration sample is frozen: saving a sample under an existing name with other contents is refused.

Every table used here is created by the migrations in db/schema.py when the store opens; nothing is created
at run time.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pandas as pd

from core import families
from core.errors import CrosscheckError, NotFound
from core.families.stage_judging import StageJudging
from core.judge import JudgeInput, Judgement
from core.schema import STAGES
from db import predictions
from db.labels import InvalidLabelValue, NotJudged, labels_frame, stage_judging  # noqa: F401 (re-exported)
from db.store import Store, now, touch_run


class SampleFrozen(CrosscheckError, ValueError):
    """A calibration sample of that name exists with other contents (samples never change once drawn)."""


# --------------------------------------------------------------------------- traces


def trace_records(store: Store, run: str, keys: Iterable[tuple[str, int, int]] | None = None) -> pd.DataFrame:
    """The judged traces of `run` (its family's judged kind, items with stage targets): one row per prediction
    with item_id, item_pk, group_id, rotation, repeat, status, answer (original-order letter or None), gold,
    response, trace (the trace field, else the raw response), tokens, question, options, stages, meta, images."""
    kind = stage_judging(store, run).judged_kind
    r = store.run(run)
    df = predictions.trace_rows(store, r["id"], kind)
    for col in ("options", "stages", "meta"):
        df[col] = [json.loads(v) if v else {} for v in df[col]]
    df["images"] = [json.loads(v) if v else [] for v in df["images"]]
    df["trace"] = [t if isinstance(t, str) and t.strip() else (resp or "") for t, resp in zip(
        df["trace"], df["response"], strict=True)]
    df["answer"] = pd.Series([a if isinstance(a, str) else None for a in df["answer"]], index=df.index, dtype=object)
    df["tokens"] = df["tokens"].astype(float)
    if keys is not None:
        want = {(str(k[0]), int(k[1]), int(k[2])) for k in keys}
        mask = [(i, int(ro), int(re)) in want for i, ro, re in zip(df["item_id"], df["rotation"], df["repeat"],
                                                                    strict=True)]
        df = df[mask].reset_index(drop=True)
    return df


def trace_record(store: Store, run: str, key: tuple[str, int, int]) -> dict[str, Any]:
    df = trace_records(store, run, [key])
    if len(df) == 0:
        raise NotFound(f"run {run!r} has no judged trace for {key[0]!r} rotation {key[1]} repeat {key[2]}")
    return df.iloc[0].to_dict()


def judge_inputs(frame: pd.DataFrame, judging: StageJudging) -> list[JudgeInput]:
    return [JudgeInput(item_id=r.item_id, rotation=int(r.rotation), repeat=int(r.repeat), trace=r.trace or "",
                       final_answer=r.answer if isinstance(r.answer, str) else None, stages=r.stages,
                       question=r.question or "", options=r.options, meta=r.meta, judging=judging)
                for r in frame.itertuples(index=False)]


def judged_benchmarks(store: Store) -> list[str]:
    """The benchmarks whose family has stage judging."""
    return [b["name"] for b in store.benchmarks() if families.judging_of(str(b["family"])) is not None]


def trace_runs(store: Store, benchmark: str | None = None) -> list[dict[str, Any]]:
    """Runs holding judged traces (the judged kind of their family's stage judging), with their synthetic flag;
    judge runs are left out."""
    judged = {str(b["name"]): j for b in store.benchmarks() if (j := families.judging_of(str(b["family"]))) is not None}
    names: set[str] = set()
    for b in store.benchmarks():
        judging = judged.get(str(b["name"]))
        if judging is not None and benchmark in (None, b["name"]):
            names |= predictions.runs_with_traces(store, judging.judged_kind, int(b["id"]))
    return [r for r in store.runs(benchmark, with_counts=False)
            if r["name"] in names and r["config"].get("role") != "judge"]


# --------------------------------------------------------------------------- judgements


def judge_run_config(identity: dict[str, Any]) -> dict[str, Any]:
    """The stored config of a judge run with the judge identity `identity` (core.judge: LexicalJudge.identity,
    ModelJudge.identity)."""
    config = {"role": "judge", **identity, "runner": f"judge:{identity.get('judge_runner', 'model')}"}
    config.setdefault("model", identity.get("judge_runner", "judge"))
    return config


def ensure_judge_run(store: Store, judge_run: str, traces_run: str, identity: dict[str, Any]) -> int:
    """The judge's own run (same benchmark as the traces it judges); the config is the judge's identity, so
    another judge model or setting under the same name is refused (store.RunConflict)."""
    bench = store.run(traces_run)["benchmark"]
    return store.ensure_run(judge_run, bench, judge_run_config(identity))


def judged_keys(store: Store, judge_run: str, traces_run: str,
                statuses: tuple[str, ...] = ("ok", "malformed")) -> set[tuple[str, int, int]]:
    """Keys already judged by `judge_run` on `traces_run` with one of `statuses` (api_error is retried)."""
    jid, rid = store.run(judge_run)["id"], store.run(traces_run)["id"]
    marks = ",".join("?" * len(statuses))
    cur = store.conn.execute(
        f"SELECT i.item_id, j.rotation, j.repeat FROM judgements j JOIN items i ON i.id = j.item_pk"
        f" WHERE j.judge_run_id = ? AND j.run_id = ? AND j.status IN ({marks})", (jid, rid, *statuses))
    return {(r[0], r[1], r[2]) for r in cur}


def write_judgement(store: Store, judge_run_id: int, run_id: int, item_pk: int, rotation: int, repeat: int,
                    j: Judgement) -> None:
    """Store one judgement at once (upsert by key); the stored first failure is the S1 -> S4 rule's."""
    raw = j.raw if j.status != "api_error" else json.dumps({"error": j.reason})
    if j.status == "malformed" and j.reason:
        raw = json.dumps({"malformed": j.reason, "reply": j.raw}, ensure_ascii=False)
    with store.write() as conn:
        conn.execute(
            "INSERT OR REPLACE INTO judgements (judge_run_id, run_id, item_pk, rotation, repeat, S1, S2, S3, S4,"
            " first_failure, status, raw, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (judge_run_id, run_id, item_pk, rotation, repeat, *j.flag_values(), j.first_failure, j.status, raw,
             now()))
        touch_run(conn, judge_run_id)


def judgements_frame(store: Store, traces_run: str, judge_runs: Iterable[str] | None = None,
                     ok_only: bool = False) -> pd.DataFrame:
    """Judgements of `traces_run`'s traces: judge, item_id, rotation, repeat, S1..S4 (1/0/None),
    first_failure, status, raw, created."""
    rid = store.run(traces_run)["id"]
    sql = ("SELECT jr.name AS judge, i.item_id, j.rotation, j.repeat, j.S1, j.S2, j.S3, j.S4, j.first_failure,"
           " j.status, j.raw, j.created FROM judgements j JOIN runs jr ON jr.id = j.judge_run_id JOIN items i"
           " ON i.id = j.item_pk WHERE j.run_id = ?")
    params: list[Any] = [rid]
    if judge_runs is not None:
        names = list(judge_runs)
        if not names:
            return pd.DataFrame(columns=["judge", "item_id", "rotation", "repeat", *STAGES, "first_failure",
                                         "status", "raw", "created"])
        sql += f" AND jr.name IN ({','.join('?' * len(names))})"
        params += names
    if ok_only:
        sql += " AND j.status = 'ok'"
    df = pd.read_sql_query(sql + " ORDER BY jr.name, j.item_pk, j.rotation, j.repeat", store.conn, params=params)
    for col in ("first_failure", "raw"):
        df[col] = pd.Series([v if isinstance(v, str) else None for v in df[col]], index=df.index, dtype=object)
    for s in STAGES:
        df[s] = pd.Series([None if v is None or v != v else int(v) for v in df[s]], index=df.index, dtype=object)
    return df


def judge_runs_of(store: Store, traces_run: str) -> list[str]:
    """Names of the judge runs that judged `traces_run`, in creation order."""
    found = store.runs(names=[traces_run], with_counts=False)  # no count of its predictions: only the id is read
    rid = found[0]["id"] if found else store.run(traces_run)["id"]  # store.run names the runs there are
    cur = store.conn.execute(
        "SELECT r.name FROM runs r WHERE r.id IN (SELECT DISTINCT judge_run_id FROM judgements WHERE run_id = ?)"
        " ORDER BY r.id", (rid,))
    return [row[0] for row in cur]


def judge_run_names(store: Store, benchmark: str | None = None) -> list[str]:
    return [r["name"] for r in store.runs(benchmark) if r["config"].get("role") == "judge"]


# --------------------------------------------------------------------------- calibration samples


def save_sample(store: Store, name: str, run: str, sample: pd.DataFrame, seed: int, per_operation: int
                ) -> dict[str, Any]:
    """Freeze a drawn sample (columns item_id, rotation, repeat, operation, outcome, position) under `name`.
    Saving the same contents again changes nothing; other contents under an existing name are refused."""
    name = (name or "").strip()
    if not name:
        raise InvalidLabelValue("a calibration sample needs a name")
    if len(sample) == 0:
        raise SampleFrozen("the drawn sample is empty: the run has no judged traces")
    r = store.run(run)
    keys = store.item_keys(int(store.benchmark(r["benchmark"])["id"]))
    rows = [(name, int(s.position), r["id"], keys[s.item_id][0], int(s.rotation), int(s.repeat), s.operation,
             s.outcome, int(seed), int(per_operation), now()) for s in sample.itertuples(index=False)]
    with store.write() as conn:
        old = conn.execute("SELECT position, run_id, item_pk, rotation, repeat FROM calibration_samples WHERE name = ?"
                           " ORDER BY position", (name,)).fetchall()
        if old:
            if [tuple(o) for o in old] == [row[1:6] for row in sorted(rows, key=lambda x: x[1])]:
                return {"status": "unchanged", "name": name, "n": len(old)}
            raise SampleFrozen(f"calibration sample {name!r} exists with other traces; samples are frozen once drawn "
                               "(choose another name)")
        conn.executemany(
            "INSERT INTO calibration_samples (name, position, run_id, item_pk, rotation, repeat, operation, outcome,"
            " seed, per_operation, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    return {"status": "saved", "name": name, "n": len(rows)}


def samples(store: Store, run: str | None = None) -> list[dict[str, Any]]:
    """Stored samples: name, run, n, seed, per_operation, created."""
    sql = ("SELECT c.name, r.name, COUNT(*), MIN(c.seed), MIN(c.per_operation), MIN(c.created) FROM calibration_samples c"
           " JOIN runs r ON r.id = c.run_id")
    params: tuple[Any, ...] = ()
    if run is not None:
        sql += " WHERE r.name = ?"
        params = (run,)
    cur = store.conn.execute(sql + " GROUP BY c.name, r.name ORDER BY MIN(c.created), c.name", params)
    return [dict(zip(("name", "run", "n", "seed", "per_operation", "created"), row, strict=True)) for row in cur]


def sample_frame(store: Store, name: str) -> pd.DataFrame:
    """One stored sample in its frozen order: position, run, item_id, rotation, repeat, operation, outcome."""
    df = pd.read_sql_query(
        "SELECT c.position, r.name AS run, i.item_id, c.rotation, c.repeat, c.operation, c.outcome, c.seed"
        " FROM calibration_samples c JOIN runs r ON r.id = c.run_id JOIN items i ON i.id = c.item_pk"
        " WHERE c.name = ? ORDER BY c.position", store.conn, params=(name,))
    if len(df) == 0:
        known = ", ".join(s["name"] for s in samples(store)) or "none yet"
        raise NotFound(f"no calibration sample named {name!r} (known: {known})")
    return df


# --------------------------------------------------------------------------- the calibration report


def calibration_report(store: Store, run: str, sample: str | None = None, judge: str | None = None,
                       second: str | None = None, audit: bool = True,
                       ceiling: list[tuple[str, str]] | None = None,
                       consensus_of: list[str] | None = None) -> dict[str, Any]:
    """Everything the Calibration tab and `calibration --json` show for the traces of `run` (restricted to
    calibration sample `sample` when given): see core.calibration.report (`ceiling` pairs and `consensus_of`
    annotators, default all); adds `error_audit` (every trace run of the benchmark with annotator categories)
    and the scope."""
    from core import calibration as cal

    r = store.run(run)
    judging = stage_judging(store, run)
    keys = None
    if sample:
        sf = sample_frame(store, sample)
        if set(sf["run"]) != {run}:
            raise NotFound(f"calibration sample {sample!r} was drawn from run {sf['run'].iloc[0]!r}, not {run!r}")
        keys = list(zip(sf["item_id"], sf["rotation"].astype(int), sf["repeat"].astype(int), strict=True))
    hum = labels_frame(store, run)
    jud = judgements_frame(store, run, ok_only=True)
    labels = cal.restrict(cal.long_labels(cal.judge_labels(jud), hum), keys)
    items = store.items_frame(r["benchmark"])
    run_data = store.run_data(run)
    strata = judging.trace_strata(items, run_data)
    judges = judge_runs_of(store, run)
    primary = judge or (judges[0] if judges else None)
    if judge and judge not in set(labels["labeler"]):
        raise NotFound(f"judge {judge!r} has no usable judgement on these traces")
    second_arg = None
    if second:
        if primary is None:
            raise NotFound("a second judge needs a first judge on these traces")
        by_run = {}
        for tr in trace_runs(store, r["benchmark"]):
            jj = judgements_frame(store, tr["name"], [primary, second], ok_only=True)
            if set(jj["judge"]) == {primary, second}:
                ja = cal.judge_labels(jj[jj["judge"] == primary])
                jb = cal.judge_labels(jj[jj["judge"] == second])
                by_run[tr["name"]] = (ja, jb)
        second_arg = (second, by_run)
    out = cal.report(labels, strata, primary_judge=primary, second=second_arg, ceiling=ceiling,
                     consensus_of=consensus_of, judging=judging)
    out = {"run": run, "benchmark": r["benchmark"], "sample": sample,
           "n_sample": None if keys is None else len(keys), **out}
    out["judges"] = judges
    if audit:
        runs = {}
        labs = {}
        for tr in trace_runs(store, r["benchmark"]):
            lab = labels_frame(store, tr["name"], kind="human")
            if len(lab):
                runs[tr["name"]] = store.run_data(tr["name"])
                labs[tr["name"]] = lab
        out["error_audit"] = cal.error_audit_summary(items, runs, labs, judging)
    return out
