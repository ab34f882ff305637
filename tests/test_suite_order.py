"""`make test` hands modules to its two workers longest first (tests/conftest.py LONGEST_FIRST): every module named
there exists (a renamed module would silently lose its place), and the Makefile keeps the collection order
(without --no-loadscope-reorder, xdist sorts modules by their number of tests and the long browser modules of one
to five tests run last)."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import LONGEST_FIRST

TESTS = Path(__file__).resolve().parent


def test_longest_first_names_existing_modules_once():
    assert [n for n in LONGEST_FIRST if not (TESTS / n).is_file()] == []
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)


def test_make_test_keeps_the_collection_order():
    recipe = re.search(r"^test:.*\n((?:\t.*\n)+)", (TESTS.parent / "Makefile").read_text(), re.M)
    assert recipe is not None
    command = recipe.group(1)
    assert "--dist loadfile" in command and "--no-loadscope-reorder" in command and "--durations=" in command
