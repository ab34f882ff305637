"""Import speed: 470,000 prediction rows (24 runs x 19,533 StemBind-scale items) through the real importer,
against a bare sqlite3 executemany of the same rows into a table of the same shape, in one run.

Target: the importer reaches at least 50% of the bare insert rate. Ends with one JSON line.
"""

from __future__ import annotations

import json
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from db.importers import import_items, import_predictions  # noqa: E402
from db.store import Store  # noqa: E402

N_STEMS, N_RUNS, TARGET = 2298, 24, 0.5


def write_items(folder: Path) -> tuple[Path, list[tuple[str, str]]]:
    """19,533 StemBind items: 2,298 stems with 6 or 7 P probes, one R and one F each (no images)."""
    lines, ids = [], []
    ops = ["RI-Pos", "RI-Sty", "RI-Attr", "RI-Qty", "RI-Rel", "VP-Fold", "VP-View", "VP-Rot", "VP-Closure"]
    for s in range(N_STEMS):
        kinds = ["P"] * (6 + s % 2) + ["R", "F"]
        for j, kind in enumerate(kinds):
            letters = "ABCDEFGH"[: (8 if kind == "F" else 4)]
            iid = f"s{s:05d}-{kind}{j}"
            line = {"benchmark": "stembind", "item_id": iid, "group_id": f"s{s:05d}", "kind": kind,
                    "question": f"probe {j}", "options": {c: f"opt {c}" for c in letters}, "answer": letters[j % 4],
                    "meta": {"operation": ops[s % 9], "perception_load": "low"}}
            if kind == "F":
                line["stages"] = {"S1": "scene", "S2": "rule", "S3": "bind", "S4": "answer"}
            lines.append(line)
            ids.append((iid, letters))
    path = folder / "items.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path, ids


def write_runs(folder: Path, ids: list[tuple[str, str]]) -> list[Path]:
    """24 prediction files with realistic responses: tagged answers with traces, untagged, invalid, errors."""
    rng = random.Random(7)
    paths = []
    for r in range(N_RUNS):
        path = folder / f"run{r:02d}.jsonl"
        with path.open("w", encoding="utf-8") as fh:
            for iid, letters in ids:
                u = rng.random()
                letter = rng.choice(letters)
                if u < 0.80:
                    resp = f"The rule shifts one cell per row, so the missing cell holds it. <ANSWER>{letter}</ANSWER>"
                elif u < 0.90:
                    resp = f"Step 1: inspect the rows.\nFinal answer: {letter}"
                elif u < 0.97:
                    resp = "It could be A or B."
                else:
                    resp = ""
                rec = {"item_id": iid, "response": resp, "tokens": rng.randint(20, 900)}
                if resp == "":
                    rec["status"] = "api_error"
                    rec["error"] = "HTTP 503"
                fh.write(json.dumps(rec) + "\n")
        paths.append(path)
    return paths


def bare_rate(rows: list[tuple], db_path: Path) -> float:
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    ddl = Store(db_path.parent / "shape.db").conn.execute(
        "SELECT sql FROM sqlite_master WHERE name = 'predictions'").fetchone()[0]
    conn.execute(ddl.replace("REFERENCES runs(id)", "").replace("REFERENCES items(id)", ""))
    t0 = time.perf_counter()
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO predictions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    conn.execute("COMMIT")
    dt = time.perf_counter() - t0
    conn.close()
    return len(rows) / dt


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="cc-bench-import-") as tmp:
        root = Path(tmp)
        items_path, ids = write_items(root)
        run_paths = write_runs(root, ids)
        store = Store(root / "store.db")
        import_items(store, items_path, name="sb")
        n_rows = 0
        t0 = time.perf_counter()
        for i, path in enumerate(run_paths):
            n_rows += import_predictions(store, path, f"run{i:02d}").rows
        importer_s = time.perf_counter() - t0
        importer_rate = n_rows / importer_s
        rows = store.conn.execute("SELECT * FROM predictions").fetchall()
        store.close()
        bare = bare_rate(rows, root / "bare.db")
    ratio = importer_rate / bare
    print(f"importer: {n_rows} rows in {importer_s:.2f} s = {importer_rate:,.0f} rows/s (read, validate, parse, write)")
    print(f"bare executemany: {bare:,.0f} rows/s; ratio {ratio:.2f} (target >= {TARGET})")
    print(json.dumps({"bench": "import", "value": round(ratio, 3), "unit": "ratio to bare executemany",
                      "target": TARGET, "ok": ratio >= TARGET}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
