"""Nothing global keeps a marked module alive.

Marks live on the module instance and proxies hold only their value and spec, so a marked
module that the user drops is collected, also after torch.compile ran it and
``torch._dynamo.reset()`` dropped the compiled code.
"""

from __future__ import annotations

import gc
import weakref

import pytest
import torch

import dynscalar as ds
from dynscalar import DynamicFloat, DynamicInt, _marks

from .helpers import CountingBackend


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(4, 4)
        self.step = 0
        self.scale = 0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.step += 1
        return self.layer(x) * self.step * self.scale


def build(way: str) -> Net:
    net = Net()
    if way == "registry":
        ds.mark_dynamic_attr(net, "step")
        ds.mark_dynamic_attr(net, "scale")
    elif way == "proxy":
        net.step, net.scale = DynamicInt(0), DynamicFloat(0.5)
    return net


def assert_collected(ref: weakref.ref[Net]) -> None:
    gc.collect()
    assert ref() is None, gc.get_referrers(ref()) if ref() is not None else None


WAYS = ["registry", "proxy", "unmarked"]


@pytest.mark.parametrize("way", WAYS)
def test_deleted_marked_module_is_collected(way: str) -> None:
    net = build(way)
    net(torch.randn(2, 4))
    ref = weakref.ref(net)
    del net
    assert_collected(ref)


@pytest.mark.parametrize("way", WAYS)
def test_compiled_marked_module_is_collected_after_dynamo_reset(way: str) -> None:
    """Compile, run a few steps, drop the module and the compiled wrapper, reset Dynamo: the
    module's weakref dies (the unmarked case shows torch itself behaves the same)."""
    net = build(way)
    eager = build("unmarked")
    eager.load_state_dict(net.state_dict())
    counter = CountingBackend("eager")
    compiled = torch.compile(net, backend=counter)
    for _ in range(3):
        x = torch.randn(2, 4)
        torch.testing.assert_close(compiled(x), eager(x))
    assert net.step == 3
    assert counter.frame_count == (3 if way == "unmarked" else 1)  # unmarked: one per step value
    ref = weakref.ref(net)
    del net, compiled, counter
    torch._dynamo.reset()
    assert_collected(ref)


def test_class_decorator_does_not_keep_instances_alive() -> None:
    cls = ds.dynamic_attrs("step")(type("Decorated", (Net,), {}))
    ref = weakref.ref(cls())
    assert_collected(ref)


def test_class_and_function_marks_die_with_their_class_and_code() -> None:
    """The mark table holds ints and specs only: a compiled, decorated class and a marked
    function are collected, and their entries of the table go with them.  (The function is
    not compiled here: torch itself keeps a compiled code object alive after
    ``torch._dynamo.reset()``, marked or not.)"""
    namespace: dict[str, object] = {}
    exec("def scale(x, t):\n    'test_memory'\n    return x * t\n", namespace)
    function = namespace.pop("scale")
    ds.mark_dynamic_args(function, "t")
    cls = ds.dynamic_attrs("step")(type("Decorated", (Net,), {}))
    keys = [_marks.key_of(cls), _marks.key_of(function.__code__)]  # type: ignore[attr-defined]
    assert all(key in _marks.MARK_TABLE for key in keys)
    counter = CountingBackend("eager")
    torch.compile(cls(), backend=counter)(torch.randn(2, 4))
    assert counter.frame_count == 1
    refs = [weakref.ref(cls), weakref.ref(function)]
    code = weakref.ref(function.__code__)  # type: ignore[attr-defined]
    del cls, function, namespace
    torch._dynamo.reset()
    gc.collect()
    assert [ref() for ref in refs] == [None, None] and code() is None
    assert not any(key in _marks.MARK_TABLE for key in keys)
