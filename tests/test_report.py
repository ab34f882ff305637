"""The one-file report from the CLI (`app.py report`): its JSON island holds exactly `score --json`'s metrics,
its provenance, the groups asked for; bad arguments are one-line errors that write nothing. The browser side
(offline drawing, links to groups, XSS) is tests/ui/test_ui_report.py."""

from __future__ import annotations

import json
import re

import pytest
from conftest import run_cli

RUNS = ["synth-sb-binder-weak", "synth-sb-balanced-direct"]


def island(text: str, element_id: str = "crosscheck-data") -> dict:
    m = re.search(rf'<script type="application/json" id="{element_id}">(.*?)</script>', text, re.S)
    assert m, f"no island {element_id}"
    return json.loads(m.group(1))


@pytest.fixture(scope="module")
def report(demo_db, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("report") / "sb.html"
    proc = run_cli("report", "--benchmark", "stembind", "--runs", ",".join(RUNS), "--groups", "7", "-o", str(out),
                   db=demo_db, check=True, timeout=300)
    text = out.read_text(encoding="utf-8")
    return {"proc": proc, "text": text, "data": island(text), "out": out}


def test_island_metrics_are_score_json(report, demo_db):
    data = report["data"]
    assert data["benchmark"] == "stembind" and data["run_order"] == RUNS
    for name in RUNS:
        cli = json.loads(run_cli("score", "--run", name, "--json", db=demo_db, check=True).stdout)
        assert data["runs"][name]["metrics"] == cli["metrics"]


def test_provenance_and_groups(report, demo_db):
    from db.store import Store

    data, text = report["data"], report["text"]
    prov = data["provenance"]
    store = Store(demo_db)
    try:
        assert prov["benchmark_sha256"] == store.benchmark("stembind")["source_sha256"]
        assert [r["name"] for r in prov["runs"]] == RUNS
        assert prov["runs"][0]["model"] == store.run(RUNS[0])["model"]
        assert prov["runs"][0]["config"] == store.run(RUNS[0])["config"]
    finally:
        store.close()
    assert re.fullmatch(r"[0-9a-f]{64}", prov["store_sha256"])
    assert prov["command"].startswith("python app.py report --benchmark stembind")
    # provenance comes first in the page, before the metrics and the groups
    assert text.index("id='cc-provenance'") < text.index("id='cc-metrics'") < text.index('id="cc-groups"')
    assert len(data["groups"]) == 7
    first = data["groups"][0]
    assert len(first["runs"]) == len(RUNS) and all(len(it["answers"]) == len(RUNS) for it in first["items"])
    # responses and traces are written once, in `texts`: an answer holds their indices
    answer = next(a for it in first["items"] for a in it["answers"] if a and a[3] is not None)
    assert isinstance(data["texts"][answer[3]], str) and len(set(data["texts"])) == len(data["texts"])
    images = island(text, "crosscheck-images")
    assert {h for it in first["items"] for h in it["images"]} <= set(images)
    assert all(url.startswith("data:image/jpeg;base64,") for url in images.values())
    # every Metrics table of the screen is in the page, once
    assert text.count("class='cc-mtable'") == len(data["tables"]) > 3
    assert "written to" in report["proc"].stdout


def test_groups_choice_and_failing_rule(demo_db, tmp_path):
    out = tmp_path / "one.html"
    run_cli("report", "--benchmark", "spur", "--runs", "synth-spur-generalist", "-o", str(out), db=demo_db,
            check=True, timeout=300)
    data = island(out.read_text(encoding="utf-8"))
    assert data["groups_written"] == "failing" and data["groups"]
    for g in data["groups"]:  # every group written has an item the run answered wrong
        assert any(answered and k < n for k, n, answered, _, _ in g["runs"])


@pytest.mark.parametrize(("args", "message"), [
    (["--groups", "some"], "--groups 'some': expected failing, all, or a number of groups"),
    (["--runs", "no-such-run"], "no run named 'no-such-run' in benchmark 'stembind'"),
    (["-o", "x.pdf"], "name it FILE.html"),
])
def test_bad_arguments_write_nothing(demo_db, tmp_path, args, message):
    argv = ["report", "--benchmark", "stembind", *args]
    if "-o" not in args:
        argv += ["-o", str(tmp_path / "r.html")]
    proc = run_cli(*argv, db=demo_db, timeout=300)
    assert proc.returncode == 2 and message in proc.stderr
    assert not list(tmp_path.iterdir())
