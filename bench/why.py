"""Bench: why it fails at StemBind full scale (issue #38), one run of the script.

The store of bench/search.py (2,298 stems, 19,533 items, 24 runs imported through the real path, a sentence-long
response per item and an 80-word trace per F item; built unless --store names one). REPEATS rounds, the variants
interleaved within each round (the machine is shared: the spread says how much):

- `python app.py failure-modes --run run-03 --json` (a fresh process: start-up, load, modes, JSON) (target <= 10 s),
  and in the server's process the same modes cold (the cache emptied) and cached (ui.views.cache, until the run
  changes);
- `python app.py item-health --benchmark stembind --json` (a fresh process) (target <= 10 s);
- the map of where runs disagree at 24 runs in the server's process: read, fit and figure (ui.map_panel.map_figure,
  the cache emptied) (target <= 2 s), and cached.

Prints the figures, then one JSON line per target: {"bench": "failure_modes" | "item_health" | "disagreement_map",
"value": median seconds, "unit": "s", "target", "figures": {name: [median, min, max]}, "ok"}.

    .venv/bin/python bench/why.py [--store DB]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from search import ROOT, build  # noqa: E402 - bench/search.py builds the store (and puts the root on sys.path)

from db.store import Store  # noqa: E402
from ui import map_panel  # noqa: E402
from ui.views import cache  # noqa: E402

REPEATS = 3
RUN = "run-03"
BENCH = "stembind"
TARGETS = {"failure_modes": 10.0, "item_health": 10.0, "disagreement_map": 2.0}


def _cli(*args: str, db: Path) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, str(ROOT / "app.py"), *args, "--db", str(db)], check=True, capture_output=True,
                   cwd=ROOT)
    return time.perf_counter() - t


def _timed(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def _spread(xs: list[float]) -> list[float]:
    return [round(statistics.median(xs), 3), round(min(xs), 3), round(max(xs), 3)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, help="a store bench/search.py built (--keep DIR: DIR/search.db)")
    args = ap.parse_args(argv)
    tmp = None
    db = args.store
    if db is None:
        tmp = tempfile.TemporaryDirectory()
        print("building the store ...", flush=True)
        db, _ = build(Path(tmp.name))
    store = Store(db)
    runs = [r["name"] for r in store.runs(BENCH, with_counts=False)]
    times: dict[str, list[float]] = {k: [] for k in ("failure_modes_cli", "failure_modes_cold", "failure_modes_cached",
                                                     "item_health_cli", "map_cold", "map_cached")}
    for _ in range(REPEATS):
        times["failure_modes_cli"].append(_cli("failure-modes", "--run", RUN, "--json", db=db))
        cache._WHY.clear()
        times["failure_modes_cold"].append(_timed(lambda: cache.failure_modes(store, BENCH, RUN)))
        times["failure_modes_cached"].append(_timed(lambda: cache.failure_modes(store, BENCH, RUN)))
        times["item_health_cli"].append(_cli("item-health", "--benchmark", BENCH, "--json", db=db))
        cache._WHY.clear()
        times["map_cold"].append(_timed(lambda: map_panel.map_figure(store, BENCH, runs)))
        times["map_cached"].append(_timed(lambda: map_panel.map_figure(store, BENCH, runs)))
    store.close()
    figures = {k: _spread(v) for k, v in times.items()}
    for k, (med, lo, hi) in figures.items():
        print(f"{k:22}: median {med:.2f} s (spread {lo:.2f}-{hi:.2f}, {REPEATS} rounds)")
    for bench, key, group in (("failure_modes", "failure_modes_cli", "failure_modes"),
                              ("item_health", "item_health_cli", "item_health"),
                              ("disagreement_map", "map_cold", "map")):
        med = figures[key][0]
        print(json.dumps({"bench": bench, "value": med, "unit": "s", "target": TARGETS[bench],
                          "figures": {k: v for k, v in figures.items() if k.startswith(group)},
                          "ok": med <= TARGETS[bench]}))
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
