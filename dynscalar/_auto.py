"""``auto_dynamic(module)``: scalars that change between calls become dynamic, in one module tree.

Stock torch offers this globally (``torch._dynamo.config.allow_unspec_int_on_nn_module``,
ints only).  Here it is scoped: ``auto_dynamic`` snapshots the int/float attributes of every
module in the tree; when Dynamo (re)traces and finds one whose value differs from the
snapshot, the bridge marks it dynamic on that module for good (an ordinary attribute mark,
visible to ``explain`` and removable with ``unmark_dynamic_attr``).  The
first compile is static, as in torch: nothing has changed yet.
"""

from __future__ import annotations

import math
from typing import Any, TypeVar

import torch

from ._attrs import compiled_original
from ._diagnostics import DynscalarTypeError
from ._marks import auto_snapshot, promote, start_auto
from ._spec import DynamicSpec

__all__ = ["auto_dynamic", "auto_spec"]

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
        start_auto(sub.__dict__, _scalars(sub))
    return module


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def auto_spec(owner: object, name: str, value: Any) -> DynamicSpec | None:
    """Called by the bridge for an unmarked int/float attribute: mark it if it changed.

    Examples:
        >>> import torch
        >>> m = auto_dynamic(torch.nn.Linear(2, 2))
        >>> auto_spec(m, "in_features", 2) is None, auto_spec(m, "in_features", 3) is None
        (True, False)
    """
    snapshot = auto_snapshot(owner)
    if snapshot is None or name.startswith("_"):
        return None
    if name not in snapshot:
        snapshot[name] = value  # first sighting: static until it changes
        return None
    if _same(snapshot[name], value):
        return None
    spec = DynamicSpec().canonical()
    promote(object.__getattribute__(owner, "__dict__"), name, spec)
    return spec
