"""FrameEvidence (000) vocabulary, defined once: the two question kinds and their variants (§4.1, App. A)."""

from __future__ import annotations

FQ1, FQ2 = "FQ1", "FQ2"
# §4.1: FQ1 asks one question under three reference frames; FQ2 is an MSS item with a deletion and an addition.
FQ1_VARIANTS = ("cam", "obj", "scene")
FQ2_VARIANTS = ("mss", "del", "add")
VARIANTS = {FQ1: FQ1_VARIANTS, FQ2: FQ2_VARIANTS}
CLASSES = "ABCD"
# §3 "entity identities, relation ontology and option meanings remain fixed"; App. A "FQ1 preserves ordered images,
# options and entity fields across its three frame variants": the meta fields an FQ1 triplet shares.
FQ1_ENTITY_FIELDS = ("target", "relatum", "relation")

__all__ = ["CLASSES", "FQ1", "FQ1_ENTITY_FIELDS", "FQ1_VARIANTS", "FQ2", "FQ2_VARIANTS", "VARIANTS"]
