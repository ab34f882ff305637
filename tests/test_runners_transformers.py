"""Local transformers runner: tiny LLaVA and Gemma 3 checkpoints built offline, run through the CLI into a store."""

from __future__ import annotations

import pytest
from tiny_models import BUILDERS, write_benchmark

import app
from db.importers import import_items
from db.store import Store


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    return {name: build(root / name) for name, build in BUILDERS.items()}


@pytest.fixture
def bench(tmp_path):
    jsonl = write_benchmark(tmp_path / "data", n_groups=2, per_group=3, n_images=3)
    db = tmp_path / "s.db"
    import_items(Store(db), jsonl, name="tiny")
    return db


def _run(db, model, *extra):
    return app.main(["run", "--db", str(db), "--benchmark", "tiny", "--runner", "transformers", "--model", str(model),
                     "--no-progress", "--max-tokens", "4", *extra])


@pytest.mark.parametrize("arch", sorted(BUILDERS))
def test_tiny_model_end_to_end_batch_1_and_4(models, bench, arch, capsys):
    for bs in (1, 4):
        assert _run(bench, models[arch], "--run", f"{arch}-{bs}", "--batch-size", str(bs), "--probs") == 0
        assert "6 answered now" in capsys.readouterr().out
    a, b = (Store(bench).predictions_frame(f"{arch}-{bs}") for bs in (1, 4))
    assert len(a) == len(b) == 6
    assert set(a["status"]) <= {"ok", "invalid"} and set(b["status"]) <= {"ok", "invalid"}
    for df in (a, b):
        assert (df["tokens"] <= 4).all() and (df["latency"] > 0).all()
        for probs in df["probs"]:
            assert set(probs) == set("ABCD") and abs(sum(probs.values()) - 1) < 1e-3
    # greedy decoding: batching with left padding gives the batch-1 answers
    assert list(a["response"]) == list(b["response"])
    cfg = Store(bench).run(f"{arch}-1")["config"]
    assert cfg["runner"] == "transformers" and cfg["model"] == str(models[arch].resolve())
    # resume: the same command sends nothing
    assert _run(bench, models[arch], "--run", f"{arch}-1", "--batch-size", "1", "--probs") == 0
    assert "0 answered now" in capsys.readouterr().out


def test_multi_stage_and_text_mode(models, bench):
    assert _run(bench, models["llava"], "--run", "dd", "--strategy", "ddcot", "--input-mode", "first",
                "--batch-size", "4", "--limit", "2") == 0
    assert _run(bench, models["gemma3"], "--run", "tx", "--input-mode", "text", "--batch-size", "4",
                "--rotations", "2") == 0
    dd = Store(bench).predictions_frame("dd")
    assert len(dd) == 2 and all(t.count("[") >= 3 for t in dd["trace"])
    tx = Store(bench).predictions_frame("tx")
    assert len(tx) == 12 and set(tx["input_mode"]) == {"text"}


def test_not_a_local_directory_is_a_clear_error(bench, capsys):
    assert _run(bench, "some-org/some-model", "--run", "x") == 2
    assert "not a local checkpoint directory" in capsys.readouterr().err


def test_local_model_as_l2_judge(models, tmp_path, capsys):
    """The judge pipeline runs on a local checkpoint: every F trace gets a stored judgement with its raw output
    (a random tiny model writes no valid verdict, so each is stored as malformed, never guessed)."""
    from core.demo import SMALL
    from db.demo import build_demo_store

    db = tmp_path / "j.db"
    s = Store(db)
    build_demo_store(s, sizes=SMALL, progress=lambda m: None)
    n_f = int(s.conn.execute(
        "SELECT COUNT(*) FROM predictions p JOIN runs r ON r.id = p.run_id JOIN items i ON i.id = p.item_pk"
        " WHERE r.name = 'synth-sb-binder-weak' AND i.kind = 'F'").fetchone()[0])
    assert n_f > 0
    assert app.main(["judge", "--db", str(db), "--run", "synth-sb-binder-weak", "--judge-runner", "transformers",
                     "--model", str(models["llava"]), "--judge-run", "tiny-judge", "--max-tokens", "8",
                     "--batch-size", "4"]) == 0
    assert f"{n_f} traces judged" in capsys.readouterr().out
    rows = s.conn.execute(
        "SELECT j.status, j.raw FROM judgements j JOIN runs r ON r.id = j.judge_run_id WHERE r.name = 'tiny-judge'"
    ).fetchall()
    assert len(rows) == n_f
    assert {status for status, _ in rows} <= {"ok", "malformed"}
    assert all(raw is not None for _, raw in rows)
    cfg = s.run("tiny-judge")["config"]
    assert cfg["role"] == "judge" and str(models["llava"].resolve()) in json_dumps(cfg)


def json_dumps(obj) -> str:
    import json

    return json.dumps(obj, default=str)
