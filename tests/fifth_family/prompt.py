"""The parity family's prompt strategy, "parity-hint": the question with a line telling the model whether the
item is the odd or the even one of its pair; its option says whether the hint is truthful or misleading (the
other parity). The run config records how many items of each parity the run asks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from core.prompts import answer_instruction
from core.runners.base import Dialogue, ItemView, PromptContext, text_part

CHOICES = ("truthful", "misleading")
OTHER = {"odd": "even", "even": "odd"}


def parity_hint(ctx: PromptContext) -> Dialogue:
    kind = ctx.task.view.kind
    told = OTHER[kind] if ctx.option == "misleading" else kind
    text = f"This is the {told} item of its pair.\n{ctx.q}\n\n{answer_instruction('letter', ctx.task.view.letters)}"
    return (yield ctx.call(ctx.imgs + [text_part(text)], "answer", "letter"))


def run_config(items: pd.DataFrame, views: Sequence[ItemView], option: str | None, seed: int) -> dict[str, Any]:
    counts = {kind: sum(v.kind == kind for v in views) for kind in sorted(OTHER)}
    return {"parity_hint_items": counts}
