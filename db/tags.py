"""Group tags (issue #23 point 4): a name and an optional note on a group, with who set it and when.

The one write path of the `group_tags` table (Store.write transactions); the search index follows by trigger
(db/schema.py, migration 008). A tag is text of 1-64 characters without a comma (Browse's tag filter and the
slices' `tag` field list tags comma-separated); setting a tag a group has already replaces its note.
"""

from __future__ import annotations

import pandas as pd

from core.errors import CrosscheckError
from db.store import Store, now

MAX_TAG = 64


def _benchmark_id(store: Store, benchmark: str) -> int:
    row = store.conn.execute("SELECT id FROM benchmarks WHERE name = ?", (benchmark,)).fetchone()
    if row is None:
        raise CrosscheckError(f"no benchmark {benchmark!r} in the store")
    return int(row[0])


def clean_tag(tag: str | None) -> str:
    """The tag as stored (trimmed), or an error saying what is wrong with it."""
    text = (tag or "").strip()
    if not text:
        raise CrosscheckError("tag: give the tag a name")
    if len(text) > MAX_TAG or "," in text or any(c in text for c in "\n\r\t"):
        raise CrosscheckError(f"tag {text[:80]!r}: at most {MAX_TAG} characters, no comma, tab or line break")
    return text


def set_tag(store: Store, benchmark: str, group_id: str, tag: str, note: str | None = None, by: str = "") -> None:
    """Tag group `group_id` of `benchmark` (its note replaced when it has the tag already)."""
    bid = _benchmark_id(store, benchmark)
    name = clean_tag(tag)
    with store.write() as conn:
        if conn.execute("SELECT 1 FROM items WHERE benchmark_id = ? AND group_id = ? LIMIT 1",
                        (bid, group_id)).fetchone() is None:
            raise CrosscheckError(f"no group {group_id!r} in benchmark {benchmark!r}")
        conn.execute("INSERT INTO group_tags (benchmark_id, group_id, tag, note, by, created) VALUES (?, ?, ?, ?, ?, ?)"
                     " ON CONFLICT (benchmark_id, group_id, tag) DO UPDATE SET note = excluded.note, by = excluded.by,"
                     " created = excluded.created", (bid, group_id, name, (note or "").strip() or None, by or "", now()))


def remove_tag(store: Store, benchmark: str, group_id: str, tag: str) -> bool:
    """Take `tag` off the group; False when it did not have it."""
    bid = _benchmark_id(store, benchmark)
    with store.write() as conn:
        cur = conn.execute("DELETE FROM group_tags WHERE benchmark_id = ? AND group_id = ? AND tag = ?",
                           (bid, group_id, clean_tag(tag)))
    return bool(cur.rowcount)


def tags_frame(store: Store, benchmark: str) -> pd.DataFrame:
    """Every tag of the benchmark's groups: group_id, tag, note, by, created (by group, then tag)."""
    bid = _benchmark_id(store, benchmark)
    rows = store.conn.execute("SELECT group_id, tag, note, by, created FROM group_tags WHERE benchmark_id = ?"
                              " ORDER BY group_id, tag", (bid,)).fetchall()
    return pd.DataFrame(rows, columns=["group_id", "tag", "note", "by", "created"])


def tag_names(store: Store, benchmark: str) -> list[str]:
    """The benchmark's tags, sorted."""
    return sorted(set(tags_frame(store, benchmark)["tag"]))


def groups_with_tag(store: Store, benchmark: str, tag: str) -> set[str]:
    frame = tags_frame(store, benchmark)
    return set(frame.loc[frame["tag"] == tag, "group_id"])


def tag_fields(store: Store, benchmark: str, group_ids: pd.Series) -> dict[str, pd.Series]:
    """Per tag, a slice field over items (their group ids given): `tag:NAME` is "tagged" on the items of the groups
    with the tag and None elsewhere, so the slice "tagged" stands against every other item (core.slices)."""
    frame = tags_frame(store, benchmark)
    out = {}
    for name, rows in frame.groupby("tag"):
        tagged = set(rows["group_id"])
        out[f"tag:{name}"] = pd.Series(["tagged" if g in tagged else None for g in group_ids], dtype=object)
    return out
