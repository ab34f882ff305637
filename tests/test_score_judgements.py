"""`score` reads the stored trace judgements of a StemBind run: L2 StepAcc comes from the judge's flags."""

from __future__ import annotations

import json

import app
from db.store import Store


def test_score_uses_latest_judge_run(tmp_path, capsys):
    from core.demo import SMALL
    from db.demo import build_demo_store

    db = tmp_path / "s.db"
    store = Store(db)
    build_demo_store(store, sizes=SMALL, progress=lambda m: None)
    run = "synth-sb-binder-weak"
    assert app.main(["score", "--db", str(db), "--run", run, "--json"]) == 0
    before = json.loads(capsys.readouterr().out)["metrics"]["l2"]
    assert before["reason"] == "no trace judgements for this run"

    assert app.main(["judge", "--db", str(db), "--run", run, "--judge-runner", "lexical", "--judge-run", "lex"]) == 0
    capsys.readouterr()
    assert app.main(["score", "--db", str(db), "--run", run, "--json", "--judge", "lex"]) == 0
    l2 = json.loads(capsys.readouterr().out)["metrics"]["l2"]
    rows = store.conn.execute(
        "SELECT j.S1, j.S2, j.S3, j.S4 FROM judgements j JOIN runs r ON r.id = j.judge_run_id"
        " WHERE r.name = 'lex' AND j.status = 'ok'").fetchall()
    assert l2["n_traces"] == len(rows) > 0
    for i, stage in enumerate(("S1", "S2", "S3", "S4")):
        known = [r[i] for r in rows if r[i] is not None]
        assert l2["step_acc"][stage]["k"] == sum(known)
        assert l2["step_acc"][stage]["n"] == len(known)
