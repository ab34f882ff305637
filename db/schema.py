"""The store's schema as an ordered list of sqlite-utils migrations, applied on open (STYLE 7).

Each migration runs once, inside the write transaction that records it in `_migrations`. Add new ones at
the end; never edit one that has shipped.

This module holds every CREATE TABLE / VIEW / INDEX of the product (tests/test_schema.py checks that no other
module does) and imports no other db/ module, so nothing imports back into it. No table is created at run
time: a store is complete once `migrate` has run (on `Store` open). Tables that an older version created
lazily (calibration_samples, prediction_overrides, run_jobs, prediction_sources) use IF NOT EXISTS, so a
store where one of them exists already still migrates.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported by `migrate` when a migration is due: sqlite_utils imports pandas, a store open need not
    import sqlite_utils

# The view every read of a prediction goes through: the imported row with its active override (db/overrides.py).
PREDICTIONS_READ = "predictions_effective"

CALIBRATION_DDL = """CREATE TABLE IF NOT EXISTS calibration_samples (
    name TEXT NOT NULL,
    position INTEGER NOT NULL,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    item_pk INTEGER NOT NULL REFERENCES items(id),
    rotation INTEGER NOT NULL DEFAULT 0,
    repeat INTEGER NOT NULL DEFAULT 0,
    operation TEXT,
    outcome TEXT,
    seed INTEGER NOT NULL,
    per_operation INTEGER NOT NULL,
    created TEXT NOT NULL,
    PRIMARY KEY (name, position),
    UNIQUE (name, run_id, item_pk, rotation, repeat)
)"""

OVERRIDES_DDL = """CREATE TABLE IF NOT EXISTS prediction_overrides (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    item_pk INTEGER NOT NULL REFERENCES items(id),
    rotation INTEGER NOT NULL DEFAULT 0,
    repeat INTEGER NOT NULL DEFAULT 0,
    method TEXT NOT NULL,
    old_status TEXT NOT NULL,
    old_answer TEXT,
    old_shown TEXT,
    new_status TEXT NOT NULL,
    new_answer TEXT,
    new_shown TEXT,
    by TEXT NOT NULL DEFAULT '',
    note TEXT,
    created TEXT NOT NULL,
    reverted TEXT
)"""
OVERRIDES_INDEX = ("CREATE INDEX IF NOT EXISTS prediction_overrides_key ON prediction_overrides "
                   "(run_id, item_pk, rotation, repeat)")
# Migration 004 (db/schema.py): the raw response an override was made against, and when / why it went stale.
LAYER_COLUMNS = (("response", "TEXT"), ("stale", "TEXT"), ("stale_reason", "TEXT"))

# The one read path of a prediction: the imported row with its active override (if any) applied.
OVERRIDES_VIEW_DDL = f"""CREATE VIEW IF NOT EXISTS {PREDICTIONS_READ} AS
SELECT p.run_id, p.item_pk, p.rotation, p.repeat, p.response,
    CASE WHEN o.id IS NULL THEN p.shown ELSE o.new_shown END AS shown,
    CASE WHEN o.id IS NULL THEN p.answer ELSE o.new_answer END AS answer,
    CASE WHEN o.id IS NULL THEN p.status ELSE o.new_status END AS status,
    p.error, p.input_mode, p.trace, p.tokens, p.latency, p.probs, o.id AS override_id
FROM predictions p LEFT JOIN prediction_overrides o ON o.id = (
    SELECT MAX(x.id) FROM prediction_overrides x
    WHERE x.run_id = p.run_id AND x.item_pk = p.item_pk AND x.rotation = p.rotation AND x.repeat = p.repeat
    AND x.reverted IS NULL AND x.stale IS NULL AND x.response IS p.response)"""

RUN_JOBS_DDL = """CREATE TABLE IF NOT EXISTS run_jobs (
    id INTEGER PRIMARY KEY,
    run TEXT NOT NULL,
    benchmark TEXT NOT NULL,
    runner TEXT NOT NULL,
    model TEXT,
    kind TEXT NOT NULL CHECK (kind IN ('new', 'resume')),
    started_by TEXT,
    started TEXT NOT NULL,
    held_before INTEGER NOT NULL DEFAULT 0,
    finished TEXT,
    status TEXT NOT NULL DEFAULT 'running',
    total INTEGER,
    sent INTEGER NOT NULL DEFAULT 0,
    ok INTEGER NOT NULL DEFAULT 0,
    invalid INTEGER NOT NULL DEFAULT 0,
    api_error INTEGER NOT NULL DEFAULT 0,
    message TEXT
)"""
RUN_JOBS_INDEX = "CREATE INDEX IF NOT EXISTS run_jobs_run ON run_jobs (run, id)"


def _m001_catalog(db: sqlite_utils.Database) -> None:
    """Benchmarks, their images and items, runs."""
    db.table("benchmarks").create(
        {"id": int, "name": str, "family": str, "source": str, "source_sha256": str, "n_items": int,
         "created": str},
        pk="id", not_null={"name", "family", "created"},
    )
    db.table("benchmarks").create_index(["name"], unique=True)
    db.table("images").create(
        {"hash": str, "ext": str, "width": int, "height": int, "bytes": int},
        pk="hash", not_null={"ext"},
    )
    db.table("items").create(
        {"id": int, "benchmark_id": int, "item_id": str, "group_id": str, "split": str, "kind": str,
         "variant": str, "question": str, "options": str, "letters": str, "answer": str, "images": str,
         "image_names": str, "meta": str, "stages": str, "line": int},
        pk="id", foreign_keys=[("benchmark_id", "benchmarks", "id")],
        not_null={"benchmark_id", "item_id", "group_id", "split", "options", "letters", "answer"},
    )
    db.table("items").create_index(["benchmark_id", "item_id"], unique=True)
    db.table("items").create_index(["benchmark_id", "group_id"])
    db.table("runs").create(
        {"id": int, "name": str, "benchmark_id": int, "runner": str, "model": str, "config": str,
         "config_hash": str, "status": str, "synthetic": int, "created": str, "updated": str, "note": str},
        pk="id", foreign_keys=[("benchmark_id", "benchmarks", "id")],
        not_null={"name", "benchmark_id", "runner", "config", "config_hash", "status", "created"},
        defaults={"synthetic": 0},
    )
    db.table("runs").create_index(["name"], unique=True)


def _m001_results(db: sqlite_utils.Database) -> None:
    """Predictions, judgements, labels with their audit, and the import log."""
    # One B-tree keyed by the prediction key: bulk inserts stay fast and lookups by run are a prefix scan.
    db.execute(
        """CREATE TABLE predictions (
            run_id INTEGER NOT NULL REFERENCES runs(id),
            item_pk INTEGER NOT NULL REFERENCES items(id),
            rotation INTEGER NOT NULL DEFAULT 0,
            repeat INTEGER NOT NULL DEFAULT 0,
            response TEXT,
            shown TEXT,
            answer TEXT,
            status TEXT NOT NULL,
            error TEXT,
            input_mode TEXT NOT NULL DEFAULT 'all',
            trace TEXT,
            tokens INTEGER,
            latency REAL,
            probs TEXT,
            PRIMARY KEY (run_id, item_pk, rotation, repeat)
        ) WITHOUT ROWID"""
    )
    db.execute(
        """CREATE TABLE judgements (
            judge_run_id INTEGER NOT NULL REFERENCES runs(id),
            run_id INTEGER NOT NULL REFERENCES runs(id),
            item_pk INTEGER NOT NULL REFERENCES items(id),
            rotation INTEGER NOT NULL DEFAULT 0,
            repeat INTEGER NOT NULL DEFAULT 0,
            S1 INTEGER, S2 INTEGER, S3 INTEGER, S4 INTEGER,
            first_failure TEXT,
            status TEXT NOT NULL,
            raw TEXT,
            created TEXT NOT NULL,
            PRIMARY KEY (judge_run_id, run_id, item_pk, rotation, repeat)
        )"""
    )
    db.execute(
        """CREATE TABLE labels (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES runs(id),
            item_pk INTEGER NOT NULL REFERENCES items(id),
            rotation INTEGER NOT NULL DEFAULT 0,
            repeat INTEGER NOT NULL DEFAULT 0,
            labeler TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('human', 'judge')),
            S1 INTEGER, S2 INTEGER, S3 INTEGER, S4 INTEGER,
            first_failure TEXT,
            category TEXT,
            note TEXT,
            updated TEXT NOT NULL,
            UNIQUE (run_id, item_pk, rotation, repeat, labeler)
        )"""
    )
    db.execute(
        """CREATE TABLE label_audit (
            id INTEGER PRIMARY KEY,
            label_id INTEGER NOT NULL REFERENCES labels(id),
            labeler TEXT NOT NULL,
            changed_by TEXT NOT NULL,
            at TEXT NOT NULL,
            old TEXT,
            new TEXT NOT NULL
        )"""
    )
    db.table("imports").create(
        {"id": int, "kind": str, "file": str, "sha256": str, "target": str, "rows": int, "created": str},
        pk="id", not_null={"kind", "file", "sha256", "target", "created"},
    )


def _m001_initial(db: sqlite_utils.Database) -> None:
    _m001_catalog(db)
    _m001_results(db)


def _m002_calibration_samples(db: sqlite_utils.Database) -> None:
    """Frozen calibration samples (002 App. C.3): a drawn sample never changes."""
    db.execute(CALIBRATION_DDL)


def _m003_prediction_overrides(db: sqlite_utils.Database) -> None:
    """Re-parses and manual answers from the extraction audit; the raw response never changes."""
    db.execute(OVERRIDES_DDL)
    db.execute(OVERRIDES_INDEX)


def _m004_override_layer(db: sqlite_utils.Database) -> None:
    """Overrides become a layer over the imported predictions (issue 14.3): record the raw response each one was
    made against, read predictions through the `predictions_effective` view, and put back the imported values of
    rows that earlier versions rewrote in place (the oldest override of a key recorded them as its old values).
    A row that no longer holds its newest live override's values was replaced since: left as it is, and that
    key's overrides are marked stale."""
    for name, sql_type in LAYER_COLUMNS:
        db.execute(f"ALTER TABLE prediction_overrides ADD COLUMN {name} {sql_type}")
    key = "o.run_id = p.run_id AND o.item_pk = p.item_pk AND o.rotation = p.rotation AND o.repeat = p.repeat"
    db.execute(f"UPDATE prediction_overrides AS o SET response = p.response FROM predictions p WHERE {key}")
    keys = db.execute("SELECT DISTINCT run_id, item_pk, rotation, repeat FROM prediction_overrides"
                      " WHERE reverted IS NULL").fetchall()
    for k in keys:
        where = "run_id = ? AND item_pk = ? AND rotation = ? AND repeat = ?"
        first = db.execute(f"SELECT old_status, old_answer, old_shown FROM prediction_overrides WHERE {where}"
                           " ORDER BY id LIMIT 1", k).fetchone()
        newest = db.execute(f"SELECT new_status, new_answer, new_shown FROM prediction_overrides WHERE {where}"
                            " AND reverted IS NULL ORDER BY id DESC LIMIT 1", k).fetchone()
        row = db.execute(f"SELECT status, answer, shown FROM predictions WHERE {where}", k).fetchone()
        if row is not None and tuple(row) == tuple(newest):
            db.execute(f"UPDATE predictions SET status = ?, answer = ?, shown = ? WHERE {where}", (*first, *k))
        else:
            db.execute(f"UPDATE prediction_overrides SET stale = datetime('now'), stale_reason = ? WHERE {where}"
                       " AND reverted IS NULL", ("row replaced before overrides became a layer", *k))
    db.execute(OVERRIDES_VIEW_DDL)


def _m005_run_jobs(db: sqlite_utils.Database) -> None:
    """The Run tab's job history, one row per job (issue 14.8)."""
    db.execute(RUN_JOBS_DDL)
    db.execute(RUN_JOBS_INDEX)


def _m006_prediction_sources(db: sqlite_utils.Database) -> None:
    """What an importing tool kept beside each raw response (VLMEvalKit's extracted letter and hit, lmms-eval's
    raw response and target), shown by the extraction audit (db/foreign.py)."""
    db.execute("""CREATE TABLE IF NOT EXISTS prediction_sources (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    item_pk INTEGER NOT NULL REFERENCES items(id),
    rotation INTEGER NOT NULL DEFAULT 0,
    repeat INTEGER NOT NULL DEFAULT 0,
    tool TEXT NOT NULL,
    kept TEXT NOT NULL,
    PRIMARY KEY (run_id, item_pk, rotation, repeat)
) WITHOUT ROWID""")


def _m007_run_revision(db: sqlite_utils.Database) -> None:
    """A run's revision: one more at each change of its predictions, overrides, judgements or status
    (db.store.touch_run), so caches of its scores key on a number that no two states share (`updated` holds
    seconds: two overrides within one second left it as it was)."""
    db.execute("ALTER TABLE runs ADD COLUMN revision INTEGER NOT NULL DEFAULT 0")


# Full-text search (db/search.py, issue #23): FTS5 in the standard library's SQLite, unicode61 tokens.
# Items, label notes and group tags are external-content tables kept by triggers in the same transaction as the
# write; predictions (most of the text: responses and traces) are indexed per run when the run's revision moved
# (db.search.refresh), so an import pays nothing for them, and the index holds its own copy of their text (until
# migration 009, below).
SEARCH_TOKENIZE = "unicode61 remove_diacritics 2"
SEARCH_DDL = (
    f"""CREATE VIRTUAL TABLE search_items USING fts5(question, options, meta, content='items', content_rowid='id',
        tokenize='{SEARCH_TOKENIZE}')""",
    """CREATE TRIGGER search_items_ai AFTER INSERT ON items BEGIN
        INSERT INTO search_items(rowid, question, options, meta) VALUES (new.id, new.question, new.options, new.meta);
    END""",
    """CREATE TRIGGER search_items_ad AFTER DELETE ON items BEGIN
        INSERT INTO search_items(search_items, rowid, question, options, meta)
        VALUES ('delete', old.id, old.question, old.options, old.meta);
    END""",
    """CREATE TRIGGER search_items_au AFTER UPDATE OF question, options, meta ON items BEGIN
        INSERT INTO search_items(search_items, rowid, question, options, meta)
        VALUES ('delete', old.id, old.question, old.options, old.meta);
        INSERT INTO search_items(rowid, question, options, meta) VALUES (new.id, new.question, new.options, new.meta);
    END""",
    f"""CREATE VIRTUAL TABLE search_notes USING fts5(note, content='labels', content_rowid='id',
        tokenize='{SEARCH_TOKENIZE}')""",
    """CREATE TRIGGER search_notes_ai AFTER INSERT ON labels BEGIN
        INSERT INTO search_notes(rowid, note) VALUES (new.id, new.note);
    END""",
    """CREATE TRIGGER search_notes_ad AFTER DELETE ON labels BEGIN
        INSERT INTO search_notes(search_notes, rowid, note) VALUES ('delete', old.id, old.note);
    END""",
    """CREATE TRIGGER search_notes_au AFTER UPDATE OF note ON labels BEGIN
        INSERT INTO search_notes(search_notes, rowid, note) VALUES ('delete', old.id, old.note);
        INSERT INTO search_notes(rowid, note) VALUES (new.id, new.note);
    END""",
    """CREATE TABLE group_tags (
        id INTEGER PRIMARY KEY,
        benchmark_id INTEGER NOT NULL REFERENCES benchmarks(id),
        group_id TEXT NOT NULL,
        tag TEXT NOT NULL,
        note TEXT,
        by TEXT NOT NULL DEFAULT '',
        created TEXT NOT NULL,
        UNIQUE (benchmark_id, group_id, tag)
    )""",
    "CREATE INDEX group_tags_tag ON group_tags (benchmark_id, tag)",
    f"""CREATE VIRTUAL TABLE search_tags USING fts5(tag, note, content='group_tags', content_rowid='id',
        tokenize='{SEARCH_TOKENIZE}')""",
    """CREATE TRIGGER search_tags_ai AFTER INSERT ON group_tags BEGIN
        INSERT INTO search_tags(rowid, tag, note) VALUES (new.id, new.tag, new.note);
    END""",
    """CREATE TRIGGER search_tags_ad AFTER DELETE ON group_tags BEGIN
        INSERT INTO search_tags(search_tags, rowid, tag, note) VALUES ('delete', old.id, old.tag, old.note);
    END""",
    """CREATE TRIGGER search_tags_au AFTER UPDATE OF tag, note ON group_tags BEGIN
        INSERT INTO search_tags(search_tags, rowid, tag, note) VALUES ('delete', old.id, old.tag, old.note);
        INSERT INTO search_tags(rowid, tag, note) VALUES (new.id, new.tag, new.note);
    END""",
    """CREATE TABLE search_keys (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id),
        item_pk INTEGER NOT NULL REFERENCES items(id),
        rotation INTEGER NOT NULL,
        repeat INTEGER NOT NULL,
        UNIQUE (run_id, item_pk, rotation, repeat)
    )""",
    "CREATE TABLE search_state (run_id INTEGER PRIMARY KEY REFERENCES runs(id), revision INTEGER NOT NULL)",
    f"CREATE VIRTUAL TABLE search_predictions USING fts5(response, trace, tokenize='{SEARCH_TOKENIZE}')",
)


def _m008_search(db: sqlite_utils.Database) -> None:
    """Full-text search (issue #23): the FTS5 tables and their triggers, group tags; the items and label notes
    of an existing store indexed now ('rebuild'), its predictions on the first search (db.search.refresh)."""
    for ddl in SEARCH_DDL:
        db.execute(ddl)
    db.execute("INSERT INTO search_items(search_items) VALUES ('rebuild')")
    db.execute("INSERT INTO search_notes(search_notes) VALUES ('rebuild')")


# Migration 009 (issue #23, the cost of keeping the index): `search_predictions` without its own copy of the text.
# It reads responses and traces through the view `search_prediction_texts` (search_keys joined to predictions), so
# snippets still come from the predictions table; no per-row sizes (columnsize=0: no ranking uses them, a snippet
# counts its row's tokens); a 64 MiB in-memory hash, so a run's refresh writes one segment, and no incremental
# merging (automerge 0): segments are merged 16 at a time (crisismerge, FTS5's default 16), each merge paid by the
# refresh that makes the 16th (bench/search.py's 24 runs pay one). An external-content row is deleted with
# the text it was indexed from: the triggers below do it when a prediction's text is replaced (INSERT OR REPLACE
# fires the delete trigger because every Store connection sets recursive_triggers) or updated.
SEARCH_PREDICTIONS_HASH = 64 << 20
SEARCH_PREDICTIONS_DDL = (
    """CREATE VIEW search_prediction_texts AS SELECT k.id AS id, p.response AS response, p.trace AS trace
        FROM search_keys k JOIN predictions p ON p.run_id = k.run_id AND p.item_pk = k.item_pk
        AND p.rotation = k.rotation AND p.repeat = k.repeat""",
    f"""CREATE VIRTUAL TABLE search_predictions USING fts5(response, trace, content='search_prediction_texts',
        content_rowid='id', columnsize=0, tokenize='{SEARCH_TOKENIZE}')""",
    f"INSERT INTO search_predictions(search_predictions, rank) VALUES ('hashsize', {SEARCH_PREDICTIONS_HASH})",
    "INSERT INTO search_predictions(search_predictions, rank) VALUES ('automerge', 0)",
    """CREATE TRIGGER search_predictions_ad AFTER DELETE ON predictions BEGIN
        INSERT INTO search_predictions(search_predictions, rowid, response, trace) SELECT 'delete', k.id,
            old.response, old.trace FROM search_keys k WHERE k.run_id = old.run_id AND k.item_pk = old.item_pk
            AND k.rotation = old.rotation AND k.repeat = old.repeat;
        DELETE FROM search_keys WHERE run_id = old.run_id AND item_pk = old.item_pk AND rotation = old.rotation
            AND repeat = old.repeat;
    END""",
    """CREATE TRIGGER search_predictions_au AFTER UPDATE OF response, trace ON predictions
        WHEN old.response IS NOT new.response OR old.trace IS NOT new.trace BEGIN
        INSERT INTO search_predictions(search_predictions, rowid, response, trace) SELECT 'delete', k.id,
            old.response, old.trace FROM search_keys k WHERE k.run_id = old.run_id AND k.item_pk = old.item_pk
            AND k.rotation = old.rotation AND k.repeat = old.repeat;
        DELETE FROM search_keys WHERE run_id = old.run_id AND item_pk = old.item_pk AND rotation = old.rotation
            AND repeat = old.repeat;
    END""",
)


def _m009_search_external(db: sqlite_utils.Database) -> None:
    """`search_predictions` as an external-content table over the predictions (issue #23: the index cost 1.04x
    the import; the copy of the text and the incremental merges were half of it). The old table and its copy are
    dropped and every run is indexed again by the first search that covers it (db.search.refresh)."""
    db.execute("DROP TABLE search_predictions")
    db.execute("DELETE FROM search_keys")
    db.execute("DELETE FROM search_state")
    for ddl in SEARCH_PREDICTIONS_DDL:
        db.execute(ddl)


# Migration 010 (issue #38): reviewers' verdicts on suspect gold letters, one row per verdict, never changed or
# deleted (an item's verdict is its latest row: db/gold_reviews.py, the one write path), and the perceptual hash
# of each image, computed once by the first item-health read that needs it (db/diagnosis.py; '' for a flat image
# the hash cannot describe).
HEALTH_DDL = (
    """CREATE TABLE gold_reviews (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        benchmark_id INTEGER NOT NULL REFERENCES benchmarks(id),
        item_pk INTEGER NOT NULL REFERENCES items(id),
        verdict TEXT NOT NULL CHECK (verdict IN ('wrong', 'right')),
        note TEXT,
        by TEXT NOT NULL,
        created TEXT NOT NULL
    )""",
    "CREATE INDEX gold_reviews_item ON gold_reviews (benchmark_id, item_pk, id)",
    "CREATE TABLE image_phash (hash TEXT PRIMARY KEY REFERENCES images(hash), phash TEXT NOT NULL)",
)


def _m010_item_health(db: sqlite_utils.Database) -> None:
    """Gold-letter reviews and the images' perceptual hashes (issue #38)."""
    for ddl in HEALTH_DDL:
        db.execute(ddl)


MIGRATIONS: list[tuple[str, Callable[[sqlite_utils.Database], None]]] = [
    ("001_initial", _m001_initial),
    ("002_calibration_samples", _m002_calibration_samples),
    ("003_prediction_overrides", _m003_prediction_overrides),
    ("004_override_layer", _m004_override_layer),
    ("005_run_jobs", _m005_run_jobs),
    ("006_prediction_sources", _m006_prediction_sources),
    ("007_run_revision", _m007_run_revision),
    ("008_search", _m008_search),
    ("009_search_external", _m009_search_external),
    ("010_item_health", _m010_item_health),
]


MIGRATIONS_DDL = "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied TEXT NOT NULL)"


def migrate(conn: sqlite3.Connection, write: Callable[[], AbstractContextManager[sqlite3.Connection]],
            now: Callable[[], str]) -> None:
    """Apply the migrations `conn`'s store lacks, each in its own `write()` transaction (Store.write)."""
    conn.execute(MIGRATIONS_DDL)
    done = {r[0] for r in conn.execute("SELECT name FROM _migrations")}
    for name, fn in MIGRATIONS:
        if name in done:
            continue
        import sqlite_utils

        with write():
            if conn.execute("SELECT 1 FROM _migrations WHERE name = ?", (name,)).fetchone():
                continue  # another process applied it while we waited for the lock
            fn(sqlite_utils.Database(conn))
            conn.execute("INSERT INTO _migrations VALUES (?, ?)", (name, now()))
