"""Gold answers and option lists as other tools write them, turned into Crosscheck letters and options."""

from __future__ import annotations

import ast
import re
from typing import Any

from core.schema import LETTERS

_LETTER_FORMS = re.compile(r"^\s*[\(\[]?\s*([A-Ha-h])\s*[\)\]]?\s*[.:)]?\s*$")


def is_null(value: Any) -> bool:
    """An empty cell: None, NaN, or a blank string."""
    if value is None:
        return True
    if isinstance(value, float) and value != value:
        return True
    return isinstance(value, str) and not value.strip()


def cell_text(value: Any) -> str:
    """A cell as text: integral floats (how spreadsheets and pandas give integers) without the '.0'."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def option_list(value: Any) -> list[str] | None:
    """A list of option texts: a list, or the text of a Python / JSON list (MMMU stores "['a', 'b']")."""
    if isinstance(value, str):
        text = value.strip()
        if not (text.startswith("[") and text.endswith("]")):
            return None
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return None
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def letter_of(value: Any, options: dict[str, str]) -> tuple[str | None, str]:
    """The gold letter of `value` among `options`, or (None, what was expected).

    Accepted: a letter ("B", "b"), a letter in brackets or with a stop ("(B)", "[B]", "B.", "B)", "B:"), an
    option index (the integer 1 or the text "1" counts from 0: index 1 is B; see docs/FORMATS.md), or the
    exact text of one option.
    """
    letters = "".join(options)
    expected = f"expected one of the letters {letters}, '(B)', 'B.', an option index 0..{len(options) - 1} " \
               "or an option's exact text"
    if is_null(value):
        return None, f"empty ({expected})"
    if isinstance(value, bool):
        return None, f"got {value!r} ({expected})"
    if isinstance(value, (int, float)) and float(value).is_integer():
        k = int(value)
        return (letters[k], "") if 0 <= k < len(letters) else (None, f"index {k} is out of range ({expected})")
    text = str(value)
    m = _LETTER_FORMS.match(text)
    if m and m.group(1).upper() in options:
        return m.group(1).upper(), ""
    if text.strip().isdigit():
        k = int(text.strip())
        return (letters[k], "") if 0 <= k < len(letters) else (None, f"index {k} is out of range ({expected})")
    matches = [letter for letter, opt in options.items() if opt.strip() == text.strip()]
    if len(matches) == 1:
        return matches[0], ""
    if len(matches) > 1:
        return None, f"{text!r:.60} is the text of several options ({', '.join(matches)})"
    return None, f"got {text!r:.60} ({expected})"


def options_of(texts: list[str]) -> dict[str, str]:
    """Option texts in order as letters A.. (at most 8; the item rules refuse more)."""
    return {LETTERS[i] if i < len(LETTERS) else f"#{i + 1}": t for i, t in enumerate(texts)}
