"""A real `python app.py serve` on port 0 that the server tests and bench/soak.py can kill -9 and start again;
tests/uiharness.py's running_app wraps it for the browser tests. The app binds port 0 and prints
`serving on http://HOST:PORT` with the port it got once its socket listens; the harness reads that line (no port
is picked beforehand, so two servers can never race for one)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
SERVING = re.compile(r"serving on http://\S+:(\d+)")


class _Output(threading.Thread):
    """Copies a server's output into its log line by line, keeps its text, and notes the port of its
    `serving on` line; `wait_for` waits on a condition of those (each line wakes it)."""

    def __init__(self, stream: IO[bytes], log: Path) -> None:
        super().__init__(daemon=True)
        self.stream, self.log = stream, log
        self.text, self.port, self.ended = "", None, False
        self.changed = threading.Condition()

    def run(self) -> None:
        with open(self.log, "ab") as out:
            for raw in self.stream:
                out.write(raw)
                out.flush()
                line = raw.decode(errors="replace")
                m = SERVING.match(line.strip()) if self.port is None else None
                with self.changed:
                    self.text += line
                    self.port = int(m.group(1)) if m else self.port
                    self.changed.notify_all()
        with self.changed:
            self.ended = True
            self.changed.notify_all()

    def wait_for(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Whether `condition` (of text, port, ended) held before `timeout` seconds passed."""
        with self.changed:
            return self.changed.wait_for(condition, timeout)


class Server:
    """`app.py serve --db DB --port 0 --no-demo EXTRA...` on 127.0.0.1, its output in `log`; `port` and `url`
    are known once wait_ready returns."""

    def __init__(self, db: Path, *extra: str, env: dict[str, str] | None = None,
                 preexec_fn: Callable[[], Any] | None = None) -> None:
        self.db, self.extra, self.preexec_fn = db, extra, preexec_fn
        self.env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONUNBUFFERED": "1", **(env or {})}
        fd, name = tempfile.mkstemp(prefix="server-", suffix=".log", dir=db.parent)
        os.close(fd)
        self.log = Path(name)
        self.port: int | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.output_thread: _Output | None = None

    @property
    def url(self) -> str:
        assert self.port is not None, "the server has not reported its port yet (call wait_ready)"
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Server:
        self.proc = subprocess.Popen(  # noqa: PLW1509 - preexec_fn: the read-only test drops capabilities
            [sys.executable, str(ROOT / "app.py"), "serve", "--db", str(self.db), "--port", "0",
             "--no-demo", *self.extra], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=self.env,
            preexec_fn=self.preexec_fn)
        assert self.proc.stdout is not None
        self.output_thread = _Output(self.proc.stdout, self.log)
        self.output_thread.start()
        return self

    def wait_ready(self, timeout: float = 180.0) -> float:
        """Seconds until the server answers HTTP (a 401 under --auth counts); raises if it exits first. Waits on
        the server's own `serving on` line, then on one request (its socket already listens)."""
        assert self.proc is not None and self.output_thread is not None
        t0 = time.time()
        out = self.output_thread
        if not out.wait_for(lambda: out.port is not None or out.ended, timeout):
            raise RuntimeError(f"server did not report its port in {timeout:.0f} s: {self.output()}")
        if out.port is None:  # its output ended: the log is complete
            raise RuntimeError(f"server exited ({self.proc.wait(30)}): {self.output()}")
        self.port = out.port
        try:
            with urllib.request.urlopen(self.url + "/config", timeout=max(1.0, timeout - (time.time() - t0))):
                pass
        except urllib.error.HTTPError:
            pass  # an HTTP answer (401 under --auth) means the server is up
        return time.time() - t0

    def kill9(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.output_thread is not None:
            self.output_thread.join(10)  # the log is complete once the output ends (at once, unless a child of
            # the app still holds it: scoring workers end when the app does)

    def wait_output(self, needle: str, timeout: float = 60.0) -> str:
        """The server's output so far, once it holds `needle` (raises if it does not within `timeout` s)."""
        assert self.output_thread is not None
        out = self.output_thread
        if not out.wait_for(lambda: needle in out.text or out.ended, timeout) or needle not in out.text:
            raise AssertionError(f"{needle!r} not in the server's output: {out.text[-4000:]}")
        return out.text

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""

    def __enter__(self) -> Server:
        self.start()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
