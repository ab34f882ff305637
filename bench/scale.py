"""Bench: one store of 1,000 runs (issue 27 points 1-3), measured through the running app and the CLI.

The store is bench/ui.py's (`build_store`: 2,298 StemBind stems = 19,533 items, 24 runs drawn answer by answer and
976 copies of them made in SQL, each with its own model; 18.4 million predictions, about 1.9 GB). Building it
takes minutes: `--keep DIR` builds it once in DIR and reuses it afterwards.

Figures (targets in brackets):
1. `python app.py serve` from its start to the first HTTP answer (<= 5 s); whatever warms caches runs after it.
2. with 24 runs picked: the first Browse (`/browse_reset`: filters and the first page, cold) (<= 1.0 s), the first
   Metrics (`/metrics`, the server's first scoring) (<= 1.0 s), then a group view (`/open_group`, median over
   SAMPLES stems) (<= 300 ms). Round trips through Gradio's queue and HTTP, so they bound the server's time above.
3. `python app.py score --all --json` (a fresh process): wall time (<= 15 s) and peak memory (<= 1.5 GB): the
   highest sum of the resident sets of the process and its scoring workers, sampled every 200 ms from /proc.

Prints the figures and one JSON line {"bench": "scale", "value": score --all seconds, "unit": "s", "target": 15,
"figures": {...}, "ok": every target met}.

    .venv/bin/python bench/scale.py --keep /tmp/crosscheck-scale [--skip-score] [--skip-serve]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

RUNS = 1000
PICKED = 24
SAMPLES = 15
TARGETS = {"serve_s": 5.0, "browse_first_ms": 1000.0, "metrics_first_ms": 1000.0, "group_view_ms": 300.0,
           "score_all_s": 15.0, "score_all_peak_gb": 1.5}


def _tree_rss(pid: int) -> int:
    """Resident bytes of `pid` and every process below it (from /proc; 0 once it is gone)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo.extend(children.get(p, []))
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


def score_all(db: Path) -> tuple[float, float]:
    """Seconds and peak resident GB (the process tree) of `app.py score --all --json` on `db`."""
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, str(ROOT / "app.py"), "score", "--all", "--json", "--db", str(db)],
                            cwd=ROOT, stdout=subprocess.DEVNULL)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, _tree_rss(proc.pid))
        time.sleep(0.2)
    if proc.returncode:
        raise SystemExit(f"score --all failed ({proc.returncode})")
    return time.perf_counter() - t, peak / 1e9


def serve_figures(db: Path, runs: list[str]) -> dict[str, float]:
    """Start-up to the first answer, then the first Browse, the first Metrics and group views with `runs`."""
    from gradio_client import Client
    from uiharness import running_app

    t0 = time.perf_counter()
    with running_app(db, timeout=600) as url:  # yields once /config answers
        out = {"serve_s": time.perf_counter() - t0}
        out.update(_views(Client(url, verbose=False), runs))
    return out


def _views(client: Any, runs: list[str]) -> dict[str, float]:
    def ms(*args: Any, api_name: str) -> tuple[float, Any]:
        t = time.perf_counter()
        result = client.predict(*args, api_name=api_name)
        return (time.perf_counter() - t) * 1000, result

    out: dict[str, float] = {}
    out["browse_first_ms"], _ = ms("stembind", runs, api_name="/browse_list")
    out["metrics_first_ms"], result = ms("stembind", runs, api_name="/metrics")
    if sorted(result["runs"]) != sorted(runs):
        raise SystemExit("the metrics endpoint did not score the runs picked")
    rng = random.Random(3)
    opens = []
    for gid in (f"sb-{rng.randrange(2298):05d}" for _ in range(SAMPLES)):
        t, html = ms("stembind", runs, gid, runs[0], True, api_name="/open_group")
        if f'data-group="{gid}"' not in html:
            raise SystemExit(f"group view of {gid} did not render")
        opens.append(t)
    out["group_view_ms"] = statistics.median(opens)
    out["group_view_max_ms"] = max(opens)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", type=Path, help="build the store in this folder once and keep it")
    ap.add_argument("--runs", type=int, default=RUNS)
    ap.add_argument("--skip-serve", action="store_true", help="only score --all")
    ap.add_argument("--skip-score", action="store_true", help="only the server's figures")
    args = ap.parse_args(argv)
    from ui import build_store  # bench/ui.py's store

    tmp = None if args.keep else tempfile.TemporaryDirectory(prefix="crosscheck-bench-scale-")
    folder = args.keep if args.keep else Path(tmp.name)  # type: ignore[union-attr]
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / f"bench_scale_{args.runs}.db"
    try:
        if not db.exists():
            t0 = time.perf_counter()
            build_store(db.with_suffix(".part"), runs=args.runs)
            db.with_suffix(".part").rename(db)
            print(f"store: {args.runs} runs built in {time.perf_counter() - t0:.0f} s ({db})", flush=True)
        picked = [f"bench-run-{r:02d}" for r in range(PICKED)]
        figures: dict[str, float] = {}
        if not args.skip_serve:
            figures.update(serve_figures(db, picked))
        if not args.skip_score:
            figures["score_all_s"], figures["score_all_peak_gb"] = score_all(db)
    finally:
        if tmp is not None:
            tmp.cleanup()
    for key, value in figures.items():
        target = TARGETS.get(key)
        print(f"{key:>20}: {value:8.2f}" + (f"  (target <= {target:g})" if target is not None else ""))
    ok = all(figures[k] <= t for k, t in TARGETS.items() if k in figures)
    print(json.dumps({"bench": "scale", "value": round(figures.get("score_all_s", float("nan")), 2), "unit": "s",
                      "target": TARGETS["score_all_s"], "figures": {k: round(v, 3) for k, v in figures.items()},
                      "ok": ok}))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
