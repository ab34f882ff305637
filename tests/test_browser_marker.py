"""Every test that drives Chromium carries the `browser` marker (so `-m "not browser"` runs exactly the tests that
need no browser), and the Chromium tests live in tests/ui/.

A test drives Chromium when it, or a fixture or helper of its module it uses, launches one (uiharness.browser),
takes the session's `ui_browser` (tests/ui/conftest.py), or uses a module helper that opens a page
(new_page, shared_app); the check follows those uses through the module's fixtures and helpers."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOTS = {"browser", "ui_browser", "new_page", "shared_app"}


def _is_browser_mark(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "browser" and isinstance(n.value, ast.Attribute)
               and n.value.attr == "mark" for n in ast.walk(node))


def chromium_tests(path: Path) -> tuple[set[str], set[str]]:
    """(tests of the module that drive Chromium, those of them that carry the browser marker)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module_marked = any(isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark"
                                                          for t in n.targets) and _is_browser_mark(n.value)
                        for n in tree.body)
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    uses: dict[str, set[str]] = {}
    for name, fn in funcs.items():
        used = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
        used |= {a.arg for a in fn.args.args + fn.args.kwonlyargs}  # fixtures it requests
        uses[name] = used
    chromium = {name for name, used in uses.items() if used & ROOTS}
    while True:  # a fixture or helper that uses a Chromium one drives Chromium too
        more = {name for name, used in uses.items() if used & chromium} - chromium
        if not more:
            break
        chromium |= more
    tests = {name for name in chromium if name.startswith("test_")}
    marked = {name for name in tests if module_marked or any(_is_browser_mark(d) for d in funcs[name].decorator_list)}
    return tests, marked


MODULES = sorted(TESTS.rglob("test_*.py"))


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(TESTS)) for p in MODULES])
def test_every_chromium_test_has_the_browser_marker(path):
    tests, marked = chromium_tests(path)
    assert tests == marked, f"{path.relative_to(TESTS)}: no browser marker on {sorted(tests - marked)}"
    if tests:
        assert path.parent == TESTS / "ui", f"{path.name} drives Chromium: it belongs in tests/ui/"


def test_the_check_sees_the_chromium_tests(tmp_path):
    found = sum(len(chromium_tests(p)[0]) for p in MODULES)
    assert found >= 40  # the UI suite's Chromium tests (a check that found none would pass vacuously)
    probe = tmp_path / "test_probe.py"
    probe.write_text("import pytest\n\n@pytest.fixture\ndef page(ui_browser):\n    return ui_browser.new_page()\n\n"
                     "def test_unmarked(page):\n    pass\n\n@pytest.mark.browser\ndef test_marked(page):\n    pass\n\n"
                     "def test_pure():\n    pass\n", encoding="utf-8")
    assert chromium_tests(probe) == ({"test_unmarked", "test_marked"}, {"test_marked"})
