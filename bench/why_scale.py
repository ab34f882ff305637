"""Bench: item health and the map of where runs disagree on the store of 1,000 runs (issue #38).

The store is bench/scale.py's (bench/ui.py `build_store`: 2,298 StemBind stems = 19,533 items, 1,000 runs, 19.5
million predictions; `--keep DIR` builds it once in DIR, as `bench/scale.py --keep DIR` does, and reuses it).
REPEATS rounds, interleaved:

- `python app.py item-health --benchmark stembind --json` (a fresh process, its progress bar on stderr) (target
  <= 60 s); the first round also hashes the store's images once (they are kept);
- the map in the server's process at 1,000 runs (ui.map_panel.map_figure, the cache emptied): read, fit, sample
  60 runs and 300 groups, figure.

Prints the figures, then one JSON line {"bench": "item_health_1000", "value": median seconds, "unit": "s",
"target": 60, "figures": {name: [median, min, max]}, "ok"}.

    .venv/bin/python bench/why_scale.py --keep /tmp/crosscheck-scale
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchkit import ROOT, bench_ui  # first: puts the root (and tests/) on sys.path

RUNS = 1000
REPEATS = 2
TARGET_S = 60.0


def _spread(xs: list[float]) -> list[float]:
    return [round(statistics.median(xs), 2), round(min(xs), 2), round(max(xs), 2)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", type=Path, help="build the store in this folder once and keep it (bench/scale.py's)")
    args = ap.parse_args(argv)
    build_store = bench_ui().build_store  # bench/ui.py's store

    tmp = None if args.keep else tempfile.TemporaryDirectory(prefix="crosscheck-bench-why-")
    folder = args.keep if args.keep else Path(tmp.name)  # type: ignore[union-attr]
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / f"bench_scale_{RUNS}.db"
    if not db.exists():
        t0 = time.perf_counter()
        build_store(db.with_suffix(".part"), runs=RUNS)
        db.with_suffix(".part").rename(db)
        print(f"store: {RUNS} runs built in {time.perf_counter() - t0:.0f} s ({db})", flush=True)
    from db.store import Store
    from ui import map_panel
    from ui.views import cache

    times: dict[str, list[float]] = {"item_health_cli": [], "map_inprocess": []}
    for _ in range(REPEATS):
        t = time.perf_counter()
        subprocess.run([sys.executable, str(ROOT / "app.py"), "item-health", "--benchmark", "stembind", "--json",
                        "--db", str(db)], check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
        times["item_health_cli"].append(time.perf_counter() - t)
        store = Store(db)
        cache._WHY.clear()
        t = time.perf_counter()
        _, line = map_panel.map_figure(store, "stembind", ["bench-run-00"])
        times["map_inprocess"].append(time.perf_counter() - t)
        store.close()
    print(line)
    figures = {k: _spread(v) for k, v in times.items()}
    for k, (med, lo, hi) in figures.items():
        print(f"{k:18}: median {med:.1f} s (spread {lo:.1f}-{hi:.1f}, {REPEATS} rounds)")
    med = figures["item_health_cli"][0]
    print(json.dumps({"bench": "item_health_1000", "value": med, "unit": "s", "target": TARGET_S, "figures": figures,
                      "ok": med <= TARGET_S}))
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
