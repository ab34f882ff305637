"""Shared fixtures: a real SQLite store per test and a small valid FrameEvidence benchmark on disk."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import ROOT, copy_store, fe_lines, run_cli, write_benchmark, write_png  # noqa: F401 - re-exported

# The longest modules of `make test`, longest first (each module's setup and calls, from make test's --durations
# output; docs/TESTING.md). `make test` runs two workers, a whole module on one (--dist loadfile), and hands the
# modules out in collection order (--no-loadscope-reorder: xdist's default order, most tests first, put the long
# browser modules of one to five tests last, where each ran alone at the end); longest first, the last modules
# handed out are short and both workers end together. A module missing here costs only its place in the order.
LONGEST_FIRST = [
    "ui/test_ui_pickers.py", "ui/test_ui_charts.py", "ui/test_ui_themes.py", "ui/test_ui_paper.py",
    "ui/test_ui_judge.py", "ui/test_ui_review.py", "ui/test_ui_metrics.py", "ui/test_ui_links.py",
    "ui/test_ui_metrics_lazy.py", "ui/test_ui_safety.py", "ui/test_ui_run.py", "ui/test_ui_protocol.py",
    "test_faults.py", "test_runners_transformers.py", "ui/test_ui_metrics_clusters.py",
    "test_frameevidence_analyses.py", "ui/test_ui_judge_start.py", "ui/test_ui_data.py", "test_judge.py",
    "ui/test_ui_run_local.py", "ui/test_ui_browse.py", "ui/test_ui_run_form.py", "test_ui_metrics_api.py",
    "ui/test_ui_foreign.py", "ui/test_ui_report_button.py", "ui/test_ui_copy_link.py",
    "ui/test_ui_generic_charts.py", "test_api.py", "test_auth.py", "test_frames.py",
]
_RANK = {name: i for i, name in enumerate(LONGEST_FIRST)}
TESTS = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules of LONGEST_FIRST first, in its order; then the other browser modules (tests/ui/), then the
    rest, each in collection order (the sort is stable)."""
    def key(item: pytest.Item) -> tuple[int, int]:
        path = Path(str(item.path))
        name = path.relative_to(TESTS).as_posix() if path.is_relative_to(TESTS) else path.name
        return (_RANK.get(name, len(LONGEST_FIRST)), 0 if path.parent.name == "ui" else 1)

    items.sort(key=key)


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


