"""The predictions import (SPEC §3, docs/FORMATS.md): every format (JSONL, CSV, other tools' files read by
db/foreign.py) takes one path, `import_prediction_lines`, which reads each line by the one line schema,
core/formats.PREDICTION_LINE, checks every line's item, key and letter, and writes a file without any problem in
one `BEGIN IMMEDIATE` transaction, or refuses it with every problem (file, line, field). Re-importing the same
file changes nothing.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import chain
from operator import itemgetter
from pathlib import Path
from typing import Any

from core import families
from core.errors import ImportRefused
from core.formats import (
    PredictionFields,
    check_prediction_line,
    prediction_fields,
    prediction_key,
    usual_fields,
)
from core.parsing import OK, fast_parse, full_parse, rotate_options, unrotate
from core.report import Report
from db import predictions
from db.import_common import ImportResult, json_lines, read_text, refuse, resolve_benchmark
from db.overrides import settle_replaced
from db.store import ROWS_PER_INSERT, Store, config_hash, now, touch_run

_Objs = Iterable[tuple[int, Any]]  # (file line, object) of each line, read once (a JSONL file's decoded as taken)


def _read_prediction_objects(path: Path, report: Report) -> _Objs:
    text = read_text(path, report)
    if text is None:
        return []
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text))
        if not reader.fieldnames or "item_id" not in reader.fieldnames:
            report.error(path.name, 1, "(header)", "expected a CSV header naming at least item_id and response")
            return []
        out = []
        for row in reader:
            obj = {k: v for k, v in row.items() if k is not None and v != ""}
            if "response" in reader.fieldnames and "response" not in obj:
                obj["response"] = ""
            out.append((reader.line_num, obj))
        return out
    return json_lines(text, path.name, report)


def _decide(f: PredictionFields, letters: str, parser: str, name: str, no: int, report: Report,
            options: Callable[[], dict[str, str] | None]) -> tuple[str, str | None, str | None] | None:
    """(status, letter as shown, answer letter) of one line's fields: the given letter, or the family's parser,
    then unrotated; None with the error in `report`. `options()` (the item's option texts) is only called when
    the response needs the full parsing rules (option-text answers); clean answers are decided without it."""
    response, given, shown, rotation = f[1], f[2] or None, f[3], f[4]
    if rotation >= len(letters):
        report.error(name, no, "rotation", f"rotation {rotation} needs more than the item's {len(letters)} options")
        return None
    if given == "invalid" or given == "api_error":
        if shown is not None:
            report.error(name, no, "answer", f"status {given} cannot carry an answer letter")
            return None
        return given, None, None
    if shown is not None:
        if shown not in letters:
            report.error(name, no, "answer", f"{shown!r} is not an option letter of this item (expected one of "
                         f"{letters})")
            return None
        status: str = OK
        letter: str | None = shown
    else:
        decided = fast_parse(response, letters, parser)
        if decided is None:
            opts = options()
            if opts and rotation:  # rotation 0 shows the options as they are (the parser only reads them)
                opts = rotate_options(opts, rotation)
            decided = full_parse(response, letters, parser, opts or None)
        status, letter = decided[0], decided[1]
        if given == "ok" and status != OK:
            report.error(name, no, "status", f"says ok but the response has no readable answer ({status}); "
                         "give the letter in `answer` or drop `status`")
            return None
    return status, letter, (letter if letter is None or rotation == 0 else unrotate(letter, letters, rotation))


_PredRow = tuple[Any, ...]  # (run id, item pk, rotation, repeat, response, shown, answer, status, error, input_mode,
#                             trace, tokens, latency, probs): one predictions row, in the column order of PRED_INSERT
_Line = tuple[int, str, int, int]  # (file line, item_id, rotation, repeat) of each row, for the messages
_After = Callable[[sqlite3.Connection, int], None]  # (write connection, run id) inside the import's transaction


def import_predictions(store: Store, path: str | os.PathLike[str], run: str, model: str | None = None,
                       config: dict[str, Any] | None = None, benchmark: str | None = None,
                       replace: bool = False, fmt: str = "auto", key: str | None = None) -> ImportResult:
    """Import predictions (JSONL or CSV) into run `run` in one transaction; see docs/FORMATS.md.

    `fmt` vlmevalkit / lmms-eval (or auto, by extension and columns) reads another tool's predictions through
    db/foreign.py, which turns each row into a predictions line; `key` picks lmms-eval's item key. Every line of
    every format then goes through `import_prediction_lines`.
    """
    path = Path(path)
    from db import foreign  # other tools' readers, imported when a file needs them

    kind = foreign.prediction_format(path, fmt)
    if kind in foreign.PREDICTION_FORMATS:
        got = foreign.read_predictions(store, path, kind, run, config=config, benchmark=benchmark, key=key)
        return import_prediction_lines(store, path, got.objs, got.report, run, model or got.model, got.config,
                                       got.benchmark, replace, after=got.after)
    report = Report()
    objs = _read_prediction_objects(path, report)
    return import_prediction_lines(store, path, objs, report, run, model, config, benchmark, replace)


def _sha256(path: Path) -> str:
    """The file's SHA-256 (the imports log's `sha256`)."""
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def import_prediction_lines(store: Store, path: Path, objs: _Objs, report: Report, run: str,
                            model: str | None, config: dict[str, Any] | None, benchmark: str | None,
                            replace: bool, *, after: _After | None = None) -> ImportResult:
    """The one import path of predictions lines (`objs`: (line, object) of a JSONL or CSV file, or of another
    tool's rows, db/foreign.py). Every problem is reported (file, line, field) before anything is written: a
    line's field errors do not hide its unknown item, duplicate key or letter errors, nor any other line's
    (issue 14.4). `after` writes rows that go with the predictions (db/foreign.py) in the same transaction."""
    name = path.name
    lines = iter(objs)
    head: list[tuple[int, Any]] = []  # the lines up to the first whose key can be read: its item tells the benchmark
    first = None  # when nothing else does
    for no, obj in lines:
        head.append((no, obj))
        key = prediction_key(obj)
        if key is not None:
            first = key[0]
            break
    if not head and report.ok:
        report.error(name, 0, "(file)", "no predictions in the file")
    objs = chain(head, lines)
    told = Report()  # why the benchmark cannot be told, listed after every line's field problems
    bench = resolve_benchmark(store, run, benchmark, first, told, name)
    if bench is None:  # nothing to check items against: each line's field problems, then why
        for no, obj in objs:
            prediction_fields(obj) or check_prediction_line(obj, name, no, report)
        report.issues.extend(told.issues)
        if report.ok:
            report.error(name, 0, "item_id", "no line names a readable item_id; cannot tell the benchmark")
        refuse(report)
    assert bench is not None
    b = store.benchmark(bench)
    cfg, digest = _run_config(model, config)
    existing = store.conn.execute("SELECT id, benchmark_id, config_hash FROM runs WHERE name = ?", (run,)).fetchone()
    parser = (config or {}).get("parser") or families.get(b["family"]).parser
    good = _rows(store, int(b["id"]), bench, parser, objs, name, report)
    if existing is None:
        refuse(report)
        return _write_new_run(store, path, run, model, b, cfg, digest, good, report, after)
    if existing[1] != b["id"] or existing[2] != digest:
        report.error(name, 0, "--run", f"run {run!r} already exists with another benchmark, model or settings; "
                     "choose another --run name")
        refuse(report)
    # the good lines still meet the run's stored rows there, so their conflicts are listed with the rest
    return _write_predictions(store, path, run, b, existing, good, replace, report, after)


@dataclass(slots=True)
class _Good:
    """The rows of the lines without any problem. The usual lines (item_id, response and maybe tokens: most of an
    import) are `plain` (item pk, response, letter shown, letter, status, tokens), the other columns constant in
    the INSERT's SQL (`_PLAIN_VALUES`: fewer values to bind, about 40% of the insert's CPU), with their file lines
    `plain_at`; every other line's row is whole but for the run id in `other` (the columns of `_OTHER_VALUES`),
    with where it came from (`other_at`: file line, item_id, rotation, repeat)."""

    plain: list[tuple[Any, ...]] = field(default_factory=list)
    plain_at: list[int] = field(default_factory=list)
    other: list[tuple[Any, ...]] = field(default_factory=list)
    other_at: list[_Line] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.plain) + len(self.other)

    def statuses(self) -> Counter[str]:
        return Counter(map(itemgetter(4), self.plain)) + Counter(map(itemgetter(6), self.other))

    def in_file_order(self, run_id: int, item_ids: dict[int, str]) -> tuple[list[_PredRow], list[_Line]]:
        """Every row whole and where it came from, in file order (`item_ids`: item pk -> item_id)."""
        rows: list[_PredRow] = [(run_id, p[0], 0, 0, p[1], p[2], p[3], p[4], None, "all", None, p[5], None, None)
                                for p in self.plain]
        where: list[_Line] = [(no, item_ids[p[0]], 0, 0) for p, no in zip(self.plain, self.plain_at, strict=True)]
        rows += [(run_id, *row) for row in self.other]
        where += self.other_at
        order = sorted(range(len(rows)), key=lambda i: where[i][0])
        return [rows[i] for i in order], [where[i] for i in order]


def _rows(store: Store, bid: int, bench: str, parser: str, objs: _Objs, name: str, report: Report) -> _Good:
    """The rows of the lines without any problem and where each came from. Each line is read by the line schema
    (core/formats.PREDICTION_LINE): the usual line by `usual_fields`, any other by its plain type tests and, where
    they do not decide, by the full check; every field problem is reported first (in file order), then every
    unknown item, duplicate key and letter problem (a line's key is read as far as it can be on a line with other
    errors, so its unknown item or duplicate is reported too)."""
    keys_get = store.item_keys(bid).get

    def options(pk: int) -> dict[str, str] | None:  # the benchmark's options, read when first needed (cached)
        return store.item_options(bid).get(pk)

    later = Report()  # the problems of the lines' items, keys and letters
    seen: dict[tuple[int, int, int], int] = {}  # the first line of each key (item pk, rotation, repeat)
    good = _Good()
    for no, obj in objs:
        usual = usual_fields(obj)
        if usual is not None:  # the usual line: the parser decides
            item = keys_get(usual[0])
            if item is not None and item[1] and (key := (item[0], 0, 0)) not in seen:
                parsed = fast_parse(usual[1], item[1], parser) or full_parse(usual[1], item[1], parser,
                                                                             options(item[0]) or None)
                seen[key] = no
                good.plain.append((item[0], usual[1], parsed[1], parsed[1], parsed[0], usual[2]))
                good.plain_at.append(no)
                continue
        f = prediction_fields(obj) or check_prediction_line(obj, name, no, report)
        line_key = (f[0], f[4], f[5]) if f is not None else prediction_key(obj)
        if line_key is None:
            continue
        item_id, rotation, repeat = line_key
        info = keys_get(item_id)
        if info is None:
            later.error(name, no, "item_id", f"unknown item {item_id!r} (not in benchmark {bench!r})")
            continue
        first = seen.setdefault((info[0], rotation, repeat), no)
        if first != no:
            later.error(name, no, "item_id", f"duplicate prediction for {item_id!r} rotation {rotation} "
                        f"repeat {repeat} (first on line {first})")
        elif f is not None and (decided := _decide(f, info[1], parser, name, no, later,
                                                   partial(options, info[0]))) is not None:
            good.other.append((info[0], rotation, repeat, f[1], decided[1], decided[2], decided[0], f[9], f[6], f[7],
                               f[8], None, None))
            good.other_at.append((no, item_id, rotation, repeat))
    report.issues.extend(later.issues)
    return good


def _run_config(model: str | None, config: dict[str, Any] | None) -> tuple[dict[str, Any], str]:
    cfg = {"runner": "import", "model": model, **(config or {})}
    return cfg, config_hash(cfg)


def _insert_run(conn: sqlite3.Connection, run: str, b: dict[str, Any], model: str | None,
                cfg: dict[str, Any], digest: str) -> int:
    cur = conn.execute(
        "INSERT INTO runs (name, benchmark_id, runner, model, config, config_hash, status, synthetic, created,"
        " updated) VALUES (?, ?, 'import', ?, ?, ?, 'imported', ?, ?, ?)",
        (run, b["id"], model or "", json.dumps(cfg, sort_keys=True, ensure_ascii=False), digest,
         int(bool(cfg.get("synthetic"))), now(), now()))
    return int(cur.lastrowid or 0)


def _counts(n_lines: int, n_rows: int, statuses: Counter[str]) -> dict[str, int]:
    return {"predictions": n_rows, "unchanged": n_lines - n_rows,
            **{s: statuses[s] for s in ("ok", "invalid", "api_error")}}


def _against_stored(store: Store, run_id: int, run: str, rows: list[_PredRow], where: list[_Line], replace: bool,
                    name: str, report: Report) -> tuple[list[_PredRow], dict[tuple[int, int, int], str | None],
                                                        dict[tuple[int, int, int], int]]:
    """The rows of an existing run's import that are new or (with `replace`) changed, the replaced keys with their
    new raw response, and each replaced key's file line; a changed row without `replace` is an error."""
    old = predictions.stored_rows(store, run_id)
    fresh = []
    replaced: dict[tuple[int, int, int], str | None] = {}  # key -> the new raw response
    lines_of: dict[tuple[int, int, int], int] = {}
    for row, (no, item_id, rotation, repeat) in zip(rows, where, strict=True):
        k = (row[1], row[2], row[3])
        prev = old.get(k)
        if prev is None:
            fresh.append(row)
        elif tuple(prev) != row[4:12]:  # response, shown, answer, status, error, input_mode, trace, tokens
            if not replace:
                report.error(name, no, "response", f"run {run!r} already has a different prediction for "
                             f"{item_id!r} rotation {rotation} repeat {repeat}; use --replace to overwrite")
            else:
                fresh.append(row)
                replaced[k] = row[4]
                lines_of[k] = no
    return fresh, replaced, lines_of


_HEAD = Store.PRED_INSERT.partition("VALUES ")[0] + "VALUES "  # the predictions INSERT up to its rows
# One row's VALUES, the run id (and a plain row's constant columns) written in: a plain row (`_Good.plain`: item
# pk, response, letter shown, letter, status, tokens) and any other row (`_Good.other`: every column but the run id)
_PLAIN_VALUES = "({run_id}, ?, 0, 0, ?, ?, ?, ?, NULL, 'all', NULL, ?, NULL, NULL)"
_OTHER_VALUES = "({run_id}, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"


def _insert(conn: sqlite3.Connection, verb: str, values: str, rows: Sequence[tuple[Any, ...]],
            lines: Sequence[int], name: str) -> None:
    """Write `rows`, each the parameters of one row's `values`, `ROWS_PER_INSERT` rows a statement (one SQL text
    for the whole ones: a third of an executemany's CPU with the plain rows' constant columns). A row SQLite
    refuses (a constraint) raises ImportRefused naming its file line: the statement that failed left nothing
    behind, so its rows are written again one at a time to find it."""
    head = _HEAD.replace("INSERT", verb, 1)
    whole = head + ", ".join([values] * ROWS_PER_INSERT)
    for at in range(0, len(rows), ROWS_PER_INSERT):
        part = rows[at:at + ROWS_PER_INSERT]
        try:
            conn.execute(whole if len(part) == ROWS_PER_INSERT else head + ", ".join([values] * len(part)),
                         list(chain.from_iterable(part)))
        except sqlite3.IntegrityError:
            for row, line in zip(part, lines[at:at + ROWS_PER_INSERT], strict=True):
                try:
                    conn.execute(head + values, row)
                except sqlite3.IntegrityError as exc:
                    report = Report()
                    report.error(name, line, "(row)", f"the store refused this row ({exc})")
                    raise ImportRefused(report.summary(), report) from exc
            raise


def _write_new_run(store: Store, path: Path, run: str, model: str | None, b: dict[str, Any], cfg: dict[str, Any],
                   digest: str, good: _Good, report: Report, after: _After | None) -> ImportResult:
    """Import the rows of a file without any problem into a new run, in one write transaction: the run is inserted
    (its id is the one SQLite gives), then its rows, its tool's extras (`after`) and the imports log's row. A
    killed import commits nothing."""
    name = path.name
    with store.write() as conn:
        run_id = _insert_run(conn, run, b, model, cfg, digest)
        # leftovers under a reused run id: every row replaces
        verb = "INSERT OR REPLACE" if predictions.has_rows(store, run_id) else "INSERT"
        _insert(conn, verb, _PLAIN_VALUES.format(run_id=int(run_id)), good.plain, good.plain_at, name)
        _insert(conn, verb, _OTHER_VALUES.format(run_id=int(run_id)), good.other, [at[0] for at in good.other_at],
                name)
        n_rows = len(good)
        if n_rows and after is not None:
            after(conn, run_id)
        if n_rows:
            conn.execute("INSERT INTO imports (kind, file, sha256, target, rows, created) VALUES "
                         "('predictions', ?, ?, ?, ?, ?)", (name, _sha256(path), run, n_rows, now()))
    report.counts = {**_counts(n_rows, n_rows, good.statuses()), **report.counts}
    return ImportResult(run, n_rows, not n_rows, report)


def _write_predictions(store: Store, path: Path, run: str, b: dict[str, Any], existing: tuple[Any, ...],
                       good: _Good, replace: bool, report: Report, after: _After | None) -> ImportResult:
    """Write the validated rows of the good lines into the existing run in one transaction: only the new or (with
    `replace`) changed ones, refusing other changes."""
    name = path.name
    n_lines = len(good)
    run_id = existing[0]
    item_ids = {v[0]: k for k, v in store.item_keys(int(b["id"])).items()}
    rows, where = good.in_file_order(run_id, item_ids)
    rows, replaced, lines_of = _against_stored(store, run_id, run, rows, where, replace, name, report)
    refuse(report)  # every problem of the file (from the line checks, or conflicts found here)
    with store.write() as conn:
        # Rows of a run that has none yet are plain INSERTs (keys unique: checked above); OR REPLACE would add a
        # lookup per row. Rows of a run that has some replace the old ones.
        if not predictions.has_rows(store, run_id):
            conn.executemany(store.PRED_INSERT, rows)
        else:
            if replace:
                settled = settle_replaced(conn, run_id, replaced, f"import of {name}")
                _report_settled(report, name, run, settled, lines_of, item_ids)
            # what another tool kept beside a replaced response no longer goes with it (the new file's own
            # extras, if any, are written by `after` below)
            conn.executemany("DELETE FROM prediction_sources WHERE run_id = ? AND item_pk = ? AND rotation = ?"
                             " AND repeat = ?", [(run_id, *k) for k in replaced])
            conn.executemany(store.PRED_INSERT.replace("INSERT", "INSERT OR REPLACE", 1), rows)
        n_rows = len(rows)
        if n_rows:  # caches keyed on the run's revision see the added or replaced rows
            touch_run(conn, run_id)
        if n_rows and after is not None:
            after(conn, run_id)
        if n_rows:
            conn.execute("INSERT INTO imports (kind, file, sha256, target, rows, created) VALUES "
                         "('predictions', ?, ?, ?, ?, ?)", (name, _sha256(path), run, n_rows, now()))
    report.counts = {**_counts(n_lines, n_rows, Counter(map(itemgetter(7), rows))), **report.counts}
    return ImportResult(run, n_rows, not n_rows, report)


def _report_settled(report: Report, name: str, run: str, settled: list[dict[str, Any]],
                    lines_of: dict[tuple[int, int, int], int], item_ids: dict[int, str]) -> None:
    """One warning per extraction-audit override a --replace import met, saying what became of it."""
    for o in settled:
        key = (o["item_pk"], o["rotation"], o["repeat"])
        what = f"{item_ids.get(o['item_pk'], o['item_pk'])!r} rotation {o['rotation']} repeat {o['repeat']}"
        made = f"override #{o['id']} ({o['method']}: {o['new_status']} {o['new_answer'] or ''})".replace(" )", ")")
        if o["outcome"] == "kept":
            msg = f"{made} of {what} kept: the replaced row has the same raw response, so it still reads the override"
        else:
            msg = (f"{made} of {what} is now stale and inactive: the replaced row has another raw response, so it "
                   f"reads as imported; audit it again in run {run!r} if needed")
        report.warn(name, lines_of.get(key, 0), "response", msg)
    if settled:
        report.counts["overrides_kept"] = sum(o["outcome"] == "kept" for o in settled)
        report.counts["overrides_stale"] = sum(o["outcome"] == "stale" for o in settled)
