"""Browse's "why" filters (issue #38, docs/UI.md "Browse"): the list narrowed to the groups of one failure mode of a
run ("Why it fails", ui/why_panel.py) or of one item-health list ("Item health", ui/health_panel.py).

A filter is a `Focus`, held by Browse in a State as its plain dict (`as_dict`) and carried by links as the keys
`mode`, `mode_run`, `mode_vs` and `health` (ui.links). Its groups come from the same cached results the panels
show (ui.views.cache), so the list, the review keys and the panel agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from core.errors import CrosscheckError
from core.item_health import LISTS
from db.store import Store

HEALTH_LABELS = {"suspect_gold": "suspect gold letters", "unstable": "unstable items", "ambiguous": "ambiguous items",
                 "negative_discrimination": "negatively discriminating items",
                 "duplicates": "items with duplicate images"}


@dataclass(frozen=True)
class Focus:
    """A failure mode (`run`, `other`: the run it lost against, or "", `mode`: its id) or an item-health list
    (`health`: a name of core.item_health.LISTS) of benchmark `bench`."""

    bench: str = ""
    run: str = ""
    other: str = ""
    mode: int | None = None
    health: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def of(cls, value: Mapping[str, Any] | None) -> Focus | None:
        """The Focus of a State's dict (None for none, or for one that names nothing)."""
        if not value:
            return None
        mode = value.get("mode")
        focus = cls(str(value.get("bench") or ""), str(value.get("run") or ""), str(value.get("other") or ""),
                    int(mode) if isinstance(mode, int) or (isinstance(mode, str) and mode.isdigit()) else None,
                    str(value.get("health") or ""))
        return focus if (focus.run and focus.mode is not None) or focus.health in LISTS else None

    @classmethod
    def of_link(cls, bench: str | None, mode: str, mode_run: str, mode_vs: str, health: str) -> Focus | None:
        """The Focus a link's keys name (ui.links.View)."""
        return cls.of({"bench": bench or "", "run": mode_run, "other": mode_vs, "mode": mode, "health": health})

    def link_keys(self) -> dict[str, str]:
        """The link keys of this filter (ui.links.View's `mode`, `mode_run`, `mode_vs`, `health`)."""
        if self.health:
            return {"mode": "", "mode_run": "", "mode_vs": "", "health": self.health}
        return {"mode": str(self.mode), "mode_run": self.run, "mode_vs": self.other, "health": ""}


def groups(store: Store, bench: str, focus: Focus) -> tuple[list[str], str]:
    """(the groups of the filter, in the order the panel lists them; the words the list's summary says it with).
    A mode its run no longer has (the run changed) gives no group and says so."""
    from ui.views import cache

    if focus.health:
        health = cache.item_health(store, bench)
        found = health.groups_of(focus.health)
        return found, f"{HEALTH_LABELS.get(focus.health, focus.health)} (Item health, {len(found)} groups)"
    try:
        modes = cache.failure_modes(store, bench, focus.run, focus.other or None)
    except CrosscheckError as exc:
        return [], f"failure mode {focus.mode} of run {focus.run!r}: {exc}"
    mode = modes.mode(focus.mode) if focus.mode is not None else None
    if mode is None:
        return [], f"failure mode {focus.mode} of run {focus.run!r}, which it no longer has"
    vs = f", lost against {focus.other!r}" if focus.other else ""
    return list(mode.groups), f"failure mode “{mode.label}” of run {focus.run!r}{vs} ({len(mode.groups)} groups)"
