"""Bench: group view and Browse speed at StemBind scale (issue 6), measured through the running app.

Builds a store of 2,298 StemBind stems (about 6 P probes, one R and one F item each; one tiny image per stem)
and 24 runs answering every item, launches `python app.py serve` on it, and calls the app's own endpoints
with gradio_client: `/browse_list` (the first page of the Browse list, cold caches, as a page load draws it)
once, then `/open_group` for 30 random stems. Round-trip times include Gradio's queue and
HTTP, so they bound the server-side time from above.

The Metrics tab (#17 point 5) is timed through its `/metrics` endpoint (the tab's own computation: the bulk
path of `score --all`, ui/scores.py, on the server's scoring workers) with all 24 runs: the server's first request;
cold after a change of one run's state, as an override or a finished live run makes (every run is scored again,
in another run order each time; the workers read that one run again and keep the others' rows, by version);
cold after a change of every run's state (every run read and scored again: nothing kept but the items frame and
the resample draws); and warm (the same request again), beside `python app.py score --all --benchmark
stembind` on the same store (a fresh process, its start-up included).

Targets: median group-view open <= 300 ms, first Browse render <= 2 s, Metrics with 24 runs cold <= 1.5 s (both
colds) and warm <= 0.3 s (medians).

Browse at scale (issue 17, `browse_figures`): stores of the same stems with 96 and 240 runs; with every run
selected, `/browse_list` once (the first list: each run's outcome columns read once, cold), then the list as a
filter or page change asks for it (`/browse_list`, REPEATS calls: median and spread), targets 1.0 s (96 runs)
and 2.5 s (240 runs); on the 96-run store, `/open_group` for SAMPLES stems with the 96 runs selected, target
median 300 ms. `score --all` on the same store is timed beside each.

Prints the timings, then one JSON line {"bench": "ui", "value": median_open_ms, "unit": "ms", "target": 300,
"figures": {...}, "ok": every target met}.

    .venv/bin/python bench/ui.py [--keep DIR] [--sizes 96,240]
"""

from __future__ import annotations

import argparse
import io
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchkit import ROOT  # noqa: E402, F401 - first: the root and tests/ on sys.path

from core.families.stembind.vocab import OPERATIONS  # noqa: E402

STEMS = 2298
RUNS = 24
P_PER_STEM = 6
TARGET_MS = 300.0
BROWSE_TARGET_MS = 2000.0
METRICS_COLD_TARGET_MS = 1500.0
METRICS_WARM_TARGET_MS = 300.0
METRICS_REPEATS = 5
SAMPLES = 30
REPEATS = 7
BROWSE_TARGETS_MS = {96: 1000.0, 240: 2500.0}
GROUP_VIEW_RUNS = 96


def build_store(db: Path, seed: int = 0, runs: int = RUNS, stems: int = STEMS) -> None:
    """Items and predictions written straight through the store API (no image rendering, no parsing).

    The first RUNS runs are drawn answer by answer; runs past them (the 96- and 240-run figures) copy one of
    those in SQL with every item whose row id falls on the run's stride answered another way (a different
    letter, status ok), so no two runs are equal and building 240 runs takes seconds, not minutes."""
    import hashlib

    from PIL import Image

    from core.schema import Item, Prediction
    from db.store import Store

    rng = random.Random(seed)
    store = Store(db)
    items, images = [], []
    letters6 = "ABCDEF"
    for s in range(stems):
        gid = f"sb-{s:05d}"
        buf = io.BytesIO()
        Image.new("RGB", (8, 8), (s % 256, (s // 256) % 256, 90)).save(buf, format="PNG")
        data = buf.getvalue()
        digest = hashlib.md5(data).hexdigest()  # noqa: S324 - a content key, as the importer's
        store.put_image_file(digest, "png", data)
        images.append((digest, "png", 8, 8, len(data)))
        op = OPERATIONS[s % len(OPERATIONS)]
        meta = {"operation": op, "family": op[:2], "perception_load": rng.choice(["low", "mixed", "high"])}
        for p in range(P_PER_STEM):
            items.append(Item("stembind", f"{gid}-P{p + 1}", gid, "test", "P", "color",
                              f"What colour is the shape in cell {p + 1}? Answer with <ANSWER>X</ANSWER>.",
                              {"A": "red", "B": "blue", "C": "green", "D": "orange"}, rng.choice("ABCD"),
                              [digest], meta=meta))
        items.append(Item("stembind", f"{gid}-R", gid, "test", "R", "rule", "Which rule governs the puzzle?",
                          {k: f"rule {k}" for k in "ABCD"}, rng.choice("ABCD"), [digest], meta=meta))
        items.append(Item("stembind", f"{gid}-F", gid, "test", "F", "full", "Which candidate completes the matrix?",
                          {k: f"candidate {k}" for k in letters6}, rng.choice(letters6), [digest], meta=meta,
                          stages={"S1": "cells ...", "S2": "the rule ...", "S3": "the missing cell ...",
                                  "S4": "the answer ..."}))
    store.insert_benchmark("stembind", "stembind", "bench/ui.py", "bench", items, images)
    for r in range(min(runs, RUNS)):
        name = f"bench-run-{r:02d}"
        store.ensure_run(name, "stembind", {"runner": "bench", "model": f"m{r}", "synthetic": True})
        skill = 0.4 + 0.5 * r / RUNS
        preds = []
        for it in items:
            if rng.random() < 0.01:
                preds.append(Prediction(it.item_id, "I am not sure.", "invalid"))
                continue
            letter = it.answer if rng.random() < skill else rng.choice(list(it.options))
            trace = "Step by step ... " * 20 if it.kind == "F" else None
            preds.append(Prediction(it.item_id, f"<ANSWER>{letter}</ANSWER>", "ok", answer=letter, shown=letter,
                                    trace=trace, tokens=40))
        store.add_predictions(name, preds)
        store.set_run_status(name, "done")
    for r in range(RUNS, runs):
        name = f"bench-run-{r:03d}"
        rid = store.ensure_run(name, "stembind", {"runner": "bench", "model": f"m{r}", "synthetic": True})
        base = store.run(f"bench-run-{r % RUNS:02d}")["id"]
        stride = 3 + r % 11
        with store.write() as conn:
            conn.execute(
                "INSERT INTO predictions (run_id, item_pk, rotation, repeat, response, shown, answer, status, error,"
                " input_mode, trace, tokens, latency, probs) SELECT ?, item_pk, rotation, repeat, response, shown,"
                " CASE WHEN (item_pk + ?) % ? = 0 THEN CASE answer WHEN 'A' THEN 'B' ELSE 'A' END ELSE answer END,"
                " CASE WHEN (item_pk + ?) % ? = 0 THEN 'ok' ELSE status END, error, input_mode, trace, tokens,"
                " latency, probs FROM predictions WHERE run_id = ?", (rid, r, stride, r, stride, base))
        store.set_run_status(name, "done")
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()


def _spread(times: list[float]) -> str:
    return (f"median {statistics.median(times):.0f} ms (min {min(times):.0f}, max {max(times):.0f}, "
            f"n={len(times)})")


def score_all_seconds(db: Path) -> float:
    """Wall time of `python app.py score --all --json` on `db` (the CLI's bulk path), for comparison."""
    import subprocess

    t = time.perf_counter()
    subprocess.run([sys.executable, str(ROOT / "app.py"), "score", "--all", "--json", "--db", str(db)], check=True,
                   stdout=subprocess.DEVNULL, cwd=ROOT)
    return time.perf_counter() - t


def browse_figures(folder: Path, n_runs: int) -> dict[str, float]:
    """The Browse list with all `n_runs` runs selected (first call, then REPEATS filter / page calls) and, at
    GROUP_VIEW_RUNS runs, the group view; timings in ms. Builds the store in `folder` unless it is there."""
    from gradio_client import Client
    from uiharness import running_app

    db = folder / f"bench_ui_{n_runs}.db"
    if not db.exists():
        t0 = time.perf_counter()
        build_store(db, runs=n_runs)
        print(f"store: {STEMS} stems x {n_runs} runs built in {time.perf_counter() - t0:.1f} s ({db})", flush=True)
    from db.store import Store

    store = Store(db)
    runs = [r["name"] for r in store.runs("stembind", with_counts=False)]
    store.close()
    out: dict[str, float] = {}
    with running_app(db, timeout=300) as url:
        client = Client(url, verbose=False)
        t = time.perf_counter()
        client.predict("stembind", runs, api_name="/browse_list")
        out["first"] = (time.perf_counter() - t) * 1000
        times = []
        for i in range(REPEATS):  # a search, a pattern, a page: what the user does after the first list
            query, pattern, page = [("", "", 2), ("sb-01", "", 1), ("", "cat_cant_bind", 1)][i % 3]
            t = time.perf_counter()
            client.predict("stembind", runs, "", "", "", "", pattern, query, page, api_name="/browse_list")
            times.append((time.perf_counter() - t) * 1000)
        out["list"] = statistics.median(times)
        print(f"Browse, {n_runs} runs selected: first list (cold) {out['first']:.0f} ms; then {_spread(times)} "
              f"(target {BROWSE_TARGETS_MS.get(n_runs, float('nan')):.0f})", flush=True)
        if n_runs == GROUP_VIEW_RUNS:
            rng = random.Random(2)
            client.predict("stembind", runs, "sb-00000", runs[0], True, api_name="/open_group")
            opens = []
            for gid in (f"sb-{rng.randrange(STEMS):05d}" for _ in range(SAMPLES)):
                t = time.perf_counter()
                html = client.predict("stembind", runs, gid, runs[0], True, api_name="/open_group")
                opens.append((time.perf_counter() - t) * 1000)
                if f'data-group="{gid}"' not in html:
                    raise SystemExit(f"group view of {gid} did not render")
            out["group_view"] = statistics.median(opens)
            print(f"group view, {n_runs} runs selected: {_spread(opens)} (target median {TARGET_MS:.0f})", flush=True)
    out["score_all_s"] = score_all_seconds(db)
    print(f"score --all on the same store ({n_runs} runs): {out['score_all_s']:.1f} s", flush=True)
    return out



def _new_state(db: Path, runs: list[str]) -> None:
    """Change the state of `runs` as an override or a finished live run does (db.store.touch_run: each one's
    revision and `updated` time): every score and table the server keeps for the benchmark is stale after it,
    and the scoring workers read each of those runs again."""
    from db.store import Store, touch_run

    store = Store(db)
    try:
        with store.write() as conn:
            for run in runs:
                touch_run(conn, store.run(run)["id"])
    finally:
        store.close()


def metrics_figures(client: Any, db: Path, runs: list[str], repeats: int = METRICS_REPEATS) -> dict[str, Any]:
    """The Metrics tab's computation through the running app's `/metrics` endpoint (ms): the first request of
    the server, then cold (the runs' state changed since the last scoring, so every run is scored again; the
    scoring workers keep only the benchmark's items frame and the resample draws, which never change) and
    warm (the same request again)."""
    def timed(names: list[str]) -> float:
        t = time.perf_counter()
        out = client.predict("stembind", names, api_name="/metrics")
        ms = (time.perf_counter() - t) * 1000
        if sorted(out["runs"]) != sorted(runs) or not out["tables"]:
            raise SystemExit("the metrics endpoint did not score every run")
        return ms

    first = timed(runs)  # the first scoring in the server process
    cold, cold_all = [], []
    for i in range(1, repeats + 1):
        _new_state(db, [runs[i % len(runs)]])
        cold.append(timed(runs[i:] + runs[:i]))
        _new_state(db, runs)
        cold_all.append(timed(runs[i:] + runs[:i]))
    warm = [timed(runs) for _ in range(repeats * 2)]
    return {"first": first, "cold": cold, "cold_all": cold_all, "warm": warm}


def print_metrics(m: dict[str, Any], score_all_s: float) -> bool:
    """Print the Metrics figures beside score --all; True when both targets hold."""
    cold, cold_all = statistics.median(m["cold"]), statistics.median(m["cold_all"])
    warm = statistics.median(m["warm"])
    print(f"`score --all --benchmark stembind` ({RUNS} runs, a fresh process): {score_all_s * 1000:.0f} ms")
    print(f"Metrics tab, {RUNS} runs, cold after one run changed (every run scored again, that one read again): "
          f"{_spread(m['cold'])} (target {METRICS_COLD_TARGET_MS:.0f}); the server's first request {m['first']:.0f} ms")
    print(f"Metrics tab, {RUNS} runs, cold after every run changed (every run read and scored again): "
          f"{_spread(m['cold_all'])} (target {METRICS_COLD_TARGET_MS:.0f})")
    print(f"Metrics tab, {RUNS} runs, warm (the same key): {_spread(m['warm'])} (target {METRICS_WARM_TARGET_MS:.0f})")
    return max(cold, cold_all) <= METRICS_COLD_TARGET_MS and warm <= METRICS_WARM_TARGET_MS


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", type=Path, help="build the store in this folder and keep it")
    ap.add_argument("--sizes", default="96,240", help="run counts of the Browse-at-scale stores ('' for none)")
    args = ap.parse_args(argv)
    from gradio_client import Client
    from uiharness import running_app

    tmp = None
    if args.keep:
        folder = args.keep
        folder.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="crosscheck-bench-ui-")
        folder = Path(tmp.name)
    db = folder / "bench_ui.db"
    t0 = time.perf_counter()
    if not db.exists():
        build_store(db)
    print(f"store: {STEMS} stems x {RUNS} runs built in {time.perf_counter() - t0:.1f} s ({db})", flush=True)
    runs = [f"bench-run-{r:02d}" for r in range(2)]
    try:
        with running_app(db, timeout=300) as url:
            client = Client(url, verbose=False)
            t = time.perf_counter()
            client.predict("stembind", runs, api_name="/browse_list")
            browse_ms = (time.perf_counter() - t) * 1000
            rng = random.Random(1)
            stems = [f"sb-{rng.randrange(STEMS):05d}" for _ in range(SAMPLES)]
            client.predict("stembind", runs, "sb-00000", runs[0], True, api_name="/open_group")  # warm connection
            times = []
            for gid in stems:
                t = time.perf_counter()
                html = client.predict("stembind", runs, gid, runs[0], True, api_name="/open_group")
                times.append((time.perf_counter() - t) * 1000)
                if f'data-group="{gid}"' not in html:
                    raise SystemExit(f"group view of {gid} did not render")
            metrics = metrics_figures(client, db, [f"bench-run-{r:02d}" for r in range(RUNS)])
        score_all_s = score_all_seconds(db)
        scale = {n: browse_figures(folder, n) for n in (int(v) for v in args.sizes.split(",") if v.strip())}
    finally:
        if tmp is not None:
            tmp.cleanup()
    med = statistics.median(times)
    print(f"Browse first render (filters + first page, cold caches): {browse_ms:.0f} ms (target {BROWSE_TARGET_MS:.0f})")
    print(f"group view open over {SAMPLES} random stems: median {med:.0f} ms, max {max(times):.0f} ms "
          f"(target median {TARGET_MS:.0f})")
    checks = [med <= TARGET_MS, browse_ms <= BROWSE_TARGET_MS, print_metrics(metrics, score_all_s)]
    figures: dict[str, float] = {"metrics_cold_ms": round(statistics.median(metrics["cold"]), 1),
                                 "metrics_cold_all_ms": round(statistics.median(metrics["cold_all"]), 1),
                                 "metrics_warm_ms": round(statistics.median(metrics["warm"]), 1),
                                 "score_all_ms": round(score_all_s * 1000, 1)}
    for n, fig in scale.items():
        figures.update({f"{key}_{n}": round(v, 1) for key, v in fig.items()})
        checks.append(fig["list"] <= BROWSE_TARGETS_MS.get(n, float("inf")))
        if "group_view" in fig:
            checks.append(fig["group_view"] <= TARGET_MS)
    ok = all(checks)
    print(json.dumps({"bench": "ui", "value": round(med, 1), "unit": "ms", "target": TARGET_MS, "figures": figures,
                      "ok": ok}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
