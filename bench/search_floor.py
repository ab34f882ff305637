"""Bench: what keeping the predictions index costs, part by part, and how low an FTS5 index of them can go (#23).

bench/search.py's runs (2,298 stems, 19,533 items, 24 runs with traces: 468,792 predictions, about 14 million
tokens) are imported into a fresh store per repeat; that store is then copied once per variant and each copy
indexed, all in one sitting, in CPU seconds of this process (what a loaded machine distorts least):

- `import`: the 24 imports (`import_predictions`, the real path), the denominator of every ratio;
- `product`: `db.search.refresh` as shipped (migration 009: external content, `search_keys`, merges 16 at a
  time);
- `product_no_merge`: the same with `crisismerge` 64, so the 24 runs' segments are never merged (the merge's
  share; deferring it is not a saving: a store of 64 runs pays it);
- `read`: reading the text alone (`SELECT` of every response and trace, no index);
- `full_floor`: an FTS5 `detail=full` table with no content (snippets would have to come from elsewhere), rowids
  computed from the prediction key (no `search_keys`, so no record of what is indexed: a resumed run could not
  be indexed incrementally) and no merging; the cheapest index that still answers phrases and NEAR;
- `none_floor`: the same with `detail=none` (rowids only: no phrases, NEAR or column filters, so `response` and
  `trace` would need a table each and a query over both could not combine them in one row).

The floors drop what the product needs (they build their tables on a copy of the store, outside the migrations);
they say how far from 0.25 an FTS5 index of these tokens can get. Prints one line per repeat and variant, then
one JSON line {"bench": "search_floor", "value": the product's median ratio, "unit": "ratio", "target": 0.25,
"figures": {variant: [median, min, max] of index / import}, "ok": ...}.

    .venv/bin/python bench/search_floor.py [REPEATS]
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchkit import ROOT  # noqa: F401 - first: puts the root on sys.path
from score import stembind_items  # noqa: E402
from search import import_runs, write_runs  # noqa: E402

from db.importers import import_items  # noqa: E402
from db.schema import SEARCH_TOKENIZE  # noqa: E402
from db.search import refresh  # noqa: E402
from db.store import Store  # noqa: E402

TARGET = 0.25
# A prediction's key as one rowid (run < 2^20, item < 2^28, rotation < 2^7, repeat < 2^8), for the floors only.
KEY_ROWID = "(p.run_id << 43) | (p.item_pk << 15) | (p.rotation << 8) | p.repeat"


def _copy(src: Path, dst: Path) -> Path:
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{src}{suffix}").exists():
            shutil.copy(f"{src}{suffix}", f"{dst}{suffix}")
    return dst


def _product(path: Path, crisismerge: int | None = None) -> None:
    store = Store(path)
    if crisismerge is not None:
        with store.write() as conn:
            conn.execute("INSERT INTO search_predictions(search_predictions, rank) VALUES ('crisismerge', ?)",
                         (crisismerge,))
    refresh(store)
    store.close()


def _floor(path: Path, detail: str) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("DROP TABLE search_predictions")
    conn.execute(f"CREATE VIRTUAL TABLE search_predictions USING fts5(response, trace, content='', columnsize=0,"
                 f" detail={detail}, tokenize='{SEARCH_TOKENIZE}')")
    for option, value in (("hashsize", 64 << 20), ("automerge", 0), ("crisismerge", 64)):
        conn.execute("INSERT INTO search_predictions(search_predictions, rank) VALUES (?, ?)", (option, value))
    for (run_id,) in conn.execute("SELECT id FROM runs ORDER BY id").fetchall():
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(f"INSERT INTO search_predictions (rowid, response, trace) SELECT {KEY_ROWID}, p.response,"
                     " p.trace FROM predictions p WHERE p.run_id = ?", (run_id,))
        conn.execute("COMMIT")
    conn.close()


def _read(path: Path) -> None:
    conn = sqlite3.connect(path)
    for (run_id,) in conn.execute("SELECT id FROM runs ORDER BY id").fetchall():
        conn.execute("SELECT SUM(LENGTH(response) + IFNULL(LENGTH(trace), 0)) FROM predictions WHERE run_id = ?",
                     (run_id,)).fetchone()
    conn.close()


VARIANTS: dict[str, Callable[[Path], None]] = {
    "product": _product,
    "product_no_merge": lambda p: _product(p, crisismerge=64),
    "read": _read,
    "full_floor": lambda p: _floor(p, "full"),
    "none_floor": lambda p: _floor(p, "none"),
}


def _imported(folder: Path, items_path: Path, paths: list[Path], rep: int) -> tuple[Path, float]:
    db = folder / f"base-{rep}.db"
    store = Store(db)
    import_items(store, items_path, name="stembind")
    seconds = import_runs(store, paths, time.process_time)
    store.close()
    return db, seconds


def main() -> int:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    ratios: dict[str, list[float]] = {k: [] for k in VARIANTS}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        items_path, ids = stembind_items(folder)
        paths = write_runs(folder, ids)
        for rep in range(repeats):
            base, import_cpu = _imported(folder, items_path, paths, rep)
            print(f"rep {rep} import: {import_cpu:.2f} s cpu", flush=True)
            for name, fn in VARIANTS.items():
                path = _copy(base, folder / f"{name}-{rep}.db")
                c = time.process_time()
                fn(path)
                cpu = time.process_time() - c
                ratios[name].append(cpu / import_cpu)
                print(f"rep {rep} {name:17}: {cpu:5.2f} s cpu, {cpu / import_cpu:.3f} of the import", flush=True)
                for f in folder.glob(f"{name}-{rep}.db*"):
                    f.unlink()
            for f in folder.glob(f"base-{rep}.db*"):
                f.unlink()
    figures = {k: [round(statistics.median(v), 3), round(min(v), 3), round(max(v), 3)] for k, v in ratios.items()}
    value = figures["product"][0]
    print(json.dumps({"bench": "search_floor", "value": value, "unit": "ratio", "target": TARGET,
                      "figures": figures, "ok": value <= TARGET}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
