"""Chart builders draw an error bar wherever the metric carries an interval, and only there; the Metrics
tab's gate draws only when visible and changed; export files are pruned. Values hand-computed."""

from __future__ import annotations

import json
import os
import time

import pytest

from core.report_tables import RunScore
from ui import charts
from ui.metrics import gate
from ui.tables import _write, export_dir, prune_exports
from ui.views import frameevidence as fe_views
from ui.views import stembind as sb_views


def rate(k: int, n: int, ci: tuple[float, float] | None = None) -> dict:
    node = {"value": k / n, "k": k, "n": n}
    if ci is not None:
        node["ci"] = list(ci)
    return node


def _bars(trace, axis: str):
    err = getattr(trace, f"error_{axis}")
    if err is None or err.array is None:
        return None
    return [round(v, 9) for v in err.array], [round(v, 9) for v in err.arrayminus]


# (builder, metrics, trace index, axis, expected (plus, minus) in percentage points, or None: no bar)
CASES = [
    # R 5/10 = 50% in [30, 80]: +30 / -20; F 2/10 = 20% in [5, 50]: +30 / -15
    ("chasm", {"r_accuracy": rate(5, 10, (0.3, 0.8)), "f_accuracy": rate(2, 10, (0.05, 0.5))}, 1, "x",
     ([30.0], [20.0])),
    ("chasm", {"r_accuracy": rate(5, 10, (0.3, 0.8)), "f_accuracy": rate(2, 10, (0.05, 0.5))}, 1, "y",
     ([30.0], [15.0])),
    ("chasm", {"r_accuracy": rate(5, 10), "f_accuracy": rate(2, 10)}, 1, "y", None),
    # per rotation 1/4 = 25% in [10, 60] and 3/4 = 75% in [40, 90]
    ("rotations", {"per_rotation": {"0": rate(1, 4, (0.1, 0.6)), "1": rate(3, 4, (0.4, 0.9))}}, 0, "y",
     ([35.0, 15.0], [15.0, 35.0])),
    # one rotation without an interval: 0 there, the other still drawn
    ("rotations", {"per_rotation": {"0": rate(1, 4), "1": rate(3, 4, (0.4, 0.9))}}, 0, "y",
     ([0.0, 15.0], [0.0, 35.0])),
    ("rotations", {"per_rotation": {"0": rate(1, 4), "1": rate(3, 4)}}, 0, "y", None),
    # SSA H0 2/8 = 25% in [5, 55], H1 4/8 = 50% in [20, 80]
    ("ssa", {"ssa": {"runs": {"H0": "a", "H1": "b"}, "accuracy": {"H0": rate(2, 8, (0.05, 0.55)),
                                                                  "H1": rate(4, 8, (0.2, 0.8))}}}, 0, "y",
     ([30.0, 30.0], [20.0, 30.0])),
    # Figure 5: initial 6/10 = 60% in [30, 90] (x), conditional deletion 3/6 = 50% in [10, 90] (y)
    ("figure5", {"transitions": {"initial": rate(6, 10, (0.3, 0.9)), "conditional": {"del": rate(3, 6, (0.1, 0.9)),
                                                                                   "add": rate(3, 6)}}}, 0, "x",
     ([30.0], [30.0])),
    ("figure5", {"transitions": {"initial": rate(6, 10, (0.3, 0.9)), "conditional": {"del": rate(3, 6, (0.1, 0.9)),
                                                                                   "add": rate(3, 6)}}}, 0, "y",
     ([40.0], [40.0])),
    ("figure5", {"transitions": {"initial": rate(6, 10, (0.3, 0.9)), "conditional": {"del": rate(3, 6, (0.1, 0.9)),
                                                                                   "add": rate(3, 6)}}}, 1, "y", None),
]
BUILDERS = {"chasm": sb_views.sb_rf_chasm, "rotations": fe_views.rotation_lines, "ssa": sb_views.ssa_curves,
            "figure5": fe_views.fe_figure5}


@pytest.mark.parametrize("builder,metrics,trace,axis,want", CASES)
def test_error_bars_wherever_an_interval_exists(builder, metrics, trace, axis, want):
    fig = BUILDERS[builder]([RunScore("run-a", metrics)])
    assert _bars(fig.data[trace], axis) == want


def test_layout_has_no_fixed_width_and_a_legend_under_the_axes():
    fig = sb_views.sb_rf_chasm([RunScore("run-a", {"r_accuracy": rate(5, 10), "f_accuracy": rate(2, 10)})])
    assert fig.layout.width is None and fig.layout.autosize is True
    assert fig.layout.legend.yref == "container" and fig.layout.legend.y == 0


def test_chart_html_carries_plotly_js():
    fig = charts.empty("t", "why")
    text = charts.figure_html(fig)
    assert "cdn.plot.ly/plotly" not in text.split("<body>")[0]
    assert '<script src="https' not in text and len(text) > 1_000_000


def test_old_export_folders_are_removed_fresh_ones_kept():
    old = _write("old_table.csv", f"a,b\n{time.time()}\n")
    fresh = _write("fresh_table.csv", f"c,d\n{time.time()}\n")
    past = time.time() - 3600
    os.utime(old.parent, (past, past))
    prune_exports()
    assert not old.exists() and fresh.exists()
    assert old.parent.parent == export_dir()


def test_gate_draws_only_when_visible_and_changed(store, fe_bench):
    from db.importers import import_items, import_predictions

    import_items(store, fe_bench, name="fe")
    lines = [json.loads(x) for x in fe_bench.read_text(encoding="utf-8").splitlines()]
    pred = fe_bench.parent / "p.jsonl"
    pred.write_text("".join(json.dumps({"item_id": x["item_id"], "response": "A"}) + "\n" for x in lines),
                    encoding="utf-8")
    import_predictions(store, pred, "a")
    assert gate(store, False, "fe", ["a"], None) is None  # hidden tab: nothing drawn
    key = gate(store, True, "fe", ["a"], None)
    assert key is not None and key[:2] == ("fe", ("a",))
    assert gate(store, True, "fe", ["a"], key) is None  # same inputs: the drawing stays
    assert gate(store, True, "fe", ["a"], key, force=True) == key  # Refresh draws again
    assert gate(store, True, "fe", [], key) == ("fe", (), ())  # picks changed: the key holds the picked runs' state
    assert gate(store, True, "fe", ["gone"], key)[1] == ()  # a pick the benchmark lacks is dropped
    import_predictions(store, pred, "b", model="another-model")  # another scoring unit: "a" stays drawn (#27)
    assert gate(store, True, "fe", ["a"], key) is None
    import_predictions(store, pred, "c")  # a new run in a's scoring unit (same model): drawn again
    assert gate(store, True, "fe", ["a"], key) not in (None, key)
