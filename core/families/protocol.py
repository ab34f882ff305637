"""The family protocol: one typed `Family` object per benchmark family, built once by its package.

Each package's `__init__.py` ends in `FAMILY = Family(...)`; `core.families.get(name)` returns it, and generic
code (core.scoring, core.groups, core.outcomes, core.comparison, core.report_tables, the importers, the runners,
db.frames, db.bulk, the UI) reads a family only through these fields, never by testing its name. mypy checks
every call: the function members are typing.Protocols (a family's `score` may take more keywords than the three
positional arguments every caller passes). docs/ARCHITECTURE.md ("Adding a family") walks through them.

A package names the members its heavy modules define (metrics, groups, tables, comparison: pandas and numpy)
through `deferred`, so importing a family to read its name, kinds or parser (`import-predictions`) imports none of
them; the first call or attribute read of a member loads its module.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

from core.catalogue import Catalogue, Scores
from core.schema import DEFAULT_DRAWS, DEFAULT_SEED

# per cluster: k_this, n_this, k_other, n_other of one paired metric; a family's paired arrays, keyed by the
# declared metric (at its breakdown keys): the comparison engine (core.comparison) adds the intervals
Arrays: TypeAlias = "tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]"
Paired: TypeAlias = "dict[Column, Arrays]"

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from core.catalogue import Column
    from core.families.stage_judging import StageJudging
    from core.outcomes import GroupRules
    from core.report import Report
    from core.report_tables import RunScore, Table
    from core.runners.base import Strategy
    from core.schema import Item, RunData
    from core.stats import Clustering


_UNSET = object()


class _Member:
    """A member of a module not imported yet: calling it, or reading one of its attributes, imports the module
    once and goes to the member itself. It stays a stand-in: identity, isinstance and the dataclass helpers see
    it, not the member (`inspect.unwrap` gives the member); a copy or a pickle names the module and the member."""

    __slots__ = ("_module", "_name", "_value")

    def __init__(self, module: str, name: str) -> None:
        self._module, self._name = module, name
        self._value: Any = _UNSET

    def _load(self) -> Any:
        if self._value is _UNSET:
            self._value = getattr(importlib.import_module(self._module), self._name)
        return self._value

    def __call__(self, *args: Any, **kw: Any) -> Any:
        return self._load()(*args, **kw)

    def __getattr__(self, attr: str) -> Any:  # only for names the proxy itself lacks
        if attr in _Member.__slots__:  # an unset slot (a copy made without __init__): not the member's
            raise AttributeError(attr)
        return getattr(self._load(), attr)

    def __reduce__(self) -> tuple[Any, ...]:
        return _Member, (self._module, self._name)

    @property
    def __wrapped__(self) -> Any:  # inspect.unwrap (and what introspects a callable) sees the member itself
        return self._load()

    def __repr__(self) -> str:
        return f"<deferred {self._module}.{self._name}>"


class _Module:
    """A module not imported yet, whose attributes are `_Member`s."""

    __slots__ = ("_module",)

    def __init__(self, module: str) -> None:
        self._module = module

    def __getattr__(self, name: str) -> _Member:
        return _Member(self._module, name)


def deferred(package: str, *modules: str) -> Any:
    """Stand-ins for `from <package> import <modules>` that import nothing yet: `deferred(__name__, "metrics").score`
    is a callable that imports `<package>.metrics` on its first call (an attribute read of a deferred object,
    such as `groups.RULES.patterns`, imports it too). A family's `__init__.py` imports the real modules under
    TYPE_CHECKING, so mypy checks its members against this protocol as if they were given directly. One module
    gives one stand-in, several a tuple."""
    found = tuple(_Module(f"{package}.{m}") for m in modules)
    return found[0] if len(found) == 1 else found


class Validate(Protocol):
    """The family's group rules at import: errors and warnings go to `report`, naming `file` and the line."""

    def __call__(self, items: list[Item], file: str, report: Report, /) -> None: ...


@dataclass(frozen=True, eq=False)
class ScoreOptions:
    """How a run is scored. Every family reads the options it has and ignores the others (docs/METRICS.md)."""

    split: str | None = "test"     # the split scored (None: every split); read by a family with `scores_splits`
    seed: int | None = DEFAULT_SEED  # the bootstrap's seed; None skips the intervals
    draws: int = DEFAULT_DRAWS
    clusterings: tuple[Clustering, ...] = ()  # FrameEvidence: Table 13's clusterings side by side (000 App. D.6)
    judgements: pd.DataFrame | None = None  # StemBind: the run's stored trace judgements (L2 StepAcc, L3 AttrTag)
    labels: pd.DataFrame | None = None      # StemBind: error-audit labels (002 App. D.7)
    shortcut_k: int | None = None           # SPUR: correct text-only trials that flag an item (001 §2.3)
    shortcut_model: str | None = None       # SPUR: the text-only model whose trials flag items
    set_aside: frozenset[str] = frozenset()  # item ids whose groups are left out (reviewers' "gold is wrong")
    shortcut_pool: bool = False             # SPUR: pool every text-only model (labelled so)


class Score(Protocol):
    """The metric set of one run against the other runs of its benchmark (`<name>/metrics.py`), keyed by the
    family's declared metrics (its `catalogue`)."""

    def __call__(self, items: pd.DataFrame, run: RunData, others: Sequence[RunData], options: ScoreOptions, /
                 ) -> Scores: ...


class Prefetch(Protocol):
    """Work core.scoring.score_all hands the family once for many runs (inside their scoring context)."""

    def __call__(self, items: pd.DataFrame, runs: Iterable[RunData], seed: int | None, /) -> None: ...


class PairedArrays(Protocol):
    """Per-cluster (k_this, n_this, k_other, n_other) arrays per metric, or the reason there is nothing to
    compare; the engine (core.comparison) adds the intervals."""

    def __call__(self, items: pd.DataFrame, this: RunData, other: RunData, /) -> Paired | str: ...


class PairedDifferences(Protocol):
    """The paired comparison computed by the family itself (a metric that is not a ratio of sums)."""

    def __call__(self, items: pd.DataFrame, this: RunData, other: RunData, split: str | None, draws: int,
                 seed: int | None, clustering: Clustering | None = None, /) -> dict[str, Any]: ...


class Tables(Protocol):
    """The Metrics tab's and the exports' tables over the selected runs (and control rows)."""

    def __call__(self, runs: Sequence[RunScore], controls: Sequence[RunScore] = (), /) -> list[Table]: ...


# A Metrics control's members (TableControl): `load()` returns what the UI reads for it (core reads no store): the
# benchmark's items and every run's data; `choices(runs)` the (label, value) pairs, the first the table as
# `tables` draws it; `redraw(runs, value, load)` the table for one value (calling `load` only when it needs
# the store); `pick(runs, word)` the value an endpoint argument's word stands for (ValueError naming the choices)
Load: TypeAlias = "Callable[[], tuple[pd.DataFrame, list[RunData]]]"
Choices: TypeAlias = "Callable[[Sequence[RunScore]], list[tuple[str, str]]]"
Redraw: TypeAlias = "Callable[[Sequence[RunScore], str, Load], Table]"
Pick: TypeAlias = "Callable[[Sequence[RunScore], str], str]"


@dataclass(frozen=True)
class TableControl:
    """A Metrics-tab control a family declares: a dropdown above one of its tables that redraws it (SPUR's
    shortcut filter model, 001 §2.3). The tab draws it for any family (ui/metrics.py): the dropdown
    (`cc-<name>-pick`), the table (`cc-<name>`) and its downloads, which follow the pick."""

    table: str                 # the key of the table it redraws (one of the family's `tables`)
    name: str                  # its element ids and the suffix of its files
    label: str                 # the dropdown's label
    choices: Choices
    redraw: Redraw
    # the `metrics` endpoint's argument and the `ScoreOptions` field that pick it (SPUR: "shortcut_model", with
    # `score --shortcut-model`); "" for a control of the tab alone
    argument: str = ""
    pick: Pick | None = None   # an argument's word -> a value (None: the word must be one of the values)
    scope: str = ""            # what its argument applies to, as a refusal names it ("SPUR benchmarks (001 §2.3)")

    def value(self, runs: Sequence[RunScore], word: str) -> str:
        """The value an endpoint argument's word picks (ValueError naming the choices when it picks none)."""
        if self.pick is not None:
            return self.pick(runs, word)
        values = [v for _, v in self.choices(runs)]
        if word not in values:
            raise ValueError(f"{self.argument or self.name}: no choice {word!r} (choices: "
                             f"{', '.join(repr(v) for v in values)})")
        return word


@dataclass(frozen=True)
class Capabilities:
    """What a family's runs and benchmarks may do beyond the common ones (each declared here, once)."""

    # an item may leave `group_id` / `kind` out: each item is its own group (generic)
    optional_groups: bool = False
    # paired intervals may resample exact-image or union components (FrameEvidence, 000 App. A / D.6); the
    # Metrics and Compare tabs show their cluster pickers, `score --cluster` accepts them
    clusterings: bool = False


@dataclass(frozen=True)
class Family:
    """Everything generic code knows about one benchmark family."""

    name: str
    parser: Literal["letter", "tag"]          # how a response's answer is read (core.parsing)
    kinds: tuple[str, ...]                    # its item kinds; () for any kind
    validate: Validate
    catalogue: Catalogue                      # every metric it reports, declared once (its catalogue.py)
    score: Score
    groups: GroupRules                        # item outcomes and failure patterns (its groups.py)
    tables: Tables
    paired_arrays: PairedArrays | None = None           # exactly one of the two
    paired_differences: PairedDifferences | None = None
    prefetch: Prefetch | None = None
    stage_of: Mapping[str, str] = field(default_factory=dict)  # kind -> stage (SPUR's tasks); {} otherwise
    capabilities: Capabilities = Capabilities()
    judging: StageJudging | None = None       # free traces judged stage by stage (StemBind S1-S4)
    # its own prompt strategies beside core.prompts.BUILTIN (StemBind's SSA): `run --strategy`, the Run tab
    strategies: tuple[Strategy, ...] = ()
    # its Metrics-tab controls: a dropdown redrawing one of its tables (SPUR's shortcut filter model)
    controls: tuple[TableControl, ...] = ()
    # item columns its metrics read beyond db.frames.SCORING_ITEM_COLUMNS (FrameEvidence: the image hashes
    # its exact-image / union clusterings link groups by)
    scoring_item_columns: tuple[str, ...] = ()
    # runs of this runner (config `runner`) are scored beside the picked runs as the tables' control rows
    # (FrameEvidence: the baseline runs of "Metadata controls", 000 §5, Table 10)
    control_runner: str | None = None
    # `score --all` may score its runs apart per config `model` (its partner metrics pair runs of one model)
    units_by_model: bool = False
    # its score() gets every split and scores `options.split` itself (FrameEvidence: partners and repeats are
    # matched over the whole benchmark); otherwise core.scoring hands it the split's items alone
    scores_splits: bool = False
    # the dotted name of its UI view module, whose VIEW is its ui.views.FamilyView; core stays free of ui imports
    view: str = "ui.views.generic"

    def __post_init__(self) -> None:
        if (self.paired_arrays is None) == (self.paired_differences is None):
            raise TypeError(f"family {self.name!r}: give exactly one of paired_arrays and paired_differences")

    def modules(self) -> list[str]:
        """The modules its deferred members come from (the scoring pool's forkserver imports them by name)."""
        return list(dict.fromkeys(v._module for v in vars(self).values() if isinstance(v, _Member)))

    @property
    def judged_traces(self) -> bool:
        """Its metrics read stored trace judgements (StemBind L2 StepAcc, L3 AttrTag)."""
        return self.judging is not None
