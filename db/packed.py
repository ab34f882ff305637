"""The packed strings of db/predictions.py's scoring read, parsed by numpy: SQLite joins a run's column into one
string (group_concat), which numpy parses without a Python object per cell. No SQL here: db/predictions.py reads,
this module parses."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported by the parsers themselves: importing this module costs nothing
    import numpy as np

ANSWER_TABLE = 1 << 16  # answers below this code point are mapped through a table indexed by code point


def keys(pks: str, keys: list[str] | None, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(item pk, rotation, repeat) arrays of a packed read (`keys`: the joined rotations and repeats, None when
    every one is 0); None when a length differs from `n` or the rows are not in (item_pk, rotation, repeat)
    order, as the row path reads them."""
    import numpy as np

    pk = np.fromstring(pks, dtype=np.int64, sep=",")
    if keys is None:  # every rotation and repeat is 0
        rotation, repeat = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    else:
        rotation = np.fromstring(keys[0], dtype=np.int64, sep=",")
        repeat = np.fromstring(keys[1], dtype=np.int64, sep=",")
    if not (len(pk) == len(rotation) == len(repeat) == n):
        return None
    if n > 1:
        d_pk = np.diff(pk)
        if keys is None:
            in_order = bool((d_pk > 0).all())
        else:
            d_rot, d_rep = np.diff(rotation), np.diff(repeat)
            in_order = bool(((d_pk > 0) | ((d_pk == 0) & ((d_rot > 0) | ((d_rot == 0) & (d_rep > 0))))).all())
        if not in_order:
            return None
    return pk, rotation, repeat


def answers(answers: str) -> np.ndarray:
    """The answer of each row from the joined one-character answers (U+0001: none)."""
    import numpy as np

    points = np.frombuffer(answers.encode("utf-32-le"), dtype=np.uint32)
    if len(points) and int(points.max()) < ANSWER_TABLE:  # a table by code point: no sort of the rows
        table = np.full(int(points.max()) + 1, None, dtype=object)
        for c in np.flatnonzero(np.bincount(points)):
            table[c] = None if c == 1 else chr(c)
        return table.take(points)
    distinct, inverse = np.unique(points, return_inverse=True)
    table = np.array([None if c == 1 else chr(c) for c in distinct], dtype=object)
    return table.take(inverse.reshape(-1))


def numbers(joined: str) -> np.ndarray:
    """float64 values of a comma-joined column of numbers: parsed as integers (token counts are; numpy parses
    those several times faster than floats), as floats when one is not."""
    import numpy as np

    try:
        return np.fromstring(joined, dtype=np.int64, sep=",").astype(float)
    except ValueError:  # a value with a decimal point or an exponent
        return np.fromstring(joined, dtype=float, sep=",")


def key_rows(sorted_keys: tuple[np.ndarray, ...], wanted: list[np.ndarray]) -> np.ndarray | None:
    """Row of each wanted (item_pk, rotation, repeat) key among keys sorted in that order; None when one is not
    among them."""
    import numpy as np

    pk, rotation, repeat = sorted_keys
    if min(int(a.min(initial=0)) for a in (*sorted_keys, *wanted)) < 0:
        return None
    width = [int(max(rotation.max(initial=0), wanted[1].max(initial=0))) + 1,
             int(max(repeat.max(initial=0), wanted[2].max(initial=0))) + 1]
    flat = (pk * width[0] + rotation) * width[1] + repeat  # lexicographic order kept: one sorted int64 key
    want = (wanted[0] * width[0] + wanted[1]) * width[1] + wanted[2]
    at = np.searchsorted(flat, want)
    if (at >= len(flat)).any() or not np.array_equal(flat.take(np.minimum(at, len(flat) - 1)), want):
        return None
    return at
