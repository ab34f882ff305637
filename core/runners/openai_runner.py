"""OpenAI-compatible runner (the `openai` package): any chat-completions endpoint, e.g. vLLM or SGLang.

The key is read from the environment variable named by `api_key_env` when the runner starts; it is never
stored in the run config, logged, or written into an error text (it is redacted from every error message).
Images go as base64 data URLs, in order, interleaved with the text parts. Plain-http endpoints without a proxy
are spoken to through a lean keep-alive HTTP/1.1 client (core/runners/http11.py); https, proxied hosts, and
CROSSCHECK_OPENAI_TRANSPORT=sdk go through the SDK's own HTTP client. Calls are bounded by an asyncio
semaphore; 429, 5xx, timeouts and connection errors are retried with exponential backoff (with jitter);
other 4xx and malformed bodies are not retried. A call that still fails becomes a Reply with `error` set,
which the engine stores as status api_error (never as a wrong answer).
"""

from __future__ import annotations

import asyncio
import base64
import functools
import mimetypes
import os
import random
import time
from pathlib import Path
from typing import Any

import orjson

from core.errors import RunnerError
from core.runners import http11
from core.runners.base import Reply, Request

TRANSPORT_ENV = "CROSSCHECK_OPENAI_TRANSPORT"  # "sdk": always the SDK's HTTP client; unset / "auto": lean for http://


@functools.lru_cache(maxsize=256)
def _data_url(path: Path, size: int, mtime_ns: int) -> str:
    mime = mimetypes.guess_type(path.name)[0] or "image/png"
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


def data_url(path: Path) -> str:
    """The image as a base64 data URL; the encodings of recently sent files are kept (the images of a
    FrameEvidence triplet, rotations and repeats are sent again and again), keyed by size and mtime."""
    path = Path(path)
    st = path.stat()
    return _data_url(path, st.st_size, st.st_mtime_ns)


def to_openai_messages(request: Request) -> list[dict[str, Any]]:
    """Chat-completions messages: text parts as text, image parts as data URLs, order preserved."""
    out: list[dict[str, Any]] = []
    for m in request.messages:
        parts: list[dict[str, Any]] = []
        for p in m["content"]:
            if p["type"] == "image":
                parts.append({"type": "image_url", "image_url": {"url": data_url(p["path"])}})
            else:
                parts.append({"type": "text", "text": p["text"]})
        if m["role"] == "assistant":  # assistant turns as plain strings: the widest server support
            out.append({"role": "assistant", "content": "".join(p.get("text", "") for p in parts)})
        else:
            out.append({"role": m["role"], "content": parts})
    return out


class OpenAIRunner:
    """Bounded-concurrency chat-completions client with retries. `await acall(request)` never raises."""

    kind = "openai"

    def __init__(self, base_url: str | None, model: str, api_key_env: str = "OPENAI_API_KEY", concurrency: int = 8,
                 timeout: float = 120.0, max_retries: int = 5, backoff: float = 1.0, backoff_max: float = 60.0) -> None:
        if not model:
            raise RunnerError("the openai runner needs --model (the model id the endpoint serves)")
        key = os.environ.get(api_key_env) if api_key_env else None
        if api_key_env and not key:
            raise RunnerError(f"environment variable {api_key_env} is not set (it must hold the API key; "
                              "for a server without keys set it to any text, e.g. EMPTY)")
        try:
            import openai
        except ImportError as exc:
            raise RunnerError("the openai runner needs the openai package: pip install openai") from exc
        self.openai = openai
        self.base_url, self.model = base_url, model
        self._key = key or "EMPTY"
        self.concurrency = max(1, int(concurrency))
        self.timeout, self.max_retries = float(timeout), int(max_retries)
        self.backoff, self.backoff_max = float(backoff), float(backoff_max)
        self._client: Any = None
        self._sem: asyncio.Semaphore | None = None
        self._pool: http11.Pool | None = None

    def identity(self) -> dict[str, Any]:
        return {"model": self.model}

    def _redact(self, text: str) -> str:
        if self._key and self._key != "EMPTY" and len(self._key) >= 4:
            text = text.replace(self._key, "[redacted]")
        return text

    def prepare(self) -> None:
        """Build the client before the first request (the engine calls this before its request phase), and
        import what the SDK's HTTP stack otherwise imports lazily inside the first request (anyio's asyncio
        backend)."""
        self._ensure()
        if self._pool is not None:  # the lean client imports nothing later
            return
        import importlib

        for name in ("anyio._backends._asyncio", "anyio.streams.stapled", "anyio.streams.memory"):
            try:
                importlib.import_module(name)
            except ImportError:  # pragma: no cover - another transport
                pass

    def _ensure(self) -> None:
        if self._client is None:
            try:
                import httpx2 as _http  # the transport of openai >= 3
            except ImportError:  # pragma: no cover - older openai releases use httpx
                import httpx as _http  # type: ignore[no-redef]
            self._httpx = _http
            self._client = self.openai.AsyncOpenAI(base_url=self.base_url, api_key=self._key, max_retries=0,
                                                   timeout=self.timeout)
            # Requests go through the SDK's own HTTP client (its connection pool, proxy and TLS settings) with the
            # SDK's headers (auth included); responses map to the SDK's exception types below. Building each call
            # through the SDK's request machinery (options models, header merging, its retry loop) cost about a
            # millisecond of CPU per call on top, which bounded throughput at high concurrency (bench/runners.py).
            self._http = self._client._client
            self._url = str(self._client.base_url).rstrip("/") + "/chat/completions"
            headers = {**self._client.default_headers, **self._client.auth_headers}
            self._headers = {k: v for k, v in headers.items() if isinstance(v, str)}
            self._sem = asyncio.Semaphore(self.concurrency)
            lean = os.environ.get(TRANSPORT_ENV, "auto").strip().lower() != "sdk" and http11.lean_target(self._url)
            if lean:
                host, port, path = lean
                self._pool = http11.Pool(host, port, connect_timeout=self.timeout)
                self._head = self._pool.request_head(path, self._headers)

    @property
    def transport(self) -> str:
        """"lean" (core/runners/http11.py) or "sdk" (the openai SDK's HTTP client), once the client is built."""
        return "lean" if self._pool is not None else "sdk"

    async def aclose(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        if self._client is not None:
            await self._client.close()
            self._client, self._sem = None, None

    def _retryable(self, exc: BaseException) -> bool:
        o = self.openai
        if isinstance(exc, (o.APITimeoutError, o.APIConnectionError, o.RateLimitError, o.InternalServerError)):
            return True
        return isinstance(exc, o.APIStatusError) and (exc.status_code == 429 or exc.status_code >= 500)

    async def acall(self, request: Request) -> Reply:
        """One call with retries; failures come back as Reply(error=...)."""
        self._ensure()
        assert self._sem is not None
        body = orjson.dumps({"model": self.model, "messages": to_openai_messages(request),
                             "max_tokens": request.max_tokens, "temperature": request.temperature})
        t0 = time.perf_counter()
        attempt = 0
        while True:
            try:
                async with self._sem:
                    content = await self._post(body)
                return self._reply(content, time.perf_counter() - t0)
            except Exception as exc:  # noqa: BLE001 - every failure is classified and recorded
                if self._retryable(exc) and attempt < self.max_retries:
                    delay = min(self.backoff_max, self.backoff * 2 ** attempt) * (0.5 + random.random() / 2)
                    attempt += 1
                    await asyncio.sleep(delay)
                    continue
                what = type(exc).__name__
                status = getattr(exc, "status_code", None)
                msg = f"{what}{f' {status}' if status else ''}: {exc}"
                if attempt:
                    msg += f" (after {attempt} retries)"
                return Reply(error=self._redact(msg)[:2000], latency=time.perf_counter() - t0)

    async def _post(self, body: bytes) -> bytes:
        """POST one chat-completions body and return the response body; HTTP errors, timeouts and transport
        failures raise the SDK's exception types (APIStatusError subclasses, APITimeoutError, APIConnectionError),
        as the SDK does."""
        if self._pool is not None:
            return await self._post_lean(body)
        try:
            resp = await self._http.post(self._url, content=body, headers=self._headers, timeout=self.timeout)
        except self._httpx.TimeoutException as exc:
            raise self.openai.APITimeoutError(request=exc.request) from exc
        except (self._httpx.TransportError, OSError) as exc:
            request = getattr(exc, "_request", None) or self._httpx.Request("POST", self._url)
            raise self.openai.APIConnectionError(request=request) from exc
        if resp.status_code >= 400:
            raise self._client._make_status_error_from_response(resp)
        return bytes(resp.content)

    async def _post_lean(self, body: bytes) -> bytes:
        assert self._pool is not None
        try:
            status, headers, content = await self._pool.post(self._head, body, self.timeout)
        except TimeoutError as exc:
            raise self.openai.APITimeoutError(request=self._httpx.Request("POST", self._url)) from exc
        except (http11.TransportError, OSError) as exc:
            raise self.openai.APIConnectionError(message=f"Connection error: {exc}",
                                                 request=self._httpx.Request("POST", self._url)) from exc
        if status >= 400:  # the SDK's own mapping (RateLimitError, InternalServerError, BadRequestError, ...)
            resp = self._httpx.Response(status, headers=headers, content=content,
                                        request=self._httpx.Request("POST", self._url))
            raise self._client._make_status_error_from_response(resp)
        return content

    def _reply(self, content: bytes, seconds: float) -> Reply:
        try:
            body = orjson.loads(content)
            text = body["choices"][0]["message"]["content"]
        except (ValueError, AttributeError, IndexError, TypeError, KeyError):  # orjson.JSONDecodeError is a ValueError
            return Reply(error=self._redact(f"malformed response body: {content[:300]!r}"), latency=seconds)
        if text is None or not str(text).strip():
            return Reply(error="empty response", latency=seconds)
        usage = body.get("usage") or {}
        tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
        return Reply(text=str(text), tokens=tokens if isinstance(tokens, int) else None, latency=seconds)
