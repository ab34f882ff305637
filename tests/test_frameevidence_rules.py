"""FrameEvidence item rules (000 §3, §4.1, App. A): image counts, view numbers, the MSS gold; the FQ2 view's labels.

Every case is a real items file with real PNGs, validated by the importer; a refused file names file, line, field
and what was expected, and an import of it writes nothing.
"""

from __future__ import annotations

import re

import pytest
from conftest import fe_lines, write_benchmark

FQ2_OPTS = {"A": "前", "B": "后", "C": "左", "D": "信息不足"}
FQ1_OPTS = {"A": "前", "B": "后", "C": "左", "D": "右"}


def fq2(gid: str, n_mss: int, *, withheld: int = 2, added_at: int | None = None, positions: bool = True,
        mss_gold: str = "B", ins: str = "D") -> list[dict]:
    """One FQ2 triplet: an MSS of `n_mss` views numbered 1..n_mss+1 less the added one, the deletion withholding
    MSS image `withheld` (1-based), the addition inserting the extra view at `added_at` (0-based; default last)."""
    views = list(range(1, n_mss + 2))
    added_at = n_mss if added_at is None else added_at
    add_views = views
    mss_views = [v for i, v in enumerate(views) if i != added_at]
    del_views = [v for i, v in enumerate(mss_views, 1) if i != withheld]
    lines = []
    for variant, vs, gold in (("mss", mss_views, mss_gold), ("del", del_views, ins), ("add", add_views, mss_gold)):
        meta = {"insufficient_option": ins, "scene": "indoor", "relation": "quadrant", "source": "rendered"}
        if positions:
            meta["original_positions"] = list(vs)
        lines.append({"benchmark": "frameevidence", "item_id": f"{gid}-{variant}", "group_id": gid, "split": "test",
                      "kind": "FQ2", "variant": variant, "images": [f"img/{gid}_{v}.png" for v in vs],
                      "question": "请综合所有图片回答：杯子位于书的什么方向？", "options": FQ2_OPTS, "answer": gold,
                      "meta": meta})
    return lines


def fq1(gid: str, n: int, **meta) -> list[dict]:
    imgs = [f"img/{gid}_{i}.png" for i in range(1, n + 1)]
    return [{"benchmark": "frameevidence", "item_id": f"{gid}-{v}", "group_id": gid, "split": "test", "kind": "FQ1",
             "variant": v, "images": imgs, "question": f"{v} 问题", "options": {"A": "前", "B": "后", "C": "左", "D": "右"},
             "answer": a, "meta": dict(meta)} for v, a in (("cam", "A"), ("obj", "B"), ("scene", "C"))]


# 000 §3 "entity identities, relation ontology and option meanings remain fixed"; App. A "FQ1 preserves ordered
# images, options and entity fields across its three frame variants".
ENTITIES = {"target": "杯子", "relatum": "书", "relation": "axial"}


def edit(lines: list[dict], item_id: str, **changes) -> list[dict]:
    out = [dict(x, meta=dict(x["meta"])) for x in lines]
    for x in out:
        if x["item_id"] == item_id:
            for k, v in changes.items():
                if k.startswith("meta_"):
                    x["meta"][k[5:]] = v
                else:
                    x[k] = v
    return out


BASE = fe_lines()  # 12 valid lines; added groups start on line 13
N = len(BASE)


def validate(tmp_path, extra: list[dict]):
    from db.importers import validate_items_file

    return validate_items_file(write_benchmark(tmp_path / "b", BASE + extra))


# Accepted: what the paper allows, including the five-image addition that used to be refused.
ACCEPTED = {
    "mss4_add5_last": fq2("g4", 4),
    "mss4_add5_middle": fq2("g4", 4, added_at=2, withheld=4),
    "mss2_del1_add3": fq2("g2", 2, withheld=1),
    "mss3_no_positions": fq2("g3", 3, positions=False),
    "mss4_views_not_from_one": edit(edit(edit(fq2("g4", 4), "g4-mss", meta_original_positions=[2, 4, 6, 8]),
                                         "g4-del", meta_original_positions=[2, 6, 8]),
                                    "g4-add", meta_original_positions=[2, 4, 6, 8, 9]),
    "fq1_four_images": fq1("f4", 4),
    "fq1_entity_fields_kept": fq1("fe", 3, **ENTITIES),
    "fq1_positions_distinct_positive": fq1("fp", 3, original_positions=[2, 5, 7]),
    "fq1_two_images": fq1("f2", 2),
}


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_paper_item_shapes_are_accepted(case, tmp_path):
    report = validate(tmp_path, ACCEPTED[case])
    assert report.ok, [str(i) for i in report.errors]


# Refused: (extra lines, [(line, field, text the message must contain)]) -- every error of the file is listed.
REFUSED = {
    "mss5_add6": (fq2("g5", 5), [(N + 1, "images", "FQ2 group 'g5': the MSS shows 5 image(s), expected two to "
                                  "four"), (N + 3, "images", "expected one to five images (000 §3), got 6")]),
    "mss1_del0": (fq2("g1", 1, withheld=1), [(N + 1, "images", "shows 1 image(s), expected two to four"),
                                             (N + 2, "images", "expected one to five images (000 §3), got 0")]),
    "fq1_five_images": (fq1("f5", 5), [(N + 1, "images", "the frame triplet shows 5 image(s), expected two to four")]),
    "fq1_one_image": (fq1("f1", 1), [(N + 1, "images", "the frame triplet shows 1 image(s), expected two to four")]),
    "fq1_no_image": (fq1("f0", 0), [(N + 1, "images", "got 0"), (N + 2, "images", "got 0"),
                                    (N + 3, "images", "got 0"), (N + 1, "images", "shows 0 image(s)")]),
    "mss_gold_insufficient": (edit(edit(fq2("g3", 3), "g3-mss", answer="D"), "g3-add", answer="D"),
                              [(N + 1, "answer", "the MSS gold must be a spatial answer, not the insufficient option 'D'")]),
    "add_gold_insufficient": (edit(fq2("g3", 3), "g3-add", answer="D"),
                              [(N + 3, "answer", "addition gold must equal the MSS gold 'B', got 'D'")]),
    "positions_repeat_a_view": (edit(fq2("g3", 3), "g3-mss", meta_original_positions=[1, 1, 3]),
                                [(N + 1, "meta.original_positions", "expected 3 distinct positive view numbers")]),
    "positions_zero": (edit(fq2("g3", 3), "g3-del", meta_original_positions=[0, 3]),
                       [(N + 2, "meta.original_positions", "expected 2 distinct positive view numbers")]),
    "positions_bool": (edit(fq2("g3", 3), "g3-del", meta_original_positions=[True, 3]),
                       [(N + 2, "meta.original_positions", "got [True, 3]")]),
    "positions_text": (edit(fq2("g3", 3), "g3-add", meta_original_positions="1,2,3,4"),
                       [(N + 3, "meta.original_positions", "one per image in order")]),
    "positions_too_few": (edit(fq2("g4", 4), "g4-add", meta_original_positions=[1, 2, 3, 4]),
                          [(N + 3, "meta.original_positions", "expected 5 distinct positive view numbers")]),
    "del_positions_not_mss_less_one": (edit(fq2("g3", 3, withheld=2), "g3-del", meta_original_positions=[1, 2]),
                                       [(N + 2, "meta.original_positions",
                                         "expected the MSS's view numbers less the withheld one, [1, 3]")]),
    "add_positions_renumber_the_mss": (edit(fq2("g3", 3), "g3-add", meta_original_positions=[1, 2, 4, 3]),
                                       [(N + 3, "meta.original_positions",
                                         "expected the MSS's view numbers [1, 2, 3] (line 13) in order plus a new one "
                                         "for the added image (position 4), got [1, 2, 4, 3]")]),
    "fq1_obj_other_target": (edit(fq1("fe", 2, **ENTITIES), "fe-obj", meta_target="手机"),
                             [(N + 2, "meta.target", "FQ1 group 'fe': obj must keep cam's entity field (line 13: "
                               "'杯子'; 000 §3, App. A), got '手机'")]),
    "fq1_obj_other_relatum": (edit(fq1("fe", 2, **ENTITIES), "fe-obj", meta_relatum="手机"),
                              [(N + 2, "meta.relatum", "got '手机'")]),
    "fq1_scene_other_relation": (edit(fq1("fe", 2, **ENTITIES), "fe-scene", meta_relation="quadrant"),
                                 [(N + 3, "meta.relation", "scene must keep cam's entity field")]),
    "fq1_scene_lacks_relatum": ([x if x["variant"] != "scene" else dict(x, meta={"target": "杯子", "relation": "axial"})
                                 for x in fq1("fe", 2, **ENTITIES)],
                                [(N + 3, "meta.relatum", "got missing")]),
    "fq1_positions_repeat": (fq1("fp", 2, original_positions=[1, 1]),
                             [(N + i, "meta.original_positions", "expected 2 distinct positive view numbers")
                              for i in (1, 2, 3)]),
    "fq1_positions_differ_in_triplet": (edit(fq1("fp", 2, original_positions=[1, 2]), "fp-obj",
                                             meta_original_positions=[2, 3]),
                                        [(N + 2, "meta.original_positions", "obj must give cam's view numbers [1, 2]")]),
    "insufficient_differs_in_group": (edit(fq2("g3", 3), "g3-del", meta_insufficient_option="C", answer="C"),
                                      [(N + 2, "meta.insufficient_option", "expected the MSS's 'D' (line 13), got 'C'")]),
    "insufficient_not_a_letter": (edit(fq2("g3", 3), "g3-mss", meta_insufficient_option=["D"]),
                                  [(N + 1, "meta.insufficient_option", "is not an option letter (expected one of ABCD)")]),
    # a row per group rule of docs/FORMATS.md (issue 28 point 3): each fails when its rule alone is removed
    "options_not_a_to_d": ([dict(x, options={**FQ1_OPTS, "E": "上"}) for x in fq1("f2", 2)],
                           [(N + i, "options", "expected the four options A-D, got 'ABCDE'") for i in (1, 2, 3)]),
    "fq1_images_reordered": (edit(fq1("f2", 2), "f2-obj", images=["img/f2_2.png", "img/f2_1.png"]),
                             [(N + 2, "images", "obj must show the same ordered images as cam (line 13)")]),
    "fq1_options_differ": (edit(fq1("f2", 2), "f2-scene", options={**FQ1_OPTS, "D": "上"}),
                           [(N + 3, "options", "scene must have the same options as cam (line 13)")]),
    "fq1_one_gold": (edit(edit(fq1("f2", 2), "f2-obj", answer="A"), "f2-scene", answer="A"),
                     [(N + 1, "answer", "expected at least two distinct gold answers across cam / obj / scene")]),
    "fq1_lacks_scene": (fq1("f2", 2)[:2], [(N + 1, "variant", "FQ1 group 'f2' lacks scene")]),
    "fq1_variant_twice": (fq1("f2", 2) + [dict(fq1("f2", 2)[2], item_id="f2-scene2")],
                          [(N + 4, "variant", "group 'f2' has 'scene' twice (also line 15)")]),
    "group_mixes_kinds": (edit(fq2("g3", 3), "g3-add", kind="FQ1", variant="cam"),
                          [(N + 1, "kind", "group 'g3' mixes FQ1 and FQ2")]),
    "unknown_kind": (edit(fq1("f2", 2), "f2-cam", kind="FQ3"),
                     [(N + 1, "kind", "expected FQ1 or FQ2, got 'FQ3'"), (N + 2, "variant", "lacks cam")]),
    "unknown_variant": (edit(fq1("f2", 2), "f2-cam", variant="mss"),
                        [(N + 1, "variant", "expected one of cam / obj / scene for FQ1, got 'mss'"),
                         (N + 2, "variant", "lacks cam")]),
    "fq2_question_differs": (edit(fq2("g3", 3), "g3-del", question="另一个问题"),
                             [(N + 2, "question", "del must repeat the MSS question (line 13) word for word")]),
    "fq2_options_differ": (edit(fq2("g3", 3), "g3-add", options={**FQ2_OPTS, "C": "右"}),
                           [(N + 3, "options", "add must have the MSS options (line 13)")]),
    "del_images_out_of_order": (edit(fq2("g3", 3), "g3-del", images=["img/g3_3.png", "img/g3_1.png"],
                                     meta_original_positions=[3, 1]),
                                [(N + 2, "images", "deletion must remove exactly one MSS image and keep the others "
                                  "in order")]),
    "add_images_out_of_order": (edit(fq2("g3", 3), "g3-add",
                                     images=["img/g3_2.png", "img/g3_1.png", "img/g3_3.png", "img/g3_4.png"],
                                     meta_original_positions=[2, 1, 3, 4]),
                                [(N + 3, "images", "addition must add exactly one image to the MSS images and keep "
                                  "them in order")]),
    "insufficient_missing": ([dict(x, meta={k: v for k, v in x["meta"].items() if k != "insufficient_option"})
                              if x["variant"] == "add" else x for x in fq2("g3", 3)],
                             [(N + 3, "meta.insufficient_option",
                               "missing (expected the letter of the insufficient-information option)")]),
    "del_gold_not_insufficient": (edit(fq2("g3", 3), "g3-del", answer="B"),
                                  [(N + 2, "answer", "deletion gold must be the insufficient option 'D', got 'B'")]),
    "image_twice_in_item": ([dict(x, images=["img/f2_1.png", "img/f2_1.png"]) for x in fq1("f2", 2)],
                            [(N + i, "images", "the same image content appears twice in one item") for i in (1, 2, 3)]),
    "image_crosses_splits": ([dict(x, split="train", images=["img/g1_0_1.png", "img/f2_2.png"]) for x in fq1("f2", 2)],
                             [(N + i, "images", "image content also used in split 'test' (item g1_0-cam, line 1)")
                              for i in (1, 2, 3)]),
    "group_spans_splits": (edit(fq1("f2", 2), "f2-scene", split="train"),
                           [(N + 3, "images", "also used in split 'test' (item f2-cam, line 13)")] * 2
                           + [(N + 1, "split", "group 'f2' spans several splits")]),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_rule_breaks_name_file_line_field_and_expectation(case, tmp_path):
    extra, expected = REFUSED[case]
    report = validate(tmp_path, extra)
    got = [str(i) for i in report.errors]
    for line, fld, text in expected:
        assert any(s.startswith(f"items.jsonl:{line}: {fld}: ") and text in s for s in got), (line, fld, text, got)
    assert len(got) == len(expected), got


def test_five_image_addition_imports_and_the_view_labels_it_i5(tmp_path, store):
    """A four-view MSS plus one added view: imported, and the FQ2 view labels the added view I5 (000 Figure 4)."""
    from db.importers import import_items
    from ui.views import frameevidence as view
    from ui.views import load_group

    lines = BASE + fq2("g4", 4) + fq2("h4", 4, positions=False)
    import_items(store, write_benchmark(tmp_path / "b", lines), name="fe5")
    for gid in ("g4", "h4"):
        html = view.render(store, load_group(store, "fe5", gid))
        add_col = html.split("Addition: one view added", 1)[1].split('class="cc-col"', 1)[0]
        labels = re.findall(r'<span class="cc-img-label">([^<]*)</span>', add_col)
        assert labels == ["I1", "I2", "I3", "I4", "I5"], (gid, labels)
        assert "+ added I5" in add_col and "#5" not in html


def test_refused_release_writes_nothing(tmp_path, store):
    from core.errors import ImportRefused
    from db.importers import import_items

    before = store.counts()
    path = write_benchmark(tmp_path / "b", BASE + fq2("g5", 5))
    with pytest.raises(ImportRefused) as exc:
        import_items(store, path, name="bad")
    assert "items.jsonl:13: images:" in str(exc.value)
    assert store.counts() == before
