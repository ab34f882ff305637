"""`app.py open` speed (issue 40): each case opened into a fresh store, beside a bare read of the same files, in
one run. One JSON line per case and round:

- `vlmevalkit`: a VLMEvalKit work dir of 20 models x 5 datasets in its T<date>_G<commit> layout (480 questions a
  dataset, each with its own image: 48,000 prediction rows and 2,400 TSV rows, about 50,000 rows) with the
  datasets' TSVs in an LMUData folder. Target: 30 s. The bare read reads every table with python-calamine and
  every TSV with csv, decoding its images' base64.
- `inspect`: a 20,000-sample .eval log written by inspect_ai's own recorder (a sample of tests/inspect_logs.py's
  log cloned under new ids). Target: 20 s. The bare read decompresses each sample entry (zstd) and decodes its
  JSON.

`--rounds N` runs each case N times, interleaving the open and the bare read, and prints every round (the
machine is shared: read the spread). The files are written once per run into a temporary folder.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import csv
import io
import json
import random
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from benchkit import ROOT  # noqa: E402 - puts the root on sys.path

from db.open import open_paths  # noqa: E402
from db.store import Store  # noqa: E402

MODELS, DATASETS, QUESTIONS, SAMPLES = 20, 5, 480, 20_000
LETTERS = "ABCD"


def png(k: int) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (16, 12), (k % 251, (k // 251) % 251, 90)).save(buf, format="PNG")
    return buf.getvalue()


def vlmevalkit_tree(root: Path) -> Path:
    """outputs/<model>/T20250101_Gabcdef12/<model>_<dataset>.xlsx and LMUData/<dataset>.tsv."""
    from openpyxl import Workbook

    rng = random.Random(0)
    data = root / "LMUData"
    data.mkdir(parents=True)
    for d in range(DATASETS):
        with open(data / f"Bench{d}.tsv", "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f, delimiter="\t", lineterminator="\n")
            w.writerow(["index", "question", "A", "B", "C", "D", "answer", "category", "image"])
            for q in range(QUESTIONS):
                w.writerow([q, f"Question {q} of dataset {d}?", "one", "two", "three", "four", LETTERS[q % 4],
                            f"cat{q % 7}", base64.b64encode(png(d * QUESTIONS + q)).decode("ascii")])
    for m in range(MODELS):
        work = root / "outputs" / f"Model{m}" / "T20250101_Gabcdef12"
        work.mkdir(parents=True)
        for d in range(DATASETS):
            wb = Workbook(write_only=True)
            ws = wb.create_sheet()
            ws.append(["index", "question", "A", "B", "C", "D", "answer", "category", "prediction"])
            for q in range(QUESTIONS):
                letter = LETTERS[q % 4] if rng.random() < 0.6 else rng.choice(LETTERS)
                ws.append([q, f"Question {q} of dataset {d}?", "one", "two", "three", "four", LETTERS[q % 4],
                           f"cat{q % 7}", f"The answer is ({letter})."])
            wb.save(work / f"Model{m}_Bench{d}.xlsx")
    return root


def inspect_log(root: Path) -> Path:
    """A 20,000-sample .eval written by inspect_ai's recorder from the test log's first sample."""
    small = root / "small"
    subprocess.run([sys.executable, str(ROOT / "tests" / "inspect_logs.py"), str(small)], check=True, timeout=300,
                   capture_output=True)
    from inspect_ai.log import read_eval_log
    from inspect_ai.log._recorders.eval import EvalRecorder

    log = read_eval_log(str(small / "mc.eval"))
    template = next(s for s in log.samples or [] if s.id == "q2")

    async def write() -> str:
        recorder = EvalRecorder(str(root / "rec"))
        location = await recorder.log_init(log.eval)
        await recorder.log_start(log.eval, log.plan)
        for k in range(SAMPLES):
            await recorder.log_sample(log.eval, template.model_copy(update={"id": f"s{k}"}))
            if k % 1000 == 999:
                await recorder.flush(log.eval)
        await recorder.log_finish(log.eval, "success", log.stats, log.results, None)
        return location

    location = Path(asyncio.run(write()))
    target = root / "big.eval"
    location.rename(target)
    return target


def bare_vlmevalkit(root: Path) -> int:
    from python_calamine import CalamineWorkbook

    rows = 0
    for tsv in sorted((root / "LMUData").glob("*.tsv")):
        with open(tsv, newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f, delimiter="\t"):
                base64.b64decode(row["image"])
                rows += 1
    for xlsx in sorted((root / "outputs").rglob("*.xlsx")):
        rows += len(CalamineWorkbook.from_path(str(xlsx)).get_sheet_by_index(0).to_python()) - 1
    return rows


def bare_inspect(path: Path) -> int:
    import orjson
    import zstandard

    n = 0
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            if info.filename.startswith("samples/"):
                with open(path, "rb") as fh:
                    fh.seek(info.header_offset + 26)
                    name_len, extra_len = int.from_bytes(fh.read(2), "little"), int.from_bytes(fh.read(2), "little")
                    fh.seek(info.header_offset + 30 + name_len + extra_len)
                    raw = fh.read(info.compress_size)
                orjson.loads(zstandard.ZstdDecompressor().decompress(raw, max_output_size=info.file_size))
                n += 1
    return n


def timed_open(paths: list[Path], data: list[Path], tmp: Path, tag: str) -> tuple[float, dict]:
    store = Store(tmp / f"{tag}-{time.monotonic_ns()}.db")
    t0 = time.perf_counter()
    got = open_paths(store, paths, data_dirs=data, progress=False)
    seconds = time.perf_counter() - t0
    store.close()
    assert not got.refused, got.refused
    return seconds, {"benchmarks": len(got.benchmarks), "runs": len(got.runs),
                     "predictions": sum(r["predictions"] for r in got.runs)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--only", choices=("vlmevalkit", "inspect"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="crosscheck-bench-open-") as tmp_name:
        tmp = Path(tmp_name)
        cases = []
        if args.only in (None, "vlmevalkit"):
            tree = vlmevalkit_tree(tmp / "vlm")
            cases.append(("vlmevalkit", [tree / "outputs"], [tree / "LMUData"], lambda: bare_vlmevalkit(tree), 30.0))
        if args.only in (None, "inspect"):
            log = inspect_log(tmp / "insp")
            cases.append(("inspect", [log], [], lambda: bare_inspect(log), 20.0))
        for k in range(args.rounds):
            for name, paths, data, bare, target in cases:
                t0 = time.perf_counter()
                rows = bare()
                bare_s = time.perf_counter() - t0
                open_s, what = timed_open(paths, data, tmp, name)
                print(json.dumps({"case": name, "round": k + 1, "rows_read_bare": rows, **what,
                                  "open_s": round(open_s, 2), "bare_read_s": round(bare_s, 2),
                                  "open_over_bare": round(open_s / bare_s, 2), "target_s": target,
                                  "within_target": open_s <= target}), flush=True)


if __name__ == "__main__":
    main()
