"""Shared fixtures: a real SQLite store per test and a small valid FrameEvidence benchmark on disk."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import ROOT, copy_store, fe_lines, run_cli, write_benchmark, write_png  # noqa: F401 - re-exported


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The browser modules (tests/ui/) first, in their own order: `make test` runs two workers, a module on one,
    and the long modules started early keep both busy to the end."""
    items.sort(key=lambda item: 0 if Path(str(item.path)).parent.name == "ui" else 1)


@pytest.fixture
def store(tmp_path):
    from db.store import Store

    s = Store(tmp_path / "store.db")
    yield s
    s.close()


@pytest.fixture
def fe_bench(tmp_path) -> Path:
    return write_benchmark(tmp_path / "fe", fe_lines())


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory) -> Path:
    """The full embedded demo store, built once per test session (read-only for tests: copy before writing)."""
    from db.demo import build_demo_store
    from db.store import Store

    db = tmp_path_factory.mktemp("demo") / "demo.db"
    s = Store(db)
    build_demo_store(s, progress=lambda m: None)
    s.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    s.close()
    return db


