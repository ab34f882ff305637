"""Runner throughput (issue "Live runs", Speed).

1. OpenAI-compatible runner against the local chat-completions server (tests/chat_server.py, a separate
   process) with 100 ms injected latency: 288 items at concurrency 16, end to end into a real store. The ratio
   is measured throughput / ideal throughput (concurrency / latency); target >= 0.85. Measured for what a
   plain-http endpoint gets (the lean HTTP/1.1 client, core/runners/http11.py; this is the ratio judged) and,
   beside it in the same run, through the openai SDK's own HTTP client (what https / proxied endpoints get).
2. The tiny LLaVA model's batched (batch 8) vs batch-1 generation speedup on CPU (printed, informative).

Ends with one JSON line: {"bench": "runners", "value": ratio, "unit": "x ideal", "target": 0.85, "ok": ...}.
Run: .venv/bin/python bench/runners.py [--skip-model]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def throughput(tmp: Path, transport: str = "auto", latency: float = 0.1, concurrency: int = 16,
               n_items: int = 288) -> dict:
    from tiny_models import write_benchmark

    from core.runners.engine import RunSettings, run
    from db.importers import import_items
    from db.store import Store

    jsonl = write_benchmark(tmp / "data", n_groups=n_items // 3, per_group=3, n_images=1, splits=("test",))
    store = Store(tmp / f"bench-{transport}.db")
    import_items(store, jsonl, name="bench")
    server = subprocess.Popen([sys.executable, str(ROOT / "tests" / "chat_server.py"), "--latency", str(latency)],
                              stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline().split()[1])  # type: ignore[union-attr]
        os.environ["BENCH_KEY"] = "sk-bench"
        os.environ["CROSSCHECK_OPENAI_TRANSPORT"] = transport
        import openai  # noqa: F401 - imported before the clock starts: the bench measures the run, not imports
        s = RunSettings(benchmark="bench", run="tp", runner="openai", model="m", base_url=f"http://127.0.0.1:{port}/v1",
                        api_key_env="BENCH_KEY", concurrency=concurrency, progress=False)
        t0 = time.perf_counter()
        summary = run(store, s)
        wall = time.perf_counter() - t0
    finally:
        server.terminate()
        server.wait()
    ideal = concurrency / latency
    # the run's request phase: first request sent -> last prediction committed (setup such as loading the
    # items table and building tasks is reported separately, not part of request throughput)
    measured = summary["sent"] / summary["send_seconds"]
    return {"transport": transport, "items": summary["sent"], "ok": summary["ok"], "seconds": round(wall, 3),
            "send_seconds": summary["send_seconds"],
            "throughput": round(measured, 1), "ideal": ideal, "ratio": round(measured / ideal, 3)}


def batch_speedup(tmp: Path, n: int = 16, max_tokens: int = 8) -> dict:
    from PIL import Image
    from tiny_models import build_llava

    from core.prompts import question_block
    from core.runners.base import Request, image_part, text_part
    from core.runners.transformers_runner import TransformersRunner

    path = build_llava(tmp / "llava")
    runner = TransformersRunner(path)
    imgs = []
    for k in range(2):
        p = tmp / f"im{k}.png"
        Image.new("RGB", (16, 16), (50 * k, 100, 150)).save(p)
        imgs.append(p)
    reqs = [Request(messages=[{"role": "user", "content": [image_part(imgs[0]), image_part(imgs[1]), text_part(
        question_block(f"Question {i}: which way?", {"A": "前", "B": "后", "C": "左", "D": "右"}))]}],
        max_tokens=max_tokens) for i in range(n)]
    runner.generate(reqs[:2])  # warm up
    out = {}
    for bs in (1, 8):
        t0 = time.perf_counter()
        for i in range(0, n, bs):
            runner.generate(reqs[i:i + bs])
        out[bs] = time.perf_counter() - t0
    return {"device": runner.device, "batch1_s": round(out[1], 3), "batch8_s": round(out[8], 3),
            "speedup": round(out[1] / out[8], 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--skip-model", action="store_true", help="skip the tiny model batching measurement")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="crosscheck-bench-") as d:
        tmp = Path(d)
        extra = {}
        if not args.skip_model:
            sp = batch_speedup(tmp)
            print(json.dumps({"bench": "runners.tiny_batch_speedup", **sp}), flush=True)
            extra["batch8_vs_1_speedup"] = sp["speedup"]
        sdk = throughput(tmp, "sdk")  # the SDK's HTTP client (https and proxied endpoints), for comparison
        print(json.dumps({"bench": "runners.openai_throughput", **sdk}), flush=True)
        tp = throughput(tmp, "auto")  # what a plain-http endpoint gets: the lean HTTP/1.1 client
        print(json.dumps({"bench": "runners.openai_throughput", **tp}), flush=True)
    ratio = tp["ratio"]
    print(json.dumps({"bench": "runners", "value": ratio, "unit": "x ideal (288 items, c=16, 100 ms)",
                      "target": 0.85, "ok": ratio >= 0.85, "sdk_transport_ratio": sdk["ratio"], **extra}))


if __name__ == "__main__":
    main()
