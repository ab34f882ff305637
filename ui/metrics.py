"""The Metrics tab: every table and figure of SPEC §5 for the runs picked in the header (SPEC §8), and the same
tables as a JSON endpoint (`api_name="metrics"`, docs/UI.md).

Values come from the bulk path of `python app.py score --all` (ui/scores.py: db.frames.load_for_scoring and one
core.scoring.score_all call, cached per benchmark), so the screen equals the CLI. Tables are
`core.report_tables.Table`s shown as sortable HTML (k / n and 95% intervals on hover, reasons for n/a cells)
with CSV and booktabs LaTeX downloads; figures are plotly (ui/charts.py, each family's own in the "# charts"
section of ui/views/<name>.py) with an HTML download (and the chart's own camera button for PNG).

The layout (`build_metrics`) only wires components to `MetricsHandlers`' methods, plain functions of the
store and the inputs that tests call without a browser (tests/ui/test_metrics_handlers.py).
"""

from __future__ import annotations

import html
import itertools
import logging
from typing import Any

import gradio as gr

from core import families
from core.errors import CrosscheckError
from core.families.protocol import Load, TableControl
from core.report_json import table_json
from core.report_tables import Table
from core.scoring import DEFAULT_SPLIT, NO_TEST_SPLIT, split_arg
from core.stats import CLUSTERINGS, DEFAULT_UNION_FIELDS, FIELD_CLUSTERINGS, Clustering
from db import gold_reviews
from db.browse import run_records
from db.catalog import runs_named
from db.store import Store
from ui import charts
from ui.context import Ctx
from ui.handlers import user_error
from ui.links import View, landed
from ui.metrics_page import Page, metrics_page
from ui.report.write import report_html
from ui.scores import CACHE, ScoreCache, control_names, depends_state, run_scores
from ui.tables import CSS, SORT_JS, chart_file, report_file, table_files, table_html, table_html_file
from ui.templating import style

__all__ = ["CLUSTER_CHOICES", "MetricsHandlers", "build_metrics", "clusterings_of", "gate", "metrics_json",
           "run_scores", "union_field_choices"]

_RENDERS = itertools.count()
_REQUESTS = itertools.count()
log = logging.getLogger(__name__)


class BadMetricsRequest(CrosscheckError, ValueError):
    """An endpoint argument that names nothing the benchmark has (a run, a clustering, a control's choice)."""


# the endpoint's argument that picks a family's Metrics control (Family.controls, TableControl.argument): SPUR's
# shortcut filter model, the one control with an argument
CONTROL_ARGUMENT = "shortcut_model"


CLUSTER_CHOICES = [("groups", "group"), ("exact-image components", "image"), ("scene clusters", "scene"),
                   ("union components", "union")]
DEFAULT_CLUSTER_PICK = ["group", "union"]


def clusterings_of(names: list[str] | None, fields: list[str] | None) -> tuple[Clustering, ...]:
    """The Metrics tab's cluster pickers as core.stats.Clustering objects (no pick: the defaults)."""
    picked = [n for n in (names or []) if n in CLUSTERINGS]
    if not picked:
        return ()
    union_fields = tuple(fields) if fields else DEFAULT_UNION_FIELDS
    return tuple(Clustering.parse(n, union_fields) for n in picked)


def union_field_choices(store: Store, benchmark: str | None) -> list[str]:
    """The meta fields a union clustering can link on: scalar values of which at least one is shared by two
    groups (a field unique to each group, such as a question translation, would link nothing)."""
    if not benchmark:
        return []
    items = store.items_frame(benchmark)
    groups_of: dict[tuple[str, Any], set[Any]] = {}
    for gid, meta in zip(items["group_id"], items["meta"] if "meta" in items else [None] * len(items), strict=True):
        if isinstance(meta, dict):
            for key, value in meta.items():
                if isinstance(value, (str, int)) and not isinstance(value, bool):
                    groups_of.setdefault((str(key), value), set()).add(gid)
    return sorted({key for (key, _), gids in groups_of.items() if len(gids) > 1})


def render_key(store: Store, benchmark: str | None, selected: list[str] | None) -> tuple[Any, ...]:
    """What a render depends on: the picks and the state of the runs their scores depend on, the control runs'
    among them (ui.scores.depends_state: a finished live run or an import of one of them changes it). Equal keys
    draw the same page."""
    if not benchmark:
        return (benchmark, (), ())
    # right after a benchmark switch the old picks are dropped
    names = {r["name"] for r in run_records(store, benchmark, list(selected or []))}
    picked = tuple(n for n in selected or () if n in names)
    return (benchmark, picked, depends_state(store, benchmark, [*picked, *control_names(store, benchmark)]))


def gate(store: Store, shown: bool, benchmark: str | None, selected: list[str] | None,
         drawn: tuple[Any, ...] | None, force: bool = False, extra: tuple[Any, ...] = ()
         ) -> tuple[Any, ...] | None:
    """The key to draw, or None to leave the tab as it is: only a visible tab draws, and only when its inputs
    changed since its last drawing (or Refresh was pressed). `extra` (the Table 13 cluster and union-field
    picks) ends the key."""
    if not shown:
        return None
    key = (*render_key(store, benchmark, selected), *extra)
    return key if force or key != drawn else None


# --------------------------------------------------------------------------- the endpoint


def _clusterings_arg(family_pickers: bool, clusters: list[str] | None, fields: list[str] | None
                     ) -> tuple[Clustering, ...]:
    """The endpoint's clusters / cluster_fields as Clustering objects, refusing what `score --cluster` refuses."""
    clusters, fields = [c for c in clusters or [] if c], [f for f in fields or [] if f]
    if not clusters and not fields:
        return ()
    if not family_pickers:
        raise BadMetricsRequest("clusters / cluster_fields apply to FrameEvidence benchmarks (000 App. A, D.6); "
                                "other families' intervals cluster by group")
    names = clusters or list(DEFAULT_CLUSTER_PICK)
    if fields and not set(names) & set(FIELD_CLUSTERINGS):
        raise BadMetricsRequest("cluster_fields names the fields of the scene / union clustering: add scene or "
                                "union to clusters")
    chosen = tuple(Clustering.parse(n, fields or None) for n in names)  # an unknown name: UnknownClustering
    if len({c.name for c in chosen}) < len(chosen):
        raise BadMetricsRequest(f"clusters {clusters!r} names a clustering twice")
    return chosen


def loader(store: Store, benchmark: str) -> Load:
    """What a family control's redraw may read (TableControl.redraw's `load`): the benchmark's items and every
    run's data, read only when called."""
    return lambda: (store.items_frame(benchmark),
                    [store.run_data(r["name"]) for r in store.runs(benchmark, with_counts=False)])


def _control_arg(family: str, benchmark: str, word: str | None) -> TableControl | None:
    """The family's control the endpoint's argument picks (None when the argument is empty); an argument its
    family has no control for is refused, naming the families that take it."""
    if not word:
        return None
    takers = families.controls_for(CONTROL_ARGUMENT)
    if family not in takers:
        raise BadMetricsRequest(f"{CONTROL_ARGUMENT} applies to {' or '.join(c.scope for c in takers.values())}; "
                                f"{benchmark!r} is {family}")
    return takers[family]


def metrics_json(store: Store, benchmark: str, runs: list[str], split: str | None = None,
                 clusters: list[str] | None = None, cluster_fields: list[str] | None = None,
                 shortcut_model: str | None = None, cache: ScoreCache = CACHE) -> dict[str, Any]:
    """The Metrics tab's tables for `runs` of `benchmark` as JSON (core.report_json), scored as `score --all`.

    `split`: as `score --split` (empty: test, or every split when the benchmark has no test split; "all");
    `clusters` / `cluster_fields`: as `--cluster` / `--cluster-field` (FrameEvidence); `shortcut_model`: the pick
    of the family's control it names (TableControl.argument: SPUR's shortcut filter, a text-only model or
    "pooled"; empty: its table as drawn). A run the benchmark lacks, or an option it cannot take, is an error
    naming it; nothing is silently left out."""
    family = store.benchmark_family(benchmark)  # an unknown benchmark: NotFound naming the known ones
    if not runs:
        known = [r["name"] for r in store.runs(benchmark, with_counts=False)]
        raise BadMetricsRequest(f"name one or more runs of benchmark {benchmark!r} (runs: {', '.join(known) or 'none'})")
    runs_named(store, benchmark, runs)  # a name the benchmark lacks: NotFound naming it
    caps = families.get(family).capabilities
    clusterings = _clusterings_arg(caps.clusterings, clusters, cluster_fields)
    _control_arg(family, benchmark, shortcut_model)
    tag = ("metrics_json", tuple(runs), split, clusterings, shortcut_model)
    return cache.derive(store, benchmark, tag, lambda: _metrics_tables(store, benchmark, list(runs), split,
                                                                        clusterings, shortcut_model, cache),
                        depends=[*runs, *control_names(store, benchmark)])


def _metrics_tables(store: Store, benchmark: str, runs: list[str], split: str | None,
                    clusterings: tuple[Clustering, ...], shortcut_model: str | None, cache: ScoreCache
                    ) -> dict[str, Any]:
    """metrics_json's value for checked arguments (kept by the cache per state of the benchmark's runs)."""
    family, scored, controls = run_scores(store, benchmark, list(runs), clusterings, split_arg(split), cache=cache)
    if (split or "").strip() == DEFAULT_SPLIT and scored and scored[0].split == NO_TEST_SPLIT:
        raise BadMetricsRequest(f"benchmark {benchmark!r} has no items in split 'test'; leave split empty to "
                                "score every split")
    tables = families.get(family).tables(scored, controls)
    control = _control_arg(family, benchmark, shortcut_model)
    if control is not None and shortcut_model:
        try:
            choice = control.value(scored, shortcut_model)
        except ValueError as exc:
            raise BadMetricsRequest(str(exc)) from exc
        redrawn = control.redraw(scored, choice, loader(store, benchmark))
        tables = [redrawn if t.key == control.table else t for t in tables]
    return {"benchmark": benchmark, "family": family, "split": scored[0].split if scored else None,
            "runs": [r.name for r in scored], "controls": [r.name for r in controls],
            "tables": [table_json(t) for t in tables]}


# --------------------------------------------------------------------------- handlers


class MetricsHandlers:
    """The tab's event handlers over one store: plain methods of the inputs, returning the outputs' values.

    The tab draws when it is visible and its inputs changed: `shown` follows the tab strip, `drawn` holds the
    key of the last drawing, and `want` (a fresh [key, n] on each accepted request) triggers the render."""

    def __init__(self, store: Store, tab_label: str | None = None, cache: ScoreCache = CACHE) -> None:
        self.store = store
        self.tab_label = tab_label
        self.cache = cache

    def cluster_controls(self, benchmark: str | None, fields: list[str] | None) -> tuple[Any, Any]:
        """The cluster pickers' row (shown for a family that takes them) and the union-field choices."""
        pickers = bool(benchmark and families.get(self.store.benchmark_family(benchmark)).capabilities.clusterings)
        choices = union_field_choices(self.store, benchmark) if pickers else []
        kept = [f for f in (fields or []) if f in choices] or [f for f in DEFAULT_UNION_FIELDS if f in choices]
        return gr.update(visible=pickers), gr.update(choices=choices, value=kept)

    def request(self, is_shown: bool, benchmark: str | None, selected: list[str] | None,
                clusters: list[str] | None, fields: list[str] | None, last: Any, force: bool = False,
                aside: bool = False) -> Any:
        """(drawn, want): a new key and a fresh want when the tab must draw, else skips (nothing happens).

        Right after a benchmark switch the header still holds the previous benchmark's runs: none of them is
        the new benchmark's, and the header's own update of the runs follows, so nothing is drawn for them (a
        drawing that the next one would replace while the user reads it). The cluster pickers are part of the
        key only for a family that shows them (their reset on a switch to another family draws nothing)."""
        if not force and benchmark and selected:
            if not run_records(self.store, benchmark, list(selected)):
                return gr.skip(), gr.skip()
        pickers = bool(benchmark and families.get(self.store.benchmark_family(benchmark)).capabilities.clusterings)
        # set aside reviewers' "gold is wrong" groups: the toggle and the verdicts' state, so a new verdict draws again
        marks = (("aside", gold_reviews.state(self.store, benchmark)),) if aside and benchmark else ()
        extra = (*marks, *((tuple(clusters or ()), tuple(fields or ())) if pickers else ()))  # Table 13's clusterings
        key = gate(self.store, is_shown, benchmark, selected, tuple(last) if last else None, force, extra)
        if key is None:
            return gr.skip(), gr.skip()
        picks = {"clusters": list(clusters or []) if pickers else [], "fields": list(fields or []) if pickers else [],
                 "aside": bool(aside)}
        return key, [list(key), next(_REQUESTS), picks]

    def refresh(self, is_shown: bool, benchmark: str | None, selected: list[str] | None,
                clusters: list[str] | None, fields: list[str] | None, last: Any, aside: bool = False) -> Any:
        """The header's Refresh: draws again when the tab is shown, whatever changed."""
        return self.request(is_shown, benchmark, selected, clusters, fields, last, force=True, aside=aside)

    def on_tab(self, evt: gr.SelectData, benchmark: str | None, selected: list[str] | None,
               clusters: list[str] | None, fields: list[str] | None, last: Any, aside: bool = False) -> Any:
        """A tab of the strip was opened: (shown, drawn, want)."""
        is_shown = evt.value == self.tab_label
        return (is_shown, *self.request(is_shown, benchmark, selected, clusters, fields, last, aside=aside))

    def on_request(self, is_shown: bool, benchmark: str | None, selected: list[str] | None,
                   clusters: list[str] | None, fields: list[str] | None, last: Any, aside: bool) -> Any:
        """`request` with the set-aside toggle as the last input (the layout's events)."""
        return self.request(is_shown, benchmark, selected, clusters, fields, last, aside=aside)

    def page(self, wanted: list[Any] | None) -> Page | None:
        """What the render draws for a `want` value (None: nothing)."""
        if not wanted:
            return None
        key = wanted[0]
        picks = wanted[2] if len(wanted) > 2 else {"clusters": list(key[-2]), "fields": list(key[-1])}
        try:
            return metrics_page(self.store, key[0], list(key[1]), clusterings_of(picks["clusters"], picks["fields"]),
                                cache=self.cache, set_aside=bool(picks.get("aside")))
        except CrosscheckError as exc:
            raise user_error(str(exc)) from exc

    def api(self, benchmark: str, runs: list[str], split: str = "", clusters: list[str] | None = None,
            cluster_fields: list[str] | None = None, shortcut_model: str = "") -> dict[str, Any]:
        """The Metrics tab's tables for the named runs of a benchmark as JSON: {benchmark, family, split, runs,
        controls, tables}; each table {key, title, index, columns, rows, note, reasons}, each cell {column,
        run, path, kind, value, k, n, interval, reason, display} (docs/UI.md)."""
        try:
            return metrics_json(self.store, benchmark, list(runs or []), split, clusters, cluster_fields,
                                shortcut_model, cache=self.cache)
        except CrosscheckError as exc:
            raise user_error(str(exc)) from exc


# --------------------------------------------------------------------------- layout


# Charts drawn while their sub-tab was hidden get plotly's default 700 px; when a chart's box changes size (its
# sub-tab opens, the window resizes) it is redrawn at its container's width. Installed once per page.
FIT_JS = """
if (!window.__ccFitCharts) {
  window.__ccFitCharts = true;
  const fit = (gd) => {
    const P = window.Plotly;
    if (!P || !gd._fullLayout || !gd.offsetParent || !gd.clientWidth) return;
    if (Math.abs(gd._fullLayout.width - gd.clientWidth) > 1) P.Plots.resize(gd);
  };
  const ro = new ResizeObserver((entries) => entries.forEach((e) => fit(e.target)));
  const seen = new WeakSet();
  let queued = false;
  const scan = () => {
    queued = false;
    document.querySelectorAll('.js-plotly-plot').forEach((gd) => {
      if (!seen.has(gd)) { seen.add(gd); ro.observe(gd); }
      fit(gd);
    });
  };
  new MutationObserver(() => { if (!queued) { queued = true; requestAnimationFrame(scan); } })
    .observe(document.body, {childList: true, subtree: true});
  scan();
}
"""
DL_ID = "cc-metrics-dl"
# After a download button's handler wrote the file into the hidden DownloadButton, click that one: the
# browser saves the file (Gradio's own download code).
CLICK_DL = f"() => {{ document.getElementById('{DL_ID}')?.click(); }}"


def _download(label: str, write: Any, dl: gr.DownloadButton, css_class: str, width: int = 70) -> None:
    """A button that writes its file when pressed (never at render time) and hands it to the browser."""
    btn = gr.Button(label, size="sm", scale=0, min_width=width, elem_classes=[css_class])
    btn.click(lambda: str(write()), None, dl, api_visibility="private", concurrency_id="metrics-dl").then(
        None, js=CLICK_DL)


def report_download(store: Store, page: Page) -> Any:
    """The one-file report (ui/report) of the runs on the page, written when the button is pressed."""
    names = [r.name for r in page.runs]
    text = report_html(store, page.benchmark, names, command=f"Metrics tab, Download report (runs {', '.join(names)})"
                       + (" with the marked groups set aside" if page.aside else ""), cache_=CACHE,
                       set_aside=bool(page.aside))
    return report_file(text, page.benchmark)


def _table_block(table: Table, prefix: str, dl: gr.DownloadButton) -> None:
    gr.HTML(table_html(table), js_on_load=SORT_JS, elem_classes=["cc-metric-table"])
    with gr.Row(elem_classes=["cc-exports"]):
        _download("CSV", lambda: table_files(table, prefix)[0], dl, "cc-dl-csv")
        _download("LaTeX", lambda: table_files(table, prefix)[1], dl, "cc-dl-tex")
        _download("HTML", lambda: table_html_file(table, prefix), dl, "cc-dl-html")


def _chart_block(fig: Any, prefix: str, key: str, dl: gr.DownloadButton) -> None:
    gr.Plot(fig, show_label=False, elem_classes=["cc-chart"])
    _download("Chart (HTML)", lambda: chart_file(charts.figure_html(fig), prefix, key), dl, "cc-dl-chart", 120)


def draw(store: Store, page: Page | None, dl: gr.DownloadButton, opened: gr.State | None = None,
         last: str | None = None) -> None:
    """The components of one drawing (inside the tab's gr.render). `opened` (a State outside the render) is
    set to the id of each sub-tab shown (the user's pick, and the one a drawing opens on); `last`, its value at
    this drawing, is the sub-tab the drawing opens when it has it (picking another run keeps the section being
    read), else the first."""
    if page is None:
        return
    if page.message:
        gr.Markdown(page.message, elem_id=page.message_id)
        return
    if page.chart_error:
        gr.Markdown(f"Charts could not be drawn ({html.escape(page.chart_error)}); the tables below are complete.")
    drawing = next(_RENDERS)
    gr.Markdown(page.summary(), elem_id="cc-metrics-summary",
                elem_classes=[f"cc-drawing-{drawing}"])  # which drawing this is (tests wait on it)
    with gr.Row(elem_classes=["cc-exports"]):
        _download("Download report", lambda: report_download(store, page), dl, "cc-dl-report", 150)
    sections = page.sections()
    ids = [f"{page.family}-{i}" for i, _, _, _ in sections]
    # a fresh Tabs on every render (unique key), opened on the section last shown when this drawing has it,
    # else on its first: a re-render never keeps the tab headers of an earlier render
    with gr.Tabs(elem_id="cc-metrics-sections", key=f"sections-{drawing}",
                 selected=last if last in ids else (ids[0] if ids else None)):
        for (_, title, present, plots), tab_id in zip(sections, ids, strict=True):
            with gr.Tab(title, id=tab_id) as tab:
                _section(store, page, present, plots, dl)
            if opened is not None:
                tab.select(lambda tab_id=tab_id: tab_id, None, opened, api_visibility="private", queue=False)


def _section(store: Store, page: Page, present: list[str], plots: list[str], dl: gr.DownloadButton) -> None:
    prefix = page.benchmark
    if len(plots) >= 2:
        for j in range(0, len(plots), 2):
            with gr.Row():
                for key in plots[j:j + 2]:
                    with gr.Column(min_width=380):
                        _chart_block(page.figs[key], prefix, key, dl)
    elif plots:
        _chart_block(page.figs[plots[0]], prefix, plots[0], dl)
    controls = {c.table: c for c in families.get(page.family).controls}
    for key in present:
        if key in controls:  # a table with the family's control above it (SPUR's shortcut filter model)
            _control_block(store, page, controls[key], prefix)
        else:
            _table_block(page.tables[key], prefix, dl)


def _control_block(store: Store, page: Page, control: TableControl, prefix: str) -> None:
    """A family's Metrics control (TableControl): its dropdown (`cc-<name>-pick`), the table (`cc-<name>`) and the
    CSV / LaTeX / HTML downloads, which follow the pick."""
    table = page.tables[control.table]
    offered = control.choices(page.runs)
    first = offered[0][1] if offered else ""
    picker = gr.Dropdown(offered, value=first, label=control.label, elem_id=f"cc-{control.name}-pick",
                         interactive=True)
    out = gr.HTML(table_html(table), js_on_load=SORT_JS, elem_classes=["cc-metric-table"], elem_id=f"cc-{control.name}")
    csv_path, tex_path = table_files(table, prefix)
    html_path = table_html_file(table, prefix)
    with gr.Row(elem_classes=["cc-exports"]):
        csv = gr.DownloadButton("CSV", value=str(csv_path), size="sm", scale=0, min_width=70,
                                elem_classes=["cc-dl-csv"])
        tex = gr.DownloadButton("LaTeX", value=str(tex_path), size="sm", scale=0, min_width=70,
                                elem_classes=["cc-dl-tex"])
        html_btn = gr.DownloadButton("HTML", value=str(html_path), size="sm", scale=0, min_width=70,
                                     elem_classes=["cc-dl-html"])
    load = loader(store, page.benchmark)

    def on_pick(choice: str | None) -> tuple[Any, Any, Any, Any]:
        value = choice or first
        try:
            t = control.redraw(page.runs, value, load)
        except CrosscheckError as exc:
            raise user_error(str(exc)) from exc
        name = prefix + (f"_{value.strip('_')}" if value != first else "")  # the files name the pick
        c, x = table_files(t, name)
        return table_html(t), str(c), str(x), str(table_html_file(t, name))

    picker.change(on_pick, picker, [out, csv, tex, html_btn], api_visibility="private")


def _cluster_pickers() -> tuple[gr.Row, gr.Dropdown, gr.Dropdown]:
    """FrameEvidence bootstrap clusterings (000 App. A, D.6): Table 13's interval columns, side by side."""
    with gr.Row(elem_id="cc-metrics-clusters", visible=False) as row:
        pick = gr.Dropdown(label="Bootstrap clusters (Table 13 intervals, side by side)", choices=CLUSTER_CHOICES,
                           value=DEFAULT_CLUSTER_PICK, multiselect=True, scale=3, elem_id="cc-metrics-cluster-pick")
        fields = gr.Dropdown(label="Scene / union clusters link groups sharing a value of",
                             choices=list(DEFAULT_UNION_FIELDS), value=list(DEFAULT_UNION_FIELDS), multiselect=True,
                             allow_custom_value=True, scale=2, elem_id="cc-metrics-cluster-fields")
    return row, pick, fields


def build_metrics(ctx: Ctx) -> None:
    """The tab's layout: the cluster pickers, the render, and the `metrics` endpoint; handlers in MetricsHandlers."""
    gr.HTML(style(CSS), elem_id="cc-metrics-css", js_on_load=FIT_JS)
    dl = gr.DownloadButton("download", visible="hidden", elem_id=DL_ID)
    root = ctx.page  # page load is a trigger too (explicit triggers drop it)
    tab, strip = ctx.tab, ctx.tabs
    in_tabs = tab is not None and strip is not None
    h = MetricsHandlers(ctx.store, str(tab.label) if tab is not None and in_tabs else None)
    cluster_row, cluster_pick, field_pick = _cluster_pickers()
    aside = gr.Checkbox(label="Set aside the groups of items reviewers marked “gold is wrong” (Browse, Item health)",
                        value=False, elem_id="cc-metrics-aside-toggle")

    def controls_landing(benchmark: str | None, fields: list[str] | None, request: gr.Request) -> tuple[Any, Any]:
        return h.cluster_controls(landed(ctx.store, benchmark, None, request)[0], fields)  # ui.links.landed

    root.load(controls_landing, inputs=[ctx.benchmark, field_pick], outputs=[cluster_row, field_pick])
    ctx.benchmark.change(h.cluster_controls, inputs=[ctx.benchmark, field_pick], outputs=[cluster_row, field_pick])

    shown = gr.State(not in_tabs)  # built outside a tab strip (a test page): always visible
    drawn = gr.State(None)
    want = gr.State(None)
    inputs = [shown, ctx.benchmark, ctx.runs, cluster_pick, field_pick, drawn, aside]
    if isinstance(strip, gr.Tabs):
        strip.select(h.on_tab, inputs[1:], [shown, drawn, want], api_visibility="private")
    else:
        root.load(h.on_request, inputs, [drawn, want], api_visibility="private")
    for trigger in (ctx.benchmark.change, ctx.runs.change, cluster_pick.change, field_pick.change, aside.change):
        trigger(h.on_request, inputs, [drawn, want], api_visibility="private")
    ctx.refresh.click(h.refresh, inputs, [drawn, want], api_visibility="private")

    opened = gr.State(None)  # the id of the sub-tab last shown (draw): a later drawing opens it again

    def linked(link: dict[str, Any] | None, clusters: list[str] | None, fields: list[str] | None, last: Any) -> Any:
        """A link to the Metrics tab (ui.links): shown, and drawn for the link's benchmark and runs."""
        view = View.of(link)
        if view is None or view.tab != "metrics":
            return gr.skip(), gr.skip(), gr.skip()
        return (True, *h.request(True, view.benchmark, view.runs, clusters, fields, last))

    ctx.parts.update({"metrics.opened": opened,
                      "metrics.show": (linked, [cluster_pick, field_pick, drawn], [shown, drawn, want])})

    @gr.render(inputs=[want, opened], triggers=[want.change], concurrency_limit=4, concurrency_id="metrics")
    def render(wanted: list[Any] | None, last: str | None) -> None:
        draw(ctx.store, h.page(wanted), dl, opened, last)

    gr.api(h.api, api_name="metrics", concurrency_limit=4, concurrency_id="metrics-api")
