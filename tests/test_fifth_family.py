"""A fifth family added in one package: tests/fifth_family/ defines "parity" with its own prompt strategy, its own
metric and its own Metrics control, and registers it; the generic paths then import a benchmark of it, score it
(`score --json` with its metric), show it in Browse, Compare and Metrics (its control redraws its table; the browser
test is tests/ui/test_ui_fifth_family.py), run its strategy through the real engine against the test chat server,
and export it, with no other file naming any of it. Expected numbers are counted by hand from the files written
here."""

from __future__ import annotations

import inspect
import io
import json
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, write_png

from core import families, prompts
from tests.fifth_family import FAMILY, HINT, ROWS, catalogue, prompt, tables

# 4 groups of (odd, even) items; run "a" answers every item right but g2's even one, run "b" every item right
# but g0's two (so a -> b: g0 correct -> wrong, g2 wrong -> correct)
GROUPS = 4
WRONG = {"a": {"g2-even"}, "b": {"g0-odd", "g0-even"}}
BENCH = "par"
# run a: odd 4 / 4, even 3 / 4; run b: odd 3 / 4, even 3 / 4 (in points of the gap: odd minus even)
GAP = {"a": 1 - 3 / 4, "b": 0.0}


def write_items(root: Path) -> Path:
    lines = []
    for g in range(GROUPS):
        for k, kind in enumerate(FAMILY.kinds):
            write_png(root / "img" / f"g{g}-{kind}.png", (40 * g, 100 + 50 * k, 30))
            lines.append({"benchmark": FAMILY.name, "item_id": f"g{g}-{kind}", "group_id": f"g{g}", "kind": kind,
                          "question": f"Is {2 * g + k} {kind}?", "options": {"A": "yes", "B": "no"}, "answer": "A",
                          "images": [f"img/g{g}-{kind}.png"]})
    path = root / "items.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def write_predictions(root: Path, run: str) -> Path:
    path = root / f"{run}.jsonl"
    rows = [{"item_id": f"g{g}-{kind}", "response": "B" if f"g{g}-{kind}" in WRONG[run] else "A"}
            for g in range(GROUPS) for kind in FAMILY.kinds]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def build_store(root: Path):  # type: ignore[no-untyped-def]
    """A store holding the benchmark and runs "a" and "b" (imported through the generic importers)."""
    from db.importers import import_items, import_predictions
    from db.store import Store

    s = Store(root / "family.db")
    result = import_items(s, write_items(root), name=BENCH)
    assert result.report.counts["items"] == 2 * GROUPS and result.report.counts["groups"] == GROUPS
    for run in ("a", "b"):
        import_predictions(s, write_predictions(root, run), run, model=f"model-{run}")
    return s


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = build_store(tmp_path_factory.mktemp("family"))
    yield s
    s.close()


def _names() -> list[str]:
    """Every name the family brings: its own, its strategy's and option's, its metric's, its control's and
    table's, and what its strategy writes into a run's config."""
    assert HINT.option is not None
    return [FAMILY.name, HINT.name, HINT.option.key, HINT.option.flag.lstrip("-"), catalogue.PARITY_GAP.key,
            ROWS.name, ROWS.table, *prompt.run_config(None, [], None, 0)]  # type: ignore[arg-type] # its config key


def test_the_family_is_registered_from_its_package_alone():
    assert families.get(FAMILY.name) is FAMILY and FAMILY.name in families.names()
    with pytest.raises(ValueError, match="already registered"):
        families.register(FAMILY.__class__(**{**FAMILY.__dict__}))
    assert HINT in prompts.strategies() and FAMILY.controls == (ROWS,)
    own = ("tests/fifth_family/", "tests/test_fifth_family.py")
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.splitlines()
    names = _names()
    outside: dict[str, list[str]] = {}
    for rel in listed:
        path = ROOT / rel
        if rel.startswith(own) or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # an image or another binary file
        for name in names:
            if name in text:
                outside.setdefault(name, []).append(rel)
    assert len(listed) > 100 and outside == {}  # no other file names the family or anything it brings


def test_import_runs_the_family_rules(store, tmp_path):
    from core.errors import ImportRefused
    from db.importers import import_items

    assert store.benchmark_family(BENCH) == FAMILY.name
    src = write_items(tmp_path)
    lines = src.read_text(encoding="utf-8").splitlines()
    src.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")  # g3 loses its even item
    with pytest.raises(ImportRefused) as err:
        import_items(store, src, name="bad")
    assert [(i.line, i.field) for i in err.value.report.errors] == [(7, "kind")]
    assert "must hold one odd and one even item" in str(err.value.report.errors[0])


def test_score_with_its_own_metric(store):
    from core.scoring import score_all
    from db.frames import load_for_scoring

    items, runs = load_for_scoring(store, BENCH)
    scored = score_all(items, runs)
    n = 2 * GROUPS
    for run in ("a", "b"):
        acc = scored[run]["metrics"]["accuracy"]
        assert (acc["k"], acc["n"]) == (n - len(WRONG[run]), n)
        assert scored[run]["family"] == FAMILY.name
        assert scored[run]["metrics"][catalogue.PARITY_GAP.key]["value"] == pytest.approx(GAP[run])


def test_score_json_and_the_catalogue(store, capsys):
    """`score --json` (the real command, in this process, where the family is registered) prints its metric, and
    every path its score produces is declared in its catalogue (the generic catalogue check)."""
    import app
    from tests.test_catalogue import paths, undeclared

    assert app.main(["score", "--db", str(store.path), "--run", "a", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    gap = result["metrics"][catalogue.PARITY_GAP.key]
    assert gap["value"] == pytest.approx(GAP["a"]) and "k" not in gap  # a difference, no k / n
    assert ("per_kind", "odd") in paths(result["metrics"])
    assert undeclared(FAMILY.catalogue, [result], FAMILY.name) == []
    fn = inspect.unwrap(FAMILY.score)
    assert len(inspect.signature(fn).parameters) == 4  # the protocol's typed score(items, run, others, options)


def test_browse(store):
    from ui import browse

    res = browse.list_groups(store, BENCH, ["a", "b"], None, None, None, None, None, None, 1)
    table = res["table"].set_index("group")
    assert res["n_groups"] == GROUPS and sorted(table.index) == [f"g{g}" for g in range(GROUPS)]
    header = {r["name"]: browse.run_header(r) for r in store.runs(BENCH, with_counts=False)}
    assert table.loc["g2", header["a"]] == "✗ 1/2" and table.loc["g0", header["b"]] == "✗ 0/2"
    assert res["counts"]["some_wrong"] == 2 and res["counts"]["all_wrong"] == 1  # any run: g0, g2; g0 in b
    html = browse.open_group(store, BENCH, ["a", "b"], "g1", None, True)
    assert f'class="cc-{FAMILY.name}"' in html and "g1-odd" in html and "g1-even" in html  # the family's own view


def test_compare(store):
    from ui import compare

    res = compare.compare_runs(store, BENCH, "a", "b")
    turnover = res["turnover"]
    assert res["family"] == FAMILY.name and res["clusters"] == "groups"
    assert (turnover["newly_incorrect"].k, turnover["newly_correct"].k, turnover["net"]) == (2, 1, -1)  # items
    assert res["counts"]["correct → wrong"] == 1 and res["counts"]["wrong → correct"] == 1  # groups g0, g2
    acc = res["differences"]["accuracy"]["difference"]
    assert acc.value == pytest.approx(6 / 8 - 7 / 8)  # b - a
    html, changed, _, _ = compare.run_compare(store, BENCH, "a", "b", "test", None)
    assert "accuracy" in html.lower() and set(changed.data["group"]) == {"g0", "g2"}


def test_metrics_tables_and_the_control(store):
    """The Metrics endpoint lists its own table beside generic's; its control redraws that table for every run
    of the benchmark (through the `load` the UI hands it); the endpoint's control argument is SPUR's, refused
    here, naming the family that takes it."""
    from ui.metrics import BadMetricsRequest, loader, metrics_json
    from ui.metrics_page import metrics_page
    from ui.scores import ScoreCache

    page = metrics_json(store, BENCH, ["a"])
    keys = [t["key"] for t in page["tables"]]
    assert page["family"] == FAMILY.name and keys[0] == "generic_main" and keys[-1] == ROWS.table
    own = page["tables"][-1]
    assert [r["labels"] for r in own["rows"]] == [["a"]]
    assert own["rows"][0]["cells"][-1]["value"] == pytest.approx(GAP["a"])
    drawn = metrics_page(store, BENCH, ["a"], cache=ScoreCache())
    assert [label for label, _ in ROWS.choices(drawn.runs)][1] == "every run of the benchmark"
    every = ROWS.redraw(drawn.runs, tables.EVERY_RUN, loader(store, BENCH))
    assert [r.labels for r in every.rows] == [["a"], ["b"]]
    assert [r.cells[-1].node["value"] for r in every.rows] == pytest.approx([GAP["a"], GAP["b"]])
    assert ROWS.redraw(drawn.runs, "", loader(store, BENCH)).rows[0].labels == ["a"]
    with pytest.raises(BadMetricsRequest, match="applies to SPUR"):
        metrics_json(store, BENCH, ["a"], shortcut_model="model-a")


def test_a_run_with_its_strategy_through_the_engine(tmp_path, monkeypatch, capsys):
    """`run --strategy parity-hint --parity-hint truthful` (the family's strategy and its option, on `run`'s
    command line) against the real chat server: the prompts carry the hint, the config keeps the option and the
    strategy's record, and `score --json` shows what the hint did (a model that answers "yes" when told "odd")."""
    from chat_server import ChatServer, request_text

    import app
    from db.importers import import_items
    from db.store import Store

    db = tmp_path / "run.db"
    import_items(Store(db), write_items(tmp_path), name=BENCH)
    monkeypatch.setenv("CC_TEST_KEY", "sk-test")
    assert HINT.option is not None
    flag, (truthful, misleading) = HINT.option.flag, HINT.option.choices
    base = ["run", "--db", str(db), "--benchmark", BENCH, "--runner", "openai", "--model", "m", "--api-key-env",
            "CC_TEST_KEY", "--no-progress"]
    with ChatServer(responder=lambda b: "A" if "the odd item" in request_text(b) else "B") as server:
        url = ["--base-url", server.base_url]
        assert app.main([*base, *url, "--run", "told", "--strategy", HINT.name, flag, truthful]) == 0
        sent = [request_text(b) for b in server.bodies]
        assert app.main([*base, *url, "--run", "misled", "--strategy", HINT.name, flag, misleading]) == 0
        assert app.main([*base, *url, "--run", "x", "--strategy", "direct", flag, truthful]) == 2
        assert app.main([*base, *url, "--run", "x", "--strategy", "ssa", "--ssa-level", "H1"]) == 2
    err = capsys.readouterr().err
    assert f"{flag} applies to --strategy {HINT.name} only" in err and "strategy 'ssa' applies to StemBind" in err
    assert len(sent) == 2 * GROUPS and sum("This is the odd item of its pair." in t for t in sent) == GROUPS
    config = Store(db).run("told")["config"]
    assert config["strategy"] == HINT.name and config[HINT.option.key] == truthful
    assert config["max_tokens"] == HINT.max_tokens  # the strategy's default
    assert config["parity_hint_items"] == {"even": GROUPS, "odd": GROUPS}  # its run_config: the items it asks
    for run, gap in (("told", 1.0), ("misled", -1.0)):  # odd right and even wrong when told the truth
        assert app.main(["score", "--db", str(db), "--run", run, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["metrics"][catalogue.PARITY_GAP.key]["value"] == pytest.approx(gap)


def test_export(store):
    from db.exporters import PRED_EXPORT_FIELDS, item_records, prediction_records, write_records

    out = io.StringIO()
    assert write_records(item_records(store, BENCH), out, "jsonl") == 2 * GROUPS
    assert {json.loads(line)["benchmark"] for line in out.getvalue().splitlines()} == {FAMILY.name}
    out = io.StringIO()
    assert write_records(prediction_records(store, "b"), out, "jsonl", PRED_EXPORT_FIELDS) == 2 * GROUPS
    wrong = {r["item_id"] for r in map(json.loads, out.getvalue().splitlines()) if r["answer"] != "A"}
    assert wrong == WRONG["b"]
