"""The command line itself (#26 point 7), each case the real `python app.py` in a subprocess on a real store:
--db before or after the command, --version, `list [--json]`, a missing store refused without creating one,
serve's defaults in its help, a user's error in the server as one log line."""

from __future__ import annotations

import ast
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, fe_lines, run_cli, write_benchmark
from uiharness import app_log, running_app


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A small store: one FrameEvidence benchmark (test and dev splits), a baseline run and an imported run."""
    folder = tmp_path_factory.mktemp("cli")
    lines = fe_lines(n_fq1=2, n_fq2=1) + fe_lines(n_fq1=1, n_fq2=1, split="dev", prefix="d")
    items = write_benchmark(folder / "bench", lines)
    db = folder / "store.db"
    run_cli("import", str(items), "--name", "fe", db=db, check=True)
    run_cli("run", "--benchmark", "fe", "--runner", "baseline", "--model", "random", "--run", "rand",
            "--no-progress", db=db, check=True)
    preds = folder / "preds.jsonl"
    preds.write_text("".join(json.dumps({"item_id": ln["item_id"], "response": "A"}) + "\n" for ln in lines[:5]),
                     encoding="utf-8")
    run_cli("import-predictions", str(preds), "--run", "imported", "--model", "m-1", db=db, check=True)
    return db


def test_db_before_or_after_the_command(store):
    after = run_cli("score", "--run", "rand", "--json", "--db", str(store), check=True)
    before = run_cli("--db", str(store), "score", "--run", "rand", "--json", check=True)
    assert json.loads(before.stdout) == json.loads(after.stdout)
    assert json.loads(after.stdout)["run"] == "rand"
    # -v is taken before the command too; after it, the command's own --db wins
    listed = run_cli("-v", "--db", str(store.parent / "absent.db"), "list", "--json", "--db", str(store), check=True)
    assert json.loads(listed.stdout)["store"] == str(store.resolve())


def test_version_names_the_version_and_commit():
    out = run_cli("--version", check=True).stdout.strip()
    head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()
    assert out.startswith("crosscheck 0.1.0 (git " + head), out
    assert len(out.splitlines()) == 1


def test_list_json_matches_the_store(store):
    out = json.loads(run_cli("list", "--json", db=store, check=True).stdout)
    con = sqlite3.connect(store)
    try:
        splits = dict(con.execute("SELECT split, COUNT(*) FROM items GROUP BY split").fetchall())
        counts = dict(con.execute("SELECT r.name, COUNT(p.run_id) FROM runs r LEFT JOIN predictions p "
                                  "ON p.run_id = r.id GROUP BY r.name").fetchall())
    finally:
        con.close()
    assert out["benchmarks"] == [{"name": "fe", "family": "frameevidence", "items": sum(splits.values()),
                                  "splits": splits}]
    assert splits == {"dev": 6, "test": 9}
    runs = {r["name"]: r for r in out["runs"]}
    assert set(runs) == {"rand", "imported"}
    assert runs["imported"]["model"] == "m-1" and runs["imported"]["predictions"] == counts["imported"] == 5
    assert runs["rand"]["runner"] == "baseline" and runs["rand"]["status"] == "done"
    assert runs["rand"]["predictions"] == counts["rand"] == 9  # the test split
    assert all(r["benchmark"] == "fe" for r in out["runs"])


def test_list_text(store):
    out = run_cli("list", db=store, check=True).stdout
    assert out.splitlines()[0] == f"store {store.resolve()}: 1 benchmarks, 2 runs"
    bench = next(ln for ln in out.splitlines() if ln.startswith("fe "))
    assert "frameevidence" in bench and bench.split()[2] == "15" and bench.endswith("dev 6, test 9")
    imported = next(ln for ln in out.splitlines() if ln.startswith("imported "))
    assert imported.split()[1:] == ["fe", "m-1", "imported", "5"]  # an imported run's status


@pytest.mark.parametrize("args", [
    ["list"], ["score", "--run", "r"], ["score", "--all"], ["export", "items", "--benchmark", "b"],
    ["import-predictions", "p.jsonl", "--run", "r"], ["import-labels", "l.jsonl", "--run", "r"],
    ["judge", "--run", "r", "--judge-runner", "lexical", "--judge-run", "j"], ["calibration", "--run", "r"],
    ["run", "--benchmark", "b", "--runner", "baseline", "--model", "random", "--run", "r"],
])
def test_a_missing_store_is_refused_and_not_created(tmp_path, args):
    db = tmp_path / "nowhere" / "store.db"
    proc = run_cli(*args, db=db)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [f"error: no store at {db} (create one with `python app.py import ITEMS` "
                                        "or `python app.py demo`, or pass --db PATH)"]
    assert proc.stdout == ""
    assert not (tmp_path / "nowhere").exists()


def test_missing_default_store_is_refused_too(tmp_path):
    env_db = tmp_path / "data" / "crosscheck.db"
    proc = subprocess.run([sys.executable, str(ROOT / "app.py"), "list"], capture_output=True, text=True, cwd=ROOT,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "CROSSCHECK_DB": str(env_db)})
    assert proc.returncode == 2 and proc.stderr.startswith(f"error: no store at {env_db} ")
    assert list(tmp_path.iterdir()) == []


def test_import_creates_a_store(tmp_path):
    items = write_benchmark(tmp_path / "b", fe_lines(n_fq1=1, n_fq2=0))
    db = tmp_path / "new" / "store.db"
    run_cli("import", str(items), "--name", "fe", db=db, check=True)
    assert json.loads(run_cli("list", "--json", db=db, check=True).stdout)["benchmarks"][0]["items"] == 3


def test_serve_help_shows_host_and_port_defaults():
    out = run_cli("serve", "--help", check=True).stdout
    assert "(default: 127.0.0.1" in out and "(default: 7860)" in out


def test_a_users_error_is_one_line_in_the_server_log(store):
    from gradio_client import Client
    from gradio_client.exceptions import AppError

    with running_app(store) as url:
        with pytest.raises(AppError, match="no run named 'gone'"):
            Client(url, verbose=False).predict("fe", ["gone"], api_name="/metrics")
        log = app_log(url, "no run named 'gone'")
    lines = [ln for ln in log.splitlines() if "gone" in ln]
    assert len(lines) == 1 and lines[0].startswith("user error: no run named 'gone'"), log
    assert "Traceback" not in log


@pytest.mark.parametrize("argv", [["--help"], ["score", "--run", "r"], ["list", "--json"], ["judge", "--help"],
                                  ["import", "x.jsonl"], ["serve", "--help"]])
def test_parsing_imports_no_heavy_module(argv):
    """#27: the command line is parsed (or its help printed) without pandas, numpy, Gradio, the store or the
    judge: they are imported by the handler that uses them."""
    code = ("import sys\nimport app\nfrom cli import build_parser\ntry:\n    build_parser().parse_args(sys.argv[1:])\n"
            "except SystemExit:\n    pass\n"
            "heavy = {'pandas', 'numpy', 'gradio', 'scipy', 'db', 'ui', 'torch', 'openai'}\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))")
    proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=ROOT, check=True)
    assert proc.stdout.strip().splitlines()[-1] == "[]"


# What `import-predictions` and `score` of a small VLMEvalKit store must not import (#27 point 1, "modules imported
# where they are used"): sqlite_utils (it imports pandas; only a pending migration needs it), the UI, the plots,
# scipy, the judge runs (db.judge_runs) and the labels import, and for the TSV no spreadsheet reader. The import
# reads the family's parser from its package, whose metric modules load on first use
# (core.families.protocol.deferred): no pandas, no numpy, none of the family's metrics.
NOT_IMPORTED = {"import-predictions": {"sqlite_utils", "gradio", "plotly", "scipy", "sklearn", "ui", "openpyxl",
                                       "python_calamine", "db.labels", "db.judge_runs", "pandas", "numpy",
                                       "core.families.generic.metrics", "core.families.generic.groups"},
                "score": {"sqlite_utils", "gradio", "plotly", "scipy", "sklearn", "ui", "openpyxl",
                          "python_calamine", "db.labels", "db.judge_runs", "db.import_predictions"}}


@pytest.mark.parametrize("family", ["frameevidence", "stembind", "spur", "generic"])
def test_a_family_loads_its_metric_modules_on_first_use(family):
    """core.families.protocol.deferred: reading a family's name, kinds and parser imports no pandas; its members
    then stand for the modules' own (an attribute read and a call load the module; inspect.unwrap gives the
    member), and `from <package> import metrics` gives the real module, not a stand-in. `Family.modules()` (what
    the scoring pool's forkserver imports) names every member's module."""
    code = (f"import sys, inspect, importlib\nfrom core import families\nfam = families.get({family!r})\n"
            "print(fam.parser, len(fam.kinds), 'pandas' in sys.modules, 'numpy' in sys.modules)\n"
            f"loaded = lambda: all(f'core.families.{family}.{{m}}' in sys.modules for m in ('compare', 'metrics'))\n"
            "print(loaded(), all(importlib.import_module(m) for m in fam.modules()) and loaded())\n"
            "patterns = fam.groups.patterns\n"
            f"from core.families.{family} import groups, metrics, tables\n"
            "print(patterns is groups.RULES.patterns, inspect.unwrap(fam.score) is metrics.score, metrics.score.__module__,\n"
            "      fam.tables([]) == tables.tables([]), 'pandas' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    first, before_load, second = proc.stdout.strip().splitlines()[-3:]
    assert first.split()[2:] == ["False", "False"] and before_load == "False True", (first, before_load)
    assert second.split() == ["True", "True", f"core.families.{family}.metrics", "True", "True"], second


def test_a_deferred_member_copies_and_pickles_by_name():
    """A family's deferred member survives copy, deepcopy (dataclasses.asdict) and pickle as a stand-in for the
    same member, loaded or not (no recursion through its empty slots)."""
    import copy
    import dataclasses
    import inspect
    import pickle

    from core import families
    from core.families import protocol

    fresh = protocol.deferred("core.families.generic", "tables").tables  # not loaded yet
    copies = [pickle.loads(pickle.dumps(fresh)), copy.copy(fresh), copy.deepcopy(fresh)]
    from core.families.generic import tables

    assert all(inspect.unwrap(c) is tables.tables for c in [fresh, *copies])
    spur = families.get("spur")
    assert inspect.unwrap(dataclasses.asdict(spur)["groups"]).patterns == spur.groups.patterns


def test_import_and_score_of_a_small_store_import_only_what_they_use(tmp_path):
    rows = ["index\tquestion\tA\tB\tC\tD\tanswer\tcategory"]
    for q in range(3):
        for k in range(4):  # VLMEvalKit's circular copies at index + k * 1,000,000, options rotated
            opts = [f"opt{q}-{(i - k) % 4}" for i in range(4)]
            rows.append("\t".join([str(q + k * 1_000_000), f"question {q}?", *opts, "ABCD"[opts.index(f"opt{q}-0")],
                                   f"cat{q % 2}"]))
    data = tmp_path / "MMBench_DEV_EN.tsv"
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")
    preds = tmp_path / "model_MMBench_DEV_EN.tsv"
    # question 0 answered right in every copy, the others "A" (right in copy 0 only)
    answers = [r.split("\t")[6] if r.startswith(("0\t", "1000000\t", "2000000\t", "3000000\t")) else "A" for r in rows[1:]]
    preds.write_text("\n".join([rows[0] + "\tprediction", *(f"{r}\t{a}" for r, a in zip(rows[1:], answers, strict=True))])
                     + "\n", encoding="utf-8")
    db = tmp_path / "store.db"
    run_cli("import", str(data), "--name", "mmb", db=db, check=True)
    code = ("import sys\nfrom cli import main\nrc = main(sys.argv[1:])\n"
            f"names = {sorted(set().union(*NOT_IMPORTED.values()))!r}\n"
            "print(rc, sorted(n for n in names if n in sys.modules or any(m.startswith(n + '.') for m in sys.modules)))")
    for argv in (["import-predictions", str(preds), "--run", "m"], ["score", "--run", "m"]):
        proc = subprocess.run([sys.executable, "-c", code, *argv, "--db", str(db)], capture_output=True, text=True,
                              cwd=ROOT, check=True)
        rc, loaded = proc.stdout.strip().splitlines()[-1].split(" ", 1)
        assert rc == "0" and sorted(NOT_IMPORTED[argv[0]] & set(ast.literal_eval(loaded))) == [], (argv[0], loaded)
    scored = json.loads(run_cli("score", "--run", "m", "--json", db=db, check=True).stdout)["metrics"]
    assert (scored["circular"]["k"], scored["circular"]["n"]) == (1, 3)  # the store really holds the circular run
    assert (scored["vanilla"]["k"], scored["vanilla"]["n"]) == (3, 3)
