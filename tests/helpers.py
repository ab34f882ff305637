"""Test helpers shared by tests/ and tests/ui/ (files on disk, the real CLI, store copies). Both conftest.py files
re-export them, so `from conftest import ...` works from either folder (pytest keeps one module named
`conftest` at a time)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def write_png(path: Path, color: tuple[int, int, int], size: tuple[int, int] = (32, 24)) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, color).save(path, format="PNG")


def fe_lines(n_fq1: int = 2, n_fq2: int = 2, split: str = "test", prefix: str = "") -> list[dict]:
    """A small valid FrameEvidence benchmark: FQ1 and FQ2 triplets over distinct images."""
    opts = {"A": "前", "B": "后", "C": "左", "D": "右"}
    fq2_opts = {"A": "前", "B": "后", "C": "左", "D": "信息不足"}
    lines = []
    for g in range(n_fq1):
        gid = f"{prefix}g1_{g}"
        imgs = [f"img/{gid}_1.png", f"img/{gid}_2.png"]
        for v, ans in zip(("cam", "obj", "scene"), ("A", "B", "C" if g % 2 else "A"), strict=True):
            lines.append({"benchmark": "frameevidence", "item_id": f"{gid}-{v}", "group_id": gid, "split": split,
                          "kind": "FQ1", "variant": v, "images": imgs, "question": f"{v} 问题 {g}",
                          "options": opts, "answer": ans,
                          "meta": {"scene": "tabletop", "relation": "axial", "source": "rendered"}})
    for g in range(n_fq2):
        gid = f"{prefix}g2_{g}"
        base = [f"img/{gid}_1.png", f"img/{gid}_2.png", f"img/{gid}_3.png"]
        variants = {"mss": (base, "B", [1, 2, 3]), "del": (base[:1] + base[2:], "D", [1, 3]),
                    "add": (base + [f"img/{gid}_4.png"], "B", [1, 2, 3, 4])}
        for v, (imgs, ans, pos) in variants.items():
            lines.append({"benchmark": "frameevidence", "item_id": f"{gid}-{v}", "group_id": gid, "split": split,
                          "kind": "FQ2", "variant": v, "images": imgs, "question": f"证据问题 {g}",
                          "options": fq2_opts, "answer": ans,
                          "meta": {"insufficient_option": "D", "original_positions": pos, "scene": "indoor",
                                   "relation": "quadrant", "source": "rendered"}})
    return lines


def write_benchmark(folder: Path, lines: list[dict], name: str = "items.jsonl") -> Path:
    """Write items JSONL plus a distinct PNG for every image path it names."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = sorted({p for line in lines for p in line.get("images", [])})
    for i, rel in enumerate(paths):
        write_png(folder / rel, ((i * 37) % 256, (i * 91) % 256, (i * 53 + 40) % 256))
    target = folder / name
    target.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    return target


def run_cli(*args: str, db: Path | None = None, check: bool = False, timeout: int = 120) -> subprocess.CompletedProcess:
    """Run `python app.py ARGS` in a subprocess (the real CLI), returning the completed process."""
    cmd = [sys.executable, str(ROOT / "app.py"), *args]
    if db is not None:
        cmd += ["--db", str(db)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    if check and proc.returncode != 0:
        raise AssertionError(f"{cmd} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def copy_store(src: Path, dst_dir: Path) -> Path:
    """A writable copy of a store (database file plus its image and thumbnail folders)."""
    import shutil

    dst_dir.mkdir(parents=True, exist_ok=True)
    dst = dst_dir / src.name
    shutil.copy2(src, dst)
    for suffix in (".images", ".thumbs"):
        folder = src.parent / f"{src.stem}{suffix}"
        if folder.exists():
            shutil.copytree(folder, dst_dir / f"{src.stem}{suffix}")
    return dst


def family_score(score: Any, items: Any, run: Any, others: Any = (), **options: Any) -> dict[str, Any]:
    """A family's score() called with its typed options (core.families.protocol.ScoreOptions), the results keyed
    by their `score --json` keys: the public names the tests assert on."""
    from core.families.protocol import ScoreOptions

    return by_key(score(items, run, list(others or ()), ScoreOptions(**options)))


def by_key(results: Any) -> Any:
    """Results keyed by declared metrics (core.catalogue), keyed by their `score --json` keys instead (None as
    it is)."""
    return None if results is None else {m.key: v for m, v in results.items()}
