"""Fuzzing of the Inspect log readers (issue 40): a real log (tests/inspect_logs.py, written by inspect_ai) with
its bytes cut, flipped or spliced, and arbitrary JSON samples, through core.foreign.inspect_log and
db.inspect_log.read_log. Whatever the input: never a traceback (a log is read, or refused with the product's
BadLog / a report naming the file), never more than the stated entry limit in memory.

Bounded and reproducible: a fixed number of examples, derandomized, no deadline.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.foreign import inspect_log
from core.report import Report
from db.inspect_log import read_log

FUZZ = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("inspect")
    subprocess.run([sys.executable, str(ROOT / "tests" / "inspect_logs.py"), str(out)], check=True, timeout=300,
                   capture_output=True)
    return out


@st.composite
def mutated(draw: Any, data: bytes) -> bytes:
    """`data` with one to three edits: cut at a byte, bytes flipped, a span dropped or repeated."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 3))):
        what = draw(st.sampled_from(["cut", "flip", "drop", "repeat"]))
        if not out:
            break
        at = draw(st.integers(0, len(out) - 1))
        if what == "cut":
            del out[at:]
        elif what == "flip":
            for k in range(at, min(len(out), at + draw(st.integers(1, 8)))):
                out[k] ^= draw(st.integers(1, 255))
        else:
            end = min(len(out), at + draw(st.integers(1, 400)))
            span = bytes(out[at:end])
            if what == "drop":
                del out[at:end]
            else:
                out[at:at] = span
    return bytes(out)


def _read(path: Path) -> Report:
    report = Report()
    read_log(path, report)
    assert all(i.file == path.name for i in report.errors)
    return report


@FUZZ
@given(st.data())
def test_a_damaged_eval_log_is_read_or_refused_never_a_traceback(logs, tmp_path, data):
    raw = (logs / "mc.eval").read_bytes()
    path = tmp_path / "fuzz.eval"
    path.write_bytes(data.draw(mutated(raw)))
    _read(path)


@FUZZ
@given(st.data())
def test_a_damaged_json_log_is_read_or_refused_never_a_traceback(logs, tmp_path, data):
    raw = (logs / "mc.json").read_bytes()
    path = tmp_path / "fuzz.json"
    path.write_bytes(data.draw(mutated(raw)))
    _read(path)


JSON = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False) |
                    st.text(max_size=8) | st.sampled_from(["attachment://x", "data:image/png;base64,iVBOR", "A", "C"]),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
                        st.sampled_from(["id", "epoch", "input", "choices", "target", "metadata", "output", "scores",
                                         "error", "attachments", "role", "content", "type", "text", "image",
                                         "completion", "choices", "message", "reasoning", "usage", "value",
                                         "answer", "group_id"]), inner, max_size=6), max_leaves=30)


@FUZZ
@given(JSON, st.sampled_from([None, "group_id", "x"]))
def test_any_sample_object_is_an_item_a_prediction_or_a_reported_problem(sample, group_by):
    report = Report()
    got = inspect_log.item_object(sample, "f.eval", 1, "generic", report, group_by)
    if got is None:
        assert not report.ok
    if isinstance(sample, dict) and "id" in sample:
        obj, kept = inspect_log.prediction_object(sample, None)
        assert isinstance(obj["response"], str) and isinstance(kept, dict)
