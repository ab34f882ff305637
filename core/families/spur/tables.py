"""SPUR (001) tables of the Metrics tab and the exports (core.report_tables)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.families.spur.vocab import SHORTCUT_TABLE, STAGES, TASKS
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
)

# ---- SPUR (001) ---------------------------------------------------------------------------------------------

SPUR_MAIN = [*[(t, ("tasks", t)) for t in TASKS], ("Perception", ("perception",)),
             ("Understanding", ("understanding",)), ("Reasoning", ("reasoning",)), ("Overall", ("overall",))]

def tables(runs: Sequence[RunScore], controls: Sequence[RunScore] = ()) -> list[Table]:
    """Every table of the family over the selected runs (`controls`: FrameEvidence's baselines; unused)."""
    out = [run_table("spur_table3", "Seven tasks, stage micro averages, overall (001 Table 3 layout)", runs,
                     SPUR_MAIN, note="Figure-clustered 95% intervals on hover and in LaTeX.")]
    out.append(spur_mcot(runs))
    rows = []
    for r in runs:
        cells = [table_cell(r, ("reasoning_by_perception", k)) for k in ("perception_correct", "perception_incorrect")]
        cells.append(table_cell(r, ("reasoning_by_perception", "n_excluded")))
        vs = get(r.metrics, ("reasoning_by_perception", "vs_direct"))
        cells.append(Cell(vs.get("direct") if vs else "—", None, r.name, "text"))
        for k in ("perception_correct", "perception_incorrect"):
            cells.append(table_cell(r, ("reasoning_by_perception", "vs_direct", k), "diff") if vs else
                         Cell({"value": None, "reason": "direct run (no MCoT comparison)"}, None, r.name))
        rows.append(Row([r.name], cells, r.name, r.synthetic))
    out.append(Table("spur_table5", "Reasoning accuracy by perception correctness (001 Table 5 layout)", ["Run"],
                     ["Perception correct", "Perception wrong", "Excluded", "Direct run", "Δ vs direct (correct)",
                      "Δ vs direct (wrong)"], rows,
                     note="A reasoning item counts as 'perception correct' when every perception item (NP, MP, IL) of "
                          "its figure was answered correctly, 'wrong' when any was answered wrongly; figures without "
                          "answered perception items are excluded."))
    stains = keys_at(runs, ("by_staining",))
    out.append(Table("spur_staining", "Perception by staining category (001 Figure 5)", ["Staining", "Run"],
                     ["Accuracy", "Deviation from perception micro"],
                     [Row([s, r.name], [table_cell(r, ("by_staining", s, "accuracy")),
                                        table_cell(r, ("by_staining", s, "deviation"), "diff")], r.name, r.synthetic)
                      for s in stains for r in runs if get(r.metrics, ("by_staining", s)) is not None]))
    scopes = keys_at(runs, ("by_n_relations",), ("understanding", "TA", "HI"))
    rel_rows = []
    for scope in scopes:
        for n in keys_at(runs, ("by_n_relations", scope)):
            for r in runs:
                if get(r.metrics, ("by_n_relations", scope, n)) is not None:
                    rel_rows.append(Row([scope, n, r.name], [table_cell(r, ("by_n_relations", scope, n))], r.name,
                                        r.synthetic))
    out.append(Table("spur_relations", "Understanding by number of relations (001 Figure 5)",
                     ["Scope", "Relations", "Run"], ["Accuracy"], rel_rows))
    paradigms = keys_at(runs, ("by_paradigm",))
    out.append(Table("spur_paradigm", "Reasoning by paradigm (001 Figure 5)", ["Paradigm", "Run"], ["Accuracy"],
                     [Row([p, r.name], [table_cell(r, ("by_paradigm", p))], r.name, r.synthetic)
                      for p in paradigms for r in runs if get(r.metrics, ("by_paradigm", p)) is not None]))
    out.append(spur_shortcut(runs))
    return [t for t in out if not t.empty]


def spur_shortcut(runs: Sequence[RunScore], choice: str | None = None) -> Table:
    """The §2.3 filter of the benchmark (the same for every run): one row per text-only model, or only the
    `choice` model's row; the headline row of a pooled score (`shortcut.pooled`) comes labelled as a pool."""
    cols = ["Text-only runs", "Trials per item", "Flagged items", "Rule"]
    rows: list[Row] = []
    r = runs[0] if runs else None
    node = get(r.metrics, ("shortcut",)) if r is not None else None
    if r is not None and reason_of(node) is not None:
        rows.append(Row(["—"], [Cell(node, ("shortcut",), r.name) for _ in cols], r.name, r.synthetic))
    elif r is not None and isinstance(node, dict):
        blocks: list[tuple[tuple[str, ...], Any]] = [(("shortcut", "by_model", m), b) for m, b in (node.get("by_model") or {}).items()
                  if choice is None or m == choice]
        if node.get("pooled"):
            blocks.append((("shortcut",), node))
        for path, b in blocks:
            trials = b.get("trials") or {}
            span = f"{trials.get('min', 0)}" + (f"–{trials['max']}" if trials.get("max") != trials.get("min") else "")
            rows.append(Row([str(b.get("model"))], [
                Cell(len(b.get("runs") or []), None, r.name, "count"), Cell(span, None, r.name, "text"),
                Cell(b.get("flagged"), (*path, "flagged"), r.name), Cell(b.get("k"), (*path, "k"), r.name, "text")],
                r.name, r.synthetic, reference=bool(b.get("pooled"))))
    return Table(SHORTCUT_TABLE, "Text-only shortcut filter per model (001 §2.3)", ["Filter model"], cols, rows,
                 note="Counted per text-only model: an item is flagged when at least half of that model's "
                      "randomized text-only trials (5 of 10 in the paper) answer it correctly. A pooled row "
                      "appears only when asked for (score --shortcut-pool, or the picker) and is labelled so.")


def spur_mcot(runs: Sequence[RunScore]) -> Table:
    """001 Table 4 layout: each run with its strategy, stage micro averages and overall, and the change of
    overall against the direct run of the same model when one is selected."""
    direct = {(r.config.get("model"), r.config.get("input_mode")): r for r in runs
              if (r.config.get("strategy") or "direct") == "direct"}
    rows = []
    for r in runs:
        strategy = str(r.config.get("strategy") or "direct")
        cells = [Cell(strategy, None, r.name, "text"), *[table_cell(r, (s,)) for s in STAGES], table_cell(r, ("overall",))]
        base = direct.get((r.config.get("model"), r.config.get("input_mode")))
        if strategy == "direct":
            cells.append(Cell({"value": None, "reason": "the direct run is the reference"}, None, r.name))
        elif base is None:
            cells.append(Cell({"value": None, "reason": "no direct run of the same model selected"}, None, r.name))
        else:
            a, b = get(r.metrics, ("overall", "value")), get(base.metrics, ("overall", "value"))
            node = {"value": a - b} if a is not None and b is not None else {"value": None, "reason": "undefined"}
            cells.append(Cell(node, None, r.name, "diff"))
        rows.append(Row([r.name], cells, r.name, r.synthetic))
    return Table("spur_mcot", "Prompting strategies vs direct (001 Table 4 layout)", ["Run"],
                 ["Strategy", "Perception", "Understanding", "Reasoning", "Overall", "Δ overall vs direct"], rows,
                 note="Δ is the point difference of overall accuracy against the direct run of the same model "
                      "(both must be selected).")
