"""Inspect AI's evaluation logs (UKGovernmentBEIS/inspect_ai): docs/FORMATS.md, "Inspect AI logs".

Inspect writes a log in one of two formats (inspect_ai/log/_recorders):

- `.eval`, a zip (eval.py): `header.json` (the `EvalLog` without its samples: version, status, eval, plan,
  results, stats, error), one entry per sample `samples/<id>_epoch_<n>.json` (an `EvalSample`),
  `summaries.json`, `reductions.json`, and `_journal/` (`start.json`, written when the eval starts, and the
  summaries written while it runs). A log still running, or killed, has `_journal/start.json` and the samples
  finished so far but no `header.json`. Entries are compressed with zstd (method 93) by current Inspect and with
  deflate by older versions.
- `.json`, the whole `EvalLog` as one JSON document (json.py), samples under `samples`.

An `EvalSample` (log/_log.py) has `id`, `epoch`, `input` (a string, or chat messages whose content is a string
or a list of `{"type": "text", "text"}` / `{"type": "image", "image"}` parts, the image a data URI or a file),
`choices`, `target`, `metadata`, `output` (`ModelOutput`: `completion`, `choices[0].message.content` with
`{"type": "reasoning", "reasoning"}` parts, `usage.output_tokens`), `scores` (scorer name -> `Score` with
`value`, `answer`, `explanation`), `error`, and `attachments`: long strings of the sample are stored there and
referred to as `attachment://<hash>`.

This module reads a log with stated limits and turns each sample into the objects an items-JSONL and a
predictions-JSONL line would be; db/inspect_log.py checks and writes them. Pure: files in, objects out, no SQL.
A log is read entry by entry (a sample's bytes are let go once it is turned into objects): the zip's members
are never extracted, and each is decompressed as a stream that stops at `MAX_ENTRY_BYTES`.
"""

from __future__ import annotations

import base64
import binascii
import re
import struct
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

import orjson

from core.errors import CrosscheckError
from core.foreign.answers import letter_of
from core.report import Report
from core.schema import LETTERS

MAX_ENTRY_BYTES = 256 * 1024**2  # one zip entry's expanded size (a sample with its events); larger is refused
MAX_JSON_LOG_BYTES = 1024**3  # a `.json` log is one document, read whole: larger ones are refused
READ_CHUNK = 1 << 20  # bytes decompressed per read of a zip entry
SAMPLE_ENTRY = re.compile(r"^samples/(?P<id>.+)_epoch_(?P<epoch>\d+)\.json$")
CHUNKED_SAMPLE = re.compile(r"^samples/.+_epoch_\d+/sample\.json$")  # log/_recorders/chunked/format.py
HEADER, START = "header.json", "_journal/start.json"
ZIP_STORED, ZIP_DEFLATED, ZIP_ZSTD = 0, 8, 93
STATUS_NOTES = {  # EvalLog.status -> what an import of such a log says
    "started": "the eval is still running or was killed (no header.json): imported the {n} samples it holds",
    "cancelled": "the eval was cancelled: imported the {n} samples it holds",
    "error": "the eval stopped with an error ({error}): imported the {n} samples it holds",
}


class BadLog(CrosscheckError, ValueError):
    """An Inspect log that cannot be read: not a zip or JSON log, truncated, an unsafe member name, or an entry
    over a stated limit."""


@dataclass(slots=True)
class Header:
    """What a log says about its eval: status, the `eval` spec (task, model, config), `results`, `plan`,
    `error` (each as the JSON object Inspect wrote, {} when absent)."""

    status: str
    eval: dict[str, Any]
    results: dict[str, Any] = field(default_factory=dict)
    plan: dict[str, Any] = field(default_factory=dict)
    error: dict[str, Any] = field(default_factory=dict)

    @property
    def task(self) -> str:
        return str(self.eval.get("task") or "inspect-task")

    @property
    def model(self) -> str:
        return str(self.eval.get("model") or "")

    def scorer(self) -> str | None:
        """The scorer whose score is Inspect's headline (results.headline, else the first scorer)."""
        headline = self.results.get("headline") or {}
        if isinstance(headline, dict) and headline.get("scorer"):
            return str(headline["scorer"])
        scores = self.results.get("scores") or []
        if scores and isinstance(scores[0], dict) and scores[0].get("name"):
            return str(scores[0]["name"])
        return None

    def run_config(self) -> dict[str, Any]:
        """What the run keeps of the eval: task, ids, status, generate config, task args, Inspect's metrics."""
        ev = self.eval
        metrics = {s.get("name", "?"): {m: v.get("value") for m, v in (s.get("metrics") or {}).items()
                                        if isinstance(v, dict)}
                   for s in self.results.get("scores") or [] if isinstance(s, dict)}
        return {"source_format": "inspect", "inspect": {
            "task": self.task, "task_version": ev.get("task_version"), "eval_id": ev.get("eval_id"),
            "run_id": ev.get("run_id"), "created": ev.get("created"), "status": self.status,
            "epochs": (ev.get("config") or {}).get("epochs"), "task_args": ev.get("task_args") or {},
            "generate_config": ev.get("model_generate_config") or {}, "scores": metrics}}


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _header(doc: Any, name: str) -> Header:
    if not isinstance(doc, dict) or not isinstance(doc.get("eval"), dict):
        raise BadLog(f"{name}: expected an Inspect log header (an object with `eval`)")
    return Header(str(doc.get("status") or "started"), doc["eval"], _obj(doc.get("results")), _obj(doc.get("plan")),
                  _obj(doc.get("error")))


def _loads(data: bytes, where: str) -> Any:
    """orjson: a document nested deeper than its limit (1,024) is a decode error, never a RecursionError."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise BadLog(f"{where}: malformed JSON ({exc})") from None


def looks_like_log(path: Path) -> bool:
    """An `.eval` file, or a `.json` file whose first bytes are an EvalLog's (`version` then `status` / `eval`)."""
    suffix = path.suffix.lower()
    if suffix == ".eval":
        return True
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    if head[:4] == b"PK\x03\x04":  # a zip under another name: a log when it has a log's header entry
        try:
            with zipfile.ZipFile(path) as zf:
                names = set(zf.namelist())
        except (zipfile.BadZipFile, OSError):
            return False
        return HEADER in names or START in names
    if suffix != ".json":
        return False
    return head.lstrip()[:1] == b"{" and b'"version"' in head and (b'"eval"' in head or b'"status"' in head)


class LogFile:
    """One Inspect log, opened for reading: `header` and `samples()` (entry name, EvalSample object), streamed.
    Raises BadLog naming the file (and the entry) for anything it cannot read within the limits."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = path.name
        self._doc: dict[str, Any] | None = None
        self._zip: zipfile.ZipFile | None = None
        self._entries: list[zipfile.ZipInfo] = []
        if _is_zip(path):
            self.kind = "eval"
            self.header = self._open_zip()
        else:
            self.kind = "json"
            self.header = self._open_json()

    # ---- .json -------------------------------------------------------------------------------------------

    def _open_json(self) -> Header:
        try:
            size = self.path.stat().st_size
        except OSError as exc:
            raise BadLog(f"{self.name}: cannot read ({exc.strerror})") from None
        if size > MAX_JSON_LOG_BYTES:
            raise BadLog(f"{self.name}: a .json log of {size:,} bytes is over the {MAX_JSON_LOG_BYTES:,} byte limit "
                         "(it is read whole; convert it with `inspect log convert --to eval`, which is read sample "
                         "by sample)")
        doc = _loads(self.path.read_bytes(), self.name)
        self._doc = doc if isinstance(doc, dict) else None
        return _header(doc, self.name)

    # ---- .eval -------------------------------------------------------------------------------------------

    def _open_zip(self) -> Header:
        try:
            self._zip = zipfile.ZipFile(self.path)
        except (zipfile.BadZipFile, OSError) as exc:
            raise BadLog(f"{self.name}: looks like an Inspect .eval log (a zip) but cannot be read: {exc} "
                         "(truncated, or not a finished write)") from None
        names = set()
        for info in self._zip.infolist():
            pure = PurePosixPath(info.filename.replace("\\", "/"))
            if pure.is_absolute() or ".." in pure.parts or "\x00" in info.filename or re.match(r"^[A-Za-z]:",
                                                                                                 info.filename):
                raise BadLog(f"{self.name}: member {info.filename!r:.200} has an absolute path or a '..' "
                             "component; refused")
            if info.file_size > MAX_ENTRY_BYTES:
                raise BadLog(f"{self.name}: member {info.filename!r:.200} expands to {info.file_size:,} bytes, over "
                             f"the {MAX_ENTRY_BYTES:,} byte limit of one entry")
            names.add(info.filename)
            if SAMPLE_ENTRY.match(info.filename):
                self._entries.append(info)
        if not self._entries and any(CHUNKED_SAMPLE.match(n) for n in names):
            raise BadLog(f"{self.name}: its samples are in Inspect's chunked layout (samples/<id>_epoch_<n>/"
                         "sample.json with their messages and events in chunks), which Crosscheck does not read")
        if HEADER in names:
            return _header(self._entry_json(HEADER), self.name)
        if START in names:  # a log still being written (or killed): its start record, status "started"
            return _header({**_obj(self._entry_json(START)), "status": "started"}, self.name)
        raise BadLog(f"{self.name}: a zip without header.json or _journal/start.json is not an Inspect .eval log")

    def _entry_json(self, name: str) -> Any:
        assert self._zip is not None
        info = self._zip.getinfo(name)
        return _loads(self._read_entry(info), f"{self.name}:{name}")

    def _read_entry(self, info: zipfile.ZipInfo) -> bytes:
        """The entry's bytes, decompressed as a stream that stops past MAX_ENTRY_BYTES whatever its header says,
        its CRC checked."""
        where = f"{self.name}:{info.filename}"
        if info.compress_type == ZIP_ZSTD:
            stream: Any = _ZstdEntry(self.path, info, where)
        elif info.compress_type in (ZIP_STORED, ZIP_DEFLATED):
            assert self._zip is not None
            stream = self._zip.open(info)
        else:
            raise BadLog(f"{where}: compression method {info.compress_type} is not one Inspect writes (stored, "
                         "deflate or zstd)")
        out = bytearray()
        crc = 0
        try:
            with stream:
                while chunk := stream.read(READ_CHUNK):
                    out += chunk
                    crc = zlib.crc32(chunk, crc)
                    if len(out) > MAX_ENTRY_BYTES:
                        raise BadLog(f"{where}: expands past the {MAX_ENTRY_BYTES:,} byte limit of one entry "
                                     "(refused as a possible zip bomb)")
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as exc:
            if isinstance(exc, BadLog):
                raise
            raise BadLog(f"{where}: cannot be decompressed ({type(exc).__name__}: {exc}); the log is damaged") from None
        if crc != info.CRC or len(out) != info.file_size:
            raise BadLog(f"{where}: its content does not match the zip's record (CRC or size); the log is damaged")
        return bytes(out)

    # ---- samples -----------------------------------------------------------------------------------------

    @property
    def n_samples(self) -> int:
        if self._doc is not None:
            return len(self._doc.get("samples") or [])
        return len(self._entries)

    def samples(self) -> Iterator[tuple[str, Any]]:
        """(where, EvalSample object) of each sample, in the order the log holds them."""
        if self._doc is not None:
            for k, sample in enumerate(self._doc.get("samples") or [], start=1):
                yield f"samples[{k}]", sample
            return
        for info in self._entries:
            yield info.filename, _loads(self._read_entry(info), f"{self.name}:{info.filename}")

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()

    def __enter__(self) -> LogFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _is_zip(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"PK\x03\x04"
    except OSError as exc:
        raise BadLog(f"{path.name}: cannot read ({exc.strerror})") from None


class _Slice:
    """The `size` bytes of a file from `offset` on, as a file object (the raw data of one zip member)."""

    def __init__(self, fh: IO[bytes], offset: int, size: int) -> None:
        self._fh, self._left = fh, size
        fh.seek(offset)

    def read(self, n: int = -1) -> bytes:
        n = self._left if n < 0 else min(n, self._left)
        data = self._fh.read(n)
        if len(data) < n:
            raise EOFError("the zip ends inside this entry")
        self._left -= len(data)
        return data


class _ZstdEntry:
    """A zstd-compressed member (method 93, what zipfile-zstd writes for Inspect) read as a stream: `read(n)`
    gives at most n decompressed bytes, so a small entry that expands hugely is stopped after one chunk."""

    def __init__(self, path: Path, info: zipfile.ZipInfo, where: str) -> None:
        import zstandard

        self._fh = open(path, "rb")  # noqa: SIM115 - closed by close() / the with block of _read_entry
        self._fh.seek(info.header_offset)
        head = self._fh.read(30)
        if len(head) < 30 or head[:4] != b"PK\x03\x04":
            self._fh.close()
            raise BadLog(f"{where}: no local header at its recorded offset; the log is damaged")
        name_len, extra_len = struct.unpack("<HH", head[26:30])
        raw: Any = _Slice(self._fh, info.header_offset + 30 + name_len + extra_len, info.compress_size)
        self._reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        self._zstd_error = zstandard.ZstdError

    def read(self, n: int) -> bytes:
        try:
            return bytes(self._reader.read(n))
        except self._zstd_error as exc:
            raise ValueError(f"zstd: {exc}") from None

    def __enter__(self) -> _ZstdEntry:
        return self

    def __exit__(self, *exc: object) -> None:
        self._fh.close()


# ---- samples into item and prediction objects ---------------------------------------------------------------


def _resolve(value: Any, attachments: dict[str, Any]) -> Any:
    """A string `attachment://<hash>` replaced by the attachment it names (Inspect moves long strings there)."""
    if isinstance(value, str) and value.startswith("attachment://"):
        return attachments.get(value[len("attachment://"):], value)
    return value


def _input_parts(sample: dict[str, Any], attachments: dict[str, Any]) -> tuple[str, list[str]]:
    """(question text, image references in order) of a sample's input: a string, or the user messages' text and
    image parts (system and assistant messages are the task's prompt machinery, not the question)."""
    value = _resolve(sample.get("input"), attachments)
    if isinstance(value, str):
        return value, []
    texts: list[str] = []
    images: list[str] = []
    for msg in value if isinstance(value, list) else []:
        if not isinstance(msg, dict) or msg.get("role", "user") != "user":
            continue
        content = _resolve(msg.get("content"), attachments)
        if isinstance(content, str):
            texts.append(content)
            continue
        for part in content if isinstance(content, list) else []:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "text":
                texts.append(str(_resolve(part.get("text"), attachments) or ""))
            elif part.get("type") == "image":
                images.append(str(_resolve(part.get("image"), attachments) or ""))
    return "\n".join(t for t in texts if t), images


@dataclass(slots=True)
class Image:
    """An image of a sample given as a data URI: its bytes (core.foreign's image shape, see db ImageSet)."""

    data: bytes
    column: str = "input"


def image_of(ref: str, where: str, no: int, report: Report) -> Image | str | None:
    """A sample image: bytes of a data URI, a file path (read relative to the log's folder by the importer), or
    None with the problem reported (a URL cannot be read offline)."""
    if ref.startswith("data:"):
        head, _, payload = ref.partition(",")
        if ";base64" not in head:
            report.error(where, no, "input", "an image data URI without ;base64 is not an image Crosscheck reads")
            return None
        try:
            return Image(base64.b64decode(payload, validate=True))
        except (binascii.Error, ValueError):
            report.error(where, no, "input", "an image data URI is not valid base64")
            return None
    if re.match(r"^[a-z][a-z0-9+.-]*://", ref, re.IGNORECASE):
        report.error(where, no, "input", f"image {ref[:80]!r} is a URL, which cannot be read offline (run Inspect "
                     "with log_images=True to keep images in the log)")
        return None
    return ref


def _text(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def item_object(sample: Any, file: str, no: int, family: str, report: Report,
                group_by: str | None = None) -> tuple[dict[str, Any], list[Any]] | None:
    """(items-JSONL object, images) of one EvalSample; None with the problem reported. `choices` become the
    options A.., `target` the gold letter (a letter, or an option's text or index), `metadata` the meta; the
    group is metadata[`group_by`], else metadata `group_id` or `group`, else the sample's own id."""
    if not isinstance(sample, dict) or "id" not in sample:
        report.error(file, no, "id", "expected an Inspect sample (an object with id, input, target)")
        return None
    sid = f"sample {str(sample['id'])!r:.80}"
    attachments = _obj(sample.get("attachments"))
    question, refs = _input_parts(sample, attachments)
    choices = sample.get("choices")
    if not isinstance(choices, list) or not choices:
        report.error(file, no, "choices", f"{sid} has no choices: Crosscheck reads multiple-choice samples")
        return None
    if len(choices) > len(LETTERS):
        report.error(file, no, "choices", f"{sid}: {len(choices)} choices, more than the {len(LETTERS)} letters A..H")
        return None
    options = {LETTERS[k]: _text(_resolve(c, attachments)) for k, c in enumerate(choices)}
    target = sample.get("target")
    if isinstance(target, list):
        if len(target) != 1:
            report.error(file, no, "target", f"{sid}: expected one target, got {len(target)}")
            return None
        target = target[0]
    answer, why = letter_of(target, options)
    if answer is None:
        report.error(file, no, "target", f"{sid}: {why}")
        return None
    meta = dict(_obj(sample.get("metadata")))
    if group_by is not None:
        if group_by not in meta:
            report.error(file, no, "metadata", f"{sid} has no field {group_by!r} to group by (--group-by)")
            return None
        group = meta[group_by]
    else:
        group = meta.get("group_id", meta.get("group", sample["id"]))
    pics = [p for ref in refs if (p := image_of(ref, file, no, report)) is not None]
    obj = {"benchmark": family, "item_id": str(sample["id"]), "group_id": _text(group), "question": question,
           "options": options, "answer": answer, "meta": meta}
    if sample.get("description"):
        obj["meta"] = {**meta, "description": sample["description"]}
    return obj, pics


def inspect_correct(value: Any) -> bool | None:
    """Whether an Inspect score value says correct, as its value_to_float reads it (C / yes / true / 1 -> 1);
    None for a value it does not map (a list or an object)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return float(value) == 1.0
    if isinstance(value, str):
        v = value.strip().lower()
        if v in ("c", "yes", "true"):
            return True
        if v in ("i", "p", "n", "no", "false"):
            return False
        try:
            return float(v) == 1.0
        except ValueError:
            return None
    return None


def prediction_object(sample: dict[str, Any], scorer: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(predictions-JSONL object, what Inspect kept beside it) of one EvalSample: the output's completion is
    the response, its reasoning the trace, epoch n the repeat n - 1; a sample that ended in an error is an
    api_error with that error. Kept: Inspect's score (value, answer read, whether it says correct)."""
    attachments = _obj(sample.get("attachments"))
    output = _obj(sample.get("output"))
    response = _resolve(output.get("completion"), attachments)
    response = response if isinstance(response, str) else ""
    epoch = sample.get("epoch", 1)
    obj: dict[str, Any] = {"item_id": str(sample["id"]), "response": response,
                           "repeat": epoch - 1 if isinstance(epoch, int) and not isinstance(epoch, bool) else epoch}
    reasoning = []
    for choice in output.get("choices") or []:
        content = _obj(_obj(choice).get("message")).get("content")
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and part.get("type") == "reasoning":
                reasoning.append(str(_resolve(part.get("reasoning"), attachments) or ""))
        break
    if any(reasoning):
        obj["trace"] = "\n".join(reasoning)
    tokens = _obj(output.get("usage")).get("output_tokens")
    if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0:
        obj["tokens"] = tokens
    error = sample.get("error")
    if error and not response:
        obj["status"] = "api_error"
        obj["error"] = str(_obj(error).get("message") or error)[:2000]
    kept: dict[str, Any] = {}
    scores = _obj(sample.get("scores"))
    score = _obj(scores.get(scorer) if scorer in scores else next(iter(scores.values()), None))
    if score:
        value = score.get("value")
        kept["score"] = value if isinstance(value, (str, int, float, bool)) else _text(value)
        correct = inspect_correct(value)
        if correct is not None:
            kept["hit"] = int(correct)
        answer = score.get("answer")
        if isinstance(answer, str) and answer.strip():
            kept["extracted"] = answer.strip()[:200]
    return obj, kept
