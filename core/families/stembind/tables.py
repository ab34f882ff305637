"""StemBind (002) tables of the Metrics tab and the exports (core.report_tables), read from the catalogue."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.catalogue import Column, Metric, placed
from core.families.stembind import catalogue as c
from core.families.stembind.vocab import DECOMPOSITION, NO_FAILURE, OPERATIONS, SSA_LEVELS, STAGES
from core.report_tables import (
    Cell,
    Row,
    RunScore,
    Table,
    cell,
    is_rate,
    keys_at,
    reason_of,
    run_table,
    value,
)

LEADERBOARD = [c.P_ACCURACY, c.R_ACCURACY, c.F_ACCURACY, c.RF_GAP, c.BINDING_GAP, c.STEM_COHERENT, c.VG_AT["overall"],
               c.LUCKY_GUESS]
DECOMPOSITION_COLUMNS = [*(c.CATEGORY[k] for k in DECOMPOSITION), c.N_STEMS, c.N_INCOMPLETE, c.R_OK_F_WRONG]
BINDING_COLUMNS = [c.BINDING_GAP, c.BINDING_GAP_N, c.F_GIVEN_PR, c.STEM_COHERENT]
TOKEN_COLUMNS = [c.TOKENS_N, c.TOKENS_MEAN, c.TOKENS_P95, c.TOKENS_CAP, c.TOKENS_CAP_HIT]
L2_COLUMNS: list[Column] = [c.L2_TRACES, *(c.STEP_ACC.at(s, label=f"StepAcc {s}") for s in STAGES), c.INCONSISTENT,
                            *(c.FIRST_FAILURE.at(s, label=f"First fail {s}") for s in (*STAGES, NO_FAILURE))]


def tables(runs: Sequence[RunScore], controls: Sequence[RunScore] = ()) -> list[Table]:
    """Every table of the family over the selected runs (`controls`: FrameEvidence's baselines; unused)."""
    out = [run_table("sb_leaderboard", "P / R / F leaderboard (002 §4.2)", runs, LEADERBOARD,
                     note="Accuracies with stem-clustered 95% intervals on hover; VG = full image minus text-only.")]
    rows = []
    for block, cells_of, names in ((c.BY_FAMILY, c.FAMILY, keys_at(runs, c.BY_FAMILY, ("RI", "VP"))),
                                   (c.BY_OPERATION, c.OPERATION, keys_at(runs, c.BY_OPERATION, OPERATIONS))):
        for name in names:
            for r in runs:
                if name in (value(r, block) or {}):
                    rows.append(Row([name, r.name], [cell(r, m.at(name)) for m in cells_of.values()], r.name,
                                    r.synthetic))
    out.append(Table("sb_operations", "Accuracy per operation and RI / VP family", ["Operation", "Run"],
                     [m.label for m in c.OPERATION.values()], rows))
    out.append(run_table("sb_decomposition", "Stem failure decomposition (002 §4.3)", runs, DECOMPOSITION_COLUMNS,
                         note=c.DECOMPOSITION_BLOCK.help))
    out.append(run_table("sb_binding_gap", "Strict Binding Gap (002 §4.3 (iii))", runs, BINDING_COLUMNS,
                         note="BG = 1 − P(F = 1 | every P probe and R correct); 95% percentile bootstrap over stems on "
                              "hover and in LaTeX."))
    out.append(sb_visual_gain(runs))
    out.append(sb_think_gain(runs))
    out.append(sb_ssa(runs))
    out.append(run_table("sb_stepacc", "L2 StepAcc per stage and first failure (002 §3.3, C.3)", runs, L2_COLUMNS,
                         note="From the trace judgements of the run (Judge tab or import-labels)."))
    out.append(run_table("sb_tokens", "Output-token statistics (002 Table 24)", runs, TOKEN_COLUMNS))
    return [t for t in out if not t.empty]


def _paired_block(runs: Sequence[RunScore], key: str, block: Metric, cols: Sequence[Metric],
                  partner: Sequence[Metric], title: str, note: str) -> Table:
    rows = []
    for r in runs:
        if reason_of(value(r, block)) is not None:
            rows.append(Row([r.name, "—"], [cell(r, block) for _ in cols], r.name, r.synthetic))
            continue
        label = " / ".join(str(value(r, p) or "") for p in partner)
        rows.append(Row([r.name, label], [cell(r, m) for m in cols], r.name, r.synthetic))
    return Table(key, title, ["Run", "Paired with"], [m.label for m in cols], rows, note)


def sb_visual_gain(runs: Sequence[RunScore]) -> Table:
    return _paired_block(runs, "sb_vg", c.VG, list(c.VG_AT.values()), (c.VG_PARTNER,),
                         "Visual gain: full image minus text-only (002 §3.3)",
                         "Percentage points on the items both runs answered; stem-clustered paired 95% intervals.")


def sb_think_gain(runs: Sequence[RunScore]) -> Table:
    return _paired_block(runs, "sb_thinkgain", c.THINK_GAIN, [*c.THINK_AT.values(), *c.THINK_AT_NO_CAP.values()],
                         (c.THINK_DIRECT, c.THINK_THINKING), "ThinkGain: thinking minus direct (002 §4.5, D.4)",
                         "Percentage points; stem-clustered paired 95% intervals. 'w/o cap-hit': recomputed without "
                         "the items whose output reached max_tokens in either run (002 D.4).")


SSA_LEVELS_SHOWN = [*SSA_LEVELS, "irrelevant"]
SSA_COLUMNS: list[Column] = [
    *(c.SSA_ACCURACY.at(lv, label=f"Acc {lv}") for lv in SSA_LEVELS_SHOWN), c.SSA_IRRELEVANT,
    c.SSA_RAW_DELTA.at("H3-H2", label="H3−H2 raw"), c.SSA_ISOTONIC_GAIN.at("H3-H2", label="H3−H2 isotonic", unit="diff"),
    c.SSA_LARGEST_RAW, c.SSA_LARGEST_ISOTONIC]


def sb_ssa(runs: Sequence[RunScore]) -> Table:
    cols = [*(placed(col).header for col in SSA_COLUMNS), c.SSA_TEXT_CUT.label]
    rows, seen = [], set()
    for r in runs:
        node = value(r, c.SSA)
        if reason_of(node) is not None:
            rows.append(Row([r.name], [cell(r, c.SSA) for _ in cols], r.name, r.synthetic))
            continue
        ident = tuple(sorted((value(r, c.SSA_RUNS) or {}).items()))
        if ident in seen:
            continue  # the same SSA family seen from another of its level runs
        seen.add(ident)
        cells = [cell(r, col) for col in SSA_COLUMNS]
        cells.append(Cell(_text_removed(value(r, c.SSA_TEXT_CUT)), None, r.name, "text"))
        rows.append(Row([r.name], cells, r.name, r.synthetic))
    return Table("sb_ssa", "SSA: verified stage text H0–H4 and the irrelevant-S1 control (002 §4.4)", ["Run"],
                 cols, rows, note="Accuracy on the F items every level answered. Isotonic gain: per-item monotone "
                                  "envelopes (an item solved at one level counts as solved at every later level); "
                                  "the chart draws the envelope accuracy.")


def _text_removed(levels: dict[str, Any] | None) -> str:
    """Per level, the F items whose stage text the SSA leakage guard cut (k/n), or "not recorded"."""
    parts = []
    for lv, rate in (levels or {}).items():
        parts.append(f"{lv} {rate['k']}/{rate['n']}" if is_rate(rate) and rate.get("n") else f"{lv} not recorded")
    return " · ".join(parts) or "—"
