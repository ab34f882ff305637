"""Start-up of the command line (issue #27 point 1: `app.py --help` and `score` on a small store start in
<= 0.3 s; modules are imported where they are used).

Each figure is the median (and min / max) of --repeats fresh processes, taken in rotation with a bare
`python -c pass` so that the ratios hold while this shared machine's speed drifts:

- `pass`: the interpreter alone (`python -c pass`);
- `help`: `python app.py --help`, the whole process;
- `score_startup`: everything `python app.py score --db S --run R` does before its handler runs (import
  app, build the parser, parse), the whole process;
- `score`: the whole `python app.py score --db S --run R` on a small store (FrameEvidence, 15 items, one
  baseline run), for scale: the handler's own imports (pandas, the metrics) are its work, not start-up;
- `help_imports_ms` / `score_imports_ms`: the import time `python -X importtime` reports for the first two
  (the sum of its top-level cumulative times), also as medians.

Ends with one JSON line {"bench": "startup", "value": the larger of the help and score start-up medians,
"unit": "s", "target": 0.3, "ok", ...}. Run: .venv/bin/python bench/startup.py [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

TARGET_S = 0.3
PY = sys.executable
STARTUP = ("import sys; import app; from cli import build_parser; "
           "build_parser().parse_args(sys.argv[1:])")


def small_store(folder: Path) -> Path:
    from helpers import fe_lines, run_cli, write_benchmark

    db = folder / "small.db"
    items = write_benchmark(folder / "bench", fe_lines(n_fq1=3, n_fq2=2))
    run_cli("import", str(items), "--name", "fe", db=db, check=True)
    run_cli("run", "--benchmark", "fe", "--runner", "baseline", "--model", "random", "--run", "r",
            "--no-progress", db=db, check=True)
    return db


def wall(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                   env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    return time.perf_counter() - t0


def import_ms(cmd: list[str]) -> float:
    """The import time of a process as -X importtime reports it: the sum of its top-level entries' cumulative
    times (lines with no indentation of the name), in ms."""
    err = subprocess.run([PY, "-X", "importtime", *cmd], cwd=ROOT, capture_output=True, text=True,
                         check=True).stderr
    total = 0
    for line in err.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line.split("|")
        if not name[1:].startswith(" "):  # a top-level import (nested ones are indented)
            total += int(cumulative)
    return total / 1000


def summary(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 4), "min": round(min(values), 4),
            "max": round(max(values), 4)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=9)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = small_store(Path(tmp))
        score_args = ["score", "--db", str(db), "--run", "r"]
        cmds = {
            "pass": [PY, "-c", "pass"],
            "help": [PY, "app.py", "--help"],
            "score_startup": [PY, "-c", STARTUP, *score_args],
            "score": [PY, "app.py", *score_args],
        }
        for cmd in cmds.values():  # warm the file cache and the bytecode once
            wall(cmd)
        times: dict[str, list[float]] = {k: [] for k in cmds}
        imports: dict[str, list[float]] = {"help": [], "score_startup": []}
        for _ in range(args.repeats):
            for key, cmd in cmds.items():
                times[key].append(wall(cmd))
            imports["help"].append(import_ms(cmds["help"][1:]))
            imports["score_startup"].append(import_ms(cmds["score_startup"][1:]))
    stats = {k: summary(v) for k, v in times.items()}
    base = stats["pass"]["median"]
    for key, s in stats.items():
        ratio = s["median"] / base if base else float("nan")
        print(f"{key:<14} median {s['median']:.3f} s  [{s['min']:.3f}, {s['max']:.3f}]  {ratio:5.1f}x python -c pass")
    imp = {k: summary(v) for k, v in imports.items()}
    for key, s in imp.items():
        print(f"{key:<14} imports (-X importtime) median {s['median']:.1f} ms  [{s['min']:.1f}, {s['max']:.1f}]")
    value = max(stats["help"]["median"], stats["score_startup"]["median"])
    print(json.dumps({"bench": "startup", "value": round(value, 3), "unit": "s", "target": TARGET_S,
                      "ok": value <= TARGET_S, "repeats": args.repeats, "wall": stats,
                      "ratio_to_pass": {k: round(s["median"] / base, 2) for k, s in stats.items()},
                      "help_imports_ms": imp["help"], "score_imports_ms": imp["score_startup"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
