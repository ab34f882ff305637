"""FrameEvidence (000): FQ1 frame triplets and FQ2 evidence triplets; letter parser; joint metrics."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from core.families.frameevidence.catalogue import CATALOGUE
from core.families.frameevidence.vocab import FQ1_ENTITY_FIELDS, FQ1_VARIANTS, VARIANTS
from core.families.protocol import Capabilities, Family, deferred
from core.report import Report
from core.schema import Item

if TYPE_CHECKING:
    from core.families.frameevidence import compare as _compare
    from core.families.frameevidence import groups as _groups
    from core.families.frameevidence import metrics as _metrics
    from core.families.frameevidence import tables as _tables
else:  # imported on first use (protocol.deferred); not bound to their own names, which `from ... import` reads
    _compare, _groups, _metrics, _tables = deferred(__name__, "compare", "groups", "metrics", "tables")

KINDS = VARIANTS  # kind -> its variants
# 000 §3 "Each item ... contains one to five images"; §4.1 "FQ1 reuses two to four ordered images", "FQ2 starts
# from two to four MSS images, then changes the set size by one" (so a deletion shows 1-3, an addition 3-5).
ITEM_IMAGES = (1, 5)
BASE_IMAGES = (2, 4)


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
        lo, hi = ITEM_IMAGES
        if not lo <= len(it.images) <= hi:
            report.error(file, it.line, "images", f"expected one to five images (000 §3), got {len(it.images)}")
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


def _base_size(gid: str, base: Item, what: str, file: str, report: Report) -> None:
    """The FQ1 triplet's and the MSS's images: two to four (000 §4.1)."""
    lo, hi = BASE_IMAGES
    if not lo <= len(base.images) <= hi:
        report.error(file, base.line, "images", f"{base.kind} group {gid!r}: {what} shows {len(base.images)} "
                     f"image(s), expected two to four (000 §4.1)")


def _validate_fq1(gid: str, g: dict[str, Item], file: str, report: Report) -> None:
    cam = g["cam"]
    _base_size(gid, cam, "the frame triplet", file, report)
    for v in ("obj", "scene"):
        if g[v].images != cam.images:
            report.error(file, g[v].line, "images", f"FQ1 group {gid!r}: {v} must show the same ordered images as "
                         f"cam (line {cam.line})")
        if g[v].options != cam.options:
            report.error(file, g[v].line, "options", f"FQ1 group {gid!r}: {v} must have the same options as cam "
                         f"(line {cam.line})")
    if len({g[v].answer for v in FQ1_VARIANTS}) < 2:
        report.error(file, cam.line, "answer", f"FQ1 group {gid!r}: expected at least two distinct gold answers "
                     "across cam / obj / scene")
    _fq1_entities(gid, g, file, report)
    cam_pos = _positions(cam, file, report)
    for v in ("obj", "scene"):
        pos = _positions(g[v], file, report)
        if pos is not None and cam_pos is not None and pos != cam_pos and g[v].images == cam.images:
            report.error(file, g[v].line, "meta.original_positions", f"FQ1 group {gid!r}: {v} must give cam's view "
                         f"numbers {cam_pos} (line {cam.line}; the ordered images are fixed), got {pos}")


_MISSING = object()


def _fq1_entities(gid: str, g: dict[str, Item], file: str, report: Report) -> None:
    """The entity fields (target, relatum, relation) are those of cam in obj and scene; absent in one is a difference."""
    cam = g["cam"]
    for name in FQ1_ENTITY_FIELDS:
        want = cam.meta.get(name, _MISSING)
        for v in ("obj", "scene"):
            got = g[v].meta.get(name, _MISSING)
            if got != want:
                shown = "missing" if got is _MISSING else f"{got!r:.40}"
                expected = "no such field" if want is _MISSING else f"{want!r:.40}"
                report.error(file, g[v].line, f"meta.{name}", f"FQ1 group {gid!r}: {v} must keep cam's entity "
                             f"field (line {cam.line}: {expected}; 000 §3, App. A), got {shown}")


def _positions(m: Item, file: str, report: Report) -> list[int] | None:
    """`meta.original_positions` when given and well formed: one distinct positive view number per image."""
    pos = m.meta.get("original_positions")
    if pos is None:
        return None
    if (not isinstance(pos, list) or len(pos) != len(m.images)
            or not all(isinstance(p, int) and not isinstance(p, bool) and p >= 1 for p in pos)
            or len(set(pos)) != len(pos)):
        report.error(file, m.line, "meta.original_positions", f"expected {len(m.images)} distinct positive view "
                     f"numbers, one per image in order, got {pos!r:.60}")
        return None
    return pos


def _validate_fq2(gid: str, g: dict[str, Item], file: str, report: Report) -> None:
    mss, dele, add = g["mss"], g["del"], g["add"]
    _base_size(gid, mss, "the MSS", file, report)
    for m in (dele, add):
        if m.question != mss.question:
            report.error(file, m.line, "question", f"FQ2 group {gid!r}: {m.variant} must repeat the MSS question "
                         f"(line {mss.line}) word for word")
        if m.options != mss.options:
            report.error(file, m.line, "options", f"FQ2 group {gid!r}: {m.variant} must have the MSS options "
                         f"(line {mss.line})")
    del_ok = _same_order_minus_one(mss.images, dele.images)
    add_ok = _same_order_minus_one(add.images, mss.images)
    if not del_ok:
        report.error(file, dele.line, "images", f"FQ2 group {gid!r}: deletion must remove exactly one MSS image "
                     "and keep the others in order")
    if not add_ok:
        report.error(file, add.line, "images", f"FQ2 group {gid!r}: addition must add exactly one image to the "
                     "MSS images and keep them in order")
    positions: dict[str, list[int] | None] = {}
    base_ins = mss.meta.get("insufficient_option")
    base_ins = base_ins if isinstance(base_ins, str) and base_ins in mss.options else None
    for m in (mss, dele, add):
        ins = m.meta.get("insufficient_option")
        if ins is None:
            report.error(file, m.line, "meta.insufficient_option", "missing (expected the letter of the "
                         "insufficient-information option)")
        elif not isinstance(ins, str) or ins not in m.options:
            report.error(file, m.line, "meta.insufficient_option", f"{ins!r} is not an option letter (expected one "
                         f"of {''.join(m.options)})")
        elif base_ins is not None and ins != base_ins:
            report.error(file, m.line, "meta.insufficient_option", f"FQ2 group {gid!r}: expected the MSS's "
                         f"{base_ins!r} (line {mss.line}), got {ins!r}")
        positions[m.variant] = _positions(m, file, report)
    _check_positions(gid, mss, dele, add, positions, (del_ok, add_ok), file, report)
    ins = mss.meta.get("insufficient_option")
    if ins is not None and mss.answer == ins:
        report.error(file, mss.line, "answer", f"FQ2 group {gid!r}: the MSS gold must be a spatial answer, not the "
                     f"insufficient option {ins!r} (000 §3: the MSS supports the spatial answer)")
    ins = dele.meta.get("insufficient_option")
    if ins is not None and dele.answer != ins:
        report.error(file, dele.line, "answer", f"FQ2 group {gid!r}: deletion gold must be the insufficient "
                     f"option {ins!r}, got {dele.answer!r}")
    if add.answer != mss.answer:
        report.error(file, add.line, "answer", f"FQ2 group {gid!r}: addition gold must equal the MSS gold "
                     f"{mss.answer!r}, got {add.answer!r}")


def _check_positions(gid: str, mss: Item, dele: Item, add: Item, positions: dict[str, list[int] | None],
                     images_ok: tuple[bool, bool], file: str, report: Report) -> None:
    """The deletion's view numbers are the MSS's less the withheld one, the addition's the MSS's plus a new one.

    Checked per image, only where the MSS and the variant both give valid positions and the images follow the
    deletion / addition rule (else that rule's error already says what is wrong).
    """
    base = positions["mss"]
    if base is None:
        return
    view_of = dict(zip(mss.images, base, strict=True))
    del_pos = positions["del"]
    if del_pos is not None and images_ok[0]:
        expected = [view_of[h] for h in dele.images]
        if del_pos != expected:
            report.error(file, dele.line, "meta.original_positions", f"FQ2 group {gid!r}: expected the MSS's "
                         f"view numbers less the withheld one, {expected} (MSS line {mss.line}), got {del_pos}")
    add_pos = positions["add"]
    if add_pos is not None and images_ok[1]:
        new = next(i for i, h in enumerate(add.images) if h not in view_of)
        kept = [view_of[h] for h in add.images if h in view_of]
        got_kept = [p for i, p in enumerate(add_pos) if i != new]
        if got_kept != kept or add_pos[new] in base:
            report.error(file, add.line, "meta.original_positions", f"FQ2 group {gid!r}: expected the MSS's view "
                         f"numbers {base} (line {mss.line}) in order plus a new one for the added image "
                         f"(position {new + 1}), got {add_pos}")


FAMILY = Family(
    name="frameevidence",
    parser="letter",
    kinds=tuple(KINDS),
    validate=validate,
    catalogue=CATALOGUE,
    score=_metrics.score,
    groups=_groups.RULES,
    tables=_tables.tables,
    paired_differences=_compare.paired_differences,  # macro-F1 is not a ratio of sums
    capabilities=Capabilities(clusterings=True),  # exact-image / union components (000 App. A, D.6)
    scoring_item_columns=("images",),  # the image hashes those clusterings link groups by
    control_runner="baseline",  # the metadata-control baselines (000 §5, Table 10)
    units_by_model=True,
    scores_splits=True,  # its column tables are laid out once per items frame and split (outcomes.py)
    view="ui.views.frameevidence",
)
