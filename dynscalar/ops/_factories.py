"""Tensors made from a marked scalar: ``torch.tensor(v)``, ``torch.as_tensor(v)``.

Dynamo forces a marked value handed to ``torch.as_tensor`` (one compile per value), and
puts ``torch.tensor(v)`` in the graph as a call of the Python function, which inductor's
AOTAutograd cache refuses.  A 0-d tensor made from a Python number is exactly
``torch.scalar_tensor(v, dtype=...)`` with the dtype ``torch.tensor`` infers (the default
float dtype for a float, ``int64`` for an int): a graph op with the value a ``Scalar``, which
every backend keeps symbolic (on inductor the float-tensorify pass makes it a tensor, as
``scalar_tensor`` of a float in float32 or float64 is ``ones * v``); a (nested) list of
numbers is those 0-d tensors stacked, each converted once to the dtype, as
``torch.tensor`` converts each element.  ``as_tensor`` of a list copies it, as
``torch.tensor`` does; anything else goes to ``torch.tensor`` itself.

The functions take the torch callables' parameters; the bridge traces them in their place
when a marked value is the data.

Examples:
    >>> tensor(0.5)
    tensor(0.5000)
    >>> as_tensor(3, dtype=torch.float64)
    tensor(3., dtype=torch.float64)
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["FACTORIES", "as_tensor", "tensor"]


def _leaves(data: Any) -> list[Any]:
    if isinstance(data, (list, tuple)):
        return [leaf for item in data for leaf in _leaves(item)]
    return [data]


def _inferred(data: Any) -> torch.dtype:
    """The dtype ``torch.tensor`` gives Python numbers (nested lists of them too)."""
    leaves = _leaves(data)
    if any(isinstance(leaf, float) for leaf in leaves):
        return torch.get_default_dtype()
    if leaves and all(isinstance(leaf, bool) for leaf in leaves):
        return torch.bool
    return torch.int64


def _numbers(data: Any) -> bool:
    """A number, or a non-empty (nested, rectangular) list or tuple of numbers."""
    if isinstance(data, (list, tuple)):
        return bool(data) and all(_numbers(item) for item in data)
    return isinstance(data, (int, float))


def _stacked(data: Any, dtype: torch.dtype, device: Any) -> torch.Tensor:
    if isinstance(data, (list, tuple)):
        return torch.stack([_stacked(item, dtype, device) for item in data])
    return torch.scalar_tensor(data, dtype=dtype, device=device)


def tensor(
    data: Any,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> torch.Tensor:
    if pin_memory or not _numbers(data):
        return torch.tensor(
            data, dtype=dtype, device=device, requires_grad=requires_grad, pin_memory=pin_memory
        )
    out = _stacked(data, dtype or _inferred(data), device)
    return out.requires_grad_(True) if requires_grad else out


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> torch.Tensor:
    return tensor(data, dtype=dtype, device=device)


#: the torch callable -> what is traced in its place when its data is a marked value
FACTORIES: dict[Any, Any] = {torch.tensor: tensor, torch.as_tensor: as_tensor}
