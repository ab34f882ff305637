"""Crosscheck: command-line entry. No subcommand launches the UI; `python app.py --help` lists the rest.

Thin by design (STYLE 10): the command line lives in cli/ (grammar in cli/parser.py and cli/arguments.py, the
handlers in cli/commands.py). `demo` (the Gradio Blocks) is built on first access, so importing this module
touches no network, loads no model and imports neither pandas nor Gradio.
"""

from __future__ import annotations

import sys
from typing import Any

from cli import main

__all__ = ["main"]


def __getattr__(name: str) -> Any:
    """`app.demo`: the Gradio Blocks over the default store, built on first access."""
    if name == "demo":
        from db.store import Store, default_db_path
        from ui.shell import build

        return build(Store(default_db_path()))
    raise AttributeError(name)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
