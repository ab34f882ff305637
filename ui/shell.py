"""The app shell: header with the store, benchmark and run pickers, then one tab per module (SPEC §8)."""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gradio as gr

from db.catalog import catalog_signature
from db.store import Store
from ui import links
from ui.api import build_api
from ui.auth import is_local_request
from ui.context import Ctx, refreshed
from ui.glossary import glossary_html
from ui.scores import start_scoring_workers_soon
from ui.serving import cache_pruning, make_app, run
from ui.templating import macro

log = logging.getLogger(__name__)

ASSETS = Path(__file__).resolve().parent.parent / "assets"


def theme() -> Any:
    """Gradio's default theme with every text at least 3:1 against its background (tests/ui/test_ui_themes.py):
    the default's white-on-orange primary buttons and orange selected tabs (2.8:1) take the darker orange, and
    its grey help texts (1.9:1 on white) a darker grey."""
    return gr.themes.Default().set(
        color_accent="*primary_700",
        button_primary_background_fill="*primary_700", button_primary_background_fill_hover="*primary_800",
        button_primary_background_fill_dark="*primary_700", button_primary_background_fill_hover_dark="*primary_800",
        body_text_color_subdued="*neutral_600", body_text_color_subdued_dark="*neutral_400",
        block_info_text_color="*neutral_600", block_info_text_color_dark="*neutral_400")

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
    return [(run_label(r), r["name"]) for r in store.runs(benchmark, with_counts=False)
            if r["config"].get("role") != "judge"]


def header_html(store: Store, user: str | None, local: bool) -> str:
    """Who is signed in (with a log-out link) and which store this is: its full path only for a browser on the
    serving machine, its file name for everyone else (docs/HOSTING.md)."""
    return macro("shell.html", "header")(str(store.path) if local else store.path.name, user or "")


def request_header(store: Store, request: gr.Request | None) -> str:
    user = getattr(request, "username", None) if request is not None else None
    client = getattr(request, "client", None)
    host = getattr(client, "host", None)
    headers = dict(getattr(request, "headers", None) or {})
    return header_html(store, str(user) if user else None, is_local_request(host, headers))


def build(store: Store, auth_enabled: bool = False, delete_cache: tuple[int, int] | None = None) -> gr.Blocks:
    """The whole UI over `store`. `delete_cache` (frequency_s, age_s): how Gradio prunes the copies it keeps
    of every download and upload (default ui.serving.cache_pruning(): CROSSCHECK_GRADIO_CACHE, else every
    hour, files older than a day)."""
    benches = benchmark_choices(store)
    first = benches[0][1] if benches else None
    prune = delete_cache or cache_pruning()
    with gr.Blocks(title="Crosscheck", analytics_enabled=False, delete_cache=prune) as demo:
        with gr.Row(elem_id="cc-header"):
            with gr.Column(scale=1, min_width=220, elem_id="cc-title"):
                gr.Markdown("### Crosscheck")
                whoami = gr.HTML("", elem_id="cc-whoami-box")
            bench = gr.Dropdown(benches, value=first, label="Benchmark", scale=2, min_width=360, elem_id="cc-benchmark")
            runs0 = run_choices(store, first)
            # a custom value passes: handlers of the page load read the runs as the page opened, and a link may
            # have switched the header to another benchmark's runs by the time they are answered (ui.links)
            runs = gr.Dropdown(runs0, value=[v for _, v in runs0[:2]], multiselect=True, label="Runs", scale=4,
                               allow_custom_value=True,
                               elem_id="cc-runs")
            with gr.Column(scale=0, min_width=110):
                refresh = gr.Button("Refresh", size="sm", elem_id="cc-refresh")
                copy = gr.Button("Copy link", size="sm", elem_id="cc-copy-link")
        note = gr.HTML("", elem_id="cc-link-note")  # what a link named that the store lacks (ui.links)
        address = gr.Textbox(visible=False, elem_id="cc-address")  # the view's query string (ui.links)
        changed = gr.State(catalog_signature(store))
        ctx = Ctx(store=store, benchmark=bench, runs=runs, refresh=refresh, auth_enabled=auth_enabled,
                  changed=changed, page=demo, link=gr.State(None))

        def on_benchmark(name: str | None, link: dict[str, Any] | None) -> Any:
            choices = run_choices(store, name)
            view = links.View.of(link)
            picked = view.runs if view is not None and view.benchmark == name else [v for _, v in choices[:2]]
            return gr.update(choices=choices, value=picked)

        bench.change(on_benchmark, [bench, ctx.link], runs)

        def on_refresh(name: str | None, selected: list[str] | None) -> Any:
            benches = benchmark_choices(store)
            names = [v for _, v in benches]
            shown, name = name, (name if name in names else (names[0] if names else None))
            choices = run_choices(store, name)
            valid = {v for _, v in choices}
            still = [r for r in (selected or []) if r in valid]
            runs_up = (gr.update(choices=choices) if shown == name and still == list(selected or [])
                       else gr.update(choices=choices, value=still))
            return refreshed(shown, benches, name), runs_up

        def on_refresh_landing(name: str | None, selected: list[str] | None, request: gr.Request) -> Any:
            return on_refresh(*links.landed(store, name, selected, request))  # a page opened on a link: its view

        refresh.click(on_refresh, [bench, runs], [bench, runs], api_visibility="private", queue=False)
        changed.change(on_refresh, [bench, runs], [bench, runs], api_visibility="private", queue=False)
        demo.load(on_refresh_landing, [bench, runs], [bench, runs], api_visibility="private", queue=False)

        def on_load_header(request: gr.Request) -> str:
            return request_header(store, request)

        demo.load(on_load_header, None, whoami, api_visibility="private", queue=False)
        with gr.Tabs(elem_id="cc-tabs") as ctx.tabs:
            for label, module, builder in TABS:
                with gr.Tab(label, id=module, elem_id=f"cc-tab-{module}") as ctx.tab:
                    getattr(importlib.import_module(f"ui.{module}"), builder)(ctx)
            ctx.tab = None
        build_api(store)  # browse_list, open_group, compare: checked against the store, not the pickers
        links.wire(demo, ctx, ctx.tabs, note, address, copy, [module for _, module, _ in TABS])
        with gr.Accordion("Glossary: abbreviations and paper sections (000 FrameEvidence, 001 SPUR, 002 StemBind)",
                          open=False, elem_id="cc-glossary"):
            gr.HTML(glossary_html())
        # every picker of the store's contents: fresh on page load, on Refresh, and after any change
        for fn, inputs, outputs in ctx.refreshers:
            gr.on([demo.load, refresh.click, changed.change], fn, inputs, outputs, api_visibility="private",
                  show_progress="hidden", queue=False)  # a few small queries: answered before anything queued
    return demo


def warm_caches(store: Store) -> None:
    """In the background of a starting server: read the Browse data (ui.views.cache.bench: items, group index,
    filter choices) of the benchmark the page opens on. The scoring workers start and warm apart, from the
    command's first moments (ui.scores.start_scoring_workers_soon). A request needing what is being read waits
    for that read, not for a second one."""
    from ui.views import cache

    try:
        benches = benchmark_choices(store)
        if benches:
            cache.bench(store, benches[0][1])
    except Exception:  # noqa: BLE001 - the first Browse then reads it itself
        log.exception("could not read the first benchmark's Browse data")
    finally:
        store.close()  # this thread's connection


def launch(store: Store, host: str = "127.0.0.1", port: int = 7860,
           auth: Callable[[str, str], bool] | None = None, prevent_thread_lock: bool = False) -> Any:
    """Serve the UI (`auth`: ui.auth.load_auth's check, or None for no login). The store's images are served
    by content hash at `image/...` and `thumb/...` (ui/serving.py), never by path; Gradio serves no folder."""
    demo = build(store, auth_enabled=auth is not None)
    css = "\n".join((ASSETS / f).read_text(encoding="utf-8") for f in ("style.css", "views.css")
                    if (ASSETS / f).exists()) or None
    demo.queue(default_concurrency_limit=8)
    start_scoring_workers_soon(store)  # a no-op when `serve` started them before importing gradio
    threading.Thread(target=warm_caches, args=(store,), name="crosscheck-warm-caches", daemon=True).start()
    app = make_app(store, demo, auth=auth, css=css, theme=theme(), max_file_size="200mb", footer_links=[], show_error=False,
                   server_name=host, server_port=port)
    return run(app, host, port, prevent_thread_lock=prevent_thread_lock)
