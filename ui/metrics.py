"""The Metrics tab: every table and figure of SPEC §5 for the runs picked in the header (SPEC §8).

Values come from `core.scoring.score_run` called exactly as `python app.py score --run NAME --json` calls
it (same items, same `others`), so the screen equals the CLI. Tables are `core.report_tables.Table`s shown as
sortable HTML (k / n and 95% intervals on hover, reasons for n/a cells) with CSV and booktabs LaTeX
downloads; figures are plotly (ui/charts.py) with an HTML download (and the chart's own camera button for PNG).
"""

from __future__ import annotations

import html
import itertools
import logging
import threading
from typing import Any

import gradio as gr

from core.errors import CrosscheckError
from core.report_tables import RunScore, Table, tables_for
from core.scoring import score_run
from core.stats import CLUSTERINGS, DEFAULT_UNION_FIELDS, Clustering
from db.frames import score_extras
from db.store import Store
from ui import charts
from ui.context import Ctx
from ui.shortcut import shortcut_block
from ui.tables import CSS, SORT_JS, chart_file, table_files, table_html

# (section title, [table keys], [chart keys]) per family, in display order. Keys missing for a selection
# (a table with no rows) are skipped.
SECTIONS: dict[str, list[tuple[str, list[str], list[str]]]] = {
    "frameevidence": [
        ("Overview", ["fe_table4", "fe_independence", "fe_variants"], ["fe_table4"]),
        ("Figure 5 · transitions", ["fe_figure5", "fe_pairwise"], ["fe_figure5"]),
        ("Input controls", ["fe_delta_text", "fe_delta_first", "fe_decomposition"], ["fe_delta_text"]),
        ("Rotations · repeats · seeds", ["fe_rotations", "fe_repeats", "fe_table13", "fe_seeds",
                                         "fe_seeds_rotations"], ["fe_rotations"]),
        ("Insufficiency", ["fe_insufficiency"], ["fe_insufficiency"]),
        ("Strata", ["fe_strata_n_images", "fe_strata_relation", "fe_strata_scene", "fe_strata_source",
                    "fe_strata_ordinal_change"],
         ["fe_strata_n_images", "fe_strata_relation", "fe_strata_scene", "fe_strata_source",
          "fe_strata_ordinal_change"]),
        ("Metadata controls", ["fe_controls"], ["fe_controls"]),
    ],
    "stembind": [
        ("Leaderboard", ["sb_leaderboard", "sb_operations"], ["sb_leaderboard", "sb_chasm"]),
        ("Binding", ["sb_decomposition", "sb_binding_gap"], ["sb_decomposition", "sb_binding_gap"]),
        ("Stages · SSA", ["sb_stepacc", "sb_ssa"], ["sb_ssa", "sb_stepacc"]),
        ("Paired runs", ["sb_thinkgain", "sb_vg"], ["sb_thinkgain", "sb_vg"]),
        ("Tokens", ["sb_tokens"], []),
    ],
    "spur": [
        ("Table 3", ["spur_table3"], ["spur_table3"]),
        ("Breakdowns", ["spur_staining", "spur_relations", "spur_paradigm"],
         ["spur_staining", "spur_relations", "spur_paradigm"]),
        ("MCoT · Table 5", ["spur_mcot", "spur_table5"], ["spur_mcot", "spur_table5"]),
        ("Shortcuts", ["spur_shortcut"], []),
    ],
    "generic": [("Overview", ["generic_main", "generic_kinds"], ["generic_main"])],
}


class ScoreCache:
    """Scores per run, recomputed when any run of the benchmark changes (name, updated, prediction count):
    a finished live run or an import shows up without a restart."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.state: dict[str, tuple[Any, ...]] = {}
        self.scores: dict[tuple[str, str, tuple[Clustering, ...]], dict[str, Any]] = {}

    def scores_for(self, store: Store, benchmark: str, names: list[str],
                   clusterings: tuple[Clustering, ...] = ()) -> dict[str, dict[str, Any]]:
        """Scores of the named runs; `clusterings` (FrameEvidence) pick the bootstrap clusters (empty: defaults)."""
        runs = store.runs(benchmark)
        state = tuple((r["name"], r["updated"], r["n_predictions"]) for r in runs)
        with self.lock:
            if self.state.get(benchmark) != state:
                self.scores = {k: v for k, v in self.scores.items() if k[0] != benchmark}
                self.state[benchmark] = state
            missing = [n for n in names if (benchmark, n, clusterings) not in self.scores]
            if missing:
                items = store.items_frame(benchmark)
                data = {r["name"]: store.run_data(r["name"]) for r in runs}
                for name in missing:
                    if name not in data:
                        continue
                    run = data[name]
                    others = [d for n, d in data.items() if n != name]
                    extras = score_extras(store, name, run.family)
                    if clusterings and run.family == "frameevidence":
                        extras["clusterings"] = clusterings
                    self.scores[(benchmark, name, clusterings)] = score_run(items, run, others, **extras)
            return {n: self.scores[(benchmark, n, clusterings)] for n in names
                    if (benchmark, n, clusterings) in self.scores}


CACHE = ScoreCache()
_RENDERS = itertools.count()
log = logging.getLogger(__name__)


CLUSTER_CHOICES = [("groups", "group"), ("exact-image components", "image"), ("union components", "union")]
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


def run_scores(store: Store, benchmark: str, names: list[str], clusterings: tuple[Clustering, ...] = ()
               ) -> tuple[str, list[RunScore], list[RunScore]]:
    """(family, selected runs' scores, baseline control runs' scores) for the Metrics tab."""
    family = store.benchmark_family(benchmark)
    meta = {r["name"]: r for r in store.runs(benchmark)}
    names = [n for n in names if n in meta]
    controls = [n for n, r in meta.items() if r["runner"] == "baseline"] if family == "frameevidence" else []
    clusterings = clusterings if family == "frameevidence" else ()
    scores = CACHE.scores_for(store, benchmark, list(dict.fromkeys([*names, *controls])), clusterings)

    def rs(name: str) -> RunScore:
        r = meta[name]
        return RunScore(name, scores[name]["metrics"], bool(r["synthetic"]), dict(r["config"] or {}), r["runner"],
                        scores[name].get("split", "test"))

    return family, [rs(n) for n in names if n in scores], [rs(n) for n in controls if n in scores]


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


def _table_block(table: Table, prefix: str, dl: gr.DownloadButton) -> None:
    gr.HTML(table_html(table), js_on_load=SORT_JS, elem_classes=["cc-metric-table"])
    with gr.Row(elem_classes=["cc-exports"]):
        _download("CSV", lambda: table_files(table, prefix)[0], dl, "cc-dl-csv")
        _download("LaTeX", lambda: table_files(table, prefix)[1], dl, "cc-dl-tex")


def _chart_block(fig: Any, prefix: str, key: str, dl: gr.DownloadButton) -> None:
    gr.Plot(fig, show_label=False, elem_classes=["cc-chart"])
    _download("Chart (HTML)", lambda: chart_file(charts.figure_html(fig), prefix, key), dl, "cc-dl-chart", 120)


def render_key(store: Store, benchmark: str | None, selected: list[str] | None) -> tuple[Any, ...]:
    """What a render depends on: the picks and the state of the benchmark's runs (a finished live run or an
    import changes it). Equal keys draw the same page."""
    runs = store.runs(benchmark) if benchmark else []
    names = {r["name"] for r in runs}  # right after a benchmark switch the old picks are dropped
    return (benchmark, tuple(n for n in selected or () if n in names),
            tuple((r["name"], r["updated"], r["n_predictions"]) for r in runs))


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


def build_metrics(ctx: Ctx) -> None:
    store = ctx.store
    gr.HTML(f"<style>{CSS}</style>", elem_id="cc-metrics-css", js_on_load=FIT_JS)
    dl = gr.DownloadButton("download", visible="hidden", elem_id=DL_ID)

    root = gr.context.Context.root_block  # page load is a trigger too (explicit triggers drop it)
    # FrameEvidence bootstrap clusterings (000 App. A, D.6): Table 13's interval columns, side by side
    with gr.Row(elem_id="cc-metrics-clusters", visible=False) as cluster_row:
        cluster_pick = gr.Dropdown(label="Bootstrap clusters (Table 13 intervals, side by side)",
                                   choices=CLUSTER_CHOICES, value=DEFAULT_CLUSTER_PICK, multiselect=True, scale=3,
                                   elem_id="cc-metrics-cluster-pick")
        field_pick = gr.Dropdown(label="Union links groups sharing an image or a value of",
                                 choices=list(DEFAULT_UNION_FIELDS), value=list(DEFAULT_UNION_FIELDS),
                                 multiselect=True, allow_custom_value=True, scale=2,
                                 elem_id="cc-metrics-cluster-fields")

    def cluster_controls(benchmark: str | None, fields: list[str] | None) -> tuple[Any, Any]:
        is_fe = bool(benchmark) and store.benchmark_family(benchmark) == "frameevidence"
        choices = union_field_choices(store, benchmark) if is_fe else []
        kept = [f for f in (fields or []) if f in choices] or [f for f in DEFAULT_UNION_FIELDS if f in choices]
        return gr.update(visible=is_fe), gr.update(choices=choices, value=kept)

    for trigger in (root.load, ctx.benchmark.change):
        trigger(cluster_controls, inputs=[ctx.benchmark, field_pick], outputs=[cluster_row, field_pick])

    # The tab draws when it is visible and its inputs changed: `shown` follows the tab strip, `drawn` holds
    # the key of the last drawing, and `want` (a fresh [key, n] on each accepted request) triggers the render.
    tab = gr.context.Context.block
    in_tabs = isinstance(tab, gr.Tab) and isinstance(tab.parent, gr.Tabs)
    shown = gr.State(not in_tabs)  # built outside a tab strip (a test page): always visible
    drawn = gr.State(None)
    want = gr.State(None)
    counter = itertools.count()

    def request(is_shown: bool, benchmark: str | None, selected: list[str] | None, clusters: list[str] | None,
                fields: list[str] | None, last: Any, force: bool = False) -> Any:
        extra = (tuple(clusters or ()), tuple(fields or ()))  # the Table 13 clusterings are inputs too
        key = gate(store, is_shown, benchmark, selected, tuple(last) if last else None, force, extra)
        if key is None:
            return gr.skip(), gr.skip()
        return key, [list(key), next(counter)]

    def on_tab(evt: gr.SelectData, benchmark: str | None, selected: list[str] | None, clusters: list[str] | None,
               fields: list[str] | None, last: Any) -> Any:
        is_shown = evt.value == tab.label
        return (is_shown, *request(is_shown, benchmark, selected, clusters, fields, last))

    inputs = [shown, ctx.benchmark, ctx.runs, cluster_pick, field_pick, drawn]
    if in_tabs:
        tab.parent.select(on_tab, [ctx.benchmark, ctx.runs, cluster_pick, field_pick, drawn], [shown, drawn, want],
                          api_visibility="private")
    else:
        root.load(request, inputs, [drawn, want], api_visibility="private")
    for trigger in (ctx.benchmark.change, ctx.runs.change, cluster_pick.change, field_pick.change):
        trigger(request, inputs, [drawn, want], api_visibility="private")
    ctx.refresh.click(lambda s, b, r, c, f, d: request(s, b, r, c, f, d, force=True), inputs,
                      [drawn, want], api_visibility="private")

    @gr.render(inputs=[want], triggers=[want.change], concurrency_limit=4, concurrency_id="metrics")
    def render(wanted: list[Any] | None) -> None:
        if not wanted:
            return
        benchmark, selected = wanted[0][0], list(wanted[0][1])
        clusters, fields = list(wanted[0][-2]), list(wanted[0][-1])
        if not benchmark:
            gr.Markdown("No benchmark in the store yet: import one in the **Data** tab.")
            return
        if not selected:
            gr.Markdown("Pick one or more runs in the **Runs** box above to see their metrics.",
                        elem_id="cc-metrics-empty")
            return
        try:
            family, runs, controls = run_scores(store, benchmark, list(selected), clusterings_of(clusters, fields))
        except CrosscheckError as exc:
            raise gr.Error(str(exc)) from exc
        if not runs:
            gr.Markdown("None of the picked runs exists any more: press **Refresh**.")
            return
        tables = {t.key: t for t in tables_for(family, runs, controls)}
        try:
            figs = charts.charts_for(family, runs, tables)
        except Exception as exc:  # noqa: BLE001 - a broken chart must not hide the tables
            log.exception("charts failed for %s", benchmark)
            figs = {}
            gr.Markdown(f"Charts could not be drawn ({html.escape(type(exc).__name__)}); the tables below are "
                        "complete.")
        drawing = next(_RENDERS)
        n_synth = sum(r.synthetic for r in runs)
        synth = (f" · <span class='cc-synth'>synthetic</span> {n_synth} of {len(runs)} runs are generated demo data"
                 if n_synth else "")
        gr.Markdown(f"**{benchmark}** ({family}) · {len(runs)} run{'s' if len(runs) != 1 else ''} · split "
                    f"*{html.escape(runs[0].split)}*"
                    f"{synth}  \nRates in %. Hover a value for k / n and its 95% interval; click a column header "
                    "to sort; n/a cells list their reason under the table.", elem_id="cc-metrics-summary",
                    elem_classes=[f"cc-drawing-{drawing}"])  # which drawing this is (tests wait on it)
        prefix = f"{benchmark}"
        sections = [(i, title, [k for k in tk if k in tables], [k for k in ck if k in figs])
                    for i, (title, tk, ck) in enumerate(SECTIONS.get(family, SECTIONS["generic"]))]
        sections = [s for s in sections if s[2] or s[3]]
        # a fresh Tabs on every render (unique key), opened on its first section: a re-render never keeps a
        # stale selection or the tab headers of an earlier render
        with gr.Tabs(elem_id="cc-metrics-sections", key=f"sections-{drawing}",
                     selected=f"{family}-{sections[0][0]}" if sections else None):
            for i, title, present, plots in sections:
                with gr.Tab(title, id=f"{family}-{i}"):
                    if len(plots) >= 2:
                        for j in range(0, len(plots), 2):
                            with gr.Row():
                                for key in plots[j:j + 2]:
                                    with gr.Column(min_width=380):
                                        _chart_block(figs[key], prefix, key, dl)
                    elif plots:
                        _chart_block(figs[plots[0]], prefix, plots[0], dl)
                    for key in present:
                        if key == "spur_shortcut":  # with its filter-model picker (001 §2.3)
                            shortcut_block(store, benchmark, runs, tables[key], prefix)
                        else:
                            _table_block(tables[key], prefix, dl)
