"""The Metrics tab's handlers without a browser, on real stores: the bulk path equals `score --run`, the cache
scores each key once (under threads too) and never holds a lock while scoring, the gate and the pickers, the
`metrics` endpoint's JSON and its errors."""

from __future__ import annotations

import json
import threading

import gradio as gr
import pytest
from conftest import fe_lines, write_benchmark

from core.errors import CrosscheckError, NotFound
from core.scoring import score_all
from core.stats import Clustering, UnknownClustering
from db.frames import load_for_scoring, score_extras
from db.store import Store
from ui.metrics import BadMetricsRequest, MetricsHandlers, metrics_json, metrics_page
from ui.scores import ScoreCache, ScoreOptions, runs_to_load, score_runs


@pytest.fixture(scope="module")
def demo(demo_db):
    s = Store(demo_db)
    yield s
    s.close()


def _cli_scores(store: Store, bench: str, names: list[str]) -> dict:
    """What `score --run NAME --json` computes for each name: every run of the benchmark loaded."""
    items, runs = load_for_scoring(store, bench)
    extras = {n: score_extras(store, n, runs[n].family) for n in names}
    return score_all(items, runs, names=names, per_run=extras)


@pytest.mark.parametrize("bench,names,controls", [
    ("frameevidence", ["synth-fe-frameaware", "synth-fe-camera-default"],
     ["baseline-fe-random", "baseline-fe-majority", "baseline-fe-count", "baseline-fe-count-insufficiency",
      "baseline-fe-tfidf"]),
    ("stembind", ["synth-sb-balanced-direct", "synth-sb-binder-ssa-H2"], []),
    ("spur", ["synth-spur-generalist"], []),
])
def test_page_scores_equal_score_run(demo, bench, names, controls):
    cache = ScoreCache()
    page = MetricsHandlers(demo, cache=cache).page([[bench, names, (), (), ()], 0])
    assert page is not None and not page.message
    assert [r.name for r in page.runs] == names
    want = _cli_scores(demo, bench, names + controls)
    for r in page.runs:
        assert r.metrics == want[r.name]["metrics"], r.name
    if controls:  # the FrameEvidence baseline runs are the "Metadata controls" rows
        assert set(controls) <= {row.run for row in page.tables["fe_controls"].rows}
    assert cache.computed == 1
    assert page.sections() and all(present or plots for _, _, present, plots in page.sections())


@pytest.mark.parametrize("bench,names,loaded", [
    # StemBind and FrameEvidence pair runs of one model only (db.bulk units): the model's runs are loaded
    ("stembind", ["synth-sb-balanced-direct"], ["synth-sb-balanced-direct", "synth-sb-balanced-thinking",
                                                "synth-sb-balanced-text"]),
    ("frameevidence", ["baseline-fe-random"], ["baseline-fe-random"]),
    # a SPUR benchmark is one unit (the shortcut filter reads every text-only run)
    ("spur", ["synth-spur-generalist"], ["synth-spur-generalist", "synth-spur-generalist-ddcot",
                                         "synth-spur-textonly-s1", "synth-spur-textonly-s2",
                                         "synth-spur-textonly-s3", "baseline-spur-random"]),
])
def test_runs_to_load_are_the_score_all_units(demo, bench, names, loaded):
    assert runs_to_load(demo, bench, names) == loaded


def _fe_store(tmp_path, runs: dict[str, str]) -> Store:
    """A FrameEvidence store with one run per (name: answer letter for every item)."""
    from db.importers import import_items

    s = Store(tmp_path / "fe.db")
    lines = fe_lines(2, 2)
    import_items(s, write_benchmark(tmp_path / "b", lines), name="fe")
    for name, letter in runs.items():
        _answer(s, tmp_path, name, lines, letter)
    return s


def _answer(s: Store, tmp_path, name: str, lines: list[dict], letter: str) -> None:
    from db.importers import import_predictions

    p = tmp_path / f"{name}-{letter}.jsonl"
    p.write_text("".join(json.dumps({"item_id": x["item_id"], "response": letter}) + "\n" for x in lines),
                 encoding="utf-8")
    import_predictions(s, p, run=name, model=f"m-{name}")


def test_cache_scores_each_key_once_and_again_when_the_runs_change(tmp_path):
    s = _fe_store(tmp_path, {"a": "A", "b": "B"})
    cache = ScoreCache()
    first = cache.scores(s, "fe", ["a"])
    assert cache.scores(s, "fe", ["a"]) is first and cache.computed == 1  # warm: the same result, not rescored
    cache.scores(s, "fe", ["a", "b"])
    cache.scores(s, "fe", ["a"], ScoreOptions(clusterings=(Clustering("image"),)))
    assert cache.computed == 3  # other runs, other options: other keys
    assert cache.scores(s, "fe", ["a", "gone"]) is first  # a name the benchmark lacks is not part of the key
    _answer(s, tmp_path, "c", fe_lines(2, 2), "C")  # a run of another model: a's scores cannot depend on it
    assert cache.scores(s, "fe", ["a"]) is first and cache.computed == 3
    scored = cache.scored
    assert cache.scores(s, "fe", ["b", "c"])["b"] == cache.scores(s, "fe", ["a", "b"])["b"]  # b's kept score
    assert cache.scored == scored + 1  # c alone was scored: b's score of the pick [a, b] served the pick [b, c]
    _rerun(s, tmp_path, "a", "C")  # a's predictions change: every key holding a is stale
    again = cache.scores(s, "fe", ["a"])
    assert again["a"]["metrics"] != first["a"]["metrics"]
    assert not [k for k in cache._entries if "a" in k[1] and k[2] != cache.key(s, "fe", ["a"], k[3])[2]]
    assert cache.scores(s, "fe", ["b", "c"])["b"] is cache.scores(s, "fe", ["a", "b"])["b"]  # b's unit unchanged
    s.close()


def _rerun(s: Store, tmp_path, name: str, letter: str) -> None:
    """Run `name`'s predictions answered `letter` instead (a re-import replaces them: the run's revision moves)."""
    from db.importers import import_predictions

    p = tmp_path / f"{name}-again-{letter}.jsonl"
    items = s.items_frame("fe")
    p.write_text("".join(json.dumps({"item_id": i, "response": letter}) + "\n" for i in items["item_id"]),
                 encoding="utf-8")
    import_predictions(s, p, run=name, model=f"m-{name}", replace=True)


def test_endpoint_tables_are_built_once_per_state_of_the_runs(tmp_path):
    """A repeated request is answered from the cache (the very tables, neither rescored nor rebuilt); a new run
    of another model leaves them (the scores cannot depend on it), a change of a picked run's predictions makes
    the next answer be built again."""
    s = _fe_store(tmp_path, {"a": "A", "b": "B"})
    cache = ScoreCache()
    first = metrics_json(s, "fe", ["a", "b"], cache=cache)
    assert metrics_json(s, "fe", ["a", "b"], cache=cache) is first and cache.computed == 1
    other = metrics_json(s, "fe", ["b", "a"], cache=cache)  # another order: its own tables, the same scores
    assert other is not first and other["runs"] == ["b", "a"] and cache.computed == 1
    _answer(s, tmp_path, "c", fe_lines(2, 2), "C")  # a run of another model: the tables of a and b stand
    assert metrics_json(s, "fe", ["a", "b"], cache=cache) is first and cache.computed == 1
    _rerun(s, tmp_path, "a", "C")  # a run of the pick changes: its tables are built again, the old ones dropped
    again = metrics_json(s, "fe", ["a", "b"], cache=cache)
    assert again is not first and again != first and cache.computed == 2
    assert len(cache._derived) == 1  # the tables of the older state were dropped
    s.close()


def test_cache_never_locks_while_scoring_and_computes_a_key_once(tmp_path):
    s = _fe_store(tmp_path, {"a": "A"})
    from db.importers import import_items

    lines = fe_lines(1, 1, prefix="o")
    import_items(s, write_benchmark(tmp_path / "o", lines), name="other")
    _answer(s, tmp_path, "o", lines, "B")
    started, release = threading.Event(), threading.Event()

    def gated(store, bench, names, options):  # the real scorer, held at its start for benchmark fe
        if bench == "fe":
            started.set()
            assert release.wait(60)
        return score_runs(store, bench, names, options)

    cache = ScoreCache(scorer=gated)
    results: dict[str, dict] = {}
    slow = threading.Thread(target=lambda: results.__setitem__("first", cache.scores(s, "fe", ["a"])))
    slow.start()
    assert started.wait(60)
    # while fe is being scored, another benchmark scores at once (no lock held while scoring) ...
    assert cache.scores(s, "other", ["o"])["o"]["run"] == "o"
    # ... and a second request for the fe key waits for that one computation instead of starting another
    same = threading.Thread(target=lambda: results.__setitem__("second", cache.scores(s, "fe", ["a"])))
    same.start()
    same.join(0.5)
    assert same.is_alive() and "second" not in results
    release.set()
    slow.join(60)
    same.join(60)
    assert results["second"] is results["first"]
    assert cache.computed == 2  # fe once, other once
    s.close()


def test_a_failed_scoring_is_not_kept(tmp_path):
    s = _fe_store(tmp_path, {"a": "A"})
    calls = []

    def failing_once(store, bench, names, options):
        calls.append(names)
        if len(calls) == 1:
            raise NotFound("the store went away")
        return score_runs(store, bench, names, options)

    cache = ScoreCache(scorer=failing_once)
    with pytest.raises(NotFound):
        cache.scores(s, "fe", ["a"])
    assert cache.scores(s, "fe", ["a"])["a"]["run"] == "a" and len(calls) == 2
    s.close()


def test_request_and_tab_handlers_gate_the_drawing(tmp_path):
    s = _fe_store(tmp_path, {"a": "A", "b": "B"})
    h = MetricsHandlers(s, "Metrics", cache=ScoreCache())
    skip = h.request(False, "fe", ["a"], [], [], None)  # hidden: nothing drawn
    assert all(isinstance(x, dict) and x.get("__type__") == "update" and len(x) == 1 for x in skip)
    drawn, want = h.request(True, "fe", ["a"], ["group"], ["scene"], None)
    assert drawn[:2] == ("fe", ("a",)) and drawn[-2:] == (("group",), ("scene",)) and want[0] == list(drawn)
    assert h.request(True, "fe", ["a"], ["group"], ["scene"], list(drawn))[0].get("__type__") == "update"
    again = h.refresh(True, "fe", ["a"], ["group"], ["scene"], list(drawn))  # Refresh draws again
    assert again[0] == drawn and again[1][1] != want[1]
    shown, d2, _ = h.on_tab(gr.SelectData(None, {"index": 2, "value": "Metrics", "selected": True}),
                            "fe", ["b"], [], [], list(drawn))
    assert shown is True and d2[1] == ("b",)
    hidden = h.on_tab(gr.SelectData(None, {"index": 0, "value": "Browse", "selected": True}),
                      "fe", ["b"], [], [], list(drawn))
    assert hidden[0] is False and hidden[1].get("__type__") == "update"
    s.close()


def test_cluster_controls_follow_the_family(demo):
    h = MetricsHandlers(demo)
    row, fields = h.cluster_controls("frameevidence", ["scene", "no-such-field"])
    assert row["visible"] is True and "scene" in fields["choices"] and fields["value"] == ["scene"]
    row, fields = h.cluster_controls("stembind", ["scene"])
    assert row["visible"] is False and fields["choices"] == [] and fields["value"] == []


@pytest.mark.parametrize("bench,selected,message", [
    (None, ["a"], "No benchmark in the store yet"),
    ("fe", [], "Pick one or more runs"),
    ("fe", ["gone"], "None of the picked runs exists any more"),
])
def test_page_messages(tmp_path, bench, selected, message):
    s = _fe_store(tmp_path, {"a": "A"})
    assert message in metrics_page(s, bench, selected, cache=ScoreCache()).message
    s.close()


def test_metrics_json_is_the_tab_s_tables(demo):
    names = ["synth-sb-balanced-direct", "synth-sb-balanced-thinking"]
    out = metrics_json(demo, "stembind", names, cache=ScoreCache())
    want = _cli_scores(demo, "stembind", names)
    assert (out["benchmark"], out["family"], out["split"], out["runs"]) == ("stembind", "stembind", "test", names)
    board = next(t for t in out["tables"] if t["key"] == "sb_leaderboard")
    assert board["columns"][:3] == ["P", "R", "F"]
    checked = 0
    for t in out["tables"]:
        for row in t["rows"]:
            for cell in row["cells"]:
                if cell["run"] in want and cell["path"]:
                    node = want[cell["run"]]["metrics"]
                    for step in cell["path"]:
                        node = node.get(step) if isinstance(node, dict) else None
                    if isinstance(node, dict) and "value" in node:
                        assert cell["value"] == node["value"], (t["key"], cell["path"])
                        assert cell["interval"] == node.get("ci"), (t["key"], cell["path"])
                        assert cell["reason"] == (node.get("reason") or ("undefined" if node["value"] is None
                                                                          else None))
                        checked += 1
    assert checked >= 30
    json.dumps(out, allow_nan=False)  # plain JSON: no NaN


@pytest.mark.parametrize("kw,error,text", [
    (dict(benchmark="nope", runs=["x"]), NotFound, "nope"),
    (dict(benchmark="stembind", runs=[]), BadMetricsRequest, "name one or more runs"),
    (dict(benchmark="stembind", runs=["synth-sb-balanced-direct", "gone"]), NotFound, "no run named 'gone'"),
    (dict(benchmark="stembind", runs=["synth-sb-balanced-direct"], clusters=["image"]), BadMetricsRequest,
     "apply to FrameEvidence"),
    (dict(benchmark="frameevidence", runs=["synth-fe-frameaware"], clusters=["pixels"]), UnknownClustering,
     "unknown clustering 'pixels'"),
    (dict(benchmark="frameevidence", runs=["synth-fe-frameaware"], clusters=["group"], cluster_fields=["scene"]),
     BadMetricsRequest, "add scene or union"),
    (dict(benchmark="stembind", runs=["synth-sb-balanced-direct"], shortcut_model="m"), BadMetricsRequest,
     "applies to SPUR"),
    (dict(benchmark="spur", runs=["synth-spur-generalist"], shortcut_model="nobody"), BadMetricsRequest,
     "no text-only model 'nobody'"),
    (dict(benchmark="stembind", runs=["synth-sb-balanced-direct"], split="dev"), CrosscheckError, "dev"),
])
def test_metrics_json_refuses_what_it_cannot_answer(demo, kw, error, text):
    with pytest.raises(error, match=text):
        metrics_json(demo, cache=ScoreCache(), **kw)


def test_a_benchmark_switch_draws_once(demo):
    """On a switch the header still holds the previous benchmark's runs for a moment, then its own update of
    the runs follows, and the cluster pickers reset: only the drawing with the new runs is asked for."""
    h = MetricsHandlers(demo, "Metrics", cache=ScoreCache())
    fe = ["synth-fe-frameaware"]
    drawn, _ = h.request(True, "frameevidence", fe, ["group"], ["scene"], None)
    stale = h.request(True, "spur", fe, ["group"], ["scene"], list(drawn))  # the header's runs are still FE's
    assert all(x.get("__type__") == "update" and len(x) == 1 for x in stale)
    spur = [r["name"] for r in demo.runs("spur", with_counts=False)][:1]
    drawn, _ = h.request(True, "spur", spur, ["group"], ["scene"], list(drawn))
    assert drawn[:2] == ("spur", tuple(spur))
    reset = h.request(True, "spur", spur, [], [], list(drawn))  # SPUR shows no cluster pickers: no new key
    assert all(x.get("__type__") == "update" and len(x) == 1 for x in reset)
    forced = h.refresh(True, "spur", fe, [], [], list(drawn))  # Refresh draws whatever the picks
    assert forced[0][0] == "spur"
