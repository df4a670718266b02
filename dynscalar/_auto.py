"""``auto_dynamic(module)``: scalars that change between calls become dynamic, in one module tree.

Stock torch offers this globally (``torch._dynamo.config.allow_unspec_int_on_nn_module``,
ints only).  Here it is scoped: ``auto_dynamic`` snapshots the int/float attributes of every
module in the tree; when Dynamo (re)traces and finds one whose value differs from the
snapshot, the bridge marks it dynamic on that module for good (an ordinary registry mark,
visible to [`explain`][dynscalar.explain] and removable with ``unmark_dynamic_attr``).  The
first compile is static, as in torch: nothing has changed yet.
"""

from __future__ import annotations

import math
from typing import Any, TypeVar

import torch

from ._diagnostics import DynscalarTypeError
from ._registry import compiled_original, edit_marks
from ._spec import DynamicSpec

__all__ = ["AUTO_KEY", "PROMOTED_KEY", "auto_dynamic", "auto_marked", "auto_spec"]

AUTO_KEY = "_dynscalar_auto"
PROMOTED_KEY = "_dynscalar_auto_promoted"  # names auto_dynamic marked (for explain)
ModuleT = TypeVar("ModuleT", bound=torch.nn.Module)


def _scalars(module: torch.nn.Module) -> dict[str, int | float]:
    return {
        name: value
        for name, value in vars(module).items()
        if type(value) in (int, float) and not name.startswith("_")
    }


def auto_dynamic(module: ModuleT) -> ModuleT:
    """Make every public int/float attribute in ``module``'s tree dynamic after its first change.

    Returns ``module``.  Scoped to this module tree, unlike
    ``torch._dynamo.config.allow_unspec_int_on_nn_module``; floats are included.

    Examples:
        >>> import torch
        >>> m = auto_dynamic(torch.nn.Linear(2, 2))
        >>> m.step = 0  # attributes added later are tracked from their first trace
    """
    if not isinstance(module, torch.nn.Module):
        raise DynscalarTypeError(
            f"dynscalar.auto_dynamic: expected a torch.nn.Module, got {type(module).__name__}."
        )
    for sub in compiled_original(module).modules():
        sub.__dict__[AUTO_KEY] = _scalars(sub)
        # An (empty) marks dict from the start: a promotion while Dynamo traces then edits
        # it, and the guards already installed for this module's other attributes in the
        # same trace ("no mark for width") stay true.
        edit_marks(sub.__dict__, lambda marks: None)
    return module


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def auto_marked(owner: object, name: str) -> bool:
    """True when ``owner.name``'s mark was made by ``auto_dynamic`` (not by the user)."""
    try:
        instance_dict = object.__getattribute__(owner, "__dict__")
    except AttributeError:
        return False
    return name in instance_dict.get(PROMOTED_KEY, ())


def auto_spec(owner: object, name: str, value: Any) -> DynamicSpec | None:
    """Called by the bridge for an unmarked int/float attribute: mark it if it changed."""
    try:
        instance_dict = object.__getattribute__(owner, "__dict__")
    except AttributeError:
        return None
    snapshot = instance_dict.get(AUTO_KEY)
    if snapshot is None or name.startswith("_"):
        return None
    if name not in snapshot:
        snapshot[name] = value  # first sighting: static until it changes
        return None
    if _same(snapshot[name], value):
        return None
    spec = DynamicSpec().canonical()

    def promote(marks: dict[str, DynamicSpec | None]) -> None:
        marks[name] = spec
        instance_dict[PROMOTED_KEY] = {*instance_dict.get(PROMOTED_KEY, ()), name}

    edit_marks(instance_dict, promote)
    return spec
