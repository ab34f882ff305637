"""Build the embedded demo store (SPEC §10): generate the three families, import them like user data, add runs.

Everything goes through the public importers (db.importers.import_items / import_predictions): the generators
in core/demo write SPEC §3 items JSONL + PNG images and predictions JSONL into a work folder first. Built-in
baselines run through the runner engine (core.runners.engine) on the imported items.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.demo import generate_all
from core.errors import CrosscheckError
from db.importers import import_items, import_predictions
from db.store import Store

# Baselines per family: the metadata rules and TF-IDF are fitted on a train split, which only the
# FrameEvidence demo has (StemBind and SPUR demos are test-only like the papers' result-bearing splits).
DEMO_BASELINES = {
    "frameevidence": ("random", "majority", "count", "count-insufficiency", "tfidf"),
    "stembind": ("random",),
    "spur": ("random",),
}


def _baseline_runs(store: Store, bench: str, seed: int, progress: Callable[[str], Any]) -> tuple[list[str], list[str]]:
    """Run the built-in baselines on `bench`; returns (run names written, 'name: why' for skipped ones)."""
    done: list[str] = []
    skipped: list[str] = []
    try:
        from core.runners.engine import RunSettings, run
    except ImportError as exc:  # pragma: no cover - the runners package is part of the product
        return done, [f"{bench}: baselines unavailable ({exc})"]
    for model in DEMO_BASELINES.get(bench, ()):
        name = {"frameevidence": f"baseline-fe-{model}", "stembind": f"baseline-sb-{model}",
                "spur": f"baseline-spur-{model}"}[bench]
        settings = RunSettings(benchmark=bench, run=name, runner="baseline", model=model, seed=seed,
                               split="test", progress=False)
        try:
            run(store, settings)
            done.append(name)
        except (CrosscheckError, ImportError) as exc:
            skipped.append(f"{name}: {exc}")
            progress(f"  skipped {name}: {exc}")
        except Exception as exc:  # noqa: BLE001 - a demo must still open; the failure is reported, not hidden
            skipped.append(f"{name}: {type(exc).__name__}: {exc}")
            progress(f"  skipped {name}: {exc}")
    return done, skipped


def build_demo_store(store: Store, workdir: str | Path | None = None, seed: int = 0,
                     progress: Callable[[str], Any] | None = print,
                     sizes: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Generate, import and run the demo into `store`; returns a summary with counts and elapsed seconds.

    `workdir` keeps the generated JSONL / PNG files (a temporary folder, removed afterwards, when None).
    Re-running on a store that already holds the demo changes nothing (imports are idempotent).
    `sizes` shrinks the benchmarks (core.demo.SMALL, for tests); default: the full demo.
    """
    say = progress or (lambda _msg: None)
    t0 = time.perf_counter()
    tmp = None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="crosscheck-demo-")
        root = Path(tmp.name)
    else:
        root = Path(workdir)
        root.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {"benchmarks": {}, "runs": [], "skipped": [], "seed": seed}
    try:
        say("Building the demo store (synthetic benchmarks: frameevidence, stembind, spur) ...")
        manifest = generate_all(root, seed=seed, progress=say, sizes=sizes)
        t_gen = time.perf_counter()
        summary["generate_seconds"] = round(t_gen - t0, 2)
        for bench, info in manifest["benchmarks"].items():
            res = import_items(store, root / info["items_file"], name=bench)
            summary["benchmarks"][bench] = {"items": info["n_items"], "groups": info["n_groups"],
                                            "unchanged": res.unchanged}
            say(f"  imported {bench}: {info['n_items']} items in {info['n_groups']} groups"
                + (" (already there)" if res.unchanged else ""))
        existing = {r["name"] for r in store.runs()}
        for run_name, info in manifest["runs"].items():
            if run_name in existing:
                continue
            import_predictions(store, root / info["file"], run=run_name, model=info["config"].get("model"),
                               config=info["config"], benchmark=info["benchmark"])
            summary["runs"].append(run_name)
        say(f"  imported {len(summary['runs'])} synthetic runs")
        for bench in manifest["benchmarks"]:
            done, skipped = _baseline_runs(store, bench, seed, say)
            summary["runs"] += done
            summary["skipped"] += skipped
        summary["n_predictions"] = sum(info["n_rows"] for info in manifest["runs"].values())
    finally:
        if tmp is not None:
            tmp.cleanup()
    summary["seconds"] = round(time.perf_counter() - t0, 2)
    say(f"Demo store ready in {summary['seconds']:.1f} s ({len(summary['runs'])} runs).")
    return summary
