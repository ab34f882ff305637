"""The benchmark families, one package each (core/families/<name>/), collected by a small registry.

`get(name)` returns the family's package; generic code (core.scoring, core.groups, core.comparison,
core.report_tables, the importers, the runners) reads a family only through the members below, never by
testing its name. docs/ARCHITECTURE.md ("Adding a family") walks through them with the generic family.

Every family package defines:

- `NAME`, `PARSER` ("letter" or "tag": how a response's answer is read), `KINDS` (its item kinds), `STAGE_OF`
  (kind -> the stage it belongs to, for a family whose kinds form stages like SPUR's; {} otherwise);
- capabilities (bool): `OPTIONAL_GROUPS` (an item may leave `group_id` / `kind` out: each item is its own
  group), `CLUSTERINGS` (its paired intervals may resample exact-image or union components, 000 App. A /
  D.6), `SSA` (its runs may use the SSA strategy, 002 §3.3), `JUDGED_TRACES` (its metrics read stored trace
  judgements);
- `validate(items, file, report)`: the family's group rules at import;
- `score(items, run, others, **kw) -> dict`: the metric set of one run (in `<name>/metrics.py`);
- item outcomes and group layout (`<name>/groups.py`): `EVERY_PREDICTION` (an item is correct only when every
  one of its predictions is, else its rotation-0 / repeat-0 prediction decides), `UNANSWERED_IS_WRONG`
  (turnover counts every item of the split, an unanswered one as wrong, else the items both runs answered),
  `PATTERNS` ([(key, label)]: the Browse failure patterns), `outcomes(items, run)` (a frame with `item_id`,
  `correct` and, where some items may be unanswered, `answered`: the outcome the group marks use, equal to
  the metrics' own) and `group_patterns(items, outcomes, summary) -> {key: bool Series per group}`;
- paired comparison (`<name>/compare.py`): `paired_arrays(items, this, other)` -> per-cluster
  (k_this, n_this, k_other, n_other) arrays per metric (the engine, core.comparison, adds the intervals), or
  instead `paired_differences(items, this, other, split, draws, seed, clustering)` when a metric is not a ratio of sums
  (FrameEvidence's macro-F1);
- `tables(runs, controls=())` (`<name>/tables.py`): the Metrics tab's and the exports' tables.

Optional: `prefetch(items, runs, seed)`, work `core.scoring.score_all` hands the family once for many runs.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from core.errors import UnknownFamily
from core.schema import FAMILIES


def get(name: str) -> ModuleType:
    """The family package for `name`; raises UnknownFamily naming the known ones."""
    if name not in FAMILIES:
        raise UnknownFamily(f"unknown family {name!r}; expected one of {', '.join(FAMILIES)}")
    return importlib.import_module(f"core.families.{name}")
