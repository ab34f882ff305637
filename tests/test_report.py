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


# --------------------------------------------------------------------------- the glue (issue 39 point 7)

# A FrameEvidence benchmark of 8 groups (4 FQ1, 4 FQ2; 3 items each). Run "a" answers one item of groups 1, 3 and 6
# wrong, run "b" every item right: the failing groups are 1, 3 and 6. Run "a"'s response to the item of group 1
# holds text that would close the report's data island or open an HTML comment if it were written unescaped.
NASTY = "</script><script>alert('x')</script> <!-- a comment? --> </SCRIPT > & <b>bold</b>"


@pytest.fixture(scope="module")
def glue(tmp_path_factory) -> dict:
    from conftest import fe_lines, write_benchmark

    from db.importers import import_items, import_predictions
    from db.store import Store

    tmp = tmp_path_factory.mktemp("glue")
    lines = fe_lines(n_fq1=4, n_fq2=4)
    gids = list(dict.fromkeys(x["group_id"] for x in lines))
    wrong = {next(x["item_id"] for x in lines if x["group_id"] == gids[g]) for g in (1, 3, 6)}
    db = tmp / "store.db"
    store = Store(db)
    try:
        import_items(store, write_benchmark(tmp / "fe", lines), name="fe")
        for run, bad in (("a", wrong), ("b", set())):
            rows = []
            for x in lines:
                other = next(letter for letter in "ABCD" if letter != x["answer"])
                text = f"The answer is {other}." if x["item_id"] in bad else f"The answer is {x['answer']}."
                if run == "a" and x["group_id"] == gids[1]:
                    text = f"{NASTY}\nThe answer is {other if x['item_id'] in bad else x['answer']}."
                rows.append(json.dumps({"item_id": x["item_id"], "response": text}, ensure_ascii=False))
            path = tmp / f"{run}.jsonl"
            path.write_text("\n".join(rows) + "\n", encoding="utf-8")
            import_predictions(store, path, run)
    finally:
        store.close()
    out = tmp / "r.html"
    run_cli("report", "--benchmark", "fe", "--runs", "b,a", "--groups", "2", "-o", str(out), db=db, check=True,
            timeout=300)
    text = out.read_text(encoding="utf-8")
    return {"text": text, "data": island(text), "gids": gids, "db": db, "tmp": tmp}


def test_report_groups_n_writes_failing_groups_first(glue):
    """`--groups 2` with three failing groups (1, 3, 6): the first two failing ones in benchmark order, never a
    passing group while a failing one is left out; `--groups 5` adds the first two passing groups (0, 2)."""
    gids = glue["gids"]
    assert [g["id"] for g in glue["data"]["groups"]] == [gids[1], gids[3]]
    assert glue["data"]["groups_written"] == 2
    out = glue["tmp"] / "r5.html"
    run_cli("report", "--benchmark", "fe", "--groups", "5", "-o", str(out), db=glue["db"], check=True, timeout=300)
    assert [g["id"] for g in island(out.read_text(encoding="utf-8"))["groups"]] == [gids[i] for i in (0, 1, 2, 3, 6)]


def test_report_runs_keep_the_order_given(glue):
    """`--runs b,a` (against the store's order a, b): the island's run order, the provenance, every group's
    verdicts and every item's answers are b's, then a's."""
    data = glue["data"]
    assert data["run_order"] == ["b", "a"]
    assert [r["name"] for r in data["provenance"]["runs"]] == ["b", "a"]
    first = data["groups"][0]  # group 1: b answers all three items right, a one wrong
    assert [v[0] for v in first["runs"]] == [3, 2]
    for item in first["items"]:
        b_text, a_text = (data["texts"][answer[3]] for answer in item["answers"])
        assert NASTY not in b_text and NASTY in a_text


def test_report_data_island_escapes_script_ends_and_comments(glue):
    """Model text holding `</script>` (any case) and `<!--` cannot close the data island or open a comment
    inside it: the island's text holds neither (no `<` at all), it reads back as the very text, and the page has
    one data island."""
    text = glue["text"]
    body = re.search(r'<script type="application/json" id="crosscheck-data">(.*?)</script>', text, re.S).group(1)
    assert "</script" not in body.lower() and "<!--" not in body and "<" not in body
    assert any(NASTY in t for t in json.loads(body)["texts"])
    assert text.count('id="crosscheck-data"') == 1
