"""Soak: a lab's server under a lab's load (issue 26 point 1), through the app's own endpoints, on 127.0.0.1 only.

Builds bench/ui.py's StemBind-scale store (2,298 stems, 18,384 items, 24 runs of every item: 441,216
predictions; `--small`: 200 stems, 6 runs), serves it with `app.py serve --auth`, and for `--seconds` (180)
runs at once, each client signed in as its own user with gradio_client:

- 8 readers: the Browse list (filters, patterns, search, pages), group views, Metrics and Compare of random
  runs (`/browse_list`, `/open_group`, `/metrics`, `/compare`: docs/HOSTING.md section 8);
- 2 annotators labelling traces of run bench-run-00 through the Judge tab's `/save_label`;
- a live run started from the Run tab's own endpoint (`/on_start`) against a local OpenAI-compatible fake
  server (tests/chat_server.py), writing predictions until it is cancelled at the end (`/on_cancel`);
- midway, `app.py import` of another benchmark (a FrameEvidence set with its images) into the same store from
  a second process; the readers then browse it too.

Every loop is bounded by the deadline. At the end it checks the store from a connection of its own: `PRAGMA
integrity_check`, every acknowledged label there with the flags last acknowledged, and the live run holding
exactly the predictions its job reported committed. Prints p50 / p95 per endpoint, the errors, acknowledged vs
stored writes, then one JSON line {"bench": "soak", ..., "ok": every goal met}. Goals: 0 errors, every
acknowledged write stored, group view p95 <= 1 s.

    .venv/bin/python bench/soak.py [--seconds 180] [--small] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchkit import ROOT, bench_ui  # noqa: E402, F401 - first: the root and tests/ on sys.path

GROUP_VIEW_P95_MS = 1000.0
PASSWORD = "soak-pw"
LIVE_RUN = "soak-live"
LABELLED_RUN = "bench-run-00"


class Stats:
    """Latencies (ms) per endpoint and every error, from many threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.times: dict[str, list[float]] = defaultdict(list)
        self.errors: list[str] = []

    def call(self, client: Any, endpoint: str, *args: Any) -> Any:
        t = time.perf_counter()
        try:
            out = client.predict(*args, api_name=endpoint)
        except Exception as exc:  # noqa: BLE001 - every failure is counted and shown, none stops the soak
            with self.lock:
                self.errors.append(f"{endpoint}: {type(exc).__name__}: {str(exc)[:200]}")
            return None
        with self.lock:
            self.times[endpoint].append((time.perf_counter() - t) * 1000)
        return out

    def figures(self) -> dict[str, dict[str, float]]:
        out = {}
        for name, ts in sorted(self.times.items()):
            q = statistics.quantiles(ts, n=20, method="inclusive") if len(ts) > 1 else ts * 19
            out[name] = {"n": len(ts), "p50_ms": round(statistics.median(ts), 1), "p95_ms": round(q[18], 1),
                         "errors": sum(e.startswith(name + ":") for e in self.errors)}
        return out


def client(url: str, user: str) -> Any:
    from gradio_client import Client

    return Client(url, auth=(user, PASSWORD), verbose=False)


def reader(url: str, user: str, stats: Stats, stop: threading.Event, env: dict[str, Any], seed: int) -> None:
    """Browse lists, group views, Metrics and Compare of random runs until `stop`."""
    rng = random.Random(seed)
    c = client(url, user)
    runs, stems = env["runs"], env["stems"]
    patterns = ["", "", "cat_cant_bind", "cat_solved", "invalid"]  # keys of /browse_list's counts (StemBind)
    while not stop.is_set():
        picked = rng.sample(runs, rng.randint(2, 4))
        op = rng.random()
        if env["other_ready"].is_set() and op < 0.1:
            stats.call(c, "/browse_list", "other", [], "", "", "", "", "", "", rng.randint(1, 3))
        elif op < 0.4:
            query = rng.choice(["", "", f"sb-{rng.randrange(stems) // 100:03d}"])
            stats.call(c, "/browse_list", "stembind", picked, "", "", "", "", rng.choice(patterns), query,
                       rng.randint(1, 5))
        elif op < 0.75:
            gid = f"sb-{rng.randrange(stems):05d}"
            html = stats.call(c, "/open_group", "stembind", picked, gid, picked[0], True)
            if html is not None and f'data-group="{gid}"' not in html:
                with stats.lock:
                    stats.errors.append(f"/open_group: {gid} did not render")
        elif op < 0.88:
            stats.call(c, "/metrics", "stembind", picked[:2])
        else:
            stats.call(c, "/compare", "stembind", picked[0], picked[1])


def annotator(url: str, user: str, stats: Stats, stop: threading.Event, env: dict[str, Any], seed: int,
              acked: dict[tuple[str, str], tuple[int, ...]]) -> None:
    """Labels the F traces of LABELLED_RUN through /save_label until `stop`; `acked` keeps what was confirmed."""
    rng = random.Random(seed)
    c = client(url, user)
    while not stop.is_set():
        item = f"sb-{rng.randrange(env['stems']):05d}-F"
        flags = tuple(rng.randint(0, 1) for _ in range(4))
        out = stats.call(c, "/save_label", user, LABELLED_RUN, item, 0, 0, *map(bool, flags), "", "")
        if out is not None and (out.startswith("Saved") or out.startswith("Unchanged")):
            with stats.lock:
                acked[(user, item)] = flags


def progress(c: Any, stats: Stats) -> dict[str, str]:
    """The Run tab's progress panel of the live run (its /on_tick), as its data- attributes."""
    out = stats.call(c, "/on_tick", LIVE_RUN)
    html = out[0] if out else ""
    return dict(re.findall(r"data-([a-z]+)='([^']*)'", html))


def live_run(url: str, chat_url: str, stats: Stats, stop: threading.Event, result: dict[str, Any]) -> None:
    """Start the live run from the Run tab, let it write until `stop`, cancel it, wait until it has stopped; the
    predictions it holds by its own count go to result["acked"]."""
    c = client(url, "runner")
    stats.call(c, "/on_start", "stembind", LIVE_RUN, "openai", "random", "", chat_url, "soak-model", "", "direct",
               None, 0, "all", 1, 1, "test", None, 0.0, 0, 4, 0)
    stop.wait()
    if progress(c, stats).get("status") in ("starting", "running"):
        stats.call(c, "/on_cancel", LIVE_RUN, "stembind")
    deadline = time.time() + 120
    p = progress(c, stats)
    while p.get("status") in ("starting", "running") and time.time() < deadline:
        time.sleep(0.5)
        p = progress(c, stats)
    result.update(acked=int(p.get("done", -1)), status=p.get("status"))


def import_other(db: Path, items: Path, result: dict[str, Any], ready: threading.Event) -> None:
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, str(ROOT / "app.py"), "import", str(items), "--name", "other", "--db",
                           str(db)], capture_output=True, text=True, cwd=ROOT)
    result.update(seconds=round(time.perf_counter() - t, 1), rc=proc.returncode,
                  said=(proc.stdout + proc.stderr).strip().splitlines()[-1:] or [""])
    if proc.returncode == 0:
        ready.set()


def build(folder: Path, small: bool) -> tuple[Path, Path, dict[str, Any]]:
    """The store, the other benchmark's items file and its users file; what was built."""
    from helpers import fe_lines, write_benchmark

    from ui.auth import auth_line

    db = folder / "soak.db"
    stems, runs = (200, 6) if small else (2298, 24)
    t0 = time.perf_counter()
    if not db.exists():
        bench_ui().build_store(db, runs=runs, stems=stems)
    built = time.perf_counter() - t0
    n = 20 if small else 150
    other = write_benchmark(folder / "other", fe_lines(n_fq1=n, n_fq2=n, prefix="o"))
    users = ["runner"] + [f"reader{i}" for i in range(8)] + ["ann1", "ann2"]
    (folder / "users.txt").write_text("".join(auth_line(u, PASSWORD) + "\n" for u in users), encoding="utf-8")
    return db, other, {"stems": stems, "runs": runs, "items": stems * 8, "predictions": stems * 8 * runs,
                       "build_s": round(built, 1), "other_items": len(fe_lines(n_fq1=n, n_fq2=n))}


def check_store(db: Path, acked: dict[tuple[str, str], tuple[int, ...]]) -> dict[str, Any]:
    """What the store holds after the soak, read on a connection of this process."""
    conn = sqlite3.connect(db, timeout=60)
    try:
        rows = conn.execute("SELECT l.labeler, i.item_id, l.S1, l.S2, l.S3, l.S4 FROM labels l JOIN items i ON"
                            " i.id = l.item_pk JOIN runs r ON r.id = l.run_id WHERE r.name = ?",
                            (LABELLED_RUN,)).fetchall()
        stored = {(r[0], r[1]): tuple(r[2:]) for r in rows}
        preds = conn.execute("SELECT COUNT(*) FROM predictions p JOIN runs r ON r.id = p.run_id WHERE r.name = ?",
                             (LIVE_RUN,)).fetchone()[0]
        other = conn.execute("SELECT n_items FROM benchmarks WHERE name = 'other'").fetchone()
        return {"integrity": conn.execute("PRAGMA integrity_check").fetchone()[0],
                "labels_matching": sum(stored.get(k) == v for k, v in acked.items()), "predictions": int(preds),
                "other_items": other[0] if other else 0}
    finally:
        conn.close()


def soak(folder: Path, seconds: float, small: bool) -> dict[str, Any]:
    from chat_server import ChatServer
    from serverharness import Server

    db, other, store_info = build(folder, small)
    env: dict[str, Any] = {"stems": store_info["stems"], "other_ready": threading.Event(),
                           "runs": [f"bench-run-{r:02d}" for r in range(store_info["runs"])]}
    stats, stop = Stats(), threading.Event()
    acked: dict[tuple[str, str], tuple[int, ...]] = {}
    live: dict[str, Any] = {}
    imported: dict[str, Any] = {}
    answer = random.Random(7)
    load = os.getloadavg()
    with ChatServer(latency=0.05, responder=lambda body: f"<ANSWER>{answer.choice('ABCD')}</ANSWER>") as chat:
        server = Server(db, "--auth", str(folder / "users.txt")).start()
        try:
            startup = server.wait_ready(600)
            threads = [threading.Thread(target=reader, args=(server.url, f"reader{i}", stats, stop, env, i))
                       for i in range(8)]
            threads += [threading.Thread(target=annotator, args=(server.url, f"ann{j}", stats, stop, env, 100 + j,
                                                                 acked)) for j in (1, 2)]
            threads.append(threading.Thread(target=live_run, args=(server.url, chat.base_url, stats, stop, live)))
            for t in threads:
                t.start()
            time.sleep(seconds / 2)
            import_other(db, other, imported, env["other_ready"])
            time.sleep(max(0.0, seconds / 2 - imported["seconds"]))
            stop.set()
            for t in threads:
                t.join(300)
        finally:
            server.stop()
    held = check_store(db, acked)
    return {"bench": "soak", "seconds": seconds, "store": store_info, "startup_s": round(startup, 1),
            "endpoints": stats.figures(), "errors": len(stats.errors), "error_samples": stats.errors[:5],
            "labels": {"acked": len(acked), "stored_matching": held["labels_matching"]},
            "predictions": {"acked": live.get("acked"), "stored": held["predictions"], "run": live.get("status")},
            "import": {**imported, "items_stored": held["other_items"], "items": store_info["other_items"]},
            "integrity": held["integrity"], "cpus": os.cpu_count(), "load_before": [round(x, 1) for x in load],
            "load_after": [round(x, 1) for x in os.getloadavg()]}


def report(out: dict[str, Any]) -> dict[str, Any]:
    """Print the figures and add the goals and `ok` to `out`."""
    for name, f in out["endpoints"].items():
        print(f"{name:14s} n={f['n']:5d}  p50 {f['p50_ms']:7.0f} ms  p95 {f['p95_ms']:7.0f} ms  errors {f['errors']}")
    for e in out["error_samples"]:
        print(f"error: {e}")
    lab, pred, imp = out["labels"], out["predictions"], out["import"]
    print(f"labels: {lab['acked']} acknowledged, {lab['stored_matching']} stored as acknowledged; predictions of "
          f"{LIVE_RUN}: {pred['acked']} acknowledged, {pred['stored']} stored ({pred['run']}); import midway: "
          f"{imp.get('items_stored')} of {imp.get('items')} items in {imp.get('seconds')} s; integrity "
          f"{out['integrity']}; server up in {out['startup_s']} s")
    group = out["endpoints"].get("/open_group", {})
    out["goals"] = {"errors": out["errors"] == 0,
                    "writes_stored": lab["acked"] == lab["stored_matching"] and pred["acked"] == pred["stored"]
                    and imp.get("items_stored") == imp.get("items") and out["integrity"] == "ok",
                    "group_view_p95": bool(group) and group["p95_ms"] <= GROUP_VIEW_P95_MS}
    out["ok"] = all(out["goals"].values())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=180.0, help="how long the load runs (default 180)")
    ap.add_argument("--small", action="store_true", help="200 stems and 6 runs instead of the full scale")
    ap.add_argument("--keep", type=Path, help="build (or reuse) the store in this folder and keep it")
    args = ap.parse_args()
    tmp = None if args.keep else tempfile.TemporaryDirectory(prefix="crosscheck-soak-")
    folder = args.keep or Path(tmp.name)  # type: ignore[union-attr]
    folder.mkdir(parents=True, exist_ok=True)
    try:
        out = report(soak(folder, args.seconds, args.small))
    finally:
        if tmp is not None:
            tmp.cleanup()
    print(json.dumps(out, ensure_ascii=False))
    sys.exit(0 if out["ok"] else 1)


if __name__ == "__main__":
    main()
