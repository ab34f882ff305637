"""Generic-family tables of the Metrics tab and the exports (core.report_tables), read from the catalogue."""

from __future__ import annotations

from collections.abc import Sequence

from core.families.generic import catalogue as c
from core.report_tables import Row, RunScore, Table, cell, keys_at, run_table, value

MAIN = [c.ACCURACY, c.MACRO_PRECISION, c.MACRO_RECALL, c.MACRO_F1, c.GROUP_EXACT_MATCH, c.VANILLA, c.CIRCULAR,
        c.CONSISTENCY]


def tables(runs: Sequence[RunScore], controls: Sequence[RunScore] = ()) -> list[Table]:
    """Every table of the family over the selected runs (`controls`: FrameEvidence's baselines; unused)."""
    out = [run_table("generic_main", "Accuracy, macro P / R / F1, group exact match", runs, MAIN)]
    kinds = keys_at(runs, c.PER_KIND)
    out.append(Table("generic_kinds", "Accuracy per kind", ["Kind", "Run"], [c.KIND.label],
                     [Row([k, r.name], [cell(r, c.KIND.at(k))], r.name, r.synthetic)
                      for k in kinds for r in runs if value(r, c.KIND.at(k)) is not None]))
    letters = keys_at(runs, c.LETTERS)
    predicted = sorted({p for r in runs for row in (value(r, c.LETTERS) or {}).values() for p in row},
                       key=lambda p: (p == "none", p))
    out.append(Table("generic_letters", "Predicted vs gold letter (rows: gold; columns: predicted, none = invalid "
                     "or api_error), rotation 0, repeat 0", ["Run", "Gold"], predicted,
                     [Row([r.name, g], [cell(r, c.LETTER.at(g, p)) for p in predicted], r.name, r.synthetic)
                      for r in runs for g in letters if value(r, c.LETTER_ROW.at(g)) is not None]))
    strata = [(f, v) for f in keys_at(runs, c.PER_STRATUM) for v in keys_at(runs, c.STRATUM_FIELD.at(f))]
    out.append(Table("generic_strata", "Accuracy per stratum (meta fields with 2-16 values; k / n, no interval)",
                     ["Stratum", "Run"], [c.STRATUM.label],
                     [Row([f"{f} = {v}", r.name], [cell(r, c.STRATUM.at(f, v))], r.name, r.synthetic)
                      for f, v in strata for r in runs if value(r, c.STRATUM.at(f, v)) is not None]))
    return [t for t in out if not t.empty]
