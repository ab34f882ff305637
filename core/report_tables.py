"""Paper-style tables from `score --json` metrics: pure data, CSV frames and booktabs LaTeX (no gradio).

The Metrics tab (ui/metrics.py) and the exports read the same `Table` objects, so what a researcher sees,
downloads as CSV and pastes into a paper as LaTeX are one thing. Every cell keeps the JSON node it came
from (a rate {"value", "k", "n", "ci", "reason"} or a plain number / string) and its path in the run's
metrics, so a test can check the screen against `python app.py score --run NAME --json`.

Conventions (docs: Metrics tab):
- rates are fractions in the data; the screen and LaTeX show percentages with one decimal, CSV percentages at
  full precision with the unit in the header (`Acc (%)`; differences `(points)`);
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

from core.catalogue import Column, placed

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
    set_aside: dict[str, int] | None = None  # what the scoring set aside (`score --json`'s "set_aside")


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
    aside: str = ""  # what the scores left out (reviewers' "gold is wrong" groups), said first by every output

    @property
    def empty(self) -> bool:
        return not self.rows

    @property
    def notes(self) -> str:
        """The table's note, after what its scores set aside."""
        return " ".join(t for t in (self.aside, self.note) if t)


# --------------------------------------------------------------------------- reading metrics


def get(metrics: Any, path: Iterable[str]) -> Any:
    """The node at `path` in nested dicts, or None when any step is missing."""
    node = metrics
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def read(metrics: Any, path: Path_) -> tuple[Any, Path_]:
    """(the node at `path`, the path it was read at). A step missing below an undefined rate gives that rate
    and its path (the block's reason stands for every place inside it); any other missing step gives None."""
    node = metrics
    for i, key in enumerate(path):
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif reason_of(node) is not None and is_rate(node):
            return node, path[:i]
        else:
            return None, path
    return node, path


def cell(rs: RunScore, col: Column) -> Cell:
    """The cell of one run's metric (at its breakdown keys): its node, the path it was read at, its unit."""
    at = placed(col)
    node, path = read(rs.metrics, at.path())
    return Cell(node, path, rs.name, at.shown)


def value(rs: RunScore, col: Column) -> Any:
    """The node of one run's metric at exactly its place (None when the run lacks it)."""
    node = rs.metrics
    for key in placed(col).path():
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


def fmt_signed(x: float, digits: int = 1) -> str:
    """x with an explicit sign, so a reader sees which side of zero it lies on: an exact zero is "0.0"; a
    nonzero value that rounds to zero gets the decimals it needs ("+0.04", "-0.003"), never "+0.0" / "-0.0"."""
    if x == 0:
        return f"{0:.{digits}f}"
    for d in range(digits, digits + 5):
        s = f"{x:+.{d}f}"
        if float(s) != 0:
            return s
    return f"{x:+.1e}"


def signed_interval(ci: tuple[float, float] | list[float], scale: float = 100, digits: int = 1) -> str:
    """"[lo, hi]" of a difference (or a kappa) with explicit signs (fmt_signed), e.g. "[-28.8, +0.04]"."""
    lo, hi = ci
    return f"[{fmt_signed(scale * lo, digits)}, {fmt_signed(scale * hi, digits)}]"


def fmt_pct(value: float, signed: bool = False) -> str:
    if signed:
        return fmt_signed(100 * value)
    s = f"{100 * value:.1f}"
    return "0.0" if s == "-0.0" else s


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


SCALED_KINDS = {"rate": "%", "mean_sd": "%", "interval": "%", "diff": "points", "interval_diff": "points"}


def column_unit(table: Table, j: int) -> str:
    """The unit column `j` shows on the screen: "%" for rates, "points" for differences, "" otherwise."""
    units = {SCALED_KINDS.get(_kind(r.cells[j]), "") for r in table.rows if reason_of(r.cells[j].node) is None}
    return "points" if "points" in units else "%" if "%" in units else ""


def _scaled(value: Any, unit: str) -> Any:
    """A fraction on the screen's scale (percent or percentage points); anything else as it is."""
    if unit and isinstance(value, (int, float)) and not isinstance(value, bool):
        return round(100 * float(value), 10)
    return value


def to_frame(table: Table) -> pd.DataFrame:
    """One row per table row: label columns, then per column its value on the screen's scale and, where any
    cell has them, `<col>_k`, `<col>_n`, `<col>_ci_low`, `<col>_ci_high`, `<col>_sd`, `<col>_reason`. A rate
    column's values, interval ends and SD are percentages and its headers say so (`Acc (%)`,
    `Acc_ci_low (%)`), a difference column's are percentage points (`Δ (points)`); counts and text stay as
    they are."""
    units = [column_unit(table, j) for j in range(len(table.columns))]

    def head(col: str, suffix: str, unit: str) -> str:
        return f"{col}{suffix} ({unit})" if unit else f"{col}{suffix}"

    records = []
    for row in table.rows:
        rec: dict[str, Any] = dict(zip(table.index, row.labels, strict=True))
        rec["synthetic"] = row.synthetic
        for col, cell, unit in zip(table.columns, row.cells, units, strict=True):
            node = cell.node
            rec[head(col, "", unit)] = None if reason_of(node) is not None else _scaled(value_of(node), unit)
            if is_rate(node):
                if "k" in node:
                    rec[f"{col}_k"] = node["k"]
                if "n" in node:
                    rec[f"{col}_n"] = node["n"]
                if node.get("ci"):
                    lo, hi = node["ci"]
                    rec[head(col, "_ci_low", unit)], rec[head(col, "_ci_high", unit)] = (_scaled(lo, unit),
                                                                                          _scaled(hi, unit))
                if node.get("sd") is not None:
                    rec[head(col, "_sd", unit)] = _scaled(node["sd"], unit)
            why = reason_of(node)
            if why is not None:
                rec[f"{col}_reason"] = why
        records.append(rec)
    ordered: list[str] = [*table.index, "synthetic"]
    for col, unit in zip(table.columns, units, strict=True):
        for suffix in ("", "_k", "_n", "_sd", "_ci_low", "_ci_high", "_reason"):
            for name in (head(col, suffix, unit), f"{col}{suffix}"):
                if any(name in r for r in records) and name not in ordered:
                    ordered.append(name)
    frame = pd.DataFrame.from_records(records, columns=ordered)
    for name in ordered:
        if name.endswith(("_k", "_n")) and name not in table.index:
            frame[name] = frame[name].astype("Int64")
    return frame


def to_csv(table: Table) -> str:
    """The table as CSV; a table whose scores set something aside starts with a `# ` line saying what."""
    buf = io.StringIO()
    if table.aside:
        buf.write(f"# {table.aside}\n")
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
    if table.notes:
        notes.append(latex_escape(table.notes))
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


def run_table(key: str, title: str, runs: Sequence[RunScore], columns: Sequence[Column], note: str = "") -> Table:
    """Rows = runs, one cell per declared column (its header and unit from the declaration)."""
    rows = [Row([r.name], [cell(r, c) for c in columns], r.name, r.synthetic) for r in runs]
    return Table(key, title, ["Run"], [placed(c).header for c in columns], rows, note)


def keys_at(runs: Sequence[RunScore], block: Column, order: Sequence[str] = ()) -> list[str]:
    """The union of the keys of a block (a breakdown) over the runs (known `order` first), skipping rates."""
    found: dict[str, None] = {}
    for r in runs:
        node = value(r, block)
        if isinstance(node, dict) and not is_rate(node):
            for k in node:
                found.setdefault(str(k), None)
    return [k for k in order if k in found] + [k for k in found if k not in order]
