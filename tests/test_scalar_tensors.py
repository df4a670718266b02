"""Tensors made from a marked scalar stay symbolic: one compile across values, exact.

``torch.tensor(v)``, ``torch.as_tensor(v, dtype=, device=)``, ``torch.scalar_tensor(v)``,
``torch.full(shape, v)``, ``x.new_tensor(v)`` and ``x.new_full(shape, v)`` of a marked
float or int.  Stock torch compiles ``as_tensor`` of a changing value once per value (it
forces the value); on inductor ``torch.tensor(v)`` reached the safety net ("an internal
error in its hook on autograd_cache_key (BypassAOTAutogradCache ...)"): right numbers,
a wrong message.  Every test compares with eager (bit for bit on eager/aot_eager, and on
inductor with stock inductor's result for the value as a constant) and counts graphs;
``filterwarnings = error`` fails a test on any warning.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import dynscalar as ds

from .helpers import CountingBackend

CALLS: dict[str, Callable[[torch.Tensor, Any], torch.Tensor]] = {
    "tensor": lambda x, v: x * torch.tensor(v),
    "tensor(dtype=float64)": lambda x, v: x * torch.tensor(v, dtype=torch.float64),
    "as_tensor(dtype, device)": lambda x, v: x * torch.as_tensor(v, dtype=x.dtype, device=x.device),
    "as_tensor": lambda x, v: x * torch.as_tensor(v),
    "scalar_tensor": lambda x, v: x * torch.scalar_tensor(v),
    "full": lambda x, v: x + torch.full((2, 3), v),
    "new_tensor": lambda x, v: x * x.new_tensor(v),
    "new_full": lambda x, v: x + x.new_full((2, 3), v),
    "tensor([v, 1.0])": lambda x, v: x * torch.tensor([v, 1.0]).sum(),
}
FLOATS = (0.1, 1.25, -3.0, 2.0)
INTS = (3, 5, -2, 7)


def stock_graphs(name: str, backend: str, kind: str) -> int:
    """Stock torch's graphs for the four values: the first compile is static, then
    automatic dynamic makes a changing int or float symbolic (2 graphs) - except where a
    value is forced: ``as_tensor`` forces it (a graph per value), and on aot_eager and
    inductor the float-tensorify pass specializes a dynamic float it cannot lower, after
    a restart (5)."""
    if backend in ("aot_eager", "inductor") and kind == "float":
        return 5
    return 4 if name.startswith("as_tensor") else 2


def _run(name: str, backend: str, values: tuple[Any, ...], mark: bool) -> tuple[list[Any], int]:
    torch._dynamo.reset()
    counter = CountingBackend(backend)
    fn = CALLS[name]
    compiled = torch.compile(fn, backend=counter)
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3) / 7
    outs = [compiled(x, ds.mark_dynamic(v) if mark else v) for v in values]
    return outs, counter.frame_count


@pytest.mark.parametrize("kind", ["float", "int"])
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("name", list(CALLS))
def test_a_tensor_made_from_a_marked_scalar_compiles_once(
    name: str, backend: str, kind: str
) -> None:
    values = FLOATS if kind == "float" else INTS
    got, graphs = _run(name, backend, values, mark=True)
    _, stock = _run(name, backend, values, mark=False)
    assert graphs == 1
    assert stock == stock_graphs(name, backend, kind)
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3) / 7
    for out, v in zip(got, values, strict=True):
        want = CALLS[name](x, v)
        assert out.dtype == want.dtype and torch.equal(out, want)


@pytest.mark.inductor
@pytest.mark.parametrize("name", ["tensor", "as_tensor(dtype, device)", "tensor([v, 1.0])", "full"])
def test_a_tensor_made_from_a_marked_float_compiles_once_on_inductor(name: str) -> None:
    got, graphs = _run(name, "inductor", FLOATS, mark=True)
    stock, stock_count = _run(name, "inductor", FLOATS, mark=False)
    assert graphs == 1
    assert stock_count == stock_graphs(name, "inductor", "float")
    for out, want in zip(got, stock, strict=True):
        assert out.dtype == want.dtype and torch.equal(out, want)  # stock inductor's numbers


def test_kornia_style_per_batch_factors_compile_once() -> None:
    """kornia's ``adjust_brightness``/``adjust_gamma``: a factor made a tensor of the
    image's dtype and device, broadcast over the batch (stock: a graph per factor)."""

    def adjust(image: torch.Tensor, brightness: Any, gamma: Any) -> torch.Tensor:
        b = torch.as_tensor(brightness, dtype=image.dtype, device=image.device)
        g = torch.as_tensor(gamma, dtype=image.dtype, device=image.device)
        return (image + b).clamp(0, 1) ** g

    counter = CountingBackend("aot_eager")
    compiled = torch.compile(adjust, backend=counter)
    image = torch.rand(2, 3, 4, 4, generator=torch.Generator().manual_seed(0))
    for brightness, gamma in [(0.1, 1.5), (0.2, 0.8), (-0.1, 2.2), (0.3, 1.0)]:
        got = compiled(image, ds.DynamicFloat(brightness), ds.DynamicFloat(gamma))
        assert torch.equal(got, adjust(image, brightness, gamma))
    assert counter.frame_count == 1


def test_tensor_keeps_its_dtype_inference_and_requires_grad() -> None:
    from dynscalar.ops import _factories

    assert _factories.tensor(2).dtype == torch.int64
    assert _factories.tensor(2.0).dtype == torch.get_default_dtype()
    assert _factories.tensor(2.5, dtype=torch.int64).item() == torch.tensor(2.5, dtype=torch.int64)
    leaf = _factories.tensor(0.5, requires_grad=True)
    assert leaf.requires_grad and leaf.is_leaf
    assert torch.equal(_factories.as_tensor([1.0, 2.0]), torch.as_tensor([1.0, 2.0]))


@pytest.mark.inductor
def test_an_unmarked_int_made_a_tensor_on_inductor_warns_nothing() -> None:
    """diffusers' UNets embed a timestep with ``torch.tensor([timestep])``: with dynscalar
    imported and nothing marked, torch's AOTAutograd cache refuses that graph
    (``BypassAOTAutogradCache``) as it does for stock, and the bridge's cache-key hook used
    to report torch's own refusal as "an internal error" (a DynscalarWarning stock never
    gives); ``filterwarnings = error`` fails this test on any warning."""

    def embed(x: torch.Tensor, timestep: int) -> torch.Tensor:
        return x * torch.tensor([timestep], dtype=torch.float32)

    counter = CountingBackend("inductor")
    compiled = torch.compile(embed, backend=counter)
    x = torch.ones(2)
    for t in (999, 899, 799):
        assert torch.equal(compiled(x, t), embed(x, t))
    assert counter.frame_count == 2  # stock: the first value static, then automatic dynamic
