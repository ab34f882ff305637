"""SPUR's Metrics-tab control (001 §2.3): the text-only shortcut filter table redrawn for one filter model.

The filter is counted per text-only model (`score` gives every model's block under `shortcut.by_model`); the
control shows every model's row (its first choice, the table as `tables` draws it), one model's row, or, only
when asked, the pool of all text-only models in a row labelled "pooled: a + b" (`score --shortcut-pool`). The
pooled numbers come from the same metrics.shortcut_summary as the CLI's. The family declares the control in its
`__init__.py` (`Family.controls`); the Metrics tab and its `metrics` endpoint (argument `shortcut_model`) draw it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from core.families.protocol import Load
from core.families.spur import catalogue as c
from core.families.spur.metrics import shortcut_summary, text_only_runs
from core.families.spur.tables import spur_shortcut
from core.report_tables import RunScore, Table, value
from core.schema import to_jsonable

EVERY = ""
POOL = "__pooled__"
POOL_WORD = "pooled"  # the endpoint's word for the pool


def choices(runs: Sequence[RunScore]) -> list[tuple[str, str]]:
    """Every model (the first choice), each text-only model, and the pool when there are two or more."""
    models = list(value(runs[0], c.SHORTCUT_MODELS) or []) if runs else []
    out = [("every text-only model (one row each)", EVERY), *[(m, m) for m in models]]
    if len(models) >= 2:
        out.append(("pooled: all text-only models (labelled)", POOL))
    return out


def redraw(runs: Sequence[RunScore], choice: str, load: Load) -> Table:
    """The filter table for one choice: the pool reads the benchmark's text-only runs (`load`)."""
    if choice == POOL and runs:
        items, every = load()
        pooled = shortcut_summary(items, text_only_runs(every), pool=True)
        rs = replace(runs[0], metrics={**runs[0].metrics, c.SHORTCUT.key: to_jsonable(pooled)})
        return spur_shortcut([rs])
    return spur_shortcut(runs, choice or None)


def pick(runs: Sequence[RunScore], word: str) -> str:
    """The choice the endpoint's `shortcut_model` names: a text-only model, or "pooled" for the pool."""
    choice = POOL if word == POOL_WORD else word
    offered = [v for _, v in choices(runs)]
    if choice not in offered:
        names = ", ".join(repr(v) for v in offered if v not in (EVERY, POOL)) or "none"
        raise ValueError(f"no text-only model {word!r} to filter shortcuts by (models: {names}"
                         f"{'; or pooled' if POOL in offered else ''})")
    return choice
