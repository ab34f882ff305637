"""*Run a judge* in the Calibration tab (ui/judge_job.py), its handlers on a real store (no browser): a lexical
judge runs as a job of the Run tab's machinery, shows in the poll and the job history, and the report then
carries its agreement with the annotators; an endpoint judge against a real local chat server with an empty key
is cancelled and continued; Start refuses at once, with why, what cannot run, and stores nothing."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest

from core import families
from core.judge import LexicalJudge
from db import jobs as dbjobs
from db import judge_runs, judging
from db import labels as dbl
from db.store import Store
from tests.conftest import copy_store
from ui import calibration as cb
from ui import judge_job as jj
from ui.jobs import Jobs

RUN = "synth-sb-binder-weak"
JSON_REPLY = '{"S1": 1, "S2": 1, "S3": 0, "S4": 0, "first_failure": "S3"}'


def form(**kw):
    """on_start's form values: the lexical judge on every trace of RUN."""
    base = dict(traces_run=RUN, sample="", kind="lexical", name="lexjob", threshold=0.5, base_url="", model="",
                key_env="", concurrency=8, max_tokens=512, limit=0)
    return {**base, **kw}


@pytest.fixture
def sb(demo_db, tmp_path):
    store = Store(copy_store(demo_db, tmp_path / "s"))
    yield store
    store.close()


@pytest.fixture
def labeled(sb):
    """The demo store with one annotator's labels on the first six traces of RUN."""
    for k in judging.trace_records(sb, RUN).iloc[:6].itertuples(index=False):
        dbl.save_label(sb, RUN, (k.item_id, int(k.rotation), int(k.repeat)), "ann", {"S1": 1, "S2": 1, "S3": 0, "S4": 0})
    return sb


def wait_for(cond, timeout=60.0):
    deadline = time.time() + timeout
    while not cond():
        assert time.time() < deadline, "condition not met in time"
        time.sleep(0.05)


def test_lexical_judge_runs_as_a_job_and_the_report_shows_it(labeled):
    jobs = Jobs()
    n = len(judging.trace_records(labeled, RUN))
    follow, timer, cancel, panel, msg = jj.on_start(labeled, jobs, **form(), request=SimpleNamespace(username="ann"))
    assert follow == "lexjob" and timer.active is True and "Started judge run <b>lexjob</b>" in msg
    job = jobs.get("lexjob")
    assert job is not None and job.thread is not None and job.user == "ann"
    job.thread.join(60)
    assert job.status == "done" and job.done == n and job.counts == {"ok": n}
    out = cb.on_judge_tick(labeled, jobs, "lexjob", RUN, "", "", [], [])
    panel, timer, cancel, sig, picker, msg, *report = out
    assert f"data-status='done' data-done='{n}' data-total='{n}'" in panel and "malformed 0" in panel
    assert timer.active is False and cancel["interactive"] is False and sig
    assert picker["value"] == "lexjob" and ("lexjob", "lexjob") in picker["choices"]
    assert "Judge run <b>lexjob</b> finished" in msg
    rep = report[-1]
    assert rep["judges"] == ["lexjob"]
    pair = next(p for p in rep["pairs"] if {p["a"], p["b"]} == {"lexjob", "ann"} and p["stage"] == "S1")
    assert pair["pair_kind"] == "judge-human" and pair["n"] == 6
    row = dbjobs.recent_jobs(labeled)[0]
    assert (row["run"], row["runner"], row["model"], row["status"], row["sent"], row["held_before"]) == (
        "lexjob", "judge:lexical", "lexical-overlap", "done", n, 0)
    assert labeled.run("lexjob")["config"] == judging.judge_run_config(LexicalJudge(0.5).identity())
    # the same name and settings continue it: nothing left, the panel counts the earlier judgements
    jj.on_start(labeled, jobs, **form())
    again = jobs.get("lexjob")
    again.thread.join(60)
    assert (again.kind, again.held_before, again.done, again.status) == ("resume", n, 0, "done")
    assert f"data-done='{n}' data-total='{n}'" in jj.panel(jobs, "lexjob")
    assert len(judging.judgements_frame(labeled, RUN, ["lexjob"])) == n


def test_the_poll_while_nothing_or_a_job_of_another_run_ended(labeled):
    jobs = Jobs()
    out = cb.on_judge_tick(labeled, jobs, None, RUN, "", "", [], [])
    assert "data-status='idle'" in out[0] and out[1].active is False and out[2]["interactive"] is False
    assert all(u == {"__type__": "update"} for u in out[3:])
    assert jj.on_load(jobs)[0] is None
    jj.on_start(labeled, jobs, **form(limit=3))
    jobs.get("lexjob").thread.join(60)
    other = cb.on_judge_tick(labeled, jobs, "lexjob", "another-run", "", "", [], [])
    assert other[3] and all(u == {"__type__": "update"} for u in other[4:])  # the signature only: pickers re-read


def _refused(store, jobs, **kw):
    follow, timer, cancel, panel, msg = jj.on_start(store, jobs, **form(**kw))
    assert (follow, timer, cancel, panel) == ({"__type__": "update"},) * 4
    assert msg.startswith("<div class='cj-msg cj-refused'>Not started: ")
    return msg


@pytest.mark.parametrize("kw, why", [
    ({"traces_run": None}, "choose a traces run first"),
    ({"name": "  "}, "give the judge run a name"),
    ({"kind": "openai", "base_url": ""}, "needs the server&#39;s base URL"),
    ({"kind": "openai", "base_url": "localhost:8000/v1", "model": "m"}, "&#39;localhost:8000/v1&#39; is not a URL"),
    ({"kind": "openai", "base_url": "ftp://127.0.0.1/v1", "model": "m"}, "is not a URL"),
    ({"kind": "openai", "base_url": "http//127.0.0.1:8000/v1", "model": "m"}, "is not a URL"),
    ({"kind": "openai", "base_url": "http://127.0.0.1:9/v1", "model": " "}, "needs the model id"),
    ({"kind": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m", "key_env": "CROSSCHECK_TEST_NO_SUCH_KEY"},
     "no variable CROSSCHECK_TEST_NO_SUCH_KEY"),
    ({"threshold": 0}, "threshold must be above 0 and at most 1, got 0"),
    ({"threshold": 1.5}, "threshold must be above 0 and at most 1, got 1.5"),
    ({"name": RUN}, f"&#39;{RUN}&#39; is a model run of benchmark"),
])
def test_start_refuses_what_cannot_run(labeled, monkeypatch, kw, why):
    monkeypatch.delenv("CROSSCHECK_TEST_NO_SUCH_KEY", raising=False)
    jobs = Jobs()
    runs = [r["name"] for r in labeled.runs()]
    assert why in _refused(labeled, jobs, **kw)
    assert jobs.all() == [] and dbjobs.recent_jobs(labeled) == []  # nothing started, nothing stored
    assert [r["name"] for r in labeled.runs()] == runs


def test_refuses_a_family_without_judging_a_scope_no_annotator_labeled_and_other_settings(sb):
    jobs = Jobs()
    other = next(r for r in sb.runs() if families.judging_of(str(r["family"])) is None)
    assert f"is of the {other['family']} family, which has no stage-judged traces" in _refused(
        sb, jobs, traces_run=other["name"])
    msg = _refused(sb, jobs)
    assert f"no annotator has labeled a trace of run &#39;{RUN}&#39; yet" in msg and "Judge tab" in msg
    judge_runs.draw_sample(sb, RUN, "cal", per_operation=1, seed=0)
    in_sample = set(judging.sample_frame(sb, "cal")["item_id"])
    outside = next(k for k in judging.trace_records(sb, RUN).itertuples(index=False) if k.item_id not in in_sample)
    dbl.save_label(sb, RUN, (outside.item_id, int(outside.rotation), int(outside.repeat)), "ann",
                   {"S1": 1, "S2": 1, "S3": 1, "S4": 1})
    assert "no annotator has labeled a trace of calibration sample &#39;cal&#39;" in _refused(sb, jobs, sample="cal")
    judge_runs.judge_run(sb, RUN, "strict", LexicalJudge(0.8), limit=1)
    assert "judge run &#39;strict&#39; exists with other settings (threshold)" in _refused(sb, jobs, name="strict")
    assert jobs.all() == [] and dbjobs.recent_jobs(sb) == [] and "lexjob" not in [r["name"] for r in sb.runs()]
    jj.on_start(sb, jobs, **form(limit=2))  # the whole run holds a label: it starts
    jobs.get("lexjob").thread.join(60)
    assert jobs.get("lexjob").status == "done"


def test_endpoint_judge_with_an_empty_key_is_cancelled_and_continued(labeled):
    """A keyless OpenAI-compatible server (the key field's default, empty), one request in flight: Cancel stops
    it with what it judged stored; Start with the same name continues from there."""
    from chat_server import ChatServer

    jobs = Jobs()
    n = len(judging.trace_records(labeled, RUN))
    with ChatServer(latency=0.2, responder=lambda body: JSON_REPLY) as chat:
        kw = form(kind="openai", name="ep", base_url=chat.base_url, model="judge-m", concurrency=1, max_tokens=64)
        follow, timer, cancel, _, _ = jj.on_start(labeled, jobs, **kw)
        assert follow == "ep" and cancel["interactive"] is True
        job = jobs.get("ep")
        wait_for(lambda: job.done >= 2)
        assert job.live and "data-status='running'" in jj.panel(jobs, "ep")
        assert jj.on_load(jobs)[0] == "ep"  # a page opened now follows it
        timer, cancel, msg = jj.on_cancel(jobs, "ep")
        assert cancel["interactive"] is False and timer.active is True and "Cancelling ep" in msg
        job.thread.join(60)
        assert job.status == "cancelled" and 2 <= job.done < n
        stored = len(judging.judgements_frame(labeled, RUN, ["ep"]))
        assert stored == job.done and job.counts == {"ok": stored}
        assert all(b["model"] == "judge-m" and b["max_tokens"] == 64 for b in chat.bodies)
        assert "Nothing to cancel" in jj.on_cancel(jobs, "ep")[2]
        jj.on_start(labeled, jobs, **{**kw, "concurrency": 4, "limit": 3})  # execution settings may change
        again = jobs.get("ep")
        again.thread.join(60)
    assert (again.kind, again.held_before, again.done, again.status) == ("resume", stored, 3, "done")
    config = labeled.run("ep")["config"]
    assert config["runner"] == "judge:openai" and config["model"] == "judge-m" and "EMPTY" not in json.dumps(config)
    assert [r["status"] for r in dbjobs.recent_jobs(labeled)] == ["done", "cancelled"]


@pytest.mark.parametrize("run, kind, threshold, model, name", [
    (RUN, "lexical", 0.5, "", "stembind-judge-lexical"),
    (RUN, "lexical", 0.7, "", "stembind-judge-lexical-0.7"),
    (RUN, "lexical", None, "", "stembind-judge-lexical"),
    (RUN, "openai", 0.5, "Qwen/Qwen2.5-VL-72B-Instruct", "stembind-judge-Qwen2.5-VL-72B-Instruct"),
    (RUN, "openai", 0.5, "gpt-4o", "stembind-judge-gpt-4o"),
    (RUN, "openai", 0.5, "  ", "stembind-judge-endpoint"),
    (None, "lexical", 0.5, "", "judge-lexical"),
    ("no-such-run", "lexical", 0.5, "", "judge-lexical"),
])
def test_default_name(sb, run, kind, threshold, model, name):
    assert jj.default_name(sb, run, kind, threshold, model) == name
    assert jj.on_name_inputs(sb, run, kind, threshold, model)["value"] == name
