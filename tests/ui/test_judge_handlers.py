"""The Judge tab's handlers called directly on a real store (no browser): queue, save, refused save, skip, undo,
identity under --auth and without, and the save_label endpoint's function."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from core.errors import CrosscheckError
from db import judge_runs, judging
from db import labels as dbl
from db.store import Store
from tests.conftest import copy_store
from ui import judge as uj

RUN = "synth-sb-binder-weak"
ALICE = SimpleNamespace(username="alice")  # what gr.Request carries under --auth


@pytest.fixture
def sb(demo_db, tmp_path):
    store = Store(copy_store(demo_db, tmp_path / "s"))
    yield store
    store.close()


def _act(op: str, key: list | tuple | None, flags: list[bool], seq: int) -> str:
    return json.dumps({"op": op, "key": json.dumps(list(key)) if key else "", "flags": flags, "seq": seq})


def _out(values: list) -> dict:
    names = ["state", "view", "progress", "S1", "S2", "S3", "S4", "ff", "category", "note", "item", "rotation",
             "repeat", "msg"]
    assert len(values) == uj.N_OUTPUTS
    return dict(zip(names, values, strict=True))


@pytest.mark.parametrize("auth, typed, user, expected", [
    (False, " ann ", None, "ann"),
    (False, "", None, "type your annotator name first"),
    (True, "", "alice", "alice"),
    (True, "alice", "alice", "alice"),
    (True, "bob", "alice", "signed in as alice"),
    (True, "alice", None, "not signed in"),
])
def test_identity(auth, typed, user, expected):
    if expected in ("ann", "alice"):
        assert uj.identity(auth, typed, user) == expected
    else:
        with pytest.raises(uj.IdentityRefused, match=expected):
            uj.identity(auth, typed, user)


def test_queue_save_skip_undo(sb):
    out = _out(uj.on_start(sb, False, RUN, "filter:all", "ann", True))
    st = out["state"]
    n = len(judging.trace_records(sb, RUN))
    assert len(st["queue"]) == n and st["pos"] == 0 and f"Queue of {n} traces loaded" in out["msg"]
    first = st["queue"][0]
    assert out["item"] == first[0] and f"Trace <b>1 of {n}</b>" in out["progress"]
    # a save typed for another trace than the one on screen is refused and nothing is written
    out = _out(uj.on_action(sb, False, st, "ann", True, _act("save", st["queue"][1], [1, 0, 0, 0], 1), "", ""))
    assert out["msg"].startswith("**Refused:**") and "data-ok='0'" in out["progress"] and out["state"] == st
    assert dbl.labels_frame(sb, RUN).empty
    # a save of the trace on screen is written with its audit row, and the queue moves on
    out = _out(uj.on_action(sb, False, st, "ann", True, _act("save", first, [True, False, True, True], 2),
                            "rule_mutation", "a note"))
    assert out["msg"].startswith("Saved:") and "first failure S2" in out["msg"] and "data-seq='2'" in out["progress"]
    st = out["state"]
    assert st["pos"] == 1
    lab = dbl.label_of(sb, RUN, tuple(first), "ann")
    assert (lab["S1"], lab["S2"], lab["first_failure"], lab["category"], lab["note"]) == (1, 0, "S2", "rule_mutation",
                                                                                        "a note")
    out = _out(uj.on_action(sb, False, st, "ann", True, _act("skip", st["queue"][1], [True] * 4, 3), "", ""))
    st = out["state"]
    assert st["pos"] == 2 and out["msg"].startswith("Skipped")
    # undo the skip, then the save: the label goes back to none (cleared), the audit keeps both rows
    st = _out(uj.on_action(sb, False, st, "ann", True, _act("undo", None, [True] * 4, 4), "", ""))["state"]
    assert st["pos"] == 1
    out = _out(uj.on_action(sb, False, st, "ann", True, _act("undo", None, [True] * 4, 5), "", ""))
    assert out["state"]["pos"] == 0 and out["msg"].startswith("Undid the save")
    assert tuple(first) not in dbl.labeled_keys(sb, RUN, "ann")
    assert len(dbl.audit_frame(sb, RUN, "ann")) == 2
    assert _out(uj.on_action(sb, False, out["state"], "ann", True, _act("undo", None, [True] * 4, 6), "",
                             ""))["msg"] == "Nothing to undo."


def test_saved_label_is_shown_again_and_filters(sb):
    st = _out(uj.on_start(sb, False, RUN, "filter:all", "ann", True))["state"]
    first = st["queue"][0]
    uj.on_action(sb, False, st, "ann", True, _act("save", first, [True, True, False, False], 1), "", "")
    # a new queue starts at the first trace not labeled yet; the unlabeled filter leaves the label out
    again = _out(uj.on_start(sb, False, RUN, "filter:all", "ann", True))
    assert again["state"]["pos"] == 1
    unl = _out(uj.on_start(sb, False, RUN, "filter:unlabeled", "ann", True))["state"]["queue"]
    assert first not in unl and len(unl) == len(st["queue"]) - 1
    wrong = uj.queue_keys(sb, RUN, "filter:wrong", "ann")
    recs = judging.trace_records(sb, RUN)
    assert len(wrong) == int((~((recs["status"] == "ok") & (recs["answer"] == recs["gold"]))).sum())
    shown = _out(uj.show(sb, {**st, "pos": 0}, "ann", True))
    assert [shown[s] for s in ("S1", "S2", "S3", "S4")] == [True, True, False, False]
    assert "First failure: S3" in shown["ff"]


def test_auth_and_blind(sb):
    out = _out(uj.on_start(sb, True, RUN, "filter:all", "", True, request=None))
    assert out["msg"] == "**not signed in**" and out["state"] == {"__type__": "update"}
    st = _out(uj.on_start(sb, True, RUN, "filter:all", "", True, request=ALICE))["state"]
    key = st["queue"][0]
    dbl.save_label(sb, RUN, tuple(key), "bob", {"S1": 0, "S2": 0, "S3": 0, "S4": 0})
    blind, _ = uj.on_toggle(sb, True, st, "", True, True, True, True, True, request=ALICE)
    open_view, ff = uj.on_toggle(sb, True, st, "", False, True, False, True, True, request=ALICE)
    assert "bob" not in blind and "bob" in open_view and "First failure: S2" in ff
    out = _out(uj.on_action(sb, True, st, "mallory", True, _act("save", key, [True] * 4, 1), "", "", request=ALICE))
    assert "signed in as alice" in out["msg"] and dbl.label_of(sb, RUN, tuple(key), "alice") is None


def test_save_label_api_and_sources(sb):
    key = tuple(judging.trace_records(sb, RUN).iloc[0][["item_id", "rotation", "repeat"]])
    msg = uj.save_label_api(sb, False, "ann", RUN, key[0], int(key[1]), int(key[2]), True, True, True, False,
                            "", "")
    assert msg == f"Saved: {key[0]} (first failure S4)."
    assert uj.save_label_api(sb, False, "ann", RUN, key[0], int(key[1]), int(key[2]), True, True, True, False,
                             "", "").startswith("Unchanged")
    with pytest.raises(CrosscheckError, match="unknown error-audit category"):
        uj.save_label_api(sb, False, "ann", RUN, key[0], int(key[1]), int(key[2]), True, True, True, True, "vibes",
                          "")
    judge_runs.draw_sample(sb, RUN, "cal", per_operation=2, seed=0)
    upd = uj.on_run(sb, RUN)
    assert upd["value"] == "sample:cal" and ("all F traces", "filter:all") in upd["choices"]
    n = len(judging.sample_frame(sb, "cal"))
    assert len(_out(uj.on_start(sb, False, RUN, "sample:cal", "ann", True))["state"]["queue"]) == n


def test_judge_controls_only_for_a_family_with_stage_judging(sb, store, fe_bench):
    """A family without judged traces shows no Judge / Calibration controls: a one-line note instead."""
    import inspect

    from core import families
    from core.families.stembind.judging import JUDGING
    from db.importers import import_items

    assert inspect.unwrap(families.judging_of("stembind")) is JUDGING and families.judging_of("frameevidence") is None
    import_items(store, fe_bench)  # a store of one FrameEvidence benchmark: nothing to judge anywhere
    bench = store.benchmarks()[0]["name"]
    shown, note = uj.availability(store, bench)
    assert shown is False and "nothing to judge" in note
    note_up, controls = uj.on_availability(store, bench)
    assert controls["visible"] is False and note_up["visible"] is True and note_up["value"] == note
    assert uj.run_choices(store) == [] and judging.judged_benchmarks(store) == []
    # the demo store: StemBind has stage judging (no note), FrameEvidence has not (a note naming both)
    assert uj.availability(sb, "stembind") == (True, "")
    shown, note = uj.availability(sb, "frameevidence")
    assert shown is True and "frameevidence (frameevidence) has no stage-judged traces" in note and "stembind" in note
    note_up, controls = uj.on_availability(sb, "stembind")
    assert controls["visible"] is True and note_up["visible"] is False
    fe_run = next(r["name"] for r in sb.runs("frameevidence"))
    assert fe_run not in [v for _, v in uj.run_choices(sb)]
    with pytest.raises(judging.NotJudged, match="no stage-judged traces"):
        judging.trace_records(sb, fe_run)
    with pytest.raises(judging.NotJudged):
        dbl.save_label(sb, fe_run, ("x", 0, 0), "ann", {"S1": 1})
