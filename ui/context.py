"""What every tab receives: the store and the header pickers it follows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import gradio as gr

    from db.store import Store


@dataclass
class Ctx:
    """The store, the header's benchmark and run pickers, and hooks run after data changes.

    A tab that changes the store (a new run, an import, a label) calls `ctx.notify_changed()` in its
    handler's outputs chain via `ctx.refresh_outputs`; tabs that show store contents register a refresh
    function with `ctx.on_refresh(fn, outputs)` so the header's Refresh button and data changes update them.
    """

    store: Store
    benchmark: gr.Dropdown
    runs: gr.Dropdown
    refresh: gr.Button
    auth_enabled: bool = False
    refreshers: list[tuple[Any, list[Any]]] = field(default_factory=list)

    def on_refresh(self, fn: Any, outputs: list[Any]) -> None:
        self.refreshers.append((fn, outputs))
