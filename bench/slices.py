"""Bench: `slices` for one run at StemBind full scale (issue #23), one run of the script.

The store of bench/search.py (2,298 stems, 19,533 items, 24 runs; built unless --store names one). Times, REPEATS
times each: `core.slices.slices_of_run` for one run with 2,000 draws at depth 1 and at depth 2 (the run and its
items loaded once, as the server holds them), and the whole `python app.py slices --run R --json` command (a
fresh process: start-up, load, slices, JSON). Target: the command <= 2 s (median).

Prints the figures, then one JSON line {"bench": "slices", "value": median_cli_s, "unit": "s", "target": 2,
"figures": {...}, "ok": ...}.

    .venv/bin/python bench/slices.py [--store DB]
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from search import build  # noqa: E402

from core.slices import slices_of_run  # noqa: E402
from db.frames import load_for_scoring  # noqa: E402
from db.store import Store  # noqa: E402

REPEATS = 5
TARGET_S = 2.0
RUN = "run-03"


def _spread(times: list[float]) -> str:
    return f"median {statistics.median(times):.2f} s (spread {min(times):.2f}-{max(times):.2f})"


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
    items, runs = load_for_scoring(store, "stembind", names=[RUN])
    figures: dict[str, object] = {}
    for depth in (1, 2):
        times, n = [], 0
        for _ in range(REPEATS):
            t = time.perf_counter()
            _, found = slices_of_run(items, runs[RUN], depth=depth)
            times.append(time.perf_counter() - t)
            n = len(found)
        figures[f"depth{depth}_s"] = [round(statistics.median(times), 3), round(min(times), 3), round(max(times), 3)]
        print(f"slices_of_run depth {depth} ({n} slices, 2,000 draws): {_spread(times)}")
    store.close()
    cli = []
    for _ in range(REPEATS):
        t = time.perf_counter()
        subprocess.run([sys.executable, str(ROOT / "app.py"), "slices", "--run", RUN, "--json", "--db", str(db)],
                       check=True, capture_output=True, cwd=ROOT)
        cli.append(time.perf_counter() - t)
    figures["cli_s"] = [round(statistics.median(cli), 3), round(min(cli), 3), round(max(cli), 3)]
    print(f"app.py slices --run {RUN} --json (fresh process): {_spread(cli)} (target <= {TARGET_S} s)")
    med = statistics.median(cli)
    print(json.dumps({"bench": "slices", "value": round(med, 3), "unit": "s", "target": TARGET_S,
                      "figures": figures, "ok": med <= TARGET_S}))
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
