"""FrameEvidence (000): FQ1 frame triplets and FQ2 evidence triplets; letter parser; joint metrics."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from core.report import Report
from core.schema import Item, RunData

NAME = "frameevidence"
PARSER = "letter"
KINDS = {"FQ1": ("cam", "obj", "scene"), "FQ2": ("mss", "del", "add")}


def _same_order_minus_one(longer: list[str], shorter: list[str]) -> bool:
    """True when `shorter` is `longer` with exactly one image removed and the rest in order."""
    if len(longer) != len(shorter) + 1:
        return False
    return any(longer[:i] + longer[i + 1:] == shorter for i in range(len(longer)))


def validate(items: list[Item], file: str, report: Report) -> None:
    """Group rules of 000 App. A "Input and assembly consistency"; images must already be content hashes."""
    groups: dict[str, list[Item]] = defaultdict(list)
    split_of_image: dict[str, tuple[str, Item]] = {}
    for it in items:
        if it.kind not in KINDS:
            report.error(file, it.line, "kind", f"expected FQ1 or FQ2, got {it.kind!r}")
            continue
        if it.variant not in KINDS[it.kind]:
            report.error(file, it.line, "variant", f"expected one of {' / '.join(KINDS[it.kind])} for {it.kind}, "
                         f"got {it.variant!r}")
            continue
        if "".join(it.options) != "ABCD":
            report.error(file, it.line, "options", f"expected the four options A-D, got {''.join(it.options)!r}")
        if len(set(it.images)) != len(it.images):
            report.error(file, it.line, "images", "the same image content appears twice in one item")
        for digest in it.images:
            seen = split_of_image.setdefault(digest, (it.split, it))
            if seen[0] != it.split:
                report.error(file, it.line, "images", f"image content also used in split {seen[0]!r} "
                             f"(item {seen[1].item_id}, line {seen[1].line}); no image may cross splits")
        groups[it.group_id].append(it)
    for gid, members in groups.items():
        kinds = {m.kind for m in members}
        first = min(m.line for m in members)
        if len(kinds) > 1:
            report.error(file, first, "kind", f"group {gid!r} mixes {' and '.join(sorted(kinds))}")
            continue
        kind = kinds.pop()
        by_variant: dict[str, Item] = {}
        for m in members:
            if m.variant in by_variant:
                report.error(file, m.line, "variant", f"group {gid!r} has {m.variant!r} twice "
                             f"(also line {by_variant[m.variant].line})")
            by_variant[m.variant] = m
        missing = [v for v in KINDS[kind] if v not in by_variant]
        if missing:
            report.error(file, first, "variant", f"{kind} group {gid!r} lacks {', '.join(missing)} "
                         f"(expected {' / '.join(KINDS[kind])})")
            continue
        if len({m.split for m in members}) > 1:
            report.error(file, first, "split", f"group {gid!r} spans several splits")
        if kind == "FQ1":
            _validate_fq1(gid, by_variant, file, report)
        else:
            _validate_fq2(gid, by_variant, file, report)


def _validate_fq1(gid: str, g: dict[str, Item], file: str, report: Report) -> None:
    cam = g["cam"]
    for v in ("obj", "scene"):
        if g[v].images != cam.images:
            report.error(file, g[v].line, "images", f"FQ1 group {gid!r}: {v} must show the same ordered images as "
                         f"cam (line {cam.line})")
        if g[v].options != cam.options:
            report.error(file, g[v].line, "options", f"FQ1 group {gid!r}: {v} must have the same options as cam "
                         f"(line {cam.line})")
    if len({g[v].answer for v in ("cam", "obj", "scene")}) < 2:
        report.error(file, cam.line, "answer", f"FQ1 group {gid!r}: expected at least two distinct gold answers "
                     "across cam / obj / scene")


def _validate_fq2(gid: str, g: dict[str, Item], file: str, report: Report) -> None:
    mss, dele, add = g["mss"], g["del"], g["add"]
    for m in (dele, add):
        if m.question != mss.question:
            report.error(file, m.line, "question", f"FQ2 group {gid!r}: {m.variant} must repeat the MSS question "
                         f"(line {mss.line}) word for word")
        if m.options != mss.options:
            report.error(file, m.line, "options", f"FQ2 group {gid!r}: {m.variant} must have the MSS options "
                         f"(line {mss.line})")
    if not _same_order_minus_one(mss.images, dele.images):
        report.error(file, dele.line, "images", f"FQ2 group {gid!r}: deletion must remove exactly one MSS image "
                     "and keep the others in order")
    if not _same_order_minus_one(add.images, mss.images):
        report.error(file, add.line, "images", f"FQ2 group {gid!r}: addition must add exactly one image to the "
                     "MSS images and keep them in order")
    for m in (mss, dele, add):
        ins = m.meta.get("insufficient_option")
        if ins is None:
            report.error(file, m.line, "meta.insufficient_option", "missing (expected the letter of the "
                         "insufficient-information option)")
        elif ins not in m.options:
            report.error(file, m.line, "meta.insufficient_option", f"{ins!r} is not an option letter")
        pos = m.meta.get("original_positions")
        if pos is not None and (not isinstance(pos, list) or len(pos) != len(m.images)
                                or not all(isinstance(p, int) and 1 <= p <= 4 for p in pos)):
            report.error(file, m.line, "meta.original_positions", f"expected {len(m.images)} view numbers 1-4, "
                         f"one per image, got {pos!r:.60}")
    ins = dele.meta.get("insufficient_option")
    if ins is not None and dele.answer != ins:
        report.error(file, dele.line, "answer", f"FQ2 group {gid!r}: deletion gold must be the insufficient "
                     f"option {ins!r}, got {dele.answer!r}")
    if add.answer != mss.answer:
        report.error(file, add.line, "answer", f"FQ2 group {gid!r}: addition gold must equal the MSS gold "
                     f"{mss.answer!r}, got {add.answer!r}")


def score(items: Any, run: RunData, others: list[RunData], **kw: Any) -> dict[str, Any]:
    from core.metrics import frameevidence

    return frameevidence.score(items, run, others, **kw)
