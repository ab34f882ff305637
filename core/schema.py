"""Records of the data model (SPEC §2) as small dataclasses, and the Rate result type of every metric."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

LETTERS = "ABCDEFGH"
STATUSES = ("ok", "invalid", "api_error")
INPUT_MODES = ("all", "first", "text")
STAGES = ("S1", "S2", "S3", "S4")
# The StemBind reasoning stages as 002 §3.1 names them (Sternberg): the one set of names every prompt, judge
# rubric, view and doc uses.
STAGE_NAMES = {"S1": "Encode", "S2": "Infer", "S3": "Map", "S4": "Apply"}
# The bootstrap's defaults (core.stats): 20,000 percentile draws, paper 000's seed.
DEFAULT_DRAWS = 20_000
DEFAULT_SEED = 20261010


@dataclass(slots=True)
class Item:
    """One question. `images` holds content hashes once imported; `image_names` the paths as written."""

    benchmark: str
    item_id: str
    group_id: str
    split: str
    kind: str
    variant: str
    question: str
    options: dict[str, str]
    answer: str
    images: list[str] = field(default_factory=list)
    image_names: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    stages: dict[str, str] | None = None
    line: int = 0


@dataclass(slots=True)
class Prediction:
    """One answer of one run to one item under one rotation and repeat.

    `shown` is the letter the model chose in the order it was shown; `answer` is that letter mapped back to
    the original option order with (j - r) mod n (SPEC §3), or None when the response is not ok.
    """

    item_id: str
    response: str
    status: str
    answer: str | None = None
    shown: str | None = None
    rotation: int = 0
    repeat: int = 0
    input_mode: str = "all"
    error: str | None = None
    trace: str | None = None
    tokens: int | None = None
    latency: float | None = None
    probs: dict[str, float] | None = None
    line: int = 0


@dataclass(slots=True)
class Label:
    """Stage flags for one trace from one labeler (a human annotator or a judge)."""

    item_id: str
    labeler: str
    kind: str  # human | judge
    flags: dict[str, bool | None]
    first_failure: str | None = None
    category: str | None = None
    note: str | None = None
    rotation: int = 0
    repeat: int = 0
    line: int = 0


@dataclass(slots=True)
class Rate:
    """A rate k / n, or the reason it cannot be computed. `value` may be set without k/n (differences)."""

    value: float | None
    k: int | None = None
    n: int | None = None
    reason: str | None = None
    ci: tuple[float, float] | None = None

    @classmethod
    def of(cls, k: int, n: int, what: str = "items") -> Rate:
        if n == 0:
            return cls(None, int(k), 0, reason=f"no {what} to count")
        return cls(k / n, int(k), int(n))

    @classmethod
    def undefined(cls, reason: str) -> Rate:
        return cls(None, reason=reason)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value}
        if self.k is not None:
            out["k"] = self.k
        if self.n is not None:
            out["n"] = self.n
        if self.ci is not None:
            out["ci"] = [self.ci[0], self.ci[1]]
        if self.reason is not None:
            out["reason"] = self.reason
        return out


def as_json(obj: Any) -> Any:
    """A typed result as plain JSON values, generated from its dataclass fields (in their order): nested
    dataclasses, tuples and lists become objects and lists, a Rate its `to_json`, a numpy scalar its value, and a
    float that is not finite None (JSON has no NaN). Every result's `json()` is this, so its JSON keys are its
    field names and nothing else."""
    import dataclasses
    import math

    if isinstance(obj, Rate):
        return obj.to_json()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: as_json(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): as_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [as_json(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalars
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def to_jsonable(obj: Any) -> Any:
    """Turn nested dicts / lists holding Rate objects into plain JSON values."""
    if isinstance(obj, Rate):
        return obj.to_json()
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalars
        return obj.item()
    return obj


@dataclass(slots=True)
class RunData:
    """Everything a metric needs about one run: its identity, settings and predictions.

    `preds` is a pandas DataFrame with one row per prediction and the columns of PRED_COLUMNS.
    `config` holds the run settings: runner, model, strategy, shots, input_mode, rotations, repeats, seed,
    max_tokens, synthetic (bool), a strategy's own option and record under their keys (StemBind SSA's
    ssa_level, H0..H4 / irrelevant, and ssa_guard), and any free keys the runner recorded.
    """

    name: str
    benchmark: str
    family: str
    config: dict[str, Any]
    preds: Any  # pandas.DataFrame
    # Optional, from the bulk loader (db.frames): the row of each prediction's item in `rows_in` (the items
    # frame it loaded), so metric code need not look item ids up again. Ignored for any other items frame.
    item_rows: Any = field(default=None, compare=False, repr=False)
    rows_in: Any = field(default=None, compare=False, repr=False)


# Columns of the DataFrames handed to metric code (core/metrics/*). Built by db.store.Store.
ITEM_COLUMNS = (
    "item_id", "group_id", "split", "kind", "variant", "question", "options", "letters", "answer",
    "images", "meta", "stages", "n_images",
)
PRED_COLUMNS = (
    "item_id", "rotation", "repeat", "status", "answer", "shown", "response", "input_mode", "trace",
    "tokens", "latency", "probs", "error",
)
