"""The one module that reads predictions (docs/ARCHITECTURE.md, "Reading predictions").

Every SQL statement of the product that reads the `predictions` table or the `predictions_effective` view is
here; tests/test_schema.py checks that no other module of app.py, core/, db/ or ui/ holds one (db/schema.py's
migrations aside). A prediction is read as the view gives it (db.schema.PREDICTIONS_READ): the row as imported or
written by a runner, with its active extraction-audit override applied (db/overrides.py decides which). A run
without any override row reads the predictions table instead, which the view returns unchanged for it without
looking an override up per row (the view's cost: the packed read of a 19,533-prediction run takes 14 ms from the
table, 21 ms through the view). Only the imports' comparisons with the rows they replace (`stored_rows`,
`has_rows`, `keys`) read the table as imported on purpose.

The readers take a `Source` (db.store.Store is one): this module imports no db/ module but db.schema and
db.packed (the parsers of its packed strings), so the store calls it and nothing imports back.

- `run_frame`: one run's predictions as the frame of docs/ARCHITECTURE.md, the scoring read (db.frames and
  `Store.predictions_frame`). It picks its path itself: packed (a few strings SQLite builds and numpy parses)
  for the scoring columns, else a Python object per cell.
- `outcome_arrays`: the outcome columns of many runs in one query (the Browse list); `group_prediction_records`:
  one group's predictions of many runs (the group views).
- the smaller reads: `done_keys` (the runners), `counts` / `count` / `runs_holding` (run lists, the Run tab's
  jobs, the pickers' fingerprint), `problem_predictions` / `count_statuses` (the audit), `trace_rows` /
  `runs_with_traces` (the trace judge), `trace_item_pk` (labels), `effective_row` / `override_in_effect`
  (overrides), and the imports' `stored_rows`, `has_rows` and `keys`; `index_new_rows` feeds the search index
  (db/search.py).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from core.schema import PRED_COLUMNS, STATUSES
from db import packed
from db.schema import PREDICTIONS_READ

if TYPE_CHECKING:  # numpy and pandas are imported by the readers that build arrays: the imports' reads need neither
    import numpy as np
    import pandas as pd

    from core.outcomes import Preds

# What core/metrics reads from a run's predictions (no metric reads response, shown, latency, probs or error).
SCORING_COLUMNS = ("item_id", "rotation", "repeat", "status", "answer", "input_mode", "trace", "tokens")
_TABLE = "predictions"


class Source(Protocol):
    """What the readers need of a store (db.store.Store; db.validate's dry-run store passes its calls on): the
    calling thread's connection, and `snapshot()`, inside which every read sees one state of the store."""

    @property
    def conn(self) -> sqlite3.Connection: ...

    def snapshot(self) -> AbstractContextManager[sqlite3.Connection]: ...


def object_column(values: Sequence[Any]) -> pd.Series:
    """An object column (pandas 3 would otherwise infer its string dtype, with NaN for None)."""
    import numpy as np
    import pandas as pd

    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    return pd.Series(arr, dtype=object, copy=False)


def _source(store: Source, run_id: int) -> str:
    """Where run `run_id`'s effective rows are read: the view for a run with any override row, else the table."""
    return PREDICTIONS_READ if layered_runs(store, [run_id]) else _TABLE


# --------------------------------------------------------------------------- one run's frame: the scoring read

# Reading is most of the cost at scale, and most of that is making a Python object per cell. These columns come
# back as values Python shares (small integers, None) and are mapped back: the status as a code for the shared
# status strings, input_mode (NOT NULL in the schema) as NULL where it is the usual "all".
_SQL = {"item_id": "item_pk",
        "status": "CASE status WHEN 'ok' THEN 0 WHEN 'invalid' THEN 1 WHEN 'api_error' THEN 2 ELSE status END",
        "input_mode": "CASE input_mode WHEN 'all' THEN NULL ELSE input_mode END"}


def run_frame(store: Source, run_id: int, item_ids: dict[int, str] | tuple[np.ndarray, np.ndarray],
              columns: Sequence[str] = PRED_COLUMNS, rows_out: list[np.ndarray] | None = None) -> pd.DataFrame:
    """The predictions of one run (by id) in key order, effective values, restricted to `columns` (in PRED_COLUMNS
    order): the frame of docs/ARCHITECTURE.md that `Store.predictions_frame` returns and db.frames loads.

    `item_ids` maps item pk -> item_id: a dict, or (pk_to_row, item_id per row) arrays (`pk_rows`; what
    db.frames passes), in which case the item row of each prediction is appended to `rows_out` when given. With
    the arrays and only scoring columns (SCORING_COLUMNS or fewer, item_id among them) the run is read packed,
    else (or when the run does not fit the packed read) row by row; both give the same frame (tests/test_frames.py).
    Every read sees one state of the store (Store.snapshot).
    """
    unknown = [c for c in columns if c not in PRED_COLUMNS]
    if unknown:
        raise ValueError(f"unknown prediction columns {unknown}; expected some of {', '.join(PRED_COLUMNS)}")
    wanted = [c for c in PRED_COLUMNS if c in columns]
    with store.snapshot():
        source = _source(store, run_id)
        if not isinstance(item_ids, dict) and set(wanted) <= _PACKED_COLUMNS and "item_id" in wanted:
            packed = _packed_frame(store, run_id, item_ids, wanted, rows_out, source)
            if packed is not None:
                return packed
        return _row_frame(store, run_id, item_ids, wanted, rows_out, source)


def _row_frame(store: Source, run_id: int, item_ids: dict[int, str] | tuple[np.ndarray, np.ndarray],
               wanted: list[str], rows_out: list[np.ndarray] | None, source: str) -> pd.DataFrame:
    """`run_frame` read row by row: every column, any value."""
    import numpy as np
    import pandas as pd

    rows = store.conn.execute(f"SELECT {', '.join(_SQL.get(c, c) for c in wanted)} FROM {source}"
                              " WHERE run_id = ? ORDER BY item_pk, rotation, repeat", (run_id,)).fetchall()
    cols = list(zip(*rows, strict=True)) if rows else [()] * len(wanted)
    n = len(rows)
    data: dict[str, Any] = {}
    for name, col in zip(wanted, cols, strict=True):
        if name == "item_id":
            if isinstance(item_ids, dict):
                data[name] = object_column([item_ids[pk] for pk in col])
            else:
                pk_to_row, ids = item_ids
                item_rows = pk_to_row.take(np.fromiter(col, dtype=np.int64, count=n))
                if (item_rows < 0).any():
                    raise ValueError(f"run id {run_id}: a prediction's item is not among the benchmark's items")
                data[name] = pd.Series(ids.take(item_rows), dtype=object, copy=False)
                if rows_out is not None:
                    rows_out.append(item_rows)
        elif name == "status":
            try:
                codes = np.fromiter(col, dtype=np.int64, count=n)
            except (TypeError, ValueError):  # a status outside the schema's three: keep the text
                data[name] = object_column([STATUSES[v] if isinstance(v, int) else v for v in col])
            else:
                data[name] = pd.Series(np.array(STATUSES, dtype=object).take(codes), dtype=object, copy=False)
        elif name == "input_mode":
            arr = np.array(col, dtype=object)
            arr[arr == None] = "all"  # noqa: E711 - elementwise: NULL here stands for "all"
            data[name] = pd.Series(arr, dtype=object, copy=False)
        elif name in ("rotation", "repeat"):
            data[name] = pd.Series(np.fromiter(col, dtype=np.int64, count=n))
        elif name == "tokens":
            data[name] = pd.Series(np.array([np.nan if v is None else v for v in col], dtype=float))
        elif name == "latency":
            # as pandas' SQL reader: float64 when any value is known, else an object column of None
            known = any(v is not None for v in col)
            data[name] = (pd.Series(np.array([np.nan if v is None else v for v in col], dtype=float)) if known
                          else object_column(col))
        elif name == "probs":
            data[name] = object_column([orjson.loads(v) if v else None for v in col])
        else:
            data[name] = object_column(col)
    return pd.DataFrame(data)


_PACKED_COLUMNS = frozenset({"item_id", "rotation", "repeat", "status", "answer", "input_mode", "trace", "tokens"})
_PACKED_SQL = (
    "SELECT COUNT(*), group_concat(item_pk), max(rotation != 0) + max(repeat != 0),"
    " group_concat(CASE status WHEN 'ok' THEN 0 WHEN 'invalid' THEN 1 WHEN 'api_error' THEN 2 ELSE 3 END, ''),"
    " group_concat(coalesce(answer, char(1)), ''), group_concat(coalesce(tokens, -1)),"
    " min(tokens), {traces}, COUNT(nullif(input_mode, 'all')) {trace_values}"
    # a missing token count reads as -1, unless a count is negative (then which are missing is read apart);
    # no ORDER BY: the primary key (run_id, item_pk, rotation, repeat) feeds the rows in key order, and the
    # order is checked after parsing (any other order falls back to the row path)
    " FROM {source} WHERE run_id = ?")
# The traces in the same scan, when the trace column is wanted: which rows have one, and the values (group_concat
# leaves NULLs out) joined by U+001E; a value holding U+001E makes the count differ, and that run's values are
# read by key instead. Without it no trace is read (the texts are about 40% of a run's SQL time at StemBind scale).
_PACKED_TRACE_SQL = {True: {"traces": "COUNT(trace)",
                            "trace_values": ", group_concat(trace IS NOT NULL, ''), group_concat(trace, char(30))"},
                     False: {"traces": "0", "trace_values": ", NULL, NULL"}}
# Read only for a run that needs them (in the same snapshot): rotations and repeats when one is not 0 (most runs
# have none: their key order is the item order), input modes other than "all" when the run has one.
_PACKED_EXTRA_SQL = {"keys": "group_concat(rotation), group_concat(repeat)",
                     "input_mode": "group_concat(input_mode != 'all', ''), group_concat(nullif(input_mode, 'all'), char(30))"}


def _packed_frame(store: Source, run_id: int, lookup: tuple[np.ndarray, np.ndarray], wanted: list[str],
                  rows_out: list[np.ndarray] | None, source: str = PREDICTIONS_READ) -> pd.DataFrame | None:
    """The scoring columns of one run read as a few packed strings that SQLite builds (group_concat) and numpy
    parses, instead of a Python object per cell; traces and input modes other than "all" are read for the rows
    that have them. None when the run does not fit this path (no rows, an answer longer than one character, a
    status outside the schema's three, rows out of key order): the caller reads it row by row. Its reads see one
    state of the store (Store.snapshot)."""
    with store.snapshot():
        return _packed_read(store, run_id, lookup, wanted, rows_out, source)


def _packed_read(store: Source, run_id: int, lookup: tuple[np.ndarray, np.ndarray], wanted: list[str],
                 rows_out: list[np.ndarray] | None, source: str) -> pd.DataFrame | None:
    import numpy as np
    import pandas as pd

    conn = store.conn
    (n, pks, keyed, codes, answers, tokens, min_tokens, n_trace, n_mode, *traces) = conn.execute(
        _PACKED_SQL.format(source=source, **_PACKED_TRACE_SQL["trace" in wanted]), (run_id,)).fetchone()
    if not n or len(answers) != n or len(codes) != n or "3" in codes:
        return None
    extra = [k for k, needed in (("keys", keyed), ("input_mode", n_mode and "input_mode" in wanted)) if needed]
    got: dict[str, list[Any]] = {}
    if extra:
        row = conn.execute(f"SELECT {', '.join(_PACKED_EXTRA_SQL[k] for k in extra)} FROM {source} WHERE run_id = ?",
                           (run_id,)).fetchone()
        joined = list(row)
        got = {k: [joined.pop(0), joined.pop(0)] for k in extra}
    keys = packed.keys(pks, got.get("keys"), n)
    if keys is None:
        return None
    pk_to_row, ids = lookup
    item_rows = _item_rows(pk_to_row, keys[0], run_id)
    sparse = {"trace": (n_trace, *traces), "input_mode": (n_mode, *got.get("input_mode", [None, None]))}
    data: dict[str, Any] = {}
    for name in wanted:
        if name == "item_id":
            data[name] = pd.Series(ids.take(item_rows), dtype=object, copy=False)
        elif name in ("rotation", "repeat"):
            data[name] = pd.Series(keys[1 if name == "rotation" else 2])
        elif name == "status":
            code = np.frombuffer(codes.encode("ascii"), dtype=np.uint8) - ord("0")
            data[name] = pd.Series(np.array(STATUSES, dtype=object).take(code), dtype=object, copy=False)
        elif name == "answer":
            data[name] = pd.Series(packed.answers(answers), dtype=object, copy=False)
        elif name == "tokens":
            values = _tokens_column(store, source, run_id, tokens, min_tokens, n)
            if values is None:
                return None
            data[name] = pd.Series(values)
        elif name in ("trace", "input_mode"):
            column = _sparse_column(store, source, run_id, name, sparse[name], keys, n)
            if column is None:
                return None
            data[name] = pd.Series(column, dtype=object, copy=False)
    if rows_out is not None:  # only for a frame returned (a None sends the caller to the row path)
        rows_out.append(item_rows)
    return pd.DataFrame(data, copy=False)  # the columns are this read's own: no copy into consolidated blocks


def _tokens_column(store: Source, source: str, run_id: int, tokens: str, min_tokens: Any, n: int
                   ) -> np.ndarray | None:
    """float64 token counts, NaN where missing (-1 in the joined counts, unless a count is negative: then which
    are missing is read apart); None when the count of values differs from `n`."""
    import numpy as np

    values = packed.numbers(tokens)
    if len(values) != n:
        return None
    if min_tokens is None or (isinstance(min_tokens, (int, float)) and min_tokens >= 0):  # -1 is NULL
        values[values == -1] = np.nan
        return values
    null_tokens = store.conn.execute(f"SELECT group_concat(tokens IS NULL, '') FROM {source} WHERE run_id = ?",
                                     (run_id,)).fetchone()[0]
    if len(null_tokens) != n:
        return None
    values[np.frombuffer(null_tokens.encode("ascii"), dtype=np.uint8) == ord("1")] = np.nan
    return values


def _sparse_column(store: Source, source: str, run_id: int, name: str, sparse: tuple[Any, Any, Any],
                   keys: tuple[np.ndarray, ...], n: int) -> np.ndarray | None:
    """The trace or input_mode of each row: the default but where a row has its own (`sparse`: how many, which
    rows as a 0/1 string, the values joined by U+001E; read by key when a value holds U+001E); None when a key
    read by key is not among `keys` (rows written between the two reads: a live run)."""
    import numpy as np

    column = np.full(n, None if name == "trace" else "all", dtype=object)
    count, flags, values = sparse
    if count:
        pieces = values.split(_VALUE_SEP) if values is not None else []
        if len(pieces) == count and flags is not None and len(flags) == n:
            column[np.frombuffer(flags.encode("ascii"), dtype=np.uint8) == ord("1")] = pieces
        elif not _read_by_key(store, source, run_id, name, keys, column):
            return None
    return column


_VALUE_SEP = "\x1e"


def _read_by_key(store: Source, source: str, run_id: int, name: str, keys: tuple[np.ndarray, ...],
                 column: np.ndarray) -> bool:
    """Fill `column` with the run's `name` values other than the default, found by key; False when a key is not
    among `keys` (rows written between the two reads: a live run)."""
    import numpy as np

    where = "trace IS NOT NULL" if name == "trace" else "input_mode != 'all'"
    found = store.conn.execute(f"SELECT item_pk, rotation, repeat, {name} FROM {source} WHERE run_id = ? AND {where}",
                               (run_id,)).fetchall()
    if not found:
        return True
    cols = list(zip(*found, strict=True))
    at = packed.key_rows(keys, [np.asarray(k, dtype=np.int64) for k in cols[:3]])  # keys in order: binary search
    if at is None:
        return False
    column[at] = np.array(cols[3], dtype=object)
    return True


# --------------------------------------------------------------------------- outcome columns of many runs

_NO_ANSWER, _ANSWER_SEP = "\x01", "\x1f"
# One character per prediction for status and first (code = 2 * status index + first; 6-7: another status), and
# the answers joined by U+001F with U+0001 for a missing one (literals: a function call here costs per row).
_OUTCOME_SQL = (
    "SELECT run_id, COUNT(*), group_concat(item_pk), group_concat(CASE status WHEN 'ok' THEN 0 WHEN 'invalid' THEN 2"
    " WHEN 'api_error' THEN 4 ELSE 6 END + (rotation = 0 AND repeat = 0), ''),"
    f" group_concat(coalesce(answer, '{_NO_ANSWER}'), '{_ANSWER_SEP}') FROM {{source}} WHERE run_id IN ({{marks}})"
    " GROUP BY run_id")


def layered_runs(store: Source, run_ids: Sequence[int]) -> set[int]:
    """The runs among `run_ids` with a row in prediction_overrides: only they need the predictions_effective
    view; the others read the predictions table, which the view returns unchanged for them."""
    ids = [int(r) for r in run_ids]
    if not ids:
        return set()
    return {int(r) for (r,) in store.conn.execute(
        f"SELECT DISTINCT run_id FROM prediction_overrides WHERE run_id IN ({','.join('?' * len(ids))})", ids)}


def outcome_arrays(store: Source, run_ids: Sequence[int], pk_to_row: np.ndarray) -> dict[int, Preds]:
    """run id -> the columns item outcomes read (core.outcomes.Preds: item row via `pk_to_row`, first
    prediction, status code, answer) for all `run_ids` in one query: each run comes back as a few strings
    SQLite packs (group_concat) and numpy splits, not a Python object per cell. A run without a prediction maps
    to empty arrays.

    Effective values: a run with any row in prediction_overrides is read through the predictions_effective view
    (db/overrides.py decides which override applies); a run with none reads the predictions table, which the
    view returns unchanged for a key without an override, without the view's per-row override lookup."""
    import numpy as np


    ids = [int(r) for r in run_ids]
    out: dict[int, Preds] = {r: _preds(np.zeros(0, np.int64), "", []) for r in ids}
    if not ids:
        return out
    layered = layered_runs(store, ids)
    plain = [r for r in ids if r not in layered]
    for source, part in ((_TABLE, plain), (PREDICTIONS_READ, sorted(layered))):
        if not part:
            continue
        sql = _OUTCOME_SQL.format(source=source, marks=",".join("?" * len(part)))
        for run_id, n, pks, codes, answers in store.conn.execute(sql, part):
            item_rows = _item_rows(pk_to_row, np.fromstring(pks, dtype=np.int64, sep=","), run_id)
            values = answers.split(_ANSWER_SEP)
            if not (len(item_rows) == len(codes) == len(values) == n):
                raise ValueError(f"run id {run_id}: an answer holds the separator U+001F; read it with"
                                 " run_frame")
            out[int(run_id)] = _preds(item_rows, codes, values)
    return out


def _item_rows(pk_to_row: np.ndarray, pk: np.ndarray, run_id: int) -> np.ndarray:
    if len(pk) and (pk.max() >= len(pk_to_row) or pk.min() < 0):
        raise ValueError(f"run id {run_id}: a prediction's item is not among the benchmark's items")
    rows = pk_to_row.take(pk)
    if (rows < 0).any():
        raise ValueError(f"run id {run_id}: a prediction's item is not among the benchmark's items")
    return rows


def _preds(item_rows: np.ndarray, codes: str, answers: list[str]) -> Preds:
    import numpy as np

    from core.outcomes import Preds

    answer = np.array(answers, dtype=object) if answers else np.zeros(0, dtype=object)
    answer[answer == _NO_ANSWER] = None
    code = np.frombuffer(codes.encode("ascii"), dtype=np.uint8) - np.uint8(ord("0"))
    return Preds(row=item_rows, first=(code & 1) == 1, status=code >> 1, answer=answer)


def pk_rows(pks: Sequence[int] | np.ndarray) -> np.ndarray:
    """item pk -> row (its position in `pks`), -1 for a pk not among them: the lookup `run_frame` and
    `outcome_arrays` take."""
    import numpy as np

    arr = np.asarray(pks, dtype=np.int64)
    out = np.full(int(arr.max(initial=0)) + 1, -1, dtype=np.int64)
    out[arr] = np.arange(len(arr))
    return out


def group_prediction_records(store: Source, runs: list[int], item_pks: list[int]) -> dict[int, list[dict[str, Any]]]:
    """run id -> its predictions of the given items as plain dicts (probs decoded), in key order."""
    out: dict[int, list[dict[str, Any]]] = {r: [] for r in runs}
    if not runs or not item_pks:
        return out
    cur = store.conn.execute(
        "SELECT p.run_id, i.item_id, p.rotation, p.repeat, p.status, p.answer, p.shown, p.response, p.input_mode,"
        f" p.trace, p.tokens, p.latency, p.probs, p.error FROM {PREDICTIONS_READ} p JOIN items i ON i.id = p.item_pk"
        f" WHERE p.run_id IN ({','.join('?' * len(runs))}) AND p.item_pk IN ({','.join('?' * len(item_pks))})"
        " ORDER BY p.run_id, p.item_pk, p.rotation, p.repeat", (*runs, *item_pks))
    cols = [c[0] for c in cur.description][1:]
    for row in cur:
        d = dict(zip(cols, row[1:], strict=True))
        d["probs"] = json.loads(d["probs"]) if d["probs"] else None
        out.setdefault(row[0], []).append(d)
    return out


# --------------------------------------------------------------------------- smaller reads


def done_keys(store: Source, run_id: int, statuses: Sequence[str]) -> set[tuple[str, int, int]]:
    """Keys (item_id, rotation, repeat) of run `run_id`'s predictions with one of `statuses`, effective values (an
    api_error the audit overrode is not sent again by --retry-errors)."""
    marks = ",".join("?" * len(statuses))
    cur = store.conn.execute(
        f"SELECT i.item_id, p.rotation, p.repeat FROM {PREDICTIONS_READ} p JOIN items i ON i.id = p.item_pk"
        f" WHERE p.run_id = ? AND p.status IN ({marks})", (run_id, *statuses))
    return {(r[0], r[1], r[2]) for r in cur}


def counts(store: Source, run_ids: Iterable[int]) -> dict[int, int]:
    """run id -> how many predictions it holds (0 for a run without any); each count scans the run's keys."""
    ids = [int(r) for r in run_ids]
    out = dict.fromkeys(ids, 0)
    for start in range(0, len(ids), 500):  # well under SQLite's limit of bound parameters
        part = ids[start:start + 500]
        out.update({int(r): int(n) for r, n in store.conn.execute(  # a count per run: cheaper than a GROUP BY
            f"SELECT r.id, (SELECT COUNT(*) FROM {_TABLE} p WHERE p.run_id = r.id) FROM runs r"
            f" WHERE r.id IN ({','.join('?' * len(part))})", part)})
    return out


def count(store: Source, run: str) -> int:
    """Predictions run `run` (by name) holds now; 0 for a run not created yet."""
    row = store.conn.execute(f"SELECT COUNT(*) FROM {_TABLE} p JOIN runs r ON r.id = p.run_id WHERE r.name = ?",
                             (run,)).fetchone()
    return int(row[0])


def runs_holding(store: Source) -> set[int]:
    """The ids of the runs that hold at least one prediction (one index probe per run)."""
    return {int(r) for (r,) in store.conn.execute(
        f"SELECT r.id FROM runs r WHERE EXISTS (SELECT 1 FROM {_TABLE} p WHERE p.run_id = r.id)")}


def problem_predictions(store: Source, run: str, statuses: tuple[str, ...] = ("invalid",),
                        limit: int = 500) -> pd.DataFrame:
    """Predictions of `run` with one of `statuses`: item_id, group_id, kind, rotation, repeat, status,
    response, letters, options (dict), answer (gold), in item order (at most `limit` rows)."""
    import pandas as pd

    row = store.conn.execute("SELECT id FROM runs WHERE name = ?", (run,)).fetchone()
    if row is None:
        return pd.DataFrame(columns=["item_id", "group_id", "kind", "rotation", "repeat", "status", "response",
                                     "letters", "options", "gold"])
    marks = ",".join("?" * len(statuses))
    df = pd.read_sql_query(
        "SELECT i.item_id, i.group_id, i.kind, p.rotation, p.repeat, p.status, p.response, i.letters, i.options,"
        f" i.answer AS gold FROM {PREDICTIONS_READ} p JOIN items i ON i.id = p.item_pk"
        f" WHERE p.run_id = ? AND p.status IN ({marks}) ORDER BY p.item_pk, p.rotation, p.repeat LIMIT ?",
        store.conn, params=(row[0], *statuses, limit))
    df["options"] = [json.loads(v) if v else {} for v in df["options"]]
    for col in ("item_id", "group_id", "kind", "status", "response", "letters", "gold"):
        as_obj = df[col].astype(object)  # None (not NaN) for SQL NULL
        df[col] = as_obj.where(df[col].notna(), None).astype(object)
    return df


def count_statuses(store: Source, run: str) -> dict[str, int]:
    """Predictions of `run` per status."""
    cur = store.conn.execute(f"SELECT p.status, COUNT(*) FROM {PREDICTIONS_READ} p JOIN runs r ON r.id = p.run_id"
                             " WHERE r.name = ? GROUP BY p.status", (run,))
    return {s: int(n) for s, n in cur}


def trace_rows(store: Source, run_id: int, kind: str) -> pd.DataFrame:
    """Run `run_id`'s predictions of the items of `kind` that have stage targets, with those items' columns,
    in key order, as SQL gives them: item_id, item_pk, group_id, rotation, repeat, status, answer, gold,
    response, trace, tokens, question, options, stages, meta, images (JSON text)."""
    import pandas as pd

    return pd.read_sql_query(
        "SELECT i.item_id, i.id AS item_pk, i.group_id, p.rotation, p.repeat, p.status, p.answer, i.answer AS gold,"
        f" p.response, p.trace, p.tokens, i.question, i.options, i.stages, i.meta, i.images FROM {PREDICTIONS_READ} p"
        " JOIN items i ON i.id = p.item_pk WHERE p.run_id = ? AND i.kind = ? AND i.stages IS NOT NULL"
        " ORDER BY p.item_pk, p.rotation, p.repeat", store.conn, params=(run_id, kind))


def runs_with_traces(store: Source, kind: str, benchmark_id: int | None = None) -> set[str]:
    """Names of the runs (of benchmark `benchmark_id`, or all) holding a prediction of an item of `kind` that has
    stage targets: per run, stopping at its first such prediction (not a scan of every prediction: a store of
    1,000 runs answers in milliseconds)."""
    where = "" if benchmark_id is None else " AND r.benchmark_id = ?"
    sql = (f"SELECT r.name FROM runs r WHERE EXISTS (SELECT 1 FROM {_TABLE} p JOIN items i ON i.id = p.item_pk"
           f" WHERE p.run_id = r.id AND i.kind = ? AND i.stages IS NOT NULL){where}")
    params: tuple[Any, ...] = (kind,) if benchmark_id is None else (kind, benchmark_id)
    return {row[0] for row in store.conn.execute(sql, params)}


def trace_item_pk(store: Source, run_id: int, key: tuple[str, int, int]) -> int | None:
    """The item pk of run `run_id`'s prediction with key (item_id, rotation, repeat); None when it has none."""
    row = store.conn.execute(
        f"SELECT i.id FROM {_TABLE} p JOIN items i ON i.id = p.item_pk WHERE p.run_id = ? AND i.item_id = ?"
        " AND p.rotation = ? AND p.repeat = ?", (run_id, key[0], key[1], key[2])).fetchone()
    return None if row is None else int(row[0])


def effective_row(store: Source, run_id: int, item_pk: int, rotation: int, repeat: int
                  ) -> tuple[str | None, str, str | None, str | None] | None:
    """(raw response, status, answer, shown) one prediction reads now (its active override applied); None when
    the run has no prediction with that key."""
    row = store.conn.execute(f"SELECT response, status, answer, shown FROM {PREDICTIONS_READ} WHERE run_id = ?"
                             " AND item_pk = ? AND rotation = ? AND repeat = ?",
                             (run_id, item_pk, rotation, repeat)).fetchone()
    return None if row is None else (row[0], row[1], row[2], row[3])


def override_in_effect(store: Source, run_id: int, keys: Iterable[tuple[int, int, int]]
                       ) -> dict[tuple[int, int, int], int | None]:
    """(item_pk, rotation, repeat) -> the id of the override the prediction reads now (None: it reads as
    imported, or the run has no such prediction), for each of `keys`."""
    wanted = {(int(a), int(b), int(c)) for a, b, c in keys}
    out: dict[tuple[int, int, int], int | None] = dict.fromkeys(wanted)
    pks = sorted({k[0] for k in wanted})
    for start in range(0, len(pks), 500):
        part = pks[start:start + 500]
        for pk, rotation, repeat, oid in store.conn.execute(
                f"SELECT item_pk, rotation, repeat, override_id FROM {PREDICTIONS_READ} WHERE run_id = ?"
                f" AND item_pk IN ({','.join('?' * len(part))})", (run_id, *part)):
            if (pk, rotation, repeat) in out:
                out[(pk, rotation, repeat)] = oid
    return out


# --------------------------------------------------------------------------- the rows as imported (imports)


def stored_rows(store: Source, run_id: int) -> dict[tuple[int, int, int], tuple[Any, ...]]:
    """(item_pk, rotation, repeat) -> (response, shown, answer, status, error, input_mode, trace, tokens) of each
    of run `run_id`'s rows as imported (no override: an import compares its rows with the rows it replaces)."""
    return {(r[0], r[1], r[2]): r[3:] for r in store.conn.execute(
        "SELECT item_pk, rotation, repeat, response, shown, answer, status, error, input_mode, trace, tokens"
        f" FROM {_TABLE} WHERE run_id = ?", (run_id,))}


def has_rows(store: Source, run_id: int) -> bool:
    """Whether run `run_id` holds any prediction row."""
    return store.conn.execute(f"SELECT 1 FROM {_TABLE} WHERE run_id = ? LIMIT 1", (run_id,)).fetchone() is not None


def keys(store: Source, run_id: int) -> set[tuple[int, int, int]]:
    """(item_pk, rotation, repeat) of every prediction of run `run_id`."""
    return {(r[0], r[1], r[2]) for r in store.conn.execute(
        f"SELECT item_pk, rotation, repeat FROM {_TABLE} WHERE run_id = ?", (run_id,))}


# --------------------------------------------------------------------------- the search index's feed (db/search.py)

_SEARCH_KEY = "k.item_pk = p.item_pk AND k.rotation = p.rotation AND k.repeat = p.repeat"


def index_new_rows(conn: sqlite3.Connection, run_id: int) -> int:
    """Inside a write transaction: key and index run `run_id`'s predictions not indexed yet; returns how many."""
    last = conn.execute("SELECT COALESCE(MAX(id), 0) FROM search_keys").fetchone()[0]
    added = conn.execute(
        "INSERT INTO search_keys (run_id, item_pk, rotation, repeat) SELECT p.run_id, p.item_pk, p.rotation,"
        f" p.repeat FROM {_TABLE} p WHERE p.run_id = ? AND NOT EXISTS (SELECT 1 FROM search_keys k"
        f" WHERE k.run_id = p.run_id AND {_SEARCH_KEY})", (run_id,)).rowcount
    conn.execute("INSERT INTO search_predictions (rowid, response, trace) SELECT k.id, p.response, p.trace"
                 f" FROM search_keys k JOIN {_TABLE} p ON p.run_id = k.run_id AND {_SEARCH_KEY} WHERE k.id > ?",
                 (last,))
    return max(int(added), 0)
