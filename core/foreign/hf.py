"""Hugging Face datasets rows (parquet / arrow, Image features) mapped to Crosscheck items: docs/FORMATS.md.

The datasets library stores an `Image()` feature as a struct {bytes: binary, path: string} (either may be
null; `path` alone names a file), and `Sequence(Image())` as a list of such structs. `--map FIELD=COLUMN,...`
says where each item field comes from; the layouts of MMMU, BLINK, MuirBench and MMBench are known presets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.errors import CrosscheckError
from core.foreign.answers import cell_text, is_null, letter_of, option_list, options_of
from core.foreign.vlmevalkit import CIRCULAR, int_index
from core.report import Report
from core.schema import LETTERS

FIELDS = ("item_id", "group_id", "question", "options", "answer", "images", "kind", "split")


class BadMap(CrosscheckError, ValueError):
    """A --map (or --preset) that cannot be used on this file."""


@dataclass(slots=True)
class Mapping:
    """Where each item field comes from. `group` is (how, column): ("column" | "pair" | "circular", name)."""

    columns: dict[str, list[str]] = field(default_factory=dict)  # field -> columns (images / options: several)
    meta: dict[str, str] = field(default_factory=dict)  # meta name -> column
    group: tuple[str, str] | None = None
    preset: str = ""

    def used(self) -> set[str]:
        cols = {c for cs in self.columns.values() for c in cs} | set(self.meta.values())
        return cols | ({self.group[1]} if self.group else set())


PRESETS: dict[str, str] = {
    # MMMU/MMMU: id, question, options (the text of a Python list), answer (letter), image_1..image_7, subfield
    "mmmu": "item_id=id,question=question,options=options,answer=answer,"
            "images=image_1+image_2+image_3+image_4+image_5+image_6+image_7,kind=subfield,"
            "meta.question_type=question_type,meta.img_type=img_type,meta.topic_difficulty=topic_difficulty,"
            "meta.explanation=explanation",
    # BLINK-Benchmark/BLINK: idx, question, choices (list), answer "(A)", image_1..image_4, sub_task, prompt
    "blink": "item_id=idx,question=question,options=choices,answer=answer,images=image_1+image_2+image_3+image_4,"
             "kind=sub_task,meta.prompt=prompt,meta.explanation=explanation",
    # MUIRBENCH/MUIRBENCH: idx, task, question, options (list), answer (letter), image_list, counterpart_idx
    "muirbench": "item_id=idx,question=question,options=options,answer=answer,images=image_list,kind=task,"
                 "group_id=pair:counterpart_idx,meta.image_relation=image_relation,meta.image_type=image_type",
    # lmms-lab/MMBench (VLMEvalKit's TSV as parquet): index, question, hint, A..D, answer, category, image, split
    "mmbench": "item_id=index,question=question,options=A+B+C+D+E+F+G+H,answer=answer,images=image,kind=category,"
               "split=split,group_id=circular:index,meta.hint=hint,meta.l2-category=l2-category,"
               "meta.source=source,meta.comment=comment",
}
# The columns that recognise each preset (checked in this order).
SIGNATURES: list[tuple[str, set[str]]] = [
    ("muirbench", {"idx", "image_list", "options", "answer", "counterpart_idx"}),
    ("blink", {"idx", "sub_task", "choices", "answer", "image_1"}),
    ("mmmu", {"id", "question", "options", "answer", "image_1", "question_type"}),
    ("mmbench", {"index", "question", "hint", "A", "B", "answer", "category", "image"}),
]
OPTIONAL_IN_PRESET = {"meta", "images", "split"}  # preset columns that may be absent from a given release


def parse_map(text: str) -> Mapping:
    """`FIELD=COLUMN,...` (FIELD: item_id, group_id, question, options, answer, images, kind, split, meta.NAME;
    images and options take COLUMN+COLUMN...; group_id takes COLUMN, pair:COLUMN or circular:COLUMN)."""
    m = Mapping()
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, eq, col = part.partition("=")
        name, col = name.strip(), col.strip()
        if not eq or not name or not col:
            raise BadMap(f"--map: {part!r} is not FIELD=COLUMN")
        if name.startswith("meta."):
            if not name[5:]:
                raise BadMap(f"--map: {part!r} names no meta field (expected meta.NAME=COLUMN)")
            m.meta[name[5:]] = col
        elif name == "group_id":
            how, colon, rest = col.partition(":")
            if colon and how in ("pair", "circular") and rest:
                m.group = (how, rest)
            elif colon:
                raise BadMap(f"--map: group_id={col!r} (expected COLUMN, pair:COLUMN or circular:COLUMN)")
            else:
                m.group = ("column", col)
        elif name in FIELDS:
            cols = [c.strip() for c in col.split("+")]
            if len(cols) > 1 and name not in ("images", "options") or not all(cols):
                raise BadMap(f"--map: {part!r}: only images and options take several columns joined by '+'")
            m.columns[name] = cols
        else:
            raise BadMap(f"--map: unknown field {name!r} (expected one of {', '.join(FIELDS)} or meta.NAME)")
    return m


def detect_preset(columns: set[str]) -> str | None:
    return next((name for name, sig in SIGNATURES if sig <= columns), None)


def resolve(columns: list[str], mapping: str | None, preset: str | None, file: str) -> Mapping:
    """The mapping to use on a file with `columns`: --map, else --preset, else a recognised layout."""
    have = set(columns)
    if mapping:
        m = parse_map(mapping)
    else:
        name = preset or detect_preset(have)
        if name is None:
            raise BadMap(f"{file}: no --map given and the columns ({', '.join(columns)}) match no known layout "
                         f"({', '.join(PRESETS)}); name the columns with --map FIELD=COLUMN,...")
        if name not in PRESETS:
            raise BadMap(f"--preset: unknown layout {name!r} (expected one of {', '.join(PRESETS)})")
        m = parse_map(PRESETS[name])
        m.preset = name
        # a release without some optional columns (a split column, an explanation) keeps the rest
        m.meta = {k: c for k, c in m.meta.items() if c in have}
        for fld in ("images", "options"):
            if fld in m.columns:
                kept = [c for c in m.columns[fld] if c in have]
                m.columns[fld] = kept or m.columns[fld][:1]
        if "split" in m.columns and m.columns["split"][0] not in have:
            del m.columns["split"]
    for fld in ("item_id", "question", "options", "answer"):
        if fld not in m.columns:
            raise BadMap(f"--map: {fld} is required (e.g. {fld}=COLUMN)")
    missing = sorted(m.used() - have)
    if missing:
        raise BadMap(f"{file}: mapped column(s) {', '.join(missing)} not in the file (it has {', '.join(columns)})")
    return m


@dataclass(slots=True)
class ImageRef:
    """One image cell: its bytes, or only a path (resolved by the importer), and where it came from."""

    data: bytes | None
    path: str | None
    column: str


def _images_of(value: Any, column: str) -> list[ImageRef] | None:
    """Image cells: {bytes, path} structs, lists of them, raw bytes; null cells and list entries dropped."""
    if is_null(value):
        return []
    if isinstance(value, (bytes, bytearray)):
        return [ImageRef(bytes(value), None, column)]
    if isinstance(value, dict) and ("bytes" in value or "path" in value):
        data, path = value.get("bytes"), value.get("path")
        if data is None and is_null(path):
            return []
        if data is not None and not isinstance(data, (bytes, bytearray)) or path is not None \
                and not isinstance(path, str):
            return None
        return [ImageRef(bytes(data) if data is not None else None, None if data is not None else path, column)]
    if isinstance(value, (list, tuple)):
        out = []
        for v in value:
            got = _images_of(v, column)
            if got is None:
                return None
            out.extend(got)
        return out
    return None


def _options(m: Mapping, row: dict[str, Any], file: str, no: int, report: Report) -> dict[str, str] | None:
    cols = m.columns["options"]
    if len(cols) == 1 and cols[0] not in LETTERS:
        texts = option_list(row.get(cols[0]))
        if texts is None:
            report.error(file, no, cols[0], f"expected a list of option texts, got {row.get(cols[0])!r:.60}")
            return None
        return options_of(texts)
    texts = [cell_text(row[c]) for c in cols if not is_null(row.get(c))]
    return options_of(texts)


def item_objects(rows: list[tuple[str, int, dict[str, Any]]], m: Mapping, family: str,
                 report: Report) -> list[tuple[str, int, dict[str, Any], list[ImageRef]]]:
    """The items-JSONL object and image cells of each (file, row number, row); errors name file, row, column."""
    out = []
    for file, no, row in rows:
        before = len(report.errors)
        ident = row.get(m.columns["item_id"][0])
        if is_null(ident):
            report.error(file, no, m.columns["item_id"][0], "empty (expected the item's id)")
            continue
        item_id = cell_text(ident)
        options = _options(m, row, file, no, report)
        answer: Any = None
        if options is not None:
            acol = m.columns["answer"][0]
            answer, why = letter_of(row.get(acol), options)
            if answer is None:
                report.error(file, no, acol, why)
        meta: dict[str, Any] = {}
        for name, col in m.meta.items():
            v = row.get(col)
            if not is_null(v):
                meta[name] = v if isinstance(v, (str, int, float, bool, list, dict)) else str(v)
        images: list[ImageRef] = []
        for col in m.columns.get("images", []):
            got = _images_of(row.get(col), col)
            if got is None:
                report.error(file, no, col, "expected an Image feature ({bytes, path}), a list of them, or null")
            else:
                images.extend(got)
        group = item_id
        if m.group is not None:
            how, col = m.group
            v = row.get(col)
            if how == "column":
                group = item_id if is_null(v) else cell_text(v)
            elif how == "circular":
                k = int_index(v)
                if k is None or k < 0:
                    report.error(file, no, col, f"expected a non-negative integer index, got {v!r:.40}")
                else:
                    group, meta["copy"] = str(k % CIRCULAR), k // CIRCULAR
            else:
                meta["_pair"] = None if is_null(v) else cell_text(v)
        question = row.get(m.columns["question"][0])
        if len(report.errors) > before:
            continue
        obj = {"benchmark": family, "item_id": item_id, "group_id": group, "question":
               "" if is_null(question) else cell_text(question), "options": options, "answer": answer, "meta": meta}
        for fld in ("kind", "split"):
            if fld in m.columns and not is_null(row.get(m.columns[fld][0])):
                obj[fld] = cell_text(row[m.columns[fld][0]])
        out.append((file, no, obj, images))
    if m.group is not None and m.group[0] == "pair":
        _pair_groups(out, m.group[1], report)
    if m.group is not None and m.group[0] == "circular":  # a copy whose base question is absent: its own group
        bases = {obj["group_id"] for _f, _n, obj, _i in out if obj["meta"].get("copy") == 0}
        for _f, _n, obj, _i in out:
            if obj["group_id"] not in bases:
                obj["group_id"] = obj["item_id"]
                obj["meta"].pop("copy", None)
    return out


def _pair_groups(out: list[tuple[str, int, dict[str, Any], list[ImageRef]]], column: str, report: Report) -> None:
    """group_id=pair:COLUMN: items joined by naming each other form one group (id: the smallest item id)."""
    ids = {obj["item_id"] for _f, _n, obj, _i in out}
    parent = {i: i for i in ids}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for file, no, obj, _imgs in out:
        other = obj["meta"].pop("_pair")
        if other is None or other in ("-1", ""):
            continue
        if other not in ids:
            report.error(file, no, column, f"names item {other!r}, which is not in the file")
            continue
        a, b = find(obj["item_id"]), find(other)
        if a != b:
            parent[max(a, b)] = min(a, b)
        obj["meta"][column] = other
    for _f, _n, obj, _i in out:
        obj["group_id"] = find(obj["item_id"])
