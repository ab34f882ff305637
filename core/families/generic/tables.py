"""Generic-family tables of the Metrics tab and the exports (core.report_tables)."""

from __future__ import annotations

from collections.abc import Sequence

from core.report_tables import (
    Row,
    RunScore,
    Table,
    get,
    keys_at,
    run_table,
    table_cell,
)

# ---- generic -------------------------------------------------------------------------------------------------


def tables(runs: Sequence[RunScore], controls: Sequence[RunScore] = ()) -> list[Table]:
    """Every table of the family over the selected runs (`controls`: FrameEvidence's baselines; unused)."""
    out = [run_table("generic_main", "Accuracy, macro P / R / F1, group exact match", runs, [
        ("Acc", ("accuracy",)), ("P", ("macro_precision",)), ("R", ("macro_recall",)), ("F1", ("macro_f1",)),
        ("GEM", ("group_exact_match",)), ("Vanilla", ("vanilla",)), ("Circular", ("circular",)),
        ("Consistency", ("consistency",))])]
    kinds = keys_at(runs, ("per_kind",))
    out.append(Table("generic_kinds", "Accuracy per kind", ["Kind", "Run"], ["Acc"],
                     [Row([k, r.name], [table_cell(r, ("per_kind", k))], r.name, r.synthetic)
                      for k in kinds for r in runs if get(r.metrics, ("per_kind", k)) is not None]))
    letters = keys_at(runs, ("letters",))
    predicted = sorted({c for r in runs for row in (get(r.metrics, ("letters",)) or {}).values() for c in row},
                       key=lambda c: (c == "none", c))
    out.append(Table("generic_letters", "Predicted vs gold letter (rows: gold; columns: predicted, none = invalid "
                     "or api_error), rotation 0, repeat 0", ["Run", "Gold"], predicted,
                     [Row([r.name, g], [table_cell(r, ("letters", g, c)) for c in predicted], r.name, r.synthetic)
                      for r in runs for g in letters if get(r.metrics, ("letters", g)) is not None]))
    strata = [(f, v) for f in keys_at(runs, ("per_stratum",)) for v in keys_at(runs, ("per_stratum", f))]
    out.append(Table("generic_strata", "Accuracy per stratum (meta fields with 2-16 values; k / n, no interval)",
                     ["Stratum", "Run"], ["Acc"],
                     [Row([f"{f} = {v}", r.name], [table_cell(r, ("per_stratum", f, v))], r.name, r.synthetic)
                      for f, v in strata for r in runs if get(r.metrics, ("per_stratum", f, v)) is not None]))
    return [t for t in out if not t.empty]
