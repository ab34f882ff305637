"""Paper-style tables from `score --json` metrics: pure data, CSV frames and booktabs LaTeX (no gradio).

The Metrics tab (ui/metrics.py) and the exports read the same `Table` objects, so what a researcher sees,
downloads as CSV and pastes into a paper as LaTeX are one thing. Every cell keeps the JSON node it came
from (a rate {"value", "k", "n", "ci", "reason"} or a plain number / string) and its path in the run's
metrics, so a test can check the screen against `python app.py score --run NAME --json`.

Conventions (docs: Metrics tab):
- rates are fractions in the data and in CSV; the screen and LaTeX show percentages with one decimal;
- differences (a rate without k) show as signed percentage points;
- a cell that cannot be computed keeps its reason (shown as "n/a" with the reason beside the table, "--"
  in LaTeX with the reasons in the table note, empty value plus a `_reason` column in CSV).
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

Path_ = tuple[str, ...]


@dataclass(slots=True)
class RunScore:
    """One run's identity and its `score --json` metrics."""

    name: str
    metrics: dict[str, Any]
    synthetic: bool = False
    config: dict[str, Any] = field(default_factory=dict)
    runner: str = ""
    split: str = "test"  # the split scored (`score --json`'s "split")


@dataclass(slots=True)
class Cell:
    node: Any  # a rate dict, a number, a string or None (not computed)
    path: Path_ | None = None  # where in the run's metrics it came from
    run: str | None = None
    kind: str = "auto"  # auto | rate | diff | count | number | text


@dataclass(slots=True)
class Row:
    labels: list[str]
    cells: list[Cell]
    run: str | None = None
    synthetic: bool = False
    reference: bool = False  # a reference row (uniform random): set apart by a rule


@dataclass(slots=True)
class Table:
    key: str  # file-name slug
    title: str
    index: list[str]  # label column headers
    columns: list[str]
    rows: list[Row]
    note: str = ""

    @property
    def empty(self) -> bool:
        return not self.rows


# --------------------------------------------------------------------------- reading metrics


def get(metrics: Any, path: Iterable[str]) -> Any:
    """The node at `path` in nested dicts, or None when any step is missing."""
    node = metrics
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def is_rate(node: Any) -> bool:
    return isinstance(node, dict) and "value" in node


def reason_of(node: Any) -> str | None:
    """Why a node has no value (None when it has one)."""
    if node is None:
        return "not computed for this run"
    if is_rate(node) and node.get("value") is None:
        return str(node.get("reason") or "undefined")
    if isinstance(node, float) and math.isnan(node):
        return "undefined"
    return None


def value_of(node: Any) -> Any:
    if is_rate(node):
        return node.get("value")
    if isinstance(node, (int, float, str)) and not isinstance(node, bool):
        return node
    if isinstance(node, bool):
        return int(node)
    return None


def _kind(cell: Cell) -> str:
    if cell.kind != "auto":
        return cell.kind
    node = cell.node
    if is_rate(node):
        return "rate"  # differences are marked kind="diff" where the table is built
    if isinstance(node, str):
        return "text"
    if isinstance(node, int):
        return "count"
    return "number"


# --------------------------------------------------------------------------- formatting


def fmt_pct(value: float, signed: bool = False) -> str:
    s = f"{100 * value:+.1f}" if signed else f"{100 * value:.1f}"
    return "0.0" if s in ("-0.0", "+0.0") and not signed else s


def display(cell: Cell) -> str:
    """The text shown in the table (percentages for rates, signed points for differences, "[lo, hi]" for an
    interval cell, "mean ± sd" for a mean-SD cell)."""
    node, kind = cell.node, _kind(cell)
    if reason_of(node) is not None:
        return "n/a"
    if kind in ("interval", "interval_diff"):
        if not is_rate(node) or not node.get("ci"):
            return "n/a"
        lo, hi = node["ci"]
        signed = kind == "interval_diff"
        return f"[{fmt_pct(lo, signed)}, {fmt_pct(hi, signed)}]"
    v = value_of(node)
    if kind == "mean_sd":
        sd = node.get("sd") if isinstance(node, dict) else None
        return f"{fmt_pct(float(v))} ± {fmt_pct(float(sd))}" if sd is not None else f"{fmt_pct(float(v))} ± n/a"
    if kind == "rate":
        return fmt_pct(float(v))
    if kind == "diff":
        return fmt_pct(float(v), signed=True)
    if kind == "count":
        return str(int(v))
    if kind == "number":
        return f"{float(v):.1f}" if abs(float(v)) >= 10 else f"{float(v):.3g}"
    return str(v)


def tooltip(cell: Cell) -> str:
    """k / n and the interval of a rate (the hover text), or the reason it is undefined."""
    node = cell.node
    why = reason_of(node)
    if why is not None:
        return f"not computed: {why}"
    if not is_rate(node):
        return ""
    parts = [f"value {node['value']:.4f}"]
    if "k" in node and "n" in node:
        parts.insert(0, f"k/n = {node['k']}/{node['n']}")
    elif "n" in node:
        parts.insert(0, f"n = {node['n']}")
    if node.get("ci"):
        lo, hi = node["ci"]
        signed = _kind(cell) == "diff"
        parts.append(f"95% CI [{fmt_pct(lo, signed)}, {fmt_pct(hi, signed)}]")
    return " · ".join(parts)


def sort_key(cell: Cell) -> float | str:
    v = value_of(cell.node)
    if reason_of(cell.node) is not None or v is None:
        return ""
    return v if isinstance(v, str) else float(v)


def reasons(table: Table) -> list[str]:
    """Distinct reasons of the table's undefined cells ("column: reason")."""
    seen: dict[str, None] = {}
    for row in table.rows:
        for col, cell in zip(table.columns, row.cells, strict=True):
            why = reason_of(cell.node)
            if why is not None:
                seen.setdefault(f"{col}: {why}", None)
    return list(seen)


# --------------------------------------------------------------------------- CSV and LaTeX


def to_frame(table: Table) -> pd.DataFrame:
    """One row per table row: label columns, then per column its value (fractions for rates) and, where any
    cell has them, `<col>_k`, `<col>_n`, `<col>_ci_low`, `<col>_ci_high`, `<col>_reason`."""
    records = []
    for row in table.rows:
        rec: dict[str, Any] = dict(zip(table.index, row.labels, strict=True))
        rec["synthetic"] = row.synthetic
        for col, cell in zip(table.columns, row.cells, strict=True):
            node = cell.node
            rec[col] = None if reason_of(node) is not None else value_of(node)
            if is_rate(node):
                if "k" in node:
                    rec[f"{col}_k"] = node["k"]
                if "n" in node:
                    rec[f"{col}_n"] = node["n"]
                if node.get("ci"):
                    rec[f"{col}_ci_low"], rec[f"{col}_ci_high"] = node["ci"]
                if node.get("sd") is not None:
                    rec[f"{col}_sd"] = node["sd"]
            why = reason_of(node)
            if why is not None:
                rec[f"{col}_reason"] = why
        records.append(rec)
    ordered: list[str] = [*table.index, "synthetic"]
    for col in table.columns:
        for suffix in ("", "_k", "_n", "_sd", "_ci_low", "_ci_high", "_reason"):
            name = f"{col}{suffix}"
            if any(name in r for r in records) and name not in ordered:
                ordered.append(name)
    frame = pd.DataFrame.from_records(records, columns=ordered)
    for name in ordered:
        if name.endswith(("_k", "_n")) and name not in table.index:
            frame[name] = frame[name].astype("Int64")
    return frame


def to_csv(table: Table) -> str:
    buf = io.StringIO()
    to_frame(table).to_csv(buf, index=False, quoting=csv.QUOTE_MINIMAL)
    return buf.getvalue()


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                  "Δ": r"$\Delta$", "≥": r"$\geq$", "−": "-", "→": r"$\to$", "±": r"$\pm$", "—": "--",
                  "|": r"$|$", "§": r"\S{}", "<": r"$<$", ">": r"$>$"}


def latex_escape(text: Any) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in str(text))


def _latex_cell(cell: Cell) -> str:
    if reason_of(cell.node) is not None:
        return "--"
    text = display(cell)
    kind = _kind(cell)
    if kind in ("rate", "diff") and is_rate(cell.node) and cell.node.get("ci"):
        lo, hi = cell.node["ci"]
        signed = kind == "diff"
        return f"{text} {{\\scriptsize[{fmt_pct(lo, signed)}, {fmt_pct(hi, signed)}]}}"
    return latex_escape(text)


def to_latex(table: Table, label_prefix: str = "tab:") -> str:
    """A booktabs table ready for a paper: rates in percent (one decimal), 95% intervals in brackets where
    defined, "--" for undefined cells (reasons in the note), synthetic runs marked with a dagger."""
    align = "l" * len(table.index) + "r" * len(table.columns)
    head = " & ".join(latex_escape(h) for h in [*table.index, *table.columns])
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\small",
        f"\\caption{{{latex_escape(table.title)}}}",
        f"\\label{{{label_prefix}{re.sub(r'[^A-Za-z0-9:-]+', '-', table.key)}}}",
        f"\\begin{{tabular}}{{{align}}}",
        r"\toprule",
        head + r" \\",
        r"\midrule",
    ]
    body_started = False
    any_synth = False
    for row in table.rows:
        if row.reference and body_started:
            lines.append(r"\midrule")
        labels = [latex_escape(x) for x in row.labels]
        if row.synthetic and labels:
            labels[0] += r"$^\dagger$"
            any_synth = True
        lines.append(" & ".join([*labels, *(_latex_cell(c) for c in row.cells)]) + r" \\")
        body_started = True
    lines += [r"\bottomrule", r"\end{tabular}"]
    notes = []
    if table.note:
        notes.append(latex_escape(table.note))
    if any_synth:
        notes.append(r"$^\dagger$ synthetic run (demo data).")
    why = reasons(table)
    if why:
        notes.append("-- not computable: " + "; ".join(latex_escape(w) for w in why[:6])
                     + (" ..." if len(why) > 6 else "") + ".")
    if notes:
        lines.append(r"\par\vspace{2pt}{\footnotesize " + " ".join(notes) + "}")
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


def parse_latex_rows(tex: str) -> list[list[str]]:
    """The cells of every row between \\midrule and \\bottomrule (used by tests and round-trip checks)."""
    body = tex.split(r"\midrule", 1)[1].split(r"\bottomrule", 1)[0]
    rows = []
    for line in body.splitlines():
        line = line.strip()
        if not line or line.startswith("\\midrule"):
            continue
        rows.append([c.strip() for c in line.removesuffix(r"\\").split(" & ")])
    return rows


# --------------------------------------------------------------------------- building tables


def _cell(rs: RunScore, path: Sequence[str], kind: str = "auto") -> Cell:
    return Cell(get(rs.metrics, path), tuple(path), rs.name, kind)


def run_table(key: str, title: str, runs: Sequence[RunScore], columns: Sequence[tuple[str, Sequence[str]]],
              note: str = "", kind: str = "auto") -> Table:
    """Rows = runs, one cell per (column header, metrics path)."""
    rows = [Row([r.name], [_cell(r, path, kind) for _, path in columns], r.name, r.synthetic) for r in runs]
    return Table(key, title, ["Run"], [c for c, _ in columns], rows, note)


def _keys(runs: Sequence[RunScore], path: Sequence[str], order: Sequence[str] = ()) -> list[str]:
    """The union of dict keys at `path` over the runs (known `order` first), skipping rate leaves."""
    found: dict[str, None] = {}
    for r in runs:
        node = get(r.metrics, path)
        if isinstance(node, dict) and not is_rate(node):
            for k in node:
                found.setdefault(str(k), None)
    return [k for k in order if k in found] + [k for k in found if k not in order]


def _reason_rows(runs: Sequence[RunScore], path: Sequence[str], width: int, labels: int = 1) -> list[Row]:
    """One row per run whose node at `path` is undefined: every cell carries the reason."""
    rows = []
    for r in runs:
        node = get(r.metrics, path)
        if reason_of(node) is not None:
            cells = [Cell(node if node is not None else None, tuple(path), r.name) for _ in range(width)]
            rows.append(Row([r.name, *(["—"] * (labels - 1))], cells, r.name, r.synthetic))
    return rows


# ---- FrameEvidence (000) ------------------------------------------------------------------------------------

FE_MAIN = [("P", ("macro_precision",)), ("R", ("macro_recall",)), ("F1", ("macro_f1",)),
           ("Acc", ("accuracy",)), ("GEM", ("fq1_gem",)), ("NTS", ("nts",)), ("DIS", ("dis",))]
FE_STRATA = {"n_images": "image count", "relation": "relation", "scene": "scene", "source": "source",
             "ordinal_change": "ordinal change"}


def fe_main(runs: Sequence[RunScore], key: str = "fe_table4", title: str | None = None) -> Table:
    """000 Table 4: P / R / F1 / Acc / GEM / NTS / DIS per run, then the exact uniform-random reference row."""
    t = run_table(key, title or "Main results (000 Table 4 layout)", runs, FE_MAIN,
                  note="Macro P/R/F1 over A-D; GEM = FQ1 group exact match; NTS / DIS over FQ2 groups. The "
                       "uniform-random row is the exact finite-test expectation under the gold supports.")
    if runs:
        ref = runs[0]
        t.rows.append(Row(["Uniform random (exact)"],
                          [_cell(ref, ("reference", "uniform_random", *p), "rate") for _, p in FE_MAIN],
                          ref.name, False, reference=True))
    return t


def fe_tables(runs: Sequence[RunScore], controls: Sequence[RunScore] = ()) -> list[Table]:
    out = [fe_main(runs)]
    out.append(run_table("fe_independence", "Joint metrics beside the independence reference", runs, [
        ("GEM", ("fq1_gem",)), ("GEM indep.", ("independence", "fq1_gem")),
        ("NTS", ("nts",)), ("NTS indep.", ("independence", "nts")),
        ("DIS", ("dis",)), ("DIS indep.", ("independence", "dis"))],
        note="Independence reference = product of the variant accuracies."))
    out.append(run_table("fe_variants", "Accuracy per variant", runs, [
        ("Coverage", ("coverage",)), *[(v, ("variant_accuracy", v)) for v in ("cam", "obj", "scene", "mss", "del", "add")],
        ("FQ1", ("kind_accuracy", "FQ1")), ("FQ2", ("kind_accuracy", "FQ2"))]))
    out.append(run_table("fe_figure5", "Initial vs conditional success (000 Figure 5)", runs, [
        ("Initial (MSS)", ("transitions", "initial")), ("Cond. del", ("transitions", "conditional", "del")),
        ("Cond. add", ("transitions", "conditional", "add")), ("NTS", ("nts",)), ("DIS", ("dis",)),
        ("Kept del", ("transitions", "answer_kept", "del")), ("Kept add", ("transitions", "answer_kept", "add"))],
        note="Initial over all FQ2 groups; conditional over each run's MSS-correct groups."))
    for mode, label in (("text", "text-only"), ("first", "first-image")):
        out.append(fe_deltas(runs, mode, label))
    out.append(fe_decomposition(runs))
    out.append(fe_rotations(runs))
    out.append(fe_repeats(runs))
    out.append(run_table("fe_insufficiency", "Insufficiency choices per condition (000 Table 8)", runs, [
        ("MSS", ("insufficiency", "counts", "mss")), ("del", ("insufficiency", "counts", "del")),
        ("add", ("insufficiency", "counts", "add")), ("invalid MSS", ("insufficiency", "invalid", "mss")),
        ("invalid del", ("insufficiency", "invalid", "del")), ("invalid add", ("insufficiency", "invalid", "add")),
        ("Precision", ("insufficiency", "precision")), ("Recall", ("insufficiency", "recall"))],
        note="Share of items answered with the insufficient-information option; recall over deletion items, "
             "precision over every insufficiency answer."))
    out.append(run_table("fe_pairwise", "Pairwise frame analysis", runs, [
        ("Pairs", ("pairwise_frames", "pairs")), ("Repeated dir.", ("pairwise_frames", "repeated")),
        ("Changed", ("pairwise_frames", "changed")), ("Invalid", ("pairwise_frames", "invalid")),
        ("Both correct", ("pairwise_frames", "both_correct")),
        ("Triplets correct", ("pairwise_frames", "triplets_correct"))]))
    for stratum, label in FE_STRATA.items():
        out.append(fe_stratum(runs, stratum, label))
    out.append(fe_table13(runs))
    out.append(fe_seeds(runs))
    out.append(fe_seeds_rotations(runs))
    out.append(fe_controls(controls, runs))
    return [t for t in out if not t.empty]


FE_CONTROL_COLS = [*FE_MAIN, ("FQ2 Acc", ("kind_accuracy", "FQ2"))]


def fe_controls(controls: Sequence[RunScore], runs: Sequence[RunScore]) -> Table:
    """000 Table 10 / §5: the baseline runs, then the exact always-insufficient control and uniform reference
    (read from the first baseline's, else the first picked run's, metrics: they depend on the items only)."""
    t = run_table("fe_controls", "Metadata-control and text baselines (train-fitted) · 000 §5, Table 10", controls,
                  FE_CONTROL_COLS,
                  note="Every baseline run of this benchmark (majority letter, image count, count + insufficiency "
                       "letter, character TF-IDF, uniform random), whatever the run picker says. Always insufficient "
                       "(§5): every FQ2 item answered with its insufficient-information option, exact from the gold "
                       "answers; it answers no FQ1 item, so FQ2 Acc is its accuracy (33.33% on the paper's split).")
    source = controls[0] if controls else (runs[0] if runs else None)
    if source is not None:
        base = ("reference", "always_insufficient")
        t.rows.append(Row(["Always insufficient (exact)"], [_cell(source, (*base, *p), "rate") for _, p in
                                                            FE_CONTROL_COLS], source.name, False, reference=True))
        uniform = [(*("reference", "uniform_random"), *p) for _, p in FE_MAIN] + [
            ("reference", "uniform_random", "accuracy")]  # 1/4 on any subset of items, FQ2 among them
        t.rows.append(Row(["Uniform random (exact)"], [_cell(source, p, "rate") for p in uniform], source.name,
                          False, reference=True))
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
        node = get(r.metrics, ("repeat_intervals", "clusterings"))
        if isinstance(node, dict):
            for name, info in node.items():
                size = info.get("clusters") if isinstance(info, dict) and "clusters" in info else None
                label = name if name != "group" else "groups"
                schemes.append((name, f"95% CI · {label}" + (f" ({size})" if size is not None else "")))
            break
    cols = ["Estimate", *[label for _, label in schemes]]
    rows: list[Row] = []
    for r in runs:
        node = get(r.metrics, ("repeat_intervals",))
        if node is None:
            continue
        if reason_of(node) is not None:
            rows.append(Row([r.name, "—"], [Cell(node, ("repeat_intervals",), r.name) for _ in cols], r.name,
                            r.synthetic))
            continue
        for key in node.get("quantities", {}):
            base = ("repeat_intervals", "quantities", key)
            diff = "minus" in key
            cells = [_cell(r, (*base, "estimate"), "diff" if diff else "rate")]
            cells += [_cell(r, (*base, name), "interval_diff" if diff else "interval") for name, _ in schemes]
            rows.append(Row([r.name, _table13_label(key)], cells, r.name, r.synthetic))
    primary = [f"{r.name} → {get(r.metrics, ('repeat_intervals', 'primary'))}" for r in runs
               if isinstance(get(r.metrics, ("repeat_intervals", "primary")), str)]
    note = ("Rates in %, differences in points. R0 = rotation 0 / repeat 0, the repeat = rotation 0 / repeat 1; "
            "contrasts subtract the R0–Rj pair from the R0–repeat pair. Percentile cluster bootstrap, 20,000 draws, "
            "seed 20261010, whole clusters resampled, item-weighted ratios.")
    if primary:
        note += f" Primary run: {', '.join(primary)}."
    return Table("fe_table13", "Same-order repeat with 95% cluster-bootstrap intervals (000 Table 13)",
                 ["Run", "Quantity"], cols, rows, note=note)


def fe_seeds_rotations(runs: Sequence[RunScore]) -> Table:
    """000 Table 6b: Vanilla / Circular / Consistency as multi-seed mean ± sample SD."""
    cols = [("Vanilla", "vanilla"), ("Circular", "circular"), ("Consistency", "consistency")]
    rows = []
    for r in runs:
        node = get(r.metrics, ("seeds",))
        if node is None:
            continue
        if reason_of(node) is not None:
            rows.append(Row([r.name], [Cell(node, ("seeds",), r.name) for _ in cols], r.name, r.synthetic))
            continue
        cells = []
        for _, m in cols:
            mean, sd = get(r.metrics, ("seeds", m, "mean")), get(r.metrics, ("seeds", m, "sd"))
            if reason_of(mean) is not None:
                cells.append(Cell(mean, ("seeds", m, "mean"), r.name))
                continue
            cells.append(Cell({"value": value_of(mean), "sd": value_of(sd) if reason_of(sd) is None else None},
                              ("seeds", m, "mean"), r.name, "mean_sd"))
        rows.append(Row([r.name], cells, r.name, r.synthetic))
    return Table("fe_seeds_rotations", "Option rotations, multi-seed mean ± sample SD (000 Table 6b)", ["Run"],
                 [c for c, _ in cols], rows, note="Over runs that differ from the row's run only in seed; Vanilla "
                                                  "uses each run's own rotation-0 answers.")


def fe_deltas(runs: Sequence[RunScore], mode: str, label: str) -> Table:
    cols = [("Partner", ("input_modes", mode, "partner")),
            *[(f"Δ{m}", ("input_modes", mode, "delta", k)) for m, k in
              (("Acc", "accuracy"), ("GEM", "fq1_gem"), ("NTS", "nts"), ("DIS", "dis"))]]
    t = run_table(f"fe_delta_{mode}", f"All images minus {label} (000 Table 5 layout)", runs, cols,
                  note=f"Percentage points; the partner is the {label} run of the same model, strategy and shots.",
                  kind="diff")
    for row in t.rows:
        row.cells[0].kind = "text"
    for row in t.rows:
        node = get(next(r for r in runs if r.name == row.run).metrics, ("input_modes", mode))
        if reason_of(node) is not None:
            row.cells = [Cell(node, ("input_modes", mode), row.run) for _ in cols]
    return t


def fe_decomposition(runs: Sequence[RunScore]) -> Table:
    cols = ["Net", "Shared groups", "Shared gained", "Shared lost", "Shared net", "MSS gained", "MSS lost",
            "Coverage gained", "Coverage lost", "Coverage net"]
    paths = [("net",), ("shared_mss_correct", "groups"), ("shared_mss_correct", "gained"),
             ("shared_mss_correct", "lost"), ("shared_mss_correct", "net"), ("changed_coverage", "mss_gained_groups"),
             ("changed_coverage", "mss_lost_groups"), ("changed_coverage", "gained"), ("changed_coverage", "lost"),
             ("changed_coverage", "net")]
    rows = []
    for r in runs:
        for mode in ("text", "first"):
            for m in ("nts", "dis"):
                base = ("input_modes", mode, "decomposition", m)
                if get(r.metrics, base) is None:
                    continue
                rows.append(Row([r.name, f"{mode} → all", m.upper()], [_cell(r, (*base, *p)) for p in paths],
                                r.name, r.synthetic))
    return Table("fe_decomposition", "Paired decomposition of NTS / DIS changes (000 §7)", ["Run", "From", "Metric"],
                 cols, rows, note="Net successes split into shared MSS-correct groups and changed MSS coverage.")


def fe_rotations(runs: Sequence[RunScore]) -> Table:
    rots = _keys(runs, ("per_rotation",), ("0", "1", "2", "3"))
    cols = [("Vanilla", ("vanilla",)), ("Circular", ("circular",)), ("Consistency", ("consistency",)),
            ("Mean rot.", ("mean_rotation",)), ("Drop", ("drop",)),
            *[(f"R{k}", ("per_rotation", k)) for k in rots]]
    t = run_table("fe_rotations", "Option-rotation metrics (000 Tables 6 / 12)", runs, cols,
                  note="Four cyclic rotations; Circular needs all four correct, Consistency four identical valid "
                       "decoded answers; Drop = Vanilla - Circular.")
    for row in t.rows:
        row.cells[4].kind = "diff"
    return t


REPEAT_COLS = [("Both correct", "both_correct"), ("≥1 correct", "at_least_one_correct"),
               ("Consistency", "consistency"), ("Consistently wrong", "consistently_wrong"), ("Changed", "changed")]


def fe_repeats(runs: Sequence[RunScore]) -> Table:
    rows = []
    for r in runs:
        node = get(r.metrics, ("repeats",))
        if reason_of(node) is not None:
            rows.append(Row([r.name, "—"], [Cell(node, ("repeats",), r.name) for _ in REPEAT_COLS], r.name,
                            r.synthetic))
            continue
        for pair, block in node.items():
            if pair == "differences" or not isinstance(block, dict):
                continue
            label = "repeat 0 vs 1 (same order)" if pair.startswith("repeat") else f"rotation 0 vs {pair}"
            rows.append(Row([r.name, label], [_cell(r, ("repeats", pair, k)) for _, k in REPEAT_COLS],
                            r.name, r.synthetic))
    return Table("fe_repeats", "Same-order repeat and rotation pairs (000 Table 7)", ["Run", "Pair"],
                 [c for c, _ in REPEAT_COLS], rows)


def fe_stratum(runs: Sequence[RunScore], stratum: str, label: str) -> Table:
    values = _keys(runs, ("strata", stratum))
    cols = [("Acc", "accuracy"), ("GEM", "fq1_gem"), ("NTS", "nts"), ("DIS", "dis")]
    rows = [Row([v, r.name], [_cell(r, ("strata", stratum, v, k)) for _, k in cols], r.name, r.synthetic)
            for v in values for r in runs if get(r.metrics, ("strata", stratum, v)) is not None]
    return Table(f"fe_strata_{stratum}", f"By {label}", [label.capitalize(), "Run"], [c for c, _ in cols], rows)


def fe_seeds(runs: Sequence[RunScore]) -> Table:
    rows = []
    cols = ["Mean Acc", "SD Acc", "Mean F1", "SD F1", "Mean GEM", "SD GEM", "Mean NTS", "SD NTS", "Mean DIS",
            "SD DIS"]
    for r in runs:
        node = get(r.metrics, ("seeds",))
        if reason_of(node) is not None:
            rows.append(Row([r.name], [Cell(node, ("seeds",), r.name) for _ in cols], r.name, r.synthetic))
            continue
        cells = []
        for m in ("accuracy", "macro_f1", "fq1_gem", "nts", "dis"):
            cells += [_cell(r, ("seeds", m, "mean"), "rate"), _cell(r, ("seeds", m, "sd"), "rate")]
        rows.append(Row([r.name], cells, r.name, r.synthetic))
    return Table("fe_seeds", "Multi-seed mean ± sample SD", ["Run"], cols, rows,
                 note="Over runs that differ from the row's run only in seed.")


# ---- StemBind (002) -----------------------------------------------------------------------------------------

SB_OPERATIONS = ("RI-Pos", "RI-Sty", "RI-Attr", "RI-Qty", "RI-Rel", "VP-Fold", "VP-View", "VP-Rot", "VP-Closure")
SB_DECOMP = ("solved", "cant_bind", "cant_reason", "cant_see")
SSA_LEVELS = ("H0", "H1", "H2", "H3", "H4")


def sb_tables(runs: Sequence[RunScore]) -> list[Table]:
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
    ops = _keys(runs, ("by_operation",), SB_OPERATIONS)
    fams = _keys(runs, ("by_family",), ("RI", "VP"))
    rows = []
    for group, names in (("by_family", fams), ("by_operation", ops)):
        for name in names:
            for r in runs:
                if get(r.metrics, (group, name)) is None:
                    continue
                rows.append(Row([name, r.name], [_cell(r, (group, name, k), "diff" if k == "rf_gap" else "auto")
                                                for k in ("p", "r", "f", "rf_gap")],
                                r.name, r.synthetic))
    out.append(Table("sb_operations", "Accuracy per operation and RI / VP family", ["Operation", "Run"],
                     ["P", "R", "F", "R−F gap"], rows))
    out.append(run_table("sb_decomposition", "Stem failure decomposition (002 §4.3)", runs, [
        *[(c.replace("_", " "), ("decomposition", c)) for c in SB_DECOMP],
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
        rows.append(Row([r.name, label], [_cell(r, (path, k), "diff") for _, k in cols], r.name, r.synthetic))
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
        cells = [_cell(r, ("ssa", "accuracy", lv)) for lv in levels]
        cells += [_cell(r, ("ssa", "irrelevant_minus_h0"), "diff"), _cell(r, ("ssa", "raw_deltas", "H3-H2"), "diff"),
                  _cell(r, ("ssa", "isotonic_gains", "H3-H2"), "diff"), _cell(r, ("ssa", "largest_raw_jump")),
                  _cell(r, ("ssa", "largest_isotonic_jump")), Cell(_text_removed(node), None, r.name, "text")]
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
    cols = [("Traces", ("l2", "n_traces")), *[(f"StepAcc {s}", ("l2", "step_acc", s)) for s in ("S1", "S2", "S3", "S4")],
            ("Inconsistent", ("l2", "inconsistent")),
            *[(f"First fail {s}", ("l2", "first_failure", s)) for s in ("S1", "S2", "S3", "S4", "none")]]
    t = run_table("sb_stepacc", "L2 StepAcc per stage and first failure (002 §3.3, C.3)", runs, cols,
                  note="From the trace judgements of the run (Judge tab or import-labels).")
    for row in t.rows:
        node = get(next(r for r in runs if r.name == row.run).metrics, ("l2",))
        if reason_of(node) is not None:
            row.cells = [Cell(node, ("l2",), row.run) for _ in cols]
    return t


# ---- SPUR (001) ---------------------------------------------------------------------------------------------

SPUR_TASKS = ("NP", "MP", "IL", "TA", "HI", "Qual", "Quant")
SPUR_STAGES = ("perception", "understanding", "reasoning")
SPUR_MAIN = [*[(t, ("tasks", t)) for t in SPUR_TASKS], ("Perception", ("perception",)),
             ("Understanding", ("understanding",)), ("Reasoning", ("reasoning",)), ("Overall", ("overall",))]


def spur_tables(runs: Sequence[RunScore]) -> list[Table]:
    out = [run_table("spur_table3", "Seven tasks, stage micro averages, overall (001 Table 3 layout)", runs,
                     SPUR_MAIN, note="Figure-clustered 95% intervals on hover and in LaTeX.")]
    out.append(spur_mcot(runs))
    rows = []
    for r in runs:
        cells = [_cell(r, ("reasoning_by_perception", k)) for k in ("perception_correct", "perception_incorrect")]
        cells.append(_cell(r, ("reasoning_by_perception", "n_excluded")))
        vs = get(r.metrics, ("reasoning_by_perception", "vs_direct"))
        cells.append(Cell(vs.get("direct") if vs else "—", None, r.name, "text"))
        for k in ("perception_correct", "perception_incorrect"):
            cells.append(_cell(r, ("reasoning_by_perception", "vs_direct", k), "diff") if vs else
                         Cell({"value": None, "reason": "direct run (no MCoT comparison)"}, None, r.name))
        rows.append(Row([r.name], cells, r.name, r.synthetic))
    out.append(Table("spur_table5", "Reasoning accuracy by perception correctness (001 Table 5 layout)", ["Run"],
                     ["Perception correct", "Perception wrong", "Excluded", "Direct run", "Δ vs direct (correct)",
                      "Δ vs direct (wrong)"], rows,
                     note="A reasoning item counts as 'perception correct' when every perception item (NP, MP, IL) of "
                          "its figure was answered correctly, 'wrong' when any was answered wrongly; figures without "
                          "answered perception items are excluded."))
    stains = _keys(runs, ("by_staining",))
    out.append(Table("spur_staining", "Perception by staining category (001 Figure 5)", ["Staining", "Run"],
                     ["Accuracy", "Deviation from perception micro"],
                     [Row([s, r.name], [_cell(r, ("by_staining", s, "accuracy")),
                                        _cell(r, ("by_staining", s, "deviation"), "diff")], r.name, r.synthetic)
                      for s in stains for r in runs if get(r.metrics, ("by_staining", s)) is not None]))
    scopes = _keys(runs, ("by_n_relations",), ("understanding", "TA", "HI"))
    rel_rows = []
    for scope in scopes:
        for n in _keys(runs, ("by_n_relations", scope)):
            for r in runs:
                if get(r.metrics, ("by_n_relations", scope, n)) is not None:
                    rel_rows.append(Row([scope, n, r.name], [_cell(r, ("by_n_relations", scope, n))], r.name,
                                        r.synthetic))
    out.append(Table("spur_relations", "Understanding by number of relations (001 Figure 5)",
                     ["Scope", "Relations", "Run"], ["Accuracy"], rel_rows))
    paradigms = _keys(runs, ("by_paradigm",))
    out.append(Table("spur_paradigm", "Reasoning by paradigm (001 Figure 5)", ["Paradigm", "Run"], ["Accuracy"],
                     [Row([p, r.name], [_cell(r, ("by_paradigm", p))], r.name, r.synthetic)
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
    return Table("spur_shortcut", "Text-only shortcut filter per model (001 §2.3)", ["Filter model"], cols, rows,
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
        cells = [Cell(strategy, None, r.name, "text"), *[_cell(r, (s,)) for s in SPUR_STAGES], _cell(r, ("overall",))]
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


# ---- generic -------------------------------------------------------------------------------------------------


def generic_tables(runs: Sequence[RunScore]) -> list[Table]:
    out = [run_table("generic_main", "Accuracy, macro P / R / F1, group exact match", runs, [
        ("Acc", ("accuracy",)), ("P", ("macro_precision",)), ("R", ("macro_recall",)), ("F1", ("macro_f1",)),
        ("GEM", ("group_exact_match",)), ("Vanilla", ("vanilla",)), ("Circular", ("circular",)),
        ("Consistency", ("consistency",))])]
    kinds = _keys(runs, ("per_kind",))
    out.append(Table("generic_kinds", "Accuracy per kind", ["Kind", "Run"], ["Acc"],
                     [Row([k, r.name], [_cell(r, ("per_kind", k))], r.name, r.synthetic)
                      for k in kinds for r in runs if get(r.metrics, ("per_kind", k)) is not None]))
    return [t for t in out if not t.empty]


def tables_for(family: str, runs: Sequence[RunScore], controls: Sequence[RunScore] = ()) -> list[Table]:
    """Every table of SPEC §5 for one family over the selected runs."""
    if family == "frameevidence":
        return fe_tables(runs, controls)
    if family == "stembind":
        return sb_tables(runs)
    if family == "spur":
        return spur_tables(runs)
    return generic_tables(runs)
