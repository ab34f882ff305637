"""StemBind (002) tables of the Metrics tab and the exports (core.report_tables)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.families.stembind.vocab import DECOMPOSITION, NO_FAILURE, OPERATIONS, SSA_LEVELS, STAGES
from core.report_tables import (
    Cell,
    Row,
    RunScore,
    Table,
    get,
    is_rate,
    keys_at,
    reason_of,
    run_table,
    table_cell,
)

# ---- StemBind (002) -----------------------------------------------------------------------------------------



def tables(runs: Sequence[RunScore], controls: Sequence[RunScore] = ()) -> list[Table]:
    """Every table of the family over the selected runs (`controls`: FrameEvidence's baselines; unused)."""
    out = [run_table("sb_leaderboard", "P / R / F leaderboard (002 §4.2)", runs, [
        ("P", ("p_accuracy",)), ("R", ("r_accuracy",)), ("F", ("f_accuracy",)), ("R−F gap", ("rf_gap",)),
        ("Binding Gap", ("binding_gap",)), ("StemCoherent", ("stem_coherent",)), ("VG", ("vg", "overall")),
        ("Lucky guess", ("lucky_guess",))],
        note="Accuracies with stem-clustered 95% intervals on hover; VG = full image minus text-only.")]
    for row in out[0].rows:
        row.cells[3].kind = row.cells[6].kind = "diff"
    for row in out[0].rows:
        node = get(next(r for r in runs if r.name == row.run).metrics, ("vg",))
        if reason_of(node) is not None:
            row.cells[6] = Cell(node, ("vg",), row.run)
    ops = keys_at(runs, ("by_operation",), OPERATIONS)
    fams = keys_at(runs, ("by_family",), ("RI", "VP"))
    rows = []
    for group, names in (("by_family", fams), ("by_operation", ops)):
        for name in names:
            for r in runs:
                if get(r.metrics, (group, name)) is None:
                    continue
                rows.append(Row([name, r.name], [table_cell(r, (group, name, k), "diff" if k == "rf_gap" else "auto")
                                                for k in ("p", "r", "f", "rf_gap")],
                                r.name, r.synthetic))
    out.append(Table("sb_operations", "Accuracy per operation and RI / VP family", ["Operation", "Run"],
                     ["P", "R", "F", "R−F gap"], rows))
    out.append(run_table("sb_decomposition", "Stem failure decomposition (002 §4.3)", runs, [
        *[(c.replace("_", " "), ("decomposition", c)) for c in DECOMPOSITION],
        ("Stems", ("decomposition", "n_stems")), ("Incomplete", ("decomposition", "n_incomplete")),
        ("R ok | F wrong", ("decomposition", "r_correct_given_f_wrong"))],
        note="Solved: F correct; can't bind: a P and R correct, F wrong; can't reason: a P correct, R wrong; "
             "can't see: no P correct."))
    bg = run_table("sb_binding_gap", "Strict Binding Gap (002 §4.3 (iii))", runs, [
        ("Binding Gap", ("binding_gap",)), ("Denominator (P all & R)", ("binding_gap", "n")),
        ("F | P all, R", ("f_given_pr",)), ("StemCoherent", ("stem_coherent",))],
        note="BG = 1 − P(F = 1 | every P probe and R correct); 95% percentile bootstrap over stems on hover and "
             "in LaTeX.")
    for row in bg.rows:
        row.cells[1].kind = "count"
    out.append(bg)
    out.append(sb_visual_gain(runs))
    out.append(sb_think_gain(runs))
    out.append(sb_ssa(runs))
    out.append(sb_l2(runs))
    out.append(run_table("sb_tokens", "Output-token statistics (002 Table 24)", runs, [
        ("Traces", ("tokens", "n")), ("Mean", ("tokens", "mean")), ("p95", ("tokens", "p95")),
        ("Cap", ("tokens", "max_tokens")), ("Cap-hit rate", ("tokens", "cap_hit"))]))
    for row in out[-1].rows:
        node = get(next(r for r in runs if r.name == row.run).metrics, ("tokens",))
        if reason_of(node) is not None:
            row.cells = [Cell(node, ("tokens",), row.run) for _ in row.cells]
    return [t for t in out if not t.empty]


def _paired_block(runs: Sequence[RunScore], key: str, path: str, cols: Sequence[tuple[str, str]],
                  partner: Sequence[str], title: str, note: str) -> Table:
    rows = []
    for r in runs:
        node = get(r.metrics, (path,))
        if reason_of(node) is not None:
            rows.append(Row([r.name, "—"], [Cell(node, (path,), r.name) for _ in cols], r.name, r.synthetic))
            continue
        label = " / ".join(str(node.get(p, "")) for p in partner)
        rows.append(Row([r.name, label], [table_cell(r, (path, k), "diff") for _, k in cols], r.name, r.synthetic))
    return Table(key, title, ["Run", "Paired with"], [c for c, _ in cols], rows, note)


def sb_visual_gain(runs: Sequence[RunScore]) -> Table:
    return _paired_block(runs, "sb_vg", "vg", [("VG", "overall"), ("VG@P", "P"), ("VG@R", "R"), ("VG@F", "F")],
                         ("partner",), "Visual gain: full image minus text-only (002 §3.3)",
                         "Percentage points on the items both runs answered; stem-clustered paired 95% intervals.")


def sb_think_gain(runs: Sequence[RunScore]) -> Table:
    return _paired_block(runs, "sb_thinkgain", "think_gain",
                         [("ThinkGain@P", "at_P"), ("ThinkGain@R", "at_R"), ("ThinkGain@F", "at_F"),
                          ("@P w/o cap-hit", "at_P_no_cap"), ("@R w/o cap-hit", "at_R_no_cap"),
                          ("@F w/o cap-hit", "at_F_no_cap")],
                         ("direct", "thinking"), "ThinkGain: thinking minus direct (002 §4.5, D.4)",
                         "Percentage points; stem-clustered paired 95% intervals. 'w/o cap-hit': recomputed without "
                         "the items whose output reached max_tokens in either run (002 D.4).")


def sb_ssa(runs: Sequence[RunScore]) -> Table:
    levels = [*SSA_LEVELS, "irrelevant"]
    cols = [*(f"Acc {lv}" for lv in levels), "Irrelevant − H0", "H3−H2 raw", "H3−H2 isotonic", "Largest raw jump",
            "Largest isotonic jump", "Items with stage text cut"]
    rows, seen = [], set()
    for r in runs:
        node = get(r.metrics, ("ssa",))
        if reason_of(node) is not None:
            rows.append(Row([r.name], [Cell(node, ("ssa",), r.name) for _ in cols], r.name, r.synthetic))
            continue
        ident = tuple(sorted((node.get("runs") or {}).items()))
        if ident in seen:
            continue  # the same SSA family seen from another of its level runs
        seen.add(ident)
        cells = [table_cell(r, ("ssa", "accuracy", lv)) for lv in levels]
        cells += [table_cell(r, ("ssa", "irrelevant_minus_h0"), "diff"), table_cell(r, ("ssa", "raw_deltas", "H3-H2"), "diff"),
                  table_cell(r, ("ssa", "isotonic_gains", "H3-H2"), "diff"), table_cell(r, ("ssa", "largest_raw_jump")),
                  table_cell(r, ("ssa", "largest_isotonic_jump")), Cell(_text_removed(node), None, r.name, "text")]
        rows.append(Row([r.name], cells, r.name, r.synthetic))
    return Table("sb_ssa", "SSA: verified stage text H0–H4 and the irrelevant-S1 control (002 §4.4)", ["Run"],
                 cols, rows, note="Accuracy on the F items every level answered. Isotonic gain: per-item monotone "
                                  "envelopes (an item solved at one level counts as solved at every later level); "
                                  "the chart draws the envelope accuracy.")


def _text_removed(node: dict[str, Any]) -> str:
    """Per level, the F items whose stage text the SSA leakage guard cut (k/n), or "not recorded"."""
    parts = []
    for lv, rate in (node.get("text_removed") or {}).items():
        parts.append(f"{lv} {rate['k']}/{rate['n']}" if is_rate(rate) and rate.get("n") else f"{lv} not recorded")
    return " · ".join(parts) or "—"


def sb_l2(runs: Sequence[RunScore]) -> Table:
    cols = [("Traces", ("l2", "n_traces")), *[(f"StepAcc {s}", ("l2", "step_acc", s)) for s in STAGES],
            ("Inconsistent", ("l2", "inconsistent")),
            *[(f"First fail {s}", ("l2", "first_failure", s)) for s in (*STAGES, NO_FAILURE)]]
    t = run_table("sb_stepacc", "L2 StepAcc per stage and first failure (002 §3.3, C.3)", runs, cols,
                  note="From the trace judgements of the run (Judge tab or import-labels).")
    for row in t.rows:
        node = get(next(r for r in runs if r.name == row.run).metrics, ("l2",))
        if reason_of(node) is not None:
            row.cells = [Cell(node, ("l2",), row.run) for _ in cols]
    return t
