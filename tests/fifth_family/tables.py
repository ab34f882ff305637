"""The parity family's tables (generic's and its own parity-gap table) and its Metrics control, which redraws
the parity-gap table for the picked runs or for every run of the benchmark (read through the control's `load`)."""

from __future__ import annotations

from collections.abc import Sequence

from core.families.generic.tables import tables as generic_tables
from core.families.protocol import Load, ScoreOptions
from core.report_tables import RunScore, Table, run_table
from tests.fifth_family.catalogue import EVEN, ODD, PARITY_GAP
from tests.fifth_family.metrics import score

GAP_TABLE = "parity_gap_table"
EVERY_RUN = "every"


def gap_table(runs: Sequence[RunScore]) -> Table:
    return run_table(GAP_TABLE, "Odd vs even accuracy (parity gap)", runs, [ODD, EVEN, PARITY_GAP])


def tables(runs: Sequence[RunScore], controls: Sequence[RunScore] = ()) -> list[Table]:
    return [*generic_tables(runs, controls), gap_table(runs)]


def choices(runs: Sequence[RunScore]) -> list[tuple[str, str]]:
    return [("the picked runs", ""), ("every run of the benchmark", EVERY_RUN)]


def redraw(runs: Sequence[RunScore], value: str, load: Load) -> Table:
    if value != EVERY_RUN or not runs:
        return gap_table(runs)
    items, every = load()
    split = items[items["split"] == runs[0].split]
    return gap_table([RunScore(r.name, score(split, r, every, ScoreOptions(seed=None)).json(), split=runs[0].split)
                      for r in every])
