"""Line-level rules of the public file formats (SPEC §3, docs/FORMATS.md): dicts in, records and issues out.

Pure: no file system, no SQL. The importers in db/ read the files, call these per line, and run the family's
group rules (core/families/) over the whole file before anything is written.
"""

from __future__ import annotations

from typing import Any

from core import families
from core.report import Report
from core.schema import FAMILIES, INPUT_MODES, LETTERS, STAGES, STATUSES, Item, Label, Prediction

ITEM_FIELDS = {"benchmark", "item_id", "group_id", "split", "kind", "variant", "images", "question", "options",
               "answer", "meta", "stages"}
PRED_FIELDS = {"item_id", "response", "answer", "status", "rotation", "repeat", "input_mode", "trace", "tokens",
               "latency", "error", "probs"}
LABEL_FIELDS = {"item_id", "annotator", "labeler", "kind", "S1", "S2", "S3", "S4", "first_failure", "category",
                "note", "rotation", "repeat"}


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
    before = len(report.errors)
    family = obj.get("benchmark")
    if family is None:
        report.error(file, line, "benchmark", f"missing required field (expected one of {', '.join(FAMILIES)})")
    elif family not in FAMILIES:
        report.error(file, line, "benchmark", f"unknown family {family!r} (expected one of {', '.join(FAMILIES)})")
    item_id = _text(obj, "item_id", file, line, report)
    question = _text(obj, "question", file, line, report)
    generic = family in FAMILIES and families.get(family).OPTIONAL_GROUPS  # each item its own group
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
    elif letters and answer not in options:  # type: ignore[operator]
        report.error(file, line, "answer", f"{answer!r} is not an option letter (expected one of {letters})")
    images = obj.get("images", [])
    if not isinstance(images, list) or not all(isinstance(p, str) and p for p in images):
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
    unknown = sorted(set(obj) - ITEM_FIELDS)
    if unknown:
        report.warn(file, line, ",".join(unknown), "unknown field(s) ignored (put free data under meta)")
    if len(report.errors) > before:
        return None
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
    except (TypeError, ValueError):
        report.error(file, line, key, f"expected an integer {lo}..{hi}, got {value!r:.40}")
        return default
    if not lo <= as_int <= hi:
        report.error(file, line, key, f"expected an integer {lo}..{hi}, got {as_int}")
    return as_int


_FAST_PRED_KEYS = frozenset({"item_id", "response", "answer", "status", "rotation", "repeat", "input_mode", "trace",
                             "tokens", "error"})


# (item_id, response, status, answer letter, rotation, repeat, input_mode, trace, tokens, error)
PredictionFields = tuple[str, str, str, str | None, int, int, str, str | None, int | None, str | None]


_PLAIN_PRED_KEYS = frozenset({"item_id", "response", "tokens"})


def plain_prediction(obj: Any) -> tuple[str, str, int | None] | None:
    """(item_id, response, tokens) of the usual predictions line, which has no other field; None for any other
    line (`fast_prediction_fields` or `parse_prediction_fields` decides those)."""
    if type(obj) is not dict or not obj.keys() <= _PLAIN_PRED_KEYS:
        return None
    get = obj.get
    item_id, response, tokens = get("item_id"), get("response"), get("tokens")
    if type(item_id) is not str or not item_id or type(response) is not str \
            or (tokens is not None and (type(tokens) is not int or not 0 <= tokens <= 10_000_000)):
        return None
    return item_id, response, tokens


def fast_prediction_fields(obj: Any) -> PredictionFields | None:
    """The fields of a common well-formed predictions line, checked with plain type tests (status "" when not
    given); None sends the line through `parse_prediction_fields`, which accepts or rejects it with the precise
    error (same rules). A tuple, not a Prediction: the bulk importer builds no object per line."""
    if type(obj) is not dict:
        return None
    keys = obj.keys()
    if keys <= _PLAIN_PRED_KEYS:
        plain = plain_prediction(obj)
        return None if plain is None else (plain[0], plain[1], "", None, 0, 0, "all", None, plain[2], None)
    if not keys <= _FAST_PRED_KEYS:
        return None
    get = obj.get
    item_id = get("item_id")
    response = get("response")
    if type(item_id) is not str or not item_id or type(response) is not str:
        return None
    status = get("status") or None
    rotation = get("rotation", 0)
    repeat = get("repeat", 0)
    input_mode = get("input_mode") or "all"
    answer = get("answer") or None
    trace = get("trace") or None
    tokens = get("tokens")
    error = get("error") or None
    if (status is not None and status not in STATUSES) or type(rotation) is not int or not 0 <= rotation <= 7 \
            or type(repeat) is not int or not 0 <= repeat <= 10_000 or input_mode not in INPUT_MODES \
            or (answer is not None and (type(answer) is not str or len(answer) != 1 or answer not in LETTERS)) \
            or (trace is not None and type(trace) is not str) \
            or (tokens is not None and (type(tokens) is not int or not 0 <= tokens <= 10_000_000)) \
            or (error is not None and type(error) is not str):
        return None
    return item_id, response, status or "", answer, rotation, repeat, input_mode, trace, tokens, error


def fast_prediction(obj: Any, line: int) -> Prediction | None:
    """`fast_prediction_fields` as a Prediction (None: see there)."""
    f = fast_prediction_fields(obj)
    if f is None:
        return None
    return Prediction(item_id=f[0], response=f[1], status=f[2], shown=f[3], rotation=f[4], repeat=f[5],
                      input_mode=f[6], trace=f[7], tokens=f[8], error=f[9], line=line)


def parse_prediction_fields(obj: Any, file: str, line: int, report: Report) -> Prediction | None:
    """The format-level checks of one predictions line; letters and parsing are resolved by the importer."""
    if not isinstance(obj, dict):
        report.error(file, line, "(line)", "expected a JSON object")
        return None
    before = len(report.errors)
    item_id = obj.get("item_id")
    if not isinstance(item_id, str) or not item_id:
        report.error(file, line, "item_id", "missing required field (expected the item's id)")
    response = obj.get("response")
    if response is None:
        report.error(file, line, "response", "missing required field (expected the raw model text; may be empty)")
    elif not isinstance(response, str):
        report.error(file, line, "response", "expected a string")
    status = obj.get("status") or None
    if status is not None and status not in STATUSES:
        report.error(file, line, "status", f"expected one of {', '.join(STATUSES)}, got {status!r:.40}")
    input_mode = obj.get("input_mode") or "all"
    if input_mode not in INPUT_MODES:
        report.error(file, line, "input_mode", f"expected one of {', '.join(INPUT_MODES)}, got {input_mode!r:.40}")
    rotation = _int_field(obj, "rotation", file, line, report, 0, 0, 7)
    repeat = _int_field(obj, "repeat", file, line, report, 0, 0, 10_000)
    tokens_raw = obj.get("tokens")
    tokens = None
    if tokens_raw not in (None, ""):
        tokens = _int_field(obj, "tokens", file, line, report, 0, 0, 10_000_000)
    answer = obj.get("answer") or None
    if answer is not None and (not isinstance(answer, str) or len(answer) != 1 or answer not in LETTERS):
        report.error(file, line, "answer", f"expected an option letter A-H, got {answer!r:.40}")
    trace = obj.get("trace") or None
    if trace is not None and not isinstance(trace, str):
        report.error(file, line, "trace", "expected a string")
    if len(report.errors) > before:
        return None
    return Prediction(item_id=item_id, response=response, status=status or "", shown=answer,  # type: ignore[arg-type]
                      rotation=rotation, repeat=repeat, input_mode=input_mode, trace=trace, tokens=tokens,
                      error=obj.get("error") or None, line=line)


def prediction_key(obj: Any) -> tuple[str, int, int] | None:
    """(item_id, rotation, repeat) of a predictions line as far as it can be read, also on a line with other
    errors (so an unknown item or a duplicate key is still reported for it); None when the key itself is bad."""
    if not isinstance(obj, dict):
        return None
    item_id = obj.get("item_id")
    if not isinstance(item_id, str) or not item_id:
        return None
    scratch = Report()
    rotation = _int_field(obj, "rotation", "", 0, scratch, 0, 0, 7)
    repeat = _int_field(obj, "repeat", "", 0, scratch, 0, 0, 10_000)
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
    rotation = _int_field(obj, "rotation", file, line, report, 0, 0, 7)
    repeat = _int_field(obj, "repeat", file, line, report, 0, 0, 10_000)
    unknown = sorted(set(obj) - LABEL_FIELDS)
    if unknown:
        report.warn(file, line, ",".join(unknown), "unknown field(s) ignored")
    if len(report.errors) > before:
        return None
    return Label(item_id=str(item_id), labeler=str(labeler).strip(), kind=kind, flags=flags, first_failure=first,
                 category=obj.get("category"), note=obj.get("note"), rotation=rotation, repeat=repeat, line=line)
