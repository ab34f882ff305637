"""The Compare tab (placeholder until its issue lands)."""

from __future__ import annotations

import gradio as gr

from ui.context import Ctx


def build_compare(ctx: Ctx) -> None:
    gr.Markdown("The Compare tab is coming in a later release.")
