"""The one labels repository (db/labels.py, issue 17 point 2): the Judge tab's saves and `import-labels` write
through the same upsert, so both leave the same rows and the same audit trail, and nothing else in the code
writes the `labels` or `label_audit` tables."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import copy_store

from core.errors import ImportRefused
from db import judging
from db import labels as dbl
from db.importers import import_labels
from db.store import Store

RUN = "synth-sb-binder-weak"
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def sb(demo_db, tmp_path):
    store = Store(copy_store(demo_db, tmp_path / "s"))
    yield store
    store.close()


def _key(store: Store, i: int = 0) -> tuple[str, int, int]:
    row = judging.trace_records(store, RUN).iloc[i]
    return str(row["item_id"]), int(row["rotation"]), int(row["repeat"])


def _import(store: Store, path: Path, lines: list[dict]) -> int:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return import_labels(store, path, RUN).rows


def _line(key: tuple[str, int, int], who: str, flags: list[int], **extra) -> dict:
    return {"item_id": key[0], "rotation": key[1], "repeat": key[2], "annotator": who,
            **dict(zip(("S1", "S2", "S3", "S4"), flags, strict=True)), **extra}


@pytest.mark.parametrize("first, second, rows, audit_rows, final_s2, changed_by", [
    # (how the label is written first, then second; rows written by the second; audit rows; S2 at the end)
    ("ui", "ui-same", 0, 1, 1, ["ann"]),
    ("ui", "import-other", 1, 2, 0, ["ann", "import:l.jsonl"]),
    ("import", "ui-other", 1, 2, 0, ["import:l.jsonl", "ann"]),
    ("import", "import-same", 0, 1, 1, ["import:l.jsonl"]),
])
def test_ui_save_and_import_share_one_write_path(sb, tmp_path, first, second, rows, audit_rows, final_s2,
                                                  changed_by):
    key = _key(sb)
    same, other = [1, 1, 0, 0], [1, 0, 0, 0]

    def write(how: str) -> int:
        flags = other if how.endswith("other") else same
        if how.startswith("ui"):
            return int(dbl.save_label(sb, RUN, key, "ann", dict(zip(("S1", "S2", "S3", "S4"), flags, strict=True)))
                       ["status"] == "saved")
        ff = "S2" if how.endswith("other") else "S3"  # an import keeps the first failure its file states
        return _import(sb, tmp_path / "l.jsonl", [_line(key, "ann", flags, first_failure=ff)])

    assert write(first) == 1
    assert write(second) == rows
    audit = dbl.audit_frame(sb, RUN, "ann")
    assert len(audit) == audit_rows
    assert list(audit["changed_by"]) == changed_by
    lab = dbl.label_of(sb, RUN, key, "ann")
    assert lab["S2"] == final_s2 and lab["kind"] == "human"
    # the stored first failure is the S1 -> S4 rule's on both paths
    assert lab["first_failure"] == ("S3" if final_s2 else "S2")
    # each audit row's `new` is the row as written
    assert audit.iloc[-1]["new"] == {k: lab[k] for k in dbl.LABEL_FIELDS}


def test_import_may_replace_a_judge_row_an_annotator_may_not(sb, tmp_path):
    key = _key(sb, 1)
    assert _import(sb, tmp_path / "l.jsonl", [_line(key, "gpt", [1, 1, 1, 1], kind="judge")]) == 1
    with pytest.raises(dbl.LabelForbidden):
        dbl.save_label(sb, RUN, key, "gpt", {"S1": 0, "S2": 0, "S3": 0, "S4": 0})
    assert dbl.label_of(sb, RUN, key, "gpt")["S1"] == 1
    assert _import(sb, tmp_path / "l.jsonl", [_line(key, "gpt", [0, 0, 0, 0], kind="judge", first_failure="S1")]) == 1
    lab = dbl.label_of(sb, RUN, key, "gpt")
    assert (lab["S1"], lab["kind"], lab["first_failure"]) == (0, "judge", "S1")
    # a file without a first failure is stored as it says (nothing typed or imported is changed)
    assert _import(sb, tmp_path / "l.jsonl", [_line(key, "gpt", [0, 0, 0, 0], kind="judge")]) == 1
    assert dbl.label_of(sb, RUN, key, "gpt")["first_failure"] is None
    assert len(dbl.audit_frame(sb, RUN, "gpt")) == 3


def test_refused_import_writes_nothing(sb, tmp_path):
    key = _key(sb)
    with pytest.raises(ImportRefused, match=r"l.jsonl:2: item_id: duplicate label by 'ann' \(first on line 1\)"):
        _import(sb, tmp_path / "l.jsonl", [_line(key, "ann", [1, 1, 1, 1]), _line(key, "ann", [0, 0, 0, 0])])
    assert sb.conn.execute("SELECT COUNT(*) FROM labels").fetchone()[0] == 0
    assert sb.conn.execute("SELECT COUNT(*) FROM label_audit").fetchone()[0] == 0


def test_records_reimport_unchanged(sb, tmp_path):
    keys = [_key(sb, i) for i in range(3)]
    _import(sb, tmp_path / "l.jsonl", [_line(k, "bob", [1, 0, 0, 0], note="n") for k in keys])
    dbl.save_label(sb, RUN, keys[0], "ann", {"S1": 1, "S2": 1, "S3": 1, "S4": 0}, category="rule_mutation")
    recs = list(dbl.records(sb, RUN))
    assert len(recs) == 4
    assert {(r["annotator"], r["kind"]) for r in recs} == {("bob", "human"), ("ann", "human")}
    ann = next(r for r in recs if r["annotator"] == "ann")
    assert (ann["first_failure"], ann["category"], ann["S4"]) == ("S4", "rule_mutation", 0)
    res = import_labels(sb, _write(tmp_path / "back.jsonl", recs), RUN)
    assert res.rows == 0 and res.report.counts == {"labels": 0, "unchanged": 4}


def _write(path: Path, recs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return path


def test_only_the_repository_writes_labels():
    writes = re.compile(r"\b(INSERT (OR \w+ )?INTO|UPDATE|DELETE FROM) (labels|label_audit)\b")
    found = sorted(str(p.relative_to(ROOT)) for d in ("core", "db", "ui") for p in (ROOT / d).rglob("*.py")
                   if writes.search(p.read_text(encoding="utf-8")))
    assert found == ["db/labels.py"]
    assert "app.py" not in found and not writes.search((ROOT / "app.py").read_text(encoding="utf-8"))
