"""FrameEvidence (000) tables of the Metrics tab and the exports (core.report_tables)."""

from __future__ import annotations

from collections.abc import Sequence

from core.families.frameevidence.vocab import FQ1_VARIANTS, FQ2_VARIANTS
from core.report_tables import (
    Cell,
    Row,
    RunScore,
    Table,
    get,
    keys_at,
    reason_of,
    run_table,
    table_cell,
    value_of,
)

# ---- FrameEvidence (000) ------------------------------------------------------------------------------------

FE_MAIN = [("P", ("macro_precision",)), ("R", ("macro_recall",)), ("F1", ("macro_f1",)),
           ("Acc", ("accuracy",)), ("GEM", ("fq1_gem",)), ("NTS", ("nts",)), ("DIS", ("dis",))]
FE_STRATA = {"n_images": "image count", "relation": "relation", "scene": "scene", "source": "source",
             "ordinal_change": "ordinal change"}


def fe_main(runs: Sequence[RunScore], key: str = "fe_table4", title: str | None = None) -> Table:
    """000 Table 4: P / R / F1 / Acc / GEM / NTS / DIS per run, then the exact uniform-random reference row."""
    t = run_table(key, title or "Main results (000 Table 4 layout)", runs, FE_MAIN,
                  note="Macro P/R/F1 over A-D; GEM = FQ1 group exact match; NTS / DIS over FQ2 groups. The "
                       "uniform-random row is the exact finite-test expectation under the gold supports.")
    if runs:
        ref = runs[0]
        t.rows.append(Row(["Uniform random (exact)"],
                          [table_cell(ref, ("reference", "uniform_random", *p), "rate") for _, p in FE_MAIN],
                          ref.name, False, reference=True))
    return t


def tables(runs: Sequence[RunScore], controls: Sequence[RunScore] = ()) -> list[Table]:
    """Every FrameEvidence table over the selected runs; `controls` are the baseline runs (fe_controls)."""
    out = [fe_main(runs)]
    out.append(run_table("fe_independence", "Joint metrics beside the independence reference", runs, [
        ("GEM", ("fq1_gem",)), ("GEM indep.", ("independence", "fq1_gem")),
        ("NTS", ("nts",)), ("NTS indep.", ("independence", "nts")),
        ("DIS", ("dis",)), ("DIS indep.", ("independence", "dis"))],
        note="Independence reference = product of the variant accuracies."))
    out.append(run_table("fe_variants", "Accuracy per variant", runs, [
        ("Coverage", ("coverage",)), *[(v, ("variant_accuracy", v)) for v in (*FQ1_VARIANTS, *FQ2_VARIANTS)],
        ("FQ1", ("kind_accuracy", "FQ1")), ("FQ2", ("kind_accuracy", "FQ2"))]))
    out.append(run_table("fe_figure5", "Initial vs conditional success (000 Figure 5)", runs, [
        ("Initial (MSS)", ("transitions", "initial")), ("Cond. del", ("transitions", "conditional", "del")),
        ("Cond. add", ("transitions", "conditional", "add")), ("NTS", ("nts",)), ("DIS", ("dis",)),
        ("Kept del", ("transitions", "answer_kept", "del")), ("Kept add", ("transitions", "answer_kept", "add"))],
        note="Initial over all FQ2 groups; conditional over each run's MSS-correct groups."))
    for mode, label in (("text", "text-only"), ("first", "first-image")):
        out.append(fe_deltas(runs, mode, label))
    out.append(fe_decomposition(runs))
    out.append(fe_rotations(runs))
    out.append(fe_repeats(runs))
    out.append(run_table("fe_insufficiency", "Insufficiency choices per condition (000 Table 8)", runs, [
        ("MSS", ("insufficiency", "counts", "mss")), ("del", ("insufficiency", "counts", "del")),
        ("add", ("insufficiency", "counts", "add")), ("invalid MSS", ("insufficiency", "invalid", "mss")),
        ("invalid del", ("insufficiency", "invalid", "del")), ("invalid add", ("insufficiency", "invalid", "add")),
        ("Precision", ("insufficiency", "precision")), ("Recall", ("insufficiency", "recall"))],
        note="Share of items answered with the insufficient-information option; recall over deletion items, "
             "precision over every insufficiency answer."))
    out.append(run_table("fe_pairwise", "Pairwise frame analysis", runs, [
        ("Pairs", ("pairwise_frames", "pairs")), ("Repeated dir.", ("pairwise_frames", "repeated")),
        ("Changed", ("pairwise_frames", "changed")), ("Invalid", ("pairwise_frames", "invalid")),
        ("Both correct", ("pairwise_frames", "both_correct")),
        ("Triplets correct", ("pairwise_frames", "triplets_correct"))]))
    for stratum, label in FE_STRATA.items():
        out.append(fe_stratum(runs, stratum, label))
    out.append(fe_table13(runs))
    out.append(fe_seeds(runs))
    out.append(fe_seeds_rotations(runs))
    out.append(fe_controls(controls, runs))
    return [t for t in out if not t.empty]


FE_CONTROL_COLS = [*FE_MAIN, ("FQ2 Acc", ("kind_accuracy", "FQ2"))]


def fe_controls(controls: Sequence[RunScore], runs: Sequence[RunScore]) -> Table:
    """000 Table 10 / §5: the baseline runs, then the exact always-insufficient control and uniform reference
    (read from the first baseline's, else the first picked run's, metrics: they depend on the items only)."""
    t = run_table("fe_controls", "Metadata-control and text baselines (train-fitted) · 000 §5, Table 10", controls,
                  FE_CONTROL_COLS,
                  note="Every baseline run of this benchmark (majority letter, image count, count + insufficiency "
                       "letter, character TF-IDF, uniform random), whatever the run picker says. Always insufficient "
                       "(§5): every FQ2 item answered with its insufficient-information option, exact from the gold "
                       "answers; it answers no FQ1 item, so FQ2 Acc is its accuracy (33.33% on the paper's split).")
    source = controls[0] if controls else (runs[0] if runs else None)
    if source is not None:
        base = ("reference", "always_insufficient")
        t.rows.append(Row(["Always insufficient (exact)"], [table_cell(source, (*base, *p), "rate") for _, p in
                                                            FE_CONTROL_COLS], source.name, False, reference=True))
        uniform = [(*("reference", "uniform_random"), *p) for _, p in FE_MAIN] + [
            ("reference", "uniform_random", "accuracy")]  # 1/4 on any subset of items, FQ2 among them
        t.rows.append(Row(["Uniform random (exact)"], [table_cell(source, p, "rate") for p in uniform], source.name,
                          False, reference=True))
    return t


TABLE13_LABELS = {
    "repeat_accuracy": "Repeat accuracy", "primary_repeat_disagreement": "Primary–repeat disagreement",
    "r0_repeat_disagreement": "R0–repeat disagreement", "repeat_minus_primary_accuracy": "Repeat minus primary accuracy",
    "repeat_minus_r0_accuracy": "Repeat minus R0 accuracy", "both_correct": "Same-order pair both correct",
    "consistency": "Same-order pair consistency",
}


def _table13_label(key: str) -> str:
    if key in TABLE13_LABELS:
        return TABLE13_LABELS[key]
    metric, _, rot = key.partition("_minus_")
    return f"{'Both correct' if metric == 'both_correct' else 'Consistency'}, difference from R0–{rot}"


def fe_table13(runs: Sequence[RunScore]) -> Table:
    """000 Table 13: each repeat / rotation quantity with its 95% cluster-bootstrap interval under each
    clustering, side by side (the clusterings of the first run that has them name the columns)."""
    schemes: list[tuple[str, str]] = []
    for r in runs:
        node = get(r.metrics, ("repeat_intervals", "clusterings"))
        if isinstance(node, dict):
            for name, info in node.items():
                size = info.get("clusters") if isinstance(info, dict) and "clusters" in info else None
                label = name if name != "group" else "groups"
                schemes.append((name, f"95% CI · {label}" + (f" ({size})" if size is not None else "")))
            break
    cols = ["Estimate", *[label for _, label in schemes]]
    rows: list[Row] = []
    for r in runs:
        node = get(r.metrics, ("repeat_intervals",))
        if node is None:
            continue
        if reason_of(node) is not None:
            rows.append(Row([r.name, "—"], [Cell(node, ("repeat_intervals",), r.name) for _ in cols], r.name,
                            r.synthetic))
            continue
        for key in node.get("quantities", {}):
            base = ("repeat_intervals", "quantities", key)
            diff = "minus" in key
            cells = [table_cell(r, (*base, "estimate"), "diff" if diff else "rate")]
            cells += [table_cell(r, (*base, name), "interval_diff" if diff else "interval") for name, _ in schemes]
            rows.append(Row([r.name, _table13_label(key)], cells, r.name, r.synthetic))
    primary = [f"{r.name} → {get(r.metrics, ('repeat_intervals', 'primary'))}" for r in runs
               if isinstance(get(r.metrics, ("repeat_intervals", "primary")), str)]
    note = ("Rates in %, differences in points. R0 = rotation 0 / repeat 0, the repeat = rotation 0 / repeat 1; "
            "contrasts subtract the R0–Rj pair from the R0–repeat pair. Percentile cluster bootstrap, 20,000 draws, "
            "seed 20261010, whole clusters resampled, item-weighted ratios.")
    if primary:
        note += f" Primary run: {', '.join(primary)}."
    return Table("fe_table13", "Same-order repeat with 95% cluster-bootstrap intervals (000 Table 13)",
                 ["Run", "Quantity"], cols, rows, note=note)


def fe_seeds_rotations(runs: Sequence[RunScore]) -> Table:
    """000 Table 6b: Vanilla / Circular / Consistency as multi-seed mean ± sample SD."""
    cols = [("Vanilla", "vanilla"), ("Circular", "circular"), ("Consistency", "consistency")]
    rows = []
    for r in runs:
        node = get(r.metrics, ("seeds",))
        if node is None:
            continue
        if reason_of(node) is not None:
            rows.append(Row([r.name], [Cell(node, ("seeds",), r.name) for _ in cols], r.name, r.synthetic))
            continue
        cells = []
        for _, m in cols:
            mean, sd = get(r.metrics, ("seeds", m, "mean")), get(r.metrics, ("seeds", m, "sd"))
            if reason_of(mean) is not None:
                cells.append(Cell(mean, ("seeds", m, "mean"), r.name))
                continue
            cells.append(Cell({"value": value_of(mean), "sd": value_of(sd) if reason_of(sd) is None else None},
                              ("seeds", m, "mean"), r.name, "mean_sd"))
        rows.append(Row([r.name], cells, r.name, r.synthetic))
    return Table("fe_seeds_rotations", "Option rotations, multi-seed mean ± sample SD (000 Table 6b)", ["Run"],
                 [c for c, _ in cols], rows, note="Over runs that differ from the row's run only in seed; Vanilla "
                                                  "uses each run's own rotation-0 answers.")


def fe_deltas(runs: Sequence[RunScore], mode: str, label: str) -> Table:
    cols = [("Partner", ("input_modes", mode, "partner")),
            *[(f"Δ{m}", ("input_modes", mode, "delta", k)) for m, k in
              (("Acc", "accuracy"), ("GEM", "fq1_gem"), ("NTS", "nts"), ("DIS", "dis"))]]
    t = run_table(f"fe_delta_{mode}", f"All images minus {label} (000 Table 5 layout)", runs, cols,
                  note=f"Percentage points; the partner is the {label} run of the same model, strategy and shots.",
                  kind="diff")
    for row in t.rows:
        row.cells[0].kind = "text"
    for row in t.rows:
        node = get(next(r for r in runs if r.name == row.run).metrics, ("input_modes", mode))
        if reason_of(node) is not None:
            row.cells = [Cell(node, ("input_modes", mode), row.run) for _ in cols]
    return t


def fe_decomposition(runs: Sequence[RunScore]) -> Table:
    cols = ["Net", "Shared groups", "Shared gained", "Shared lost", "Shared net", "MSS gained", "MSS lost",
            "Coverage gained", "Coverage lost", "Coverage net"]
    paths = [("net",), ("shared_mss_correct", "groups"), ("shared_mss_correct", "gained"),
             ("shared_mss_correct", "lost"), ("shared_mss_correct", "net"), ("changed_coverage", "mss_gained_groups"),
             ("changed_coverage", "mss_lost_groups"), ("changed_coverage", "gained"), ("changed_coverage", "lost"),
             ("changed_coverage", "net")]
    rows = []
    for r in runs:
        for mode in ("text", "first"):
            for m in ("nts", "dis"):
                base = ("input_modes", mode, "decomposition", m)
                if get(r.metrics, base) is None:
                    continue
                rows.append(Row([r.name, f"{mode} → all", m.upper()], [table_cell(r, (*base, *p)) for p in paths],
                                r.name, r.synthetic))
    return Table("fe_decomposition", "Paired decomposition of NTS / DIS changes (000 §7)", ["Run", "From", "Metric"],
                 cols, rows, note="Net successes split into shared MSS-correct groups and changed MSS coverage.")


def fe_rotations(runs: Sequence[RunScore]) -> Table:
    rots = keys_at(runs, ("per_rotation",), ("0", "1", "2", "3"))
    cols = [("Vanilla", ("vanilla",)), ("Circular", ("circular",)), ("Consistency", ("consistency",)),
            ("Mean rot.", ("mean_rotation",)), ("Drop", ("drop",)),
            *[(f"R{k}", ("per_rotation", k)) for k in rots]]
    t = run_table("fe_rotations", "Option-rotation metrics (000 Tables 6 / 12)", runs, cols,
                  note="Four cyclic rotations; Circular needs all four correct, Consistency four identical valid "
                       "decoded answers; Drop = Vanilla - Circular.")
    for row in t.rows:
        row.cells[4].kind = "diff"
    return t


REPEAT_COLS = [("Both correct", "both_correct"), ("≥1 correct", "at_least_one_correct"),
               ("Consistency", "consistency"), ("Consistently wrong", "consistently_wrong"), ("Changed", "changed")]


def fe_repeats(runs: Sequence[RunScore]) -> Table:
    rows = []
    for r in runs:
        node = get(r.metrics, ("repeats",))
        if reason_of(node) is not None:
            rows.append(Row([r.name, "—"], [Cell(node, ("repeats",), r.name) for _ in REPEAT_COLS], r.name,
                            r.synthetic))
            continue
        for pair, block in node.items():
            if pair == "differences" or not isinstance(block, dict):
                continue
            label = "repeat 0 vs 1 (same order)" if pair.startswith("repeat") else f"rotation 0 vs {pair}"
            rows.append(Row([r.name, label], [table_cell(r, ("repeats", pair, k)) for _, k in REPEAT_COLS],
                            r.name, r.synthetic))
    return Table("fe_repeats", "Same-order repeat and rotation pairs (000 Table 7)", ["Run", "Pair"],
                 [c for c, _ in REPEAT_COLS], rows)


def fe_stratum(runs: Sequence[RunScore], stratum: str, label: str) -> Table:
    values = keys_at(runs, ("strata", stratum))
    cols = [("Acc", "accuracy"), ("GEM", "fq1_gem"), ("NTS", "nts"), ("DIS", "dis")]
    rows = [Row([v, r.name], [table_cell(r, ("strata", stratum, v, k)) for _, k in cols], r.name, r.synthetic)
            for v in values for r in runs if get(r.metrics, ("strata", stratum, v)) is not None]
    return Table(f"fe_strata_{stratum}", f"By {label}", [label.capitalize(), "Run"], [c for c, _ in cols], rows)


def fe_seeds(runs: Sequence[RunScore]) -> Table:
    rows = []
    cols = ["Mean Acc", "SD Acc", "Mean F1", "SD F1", "Mean GEM", "SD GEM", "Mean NTS", "SD NTS", "Mean DIS",
            "SD DIS"]
    for r in runs:
        node = get(r.metrics, ("seeds",))
        if reason_of(node) is not None:
            rows.append(Row([r.name], [Cell(node, ("seeds",), r.name) for _ in cols], r.name, r.synthetic))
            continue
        cells = []
        for m in ("accuracy", "macro_f1", "fq1_gem", "nts", "dis"):
            cells += [table_cell(r, ("seeds", m, "mean"), "rate"), table_cell(r, ("seeds", m, "sd"), "rate")]
        rows.append(Row([r.name], cells, r.name, r.synthetic))
    return Table("fe_seeds", "Multi-seed mean ± sample SD", ["Run"], cols, rows,
                 note="Over runs that differ from the row's run only in seed.")
