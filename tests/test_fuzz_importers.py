"""Fuzzing of every importer (issue 26 point 4), through their public entry points (db.importers.import_items,
import_predictions, import_labels) on a real store, with files of the real shapes mutated by hypothesis: items
JSONL and zip, predictions JSONL and CSV, VLMEvalKit's TSV and xlsx, lmms-eval samples, a Hugging Face parquet
file, labels. Whatever the mutation: never a traceback (an import succeeds or raises one of the product's named
errors), never a partial write (a refused import leaves every table as it was), and every refusal names the
file, and each of its problems a line (0: the file as a whole).

Bounded and reproducible: a fixed number of examples per importer, derandomized, no deadline.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import fe_lines, write_benchmark
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serverstores import prediction_lines
from test_import_foreign import (  # noqa: E501
    blink_table,
    lmms_samples,
    mmbench_rows,
    prediction_table,
    write_tsv,
    write_xlsx,
)

from core.errors import CrosscheckError, ImportRefused
from db.importers import import_items, import_labels, import_predictions
from db.store import Store

FUZZ = settings(max_examples=20, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])
TABLES = ("benchmarks", "items", "images", "runs", "predictions", "labels", "label_audit")
_names = itertools.count()

# ---------------------------------------------------------------------------------------------- mutations

PRINTABLE = st.characters(blacklist_categories=("Cc", "Cs"))  # what a spreadsheet cell can hold

VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 2**70), st.floats(allow_nan=True, allow_infinity=True),
                   st.text(max_size=6), st.sampled_from(["", "A", "Z", "S5", "test", "train", "../x.png", "é"]),
                   st.lists(st.integers(-1, 5), max_size=3), st.dictionaries(st.text(max_size=2), st.integers(),
                                                                             max_size=2))


@st.composite
def mutated_text(draw: Any, text: str, json_lines: bool) -> str:
    """`text` with one to three line-level edits: a JSON value replaced or a key dropped (JSON lines), a line
    dropped, doubled, cut short, blanked or garbled, or the whole file cut at some byte."""
    lines = text.splitlines()
    for _ in range(draw(st.integers(1, 3))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        ops = ["drop", "dup", "cut", "blank", "garble", "truncate"] + (["value", "value", "key"] if json_lines else
                                                                        ["cell", "cell"])
        op = draw(st.sampled_from(ops))
        if op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "cut":
            lines[i] = lines[i][: draw(st.integers(0, max(0, len(lines[i]) - 1)))]
        elif op == "blank":
            lines[i] = draw(st.sampled_from(["", " ", "\t", "null", "[]", "{}", '"x"', "\x00"]))
        elif op == "garble":
            at = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:at] + draw(st.text(min_size=1, max_size=4)) + lines[i][at:]
        elif op == "truncate":
            return "\n".join(lines)[: draw(st.integers(0, len(text)))]
        elif op == "cell":
            cells = lines[i].split("\t" if "\t" in lines[i] else ",")
            j = draw(st.integers(0, len(cells) - 1))
            cells[j] = draw(st.sampled_from(["", "x", "-1", "1e309", "nan", '"', "A,B", "[1,", "None"]))
            lines[i] = ("\t" if "\t" in lines[i] else ",").join(cells)
        else:
            try:
                obj = json.loads(lines[i])
            except ValueError:
                continue
            if not isinstance(obj, dict) or not obj:
                continue
            key = draw(st.sampled_from(sorted(obj)))
            if op == "key":
                del obj[key]
            else:
                obj[key] = draw(VALUES)
            lines[i] = json.dumps(obj, ensure_ascii=False, allow_nan=True)
    return "\n".join(lines) + "\n"


@st.composite
def mutated_bytes(draw: Any, data: bytes) -> bytes:
    """A binary file with a byte flipped, a span zeroed, or cut short."""
    op = draw(st.sampled_from(["flip", "zero", "cut"]))
    at = draw(st.integers(0, 9999)) * len(data) // 10_000  # a share of the length: xlsx files differ in length
    if op == "cut":
        return data[:at]
    if op == "zero":
        return data[:at] + b"\x00" * min(64, len(data) - at) + data[at + 64:]
    return data[:at] + bytes([data[at] ^ (1 << draw(st.integers(0, 7)))]) + data[at + 1:]


@st.composite
def mutated_records(draw: Any, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Table rows (xlsx, parquet) with a cell replaced, a column dropped or a row dropped or doubled."""
    rows = [dict(r) for r in records]
    for _ in range(draw(st.integers(1, 2))):
        i = draw(st.integers(0, len(rows) - 1))
        op = draw(st.sampled_from(["cell", "cell", "column", "row", "dup"]))
        key = draw(st.sampled_from(sorted(rows[i])))
        if op == "cell":
            rows[i][key] = draw(st.one_of(st.none(), st.text(PRINTABLE, max_size=5), st.integers(-2, 2**40),
                                          st.sampled_from(["", "Z", "(E)", "[1, 2]", "1e309"])))
        elif op == "column":
            for r in rows:
                r.pop(key, None)
        elif op == "row" and len(rows) > 1:
            del rows[i]
        elif op == "dup":
            rows.insert(i, dict(rows[i]))
    return rows


# ---------------------------------------------------------------------------------------------- the check


def counts(store: Store) -> dict[str, int]:
    return {t: int(store.conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]) for t in TABLES}


def attempt(store: Store, path: Path, do: Callable[[], Any]) -> None:
    """Run one import of the mutated `path`: a success, or a named error that wrote nothing and names the file
    (and, for each problem of a refused file, a line)."""
    before = counts(store)
    try:
        do()
    except ImportRefused as exc:
        assert counts(store) == before, f"a refused import of {path.name} wrote rows"
        assert path.name in str(exc), str(exc)
        errors = exc.report.errors  # type: ignore[attr-defined]
        assert errors, str(exc)
        for issue in errors:
            assert issue.file and path.stem.split(".")[0] in issue.file and isinstance(issue.line, int), issue
            assert issue.line >= 0 and "Traceback" not in issue.message, issue
    except CrosscheckError as exc:
        assert counts(store) == before, f"a refused import of {path.name} wrote rows ({exc})"
        assert str(exc).strip() and "\n" not in str(exc), str(exc)
    assert store.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert not store.conn.in_transaction


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@pytest.fixture(scope="module")
def store(folder):
    """One store for the module: benchmark fe (FrameEvidence) with run fe-a, and the MMBench-style TSV as mmb."""
    s = Store(folder / "store" / "fuzz.db")
    items = fe_lines(n_fq1=2, n_fq2=2)
    import_items(s, write_benchmark(folder / "fe", items), name="fe")
    preds = folder / "fe-a.jsonl"
    preds.write_text("".join(json.dumps(p) + "\n" for p in prediction_lines(items, 2)), encoding="utf-8")
    import_predictions(s, preds, "fe-a", model="m")
    import_items(s, write_tsv(folder / "MMBench_DEV_EN.tsv", mmbench_rows()), name="mmb")
    yield s
    s.close()


def fresh(folder: Path, name: str) -> Path:
    path = folder / f"x{next(_names)}" / name
    path.parent.mkdir()
    return path


FE_TEXT = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in fe_lines(n_fq1=2, n_fq2=2, prefix="z"))


# ---------------------------------------------------------------------------------------------- items


@FUZZ
@given(text=mutated_text(FE_TEXT, json_lines=True))
def test_items_jsonl(store, folder, text):
    base = write_benchmark(fresh(folder, "src"), fe_lines(n_fq1=2, n_fq2=2, prefix="z"))
    path = base.parent / "items.jsonl"
    path.write_text(text, encoding="utf-8")
    attempt(store, path, lambda: import_items(store, path, name=f"b{next(_names)}"))


@FUZZ
@given(text=mutated_text(FE_TEXT, json_lines=True), cut=st.one_of(st.none(), st.integers(0, 400)))
def test_items_zip(store, folder, text, cut):
    src = write_benchmark(fresh(folder, "src"), fe_lines(n_fq1=2, n_fq2=2, prefix="z")).parent
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("items.jsonl", text)
        for png in sorted((src / "img").glob("*.png")):
            z.write(png, f"img/{png.name}")
    data = buf.getvalue()
    path = src.parent / "bench.zip"
    path.write_bytes(data if cut is None else data[: len(data) - cut])
    attempt(store, path, lambda: import_items(store, path, name=f"b{next(_names)}"))


def _tsv_text() -> str:
    out = io.StringIO()
    cols = ["index", "question", "hint", "A", "B", "C", "D", "answer", "category", "l2-category", "split", "image",
            "source"]
    w = csv.DictWriter(out, fieldnames=cols, delimiter="\t", lineterminator="\n")
    w.writeheader()
    for r in mmbench_rows():
        w.writerow({c: r.get(c, "") for c in cols})
    return out.getvalue()


@FUZZ
@given(text=mutated_text(_tsv_text(), json_lines=False))
def test_vlmevalkit_tsv_items(store, folder, text):
    path = fresh(folder, "MMBench_DEV_EN.tsv")
    path.write_text(text, encoding="utf-8")
    attempt(store, path, lambda: import_items(store, path, name=f"b{next(_names)}"))


def _parquet_records() -> list[dict[str, Any]]:
    return blink_table().to_pylist()


@FUZZ
@given(rows=mutated_records(_parquet_records()), flip=st.booleans(), data=st.data())
def test_hugging_face_parquet_items(store, folder, rows, flip, data):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = fresh(folder, "val-00000-of-00001.parquet")
    try:
        table = pa.Table.from_pylist(rows)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # a mix of types pyarrow cannot store: the original schema's
        table = blink_table()
    pq.write_table(table, path)
    if flip:
        path.write_bytes(data.draw(mutated_bytes(path.read_bytes())))
    attempt(store, path, lambda: import_items(store, path, name=f"b{next(_names)}"))


# ---------------------------------------------------------------------------------------------- predictions

PRED_TEXT = "".join(json.dumps(p) + "\n" for p in prediction_lines(fe_lines(n_fq1=2, n_fq2=2), 3))


@FUZZ
@given(text=mutated_text(PRED_TEXT, json_lines=True))
def test_predictions_jsonl(store, folder, text):
    path = fresh(folder, "preds.jsonl")
    path.write_text(text, encoding="utf-8")
    attempt(store, path, lambda: import_predictions(store, path, f"r{next(_names)}", model="m", benchmark="fe"))


def _csv_text() -> str:
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=["item_id", "response", "answer"], lineterminator="\n")
    w.writeheader()
    for p in prediction_lines(fe_lines(n_fq1=2, n_fq2=2), 3):
        w.writerow(p)
    return out.getvalue()


@FUZZ
@given(text=mutated_text(_csv_text(), json_lines=False))
def test_predictions_csv(store, folder, text):
    path = fresh(folder, "preds.csv")
    path.write_text(text, encoding="utf-8")
    attempt(store, path, lambda: import_predictions(store, path, f"r{next(_names)}", model="m", benchmark="fe"))


def _xlsx_records() -> list[dict[str, Any]]:
    return prediction_table()


@FUZZ
@given(rows=mutated_records(_xlsx_records()), flip=st.booleans(), data=st.data())
def test_vlmevalkit_xlsx_predictions(store, folder, rows, flip, data):
    path = fresh(folder, "model_MMBench_DEV_EN.xlsx")
    write_xlsx(path, rows if rows and rows[0] else _xlsx_records())
    if flip:
        path.write_bytes(data.draw(mutated_bytes(path.read_bytes())))
    attempt(store, path, lambda: import_predictions(store, path, f"r{next(_names)}", model="m", benchmark="mmb"))


LMMS_TEXT = "".join(json.dumps(o) + "\n" for o in lmms_samples(prediction_table()))


@FUZZ
@given(text=mutated_text(LMMS_TEXT, json_lines=True))
def test_lmms_eval_samples(store, folder, text):
    path = fresh(folder, "samples_mmbench.jsonl")
    path.write_text(text, encoding="utf-8")
    attempt(store, path, lambda: import_predictions(store, path, f"r{next(_names)}", model="m", benchmark="mmb",
                                                    fmt="lmms-eval"))


# ---------------------------------------------------------------------------------------------- labels

LABEL_TEXT = "".join(json.dumps({"item_id": line["item_id"], "annotator": "ann", "S1": 1, "S2": n % 2, "S3": 0,
                                 "category": None, "note": "seen"}) + "\n"
                     for n, line in enumerate(fe_lines(n_fq1=2, n_fq2=2)))


@FUZZ
@given(text=mutated_text(LABEL_TEXT, json_lines=True))
def test_labels(store, folder, text):
    path = fresh(folder, "labels.jsonl")
    path.write_text(text, encoding="utf-8")
    attempt(store, path, lambda: import_labels(store, path, "fe-a"))


def test_the_seeds_import(store, folder):
    """The unmutated files import (so the fuzzing starts from valid files, and a mutation is what breaks them)."""
    path = fresh(folder, "labels.jsonl")
    path.write_text(LABEL_TEXT, encoding="utf-8")
    assert import_labels(store, path, "fe-a").report.ok
    path = fresh(folder, "preds.csv")
    path.write_text(_csv_text(), encoding="utf-8")
    assert import_predictions(store, path, "seed-csv", model="m", benchmark="fe").report.ok
    path = fresh(folder, "samples_mmbench.jsonl")
    path.write_text(LMMS_TEXT, encoding="utf-8")
    assert import_predictions(store, path, "seed-lmms", model="m", benchmark="mmb", fmt="lmms-eval").report.ok
