"""The app shell: header with the store, benchmark and run pickers, then one tab per module (SPEC §8)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import gradio as gr

from db.store import Store
from ui.context import Ctx

ASSETS = Path(__file__).resolve().parent.parent / "assets"

# (tab label, module under ui/, builder function); each builder takes the Ctx.
TABS = [
    ("Browse", "browse", "build_browse"),
    ("Compare", "compare", "build_compare"),
    ("Metrics", "metrics", "build_metrics"),
    ("Run", "run", "build_run"),
    ("Judge", "judge", "build_judge"),
    ("Calibration", "calibration", "build_calibration"),
    ("Data", "data", "build_data"),
]


def run_label(run: dict[str, Any]) -> str:
    """How a run is named in pickers: synthetic runs carry a visible badge."""
    return f"{run['name']} [synthetic]" if run.get("synthetic") else run["name"]


def benchmark_choices(store: Store) -> list[tuple[str, str]]:
    return [(f"{b['name']} ({b['family']}, {b['n_items']} items)", b["name"]) for b in store.benchmarks()]


def run_choices(store: Store, benchmark: str | None) -> list[tuple[str, str]]:
    if not benchmark:
        return []
    return [(run_label(r), r["name"]) for r in store.runs(benchmark) if r["config"].get("role") != "judge"]


def build(store: Store, auth_enabled: bool = False) -> gr.Blocks:
    """The whole UI over `store`."""
    benches = benchmark_choices(store)
    first = benches[0][1] if benches else None
    with gr.Blocks(title="Crosscheck") as demo:
        with gr.Row(elem_id="cc-header"):
            gr.Markdown(f"### Crosscheck\n<span class='cc-store'>store: {store.path}</span>", elem_id="cc-title")
            bench = gr.Dropdown(benches, value=first, label="Benchmark", scale=2, elem_id="cc-benchmark")
            runs0 = run_choices(store, first)
            runs = gr.Dropdown(runs0, value=[v for _, v in runs0[:2]], multiselect=True, label="Runs", scale=4,
                               elem_id="cc-runs")
            refresh = gr.Button("Refresh", scale=0, size="sm", elem_id="cc-refresh")
        ctx = Ctx(store=store, benchmark=bench, runs=runs, refresh=refresh, auth_enabled=auth_enabled)

        def on_benchmark(name: str | None) -> Any:
            choices = run_choices(store, name)
            return gr.update(choices=choices, value=[v for _, v in choices[:2]])

        bench.change(on_benchmark, bench, runs)

        def on_refresh(name: str | None, selected: list[str] | None) -> Any:
            benches = benchmark_choices(store)
            names = [v for _, v in benches]
            name = name if name in names else (names[0] if names else None)
            choices = run_choices(store, name)
            keep = [r for r in (selected or []) if r in {v for _, v in choices}]
            return gr.update(choices=benches, value=name), gr.update(choices=choices, value=keep)

        refresh.click(on_refresh, [bench, runs], [bench, runs])
        with gr.Tabs(elem_id="cc-tabs"):
            for label, module, builder in TABS:
                with gr.Tab(label, id=module, elem_id=f"cc-tab-{module}"):
                    getattr(importlib.import_module(f"ui.{module}"), builder)(ctx)
    return demo


def launch(store: Store, host: str = "127.0.0.1", port: int = 7860, auth_file: Path | None = None,
           prevent_thread_lock: bool = False) -> Any:
    """Serve the UI; only the store's image folders are served as files."""
    auth = None
    if auth_file is not None:
        from ui.auth import load_auth

        auth = load_auth(auth_file)
    demo = build(store, auth_enabled=auth is not None)
    store.images_dir.mkdir(parents=True, exist_ok=True)
    store.thumbs_dir.mkdir(parents=True, exist_ok=True)
    css = "\n".join((ASSETS / f).read_text(encoding="utf-8") for f in ("style.css", "views.css")
                    if (ASSETS / f).exists()) or None
    demo.queue(default_concurrency_limit=8)
    return demo.launch(server_name=host, server_port=port, auth=auth, allowed_paths=[str(store.images_dir),
                       str(store.thumbs_dir)], css=css, prevent_thread_lock=prevent_thread_lock, quiet=True,
                       max_file_size="200mb", footer_links=[])
