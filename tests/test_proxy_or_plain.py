"""A plain value where a proxy was: the proxy's graph computes with its plain value.

A graph traced from a ``DynamicInt`` reads the int it holds (``<source>.real``), so it is
also correct for a plain ``int`` found in the same place, unless the compiled code's
result shows the class: a value written back, returned or handed on as a proxy, a dunder
call only the proxy has.  There (and only there) the class is guarded.  Every other type -
a float, a numpy scalar, a bool, another proxy class or spec - recompiles.  Every call is
compared with eager (values, and the exact type of what comes back).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
import torch

import dynscalar as ds
from dynscalar import DynamicFloat, DynamicInt

from .helpers import CountingBackend

BACKENDS = ["eager", "aot_eager"]


def _plain(value: Any) -> Any:
    return value.__wrapped__ if ds.is_dynamic_scalar(value) else value


def _check(got: Any, want: Any) -> None:
    if isinstance(want, torch.Tensor):
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    elif isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _check(g, w)
    else:
        assert type(got) is type(want) and got == want, (got, want)
        if ds.is_dynamic_scalar(want):
            assert got.spec == want.spec


@pytest.mark.parametrize("backend", BACKENDS)
def test_dynamic_int_basic_compile(backend: str) -> None:
    """PyTorch's own ``test_dynamic_int_basic_compile`` (test/test_dynamic_shapes.py,
    for ``torch.fx.experimental.sym_node.DynamicInt``): dynamic ints first, then plain ints
    in the same positions, one compile."""

    def fn(a: int, b: int, c: int) -> torch.Tensor:
        return torch.ones(3) * a * b + c

    counter = CountingBackend(backend)
    compiled = torch.compile(fn, backend=counter)
    for args in ((DynamicInt(1), DynamicInt(1), DynamicInt(3)), (2, 2, 0), (-1, -1, 2)):
        _check(compiled(*args), fn(*(_plain(a) for a in args)))
    assert counter.frame_count == 1
    with ds.disabled():  # stock: the plain ints compile static, then dynamic
        torch._dynamo.reset()
        counter = CountingBackend(backend)
        compiled = torch.compile(fn, backend=counter)
        for args in ((1, 1, 3), (2, 2, 0), (-1, -1, 2)):
            _check(compiled(*args), fn(*args))
        assert counter.frame_count == 2


def scale(x: torch.Tensor, a: Any) -> torch.Tensor:
    return x * a


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("first", "others", "graphs"),
    [
        (
            DynamicInt(3),
            [4, 2.5, np.int64(5), True, DynamicFloat(1.5), DynamicInt(7, unbacked=True)],
            # 4 reuses the graph; each other type (or spec) compiles once
            [1, 1, 2, 3, 4, 5, 6],
        ),
        (
            DynamicFloat(0.5),
            [0.25, 3, np.float64(0.75), True, DynamicInt(2), DynamicFloat(1.5, strict=True)],
            [1, 1, 2, None, None, None, None],
        ),
    ],
    ids=["DynamicInt", "DynamicFloat"],
)
def test_only_the_plain_type_shares_the_proxys_graph(
    backend: str, first: Any, others: list[Any], graphs: list[int | None]
) -> None:
    counter = CountingBackend(backend)
    compiled = torch.compile(scale, backend=counter)
    x = torch.ones(2, dtype=torch.float64)
    seen = []
    for value in [first, *others]:
        _check(compiled(x, value), scale(x, _plain(value)))
        seen.append(counter.frame_count)
    assert seen[:3] == graphs[:3]
    assert all(b > a for a, b in itertools.pairwise(seen[2:]))  # never reused
    # the proxy again, and the plain value again: both graphs are still there
    before = counter.frame_count
    _check(compiled(x, first), scale(x, _plain(first)))
    _check(compiled(x, others[0]), scale(x, _plain(others[0])))
    assert counter.frame_count == before


def returns(x: torch.Tensor, a: Any) -> tuple[torch.Tensor, Any]:
    return x * a, a + 1


class Counter(torch.nn.Module):
    def __init__(self, step: Any) -> None:
        super().__init__()
        self.step = step

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.step += 1
        return x * self.step


@pytest.mark.parametrize("backend", BACKENDS)
def test_where_the_class_shows_it_is_guarded(backend: str) -> None:
    """``a + 1`` returned: eager returns a ``DynamicInt`` for a proxy and an ``int`` for
    an int, so the class decides what comes back and the plain int recompiles."""
    counter = CountingBackend(backend)
    compiled = torch.compile(returns, backend=counter)
    x = torch.ones(2)
    for value in (DynamicInt(3), DynamicInt(4), 5, 6, DynamicInt(7)):
        _check(compiled(x, value), returns(x, value))
    # the proxy's graph; the int's, dynamic at once (automatic dynamic saw the value change)
    assert counter.frame_count == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_attribute_written_back_stays_a_proxy(backend: str) -> None:
    model, twin = Counter(DynamicInt(0)), Counter(DynamicInt(0))
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    x = torch.ones(2)
    for _ in range(3):
        _check(compiled(x), twin(x))
        _check(model.step, twin.step)
    model.step, twin.step = 10, 10  # plain from now on: eager writes back plain ints
    for _ in range(3):
        _check(compiled(x), twin(x))
        _check(model.step, twin.step)
    assert type(model.step) is int
    assert counter.frame_count == 4  # the proxy's graph; the plain int's: one per value


class Reads(torch.nn.Module):
    def __init__(self, scale: Any) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_attribute_only_read_takes_the_plain_value_in_the_proxys_graph(backend: str) -> None:
    model, twin = Reads(DynamicFloat(0.5)), Reads(0.5)
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    x = torch.ones(2, dtype=torch.float64)
    for value in (DynamicFloat(0.5), 0.25, DynamicFloat(0.75), 0.125):
        model.scale, twin.scale = value, _plain(value)
        _check(compiled(x), twin(x))
    assert counter.frame_count == 1


def dunder(x: torch.Tensor, a: Any) -> torch.Tensor:
    return x * a.__iadd__(1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_dunder_call_only_the_proxy_has_guards_the_class(backend: str) -> None:
    """``a.__iadd__(1)``: a ``DynamicInt`` has it, an ``int`` does not (eager raises
    AttributeError); the proxy's graph is not reused for the int."""
    compiled = torch.compile(dunder, backend=CountingBackend(backend))
    x = torch.ones(2)
    _check(compiled(x, DynamicInt(3)), dunder(x, DynamicInt(3)))
    with pytest.raises(AttributeError):
        dunder(x, 4)
    with pytest.raises(AttributeError):
        compiled(x, 4)


@pytest.mark.parametrize("value", [DynamicInt(7), DynamicFloat(-0.0), DynamicFloat(float("nan"))])
def test_the_plain_value_is_read_without_the_missing_name_path(value: Any) -> None:
    """Guards and graph inputs read ``<source>.real`` on every compiled call.  It is the
    proxy's own attribute (found by ``object.__getattribute__``, no AttributeError raised
    and swallowed per call: 2-3.5% of a call of the per-call benchmark's model), and it is
    exactly the plain value ``int.real`` / ``float.real`` give."""
    plain = value.__wrapped__
    read = object.__getattribute__(value, "real")
    assert read is plain
    assert type(read) is type(plain)
    assert repr(value.real) == repr(plain.real)
