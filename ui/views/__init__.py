"""Group views (SPEC §8): one module per family, all built from `load_group` and the helpers in common.

`render_group(store, benchmark, group_id, selected, detail, boxes)` is the one entry point the tabs call;
it reads only the group's rows (db.browse), so it stays fast on large stores. It draws the runs picked (and the
run in detail), and the benchmark's other runs only when they are few (at most OTHER_RUNS): on a store of 1,000
runs a view reads and draws what it shows, and names how many runs it left out.

The view half of a family is one typed `FamilyView` that its view module (the family's `Family.view`, e.g.
"ui.views.stembind") builds once at its end as `VIEW`: its group view (the group's data, as ui/views/common.py
prepares it, laid out by its template ui/templates/views/<name>.html), its Metrics charts, the per-run facts
its view shows beside the marks (StemBind: the stem's category) and whether it draws panel boxes; `view_of`
is the one lookup.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pandas as pd
from markupsafe import Markup

from core import families
from core import groups as core_groups
from core.errors import CrosscheckError
from db import browse as dbb
from db import predictions
from ui.charts import FamilyCharts
from ui.templating import render
from ui.views.common import RunView, message

OTHER_RUNS = 24  # the benchmark's runs besides the picked ones that a group view draws (all, or none when more)


class Render(Protocol):
    """A family's group view: the HTML of one group (`boxes`: draw the panel boxes where the view has them)."""

    def __call__(self, store: Any, g: Group, boxes: bool = True) -> str: ...


class RunSummary(Protocol):
    """What a family's view shows of one run beside its marks, from the group's items and the run's outcomes."""

    def __call__(self, records: Sequence[Mapping[str, Any]], outcomes: Mapping[str, tuple[bool, bool]]
                 ) -> dict[str, Any]: ...


@dataclass(frozen=True)
class FamilyView:
    """Everything the UI knows about one family's looks: `VIEW` at the end of its module in ui/views/."""

    render: Render
    charts: FamilyCharts
    run_summary: RunSummary | None = None
    panel_boxes: bool = False  # the Browse tab offers its "Panel boxes" toggle (SPUR's figure panels)


@functools.cache
def view_of(family: str) -> FamilyView:
    """The view of `family` (`Family.view`; ui.views.generic unless the family names its own)."""
    name = families.get(family).view
    found = importlib.import_module(name).VIEW
    if not isinstance(found, FamilyView):
        raise TypeError(f"{name}.VIEW must be a ui.views.FamilyView (the view of family {family!r})")
    return found


@dataclass
class Group:
    """Everything a family view needs about one group."""

    benchmark: str
    family: str
    group_id: str
    items: pd.DataFrame
    runs: list[RunView]              # the runs drawn (picked, in detail, the others when few), in store order
    selected: list[RunView]          # the runs picked in the header (answers beside each question)
    detail: RunView | None           # the run shown in detail
    flags: list[dict[str, Any]] = field(default_factory=list)  # trace flags of the detail run
    sizes: dict[str, tuple[int, int]] = field(default_factory=dict)
    hidden: int = 0                  # runs of the benchmark not drawn (more than OTHER_RUNS besides the picked)

    def records(self) -> list[dict[str, Any]]:
        return self.items.to_dict("records")


def load_group(store: Any, benchmark: str, group_id: str, selected: list[str] | None = None,
               detail: str | None = None) -> Group | None:
    items = dbb.group_items(store, benchmark, group_id)
    if items.empty:
        return None
    family = store.benchmark_family(benchmark)
    named = [*(selected or []), *([detail] if detail else [])]
    others, hidden = dbb.other_runs(store, benchmark, named, OTHER_RUNS)
    records = sorted([*dbb.run_records(store, benchmark, named), *others], key=lambda r: int(r["id"]))
    pks = [int(p) for p in items["pk"]]
    scoped = items.drop(columns="pk")
    recs = scoped.to_dict("records")
    preds = predictions.group_prediction_records(store, [r["id"] for r in records], pks)
    summarise = view_of(family).run_summary
    views = []
    for rec in records:
        rv = RunView(record=rec, preds=preds.get(rec["id"], []))
        out = core_groups.group_outcomes(family, recs, rv.preds)
        rv.answered = {k: a for k, (a, _) in out.items()}
        rv.correct = {k: c for k, (_, c) in out.items()}
        if summarise is not None:
            rv.summary = summarise(recs, out)
        views.append(rv)
    by_name = {v.name: v for v in views}
    chosen = [by_name[n] for n in (selected or []) if n in by_name]
    det = by_name.get(detail) if detail else None
    if det is None:
        det = chosen[0] if chosen else next((v for v in views if v.answered_items()), None)
    flags = dbb.trace_flags(store, det.name, pks) if det is not None else []
    hashes = sorted({h for imgs in items["images"] for h in imgs})
    return Group(benchmark=benchmark, family=family, group_id=group_id, items=scoped, runs=views, selected=chosen,
                 detail=det, flags=flags, sizes=dbb.image_sizes(store, hashes), hidden=hidden)


def render_group(store: Any, benchmark: str | None, group_id: str | None, selected: list[str] | None = None,
                 detail: str | None = None, boxes: bool = True) -> str:
    """The HTML of one group's view (a short message when nothing is chosen or the group is unknown)."""
    if not benchmark or not group_id:
        return message("Click a group in the list to open it here.")
    try:
        g = load_group(store, benchmark, group_id, selected, detail)
    except CrosscheckError as exc:
        return message(str(exc))
    if g is None:
        return message(f"No group {group_id!r} in benchmark {benchmark!r}.")
    # the family view's own template wrote `view` (its data escaped there)
    view = Markup(view_of(g.family).render(store, g, boxes=boxes))
    return render("views/group.html", group_id=group_id, view=view)
