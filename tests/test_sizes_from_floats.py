"""Sizes computed from marked floats: ``int()``, ``math.ceil``, ``math.floor`` of a float.

x-transformers' top-k filter takes ``k = ceil(frac_num_tokens * num_tokens)``; ViTMAE's
random masking keeps ``int(seq_length * (1 - mask_ratio))`` patches.  With the float
marked, torch traces the conversion into a SymInt size and the graph computes it at run
time, as eager code does.  Its guards are printed from torch's symbolic expression, which
sympy rewrites as real algebra (``n * (1 - r)`` into ``n - n*r``): dynscalar keeps the
arithmetic of marked values in Python's order (``dynscalar/_bridge/_python.py``), so a guard
checks the size the graph computes, at every value, rounding edges included.  Every test
compares each call with eager and asserts stock's count (``dynscalar.disabled()``) and
dynscalar's.
"""

from __future__ import annotations

import math
import types
import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch

import dynscalar as ds
from dynscalar._bridge._python import IeeeAdd, IeeeMul

from .helpers import CountingBackend

BACKENDS = ["eager", "aot_eager"]


def top_k(logits: torch.Tensor, frac_num_tokens: float = 0.1) -> torch.Tensor:
    """x-transformers' ``top_k`` (autoregressive_wrapper.py), as written there."""
    num_tokens = logits.shape[-1]
    k = math.ceil(frac_num_tokens * num_tokens)
    k = min(k, num_tokens)
    val, ind = torch.topk(logits, k)
    probs = torch.full_like(logits, float("-inf"))
    probs.scatter_(1, ind, val)
    return probs


def _sample(fn: Callable[..., Any], values: list[float], backend: str, proxy: bool) -> int:
    counter = CountingBackend(backend)
    compiled = torch.compile(fn, backend=counter)
    logits = torch.linspace(-3.0, 3.0, 80).reshape(2, 40)
    for frac in values:
        got = compiled(logits, ds.DynamicFloat(frac) if proxy else frac)
        torch.testing.assert_close(got, fn(logits, frac), rtol=0, atol=0)
    return counter.frame_count


@pytest.mark.parametrize("backend", BACKENDS)
def test_top_k_with_a_marked_fraction_compiles_once(backend: str) -> None:
    values = [0.1, 0.15, 0.2, 0.25, 0.3, 0.35]
    with ds.disabled():
        stock = _sample(top_k, values, backend, proxy=False)
    torch._dynamo.reset()
    proxy = _sample(top_k, values, backend, proxy=True)
    torch._dynamo.reset()
    ds.mark_dynamic_args(top_k, "frac_num_tokens")
    try:
        marked = _sample(top_k, values, backend, proxy=False)
    finally:
        ds.unmark_dynamic_args(top_k, "frac_num_tokens")
    # stock: one constant graph, then (a changed float) a dynamic one; aot_eager's
    # tensorify pass specializes a float used as a size, once per value
    assert (stock, proxy, marked) == {"eager": (2, 1, 1), "aot_eager": (7, 1, 1)}[backend]


class Masking(torch.nn.Module):
    """ViTMAE's ``random_masking`` (transformers, modeling_vit_mae.py): the mask ratio is
    read from a config object shared by the model's modules, the noise is an input."""

    def __init__(self, config: Any) -> None:
        super().__init__()
        self.config = config
        self.project = torch.nn.Linear(4, 4)

    def forward(self, sequence: torch.Tensor, noise: torch.Tensor) -> tuple[torch.Tensor, ...]:
        batch_size, seq_length, dim = sequence.shape
        len_keep = int(seq_length * (1 - self.config.mask_ratio))
        ids_shuffle = torch.argsort(noise, dim=1)
        ids_restore = torch.argsort(ids_shuffle, dim=1)
        ids_keep = ids_shuffle[:, :len_keep]
        kept = torch.gather(sequence, dim=1, index=ids_keep.unsqueeze(-1).repeat(1, 1, dim))
        mask = torch.ones([batch_size, seq_length])
        mask[:, :len_keep] = 0
        mask = torch.gather(mask, dim=1, index=ids_restore)
        return self.project(kept), mask, ids_restore


def _curriculum(backend: str, ratios: list[float], proxy: bool, length: int = 16) -> int:
    """A mask-ratio curriculum; every call compared with an eager twin."""
    torch.manual_seed(0)
    config = types.SimpleNamespace(mask_ratio=ratios[0])
    model = Masking(config)
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    sequence = torch.randn(2, length, 4)
    noise = torch.rand(2, length)
    for ratio in ratios:
        config.mask_ratio = ds.DynamicFloat(ratio) if proxy else ratio
        got = compiled(sequence, noise)
        config.mask_ratio = ratio
        want = model(sequence, noise)
        for g, w in zip(got, want, strict=True):
            torch.testing.assert_close(g, w, rtol=0, atol=0)
    return counter.frame_count


@pytest.mark.parametrize("backend", BACKENDS)
def test_vit_mae_mask_ratio_curriculum_compiles_once(backend: str) -> None:
    ratios = [0.75, 0.7, 0.65, 0.6, 0.5, 0.45]
    with ds.disabled():
        stock = _curriculum(backend, ratios, proxy=False)
    torch._dynamo.reset()
    marked = _curriculum(backend, ratios, proxy=True)
    assert (stock, marked) == {"eager": (2, 1), "aot_eager": (7, 1)}[backend]


def keep(x: torch.Tensor, r: float) -> tuple[torch.Tensor, int]:
    k = int(x.shape[-1] * (1 - r))
    return x[..., :k] * 2, k


#: ratios where Python's ``n * (1 - r)`` and sympy's ``n - n*r`` truncate differently for
#: some n (``int(10 * (1 - 0.9))`` is 0, ``int(10 - 9.0)`` is 1), and values outside [0, 1]
EDGES = [0.75, 0.9, 0.7, 0.3, 0.1, 0.05, 0.95, -0.5, 1.5, 0.0, 1.0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_sizes_at_rounding_edges_are_pythons(backend: str) -> None:
    """Every size equals eager's, and no compile fails its own guards ("Guard failed on
    the same frame it was created": what sympy's ``10 - 9.0`` gave for ``r = 0.9``)."""
    counter = CountingBackend(backend)
    compiled = torch.compile(keep, backend=counter)
    for n in (8, 10, 20):
        x = torch.arange(2.0 * n).reshape(2, n)
        for r in EDGES:
            got, k = compiled(x, ds.DynamicFloat(r))
            want, expected = keep(x, r)
            assert k == expected, (n, r)
            torch.testing.assert_close(got, want, rtol=0, atol=0)
    # one graph per path of the slice (k == 0, 1, in range, past the end, negative) and
    # per n (the size is static, then dynamic): not one per value
    assert counter.frame_count == 8


def _convert_int(x: torch.Tensor, r: float) -> torch.Tensor:
    return x.new_zeros(int(x.shape[-1] * (1 - r))) + 1


def _convert_ceil(x: torch.Tensor, r: float) -> torch.Tensor:
    return torch.topk(x, math.ceil(r * x.shape[-1])).values


def _convert_floor(x: torch.Tensor, r: float) -> torch.Tensor:
    return x[: math.floor(r * 4)]


def _convert_trunc(x: torch.Tensor, r: float) -> torch.Tensor:
    return x * math.trunc(r * 4)


def _convert_round(x: torch.Tensor, r: float) -> torch.Tensor:
    return x * round(r * 4)


CONVERSIONS = [_convert_int, _convert_ceil, _convert_floor, _convert_trunc, _convert_round]
#: NaN and infinities, a float that overflows once multiplied, sizes out of range
ODD = [0.5, math.nan, 0.3, math.inf, 0.2, -math.inf, 1e308, -1e308, 2.0, -2.0, 0.45]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", CONVERSIONS, ids=lambda f: f.__name__)
def test_nan_inf_and_bad_sizes_raise_as_python_does(backend: str, fn: Any) -> None:
    """``int(nan)`` raises ValueError, ``int(inf)`` OverflowError, a negative size
    RuntimeError: the compiled call raises what eager raises (stock torch 2.13 raises
    ``InternalTorchDynamoError`` for ``int()``), and returns eager's numbers otherwise."""
    compiled = torch.compile(fn, backend=CountingBackend(backend))
    x = torch.arange(10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ds.DynscalarWarning)  # no internal error either
        for r in ODD:
            try:
                want = fn(x, r)
            except Exception as error:  # noqa: BLE001 - the compiled call must match it
                with pytest.raises(type(error)):
                    compiled(x, ds.DynamicFloat(r))
                continue
            torch.testing.assert_close(compiled(x, ds.DynamicFloat(r)), want, rtol=0, atol=0)


def test_ieee_functions_compute_python_floats_in_order() -> None:
    """With numbers, the opaque functions compute the Python operation (``0.1 * 3`` is
    ``0.30000000000000004``, not sympy's real ``0.3``); ``a - b`` is ``a + (-1 * b)``."""
    import sympy

    assert float(IeeeMul(sympy.Float(0.1), 3)) == 0.1 * 3
    assert float(IeeeAdd(IeeeAdd(sympy.Float(0.3), 1e16), IeeeMul(-1, 1e16))) == 0.0
    r = sympy.Symbol("r")
    assert IeeeMul(8, IeeeAdd(1, IeeeMul(-1, r))).has(r)  # kept, not distributed


@pytest.mark.inductor
@pytest.mark.broad
def test_inductor_specializes_a_size_from_a_float_with_one_warning() -> None:
    """Inductor cannot take a size computed from a float symbolically (its tensorify pass
    specializes the float): stock torch's count, eager's numbers, one warning."""
    values = [0.1, 0.15, 0.2, 0.25]
    with ds.disabled():
        stock = _sample(top_k, values, "inductor", proxy=False)
    torch._dynamo.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        marked = _sample(top_k, values, "inductor", proxy=True)
    warned = [w for w in caught if issubclass(w.category, ds.SpecializationWarning)]
    assert len(warned) == 1, [str(w.message) for w in warned]
    assert "size" in str(warned[0].message)
    assert marked == stock
