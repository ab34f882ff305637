"""Embedded demo (SPEC §10): seeded, procedural benchmarks of the three families and synthetic runs.

Pure: writes files, never touches the store. `generate_all(root, seed)` writes, under root,

    frameevidence/frameevidence.jsonl + img/   stembind/stembind.jsonl + img/   spur/spur.jsonl + img/
    runs/<run>.jsonl                            (predictions of the synthetic runs)
    manifest.json                               (see below)

and returns the manifest: {"seed", "benchmarks": {name: {"items_file", "n_items", "n_groups"}},
"runs": {run: {"benchmark", "file", "config", "n_rows"}}} with paths relative to root. db/demo.py imports it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.demo import frameevidence, profiles, spur, stembind
from core.demo.common import write_jsonl

GENERATORS: dict[str, Callable[..., dict[str, Any]]] = {"frameevidence": frameevidence.generate, "stembind": stembind.generate, "spur": spur.generate}


# Smaller sizes for tests and quick looks: keyword arguments of each family's generate().
SMALL: dict[str, dict[str, Any]] = {"frameevidence": {"splits": (("test", 6), ("train", 3), ("dev", 1))}, "stembind": {"n_stems": 21},
         "spur": {"n_figures": 7}}


def generate_family(root: Path, family: str, seed: int = 0, size: dict[str, Any] | None = None) -> dict[str, Any]:
    """Generate one family into root/<family>/ and its synthetic runs into root/runs/."""
    out = GENERATORS[family](root / family, seed, **(size or {}))
    items = out.pop("items")
    runs = {}
    for spec in profiles.RUN_BUILDERS[family](items, seed):
        rel = f"runs/{spec.name}.jsonl"
        n = write_jsonl(root / rel, spec.rows)
        runs[spec.name] = {"benchmark": family, "file": rel, "config": spec.config, "n_rows": n}
    return {"benchmark": {"items_file": f"{family}/{out['items_file']}", "n_items": out["n_items"],
                          "n_groups": out["n_groups"]}, "runs": runs}


def generate_all(root: Path, seed: int = 0, progress: Callable[[str], Any] | None = None,
                 sizes: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Generate all three families and their runs under root; write and return the manifest.

    `sizes` maps a family to keyword arguments of its generator (see SMALL); default: the full demo sizes.
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {"seed": seed, "benchmarks": {}, "runs": {}}
    for family in GENERATORS:
        t0 = time.perf_counter()
        part = generate_family(root, family, seed, (sizes or {}).get(family))
        manifest["benchmarks"][family] = part["benchmark"]
        manifest["runs"].update(part["runs"])
        if progress:
            progress(f"  generated {family}: {part['benchmark']['n_items']} items, {len(part['runs'])} runs "
                     f"({time.perf_counter() - t0:.1f} s)")
    (root / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=1), encoding="utf-8")
    return manifest
