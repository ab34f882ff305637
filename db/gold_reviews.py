"""Reviewers' verdicts on gold letters (issue #38 point 2): "gold is wrong" or "gold is right", with a note, who and
when. The one write path of the `gold_reviews` table (Store.write transactions; migration 010).

Every verdict is a row of its own and none is changed or deleted: an item's verdict is its latest row, and its
history the rows before it. Items whose verdict is "gold is wrong" are the ones metrics can set aside
(`set_aside`: core.scoring drops their groups when asked, docs/METRICS.md "Item health").
"""

from __future__ import annotations

from dataclasses import dataclass

from core.errors import CrosscheckError
from db.store import Store, now

WRONG, RIGHT = "wrong", "right"
VERDICTS = {WRONG: "gold is wrong", RIGHT: "gold is right"}
MAX_NOTE = 2000


@dataclass(frozen=True, slots=True)
class GoldReview:
    item_id: str
    group_id: str
    verdict: str
    note: str
    by: str
    created: str


def _benchmark_id(store: Store, benchmark: str) -> int:
    row = store.conn.execute("SELECT id FROM benchmarks WHERE name = ?", (benchmark,)).fetchone()
    if row is None:
        raise CrosscheckError(f"no benchmark {benchmark!r} in the store")
    return int(row[0])


def review_gold(store: Store, benchmark: str, item_id: str, verdict: str, note: str | None = None,
                by: str = "") -> GoldReview:
    """Record `verdict` ("wrong" or "right") on the gold letter of `item_id`, by `by`, now."""
    if verdict not in VERDICTS:
        raise CrosscheckError(f"verdict {verdict!r}: expected one of {', '.join(VERDICTS)}")
    text = (note or "").strip()
    if len(text) > MAX_NOTE:
        raise CrosscheckError(f"note: at most {MAX_NOTE} characters (got {len(text)})")
    bid = _benchmark_id(store, benchmark)
    when = now()
    with store.write() as conn:
        row = conn.execute("SELECT id, group_id FROM items WHERE benchmark_id = ? AND item_id = ?",
                           (bid, item_id)).fetchone()
        if row is None:
            raise CrosscheckError(f"no item {item_id!r} in benchmark {benchmark!r}")
        conn.execute("INSERT INTO gold_reviews (benchmark_id, item_pk, verdict, note, by, created) VALUES "
                     "(?, ?, ?, ?, ?, ?)", (bid, int(row[0]), verdict, text or None, by or "local", when))
    return GoldReview(item_id, str(row[1]), verdict, text, by or "local", when)


_READ = ("SELECT i.item_id, i.group_id, r.verdict, r.note, r.by, r.created FROM gold_reviews r JOIN items i ON i.id ="
         " r.item_pk WHERE r.benchmark_id = ?")


def reviews(store: Store, benchmark: str) -> list[GoldReview]:
    """The current verdict of every reviewed item of `benchmark` (its latest row), by item."""
    bid = _benchmark_id(store, benchmark)
    rows = store.conn.execute(
        _READ + " AND r.id IN (SELECT MAX(id) FROM gold_reviews WHERE benchmark_id = ? GROUP BY item_pk)"
        " ORDER BY i.id", (bid, bid)).fetchall()
    return [GoldReview(r[0], r[1], r[2], r[3] or "", r[4], r[5]) for r in rows]


def history(store: Store, benchmark: str, item_id: str) -> list[GoldReview]:
    """Every verdict on `item_id`, oldest first."""
    rows = store.conn.execute(_READ + " AND i.item_id = ? ORDER BY r.id", (_benchmark_id(store, benchmark),
                                                                          item_id)).fetchall()
    return [GoldReview(r[0], r[1], r[2], r[3] or "", r[4], r[5]) for r in rows]


def set_aside(store: Store, benchmark: str) -> frozenset[str]:
    """The items whose current verdict is "gold is wrong"."""
    return frozenset(r.item_id for r in reviews(store, benchmark) if r.verdict == WRONG)


def state(store: Store, benchmark: str) -> int:
    """The latest verdict's id on `benchmark` (0 without one): a cache of what depends on the verdicts keys on it."""
    row = store.conn.execute("SELECT MAX(id) FROM gold_reviews WHERE benchmark_id = ?",
                             (_benchmark_id(store, benchmark),)).fetchone()
    return int(row[0] or 0)
