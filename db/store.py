"""The store: one SQLite file (WAL, busy timeout, foreign keys) plus a content-addressed image folder.

Every write goes through `Store.write()`, a `BEGIN IMMEDIATE` transaction, so a killed process leaves either
all of a write or none of it. Connections are per thread (the UI serves requests from a thread pool).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import sqlite3
import sys
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from core.errors import CrosscheckError, NotFound
from core.schema import ITEM_COLUMNS, Item, Prediction, RunData
from db import predictions
from db.schema import migrate

if TYPE_CHECKING:  # pandas and sqlite_utils (which imports pandas) load where used: import-predictions needs neither
    import pandas as pd
    import sqlite_utils

BUSY_TIMEOUT_MS = 30_000


class RunConflict(CrosscheckError, ValueError):
    """A run name already exists with another benchmark or configuration."""


class StoreFull(CrosscheckError, OSError):
    """The disk holding the store is full: the write was rolled back, nothing of it kept."""


class StoreReadOnly(CrosscheckError, PermissionError):
    """The store's file or folder cannot be written by this process."""


def _full(path: Path) -> StoreFull:
    return StoreFull(f"the disk holding the store {path} is full: nothing of this write was kept; free some space "
                     "and do it again")


def _is_full(exc: BaseException) -> bool:
    if isinstance(exc, sqlite3.OperationalError):
        return exc.sqlite_errorcode == sqlite3.SQLITE_FULL
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def touch_run(conn: sqlite3.Connection, run_id: int, status: str | None = None) -> None:
    """Inside a write transaction: run `run_id`'s predictions, overrides or status changed, or (a judge run) it
    wrote a judgement. Its
    `updated` time and `revision` (one more per change: what caches of its scores key on, db.browse.run_versions,
    exact where two changes fall in one second of `updated`) move on; `status` is set when given."""
    if status is None:
        conn.execute("UPDATE runs SET updated = ?, revision = revision + 1 WHERE id = ?", (now(), run_id))
    else:
        conn.execute("UPDATE runs SET status = ?, updated = ?, revision = revision + 1 WHERE id = ?",
                     (status, now(), run_id))


def default_db_path() -> Path:
    """`CROSSCHECK_DB`, else crosscheck.db in the user's data folder (XDG_DATA_HOME or ~/.local/share)."""
    env = os.environ.get("CROSSCHECK_DB")
    if env:
        return Path(env).expanduser()
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "crosscheck" / "crosscheck.db"


def config_hash(config: dict[str, Any]) -> str:
    blob = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


_ENCODE = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode  # json.dumps' own, made once


def _dumps(value: Any) -> str | None:
    if value is None:
        return None
    if not value and type(value) in (list, dict):  # most items' images, image names or meta: what _ENCODE gives
        return "[]" if type(value) is list else "{}"
    return _ENCODE(value)


_ITEM_JSON_EMPTY = {"options": dict, "images": list, "image_names": list, "meta": dict}
# What a read of a benchmark's items may ask for: the columns metric code reads, the image paths as written and
# each item's line in its file (Store.items, the exports).
ITEM_READS = (*ITEM_COLUMNS[:-1], "image_names", "line", "n_images")  # n_images last: counted from images


def decode_item_json(column: str, values: Iterable[Any]) -> list[Any]:
    """The decoded values of a JSON item column as read from SQL: options / images / meta are empty ({} / [])
    when NULL or empty, stages None."""
    if column == "stages":
        return [_loads_fast(v) if isinstance(v, str) and v else None for v in values]
    empty = _ITEM_JSON_EMPTY[column]
    return [_loads_fast(v) if v else empty() for v in values]


def _intern(value: Any) -> Any:
    return sys.intern(value) if isinstance(value, str) else value


def _loads_fast(value: str) -> Any:
    """json.loads of JSON this store wrote (orjson, several times faster; json decides what orjson refuses)."""
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        return json.loads(value)


_ITEMS_INSERT = ("INSERT INTO items (benchmark_id, item_id, group_id, split, kind, variant, question, options,"
                 " letters, answer, images, image_names, meta, stages, line) VALUES ")
ROWS_PER_INSERT = 500  # rows per multi-row INSERT, items and predictions: SQLite's cost per row grows in longer VALUES lists (2,000 rows: 5x)


def _insert_items(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    """Insert items rows (the columns of _ITEMS_INSERT), up to ROWS_PER_INSERT rows per INSERT statement. The
    full-text index's trigger (search_items_ai, db/schema.py) writes each row into an FTS5 table, and FTS5 writes
    its pending terms out as a new index segment at the end of every statement: one statement per item (an
    executemany) made a segment, and merges, per item, at three times the cost of the rows themselves. The index
    holds every row at commit either way."""
    if not rows:
        return
    width = len(rows[0])
    per = max(1, min(ROWS_PER_INSERT, conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // width))
    one = f"({', '.join('?' * width)})"
    for start in range(0, len(rows), per):
        part = rows[start:start + per]
        conn.execute(_ITEMS_INSERT + ", ".join([one] * len(part)), [v for row in part for v in row])


class _Connection(threading.local):
    """One thread's connection to the store and its memos (`Store.connection_memo`); none until it asks."""

    conn: sqlite3.Connection | None = None
    dry = False  # inside Store.dry_run(): this thread's writes are rolled back

    def __init__(self) -> None:
        self.memos: dict[str, dict[Any, Any]] = {}


class Store:
    """The product's one store. `Store(path)` creates the file and applies migrations when needed."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser().resolve()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._check_writable()
        self.images_dir = self.path.parent / f"{self.path.stem}.images"
        self.thumbs_dir = self.path.parent / f"{self.path.stem}.thumbs"
        self._local = _Connection()
        self._item_keys_cache: dict[int, dict[str, tuple[int, str, str]]] = {}
        self._item_options_cache: dict[int, dict[int, dict[str, str]]] = {}
        self._migrate()

    # ---- connections and the write path -------------------------------------------------------------

    @property
    def conn(self) -> sqlite3.Connection:
        conn = self._local.conn
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                   check_same_thread=False)
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            # INSERT OR REPLACE then fires delete triggers: the search index drops a replaced prediction (schema 009)
            conn.execute("PRAGMA recursive_triggers = ON")
            self._local.conn = conn
            self._local.memos = {}
        return conn

    def connection_memo(self, name: str) -> dict[Any, Any]:
        """A dict kept beside this thread's connection, for answers that hold only for that connection (SQLite's
        data_version is per connection). It goes with the connection: when the thread ends (a thread-local) or
        on close(); a module-level dict keyed by connection or thread would keep every finished thread's."""
        self.conn  # noqa: B018 - opens this thread's connection (and its memos) when it has none
        memos: dict[str, dict[Any, Any]] = self._local.memos
        return memos.setdefault(name, {})

    @property
    def db(self) -> sqlite_utils.Database:
        import sqlite_utils

        return sqlite_utils.Database(self.conn)

    def _check_writable(self) -> None:
        """Refuse a store this process cannot write (every command may write: migrations, labels, runs), in one
        line naming what is read-only, before SQLite fails deep inside a first write."""
        sidecars = [self.path.with_name(self.path.name + s) for s in ("-wal", "-shm")]
        for target in [self.path.parent, self.path, *sidecars]:
            if target.exists() and not os.access(target, os.W_OK):
                what = "its folder" if target == self.path.parent else target.name
                raise StoreReadOnly(f"the store {self.path} is read-only for this user ({what} is not writable): "
                                    "Crosscheck writes imports, runs and labels into it; serve it from a copy or "
                                    "give this user write access")

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """The single write path: a `BEGIN IMMEDIATE` transaction, committed on success, rolled back on error. A
        full disk (SQLite's SQLITE_FULL, which may already have rolled the transaction back) is StoreFull."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("ROLLBACK" if self._local.dry else "COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if _is_full(exc):
                raise _full(self.path) from exc
            raise

    @contextmanager
    def dry_run(self) -> Iterator[None]:
        """Inside, this thread's writes run every rule and statement of the one write path and are then rolled
        back (the Data tab's validation report: db/validate.py); no image file is written."""
        self._local.dry = True
        try:
            yield
        finally:
            self._local.dry = False

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """Reads inside see one state of the store (a deferred read transaction on this thread's connection),
        whatever other connections commit meanwhile; inside an open transaction, that transaction's state. A
        read path only: `write()` inside a snapshot fails (SQLite has no nested transactions)."""
        conn = self.conn
        if conn.in_transaction:
            yield conn
            return
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")  # nothing was written: this only ends the read

    def close(self) -> None:
        conn = self._local.conn
        if conn is not None:
            conn.close()
            self._local.conn = None
            self._local.memos = {}

    def _migrate(self) -> None:
        migrate(self.conn, self.write, now)

    # ---- images ---------------------------------------------------------------------------------------

    def image_path(self, digest: str) -> Path:
        row = self.conn.execute("SELECT ext FROM images WHERE hash = ?", (digest,)).fetchone()
        if row is None:
            raise NotFound(f"no image {digest} in the store")
        return self.images_dir / digest[:2] / f"{digest}.{row[0]}"

    def put_image_file(self, digest: str, ext: str, data: bytes) -> Path:
        """Write image bytes under their content hash (atomic rename; an existing file is kept)."""
        if self._local.dry:
            raise RuntimeError("dry run: no image is written")
        target = self.images_dir / digest[:2] / f"{digest}.{ext}"
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(f".tmp{os.getpid()}.{threading.get_ident()}")
            try:
                tmp.write_bytes(data)
            except OSError as exc:
                tmp.unlink(missing_ok=True)
                if _is_full(exc):
                    raise _full(self.path) from exc
                raise
            os.replace(tmp, target)
        return target

    def thumbnail(self, digest: str, size: int = 320) -> Path:
        """A cached PNG thumbnail (longest side `size`) of a stored image."""
        target = self.thumbs_dir / f"{digest}_{size}.png"
        if target.exists():
            return target
        from PIL import Image

        with Image.open(self.image_path(digest)) as src:
            im = src.convert("RGB") if src.mode not in ("RGB", "RGBA", "L") else src.copy()
            im.thumbnail((size, size))
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(f".tmp{os.getpid()}.{threading.get_ident()}.png")
            im.save(tmp, format="PNG")
            os.replace(tmp, target)
        return target

    # ---- benchmarks and items ---------------------------------------------------------------------------

    def benchmarks(self) -> list[dict[str, Any]]:
        cur = self.conn.execute("SELECT id, name, family, source, n_items, created FROM benchmarks ORDER BY name")
        cols = [c[0] for c in cur.description]
        return [dict(zip(cols, r, strict=True)) for r in cur]

    def split_counts(self) -> dict[str, dict[str, int]]:
        """{benchmark: {split: items}}, splits by name."""
        out: dict[str, dict[str, int]] = {}
        for name, split, n in self.conn.execute(
                "SELECT b.name, i.split, COUNT(*) FROM items i JOIN benchmarks b ON b.id = i.benchmark_id "
                "GROUP BY b.name, i.split ORDER BY b.name, i.split"):
            out.setdefault(name, {})[split] = n
        return out

    def benchmark(self, name: str) -> dict[str, Any]:
        cur = self.conn.execute("SELECT * FROM benchmarks WHERE name = ?", (name,))
        row = cur.fetchone()
        if row is None:
            known = ", ".join(b["name"] for b in self.benchmarks()) or "none yet"
            raise NotFound(f"no benchmark named {name!r} (known: {known})")
        return dict(zip([c[0] for c in cur.description], row, strict=True))

    def benchmark_family(self, name: str) -> str:
        return str(self.benchmark(name)["family"])

    def item_keys(self, benchmark_id: int) -> dict[str, tuple[int, str, str]]:
        """item_id -> (item pk, option letters, kind) for one benchmark (cached: a benchmark's items never change
        after its import)."""
        cache = self._item_keys_cache
        if benchmark_id not in cache:
            cur = self.conn.execute("SELECT item_id, id, letters, kind FROM items WHERE benchmark_id = ?",
                                    (benchmark_id,))
            # letters and kind interned: a few distinct strings shared by every item (less memory, and pickled
            # once when the importer sends the keys to its worker process)
            cache[benchmark_id] = {r[0]: (r[1], sys.intern(r[2]), _intern(r[3])) for r in cur}
        return cache[benchmark_id]

    def item_options(self, benchmark_id: int) -> dict[int, dict[str, str]]:
        """item pk -> options (letter -> text) for one benchmark (cached like item_keys)."""
        cache = self._item_options_cache
        if benchmark_id not in cache:
            cur = self.conn.execute("SELECT id, options FROM items WHERE benchmark_id = ?", (benchmark_id,))
            cache[benchmark_id] = {r[0]: _loads_fast(r[1]) for r in cur}
        return cache[benchmark_id]

    def insert_benchmark(self, name: str, family: str, source: str, sha256: str, items: list[Item],
                         images: Iterable[tuple[str, str, int, int, int]]) -> int:
        """Insert a benchmark with its items and image rows in one transaction; returns its id."""
        with self.write() as conn:
            conn.executemany("INSERT OR IGNORE INTO images (hash, ext, width, height, bytes) VALUES (?, ?, ?, ?, ?)",
                             list(images))
            cur = conn.execute(
                "INSERT INTO benchmarks (name, family, source, source_sha256, n_items, created) VALUES (?, ?, ?, ?, ?, ?)",
                (name, family, source, sha256, len(items), now()),
            )
            bid = int(cur.lastrowid or 0)
            _insert_items(conn, [(bid, it.item_id, it.group_id, it.split, it.kind, it.variant, it.question,
                                  _dumps(it.options), "".join(it.options), it.answer, _dumps(it.images),
                                  _dumps(it.image_names), _dumps(it.meta), _dumps(it.stages), it.line)
                                 for it in items])
            conn.execute(
                "INSERT INTO imports (kind, file, sha256, target, rows, created) VALUES ('items', ?, ?, ?, ?, ?)",
                (source, sha256, name, len(items), now()),
            )
        return bid

    def items(self, benchmark: str) -> list[Item]:
        """The benchmark's items as Item records (image paths as written, file lines), from `items_frame`."""
        b = self.benchmark(benchmark)
        df = self.items_frame(benchmark, ITEM_READS)
        cols = [df[c].tolist() for c in ("item_id", "group_id", "split", "kind", "variant", "question", "options",
                                         "answer", "images", "image_names", "meta", "stages", "line")]
        return [Item(benchmark=b["family"], item_id=i, group_id=g, split=sp, kind=k, variant=v, question=q,
                     options=o, answer=a, images=im, image_names=names, meta=m, stages=st, line=line or 0)
                for i, g, sp, k, v, q, o, a, im, names, m, st, line in zip(*cols, strict=True)]

    def items_frame(self, benchmark: str, columns: Sequence[str] = ITEM_COLUMNS, pk: bool = False) -> pd.DataFrame:
        """The one read of a benchmark's items: the items DataFrame of docs/ARCHITECTURE.md restricted to
        `columns` (in ITEM_READS order; item_id always), one row per item in import order, with each item's pk
        as a first column `pk` when asked. n_images without images is counted by SQLite (json_array_length)."""
        import numpy as np
        import pandas as pd

        unknown = [c for c in columns if c not in ITEM_READS]
        if unknown:
            raise ValueError(f"unknown item columns {unknown}; expected some of {', '.join(ITEM_READS)}")
        wanted = [c for c in ITEM_READS if c in columns or c == "item_id"]
        sql = {"n_images": "NULL" if "images" in wanted else
               "CASE WHEN images IS NULL OR images = '' THEN 0 ELSE json_array_length(images) END"}
        b = self.benchmark(benchmark)
        rows = self.conn.execute(
            f"SELECT id, {', '.join(sql.get(c, c) for c in wanted)} FROM items WHERE benchmark_id = ? ORDER BY id",
            (b["id"],)).fetchall()
        cols = dict(zip(["id", *wanted], zip(*rows, strict=True) if rows else [()] * (len(wanted) + 1),
                        strict=True))
        data: dict[str, Any] = {"pk": pd.Series(np.array(cols["id"], dtype=np.int64))} if pk else {}
        for name in wanted:
            col = cols[name]
            if name in _ITEM_JSON_EMPTY or name == "stages":
                data[name] = predictions.object_column(decode_item_json(name, col))
            elif name == "n_images":
                counts = (len(v) for v in data["images"]) if "images" in data else col
                data[name] = pd.Series(np.fromiter(counts, dtype=np.int64, count=len(col)))
            else:
                data[name] = predictions.object_column(col)
        return pd.DataFrame(data)

    # ---- runs and predictions ---------------------------------------------------------------------------

    def runs(self, benchmark: str | None = None, *, names: list[str] | None = None,
             with_counts: bool = True) -> list[dict[str, Any]]:
        """Runs (of one benchmark, or named ones), oldest first; `n_predictions` unless `with_counts=False`
        (counting scans the run's predictions)."""
        sql = ("SELECT r.id, r.name, b.name AS benchmark, b.family, r.runner, r.model, r.config, r.status,"
               " r.synthetic, r.created, r.updated FROM runs r JOIN benchmarks b ON b.id = r.benchmark_id")
        where, params = [], []
        if benchmark is not None:
            where.append("b.name = ?")
            params.append(benchmark)
        if names is not None:
            where.append(f"r.name IN ({','.join('?' * len(names))})")
            params.extend(names)
        if where:
            sql += " WHERE " + " AND ".join(where)
        with self.snapshot():  # the counts of the runs listed
            cur = self.conn.execute(sql + " ORDER BY r.id", params)
            cols = [c[0] for c in cur.description]
            out = []
            for r in cur:
                d = dict(zip(cols, r, strict=True))
                d["config"] = json.loads(d["config"])
                d["synthetic"] = bool(d["synthetic"])
                out.append(d)
            if with_counts:
                held = predictions.counts(self, [d["id"] for d in out])
                for d in out:
                    d["n_predictions"] = held[d["id"]]
        return out

    def run(self, name: str) -> dict[str, Any]:
        for r in self.runs(names=[name]):
            return r
        known = ", ".join(r["name"] for r in self.runs(with_counts=False)) or "none yet"
        raise NotFound(f"no run named {name!r} (known: {known})")

    def runs_named(self, names: list[str]) -> list[dict[str, Any]]:
        return self.runs(names=list(names))

    def ensure_run(self, name: str, benchmark: str, config: dict[str, Any]) -> int:
        """The id of run `name`, created with `config` if new; an existing run must match benchmark and config."""
        b = self.benchmark(benchmark)
        digest = config_hash(config)
        with self.write() as conn:
            row = conn.execute("SELECT id, benchmark_id, config_hash, config FROM runs WHERE name = ?",
                               (name,)).fetchone()
            if row is not None:
                if row[1] != b["id"]:
                    raise RunConflict(f"run {name!r} belongs to another benchmark; choose another --run name")
                if row[2] != digest:
                    old = json.loads(row[3])
                    diff = sorted(k for k in set(old) | set(config) if old.get(k) != config.get(k))
                    raise RunConflict(
                        f"run {name!r} exists with other settings ({', '.join(diff)}); a different model or setting "
                        "is a different run: choose another --run name")
                return int(row[0])
            cur = conn.execute(
                "INSERT INTO runs (name, benchmark_id, runner, model, config, config_hash, status, synthetic, created,"
                " updated) VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?, ?)",
                (name, b["id"], str(config.get("runner", "")), str(config.get("model", "")), _dumps(config), digest,
                 int(bool(config.get("synthetic"))), now(), now()),
            )
            return int(cur.lastrowid or 0)

    def set_run_status(self, run: str, status: str) -> None:
        """Set `run`'s status (db.store.touch_run: its version moves on); NotFound for a run the store lacks."""
        rid, _ = self._run_ids(run)
        with self.write() as conn:
            touch_run(conn, rid, status)

    def _run_ids(self, run: str) -> tuple[int, int]:
        row = self.conn.execute("SELECT id, benchmark_id FROM runs WHERE name = ?", (run,)).fetchone()
        if row is None:
            raise NotFound(f"no run named {run!r}")
        return int(row[0]), int(row[1])

    def done_keys(self, run: str, statuses: tuple[str, ...] = ("ok", "invalid")) -> set[tuple[str, int, int]]:
        """Keys (item_id, rotation, repeat) already answered by `run` with one of `statuses`, as scoring reads
        them (through the override layer: an api_error the audit overrode is not re-sent by --retry-errors)."""
        return predictions.done_keys(self, self._run_ids(run)[0], statuses)

    @staticmethod
    def prediction_row(run_id: int, item_pk: int, p: Prediction) -> tuple[Any, ...]:
        return (run_id, item_pk, p.rotation, p.repeat, p.response, p.shown, p.answer, p.status, p.error,
                p.input_mode, p.trace, p.tokens, p.latency, _dumps(p.probs))

    PRED_INSERT = ("INSERT INTO predictions (run_id, item_pk, rotation, repeat, response, shown, answer, status, error,"
                   " input_mode, trace, tokens, latency, probs) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")

    def add_predictions(self, run: str, predictions: Iterable[Prediction]) -> int:
        """Upsert predictions of `run` by key in one transaction (committed at once); returns how many."""
        rid, bid = self._run_ids(run)
        keys = self.item_keys(bid)
        rows = []
        for p in predictions:
            if p.item_id not in keys:
                raise NotFound(f"run {run!r}: no item {p.item_id!r} in its benchmark")
            rows.append(self.prediction_row(rid, keys[p.item_id][0], p))
        if not rows:
            return 0
        with self.write() as conn:
            conn.executemany(self.PRED_INSERT.replace("INSERT", "INSERT OR REPLACE", 1), rows)
            touch_run(conn, rid)
        return len(rows)

    def predictions_frame(self, run: str) -> pd.DataFrame:
        """Every prediction column of `run`, in key order, through the override layer (db.predictions.run_frame,
        the one prediction read)."""
        rid, bid = self._run_ids(run)
        return predictions.run_frame(self, rid, {pk: item_id for item_id, (pk, _, _) in self.item_keys(bid).items()})

    def run_data(self, run: str) -> RunData:
        r = self.run(run)
        return RunData(name=r["name"], benchmark=r["benchmark"], family=r["family"],
                       config={**r["config"], "synthetic": r["synthetic"]}, preds=self.predictions_frame(run))

    def counts(self) -> dict[str, int]:
        return {t: self.conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                for t in ("benchmarks", "items", "images", "runs", "predictions", "judgements", "labels")}
