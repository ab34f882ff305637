"""What a one-file report holds, gathered from the store: provenance, the Metrics tab's page (scores, tables,
charts: ui.metrics_page.metrics_page, the tab's own path), and the groups with every run's answer and trace.

Nothing here writes HTML; ui/report/page.py turns a `ReportData` into the file."""

from __future__ import annotations

import base64
import hashlib
import io
import subprocess
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from core import groups as core_groups
from core.errors import CrosscheckError, NotFound
from core.report_json import table_json
from db import frames
from db.store import Store
from ui.metrics_page import Page, metrics_page
from ui.report import GROUP_CHOICES
from ui.scores import ScoreCache
from ui.views import cache

ROOT = Path(__file__).resolve().parent.parent.parent
THUMB_PX = 240  # longest side of an inline thumbnail
THUMB_QUALITY = 70  # JPEG quality of an inline thumbnail
TRACE_CHARS = 4000  # a longer trace is cut here in the file, with the count of characters left out
PRED_CHUNK = 4000  # items per prediction read (SQLite's bound-variable limit)


class BadReportRequest(CrosscheckError, ValueError):
    """A report argument that names nothing the store holds, or a --groups value that is not understood."""


@dataclass
class ReportData:
    """Everything the page shows: `island` is the JSON of <script id="crosscheck-data">, `charts` the plotly
    figures' JSON texts per chart key, `images` the thumbnails as data URLs per content hash."""

    page: Page
    island: dict[str, Any]
    charts: dict[str, str] = field(default_factory=dict)
    images: dict[str, str] = field(default_factory=dict)


def version() -> tuple[str, str]:
    """(Crosscheck's version from pyproject.toml, the git commit of the checkout or "unknown")."""
    try:
        ver = str(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        ver = "unknown"
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=5,
                                check=True).stdout.strip() or "unknown"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, timeout=5).stdout.strip()
        commit += " (with uncommitted changes)" if dirty else ""
    except (OSError, subprocess.SubprocessError):
        commit = "unknown"
    return ver, commit


def store_hash(store: Store) -> str:
    """The store's content hash: sha256 over every benchmark's source hash and every run's name, revision and
    updated time (db.store.touch_run moves them on each write of a run), so two reports of one state agree."""
    h = hashlib.sha256()
    for b in store.benchmarks():
        h.update(f"b\x1f{b['name']}\x1f{store.benchmark(b['name']).get('source_sha256')}\x1e".encode())
    names = [r["name"] for r in store.runs(with_counts=False)]
    from db.browse import run_versions

    for name, ver in sorted(run_versions(store, names).items()):
        h.update(f"r\x1f{name}\x1f{ver}\x1e".encode())
    return h.hexdigest()


def provenance(store: Store, benchmark: str, runs: list[dict[str, Any]], command: str, split: str) -> dict[str, Any]:
    ver, commit = version()
    b = store.benchmark(benchmark)
    return {"crosscheck_version": ver, "git_commit": commit, "store_sha256": store_hash(store),
            "benchmark_sha256": b.get("source_sha256"), "benchmark_source": b.get("source"),
            "benchmark_items": b.get("n_items"), "split": split, "command": command,
            "runs": [{"name": r["name"], "model": r["model"], "runner": r["runner"], "config": r["config"],
                      "status": r["status"], "synthetic": r["synthetic"], "created": r["created"],
                      "updated": r["updated"]} for r in runs]}


def pick_runs(store: Store, benchmark: str, names: list[str] | None) -> list[dict[str, Any]]:
    """The benchmark's run records named by `names` in that order (default: every run); an unknown name is an
    error naming the known ones."""
    known = store.runs(benchmark, with_counts=False)  # an unknown benchmark: NotFound naming the known ones
    if not names:
        return known
    by_name = {r["name"]: r for r in known}
    missing = [n for n in names if n not in by_name]
    if missing:
        raise NotFound(f"no run named {', '.join(map(repr, missing))} in benchmark {benchmark!r} "
                       f"(runs: {', '.join(by_name) or 'none'})")
    return [by_name[n] for n in dict.fromkeys(names)]


def group_limit(value: str | None) -> str | int:
    """--groups: "failing" (default), "all", or a positive number of groups (failing ones first)."""
    text = (value or "failing").strip().lower()
    if text in ("failing", "all"):
        return text
    if text.isdigit() and int(text) > 0:
        return int(text)
    raise BadReportRequest(f"--groups {value!r}: expected {GROUP_CHOICES}")


def thumbnail_url(store: Store, digest: str) -> str | None:
    """A stored image downscaled to THUMB_PX as a JPEG data URL (None when its file is missing)."""
    from PIL import Image

    try:
        with Image.open(store.image_path(digest)) as src:
            im = src.convert("RGB")
            im.thumbnail((THUMB_PX, THUMB_PX))
            buf = io.BytesIO()
            im.save(buf, format="JPEG", quality=THUMB_QUALITY, optimize=True)
    except (OSError, NotFound):
        return None
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def chosen_groups(lay: Any, summaries: list[Any], limit: str | int) -> np.ndarray:
    """Group positions to write, in benchmark order: every group, the failing ones (a run answered one of its
    items and not every item right), or at most `limit` groups, failing ones first."""
    failing = np.zeros(lay.n_groups, dtype=bool)
    for s in summaries:
        failing |= (s.n_answered > 0) & (s.n_correct < lay.n_items)
    if limit == "all":
        return np.arange(lay.n_groups)
    if limit == "failing":
        return np.flatnonzero(failing)
    order = np.concatenate([np.flatnonzero(failing), np.flatnonzero(~failing)])
    return np.sort(order[: int(limit)])


def _primary(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """item_id -> the prediction a group view shows (rotation 0 / repeat 0, else the first stored)."""
    out: dict[str, dict[str, Any]] = {}
    for p in records:
        main = int(p.get("rotation") or 0) == 0 and int(p.get("repeat") or 0) == 0
        if p["item_id"] not in out or (main and not out[p["item_id"]].get("_main")):
            out[p["item_id"]] = {**p, "_main": main}
    return out


def _trace(text: Any) -> str | None:
    if not text:
        return None
    text = str(text)
    return text if len(text) <= TRACE_CHARS else f"{text[:TRACE_CHARS]}… [{len(text) - TRACE_CHARS} more characters]"


def _plain(value: Any) -> Any:
    """numpy scalars and containers as Python values (the island is written by json.dumps)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def groups_data(store: Store, benchmark: str, runs: list[dict[str, Any]], limit: str | int
                ) -> tuple[list[dict[str, Any]], set[str]]:
    """(the groups as the island holds them, the image hashes they show). Each group: id, split, kinds, the
    failure patterns any run shows (`patterns`), per run its verdict (`runs`: k correct of n items, answered,
    category, patterns); each item: its text, options, gold, image hashes and per run (island `run_order`)
    [answer letter, status, correct (None: not answered), response, trace] of the prediction a group view
    shows. The outcome rules are the Browse list's (core.outcomes through ui.views.cache)."""
    bd = cache.bench(store, benchmark)
    lay = bd.layout
    loaded = dict(cache.summaries(store, bd, runs))
    summ = [loaded[r["name"]] for r in runs if r["name"] in loaded]
    keys = [k for k, _ in core_groups.patterns(bd.family)]
    chosen = chosen_groups(lay, summ, limit)
    full = cache.full_items(store, benchmark).set_index("item_id")
    rows_of: dict[int, list[int]] = {}
    for row, g in enumerate(lay.group.tolist()):
        rows_of.setdefault(g, []).append(row)
    wanted_rows = [row for g in chosen.tolist() for row in rows_of.get(g, [])]
    preds = _predictions(store, runs, [int(bd.items["pk"].iat[r]) for r in wanted_rows])
    out, hashes = [], set()
    for g in chosen.tolist():
        verdicts = []
        for s in summ:
            verdicts.append({"k": int(s.n_correct[g]), "n": int(lay.n_items[g]), "answered": int(s.n_answered[g]),
                             "category": s.category[g], "patterns": [k for k in keys if k in s.patterns
                                                                     and bool(s.patterns[k][g])]})
        items = []
        for row in rows_of.get(g, []):
            iid = str(lay.item_ids[row])
            it = full.loc[iid]
            hashes.update(it["images"])
            answers = []
            for r, s in zip(runs, summ, strict=True):
                p = preds[r["name"]].get(iid)
                correct = bool(s.correct[row]) if bool(s.answered[row]) else None
                answers.append(None if p is None else [p.get("answer"), p.get("status"), correct,
                                                       p.get("response"), _trace(p.get("trace"))])
            items.append({"item_id": iid, "kind": it["kind"], "variant": it["variant"], "question": it["question"],
                          "options": it["options"], "gold": it["answer"], "images": list(it["images"]),
                          "meta": it["meta"], "answers": answers})
        out.append({"id": str(lay.groups[g]), "split": str(bd.items["split"].iat[rows_of[g][0]]),
                    "kinds": sorted({str(lay.kind[r]) for r in rows_of[g]}),
                    "patterns": sorted({k for v in verdicts for k in v["patterns"]}, key=keys.index),
                    "runs": verdicts, "items": items})
    return _plain(out), hashes


def _predictions(store: Store, runs: list[dict[str, Any]], pks: list[int]) -> dict[str, dict[str, dict[str, Any]]]:
    """run -> item_id -> the prediction a group view shows, for the items `pks` (db.frames' group read)."""
    ids = {r["id"]: r["name"] for r in runs}
    out: dict[str, dict[str, dict[str, Any]]] = {r["name"]: {} for r in runs}
    for i in range(0, len(pks), PRED_CHUNK):
        read = frames.group_prediction_records(store, list(ids), pks[i:i + PRED_CHUNK])
        for run_id, records in read.items():
            out[ids[run_id]].update(_primary(records))
    return out


def collect(store: Store, benchmark: str, names: list[str] | None = None, split: str | None = None,
            groups: str | None = None, command: str = "", cache_: ScoreCache | None = None) -> ReportData:
    """The report of `names` (default: every run) of `benchmark` on `split` (as `score --split`)."""
    from core.scoring import split_arg

    limit = group_limit(groups)
    runs = pick_runs(store, benchmark, names)
    if not runs:
        raise BadReportRequest(f"benchmark {benchmark!r} has no runs to report")
    page = metrics_page(store, benchmark, [r["name"] for r in runs], split=split_arg(split),
                        cache=cache_ if cache_ is not None else ScoreCache())
    if page.message:
        raise BadReportRequest(page.message)
    scored = {rs.name: rs for rs in page.runs}
    group_list, hashes = groups_data(store, benchmark, runs, limit)
    island = {"benchmark": benchmark, "family": page.family, "split": page.runs[0].split,
              "provenance": provenance(store, benchmark, runs, command, page.runs[0].split),
              "run_order": [r["name"] for r in runs],
              "runs": {n: {"metrics": rs.metrics, "config": rs.config} for n, rs in scored.items()},
              "tables": [table_json(t) for t in page.tables.values()],
              "patterns": [list(p) for p in core_groups.patterns(page.family)],
              "groups_written": limit, "groups": group_list}
    charts = {key: fig.to_json() for key, fig in page.figs.items()}  # plotly's own encoder (numpy arrays)
    images = {h: url for h in sorted(hashes) if (url := thumbnail_url(store, h)) is not None}
    return ReportData(page, island, charts, images)
