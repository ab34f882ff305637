"""The benchmark families, one module each (STYLE 3), collected by a small registry."""

from __future__ import annotations

import importlib
from types import ModuleType

from core.errors import UnknownFamily
from core.schema import FAMILIES


def get(name: str) -> ModuleType:
    """The family module for `name`; raises UnknownFamily naming the known ones."""
    if name not in FAMILIES:
        raise UnknownFamily(f"unknown family {name!r}; expected one of {', '.join(FAMILIES)}")
    return importlib.import_module(f"core.families.{name}")
