"""Every view is a link (docs/UI.md, "Links"): the query string carries the view, `?benchmark=B&runs=R1,R2&tab=
browse&group=G` opens exactly that, the address bar follows the user, Back returns to the previous view.

- `resolve(store, params, tabs)`: the view a query string names, as the nearest valid view (a benchmark, run, group,
  pattern or sub-tab the store lacks is left out or replaced by the default) and a one-line note saying what was
  left out; never an error.
- `query(view)`: the query string of a view (keys in `KEYS` order, empty values left out).
- `wire(demo, ctx, tabs, ...)`: on page load the view of the request's query string (gr.Request.query_params) is
  kept in a State that the header, Browse, Compare and Metrics read when they fill themselves in; every change
  of the view writes its query string into a hidden textbox whose change runs `ADDRESS_JS` in the browser
  (history.pushState; replaceState while the page lands on a link). Back reloads the page on the previous
  address, which opens that view. Only public Gradio API: `js=` on events, `demo.load`, gr.Request.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import gradio as gr  # at module level: Gradio reads the handlers' `request: gr.Request` annotations by name

from core import groups as core_groups
from ui.context import run_choices
from ui.views import cache

if TYPE_CHECKING:
    from db.store import Store


@dataclass
class View:
    """What a link opens; its fields are the query keys, in the order a link writes them (KEYS). `runs` are the
    header's picks; Browse's filters and open group, Compare's pair and the Metrics sub-tab (`section`: its id,
    "<family>-<n>") are empty when the link does not name them; so are Browse's failure-mode and item-health
    filters (`mode`, `mode_run`, `mode_vs`, `health`: ui.focus)."""

    benchmark: str | None = None
    runs: list[str] = field(default_factory=list)
    tab: str = "browse"
    split: str = ""
    kind: str = ""
    pattern: str = ""
    q: str = ""
    group: str = ""
    a: str = ""
    b: str = ""
    section: str = ""
    mode: str = ""      # Browse narrowed to a failure mode (ui.focus): its id, its run, the run it lost against
    mode_run: str = ""
    mode_vs: str = ""
    health: str = ""    # Browse narrowed to an item-health list (ui.focus): its name

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def of(cls, value: Mapping[str, Any] | None) -> View | None:
        return cls(**{k: value[k] for k in KEYS if k in value}) if value else None


KEYS = tuple(f.name for f in fields(View))  # the query keys, in the order a link writes them


def query(view: Mapping[str, Any]) -> str:
    """The query string of a view (no leading "?"): empty values and the default tab left out."""
    pairs = []
    for key in KEYS:
        value = view.get(key)
        if key == "runs":
            value = ",".join(value or [])
        if key == "tab" and value == "browse":
            continue
        if value:
            pairs.append((key, str(value)))
    return urlencode(pairs)


def _default_runs(store: Store, benchmark: str) -> list[str]:
    return [r["name"] for r in store.runs(benchmark, with_counts=False)][:2]  # the header's default (ui.shell)


def resolve(store: Store, params: Mapping[str, str], tabs: Collection[str] | None = None) -> tuple[View | None, str]:
    """(the nearest valid view the parameters name, a note of what was left out: "" when nothing was). None
    when the query string names no view (a plain visit keeps the app's defaults). `tabs`: the page's tab ids
    (ui.shell.TAB_IDS), against which the link's tab is checked; None where the caller reads no tab (the view's
    tab is then Browse's)."""
    if not any(params.get(k) for k in KEYS):
        return None, ""
    names = [b["name"] for b in store.benchmarks()]
    if not names:
        return None, "the store holds no benchmark yet"
    missing: list[str] = []
    view, known = _picks(store, params, names, missing)
    tab = params.get("tab") or "browse"
    if tabs is not None:
        view.tab = tab if tab in tabs else "browse"
        if tab not in tabs:
            missing.append(f"tab {tab!r}")
    _details(store, view, params, known, missing)
    note = f"This link names {', '.join(missing)}, which {'is' if len(missing) == 1 else 'are'} not in the " \
           f"store: showing the nearest view." if missing else ""
    return view, note


def _picks(store: Store, params: Mapping[str, str], names: list[str], missing: list[str]) -> tuple[View, list[str]]:
    """(the view of the header's picks the parameters name, the benchmark's runs): the benchmark (the store's first
    when it names none the store holds) and its runs (the header's default when it names none the benchmark
    holds)."""
    bench = params.get("benchmark") or names[0]
    if bench not in names:
        missing.append(f"benchmark {bench!r}")
        bench = names[0]
    known = [r["name"] for r in store.runs(bench, with_counts=False)]
    asked = [r.strip() for r in (params.get("runs") or "").split(",") if r.strip()]
    runs = [r for r in dict.fromkeys(asked) if r in known]
    missing += [f"run {r!r}" for r in asked if r not in known]
    if not asked or not runs:
        runs = _default_runs(store, bench)
    return View(benchmark=bench, runs=runs), known


def _details(store: Store, view: View, params: Mapping[str, str], known: list[str], missing: list[str]) -> None:
    """Browse's filters, search and group, Compare's pair and the Metrics sub-tab into `view`: each value the
    benchmark lacks is left out (and named in `missing`)."""
    assert view.benchmark is not None
    bd = cache.bench(store, view.benchmark)
    checks = {"split": bd.splits, "kind": bd.kinds, "pattern": [k for k, _ in core_groups.patterns(bd.family)]}
    for key, allowed in checks.items():
        value = params.get(key) or ""
        if value and value not in allowed:
            missing.append(f"{key} {value!r}")
            value = ""
        setattr(view, key, value)
    view.q = (params.get("q") or "").strip()[:200]
    group = (params.get("group") or "").strip()
    if group and group not in set(bd.index.frame.index):
        missing.append(f"group {group!r}")
        group = ""
    view.group = group
    for key in ("a", "b"):
        value = params.get(key) or ""
        if value and value not in known:
            missing.append(f"run {value!r}")
            value = ""
        setattr(view, key, value)
    section = params.get("section") or ""
    if section and not section.startswith(f"{bd.family}-"):
        missing.append(f"Metrics section {section!r}")
        section = ""
    view.section = section
    _focus(view, params, known, missing)


def _focus(view: View, params: Mapping[str, str], known: list[str], missing: list[str]) -> None:
    """Browse's failure-mode or item-health filter (ui.focus) into `view`: a mode of a run the benchmark lacks,
    or a list there is not, is left out (and named in `missing`)."""
    from core.item_health import LISTS

    mode, run, vs = ((params.get(k) or "").strip() for k in ("mode", "mode_run", "mode_vs"))
    if mode or run:
        bad = [f"run {r!r}" for r in (run, vs) if r and r not in known]
        if not mode.isdigit() or not run or bad:
            missing.append(", ".join(bad) or f"failure mode {mode!r} of run {run!r}")
        else:
            view.mode, view.mode_run, view.mode_vs = mode, run, vs
    health = (params.get("health") or "").strip()
    if health and health not in LISTS:
        missing.append(f"item-health list {health!r}")
    elif health and not view.mode:
        view.health = health


def from_request(store: Store, request: Any) -> View | None:
    """The view of the page's query string (gr.Request.query_params), or None without one; its tab is not read
    (the shell's landing, `wire`, opens the link's tab)."""
    params = dict(getattr(request, "query_params", None) or {}) if request is not None else {}
    return resolve(store, params)[0] if params else None


def landed(store: Store, bench: str | None, runs: list[str] | None, request: Any) -> tuple[str | None, list[str]]:
    """(benchmark, runs) a page-load handler fills its tab in for: the link's when the page was opened on one
    (the header is about to switch to them: a handler answering for the default benchmark after that switch
    would leave its pickers on the wrong benchmark), else the header's."""
    view = from_request(store, request)
    return (view.benchmark, view.runs) if view is not None else (bench, list(runs or []))


# The address bar follows the view. The server sends "push:QUERY" after a user's change (a new history entry:
# Back returns to the previous view) and "replace:QUERY" after a change the app made itself (the runs a new
# benchmark picks, the landing on a link); Back (a popstate) reloads the page on that address, which opens its
# view.
ADDRESS_JS = """
(value) => {
  if (!value) return;
  const cut = value.indexOf(':');
  const mode = value.slice(0, cut), q = value.slice(cut + 1);
  const url = location.pathname + (q ? '?' + q : '');
  if (url === location.pathname + location.search) return;
  if (mode === 'push') history.pushState(null, '', url);
  else history.replaceState(null, '', url);
}
"""
BACK_JS = """
() => {
  if (window.__ccBack) return;
  window.__ccBack = true;
  window.addEventListener('popstate', () => location.reload());
}
"""
COPY_JS = """
() => {
  const url = location.href;
  const done = () => { const b = document.querySelector('#cc-copy-link'); if (b) { b.dataset.copied = url; } };
  if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(url).then(done, () => { done(); window.prompt('Copy this link', url); });
  else { done(); window.prompt('Copy this link', url); }
}
"""


def note_html(note: str) -> str:
    """Why a link's view could not be shown as it asked ('' when it could)."""
    from ui.templating import macro

    return macro("shell.html", "link_note")(note) if note else ""


def landing(store: Store, opens_on: str | None, params: Mapping[str, str], tab_ids: Collection[str]
            ) -> tuple[Any, ...]:
    """The page load's updates for the view its query string names: (the link State, the note, the benchmark
    picker, the run picker, the tab strip, the Metrics sub-tab, the tab State). `opens_on`: the header's
    benchmark as every page opens."""
    view, why = resolve(store, params, tab_ids)
    if view is None:
        return None, note_html(why), gr.update(), gr.update(), gr.update(), gr.update(), "browse"
    # another benchmark than the one the page opens on: the header's own switch (ui.shell.picked_runs) picks the
    # link's runs (one update of the runs at a time, or the browser may keep the older one); the benchmark the
    # page opens on: no switch fires, so the runs are picked here (without it a link naming the store's first
    # benchmark opened on the default picks)
    runs = (gr.update(choices=run_choices(store, view.benchmark), value=view.runs)
            if view.benchmark == opens_on else gr.update())
    return (view.as_dict(), note_html(why), gr.update(value=view.benchmark), runs, gr.update(selected=view.tab),
            view.section or gr.update(), view.tab)


# the parts a view is read from, after the link State, the tab State and the header's pickers (`view_of`)
VIEW_PARTS = ("browse.split", "browse.kind", "browse.pattern", "browse.search", "browse.group", "compare.a",
              "compare.b", "metrics.opened", "browse.focus")


def view_of(tab: str | None, bench: str | None, runs: list[str] | None, split: str | None, kind: str | None,
            pattern: str | None, q: str | None, group: str | None, a: str | None, b: str | None,
            section: str | None, focus: Mapping[str, Any] | None = None) -> View:
    """The view the page shows (Compare's pair only on Compare, the Metrics sub-tab only on Metrics; Browse's
    failure-mode or item-health filter, `focus`: ui.focus)."""
    from ui.focus import Focus

    tab = tab or "browse"
    view = View(bench, list(runs or []), tab, split or "", kind or "", pattern or "", (q or "").strip(),
                (group or "").strip(), a or "" if tab == "compare" else "", b or "" if tab == "compare" else "",
                section or "" if tab == "metrics" else "")
    chosen = Focus.of(focus)
    if chosen is not None:
        for key, value in chosen.link_keys().items():
            setattr(view, key, value)
    return view


def by_user(link: Any, *values: Any) -> tuple[str, Any]:
    """A user's change: a new history entry; a link being landed on counts as landed."""
    link_up = {**link, "landed": True} if link and not link.get("landed") else gr.skip()
    return "push:" + query(view_of(*values).as_dict()), link_up


def by_app(link: Any, *values: Any) -> tuple[Any, Any]:
    """A change the app made: the address is replaced, once the page shows everything its link names."""
    view = view_of(*values)
    if link and not link.get("landed"):
        wanted = View.of(link)
        assert wanted is not None
        shown = view.as_dict()
        if any(v and shown.get(k) != v for k, v in wanted.as_dict().items() if k != "runs") or \
                set(view.runs) != set(wanted.runs):
            return gr.skip(), gr.skip()  # still landing: the link's address stays
        return "replace:" + query(shown), {**link, "landed": True}
    return "replace:" + query(view.as_dict()), gr.skip()


def group_opened(link: Any, *values: Any) -> tuple[Any, Any]:
    """The group view shows another group (`browse.group` is the group shown, set once the view is drawn, never
    a half-typed id): the link's own group while the page lands on it counts as the landing; any other is
    the user's (a new history entry, the link landed)."""
    wanted = View.of(link)
    if wanted is not None and not link.get("landed") and view_of(*values).group == wanted.group:
        return by_app(link, *values)
    return by_user(link, *values)


def focus_set(link: Any, *values: Any) -> tuple[Any, Any]:
    """Browse's failure-mode or item-health filter changed (ui.focus): the link's own filter while the page lands
    on it counts as the landing; any other is the user's."""
    wanted = View.of(link)
    shown, asked = view_of(*values).as_dict(), wanted.as_dict() if wanted is not None else {}
    if wanted is not None and not link.get("landed") and all(
            shown[k] == asked[k] for k in ("mode", "mode_run", "mode_vs", "health")):
        return by_app(link, *values)
    return by_user(link, *values)


def wire(demo: Any, ctx: Any, tabs: Any, note: Any, address: Any, copy: Any, tab_ids: Sequence[str]) -> Any:
    """Connect the link machinery (module docstring) once every tab has registered its parts; returns the page
    load's landing event, after which the pickers of the store's contents fill themselves in (ui.shell)."""
    store = ctx.store
    opens_on = ctx.benchmark.value  # the header's benchmark as every page opens (ui.shell)
    tab_state = gr.State("browse")
    parts = ctx.parts

    def on_load(request: gr.Request) -> tuple[Any, ...]:
        return landing(store, opens_on, dict(request.query_params or {}), tab_ids)

    page_load = demo.load(on_load, None, [ctx.link, note, ctx.benchmark, ctx.runs, tabs, parts["metrics.opened"],
                                          tab_state], api_visibility="private", queue=False, js=BACK_JS)
    for name in ("metrics.show", "compare.show"):
        fn, inputs, outputs = parts[name]
        page_load.then(fn, [ctx.link, *inputs], outputs, api_visibility="private")

    def on_tab(evt: gr.SelectData) -> str:
        return tab_ids[evt.index] if isinstance(evt.index, int) and evt.index < len(tab_ids) else "browse"

    inputs = [ctx.link, tab_state, ctx.benchmark, ctx.runs, *(parts[k] for k in VIEW_PARTS)]
    tabs.select(on_tab, None, tab_state, api_visibility="private", queue=False).then(
        by_user, inputs, [address, ctx.link], api_visibility="private", queue=False, show_progress="hidden")
    user = [ctx.benchmark.input, ctx.runs.input, parts["browse.search"].submit,
            *(parts[k].input for k in ("browse.split", "browse.kind", "browse.pattern", "compare.a", "compare.b"))]
    gr.on(user, by_user, inputs, [address, ctx.link], api_visibility="private", queue=False, show_progress="hidden")
    gr.on([ctx.runs.change, parts["metrics.opened"].change], by_app, inputs, [address, ctx.link],
          api_visibility="private", queue=False, show_progress="hidden")
    parts["browse.group"].change(group_opened, inputs, [address, ctx.link], api_visibility="private", queue=False,
                                 show_progress="hidden")
    parts["browse.focus"].change(focus_set, inputs, [address, ctx.link], api_visibility="private", queue=False,
                                 show_progress="hidden")
    address.change(None, address, None, js=ADDRESS_JS, api_visibility="private", queue=False)
    copy.click(None, None, None, js=COPY_JS, api_visibility="private", queue=False)
    return page_load
