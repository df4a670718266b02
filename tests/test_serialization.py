"""Marks and proxies survive copy, pickle and torch.save; checkpoints load safely.

A module's marks live on the instance, so every way of copying a module copies them.
Proxies pickle as ``_rebuild(kind, value, unbacked, min, max)``, the one global dynscalar
registers for ``torch.load(weights_only=True)``; it builds nothing but a proxy.
"""

from __future__ import annotations

import copy
import io
import os
import pickle
from collections.abc import Callable
from typing import Any

import pytest
import torch

import dynscalar as ds
from dynscalar import DynamicFloat, DynamicInt, DynamicSpec
from dynscalar._proxy import _rebuild


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(3, 3)
        self.register_buffer("seen", torch.zeros(3))
        self.step = 0
        self.scale = 0.5
        self.lr = DynamicFloat(0.1, strict=True)
        self.warmup = DynamicInt(4, min=0, max=100)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.step += 1
        return self.layer(x) * self.scale * self.lr + self.warmup


@ds.dynamic_attrs("step", min=0)
class Counter(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.step = 0


def marked_net() -> Net:
    net = ds.mark_dynamic_attr(Net(), "step", unbacked=True, max=1000)
    return ds.mark_dynamic_attr(net, "scale")


def via_pickle(obj: Any) -> Any:
    return pickle.loads(pickle.dumps(obj))


def via_torch_save(obj: Any) -> Any:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=False)


def via_weights_only(obj: Any) -> Any:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


COPIES: dict[str, Callable[[Any], Any]] = {
    "deepcopy": copy.deepcopy,
    "pickle": via_pickle,
    "torch.save/load": via_torch_save,
}


@pytest.mark.parametrize("how", COPIES)
def test_module_keeps_marks_and_proxies(how: str) -> None:
    """deepcopy, pickle and torch.save/torch.load(weights_only=False) of a marked module
    give a module with the same marks, the same proxy attributes and the same outputs."""
    net = marked_net()
    net.step = 7
    twin = COPIES[how](net)
    assert twin is not net
    for name in ("step", "scale", "lr", "warmup"):
        assert ds.is_dynamic_attr(twin, name)
    marks = twin.__dict__["_dynscalar_marks"]
    assert marks == {"step": DynamicSpec(unbacked=True, max=1000), "scale": DynamicSpec()}
    assert type(twin.step) is int and twin.step == 7
    assert type(twin.lr) is DynamicFloat and twin.lr.spec == DynamicSpec(strict=True)
    assert type(twin.warmup) is DynamicInt and twin.warmup.spec == DynamicSpec(min=0, max=100)
    x = torch.randn(2, 3)
    torch.testing.assert_close(twin(x), net(x), rtol=0, atol=0)


@pytest.mark.parametrize("how", COPIES)
def test_class_marks_survive_copies(how: str) -> None:
    twin = COPIES[how](Counter())
    assert type(twin) is Counter and ds.is_dynamic_attr(twin, "step")


def test_a_copy_owns_its_marks() -> None:
    """Marking or unmarking the copy leaves the original alone, and the other way round."""
    net = marked_net()
    twin = copy.deepcopy(net)
    ds.unmark_dynamic_attr(twin, "step")
    ds.mark_dynamic_attr(net, "lr")
    assert ds.is_dynamic_attr(net, "step") and not ds.is_dynamic_attr(twin, "step")
    assert "lr" not in twin.__dict__["_dynscalar_marks"]


def test_checkpoint_with_proxies_loads_with_weights_only() -> None:
    """A checkpoint dict holding DynamicInt/DynamicFloat (also nested) loads with
    torch.load(weights_only=True): same classes, values and specs."""
    checkpoint = {
        "step": DynamicInt(1234, min=0),
        "lr": DynamicFloat(3e-4, strict=True),
        "history": [DynamicInt(-5), (DynamicFloat(0.5), 2)],
        "state": torch.nn.Linear(2, 2).state_dict(),
    }
    loaded = via_weights_only(checkpoint)
    assert type(loaded["step"]) is DynamicInt and loaded["step"] == 1234
    assert loaded["step"].spec == DynamicSpec(min=0)
    assert type(loaded["lr"]) is DynamicFloat and loaded["lr"] == 3e-4
    assert loaded["lr"].spec == DynamicSpec(strict=True)
    assert type(loaded["history"][0]) is DynamicInt and loaded["history"][0] == -5
    assert type(loaded["history"][1][0]) is DynamicFloat and loaded["history"][1][1] == 2
    for key, value in checkpoint["state"].items():
        assert torch.equal(loaded["state"][key], value)


def test_only_the_rebuild_function_is_a_safe_global() -> None:
    """dynscalar opens exactly one door in weights_only loading: ``_rebuild``."""
    safe = torch.serialization.get_safe_globals()
    ours = [g for g in safe if getattr(g, "__module__", "").startswith("dynscalar")]
    assert ours == [_rebuild]


class _Forged:
    """Pickles as a call to ``_rebuild`` with arguments a real proxy never produces."""

    def __init__(self, *args: Any) -> None:
        self.args = args

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, self.args)


@pytest.mark.parametrize(
    "args",
    [
        ("os.system", "echo pwned", False, None, None),
        ("DynamicInt", "echo pwned", False, None, None),
        ("DynamicInt", 1.5, False, None, None),
        ("DynamicInt", True, False, None, None),
        ("DynamicFloat", 1, False, None, None),
        ("DynamicFloat", 0.5, False, 0, 1),
        ("DynamicInt", 1, "yes", None, None),
        ("DynamicInt", 1, False, 5, 1),
    ],
    ids=[
        "kind",
        "str value",
        "float as int",
        "bool",
        "int as float",
        "float range",
        "flag",
        "range",
    ],
)
def test_forged_rebuild_arguments_are_refused(args: tuple[Any, ...]) -> None:
    """Unpickling never builds anything but a valid proxy: any other arguments raise."""
    data = pickle.dumps(_Forged(*args))
    with pytest.raises((TypeError, ValueError), match="dynscalar"):
        pickle.loads(data)
    with pytest.raises((TypeError, ValueError, pickle.UnpicklingError), match="dynscalar"):
        via_weights_only({"x": _Forged(*args)})


def test_weights_only_still_refuses_other_globals() -> None:
    """Registering ``_rebuild`` does not open weights_only loading to other callables."""

    class CallsGetpid:
        def __reduce__(self) -> tuple[Any, ...]:
            return (os.getpid, ())

    with pytest.raises(pickle.UnpicklingError, match="getpid"):
        via_weights_only({"x": CallsGetpid()})


def test_state_dict_is_unaffected_by_marks_and_proxies() -> None:
    """state_dict holds parameters and buffers only; load_state_dict keeps the target's
    marks and proxy attributes."""
    net, plain = marked_net(), Net()
    assert (
        list(net.state_dict())
        == list(plain.state_dict())
        == [
            "seen",
            "layer.weight",
            "layer.bias",
        ]
    )
    result = plain.load_state_dict(net.state_dict(), strict=True)
    assert not result.missing_keys and not result.unexpected_keys
    net.load_state_dict(Net().state_dict())
    assert ds.is_dynamic_attr(net, "step") and ds.is_dynamic_attr(net, "scale")
    assert type(net.lr) is DynamicFloat and net.lr.spec.strict
    assert via_weights_only(net.state_dict()).keys() == net.state_dict().keys()
