"""The OpenAI-compatible runner against a real local chat-completions server, end to end into a real store."""

from __future__ import annotations

import base64
import io
import itertools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from chat_server import ChatServer, request_images, request_text
from PIL import Image
from tiny_models import write_benchmark

import app
from core.runners.openai_runner import retry_after
from db.importers import import_items
from db.store import Store

KEY = "sk-test-" + "7f3a9c" * 6


@pytest.fixture(params=["lean", "sdk"])
def bench(request, tmp_path, monkeypatch):
    """A tiny benchmark store; every test runs once through each transport (the lean HTTP/1.1 client used for
    plain-http endpoints, and the SDK's own HTTP client used for https and proxies)."""
    monkeypatch.setenv("CC_TEST_KEY", KEY)
    monkeypatch.setenv("CROSSCHECK_OPENAI_TRANSPORT", request.param)
    jsonl = write_benchmark(tmp_path / "data", n_groups=4, per_group=3, n_images=3)
    db = tmp_path / "s.db"
    import_items(Store(db), jsonl, name="tiny")
    return db


def _run(db, server, *extra):
    return app.main(["run", "--db", str(db), "--benchmark", "tiny", "--runner", "openai", "--model", "m",
                     "--base-url", server.base_url, "--api-key-env", "CC_TEST_KEY", "--no-progress",
                     "--backoff", "0.01", "--timeout", "1", *extra])


def _preds(db, run):
    return Store(db).predictions_frame(run)


def test_answers_images_in_order_and_status(bench):
    with ChatServer(responder=lambda b: "B") as server:
        assert _run(bench, server, "--run", "r1", "--rotations", "2") == 0
    df = _preds(bench, "r1")
    assert len(df) == 24 and set(df["status"]) == {"ok"}
    # "B" shown under rotation 1 is the original A
    assert set(df[df["rotation"] == 0]["answer"]) == {"B"} and set(df[df["rotation"] == 1]["answer"]) == {"A"}
    for body in server.bodies:
        urls = request_images(body)
        assert len(urls) == 3
        widths = [Image.open(io.BytesIO(base64.b64decode(u.split(",", 1)[1]))).size[0] for u in urls]
        assert widths == [16, 20, 24]  # write_benchmark makes image k 16 + 4k px wide
        assert request_text(body).index("Image 1:") < request_text(body).index("Image 3:")


def test_retries_on_429_500_timeout_then_ok(bench):
    with ChatServer(hang=3.0) as server:
        server.rules = [["test-g0-0]", "429", 2], ["test-g0-1]", "500", 1], ["test-g0-2]", "timeout", 1],
                        ["test-g1-0]", "503", 1]]
        assert _run(bench, server, "--run", "r2", "--max-retries", "3") == 0
        texts = [request_text(b) for b in server.bodies]
    df = _preds(bench, "r2")
    assert set(df["status"]) == {"ok"} and len(df) == 12
    assert sum("test-g0-0]" in t for t in texts) == 3
    assert sum("test-g0-1]" in t for t in texts) == 2
    assert sum("test-g0-2]" in t for t in texts) == 2


def _attempts(server, item):
    """Arrival times (monotonic seconds) of every request for `item`, in order."""
    return [t for b, t in zip(server.bodies, server.times, strict=True) if f"{item}]" in request_text(b)]


def test_retry_after_seconds_and_http_date_are_waited_for(bench):
    # backoff alone would wait ~10 ms (--backoff 0.01); the answers ask for 1 s (delay-seconds, twice) and for
    # an HTTP-date 2 s after the answer (whole seconds: 1-2 s from the moment it is read)
    with ChatServer() as server:
        server.rules = [["test-g0-0]", "429;retry-after=1", 2], ["test-g1-0]", "503;retry-after-date=2", 1]]
        assert _run(bench, server, "--run", "ra", "--max-retries", "3") == 0
        seconds, dated = _attempts(server, "test-g0-0"), _attempts(server, "test-g1-0")
    assert set(_preds(bench, "ra")["status"]) == {"ok"}
    assert len(seconds) == 3 and len(dated) == 2
    # the order and the minimum wait only (durations belong in bench/: an upper bound fails on a loaded machine)
    assert seconds == sorted(seconds) and dated == sorted(dated)
    gaps = [b - a for a, b in itertools.pairwise(seconds)]
    assert all(g >= 1.0 for g in gaps), gaps
    assert dated[1] - dated[0] >= 0.95, dated


def test_a_retry_after_beyond_the_limit_is_not_waited_for(bench):
    with ChatServer() as server:
        server.rules = [["test-g2-0]", "429;retry-after=600", -1]]
        assert _run(bench, server, "--run", "rb", "--max-retries", "3") == 0
        attempts = _attempts(server, "test-g2-0")
    df = _preds(bench, "rb").set_index("item_id")
    # one attempt, refused at once (not waited for: the error says so; no duration is asserted here)
    assert len(attempts) == 1
    assert df.loc["test-g2-0", "status"] == "api_error"
    assert "Retry-After 600 s exceeds the 120 s" in df.loc["test-g2-0", "error"]
    assert (df.drop("test-g2-0")["status"] == "ok").all()


@pytest.mark.parametrize("headers, expected", [
    ({"retry-after": "3"}, 3.0),
    ({"retry-after": "1.5"}, 1.5),
    ({"retry-after": " 0 "}, 0.0),
    ({"retry-after": "-5"}, 0.0),
    ({"retry-after-ms": "250"}, 0.25),
    ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),  # OpenAI's millisecond header first
    ({"retry-after-ms": "soon", "retry-after": "2"}, 2.0),
    ({"retry-after": "Wed, 21 Oct 2026 07:28:30 GMT"}, 30.0),  # now = 07:28:00 UTC
    ({"retry-after": "Wed, 21 Oct 2026 07:27:00 GMT"}, 0.0),  # a date already past
    ({"retry-after": "Wed, 21 Oct 2026 07:29:00 -0000"}, 60.0),
    ({"retry-after": "soon"}, None),
    ({"retry-after": ""}, None),
    ({}, None),
])
def test_retry_after_header_forms(headers, expected):
    from datetime import UTC, datetime

    assert retry_after(headers, now=datetime(2026, 10, 21, 7, 28, 0, tzinfo=UTC)) == expected


@pytest.mark.parametrize("action", ["400", "malformed", "badjson"])
def test_no_retry_and_api_error_recorded(bench, action):
    with ChatServer() as server:
        server.rules = [["test-g2-1]", action, -1]]
        rc = _run(bench, server, "--run", "r3")
        texts = [request_text(b) for b in server.bodies]
    assert rc == 0
    df = _preds(bench, "r3").set_index("item_id")
    assert sum("test-g2-1]" in t for t in texts) == 1  # never retried
    row = df.loc["test-g2-1"]
    assert row["status"] == "api_error" and row["answer"] is None and row["error"]
    assert (df.drop("test-g2-1")["status"] == "ok").all()


def test_exhausted_retries_then_retry_errors(bench, capsys):
    with ChatServer() as server:
        server.rules = [["test-g3-0]", "500", 3]]
        assert _run(bench, server, "--run", "r4", "--max-retries", "2") == 0
        assert "1 api_error stored" in capsys.readouterr().out
        df = _preds(bench, "r4").set_index("item_id")
        assert df.loc["test-g3-0", "status"] == "api_error" and "after 2 retries" in df.loc["test-g3-0", "error"]
        n = len(server.bodies)
        assert _run(bench, server, "--run", "r4") == 0  # plain re-run: everything has a prediction
        assert len(server.bodies) == n
        assert _run(bench, server, "--run", "r4", "--retry-errors") == 0
        assert len(server.bodies) == n + 1 and "test-g3-0]" in request_text(server.bodies[-1])
    df = _preds(bench, "r4")
    assert set(df["status"]) == {"ok"} and len(df) == 12


def test_concurrency_bound(bench):
    with ChatServer(latency=0.05) as server:
        assert _run(bench, server, "--run", "r5", "--concurrency", "3", "--rotations", "4") == 0
    assert server.max_inflight == 3
    assert len(_preds(bench, "r5")) == 48


def test_different_settings_refused_and_key_never_stored(bench, capsys):
    with ChatServer() as server:
        server.rules = [["test-g0-0]", "400", -1]]
        assert _run(bench, server, "--run", "r6") == 0
        assert _run(bench, server, "--run", "r6", "--max-tokens", "7") == 2
        assert "different run" in capsys.readouterr().err
    data = b"".join(p.read_bytes() for p in bench.parent.glob("s.db*"))
    assert KEY.encode() not in data


def test_missing_key_env_is_a_clear_error(bench, capsys, monkeypatch):
    monkeypatch.delenv("CC_TEST_KEY")
    with ChatServer() as server:
        assert _run(bench, server, "--run", "r7") == 2
    assert "CC_TEST_KEY is not set" in capsys.readouterr().err


@pytest.mark.slow
def test_kill_9_then_resume(bench, tmp_path):
    """kill -9 mid-run, then the same command: one prediction per key, nothing lost, <= in-flight re-sent."""
    concurrency = 4
    with ChatServer(latency=0.15) as server:
        cmd = [sys.executable, "app.py", "run", "--db", str(bench), "--benchmark", "tiny", "--runner", "openai",
               "--model", "m", "--base-url", server.base_url, "--api-key-env", "CC_TEST_KEY", "--run", "rk",
               "--rotations", "4", "--repeats", "2", "--concurrency", str(concurrency)]
        env = {**os.environ, "CC_TEST_KEY": KEY}
        log1, log2 = tmp_path / "log1.txt", tmp_path / "log2.txt"
        root = Path(__file__).resolve().parents[1]
        with log1.open("wb") as out:
            proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT)
            deadline = time.time() + 60
            while len(server.bodies) < 30 and time.time() < deadline:
                time.sleep(0.02)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        first = len(server.bodies)
        done_before = len(_preds(bench, "rk"))
        assert 0 < done_before < 96
        with log2.open("wb") as out:
            assert subprocess.run(cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT).returncode == 0
        texts = [request_text(b) for b in server.bodies]
    df = _preds(bench, "rk")
    assert len(df) == 96 and not df.duplicated(["item_id", "rotation", "repeat"]).any()
    assert set(df["status"]) == {"ok"}
    # requests are identified by (item, rotation): the text holds the item id and the rotated options
    sent = {}
    for t in texts:
        sent[t] = sent.get(t, 0) + 1
    resent = len(texts) - 96
    assert 0 <= resent <= concurrency, (first, len(texts))
    for log in (log1, log2):
        assert KEY not in log.read_text(errors="replace")
    data = b"".join(p.read_bytes() for p in bench.parent.glob("s.db*"))
    assert KEY.encode() not in data
