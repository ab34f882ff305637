"""The rules of core/foreign/inspect_log.py one by one (issue 40), on EvalSample objects of Inspect's schema
(inspect_ai/log/_log.py) and small logs written here; the logs inspect_ai writes itself are in tests/test_open.py.
Also the rules of `open` that need no Inspect log: run names, a missing lmms-eval benchmark."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_import_foreign import (
    lmms_samples,
    mmbench_rows,
    prediction_table,
    write_jsonl,
    write_tsv,
    write_xlsx,
)

from core.foreign import inspect_log as il
from core.report import Report
from db.open import open_paths
from db.store import Store

SAMPLE = {"id": 7, "epoch": 2, "input": "Which?", "choices": ["red", "blue"], "target": "B",
          "metadata": {"group": "g", "k": 1}, "output": {"completion": "ANSWER: B", "usage": {"output_tokens": 3}},
          "scores": {"choice": {"value": "C", "answer": "B"}}}


def item(sample: dict, group_by: str | None = None) -> tuple[dict | None, Report]:
    report = Report()
    got = il.item_object(sample, "f.eval", 1, "generic", report, group_by)
    return (got[0] if got else None), report


@pytest.mark.parametrize(("target", "answer"), [("B", "B"), (["B"], "B"), ("blue", "B"), ("(B)", "B"), (1, "B")])
def test_target_forms_give_the_gold_letter(target, answer):
    got, report = item({**SAMPLE, "target": target})
    assert report.ok and got is not None and got["answer"] == answer


@pytest.mark.parametrize(("edit", "needle"), [
    ({"choices": None}, "has no choices"),
    ({"choices": [str(k) for k in range(9)]}, "more than the 8 letters"),
    ({"target": ["A", "B"]}, "expected one target, got 2"),
    ({"target": "purple"}, "sample '7'"),
    ({"input": [{"role": "user", "content": [{"type": "image", "image": "https://x.org/a.png"}]}]},
     "is a URL, which cannot be read offline"),
    ({"input": [{"role": "user", "content": [{"type": "image", "image": "data:image/png;base64,@@"}]}]},
     "not valid base64"),
])
def test_samples_that_cannot_be_items_are_reported(edit, needle):
    _got, report = item({**SAMPLE, **edit})
    assert not report.ok and needle in report.summary()


def test_the_group_and_the_question_and_attachments():
    got, _ = item(SAMPLE)
    assert got is not None and got["group_id"] == "g" and got["meta"] == {"group": "g", "k": 1}
    got, _ = item({**SAMPLE, "metadata": {"group_id": "a", "group": "b"}})
    assert got is not None and got["group_id"] == "a"  # group_id before group
    got, _ = item({**SAMPLE, "metadata": {}})
    assert got is not None and got["group_id"] == "7"  # its own group
    got, _ = item(SAMPLE, group_by="k")
    assert got is not None and got["group_id"] == "1"
    messages = [{"role": "system", "content": "You are terse."},
                {"role": "user", "content": [{"type": "text", "text": "attachment://t"}, {"type": "text", "text": "B?"}]}]
    got, _ = item({**SAMPLE, "input": messages, "attachments": {"t": "Look."}})
    assert got is not None and got["question"] == "Look.\nB?"  # the user's text parts, attachments resolved


def test_the_prediction_line_and_what_inspect_kept():
    line, kept = il.prediction_object(SAMPLE, "choice")
    assert line == {"item_id": "7", "response": "ANSWER: B", "repeat": 1, "tokens": 3}
    assert kept == {"score": "C", "hit": 1, "extracted": "B"}
    failed = {**SAMPLE, "output": {}, "error": {"message": "rate limited", "traceback": "..."}}
    line, _ = il.prediction_object(failed, "choice")
    assert line["status"] == "api_error" and line["error"] == "rate limited" and line["response"] == ""


@pytest.mark.parametrize(("value", "correct"), [("C", True), ("I", False), ("P", False), ("N", False), (1, True),
                                                 (1.0, True), (0.5, False), (True, True), ("yes", True),
                                                 ("1", True), ("0", False), ([1], None), ({"a": 1}, None)])
def test_inspect_scores_read_as_its_value_to_float_reads_them(value, correct):
    assert il.inspect_correct(value) is correct


def test_a_json_log_over_its_limit_is_refused_unread(tmp_path, monkeypatch):
    monkeypatch.setattr(il, "MAX_JSON_LOG_BYTES", 100)
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"version": 2, "status": "success", "eval": {"task": "t", "model": "m"},
                                "samples": [SAMPLE] * 3}))
    with pytest.raises(il.BadLog, match="over the 100 byte limit"):
        il.LogFile(path)


def test_a_chunked_sample_layout_is_named_not_taken_for_an_empty_log(tmp_path):
    import zipfile

    path = tmp_path / "chunked.eval"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("header.json", json.dumps({"version": 2, "status": "success", "eval": {"task": "t"}}))
        zf.writestr("samples/1_epoch_1/sample.json", "{}")
    with pytest.raises(il.BadLog, match="chunked layout"):
        il.LogFile(path)


# ---- open without Inspect logs ----------------------------------------------------------------------------


def test_run_names_tell_files_of_one_model_and_dataset_apart_and_keep_the_stores_names(tmp_path):
    data = tmp_path / "LMUData"
    data.mkdir()
    write_tsv(data / "MMB.tsv", mmbench_rows())
    for k, tag in enumerate(("T20250101_Gaaaaaaaa", "T20250102_Gbbbbbbbb")):
        work = tmp_path / "outputs" / "M" / tag
        work.mkdir(parents=True)
        rows = prediction_table()
        rows[0]["prediction"] = f"take {k}"
        write_xlsx(work / "M_MMB.xlsx", rows)
    store = Store(tmp_path / "s.db")
    got = open_paths(store, [tmp_path / "outputs"], data_dirs=[data], progress=False)
    assert sorted(r["name"] for r in got.runs) == ["M@T20250101_Gaaaaaaaa", "M@T20250102_Gbbbbbbbb"]
    other = tmp_path / "later" / "M"
    other.mkdir(parents=True)
    rows = prediction_table()
    rows[0]["prediction"] = "take 3"
    write_xlsx(other / "M_MMB.xlsx", rows)
    got = open_paths(store, [tmp_path / "later"], data_dirs=[data], progress=False)
    assert [r["name"] for r in got.runs] == ["M"]
    os.rename(other / "M_MMB.xlsx", other / "M_MMB.xlsx.bak")
    rows[0]["prediction"] = "take 4"
    write_xlsx(other / "M_MMB.xlsx", rows)
    got = open_paths(store, [other / "M_MMB.xlsx"], data_dirs=[data], progress=False)
    assert [r["name"] for r in got.runs] == ["M-2"]  # the store has M


def test_lmms_samples_without_their_benchmark_are_refused_with_the_reason(tmp_path):
    folder = tmp_path / "lmms" / "m"
    folder.mkdir(parents=True)
    write_jsonl(folder / "2025-01-01T00-00-00_samples_nosuch.jsonl", lmms_samples(prediction_table()))
    got = open_paths(Store(tmp_path / "s.db"), [tmp_path / "lmms"], progress=False)
    assert got.runs == [] and "no benchmark 'nosuch'" in got.refused[0]["reason"]
    assert Path(got.refused[0]["path"]).name.endswith("_samples_nosuch.jsonl")


def test_samples_as_lmms_evals_tracker_writes_them_open_by_doc_id(tmp_path):
    """Its evaluation tracker drops `doc` and `arguments`, and `resps` where they equal `filtered_resps`: the
    sample's doc_id is then its position in the benchmark's items."""
    data = tmp_path / "data"
    data.mkdir()
    write_tsv(data / "MMB.tsv", mmbench_rows())
    folder = tmp_path / "lmms" / "m"
    folder.mkdir(parents=True)
    samples = lmms_samples(prediction_table())
    for s in samples:
        s.pop("doc")
        s.pop("arguments")
        s.pop("resps")
    write_jsonl(folder / "2025-01-01T00-00-00_samples_MMB.jsonl", samples)
    store = Store(tmp_path / "s.db")
    got = open_paths(store, [data, tmp_path / "lmms"], progress=False)
    assert got.refused == [] and [(r["name"], r["predictions"]) for r in got.runs] == [("m", len(samples))]
    preds = store.run_data("m").preds
    assert list(preds["response"]) == [s["filtered_resps"][0] for s in samples]
