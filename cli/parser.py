"""The command line's grammar: every command and option of `python app.py`, and nothing else.

Each command's options are added when that command is parsed or its help is shown (`LazyParser`), so building
the parser imports no pandas, no Gradio and no family: `app.py --help` starts at once (#27), and the options
whose choices live in heavy modules (`run`'s prompt strategies) cost their import only to `run`.
`--db` and `-v` are taken before or after the command (`app.py --db X score ...` = `app.py score --db X ...`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from cli import arguments, commands

DB_HELP = "the store file (default: $CROSSCHECK_DB or the user's data folder)"
VERBOSE_HELP = "list every warning and every error"


class LazyParser(argparse.ArgumentParser):
    """A subcommand's parser whose own options are added (by `fill`) the first time it parses or prints help."""

    def __init__(self, *args: Any, fill: Callable[[argparse.ArgumentParser], None] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._fill = fill

    def _filled(self) -> None:
        fill, self._fill = self._fill, None
        if fill is not None:
            fill(self)

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        self._filled()
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        self._filled()
        return super().format_help()

    def format_usage(self) -> str:
        self._filled()
        return super().format_usage()


class VersionAction(argparse.Action):
    """`--version`: the version (pyproject.toml) and the git commit where the tree is a checkout; looked up only
    when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        from cli.version import version_line

        print(version_line())
        parser.exit()


# (name, handler, help, the function adding its own options): the order of `app.py --help`
COMMANDS: tuple[tuple[str, Callable[[argparse.Namespace], int], str, Callable[[argparse.ArgumentParser], None]],
                ...] = (
    ("serve", commands.cmd_serve, "launch the web UI", arguments.serve),
    ("hash-password", commands.cmd_hash_password, "print a user:password-hash line for the --auth file",
     arguments.hash_password),
    ("open", commands.cmd_open, "open what a tool wrote (Inspect AI logs, VLMEvalKit outputs/, lmms-eval output "
     "folders, items and predictions files, or a folder or zip of them): import everything recognized, then serve the "
     "UI on it", arguments.open_paths),
    ("import", commands.cmd_import, "import a benchmark's items (JSONL, a zip of the JSONL and its images, a "
     "VLMEvalKit TSV, or a Hugging Face parquet / arrow dataset)", arguments.import_items),
    ("import-predictions", commands.cmd_import_predictions, "import predictions (JSONL or CSV) into a named run",
     arguments.import_predictions),
    ("import-labels", commands.cmd_import_labels, "import stage labels (JSONL) for the traces of a run",
     arguments.import_labels),
    ("score", commands.cmd_score, "compute a run's metrics (or every run's, with --all)", arguments.score),
    ("slices", commands.cmd_slices, "where a run fails: each stratum value against the rest of the split, with "
     "cluster-bootstrap intervals and Benjamini-Hochberg q (docs/METRICS.md, 'Slices')", arguments.slices),
    ("failure-modes", commands.cmd_failure_modes, "why a run fails: its failing outputs grouped into modes named "
     "by their terms, each with its share among failures and passes, a cluster-bootstrap interval and BH q "
     "(docs/METRICS.md, 'Failure modes')", arguments.failure_modes),
    ("item-health", commands.cmd_item_health, "the benchmark's items read through every run: suspect gold letters, "
     "unstable, ambiguous and negatively discriminating items, duplicate images, accuracy without the suspects "
     "(docs/METRICS.md, 'Item health')", arguments.item_health),
    ("search", commands.cmd_search, "full-text search of responses, traces, questions, options, meta and notes "
     "(FTS5 syntax: words, \"a phrase\", prefix*, NOT, OR)", arguments.search),
    ("tag", commands.cmd_tag, "tag a group with a name and an optional note (Browse filters by tag; slices count "
     "it)", arguments.tag),
    ("export", commands.cmd_export, "export items, predictions or a benchmark's leaderboard to standard output",
     arguments.export),
    ("report", commands.cmd_report, "write the one-file HTML report of a benchmark's runs (opens offline)",
     arguments.report),
    ("demo", commands.cmd_demo, "build the embedded demo store (synthetic benchmarks and runs)", arguments.demo),
    ("judge", commands.cmd_judge, "judge a run's F traces stage by stage (lexical, openai or transformers judge)",
     arguments.judge),
    ("calibration", commands.cmd_calibration, "judge-human agreement; --draw-sample NAME draws a frozen sample",
     arguments.calibration),
    ("run", commands.cmd_run, "run a model or baseline on a benchmark; resumable", arguments.run),
    ("list", commands.cmd_list, "list the store's benchmarks (family, splits, items) and runs (model, status, "
     "predictions)", arguments.list_store),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="app.py", description="Crosscheck: a diagnostic workbench for "
                                     "vision-language benchmarks with matched groups.")
    parser.add_argument("--db", type=Path, help=DB_HELP + "; also taken after the command")
    parser.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    parser.add_argument("--version", action=VersionAction, help="print the version (and git commit) and exit")
    sub = parser.add_subparsers(dest="command", parser_class=LazyParser)
    for name, func, help_, fill in COMMANDS:
        p = sub.add_parser(name, help=help_, description=help_, fill=fill)
        # SUPPRESS: absent unless given after the command, so a --db given before it is kept
        p.add_argument("--db", type=Path, default=argparse.SUPPRESS, help=DB_HELP)
        p.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=VERBOSE_HELP)
        p.set_defaults(func=func)
    return parser
