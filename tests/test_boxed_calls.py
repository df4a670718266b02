"""Boxed calls on inductor (``dynscalar::apply_boxed``): where inductor would specialize a
marked float at a torch call - no scalar form, a form not admitted, a rule whose tensor form
does not keep that parameter, or a call whose autograd formula forces the value (learned
the first time) - the call is eager's kernel in a custom op that takes the float as a 0-d
float64 tensor, where the exactness matrix admits the call.

Before this change each of these rows compiled once per value on inductor (nn coverage:
CELU alpha 4 graphs for 4 values, SDPA scale 5, PairwiseDistance norm 5).  Every compile
test compares outputs and gradients with an eager twin bit for bit (eager's kernel) and
counts graphs.
"""

from __future__ import annotations

import copy
import os
import warnings
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import dynscalar as ds
from dynscalar.ops import _apply

from .helpers import CountingBackend, run_interpreter


def _run(
    model: nn.Module,
    attr: str,
    values: tuple[float, ...],
    inputs: Callable[[], tuple[torch.Tensor, ...]],
    *,
    mark: bool = True,
) -> tuple[CountingBackend, list[int]]:
    """Compile ``model`` on inductor beside an eager twin; with ``mark``, each value's
    outputs and gradients equal bit for bit, no dynscalar warning; (the counter, graphs
    after each value)."""
    eager = copy.deepcopy(model)
    if mark:
        ds.mark_dynamic_attr(model, attr)
    counter = CountingBackend("inductor")
    compiled = torch.compile(model, backend=counter)
    per_call = []
    for value in values:
        setattr(model, attr, value)
        setattr(eager, attr, value)
        xs = inputs()
        a = [x.clone().requires_grad_(x.is_floating_point()) for x in xs]
        b = [x.clone().requires_grad_(x.is_floating_point()) for x in xs]
        with warnings.catch_warnings():
            warnings.simplefilter("error", ds.DynscalarWarning)
            got = compiled(*a)
            got.sum().backward()
        want = eager(*b)
        want.sum().backward()
        if not mark:  # stock inductor's own numbers (CELU's: wrong, pytorch#194976)
            per_call.append(counter.frame_count)
            continue
        assert torch.equal(got, want), value
        for x, y in zip(a, b, strict=True):
            assert (x.grad is None) == (y.grad is None), value
            if x.grad is not None:
                assert torch.equal(x.grad, y.grad), value
        assert getattr(model, attr) == getattr(eager, attr)
        per_call.append(counter.frame_count)
    return counter, per_call


def _act() -> tuple[torch.Tensor, ...]:
    return (torch.randn(16, 33, generator=torch.Generator().manual_seed(0)) * 3,)


class _SDPA(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = 0.3

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, scale=self.scale)


def _qkv() -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(1)
    return tuple(torch.randn(2, 2, n, 8, generator=g) for n in (5, 6, 6))


def _pair() -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(2)
    return torch.randn(16, 8, generator=g), torch.randn(16, 8, generator=g)


def test_boxed_op_is_eagers_call_and_lays_gradients_out_as_inputs() -> None:
    """Eagerly: the boxed op computes the call with the float read back from its 0-d
    float64 tensor (every double, -0.0 and inf included), and its gradients hold eager's
    values in their inputs' layout (a flash-attention backward returns them transposed)."""
    template = _apply.Template(
        "torch._C._nn.scaled_dot_product_attention",
        (("tensor", 0), ("tensor", 1), ("tensor", 2)),
        (("scale", ("scalar", 0)),),
        "tensor",
    )
    key = _apply.register(template)
    for scale in (0.1, 1e-300, -0.0, float("inf"), 0.30000000000000004):
        q, k, v = (t.requires_grad_(True) for t in _qkv())
        want = template.call([q, k, v], [scale])
        grads = torch.autograd.grad(want.sum(), [q, k, v])
        q2, k2, v2 = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
        box = torch.tensor(scale, dtype=torch.float64)
        (got,) = _apply.boxed_op()(key, [q2, k2, v2], [box])
        got_grads = torch.autograd.grad(got.sum(), [q2, k2, v2])
        assert torch.equal(got.nan_to_num(), want.nan_to_num()), scale
        for g, w, x in zip(got_grads, grads, (q2, k2, v2), strict=True):
            assert torch.equal(g.nan_to_num(), w.nan_to_num()), scale
            assert g.stride() == torch.empty_like(x).stride()


@pytest.mark.inductor
def test_celu_alpha_is_learned_once_then_one_graph_for_every_value() -> None:
    """``celu``'s derivative formula computes ``1 / alpha`` as a C++ double (a value guard
    while AOTAutograd traces the backward).  The first compile sees the guard, learns
    ``torch.celu`` and traces the frame again with it boxed: 2 backend calls, one graph for
    4 values (before: 4 graphs).  A second model in the same process compiles once; after
    ``torch._dynamo.reset()`` the lesson is forgotten with the other caches."""
    torch._dynamo.reset()
    values = (0.5, 1.0, 1.5, 2.0)
    _, per_call = _run(nn.CELU(1.0), "alpha", values, _act)
    assert per_call == [2, 2, 2, 2]
    _, per_call = _run(nn.CELU(1.0), "alpha", values, _act)
    assert per_call == [1, 1, 1, 1]
    torch._dynamo.reset()
    _, per_call = _run(nn.CELU(1.0), "alpha", values, _act)
    assert per_call == [2, 2, 2, 2]


@pytest.mark.inductor
def test_sdpa_scale_is_one_graph_on_inductor() -> None:
    """At dropout_p == 0 SDPA is ATen's flash kernel, which no tensor form matches; the
    scale used to be specialized (5 graphs for 4 values).  Boxed: one graph, eager's
    numbers and gradients."""
    torch._dynamo.reset()
    _, per_call = _run(_SDPA(), "scale", (0.1, 0.3, 0.5, 1.0), _qkv)
    assert per_call == [1, 1, 1, 1]


@pytest.mark.inductor
def test_pairwise_norm_is_one_graph_and_order_zero_a_path() -> None:
    """``pairwise_distance``'s order is ``linalg.vector_norm``'s Scalar ``ord``: boxed on
    inductor.  Order 0 counts nonzeros and has no gradient (eager's grad is None): a path
    of its own, kept from the boxed graph by a predicate guard (``p != 0``), one graph
    (before, two: torch's float pass restarted to drop the float the path pinned), no
    warning; -0.0 takes it too."""
    torch._dynamo.reset()
    values = (1.5, 3.0, 0.0, 2.5, -0.0, 1.0)
    _, per_call = _run(nn.PairwiseDistance(2.0), "norm", values, _pair)
    assert per_call == [1, 1, 2, 2, 2, 2]


@pytest.mark.inductor
def test_unmarked_celu_compiles_as_stock() -> None:
    """Do no harm: an unmarked alpha compiles on inductor as in a process that never
    imported dynscalar (nothing is learned from a value nobody marked).  Both in fresh
    processes with inductor's caches off: a cache hit skips the float-tensorify pass and
    its restarts, which would make the counts depend on what ran before."""
    source = """
import sys, torch
if sys.argv[-1] == "imported":
    import dynscalar
from torch._dynamo.testing import CompileCounterWithBackend
m = torch.nn.CELU(1.0)
c = CompileCounterWithBackend("inductor")
f = torch.compile(m, backend=c)
x = torch.randn(16, 33, requires_grad=True)
for a in (0.5, 1.0, 1.5, 2.0):
    m.alpha = a
    f(x).sum().backward()
print(c.frame_count)
"""
    env = dict(os.environ, TORCHINDUCTOR_FX_GRAPH_CACHE="0", TORCHINDUCTOR_AUTOGRAD_CACHE="0")
    counts = []
    for side in ("stock", "imported"):
        done = run_interpreter("-c", source, side, env=env)
        assert done.returncode == 0, done.stderr[-2000:]
        counts.append(int(done.stdout.split()[-1]))
    stock, imported = counts
    assert imported == stock


def test_a_call_that_writes_its_inputs_is_never_boxed() -> None:
    """A custom op may not write its inputs (the graph would keep their old values):
    ``torch.batch_norm`` in training updates its running statistics, so the matrix refuses
    it as a boxed call (and as the generic rule's), whatever its outputs."""
    template = _apply.Template(
        "torch.batch_norm",
        (
            *(("tensor", i) for i in range(5)),
            ("constant", True),
            ("scalar", 0),
            ("constant", 1e-5),
            ("constant", False),
        ),
        (),
        "tensor",
    )
    key = _apply.register(template)
    tensors = [torch.randn(4, 3), torch.zeros(3), torch.ones(3), torch.ones(3), torch.zeros(3)]
    for boxed in (False, True):
        ok, why = _apply.admitted(key, tensors, [0.1], False, boxed=boxed)
        assert not ok and why == "the call writes its inputs"
