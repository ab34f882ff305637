"""Small named exceptions raised by core/ and db/; only ui/ and app.py translate them (STYLE 2)."""

from __future__ import annotations


class CrosscheckError(Exception):
    """Base class of every error the product raises on purpose."""


class InvalidItem(CrosscheckError, ValueError):
    """An item line breaks the format."""


class InvalidPrediction(CrosscheckError, ValueError):
    """A prediction line breaks the format."""


class InvalidLabel(CrosscheckError, ValueError):
    """A label line breaks the format."""


class ImportRefused(CrosscheckError, ValueError):
    """A whole import file was refused (see the report for every line)."""

    def __init__(self, message: str, report: object | None = None) -> None:
        super().__init__(message)
        self.report = report


class UnknownFamily(CrosscheckError, ValueError):
    """A benchmark names a family the product does not know."""


class NotFound(CrosscheckError, LookupError):
    """A named benchmark, run or item does not exist in the store."""


class MetricUndefined(CrosscheckError, ValueError):
    """A metric cannot be computed for this data (the message says why)."""


class RunnerError(CrosscheckError, RuntimeError):
    """A runner cannot start (missing backend, bad model path, bad settings)."""


class MissingPackage(RunnerError):
    """A checkpoint's processor or model needs a package that is not installed (`package`, when known)."""

    def __init__(self, message: str, package: str | None = None) -> None:
        super().__init__(message)
        self.package = package


class CalibrationChoice(CrosscheckError, ValueError):
    """A calibration choice (ceiling pairs, consensus annotators) is malformed or names no annotator."""
