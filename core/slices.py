"""Slices: where a run fails (issue #23). Every value of every stratum against the rest of its split.

A slice is the items of one split whose field has one value (depth 1), or whose two fields have one value each
(depth 2); an item without the field is in no slice of it (a missing value is no slice, so it is neither tested
nor counted in BH's family), and in the rest of each. Fields: `kind` and `variant` (when they vary), `n_images`, every scalar meta field with 2-50 distinct
values (core.groups.strata_fields), and whatever extra per-item columns the caller adds (a group's tags).

For each slice with at least `min_groups` groups on both sides:

- the run's accuracy k / n in the slice and in the rest of the split; an item counts when the run answered it,
  or always when the family counts an unanswered item as wrong (Family.groups.unanswered_is_wrong, FrameEvidence);
  `correct` is the family's own item outcome (core.groups.item_outcomes, the Browse marks);
- the difference slice - rest with its 95% percentile cluster-bootstrap interval: clusters are the groups, and
  the resampled group sums come from core.stats.resampled_sums, the very draws of every other interval for the
  same groups, draws and seed (a group with items on both sides moves both sides together);
- a two-sided bootstrap p-value of "no difference" (core.stats.bootstrap_p): p = min(1, 2 min((b_le + 1) / (B + 1), (b_ge + 1) / (B + 1)))
  over the B draws where both sides are defined, b_le / b_ge the draws with a difference <= 0 / >= 0 (Davison &
  Hinkley 1997, §4.4: the +1 keeps p > 0 with finitely many draws); p < 0.05 exactly when 0 lies outside the
  interval, up to those +1s;
- Benjamini-Hochberg q over every slice tested (both depths together).

With `other` (a second run of the same benchmark) each slice compares the two runs on the same items instead:
`accuracy` is this run's, `other` the other run's, the difference this - other, paired by group; sorted the
same way, so the slices where this run lost most come first. Sorted worst first: by the difference, then q.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from core import stats
from core.errors import MetricUndefined
from core.groups import item_stratum, strata_fields
from core.schema import Rate, RunData

MAX_VALUES = 50        # a field with more distinct values is an identifier, not a stratum
DEFAULT_DRAWS = 2_000  # the first 2,000 draws of the stream every interval uses (20,000 for a headline rate)
DEFAULT_MIN_GROUPS = 5
_CHUNK = 512           # slices resampled per pass (bounds the draws x slices matrices)
_SEP = " & "


@dataclass(frozen=True, slots=True)
class Slice:
    """One slice and its statistics (see the module docstring)."""

    fields: tuple[str, ...]
    values: tuple[str, ...]
    n_items: int
    n_groups: int
    accuracy: Rate
    rest: Rate
    other: Rate | None
    diff: float | None
    ci: tuple[float, float] | None
    p: float | None
    q: float | None = None

    @property
    def field(self) -> str:
        return _SEP.join(self.fields)

    @property
    def value(self) -> str:
        return _SEP.join(self.values)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "field": self.field, "value": self.value, "fields": list(self.fields), "values": list(self.values),
            "n_items": self.n_items, "n_groups": self.n_groups, "accuracy": _rate_json(self.accuracy),
            "rest": _rate_json(self.rest), "diff": self.diff, "ci": list(self.ci) if self.ci else None,
            "p": self.p, "q": self.q,
        }
        if self.other is not None:
            out["other"] = _rate_json(self.other)
        return out


def _rate_json(r: Rate) -> dict[str, Any]:
    return {"k": r.k, "n": r.n, "value": r.value}


def slice_fields(items: pd.DataFrame, extra: Mapping[str, pd.Series] | None = None,
                 only: Sequence[str] | None = None) -> dict[str, pd.Series]:
    """field -> the value of each item (text, None when absent), for every field a slice may use; `only`
    keeps the named ones (an unknown name is an error naming the fields there are)."""
    out: dict[str, pd.Series] = {}
    for col in ("kind", "variant"):
        vals = pd.Series([None if pd.isna(v) or v == "" else str(v) for v in items[col]], dtype=object)
        if 2 <= vals.nunique() <= MAX_VALUES:
            out[col] = vals
    for name in strata_fields(items, max_values=MAX_VALUES):
        out.setdefault(name, item_stratum(items, name).reset_index(drop=True))
    for name, vals in (extra or {}).items():  # the caller's own fields (a tag: "tagged" or None) are kept as given
        out[name] = pd.Series(list(vals), dtype=object)
    if only:
        missing = [f for f in only if f not in out]
        if missing:
            known = ", ".join(out) or "none"
            raise MetricUndefined(f"no stratum {', '.join(map(repr, missing))} to slice by (fields with 2-{MAX_VALUES} "
                                  f"values here: {known})")
        out = {f: out[f] for f in only}
    return {k: v.reset_index(drop=True) for k, v in out.items()}


def _candidates(fields: Mapping[str, pd.Series], depth: int) -> list[tuple[tuple[str, ...], tuple[str, ...], np.ndarray]]:
    """(fields, values, item mask) of every slice up to `depth` fields."""
    out: list[tuple[tuple[str, ...], tuple[str, ...], np.ndarray]] = []
    codes: dict[str, tuple[np.ndarray, list[str]]] = {}
    for name, vals in fields.items():
        # an item without the field (None, or NaN where pandas made one of it) is in no slice of that field
        code, cats = pd.factorize(pd.Series([None if pd.isna(v) else str(v) for v in vals], dtype=object),
                                  sort=True, use_na_sentinel=True)
        code = np.asarray(code, dtype=np.int64)
        names = [str(c) for c in cats]
        codes[name] = (code, names)
        out += [((name,), (v,), code == i) for i, v in enumerate(names)]
    if depth >= 2:
        for a, b in combinations(fields, 2):
            (ca, va), (cb, vb) = codes[a], codes[b]
            both = (ca >= 0) & (cb >= 0)
            pairs = np.unique(np.stack([ca[both], cb[both]], axis=1), axis=0)
            out += [((a, b), (va[i], vb[j]), (ca == i) & (cb == j)) for i, j in pairs.tolist()]
    return out


def find_slices(items: pd.DataFrame, outcome: pd.DataFrame, *, other: pd.DataFrame | None = None,
                fields: Mapping[str, pd.Series] | None = None, depth: int = 1,
                min_groups: int = DEFAULT_MIN_GROUPS, count_unanswered: bool = False,
                draws: int = DEFAULT_DRAWS, seed: int = stats.DEFAULT_SEED) -> list[Slice]:
    """Every slice of `items` (one split) with its statistics, worst first (module docstring).

    `outcome` (and `other`) hold one row per row of `items`, in the same order: `answered`, `correct` (bools)."""
    if depth not in (1, 2):
        raise MetricUndefined(f"depth must be 1 or 2, got {depth}")
    if len(outcome) != len(items) or (other is not None and len(other) != len(items)):
        raise ValueError("outcome frames must have one row per item, in the items' order")
    fields = slice_fields(items) if fields is None else fields
    groups, gcode = np.unique(items["group_id"].astype(str).to_numpy(), return_inverse=True)
    n_clusters = len(groups)
    counted = _counted(outcome, count_unanswered)
    if other is not None:
        counted = counted & _counted(other, count_unanswered)
    hit = outcome["correct"].to_numpy(dtype=bool) & counted
    hit_o = other["correct"].to_numpy(dtype=bool) & counted if other is not None else None
    cands = []
    for names, values, mask in _candidates(fields, depth):
        m = mask & counted
        g_in = int(np.count_nonzero(np.bincount(gcode[m], minlength=n_clusters)))
        g_out = int(np.count_nonzero(np.bincount(gcode[counted & ~mask], minlength=n_clusters)))
        if g_in >= min_groups and (other is not None or g_out >= min_groups):
            cands.append((names, values, m, g_in))
    out: list[Slice] = []
    # inside a context whose DrawCache builds the count matrix W once, whole (one float32 matmul per chunk: the
    # block-wise default multiplies 57-draw slabs, 10x slower for a hundred columns); the same draws either way
    context = stats.current_context() or stats.ScoringContext(draws=stats.DrawCache(weights={}))
    with context.active():
        for start in range(0, len(cands), _CHUNK):
            out += _score_chunk(cands[start:start + _CHUNK], gcode, n_clusters, counted, hit, hit_o, draws, seed)
    qs = iter(stats.bh_q([s.p for s in out if s.p is not None]))  # q over every slice that has a p, in order
    out = [replace(s, q=next(qs)) if s.p is not None else s for s in out]
    return sorted(out, key=lambda s: (np.inf if s.diff is None else s.diff, 1.0 if s.q is None else s.q,
                                      -s.n_items, s.field, s.value))


def _counted(outcome: pd.DataFrame, count_unanswered: bool) -> np.ndarray:
    answered = outcome["answered"].to_numpy(dtype=bool)
    return np.ones(len(answered), dtype=bool) if count_unanswered else answered


def _score_chunk(cands: list[tuple[tuple[str, ...], tuple[str, ...], np.ndarray, int]], gcode: np.ndarray,
                 n_clusters: int, counted: np.ndarray, hit: np.ndarray, hit_o: np.ndarray | None,
                 draws: int, seed: int) -> list[Slice]:
    """The statistics of a chunk of slices from one pass over the draws."""
    def per_group(weights: np.ndarray) -> np.ndarray:
        return np.bincount(gcode, weights=weights.astype(float), minlength=n_clusters)

    masks = [m for _, _, m, _ in cands]
    k_in = np.column_stack([per_group(hit & m) for m in masks])
    n_in = np.column_stack([per_group(m) for m in masks])
    cols = [k_in, n_in]
    if hit_o is None:
        cols.append(np.column_stack([per_group(hit), per_group(counted)]))
    else:
        cols.append(np.column_stack([per_group(hit_o & m) for m in masks]))
    sums = stats.resampled_sums(np.hstack(cols), draws=draws, seed=seed)
    s = len(cands)
    sk, sn = sums[:, :s], sums[:, s:2 * s]
    with np.errstate(invalid="ignore", divide="ignore"):
        if hit_o is None:
            tk, tn = sums[:, 2 * s:2 * s + 1], sums[:, 2 * s + 1:2 * s + 2]
            d = sk / sn - (tk - sk) / (tn - sn)
        else:
            d = (sk - sums[:, 2 * s:3 * s]) / sn
    lo, hi = stats.percentile_interval(d)
    p = stats.bootstrap_p(d)
    out = []
    total_k, total_n = int(hit.sum()), int(counted.sum())
    for j, (names, values, _, g_in) in enumerate(cands):
        k, n = int(k_in[:, j].sum()), int(n_in[:, j].sum())
        acc = Rate.of(k, n, "items")
        if hit_o is None:
            rest, oth = Rate.of(total_k - k, total_n - n, "items"), None
            diff = None if acc.value is None or rest.value is None else acc.value - rest.value
        else:
            ko = int(cols[2][:, j].sum())
            oth = Rate.of(ko, n, "items")
            rest = Rate.of(total_k - k, total_n - n, "items")
            diff = None if acc.value is None or oth.value is None else acc.value - oth.value
        ok = diff is not None and not np.isnan(lo[j])
        out.append(Slice(fields=names, values=values, n_items=n, n_groups=g_in, accuracy=acc, rest=rest, other=oth,
                         diff=diff, ci=(float(lo[j]), float(hi[j])) if ok else None,
                         p=float(p[j]) if ok and not np.isnan(p[j]) else None))
    return out


def slices_of_run(items: pd.DataFrame, run: RunData, *, other: RunData | None = None, split: str | None = "test",
                  by: Sequence[str] | None = None, depth: int = 1, min_groups: int = DEFAULT_MIN_GROUPS,
                  draws: int = DEFAULT_DRAWS, extra: Mapping[str, pd.Series] | None = None
                  ) -> tuple[str, list[Slice]]:
    """(the split's label, the slices of `run` on it): the items narrowed to the split (core.scoring's rule),
    the family's item outcomes, its rule for unanswered items. `extra`: per-item columns of all `items` rows
    (e.g. tags) offered as fields too."""
    from core import families
    from core.groups import item_outcomes
    from core.scoring import resolve_split, split_items

    if other is not None and other.benchmark != run.benchmark:
        raise MetricUndefined(f"runs {run.name!r} and {other.name!r} are of different benchmarks")
    chosen, label = resolve_split(items, split)
    if chosen is not None:
        mask = (items["split"] == chosen).to_numpy(dtype=bool)
        if not mask.any():
            raise MetricUndefined(f"no items in split {chosen!r}")
        extra = {k: pd.Series(list(v), dtype=object)[mask].reset_index(drop=True) for k, v in (extra or {}).items()}
        items = split_items(items, chosen)
    fields = slice_fields(items, extra, by)
    out = item_outcomes(run.family, items, run)
    out_o = item_outcomes(run.family, items, other) if other is not None else None
    unanswered = families.get(run.family).groups.unanswered_is_wrong
    return label, find_slices(items, out, other=out_o, fields=fields, depth=depth, min_groups=min_groups,
                              count_unanswered=unanswered, draws=draws)
