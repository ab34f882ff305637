"""The labels import (SPEC §3): stage labels (human or judge) of a run's traces from a labels JSONL, checked
whole and written through the one labels repository (db/labels.py, which keeps each change in label_audit).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from core.errors import NotFound
from core.formats import parse_label
from core.report import Report
from core.schema import STAGES
from db import labels as dbl
from db import predictions
from db.import_common import ImportResult, json_lines, read_text, refuse
from db.store import Store


def import_labels(store: Store, path: str | os.PathLike[str], run: str) -> ImportResult:
    """Import stage labels (human or judge) for the traces of run `run`; changes are kept in label_audit."""
    path = Path(path)
    name = path.name
    report = Report()
    text = read_text(path, report)
    labels = []
    if text is not None:
        for no, obj in json_lines(text, name, report):
            lab = parse_label(obj, name, no, report)
            if lab is not None:
                labels.append(lab)
    try:
        r = store.run(run)
    except NotFound as exc:
        report.error(name, 0, "--run", str(exc))
        refuse(report)
        raise
    run_id = r["id"]
    keys = store.item_keys(int(store.benchmark(r["benchmark"])["id"]))
    present = predictions.keys(store, run_id)
    seen: dict[tuple[Any, ...], int] = {}
    for lab in labels:
        info = keys.get(lab.item_id)
        if info is None:
            report.error(name, lab.line, "item_id", f"unknown item {lab.item_id!r} (not in benchmark {r['benchmark']!r})")
            continue
        if (info[0], lab.rotation, lab.repeat) not in present:
            report.error(name, lab.line, "item_id", f"run {run!r} has no trace for {lab.item_id!r} rotation "
                         f"{lab.rotation} repeat {lab.repeat}")
            continue
        key = (lab.item_id, lab.rotation, lab.repeat, lab.labeler)
        if key in seen:
            report.error(name, lab.line, "item_id", f"duplicate label by {lab.labeler!r} (first on line {seen[key]})")
        seen[key] = lab.line
    if not labels and report.ok:
        report.error(name, 0, "(file)", "no labels in the file")
    refuse(report)
    written = 0
    with store.write() as conn:
        for lab in labels:
            flags = [None if lab.flags[s] is None else int(bool(lab.flags[s])) for s in STAGES]
            new = {**dict(zip(STAGES, flags, strict=True)), "first_failure": lab.first_failure,
                   "category": lab.category, "note": lab.note, "kind": lab.kind}
            row_key = dbl.LabelKey(run_id, keys[lab.item_id][0], lab.rotation, lab.repeat, lab.labeler)
            written += dbl.upsert(conn, row_key, new, f"import:{name}")[0] == "saved"
    report.counts = {"labels": written, "unchanged": len(labels) - written}
    return ImportResult(run, written, written == 0, report)
