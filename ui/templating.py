"""The app's one Jinja2 environment: every HTML fragment the UI shows, and the one-file report, is a template of
ui/templates/ filled with plain data (dicts, small dataclasses, strings and numbers) that Python prepares.

Autoescape is on for every template, so a text from a model, a benchmark file or an annotator is escaped where
it enters the page, once; an undefined name fails (StrictUndefined) instead of printing nothing. `Markup` is
used only for HTML another template produced and for the app's own stylesheets and scripts (each place says
so), never for data.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

TEMPLATES = Path(__file__).resolve().parent / "templates"

# JSON inside <script type="application/json">: the element's text is not HTML-unescaped by the browser, so the
# JSON is written with `<`, `>` and `&` (and the two JavaScript line separators) as \u escapes instead, and no
# `</script>` or `<!--` can form in it
_SCRIPT_JSON_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026", 0x2028: "\\u2028",
                        0x2029: "\\u2029"}


def script_json(text: str) -> Markup:
    """JSON text made safe as the content of a <script type="application/json"> element (the `script_json`
    filter). Its own escaping, not HTML's: the browser does not unescape a script element's text."""
    return Markup(str(text).translate(_SCRIPT_JSON_ESCAPES))  # escaped for the script context, just above


ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATES),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    auto_reload=False,  # a template is read once per process: no stat of its file per render
)
ENV.filters["script_json"] = script_json


def render(template: str, **context: Any) -> str:
    """The text of `template` (a path under ui/templates/) filled with `context`."""
    return ENV.get_template(template).render(**context)


def macro(template: str, name: str) -> Callable[..., str]:
    """The macro `name` of `template` as a function returning its text (for a helper whose callers want one
    piece, e.g. a right / wrong mark)."""
    fn = vars(ENV.get_template(template).module)[name]  # the template's exported names (Template.module)

    def call(*args: Any, **kwargs: Any) -> str:
        return str(fn(*args, **kwargs))

    return call


def trusted(text: str) -> Markup:
    """The app's own stylesheet or script text (a constant of the source, never data) as it goes into a <style>
    or <script> element, where HTML escaping would break it."""
    return Markup(text)  # app constants only: see the docstring


def style(css: str) -> str:
    """A <style> element holding the app's own stylesheet text `css` (a constant of the source)."""
    return macro("style.html", "style")(trusted(css))
