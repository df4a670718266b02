"""Sample tensors and a bit-for-bit comparison, shared by the trace-time check of generic
calls (``_apply``) and the exactness harness (``dynscalar/tools/matrix``).

Examples:
    >>> import torch
    >>> same(torch.tensor([0.0]), torch.tensor([-0.0]))
    'values differ (max |Δ| 0)'
"""

from __future__ import annotations

import math
from typing import Any

import torch

__all__ = ["fill", "same"]

Tensor = torch.Tensor


def fill(shape: tuple[int, ...], dtype: torch.dtype, generator: torch.Generator) -> Tensor:
    """Random values of ``dtype`` (a float tensor holds 0.0, -0.0, NaN, inf and -inf among
    them where it is large enough); ``bool`` and ``int64`` tensors small random values."""
    if dtype == torch.bool:
        return torch.rand(shape, generator=generator) > 0.5
    if dtype == torch.int64:
        return torch.randint(-5, 6, shape, generator=generator)
    data = torch.randn(shape, generator=generator, dtype=torch.float64)
    flat = data.view(-1)
    for index, special in enumerate((0.0, -0.0, math.nan, math.inf, -math.inf)):
        if flat.numel() > 8 * (index + 1):
            flat[8 * (index + 1) - 1] = special
    return data.to(dtype)


def same(got: Any, want: Any) -> str:
    """'' if ``got`` is ``want`` bit for bit (NaN payloads aside), else what differs."""
    if isinstance(want, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(want):
            return f"{type(got).__name__} instead of {type(want).__name__}"
        return next((d for g, w in zip(got, want, strict=True) if (d := same(g, w))), "")
    if not isinstance(want, Tensor) or not isinstance(got, Tensor):
        if isinstance(want, Tensor) or isinstance(got, Tensor) or type(got) is not type(want):
            return f"{type(got).__name__} instead of {type(want).__name__}"
        return "" if got == want or (got != got and want != want) else f"{got!r} != {want!r}"
    if got.dtype != want.dtype or got.shape != want.shape:
        return f"{got.dtype}{tuple(got.shape)} instead of {want.dtype}{tuple(want.shape)}"
    if got.numel() > 1 and got.stride() != want.stride():
        return f"strides {got.stride()} instead of {want.stride()}"
    if not want.is_floating_point():
        return "" if torch.equal(got, want) else "values differ"
    g, w = got.detach().double(), want.detach().double()
    nan = g.isnan() & w.isnan()
    equal = (g == w) & (g.signbit() == w.signbit())
    if bool((equal | nan).all()):
        return ""
    diff = (g - w).abs().nan_to_num(math.inf)
    return f"values differ (max |Δ| {float(diff.max()):.3g})"
