"""Random forms on inductor draw what stock inductor draws, measured per op.

A marked dropout probability on inductor is traced as the rule's tensor form
(``dynscalar/ops/_tensor.py``).  Stock inductor does not draw the same way for every op:
``nn.Dropout`` (``aten::dropout``) is torch's ``native_dropout`` decomposition, inductor's
own random numbers; feature and alpha dropout (``Dropout1d``/``Dropout2d``,
``AlphaDropout``, ``FeatureAlphaDropout``) and a timm-style ``DropPath``
(``x.new_empty(shape).bernoulli_(keep_prob)``) run ATen's ``bernoulli_`` on the CPU, so
their masks and the generator afterwards are eager's.  Before this change every form drew
with ``rand_like``: other masks than stock inductor for all six modules, and the generator
left elsewhere for all but ``nn.Dropout`` (measured with the script of this file's tests:
outputs, gradients and generator state differed at 0.3, 0.5 and 0.25).

Each test compiles the module on inductor with its probability marked, for several
values (one graph), beside stock inductor with the value a constant (``ds.disabled()``,
one graph per value) and eager, each call from the same seed: the outputs and gradients
are stock inductor's bit for bit, and so is the generator state afterwards.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch
from torch import nn

import dynscalar as ds

from .helpers import CountingBackend

pytestmark = pytest.mark.inductor

VALUES = (0.3, 0.5, 0.25)
SEED = 7


class DropPath(nn.Module):
    """timm's ``DropPath`` (stochastic depth), as timm writes it: one draw per sample."""

    def __init__(self, drop_prob: float = 0.0) -> None:
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.drop_prob == 0.0 or not self.training:
            return x
        keep_prob = 1 - self.drop_prob
        shape = (x.shape[0],) + (1,) * (x.ndim - 1)
        random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
        random_tensor.div_(keep_prob)
        return x * random_tensor


#: module, the marked attribute, the input's shape
MODULES: dict[str, tuple[type[nn.Module], str, tuple[int, ...]]] = {
    "Dropout": (nn.Dropout, "p", (4, 6)),
    "Dropout1d": (nn.Dropout1d, "p", (4, 6, 5)),
    "Dropout2d": (nn.Dropout2d, "p", (4, 6, 3, 3)),
    "AlphaDropout": (nn.AlphaDropout, "p", (4, 6)),
    "FeatureAlphaDropout": (nn.FeatureAlphaDropout, "p", (4, 6, 3)),
    "DropPath": (DropPath, "drop_prob", (8, 6)),
}
#: the one quick check of each kind of draw; the others run with ``-m broad``
QUICK = ("Dropout2d", "AlphaDropout", "DropPath")


def _call(fn: Any, shape: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(output, input gradient, generator state after the forward), from :data:`SEED`."""
    x = torch.randn(shape, generator=torch.Generator().manual_seed(1)).requires_grad_()
    torch.manual_seed(SEED)
    out = fn(x)
    state = torch.get_rng_state()
    out.sum().backward()
    assert x.grad is not None
    return out.detach(), x.grad, state


@pytest.mark.parametrize(
    "name", [n if n in QUICK else pytest.param(n, marks=pytest.mark.broad) for n in MODULES]
)
def test_a_marked_random_module_draws_what_stock_inductor_draws(name: str) -> None:
    cls, attr, shape = MODULES[name]
    torch._dynamo.reset()
    stock: dict[float, Any] = {}
    with ds.disabled():
        for value in VALUES:
            torch._dynamo.reset()
            stock_counter = CountingBackend("inductor")
            stock[value] = _call(torch.compile(cls(value), backend=stock_counter), shape)
            assert stock_counter.frame_count == 1
    torch._dynamo.reset()
    model = cls(VALUES[0])
    eager = copy.deepcopy(model)
    ds.mark_dynamic_attr(model, attr)
    counter = CountingBackend("inductor")
    compiled = torch.compile(model, backend=counter)
    for value in VALUES:
        setattr(model, attr, value)
        setattr(eager, attr, value)
        got, got_grad, got_state = _call(compiled, shape)
        want, want_grad, want_state = stock[value]
        assert torch.equal(got_state, want_state), (name, value)
        assert torch.equal(got != 0, want != 0), (name, value)  # the masks
        if name == "DropPath":
            # `random_tensor.div_(keep_prob)` with a marked keep_prob divides as eager does;
            # stock inductor multiplies by the constant's reciprocal (at 0.25: 1 ulp off
            # eager).  On the CPU stock's masks are eager's: the output is eager's
            mine, mine_grad, _ = _call(eager, shape)
            want, want_grad = mine, mine_grad
        assert torch.equal(got, want), (name, value)
        assert torch.equal(got_grad, want_grad), (name, value)
    assert counter.frame_count == 1
