"""The Data tab (placeholder until its issue lands)."""

from __future__ import annotations

import gradio as gr

from ui.context import Ctx


def build_data(ctx: Ctx) -> None:
    gr.Markdown("The Data tab is coming in a later release.")
