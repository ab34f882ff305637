"""The parity family's view: the generic group view in a frame of its own (so a test sees this module drew it),
and the generic Metrics sections with one more, its parity-gap table (tables.GAP_TABLE)."""

from __future__ import annotations

from typing import Any

from tests.fifth_family.tables import GAP_TABLE
from ui.charts import FamilyCharts
from ui.views import FamilyView, generic


def render(store: Any, g: Any, boxes: bool = True) -> str:
    return f'<div class="cc-parity">{generic.render(store, g, boxes)}</div>'


VIEW = FamilyView(render, FamilyCharts([*generic.SECTIONS, ("Parity", [GAP_TABLE], [])], generic.charts))
