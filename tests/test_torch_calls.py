"""A DynamicInt as a size, a view shape or an arange bound: torch hands the call to the
proxy's ``__torch_function__`` in eager code and Dynamo sees a symbol in compiled code, so
both give eager's result and one compile covers every value (docs/troubleshooting.md, "A
DynamicInt in C code", lists the calls that cannot work and what to write instead)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

import dynscalar
from tests.helpers import CountingBackend

CALLS: dict[str, Callable[[torch.Tensor, int], torch.Tensor]] = {
    "torch.zeros((n, 2))": lambda x, n: x + torch.zeros((n, 2)).sum(),
    "torch.zeros(2, n)": lambda x, n: x + torch.zeros(2, n).sum(),
    "torch.ones(n)": lambda x, n: x + torch.ones(n).sum(),
    "torch.full((n,), n)": lambda x, n: x + torch.full((n,), n).sum(),
    "torch.arange(n)": lambda x, n: x + torch.arange(n).sum(),
    "t.view(n, 2)": lambda x, n: x + torch.arange(n * 2.0).view(n, 2)[-1, 0],
    "t.reshape(n, -1)": lambda x, n: x + torch.arange(n * 2.0).reshape(n, -1)[-1, 1],
    "t.new_zeros((n, 2))": lambda x, n: x + x.new_zeros((n, 2)).sum() + n,
    "t.narrow(0, 0, n)": lambda x, n: x + torch.arange(10.0).narrow(0, 0, n).sum(),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_a_dynamic_int_size_works_in_eager_and_compiles_once(name: str) -> None:
    fn = CALLS[name]
    x = torch.ones(2)
    for n in (3, 4, 5):
        assert torch.equal(fn(x, dynscalar.DynamicInt(n)), fn(x, n)), (name, n)
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(fn, backend=counter)
    for n in (3, 4, 5, 6):
        assert torch.equal(compiled(x, dynscalar.DynamicInt(n)), fn(x, n)), (name, n)
    assert counter.frame_count == 1, name
