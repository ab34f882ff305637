"""`score` scores the test split by default for every family; `--split all` scores every split (issue 13 point 7).

docs/METRICS.md "Conventions": the test split unless `--split` names another one, or `all`.
"""

from __future__ import annotations

import json

import pytest
from conftest import fe_lines, write_benchmark
from test_scoring_compare import _generic, _run, _spur, _stembind

from core.errors import MetricUndefined
from core.families.protocol import ScoreOptions
from core.scoring import score_run, split_arg

# Group 0 of each builder moves to "dev": generic 4 groups of 2 items, StemBind 4 stems of 2 P / 1 R / 1 F,
# SPUR 3 figures of 7 tasks. Expected counts by hand: test = the other groups, dev = group 0, all = every group.
CASES = [
    # family, builder, dev group, metric, n on test, n on dev, n on all splits
    ("generic", _generic, "g0", "accuracy", 6, 2, 8),
    ("generic", _generic, "g0", "group_exact_match", 3, 1, 4),
    ("stembind", _stembind, "s0", "p_accuracy", 6, 2, 8),
    ("stembind", _stembind, "s0", "f_accuracy", 3, 1, 4),
    ("stembind", _stembind, "s0", "stem_coherent", 3, 1, 4),
    ("spur", _spur, "f0", "overall", 14, 7, 21),
    ("spur", _spur, "f0", "perception", 6, 3, 9),
]


@pytest.mark.parametrize(("family", "make", "dev_group", "key", "n_test", "n_dev", "n_all"), CASES)
def test_every_family_scores_the_test_split_by_default(family, make, dev_group, key, n_test, n_dev, n_all):
    items = make()
    items.loc[items["group_id"] == dev_group, "split"] = "dev"
    run = _run("r", family, dict.fromkeys(items["item_id"], True))
    assert score_run(items, run, [])["metrics"][key]["n"] == n_test
    assert score_run(items, run, [], options=ScoreOptions(split="test"))["metrics"][key]["n"] == n_test
    assert score_run(items, run, [], options=ScoreOptions(split="dev"))["metrics"][key]["n"] == n_dev
    every = score_run(items, run, [], options=ScoreOptions(split=None))
    assert every["metrics"][key]["n"] == n_all and every["split"] == "all"


@pytest.mark.parametrize(("value", "split"), [(None, "test"), ("", "test"), ("  ", "test"), ("test", "test"),
                                              ("dev", "dev"), ("all", None), (" all ", None)])
def test_split_argument(value, split):
    assert split_arg(value) == split


def test_a_benchmark_without_a_test_split_scores_every_split_labelled_so():
    """A dev-only release (VLMEvalKit's MMBench_DEV_EN, a Hugging Face validation split) scores every split by
    default, labelled; a split it lacks, named on purpose, is refused with the splits it has."""
    from core.scoring import NO_TEST_SPLIT, score_all

    items = _generic()
    items["split"] = "train"
    run = _run("r", "generic", dict.fromkeys(items["item_id"], True))
    default = score_run(items, run, [])
    assert default["split"] == NO_TEST_SPLIT and default["metrics"]["accuracy"]["n"] == 8
    assert score_all(items, [run])["r"]["split"] == NO_TEST_SPLIT
    assert score_run(items, run, [], options=ScoreOptions(split=None))["split"] == "all"
    with pytest.raises(MetricUndefined, match=r"no items in split 'dev' \(splits: train\)"):
        score_run(items, run, [], options=ScoreOptions(split="dev"))


def _generic_lines() -> list[dict]:
    return [{"benchmark": "generic", "item_id": f"i{i}", "group_id": f"g{i // 2}", "split": s, "kind": "x",
             "question": f"q{i}", "options": {"A": "red", "B": "blue"}, "answer": "A"}
            for i, s in enumerate(["test"] * 4 + ["dev"] * 2 + ["train"] * 2)]


@pytest.mark.parametrize(("family", "lines", "count"), [
    # FrameEvidence: 12 test items and 12 train items; accuracy counts rotation-0 answers of the split
    ("frameevidence", fe_lines(prefix="t") + fe_lines(split="train", prefix="tr"),
     {None: 12, "test": 12, "train": 12, "all": 24}),
    ("generic", _generic_lines(), {None: 4, "test": 4, "dev": 2, "all": 8}),
])
def test_cli_default_and_split_all(family, lines, count, tmp_path, capsys):
    import app

    db = tmp_path / "s.db"
    bench = write_benchmark(tmp_path / "b", lines)
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps({"item_id": x["item_id"], "response": x["answer"]}) + "\n" for x in lines),
                     encoding="utf-8")
    assert app.main(["import", str(bench), "--name", "b", "--db", str(db)]) == 0
    assert app.main(["import-predictions", str(preds), "--run", "r", "--db", str(db)]) == 0
    capsys.readouterr()
    for split, n in count.items():
        args = ["score", "--run", "r", "--json", "--db", str(db)] + (["--split", split] if split else [])
        assert app.main(args) == 0
        result = json.loads(capsys.readouterr().out)
        assert result["split"] == (split or "test")
        metrics = result["metrics"]
        assert metrics["accuracy"]["n"] == n, (split, metrics["accuracy"])
        assert metrics["accuracy"]["k"] == n  # every answer is the gold letter


def test_metrics_tab_scores_the_test_split_like_the_cli(tmp_path, capsys):
    """The Metrics tab's handler (ui.metrics.run_scores, no browser) scores what `score --run` scores."""
    import app
    from db.store import Store
    from ui.metrics import run_scores

    lines = _generic_lines()
    db = tmp_path / "s.db"
    bench = write_benchmark(tmp_path / "b", lines)
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps({"item_id": x["item_id"], "response": "A" if i % 3 else "B"}) + "\n"
                             for i, x in enumerate(lines)), encoding="utf-8")
    assert app.main(["import", str(bench), "--name", "b", "--db", str(db)]) == 0
    assert app.main(["import-predictions", str(preds), "--run", "r", "--db", str(db)]) == 0
    capsys.readouterr()
    assert app.main(["score", "--run", "r", "--json", "--db", str(db)]) == 0
    cli = json.loads(capsys.readouterr().out)["metrics"]
    store = Store(db)
    try:
        _, runs, _ = run_scores(store, "b", ["r"])
    finally:
        store.close()
    assert runs[0].metrics["accuracy"] == cli["accuracy"]
    # every third item is answered B (wrong): items 0 and 3 of the test split (items 0-3), so 2 of 4 right
    assert (cli["accuracy"]["k"], cli["accuracy"]["n"]) == (2, 4)


def test_cli_dev_only_benchmark(tmp_path, capsys):
    """`score` on a benchmark with no test split scores every split, labelled; `--split test` asked for is refused
    (exit 2, naming the splits); `score --all` scores it beside a benchmark that has a test split."""
    import app

    db = tmp_path / "s.db"
    dev = [{**x, "split": "dev", "item_id": f"d{x['item_id']}", "group_id": f"d{x['group_id']}"}
           for x in _generic_lines()]
    for name, lines in (("dev_only", dev), ("with_test", _generic_lines())):
        bench = write_benchmark(tmp_path / name, lines)
        preds = tmp_path / f"{name}.jsonl"
        preds.write_text("".join(json.dumps({"item_id": x["item_id"], "response": "A"}) + "\n" for x in lines),
                         encoding="utf-8")
        assert app.main(["import", str(bench), "--name", name, "--db", str(db)]) == 0
        assert app.main(["import-predictions", str(preds), "--run", f"r_{name}", "--benchmark", name,
                         "--db", str(db)]) == 0
    capsys.readouterr()
    assert app.main(["score", "--run", "r_dev_only", "--json", "--db", str(db)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["split"] == "all (no test split)" and result["metrics"]["accuracy"]["n"] == 8
    assert app.main(["score", "--run", "r_dev_only", "--split", "test", "--db", str(db)]) == 2
    assert "no items in split 'test' (splits: dev)" in capsys.readouterr().err
    assert app.main(["score", "--all", "--json", "--db", str(db), "--jobs", "1"]) == 0
    splits = {json.loads(line)["run"]: json.loads(line)["split"] for line in capsys.readouterr().out.splitlines()}
    assert splits == {"r_dev_only": "all (no test split)", "r_with_test": "test"}
