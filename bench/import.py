"""Import speed: 470,000 prediction rows (24 runs x 19,533 StemBind-scale items) through the real importer,
against a bare sqlite3 executemany of the same rows into a table of the same shape, in one run.

Target: the importer reaches at least 60% of the bare insert rate (issue 37 point 7). Beside that JSONL rate it
prints the rates of the other tools' files (issue 16): a 10,000-row VLMEvalKit dataset TSV with base64 images (2,500
questions x 4 circular copies, copies referring to the original's image), the same TSV without images (target
20,000 rows/s, issue 27 point 4) and a 100,000-line lmms-eval samples file.
`--foreign-only` skips the JSONL part; `--repeat N` imports the JSONL runs N times into fresh stores and reports
the median ratio with every run's (the spread on a shared machine is wide). Ends with one JSON line.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from benchkit import synthetic_response  # noqa: E402 - puts the root on sys.path

from core.families.stembind.vocab import OPERATIONS  # noqa: E402
from db.importers import import_items, import_predictions  # noqa: E402
from db.store import Store  # noqa: E402

N_STEMS, N_RUNS, TARGET = 2298, 24, 0.6
TSV_TARGET = 20_000  # rows/s of the VLMEvalKit TSV without images


def write_items(folder: Path) -> tuple[Path, list[tuple[str, str]]]:
    """19,533 StemBind items: 2,298 stems with 6 or 7 P probes, one R and one F each (no images)."""
    lines, ids = [], []
    ops = OPERATIONS
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
                resp = synthetic_response(u, letter)
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


N_TSV_QUESTIONS, N_COPIES, N_SAMPLES = 2_500, 4, 100_000


def write_tsv(folder: Path, images: bool = True) -> Path:
    """An MMBench-style TSV: each question's original row holds a distinct 64x48 PNG as base64, its circular
    copies (index + k * 1,000,000, options rotated) refer to it by index; without `images`, no image column."""
    from PIL import Image

    path = folder / ("MMBench_bench.tsv" if images else "MMBench_text.tsv")
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(["index", "question", "hint", "A", "B", "C", "D", "answer", "category", "l2-category", "split",
                    *(["image"] if images else [])])
        for q in range(N_TSV_QUESTIONS):
            img = ""
            if images:
                buf = io.BytesIO()
                Image.new("RGB", (64, 48), (q % 256, (q // 256) % 256, 7)).save(buf, format="PNG")
                img = base64.b64encode(buf.getvalue()).decode("ascii")
            texts = [f"option {q}-{i}" for i in range(4)]
            for k in range(N_COPIES):
                opts = [texts[(i - k) % 4] for i in range(4)]
                w.writerow([q + k * 1_000_000, f"question {q}?", "a hint" if q % 3 == 0 else "", *opts,
                            "ABCD"[opts.index(texts[q % 4])], f"cat{q % 20}", "perception", "dev",
                            *([img if k == 0 else str(q)] if images else [])])
    return path


def write_lmms(folder: Path) -> tuple[Path, Path]:
    """A 100,000-item generic benchmark (JSONL) and an lmms-eval samples file answering each item."""
    items = folder / "big.jsonl"
    samples = folder / "samples_big.jsonl"
    rng = random.Random(3)
    with items.open("w", encoding="utf-8") as fi, samples.open("w", encoding="utf-8") as fs:
        for n in range(N_SAMPLES):
            fi.write(json.dumps({"benchmark": "generic", "item_id": str(n), "group_id": str(n // 4),
                                 "question": f"q {n}", "options": {"A": "x", "B": "y", "C": "z", "D": "w"},
                                 "answer": "ABCD"[n % 4]}) + "\n")
            letter = rng.choice("ABCD")
            fs.write(json.dumps({"doc_id": n, "doc": {"index": n, "question": f"q {n}", "answer": "ABCD"[n % 4]},
                                 "target": "ABCD"[n % 4], "arguments": [["q", {"max_new_tokens": 16}]],
                                 "resps": [[f"The answer is {letter}."]], "filtered_resps": [letter],
                                 "exact_match": 0.0}) + "\n")
    return items, samples


def foreign_rates(root: Path) -> dict[str, float]:
    """Rows per second of the VLMEvalKit TSV imports (with and without images) and lines per second of the
    lmms-eval samples import."""
    tsv, text_tsv = write_tsv(root), write_tsv(root, images=False)
    items, samples = write_lmms(root)
    store = Store(root / "foreign.db")
    t0 = time.perf_counter()
    n_tsv = import_items(store, tsv, name="mmb").rows
    tsv_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    n_text = import_items(store, text_tsv, name="mmb-text").rows
    text_s = time.perf_counter() - t0
    import_items(store, items, name="big")
    t0 = time.perf_counter()
    n_lmms = import_predictions(store, samples, "lmms", benchmark="big").rows
    lmms_s = time.perf_counter() - t0
    store.close()
    print(f"VLMEvalKit TSV: {n_tsv} rows (base64 images) in {tsv_s:.2f} s = {n_tsv / tsv_s:,.0f} rows/s")
    print(f"VLMEvalKit TSV without images: {n_text} rows in {text_s:.2f} s = {n_text / text_s:,.0f} rows/s "
          f"(target >= {TSV_TARGET:,})")
    print(f"lmms-eval samples: {n_lmms} lines in {lmms_s:.2f} s = {n_lmms / lmms_s:,.0f} lines/s")
    return {"vlmevalkit_tsv_rows_per_s": round(n_tsv / tsv_s), "vlmevalkit_text_tsv_rows_per_s": round(n_text / text_s),
            "text_tsv_target": TSV_TARGET, "lmms_eval_lines_per_s": round(n_lmms / lmms_s)}


def jsonl_ratio(root: Path, items_path: Path, run_paths: list[Path], k: int) -> tuple[float, float, int, float]:
    """(importer rows/s, bare executemany rows/s, rows, importer seconds) of one import of the 24 runs into a
    fresh store."""
    store = Store(root / f"store{k}.db")
    import_items(store, items_path, name="sb")
    n_rows = 0
    t0 = time.perf_counter()
    for i, path in enumerate(run_paths):
        n_rows += import_predictions(store, path, f"run{i:02d}").rows
    importer_s = time.perf_counter() - t0
    rows = store.conn.execute("SELECT * FROM predictions").fetchall()
    store.close()
    return n_rows / importer_s, bare_rate(rows, root / f"bare{k}.db"), n_rows, importer_s


def main() -> int:
    if "--foreign-only" in sys.argv[1:]:
        with tempfile.TemporaryDirectory(prefix="cc-bench-import-") as tmp:
            rates = foreign_rates(Path(tmp))
        print(json.dumps({"bench": "import-foreign", **rates}))
        return 0
    repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv[1:] else 1
    with tempfile.TemporaryDirectory(prefix="cc-bench-import-") as tmp:
        root = Path(tmp)
        items_path, ids = write_items(root)
        run_paths = write_runs(root, ids)
        measured = [jsonl_ratio(root, items_path, run_paths, k) for k in range(repeat)]
        ratios = sorted(m[0] / m[1] for m in measured)
        importer_rate, bare, n_rows, importer_s = sorted(measured, key=lambda m: m[0] / m[1])[len(measured) // 2]
        print(f"JSONL predictions: {importer_rate:,.0f} rows/s")
        rates = foreign_rates(root)
    ratio = importer_rate / bare
    print(f"importer: {n_rows} rows in {importer_s:.2f} s = {importer_rate:,.0f} rows/s (read, validate, parse, write)")
    print(f"bare executemany: {bare:,.0f} rows/s; ratio {ratio:.2f} (target >= {TARGET})"
          + (f"; {repeat} runs: ratios {', '.join(f'{r:.2f}' for r in ratios)} (median shown)" if repeat > 1 else ""))
    print(json.dumps({"bench": "import", "value": round(ratio, 3), "unit": "ratio to bare executemany",
                      "target": TARGET, "ok": ratio >= TARGET and rates["vlmevalkit_text_tsv_rows_per_s"] >= TSV_TARGET,
                      "jsonl_rows_per_s": round(importer_rate),
                      "ratios": [round(r, 3) for r in ratios], **rates}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
