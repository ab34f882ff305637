"""Group-level logic (core/groups.py), the group reads (db/browse.py) and the extraction-audit writes
(db/overrides.py) on real stores: the demo store and small constructed ones."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from bootstrap_ref import diff_interval
from conftest import copy_store

from core import comparison
from core import groups as G
from core.families.frameevidence.groups import fq2_layout
from core.families.stembind.groups import stem_category
from core.scoring import score_run


@pytest.fixture(scope="module")
def demo(demo_db):
    from db.store import Store

    s = Store(demo_db)
    yield s
    s.close()


def metric_outcomes(bench: str, items, rd):
    """Each family's metrics' own per-item table (answered, correct), indexed by item_id: what its metrics count."""
    from core.families.frameevidence import metrics as fe
    from core.families.spur import metrics as sp
    from core.families.stembind import metrics as sbm

    if bench == "frameevidence":
        df = fe.frame(items, rd, split=None)
        return pd.DataFrame({"answered": (df["status"] != fe.MISSING).to_numpy(),
                             "correct": df["correct"].to_numpy(dtype=bool)}, index=df["item_id"].to_numpy())
    table = (sbm.item_outcomes if bench == "stembind" else sp.item_outcomes)(items, rd)
    out = pd.DataFrame({"answered": True, "correct": table["correct"].to_numpy(dtype=bool)},
                       index=table["item_id"].to_numpy())
    return out.reindex(items["item_id"], fill_value=False)


@pytest.mark.parametrize("bench", ["frameevidence", "stembind", "spur"])
def test_the_one_outcome_rule_agrees_with_the_metrics(demo, bench):
    """The one item-outcome rule (core.outcomes.item_marks) gives the marks each family's metrics count, and its
    per-group form (group_outcomes, the views) the same marks and StemBind categories, for every run and every
    group of the demo store."""
    from db import browse as dbb

    items = demo.items_frame(bench)
    recs_by_group = {g: part.to_dict("records") for g, part in items.groupby("group_id")}
    for run in dbb.run_records(demo, bench):
        rd = demo.run_data(run["name"])
        slow = G.item_outcomes(bench, items, rd).set_index("item_id")
        ref = metric_outcomes(bench, items, rd).reindex(slow.index)
        assert (ref["answered"] == slow["answered"]).all() and (ref["correct"] == slow["correct"]).all()
        summ = G.group_summary(bench, items, rd)
        if bench == "stembind":
            from core.families.stembind import metrics as sbm

            ref = sbm.stem_table(items, sbm.item_outcomes(items, rd))["category"]
            assert [c if isinstance(c, str) else None for c in ref.reindex(summ.index)] == list(summ["category"])
        preds = rd.preds.to_dict("records")
        by_group: dict[str, list] = {}
        gid = dict(zip(items["item_id"], items["group_id"], strict=True))
        for p in preds:
            by_group.setdefault(gid[p["item_id"]], []).append(p)
        for g, recs in recs_by_group.items():
            fast = G.group_outcomes(bench, recs, by_group.get(g, []))
            for iid, (answered, correct) in fast.items():
                assert (answered, correct) == (bool(slow.at[iid, "answered"]), bool(slow.at[iid, "correct"])), \
                    (run["name"], iid)
            if bench == "stembind":
                assert stem_category(recs, fast) == summ.at[g, "category"], (run["name"], g)


def test_patterns_and_filters(demo):
    items = demo.items_frame("frameevidence")
    rd = demo.run_data("synth-fe-frameaware")
    summ = G.group_summary("frameevidence", items, rd)
    out = G.item_outcomes("frameevidence", items, rd)
    fq1 = out[out["kind"] == "FQ1"].groupby("group_id")
    k = fq1["correct"].sum()[fq1["answered"].any()]
    for n in range(4):
        assert int(summ[f"p_fq1_{n}"].sum()) == int((k == n).sum())
    counts = G.pattern_counts("frameevidence", [summ])
    assert sum(counts[f"fq1_{n}"] for n in range(4)) == len(k)
    idx = G.group_index(items)
    only_fq2 = G.filter_groups(idx, items, split="test", kind="FQ2")
    assert len(only_fq2) and all(g.startswith("fe-test-fq2") for g in only_fq2)
    found = G.filter_groups(idx, items, query="fe-test-fq1-007")
    assert list(found) == ["fe-test-fq1-007"]
    by_scene = G.filter_groups(idx, items, field="scene", value="outdoor")
    assert set(by_scene) == set(items.loc[items["meta"].map(lambda m: m.get("scene")) == "outdoor", "group_id"])


def test_fq2_layout_withheld_added_and_ordinal_note():
    mss = {"images": ["a", "b", "c"], "meta": {"original_positions": [1, 2, 3], "camera_ordinal": 2},
           "question": "以第2张图片的相机朝向为前方"}
    dele = {"images": ["a", "c"], "meta": {"original_positions": [1, 3]}, "question": mss["question"]}
    add = {"images": ["a", "b", "d", "c"], "meta": {"original_positions": [1, 2, 4, 3]}, "question": mss["question"]}
    lay = fq2_layout({"mss": mss, "del": dele, "add": add})
    assert lay["withheld"] == {"hash": "b", "position": 2}
    assert lay["added"]["hash"] == "d" and lay["added"]["position"] == 4
    assert "I2" in lay["ordinal_note"] and "I3" in lay["ordinal_note"]
    # deleting a view after the named one changes nothing
    dele2 = {"images": ["a", "b"], "meta": {"original_positions": [1, 2]}, "question": mss["question"]}
    assert fq2_layout({"mss": mss, "del": dele2, "add": add})["ordinal_note"] is None
    # positions derived when meta lacks them; ordinal read from the question text
    bare = {"mss": {"images": ["x", "y"], "meta": {}, "question": "taking image 2 as front"},
            "del": {"images": ["y"], "meta": {}, "question": ""}}
    lay = fq2_layout(bare)
    assert lay["withheld"] == {"hash": "x", "position": 1}
    assert "no longer exists" in lay["ordinal_note"]


def test_paired_differences_other_families(demo):
    """The one comparison engine (core.comparison, issue 17): this − other, with b as this run; SPUR's metric
    set is the union of what `score --compare` and the Compare tab showed (its "accuracy" is "overall")."""
    items = demo.items_frame("spur")
    a, b = demo.run_data("synth-spur-generalist"), demo.run_data("synth-spur-generalist-ddcot")
    res = comparison.compare(items, b, a, draws=2000)["metrics"]
    assert set(res) == {*(f"tasks.{t}" for t in ("NP", "MP", "IL", "TA", "HI", "Qual", "Quant")), "overall",
                        "perception", "understanding", "reasoning", "group_exact_match"}
    acc = res["overall"]
    assert acc["difference"].value == pytest.approx(acc["this"].value - acc["other"].value)
    lo, hi = acc["difference"].ci
    assert lo <= acc["difference"].value <= hi
    # the interval from the runs' own rows: an item is right when all its predictions are; groups of the test
    # split's items both runs answered, resampled whole (2,000 draws, the default seed)
    scope = items[items["split"] == "test"]
    gold = dict(zip(scope["item_id"], scope["answer"], strict=True))

    def right(run) -> dict:
        p = run.preds[run.preds["item_id"].isin(gold)]
        ok = (p["status"] == "ok") & (p["answer"] == p["item_id"].map(gold))
        return ok.groupby(p["item_id"]).all().to_dict()

    this, other = right(b), right(a)
    order = sorted({g for i, g in zip(scope["item_id"], scope["group_id"], strict=True) if i in this and i in other})
    at = {g: j for j, g in enumerate(order)}
    kt, ko, n = np.zeros(len(order)), np.zeros(len(order)), np.zeros(len(order))
    for i, g in zip(scope["item_id"], scope["group_id"], strict=True):
        if i in this and i in other:
            kt[at[g]] += this[i]
            ko[at[g]] += other[i]
            n[at[g]] += 1
    assert (lo, hi) == diff_interval(kt, n, ko, n, draws=2000)
    t = comparison.turnover(items, a, b)
    assert t["net"] == t["newly_correct"].k - t["newly_incorrect"].k
    trans = G.group_transitions("spur", items, a, b)
    assert sum(G.transition_counts(trans).values()) == len(trans)


def test_group_reads_match_store(demo):
    from db import browse as dbb
    from db import predictions

    g = dbb.group_items(demo, "stembind", "sb-002")
    full = demo.items_frame("stembind")
    assert list(g["item_id"]) == list(full.loc[full["group_id"] == "sb-002", "item_id"])
    recs = dbb.run_records(demo, "stembind")
    preds = predictions.group_prediction_records(demo, [r["id"] for r in recs], [int(p) for p in g["pk"]])
    rd = demo.predictions_frame(recs[0]["name"])
    assert len(preds[recs[0]["id"]]) == int(rd["item_id"].isin(set(g["item_id"])).sum())


def test_overrides_reparse_manual_and_revert(demo_db, tmp_path):
    """An invalid tag parse re-read with the letter parser, and a manual letter, update the score at once,
    are recorded with their method, and revert cleanly; the raw response is untouched."""
    from db import overrides as dbo
    from db import predictions
    from db.store import Store

    s = Store(copy_store(demo_db, tmp_path / "c"))
    run = "synth-sb-binder-weak"
    bad = predictions.problem_predictions(s, run, ("invalid",))
    row = next(r for r in bad.to_dict("records") if "the answer is" in (r["response"] or "").lower())
    items = s.items_frame("stembind")
    before = score_run(items, s.run_data(run), [])["metrics"]
    prev = dbo.preview(s, run, row["item_id"], method="parser:tag")
    assert prev["status"] == "invalid"  # the original parser still refuses it
    res = dbo.apply(s, run, row["item_id"], method="parser:letter", by="tester")
    assert res["status"] == "ok" and res["answer"] in row["letters"]
    p = s.predictions_frame(run).set_index("item_id").loc[row["item_id"]]
    assert p["status"] == "ok" and p["response"] == row["response"]
    after = score_run(items, s.run_data(run), [])["metrics"]
    kind = row["kind"].lower()
    gained = int(res["answer"] == row["gold"])
    assert after[f"{kind}_accuracy"]["k"] == before[f"{kind}_accuracy"]["k"] + gained
    with pytest.raises(Exception, match="option letters"):
        dbo.apply(s, run, row["item_id"], method="manual", letter="Z")
    man = dbo.apply(s, run, row["item_id"], method="manual", letter=row["gold"], by="tester")
    log = dbo.overrides(s, run)
    assert [o["method"] for o in log] == ["manual", "parser:letter"] and log[0]["by"] == "tester"
    dbo.revert(s, man["id"])
    dbo.revert(s, res["id"])
    p = s.predictions_frame(run).set_index("item_id").loc[row["item_id"]]
    assert p["status"] == "invalid" and p["answer"] is None
    assert score_run(items, s.run_data(run), [])["metrics"][f"{kind}_accuracy"] == before[f"{kind}_accuracy"]
    assert all(o["reverted"] for o in dbo.overrides(s, run))
    assert json.dumps(log, default=str)  # plain records
    s.close()
