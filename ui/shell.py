"""The app shell: header with the store, benchmark and run pickers, then one tab per module (SPEC §8, `TABS`)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import gradio as gr

from db.catalog import catalog_signature
from db.store import Store
from ui import links
from ui.api import build_api
from ui.auth import is_local_request
from ui.browse import build_browse
from ui.calibration import build_calibration
from ui.compare import build_compare
from ui.context import Ctx, benchmark_choices, refreshed, run_choices
from ui.data import build_data
from ui.glossary import glossary_html
from ui.handlers import username
from ui.judge import build_judge
from ui.metrics import build_metrics
from ui.run import build_run
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

class Tab(NamedTuple):
    """One tab of the page: its label, its id (a link's `tab=`, ui.links; the tab's element id `cc-tab-<id>`) and
    the builder that lays it out and wires it, given the Ctx."""

    label: str
    id: str
    build: Callable[[Ctx], None]


TABS = (
    Tab("Browse", "browse", build_browse),
    Tab("Compare", "compare", build_compare),
    Tab("Metrics", "metrics", build_metrics),
    Tab("Run", "run", build_run),
    Tab("Judge", "judge", build_judge),
    Tab("Calibration", "calibration", build_calibration),
    Tab("Data", "data", build_data),
)
TAB_IDS = tuple(tab.id for tab in TABS)


def header_html(store: Store, user: str | None, local: bool) -> str:
    """Who is signed in (with a log-out link) and which store this is: its full path only for a browser on the
    serving machine, its file name for everyone else (docs/HOSTING.md)."""
    return macro("shell.html", "header")(str(store.path) if local else store.path.name, user or "")


def request_header(store: Store, request: gr.Request | None) -> str:
    user = username(request)
    client = getattr(request, "client", None)  # a queued gr.Request may lack what the HTTP request had
    host = getattr(client, "host", None)
    headers = dict(getattr(request, "headers", None) or {})
    return header_html(store, user, is_local_request(host, headers))


@dataclass
class Header:
    """The header's parts besides the pickers the Ctx holds: who is signed in, the note of what a link named that
    the store lacks, the hidden view address and the Copy link button (ui.links)."""

    whoami: gr.HTML
    note: gr.HTML
    address: gr.Textbox
    copy: gr.Button


def build(store: Store, auth_enabled: bool = False, delete_cache: tuple[int, int] | None = None) -> gr.Blocks:
    """The whole UI over `store`. `delete_cache` (frequency_s, age_s): how Gradio prunes the copies it keeps
    of every download and upload (default ui.serving.cache_pruning(): CROSSCHECK_GRADIO_CACHE, else every
    hour, files older than a day)."""
    prune = delete_cache or cache_pruning()
    with gr.Blocks(title="Crosscheck", analytics_enabled=False, delete_cache=prune) as demo:
        ctx, header = build_header(store, demo, auth_enabled)
        wire_header(ctx, header)
        with gr.Tabs(elem_id="cc-tabs") as ctx.tabs:
            for tab in TABS:
                with gr.Tab(tab.label, id=tab.id, elem_id=f"cc-tab-{tab.id}") as ctx.tab:
                    tab.build(ctx)
            ctx.tab = None
        build_api(store)  # browse_list, open_group, compare: checked against the store, not the pickers
        links.wire(demo, ctx, ctx.tabs, header.note, header.address, header.copy, TAB_IDS)
        with gr.Accordion("Glossary: abbreviations and paper sections (000 FrameEvidence, 001 SPUR, 002 StemBind)",
                          open=False, elem_id="cc-glossary"):
            gr.HTML(glossary_html())
        # every picker of the store's contents: fresh on page load, on Refresh, and after any change
        for fn, inputs, outputs in ctx.refreshers:
            gr.on([demo.load, ctx.refresh.click, ctx.changed.change], fn, inputs, outputs, api_visibility="private",
                  show_progress="hidden", queue=False)  # a few small queries: answered before anything queued
    return demo


def build_header(store: Store, demo: gr.Blocks, auth_enabled: bool) -> tuple[Ctx, Header]:
    """The header row (title, who is signed in, the benchmark and run pickers, Refresh, Copy link), the link
    note under it, and the Ctx every tab receives."""
    benches = benchmark_choices(store)
    first = benches[0][1] if benches else None
    with gr.Row(elem_id="cc-header"):
        with gr.Column(scale=1, min_width=220, elem_id="cc-title"):
            gr.Markdown("### Crosscheck")
            whoami = gr.HTML("", elem_id="cc-whoami-box")
        bench = gr.Dropdown(benches, value=first, label="Benchmark", scale=2, min_width=360, elem_id="cc-benchmark")
        runs0 = run_choices(store, first)
        # a custom value passes: handlers of the page load read the runs as the page opened, and a link may
        # have switched the header to another benchmark's runs by the time they are answered (ui.links)
        runs = gr.Dropdown(runs0, value=[v for _, v in runs0[:2]], multiselect=True, label="Runs", scale=4,
                           allow_custom_value=True, elem_id="cc-runs")
        with gr.Column(scale=0, min_width=110):
            refresh = gr.Button("Refresh", size="sm", elem_id="cc-refresh")
            copy = gr.Button("Copy link", size="sm", elem_id="cc-copy-link")
    note = gr.HTML("", elem_id="cc-link-note")  # what a link named that the store lacks (ui.links)
    address = gr.Textbox(visible=False, elem_id="cc-address")  # the view's query string (ui.links)
    ctx = Ctx(store=store, benchmark=bench, runs=runs, refresh=refresh, auth_enabled=auth_enabled,
              changed=gr.State(catalog_signature(store)), page=demo, link=gr.State(None))
    return ctx, Header(whoami=whoami, note=note, address=address, copy=copy)


def picked_runs(store: Store, benchmark: str | None, link: dict[str, Any] | None) -> Any:
    """The run picker after the header's benchmark changed: the runs of the link being landed on when it names
    this benchmark, else the benchmark's first two."""
    choices = run_choices(store, benchmark)
    view = links.View.of(link)
    picked = view.runs if view is not None and view.benchmark == benchmark else [v for _, v in choices[:2]]
    return gr.update(choices=choices, value=picked)


def refreshed_header(store: Store, benchmark: str | None, selected: list[str] | None) -> tuple[Any, Any]:
    """Both pickers with their choices read again: a benchmark or runs the store no longer holds are dropped, a
    pick still there is kept (and not sent again, so a pick made meanwhile stands)."""
    benches = benchmark_choices(store)
    names = [v for _, v in benches]
    shown, name = benchmark, (benchmark if benchmark in names else (names[0] if names else None))
    choices = run_choices(store, name)
    valid = {v for _, v in choices}
    still = [r for r in (selected or []) if r in valid]
    runs_up = (gr.update(choices=choices) if shown == name and still == list(selected or [])
               else gr.update(choices=choices, value=still))
    return refreshed(shown, benches, name), runs_up


def wire_header(ctx: Ctx, header: Header) -> None:
    """The header's events: a benchmark picks its runs; Refresh, a change of the store and the page load read
    both pickers again (the page load for the view of its link); the page load says who is signed in."""
    store, bench, runs, demo = ctx.store, ctx.benchmark, ctx.runs, ctx.page

    def on_benchmark(name: str | None, link: dict[str, Any] | None) -> Any:
        return picked_runs(store, name, link)

    def on_refresh(name: str | None, selected: list[str] | None) -> Any:
        return refreshed_header(store, name, selected)

    def on_refresh_landing(name: str | None, selected: list[str] | None, request: gr.Request) -> Any:
        return refreshed_header(store, *links.landed(store, name, selected, request))  # a page opened on a link

    def on_load_header(request: gr.Request) -> str:
        return request_header(store, request)

    bench.change(on_benchmark, [bench, ctx.link], runs)
    ctx.refresh.click(on_refresh, [bench, runs], [bench, runs], api_visibility="private", queue=False)
    ctx.changed.change(on_refresh, [bench, runs], [bench, runs], api_visibility="private", queue=False)
    demo.load(on_refresh_landing, [bench, runs], [bench, runs], api_visibility="private", queue=False)
    demo.load(on_load_header, None, header.whoami, api_visibility="private", queue=False)


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
