"""A lean HTTP/1.1 keep-alive client for plain-http chat-completions endpoints (vLLM, SGLang, a lab's own server).

The OpenAI runner sends through this when the base URL is `http://` and no proxy applies to its host; https
endpoints, proxied hosts and `CROSSCHECK_OPENAI_TRANSPORT=sdk` go through the openai SDK's own HTTP client
instead (docs/RUNNERS.md). The reason is CPU: the SDK's stack (httpx, httpcore, anyio, h11) costs about 2 ms of
event-loop time per request, so at concurrency 16 with fast answers the answers queue behind each other; this
client costs a fraction of that (bench/runners.py).

What it speaks: one request per connection at a time, connections kept alive and reused (LIFO), the whole request
written in one send, interim 1xx answers skipped, responses framed by Content-Length, chunked transfer coding,
or connection close; gzip / deflate bodies decoded although none is asked for. A connection the server has closed while idle is dropped
before reuse; a reused connection that fails before any byte of the answer arrives is retried once on a fresh
one (the server may have closed it at the same moment). Failures raise `TransportError` (connection refused,
reset, malformed response) or `TimeoutError`; the runner maps them to the SDK's exception types.
"""

from __future__ import annotations

import asyncio
import urllib.request
import zlib
from urllib.parse import urlsplit
from urllib.request import getproxies_environment


class TransportError(Exception):
    """The request could not be completed: connection failure, reset, or a response that is not HTTP/1.x."""


def lean_target(url: str) -> tuple[str, int, str] | None:
    """(host, port, path) when `url` can go through this client: plain http and no proxy for its host."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname or parts.username or parts.password:
        return None
    proxies = getproxies_environment()
    bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]
    if ("http" in proxies or "all" in proxies) and not bypass(parts.hostname):
        return None
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return parts.hostname, parts.port or 80, path


class _Conn:
    __slots__ = ("reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    def usable(self) -> bool:
        return not self.reader.at_eof() and not self.writer.is_closing()

    def close(self) -> None:
        self.writer.close()


class _EarlyClose(TransportError):
    """The connection closed before any byte of the response (retryable once on a reused connection)."""


class Pool:
    """Keep-alive connections to one host:port, bound to the event loop that first uses it."""

    def __init__(self, host: str, port: int, connect_timeout: float = 30.0) -> None:
        self.host, self.port, self.connect_timeout = host, port, connect_timeout
        self._host_header = host if port == 80 else f"{host}:{port}"
        if ":" in host:  # IPv6 literal
            self._host_header = f"[{host}]" if port == 80 else f"[{host}]:{port}"
        self._idle: list[_Conn] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self.closed = False

    def request_head(self, path: str, headers: dict[str, str]) -> bytes:
        """The fixed part of a POST's head (everything but Content-Length), built once per runner."""
        skip = {"host", "content-length", "transfer-encoding", "connection"}
        lines = [f"POST {path} HTTP/1.1", f"Host: {self._host_header}"]
        lines += [f"{k}: {v}" for k, v in headers.items() if k.lower() not in skip]
        return ("\r\n".join(lines) + "\r\n").encode("latin-1")

    async def _connect(self) -> _Conn:
        try:
            async with asyncio.timeout(self.connect_timeout):
                reader, writer = await asyncio.open_connection(self.host, self.port, limit=1 << 20)
        except TimeoutError:
            raise
        except OSError as exc:
            raise TransportError(f"cannot connect to {self._host_header}: {exc}") from exc
        return _Conn(reader, writer)

    def _take(self) -> _Conn | None:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # connections of another (finished) loop cannot be used here
            self._idle, self._loop = [], loop
        while self._idle:
            conn = self._idle.pop()
            if conn.usable():
                return conn
            conn.close()
        return None

    async def post(self, head: bytes, body: bytes, timeout: float) -> tuple[int, dict[str, str], bytes]:
        """Send one POST (head from `request_head`) and return (status, lower-cased headers, decoded body)."""
        async with asyncio.timeout(timeout):
            conn = self._take()
            if conn is not None:
                try:
                    return await self._exchange(conn, head, body)
                except _EarlyClose:
                    pass  # the server closed the idle connection as we reused it: once more on a fresh one
            return await self._exchange(await self._connect(), head, body)

    async def _exchange(self, conn: _Conn, head: bytes, body: bytes) -> tuple[int, dict[str, str], bytes]:
        keep = False
        try:
            conn.writer.write(b"%sContent-Length: %d\r\n\r\n%s" % (head, len(body), body))
            try:
                raw = await conn.reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError as exc:
                if not exc.partial:
                    raise _EarlyClose("connection closed before the response") from exc
                raise TransportError("connection closed inside the response head") from exc
            except ConnectionError as exc:
                raise _EarlyClose(f"connection lost: {exc}") from exc
            except asyncio.LimitOverrunError as exc:
                raise TransportError("response head over 1 MiB") from exc
            status, version, headers = _parse_head(raw)
            while 100 <= status < 200:  # interim answers (100 Continue, 103 Early Hints): the final one follows
                status, version, headers = _parse_head(await conn.reader.readuntil(b"\r\n\r\n"))
            content, framed = await _read_body(conn.reader, headers)
            encoding = headers.get("content-encoding", "").strip().lower()
            if encoding in ("gzip", "x-gzip", "deflate"):
                content = zlib.decompress(content, 47 if "gzip" in encoding else 15)  # 47: gzip or zlib header
            conn_hdr = headers.get("connection", "").lower()
            keep = framed and "close" not in conn_hdr and (version == "HTTP/1.1" or "keep-alive" in conn_hdr)
            return status, headers, content
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            raise TransportError(f"connection lost while reading the response: {exc}") from exc
        except zlib.error as exc:
            raise TransportError(f"response body is not valid {encoding}: {exc}") from exc
        finally:
            if keep and not self.closed and asyncio.get_running_loop() is self._loop:
                self._idle.append(conn)
            else:
                conn.close()

    def close(self) -> None:
        self.closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            try:
                conn.close()
            except RuntimeError:  # its loop is already closed
                pass


def _parse_head(raw: bytes) -> tuple[int, str, dict[str, str]]:
    lines = raw.decode("latin-1").split("\r\n")
    status_line = lines[0].split(" ", 2)
    if len(status_line) < 2 or not status_line[0].startswith("HTTP/1.") or not status_line[1].isdigit():
        raise TransportError(f"not an HTTP/1.x response: {lines[0][:100]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise TransportError(f"malformed response header line: {line[:100]!r}")
        key = name.strip().lower()
        headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
    return int(status_line[1]), status_line[0], headers


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> tuple[bytes, bool]:
    """The body and whether its end was framed (so the connection can be reused)."""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        parts: list[bytes] = []
        while True:
            size_line = await reader.readuntil(b"\r\n")
            try:
                size = int(size_line.split(b";", 1)[0].strip(), 16)
            except ValueError as exc:
                raise TransportError(f"malformed chunk size line: {size_line[:50]!r}") from exc
            if size == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                    pass
                return b"".join(parts), True
            parts.append((await reader.readexactly(size + 2))[:-2])
    length = headers.get("content-length")
    if length is not None:
        try:
            n = int(length)
        except ValueError as exc:
            raise TransportError(f"malformed Content-Length: {length[:50]!r}") from exc
        return await reader.readexactly(n), True
    return await reader.read(), False
