"""What every tab receives: the store, the header pickers it follows, and the store-changed signal; the header
pickers' choices (`benchmark_choices`, `run_choices`) and how a refreshed picker keeps its value."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import gradio as gr

    from db.store import Store


@dataclass
class Ctx:
    """The store, the header's benchmark and run pickers, and how pickers stay fresh.

    `page` is the whole gr.Blocks (its `load` is the page-load trigger), `tabs` the shell's tab strip and `tab`
    the tab the builder being called fills (the shell sets both before each builder; None outside a strip).
    A picker that lists store contents registers its refresh with `ctx.on_refresh(fn, inputs, outputs)`; the
    shell runs every registered refresh on page load, on the header's Refresh button, and whenever
    `ctx.changed` (a gr.State holding db.catalog.catalog_signature) takes a new value. A handler that adds a
    benchmark, a run or a sample lists `ctx.changed` among its outputs and returns `ctx.signature()`.
    """

    store: Store
    benchmark: gr.Dropdown
    runs: gr.Dropdown
    refresh: gr.Button
    changed: gr.State
    page: gr.Blocks
    auth_enabled: bool = False
    tabs: gr.Tabs | None = None
    tab: gr.Tab | None = None
    refreshers: list[tuple[Callable[..., Any], list[Any], list[Any]]] = field(default_factory=list)
    # the view a link opened (ui.links: a gr.State of View.as_dict(), None without one) and the components a
    # link sets or the address bar follows, registered by the tabs by name ("browse.group", "compare.a", ...)
    link: Any = None
    parts: dict[str, Any] = field(default_factory=dict)

    def on_refresh(self, fn: Callable[..., Any], inputs: list[Any], outputs: list[Any]) -> None:
        self.refreshers.append((fn, inputs, outputs))

    def signature(self) -> str:
        from db.catalog import catalog_signature

        return catalog_signature(self.store)


def run_label(run: dict[str, Any]) -> str:
    """How a run is named in pickers: synthetic runs carry a visible badge."""
    return f"{run['name']} [synthetic]" if run.get("synthetic") else run["name"]


def benchmark_choices(store: Store) -> list[tuple[str, str]]:
    return [(f"{b['name']} ({b['family']}, {b['n_items']} items)", b["name"]) for b in store.benchmarks()]


def run_choices(store: Store, benchmark: str | None) -> list[tuple[str, str]]:
    if not benchmark:
        return []
    return [(run_label(r), r["name"]) for r in store.runs(benchmark, with_counts=False)
            if r["config"].get("role") != "judge"]


def keep(value: Any, choices: list[Any], default: Any = None) -> Any:
    """`value` when it is still among `choices` (values or (label, value) pairs), else `default`."""
    values = [c[1] if isinstance(c, tuple) else c for c in choices]
    return value if value in values else default


def refreshed(current: Any, choices: list[Any], default: Any = None) -> Any:
    """The update for a picker whose choices were read again. Its value is sent only when it must change (the
    current one is gone, or there was none and `default` is one), so a refresh that was on its way while
    the user picked something never undoes the pick."""
    import gradio as gr

    if current not in (None, "", []) and keep(current, choices) == current:
        return gr.update(choices=choices)
    if current in (None, "", []) and default in (None, "", []):
        return gr.update(choices=choices)
    return gr.update(choices=choices, value=default)
