"""Why it fails through the store and the CLI (issue #38): reviewers' verdicts (db/gold_reviews.py: one write path,
who and when, nothing changed or dropped), scores with the marked groups set aside (core.scoring, `score
--set-aside-marked`, the Metrics page and its exports), `app.py failure-modes` and `app.py item-health` on the
demo store's run that shows both (synth-sb-mirror-repeats), and the perceptual hashes kept once computed."""

from __future__ import annotations

import json

import pytest
from helpers import copy_store, run_cli

from core.errors import CrosscheckError
from core.report_tables import to_csv, to_latex
from db import gold_reviews
from db.store import Store

BENCH = "stembind"
RUN = "synth-sb-mirror-repeats"


@pytest.fixture
def store(demo_db, tmp_path):
    s = Store(copy_store(demo_db, tmp_path))
    yield s
    s.close()


def test_a_verdict_is_kept_with_who_and_when_and_every_earlier_one_stays(store):
    first = gold_reviews.review_gold(store, BENCH, "sb-001-R", "wrong", "  the rule is B  ", by="ann")
    assert (first.verdict, first.note, first.by, first.group_id) == ("wrong", "the rule is B", "ann", "sb-001")
    gold_reviews.review_gold(store, BENCH, "sb-001-R", "right", None, by="bob")
    now = {r.item_id: r for r in gold_reviews.reviews(store, BENCH)}
    assert now["sb-001-R"].verdict == "right" and now["sb-001-R"].by == "bob"
    assert [(r.verdict, r.by) for r in gold_reviews.history(store, BENCH, "sb-001-R")] == [("wrong", "ann"),
                                                                                          ("right", "bob")]
    assert gold_reviews.set_aside(store, BENCH) == frozenset()
    gold_reviews.review_gold(store, BENCH, "sb-002-F", "wrong", by="")
    assert gold_reviews.set_aside(store, BENCH) == frozenset({"sb-002-F"})
    assert gold_reviews.reviews(store, BENCH)[-1].by == "local"


@pytest.mark.parametrize(("item", "verdict", "note", "message"), [
    ("sb-001-R", "maybe", None, "verdict 'maybe'"),
    ("no-such-item", "wrong", None, "no item 'no-such-item'"),
    ("sb-001-R", "wrong", "x" * 2001, "at most 2000 characters"),
])
def test_bad_verdicts_write_nothing(store, item, verdict, note, message):
    before = gold_reviews.state(store, BENCH)
    with pytest.raises(CrosscheckError, match=message):
        gold_reviews.review_gold(store, BENCH, item, verdict, note)
    assert gold_reviews.state(store, BENCH) == before == 0


def test_scores_set_the_marked_groups_aside_and_say_so(store, tmp_path):
    """`score --set-aside-marked` equals scoring the items without the marked item's group, and says what it left
    out; the Metrics page's tables say it first, in CSV and LaTeX too."""
    from core.scoring import score_run
    from db.frames import load_for_scoring

    gold_reviews.review_gold(store, BENCH, "sb-003-F", "wrong", "B is right", by="ann")
    store.close()
    plain = json.loads(run_cli("score", "--run", RUN, "--json", db=store.path, check=True).stdout)
    aside = json.loads(run_cli("score", "--run", RUN, "--json", "--set-aside-marked", db=store.path,
                               check=True).stdout)
    assert "set_aside" not in plain
    items, runs = load_for_scoring(store, BENCH)
    kept = items[items["group_id"] != "sb-003"].reset_index(drop=True)
    want = score_run(kept, runs[RUN], [r for n, r in runs.items() if n != RUN])
    assert aside["metrics"] == want["metrics"] != plain["metrics"]
    n_group = int((items["group_id"] == "sb-003").sum())
    assert aside["set_aside"] == {"marked": 1, "groups": 1, "items": n_group}
    assert aside["metrics"]["f_accuracy"]["n"] == plain["metrics"]["f_accuracy"]["n"] - 1

    from ui.metrics_page import metrics_page
    from ui.scores import ScoreCache

    page = metrics_page(store, BENCH, [RUN], cache=ScoreCache(), set_aside=True)
    assert page.aside.startswith("Set aside: 1 item(s) a reviewer marked “gold is wrong”")
    assert f"({n_group} items in all)" in page.aside
    table = next(iter(page.tables.values()))
    assert table.aside == page.aside
    assert to_csv(table).splitlines()[0] == f"# {page.aside}"
    assert "Set aside: 1 item(s)" in to_latex(table)
    unmarked = metrics_page(store, BENCH, [RUN], cache=ScoreCache())
    assert unmarked.aside == "" and not to_csv(next(iter(unmarked.tables.values()))).startswith("#")
    # the report says it too, and holds why it fails (report --set-aside-marked, the Metrics tab's download)
    out = tmp_path / "r.html"
    assert run_cli("report", "--benchmark", BENCH, "--runs", RUN, "--set-aside-marked", "-o", str(out),
                   db=store.path).returncode == 0
    text = out.read_text(encoding="utf-8")
    assert text.count("Set aside: 1 item(s)") >= 2 and 'id="cc-why"' in text and "Failure modes of" in text


def test_score_all_refuses_to_set_aside(store):
    store.close()
    out = run_cli("score", "--all", "--set-aside-marked", db=store.path)
    assert out.returncode == 2 and "--set-aside-marked applies to score --run" in out.stderr


def test_failure_modes_cli_finds_the_demo_runs_two_modes(store):
    store.close()
    out = json.loads(run_cli("failure-modes", "--run", RUN, "--json", db=store.path, check=True).stdout)
    assert (out["run"], out["benchmark"], out["split"]) == (RUN, BENCH, "test")
    terms = [" ".join(m["terms"]) for m in out["modes"][:2]]
    assert any("count" in t for t in terms) and any("flipped" in t or "mirror" in t for t in terms)
    for m in out["modes"][:2]:
        assert m["q"] < 0.05 and m["ci"][0] > 0 and len(m["examples"]) == 3
    text = run_cli("failure-modes", "--run", RUN, db=store.path, check=True).stdout
    assert text.splitlines()[0].startswith(f"{len(out['modes'])} modes of {RUN!r} on split 'test'")
    wrong = run_cli("failure-modes", "--run", RUN, "--benchmark", "spur", db=store.path)
    assert wrong.returncode == 2 and "not of 'spur'" in wrong.stderr
    vs = json.loads(run_cli("failure-modes", "--run", RUN, "--compare", "synth-sb-balanced-direct", "--json",
                            db=store.path, check=True).stdout)
    assert vs["compare"] == "synth-sb-balanced-direct" and vs["n_failing"] < out["n_failing"]


def test_item_health_cli_lists_the_items_that_flip_and_the_verdicts(store):
    gold_reviews.review_gold(store, BENCH, "sb-003-F", "wrong", "B is right", by="ann")
    store.close()
    out = json.loads(run_cli("item-health", "--benchmark", BENCH, "--json", db=store.path, check=True).stdout)
    flips = {u["item_id"] for u in out["unstable"]}
    assert flips and all(u["runs"] == [RUN] for u in out["unstable"])
    # the run's own items that flip: its three repeats name more than one letter
    s = Store(store.path)
    preds = s.predictions_frame(RUN)
    ok = preds[preds["status"] == "ok"]
    named = ok.groupby("item_id")["answer"].nunique()
    assert flips <= set(named[named > 1].index)
    assert {"suspect_gold", "ambiguous", "negative_discrimination", "duplicates",
            "accuracy_without_suspects"} <= set(out)
    assert out["reviews"] == [{"item_id": "sb-003-F", "group_id": "sb-003", "verdict": "wrong", "note": "B is right",
                               "by": "ann", "created": out["reviews"][0]["created"]}]
    # the perceptual hashes are computed once and kept
    mine = {h for imgs in s.items_frame(BENCH)["images"] for h in imgs}
    kept = {h for (h,) in s.conn.execute("SELECT hash FROM image_phash")}
    assert mine and mine <= kept
    s.close()
    text = run_cli("item-health", "--benchmark", BENCH, db=store.path, check=True).stdout
    assert "unstable (flips across repeats beyond the runs' own noise)" in text and "reviewed: 1 item(s)" in text
