"""The scripting API (issue 26 point 6) with gradio_client on a real `app.py serve` over a store of two benchmarks:
the Browse list (and its search), a group view, Compare and Metrics take any benchmark and run of the store, a
benchmark imported after the server started included, checked against the store and not against a picker's
choices; a name the store lacks is one error naming it."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli, write_benchmark
from serverstores import add_traced_run, generic_lines, prediction_lines, two_benchmarks, write_jsonl
from uiharness import running_app

pytestmark = [pytest.mark.slow]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from gradio_client import Client

    folder = tmp_path_factory.mktemp("api")
    db = two_benchmarks(folder)
    with running_app(db) as url:
        yield Client(url, verbose=False), db, folder


def test_browse_list_and_search_for_each_benchmark(served):
    client, _, _ = served
    for bench in ("fe", "gen"):
        runs = [f"{bench}-a", f"{bench}-b"]
        out = client.predict(bench, runs, api_name="/browse_list")
        assert out["benchmark"] == bench and out["runs"] == runs
        assert out["n_groups"] == out["total"] == len(out["rows"]) == (6 if bench == "fe" else 4)
        assert out["columns"][:4] == ["group", "split", "kind", "items"] and runs[0] in out["columns"]
        assert all(row[runs[0]] and row[runs[1]] != "–" for row in out["rows"])
    found = client.predict("gen", ["gen-b"], "", "", "", "", "", "gen-2", api_name="/browse_list")
    assert [r["group"] for r in found["rows"]] == ["gen-2"]
    # gen-b is right on the second item of each group only (serverstores.prediction_lines)
    assert found["rows"][0]["gen-b"].endswith("1/2")
    counted = client.predict("gen", ["gen-a"], "test", "colour", "", "", "some_wrong", api_name="/browse_list")
    assert counted["total"] == counted["counts"]["some_wrong"] == 4


def test_group_view_and_compare_of_the_second_benchmark(served):
    client, db, _ = served
    html = client.predict("gen", ["gen-a", "gen-b"], "gen-1", "gen-b", api_name="/open_group")
    assert 'data-group="gen-1"' in html and "gen-a" in html and "gen-b" in html
    out = client.predict("gen", "gen-a", "gen-b", api_name="/compare")
    assert (out["a"], out["b"], out["split"], out["family"]) == ("gen-a", "gen-b", "test", "generic")
    t = out["turnover"]  # gen-a right on the even items, gen-b on the odd ones: every item changes
    assert (t["newly_correct"]["k"], t["newly_incorrect"]["k"], t["both_correct"]["k"], t["net"]) == (4, 4, 0, 0)
    assert len(out["changed"]) == 4 and all(r["newly_correct"] == r["newly_incorrect"] == 1 for r in out["changed"])
    cli = json.loads(run_cli("score", "--run", "gen-b", "--compare", "gen-a", "--json", "--compact", db=db,
                             check=True).stdout)["metrics"]["compare"]
    assert out["differences"]["accuracy"]["difference"] == cli["accuracy"]
    fe = client.predict("fe", "fe-a", "fe-b", "test", "image", api_name="/compare")
    assert fe["clusters"] != "groups" and fe["turnover"]["net"] == (fe["turnover"]["newly_correct"]["k"]
                                                                     - fe["turnover"]["newly_incorrect"]["k"])


def test_metrics_of_the_second_benchmark(served):
    client, _, _ = served
    out = client.predict("gen", ["gen-a", "gen-b"], api_name="/metrics")
    assert out["family"] == "generic" and out["runs"] == ["gen-a", "gen-b"]


def test_a_benchmark_imported_while_serving(served):
    client, db, folder = served
    items = generic_lines(3, prefix="late")
    run_cli("import", str(write_benchmark(folder / "late", items)), "--name", "late", db=db, check=True)
    run_cli("import-predictions", str(write_jsonl(folder / "late-a.jsonl", prediction_lines(items, 1))),
            "--run", "late-a", "--model", "m", db=db, check=True)
    out = client.predict("late", ["late-a"], api_name="/browse_list")
    assert out["total"] == 3 and all(r["late-a"].startswith("✓") for r in out["rows"])
    assert client.predict("late", ["late-a"], api_name="/metrics")["runs"] == ["late-a"]


@pytest.mark.parametrize("endpoint,args,message", [
    ("/browse_list", ("nope", ["gen-a"]), "no benchmark named 'nope' (known: fe, gen"),
    ("/browse_list", ("gen", ["ghost"]), "no run named 'ghost' in benchmark 'gen' (runs: gen-a, gen-b)"),
    ("/browse_list", ("gen", ["fe-a"]), "'fe-a' is a run of benchmark 'fe'"),
    ("/browse_list", ("gen", ["gen-a"], "dev"), "no split 'dev' in benchmark 'gen' (splits: test)"),
    ("/browse_list", ("gen", ["gen-a"], "", "", "", "", "fq1_0"), "no pattern 'fq1_0' in benchmark 'gen'"),
    ("/open_group", ("gen", ["gen-a"], "gen-99"), "no group 'gen-99' in benchmark 'gen'"),
    ("/open_group", ("fe", ["gen-a"], "g1_0"), "'gen-a' is a run of benchmark 'gen'"),
    ("/compare", ("gen", "gen-a", "fe-b"), "'fe-b' is a run of benchmark 'fe'"),
    ("/compare", ("gen", "gen-a", "gen-b", "", "image"), "resamples groups only"),
    ("/metrics", ("gen", ["fe-a"]), "no run named 'fe-a' in benchmark 'gen'"),
])
def test_a_name_the_store_lacks_is_one_clear_error(served, endpoint, args, message):
    from gradio_client.exceptions import AppError

    client, _, _ = served
    with pytest.raises(AppError) as err:
        client.predict(*args, api_name=endpoint)
    assert message in str(err.value)
    assert "is not in the list of choices" not in str(err.value)


def test_audit_of_a_run_imported_while_serving(served):
    """/audit_list and /audit_apply take a run of any benchmark, one imported after the server started included
    (the Browse tab's audit picker holds the first benchmark's runs); an applied override is listed no more."""
    client, db, folder = served
    items = generic_lines(2, prefix="aud")
    run_cli("import", str(write_benchmark(folder / "aud", items)), "--name", "aud", db=db, check=True)
    lines = [{"item_id": it["item_id"], "response": "I cannot tell." if i == 0 else "The answer is A."}
             for i, it in enumerate(items)]
    run_cli("import-predictions", str(write_jsonl(folder / "aud-a.jsonl", lines)), "--run", "aud-a", "--model", "m",
            db=db, check=True)
    listed = client.predict("aud", "aud-a", api_name="/audit_list")
    assert (listed["run"], listed["status"]) == ("aud-a", "invalid")
    assert listed["keys"] == [f"{items[0]['item_id']} · r0/rep0"] and items[0]["item_id"] in listed["listing"]
    done = client.predict("aud", "aud-a", listed["keys"][0], "manual", "B", api_name="/audit_apply")
    assert done["result"].startswith('<div class="cc-callout">Applied') and done["keys"] == []
    assert "manual" in done["history"]


def test_calibration_of_a_traces_run_imported_while_serving(served):
    """/calibration takes a traces run of a benchmark imported after the server started (the tab's picker was
    built without it) and answers `calibration --json`'s report."""
    client, db, folder = served
    run, _ = add_traced_run(db, folder)
    out = client.predict("sb", run, api_name="/calibration")
    cli = json.loads(run_cli("calibration", "--run", run, "--json", db=db, check=True).stdout)
    assert out == json.loads(json.dumps(cli)) and out


@pytest.mark.parametrize("endpoint,args,message", [
    ("/audit_list", ("gen", "fe-a"), "'fe-a' is a run of benchmark 'fe'"),
    ("/audit_list", ("nope", "gen-a"), "no benchmark named 'nope'"),
    ("/audit_list", ("gen", "gen-a", "broken"), "no status 'broken' in benchmark 'gen'"),
    ("/audit_apply", ("gen", "ghost", "gen-0-0 · r0/rep0"), "no run named 'ghost' in benchmark 'gen'"),
    ("/audit_apply", ("gen", "gen-a", "gen-0-0 · r0/rep0", "guess"), "no method 'guess' in benchmark 'gen'"),
    ("/calibration", ("gen", "gen-a"), "no traces run 'gen-a' in benchmark 'gen'"),
    ("/calibration", ("gen", "fe-a"), "'fe-a' is a run of benchmark 'fe'"),
])
def test_audit_and_calibration_refuse_a_name_the_store_lacks(served, endpoint, args, message):
    from gradio_client.exceptions import AppError

    client, _, _ = served
    with pytest.raises(AppError) as err:
        client.predict(*args, api_name=endpoint)
    assert message in str(err.value)
    assert "is not in the list of choices" not in str(err.value)
