"""FrameEvidence (000) tables of the Metrics tab and the exports (core.report_tables), read from the catalogue."""

from __future__ import annotations

from collections.abc import Sequence

from core.catalogue import Column
from core.families.frameevidence import catalogue as c
from core.families.frameevidence.vocab import FQ1_VARIANTS, FQ2_VARIANTS
from core.metrics.catalogue import ACCURACY, CIRCULAR, CONSISTENCY, DROP, MEAN_ROTATION, VANILLA
from core.report_tables import (
    Cell,
    Row,
    RunScore,
    Table,
    cell,
    keys_at,
    reason_of,
    run_table,
    value,
    value_of,
)

FE_STRATA = {"n_images": "image count", "relation": "relation", "scene": "scene", "source": "source",
             "ordinal_change": "ordinal change"}


def fe_main(runs: Sequence[RunScore], key: str = "fe_table4", title: str | None = None) -> Table:
    """000 Table 4: P / R / F1 / Acc / GEM / NTS / DIS per run, then the exact uniform-random reference row."""
    t = run_table(key, title or "Main results (000 Table 4 layout)", runs, c.TABLE4,
                  note="Macro P/R/F1 over A-D; GEM = FQ1 group exact match; NTS / DIS over FQ2 groups. The "
                       "uniform-random row is the exact finite-test expectation under the gold supports.")
    if runs:
        ref = runs[0]
        t.rows.append(Row([c.UNIFORM_RANDOM.label], [cell(ref, c.UNIFORM.at(m.key, unit="rate")) for m in c.TABLE4],
                          ref.name, False, reference=True))
    return t


def tables(runs: Sequence[RunScore], controls: Sequence[RunScore] = ()) -> list[Table]:
    """Every FrameEvidence table over the selected runs; `controls` are the baseline runs (fe_controls)."""
    out = [fe_main(runs)]
    out.append(run_table("fe_independence", "Joint metrics beside the independence reference", runs,
                         [col for m in c.JOINT for col in (m, c.INDEPENDENT[m.key])],
                         note="Independence reference = product of the variant accuracies."))
    out.append(run_table("fe_variants", "Accuracy per variant", runs, [
        c.COVERAGE, *(c.VARIANT.at(v, label=v) for v in (*FQ1_VARIANTS, *FQ2_VARIANTS)),
        *(c.KIND.at(k, label=k) for k in ("FQ1", "FQ2"))]))
    out.append(run_table("fe_figure5", "Initial vs conditional success (000 Figure 5)", runs, [
        c.INITIAL, c.CONDITIONAL.at("del", label="Cond. del"), c.CONDITIONAL.at("add", label="Cond. add"), c.NTS,
        c.DIS, c.ANSWER_KEPT.at("del", label="Kept del"), c.ANSWER_KEPT.at("add", label="Kept add")],
        note="Initial over all FQ2 groups; conditional over each run's MSS-correct groups."))
    for mode, label in (("text", "text-only"), ("first", "first-image")):
        out.append(fe_deltas(runs, mode, label))
    out.append(fe_decomposition(runs))
    out.append(fe_rotations(runs))
    out.append(fe_repeats(runs))
    out.append(run_table("fe_insufficiency", "Insufficiency choices per condition (000 Table 8)", runs, [
        *c.INSUFFICIENCY_CHOSEN.values(), *c.INSUFFICIENCY_INVALID.values(), c.INSUFFICIENCY_PRECISION,
        c.INSUFFICIENCY_RECALL],
        note="Share of items answered with the insufficient-information option; recall over deletion items, "
             "precision over every insufficiency answer."))
    out.append(run_table("fe_pairwise", "Pairwise frame analysis", runs,
                         [c.PAIRWISE_FIELD[k] for k in ("pairs", "repeated", "changed", "invalid", "both_correct",
                                                        "triplets_correct")]))
    for stratum, label in FE_STRATA.items():
        out.append(fe_stratum(runs, stratum, label))
    out.append(fe_table13(runs))
    out.append(fe_seeds(runs))
    out.append(fe_seeds_rotations(runs))
    out.append(fe_controls(controls, runs))
    return [t for t in out if not t.empty]


def fe_controls(controls: Sequence[RunScore], runs: Sequence[RunScore]) -> Table:
    """000 Table 10 / §5: the baseline runs, then the exact always-insufficient control and uniform reference
    (read from the first baseline's, else the first picked run's, metrics: they depend on the items only)."""
    columns: list[Column] = [*c.TABLE4, c.KIND.at("FQ2", label="FQ2 Acc")]
    t = run_table("fe_controls", "Metadata-control and text baselines (train-fitted) · 000 §5, Table 10", controls,
                  columns,
                  note="Every baseline run of this benchmark (majority letter, image count, count + insufficiency "
                       "letter, character TF-IDF, uniform random), whatever the run picker says. Always insufficient "
                       "(§5): every FQ2 item answered with its insufficient-information option, exact from the gold "
                       "answers; it answers no FQ1 item, so FQ2 Acc is its accuracy (33.33% on the paper's split).")
    source = controls[0] if controls else (runs[0] if runs else None)
    if source is not None:
        always = [*(c.INSUFFICIENT.at(m.key, unit="rate") for m in c.TABLE4),
                  c.INSUFFICIENT_KIND.at("FQ2", unit="rate")]
        t.rows.append(Row([c.ALWAYS_INSUFFICIENT.label], [cell(source, col) for col in always], source.name, False,
                          reference=True))
        # 1/4 on any subset of items, FQ2 among them
        uniform = [*(c.UNIFORM.at(m.key, unit="rate") for m in c.TABLE4), c.UNIFORM.at("accuracy", unit="rate")]
        t.rows.append(Row([c.UNIFORM_RANDOM.label], [cell(source, col) for col in uniform], source.name, False,
                          reference=True))
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
        node = value(r, c.RI_CLUSTERINGS)
        if isinstance(node, dict):
            for name, info in node.items():
                size = info.get("clusters") if isinstance(info, dict) and "clusters" in info else None
                label = name if name != "group" else "groups"
                schemes.append((name, f"{c.RI_INTERVAL.label} · {label}" + (f" ({size})" if size is not None else "")))
            break
    cols = [c.RI_ESTIMATE.label, *[label for _, label in schemes]]
    rows: list[Row] = []
    for r in runs:
        node = value(r, c.REPEAT_INTERVALS)
        if node is None:
            continue
        if reason_of(node) is not None:
            rows.append(Row([r.name, "—"], [cell(r, c.REPEAT_INTERVALS) for _ in cols], r.name, r.synthetic))
            continue
        for key in node.get("quantities", {}):
            diff = "minus" in key
            cells = [cell(r, c.RI_ESTIMATE.at(key, unit="diff" if diff else "rate"))]
            cells += [cell(r, c.RI_INTERVAL.at(key, name, unit="interval_diff" if diff else "interval"))
                      for name, _ in schemes]
            rows.append(Row([r.name, _table13_label(key)], cells, r.name, r.synthetic))
    primary = [f"{r.name} → {value(r, c.RI_PRIMARY)}" for r in runs if isinstance(value(r, c.RI_PRIMARY), str)]
    note = ("Rates in %, differences in points. R0 = rotation 0 / repeat 0, the repeat = rotation 0 / repeat 1; "
            "contrasts subtract the R0–Rj pair from the R0–repeat pair. Percentile cluster bootstrap, 20,000 draws, "
            "seed 20261010, whole clusters resampled, item-weighted ratios.")
    if primary:
        note += f" Primary run: {', '.join(primary)}."
    return Table("fe_table13", "Same-order repeat with 95% cluster-bootstrap intervals (000 Table 13)",
                 ["Run", "Quantity"], cols, rows, note=note)


SEED_ROTATIONS = (VANILLA, CIRCULAR, CONSISTENCY)


def fe_seeds_rotations(runs: Sequence[RunScore]) -> Table:
    """000 Table 6b: Vanilla / Circular / Consistency as multi-seed mean ± sample SD."""
    rows = []
    for r in runs:
        node = value(r, c.SEEDS)
        if node is None:
            continue
        if reason_of(node) is not None:
            rows.append(Row([r.name], [cell(r, c.SEEDS) for _ in SEED_ROTATIONS], r.name, r.synthetic))
            continue
        cells = []
        for m in SEED_ROTATIONS:
            mean, sd = value(r, c.SEED_MEAN.at(m.key)), value(r, c.SEED_SD.at(m.key))
            if reason_of(mean) is not None:
                cells.append(cell(r, c.SEED_MEAN.at(m.key)))
                continue
            cells.append(Cell({"value": value_of(mean), "sd": value_of(sd) if reason_of(sd) is None else None},
                              c.SEED_MEAN.path(m.key), r.name, "mean_sd"))
        rows.append(Row([r.name], cells, r.name, r.synthetic))
    return Table("fe_seeds_rotations", "Option rotations, multi-seed mean ± sample SD (000 Table 6b)", ["Run"],
                 [m.label for m in SEED_ROTATIONS], rows,
                 note="Over runs that differ from the row's run only in seed; Vanilla uses each run's own rotation-0 "
                      "answers.")


def fe_deltas(runs: Sequence[RunScore], mode: str, label: str) -> Table:
    cols = [c.PARTNER.at(mode), *(c.DELTA[m.key].at(mode) for m in (ACCURACY, *c.JOINT))]
    return run_table(f"fe_delta_{mode}", f"All images minus {label} (000 Table 5 layout)", runs, cols,
                     note=f"Percentage points; the partner is the {label} run of the same model, strategy and shots.")


def fe_decomposition(runs: Sequence[RunScore]) -> Table:
    fields = list(c.DECOMPOSITION_FIELD.values())
    rows = []
    for r in runs:
        for mode in ("text", "first"):
            for m in (c.NTS, c.DIS):
                if value(r, c.DECOMPOSITION.at(mode, m.key)) is None:
                    continue
                rows.append(Row([r.name, f"{mode} → all", m.key.upper()],
                                [cell(r, f.at(mode, m.key)) for f in fields], r.name, r.synthetic))
    return Table("fe_decomposition", "Paired decomposition of NTS / DIS changes (000 §7)", ["Run", "From", "Metric"],
                 [f.label for f in fields], rows,
                 note="Net successes split into shared MSS-correct groups and changed MSS coverage.")


def fe_rotations(runs: Sequence[RunScore]) -> Table:
    rots = keys_at(runs, c.PER_ROTATION, ("0", "1", "2", "3"))
    cols: list[Column] = [VANILLA, CIRCULAR, CONSISTENCY, MEAN_ROTATION, DROP,
                          *(c.ROTATION.at(k, label=f"R{k}") for k in rots)]
    return run_table("fe_rotations", "Option-rotation metrics (000 Tables 6 / 12)", runs, cols,
                     note="Four cyclic rotations; Circular needs all four correct, Consistency four identical valid "
                          "decoded answers; Drop = Vanilla - Circular.")


def fe_repeats(runs: Sequence[RunScore]) -> Table:
    fields = list(c.REPEAT_PAIR.values())
    rows = []
    for r in runs:
        node = value(r, c.REPEATS)
        if reason_of(node) is not None:
            rows.append(Row([r.name, "—"], [cell(r, c.REPEATS) for _ in fields], r.name, r.synthetic))
            continue
        for pair, block in node.items():
            if pair == "differences" or not isinstance(block, dict):
                continue
            label = "repeat 0 vs 1 (same order)" if pair.startswith("repeat") else f"rotation 0 vs {pair}"
            rows.append(Row([r.name, label], [cell(r, f.at(pair)) for f in fields], r.name, r.synthetic))
    return Table("fe_repeats", "Same-order repeat and rotation pairs (000 Table 7)", ["Run", "Pair"],
                 [f.label for f in fields], rows)


def fe_stratum(runs: Sequence[RunScore], stratum: str, label: str) -> Table:
    values = keys_at(runs, c.STRATUM_FIELD.at(stratum))
    fields = list(c.STRATUM.values())
    rows = [Row([v, r.name], [cell(r, f.at(stratum, v)) for f in fields], r.name, r.synthetic)
            for v in values for r in runs if value(r, c.STRATUM_VALUE.at(stratum, v)) is not None]
    return Table(f"fe_strata_{stratum}", f"By {label}", [label.capitalize(), "Run"], [f.label for f in fields], rows)


def fe_seeds(runs: Sequence[RunScore]) -> Table:
    rows = []
    cols = [f"{part} {m.label}" for m in c.SEEDED for part in ("Mean", "SD")]
    for r in runs:
        node = value(r, c.SEEDS)
        if reason_of(node) is not None:
            rows.append(Row([r.name], [cell(r, c.SEEDS) for _ in cols], r.name, r.synthetic))
            continue
        cells = []
        for m in c.SEEDED:
            cells += [cell(r, c.SEED_MEAN.at(m.key)), cell(r, c.SEED_SD.at(m.key))]
        rows.append(Row([r.name], cells, r.name, r.synthetic))
    return Table("fe_seeds", "Multi-seed mean ± sample SD", ["Run"], cols, rows,
                 note="Over runs that differ from the row's run only in seed.")


