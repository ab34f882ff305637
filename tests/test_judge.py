"""The L2 judge: output parsing (malformed is never guessed), first failure, inconsistency, the lexical judge,
the pipeline end to end against a real local chat-completions server into a real store, and the label write
path (audit rows, no annotator can change another's labels)."""

from __future__ import annotations

import argparse
import json
import re

import pytest
from chat_server import ChatServer, request_text
from conftest import copy_store

from cli.commands import cmd_judge
from core.families.stembind.judging import JUDGING
from core.families.stembind.stages import first_failure, inconsistent
from core.judge import JudgeInput, LexicalJudge, build_prompt, parse_judgement, split_steps
from db import judging
from db import labels as dbl
from db.store import Store

RUN = "synth-sb-binder-weak"


@pytest.mark.parametrize("text, status, flags", [
    ('{"S1": 1, "S2": 1, "S3": 0, "S4": 0, "first_failure": "S3"}', "ok", [1, 1, 0, 0]),
    ('Sure.\n```json\n{"S1": true, "S2": false, "S3": false, "S4": true}\n```', "ok", [1, 0, 0, 1]),
    ('{"s1": "1", "s2": "correct", "s3": "no", "s4": 0}', "ok", [1, 1, 0, 0]),
    ("S1: 1\nS2: 1\nS3: 1\nS4: 0", "ok", [1, 1, 1, 0]),
    ("- **S1 (See)**: 1\n- **S2 (Infer)**: 0\n- **S3 (Map)**: 0\n- **S4 (Select)**: 1", "ok", [1, 0, 0, 1]),
    ('{"S1": 1, "S2": 1, "S3": 0}', "malformed", None),                      # a stage missing
    ('{"S1": 1, "S2": 2, "S3": 0, "S4": 1}', "malformed", None),             # out of range
    ('{"S1": 1, "S2": "maybe", "S3": 0, "S4": 1}', "malformed", None),       # not a flag
    ('{"S1": 1, "S2": 1, "S3": 1, "S4": 1} then {"S1": 0, "S2": 1, "S3": 1, "S4": 1}', "malformed", None),
    ("The trace looks mostly fine to me.", "malformed", None),
    ("", "malformed", None),
    ('{"S1": 1, "S2": 1, "S3": 1, "S4": 1', "malformed", None),             # truncated JSON
    ("S1: 1\nS2: 1\nS3: 0\nS3: 1\nS4: 1", "malformed", None),                 # S3 twice, disagreeing
])
def test_parse_judgement(text, status, flags):
    j = parse_judgement(text, JUDGING)
    assert j.status == status
    assert j.raw == text
    if flags is None:
        assert j.reason and all(v is None for v in j.flags.values()) and j.first_failure is None
    else:
        assert j.flag_values() == flags


@pytest.mark.parametrize("flags, ff, inc", [
    ([True, True, True, True], "none", False),
    ([True, False, True, True], "S2", True),
    ([False, False, False, False], "S1", False),
    ([True, True, False, False], "S3", False),
    ([True, True, True, False], "S4", False),
    ([None, False, None, True], "S2", True),
    ([True, None, True, True], "none", False),
])
def test_first_failure_and_inconsistency(flags, ff, inc):
    assert first_failure(flags) == ff
    assert inconsistent(flags) is inc


def test_stated_first_failure_is_kept_but_the_rule_wins():
    j = parse_judgement('{"S1": 1, "S2": 0, "S3": 1, "S4": 1, "first_failure": "S3"}', JUDGING)
    assert j.status == "ok" and j.first_failure == "S2" and j.stated_first_failure == "S3" and j.inconsistent


def test_split_steps():
    assert split_steps("Step 1: look.\nStep 2: rule.\nStep 3: map.") == ["Step 1: look.", "Step 2: rule.",
                                                                          "Step 3: map."]
    assert split_steps("a line\n\nanother line\nthird") == ["a line", "another line", "third"]
    assert split_steps("One sentence. Two sentences! Three?") == ["One sentence.", "Two sentences!", "Three?"]
    assert split_steps("") == [] and split_steps(None) == []


STAGES_T = {"S1": "Row 1: a red circle; a blue square.", "S2": "Each row rotates the shape by 90 degrees.",
            "S3": "The missing cell is row 3, column 3.", "S4": "Only candidate B matches, so the answer is B."}


def test_prompt_has_trace_targets_answer_and_metadata():
    inp = JudgeInput("x-F", "my <trace>", "C", STAGES_T, meta={"operation": "RI-Rot", "secret": "no"},
                     options={"A": "a", "B": "b"}, judging=JUDGING)
    p = build_prompt(inp)
    for part in ("my <trace>", "Model final answer: C", STAGES_T["S3"], "RI-Rot", '"S1": 0 or 1', "B. b"):
        assert part in p
    assert "secret" not in p


def test_lexical_judge():
    good = ("First, the panels. Row 1: a red circle; a blue square.\nRule: each row rotates the shape by 90 degrees."
            "\nMapping: the missing cell is row 3, column 3.\nTherefore the answer is B.")
    j = LexicalJudge().judge(JudgeInput("x", good, "B", STAGES_T, judging=JUDGING))
    assert j.status == "ok" and j.flag_values() == [1, 1, 1, 1] and j.first_failure == "none"
    bad = "Rule: everything alternates colours.\nMapping: I use row 2.\nTherefore the answer is C."
    j = LexicalJudge().judge(JudgeInput("x", bad, "C", STAGES_T, judging=JUDGING))
    assert j.flag_values() == [0, 0, 0, 0] and j.first_failure == "S1"
    assert json.loads(j.raw)["recall"]["S2"] < 0.5
    j = LexicalJudge().judge(JudgeInput("x", good, None, {**STAGES_T, "S3": ""}, judging=JUDGING))
    assert j.status == "malformed" and "S3" in j.reason


# ---------------------------------------------------------------------------- end to end with a real server


@pytest.fixture
def sb_store(demo_db, tmp_path):
    return copy_store(demo_db, tmp_path / "s")


def _args(db, **kw):
    """`python app.py judge`'s parsed options on the store file `db`."""
    base = dict(command="judge", db=db, run=RUN, judge_runner="openai", judge_run="gpt-judge", base_url=None,
                model="judge-m", api_key_env="CC_JUDGE_KEY", concurrency=4, max_tokens=256, batch_size=4,
                threshold=0.5, sample=None, limit=None, timeout=5.0, max_retries=2, chat_template=None)
    base.update(kw)
    return argparse.Namespace(**base)


def _trace_of(body):
    text = request_text(body)
    return text.split("<<<TRACE\n", 1)[1].split("\nTRACE>>>", 1)[0]


def _scripted(by_trace):
    """Scripted judge: the verdict depends on the item number of the trace in the prompt."""
    def respond(body):
        n = int(re.search(r"(\d+)", by_trace[_trace_of(body)]).group(1))
        if n % 5 == 0:
            return "I think the trace is fine overall."                                 # malformed: no flags
        if n % 5 == 1:
            return '```json\n{"S1": 1, "S2": 1, "S3": 0, "S4": 0, "first_failure": "S3"}\n```'
        if n % 5 == 2:
            return '{"S1": 1, "S2": 0, "S3": 1, "S4": 1, "first_failure": "S2"}'      # inconsistent
        return '{"S1": 1, "S2": 1, "S3": 1, "S4": 1, "first_failure": "none"}'
    return respond


def test_openai_judge_end_to_end(sb_store, monkeypatch, capsys):
    monkeypatch.setenv("CC_JUDGE_KEY", "EMPTY")
    store = Store(sb_store)
    frame = judging.trace_records(store, RUN)
    n = len(frame)
    assert n > 20
    by_trace = dict(zip(frame["trace"], frame["item_id"], strict=True))
    assert len(by_trace) == n  # every trace is distinct, so the server can script by trace
    trace = dict(zip(frame["item_id"], frame["trace"], strict=True))
    with ChatServer(responder=_scripted(by_trace)) as server:
        server.rules.append([trace["sb-007-F"], "400", 1])   # a non-retryable failure: stored as api_error
        server.rules.append([trace["sb-008-F"], "500", 1])   # retried, then ok
        code = cmd_judge(_args(sb_store, base_url=server.base_url))
        assert code == 1  # one api_error
        bodies = list(server.bodies)
    out = capsys.readouterr().out
    assert "api_error" in out and "malformed" in out
    assert all(b["temperature"] == 0 and b["model"] == "judge-m" for b in bodies)
    jf = judging.judgements_frame(store, RUN, ["gpt-judge"]).set_index("item_id")
    assert len(jf) == n
    nums = {i: int(re.search(r"(\d+)", i).group(1)) for i in jf.index}
    for item, num in nums.items():
        row = jf.loc[item]
        if item == "sb-007-F":
            assert row["status"] == "api_error" and row["S1"] is None
        elif num % 5 == 0:
            assert row["status"] == "malformed" and row["S1"] is None and row["first_failure"] is None
            assert "fine overall" in json.loads(row["raw"])["reply"]
        elif num % 5 == 1:
            assert row["status"] == "ok" and row["first_failure"] == "S3"
        elif num % 5 == 2:
            assert row["status"] == "ok" and row["first_failure"] == "S2" and row["S3"] == 1
        else:
            assert row["status"] == "ok" and row["first_failure"] == "none"
    # the judge is its own run with its identity; the key is not stored anywhere
    jr = store.run("gpt-judge")
    assert jr["config"]["role"] == "judge" and jr["config"]["model"] == "judge-m"
    assert jr["config"]["prompt_version"] == "l2-v2" and jr["config"]["temperature"] == 0.0
    assert "EMPTY" not in json.dumps(jr["config"])
    # a rerun resumes: only the api_error trace is asked again
    with ChatServer(responder=_scripted(by_trace)) as server:
        assert cmd_judge(_args(sb_store, base_url=server.base_url)) == 0
        assert len(server.bodies) == 1 and _trace_of(server.bodies[0]) == trace["sb-007-F"]
    assert judging.judgements_frame(store, RUN, ["gpt-judge"]).set_index("item_id").loc["sb-007-F", "status"] == "ok"
    # and the L2 profile of the run reads these judgements (malformed ones left out)
    from core.families.stembind.metrics import l2_profile

    jud = judging.judgements_frame(store, RUN, ["gpt-judge"])
    prof = l2_profile(store.items_frame("stembind"), store.run_data(RUN), jud)
    n_ok = int((jud["status"] == "ok").sum())
    assert prof["n_traces"] == n_ok
    assert prof["inconsistent"].k == sum(1 for v in nums.values() if v % 5 == 2)


def test_lexical_judge_cli_and_conflicting_identity(sb_store, capsys):
    store = Store(sb_store)
    assert cmd_judge(_args(sb_store, judge_runner="lexical", judge_run="lex")) == 0
    assert "judge run 'lex'" in capsys.readouterr().out
    s = judging.judgements_frame(store, RUN, ["lex"])
    assert len(s) == len(judging.trace_records(store, RUN)) and set(s["status"]) == {"ok"}
    from core.errors import CrosscheckError

    with pytest.raises(CrosscheckError, match="other settings"):
        cmd_judge(_args(sb_store, judge_runner="lexical", judge_run="lex", threshold=0.9))


# ---------------------------------------------------------------------------- the label write path


def test_save_label_audit_and_ownership(sb_store):
    store = Store(sb_store)
    key = tuple(judging.trace_records(store, RUN).iloc[0][["item_id", "rotation", "repeat"]])
    key = (key[0], int(key[1]), int(key[2]))
    res = dbl.save_label(store, RUN, key, "ann", {"S1": 1, "S2": 1, "S3": 0, "S4": 0},
                         category="correspondence_drift", note="<b>bold</b>")
    assert res["status"] == "saved" and res["first_failure"] == "S3"
    assert dbl.save_label(store, RUN, key, "ann", {"S1": 1, "S2": 1, "S3": 0, "S4": 0},
                          category="correspondence_drift", note="<b>bold</b>")["status"] == "unchanged"
    dbl.save_label(store, RUN, key, "ann", {"S1": 1, "S2": 0, "S3": 0, "S4": 0})
    audit = dbl.audit_frame(store, RUN, "ann")
    assert len(audit) == 2
    assert audit.iloc[0]["old"] is None and audit.iloc[0]["new"]["S3"] == 0
    assert audit.iloc[1]["old"]["category"] == "correspondence_drift" and audit.iloc[1]["new"]["S2"] == 0
    assert set(audit["changed_by"]) == {"ann"}
    # nobody changes another annotator's labels
    with pytest.raises(dbl.LabelForbidden):
        dbl.save_label(store, RUN, key, "ann", {"S1": 0}, changed_by="mallory")
    other = dbl.save_label(store, RUN, key, "mallory", {"S1": 0, "S2": 0, "S3": 0, "S4": 0})
    assert other["label_id"] != res["label_id"]
    assert dbl.label_of(store, RUN, key, "ann")["S1"] == 1
    # nor a judge's imported labels, even under the same name
    store.conn.execute("UPDATE labels SET kind = 'judge' WHERE labeler = 'mallory'")
    with pytest.raises(dbl.LabelForbidden):
        dbl.save_label(store, RUN, key, "mallory", {"S1": 1, "S2": 1, "S3": 1, "S4": 1})
    with pytest.raises(dbl.InvalidLabelValue):
        dbl.save_label(store, RUN, key, "ann", {"S1": 1}, category="vibes")
    with pytest.raises(dbl.InvalidLabelValue):
        dbl.save_label(store, RUN, key, "  ", {"S1": 1})
    from core.errors import NotFound

    with pytest.raises(NotFound):
        dbl.save_label(store, RUN, ("no-such-F", 0, 0), "ann", {"S1": 1})
    # clearing keeps the row (and its audit) but it no longer counts as labeled
    dbl.save_label(store, RUN, key, "ann", {})
    assert key not in dbl.labeled_keys(store, RUN, "ann")
    assert len(dbl.audit_frame(store, RUN, "ann")) == 3
