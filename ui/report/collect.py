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
from typing import TYPE_CHECKING, Any

import numpy as np

from core import groups as core_groups
from core.errors import CrosscheckError, NotFound
from core.outcomes import outcome_label
from core.report_json import table_json
from db import frames
from db.store import Store
from ui.metrics_page import Page, metrics_page
from ui.report import GROUP_CHOICES
from ui.scores import ScoreCache
from ui.views import cache

if TYPE_CHECKING:
    from core.disagreement import DisagreementMap
    from core.failure_modes import FailureModes
    from core.item_health import ItemHealth

ROOT = Path(__file__).resolve().parent.parent.parent
THUMB_PX = 240  # longest side of an inline thumbnail
THUMB_QUALITY = 70  # JPEG quality of an inline thumbnail
TRACE_CHARS = 4000  # a longer trace is cut here in the file, with the count of characters left out


class BadReportRequest(CrosscheckError, ValueError):
    """A report argument that names nothing the store holds, or a --groups value that is not understood."""


MODE_RUNS = 6  # the report's first runs whose failure modes it holds (`app.py failure-modes` gives any run's)
MAP_CHART = "disagreement_map"  # the map's key in the charts island


@dataclass
class Why:
    """Why it fails (issue #38): the failure modes of the report's first MODE_RUNS runs, the benchmark's item
    health and the map of where runs disagree (core.failure_modes, core.item_health, core.disagreement, through
    ui.views.cache), and why any of them is missing."""

    modes: list[FailureModes] = field(default_factory=list)  # per run
    health: ItemHealth | None = None
    map: DisagreementMap | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class ReportData:
    """Everything the page shows: `island` is the JSON of <script id="crosscheck-data">, `charts` the plotly
    figures' JSON texts per chart key, `images` the thumbnails as data URLs per content hash."""

    page: Page
    island: dict[str, Any]
    charts: dict[str, str] = field(default_factory=dict)
    images: dict[str, str] = field(default_factory=dict)
    why: Why = field(default_factory=Why)


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


def _trace(text: Any) -> str | None:
    if not text:
        return None
    text = str(text)
    return text if len(text) <= TRACE_CHARS else f"{text[:TRACE_CHARS]}… [{len(text) - TRACE_CHARS} more characters]"


class TextPool:
    """Responses and traces written once each: an answer holds the index of its text in the island's `texts`
    (many runs give the same response, "<ANSWER>B</ANSWER>", or share a trace)."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self._at: dict[str, int] = {}

    def __call__(self, text: Any) -> int | None:
        if text is None or text == "":
            return None
        key = str(text)
        at = self._at.get(key)
        if at is None:
            at = self._at[key] = len(self.texts)
            self.texts.append(key)
        return at


def _verdicts(lay: Any, summ: list[Any], keys: list[str], g: int) -> list[list[Any]]:
    """Per run [k correct, n items, answered items, category or None, [pattern keys]] of group position g."""
    n = int(lay.n_items[g])
    return [[int(s.n_correct[g]), n, int(s.n_answered[g]), s.category[g],
             [k for k in keys if k in s.patterns and bool(s.patterns[k][g])]] for s in summ]


def groups_data(store: Store, benchmark: str, runs: list[dict[str, Any]], limit: str | int
                ) -> tuple[list[dict[str, Any]], list[str], set[str]]:
    """(the groups as the island holds them, the island's `texts`, the image hashes they show). A group: id,
    split, kinds, the failure patterns any run shows (`patterns`), per run (island `run_order`) its verdict
    [k correct, n items, answered, category, patterns] (`runs`), and its items: text, options, gold, image
    hashes, meta and per run [answer letter, status, outcome, response, trace] of the prediction a group view
    shows (outcome: core.outcomes.outcome_label of the Browse list's rule, which the viewer shows as it is;
    response and trace: indices into `texts`)."""
    bd = cache.bench(store, benchmark)
    lay = bd.layout
    loaded = dict(cache.summaries(store, bd, runs))
    summ = [loaded[r["name"]] for r in runs if r["name"] in loaded]
    keys = [k for k, _ in core_groups.patterns(bd.family)]
    chosen = chosen_groups(lay, summ, limit)
    full = cache.full_items(store, benchmark)
    cols = {c: full[c].tolist() for c in ("kind", "variant", "question", "options", "answer", "images", "meta")}
    pos = {iid: i for i, iid in enumerate(full["item_id"].tolist())}
    rows_of: dict[int, list[int]] = {}
    for row, g in enumerate(lay.group.tolist()):
        rows_of.setdefault(g, []).append(row)
    wanted_rows = [row for g in chosen.tolist() for row in rows_of.get(g, [])]
    preds = _predictions(store, benchmark, runs, {str(lay.item_ids[r]) for r in wanted_rows})
    per_run = [(preds[r["name"]], s.answered.tolist(), s.correct.tolist()) for r, s in zip(runs, summ, strict=True)]
    splits, kinds, item_ids = bd.items["split"].tolist(), lay.kind.tolist(), lay.item_ids.tolist()
    pool = TextPool()
    out, hashes = [], set()
    for g in chosen.tolist():
        verdicts = _verdicts(lay, summ, keys, g)
        items = []
        for row in rows_of.get(g, []):
            iid = str(item_ids[row])
            at = pos[iid]
            hashes.update(cols["images"][at])
            answers: list[Any] = []
            for got, answered, correct in per_run:
                p = got.get(iid)
                answers.append(None if p is None else [
                    p[0], p[1], outcome_label(answered[row], correct[row], p[1]), pool(p[2]), pool(_trace(p[3]))])
            items.append({"item_id": iid, "kind": cols["kind"][at], "variant": cols["variant"][at],
                          "question": cols["question"][at], "options": cols["options"][at],
                          "gold": cols["answer"][at], "images": list(cols["images"][at]), "meta": cols["meta"][at],
                          "answers": answers})
        out.append({"id": str(lay.groups[g]), "split": str(splits[rows_of[g][0]]),
                    "kinds": sorted({str(kinds[r]) for r in rows_of[g]}),
                    "patterns": sorted({k for v in verdicts for k in v[4]}, key=keys.index),
                    "runs": verdicts, "items": items})
    return out, pool.texts, hashes


PRED_READ = ("item_id", "rotation", "repeat", "status", "answer", "response", "trace")


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _predictions(store: Store, benchmark: str, runs: list[dict[str, Any]], wanted: set[str]
                 ) -> dict[str, dict[str, tuple[Any, ...]]]:
    """run -> item_id -> (answer, status, response, trace) of the prediction a group view shows (rotation 0 /
    repeat 0, else the first stored: ui.views.common.RunView.primary's rule), for the items in `wanted`, read
    through db.frames' columnar read."""
    _, loaded = frames.load_benchmark_runs(store, benchmark, PRED_READ, names=[r["name"] for r in runs],
                                           item_columns=("item_id", "group_id"))
    out: dict[str, dict[str, tuple[Any, ...]]] = {}
    for r in runs:
        df = loaded[r["name"]].preds
        df = df[df["item_id"].isin(wanted)]
        main = (df["rotation"].to_numpy() == 0) & (df["repeat"].to_numpy() == 0)
        df = df.iloc[np.argsort(~main, kind="stable")].drop_duplicates("item_id")
        out[r["name"]] = {iid: (_text(a), st, _text(resp), _text(tr)) for iid, a, st, resp, tr in
                          zip(df["item_id"], df["answer"], df["status"], df["response"], df["trace"], strict=True)}
    return out


def collect(store: Store, benchmark: str, names: list[str] | None = None, split: str | None = None,
            groups: str | None = None, command: str = "", cache_: ScoreCache | None = None,
            set_aside: bool = False) -> ReportData:
    """The report of `names` (default: every run) of `benchmark` on `split` (as `score --split`); `set_aside`:
    scored without the groups of the items reviewers marked "gold is wrong", as the Metrics tab's toggle."""
    from core.scoring import split_arg

    limit = group_limit(groups)
    runs = pick_runs(store, benchmark, names)
    if not runs:
        raise BadReportRequest(f"benchmark {benchmark!r} has no runs to report")
    page = metrics_page(store, benchmark, [r["name"] for r in runs], split=split_arg(split),
                        cache=cache_ if cache_ is not None else ScoreCache(), set_aside=set_aside)
    if page.message:
        raise BadReportRequest(page.message)
    scored = {rs.name: rs for rs in page.runs}
    group_list, texts, hashes = groups_data(store, benchmark, runs, limit)
    island = {"benchmark": benchmark, "family": page.family, "split": page.runs[0].split,
              "provenance": provenance(store, benchmark, runs, command, page.runs[0].split),
              "run_order": [r["name"] for r in runs],
              "runs": {n: {"metrics": rs.metrics, "config": rs.config} for n, rs in scored.items()},
              "tables": [table_json(t) for t in page.tables.values()],
              "patterns": [list(p) for p in core_groups.patterns(page.family)],
              "groups_written": limit, "groups": group_list, "texts": texts}
    charts = {key: fig.to_json() for key, fig in page.figs.items()}  # plotly's own encoder (numpy arrays)
    why = why_it_fails(store, benchmark, [r["name"] for r in runs])
    island["why"] = {"failure_modes": [m.json() for m in why.modes],
                     "item_health": why.health.json() if why.health is not None else None,
                     "disagreement": why.map.json() if why.map is not None else None, "notes": why.notes}
    if why.map is not None:
        from ui.charts import disagreement_map

        charts[MAP_CHART] = disagreement_map(why.map).to_json()
    images = {h: url for h in sorted(hashes) if (url := thumbnail_url(store, h)) is not None}
    return ReportData(page, island, charts, images, why)


def why_it_fails(store: Store, benchmark: str, names: list[str]) -> Why:
    """The report's Why: each part computed as the Browse panels compute it; one that cannot be says why."""
    why = Why()
    for name in names[:MODE_RUNS]:
        try:
            why.modes.append(cache.failure_modes(store, benchmark, name))
        except CrosscheckError as exc:
            why.notes.append(f"failure modes of {name!r}: {exc}")
    if len(names) > MODE_RUNS:
        why.notes.append(f"failure modes of the first {MODE_RUNS} of the {len(names)} runs (app.py failure-modes "
                         "--run NAME gives any run's)")
    try:
        why.health = cache.item_health(store, benchmark)
    except CrosscheckError as exc:
        why.notes.append(f"item health: {exc}")
    try:
        why.map = cache.disagreement(store, benchmark, tuple(names))
    except CrosscheckError as exc:
        why.notes.append(f"where runs disagree: {exc}")
    return why
