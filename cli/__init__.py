"""Crosscheck's command line: `cli.main(argv)` parses (cli.parser, cli.arguments), runs the command's handler
(cli.commands) and turns the product's named errors into one line on stderr with exit status 2.

app.py is the entry point (`python app.py ...`) and calls `main`.
"""

from __future__ import annotations

import sys
import time

from cli.parser import build_parser
from core.errors import CrosscheckError, ImportRefused

__all__ = ["build_parser", "main"]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # no command: serve (with the options given)
        args = parser.parse_args(["serve", *argv])
    t0 = time.perf_counter()
    try:
        return int(args.func(args) or 0)
    except ImportRefused as exc:
        report = exc.report
        errors = sorted(report.errors, key=lambda i: i.line) if report is not None else []  # type: ignore[attr-defined]
        print(f"error: {exc}", file=sys.stderr)
        if len(errors) > 1:  # then every problem (the first 20 unless -v), in line order
            shown = errors if args.verbose else errors[:20]
            for issue in shown:
                print(f"  {issue}", file=sys.stderr)
            if len(errors) > len(shown):
                print(f"  ... and {len(errors) - len(shown)} more (use -v to list them)", file=sys.stderr)
        print("nothing was written", file=sys.stderr)
        return 2
    except CrosscheckError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `... | head`: the reader left; not an error
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print(f"\ninterrupted after {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        return 130
