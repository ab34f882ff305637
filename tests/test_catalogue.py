"""The metric catalogue (core.catalogue): every metric a family's score() produces is declared, every declaration
is produced, and the outputs read the declarations (tables, glossary, Compare), so a renamed or mistyped key
fails here or in mypy, not on a user's screen."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest

from core import families
from core.catalogue import Catalogue, Metric, Scores, leaf_paths
from core.families.protocol import ScoreOptions
from core.scoring import RunExtras, score_all
from db.frames import load_for_scoring, score_extras
from db.store import Store
from tests.helpers import ROOT, run_cli, write_benchmark

FAMILIES = ("frameevidence", "stembind", "spur", "generic")


def paths(metrics: dict, fields: bool = False) -> set[tuple[str, ...]]:
    """Every block and leaf of one run's `score --json` metrics, and with `fields` each rate's fields (its k, n,
    ...: places a table may read, such as binding_gap.n)."""
    out: set[tuple[str, ...]] = set()
    for path in leaf_paths(metrics):
        out.update(path[:n] for n in range(1, len(path) + 1))
        node = metrics
        for key in path:
            node = node[key]
        if fields and isinstance(node, dict):
            out.update((*path, field) for field in node)
    return out


def covered(catalogue: Catalogue, path: tuple[str, ...]) -> bool:
    """A produced path is declared: exactly, or as a block whose places are declared below it (an undefined
    block), or inside a declared block that declares nothing below itself (an opaque block)."""
    if catalogue.find(path) is not None:
        return True
    if any(len(m.key.split(".")) > len(path) and m.matches_prefix(path) for m in catalogue):
        return True
    block = catalogue.covering(path)
    return block is not None and not any(m.under(block) for m in catalogue)


def _generic_store(tmp_path) -> Store:
    """A generic benchmark with circular rotations, kinds, meta strata and two runs."""
    from tests.serverstores import generic_lines

    db = tmp_path / "g.db"
    items = generic_lines(n_groups=6)
    for i, it in enumerate(items):
        it["kind"] = ("count", "colour")[i % 2]
        it["meta"] = {"l2-category": ("x", "y")[i % 3 == 0], "src": f"s{i % 3}"}
    path = write_benchmark(tmp_path / "gen", items)
    run_cli("import", str(path), db=db, check=True)
    rows = [{"item_id": it["item_id"], "response": f"The answer is {it['answer'] if j % 3 else 'B'}.",
             "rotation": r} for j, it in enumerate(items) for r in range(2)]
    (tmp_path / "p.jsonl").write_text("\n".join(__import__("json").dumps(r) for r in rows) + "\n")
    run_cli("import-predictions", str(tmp_path / "p.jsonl"), "--run", "g-a", db=db, check=True)
    return Store(db)


def _extra_stembind(items: pd.DataFrame, runs: dict) -> dict[str, dict]:
    """A StemBind run scored with trace judgements and error-audit labels (L2, L3, the audit)."""
    name = next(n for n, r in runs.items() if r.config.get("strategy") == "thinking")
    f_items = items.loc[items["kind"] == "F", "item_id"].tolist()[:12]
    judgements = pd.DataFrame([{"item_id": i, "S1": 1, "S2": k % 2, "S3": 0, "S4": 1, "first_failure": "S2",
                                "status": "ok"} for k, i in enumerate(f_items)])
    labels = pd.DataFrame({"item_id": f_items, "category": ["perception_error", None, "rule_mutation"] * 4})
    out = score_all(items, runs, names=[name], per_run={name: RunExtras(judgements, labels)})
    return out


def _extra_frameevidence(items: pd.DataFrame, runs: dict) -> dict[str, dict]:
    """A FrameEvidence run with two seed siblings (the multi-seed block)."""
    base = runs["synth-fe-frameaware-text"]
    seeded = [replace(base, name=f"seed-{s}", config={**base.config, "seed": s}) for s in (1, 2, 3)]
    return score_all(items, [*runs.values(), *seeded], names=["seed-1"])


@pytest.fixture(scope="module")
def results(demo_db, tmp_path_factory) -> list[dict]:
    """`score --json` results of every family over the demo store, a generic store, a judged and audited StemBind
    run, seeded FrameEvidence runs and comparisons (one sharing no item with its run)."""
    out: list[dict] = []

    def add(scored: dict[str, dict]) -> None:
        out.extend(scored.values())

    for db in (demo_db, None):
        store = Store(db) if db else _generic_store(tmp_path_factory.mktemp("generic"))
        try:
            for b in store.benchmarks():
                items, runs = load_for_scoring(store, b["name"])
                extras = {n: score_extras(store, n, r.family) for n, r in runs.items()}
                first = next(iter(runs.values()))
                add(score_all(items, runs, per_run=extras, compare=first))
                silent = replace(first, name="silent", preds=first.preds.iloc[0:0])  # shares no item: a reason
                add(score_all(items, [*runs.values(), silent], names=[first.name], compare=silent))
                if b["family"] == "stembind":
                    add(_extra_stembind(items, runs))
                if b["family"] == "frameevidence":
                    add(_extra_frameevidence(items, runs))
        finally:
            store.close()
    return out


def produced(results: list[dict], family: str, fields: bool = False) -> set[tuple[str, ...]]:
    return {p for r in results if r["family"] == family for p in paths(r["metrics"], fields)}


def undeclared(catalogue: Catalogue, results: list[dict], family: str) -> list[str]:
    return sorted(".".join(p) for p in produced(results, family) if not covered(catalogue, p))


def dead(catalogue: Catalogue, results: list[dict], family: str) -> list[str]:
    readable = produced(results, family, fields=True)
    return [m.key for m in catalogue if not any(m.matches(p) for p in readable)]


@pytest.mark.parametrize("family", FAMILIES)
def test_every_produced_path_is_declared(family, results):
    missing = undeclared(families.get(family).catalogue, results, family)
    assert not missing, f"{family} produces undeclared metrics: {missing[:10]}"


@pytest.mark.parametrize("family", FAMILIES)
def test_every_declaration_is_produced(family, results):
    """A declared metric that no run produces is a key that drifted (or a dead declaration)."""
    unused = dead(families.get(family).catalogue, results, family)
    assert not unused, f"{family} declares metrics no run produces: {unused}"


def test_a_renamed_or_dropped_key_fails_the_checks(results):
    """The two checks catch a declaration and a producer that disagree: a renamed key is never produced, and a
    produced key left out of the catalogue is undeclared."""
    catalogue = families.get("stembind").catalogue
    renamed = Catalogue(tuple(replace(m, key="bind_gap") if m.key == "binding_gap" else m for m in catalogue))
    assert dead(renamed, results, "stembind") == ["bind_gap"]
    dropped = Catalogue(tuple(m for m in catalogue if not m.key.startswith("think_gain")))
    assert "think_gain" in undeclared(dropped, results, "stembind")


def test_scores_take_only_declared_results():
    """Scores.json() writes each value under its declaration's key, and refuses a place inside a result."""
    top, inside = Metric("x", "X"), Metric("x.y", "Y")
    assert Scores({top: 1}).json() == {"x": 1}
    with pytest.raises(ValueError, match="place inside a result"):
        Scores({inside: 1}).json()


@pytest.mark.parametrize("family", FAMILIES)
def test_score_signature_is_typed(family):
    """score(items, run, others, options) of every family, no *args / **kw (the protocol's four parameters)."""
    import inspect

    fn = inspect.unwrap(families.get(family).score)
    kinds = [p.kind for p in inspect.signature(fn).parameters.values()]
    assert len(kinds) == 4 and inspect.Parameter.VAR_KEYWORD not in kinds and inspect.Parameter.VAR_POSITIONAL \
        not in kinds


def test_table_columns_carry_their_declaration(demo_db):
    """A table's headers and cell units are its metrics' declarations: the StemBind leaderboard's R−F gap is a
    difference in points because RF_GAP says so, not because a cell was patched."""
    from core.families.stembind import catalogue as c
    from core.report_tables import RunScore

    out = run_cli("score", "--run", "synth-sb-balanced-thinking", "--json", db=demo_db, check=True)
    metrics = __import__("json").loads(out.stdout)["metrics"]
    board = families.get("stembind").tables([RunScore("r", metrics)])[0]
    j = board.columns.index(c.RF_GAP.label)
    assert board.rows[0].cells[j].kind == c.RF_GAP.unit == "diff"
    assert board.rows[0].cells[j].path == c.RF_GAP.path()


def test_glossary_comes_from_the_catalogues():
    from ui.glossary import GLOSSARY

    for name in families.names():
        for term in families.get(name).catalogue.glossary():
            assert term in GLOSSARY and GLOSSARY[term][0], term
    assert GLOSSARY["NTS"][1] == "000 §3"


def test_compare_labels_come_from_the_declarations():
    """The Compare tab names a paired metric by its declaration ("tasks.NP" -> "NP task") and colours a drop of
    a lower-is-better metric green."""
    from core.families.spur import catalogue as spur
    from core.families.stembind import catalogue as sb
    from ui.compare import metric_label

    assert metric_label(spur.TASK.at("NP")) == "NP task"
    assert metric_label(sb.BINDING_GAP) == "binding gap" and sb.BINDING_GAP.lower_is_better
    assert not sb.P_ACCURACY.lower_is_better


def test_catalogue_refuses_a_key_declared_twice():
    with pytest.raises(ValueError, match="declared twice"):
        Catalogue((Metric("a", "A"), Metric("a", "A again")))


def test_options_reach_the_family():
    """ScoreOptions carry each family's options; seed None skips the intervals."""
    from core.families.generic import metrics as generic
    from core.schema import RunData
    from tests.helpers import family_score
    from tests.test_common_metrics import generic_items, preds_frame

    run = RunData("r", "bench", "generic", {}, preds_frame(["A", "B", "C", "A", "B", "D"]))
    with_ci = family_score(generic.score, generic_items(), run, seed=3, draws=200)["accuracy"]
    without = family_score(generic.score, generic_items(), run, seed=None)["accuracy"]
    assert with_ci.ci is not None and without.ci is None
    assert ScoreOptions().split == "test" and ROOT.is_dir()
