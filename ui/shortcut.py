"""The Metrics tab's SPUR shortcut-filter block (001 §2.3): the filter table with a picker of the text-only model.

The filter is counted per text-only model (`score` gives every model's block under `shortcut.by_model`); the
picker shows every model's row, one model's row, or, only when asked, the pool of all text-only models in a
row labelled "pooled: a + b" (`score --shortcut-pool`). The pooled numbers come from the same
core.families.spur.metrics.shortcut_summary as the CLI's.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import gradio as gr

from core.errors import CrosscheckError
from core.families.spur import metrics as spur
from core.families.spur.tables import spur_shortcut
from core.report_tables import RunScore, Table, get
from core.schema import to_jsonable
from db.store import Store
from ui.handlers import user_error
from ui.tables import SORT_JS, table_files, table_html, table_html_file

EVERY = ""
POOL = "__pooled__"


def choices(runs: list[RunScore]) -> list[tuple[str, str]]:
    """The picker's choices: every model (default), each text-only model, and the pool when there are two."""
    models = list(get(runs[0].metrics, ("shortcut", "models")) or []) if runs else []
    out = [("every text-only model (one row each)", EVERY), *[(m, m) for m in models]]
    if len(models) >= 2:
        out.append(("pooled: all text-only models (labelled)", POOL))
    return out


def shortcut_table(store: Store, benchmark: str, runs: list[RunScore], choice: str | None) -> Table:
    """The filter table for one picker choice."""
    if choice == POOL and runs:
        text_runs = spur.text_only_runs(store.run_data(r["name"]) for r in store.runs(benchmark, with_counts=False))
        pooled = spur.shortcut_summary(store.items_frame(benchmark), text_runs, pool=True)
        rs = replace(runs[0], metrics={**runs[0].metrics, "shortcut": to_jsonable(pooled)})
        return spur_shortcut([rs])
    return spur_shortcut(runs, choice or None)


def shortcut_block(store: Store, benchmark: str, runs: list[RunScore], table: Table, prefix: str) -> None:
    """Picker, table and its CSV / LaTeX / HTML downloads (inside the Metrics tab's render)."""
    picker = gr.Dropdown(choices(runs), value=EVERY, label="Shortcut filter model (001 §2.3: one model's "
                         "randomized text-only trials)", elem_id="cc-shortcut-model", interactive=True)
    out = gr.HTML(table_html(table), js_on_load=SORT_JS, elem_classes=["cc-metric-table"], elem_id="cc-shortcut")
    csv_path, tex_path = table_files(table, prefix)
    html_path = table_html_file(table, prefix)
    with gr.Row(elem_classes=["cc-exports"]):
        csv = gr.DownloadButton("CSV", value=str(csv_path), size="sm", scale=0, min_width=70,
                                elem_classes=["cc-dl-csv"])
        tex = gr.DownloadButton("LaTeX", value=str(tex_path), size="sm", scale=0, min_width=70,
                                elem_classes=["cc-dl-tex"])
        page = gr.DownloadButton("HTML", value=str(html_path), size="sm", scale=0, min_width=70,
                                 elem_classes=["cc-dl-html"])

    def on_pick(choice: str | None) -> tuple[Any, Any, Any, Any]:
        try:
            t = shortcut_table(store, benchmark, runs, choice)
        except CrosscheckError as exc:
            raise user_error(str(exc)) from exc
        name = prefix + ("_pooled" if choice == POOL else f"_{choice}" if choice else "")
        c, x = table_files(t, name)
        return table_html(t), str(c), str(x), str(table_html_file(t, name))

    picker.change(on_pick, picker, [out, csv, tex, page], api_visibility="private")
