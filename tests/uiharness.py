"""Real-app UI test support: launch `python app.py serve` (port 0, tests/serverharness.py) and drive Debian chromium."""

from __future__ import annotations

import atexit
import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

from serverharness import Server

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("CROSSCHECK_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic"]


@contextlib.contextmanager
def running_app(db: Path, *extra: str, timeout: float = 120.0, env: dict[str, str] | None = None) -> Iterator[str]:
    """Start the real app on `db` in a subprocess on a port of its own choosing (port 0; `env`: extra environment
    variables); yields its base URL once it answers; stops it afterwards."""
    server = Server(db, *extra, env=env).start()
    try:
        server.wait_ready(timeout)
        _SERVERS[server.url] = server
        yield server.url
    finally:
        server.stop()


_SERVERS: dict[str, Server] = {}


def app_log(url: str, needle: str) -> str:
    """The output so far of the app running_app started at `url`, once it holds `needle`."""
    return _SERVERS[url].wait_output(needle)


_PLAYWRIGHT: list[object] = []


def _playwright() -> object:
    """One Playwright driver per test process: the sync API cannot be started twice in one thread, and the
    browser modules keep their browsers open side by side."""
    if not _PLAYWRIGHT:
        from playwright.sync_api import sync_playwright

        pw = sync_playwright().start()
        atexit.register(pw.stop)
        _PLAYWRIGHT.append(pw)
    return _PLAYWRIGHT[0]


@contextlib.contextmanager
def browser() -> Iterator[object]:
    """A Playwright chromium browser (Debian's binary; Playwright's own download is not used)."""
    b = _playwright().chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,  # type: ignore[attr-defined]
                                      headless=True)
    try:
        yield b
    finally:
        b.close()


RUN_PROGRESS_JS = """() => { const e = document.getElementById('cc-run-progress'); if (!e) return null;
  return {status: e.dataset.status, run: e.dataset.run || null, done: Number(e.dataset.done || 0),
          total: e.dataset.total, job: e.dataset.job, text: e.innerText}; }"""


def run_progress(page) -> dict:  # type: ignore[no-untyped-def]
    """The Run tab's progress panel read in one step: status, run, counts and text of the same element (two
    separate reads can straddle a re-render and mix an earlier job's status with the new job's name)."""
    return page.evaluate(RUN_PROGRESS_JS)  # type: ignore[no-any-return]


def wait_run(page, run: str, statuses: tuple[str, ...], timeout: float = 90,  # type: ignore[no-untyped-def]
             seen: list[dict] | None = None) -> dict:
    """Wait until the progress panel shows job `run` in one of `statuses` (read in the page at every frame);
    every distinct reading of that run on the way is appended to `seen`."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.evaluate("() => { window.__ccRunSeen = []; }")
    try:
        done = page.wait_for_function(f"""([run, statuses]) => {{ const p = ({RUN_PROGRESS_JS})();
          if (!p || p.run !== run) return false;
          const s = window.__ccRunSeen, last = s[s.length - 1];
          if (!last || JSON.stringify(last) !== JSON.stringify(p)) s.push(p);
          return statuses.includes(p.status) ? p : false; }}""", arg=[run, list(statuses)], timeout=timeout * 1000)
    except PlaywrightTimeout:
        raise AssertionError(f"run {run!r} did not reach {statuses}: {run_progress(page)}") from None
    if seen is not None:
        seen.extend(page.evaluate("() => window.__ccRunSeen"))
    return done.json_value()  # type: ignore[no-any-return]


def open_section(page, name: str, content: str, timeout: float = 60) -> None:  # type: ignore[no-untyped-def]
    """Open the Metrics sub-tab `name` until `content` (a selector inside it) shows. A drawing still on its way
    when the tab is clicked (the benchmark's first one, with the runs of the picker before it changed) replaces
    the sections and opens the first: the click is then made again, as a user would."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    deadline = time.time() + timeout
    while True:
        page.get_by_role("tab", name=name).click()
        try:
            page.locator(content).first.wait_for(state="visible", timeout=5_000)
            return
        except PlaywrightTimeout:
            if time.time() > deadline:
                raise


METRICS_DRAWING_JS = """() => { const e = document.getElementById('cc-metrics-summary');
  const c = e && [...e.classList].find((c) => c.startsWith('cc-drawing-')); return c || null; }"""


def metrics_drawing(page) -> str | None:  # type: ignore[no-untyped-def]
    """Which drawing of the Metrics tab is in the page (each render numbers its summary)."""
    return page.evaluate(METRICS_DRAWING_JS)  # type: ignore[no-any-return]


def wait_new_drawing(page, old: str | None) -> str | None:  # type: ignore[no-untyped-def]
    """Wait until the Metrics tab shows a drawing other than `old`; that drawing."""
    page.wait_for_function(f"() => ({METRICS_DRAWING_JS})() !== {old!r}", timeout=60_000)
    return metrics_drawing(page)


EVENTS_JS = """(() => {
  // Counts the page's Gradio requests: a queued event is in flight from its queue/join until the queue/data
  // stream reports its process_completed; any other /gradio_api/ call (upload, run/) until its body has come
  // (not the heartbeat and upload-progress streams, which stay open).
  // A request is counted as finished two tasks after that, once Gradio has run its own handlers (and fired the
  // events chained with .then, which are then in flight themselves).
  const s = {started: 0, inflight: 0, quiet: 0, ids: new Map(), log: []};
  window.__ccEvents = s;
  const finish = () => setTimeout(() => setTimeout(() => { s.inflight -= 1; }, 0), 0);
  const completed = (id) => {
    if (s.ids.get(id) === 'pending') { s.ids.set(id, 'done'); finish(); } else s.ids.set(id, 'early');
  };
  const joined = (id) => {
    if (s.ids.get(id) === 'early') { s.ids.set(id, 'done'); finish(); } else s.ids.set(id, 'pending');
  };
  async function read(stream) {
    const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    for (;;) {
      const {value, done} = await reader.read();
      if (done) return;
      const lines = (buf + value).split('\\n');
      buf = lines.pop();
      for (const line of lines) {
        if (!line.startsWith('data:')) continue;
        try {
          const m = JSON.parse(line.slice(5));
          if (m.msg === 'process_completed' && m.event_id) completed(m.event_id);
        } catch (e) { /* not JSON: not an event message */ }
      }
    }
  }
  const native = window.fetch;
  window.fetch = async (input, init) => {
    const url = String((input && input.url) || input);
    if (!url.includes('/gradio_api/') || /heartbeat|upload_progress/.test(url)) return native.call(window, input, init);
    if (url.includes('/queue/data')) {
      const res = await native.call(window, input, init);
      if (!res.body) return res;
      const [mine, theirs] = res.body.tee();
      read(mine);
      return new Response(theirs, {status: res.status, statusText: res.statusText, headers: res.headers});
    }
    s.started += 1;
    s.inflight += 1;
    s.quiet = 0;
    s.log.push(url.split('/gradio_api/')[1].split('?')[0]);
    let res;
    try { res = await native.call(window, input, init); } catch (e) { finish(); throw e; }
    if (url.includes('/queue/join')) {
      res.clone().json().then((j) => (j && j.event_id ? joined(j.event_id) : finish()), finish);
    } else {
      res.clone().arrayBuffer().then(finish, finish);
    }
    return res;
  };
})();"""


def shot(page, name: str) -> None:  # type: ignore[no-untyped-def]
    """A full-page screenshot `name` in $CROSSCHECK_SHOTS when it is set (look at them when a view changes), else
    nothing: a full-page PNG of a long tab costs the browser about 0.3 s of CPU, and no test reads one."""
    folder = os.environ.get("CROSSCHECK_SHOTS")
    if folder:
        page.screenshot(path=os.path.join(folder, name), full_page=True)


def open_page(b, **options):  # type: ignore[no-untyped-def]
    """A fresh page in a context of its own (no cookies, storage or state shared with another test) on browser
    `b`, counting its Gradio events (events_started / wait_events). Close it with `page.context.close()`."""
    context = b.new_context(**options)
    context.add_init_script(EVENTS_JS)
    return context.new_page()


def events_started(page) -> int:  # type: ignore[no-untyped-def]
    """How many Gradio requests the page has sent so far (read it before the action whose events you wait for)."""
    return page.evaluate("() => window.__ccEvents.started")  # type: ignore[no-any-return]


def wait_events(page, before: int, timeout: float = 60_000) -> None:  # type: ignore[no-untyped-def]
    """Wait until the page has sent a Gradio request since `before` (an events_started reading) and every request
    has finished, the events chained after them included: what an action fired has come back, so a check that
    nothing changed can be made. "Finished" holds over three animation frames in a row with nothing sent: Gradio
    renders an answer (no frame is drawn meanwhile) before it sends the event chained after it. Only for an action
    that always sends (a changed value, a click on another tab, a button): one that may send nothing would wait
    out the timeout; wait for the condition the test checks instead, or use settle."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.evaluate("() => { window.__ccEvents.quiet = 0; }")
    try:
        page.wait_for_function(f"""() => {{ const s = window.__ccEvents;
            if (s.started <= {before} || s.inflight !== 0) {{ s.quiet = 0; return false; }}
            s.quiet += 1; return s.quiet >= 3; }}""", timeout=timeout)
    except PlaywrightTimeout:
        state = page.evaluate("() => { const s = window.__ccEvents; return {started: s.started, inflight: s.inflight,"
                              " events: [...s.ids.entries()].filter(([, v]) => v !== 'done'), log: s.log}; }")
        if state["started"] <= before:
            raise AssertionError(
                f"the action sent no request (sent before and after: {before}): an action that changes nothing (a "
                "pick of the value already picked, a click on a disabled button or on the tab already shown) "
                "sends none; wait for the condition the test checks, or settle(page, tab)") from None
        raise AssertionError(f"the page's requests did not all come back (sent before: {before}): {state}") from None


def settle(page, shown: str, via: str = "Browse") -> None:  # type: ignore[no-untyped-def]
    """Wait until whatever earlier actions sent has come back, when they may have sent nothing (a click on a
    disabled button): the `via` tab and then the `shown` one are clicked, whose select events are sent after
    anything earlier, and wait_events waits for those and for every request still in flight. `via` is another tab
    than `shown` (a click on the tab already shown sends nothing)."""
    assert via != shown, f"settle via another tab than {shown!r}"
    sent = events_started(page)
    page.get_by_role("tab", name=via, exact=True).click()
    page.get_by_role("tab", name=shown, exact=True).click()
    wait_events(page, sent)


VIEWS = [(1440, "light"), (1440, "dark"), (1024, "light"), (1024, "dark")]  # (width, colour scheme) a page is read in

# every chart of the page drawn at its box's width (the app redraws a chart whose box changed size, ui.metrics
# FIT_JS): after a resize the overflow and chart checks read the charts the reader sees at that width
CHARTS_FITTED = """() => [...document.querySelectorAll('.js-plotly-plot')].every((gd) => {
  const svg = gd.querySelector('.main-svg');
  return !gd.offsetParent || !svg || Math.abs(Number(svg.getAttribute('width')) - gd.clientWidth) <= 1; })"""

# no colour still on its way: the theme's colours are eased in (Gradio's buttons and inputs have CSS transitions),
# and a text read in the middle of one has a contrast of neither theme (getAnimations starts the pending ones)
TRANSITIONS_DONE = "() => !document.getAnimations().some((a) => a instanceof CSSTransition && a.playState === 'running')"


def views(page, check, which: list[tuple[int, str]] = VIEWS) -> None:  # type: ignore[no-untyped-def]
    """`check(width, scheme)` in each of `which` (width, colour scheme) on the page as it is, drawn once: the window
    resized, and the colour scheme the browser reports switched (Gradio's own listener on it sets or clears
    body.dark, as when a reader's system changes theme), once the body's class, every chart's width and every
    colour follow. One page read in four views costs a quarter of four fresh pages (tests/ui/test_ui_themes.py:
    641 s -> 190 s on the loaded machine) and reads the same things."""
    for width, scheme in which:
        page.set_viewport_size({"width": width, "height": 1000})
        page.emulate_media(color_scheme=scheme)
        page.wait_for_function("(dark) => document.body.classList.contains('dark') === dark", arg=scheme == "dark")
        page.wait_for_function(CHARTS_FITTED)
        page.wait_for_function(TRANSITIONS_DONE)
        check(width, scheme)
