"""Paper 000's analyses beyond the main table: bootstrap clusterings (App. A, D.6), Table 13's repeat / rotation
quantities with intervals under two clusterings, Table 6b's three-seed mean +- SD, and §5's always-insufficient
control. Paper numbers are rebuilt from synthetic per-item data constructed to have the stated counts."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest
from bootstrap_ref import ratio_interval
from test_frameevidence_metrics import (
    LETTERS,
    PAPER,
    fq1_group,
    fq2_group,
    item,
    items_df,
    paired_answers,
    pct,
    preds_df,
    run,
    wrong,
)

from core import families, stats
from core.errors import MetricUndefined
from core.families.frameevidence import metrics as fe
from core.report_tables import RunScore, display, get
from core.schema import to_jsonable
from core.stats import Clustering
from tests.helpers import family_score

# --------------------------------------------------------------------------- clusterings (App. A, App. D.6)


def _cluster_items() -> pd.DataFrame:
    """Five groups: g1 and g2 share image h2 (in g2's addition only); g4 and g5 share h9; g3 stands alone.
    Scenes: g1 kitchen, g2 none, g3 office, g4 office, g5 "1"; templates: g1 and g3 t1, g5 the number 1."""
    def it(gid, v, images, **meta):
        row = item(f"{gid}-{v}", gid, "FQ2", v, "A", len(images), {"insufficient_option": "D", **meta})
        row["images"] = images
        return row

    return items_df([
        it("g1", "mss", ["h1", "h2"], scene="kitchen", template="t1"),
        it("g2", "mss", ["h3"]), it("g2", "add", ["h3", "h2"]),
        it("g3", "mss", ["h4"], scene="office", template="t1"),
        it("g4", "mss", ["h9", "h5"], scene="office"),
        it("g5", "del", ["h9"], scene="1", template=1),
    ])


@pytest.mark.parametrize("name, fields, expected", [
    # group: every group is its own cluster
    ("group", None, {"g1": "g1", "g2": "g2", "g3": "g3", "g4": "g4", "g5": "g5"}),
    # image: groups sharing a content hash are one component (named by its smallest group id)
    ("image", None, {"g1": "g1", "g2": "g1", "g3": "g3", "g4": "g4", "g5": "g4"}),
    # scene (000 §6.3): the shared values alone, no image links: g3-g4 share "office"; g5 ("1") stays apart from
    # g4 although they share h9; g2 has no scene and is its own cluster
    ("scene", None, {"g1": "g1", "g2": "g2", "g3": "g3", "g4": "g3", "g5": "g5"}),
    ("scene", "template", {"g1": "g1", "g2": "g2", "g3": "g1", "g4": "g4", "g5": "g5"}),
    # union by scene: g3 and g4 share "office", linking g3-g4-g5 (g5 through h9); g2 has no scene
    ("union", "scene", {"g1": "g1", "g2": "g1", "g3": "g3", "g4": "g3", "g5": "g3"}),
    # union by template: g1-g3 share "t1"; g5's template 1 (a number) is not the string "t1"
    ("union", "template", {"g1": "g1", "g2": "g1", "g3": "g1", "g4": "g4", "g5": "g4"}),
    # union by both fields: one component
    ("union", "scene,template", dict.fromkeys(["g1", "g2", "g3", "g4", "g5"], "g1")),
    ("union", "meta.scene, meta.template", dict.fromkeys(["g1", "g2", "g3", "g4", "g5"], "g1")),
])
def test_cluster_labels(name, fields, expected):
    items = _cluster_items()
    labels = stats.cluster_labels(items, Clustering.parse(name, fields))
    assert dict(zip(items["group_id"], labels, strict=True)) == expected


def test_union_without_the_field_is_refused_not_silently_image_components():
    with pytest.raises(MetricUndefined, match="no item has meta.camera"):
        stats.cluster_labels(_cluster_items(), Clustering.parse("union", "camera"))


@pytest.mark.parametrize("name, fields, message", [
    ("triplets", None, "unknown clustering 'triplets'; expected one of group, image, scene, union"),
    ("union", "scene,,template", "expected meta field names separated by commas"),
    ("union", "", "expected meta field names separated by commas"),
])
def test_clustering_parse_errors(name, fields, message):
    with pytest.raises(stats.UnknownClustering, match=message):
        Clustering.parse(name, fields)


def test_clustering_keys_and_labels():
    assert Clustering.parse("union", "scene,template").label == "union components (images, meta.scene / meta.template)"
    assert Clustering.parse("union", "scene,template").key == "union:scene+template"
    assert (Clustering.parse("IMAGE").key, Clustering.parse("group").label) == ("image", "groups")
    assert (Clustering.parse("scene").key, Clustering.parse("scene").label) == ("scene", "scene clusters (meta.scene)")
    assert Clustering.parse("scene", "template").key == "scene:template"


# --------------------------------------------------------------------------- Table 13


def _gold() -> dict:
    return dict(zip(PAPER["item_id"], PAPER["answer"], strict=True))


def _other_wrong(gold: str, avoid: str | None) -> str:
    return next(x for x in LETTERS if x != gold and x != avoid)


def _primary_answers(repeat: dict, gold: dict) -> dict:
    """000 same-order control: against the repeat, 77 correct in both, 40 only in the primary, 53 only in the
    repeat, 118 in neither, 128 changed answers (so 83 of the 118 share the repeat's wrong letter)."""
    right = [i for i in repeat if repeat[i] == gold[i]]
    wrong_ = [i for i in repeat if repeat[i] != gold[i]]
    assert (len(right), len(wrong_)) == (130, 158)
    out = {i: gold[i] if n < 77 else _other_wrong(gold[i], None) for n, i in enumerate(right)}
    for n, i in enumerate(wrong_):
        out[i] = gold[i] if n < 40 else repeat[i] if n < 40 + 83 else _other_wrong(gold[i], repeat[i])
    return out


@pytest.fixture(scope="module")
def gpt_runs():
    """GPT's Circular run (R0 131 correct; repeat 130, 82 both, 154 consistent; R1-R3 both-correct 90 / 88 / 81
    and consistency 171 / 158 / 148 against R0) and its primary all-images run (117 correct)."""
    gold = _gold()
    ids = list(gold)
    r0 = {i: (gold[i] if n < 131 else wrong(gold[i])) for n, i in enumerate(ids)}
    repeat = paired_answers(r0, 82, 130, 154, gold)
    frames = [preds_df(r0), preds_df(repeat, repeat=1)]
    for r, (both, total, cons) in zip((1, 2, 3), ((90, 120, 171), (88, 122, 158), (81, 120, 148)), strict=True):
        frames.append(preds_df(paired_answers(r0, both, total, cons, gold), rotation=r))
    circular = run("gpt-circular", *frames, model="gpt", rotations=4, repeats=2)
    primary = run("gpt-primary", preds_df(_primary_answers(repeat, gold)), model="gpt")
    return circular, primary


# 000 Table 13 "Estimate" column (percent / points)
TABLE13 = [
    ("repeat_accuracy", 45.14), ("primary_repeat_disagreement", 44.44), ("r0_repeat_disagreement", 46.53),
    ("repeat_minus_primary_accuracy", 4.51), ("repeat_minus_r0_accuracy", -0.35), ("both_correct", 28.47),
    ("consistency", 53.47), ("both_correct_minus_R1", -2.78), ("both_correct_minus_R2", -2.08),
    ("both_correct_minus_R3", 0.35), ("consistency_minus_R1", -5.90), ("consistency_minus_R2", -1.39),
    ("consistency_minus_R3", 2.08),
]


@pytest.fixture
def table13(gpt_runs):
    """Computed in each test that uses it, so that mutation testing runs every such test against a mutant of
    repeat_intervals (a module-scoped result would be computed inside the first test only)."""
    circular, primary = gpt_runs
    return fe.repeat_intervals(PAPER, circular, [primary], draws=2000)


def test_table13_estimates(table13):
    assert table13["primary"] == "gpt-primary"
    for key, paper in TABLE13:
        assert round(table13["quantities"][key]["estimate"].value * 100, 2) == paper, key


def test_table13_order_and_counts(table13):
    assert list(table13["quantities"]) == [k for k, _ in TABLE13]  # the paper's row order
    q = table13["quantities"]
    assert (q["repeat_accuracy"]["estimate"].k, q["repeat_accuracy"]["estimate"].n) == (130, 288)
    assert (q["primary_repeat_disagreement"]["estimate"].k, q["r0_repeat_disagreement"]["estimate"].k) == (128, 134)
    # the union default needs meta.scene, which these items lack: the column says so, the group column stands
    assert table13["clusterings"]["group"] == {"label": "groups", "clusters": 96}
    assert "no item has meta.scene" in table13["clusterings"]["union"].reason
    assert q["both_correct"]["union"].reason == "union clustering: no item has meta.scene"


def _scened(n_scenes: int) -> pd.DataFrame:
    """PAPER with meta.scene spread over n_scenes values (groups in turn), so union components = scenes."""
    items = PAPER.copy()
    order = {g: i for i, g in enumerate(sorted(items["group_id"].unique()))}
    items["meta"] = [{**m, "scene": f"s{order[g] % n_scenes:02d}"} for m, g in zip(items["meta"], items["group_id"],
                                                                                   strict=True)]
    return items


def test_table13_two_clusterings_side_by_side(gpt_runs):
    """The paper's pair of schemes: 96 groups ("96 triplets") and 13 union components; each interval holds the
    estimate, and the same seed gives the same intervals."""
    circular, primary = gpt_runs
    items = _scened(13)
    out = fe.repeat_intervals(items, circular, [primary], draws=2000)
    assert {k: v["clusters"] for k, v in out["clusterings"].items()} == {"group": 96, "union": 13}
    for key, _ in TABLE13:
        entry = out["quantities"][key]
        for scheme in ("group", "union"):
            lo, hi = entry[scheme].ci
            assert lo <= entry["estimate"].value <= hi, (key, scheme)
            assert entry[scheme].value == entry["estimate"].value
    again = fe.repeat_intervals(items, circular, [primary], draws=2000)
    assert again["quantities"]["both_correct"]["union"].ci == out["quantities"]["both_correct"]["union"].ci


def test_table13_intervals_equal_the_reference(gpt_runs):
    """Under both schemes the repeat accuracy's and the repeat-minus-R0 interval equal the independent
    computation over per-cluster sums counted here from the run's own rows (full precision)."""
    circular, primary = gpt_runs
    items = _scened(13)
    out = fe.repeat_intervals(items, circular, [primary], draws=2000)
    preds = circular.preds

    def correct(repeat: int) -> dict:
        rows = preds[(preds["rotation"] == 0) & (preds["repeat"] == repeat)]
        return dict(zip(rows["item_id"], rows["status"].eq("ok") & rows["answer"].eq(rows["item_id"].map(gold)),
                        strict=True))

    gold = dict(zip(items["item_id"], items["answer"], strict=True))
    c0, cr = correct(0), correct(1)
    order = sorted(items["group_id"].unique())
    for scheme, size, cluster in (("group", 96, {g: i for i, g in enumerate(order)}),
                                  ("union", 13, {g: i % 13 for i, g in enumerate(order)})):
        k, diff, n = np.zeros(size), np.zeros(size), np.zeros(size)
        for item_id, g in zip(items["item_id"], items["group_id"], strict=True):
            n[cluster[g]] += 1
            k[cluster[g]] += cr[item_id]
            diff[cluster[g]] += int(cr[item_id]) - int(c0[item_id])
        q = out["quantities"]
        assert q["repeat_accuracy"][scheme].ci == ratio_interval(k, n, draws=2000), scheme
        assert q["repeat_minus_r0_accuracy"][scheme].ci == ratio_interval(diff, n, draws=2000), scheme


def test_table13_one_component_has_a_zero_width_interval(gpt_runs):
    """A single union component is resampled whole in every draw: its interval is the estimate itself, while
    the 96 groups give a proper interval around it."""
    circular, primary = gpt_runs
    out = fe.repeat_intervals(_scened(1), circular, [primary], draws=500)
    assert out["clusterings"]["union"]["clusters"] == 1
    for key, _ in TABLE13:
        entry = out["quantities"][key]
        assert entry["union"].ci == pytest.approx((entry["estimate"].value,) * 2)
    lo, hi = out["quantities"]["repeat_accuracy"]["group"].ci
    assert lo < 130 / 288 < hi


def test_table13_interval_resamples_whole_clusters():
    """Two clusters of 4 items: repeat accuracy 4/4 in one and 0/4 in the other. Each draw picks two clusters
    with replacement, so the rate is 0, 1/2 or 1 with probabilities 1/4, 1/2, 1/4: the 95% interval is [0, 1]."""
    rows = fq2_group("a", "A", "D") + fq2_group("b", "B", "D")
    rows = [dict(r, meta={**r["meta"], "scene": "x"}) for r in rows] + \
        [dict(r, meta={**r["meta"], "scene": "y"}) for r in fq1_group("c", "ABC") + fq1_group("d", "BCD")]
    items = items_df(rows)
    gold = dict(zip(items["item_id"], items["answer"], strict=True))
    # scene x (groups a, b: 6 items) all correct on the repeat; scene y (c, d: 6 items) all wrong
    rep = {i: (g if i[0] in "ab" else wrong(g)) for i, g in gold.items()}
    r = run("r", preds_df(gold), preds_df(rep, repeat=1), model="m")
    out = fe.repeat_intervals(items, r, [], clusterings=(Clustering("union", ("scene",)),), draws=4000)
    entry = out["quantities"]["repeat_accuracy"]
    assert out["clusterings"]["union"]["clusters"] == 2 and entry["estimate"].value == 0.5
    assert entry["union"].ci == (0.0, 1.0)


def test_table13_reasons(gpt_runs):
    circular, primary = gpt_runs
    twin = run("gpt-primary-2", primary.preds, model="gpt")
    out = fe.repeat_intervals(PAPER, circular, [primary, twin], draws=200)
    assert "several ordinary runs could be the primary run (gpt-primary, gpt-primary-2)" in out["primary"].reason
    assert out["quantities"]["repeat_minus_primary_accuracy"]["group"].reason == out["primary"].reason
    named = run("gpt-circular", *[circular.preds], model="gpt", rotations=4, primary_run="gpt-primary-2")
    assert fe.repeat_intervals(PAPER, named, [primary, twin], draws=200)["primary"] == "gpt-primary-2"
    alone = fe.repeat_intervals(PAPER, run("x", preds_df(_gold()), model="gpt"), [primary])
    assert alone.reason == "run has no same-order repeat (rotation 0, repeat > 0)"


def test_score_carries_table13_and_the_chosen_clusterings(gpt_runs):
    circular, primary = gpt_runs
    out = to_jsonable(family_score(fe.score, _scened(13), circular, [primary],
                               clusterings=(Clustering("image"), Clustering("union", ("scene",)))))
    ri = out["repeat_intervals"]
    assert list(ri["clusterings"]) == ["image", "union"]
    assert ri["clusterings"]["union"] == {"label": "union components (images, meta.scene)", "clusters": 13,
                                          "fields": ["scene"]}
    json.dumps(out)


# --------------------------------------------------------------------------- Table 6b


def _rotation_seed_run(name, seed, vanilla, circular, consistency):
    """Four rotations over PAPER's 288 items with the given Vanilla, Circular and Consistency counts."""
    gold = _gold()
    ids = list(gold)
    frames = []
    for r in range(4):
        ans = {}
        for n, i in enumerate(ids):
            g = gold[i]
            if n < circular:
                ans[i] = g  # correct under all four rotations
            elif n < consistency:
                ans[i] = wrong(g)  # the same wrong answer under all four: consistent
            elif n < consistency + vanilla - circular:
                ans[i] = g if r == 0 else wrong(g, r)  # correct at rotation 0 only, answers differ
            else:
                ans[i] = wrong(g, 1 + r % 3)  # wrong, answers differ
        frames.append(preds_df(ans, rotation=r))
    return run(name, *frames, model="m", rotations=4, seed=seed)


@pytest.mark.parametrize("family, counts, expected", [
    # 000 Table 12 per-seed Vanilla / Circular / Consistency (of 288) and Table 6b's LoRA mean +- sample SD
    ("InternVL3-8B", [(96, 21, 55), (97, 16, 51), (90, 15, 46)],
     {"vanilla": (32.75, 1.31), "circular": (6.02, 1.12), "consistency": (17.59, 1.57)}),
    ("Qwen2.5-VL-7B", [(99, 48, 97), (100, 45, 95), (105, 47, 90)],
     {"vanilla": (35.19, 1.12), "circular": (16.20, 0.53), "consistency": (32.64, 1.25)}),
])
def test_table6b_three_seed_mean_sd(family, counts, expected):
    runs = [_rotation_seed_run(f"{family}-{s}", s, *c) for s, c in zip((20260722, 20260723, 20260724), counts,
                                                                         strict=True)]
    out = fe.multi_seed(PAPER, runs)
    for metric, (mean, sd) in expected.items():
        assert round(out[metric]["mean"].value * 100, 2) == mean, metric
        assert round(out[metric]["sd"].value * 100, 2) == sd, metric
    # through score: the run's seed siblings
    scored = family_score(fe.score, PAPER, runs[0], runs[1:])
    assert round(scored["seeds"]["circular"]["mean"].value * 100, 2) == expected["circular"][0]


def test_table6b_needs_rotations_in_every_run():
    runs = [_rotation_seed_run("a", 1, 96, 21, 55), run("b", preds_df(_gold()), model="m", rotations=4, seed=2)]
    for r in runs:  # rotations found in the predictions only: b has none besides 0
        r.config.pop("rotations")
    out = fe.multi_seed(PAPER, runs)
    assert out["vanilla"]["mean"].reason == "run has no option rotations besides 0"
    assert out["accuracy"]["mean"].value is not None


# --------------------------------------------------------------------------- §5 always-insufficient control


def test_always_insufficient_control_on_the_paper_split():
    """000 §5: "33.33% from always selecting insufficient information" on 144 FQ2 test items; NTS = DIS = 0."""
    ref = fe.always_insufficient(PAPER)
    assert (ref["kind_accuracy"]["FQ2"].k, ref["kind_accuracy"]["FQ2"].n) == (48, 144)
    assert round(pct(ref["kind_accuracy"]["FQ2"]), 2) == 33.33
    assert (ref["nts"].k, ref["nts"].n, ref["dis"].k, ref["dis"].n) == (0, 48, 0, 48)
    assert "FQ1 items have no insufficient-information option" in ref["accuracy"].reason


@pytest.mark.parametrize("rows, fq2, nts, dis, accuracy", [
    # FQ2 only: accuracy is the FQ2 accuracy
    (fq2_group("a", "A", "D") + fq2_group("b", "B", "C"), (2, 6), (0, 2), (0, 2), (2, 6)),
    # an incomplete group (no addition) leaves DIS's denominator, not the item accuracy
    (fq2_group("a", "A", "D") + fq2_group("b", "B", "C")[:2], (2, 5), (0, 2), (0, 1), (2, 5)),
])
def test_always_insufficient_counts(rows, fq2, nts, dis, accuracy):
    ref = fe.always_insufficient(items_df(rows))
    got = ref["kind_accuracy"]["FQ2"]
    assert (got.k, got.n) == fq2
    assert (ref["nts"].k, ref["nts"].n) == nts and (ref["dis"].k, ref["dis"].n) == dis
    assert (ref["accuracy"].k, ref["accuracy"].n) == accuracy


def test_always_insufficient_equals_scoring_the_rule_as_a_run():
    """The exact reference equals the score of a run that answers every FQ2 item with its insufficient option."""
    items = PAPER[PAPER["kind"] == "FQ2"].reset_index(drop=True)
    answers = {i: m["insufficient_option"] for i, m in zip(items["item_id"], items["meta"], strict=True)}
    scored = family_score(fe.score, items, run("rule", preds_df(answers)), [])
    ref = scored["reference"]["always_insufficient"]
    for key in ("accuracy", "nts", "dis"):
        assert (ref[key].k, ref[key].n) == (scored[key].k, scored[key].n)


def test_always_insufficient_without_fq2():
    ref = fe.always_insufficient(items_df(fq1_group("a", "ABC")))
    assert ref["kind_accuracy"]["FQ2"].reason == "no FQ2 items"


# --------------------------------------------------------------------------- paired compare under a clustering


def test_compare_under_image_components():
    items = _cluster_items()
    items = items_df([*items.to_dict("records"), *fq1_group("g6", "ABC")])
    gold = dict(zip(items["item_id"], items["answer"], strict=True))
    a = run("a", preds_df(gold))
    b = run("b", preds_df({i: wrong(g) if i.startswith("g6") else g for i, g in gold.items()}))
    out = fe.compare(items, a, b, draws=500, clustering=Clustering("image"))
    assert (out["clusters"], out["clustering"]) == (4, "exact-image components")  # {g1,g2} {g3} {g4,g5} {g6}
    assert fe.compare(items, a, b, draws=500)["clusters"] == 6


# --------------------------------------------------------------------------- report tables


def test_report_tables_table13_seeds_controls(gpt_runs):
    circular, primary = gpt_runs
    metrics = to_jsonable(family_score(fe.score, _scened(13), circular, [primary]))
    rs = RunScore("gpt-circular", metrics)
    tables = {t.key: t for t in families.get("frameevidence").tables([rs])}
    t13 = tables["fe_table13"]
    assert t13.columns == ["Estimate", "95% CI · groups (96)", "95% CI · union (13)"]
    first = t13.rows[0]
    assert first.labels == ["gpt-circular", "Repeat accuracy"]
    assert display(first.cells[0]) == "45.1"
    lo, hi = get(metrics, ("repeat_intervals", "quantities", "repeat_accuracy", "group", "ci"))
    assert display(first.cells[1]) == f"[{100 * lo:.1f}, {100 * hi:.1f}]"
    diff = next(r for r in t13.rows if r.labels[1] == "Consistency, difference from R0–R1")
    assert display(diff.cells[0]) == "-5.9"
    assert "Primary run: gpt-circular → gpt-primary." in t13.note
    controls = tables["fe_controls"]
    ref = next(r for r in controls.rows if r.labels == ["Always insufficient (exact)"])
    assert display(ref.cells[controls.columns.index("FQ2 Acc")]) == "33.3"
    assert display(ref.cells[controls.columns.index("NTS")]) == "0.0"
    assert display(ref.cells[controls.columns.index("Acc")]) == "n/a"


def test_report_table6b():
    runs = [_rotation_seed_run(f"q-{s}", s, *c) for s, c in zip((1, 2, 3), [(99, 48, 97), (100, 45, 95),
                                                                             (105, 47, 90)], strict=True)]
    rs = RunScore("q-1", to_jsonable(family_score(fe.score, PAPER, runs[0], runs[1:])))
    t = {t.key: t for t in families.get("frameevidence").tables([rs])}["fe_seeds_rotations"]
    assert t.columns == ["Vanilla", "Circular", "Consistency"]
    assert [display(c) for c in t.rows[0].cells] == ["35.2 ± 1.1", "16.2 ± 0.5", "32.6 ± 1.3"]


# --------------------------------------------------------------------------- the CLI on a real store


def test_cli_score_cluster_flags(tmp_path):
    """`score --cluster group,image` on a store where two groups show the same image bytes under two paths."""
    from conftest import fe_lines, run_cli, write_benchmark

    lines = fe_lines(2, 2)
    folder = tmp_path / "bench"
    path = write_benchmark(folder, lines)
    shutil.copy(folder / "img/g1_0_1.png", folder / "img/g1_1_1.png")  # same content: one image
    db = tmp_path / "s.db"
    run_cli("import", str(path), "--name", "fe", db=db, check=True)
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps({"item_id": x["item_id"], "response": x["answer"], "repeat": rep}) + "\n"
                             for x in lines for rep in (0, 1)), encoding="utf-8")
    run_cli("import-predictions", str(preds), "--run", "r", "--model", "m", db=db, check=True)
    out = json.loads(run_cli("score", "--run", "r", "--json", "--cluster", "group,image", db=db, check=True).stdout)
    ri = out["metrics"]["repeat_intervals"]
    assert {k: v["clusters"] for k, v in ri["clusterings"].items()} == {"group": 4, "image": 3}
    assert ri["quantities"]["repeat_accuracy"]["image"]["ci"] == [1.0, 1.0]
    union = json.loads(run_cli("score", "--run", "r", "--json", "--cluster", "union", "--cluster-field",
                               "scene,relation", db=db, check=True).stdout)["metrics"]["repeat_intervals"]
    assert union["clusterings"]["union"]["clusters"] == 2  # tabletop / axial FQ1 groups, indoor / quadrant FQ2
    bad = run_cli("score", "--run", "r", "--cluster", "triplets", db=db)
    assert bad.returncode == 2 and "unknown clustering 'triplets'; expected one of group, image, scene, union" in \
        bad.stderr
    bad = run_cli("score", "--run", "r", "--cluster", "image", "--cluster-field", "scene", db=db)
    assert bad.returncode == 2 and "add scene or union to --cluster" in bad.stderr
    scene = json.loads(run_cli("score", "--run", "r", "--json", "--cluster", "scene", db=db,
                               check=True).stdout)["metrics"]["repeat_intervals"]
    assert scene["clusterings"]["scene"] == {"label": "scene clusters (meta.scene)", "clusters": 2,
                                             "fields": ["scene"]}  # tabletop FQ1 groups, indoor FQ2 groups
    bad = run_cli("score", "--all", "--cluster", "image", db=db)
    assert bad.returncode == 2 and "score --all uses the default clusterings" in bad.stderr


def test_cluster_labels_refuse_what_they_cannot_cluster():
    items = _cluster_items()
    items.loc[2, "group_id"] = None
    with pytest.raises(MetricUndefined, match=r"^1 items have no group_id to cluster by$"):
        stats.cluster_labels(items, Clustering("group"))
    for name in ("image", "union"):
        with pytest.raises(MetricUndefined, match=rf"^the {name} clustering needs the items' image content hashes "
                           r"\(an `images` column\)$"):
            stats.cluster_labels(_cluster_items().drop(columns=["images"]), Clustering(name))
    # scene links by meta values alone: no images needed; without a meta column no item has the field
    labels = stats.cluster_labels(_cluster_items().drop(columns=["images"]), Clustering("scene"))
    assert list(labels) == ["g1", "g2", "g2", "g3", "g3", "g5"]
    with pytest.raises(MetricUndefined, match=r"^scene clustering: no item has meta.scene$"):
        stats.cluster_labels(_cluster_items().drop(columns=["images", "meta"]), Clustering("scene"))


def test_cluster_labels_of_no_items_and_of_groups():
    empty = _cluster_items().iloc[:0]
    assert len(stats.cluster_labels(empty, Clustering("union"))) == 0
    items = _cluster_items()
    labels = stats.cluster_labels(items, Clustering("group"))
    labels[0] = "changed"  # a copy: the items keep their group ids
    assert items["group_id"].iloc[0] == "g1"


def test_scene_clustering_skips_missing_and_nan_values():
    items = _cluster_items()
    items["meta"] = [{"scene": "x"}, {"scene": float("nan")}, {"scene": float("nan")}, {"scene": None}, {},
                     {"scene": "x"}]
    labels = stats.cluster_labels(items, Clustering("scene"))
    assert dict(zip(items["group_id"], labels, strict=True)) == {"g1": "g1", "g2": "g2", "g3": "g3", "g4": "g4",
                                                                 "g5": "g1"}


def test_clustering_labels_and_keys_of_every_name():
    assert [Clustering.parse(n).label for n in ("group", "image", "scene", "union")] == [
        "groups", "exact-image components", "scene clusters (meta.scene)", "union components (images, meta.scene)"]
    assert [Clustering.parse(n).key for n in ("group", "image", "scene", "union")] == [
        "group", "image", "scene", "union:scene"]
    assert Clustering.parse("scene", "scene,template").label == "scene clusters (meta.scene / meta.template)"
    # fields apply to scene and union only; the others keep the default
    assert Clustering.parse(" Group ", "template") == Clustering("group", ("scene",))
    assert Clustering.parse("image", ["template"]).fields == ("scene",)
    assert Clustering.parse("union", ["meta.template", " scene "]).fields == ("template", "scene")
    with pytest.raises(stats.UnknownClustering, match=r"^unknown clustering ''; expected one of group, image, scene, "
                       r"union$"):
        Clustering.parse("")
    with pytest.raises(stats.UnknownClustering, match=r"^union fields 'scene, ': expected meta field names separated "
                       r"by commas \(e.g. scene,template\)$"):
        Clustering.parse("union", "scene, ")


def test_cluster_labels_keep_row_order():
    items = _cluster_items().iloc[::-1].reset_index(drop=True)
    labels = stats.cluster_labels(items, Clustering("image"))
    assert list(labels) == ["g4", "g4", "g3", "g1", "g1", "g1"]
    assert isinstance(labels, np.ndarray)


def test_cluster_labels_count_every_item_without_a_group():
    items = _cluster_items()
    items.loc[[0, 3], "group_id"] = None
    with pytest.raises(MetricUndefined, match=r"^2 items have no group_id to cluster by$"):
        stats.cluster_labels(items, Clustering("image"))


def test_image_clustering_links_only_through_image_lists():
    """An `images` cell that is not a list (missing, or a bare string) shows no image: it links nothing. A
    string is not read as the characters' images ("h1" and "h2" share "h")."""
    items = _cluster_items()
    items["images"] = [["h1"], None, "h2", ["h4"], "h1", ["h4"]]
    labels = stats.cluster_labels(items, Clustering("image"))
    assert list(labels) == ["g1", "g2", "g2", "g3", "g4", "g3"]


def test_equal_meta_values_link_whatever_their_spelling():
    """Groups share a value when the values are equal: a dict with its keys in another order is the same value;
    a value JSON cannot write (a date) is compared by its text, and "1" and 1 stay apart."""
    import datetime

    items = _cluster_items()
    items["meta"] = [{"scene": {"room": "k", "floor": 1}}, {"scene": datetime.date(2024, 5, 1)},
                     {"scene": datetime.date(2024, 5, 1)}, {"scene": {"floor": 1, "room": "k"}}, {"scene": "1"},
                     {"scene": 1}]
    labels = stats.cluster_labels(items, Clustering("scene"))
    assert dict(zip(items["group_id"], labels, strict=True)) == {"g1": "g1", "g2": "g2", "g3": "g1", "g4": "g4",
                                                                 "g5": "g5"}
    items["meta"] = [{"scene": datetime.date(2024, 5, 1)}, {}, {}, {}, {}, {"scene": datetime.date(2024, 5, 1)}]
    labels = stats.cluster_labels(items, Clustering("scene"))
    assert dict(zip(items["group_id"], labels, strict=True)) == {"g1": "g1", "g2": "g2", "g3": "g3", "g4": "g4",
                                                                 "g5": "g1"}
