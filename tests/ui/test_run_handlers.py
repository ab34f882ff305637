"""The Run tab's handlers on a real store (no browser): a baseline job runs to completion in its worker
thread, shows in the poll and the job history, refuses a clashing name, and cancel / resume say why not."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from core.errors import CrosscheckError
from db import jobs as dbjobs
from db.importers import import_items
from tests.conftest import fe_lines, write_benchmark
from ui import run as ur

FORM = dict(bench_v="fe", name_v="rand", runner_v="baseline", baseline_v="random", model_path_v="", base_url_v="",
            api_model_v="", key_env_v="", strategy_v="direct", ssa_v=None, shots_v=0, input_v="all", rotations_v=1,
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
    follow, timer = ur.on_start(fe, jobs, **FORM, request=SimpleNamespace(username="dana"))
    assert follow["value"] == "rand" and follow["choices"] == ["rand"] and timer.active is True
    job = jobs.get("rand")
    assert job is not None and job.thread is not None
    job.thread.join(60)
    assert job.status == "done" and job.user == "dana"
    n = len(fe_lines())
    assert job.done == n and sum(job.counts.values()) == n
    progress, history, timer, _ = ur.on_tick(fe, jobs, "rand")
    assert "data-status='done'" in progress.replace('"', "'") and "rand" in history and timer.active is False
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
