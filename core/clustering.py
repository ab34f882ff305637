"""Cluster choices of the bootstrap (paper 000 App. A "Same-order control", §6.3, App. D.6): groups, exact-image
components (groups sharing an image, by content hash), scene clusters (groups sharing a value of named meta
fields, default scene) and union components (groups linked by a shared image or such a value), as per-item
cluster labels.
core.stats re-exports every name here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.errors import MetricUndefined

# --------------------------------------------------------------------------- cluster choices (000 App. A, D.6)


CLUSTERINGS = ("group", "image", "scene", "union")
# fields apply to these clusterings: the meta values that link groups (000 §6.3 "scene ... clustering", D.6)
FIELD_CLUSTERINGS = ("scene", "union")
DEFAULT_UNION_FIELDS = ("scene",)


class UnknownClustering(MetricUndefined):
    """A clustering name or union field list is not one the bootstrap knows."""


@dataclass(frozen=True, slots=True)
class Clustering:
    """How items are grouped into bootstrap clusters: whole groups, exact-image components, scene clusters or union
    components (000 §6.3: "DIS intervals remain below zero under exact-image, scene and union clustering").

    `fields` are the meta fields whose shared values link groups under "scene" (those values alone) and "union"
    (those values or a shared image); ignored otherwise.
    """

    name: str = "group"
    fields: tuple[str, ...] = DEFAULT_UNION_FIELDS

    @classmethod
    def parse(cls, name: str, fields: str | Sequence[str] | None = None) -> Clustering:
        """A Clustering from a name (group / image / scene / union) and, for scene and union, the meta fields
        (a comma list; default scene)."""
        key = (name or "").strip().lower()
        if key not in CLUSTERINGS:
            raise UnknownClustering(f"unknown clustering {name!r}; expected one of {', '.join(CLUSTERINGS)}")
        if fields is None:
            names: tuple[str, ...] = DEFAULT_UNION_FIELDS
        else:
            parts = fields.split(",") if isinstance(fields, str) else list(fields)
            names = tuple(f.strip().removeprefix("meta.") for f in parts)
            if not names or any(not f for f in names):
                raise UnknownClustering(f"union fields {fields!r}: expected meta field names separated by commas "
                                        "(e.g. scene,template)")
        return cls(key, names if key in FIELD_CLUSTERINGS else DEFAULT_UNION_FIELDS)

    @property
    def key(self) -> str:
        """A short JSON key: group, image, scene (scene:a+b for other fields) or union (the fields joined with +,
        e.g. union:scene+template)."""
        if self.name == "union":
            return f"union:{'+'.join(self.fields)}"
        if self.name == "scene" and self.fields != DEFAULT_UNION_FIELDS:
            return f"scene:{'+'.join(self.fields)}"
        return self.name

    @property
    def label(self) -> str:
        if self.name == "group":
            return "groups"
        if self.name == "image":
            return "exact-image components"
        if self.name == "scene":
            return f"scene clusters (meta.{' / meta.'.join(self.fields)})"
        return f"union components (images, meta.{' / meta.'.join(self.fields)})"


def cluster_labels(items: Any, clustering: Clustering) -> np.ndarray:
    """Each item's cluster (the smallest group id of its component), in the rows' order.

    group: the item's group. image: connected components of the graph linking two groups when an item of each
    shows the same image (items' `images` hold content hashes, so identical bytes under two paths count as
    one image). union: the same graph with a further link between groups whose items share a value of one of
    `clustering.fields` (None / missing values link nothing); scene: the groups linked by those shared values
    alone (a group without one is its own cluster). A field that no item has raises MetricUndefined rather than
    silently falling back to image components. Components come from
    scipy.sparse.csgraph.connected_components over groups x (images, field values).
    """
    groups = np.asarray(items["group_id"].to_numpy(dtype=object))
    if len(groups) and _isna(groups).any():
        raise MetricUndefined(f"{int(_isna(groups).sum())} items have no group_id to cluster by")
    if clustering.name == "group" or not len(groups):
        return groups.copy()
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    group_ids, group_of = np.unique(groups.astype(str), return_inverse=True)
    nodes: dict[Any, int] = {}
    rows: list[int] = []
    cols: list[int] = []

    def link(g: int, node: Any) -> None:
        rows.append(g)
        cols.append(nodes.setdefault(node, len(nodes)))

    if clustering.name != "scene":
        if "images" not in items:
            raise MetricUndefined(f"the {clustering.name} clustering needs the items' image content hashes "
                                  "(an `images` column)")
        images = items["images"].to_numpy(dtype=object)
        for g, shown in zip(group_of, images, strict=True):
            for h in shown if isinstance(shown, (list, tuple, np.ndarray)) else ():
                link(int(g), ("image", str(h)))
    if clustering.name in FIELD_CLUSTERINGS:
        metas = items["meta"].to_numpy(dtype=object) if "meta" in items else np.full(len(groups), None)
        for field in clustering.fields:
            seen = False
            for g, meta in zip(group_of, metas, strict=True):
                value = meta.get(field) if isinstance(meta, dict) else None
                if value is None or (isinstance(value, float) and np.isnan(value)):
                    continue
                seen = True
                link(int(g), ("meta", field, _json_key(value)))
            if not seen:
                raise MetricUndefined(f"{clustering.name} clustering: no item has meta.{field}")
    n_groups = len(group_ids)
    size = n_groups + len(nodes)
    # nodes after the groups; scipy takes the index lists as they are (an empty one included)
    graph = coo_matrix((np.ones(len(rows)), (rows, np.add(cols, n_groups))), shape=(size, size))
    _, component = connected_components(graph, directed=False)
    first: dict[int, str] = {}
    for gid, c in zip(group_ids, component[:n_groups], strict=True):  # group_ids are sorted
        first.setdefault(int(c), str(gid))
    names = np.array([first[int(c)] for c in component[:n_groups]], dtype=object)
    return names[group_of]


def _isna(values: np.ndarray) -> np.ndarray:
    import pandas as pd

    return pd.isna(values)  # an array in, a bool array out


def _json_key(value: Any) -> str:
    """A hashable key of a meta value: its JSON text (so "1" and 1 stay apart, lists and dicts hash)."""
    import json

    return json.dumps(value, sort_keys=True, default=str)
