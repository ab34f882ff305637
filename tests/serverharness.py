"""A real `python app.py serve` the server tests and bench/soak.py can kill -9 and start again (tests/uiharness.py's
running_app stops its server politely and hides the process)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """`app.py serve --db DB --no-demo EXTRA...` on a free 127.0.0.1 port, its output in `log`."""

    def __init__(self, db: Path, *extra: str, env: dict[str, str] | None = None,
                 preexec_fn: Callable[[], Any] | None = None) -> None:
        self.db, self.extra, self.preexec_fn = db, extra, preexec_fn
        self.env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONUNBUFFERED": "1", **(env or {})}
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = db.parent / f"server-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Server:
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(  # noqa: PLW1509 - preexec_fn: the read-only test drops capabilities
                [sys.executable, str(ROOT / "app.py"), "serve", "--db", str(self.db), "--port", str(self.port),
                 "--no-demo", *self.extra], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=self.env,
                preexec_fn=self.preexec_fn)
        return self

    def wait_ready(self, timeout: float = 180.0) -> float:
        """Seconds until the server answers HTTP (a 401 under --auth counts); raises if it exits first."""
        assert self.proc is not None
        t0 = time.time()
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited ({self.proc.returncode}): {self.output()}")
            try:
                with urllib.request.urlopen(self.url + "/config", timeout=2):
                    return time.time() - t0
            except urllib.error.HTTPError:
                return time.time() - t0
            except Exception:  # noqa: BLE001 - still starting
                if time.time() - t0 > timeout:
                    raise RuntimeError(f"server did not start in {timeout:.0f} s: {self.output()}") from None
                time.sleep(0.2)

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
