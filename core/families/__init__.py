"""The benchmark families, one package each (core/families/<name>/), collected by a small registry.

`get(name)` returns the family's typed `Family` object (core/families/protocol.py), which its package builds
once as `FAMILY`; generic code reads a family only through its fields, never by testing its name. Every
package under core/families/ is a family (found by listing the folder, imported on first use); `register(family)`
adds one defined anywhere else (tests/fifth_family/ does); `names()` lists every family the importers accept.
docs/ARCHITECTURE.md ("Adding a family") walks through the fields.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from typing import TYPE_CHECKING, TypeGuard

from core.errors import UnknownFamily
from core.families.protocol import Capabilities, Family, TableControl

if TYPE_CHECKING:
    from core.families.stage_judging import StageJudging

__all__ = ["DEFAULT", "Capabilities", "Family", "TableControl", "builtin", "controls_for", "get", "judging_of", "known",
           "names", "register"]

# The order messages list the paper families and generic in; another package under core/families/ follows them.
_FIRST = ("frameevidence", "stembind", "spur", "generic")
# The family of a file that names none (VLMEvalKit / Hugging Face imports without --family).
DEFAULT = "generic"
_REGISTERED: dict[str, Family] = {}


@functools.cache
def builtin() -> tuple[str, ...]:
    """The names of the packages under core/families/ (not imported here: a CLI command that never scores
    imports none)."""
    found = {m.name for m in pkgutil.iter_modules(__path__) if m.ispkg}
    return (*(n for n in _FIRST if n in found), *sorted(found - set(_FIRST)))


def names() -> tuple[str, ...]:
    """Every known family name: the packages under core/families/, then the registered ones."""
    return (*builtin(), *(n for n in _REGISTERED if n not in builtin()))


def known(name: object) -> TypeGuard[str]:
    """`name` is a known family's name."""
    return isinstance(name, str) and (name in builtin() or name in _REGISTERED)


def get(name: str) -> Family:
    """The family called `name`; raises UnknownFamily naming the known ones."""
    if name in _REGISTERED:
        return _REGISTERED[name]
    if name not in builtin():
        raise UnknownFamily(f"unknown family {name!r}; expected one of {', '.join(names())}")
    family = importlib.import_module(f"core.families.{name}").FAMILY
    if not isinstance(family, Family) or family.name != name:
        raise TypeError(f"core.families.{name}.FAMILY must be the Family named {name!r}")
    _REGISTERED[name] = family
    return family


def judging_of(name: str) -> StageJudging | None:
    """The stage judging of family `name`, or None when the family has no judged traces."""
    return get(name).judging


def controls_for(argument: str) -> dict[str, TableControl]:
    """Family name -> its Metrics control that the `metrics` endpoint argument (and ScoreOptions field)
    `argument` picks, for every family that has one."""
    found = ((name, next((c for c in get(name).controls if c.argument == argument), None)) for name in names())
    return {name: control for name, control in found if control is not None}


def register(family: Family) -> Family:
    """Add a family defined outside core/families/ (the importers accept its name from then on); registering
    another family under a known name is an error."""
    if family.name in builtin() or (family.name in _REGISTERED and _REGISTERED[family.name] is not family):
        raise ValueError(f"a family named {family.name!r} is already registered")
    _REGISTERED[family.name] = family
    return family
