"""OpenAI-compatible runner (the `openai` package): any chat-completions endpoint, e.g. vLLM or SGLang.

The key is read from the environment variable named by `api_key_env` when the runner starts; it is never
stored in the run config, logged, or written into an error text (it is redacted from every error message).
Images go as base64 data URLs, in order, interleaved with the text parts. Only the SDK's public API is used:
an `AsyncOpenAI` client (`max_retries=0`: the retries are this runner's) over `DefaultAsyncHttpxClient` with a
connection pool sized to the concurrency bound, called as `chat.completions.with_raw_response.create`.
Plain-http endpoints without a proxy are spoken to through a lean keep-alive HTTP/1.1 client
(core/runners/http11.py) with the SDK's headers; https, proxied hosts, and CROSSCHECK_OPENAI_TRANSPORT=sdk go
through the SDK. Calls are bounded by an asyncio semaphore; 429, 5xx, timeouts and connection errors are
retried, after the answer's Retry-After where a 429 / 503 gives one (up to RETRY_AFTER_MAX), else with
exponential backoff (with jitter); other 4xx and malformed bodies are not retried. A call that still fails
becomes a Reply with `error` set, which the engine stores as status api_error (never as a wrong answer).
"""

from __future__ import annotations

import asyncio
import base64
import email.utils
import functools
import importlib
import math
import mimetypes
import os
import random
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from core.errors import RunnerError
from core.runners import http11
from core.runners.base import Reply, Request, RunnerBase

TRANSPORT_ENV = "CROSSCHECK_OPENAI_TRANSPORT"  # "sdk": always the SDK's HTTP client; unset / "auto": lean for http://
RETRY_AFTER_MAX = 120.0  # seconds: a longer Retry-After is not waited for (the openai SDK's own limit, too)


def retry_after(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """The wait a 429 / 503 answer asks for, in seconds: `retry-after-ms` (OpenAI's), else `Retry-After` as
    delay-seconds or as an HTTP-date (RFC 9110 §10.2.3); a date in the past is 0. None when neither header is
    there or readable."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            wait = float(ms) / 1000
        except ValueError:
            wait = math.nan
        if math.isfinite(wait):
            return max(0.0, wait)
    value = (headers.get("retry-after") or "").strip()
    if not value:
        return None
    try:
        wait = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:  # "-0000": UTC (RFC 5322 §3.3)
            when = when.replace(tzinfo=UTC)
        wait = (when - (now or datetime.now(UTC))).total_seconds()
    return max(0.0, wait) if math.isfinite(wait) else None


def _httpx() -> Any:
    """The HTTP library of the installed openai SDK (httpx2 for openai >= 3, httpx before)."""
    try:
        return importlib.import_module("httpx2")
    except ImportError:  # pragma: no cover - older openai releases
        return importlib.import_module("httpx")


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


class OpenAIRunner(RunnerBase):
    """Bounded-concurrency chat-completions client with retries. `await acall(request)` never raises."""

    kind = "openai"

    def __init__(self, base_url: str | None, model: str, api_key_env: str = "OPENAI_API_KEY", concurrency: int = 8,
                 timeout: float = 120.0, max_retries: int = 5, backoff: float = 1.0, backoff_max: float = 60.0,
                 retry_after_max: float = RETRY_AFTER_MAX) -> None:
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
        self.retry_after_max = float(retry_after_max)
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
        """Build the client before the first request (the engine calls this before its request phase), and load
        what the SDK otherwise loads lazily inside the first request (its chat resources; anyio's asyncio
        backend, loaded by running anyio once)."""
        self._ensure()
        if self._pool is not None:  # the lean client loads nothing later
            return
        _ = self._client.chat.completions.with_raw_response
        try:
            import anyio

            anyio.run(anyio.sleep, 0)
        except (ImportError, RuntimeError):  # pragma: no cover - another transport, or called inside a running loop
            pass

    def _ensure(self) -> None:
        if self._client is not None:
            return
        # the SDK's own HTTP client, its pool sized to the concurrency bound: every request in flight keeps a
        # connection, and no more connections are opened than requests can be in flight
        self._http = http = _httpx()
        limits = http.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
        self._client = self.openai.AsyncOpenAI(
            base_url=self.base_url, api_key=self._key, max_retries=0, timeout=self.timeout,
            http_client=self.openai.DefaultAsyncHttpxClient(limits=limits, timeout=self.timeout))
        self._url = str(self._client.base_url).rstrip("/") + "/chat/completions"
        self._sem = asyncio.Semaphore(self.concurrency)
        lean = os.environ.get(TRANSPORT_ENV, "auto").strip().lower() != "sdk" and http11.lean_target(self._url)
        if lean:
            host, port, path = lean
            headers = {**self._client.default_headers, **self._client.auth_headers}  # the SDK's headers, auth included
            self._pool = http11.Pool(host, port, connect_timeout=self.timeout)
            self._head = self._pool.request_head(path, {k: v for k, v in headers.items() if isinstance(v, str)})

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

    def _delay(self, exc: BaseException, attempt: int) -> float | str:
        """Seconds to wait before retry `attempt + 1`, or why not to retry. A 429 / 503 answer's Retry-After
        (retry-after-ms, or Retry-After in seconds or as an HTTP-date) is the wait when it is at most
        `retry_after_max`; a longer one is not waited for (the call fails, saying so); without one, exponential
        backoff with jitter."""
        if isinstance(exc, self.openai.APIStatusError) and exc.status_code in (429, 503):
            wait = retry_after(exc.response.headers)
            if wait is not None:
                if wait > self.retry_after_max:
                    return f"Retry-After {wait:g} s exceeds the {self.retry_after_max:g} s the runner waits at most"
                return wait
        return min(self.backoff_max, self.backoff * 2 ** attempt) * (0.5 + random.random() / 2)

    async def acall(self, request: Request) -> Reply:
        """One call with retries; failures come back as Reply(error=...)."""
        self._ensure()
        assert self._sem is not None
        messages = to_openai_messages(request)
        t0 = time.perf_counter()
        attempt = 0
        while True:
            try:
                async with self._sem:
                    content = await self._post(messages, request)
                return self._reply(content, time.perf_counter() - t0)
            except Exception as exc:  # noqa: BLE001 - every failure is classified and recorded
                delay = self._delay(exc, attempt) if self._retryable(exc) and attempt < self.max_retries else None
                if isinstance(delay, float):
                    attempt += 1
                    await asyncio.sleep(delay)
                    continue
                what = type(exc).__name__
                status = exc.status_code if isinstance(exc, self.openai.APIStatusError) else None
                msg = f"{what}{f' {status}' if status else ''}: {exc}"
                if attempt:
                    msg += f" (after {attempt} retries)"
                if delay is not None:
                    msg += f" (not retried: {delay})"
                return Reply(error=self._redact(msg)[:2000], latency=time.perf_counter() - t0)

    async def _post(self, messages: list[dict[str, Any]], request: Request) -> bytes:
        """POST one chat completion and return the response body; HTTP errors, timeouts and transport failures
        raise the SDK's exception types (APIStatusError subclasses, APITimeoutError, APIConnectionError)."""
        if self._pool is not None:
            return await self._post_lean(orjson.dumps({"model": self.model, "messages": messages,
                                                       "max_tokens": request.max_tokens,
                                                       "temperature": request.temperature}))
        raw = await self._client.chat.completions.with_raw_response.create(
            model=self.model, messages=messages, max_tokens=request.max_tokens, temperature=request.temperature)
        return bytes(raw.content)

    async def _post_lean(self, body: bytes) -> bytes:
        assert self._pool is not None
        try:
            status, headers, content = await self._pool.post(self._head, body, self.timeout)
        except TimeoutError as exc:
            raise self.openai.APITimeoutError(request=self._http.Request("POST", self._url)) from exc
        except (http11.TransportError, OSError) as exc:
            raise self.openai.APIConnectionError(message=f"Connection error: {exc}",
                                                 request=self._http.Request("POST", self._url)) from exc
        if status >= 400:
            raise self._status_error(self._http.Response(status, headers=headers, content=content,
                                                    request=self._http.Request("POST", self._url)))
        return content

    def _status_error(self, response: Any) -> Exception:
        """The SDK's exception type for an error status (its documented table: 400 BadRequestError, 401
        AuthenticationError, 403 PermissionDeniedError, 404 NotFoundError, 409 ConflictError, 422
        UnprocessableEntityError, 429 RateLimitError, >= 500 InternalServerError, else APIStatusError), with the
        SDK's message: "Error code: N - <the error's message>"."""
        o = self.openai
        code = response.status_code
        body: Any = response.text.strip()
        try:
            body = orjson.loads(body)
        except ValueError:
            pass
        data = body.get("error", body) if isinstance(body, dict) else body
        message = data.get("message") if isinstance(data, dict) else None
        text = f"Error code: {code}" + (f" - {message}" if isinstance(message, str) and message else "")
        cls = {400: o.BadRequestError, 401: o.AuthenticationError, 403: o.PermissionDeniedError,
               404: o.NotFoundError, 409: o.ConflictError, 422: o.UnprocessableEntityError,
               429: o.RateLimitError}.get(code, o.InternalServerError if code >= 500 else o.APIStatusError)
        return cls(text, response=response, body=data)

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
