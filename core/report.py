"""Validation reports: every problem found in an input file, with file, line, field and what was expected."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Issue:
    """One problem in one input line (line 0 = the file as a whole, or a group spanning lines)."""

    file: str
    line: int
    field: str
    message: str
    severity: str = "error"  # error | warning

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.field}: {self.message}"


@dataclass(slots=True)
class Report:
    """Everything a validation pass found; an import commits only when `errors` is empty."""

    issues: list[Issue] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def error(self, file: str, line: int, fld: str, message: str) -> None:
        self.issues.append(Issue(file, line, fld, message, "error"))

    def warn(self, file: str, line: int, fld: str, message: str) -> None:
        self.issues.append(Issue(file, line, fld, message, "warning"))

    @property
    def errors(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == "error"]

    @property
    def warnings(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == "warning"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def summary(self) -> str:
        """One line: the first error (sorted by line) and how many more there are."""
        errs = sorted(self.errors, key=lambda i: i.line)
        if not errs:
            return f"ok ({len(self.warnings)} warnings)"
        more = f" (and {len(errs) - 1} more errors)" if len(errs) > 1 else ""
        return f"{errs[0]}{more}"
