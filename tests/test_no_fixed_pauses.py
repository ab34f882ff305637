"""Browser tests wait for conditions, never for time (issue 28 point 4): no `wait_for_timeout(...)` and no
`time.sleep(...)` in the browser test modules and the harness they use, and no port picked before its server
binds it (`free_port()`: a server binds port 0 and reports the port it got). A pause that truly cannot be a
condition goes into ALLOWED with why: one, a file the server deletes on its own clock."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BROWSER_FILES = sorted([*(ROOT / "tests" / "ui").glob("test_ui_*.py"), ROOT / "tests" / "ui" / "conftest.py",
                        ROOT / "tests" / "uiharness.py", ROOT / "tests" / "serverharness.py",
                        ROOT / "tests" / "conftest.py"])
# (path relative to the root, the call's line) -> why the pause cannot be a condition
ALLOWED: dict[tuple[str, int], str] = {
    ("tests/ui/test_ui_safety.py", 232): "the server's cache-pruning thread deletes a file: a file-system condition "
    "with no event or request that tells when (its link's status changes before the file goes), polled every "
    "0.25 s up to 30 s, then asserted",
}


def pauses(source: str) -> list[tuple[int, str]]:
    """(line, call) of each fixed pause: `X.wait_for_timeout(...)`, `time.sleep(...)`, or `sleep(...)` taken from
    time (`from time import sleep`, under any name)."""
    tree = ast.parse(source)
    sleeps = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "time"
              for a in n.names if a.name == "sleep"}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr == "wait_for_timeout":
            found.append((node.lineno, "wait_for_timeout"))
        elif isinstance(f, ast.Attribute) and f.attr == "sleep" and isinstance(f.value, ast.Name) \
                and f.value.id == "time":
            found.append((node.lineno, "time.sleep"))
        elif isinstance(f, ast.Name) and f.id in sleeps:
            found.append((node.lineno, "sleep"))
    return found


def test_the_check_finds_each_kind_of_pause():
    probe = ("import time\nfrom time import sleep as nap\n\ndef f(page):\n    page.wait_for_timeout(500)\n"
             "    time.sleep(1)\n    nap(2)\n    page.wait_for_function('() => true')\n")
    assert sorted(pauses(probe)) == [(5, "wait_for_timeout"), (6, "time.sleep"), (7, "sleep")]


def test_browser_tests_have_no_fixed_pause():
    assert len(BROWSER_FILES) > 20
    found = [f"{path.relative_to(ROOT)}:{line}: {call}" for path in BROWSER_FILES
             for line, call in pauses(path.read_text(encoding="utf-8"))
             if (str(path.relative_to(ROOT)), line) not in ALLOWED]
    assert found == [], "wait for a condition instead (tests/uiharness.py: wait_events, settle; docs/TESTING.md):\n" \
        + "\n".join(found)


def test_no_port_is_picked_before_its_server_binds_it():
    used = []
    for folder in ("tests", "bench", "scripts"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                name = node.name if isinstance(node, ast.FunctionDef) else \
                    node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
                if name == "free_port":
                    used.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert used == [], used
