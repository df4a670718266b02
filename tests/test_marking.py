"""The marking API: values, module attributes, the class decorator, and bad input."""

from __future__ import annotations

import copy
import pickle
import re

import pytest
import torch

import dynscalar as ds
from dynscalar import DynamicFloat, DynamicInt


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(2, 2)
        self.register_buffer("running", torch.zeros(2))
        self.step = 0
        self.scale = 0.5
        self.training_flag = True
        self.label = "net"
        self.nothing = None


# ----------------------------------------------------------------------------- values
def test_mark_dynamic_values() -> None:
    assert repr(ds.mark_dynamic(3)) == "DynamicInt(3)"
    assert repr(ds.mark_dynamic(0.5)) == "DynamicFloat(0.5)"
    assert repr(ds.mark_dynamic(3, unbacked=True, min=0)) == "DynamicInt(3, unbacked=True, min=0)"
    again = ds.mark_dynamic(DynamicInt(4), max=9)
    assert type(again) is DynamicInt and again.spec.max == 9


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [
        (torch.ones(2), TypeError, r"torch\._dynamo\.mark_dynamic"),
        (True, TypeError, "bool"),
        ("7", TypeError, "expected an int or float, got str"),
        (None, TypeError, "got NoneType"),
        ([1], TypeError, "got list"),
    ],
)
def test_mark_dynamic_rejects(value: object, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        ds.mark_dynamic(value)


@pytest.mark.parametrize(
    ("value", "kwargs", "error", "match"),
    [
        ("7", {}, TypeError, r"DynamicInt\('7'\): expected an int, got str"),
        (True, {}, TypeError, "bool"),
        (1.5, {}, TypeError, "use DynamicFloat"),
        (2**63, {}, ValueError, "int64"),
        (-(2**63) - 1, {}, ValueError, "int64"),
        (5, {"min": 6}, ValueError, "outside the declared range"),
        (5, {"min": 6, "max": 1}, ValueError, "min=6 is greater than max=1"),
        (5, {"max": 2**64}, ValueError, "int64"),
        (5, {"min": 1.5}, TypeError, "min=1.5 must be an int"),
        (5, {"unbacked": 1}, TypeError, "unbacked=1 must be True or False"),
        (torch.tensor(3), {}, TypeError, r"torch\._dynamo\.mark_dynamic"),
    ],
)
def test_dynamic_int_rejects(
    value: object, kwargs: dict, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        DynamicInt(value, **kwargs)


@pytest.mark.parametrize("value", ["0.5", True, None, torch.tensor(0.5)])
def test_dynamic_float_rejects(value: object) -> None:
    with pytest.raises(TypeError, match=r"DynamicFloat\("):
        DynamicFloat(value)


def test_int64_bounds_accepted() -> None:
    assert DynamicInt(2**63 - 1) == 2**63 - 1
    assert DynamicInt(-(2**63)) == -(2**63)


# ----------------------------------------------------------------------------- modules
def test_mark_and_unmark_attr() -> None:
    net = Net()
    assert ds.mark_dynamic_attr(net, "step", "scale") is net
    assert type(net.step) is int and type(net.scale) is float  # values stay plain
    assert ds.is_dynamic_attr(net, "step") and ds.is_dynamic_attr(net, "scale")
    assert not ds.is_dynamic_attr(net, "layer")
    assert ds.unmark_dynamic_attr(net, "step") is net
    assert not ds.is_dynamic_attr(net, "step") and ds.is_dynamic_attr(net, "scale")


def test_unmark_replaces_a_proxy_value_by_the_plain_value() -> None:
    net = Net()
    net.step = DynamicInt(3)
    assert ds.is_dynamic_attr(net, "step")
    ds.unmark_dynamic_attr(net, "step")
    assert type(net.step) is int and net.step == 3 and not ds.is_dynamic_attr(net, "step")


def test_marks_live_on_the_instance() -> None:
    a, b = Net(), Net()
    ds.mark_dynamic_attr(a, "step")
    assert ds.is_dynamic_attr(a, "step") and not ds.is_dynamic_attr(b, "step")
    clone = copy.deepcopy(a)
    restored = pickle.loads(pickle.dumps(a))
    assert ds.is_dynamic_attr(clone, "step") and ds.is_dynamic_attr(restored, "step")
    ds.unmark_dynamic_attr(clone, "step")
    assert ds.is_dynamic_attr(a, "step")  # the copy's marks are its own


@pytest.mark.parametrize(
    ("name", "error", "match"),
    [
        ("stpe", AttributeError, r"Net has no attribute 'stpe'.*Did you mean 'step'"),
        ("layer", TypeError, r"Net\.layer is a submodule"),
        ("running", TypeError, r"Net\.running is a buffer.*torch\._dynamo\.mark_dynamic"),
        ("training_flag", TypeError, r"Net\.training_flag is a bool"),
        ("label", TypeError, r"Net\.label is str"),
        ("nothing", TypeError, r"Net\.nothing is NoneType"),
    ],
)
def test_mark_dynamic_attr_rejects(name: str, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        ds.mark_dynamic_attr(Net(), name)


def test_mark_dynamic_attr_rejects_parameters_tensors_and_ranges() -> None:
    net = Net()
    with pytest.raises(
        TypeError, match=r"Linear\.weight is a parameter.*torch\._dynamo\.mark_dynamic"
    ):
        ds.mark_dynamic_attr(net.layer, "weight")
    net.plain_tensor = torch.ones(1)
    with pytest.raises(TypeError, match=r"Net\.plain_tensor is a torch\.Tensor"):
        ds.mark_dynamic_attr(net, "plain_tensor")
    with pytest.raises(ValueError, match=r"Net\.step: value 0 is outside .*\[1, inf\]"):
        ds.mark_dynamic_attr(net, "step", min=1)
    with pytest.raises(ValueError, match=r"Net\.scale: min/max apply to int scalars only"):
        ds.mark_dynamic_attr(net, "scale", max=3)
    net.huge = 2**70
    with pytest.raises(ValueError, match=r"Net\.huge: value .* int64"):
        ds.mark_dynamic_attr(net, "huge")
    with pytest.raises(ValueError, match="min=3 is greater than max=1"):
        ds.mark_dynamic_attr(net, "step", min=3, max=1)
    assert not ds.is_dynamic_attr(net, "step")  # nothing half-marked after errors


@pytest.mark.parametrize("target", [object(), 3, torch.ones(1), torch.nn.Linear])
def test_non_module_targets(target: object) -> None:
    with pytest.raises(TypeError, match=r"mark_dynamic_attr: expected a torch\.nn\.Module"):
        ds.mark_dynamic_attr(target, "step")  # type: ignore[type-var]


def test_names_are_checked() -> None:
    with pytest.raises(TypeError, match="name at least one attribute"):
        ds.mark_dynamic_attr(Net())
    with pytest.raises(TypeError, match="identifiers given as str"):
        ds.mark_dynamic_attr(Net(), "not a name")
    with pytest.raises(TypeError, match="identifiers given as str"):
        ds.dynamic_attrs(3)  # type: ignore[arg-type]


class _Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.drop = torch.nn.Dropout(0.1)
        self.attn = torch.nn.MultiheadAttention(4, 2, dropout=0.1)


def test_a_name_a_child_holds_suggests_marking_the_child() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.1))
    with pytest.raises(
        AttributeError,
        match=r"Sequential has no attribute 'p' to mark dynamic\. Its submodule module\[1\] "
        r"\(Dropout\) has one: mark it where it lives, e\.g\. "
        r"mark_dynamic_attr\(module\[1\], 'p'\)\.$",
    ):
        ds.mark_dynamic_attr(model, "p")
    blocks = torch.nn.Sequential(*[_Block() for _ in range(5)])
    with pytest.raises(
        AttributeError,
        match=r"Its submodules module\[0\]\.attn \(MultiheadAttention\), "
        r"module\[1\]\.attn \(MultiheadAttention\), module\[2\]\.attn "
        r"\(MultiheadAttention\) and 2 more have one: .*"
        r"mark_dynamic_attr\(module\[0\]\.attn, 'dropout'\) \(once per submodule\)",
    ):
        ds.mark_dynamic_attr(blocks, "dropout")
    named = torch.nn.ModuleDict({"final-drop": torch.nn.Dropout(0.2)})
    with pytest.raises(AttributeError, match=r"mark_dynamic_attr\(module\['final-drop'\], 'p'\)"):
        ds.mark_dynamic_attr(named, "p")
    # the suggestion is one that works
    ds.mark_dynamic_attr(model[1], "p")
    assert ds.is_dynamic_attr(model[1], "p") and not ds.is_dynamic_attr(model, "p")


@pytest.mark.parametrize(
    ("path", "expr"),
    [("1.p", "module[1], 'p'"), ("0.drop.p", "module[0].drop, 'p'")],
)
@pytest.mark.parametrize("api", [ds.mark_dynamic_attr, ds.unmark_dynamic_attr])
def test_a_dotted_path_suggests_the_submodule(path: str, expr: str, api: object) -> None:
    model = torch.nn.Sequential(_Block(), torch.nn.Dropout(0.1))
    name = api.__name__  # type: ignore[attr-defined]
    with pytest.raises(
        TypeError,
        match=re.escape(f"{path!r} is a path: mark the submodule that holds 'p', {name}({expr})."),
    ):
        api(model, path)  # type: ignore[operator]


def test_all_or_nothing_when_one_name_is_bad() -> None:
    net = Net()
    with pytest.raises(AttributeError):
        ds.mark_dynamic_attr(net, "step", "missing")
    assert not ds.is_dynamic_attr(net, "step")


# ----------------------------------------------------------------------------- decorator
def test_decorator_marks_instances_and_subclasses() -> None:
    @ds.dynamic_attrs("step")
    class Base(Net):
        pass

    @ds.dynamic_attrs("scale")
    class Child(Base):
        pass

    base, child = Base(), Child()
    assert ds.is_dynamic_attr(base, "step") and not ds.is_dynamic_attr(base, "scale")
    assert ds.is_dynamic_attr(child, "step") and ds.is_dynamic_attr(child, "scale")
    ds.unmark_dynamic_attr(child, "step")  # an instance may opt out
    assert not ds.is_dynamic_attr(child, "step") and ds.is_dynamic_attr(Child(), "step")
    assert not ds.is_dynamic_attr(Net(), "step")  # the undecorated base is untouched


@pytest.mark.parametrize("target", [object, int, type("Plain", (), {}), lambda: None])
def test_decorator_rejects_non_modules(target: object) -> None:
    with pytest.raises(TypeError, match=r"is not a torch\.nn\.Module subclass"):
        ds.dynamic_attrs("step")(target)  # type: ignore[type-var]


def test_decorator_attribute_with_bad_value_fails_clearly_at_compile() -> None:
    @ds.dynamic_attrs("label")
    class Labelled(Net):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * len(self.label)

    compiled = torch.compile(Labelled(), backend="eager")
    with pytest.raises(TypeError, match=r"Labelled\.label is str"):
        compiled(torch.ones(2))


def test_marking_the_compiled_wrapper_marks_the_model() -> None:
    """torch.compile(model) returns a wrapper Dynamo never traces: marks go on the model."""
    from .helpers import CountingBackend

    class Counter(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.step = 0

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.step += 1
            return x * self.step

    model = Counter()
    counter = CountingBackend("eager")
    compiled = torch.compile(model, backend=counter)
    assert ds.mark_dynamic_attr(compiled, "step") is compiled
    assert ds.is_dynamic_attr(model, "step") and ds.is_dynamic_attr(compiled, "step")
    for step in range(1, 5):
        torch.testing.assert_close(compiled(torch.ones(2)), torch.full((2,), float(step)))
    assert counter.frame_count == 1
    assert [r.attribute for r in ds.explain(compiled, show=False)] == ["step"]
    ds.unmark_dynamic_attr(compiled, "step")
    assert not ds.is_dynamic_attr(model, "step")


def test_marking_runs_no_user_code() -> None:
    """Marking reads a value where it is stored; a custom ``__getattr__`` (user code) is
    not called to find a name, and the value it provides is checked when a compile reads
    it."""
    from .helpers import CountingBackend

    class Computed(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.calls = 0

        def __getattr__(self, name: str) -> object:
            if name == "scale":
                self.__dict__["calls"] += 1
                return 0.5
            return super().__getattr__(name)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * self.scale

    model = ds.mark_dynamic_attr(Computed(), "scale")
    assert model.calls == 0 and ds.is_dynamic_attr(model, "scale")
    counter = CountingBackend("eager")
    torch.testing.assert_close(
        torch.compile(model, backend=counter)(torch.ones(2)), torch.full((2,), 0.5)
    )
    assert counter.frame_count == 1
    with pytest.raises(AttributeError, match=r"Net has no attribute 'stpe'"):
        ds.mark_dynamic_attr(Net(), "stpe")  # without a custom __getattr__: refused
