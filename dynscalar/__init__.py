"""dynscalar: ``mark_dynamic`` for Python scalars under ``torch.compile``.

Mark an int (or float) as dynamic and Dynamo traces it as a symbolic graph input
instead of recompiling for every new value.

Examples:
    >>> import torch, dynscalar
    >>> class M(torch.nn.Module):
    ...     def __init__(self):
    ...         super().__init__(); self.step = 0
    ...     def forward(self, x):
    ...         self.step += 1
    ...         return x * self.step
    >>> m = dynscalar.mark_dynamic_attr(M(), "step")
    >>> dynscalar.is_dynamic_attr(m, "step")
    True

``import dynscalar`` does not import ``torch._dynamo``; the bridge installs itself when
Dynamo is first imported (by ``torch.compile``), and ``dynscalar.disabled()`` takes it out
again for a block of code.
"""

from __future__ import annotations

from ._args import dynamic_args, mark_dynamic_args, unmark_dynamic_args
from ._attrs import (
    dynamic_attrs,
    is_dynamic_attr,
    mark_dynamic_attr,
    unmark_dynamic_attr,
)
from ._auto import auto_dynamic
from ._bridge import on_import as _on_import
from ._diagnostics import (
    BridgeError,
    BridgeUnavailableWarning,
    DynamicFloatSpecializedError,
    DynscalarAttributeError,
    DynscalarError,
    DynscalarTypeError,
    DynscalarValueError,
    DynscalarWarning,
    OutOfRangeError,
    SpecializationError,
    SpecializationWarning,
    UnsupportedDescriptorError,
)
from ._explain import Explanation, MarkRecord, explain
from ._marks import MARK_TABLE as _mark_table  # noqa: F401 - guarded by compiled code
from ._optim import mark_dynamic_param_groups, unmark_dynamic_param_groups
from ._proxy import DynamicFloat, DynamicInt, DynamicScalar, is_dynamic_scalar, mark_dynamic
from ._serialization import register_safe_globals as _register_safe_globals
from ._spec import DynamicSpec
from ._switch import disabled

__version__ = "0.1.0"

__all__ = [
    "BridgeError",
    "BridgeUnavailableWarning",
    "DynamicFloat",
    "DynamicFloatSpecializedError",
    "DynamicInt",
    "DynamicScalar",
    "DynamicSpec",
    "DynscalarAttributeError",
    "DynscalarError",
    "DynscalarTypeError",
    "DynscalarValueError",
    "DynscalarWarning",
    "OutOfRangeError",
    "SpecializationError",
    "SpecializationWarning",
    "UnsupportedDescriptorError",
    "Explanation",
    "MarkRecord",
    "__version__",
    "auto_dynamic",
    "disabled",
    "explain",
    "dynamic_args",
    "dynamic_attrs",
    "is_dynamic_attr",
    "is_dynamic_scalar",
    "mark_dynamic",
    "mark_dynamic_args",
    "mark_dynamic_attr",
    "mark_dynamic_param_groups",
    "unmark_dynamic_args",
    "unmark_dynamic_attr",
    "unmark_dynamic_param_groups",
]

_register_safe_globals()
_on_import()  # the log name, the torch.export wrapper, and the bridge at torch._dynamo's import
