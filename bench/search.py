"""Bench: full-text search at StemBind full scale (issue #23), one run of the script.

Builds a store of 2,298 stems (19,533 items, bench/score.py's items) and imports 24 runs through
`import_predictions` (the real path), each with a sentence-long response per item and an 80-word trace per F
item drawn from a 2,000-word vocabulary, one rare word planted in one response. Then:

- import: seconds to import the 24 runs (the index costs an import nothing: predictions are indexed later);
- index: seconds for db.search.refresh to index every run (what the first search after the imports pays), and
  its ratio to the import time (target <= 0.25);
- search: `search(store, q, benchmark=...)` for six queries (a common word, a rare word, a phrase, a prefix, a
  NOT, a field-restricted query), REPEATS times each, warm index: median and spread in ms (target <= 200 ms);
- the Browse filter's `matching_groups` for a common word (every hit, no snippets).

Prints the figures, then one JSON line {"bench": "search", "value": median_search_ms, "unit": "ms",
"target": 200, "figures": {...}, "ok": both targets}.

    .venv/bin/python bench/search.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from benchkit import ROOT  # noqa: F401 - first: puts the root on sys.path
from score import _write_jsonl, stembind_items  # noqa: E402

from db.importers import import_items, import_predictions  # noqa: E402
from db.search import matching_groups, refresh, search  # noqa: E402
from db.store import Store  # noqa: E402

RUNS = 24
VOCAB = 2000
TRACE_WORDS = 80
REPEATS = 9
TARGET_MS = 200.0
TARGET_INDEX_RATIO = 0.25
PLANTED = "zygomorphic"


def _words(rng: np.random.Generator) -> list[str]:
    letters = list("abcdefghijklmnopqrstuvwxyz")
    words = set()
    while len(words) < VOCAB:
        words.add("".join(rng.choice(letters, int(rng.integers(3, 10)))))
    common = ["mirror", "rotate", "row", "column", "shape", "colour", "cell", "rule", "answer", "panel"]
    return common + sorted(words)[: VOCAB - len(common)]


def write_runs(folder: Path, ids: list[tuple[str, str, str, str, int]], seed: int = 5) -> list[Path]:
    """24 runs of JSONL predictions: responses of 12-24 words, F traces of TRACE_WORDS (Zipf-like draws)."""
    rng = np.random.default_rng(seed)
    vocab = np.array(_words(rng))
    weights = 1.0 / np.arange(1, len(vocab) + 1)
    weights /= weights.sum()
    paths = []
    for r in range(RUNS):
        rows = []
        n_words = rng.integers(12, 25, len(ids))
        draws = rng.choice(len(vocab), size=(len(ids), 24), p=weights)
        for i, (iid, kind, letters, gold, _) in enumerate(ids):
            letter = gold if rng.random() < 0.6 else letters[0]
            text = " ".join(vocab[draws[i, : n_words[i]]])
            if r == 7 and i == 1234:
                text += f" {PLANTED}"
            rec = {"item_id": iid, "response": f"{text}. <ANSWER>{letter}</ANSWER>"}
            if kind == "F":
                rec["trace"] = " ".join(vocab[rng.choice(len(vocab), size=TRACE_WORDS, p=weights)])
            rows.append(rec)
        paths.append(_write_jsonl(folder / f"run-{r:02d}.jsonl", rows))
    return paths


def build(folder: Path) -> tuple[Path, float]:
    """The store (items and 24 runs imported) and the seconds the 24 imports took."""
    items_path, ids = stembind_items(folder)
    db = folder / "search.db"
    store = Store(db)
    import_items(store, items_path, name="stembind")
    seconds = import_runs(store, write_runs(folder, ids))
    store.close()
    return db, seconds


def import_runs(store: Store, paths: list[Path], clock: Callable[[], float] = time.perf_counter) -> float:
    """Import the runs `paths` as run-00, run-01, ... (the real path) and return the seconds they took on `clock`."""
    t = clock()
    for r, p in enumerate(paths):
        import_predictions(store, p, f"run-{r:02d}", model=f"m{r}")
    return clock() - t


def _ms(fn, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out.append(1000 * (time.perf_counter() - t))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", type=Path, help="build the store in DIR and keep it")
    args = ap.parse_args(argv)
    tmp = None if args.keep else tempfile.TemporaryDirectory()
    folder = args.keep or Path(tmp.name)  # type: ignore[union-attr]
    folder.mkdir(parents=True, exist_ok=True)
    print(f"building the store in {folder} ...", flush=True)
    db, import_s = build(folder)
    store = Store(db)
    t = time.perf_counter()
    indexed = refresh(store)
    index_s = time.perf_counter() - t
    ratio = index_s / import_s
    print(f"import of {RUNS} runs: {import_s:.2f} s; indexing their {indexed:,} predictions: {index_s:.2f} s "
          f"(ratio {ratio:.2f}, target <= {TARGET_INDEX_RATIO})")
    queries = [("mirror", None), (PLANTED, None), ('"mirror rotate"', None), ("rot*", None),
               ("mirror NOT rotate", None), ("panel", ("trace",))]
    figures: dict[str, object] = {"import_s": round(import_s, 2), "index_s": round(index_s, 2),
                                  "index_ratio": round(ratio, 3), "predictions": indexed}
    medians = []
    for q, fields in queries:
        kw = {"fields": fields} if fields else {}
        times = _ms(lambda q=q, kw=kw: search(store, q, benchmark="stembind", **kw), REPEATS)
        med = statistics.median(times)
        medians.append(med)
        label = q + (f" --in {','.join(fields)}" if fields else "")
        figures[f"search {label}"] = [round(med, 1), round(min(times), 1), round(max(times), 1)]
        print(f"search {label!r:26}: median {med:7.1f} ms (spread {min(times):.1f}-{max(times):.1f}), "
              f"{len(search(store, q, benchmark='stembind', **kw))} hits shown")
    hits = search(store, PLANTED, benchmark="stembind")
    assert [(h.run, h.field) for h in hits] == [("run-07", "response")], hits
    groups = _ms(lambda: matching_groups(store, "mirror", "stembind"), 3)
    figures["browse_filter_mirror_ms"] = [round(statistics.median(groups), 1), round(min(groups), 1),
                                          round(max(groups), 1)]
    print(f"Browse filter 'mirror' (every hit, groups only): median {statistics.median(groups):.0f} ms "
          f"({len(matching_groups(store, 'mirror', 'stembind'))} groups)")
    store.close()
    worst = max(medians)
    ok = worst <= TARGET_MS and ratio <= TARGET_INDEX_RATIO
    print(json.dumps({"bench": "search", "value": round(worst, 1), "unit": "ms", "target": TARGET_MS,
                      "figures": figures, "ok": ok}))
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
