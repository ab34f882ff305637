"""The lean HTTP/1.1 client of the OpenAI runner (core/runners/http11.py) against real local sockets that answer
in the ways real servers do: chunked bodies, gzip, HTTP/1.0 close-delimited bodies, idle connections closed by
the server, garbage, silence. Errors must come back as the SDK's exception types through `OpenAIRunner.acall`."""

from __future__ import annotations

import asyncio
import gzip
import json
import socket

import pytest

from core.runners import http11
from core.runners.base import Request, run_coroutine
from core.runners.openai_runner import TRANSPORT_ENV, OpenAIRunner

REQ = Request(messages=[{"role": "user", "content": [{"type": "text", "text": "which way?"}]}], max_tokens=8)


def completion(text: str = "B") -> bytes:
    return json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": text}}]}).encode()


class RawServer:
    """A TCP server whose every answer is written by `answer(n_request, n_connection, request_body)`, which
    returns the raw bytes to send (None: close without answering; "hang": never answer; (bytes, "close"): send,
    then close)."""

    def __init__(self, answer):
        self.answer = answer
        self.connections = 0
        self.requests = 0
        self.heads: list[bytes] = []
        self.bodies: list[bytes] = []

    async def __aenter__(self):
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/v1"
        return self

    async def __aexit__(self, *exc):
        self.server.close()

    async def _serve(self, reader, writer):
        self.connections += 1
        conn = self.connections
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(next(ln.split(b":")[1] for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length")))
                body = await reader.readexactly(length)
                self.requests += 1
                self.heads.append(head)
                self.bodies.append(body)
                out = self.answer(self.requests, conn, body)
                if out == "hang":
                    await asyncio.sleep(30)
                if out is None:
                    break
                if isinstance(out, tuple):  # (bytes, "close"): answer, then close the connection
                    writer.write(out[0])
                    await writer.drain()
                    break
                writer.write(out)
                await writer.drain()
                if b"Connection: close" in out or out.startswith(b"HTTP/1.0"):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def ok(body: bytes = None, extra: bytes = b"") -> bytes:
    body = completion() if body is None else body
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), extra, body)


def runner(url: str, **kw) -> OpenAIRunner:
    r = OpenAIRunner(url, "m", api_key_env="", concurrency=4, max_retries=0, **kw)
    r.prepare()
    assert r.transport == "lean"
    return r


def calls(url: str, n: int = 2, **kw):
    async def go():
        r = runner(url, **kw)
        out = [await r.acall(REQ) for _ in range(n)]
        await r.aclose()
        return out
    return go()


def test_keep_alive_reuses_one_connection_and_sends_the_sdk_headers(monkeypatch):
    monkeypatch.delenv(TRANSPORT_ENV, raising=False)
    monkeypatch.setenv("CC_HTTP_KEY", "sk-abc-123456")

    async def main():
        async with RawServer(lambda n, c, b: ok(completion(f"answer {n}"))) as srv:
            r = OpenAIRunner(srv.url, "m", api_key_env="CC_HTTP_KEY", max_retries=0)
            r.prepare()
            big = Request(messages=[{"role": "user", "content": [{"type": "text", "text": "x" * 300_000}]}], max_tokens=8)
            out = [await r.acall(big), await r.acall(REQ), await r.acall(REQ)]
            await r.aclose()
            return srv, out

    srv, out = run_coroutine(main())
    assert [o.text for o in out] == ["answer 1", "answer 2", "answer 3"] and not any(o.error for o in out)
    assert srv.connections == 1
    head = srv.heads[0].decode("latin-1").lower()
    assert head.startswith("post /v1/chat/completions http/1.1\r\n")
    assert "authorization: bearer sk-abc-123456" in head and "content-type: application/json" in head
    assert f"host: 127.0.0.1:{srv.url.split(':')[2].split('/')[0]}" in head
    assert json.loads(srv.bodies[0])["messages"][0]["content"][0]["text"] == "x" * 300_000


def test_chunked_and_gzip_bodies():
    body = completion("C")
    chunked = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
               + b"".join(b"%x;ext=1\r\n%s\r\n" % (len(body[i:i + 7]), body[i:i + 7]) for i in range(0, len(body), 7))
               + b"0\r\nX-Trailer: t\r\n\r\n")
    gz = gzip.compress(completion("D"))
    zipped = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s" % (len(gz), gz)

    async def main():
        async with RawServer(lambda n, c, b: chunked if n % 2 else zipped) as srv:
            return srv, await calls(srv.url, 4)

    srv, out = run_coroutine(main())
    assert [o.text for o in out] == ["C", "D", "C", "D"]
    assert srv.connections == 1


def test_interim_answers_are_skipped():
    interim = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"

    async def main():
        async with RawServer(lambda n, c, b: interim + ok(completion(f"E{n}"))) as srv:
            return srv, await calls(srv.url, 2)

    srv, out = run_coroutine(main())
    assert [o.text for o in out] == ["E1", "E2"] and srv.connections == 1


def test_close_delimited_and_connection_close_answers_are_not_reused():
    http10 = b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + completion("A")
    closing = ok(extra=b"Connection: close\r\n")

    async def main():
        async with RawServer(lambda n, c, b: http10 if n == 1 else closing) as srv:
            return srv, await calls(srv.url, 3)

    srv, out = run_coroutine(main())
    assert [o.text for o in out] == ["A", "B", "B"]
    assert srv.connections == 3


def test_server_closing_an_idle_connection_is_survived():
    # every connection answers once and then closes at the next request without a byte of answer: the reused
    # connection fails before the response starts, and the request goes once more on a fresh connection
    async def main():
        async with RawServer(lambda n, c, b: ok() if n == 2 * c - 1 else None) as srv:
            return srv, await calls(srv.url, 3)

    srv, out = run_coroutine(main())
    assert [o.text for o in out] == ["B", "B", "B"] and not any(o.error for o in out)
    assert srv.connections == 3


def test_a_fresh_connection_closing_early_is_a_connection_error():
    async def main():
        async with RawServer(lambda n, c, b: None) as srv:
            return await calls(srv.url, 1)

    (out,) = run_coroutine(main())
    assert not out.text and out.error.startswith("APIConnectionError") and "closed before the response" in out.error


@pytest.mark.parametrize("raw, words", [
    (b"garbage\r\n\r\n", "not an HTTP/1.x response"),
    (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "malformed response header"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\nshort", "connection lost"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "malformed chunk size"),
    (b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\nnope", "not valid gzip"),
])
def test_malformed_responses_are_connection_errors(raw, words):
    async def main():
        async with RawServer(lambda n, c, b: (raw, "close")) as srv:
            return await calls(srv.url, 1)

    (out,) = run_coroutine(main())
    assert out.error.startswith("APIConnectionError") and words in out.error, out.error


def test_status_errors_map_to_the_sdk_types():
    def answer(n, c, b):
        code = {1: b"429 Too Many Requests", 2: b"500 Internal Server Error", 3: b"400 Bad Request"}[n]
        err = b'{"error": {"message": "injected", "type": "t"}}'
        return b"HTTP/1.1 %s\r\nContent-Length: %d\r\n\r\n%s" % (code, len(err), err)

    async def main():
        async with RawServer(answer) as srv:
            return await calls(srv.url, 3)

    out = run_coroutine(main())
    assert [o.error.split(":")[0] for o in out] == ["RateLimitError 429", "InternalServerError 500", "BadRequestError 400"]
    assert all("injected" in o.error for o in out)


@pytest.mark.parametrize("status, name", [
    (401, "AuthenticationError"), (403, "PermissionDeniedError"), (404, "NotFoundError"), (409, "ConflictError"),
    (422, "UnprocessableEntityError"), (418, "APIStatusError"), (503, "InternalServerError"),
])
@pytest.mark.parametrize("transport", ["lean", "sdk"])
def test_the_sdk_table_of_status_errors(status, name, transport, monkeypatch):
    # the lean client's mapping gives what the SDK itself gives for the same answer
    monkeypatch.setenv(TRANSPORT_ENV, transport)
    err = b'{"error": {"message": "told so", "type": "t"}}'
    raw = b"HTTP/1.1 %d X\r\nContent-Length: %d\r\n\r\n%s" % (status, len(err), err)

    async def main():
        async with RawServer(lambda n, c, b: raw) as srv:
            r = OpenAIRunner(srv.url, "m", api_key_env="", max_retries=0)
            r.prepare()
            assert r.transport == transport
            out = await r.acall(REQ)
            await r.aclose()
            return out

    out = run_coroutine(main())
    assert out.error == f"{name} {status}: Error code: {status} - told so", out.error


def test_silence_is_a_timeout_and_refusal_a_connection_error():
    async def main():
        async with RawServer(lambda n, c, b: "hang") as srv:
            (timed,) = await calls(srv.url, 1, timeout=0.3)
        with socket.socket() as s:  # a port nobody listens on
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        (refused,) = await calls(f"http://127.0.0.1:{port}/v1", 1)
        return timed, refused

    timed, refused = run_coroutine(main())
    assert timed.error.startswith("APITimeoutError")
    assert refused.error.startswith("APIConnectionError") and "cannot connect" in refused.error


def test_a_cancelled_request_does_not_leave_its_connection_in_the_pool():
    async def main():
        async with RawServer(lambda n, c, b: "hang" if n == 1 else ok()) as srv:
            r = runner(srv.url)
            task = asyncio.ensure_future(r.acall(REQ))
            await asyncio.sleep(0.2)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert r._pool is not None and r._pool._idle == []
            out = await r.acall(REQ)
            await r.aclose()
            return srv, out

    srv, out = run_coroutine(main())
    assert out.text == "B" and srv.connections == 2


def test_which_transport(monkeypatch):
    for var in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY", TRANSPORT_ENV):
        monkeypatch.delenv(var, raising=False)
    assert http11.lean_target("http://10.0.0.5:8000/v1/chat/completions") == ("10.0.0.5", 8000, "/v1/chat/completions")
    assert http11.lean_target("http://gpu-box/v1/chat/completions?x=1") == ("gpu-box", 80, "/v1/chat/completions?x=1")
    assert http11.lean_target("https://api.example.com/v1/chat/completions") is None
    assert http11.lean_target("http://user:pw@gpu-box/v1") is None
    monkeypatch.setenv("HTTP_PROXY", "http://proxy:3128")
    assert http11.lean_target("http://gpu-box:8000/v1") is None
    monkeypatch.setenv("NO_PROXY", "gpu-box")
    assert http11.lean_target("http://gpu-box:8000/v1") == ("gpu-box", 8000, "/v1")

    def transport(url):
        r = OpenAIRunner(url, "m", api_key_env="")
        r.prepare()
        return r.transport

    assert transport("http://gpu-box:8000/v1") == "lean"
    assert transport("https://api.example.com/v1") == "sdk"
    monkeypatch.setenv(TRANSPORT_ENV, "sdk")
    assert transport("http://gpu-box:8000/v1") == "sdk"
