"""Small real stores for the server tests (API, faults, resources, soak): two benchmarks of two families, each with
two runs imported through the real importers."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import fe_lines, write_benchmark


def generic_lines(n_groups: int = 4, prefix: str = "gen") -> list[dict]:
    """A small valid generic benchmark: two items per group, four options."""
    lines = []
    for g in range(n_groups):
        for i in range(2):
            lines.append({"benchmark": "generic", "item_id": f"{prefix}-{g}-{i}", "group_id": f"{prefix}-{g}",
                          "split": "test", "kind": "colour" if i == 0 else "count", "images": [f"img/{g}.png"],
                          "question": f"question {g} {i}", "options": {"A": "a", "B": "b", "C": "c", "D": "d"},
                          "answer": "ABCD"[(g + i) % 4], "meta": {"source": "synthetic"}})
    return lines


def prediction_lines(items: list[dict], right_every: int, offset: int = 0) -> list[dict]:
    """Predictions of every item: right on every `right_every`-th item (from `offset`), else a wrong letter."""
    out = []
    for i, it in enumerate(items):
        gold = it["answer"]
        answer = gold if (i + offset) % right_every == 0 else next(x for x in "ABCD" if x != gold)
        out.append({"item_id": it["item_id"], "response": f"The answer is {answer}.", "answer": answer})
    return out


def write_jsonl(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    return path


def two_benchmarks(folder: Path) -> Path:
    """A store at folder/store/two.db: benchmark `fe` (FrameEvidence) with runs fe-a, fe-b and benchmark `gen`
    (generic) with runs gen-a, gen-b."""
    from db.importers import import_items, import_predictions
    from db.store import Store

    store = Store(folder / "store" / "two.db")
    try:
        for bench, items in (("fe", fe_lines(n_fq1=3, n_fq2=3)), ("gen", generic_lines())):
            import_items(store, write_benchmark(folder / bench, items), name=bench)
            for run, every, offset in ((f"{bench}-a", 2, 0), (f"{bench}-b", 2, 1)):
                path = write_jsonl(folder / f"{run}.jsonl", prediction_lines(items, every, offset))
                import_predictions(store, path, run, model=run)
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        store.close()
    return folder / "store" / "two.db"


def add_traced_run(db: Path, folder: Path) -> tuple[str, list[str]]:
    """Benchmark `sb` (StemBind, the family whose traces are labelled stage by stage) with run `sb-a`, a trace on
    each F item, in the store at `db`; returns (the run, its F item ids)."""
    from test_import_fast import stembind_lines

    from db.importers import import_items, import_predictions
    from db.store import Store

    items = stembind_lines(8)
    store = Store(db)
    try:
        import_items(store, write_benchmark(folder / "sb", items), name="sb")
        lines = prediction_lines(items, 2)
        for line, it in zip(lines, items, strict=True):
            line["response"] = f"<ANSWER>{line.pop('answer')}</ANSWER>"
            if it["kind"] == "F":
                line["trace"] = "The scene shows a grid; the rule shifts right; the cell binds to the option."
        import_predictions(store, write_jsonl(folder / "sb-a.jsonl", lines), "sb-a", model="sb-a")
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        store.close()
    return "sb-a", [it["item_id"] for it in items if it["kind"] == "F"]
