"""Wiring plain handler functions into Gradio events (issue 17 point 7).

A tab's handlers are module-level functions: the store (and, where it matters, whether the app runs with
--auth) first, then the plain values of the event's inputs, returning plain values (`gr.update` dicts
included). Tests call them directly on a real store, as datasette tests its filters. `bind` fixes those first
arguments for the layout: the bound function shows Gradio the rest of the signature (so a trailing
`request: gr.Request` is still filled in), and it translates the small named errors raised below it
(core.errors.CrosscheckError) into `gr.Error` once, here (`user_error`: one line in the server log, the message
in the page; no traceback, since the user's input, not the server, is at fault).
"""

from __future__ import annotations

import functools
import inspect
import logging
import typing
from collections.abc import Callable
from typing import Any

import gradio as gr

from core.errors import CrosscheckError

log = logging.getLogger("crosscheck.ui")


def user_error(message: str) -> gr.Error:
    """The `gr.Error` for a user's mistake (a named CrosscheckError, a missing pick): logged as one line, shown
    in the page, and no traceback in the server log (Gradio prints one for every gr.Error unless told not to)."""
    log.warning("user error: %s", message)
    return gr.Error(message, print_exception=False)


def bind(fn: Callable[..., Any], *first: Any) -> Callable[..., Any]:
    """`fn` with its first `len(first)` arguments fixed, as Gradio should see it."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*first, *args, **kwargs)
        except CrosscheckError as exc:
            raise user_error(str(exc)) from exc

    sig = inspect.signature(fn)
    rest = list(sig.parameters.values())[len(first):]
    call.__signature__ = sig.replace(parameters=rest)  # type: ignore[attr-defined]
    hints = typing.get_type_hints(fn)
    call.__annotations__ = {p.name: hints[p.name] for p in rest if p.name in hints}
    if "return" in hints:
        call.__annotations__["return"] = hints["return"]
    del call.__wrapped__  # type: ignore[attr-defined]  # Gradio reads __signature__ and the hints above
    return call


def username(request: Any) -> str | None:
    """The signed-in user of a request (None without --auth, or for a handler called without a request)."""
    user = request.username if request is not None else None
    return str(user) if user else None
