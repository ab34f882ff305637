"""A real local HTTP server speaking the OpenAI chat-completions protocol, for tests and bench/runners.py.

Injectable behaviour: a fixed latency per request, and failures chosen per request either from a global
`plan` (a list of actions consumed in arrival order) or from `rules` (substring of the request's text ->
action, with a count). Actions: "ok", "429", "500", "503", "400", "timeout" (sleep `hang` seconds before
answering), "malformed" (a 200 whose body is not a chat completion), "badjson" (a 200 that is not JSON).
An error action may carry a Retry-After header: "429;retry-after=1.5" sends `Retry-After: 1.5` verbatim,
"503;retry-after-date=2" sends the HTTP-date 2 s after the moment of answering.
It counts requests in flight (`max_inflight`), keeps every request body and its arrival time (`times`,
time.monotonic()), and answers with `responder(body)`. `gate` (a threading.Event, set) holds every answer while
it is cleared: a test that must see a run still going on clears it, checks, and sets it again. `hold_from` (an
arrival index, or None) clears the gate when that request arrives: a run is held at that request however fast
the server answers, so a test can cancel or look before its end at a small latency. The requests that arrived
before it are answered whatever the run's concurrency (a Start that sent more requests in flight than the test
asked for still gets its first answers). To release it, set `hold_from` to None first, then the gate (a hold not
reached yet would clear the gate again).

Run standalone (bench): python tests/chat_server.py --latency 0.1 [--port 0]; prints "PORT <n>".
"""

from __future__ import annotations

import argparse
import asyncio
import email.utils
import json
import sys
import threading
import time
from collections.abc import Callable
from typing import Any


def request_text(body: dict[str, Any]) -> str:
    """All text of a chat request, image parts as <image>."""
    out = []
    for m in body.get("messages", []):
        c = m.get("content")
        if isinstance(c, str):
            out.append(c)
            continue
        for p in c or []:
            out.append(p.get("text", "") if p.get("type") == "text" else "<image>")
    return "\n".join(out)


def request_images(body: dict[str, Any]) -> list[str]:
    """The data URLs of a request's images, in order."""
    return [p["image_url"]["url"] for m in body.get("messages", []) if isinstance(m.get("content"), list)
            for p in m["content"] if p.get("type") == "image_url"]


REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 429: "Too Many Requests", 500: "Internal Server Error",
           503: "Service Unavailable"}


class ChatServer:
    """An asyncio HTTP/1.1 server (keep-alive, one event loop in a background thread): cheap per request, so
    the client's throughput is what a bench measures."""

    def __init__(self, latency: float = 0.0, responder: Callable[[dict[str, Any]], str] | None = None,
                 hang: float = 5.0, port: int = 0) -> None:
        self.latency, self.hang = latency, hang
        self.responder = responder or (lambda body: "A")
        self.plan: list[str] = []
        self.rules: list[list[Any]] = []  # [substring, action, times_left]; times -1 = always
        self.bodies: list[dict[str, Any]] = []
        self.times: list[float] = []  # time.monotonic() at each request's arrival, parallel to `bodies`
        self.inflight = 0
        self.max_inflight = 0
        self.gate = threading.Event()
        self.gate.set()
        self.hold_from: int | None = None
        self.lock = threading.Lock()
        self.loop = asyncio.new_event_loop()
        made: list[asyncio.Server] = []

        def make() -> None:  # in a fresh thread: the caller's thread may hold a running loop (Playwright's)
            made.append(self.loop.run_until_complete(
                asyncio.start_server(self._serve, "127.0.0.1", port, backlog=512)))

        maker = threading.Thread(target=make)
        maker.start()
        maker.join()
        self.server = made[0]
        self.port = self.server.sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.thread: threading.Thread | None = None

    # ---- behaviour ----------------------------------------------------------------------------------------

    def _action(self, body: dict[str, Any]) -> tuple[str, bool]:
        """The request's action, and whether it arrived before a pending `hold_from` (then the gate never holds
        it)."""
        text = request_text(body)
        with self.lock:
            self.bodies.append(body)
            self.times.append(time.monotonic())
            early = self.hold_from is not None and len(self.bodies) <= self.hold_from
            return self._respond(text), early

    def _respond(self, text: str) -> str:
        """The action for a request whose text is `text` (under `lock`); clears the gate at a hold's request."""
        if self.hold_from is not None and len(self.bodies) > self.hold_from:
            self.gate.clear()
            self.hold_from = None
        for rule in self.rules:
            if rule[0] in text and rule[2] != 0:
                rule[2] -= 1
                return str(rule[1])
        if self.plan:
            return self.plan.pop(0)
        return "ok"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path = lines[0].split(" ")[:2]
                headers = {k.strip().lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:] if ":" in ln)}
                raw = await reader.readexactly(int(headers.get("content-length", "0")))
                self.inflight += 1
                self.max_inflight = max(self.max_inflight, self.inflight)
                try:
                    code, data, extra = await self._handle(method, path, raw)
                finally:
                    self.inflight -= 1
                writer.write(f"HTTP/1.1 {code} {REASONS.get(code, 'X')}\r\nContent-Type: application/json\r\n"
                             f"Content-Length: {len(data)}\r\n{extra}Connection: keep-alive\r\n\r\n".encode() + data)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    async def _handle(self, method: str, path: str, raw: bytes) -> tuple[int, bytes, str]:
        """(status, body, extra header lines)."""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            return 400, json.dumps({"error": {"message": "bad json"}}).encode(), ""
        if method != "POST" or path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            return 404, json.dumps({"error": {"message": f"no route {path}"}}).encode(), ""
        decided, early = self._action(body)
        action, *params = decided.split(";")
        await asyncio.sleep(self.hang if action == "timeout" else self.latency)
        if not early and not self.gate.is_set():
            await asyncio.get_running_loop().run_in_executor(None, self.gate.wait)
        if action in ("429", "500", "503", "400"):
            extra = ""
            for param in params:
                name, _, value = param.partition("=")
                if name == "retry-after-date":
                    value = email.utils.formatdate(time.time() + float(value), usegmt=True)
                extra += f"Retry-After: {value}\r\n"
            return (int(action), json.dumps({"error": {"message": f"injected {action}", "type": "injected"}}).encode(),
                    extra)
        if action == "malformed":
            return 200, json.dumps({"id": "x", "object": "chat.completion", "unexpected": True}).encode(), ""
        if action == "badjson":
            return 200, b"{not json", ""
        text = self.responder(body)
        return 200, json.dumps({
            "id": "chatcmpl-local", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "local"),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": max(1, len(text.split())), "total_tokens": 11},
        }).encode(), ""

    # ---- lifecycle ----------------------------------------------------------------------------------------

    def serve_forever(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def start(self) -> ChatServer:
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        self.gate.set()  # answers held by a test that failed before it set the gate again

        async def close() -> None:
            self.server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(close(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        if self.thread is not None:
            self.thread.join(5)
            self.loop.close()

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--latency", type=float, default=0.0)
    args = ap.parse_args()
    server = ChatServer(latency=args.latency, port=args.port)
    print(f"PORT {server.port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
