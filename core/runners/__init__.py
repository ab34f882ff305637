"""Live runs (SPEC §6): baselines, local transformers models and OpenAI-compatible endpoints, one interface.

Heavy backends (torch, transformers, openai) load inside the runner that needs them (STYLE 6).
Entry points: `core.runners.engine.run(sink, settings)` and `run_from_args(store, args)`;
the `run` subcommand's options are cli/arguments.py's `run`.
"""
