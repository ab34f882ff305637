"""Issue 40: `app.py open PATH...` and Inspect AI logs.

The Inspect logs are written by inspect_ai itself (tests/inspect_logs.py: its `mockllm` model and its own
recorders, offline); VLMEvalKit's work dir is laid out as its run.py lays it out
(`outputs/<model>/T<date>_G<commit>/<model>_<dataset>.xlsx`, with the model folder's link to the latest one) with
the prediction tables and dataset TSVs of tests/test_import_foreign.py (VLMEvalKit's columns); lmms-eval's output
folder as its evaluation tracker writes it (`<model>/<date>_results.json`, `<date>_samples_<task>.jsonl`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, run_cli
from test_import_foreign import (
    lmms_samples,
    mmbench_rows,
    prediction_table,
    write_jsonl,
    write_tsv,
    write_xlsx,
)

from db.open import open_paths
from db.store import Store

DATASET = "MMBench_DEV_EN"


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("inspect")
    subprocess.run([sys.executable, str(ROOT / "tests" / "inspect_logs.py"), str(out)], check=True, timeout=300,
                   capture_output=True)
    return out


def expected(logs: Path) -> dict:
    return json.loads((logs / "expected.json").read_text())


def open_json(db: Path, *paths: Path | str, extra: tuple[str, ...] = ()) -> tuple[int, dict]:
    proc = run_cli("open", *map(str, paths), "--json", *extra, db=db, timeout=300)
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def correctness(store: Store, run: str) -> dict[str, bool]:
    """Crosscheck's reading of each prediction: "item/epoch" -> correct."""
    data = store.run_data(run)
    gold = {it.item_id: it.answer for it in store.items(data.benchmark)}
    return {f"{i}/{int(r) + 1}": bool(s == "ok" and a == gold[i])
            for i, r, s, a in zip(data.preds["item_id"], data.preds["repeat"], data.preds["status"],
                                  data.preds["answer"], strict=True)}


# ---- Inspect logs -------------------------------------------------------------------------------------------


def test_each_sample_reads_as_inspect_scored_it_and_epochs_are_repeats(logs, tmp_path):
    db = tmp_path / "s.db"
    rc, got = open_json(db, logs / "mc.eval", logs / "mc.json")
    assert rc == 0 and got["refused"] == [] and got["skipped"] == []
    assert [b["name"] for b in got["benchmarks"]] == ["mc"]  # both logs' items agree: one benchmark
    runs = {r["source"].rsplit("/", 1)[-1]: r for r in got["runs"]}
    assert {r["benchmark"] for r in got["runs"]} == {"mc"}
    store = Store(db)
    for file, scores in expected(logs).items():
        run = runs[file]
        assert run["predictions"] == 8 and run["inspect"]["differ"] == 0
        mine = correctness(store, run["name"])
        assert mine == {k: v == "C" for k, v in scores.items()}  # Inspect's own score, sample by sample
        assert set(store.run_data(run["name"]).preds["repeat"]) == {0, 1}  # two epochs, two repeats
    assert {r["model"] for r in got["runs"]} == {"mockllm/model", "mockllm/other"}
    config = store.run(runs["mc.eval"]["name"])["config"]
    assert config["inspect"]["task"] == "mc" and config["inspect"]["scores"]["choice"]["accuracy"] == 0.5


def test_sample_fields_become_items_and_predictions(logs, tmp_path):
    db = tmp_path / "s.db"
    run_cli("open", str(logs / "mc.eval"), "--no-serve", db=db, check=True)
    store = Store(db)
    items = {it.item_id: it for it in store.items("mc")}
    q1 = items["q1"]
    assert q1.question == "What colour is the square?" and len(q1.images) == 1  # the data URI's image
    assert q1.options == {"A": "green", "B": "red", "C": "blue"} and q1.answer == "B"
    assert q1.group_id == "colour" and q1.meta["source"] == "fixture"  # metadata group_id -> group, meta kept
    assert items["q2"].group_id == items["q3"].group_id == "maths"
    assert items["q4"].group_id == "q4"  # no group key: one group per sample
    run = store.runs("mc")[0]["name"]
    preds = store.run_data(run).preds
    traces = set(preds["trace"].dropna())
    assert traces == {"The square is red, the second option."}  # the output's reasoning -> trace
    from db.foreign import prediction_sources

    kept = prediction_sources(store, run)
    assert kept["q1"]["tool"] == "inspect" and kept["q1"]["score"] == "C" and kept["q1"]["hit"] == 1


def test_group_by_names_the_metadata_field(logs, tmp_path):
    db = tmp_path / "s.db"
    proc = run_cli("import", str(logs / "mc.eval"), "--name", "g", "--group-by", "source", db=db)
    assert proc.returncode == 2 and "has no field 'source' to group by" in proc.stderr
    proc = run_cli("import", str(logs / "mc.eval"), "--name", "g", "--group-by", "group_id", db=db)
    assert proc.returncode == 2 and "q4" in proc.stderr  # the sample without it is named


def test_import_and_import_predictions_take_the_log(logs, tmp_path):
    db = tmp_path / "s.db"
    run_cli("import", str(logs / "mc.eval"), "--name", "mcb", db=db, check=True)
    proc = run_cli("import-predictions", str(logs / "mc.json"), "--run", "other", "--benchmark", "mcb", db=db,
                   check=True)
    assert "8 predictions written" in proc.stdout
    assert Store(db).run("other")["model"] == "mockllm/other"  # the log's model when --model is not given
    proc = run_cli("import-predictions", str(logs / "mc.eval"), "--run", "x", "--format", "jsonl", db=db)
    assert proc.returncode == 2 and "zip archive" in proc.stderr and "UTF-8" not in proc.stderr.split("zip")[0]


def test_json_keeps_its_four_lists_and_warns_on_stderr(logs, tmp_path):
    proc = run_cli("open", str(logs / "cancelled.eval"), "--json", db=tmp_path / "s.db")
    assert set(json.loads(proc.stdout)) == {"benchmarks", "runs", "skipped", "refused"}
    assert "warning: cancelled.eval: status: the eval was cancelled" in proc.stderr


def test_cancelled_and_running_logs_import_what_they_hold(logs, tmp_path):
    db = tmp_path / "s.db"
    proc = run_cli("open", str(logs / "mc.eval"), str(logs / "cancelled.eval"), str(logs / "running.eval"),
                   "--no-serve", db=db)
    assert proc.returncode == 0, proc.stderr
    assert "cancelled: imported the 3 samples it holds" in proc.stderr
    assert "still running or was killed (no header.json): imported the 2 samples it holds" in proc.stderr
    runs = {r["name"]: r["n_predictions"] for r in Store(db).runs("mc")}
    assert sorted(runs.values()) == [2, 3, 8]


# ---- folders ------------------------------------------------------------------------------------------------


def predictions_of(who: str) -> list[dict[str, object]]:
    """The fixture's prediction table, its responses signed by `who` (each model's file has its own content)."""
    rows = prediction_table()
    for r in rows:
        r["prediction"] = f"{r['prediction']} ({who})"
    return rows


def vlmevalkit_tree(root: Path) -> tuple[Path, Path]:
    """outputs/ with two models: ModelA on two datasets in a T<date>_G<commit> folder (and the model folder's
    link to the latest table, as run.py makes it), ModelB on one in the flat layout beside an evaluation file;
    and LMUData with the datasets' TSVs."""
    data = root / "LMUData"
    data.mkdir(parents=True)
    write_tsv(data / f"{DATASET}.tsv", mmbench_rows())
    v11 = mmbench_rows()
    v11[0]["hint"] = "A newer version's hint."
    write_tsv(data / "MMBench_DEV_EN_V11.tsv", v11)
    out = root / "outputs"
    work = out / "ModelA" / "T20250101_Gabcdef12"
    work.mkdir(parents=True)
    for ds in (DATASET, "MMBench_DEV_EN_V11"):
        table = write_xlsx(work / f"ModelA_{ds}.xlsx", predictions_of(f"ModelA on {ds}"))
        os.symlink(table, out / "ModelA" / table.name)
    (out / "ModelB").mkdir()
    write_xlsx(out / "ModelB" / f"ModelB_{DATASET}.xlsx", predictions_of("ModelB"))
    (out / "ModelB" / f"ModelB_{DATASET}_acc.csv").write_text("split,Overall\ndev,0.5\n")
    write_xlsx(out / "ModelB" / f"ModelB_{DATASET}_gpt-4o_result.xlsx", predictions_of("ModelB's judge"))
    (out / "ModelB" / "notes.txt").write_text("a note\n")
    return out, data


def lmms_folder(root: Path) -> Path:
    folder = root / "lmms" / "llava__7b"
    folder.mkdir(parents=True)
    (folder / "2025-01-01T00-00-00.000_results.json").write_text(json.dumps(
        {"results": {DATASET: {"exact_match": 0.5}}, "config": {"model": "llava"}, "model_name": "llava-7b"}))
    write_jsonl(folder / f"2025-01-01T00-00-00.000_samples_{DATASET}.jsonl", lmms_samples(prediction_table()))
    return root / "lmms"


def test_a_mixed_folder_gives_the_benchmarks_and_runs_and_a_second_open_adds_nothing(logs, tmp_path):
    outputs, data = vlmevalkit_tree(tmp_path)
    lmms = lmms_folder(tmp_path)
    db = tmp_path / "s.db"
    rc, got = open_json(db, outputs, lmms, logs / "mc.eval", extra=("--data", str(data)))
    assert rc == 0, got["refused"]
    assert sorted(b["name"] for b in got["benchmarks"]) == [DATASET, "MMBench_DEV_EN_V11", "mc"]
    runs = {r["name"]: r["benchmark"] for r in got["runs"]}
    assert runs == {f"ModelA/{DATASET}": DATASET, "ModelA/MMBench_DEV_EN_V11": "MMBench_DEV_EN_V11",
                    "ModelB": DATASET, "llava-7b": DATASET, "mockllm/model": "mc"}
    skipped = {Path(s["path"]).name: s["reason"] for s in got["skipped"]}
    assert "notes.txt" in skipped and "not a format" in skipped["notes.txt"]
    assert "ModelB_MMBench_DEV_EN_acc.csv" in skipped
    assert "evaluation output for ModelB/ModelB_MMBench_DEV_EN.xlsx" in skipped[
        "ModelB_MMBench_DEV_EN_gpt-4o_result.xlsx"]
    assert "lmms-eval results summary" in skipped["2025-01-01T00-00-00.000_results.json"]
    assert "same content" in skipped[f"ModelA_{DATASET}.xlsx"]  # the model folder's link to the work folder's table
    counts = Store(db).counts()
    rc, again = open_json(db, outputs, lmms, logs / "mc.eval", extra=("--data", str(data)))
    assert rc == 0 and again["benchmarks"] == [] and again["runs"] == [] and again["refused"] == []
    assert all("already imported" in s["reason"] or "same content" in s["reason"] or "not a" in s["reason"]
               or "summary" in s["reason"] or "without the columns" in s["reason"] or "evaluation output" in s["reason"]
               for s in again["skipped"])
    assert Store(db).counts() == counts


def test_lmudata_is_where_vlmevalkit_keeps_the_datasets(tmp_path, monkeypatch):
    outputs, data = vlmevalkit_tree(tmp_path)
    (data / "MMBench_DEV_EN_V11.tsv").unlink()
    monkeypatch.setenv("LMUData", str(data))
    store = Store(tmp_path / "s.db")
    got = open_paths(store, [outputs], progress=False)
    assert {r["name"] for r in got.runs} == {f"ModelA/{DATASET}", "ModelB"}
    assert [Path(r["path"]).name for r in got.refused] == ["ModelA_MMBench_DEV_EN_V11.xlsx"]
    assert "MMBench_DEV_EN_V11.tsv is not among the files opened" in got.refused[0]["reason"]


def test_a_truncated_log_is_named_and_the_good_file_imported(logs, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    raw = (logs / "mc.eval").read_bytes()
    (folder / "broken.eval").write_bytes(raw[: len(raw) // 2])
    shutil.copy(logs / "mc.json", folder / "good.json")
    db = tmp_path / "s.db"
    rc, got = open_json(db, folder)
    assert rc == 1
    assert [Path(r["path"]).name for r in got["refused"]] == ["broken.eval"]
    assert "cannot be read" in got["refused"][0]["reason"]
    assert [r["model"] for r in got["runs"]] == ["mockllm/other"]
    proc = run_cli("open", str(folder), "--no-serve", db=tmp_path / "t.db")
    assert proc.returncode == 1 and "refused" in proc.stderr and "broken.eval" in proc.stderr


def test_items_that_disagree_with_a_benchmark_of_the_same_name_are_refused(tmp_path):
    rows = mmbench_rows()
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    write_tsv(a / f"{DATASET}.tsv", rows)
    rows[1]["question"] = "Is it day?"
    write_tsv(b / f"{DATASET}.tsv", rows)
    store = Store(tmp_path / "s.db")
    open_paths(store, [a], progress=False)
    got = open_paths(store, [b], progress=False)
    assert got.benchmarks == []
    assert f"item {rows[1]['index']!r} question" in got.refused[0]["reason"]


def test_a_zipped_folder_opens_like_the_folder(logs, tmp_path):
    import zipfile

    outputs, data = vlmevalkit_tree(tmp_path)
    zpath = tmp_path / "lab.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        for f in sorted(outputs.rglob("*.xlsx")):
            if not f.is_symlink():
                zf.write(f, f.relative_to(tmp_path))
        zf.write(data / f"{DATASET}.tsv", f"LMUData/{DATASET}.tsv")
        zf.write(logs / "mc.eval", "logs/mc.eval")
        zf.writestr("logs/figure.png", b"\x89PNG")
    store = Store(tmp_path / "s.db")
    got = open_paths(store, [zpath], progress=False)
    assert "an image (items files name the images they show)" in [s["reason"] for s in got.skipped]
    assert {r["name"] for r in got.runs} == {"ModelB", f"ModelA/{DATASET}", "mockllm/model"}
    assert [Path(r["path"]).name for r in got.refused] == ["ModelA_MMBench_DEV_EN_V11.xlsx"]


# ---- hostile logs -------------------------------------------------------------------------------------------


def _zip(path: Path, entries: dict[str, bytes]) -> Path:
    import zipfile

    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return path


HEADER = json.dumps({"version": 2, "status": "success", "eval": {"task": "t", "model": "m"}}).encode()


def _refusal(path: Path, tmp_path: Path) -> str:
    store = Store(tmp_path / f"{path.stem}.db")
    got = open_paths(store, [path], progress=False)
    assert got.runs == [] and got.benchmarks == [] and store.counts()["items"] == 0
    assert len(got.refused) == 1
    return got.refused[0]["reason"]


@pytest.mark.parametrize("member", ["../evil_epoch_1.json", "/abs/samples/x_epoch_1.json", "samples/../../x.json"])
def test_member_paths_out_of_the_log_are_refused(tmp_path, member):
    path = _zip(tmp_path / "evil.eval", {"header.json": HEADER, member: b"{}"})
    assert "absolute path or a '..'" in _refusal(path, tmp_path)


def test_an_entry_declared_over_the_limit_is_refused_unread(tmp_path):
    from core.foreign import inspect_log

    path = _zip(tmp_path / "big.eval", {"header.json": HEADER, "samples/1_epoch_1.json": b"{}"})
    _patch_member(path, "samples/1_epoch_1.json", size=inspect_log.MAX_ENTRY_BYTES + 1)
    assert "over the 268,435,456 byte limit of one entry" in _refusal(path, tmp_path)


def _patch_member(path: Path, member: str, size: int | None = None, method: int | None = None) -> None:
    """Rewrite what a zip records for `member` (local header and central directory): its uncompressed size, as a
    crafted bomb lies about it, and its compression method."""
    import struct
    import zipfile

    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(member)
    data = bytearray(path.read_bytes())
    if size is not None:
        struct.pack_into("<I", data, info.header_offset + 22, size)
    if method is not None:
        struct.pack_into("<H", data, info.header_offset + 8, method)
    pos = 0
    while (pos := data.find(b"PK\x01\x02", pos)) >= 0:
        name_len = struct.unpack_from("<H", data, pos + 28)[0]
        if data[pos + 46: pos + 46 + name_len] == member.encode():
            if size is not None:
                struct.pack_into("<I", data, pos + 24, size)
            if method is not None:
                struct.pack_into("<H", data, pos + 10, method)
        pos += 4
    path.write_bytes(bytes(data))


def _bomb(path: Path, method: str) -> Path:
    """A log whose sample entry records 2 bytes but expands to 64 MiB of zeros: deflate, or zstd (zip method 93,
    what current Inspect writes), the zstd frame stored and the method rewritten."""
    import zipfile

    import zstandard

    entry = "samples/1_epoch_1.json"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("header.json", HEADER)
        if method == "deflate":
            with zf.open(entry, "w") as out:
                for _ in range(64):
                    out.write(bytes(1 << 20))
        else:
            zf.writestr(entry, zstandard.ZstdCompressor().compress(bytes(64 << 20)), zipfile.ZIP_STORED)
    _patch_member(path, entry, size=2, method=93 if method == "zstd" else None)
    return path


@pytest.mark.parametrize(("method", "needle"), [("zstd", "expands past the 4,194,304 byte limit"),
                                                ("deflate", "the log is damaged")])
def test_a_zip_bomb_is_stopped_while_streaming_with_bounded_memory(tmp_path, monkeypatch, method, needle):
    """Stopped at the entry limit (4 MiB here) or at the size the zip records, whichever comes first, whatever
    the entry expands to; memory stays bounded by the limit."""
    import tracemalloc

    from core.foreign import inspect_log

    monkeypatch.setattr(inspect_log, "MAX_ENTRY_BYTES", 4 << 20)
    path = _bomb(tmp_path / "bomb.eval", method)
    tracemalloc.start()
    reason = _refusal(path, tmp_path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert needle in reason
    assert peak < 32 << 20


def test_json_nested_deeper_than_python_recurses_is_refused(tmp_path):
    deep = b"[" * 200_000 + b"]" * 200_000
    path = _zip(tmp_path / "deep.eval", {"header.json": HEADER, "samples/1_epoch_1.json": deep})
    assert "malformed JSON" in _refusal(path, tmp_path)
    doc = tmp_path / "deep.json"
    doc.write_bytes(b'{"version": 2, "status": "success", "eval": ' + deep + b"}")
    assert "malformed JSON" in _refusal(doc, tmp_path)


def test_open_without_a_path_serves_the_store_and_refuses_json(tmp_path):
    proc = run_cli("open", "--json", db=tmp_path / "s.db")
    assert proc.returncode == 2 and "open needs a PATH with --json or --no-serve" in proc.stderr
    assert not (tmp_path / "s.db").exists()
