"""The Metrics tab as an API (`api_name="metrics"`) on a real `app.py serve`, read with gradio_client: its JSON
tables equal the tables built from `score --all --json` for the same runs, with and without --auth."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli
from uiharness import running_app

from core import families
from core.report_json import table_json
from core.report_tables import RunScore, get, reason_of, value_of
from db.store import Store
from ui.auth import auth_line

pytestmark = [pytest.mark.slow]

CASES = [
    ("frameevidence", ["synth-fe-frameaware", "synth-fe-frameaware-text", "synth-fe-camera-default"]),
    ("stembind", ["synth-sb-balanced-direct", "synth-sb-balanced-thinking", "synth-sb-binder-ssa-H0"]),
    ("spur", ["synth-spur-generalist", "synth-spur-generalist-ddcot"]),
]


@pytest.fixture(scope="module")
def score_all_json(demo_db) -> dict[str, dict[str, dict]]:
    """{benchmark: {run: result}} of `python app.py score --all --json` (one JSON line per run)."""
    out: dict[str, dict[str, dict]] = {}
    for line in run_cli("score", "--all", "--json", db=demo_db, check=True, timeout=600).stdout.splitlines():
        result = json.loads(line)
        out.setdefault(result["benchmark"], {})[result["run"]] = result
    return out


def _expected(demo_db, bench: str, names: list[str], cli: dict[str, dict]) -> list[dict]:
    """The tab's tables built from the CLI's results (the FrameEvidence baseline runs as control rows)."""
    s = Store(demo_db)
    try:
        meta = {r["name"]: r for r in s.runs(bench, with_counts=False)}
        family = s.benchmark_family(bench)
    finally:
        s.close()

    def rs(name: str) -> RunScore:
        r = meta[name]
        return RunScore(name, cli[name]["metrics"], r["synthetic"], dict(r["config"]), r["runner"], cli[name]["split"])

    controls = [rs(n) for n, r in meta.items() if r["runner"] == "baseline"] if family == "frameevidence" else []
    return [table_json(t) for t in families.get(family).tables([rs(n) for n in names], controls)]


@pytest.fixture(scope="module")
def client(demo_db):
    from gradio_client import Client

    with running_app(demo_db) as url:
        yield Client(url, verbose=False)


@pytest.mark.parametrize("bench,names", CASES)
def test_metrics_endpoint_equals_score_all_json(client, demo_db, score_all_json, bench, names):
    out = client.predict(bench, names, api_name="/metrics")
    assert out["benchmark"] == bench and out["runs"] == names and out["split"] == "test"
    want = _expected(demo_db, bench, names, score_all_json[bench])
    assert [t["key"] for t in out["tables"]] == [t["key"] for t in want]
    assert out["tables"] == want
    # every cell of a picked run carries the value score --all printed at its path
    cells = [c for t in out["tables"] for r in t["rows"] for c in r["cells"] if c["run"] in names and c["path"]]
    assert len(cells) >= 20
    for c in cells:
        node = get(score_all_json[bench][c["run"]]["metrics"], c["path"])  # None: not in this run's metrics
        assert c["value"] == (value_of(node) if reason_of(node) is None else None), c
        assert c["interval"] == (node.get("ci") if isinstance(node, dict) else None), c


def test_metrics_endpoint_options_and_errors(client, demo_db):
    from gradio_client.exceptions import AppError

    cli = json.loads(run_cli("score", "--run", "synth-fe-frameaware", "--json", "--cluster", "group,image",
                             db=demo_db, check=True).stdout)["metrics"]["repeat_intervals"]
    out = client.predict("frameevidence", ["synth-fe-frameaware"], "", ["group", "image"], [],
                         api_name="/metrics")
    t13 = next(t for t in out["tables"] if t["key"] == "fe_table13")
    assert t13["columns"][-1] == f"95% CI · image ({cli['clusterings']['image']['clusters']})"
    row = next(r for r in t13["rows"] if r["labels"] == ["synth-fe-frameaware", "Repeat accuracy"])
    assert row["cells"][-1]["interval"] == cli["quantities"]["repeat_accuracy"]["image"]["ci"]
    with pytest.raises(AppError, match="no run named 'gone'"):
        client.predict("stembind", ["gone"], api_name="/metrics")


def test_metrics_endpoint_under_auth(demo_db, tmp_path):
    from gradio_client import Client

    users = tmp_path / "users.txt"
    users.write_text(auth_line("alice", "pw1") + "\n", encoding="utf-8")
    with running_app(demo_db, "--auth", str(users)) as url:
        with pytest.raises(Exception):  # noqa: B017, PT011 - gradio_client refuses in several ways
            Client(url, verbose=False).predict("spur", ["synth-spur-generalist"], api_name="/metrics")
        out = Client(url, auth=("alice", "pw1"), verbose=False).predict("spur", ["synth-spur-generalist"],
                                                                         api_name="/metrics")
    assert out["family"] == "spur" and any(t["key"] == "spur_table3" for t in out["tables"])
