"""What the bench scripts share: the repository root (and tests/, for its helpers) on sys.path, bench/ui.py as a
module, and the synthetic responses of the import and score benches. A script imports it first:
`from benchkit import ROOT` (bench/ is sys.path[0] for a script run from it)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "tests"):  # the root ahead of bench/: bench/ui.py must not shadow the ui package
    if str(_path) not in sys.path[:2]:
        sys.path.insert(0, str(_path))


def bench_ui() -> Any:
    """bench/ui.py as a module (its name clashes with the `ui` package)."""
    spec = importlib.util.spec_from_file_location("bench_ui", ROOT / "bench" / "ui.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def synthetic_response(u: float, letter: str) -> str:
    """A StemBind-style response by a uniform draw `u`: 80% tagged, 10% a final-answer line, 7% undecided, 3%
    empty (an api_error where the bench records one)."""
    if u < 0.80:
        return f"The rule shifts one cell per row, so the missing cell holds it. <ANSWER>{letter}</ANSWER>"
    if u < 0.90:
        return f"Step 1: inspect the rows.\nFinal answer: {letter}"
    if u < 0.97:
        return "It could be A or B."
    return ""
