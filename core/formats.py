"""Line-level rules of the public file formats (SPEC §3, docs/FORMATS.md): dicts in, records and issues out.

Pure: no file system, no SQL. The importers in db/ read the files, call these per line, and run the family's
group rules (core/families/) over the whole file before anything is written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core import families
from core.report import Report
from core.schema import INPUT_MODES, LETTERS, STAGES, STATUSES, Item, Label

ITEM_FIELDS = {"benchmark", "item_id", "group_id", "split", "kind", "variant", "images", "question", "options",
               "answer", "meta", "stages"}
LABEL_FIELDS = {"item_id", "annotator", "labeler", "kind", *STAGES, "first_failure", "category", "note", "rotation",
                "repeat"}


def _text(obj: dict[str, Any], key: str, file: str, line: int, report: Report, *, required: bool = True,
          default: str = "") -> str | None:
    value = obj.get(key)
    if value is None:
        if required:
            report.error(file, line, key, "missing required field (expected a non-empty string)")
            return None
        return default
    if not isinstance(value, str) or (required and not value.strip()):
        report.error(file, line, key, f"expected a non-empty string, got {value!r:.60}")
        return None
    return value


def parse_item(obj: Any, file: str, line: int, report: Report) -> Item | None:
    """One items-JSONL object as an Item (image paths still as written), or None with errors in `report`."""
    if not isinstance(obj, dict):
        report.error(file, line, "(line)", "expected a JSON object")
        return None
    before = len(report.issues)
    family = obj.get("benchmark")
    if family is None:
        report.error(file, line, "benchmark", f"missing required field (expected one of {', '.join(families.names())})")
    elif not families.known(family):
        report.error(file, line, "benchmark", f"unknown family {family!r} (expected one of {', '.join(families.names())})")
    item_id = _text(obj, "item_id", file, line, report)
    question = _text(obj, "question", file, line, report)
    generic = families.known(family) and families.get(family).capabilities.optional_groups  # each item its own group
    group_id = _text(obj, "group_id", file, line, report, required=not generic, default=item_id or "")
    kind = _text(obj, "kind", file, line, report, required=not generic)
    variant = _text(obj, "variant", file, line, report, required=False)
    split = _text(obj, "split", file, line, report, required=False, default="test")
    options = obj.get("options")
    letters = ""
    if not isinstance(options, dict) or not options:
        report.error(file, line, "options", "expected an object of option letters to texts, e.g. {\"A\": \"...\"}")
    else:
        letters = "".join(options)
        if len(options) < 2 or letters != LETTERS[: len(options)]:
            report.error(file, line, "options", f"expected consecutive letters from A (2 to 8), got {letters!r}")
        elif not all(isinstance(v, str) for v in options.values()):
            report.error(file, line, "options", "expected every option text to be a string")
    answer = obj.get("answer")
    if answer is None:
        report.error(file, line, "answer", "missing required field (expected one of the option letters)")
    elif letters and (not isinstance(answer, str) or answer not in options):  # type: ignore[operator]
        report.error(file, line, "answer", f"{answer!r:.40} is not an option letter (expected one of {letters})")
    images = obj.get("images", [])
    if not isinstance(images, list) or (images and not all(isinstance(p, str) and p for p in images)):
        report.error(file, line, "images", "expected a list of relative image paths")
        images = []
    meta = obj.get("meta", {})
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        report.error(file, line, "meta", "expected an object")
        meta = {}
    stages = obj.get("stages")
    if stages is not None:
        if not isinstance(stages, dict) or not all(isinstance(stages.get(s), str) for s in STAGES):
            report.error(file, line, "stages", "expected an object with text for each of S1, S2, S3, S4")
            stages = None
    unknown = [] if obj.keys() <= ITEM_FIELDS else sorted(set(obj) - ITEM_FIELDS)
    if unknown:
        report.warn(file, line, ",".join(unknown), "unknown field(s) ignored (put free data under meta)")
    if any(i.severity == "error" for i in report.issues[before:]):  # this line's own (counting every error of
        return None  # the report at each line made a file with a warning per line quadratic)
    return Item(benchmark=str(family), item_id=str(item_id), group_id=str(group_id), split=str(split),
                kind=str(kind or ""), variant=str(variant or ""), question=str(question), options=dict(options or {}),
                answer=str(answer), images=[], image_names=list(images), meta=meta, stages=stages, line=line)


def _int_field(obj: dict[str, Any], key: str, file: str, line: int, report: Report, default: int,
               lo: int, hi: int) -> int:
    value = obj.get(key, default)
    if value in (None, ""):
        return default
    try:
        as_int = int(value)
        if str(as_int) != str(value).strip() and not isinstance(value, int):
            raise ValueError
    except (TypeError, ValueError, OverflowError):  # OverflowError: an infinite float (1e400 in the file)
        report.error(file, line, key, f"expected an integer {lo}..{hi}, got {value!r:.40}")
        return default
    if not lo <= as_int <= hi:
        report.error(file, line, key, f"expected an integer {lo}..{hi}, got {as_int}")
    return as_int


# ---- predictions: the line schema, declared once ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a predictions line (SPEC §3, docs/FORMATS.md). `kind` says how it is checked:

    - id: a non-empty string (absent or anything else: `missing`);
    - text: a string (absent: `missing` when required; an empty value counts as absent when not required);
    - choice: one of `allowed` (absent or empty: `default`);
    - int: an integer `lo`..`hi`, also written as a string of digits (absent or "": `default`);
    - letter: one option letter A-H (absent or empty: none);
    - free: kept as given, a string or a number (absent or empty: none; an object or a list is refused: a store
      column holds one value).
    """

    name: str
    kind: str
    required: bool = False
    default: Any = None
    allowed: tuple[str, ...] = ()
    lo: int = 0
    hi: int = 0
    missing: str = ""


# Every predictions line is read by this table, in this order (the order of its error messages). A line with
# other fields keeps them unread (`latency` and `probs` are written by the runners, not by an import).
PREDICTION_LINE: tuple[Field, ...] = (
    Field("item_id", "id", required=True, missing="missing required field (expected the item's id)"),
    Field("response", "text", required=True,
          missing="missing required field (expected the raw model text; may be empty)"),
    Field("status", "choice", allowed=STATUSES),
    Field("input_mode", "choice", default="all", allowed=INPUT_MODES),
    Field("rotation", "int", default=0, lo=0, hi=7),
    Field("repeat", "int", default=0, lo=0, hi=10_000),
    Field("tokens", "int", lo=0, hi=10_000_000),
    Field("answer", "letter"),
    Field("trace", "text"),
    Field("error", "free"),
)
PRED_FIELDS = {f.name for f in PREDICTION_LINE} | {"latency", "probs"}
_BY_NAME = {f.name: f for f in PREDICTION_LINE}

# (item_id, response, status ("" when not given), shown letter, rotation, repeat, input_mode, trace, tokens, error):
# the fields of one line in PREDICTION_LINE's order but for the letter (`answer` in the file: the letter as shown)
PredictionFields = tuple[str, str, str, str | None, int, int, str, str | None, int | None, str | None]


def _accepts(f: Field) -> Callable[[Any], bool]:
    """A plain type test that accepts a value only where `check_prediction_line` does (and where it would keep the
    value as is); False sends the line through that full check, which decides it."""
    if f.kind == "id":
        return lambda v: type(v) is str and v != ""
    if f.kind == "text":
        return (lambda v: type(v) is str) if f.required else (lambda v: v is None or type(v) is str)
    if f.kind == "choice":
        allowed = (*f.allowed, None, "")
        return lambda v: v in allowed
    if f.kind == "int":
        lo, hi = f.lo, f.hi
        return lambda v: v is None or (type(v) is int and lo <= v <= hi)
    if f.kind == "letter":
        return lambda v: v is None or v == "" or (type(v) is str and len(v) == 1 and v in LETTERS)
    return lambda v: not isinstance(v, (dict, list))  # free: one value a column can hold


_ACCEPTS = {f.name: _accepts(f) for f in PREDICTION_LINE}


_ROTATION, _REPEAT, _TOKENS = _BY_NAME["rotation"], _BY_NAME["repeat"], _BY_NAME["tokens"]
_TOKENS_LO, _TOKENS_HI = _TOKENS.lo, _TOKENS.hi


def usual_fields(obj: Any) -> tuple[str, str, int | None] | None:
    """(item_id, response, tokens or None) of a line holding those fields alone, well-formed (most lines of an
    import: every other field takes its default); None for any other line, which `prediction_fields` reads."""
    if type(obj) is dict:
        n = len(obj)
        if n <= 3:
            get = obj.get
            item_id, response = get("item_id"), get("response")
            if type(item_id) is str and item_id and type(response) is str:
                if n == 2:
                    return item_id, response, None
                tokens = get("tokens")
                if type(tokens) is int and _TOKENS_LO <= tokens <= _TOKENS_HI:
                    return item_id, response, tokens
    return None


def prediction_fields(obj: Any) -> PredictionFields | None:
    """The fields of a well-formed predictions line by plain type tests (the common case, and fast); None when
    some field needs `check_prediction_line`, which then accepts or rejects the line by the same table."""
    usual = usual_fields(obj)
    if usual is not None:  # no other field to look at
        return usual[0], usual[1], "", None, 0, 0, "all", None, usual[2], None
    if type(obj) is not dict:
        return None
    get = obj.get
    item_id, response = get("item_id"), get("response")
    if type(item_id) is not str or not item_id or type(response) is not str:
        return None
    tokens = get("tokens")
    accepts = _ACCEPTS
    for key, value in obj.items():
        test = accepts.get(key)
        if test is not None and not test(value):
            return None
    return (item_id, response, get("status") or "", get("answer") or None, get("rotation") or 0,
            get("repeat") or 0, get("input_mode") or "all", get("trace") or None, tokens, get("error") or None)


def _check_field(f: Field, obj: dict[str, Any], file: str, line: int, report: Report) -> Any:
    """The value of field `f` of a line, its problem (if any) in `report` (see Field for the rules)."""
    key = f.name
    if f.kind == "int":
        if obj.get(key) in (None, ""):
            return f.default
        return _int_field(obj, key, file, line, report, f.default or 0, f.lo, f.hi)
    if f.kind == "id":
        value = obj.get(key)
        if not isinstance(value, str) or not value:
            report.error(file, line, key, f.missing)
        return value
    if f.kind == "text" and f.required:
        value = obj.get(key)
        if value is None:
            report.error(file, line, key, f.missing)
        elif not isinstance(value, str):
            report.error(file, line, key, "expected a string")
        return value
    value = obj.get(key) or f.default
    if f.kind == "free" and isinstance(value, (dict, list)):
        report.error(file, line, key, f"expected a string or a number, got {value!r:.40}")
    if value is None or f.kind == "free":
        return value
    if f.kind == "choice" and value not in f.allowed:
        report.error(file, line, key, f"expected one of {', '.join(f.allowed)}, got {value!r:.40}")
    elif f.kind == "letter" and (not isinstance(value, str) or len(value) != 1 or value not in LETTERS):
        report.error(file, line, key, f"expected an option letter A-H, got {value!r:.40}")
    elif f.kind == "text" and not isinstance(value, str):
        report.error(file, line, key, "expected a string")
    return value


def check_prediction_line(obj: Any, file: str, line: int, report: Report) -> PredictionFields | None:
    """Every field of one predictions line checked by PREDICTION_LINE, each problem in `report` (file, line,
    field, what was expected); None when there is one. Letters and parsing are resolved by the importer."""
    if not isinstance(obj, dict):
        report.error(file, line, "(line)", "expected a JSON object")
        return None
    before = len(report.errors)
    v = {f.name: _check_field(f, obj, file, line, report) for f in PREDICTION_LINE}
    if len(report.errors) > before:
        return None
    return (v["item_id"], v["response"], v["status"] or "", v["answer"], v["rotation"], v["repeat"],
            v["input_mode"], v["trace"], v["tokens"], v["error"])


def prediction_key(obj: Any) -> tuple[str, int, int] | None:
    """(item_id, rotation, repeat) of a predictions line as far as it can be read, also on a line with other
    errors (so an unknown item or a duplicate key is still reported for it); None when the key itself is bad."""
    if not isinstance(obj, dict):
        return None
    item_id = obj.get("item_id")
    if not isinstance(item_id, str) or not item_id:
        return None
    scratch = Report()
    rotation = _check_field(_ROTATION, obj, "", 0, scratch)
    repeat = _check_field(_REPEAT, obj, "", 0, scratch)
    return None if scratch.errors else (item_id, rotation, repeat)


def parse_label(obj: Any, file: str, line: int, report: Report) -> Label | None:
    """One labels-JSONL object (SPEC §3): item_id, annotator or labeler, kind, S1..S4 as 0/1."""
    if not isinstance(obj, dict):
        report.error(file, line, "(line)", "expected a JSON object")
        return None
    before = len(report.errors)
    item_id = obj.get("item_id")
    if not isinstance(item_id, str) or not item_id:
        report.error(file, line, "item_id", "missing required field (expected the item's id)")
    labeler = obj.get("labeler", obj.get("annotator"))
    if not isinstance(labeler, str) or not labeler.strip():
        report.error(file, line, "annotator", "missing required field (expected the annotator's or judge's name)")
    kind = obj.get("kind", "human")
    if kind not in ("human", "judge"):
        report.error(file, line, "kind", f"expected human or judge, got {kind!r:.40}")
    flags: dict[str, bool | None] = {}
    for s in STAGES:
        v = obj.get(s)
        if v is None:
            flags[s] = None
        elif v in (0, 1) and not isinstance(v, float):
            flags[s] = bool(v)
        else:
            report.error(file, line, s, f"expected 0 or 1 (or absent), got {v!r:.40}")
    first = obj.get("first_failure")
    if first is not None and first not in (*STAGES, "none"):
        report.error(file, line, "first_failure", f"expected one of S1..S4 or none, got {first!r:.40}")
    for fld in ("category", "note"):
        if obj.get(fld) is not None and not isinstance(obj[fld], str):
            report.error(file, line, fld, f"expected text (or absent), got {obj[fld]!r:.40}")
    rotation = _int_field(obj, "rotation", file, line, report, 0, 0, 7)
    repeat = _int_field(obj, "repeat", file, line, report, 0, 0, 10_000)
    unknown = sorted(set(obj) - LABEL_FIELDS)
    if unknown:
        report.warn(file, line, ",".join(unknown), "unknown field(s) ignored")
    if len(report.errors) > before:
        return None
    return Label(item_id=str(item_id), labeler=str(labeler).strip(), kind=kind, flags=flags, first_failure=first,
                 category=obj.get("category"), note=obj.get("note"), rotation=rotation, repeat=repeat, line=line)
