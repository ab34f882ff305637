"""SPUR (001) tables of the Metrics tab and the exports (core.report_tables), read from the catalogue."""

from __future__ import annotations

from collections.abc import Sequence

from core.catalogue import Column, Metric
from core.families.spur import catalogue as c
from core.families.spur.vocab import SHORTCUT_TABLE, STAGES, TASKS
from core.report_tables import Cell, Row, RunScore, Table, cell, keys_at, reason_of, run_table, value

TABLE3: list[Column] = [*(c.TASK.at(t, label=t) for t in TASKS), c.PERCEPTION, c.UNDERSTANDING, c.REASONING, c.OVERALL]
TABLE5 = [c.RBP_CORRECT, c.RBP_INCORRECT, c.RBP_EXCLUDED]
NO_MCOT = {"value": None, "reason": "direct run (no MCoT comparison)"}


def tables(runs: Sequence[RunScore], controls: Sequence[RunScore] = ()) -> list[Table]:
    """Every table of the family over the selected runs (`controls`: FrameEvidence's baselines; unused)."""
    out = [run_table("spur_table3", "Seven tasks, stage micro averages, overall (001 Table 3 layout)", runs,
                     TABLE3, note="Figure-clustered 95% intervals on hover and in LaTeX.")]
    out.append(spur_mcot(runs))
    out.append(spur_table5(runs))
    stains = keys_at(runs, c.BY_STAINING)
    out.append(Table("spur_staining", "Perception by staining category (001 Figure 5)", ["Staining", "Run"],
                     [c.STAINING_ACCURACY.label, c.STAINING_DEVIATION.label],
                     [Row([s, r.name], [cell(r, c.STAINING_ACCURACY.at(s)), cell(r, c.STAINING_DEVIATION.at(s))],
                          r.name, r.synthetic)
                      for s in stains for r in runs if s in _keys(value(r, c.BY_STAINING))]))
    rel_rows = []
    for scope in keys_at(runs, c.BY_N_RELATIONS, ("understanding", "TA", "HI")):
        for n in keys_at(runs, c.RELATION_SCOPE.at(scope)):
            for r in runs:
                if n in _keys(value(r, c.RELATION_SCOPE.at(scope))):
                    rel_rows.append(Row([scope, n, r.name], [cell(r, c.RELATIONS.at(scope, n))], r.name, r.synthetic))
    out.append(Table("spur_relations", "Understanding by number of relations (001 Figure 5)",
                     ["Scope", "Relations", "Run"], [c.RELATIONS.label], rel_rows))
    paradigms = keys_at(runs, c.BY_PARADIGM)
    out.append(Table("spur_paradigm", "Reasoning by paradigm (001 Figure 5)", ["Paradigm", "Run"], [c.PARADIGM.label],
                     [Row([p, r.name], [cell(r, c.PARADIGM.at(p))], r.name, r.synthetic)
                      for p in paradigms for r in runs if p in _keys(value(r, c.BY_PARADIGM))]))
    out.append(spur_shortcut(runs))
    return [t for t in out if not t.empty]


def _keys(node: object) -> list[str]:
    """The keys of a breakdown node, none when it is not a breakdown."""
    return [str(k) for k in node] if isinstance(node, dict) and "value" not in node else []


def spur_table5(runs: Sequence[RunScore]) -> Table:
    """001 Table 5 layout: reasoning accuracy by perception correctness, and its change against the direct run."""
    rows = []
    for r in runs:
        cells = [cell(r, m) for m in TABLE5]
        vs = value(r, c.VS_DIRECT)
        cells.append(cell(r, c.VS_DIRECT_RUN) if vs else Cell("—", None, r.name, "text"))
        for m in (c.VS_DIRECT_CORRECT, c.VS_DIRECT_INCORRECT):
            cells.append(cell(r, m) if vs else Cell(NO_MCOT, None, r.name))
        rows.append(Row([r.name], cells, r.name, r.synthetic))
    return Table("spur_table5", "Reasoning accuracy by perception correctness (001 Table 5 layout)", ["Run"],
                 [*(m.label for m in TABLE5), c.VS_DIRECT_RUN.label, c.VS_DIRECT_CORRECT.label,
                  c.VS_DIRECT_INCORRECT.label], rows,
                 note="A reasoning item counts as 'perception correct' when every perception item (NP, MP, IL) of "
                      "its figure was answered correctly, 'wrong' when any was answered wrongly; figures without "
                      "answered perception items are excluded.")


SHORTCUT_COLUMNS = ("Text-only runs", "Trials per item", c.SHORTCUT_FIELDS["flagged"].label,
                    c.SHORTCUT_FIELDS["k"].label)


def spur_shortcut(runs: Sequence[RunScore], choice: str | None = None) -> Table:
    """The §2.3 filter of the benchmark (the same for every run): one row per text-only model, or only the
    `choice` model's row; the headline row of a pooled score (`shortcut.pooled`) comes labelled as a pool."""
    rows: list[Row] = []
    r = runs[0] if runs else None
    node = value(r, c.SHORTCUT) if r is not None else None
    if r is not None and reason_of(node) is not None:
        rows.append(Row(["—"], [cell(r, c.SHORTCUT) for _ in SHORTCUT_COLUMNS], r.name, r.synthetic))
    elif r is not None and isinstance(node, dict):
        filters: list[tuple[dict[str, Metric], tuple[str, ...]]] = [(c.MODEL_FIELDS, (m,)) for m in (node.get("by_model") or {}) if choice is None or m == choice]
        if node.get("pooled"):
            filters.append((c.SHORTCUT_FIELDS, ()))
        for fields, keys in filters:
            n_runs, lo, hi = (value(r, fields[f].at(*keys)) for f in ("runs", "trials.min", "trials.max"))
            span = f"{lo or 0}" + (f"–{hi}" if hi != lo else "")
            rows.append(Row([str(value(r, fields["model"].at(*keys)))], [
                Cell(len(n_runs or []), None, r.name, "count"), Cell(span, None, r.name, "text"),
                cell(r, fields["flagged"].at(*keys)), cell(r, fields["k"].at(*keys))],
                r.name, r.synthetic, reference=bool(value(r, fields["pooled"].at(*keys)))))
    return Table(SHORTCUT_TABLE, "Text-only shortcut filter per model (001 §2.3)", [c.SHORTCUT_FIELDS["model"].label],
                 list(SHORTCUT_COLUMNS), rows,
                 note="Counted per text-only model: an item is flagged when at least half of that model's "
                      "randomized text-only trials (5 of 10 in the paper) answer it correctly. A pooled row "
                      "appears only when asked for (score --shortcut-pool, or the picker) and is labelled so.")


MCOT_STAGES = [c.STAGE_METRICS[s] for s in STAGES]


def spur_mcot(runs: Sequence[RunScore]) -> Table:
    """001 Table 4 layout: each run with its strategy, stage micro averages and overall, and the change of
    overall against the direct run of the same model when one is selected."""
    direct = {(r.config.get("model"), r.config.get("input_mode")): r for r in runs
              if (r.config.get("strategy") or "direct") == "direct"}
    rows = []
    for r in runs:
        strategy = str(r.config.get("strategy") or "direct")
        cells = [Cell(strategy, None, r.name, "text"), *(cell(r, m) for m in MCOT_STAGES), cell(r, c.OVERALL)]
        base = direct.get((r.config.get("model"), r.config.get("input_mode")))
        if strategy == "direct":
            cells.append(Cell({"value": None, "reason": "the direct run is the reference"}, None, r.name))
        elif base is None:
            cells.append(Cell({"value": None, "reason": "no direct run of the same model selected"}, None, r.name))
        else:
            a, b = (_value_of(value(x, c.OVERALL)) for x in (r, base))
            node = {"value": a - b} if a is not None and b is not None else {"value": None, "reason": "undefined"}
            cells.append(Cell(node, None, r.name, "diff"))
        rows.append(Row([r.name], cells, r.name, r.synthetic))
    return Table("spur_mcot", "Prompting strategies vs direct (001 Table 4 layout)", ["Run"],
                 ["Strategy", *(m.label for m in MCOT_STAGES), c.OVERALL.label, "Δ overall vs direct"], rows,
                 note="Δ is the point difference of overall accuracy against the direct run of the same model "
                      "(both must be selected).")


def _value_of(node: object) -> float | None:
    return node.get("value") if isinstance(node, dict) else None  # type: ignore[return-value]
