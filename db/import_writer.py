"""`RowWriter`: the predictions import writes its rows from a thread of its own while the importer reads and
checks the next lines (docs/FORMATS.md, import speed).

The import's transaction is the caller's: the writer runs its statements on the caller's connection (db.store
opens every connection with `check_same_thread=False`), one at a time, each holding `lock`; the caller touches the
connection only under that lock until `close()` returns. Python's sqlite3 lets go of the GIL while SQLite
inserts, so the insert runs on a second core beside the Python that builds the rows. Rows go
`PER_STATEMENT` to a multi-row INSERT (one SQL text, prepared once), the last ones in one statement of their own.
A statement SQLite refuses stops the writer; `close()` finds the refused row by writing that statement's rows one
at a time (the failed statement left nothing behind) and raises it with the row's file line, so the caller
refuses the file and rolls its transaction back: nothing of the file stays.
"""

from __future__ import annotations

import queue
import sqlite3
import sys
import threading
import time
from collections.abc import Sequence
from itertools import chain
from typing import Any

from core.errors import ImportRefused
from core.report import Report
from db.store import ROWS_PER_INSERT

PER_STATEMENT = ROWS_PER_INSERT  # rows a statement, as the items import writes them (db.store)
SWITCH_S = 0.0005  # the GIL switch interval while a writer runs (CPython's default is 0.005)
_switch = {"writers": 0, "before": 0.0}
_switch_lock = threading.Lock()
_Job = tuple[int, list[Any], list[int]]  # VALUES form, rows, and the file line of each


class RowWriter:
    """Writes the rows `put` into it by `head` + one of its VALUES forms (`values`: form 0; `more`: forms 1, 2, ...,
    each one row's VALUES tuple with its parameters `?`) on `conn` from a thread of its own. Use it as a context
    manager and call `close()` at the end of the block: leaving the block, however it is left, stops the thread
    after the statement being written."""

    def __init__(self, conn: sqlite3.Connection, head: str, values: str, file: str, *more: str) -> None:
        self.conn, self.file = conn, file
        forms = (values, *more)
        self._head, self._forms = head, forms
        self._many = [head + ", ".join([v] * PER_STATEMENT) for v in forms]  # a whole statement's SQL, each form
        self.lock = threading.Lock()
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._rows: list[list[Any]] = [[] for _ in forms]  # rows put and not yet queued (fewer than a statement's)
        self._lines: list[list[int]] = [[] for _ in forms]
        self._failed: tuple[BaseException, int, Sequence[Any], Sequence[int]] | None = None
        self._thread = threading.Thread(target=self._run, name="crosscheck-import-writer", daemon=True)
        _shorter_switch(+1)
        self._thread.start()

    def __enter__(self) -> RowWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop()

    def put(self, rows: Sequence[Any], lines: Sequence[int], form: int = 0) -> None:
        """Write `rows` (each the values of VALUES form `form`, in order), with the file line of each; whole
        statements are queued at once, the rest kept for the next call or `close()`."""
        kept, kept_lines = self._rows[form], self._lines[form]
        kept.extend(rows)
        kept_lines.extend(lines)
        whole = len(kept) - len(kept) % PER_STATEMENT
        if whole:
            self._queue.put((form, kept[:whole], kept_lines[:whole]))
            del kept[:whole], kept_lines[:whole]
            time.sleep(0)  # a moment for the writer to take the GIL and start on them

    def _run(self) -> None:
        get = self._queue.get
        while (job := get()) is not None:
            if self._failed is None:  # after a refused statement the rest is only drained
                self._write(*job)

    def _write(self, form: int, rows: list[Any], lines: list[int]) -> None:
        for at in range(0, len(rows), PER_STATEMENT):
            part = rows[at:at + PER_STATEMENT]
            try:
                with self.lock:
                    self.conn.execute(self._many[form], list(chain.from_iterable(part)))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread by close()
                self._failed = (exc, form, part, lines[at:at + PER_STATEMENT])
                return

    def _stop(self) -> None:
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
            _shorter_switch(-1)

    def close(self) -> None:
        """Write the last rows and wait until every row is written; raise what stopped the writer: a row SQLite
        refused (a constraint) as ImportRefused naming its file line, any other error as it came."""
        self._stop()
        if self._failed is None:
            for form, (left, left_lines) in enumerate(zip(self._rows, self._lines, strict=True)):
                self._last(form, left, left_lines)
            return
        failed, form, rows, lines = self._failed
        if not isinstance(failed, sqlite3.IntegrityError):
            raise failed
        self._one_by_one(form, rows, lines)  # the statement that failed was undone whole: its rows again, one a time
        raise failed

    def _last(self, form: int, rows: Sequence[Any], lines: Sequence[int]) -> None:
        """The rows left after the last whole statement, in one statement of their own (one row a statement only
        when SQLite refuses it, to name the refused row)."""
        if not rows:
            return
        try:
            self.conn.execute(self._head + ", ".join([self._forms[form]] * len(rows)), list(chain.from_iterable(rows)))
        except sqlite3.IntegrityError:
            self._one_by_one(form, rows, lines)  # the failed statement left nothing behind
            raise

    def _one_by_one(self, form: int, rows: Sequence[Any], lines: Sequence[int]) -> None:
        """Write `rows` one statement each; a row SQLite refuses (a constraint) raises ImportRefused with its line."""
        execute, one = self.conn.execute, self._head + self._forms[form]
        for row, line in zip(rows, lines, strict=True):
            try:
                execute(one, row)
            except sqlite3.IntegrityError as exc:
                report = Report()
                report.error(self.file, line, "(row)", f"the store refused this row ({exc})")
                raise ImportRefused(report.summary(), report) from exc


def _shorter_switch(change: int) -> None:
    """While any writer runs, CPython's GIL switch interval is `SWITCH_S`: the writer needs the GIL back after each
    statement (to bind the next), and the reading thread would otherwise keep it for the default 5 ms, several
    statements' time. The interval in force before the first writer is put back after the last."""
    with _switch_lock:
        if change > 0 and _switch["writers"] == 0:
            _switch["before"] = sys.getswitchinterval()
            sys.setswitchinterval(min(SWITCH_S, _switch["before"]))
        _switch["writers"] += change
        if change < 0 and _switch["writers"] == 0:
            sys.setswitchinterval(_switch["before"])
