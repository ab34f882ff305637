"""The Run tab's handlers on a real store (no browser): a baseline job runs to completion in its worker
thread, shows in the poll and the job history, refuses a clashing name, and cancel / resume say why not."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from core.errors import CrosscheckError
from core.runners.baselines import BASELINES
from db import jobs as dbjobs
from db.importers import import_items
from tests.conftest import fe_lines, write_benchmark
from ui import run as ur

FORM = dict(bench_v="fe", name_v="rand", runner_v="baseline", baseline_v="random", model_path_v="", base_url_v="",
            api_model_v="", key_env_v="", strategy_v="direct", option_v=None, shots_v=0, input_v="all", rotations_v=1,
            repeats_v=1, split_v="test", max_tokens_v=None, temperature_v=0.0, limit_v=0, concurrency_v=1,
            seed_v=0)


@pytest.fixture
def fe(store, tmp_path):
    import_items(store, write_benchmark(tmp_path / "fe", fe_lines()), name="fe")
    return store


@pytest.mark.parametrize("kind, shown, model", [
    ("baseline", (True, False, False), False),
    ("transformers", (False, True, False), True),
    ("openai", (False, False, True), True),
])
def test_on_runner(kind, shown, model):
    out = ur.on_runner(kind)
    assert tuple(u["visible"] for u in out[:3]) == shown
    assert (out[3]["interactive"], out[4]["interactive"]) == (model, model)


def test_start_runs_to_completion_and_refuses_clashes(fe):
    jobs = ur.Jobs()
    follow, timer, cancel = ur.on_start(fe, jobs, **FORM, request=SimpleNamespace(username="dana"))
    assert follow["value"] == "rand" and follow["choices"] == ["rand"] and timer.active is True
    job = jobs.get("rand")
    assert job is not None and job.thread is not None
    assert cancel["interactive"] is (job.live and not job.cancel.is_set())
    job.thread.join(60)
    assert job.status == "done" and job.user == "dana"
    n = len(fe_lines())
    assert job.done == n and sum(job.counts.values()) == n
    progress, history, timer, _, cancel = ur.on_tick(fe, jobs, "rand")
    assert "data-status='done'" in progress.replace('"', "'") and "rand" in history and timer.active is False
    assert cancel["interactive"] is False  # nothing runs: Cancel is disabled
    assert fe.run("rand")["n_predictions"] == n
    assert [r["status"] for r in dbjobs.recent_jobs(fe)] == ["done"]
    with pytest.raises(CrosscheckError, match="no running job selected"):
        ur.on_cancel(fe, jobs, "rand", "fe")
    with pytest.raises(CrosscheckError, match="nothing left to resume"):
        ur.on_resume(fe, jobs, "rand", "", "", 1, None)
    with pytest.raises(CrosscheckError, match="exists with other settings"):
        ur.on_start(fe, jobs, **{**FORM, "seed_v": 7})
    with pytest.raises(CrosscheckError, match="give the run a name"):
        ur.on_start(fe, jobs, **{**FORM, "name_v": " "})
    assert ur.on_bench(fe, jobs, "fe")["choices"] == []
    assert ur.follow_header(fe, "fe") == {"__type__": "update", "choices": ["fe"], "value": "fe"}


def test_cancel_is_enabled_only_while_the_followed_job_runs(fe):
    """A keyless OpenAI-compatible run (the key field's default, empty) against a real local server: Cancel is
    enabled while it runs, and disabled before, after a cancel and once it has stopped."""
    from chat_server import ChatServer

    jobs = ur.Jobs()
    assert ur.cancel_button(jobs, None)["interactive"] is False
    assert ur.on_load(fe, jobs, "fe", None)[-1]["interactive"] is False
    with ChatServer(latency=0.2) as chat:
        form = {**FORM, "runner_v": "openai", "base_url_v": chat.base_url, "api_model_v": "m", "concurrency_v": 1}
        _, _, cancel = ur.on_start(fe, jobs, **form)
        assert cancel["interactive"] is True
        job = jobs.get("rand")
        assert job is not None and job.thread is not None
        deadline = time.time() + 30
        while job.done < 2 and time.time() < deadline:  # requests answered: the keyless endpoint works
            time.sleep(0.1)
        assert job.done >= 2 and job.live
        _, pick, timer, cancel = ur.on_cancel(fe, jobs, "rand", "fe")
        assert cancel["interactive"] is False and pick["value"] == "rand" and timer.active is True
        job.thread.join(60)
    assert job.status == "cancelled" and ur.on_tick(fe, jobs, "rand")[-1]["interactive"] is False
    assert fe.run("rand")["n_predictions"] >= 2


def test_runners_offered_and_refused_where_they_cannot_run(fe, monkeypatch):
    only = ur.baseline_choices(fe, "fe", "majority")  # fe_lines: a test split only
    assert only["choices"] == ["random"] and only["value"] == "random" and "train split" in only["info"]
    jobs = ur.Jobs()
    with pytest.raises(CrosscheckError, match="fitted on the train split, and benchmark 'fe' has none: pick random"):
        ur.on_start(fe, jobs, **{**FORM, "baseline_v": "majority"})
    with pytest.raises(CrosscheckError, match=r"no items in split 'dev' \(splits: test\)"):
        ur.on_start(fe, jobs, **{**FORM, "split_v": "dev"})
    monkeypatch.delenv("CROSSCHECK_TEST_NO_SUCH_KEY", raising=False)
    api = {**FORM, "runner_v": "openai", "base_url_v": "http://127.0.0.1:9/v1", "api_model_v": "m"}
    with pytest.raises(CrosscheckError, match="no variable CROSSCHECK_TEST_NO_SUCH_KEY"):
        ur.on_start(fe, jobs, **{**api, "key_env_v": "CROSSCHECK_TEST_NO_SUCH_KEY"})
    with pytest.raises(CrosscheckError, match="is not a checkpoint folder on the server"):
        ur.on_start(fe, jobs, **{**FORM, "runner_v": "transformers", "model_path_v": "/no/such/checkpoint"})
    assert jobs.all() == [] and fe.runs() == [] and dbjobs.recent_jobs(fe) == []  # nothing started, nothing stored


def test_fitted_baselines_offered_with_a_train_split(store, tmp_path):
    lines = fe_lines() + fe_lines(split="train", prefix="t")
    import_items(store, write_benchmark(tmp_path / "fe", lines), name="fe2")
    both = ur.baseline_choices(store, "fe2", "majority")
    assert both["choices"] == list(BASELINES) and both["value"] == "majority"
