"""The one-file report's size and speed (docs/UI.md, "The one-file report"), timed in one run:

1. the demo StemBind benchmark (db.demo: every run, its failing groups): file size. Target: <= 30 MB.
2. StemBind at full scale (bench/ui.py's store: 2,298 stems = 18,384 items, 24 runs with traces), every run,
   its failing groups: file size (<= 60 MB), the time `app.py report` takes to write it (<= 20 s, the
   subprocess's wall clock, Python start-up included) and the time until the file is usable in Chromium
   (<= 3 s: from navigation start to the viewer's ready mark, i.e. the page parsed, the data read, the groups
   listed, the first group and the first Metrics sub-tab's charts drawn; median of three openings).

Ends with one JSON line {"bench": "report", "demo_mb", "full_mb", "full_write_s", "full_usable_s", "ok"}.

    .venv/bin/python bench/report.py                 # builds both stores in a temporary folder
    .venv/bin/python bench/report.py --keep DIR      # keeps the stores and reports in DIR (reused when there)
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

from benchkit import ROOT, bench_ui  # noqa: E402, F401 - first: the root and tests/ on sys.path

DEMO_MB, FULL_MB, WRITE_S, USABLE_S = 30.0, 60.0, 20.0, 3.0
OPENINGS = 3


def write(db: Path, out: Path) -> float:
    """Seconds `python app.py report --benchmark stembind` takes to write `out`."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, str(ROOT / "app.py"), "report", "--db", str(db), "--benchmark", "stembind",
                    "-o", str(out)], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def usable_seconds(path: Path) -> list[float]:
    """Seconds from navigation start to the viewer's ready mark, per opening, every outside request refused."""
    from uiharness import browser

    out = []
    with browser() as b:
        for _ in range(OPENINGS):
            page = b.new_page(viewport={"width": 1440, "height": 1000})
            page.route("**/*", lambda r: r.continue_() if r.request.url == path.as_uri() else r.abort())
            page.goto(path.as_uri(), timeout=120000)
            page.wait_for_selector("body[data-ready='1']", timeout=120000)
            out.append(int(page.evaluate("document.body.dataset.readyMs")) / 1000)
            page.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", type=Path, help="build the stores and write the reports in this folder")
    args = ap.parse_args(argv)
    folder = args.keep or Path(tempfile.mkdtemp(prefix="crosscheck-bench-report-"))
    folder.mkdir(parents=True, exist_ok=True)
    demo, full = folder / "demo.db", folder / "full.db"
    if not demo.exists():
        from db.demo import build_demo_store
        from db.store import Store

        build_demo_store(Store(demo), progress=lambda m: None)
    if not full.exists():
        bench_ui().build_store(full)
    demo_s = write(demo, folder / "demo.html")
    demo_mb = (folder / "demo.html").stat().st_size / 1e6
    print(f"demo StemBind: {demo_mb:.1f} MB, written in {demo_s:.1f} s", flush=True)
    full_s = write(full, folder / "full.html")
    full_mb = (folder / "full.html").stat().st_size / 1e6
    print(f"full-scale StemBind: {full_mb:.1f} MB, written in {full_s:.1f} s", flush=True)
    usable = usable_seconds(folder / "full.html")
    print(f"usable in Chromium: {', '.join(f'{u:.2f}' for u in usable)} s", flush=True)
    med = statistics.median(usable)
    ok = demo_mb <= DEMO_MB and full_mb <= FULL_MB and full_s <= WRITE_S and med <= USABLE_S
    print(json.dumps({"bench": "report", "demo_mb": round(demo_mb, 1), "full_mb": round(full_mb, 1),
                      "full_write_s": round(full_s, 1), "full_usable_s": round(med, 2),
                      "full_usable_spread_s": [round(min(usable), 2), round(max(usable), 2)],
                      "targets": {"demo_mb": DEMO_MB, "full_mb": FULL_MB, "full_write_s": WRITE_S,
                                  "full_usable_s": USABLE_S}, "ok": ok}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
