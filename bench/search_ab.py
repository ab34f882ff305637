"""Bench: the predictions index of migration 008 against 009's, side by side in one sitting (issue #23).

008: `search_predictions` with its own copy of the text, FTS5's default merging. 009 (db/schema.py): external
content read through a view, `columnsize=0`, a 64 MiB hash, automerge 0. bench/search.py's store (2,298 stems,
19,533 items, 24 runs with traces) is built afresh for each, the same code otherwise; per repeat and store: the
import of the 24 runs and `db.search.refresh` of all of them, in CPU seconds of this process (what a loaded
machine distorts least) and wall seconds, their ratio (target <= 0.25), the store's size and five searches.

    .venv/bin/python bench/search_ab.py [REPEATS]
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchkit import ROOT  # noqa: F401 - first: puts the root on sys.path
from score import stembind_items  # noqa: E402
from search import PLANTED, write_runs  # noqa: E402

from db import schema  # noqa: E402
from db.importers import import_items, import_predictions  # noqa: E402
from db.search import refresh, search  # noqa: E402
from db.store import Store  # noqa: E402

QUERIES = ("mirror", PLANTED, '"mirror rotate"', "rot*", "mirror NOT rotate")


def one(folder: Path, items_path: Path, paths: list[Path], name: str) -> dict[str, float]:
    db = folder / f"{name}.db"
    store = Store(db)
    import_items(store, items_path, name="stembind")
    c0, w0 = time.process_time(), time.perf_counter()
    for r, p in enumerate(paths):
        import_predictions(store, p, f"run-{r:02d}", model=f"m{r}")
    c1, w1 = time.process_time(), time.perf_counter()
    refresh(store)
    c2, w2 = time.process_time(), time.perf_counter()
    out = {"import_cpu": c1 - c0, "index_cpu": c2 - c1, "import_wall": w1 - w0, "index_wall": w2 - w1}
    for q in QUERIES:
        times = []
        for _ in range(5):
            t = time.perf_counter()
            search(store, q, benchmark="stembind")
            times.append(1000 * (time.perf_counter() - t))
        out[f"search {q}"] = statistics.median(times)
    store.close()
    out["mb"] = sum(f.stat().st_size for f in folder.glob(f"{name}.db*")) / 1e6
    for f in folder.glob(f"{name}.db*"):
        f.unlink()
    return out


def main() -> int:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    every = list(schema.MIGRATIONS)
    variants = {"008": [m for m in every if m[0] <= "008_search"], "009": every}
    results: dict[str, list[dict[str, float]]] = {k: [] for k in variants}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        items_path, ids = stembind_items(folder)
        paths = write_runs(folder, ids)
        try:
            for rep in range(repeats):
                for name, migrations in variants.items():
                    schema.MIGRATIONS[:] = migrations
                    row = one(folder, items_path, paths, f"{name}-{rep}")
                    results[name].append(row)
                    print(f"rep {rep} {name}: index/import cpu {row['index_cpu'] / row['import_cpu']:.3f} "
                          f"({row['index_cpu']:.2f} / {row['import_cpu']:.2f} s), wall "
                          f"{row['index_wall'] / row['import_wall']:.3f}; {row['mb']:.0f} MB; worst search "
                          f"{max(v for k, v in row.items() if k.startswith('search')):.1f} ms", flush=True)
        finally:
            schema.MIGRATIONS[:] = every
    figures = {}
    for name, rows in results.items():
        ratios = [r["index_cpu"] / r["import_cpu"] for r in rows]
        figures[name] = {"index_ratio_cpu": [round(statistics.median(ratios), 3), round(min(ratios), 3),
                                             round(max(ratios), 3)],
                         "index_cpu_s": round(statistics.median(r["index_cpu"] for r in rows), 2),
                         "mb": round(statistics.median(r["mb"] for r in rows))}
    print(json.dumps({"bench": "search_ab", "value": figures["009"]["index_ratio_cpu"][0], "unit": "ratio",
                      "target": 0.25, "figures": figures, "ok": figures["009"]["index_ratio_cpu"][0] <= 0.25}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
