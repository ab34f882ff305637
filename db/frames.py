"""Bulk loading of a benchmark's items and all of its runs for scoring (docs/ARCHITECTURE.md frames).

`Store.items_frame` and `Store.run_data` load one thing each; scoring every run of a benchmark with them reloads
every other run's predictions for each run scored (the `others` of the paired metrics). Here one call reads the
items once and each run once, straight through the sqlite3 cursor (no pandas SQL layer), and returns frames equal
to the store's (same columns, dtypes, order and values; tests compare them).

`columns` picks prediction columns: the default is every column of `Store.predictions_frame`; scoring passes
`SCORING_COLUMNS`, the ones metric code reads, which skips the raw responses (the bulk of the bytes).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import orjson
import pandas as pd

from core import families
from core.gcpause import gc_paused
from core.outcomes import Preds
from core.schema import RunData
from db.schema import PREDICTIONS_READ
from db.store import Store, decode_item_json

PRED_COLUMNS = ("item_id", "rotation", "repeat", "status", "answer", "shown", "response", "input_mode", "trace",
                "tokens", "latency", "probs", "error")
# What core/metrics reads from a run's predictions (no metric reads response, shown, latency, probs or error).
SCORING_COLUMNS = ("item_id", "rotation", "repeat", "status", "answer", "input_mode", "trace", "tokens")
_TEXT = {"status", "answer", "shown", "response", "input_mode", "trace", "error"}


def _obj(values: Sequence[Any]) -> pd.Series:
    """An object column (pandas 3 would otherwise infer its string dtype, with NaN for None)."""
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    return pd.Series(arr, dtype=object, copy=False)


ITEM_COLUMNS = ("item_id", "group_id", "split", "kind", "variant", "question", "options", "letters", "answer", "images",
                "meta", "stages", "n_images")
# What core/metrics reads from the items (common.JOIN_ITEM_COLUMNS, item_id and answer): no metric reads the
# question, the image list (only its length) or the stage texts, the longest values of a row. FrameEvidence
# also reads the image content hashes, which its exact-image / union bootstrap clusterings link groups by
# (core.stats.cluster_labels).
SCORING_ITEM_COLUMNS = ("item_id", "group_id", "split", "kind", "variant", "options", "letters", "answer", "meta",
                        "n_images")


def scoring_item_columns(family: str) -> tuple[str, ...]:
    """SCORING_ITEM_COLUMNS and the family's own (`Family.scoring_item_columns`), in ITEM_COLUMNS order."""
    extra = families.get(family).scoring_item_columns
    return tuple(c for c in ITEM_COLUMNS if c in SCORING_ITEM_COLUMNS or c in extra)


def items_frame(store: Store, benchmark: str, columns: Sequence[str] = ITEM_COLUMNS
                ) -> tuple[pd.DataFrame, dict[int, str]]:
    """`Store.items_frame(benchmark)` restricted to `columns` (in ITEM_COLUMNS order; item_id always), and the
    map item pk -> item_id. n_images without images is counted by SQLite (json_array_length)."""
    unknown = [c for c in columns if c not in ITEM_COLUMNS]
    if unknown:
        raise ValueError(f"unknown item columns {unknown}; expected some of {', '.join(ITEM_COLUMNS)}")
    wanted = [c for c in ITEM_COLUMNS if c in columns or c == "item_id"]
    sql = {"n_images": "NULL" if "images" in wanted else
           "CASE WHEN images IS NULL OR images = '' THEN 0 ELSE json_array_length(images) END"}
    b = store.benchmark(benchmark)
    rows = store.conn.execute(
        f"SELECT id, {', '.join(sql.get(c, c) for c in wanted)} FROM items WHERE benchmark_id = ? ORDER BY id",
        (b["id"],)).fetchall()
    cols = dict(zip(["id", *wanted], zip(*rows, strict=True) if rows else [()] * (len(wanted) + 1), strict=True))
    data: dict[str, Any] = {}
    for name in wanted:
        col = cols[name]
        if name in ("options", "images", "meta", "stages"):
            data[name] = _obj(decode_item_json(name, col))
        elif name == "n_images":
            counts = (len(v) for v in data["images"]) if "images" in data else col
            data[name] = pd.Series(np.fromiter(counts, dtype=np.int64, count=len(col)))
        else:
            data[name] = _obj(col)
    return pd.DataFrame(data), dict(zip(cols["id"], cols["item_id"], strict=True))


def _runs(store: Store, benchmark: str) -> list[tuple[int, str, str, str, dict[str, Any], bool, tuple[int, str]]]:
    """(id, name, benchmark, family, config, synthetic, version) of each run of `benchmark`, oldest first; the
    version (revision, updated) moves on at every write of the run (db.store.touch_run)."""
    cur = store.conn.execute(
        "SELECT r.id, r.name, b.name, b.family, r.config, r.synthetic, r.revision, r.updated FROM runs r JOIN"
        " benchmarks b ON b.id = r.benchmark_id WHERE b.name = ? ORDER BY r.id", (benchmark,))
    return [(int(r[0]), r[1], r[2], r[3], orjson.loads(r[4]), bool(r[5]), (int(r[6]), r[7])) for r in cur]


STATUSES = ("ok", "invalid", "api_error")
# Reading is most of the cost at scale, and most of that is making a Python object per cell. These columns come
# back as values Python shares (small integers, None) and are mapped back: the status as a code for the shared
# status strings, input_mode (NOT NULL in the schema) as NULL where it is the usual "all".
_SQL = {"item_id": "item_pk",
        "status": "CASE status WHEN 'ok' THEN 0 WHEN 'invalid' THEN 1 WHEN 'api_error' THEN 2 ELSE status END",
        "input_mode": "CASE input_mode WHEN 'all' THEN NULL ELSE input_mode END"}


def predictions_frame(store: Store, run_id: int, item_ids: dict[int, str] | tuple[np.ndarray, np.ndarray],
                      columns: Sequence[str] = PRED_COLUMNS, rows_out: list[np.ndarray] | None = None,
                      plain: bool = False) -> pd.DataFrame:
    """`Store.predictions_frame` of one run (by id), restricted to `columns` (in PRED_COLUMNS order).

    `item_ids` maps item pk -> item_id: a dict, or (pk_to_row, item_id per row) arrays (load_benchmark_runs),
    in which case the item row of each prediction is appended to `rows_out` when given. `plain`: the caller
    knows the run has no override row, so the packed read takes the predictions table (the view returns it
    unchanged for such a run, 1.6x slower: it looks an override up per row).
    """
    unknown = [c for c in columns if c not in PRED_COLUMNS]
    if unknown:
        raise ValueError(f"unknown prediction columns {unknown}; expected some of {', '.join(PRED_COLUMNS)}")
    wanted = [c for c in PRED_COLUMNS if c in columns]
    if not isinstance(item_ids, dict) and set(wanted) <= _PACKED_COLUMNS and "item_id" in wanted:
        packed = _packed_frame(store, run_id, item_ids, wanted, rows_out, "predictions" if plain else PREDICTIONS_READ)
        if packed is not None:
            return packed
    rows = store.conn.execute(f"SELECT {', '.join(_SQL.get(c, c) for c in wanted)} FROM {PREDICTIONS_READ}"
                              " WHERE run_id = ? ORDER BY item_pk, rotation, repeat", (run_id,)).fetchall()
    cols = list(zip(*rows, strict=True)) if rows else [()] * len(wanted)
    n = len(rows)
    data: dict[str, Any] = {}
    for name, col in zip(wanted, cols, strict=True):
        if name == "item_id":
            if isinstance(item_ids, dict):
                data[name] = _obj([item_ids[pk] for pk in col])
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
                data[name] = _obj([STATUSES[v] if isinstance(v, int) else v for v in col])
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
                          else _obj(col))
        elif name == "probs":
            data[name] = _obj([orjson.loads(v) if v else None for v in col])
        else:
            data[name] = _obj(col)
    return pd.DataFrame(data)


_PACKED_COLUMNS = frozenset({"item_id", "rotation", "repeat", "status", "answer", "input_mode", "trace", "tokens"})
_PACKED_SQL = (
    "SELECT COUNT(*), group_concat(item_pk), max(rotation != 0) + max(repeat != 0),"
    " group_concat(CASE status WHEN 'ok' THEN 0 WHEN 'invalid' THEN 1 WHEN 'api_error' THEN 2 ELSE 3 END, ''),"
    " group_concat(coalesce(answer, char(1)), ''), group_concat(coalesce(tokens, 0)),"
    " group_concat(tokens IS NULL, ''), COUNT(trace), COUNT(nullif(input_mode, 'all')),"
    # the traces in the same scan: which rows have one, and the values (group_concat leaves NULLs out) joined by
    # U+001E; a value holding U+001E makes the count differ, and that run's values are read by key instead
    " group_concat(trace IS NOT NULL, ''), group_concat(trace, char(30))"
    # no ORDER BY: the primary key (run_id, item_pk, rotation, repeat) feeds the rows in key order, and the
    # order is checked after parsing (any other order falls back to the row path)
    " FROM {source} WHERE run_id = ?")
# Read only for a run that needs them (in the same snapshot): rotations and repeats when one is not 0 (most runs
# have none: their key order is the item order), input modes other than "all" when the run has one.
_PACKED_EXTRA_SQL = {"keys": "group_concat(rotation), group_concat(repeat)",
                     "input_mode": "group_concat(input_mode != 'all', ''), group_concat(nullif(input_mode, 'all'), char(30))"}


def _packed_frame(store: Store, run_id: int, lookup: tuple[np.ndarray, np.ndarray], wanted: list[str],
                  rows_out: list[np.ndarray] | None, source: str = PREDICTIONS_READ) -> pd.DataFrame | None:
    """The scoring columns of one run read as a few packed strings that SQLite builds (group_concat) and numpy
    parses, instead of a Python object per cell; traces and input modes other than "all" are read for the rows
    that have them. None when the run does not fit this path (no rows, an answer longer than one character, a
    status outside the schema's three, rows out of key order): the caller reads it row by row. Its reads see one
    state of the store (Store.snapshot)."""
    with store.snapshot():
        return _packed_read(store, run_id, lookup, wanted, rows_out, source)


def _packed_read(store: Store, run_id: int, lookup: tuple[np.ndarray, np.ndarray], wanted: list[str],
                 rows_out: list[np.ndarray] | None, source: str) -> pd.DataFrame | None:
    conn = store.conn
    (n, pks, keyed, codes, answers, tokens, null_tokens, n_trace, n_mode, *traces) = conn.execute(
        _PACKED_SQL.format(source=source), (run_id,)).fetchone()
    if not n or len(answers) != n or len(codes) != n or "3" in codes:
        return None
    extra = [k for k, needed in (("keys", keyed), ("input_mode", n_mode and "input_mode" in wanted)) if needed]
    got: dict[str, list[Any]] = {}
    if extra:
        row = conn.execute(f"SELECT {', '.join(_PACKED_EXTRA_SQL[k] for k in extra)} FROM {source} WHERE run_id = ?",
                           (run_id,)).fetchone()
        joined = list(row)
        got = {k: [joined.pop(0), joined.pop(0)] for k in extra}
    sparse = {"trace": (n_trace, *traces), "input_mode": (n_mode, *got.get("input_mode", [None, None]))}
    pk = np.fromstring(pks, dtype=np.int64, sep=",")
    if "keys" in got:
        rotation = np.fromstring(got["keys"][0], dtype=np.int64, sep=",")
        repeat = np.fromstring(got["keys"][1], dtype=np.int64, sep=",")
    else:  # every rotation and repeat is 0
        rotation, repeat = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    if not (len(pk) == len(rotation) == len(repeat) == n):
        return None
    if n > 1:  # rows must come in (item_pk, rotation, repeat) order, as the row path reads them
        d_pk = np.diff(pk)
        if "keys" not in got:
            in_order = bool((d_pk > 0).all())
        else:
            d_rot, d_rep = np.diff(rotation), np.diff(repeat)
            in_order = bool(((d_pk > 0) | ((d_pk == 0) & ((d_rot > 0) | ((d_rot == 0) & (d_rep > 0))))).all())
        if not in_order:
            return None
    pk_to_row, ids = lookup
    if pk.max() >= len(pk_to_row) or pk.min() < 0:
        raise ValueError(f"run id {run_id}: a prediction's item is not among the benchmark's items")
    item_rows = pk_to_row.take(pk)
    if (item_rows < 0).any():
        raise ValueError(f"run id {run_id}: a prediction's item is not among the benchmark's items")
    data: dict[str, Any] = {}
    for name in wanted:
        if name == "item_id":
            data[name] = pd.Series(ids.take(item_rows), dtype=object, copy=False)
        elif name == "rotation":
            data[name] = pd.Series(rotation)
        elif name == "repeat":
            data[name] = pd.Series(repeat)
        elif name == "status":
            code = np.frombuffer(codes.encode("ascii"), dtype=np.uint8) - ord("0")
            data[name] = pd.Series(np.array(STATUSES, dtype=object).take(code), dtype=object, copy=False)
        elif name == "answer":
            points = np.frombuffer(answers.encode("utf-32-le"), dtype=np.uint32)
            distinct, inverse = np.unique(points, return_inverse=True)
            table = np.array([None if c == 1 else chr(c) for c in distinct], dtype=object)
            data[name] = pd.Series(table.take(inverse.reshape(-1)), dtype=object, copy=False)
        elif name == "tokens":
            values = _numbers(tokens)
            if len(values) != n:
                return None
            values[np.frombuffer(null_tokens.encode("ascii"), dtype=np.uint8) == ord("1")] = np.nan
            data[name] = pd.Series(values)
        elif name in ("trace", "input_mode"):
            default = None if name == "trace" else "all"
            column = np.full(n, default, dtype=object)
            count, flags, values = sparse[name]
            if count:
                pieces = values.split(_VALUE_SEP) if values is not None else []
                if len(pieces) == count and flags is not None and len(flags) == n:
                    column[np.frombuffer(flags.encode("ascii"), dtype=np.uint8) == ord("1")] = pieces
                elif not _read_by_key(store, source, run_id, name, (pk, rotation, repeat), column):
                    return None
            data[name] = pd.Series(column, dtype=object, copy=False)
    if rows_out is not None:  # only for a frame returned (a None sends the caller to the row path)
        rows_out.append(item_rows)
    return pd.DataFrame(data)


_VALUE_SEP = "\x1e"


def _numbers(joined: str) -> np.ndarray:
    """float64 values of a comma-joined column of numbers: parsed as integers (token counts are; numpy parses
    those several times faster than floats), as floats when one is not."""
    try:
        return np.fromstring(joined, dtype=np.int64, sep=",").astype(float)
    except ValueError:  # a value with a decimal point or an exponent
        return np.fromstring(joined, dtype=float, sep=",")


def _read_by_key(store: Store, source: str, run_id: int, name: str, keys: tuple[np.ndarray, ...],
                 column: np.ndarray) -> bool:
    """Fill `column` with the run's `name` values other than the default, found by key; False when a key is not
    among `keys` (rows written between the two reads: a live run)."""
    where = "trace IS NOT NULL" if name == "trace" else "input_mode != 'all'"
    found = store.conn.execute(f"SELECT item_pk, rotation, repeat, {name} FROM {source} WHERE run_id = ? AND {where}",
                               (run_id,)).fetchall()
    if not found:
        return True
    cols = list(zip(*found, strict=True))
    at = _key_rows(keys, [np.asarray(k, dtype=np.int64) for k in cols[:3]])  # keys in order: binary search
    if at is None:
        return False
    column[at] = np.array(cols[3], dtype=object)
    return True


def _key_rows(sorted_keys: tuple[np.ndarray, ...], wanted: list[np.ndarray]) -> np.ndarray | None:
    """Row of each wanted (item_pk, rotation, repeat) key among keys sorted in that order; None when one is not
    among them."""
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


def load_benchmark_runs(store: Store, benchmark: str, columns: Sequence[str] = PRED_COLUMNS,
                        names: Sequence[str] | None = None, item_columns: Sequence[str] = ITEM_COLUMNS,
                        items_cache: dict[Any, Any] | None = None, runs_cache: dict[Any, Any] | None = None
                        ) -> tuple[pd.DataFrame, dict[str, RunData]]:
    """(items frame, {run name: RunData}) for every run of `benchmark` (or those in `names`), in run creation
    order.

    Equal to `store.items_frame(benchmark)` (restricted to `item_columns`) and `store.run_data(name)` for each run
    (restricted to `columns`). `items_cache` (a dict kept by a long-lived caller, a scoring worker) keeps the
    items frames it reads: a benchmark's items never change once imported (db.importers refuses other items
    under its name), so the frame is read once, and shared read-only as within one scoring. `runs_cache` (a dict
    kept beside it) keeps the RunData it reads: a run whose version (revision and updated time, moved on by every
    write of its predictions, overrides or status: db.store.touch_run) is the one read, read against the same
    items frame, is not read again. Every read sees one state of the store (Store.snapshot): a live run's commits
    land before or after the whole load, and a version read names the rows read with it.
    """
    with gc_paused(), store.snapshot():
        return _load(store, benchmark, columns, None if names is None else set(names), item_columns, items_cache,
                     runs_cache)


def load_for_scoring(store: Store, benchmark: str, names: Sequence[str] | None = None,
                     items_cache: dict[Any, Any] | None = None, runs_cache: dict[Any, Any] | None = None
                     ) -> tuple[pd.DataFrame, dict[str, RunData]]:
    """`load_benchmark_runs` of the columns metric code reads (SCORING_ITEM_COLUMNS and the family's extra
    ones, SCORING_COLUMNS)."""
    item_columns = scoring_item_columns(store.benchmark_family(benchmark))
    return load_benchmark_runs(store, benchmark, SCORING_COLUMNS, names=names, item_columns=item_columns,
                               items_cache=items_cache, runs_cache=runs_cache)


_ITEMS_KEPT = 4  # items frames an items_cache holds (the latest used)
_RUN_ROWS_KEPT = 1_000_000  # predictions a runs_cache holds (the runs latest used): about 100 MB at most


def _items(store: Store, benchmark: str, item_columns: Sequence[str], cache: dict[Any, Any] | None
           ) -> tuple[pd.DataFrame, dict[int, str]]:
    if cache is None:
        return items_frame(store, benchmark, item_columns)
    b = store.benchmark(benchmark)
    key = (str(store.path), b["id"], b["source_sha256"], tuple(item_columns))
    if key not in cache:
        while len(cache) >= _ITEMS_KEPT:
            del cache[next(iter(cache))]
        cache[key] = items_frame(store, benchmark, item_columns)
    cache[key] = cache.pop(key)
    return cache[key]


def _load(store: Store, benchmark: str, columns: Sequence[str], names: set[str] | None,
          item_columns: Sequence[str], items_cache: dict[Any, Any] | None = None,
          runs_cache: dict[Any, Any] | None = None) -> tuple[pd.DataFrame, dict[str, RunData]]:
    items, item_ids = _items(store, benchmark, item_columns, items_cache)
    pks = np.fromiter(item_ids, dtype=np.int64, count=len(item_ids))
    pk_to_row = np.full(int(pks.max(initial=0)) + 1, -1, dtype=np.int64)
    pk_to_row[pks] = np.arange(len(pks))
    lookup = (pk_to_row, items["item_id"].to_numpy(dtype=object))
    runs: dict[str, RunData] = {}
    chosen = [r for r in _runs(store, benchmark) if names is None or r[1] in names]
    layered = layered_runs(store, [r[0] for r in chosen])
    for run_id, name, bench, family, config, synthetic, version in chosen:
        key = (str(store.path), run_id, tuple(columns))
        hit = runs_cache.get(key) if runs_cache is not None else None
        if runs_cache is not None and hit is not None and hit[0] == version and hit[1] is items:
            runs[name] = hit[2]
            runs_cache[key] = runs_cache.pop(key)  # the latest used is kept longest
            continue
        rows: list[np.ndarray] = []
        preds = predictions_frame(store, run_id, lookup, columns, rows_out=rows, plain=run_id not in layered)
        runs[name] = RunData(name=name, benchmark=bench, family=family, config={**config, "synthetic": synthetic},
                             preds=preds, item_rows=rows[0] if rows else None, rows_in=items if rows else None)
        if runs_cache is not None:
            _keep_run(runs_cache, key, (version, items, runs[name]), items_cache)
    return items, runs


def _keep_run(cache: dict[Any, Any], key: Any, entry: tuple[Any, pd.DataFrame, RunData],
              items_cache: dict[Any, Any] | None) -> None:
    """Keep a run read in a runs_cache: entries read against an items frame the items cache no longer holds go
    (they can never be used again, and would keep that frame alive); then the oldest, until the entries hold at
    most _RUN_ROWS_KEPT predictions (each counts one at least)."""
    alive = {id(entry[1])} | {id(v[0]) for v in (items_cache or {}).values()}
    for k in [k for k, v in cache.items() if id(v[1]) not in alive]:
        del cache[k]
    cache.pop(key, None)
    cache[key] = entry
    while sum(max(1, len(v[2].preds)) for v in cache.values()) > _RUN_ROWS_KEPT and len(cache) > 1:
        del cache[next(iter(cache))]


def score_extras(store: Store, run: str, family: str, judge: str | None = None) -> dict[str, Any]:
    """Stored data a family's metrics read beside the predictions: for StemBind, the trace judgements of
    `judge` (default: the most recent judge run of `run`), which feed L2 StepAcc and L3 AttrTag."""
    if not families.get(family).judged_traces:
        return {}
    from db.judging import judge_runs_of, judgements_frame

    judges = [judge] if judge else judge_runs_of(store, run)[-1:]
    if not judges:
        return {}
    return {"judgements": judgements_frame(store, run, judges)}


# --------------------------------------------------------------------------- outcome columns of many runs

_NO_ANSWER, _ANSWER_SEP = "\x01", "\x1f"
# One character per prediction for status and first (code = 2 * status index + first; 6-7: another status), and
# the answers joined by U+001F with U+0001 for a missing one (literals: a function call here costs per row).
_OUTCOME_SQL = (
    "SELECT run_id, COUNT(*), group_concat(item_pk), group_concat(CASE status WHEN 'ok' THEN 0 WHEN 'invalid' THEN 2"
    " WHEN 'api_error' THEN 4 ELSE 6 END + (rotation = 0 AND repeat = 0), ''),"
    f" group_concat(coalesce(answer, '{_NO_ANSWER}'), '{_ANSWER_SEP}') FROM {{source}} WHERE run_id IN ({{marks}})"
    " GROUP BY run_id")


def layered_runs(store: Store, run_ids: Sequence[int]) -> set[int]:
    """The runs among `run_ids` with a row in prediction_overrides: only they need the predictions_effective
    view; the others read the predictions table, which the view returns unchanged for them."""
    ids = [int(r) for r in run_ids]
    if not ids:
        return set()
    return {int(r) for (r,) in store.conn.execute(
        f"SELECT DISTINCT run_id FROM prediction_overrides WHERE run_id IN ({','.join('?' * len(ids))})", ids)}


def outcome_arrays(store: Store, run_ids: Sequence[int], pk_to_row: np.ndarray) -> dict[int, Preds]:
    """run id -> the columns item outcomes read (core.outcomes.Preds: item row via `pk_to_row`, first
    prediction, status code, answer) for all `run_ids` in one query: each run comes back as a few strings
    SQLite packs (group_concat) and numpy splits, not a Python object per cell. A run without a prediction maps
    to empty arrays.

    Effective values: a run with any row in prediction_overrides is read through the predictions_effective view
    (db/overrides.py decides which override applies); a run with none reads the predictions table, which the
    view returns unchanged for a key without an override, without the view's per-row override lookup."""
    ids = [int(r) for r in run_ids]
    out: dict[int, Preds] = {r: _preds(np.zeros(0, np.int64), "", []) for r in ids}
    if not ids:
        return out
    layered = layered_runs(store, ids)
    plain = [r for r in ids if r not in layered]
    for source, part in (("predictions", plain), (PREDICTIONS_READ, sorted(layered))):
        if not part:
            continue
        sql = _OUTCOME_SQL.format(source=source, marks=",".join("?" * len(part)))
        for run_id, n, pks, codes, answers in store.conn.execute(sql, part):
            item_rows = _item_rows(pk_to_row, np.fromstring(pks, dtype=np.int64, sep=","), run_id)
            values = answers.split(_ANSWER_SEP)
            if not (len(item_rows) == len(codes) == len(values) == n):
                raise ValueError(f"run id {run_id}: an answer holds the separator U+001F; read it with"
                                 " predictions_frame")
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
    answer = np.array(answers, dtype=object) if answers else np.zeros(0, dtype=object)
    answer[answer == _NO_ANSWER] = None
    code = np.frombuffer(codes.encode("ascii"), dtype=np.uint8) - np.uint8(ord("0"))
    return Preds(row=item_rows, first=(code & 1) == 1, status=code >> 1, answer=answer)


def pk_rows(pks: Sequence[int]) -> np.ndarray:
    """item pk -> row (its position in `pks`), -1 for a pk not among them: the lookup outcome_arrays takes."""
    arr = np.asarray(pks, dtype=np.int64)
    out = np.full(int(arr.max(initial=0)) + 1, -1, dtype=np.int64)
    out[arr] = np.arange(len(arr))
    return out


def group_prediction_records(store: Store, runs: list[int], item_pks: list[int]) -> dict[int, list[dict[str, Any]]]:
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
