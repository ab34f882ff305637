"""What "why it fails" reads from the store (issue #38): a run's texts, notes and first failing stages for its
failure modes (core.failure_modes), every run's answers and the images' perceptual hashes for item health
(core.item_health), and every run's group outcomes for the map of where runs disagree (core.disagreement).

The `app.py failure-modes` / `item-health` commands and the report call the `*_of` entry points; the UI hands
its cached items and layout (ui/views/cache.py) to the same functions. Predictions are read by db.predictions
(outcome_arrays, through the override layer) and db.frames; the only writes are the perceptual hashes an
item-health read computes for images that have none yet (`image_phashes`, table image_phash of migration 010).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from core.errors import CrosscheckError, NotFound
from db import predictions
from db.store import Store

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from core.disagreement import DisagreementMap
    from core.failure_modes import FailureModes
    from core.item_health import ItemHealth
    from core.outcomes import Layout, Preds

Progress = Callable[[str, float], None]
FM_COLUMNS = ("item_id", "rotation", "repeat", "status", "answer", "response", "trace")
FM_ITEM_COLUMNS = ("item_id", "group_id", "split", "kind", "variant", "question", "options", "answer", "stages")
READ_CHUNK = 50  # runs read per query by item health and the map (each a progress step)


def _quiet(_what: str, _done: float) -> None:
    return None


# --------------------------------------------------------------------------- failure modes


def trace_notes(store: Store, run: str) -> dict[str, str]:
    """item_id -> the annotators' notes on `run`'s traces of it, joined (labels of every labeler)."""
    from db.labels import labels_frame

    frame = labels_frame(store, run, include_cleared=True)
    out: dict[str, list[str]] = {}
    for iid, note in zip(frame["item_id"], frame["note"], strict=True):
        if isinstance(note, str) and note.strip():
            out.setdefault(str(iid), []).append(note.strip())
    return {k: "\n".join(v) for k, v in out.items()}


def first_failures(store: Store, run: str, family: str) -> dict[str, str]:
    """item_id -> the first failing stage of `run`'s trace of it, where the family judges stages: a human label's
    (the most common among the labelers), else the latest judge run's judgement; items without one are left out."""
    from collections import Counter

    from core import families
    from db.judging import judge_runs_of, judgements_frame
    from db.labels import labels_frame

    if families.get(family).judging is None:
        return {}
    out: dict[str, str] = {}
    judges = judge_runs_of(store, run)[-1:]
    if judges:
        j = judgements_frame(store, run, judges, ok_only=True)
        out.update({str(i): str(f) for i, f in zip(j["item_id"], j["first_failure"], strict=True) if f})
    human = labels_frame(store, run, kind="human")
    votes: dict[str, Counter[str]] = {}
    for i, f in zip(human["item_id"], human["first_failure"], strict=True):
        if f:
            votes.setdefault(str(i), Counter())[str(f)] += 1
    out.update({i: c.most_common(1)[0][0] for i, c in votes.items()})
    return out


def failure_modes_of(store: Store, run: str, compare: str | None = None, split: str | None = "test",
                     benchmark: str | None = None) -> FailureModes:
    """The failure modes of `run` (against `compare`), read from the store (core.failure_modes)."""
    from core.failure_modes import failure_modes
    from db.frames import load_benchmark_runs

    row = store.run(run)
    if benchmark and benchmark != row["benchmark"]:
        raise CrosscheckError(f"run {run!r} is a run of {row['benchmark']!r}, not of {benchmark!r}")
    names = [run] + ([compare] if compare and compare != run else [])
    items, runs = load_benchmark_runs(store, row["benchmark"], FM_COLUMNS, names=names, item_columns=FM_ITEM_COLUMNS)
    if compare and compare not in runs:
        other = store.run(compare)  # an unknown name: NotFound naming the runs there are
        raise CrosscheckError(f"run {compare!r} is a run of {other['benchmark']!r}, not of {row['benchmark']!r}")
    return failure_modes(items, runs[run], other=runs.get(compare) if compare else None, split=split,
                         notes=trace_notes(store, run), stages=first_failures(store, run, row["family"]))


# --------------------------------------------------------------------------- item health


def run_rows(store: Store, benchmark: str, names: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """The benchmark's runs (those in `names`, in that order, when given) that hold predictions, oldest first."""
    with_preds = predictions.runs_holding(store)
    rows = [r for r in store.runs(benchmark, with_counts=False) if int(r["id"]) in with_preds]
    if names is None:
        return rows
    by_name = {r["name"]: r for r in rows}
    return [by_name[n] for n in names if n in by_name]


def run_preds(store: Store, runs: Sequence[dict[str, Any]], pk_rows: np.ndarray, progress: Progress = _quiet,
              share: float = 1.0) -> dict[str, Preds]:
    """name -> core.outcomes.Preds of each run record of `runs`, READ_CHUNK runs a query."""
    out: dict[str, Preds] = {}
    for start in range(0, len(runs), READ_CHUNK):
        part = runs[start:start + READ_CHUNK]
        read = predictions.outcome_arrays(store, [int(r["id"]) for r in part], pk_rows)
        out.update({r["name"]: read[int(r["id"])] for r in part})
        progress(f"reading runs {start + len(part):,} of {len(runs):,}", share * (start + len(part)) / len(runs))
    return out


def image_phashes(store: Store, digests: Sequence[str], progress: Progress = _quiet) -> dict[str, int | None]:
    """content hash -> the image's perceptual hash (core.item_health.phash; None for a flat image or a missing
    file), computed for the images the store has none for yet and kept (one transaction)."""
    from PIL import Image

    from core.item_health import phash

    wanted = sorted(set(digests))
    known: dict[str, int | None] = {}
    for start in range(0, len(wanted), 900):
        part = wanted[start:start + 900]
        for h, value in store.conn.execute(
                f"SELECT hash, phash FROM image_phash WHERE hash IN ({','.join('?' * len(part))})", part):
            known[h] = int(value, 16) if value else None
    todo = [h for h in wanted if h not in known]
    made: list[tuple[str, str]] = []
    for n, h in enumerate(todo):
        try:
            with Image.open(store.image_path(h)) as im:
                value = phash(im)
        except (OSError, NotFound, ValueError):
            known[h] = None  # a missing or unreadable file: not kept, tried again next time
            continue
        known[h] = value
        made.append((h, "" if value is None else f"{value:016x}"))
        if n % 200 == 0:
            progress(f"hashing images {n + 1:,} of {len(todo):,}", (n + 1) / len(todo))
    if made:
        try:
            with store.write() as conn:
                conn.executemany("INSERT OR IGNORE INTO image_phash (hash, phash) VALUES (?, ?)", made)
        except sqlite3.OperationalError:  # a read-only or busy store: the hashes serve this read and are not kept
            pass
    return known


def item_health_of(store: Store, benchmark: str, split: str | None = "test", progress: Progress = _quiet,
                   items: pd.DataFrame | None = None, lay: Layout | None = None) -> ItemHealth:
    """The item health of `benchmark` over every run of it with predictions (core.item_health); `items` (with its
    `pk` column) and `lay` when the caller holds them (the UI's cache), else read here."""
    from core import families, outcomes
    from core.item_health import item_health

    family = families.get(store.benchmark_family(benchmark))
    if items is None:
        items = store.items_frame(benchmark, ("item_id", "group_id", "split", "kind", "variant", "letters", "answer",
                                              "images"), pk=True)
    lay = lay if lay is not None else outcomes.layout(family.groups, items)
    runs = run_rows(store, benchmark)
    if not runs:
        raise CrosscheckError(f"benchmark {benchmark!r} has no run with predictions: item health reads the runs")
    preds = run_preds(store, runs, predictions.pk_rows(items["pk"].tolist()), _part(progress, 0.0, 0.4))
    hashes = image_phashes(store, [h for imgs in items["images"] for h in imgs], _part(progress, 0.4, 0.6))
    return item_health(benchmark, items, lay, preds, hashes, annotators=annotators(runs), split=split,
                       count_unanswered=family.groups.unanswered_is_wrong, progress=_part(progress, 0.6, 1.0))


def annotators(runs: Sequence[dict[str, Any]]) -> list[str]:
    """The runs that read the items as a model does, read as annotators of their letters: not a baseline (random,
    majority, metadata rules, text TF-IDF: runner `baseline`) and not a text-only run (input mode `text`), which
    answer without the images."""
    return [r["name"] for r in runs
            if r["runner"] != "baseline" and (r["config"] or {}).get("input_mode", "all") != "text"]


def _part(progress: Progress, start: float, end: float) -> Progress:
    """`progress` for one part of the work, from `start` to `end` of the whole."""
    def report(what: str, done: float) -> None:
        progress(what, start + (end - start) * min(max(done, 0.0), 1.0))
    return report


# --------------------------------------------------------------------------- where runs disagree


def disagreement_of(store: Store, benchmark: str, keep: Sequence[str] = (), progress: Progress = _quiet,
                    items: pd.DataFrame | None = None, lay: Layout | None = None) -> DisagreementMap:
    """The map of every run of `benchmark` with predictions (core.disagreement); `keep`: runs always drawn."""
    import numpy as np

    from core import families, outcomes
    from core.disagreement import disagreement_map, group_counts

    family = families.get(store.benchmark_family(benchmark))
    if items is None:
        items = store.items_frame(benchmark, ("item_id", "group_id", "kind", "variant", "answer"), pk=True)
    lay = lay if lay is not None else outcomes.layout(family.groups, items)
    runs = run_rows(store, benchmark)
    if not runs:
        raise CrosscheckError(f"benchmark {benchmark!r} has no run with predictions")
    preds = run_preds(store, runs, predictions.pk_rows(items["pk"].tolist()), progress)
    names = [r["name"] for r in runs]
    counts = [group_counts(lay, preds[n]) for n in names]
    return disagreement_map(benchmark, lay, names, np.array([c[0] for c in counts]), np.array([c[1] for c in counts]),
                            keep)
