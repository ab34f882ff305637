"""The metric catalogue: each metric of a family declared once, typed, and every output generated from it.

A family's `catalogue.py` declares its metrics as `Metric` objects (key, label, unit, what k / n count, the
paper section, a one-line help text) and its other on-screen words as `Term`s, and collects them in one
`Catalogue`. Its `score()` returns `Scores`, keyed by those declarations (`scores[ACCURACY] = rate`); the JSON of
`score --json` takes each key from the declaration, and the Metrics tables, charts, CSV / LaTeX / HTML exports,
the leaderboard, the report and the glossary read the same declarations (`Metric.cell`, `Catalogue.glossary`).
Renaming a metric is a change of its `key` in one place; a table naming a metric that is not declared fails
mypy, and tests/test_catalogue.py fails when a declared key is never produced or a produced key is not declared.

A key is the metric's dotted place in `score --json`'s "metrics": "accuracy", "vg.overall",
"by_operation.*.p". A "*" stands for a breakdown's own key (an operation, a stratum value), filled in order by
`path(*keys)`. A metric whose key has no dot and no "*" is a top-level result: a family's score() sets it; the
others are places inside a result, declared so that what reads them reads a declaration too.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Literal, TypeAlias

from core.schema import Rate, to_jsonable

# How a value shows: a rate in % (with k / n and its interval on hover), a difference in signed points, a
# count, a plain number, text, a mean ± sample SD, or a rate's (or a difference's) 95% interval alone.
Unit = Literal["rate", "diff", "count", "number", "text", "mean_sd", "interval", "interval_diff"]
UNITS: tuple[Unit, ...] = ("rate", "diff", "count", "number", "text", "mean_sd", "interval", "interval_diff")

# A result's value: a Rate, a number or a text, or a block of them (a breakdown, a nested analysis) in nested
# mappings and lists, as `core.schema.to_jsonable` writes it.
Value: TypeAlias = "Rate | int | float | str | bool | None | Mapping[str, Value] | list[Value]"


@dataclass(frozen=True)
class Metric:
    """One metric: where `score --json` puts it and how every output names, explains and shows it."""

    key: str                  # its dotted place in score --json's "metrics"; "*" = a breakdown's own key
    label: str                # the column header and chart label
    unit: Unit = "rate"
    counts: str = ""          # what k and n count ("items", "complete stems"); "" when it has no k / n
    section: str = ""         # where the paper defines it ("000 §3 Eq. 1"); "" for a product-only metric
    help: str = ""            # one line: what it is (the glossary and the column header's hover)
    term: str = ""            # the glossary term it defines ("" when it defines none; several may share one)
    name: str = ""            # its name in prose ("FQ1 group exact match"; "{} task": "*"'s keys in order);
    #                           the label where empty
    lower_is_better: bool = False  # a drop is an improvement (Compare colours it green)

    def __post_init__(self) -> None:
        if not self.key or any(not part for part in self.key.split(".")):
            raise ValueError(f"metric key {self.key!r}: dotted names, none empty")
        if self.unit not in UNITS:
            raise ValueError(f"metric {self.key!r}: unknown unit {self.unit!r}")

    @property
    def top(self) -> bool:
        """A top-level result (score() sets it), not a place inside one."""
        return "." not in self.key and "*" not in self.key

    @property
    def wildcards(self) -> int:
        return self.key.split(".").count("*")

    def path(self, *keys: str) -> tuple[str, ...]:
        """The metric's path in the metrics, each "*" filled with the next of `keys` in order."""
        parts = self.key.split(".")
        if len(keys) != self.wildcards:
            raise ValueError(f"metric {self.key!r} takes {self.wildcards} key(s), got {len(keys)}")
        fill = iter(keys)
        return tuple(next(fill) if p == "*" else p for p in parts)

    def of(self, metrics: Mapping[str, object] | None, *keys: str) -> object:
        """The node at the metric's path in a run's `score --json` metrics (None when it is absent)."""
        node: object = metrics
        for part in self.path(*keys):
            if not isinstance(node, Mapping) or part not in node:
                return None
            node = node[part]
        return node

    def matches(self, path: tuple[str, ...]) -> bool:
        """Whether `path` is this metric's path for some keys."""
        parts = self.key.split(".")
        return len(parts) == len(path) and all(p in ("*", q) for p, q in zip(parts, path, strict=True))

    def matches_prefix(self, path: tuple[str, ...]) -> bool:
        """Whether `path` is the start of one of this metric's paths (a block holding it)."""
        parts = self.key.split(".")[: len(path)]
        return len(parts) == len(path) and all(p in ("*", q) for p, q in zip(parts, path, strict=True))

    def under(self, block: Metric) -> bool:
        """Whether this metric's key lies inside `block`'s."""
        return self.key.startswith(block.key + ".")

    def keys_of(self, path: tuple[str, ...]) -> tuple[str, ...]:
        """The breakdown keys of `path`, one of this metric's paths."""
        return tuple(q for p, q in zip(self.key.split("."), path, strict=True) if p == "*")

    def title(self, *keys: str) -> str:
        """Its name in prose at the given breakdown keys."""
        return self.name.format(*keys) if self.name else self.label

    def at(self, *keys: str, label: str = "", unit: Unit | None = None) -> Placed:
        """The metric at a breakdown's keys, as a table column or cell (`label`: the column's own header;
        `unit`: how this place shows, where it differs from the metric's, e.g. its interval alone)."""
        self.path(*keys)  # the right number of keys
        return Placed(self, keys, label, unit)


@dataclass(frozen=True)
class Placed:
    """A metric at given breakdown keys: what a table column or a chart bar reads."""

    metric: Metric
    keys: tuple[str, ...] = ()
    label: str = ""
    unit: Unit | None = None

    @property
    def header(self) -> str:
        return self.label or self.metric.label

    @property
    def shown(self) -> Unit:
        return self.unit or self.metric.unit

    def path(self) -> tuple[str, ...]:
        return self.metric.path(*self.keys)


@dataclass(frozen=True)
class Term:
    """A word a screen shows that is not a metric of its own (MSS, the bootstrap's clusters, a paper code)."""

    name: str
    help: str
    section: str


Column: TypeAlias = "Metric | Placed"  # what a table column or a paired difference reads


def placed(col: Column) -> Placed:
    return col if isinstance(col, Placed) else Placed(col)


def key_of(col: Column) -> str:
    """The dotted JSON key of a metric at its breakdown keys ("tasks.NP")."""
    return ".".join(placed(col).path())


class Scores(dict[Metric, "Value"]):
    """One run's results, keyed by their declarations; `json()` gives `score --json`'s "metrics"."""

    def json(self) -> dict[str, object]:
        out: dict[str, object] = {}
        for metric, value in self.items():
            if not metric.top:
                raise ValueError(f"{metric.key!r} is a place inside a result, not a result: set its block")
            out[metric.key] = to_jsonable(value)
        return out


@dataclass(frozen=True)
class Catalogue:
    """A family's declared metrics and terms, in the order its docs and glossary list them."""

    metrics: tuple[Metric, ...]
    terms: tuple[Term, ...] = ()

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for m in self.metrics:
            if m.key in seen:
                raise ValueError(f"metric key {m.key!r} declared twice")
            seen.add(m.key)

    def __iter__(self) -> Iterator[Metric]:
        return iter(self.metrics)

    def find(self, path: tuple[str, ...]) -> Metric | None:
        """The most specific declaration matching `path` exactly (fewest wildcards), else None."""
        hits = [m for m in self.metrics if m.matches(path)]
        return min(hits, key=lambda m: m.wildcards) if hits else None

    def covering(self, path: tuple[str, ...]) -> Metric | None:
        """The declaration of `path` or of the nearest block holding it."""
        for n in range(len(path), 0, -1):
            found = self.find(path[:n])
            if found is not None:
                return found
        return None

    def glossary(self) -> dict[str, tuple[str, str]]:
        """term -> (what it means, where it is defined) of every declared term and every metric defining one."""
        out: dict[str, tuple[str, str]] = {}
        for m in self.metrics:
            if m.term and m.term not in out:
                out[m.term] = (m.help, m.section)
        for t in self.terms:
            out.setdefault(t.name, (t.help, t.section))
        return out


def leaf_paths(node: object, prefix: tuple[str, ...] = ()) -> Iterable[tuple[str, ...]]:
    """Every path of `score --json` metrics down to a rate, a number, a text or an empty block."""
    if isinstance(node, Mapping) and not ("value" in node and set(node) <= {"value", "k", "n", "ci", "reason", "sd"}):
        if not node:
            yield prefix
        for key, value in node.items():
            yield from leaf_paths(value, (*prefix, str(key)))
    else:
        yield prefix
