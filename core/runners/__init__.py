"""Live runs (SPEC §6): baselines, local transformers models and OpenAI-compatible endpoints, one interface.

Heavy backends (torch, transformers, openai) load inside the runner that needs them (STYLE 6).
Entry point: `core.runners.engine.run(sink, settings)` with a `RunSettings`; the `run` subcommand's options are
cli/arguments.py's `run`, turned into RunSettings by cli.commands.cmd_run.
"""
