"""The parity family's view: the generic group view in a frame of its own (so a test sees this module drew it),
and the generic Metrics charts."""

from __future__ import annotations

from typing import Any

from ui.views import FamilyView, generic


def render(store: Any, g: Any, boxes: bool = True) -> str:
    return f'<div class="cc-parity">{generic.render(store, g, boxes)}</div>'


VIEW = FamilyView(render, generic.VIEW.charts)
