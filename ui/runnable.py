"""What the Run tab offers and starts: only what can run on the picked benchmark and this server, or a refusal
at Start that says why (issue 26 point 5), instead of a job that fails after it started."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import gradio as gr

from core import prompts
from core.errors import CrosscheckError
from core.runners.baselines import BASELINES
from core.runners.engine import RunSettings
from db.catalog import split_counts
from db.store import Store

FITTED = tuple(b for b in BASELINES if b != "random")  # fitted on the train split (core/runners/baselines.py)
FITTED_NEED_TRAIN = "the fitted baselines (" + ", ".join(FITTED) + ") are fitted on the train split"


def check_runnable(store: Store, s: RunSettings) -> None:
    """Refuse at once, with why, a run the worker could only fail: another family's prompt strategy, no items in
    the split, a fitted baseline on a benchmark without a train split, an API key variable the server lacks, a
    checkpoint folder it lacks."""
    prompts.usable(s.strategy, store.benchmark_family(s.benchmark))  # a built-in strategy or the family's own
    splits = split_counts(store, s.benchmark)
    if s.split not in splits:
        raise CrosscheckError(f"benchmark {s.benchmark!r} has no items in split {s.split!r} "
                              f"(splits: {', '.join(splits) or 'none'})")
    if s.runner == "baseline" and s.model in FITTED and "train" not in splits:
        raise CrosscheckError(f"{FITTED_NEED_TRAIN}, and benchmark {s.benchmark!r} has none: pick random")
    if s.runner == "openai" and s.api_key_env and not os.environ.get(s.api_key_env):
        raise CrosscheckError(f"the server's environment has no variable {s.api_key_env} (the API key variable); "
                              "leave the field empty for a server without a key")
    if s.runner == "transformers" and not Path(str(s.model or "")).expanduser().is_dir():
        raise CrosscheckError(f"{s.model!r} is not a checkpoint folder on the server")


def baseline_choices(store: Store, benchmark: str | None, current: str | None) -> Any:
    """The baselines a benchmark can run: the fitted ones only where it has a train split (the hint says why)."""
    has_train = bool(benchmark) and "train" in split_counts(store, str(benchmark))
    names = list(BASELINES) if has_train or not benchmark else ["random"]
    info = ("random is seeded; " + FITTED_NEED_TRAIN if has_train or not benchmark
            else f"random only: {FITTED_NEED_TRAIN}, and {benchmark} has none")
    return gr.update(choices=names, value=current if current in names else "random", info=info)
