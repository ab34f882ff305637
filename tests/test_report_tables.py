"""core.report_tables: paper tables from score JSON, CSV frames and booktabs LaTeX (pure, no gradio)."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from core import families
from core.report_tables import (
    Cell,
    RunScore,
    display,
    latex_escape,
    parse_latex_rows,
    reasons,
    to_csv,
    to_frame,
    to_latex,
    tooltip,
)

FE = {
    "accuracy": {"value": 0.5, "k": 144, "n": 288}, "macro_precision": {"value": 0.51},
    "macro_recall": {"value": 0.49}, "macro_f1": {"value": 0.5}, "fq1_gem": {"value": 0.25, "k": 12, "n": 48},
    "nts": {"value": None, "k": 0, "n": 0, "reason": "no FQ2 groups to count"}, "dis": {"value": 0.5, "k": 24, "n": 48},
    "reference": {"uniform_random": {"accuracy": {"value": 0.25}, "macro_precision": {"value": 0.25},
                                     "macro_recall": {"value": 0.25}, "macro_f1": {"value": 0.249},
                                     "fq1_gem": {"value": 0.016}, "nts": {"value": 0.0625}, "dis": {"value": 0.0625}}},
    "input_modes": {"text": {"value": None, "reason": "no 'text' input-mode run"},
                    "first": {"partner": "m_first", "delta": {"accuracy": {"value": 0.125}}}},
    "repeats": {"value": None, "reason": "run has no same-order repeat"},
}


# Issue 25 point 7: an interval shows which side of zero it ends on ("[-28.8, +0.0]" did not).
@pytest.mark.parametrize("x, digits, shown", [
    (-0.288, 1, "-28.8"),       # percent of a difference: fmt_signed(100 * x)
    (0.0004, 1, "+0.04"),       # rounds to zero at one decimal: the decimals it needs
    (-0.00004, 1, "-0.004"),
    (0.0, 1, "0.0"),            # an exact zero has no sign
    (-0.0, 1, "0.0"),
    (0.35, 1, "+35.0"),
])
def test_signed_values_never_hide_their_side_of_zero(x, digits, shown):
    from core.report_tables import fmt_pct, fmt_signed

    assert fmt_signed(100 * x, digits) == shown == fmt_pct(x, signed=True)


@pytest.mark.parametrize("ci, scale, digits, shown", [
    ((-0.288, 0.0004), 100, 1, "[-28.8, +0.04]"),
    ((-0.288, 0.0), 100, 1, "[-28.8, 0.0]"),
    ((-0.25, 0.0), 1, 3, "[-0.250, 0.000]"),  # a kappa interval
])
def test_signed_interval(ci, scale, digits, shown):
    from core.report_tables import signed_interval

    assert signed_interval(ci, scale, digits) == shown


@pytest.mark.parametrize("node,kind,shown,tip", [
    ({"value": 0.5416666, "k": 156, "n": 288}, "auto", "54.2", "k/n = 156/288"),
    ({"value": 0.35}, "diff", "+35.0", "value 0.3500"),
    ({"value": -0.0637, "n": 755, "ci": [-0.1, -0.028]}, "diff", "-6.4", "95% CI [-10.0, -2.8]"),
    ({"value": None, "reason": "no paired run"}, "auto", "n/a", "not computed: no paired run"),
    (None, "auto", "n/a", "not computed: not computed for this run"),
    (120, "auto", "120", ""),
    ("partner-run", "text", "partner-run", ""),
])
def test_cell_display_and_hover(node, kind, shown, tip):
    cell = Cell(node, kind=kind)
    assert display(cell) == shown
    assert tip in tooltip(cell)


def test_fe_table4_has_reference_row_and_reasons():
    runs = [RunScore("m", FE, synthetic=True)]
    tables = {t.key: t for t in families.get("frameevidence").tables(runs, [])}
    t4 = tables["fe_table4"]
    assert t4.columns == ["P", "R", "F1", "Acc", "GEM", "NTS", "DIS"]
    assert [r.reference for r in t4.rows] == [False, True]
    assert t4.rows[0].cells[3].path == ("accuracy",) and t4.rows[0].cells[3].node["k"] == 144
    assert any("no FQ2 groups to count" in w for w in reasons(t4))
    # the text-only delta row carries the pairing reason in every cell, the first-image one the partner
    assert all(c.node["reason"].startswith("no 'text'") for c in tables["fe_delta_text"].rows[0].cells)
    assert display(tables["fe_delta_first"].rows[0].cells[0]) == "m_first"
    assert display(tables["fe_delta_first"].rows[0].cells[1]) == "+12.5"


def test_csv_round_trip_keeps_percent_counts_and_reasons():
    t4 = families.get("frameevidence").tables([RunScore("m", FE)], [])[0]
    df = pd.read_csv(io.StringIO(to_csv(t4)))
    assert list(df["Run"]) == ["m", "Uniform random (exact)"]
    # the screen's scale (#24): percent, with the unit in the header; k and n as counts
    assert df.loc[0, "Acc (%)"] == pytest.approx(50.0) and df.loc[0, "Acc_k"] == 144 and df.loc[0, "Acc_n"] == 288
    assert pd.isna(df.loc[0, "NTS (%)"]) and df.loc[0, "NTS_reason"] == "no FQ2 groups to count"
    assert to_frame(t4)["Acc_k"].dtype == "Int64"


def test_csv_headers_name_the_unit_and_values_follow_the_screen():
    from core.report_tables import Cell, Row, Table

    cells = [Cell({"value": 0.25, "k": 1, "n": 4, "ci": [0.1, 0.5]}), Cell({"value": -0.05, "n": 10, "ci": [-0.1, 0.02]},
             kind="diff"), Cell(7), Cell("direct")]
    t = Table("t", "T", ["Run"], ["Acc", "Δ", "Items", "Strategy"], [Row(["r"], cells, "r")])
    df = pd.read_csv(io.StringIO(to_csv(t)))
    assert list(df.columns) == ["Run", "synthetic", "Acc (%)", "Acc_k", "Acc_n", "Acc_ci_low (%)", "Acc_ci_high (%)",
                                "Δ (points)", "Δ_n", "Δ_ci_low (points)", "Δ_ci_high (points)", "Items", "Strategy"]
    row = df.iloc[0]
    assert (row["Acc (%)"], row["Acc_ci_low (%)"], row["Acc_ci_high (%)"]) == (25.0, 10.0, 50.0)
    assert (row["Δ (points)"], row["Δ_ci_low (points)"], row["Δ_ci_high (points)"]) == (-5.0, -10.0, 2.0)
    assert row["Items"] == 7 and row["Strategy"] == "direct"
    assert [display(c) for c in cells[:2]] == ["25.0", "-5.0"]  # the screen shows the same numbers


def test_latex_is_booktabs_and_parses():
    t4 = families.get("frameevidence").tables([RunScore("m_1", FE, synthetic=True)], [])[0]
    tex = to_latex(t4)
    for token in (r"\toprule", r"\midrule", r"\bottomrule", r"\begin{tabular}{lrrrrrrr}", r"\label{tab:fe-table4}"):
        assert token in tex
    rows = parse_latex_rows(tex)
    assert rows[0][0] == r"m\_1$^\dagger$" and rows[0][4] == "50.0" and rows[0][6] == "--"
    assert rows[1][0] == "Uniform random (exact)" and len(rows[1]) == 8
    assert "not computable: NTS: no FQ2 groups to count" in tex


def test_latex_escape_specials():
    assert latex_escape("a_b & 50% #1 {x} Δ≥") == r"a\_b \& 50\% \#1 \{x\} $\Delta$$\geq$"


@pytest.mark.parametrize("family,first", [("stembind", "sb_leaderboard"), ("spur", "spur_table3"),
                                          ("generic", "generic_main")])
def test_every_family_builds_tables_from_empty_metrics(family, first):
    tables = families.get(family).tables([RunScore("r", {})], [])
    assert tables[0].key == first
    assert all(display(c) == "n/a" for c in tables[0].rows[0].cells)
