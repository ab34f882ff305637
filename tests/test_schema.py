"""All DDL lives in db/schema.py migrations (issue 17.4): a fresh store is complete when it opens, an older one
migrates, no other module creates a table, view or index, and db/schema.py imports no db/ module back."""

from __future__ import annotations

import ast
import re
import sqlite3
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

TABLES = {"_migrations", "benchmarks", "images", "items", "runs", "predictions", "judgements", "labels",
          "label_audit", "imports", "calibration_samples", "prediction_overrides", "run_jobs", "prediction_sources",
          "group_tags", "search_keys", "search_state", "gold_reviews", "image_phash",
          # FTS5 tables (migration 008) and the shadow tables FTS5 keeps for each
          *(f"{t}{s}" for t in ("search_items", "search_notes", "search_tags") for s in ("", "_data", "_idx",
                                                                                      "_docsize", "_config")),
          # migration 009: search_predictions reads its text from a view (no _content) and keeps no sizes
          *(f"search_predictions{s}" for s in ("", "_data", "_idx", "_config"))}
VIEWS = {"predictions_effective", "search_prediction_texts"}
INDEXES = {"prediction_overrides_key", "run_jobs_run", "group_tags_tag", "gold_reviews_item"}
TRIGGERS = {f"search_{t}_{op}" for t in ("items", "notes", "tags") for op in ("ai", "ad", "au")} | {
    "search_predictions_ad", "search_predictions_au"}
MIGRATED = ["001_initial", "002_calibration_samples", "003_prediction_overrides", "004_override_layer",
            "005_run_jobs", "006_prediction_sources", "007_run_revision", "008_search", "009_search_external",
            "010_item_health"]


def _objects(path: Path) -> dict[str, set[str]]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'").fetchall()
    finally:
        conn.close()
    out: dict[str, set[str]] = {"table": set(), "view": set(), "index": set(), "trigger": set()}
    for kind, name in rows:
        out[kind].add(name)
    return out


def test_fresh_store_has_every_table_after_open(tmp_path):
    from db.store import Store

    store = Store(tmp_path / "fresh.db")
    applied = [r[0] for r in store.conn.execute("SELECT name FROM _migrations ORDER BY name")]
    store.close()
    found = _objects(tmp_path / "fresh.db")
    assert found["table"] == TABLES
    assert found["view"] == VIEWS
    assert INDEXES <= found["index"]
    assert found["trigger"] == TRIGGERS
    assert applied == MIGRATED


def test_store_with_a_lazily_created_table_still_opens(tmp_path):
    """A store from before this change: only the first migration recorded, and calibration_samples / run_jobs
    already created at run time by the code of the day (IF NOT EXISTS). Opening it applies the rest."""
    from db import schema
    from db.store import Store

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(schema.MIGRATIONS_DDL)
    schema._m001_initial(__import__("sqlite_utils").Database(conn))
    conn.execute("INSERT INTO _migrations VALUES ('001_initial', 'then')")
    conn.execute(schema.CALIBRATION_DDL)
    conn.execute("INSERT INTO benchmarks (name, family, created) VALUES ('b', 'generic', 'then')")
    conn.execute("INSERT INTO runs (name, benchmark_id, runner, config, config_hash, status, created)"
                 " VALUES ('r', 1, 'import', '{}', 'h', 'imported', 'then')")
    conn.execute("INSERT INTO items (benchmark_id, item_id, group_id, split, options, letters, answer)"
                 " VALUES (1, 'i', 'i', 'test', '{}', 'AB', 'A')")
    conn.execute("INSERT INTO calibration_samples (name, position, run_id, item_pk, seed, per_operation, created)"
                 " VALUES ('s', 0, 1, 1, 7, 3, 'then')")
    conn.close()
    store = Store(path)
    try:
        assert [r[0] for r in store.conn.execute("SELECT name FROM _migrations ORDER BY name")] == MIGRATED
        assert store.conn.execute("SELECT name, seed FROM calibration_samples").fetchall() == [("s", 7)]
        assert store.conn.execute("SELECT name, revision FROM runs").fetchall() == [("r", 0)]  # 007 on an old run
    finally:
        store.close()
    assert _objects(path)["table"] == TABLES


def _sources() -> list[Path]:
    files = [ROOT / "app.py"]
    for folder in ("cli", "core", "db", "ui", "bench", "scripts"):
        files += sorted((ROOT / folder).rglob("*.py"))
    return files


@pytest.mark.parametrize("statement", ["CREATE TABLE", "CREATE VIEW", "CREATE INDEX", "CREATE UNIQUE INDEX",
                                       "CREATE TRIGGER"])
def test_no_ddl_outside_db_schema(statement):
    pattern = re.compile(r"\b" + statement.replace(" ", r"\s+") + r"\b", re.IGNORECASE)
    offenders = [str(p.relative_to(ROOT)) for p in _sources()
                 if p != ROOT / "db" / "schema.py" and pattern.search(p.read_text(encoding="utf-8"))]
    assert len(_sources()) > 50
    assert offenders == []


def test_no_create_calls_outside_db_schema():
    """sqlite-utils' table creation (`.create(`, `create_index`, `create_view`) only in the migrations. Only the
    modules that hold a store are read: core/ has no store (its `.create(` is the openai SDK's)."""
    pattern = re.compile(r"\.(create|create_index|create_view|create_table)\(")
    holders = [p for p in _sources() if p.relative_to(ROOT).parts[0] != "core"]
    offenders = [str(p.relative_to(ROOT)) for p in holders
                 if p != ROOT / "db" / "schema.py" and pattern.search(p.read_text(encoding="utf-8"))]
    assert len(holders) > 30
    assert offenders == []


def test_db_schema_imports_no_db_module():
    tree = ast.parse((ROOT / "db" / "schema.py").read_text(encoding="utf-8"))
    imported = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    imported += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert "sqlite_utils" in imported
    assert [m for m in imported if m == "db" or m.startswith("db.")] == []


def test_only_db_predictions_reads_predictions():
    """Every SQL that reads the predictions table or the override view (issue 22.4) sits in db/predictions.py:
    no other module of app.py, core/, db/ or ui/ names the view (PREDICTIONS_READ) or reads FROM / JOINs either;
    db/schema.py (the view's DDL and the migrations) aside. Writes (INSERT INTO, UPDATE, DELETE FROM) are not
    reads."""
    reads = re.compile(r"(?<!DELETE )\b(FROM|JOIN)\s+(predictions|predictions_effective)\b|PREDICTIONS_READ")
    allowed = {ROOT / "db" / "predictions.py", ROOT / "db" / "schema.py"}
    files = [p for p in _sources() if p.relative_to(ROOT).parts[0] in ("app.py", "core", "db", "ui")]
    offenders = [f"{p.relative_to(ROOT)}:{no}: {line.strip()}" for p in files if p not in allowed
                 for no, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1)
                 if reads.search(line)]
    assert len(files) > 50
    assert reads.search((ROOT / "db" / "predictions.py").read_text(encoding="utf-8"))
    assert offenders == []
