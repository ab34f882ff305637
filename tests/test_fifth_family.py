"""A fifth family added in one package (#22 point 6): tests/fifth_family/ defines "parity" and registers it; the
generic paths then import a benchmark of it, score it, show it in Browse, Compare and Metrics, and export it,
with no other file naming it. Expected numbers are counted by hand from the files written here."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from conftest import ROOT, write_png

from core import families
from tests.fifth_family import FAMILY

# 4 groups of (odd, even) items; run "a" answers every item right but g2's even one, run "b" every item right
# but g0's two (so a -> b: g0 correct -> wrong, g2 wrong -> correct)
GROUPS = 4
WRONG = {"a": {"g2-even"}, "b": {"g0-odd", "g0-even"}}


def _items(root: Path) -> Path:
    lines = []
    for g in range(GROUPS):
        for k, kind in enumerate(FAMILY.kinds):
            write_png(root / "img" / f"g{g}-{kind}.png", (40 * g, 100 + 50 * k, 30))
            lines.append({"benchmark": FAMILY.name, "item_id": f"g{g}-{kind}", "group_id": f"g{g}", "kind": kind,
                          "question": f"Is {2 * g + k} {kind}?", "options": {"A": "yes", "B": "no"}, "answer": "A",
                          "images": [f"img/g{g}-{kind}.png"]})
    path = root / "parity.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _predictions(root: Path, run: str) -> Path:
    path = root / f"{run}.jsonl"
    rows = [{"item_id": f"g{g}-{kind}", "response": "B" if f"g{g}-{kind}" in WRONG[run] else "A"}
            for g in range(GROUPS) for kind in FAMILY.kinds]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from db.importers import import_items, import_predictions
    from db.store import Store

    root = tmp_path_factory.mktemp("parity")
    s = Store(root / "parity.db")
    result = import_items(s, _items(root), name="par")
    assert result.report.counts["items"] == 2 * GROUPS and result.report.counts["groups"] == GROUPS
    for run in ("a", "b"):
        import_predictions(s, _predictions(root, run), run, model=f"model-{run}")
    yield s
    s.close()


def test_the_family_is_registered_from_its_package_alone():
    assert families.get("parity") is FAMILY and "parity" in families.names()
    with pytest.raises(ValueError, match="already registered"):
        families.register(FAMILY.__class__(**{**FAMILY.__dict__}))
    outside = [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*") if p.suffix in (".py", ".md")
               and not p.relative_to(ROOT).as_posix().startswith((".", "tests/fifth_family/"))
               and p.name != Path(__file__).name and "parity" in p.read_text(encoding="utf-8")]
    assert outside == []  # no other file names the family


def test_import_runs_the_family_rules(store, tmp_path):
    from core.errors import ImportRefused
    from db.importers import import_items

    assert store.benchmark_family("par") == "parity"
    bad = tmp_path / "bad"
    bad.mkdir()
    src = _items(bad)
    lines = src.read_text(encoding="utf-8").splitlines()
    src.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")  # g3 loses its even item
    with pytest.raises(ImportRefused) as err:
        import_items(store, src, name="par-bad")
    assert [(i.line, i.field) for i in err.value.report.errors] == [(7, "kind")]
    assert "must hold one odd and one even item" in str(err.value.report.errors[0])


def test_score(store):
    from core.scoring import score_all
    from db.frames import load_for_scoring

    items, runs = load_for_scoring(store, "par")
    scored = score_all(items, runs)
    n = 2 * GROUPS
    for run in ("a", "b"):
        acc = scored[run]["metrics"]["accuracy"]
        assert (acc["k"], acc["n"]) == (n - len(WRONG[run]), n)
        assert scored[run]["family"] == "parity"


def test_browse(store):
    from ui import browse

    res = browse.list_groups(store, "par", ["a", "b"], None, None, None, None, None, None, 1)
    table = res["table"].set_index("group")
    assert res["n_groups"] == GROUPS and sorted(table.index) == [f"g{g}" for g in range(GROUPS)]
    header = {r["name"]: browse.run_header(r) for r in store.runs("par", with_counts=False)}
    assert table.loc["g2", header["a"]] == "✗ 1/2" and table.loc["g0", header["b"]] == "✗ 0/2"
    assert res["counts"]["some_wrong"] == 2 and res["counts"]["all_wrong"] == 1  # any run: g0, g2; g0 in b
    html = browse.open_group(store, "par", ["a", "b"], "g1", None, True)
    assert 'class="cc-parity"' in html and "g1-odd" in html and "g1-even" in html  # the family's own view


def test_compare(store):
    from ui import compare

    res = compare.compare_runs(store, "par", "a", "b")
    turnover = res["turnover"]
    assert res["family"] == "parity" and res["clusters"] == "groups"
    assert (turnover["newly_incorrect"].k, turnover["newly_correct"].k, turnover["net"]) == (2, 1, -1)  # items
    assert res["counts"]["correct → wrong"] == 1 and res["counts"]["wrong → correct"] == 1  # groups g0, g2
    acc = res["differences"]["accuracy"]["difference"]
    assert acc.value == pytest.approx(6 / 8 - 7 / 8)  # b - a
    html, changed, _, _ = compare.run_compare(store, "par", "a", "b", "test", None)
    assert "accuracy" in html.lower() and set(changed.data["group"]) == {"g0", "g2"}


def test_metrics_and_export(store):
    from db.exporters import PRED_EXPORT_FIELDS, item_records, prediction_records, write_records
    from ui.metrics import metrics_json

    page = metrics_json(store, "par", ["a", "b"])
    assert page["family"] == "parity" and [t["key"] for t in page["tables"]][:1] == ["generic_main"]
    out = io.StringIO()
    assert write_records(item_records(store, "par"), out, "jsonl") == 2 * GROUPS
    assert {json.loads(line)["benchmark"] for line in out.getvalue().splitlines()} == {"parity"}
    out = io.StringIO()
    assert write_records(prediction_records(store, "b"), out, "jsonl", PRED_EXPORT_FIELDS) == 2 * GROUPS
    wrong = {r["item_id"] for r in map(json.loads, out.getvalue().splitlines()) if r["answer"] != "A"}
    assert wrong == WRONG["b"]
