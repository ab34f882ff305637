"""The Calibration tab's handlers on a real store (no browser): the pickers of a traces run, drawing a frozen
sample, and the report laid out from db.judging.calibration_report."""

from __future__ import annotations

import pytest

from core.errors import CrosscheckError
from core.judge import LexicalJudge
from db import judge_runs, judging
from db import labels as dbl
from db.catalog import catalog_signature
from db.store import Store
from tests.conftest import copy_store
from ui import calibration as uc

RUN = "synth-sb-binder-weak"


@pytest.fixture
def sb(demo_db, tmp_path):
    store = Store(copy_store(demo_db, tmp_path / "s"))
    yield store
    store.close()


def test_draw_then_pickers_and_report(sb):
    assert (RUN, RUN) in [(v, v) for _, v in uc.run_choices(sb)]
    with pytest.raises(CrosscheckError, match="choose a traces run first"):
        uc.on_draw(sb, None, "cal", 2, 0)
    before = catalog_signature(sb)
    msg, table, pick, sig = uc.on_draw(sb, RUN, "cal", 2, 0)
    n = len(judging.sample_frame(sb, "cal"))
    assert f"{n} traces drawn and frozen" in msg and pick["value"] == "cal" and sig != before
    # the table: traces drawn per operation and outcome bin
    assert int(table["value"]["total"].sum()) == n and table["visible"] is True
    assert "already frozen with the same traces (unchanged)" in uc.on_draw(sb, RUN, "cal", 2, 0)[0]
    judge_runs.judge_run(sb, RUN, "lex", LexicalJudge(0.5))
    keys = judging.trace_records(sb, RUN).iloc[:4]
    for who, flags in (("ann", [1, 1, 0, 0]), ("bob", [1, 0, 0, 0])):
        for k in keys.itertuples(index=False):
            dbl.save_label(sb, RUN, (k.item_id, int(k.rotation), int(k.repeat)), who,
                           dict(zip(("S1", "S2", "S3", "S4"), flags, strict=True)))
    sample, judge, second, ceiling, consensus = uc.on_run(sb, RUN)
    assert (f"cal ({n} traces, seed 0)", "cal") in sample["choices"]
    assert judge["choices"] == [("(first judge)", ""), ("lex", "lex")] and second["choices"] == [("(none)", ""),
                                                                                                 ("lex", "lex")]
    assert ceiling["choices"] == [("ann – bob", "ann,bob")] and consensus["choices"] == ["ann", "bob"]
    summary, table_html, fig, second_out, audit_out, rep = uc.on_compute(sb, RUN, "", "", "", ["ann,bob"], [])
    s1 = next(p for p in rep["pairs"] if {p["a"], p["b"]} == {"ann", "bob"} and p["stage"] == "S1")
    assert s1["agreement"] == 1.0 and s1["n"] == 4
    assert "mean kappa of ann–bob (chosen)" in table_html and "**Labelers:**" in summary
    assert rep["judges"] == ["lex"] and fig.layout.title.text.startswith("First failure")
    assert uc.on_compute(sb, None, "", "", "", [], [])[0].startswith("No traces run")


def test_refresh_keeps_a_pick_that_is_still_there(sb):
    judge_runs.draw_sample(sb, RUN, "cal", per_operation=2, seed=0)
    run, sample, judge, second = uc.refresh_pickers(sb, RUN, "cal", "", "")
    assert "value" not in run and "value" not in sample and ("cal" in [v for _, v in sample["choices"]])
    run, sample, _, _ = uc.refresh_pickers(sb, "gone", "cal", "", "")
    assert run["value"] == uc.run_choices(sb)[0][1]


def test_a_kappa_cell_shows_its_note_and_the_interval_the_cli_prints():
    """#39 point 4: a kappa the tab cannot vouch for says so in its cell (the audit's n = 9 at 78% agreement), and
    the interval is written as `calibration` prints it."""
    from core.report_tables import signed_interval
    from ui.calibration import TEMPLATE, _kappa_cell
    from ui.templating import macro

    p = {"kappa": 0.0, "kappa_ci": [-0.198, 0.733], "kappa_note": "kappa is 0 by construction here", "n": 9,
         "agreement": 0.78, "prevalence": 0.89}
    html = str(macro(TEMPLATE, "kappa")(_kappa_cell(p)))
    assert "kappa is 0 by construction here" in html and "cb-kappa-note" in html
    assert signed_interval([-0.198, 0.733], scale=1, digits=3) in html
