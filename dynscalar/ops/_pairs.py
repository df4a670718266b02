"""Scalar/Tensor overload pairs: an ATen op's float taken as a 0-d tensor, where exact.

On inductor, torch's float-tensorify pass turns a marked float into a tensor wherever it
is an operand of ``mul``/``add``/``sub``/``div``/``pow`` or a comparison, and specializes
it elsewhere.  Many ops take the float as a ``Scalar`` and have a twin taking a tensor in
the same place (``clamp`` / ``clamp.Tensor``): the bridge rewrites the node to the twin,
with the float as a 0-d tensor the pass can build, where :func:`admitted` says the twin
computes what the Scalar overload computes.

The tensor the pass builds for a float ``v`` in dtype ``D`` is ``D(C(v))``, ``C`` the
computation dtype of ``D`` (float32 for half and bfloat16, ``D`` otherwise): a float64
tensor converted to ``C``, multiplied by ``1.0``, converted to ``D``.  :func:`operand`
builds the same, eagerly, and :func:`admitted` compares the twin on it with the Scalar
overload, bit for bit, on every layout and special value of the matrix, for each
candidate ``D`` (the input's dtype, then float64); the first that agrees is used.

Examples:
    >>> import torch
    >>> from dynscalar.ops import SCALAR_TENSOR_PAIRS
    >>> lerp = next(p for p in SCALAR_TENSOR_PAIRS if p.scalar == "aten::lerp.Scalar")
    >>> admitted(lerp, torch.float32)
    torch.float32
"""

from __future__ import annotations

import math
import threading
from typing import Any

import torch

from ._table import SCALAR_TENSOR_PAIRS, ScalarPair

__all__ = ["admitted", "operand", "overloads", "pair_for"]

_VALUES = (0.25, 1.5, -2.0, 0.0, -0.0, math.nan, math.inf, -math.inf, 2.0, 0.5, 1.0, -1.0, 3.0)


def _overload(name: str) -> Any:
    base, _, overload = name.partition("::")[2].partition(".")
    return getattr(getattr(torch.ops.aten, base), overload or "default")


def overloads(pair: ScalarPair) -> tuple[Any, Any]:
    """(the Scalar overload, its tensor twin) as ``OpOverload``s."""
    return _overload(pair.scalar), _overload(pair.tensor)


_by_overload: dict[Any, ScalarPair] | None = None


def pair_for(target: Any) -> ScalarPair | None:
    """The pair whose Scalar overload is ``target`` (an FX node's target), if any."""
    global _by_overload
    if _by_overload is None:
        _by_overload = {overloads(pair)[0]: pair for pair in SCALAR_TENSOR_PAIRS}
    try:
        return _by_overload.get(target)
    except TypeError:
        return None


def computation_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype a value of ``dtype`` is computed in (torch._prims_common's rule)."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def operand(value: float, dtype: torch.dtype) -> torch.Tensor:
    """The 0-d tensor the float-tensorify pass makes of ``value`` for a ``dtype`` operand."""
    compute = computation_dtype(dtype)
    as_tensor = torch.tensor(value, dtype=torch.float64).to(compute)
    return (torch.ones((), dtype=dtype).to(compute) * as_tensor).to(dtype)


def _same(got: torch.Tensor, want: torch.Tensor) -> bool:
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if not want.is_floating_point():
        return torch.equal(got, want)
    g, w = got.double(), want.double()
    return bool((((g == w) & (g.signbit() == w.signbit())) | (g.isnan() & w.isnan())).all())


def _agrees(pair: ScalarPair, dtype: torch.dtype, candidate: torch.dtype) -> bool:
    from ._matrix import LAYOUTS, make

    scalar_op, tensor_op = overloads(pair)
    arguments = scalar_op._schema.arguments
    names = [a.name for a in arguments]
    for layout in LAYOUTS:
        generator = torch.Generator().manual_seed(0)
        x = make((4, 6), dtype, layout, generator)
        other = make((4, 6), dtype, layout, generator)
        if x is None:
            continue
        tensors = iter((x, other))
        base = [next(tensors) if str(a.type) == "Tensor" else None for a in arguments]
        for value in _VALUES:
            for moved in pair.arguments:
                args: list[Any] = [
                    value if n == moved else b for n, b in zip(names, base, strict=True)
                ]
                try:
                    want = scalar_op(*args)
                except Exception:  # noqa: BLE001 - eager refuses: the twin must too
                    want = None
                twin = [
                    operand(value, candidate) if n == moved else a
                    for n, a in zip(names, args, strict=True)
                ]
                try:
                    got = tensor_op(*twin)
                except Exception:  # noqa: BLE001
                    got = None
                if (got is None) != (want is None) or (want is not None and not _same(got, want)):
                    return False
    return True


_memo: dict[tuple[str, torch.dtype], torch.dtype | None] = {}
_lock = threading.Lock()


def admitted(pair: ScalarPair, dtype: torch.dtype) -> torch.dtype | None:
    """The dtype of the 0-d tensor that makes the twin exact for ``dtype`` inputs (None:
    none does; the float is then specialized as stock torch does).  Computed once."""
    key = (pair.scalar, dtype)
    if key in _memo:
        return _memo[key]
    with _lock, torch.random.fork_rng(devices=[]):
        if key not in _memo:
            candidates = dict.fromkeys((dtype, torch.float64))
            found = next(
                (c for c in candidates if c.is_floating_point and _agrees(pair, dtype, c)), None
            )
            _memo[key] = found
    return _memo[key]
