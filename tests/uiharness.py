"""Real-app UI test support: launch `python app.py serve` on a free port and drive Debian chromium."""

from __future__ import annotations

import atexit
import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("CROSSCHECK_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def running_app(db: Path, *extra: str, timeout: float = 120.0, env: dict[str, str] | None = None) -> Iterator[str]:
    """Start the real app on `db` in a subprocess (`env`: extra environment variables); yields its base URL;
    stops it afterwards."""
    port = free_port()
    log = open(db.parent / f"app-{port}.log", "w")  # noqa: SIM115 - closed below
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONUNBUFFERED": "1", **(env or {})}
    proc = subprocess.Popen([sys.executable, str(ROOT / "app.py"), "serve", "--db", str(db), "--port", str(port),
                             "--no-demo", *extra], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"app exited ({proc.returncode}): {(db.parent / f'app-{port}.log').read_text()}")
            try:
                with urllib.request.urlopen(url + "/config", timeout=2):
                    break
            except urllib.error.HTTPError:
                break  # an HTTP answer (401 under --auth) means the server is up
            except Exception:  # noqa: BLE001 - still starting
                if time.time() > deadline:
                    raise RuntimeError("app did not start in time") from None
                time.sleep(0.05)  # bench/scale.py times the start-up through this loop
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


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


def run_progress(page) -> dict:  # type: ignore[no-untyped-def]
    """The Run tab's progress panel read in one step: status, run, counts and text of the same element (two
    separate reads can straddle a re-render and mix an earlier job's status with the new job's name)."""
    return page.locator("#cc-run-progress").evaluate(
        "e => ({status: e.dataset.status, run: e.dataset.run || null, done: Number(e.dataset.done || 0),"
        " total: e.dataset.total, job: e.dataset.job, text: e.innerText})")


def wait_run(page, run: str, statuses: tuple[str, ...], timeout: float = 90,  # type: ignore[no-untyped-def]
             seen: list[dict] | None = None) -> dict:
    """Poll the progress panel until it shows job `run` in one of `statuses`; every reading of that run is
    appended to `seen`."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        p = run_progress(page)
        if p["run"] == run:
            if seen is not None:
                seen.append(p)
            if p["status"] in statuses:
                return p
        time.sleep(0.25)
    raise AssertionError(f"run {run!r} did not reach {statuses}: {run_progress(page)}")


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
