"""Full-text search over what models said and what items hold (issue #23), with SQLite's FTS5.

Fields: `response` and `trace` (a run's predictions), `question`, `options` and `meta` (an item's texts; meta as its
JSON text, so values and field names both match), `notes` (a label's note and a group tag with its note). The
query is FTS5's syntax (docs/UI.md, "Search"): words (all must match), "a phrase", prefix*, NOT, OR, parentheses.
A query FTS5 cannot parse (an unbalanced quote) raises BadQuery, naming what is wrong.

The index (tables in db/schema.py, migrations 008 and 009): items, label notes and tags are indexed by triggers in
the transaction that writes them; predictions per run by `refresh`, which indexes the rows not indexed in every
run whose revision moved since (db.store.touch_run moves it on every write of a run's predictions: imports,
`--replace`, live runs); a replaced or changed prediction leaves the index by a trigger as it is written.
`search` refreshes the runs it searches first, so a search always sees every committed prediction; a new run's
import pays nothing for the index (docs/ARCHITECTURE.md, "Search and tags").
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from core.errors import CrosscheckError
from db import predictions
from db.store import Store

FIELDS = ("response", "trace", "question", "options", "meta", "notes")
PREDICTION_FIELDS = ("response", "trace")
ITEM_FIELDS = ("question", "options", "meta")
MARK = ("«", "»")  # around each matched token in a snippet
_SNIPPET_TOKENS = 16
_COLUMN_FILTER = re.compile(r'(^|[\s(])[A-Za-z_]+\s*:(?=[^"]*(?:"[^"]*"[^"]*)*$)')  # `field:` outside quotes


class BadQuery(CrosscheckError, ValueError):
    """A search query FTS5 cannot parse."""


@dataclass(frozen=True, slots=True)
class Hit:
    """One field of one item (and run) that matches: `run` is None for an item's own fields and a group tag."""

    benchmark: str
    group_id: str
    item_id: str | None
    run: str | None
    field: str
    snippet: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def parse_fields(text: str | None) -> tuple[str, ...]:
    """`--in response,trace,...` as a tuple of known fields (all when empty); an unknown name is an error."""
    if not text or not text.strip():
        return FIELDS
    chosen = tuple(dict.fromkeys(f.strip() for f in text.split(",") if f.strip()))
    bad = [f for f in chosen if f not in FIELDS]
    if bad:
        raise CrosscheckError(f"--in: unknown field {', '.join(map(repr, bad))} (expected some of {', '.join(FIELDS)})")
    return chosen


# --------------------------------------------------------------------------- keeping the index


def stale_runs(store: Store, run_ids: Iterable[int] | None = None) -> list[tuple[int, int]]:
    """(run id, revision) of the runs whose predictions changed since they were indexed."""
    sql = ("SELECT r.id, r.revision FROM runs r LEFT JOIN search_state s ON s.run_id = r.id"
           " WHERE s.revision IS NOT r.revision")
    rows = store.conn.execute(sql).fetchall()
    if run_ids is not None:
        wanted = set(run_ids)
        rows = [r for r in rows if r[0] in wanted]
    return [(int(a), int(b)) for a, b in rows]


def refresh(store: Store, run_ids: Iterable[int] | None = None) -> int:
    """Index what changed in the predictions of the runs (all by default) whose revision moved; returns how many
    predictions were (re)indexed. One write transaction per run (a full-scale run's 19,533 rows hold the write
    lock well under a second), its revision read inside it."""
    done = 0
    for run_id, _ in stale_runs(store, run_ids):
        done += _refresh_run(store, run_id)
    return done


def _refresh_run(store: Store, run_id: int) -> int:
    """One run, in one write transaction: add the rows not indexed (db.predictions, the one reader of
    predictions), record the revision read inside the transaction. A replaced or changed prediction left the
    index when it was written (the triggers of migration 009), so it is one of the rows not indexed."""
    with store.write() as conn:
        revision = conn.execute("SELECT revision FROM runs WHERE id = ?", (run_id,)).fetchone()
        if revision is None:
            return 0
        added = predictions.index_new_rows(conn, run_id)
        conn.execute("INSERT INTO search_state (run_id, revision) VALUES (?, ?) ON CONFLICT (run_id) DO UPDATE"
                     " SET revision = excluded.revision", (run_id, revision[0]))
    return added


# --------------------------------------------------------------------------- searching


def _match(columns: Sequence[str], query: str) -> str:
    return "{" + " ".join(columns) + "} : (" + query + ")"


def _scope(store: Store, benchmark: str | None, runs: Sequence[str] | None) -> tuple[int | None, list[int] | None]:
    bench_id = None
    if benchmark:
        row = store.conn.execute("SELECT id FROM benchmarks WHERE name = ?", (benchmark,)).fetchone()
        if row is None:
            raise CrosscheckError(f"no benchmark {benchmark!r} in the store")
        bench_id = int(row[0])
    run_ids = None
    if runs:
        run_ids = []
        for name in runs:
            row = store.conn.execute("SELECT id, benchmark_id FROM runs WHERE name = ?", (name,)).fetchone()
            if row is None:
                raise CrosscheckError(f"no run {name!r} in the store")
            if bench_id is not None and int(row[1]) != bench_id:
                raise CrosscheckError(f"run {name!r} is not a run of benchmark {benchmark!r}")
            run_ids.append(int(row[0]))
    return bench_id, run_ids


def _run(conn: sqlite3.Connection, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    try:
        return conn.execute(sql, params).fetchall()
    except sqlite3.OperationalError as exc:
        msg = str(exc)
        if "fts5" in msg or "syntax" in msg or "unterminated" in msg or "no such column" in msg:
            raise BadQuery(f"bad search query: {msg.removeprefix('fts5: ')}") from None
        raise


def search(store: Store, query: str, benchmark: str | None = None, runs: Sequence[str] | None = None,
           fields: Sequence[str] = FIELDS, limit: int | None = 200, snippets: bool = True) -> list[Hit]:
    """Hits of `query` in `fields` within `benchmark` and, for a run's fields, `runs` (every run when None): per
    field the first `limit` matches (all with None) in the index's order (FTS5 walks its matches in rowid order
    and stops at the limit, so a word in every response costs no more than a rare one; a run's predictions are
    in item order), then at most `limit` of them in the benchmark's item order, then run and field.
    `snippets=False` leaves the snippets empty."""
    if not query or not query.strip():
        raise BadQuery("bad search query: it is empty")
    if "{" in query or "}" in query or _COLUMN_FILTER.search(query):
        raise BadQuery("bad search query: a word followed by ':' is a column filter; choose fields with --in (or "
                       "the fields picker), and put text holding ':' or braces in double quotes")
    bench_id, run_ids = _scope(store, benchmark, runs)
    if any(f in PREDICTION_FIELDS for f in fields):
        scope = run_ids
        if scope is None and bench_id is not None:
            scope = [r[0] for r in store.conn.execute("SELECT id FROM runs WHERE benchmark_id = ?", (bench_id,))]
        refresh(store, scope)
    hits: list[tuple[int, Hit]] = []
    for field in fields:
        hits += _field_hits(store.conn, field, query, bench_id, run_ids, limit, snippets)
    hits.sort(key=lambda h: (h[0], h[1].run or "", FIELDS.index(h[1].field)))
    out = [h for _, h in hits]
    return out if limit is None else out[:limit]


def _field_hits(conn: sqlite3.Connection, field: str, query: str, bench_id: int | None, run_ids: list[int] | None,
                limit: int | None, snippets: bool = True) -> list[tuple[int, Hit]]:
    # CROSS JOIN keeps the FTS5 match list the outer loop (left to right): a plain JOIN let SQLite's planner walk
    # the benchmark's items and run the MATCH once per item (3 s for a word no item holds, at full scale)
    lim = "" if limit is None else f" LIMIT {int(limit)}"
    snip = f"snippet({{t}}, {{c}}, '{MARK[0]}', '{MARK[1]}', '…', {_SNIPPET_TOKENS})" if snippets else "''"
    where_b = "" if bench_id is None else f" AND b.id = {bench_id}"
    where_r = "" if run_ids is None else f" AND r.id IN ({','.join(map(str, run_ids))})"
    if field in PREDICTION_FIELDS:
        col = PREDICTION_FIELDS.index(field)
        sql = (f"SELECT i.id, b.name, i.group_id, i.item_id, r.name,"
               f" {snip.format(t='search_predictions', c=col)} FROM search_predictions"
               " CROSS JOIN search_keys k ON k.id = search_predictions.rowid CROSS JOIN runs r ON r.id = k.run_id"
               " CROSS JOIN items i ON i.id = k.item_pk CROSS JOIN benchmarks b ON b.id = i.benchmark_id"
               f" WHERE search_predictions MATCH ?{where_b}{where_r}{lim}")
        rows = _run(conn, sql, (_match([field], query),))
    elif field in ITEM_FIELDS:
        col = ITEM_FIELDS.index(field)
        sql = (f"SELECT i.id, b.name, i.group_id, i.item_id, NULL,"
               f" {snip.format(t='search_items', c=col)} FROM search_items CROSS JOIN items i ON i.id = search_items.rowid"
               " CROSS JOIN benchmarks b ON b.id = i.benchmark_id"
               f" WHERE search_items MATCH ?{where_b}{lim}")
        rows = _run(conn, sql, (_match([field], query),))
    else:  # notes: a label's note, a group's tag and its note
        sql = (f"SELECT i.id, b.name, i.group_id, i.item_id, r.name,"
               f" {snip.format(t='search_notes', c=0)} FROM search_notes CROSS JOIN labels l ON l.id = search_notes.rowid"
               " CROSS JOIN runs r ON r.id = l.run_id CROSS JOIN items i ON i.id = l.item_pk"
               " CROSS JOIN benchmarks b ON b.id = i.benchmark_id"
               f" WHERE search_notes MATCH ?{where_b}{where_r}{lim}")
        rows = _run(conn, sql, (query,))
        sql = (f"SELECT (SELECT MIN(x.id) FROM items x WHERE x.benchmark_id = g.benchmark_id AND x.group_id = g.group_id),"
               " b.name, g.group_id, NULL, NULL,"
               f" {snip.format(t='search_tags', c=-1)} FROM search_tags CROSS JOIN group_tags g ON g.id = search_tags.rowid"
               " CROSS JOIN benchmarks b ON b.id = g.benchmark_id"
               f" WHERE search_tags MATCH ?{where_b}{lim}")
        rows += _run(conn, sql, (query,))
    return [(int(r[0] or 0), Hit(benchmark=r[1], group_id=r[2], item_id=r[3], run=r[4], field=field,
                              snippet=str(r[5] or ""))) for r in rows]


def matching_groups(store: Store, query: str, benchmark: str, runs: Sequence[str] | None = None,
                    fields: Sequence[str] = FIELDS) -> set[str]:
    """The ids of the groups of `benchmark` with a hit in `fields` (Browse's search box: combined with its other
    filters), every match counted: one scan of each FTS5 match list, joined by row id."""
    if not query or not query.strip():
        raise BadQuery("bad search query: it is empty")
    search(store, query, benchmark=benchmark, runs=runs, fields=fields, limit=1, snippets=False)  # checks, refresh
    bench_id, run_ids = _scope(store, benchmark, runs)
    scope = run_ids if run_ids is not None else [
        r[0] for r in store.conn.execute("SELECT id FROM runs WHERE benchmark_id = ?", (bench_id,))]
    in_runs = ",".join(map(str, scope)) or "NULL"
    found: set[str] = set()
    pred = [f for f in fields if f in PREDICTION_FIELDS]
    if pred:
        found |= {r[0] for r in _run(store.conn, (
            "SELECT DISTINCT i.group_id FROM search_keys k JOIN items i ON i.id = k.item_pk"
            " WHERE k.id IN (SELECT rowid FROM search_predictions WHERE search_predictions MATCH ?)"
            f" AND k.run_id IN ({in_runs})"), (_match(pred, query),))}
    item = [f for f in fields if f in ITEM_FIELDS]
    if item:
        found |= {r[0] for r in _run(store.conn, (
            "SELECT DISTINCT group_id FROM items WHERE id IN (SELECT rowid FROM search_items WHERE search_items"
            " MATCH ?) AND benchmark_id = ?"), (_match(item, query), bench_id))}
    if "notes" in fields:
        found |= {r[0] for r in _run(store.conn, (
            "SELECT DISTINCT i.group_id FROM labels l JOIN items i ON i.id = l.item_pk WHERE l.id IN (SELECT rowid"
            f" FROM search_notes WHERE search_notes MATCH ?) AND l.run_id IN ({in_runs})"), (query,))}
        found |= {r[0] for r in _run(store.conn, (
            "SELECT DISTINCT group_id FROM group_tags WHERE id IN (SELECT rowid FROM search_tags WHERE search_tags"
            " MATCH ?) AND benchmark_id = ?"), (query, bench_id))}
    return found
