"""Marks on properties: a mark on a property follows its getter to the values it
reads, or is refused at mark time.  Lightning's ``LightningModule.global_step`` and
``current_epoch`` are properties over counters on plain objects; these are Lightning-free
models of them (tests/test_real_libraries.py runs Lightning itself).

A mark never runs user code eager would not run: marking and ``explain`` never call a
getter, and a property mark never compiles more graphs than stock torch.compile.

Every compile test runs an eager twin on the same inputs, compares outputs and the
attributes the properties read, and asserts the exact compile count.
"""

from __future__ import annotations

import copy
import functools
import operator
import warnings
from typing import Any

import pytest
import torch

import dynscalar as ds
from dynscalar._explain import COMPUTED

from .helpers import TENSORIFY_RESTARTS_INSTEAD_OF_BAKING, CountingBackend, twins

STEPS = 6


# ----------------------------------------------------------------------------- models
class Progress:
    """A plain counter object, like Lightning's progress trackers."""

    def __init__(self) -> None:
        self.completed = 0


class Loop:
    """Properties over properties, like Trainer.global_step -> fit_loop -> ... .completed."""

    def __init__(self) -> None:
        self.progress = Progress()
        self.running = True  # a bool the getter reads: never marked by the property

    @property
    def global_step(self) -> int:
        return self.progress.completed if self.running else 0


class Lit(torch.nn.Module):
    """The minimal form: a read-only property over a plain object's counter."""

    def __init__(self) -> None:
        super().__init__()
        self.progress = Progress()
        self.lin = torch.nn.Linear(4, 4)

    @property
    def global_step(self) -> int:
        return self.progress.completed

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        warmup = torch.clamp(torch.full((), (self.global_step + 1) / 20), max=1.0)
        return self.lin(x) * warmup


class Scaled(Lit):
    """The same property, its value used as a tensor operand (int or float alike)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * (self.global_step + 1)


class Nested(torch.nn.Module):
    """A property reading another object's property (Lightning's chain), and a bool."""

    def __init__(self) -> None:
        super().__init__()
        self.loop = Loop()
        self.lin = torch.nn.Linear(4, 4)

    @property
    def global_step(self) -> int:
        return self.loop.global_step if self.loop is not None else 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * min(1.0, (self.global_step + 1) / 20)


class OverModuleAttr(torch.nn.Module):
    """A property over the module's own (private) attribute, computed from it."""

    def __init__(self) -> None:
        super().__init__()
        self._epoch = 0
        self.lin = torch.nn.Linear(4, 4)

    @property
    def current_epoch(self) -> int:
        return self._epoch * 2 + 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) + self.current_epoch


class WithSetter(torch.nn.Module):
    """A property with a setter, incremented in the compiled forward."""

    def __init__(self) -> None:
        super().__init__()
        self.progress = Progress()

    @property
    def step(self) -> int:
        return self.progress.completed

    @step.setter
    def step(self, value: int) -> None:
        self.progress.completed = value

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.step += 1
        return x * self.step


class Cached(torch.nn.Module):
    """functools.cached_property: the value lives in the instance dict once computed."""

    def __init__(self) -> None:
        super().__init__()
        self.base = 3

    @functools.cached_property
    def scale(self) -> float:
        return self.base * 0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale


def compiled_twin(model: torch.nn.Module, backend: str = "aot_eager") -> tuple[Any, Any, Any]:
    counter = CountingBackend(backend)
    model, eager = twins(model)
    return torch.compile(model, backend=counter), eager, counter


def set_completed(model: Lit, eager: Lit, value: Any) -> None:
    model.progress.completed = value
    eager.progress.completed = value


# ----------------------------------------------------------------------------- getters
@pytest.mark.parametrize(("mark", "graphs"), [(False, STEPS), (True, 1)])
def test_read_only_property_over_a_plain_object(mark: bool, graphs: int) -> None:
    """Stock compiles once per step, the marked property once."""
    model = Lit()
    if mark:
        ds.mark_dynamic_attr(model, "global_step")
    compiled, eager, counter = compiled_twin(model)
    x = torch.randn(2, 4)
    for step in range(STEPS):
        set_completed(model, eager, step)
        torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
        assert model.progress.completed == eager.progress.completed == step
    assert counter.frame_count == graphs


@pytest.mark.inductor
def test_read_only_property_inductor() -> None:
    model = ds.mark_dynamic_attr(Lit(), "global_step")
    compiled, eager, counter = compiled_twin(model, "inductor")
    x = torch.randn(2, 4)
    for step in range(4):
        set_completed(model, eager, step)
        torch.testing.assert_close(compiled(x), eager(x))
    assert counter.frame_count == 1


@pytest.mark.parametrize(("mark", "graphs"), [(False, STEPS), (True, 1)])
def test_property_over_properties_of_plain_objects(mark: bool, graphs: int) -> None:
    """Lightning's chain: the module's property reads another object's property."""
    model = Nested()
    if mark:
        ds.mark_dynamic_attr(model, "global_step")
    compiled, eager, counter = compiled_twin(model)
    x = torch.randn(2, 4)
    for step in range(STEPS):
        model.loop.progress.completed = eager.loop.progress.completed = step * 3
        torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
    assert counter.frame_count == graphs
    assert type(model.loop.running) is bool


@pytest.mark.parametrize(("mark", "graphs"), [(False, STEPS), (True, 1)])
def test_property_over_a_module_attribute(mark: bool, graphs: int) -> None:
    model = OverModuleAttr()
    if mark:
        ds.mark_dynamic_attr(model, "current_epoch")
    compiled, eager, counter = compiled_twin(model)
    x = torch.randn(2, 4)
    for epoch in range(STEPS):
        model._epoch = eager._epoch = epoch
        torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
    assert counter.frame_count == graphs


@pytest.mark.parametrize(("mark", "graphs"), [(False, STEPS), (True, 1)])
def test_property_with_a_setter_writes_back_like_eager(mark: bool, graphs: int) -> None:
    model = WithSetter()
    if mark:
        ds.mark_dynamic_attr(model, "step")
    compiled, eager, counter = compiled_twin(model)
    x = torch.randn(3)
    for start in range(STEPS):
        model.progress.completed = eager.progress.completed = start * 10
        torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
        assert model.progress.completed == eager.progress.completed == start * 10 + 1
        assert type(model.progress.completed) is int
    assert counter.frame_count == graphs


def test_class_mark_on_a_property() -> None:
    @ds.dynamic_attrs("global_step")
    class Marked(Lit):
        pass

    compiled, eager, counter = compiled_twin(Marked())
    x = torch.randn(2, 4)
    for step in range(STEPS):
        set_completed(compiled._orig_mod, eager, step)
        torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
    assert counter.frame_count == 1


# stock: a float attribute of a module recompiles once, then torch's automatic dynamic
# makes it a graph input
@pytest.mark.parametrize(("mark", "graphs"), [(False, 2), (True, 1)])
def test_cached_property(mark: bool, graphs: int) -> None:
    """Marking does not compute the value; once computed (here by an eager call) it is read
    from the instance dict."""
    model = Cached()
    if mark:
        ds.mark_dynamic_attr(model, "scale")
    assert "scale" not in model.__dict__  # marking ran no getter
    compiled, eager, counter = compiled_twin(model)
    x = torch.randn(3)
    torch.testing.assert_close(model(x), eager(x), rtol=0, atol=0)  # computes and caches it
    assert model.__dict__["scale"] == eager.__dict__["scale"] == 1.5
    for i in range(STEPS):
        model.__dict__["scale"] = eager.__dict__["scale"] = 0.5 + i
        torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
    assert counter.frame_count == graphs


def test_a_cached_property_computed_by_compiled_code_compiles_as_stock() -> None:
    """Not computed before the first compiled call: torch.compile meets the getter itself
    (on Python 3.11 it cannot trace ``cached_property``'s lock and runs the call eagerly),
    with or without the mark; the getter runs once, as in eager."""
    counts = []
    for mark in (False, True):
        torch._dynamo.reset()
        model = Cached()
        if mark:
            ds.mark_dynamic_attr(model, "scale")
        compiled, eager, counter = compiled_twin(model)
        x = torch.randn(3)
        for _ in range(3):
            torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
        assert model.__dict__["scale"] == eager.__dict__["scale"] == 1.5
        counts.append(counter.frame_count)
    assert counts[1] == counts[0]


class _Total:
    def __init__(self) -> None:
        self.completed = 0


class _Tracker:
    def __init__(self) -> None:
        self.total = _Total()


class _OptimizerLoop:
    def __init__(self) -> None:
        self.step = _Tracker()

    @property
    def optimizer_steps(self) -> int:
        return self.step.total.completed


class _EpochLoop:
    def __init__(self, trainer: _Trainer) -> None:
        self.trainer = trainer
        self.optimizer = _OptimizerLoop()

    @property
    def global_step(self) -> int:
        module = self.trainer.lightning_module
        if module is None or module.automatic_optimization:
            return self.optimizer.optimizer_steps
        return 0


class _FitLoop:
    def __init__(self, trainer: _Trainer) -> None:
        self.epoch_loop = _EpochLoop(trainer)
        self.epoch_progress = _Tracker()


class _Trainer:
    """Lightning's shape without Lightning: Trainer -> fit_loop -> ... -> completed."""

    def __init__(self) -> None:
        self.fit_loop = _FitLoop(self)
        self.lightning_module: LightningShaped | None = None

    @property
    def global_step(self) -> int:
        return self.fit_loop.epoch_loop.global_step

    @property
    def current_epoch(self) -> int:
        return self.fit_loop.epoch_progress.total.completed


class LightningShaped(torch.nn.Module):
    """LightningModule.global_step/current_epoch: properties reading the trainer's loops."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 1)
        self._trainer: _Trainer | None = None
        self.automatic_optimization = True

    @property
    def global_step(self) -> int:
        return self._trainer.global_step if self._trainer else 0

    @property
    def current_epoch(self) -> int:
        return self._trainer.current_epoch if self._trainer else 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        warm = min(1.0, (self.global_step + 1) / 4) * 0.5**self.current_epoch
        return self.lin(x) * warm


# stock: one graph per step until recompile_limit (8), then eager for the 9th step
@pytest.mark.parametrize(("mark", "graphs"), [(False, 8), (True, 1)])
def test_lightning_shaped_trainer_counters(mark: bool, graphs: int) -> None:
    """The Lightning case without Lightning: 3 epochs of 3 steps (9 distinct step values)."""
    model = LightningShaped()
    if mark:
        ds.mark_dynamic_attr(model, "global_step", "current_epoch")
    compiled, eager, counter = compiled_twin(model)
    for twin in (model, eager):
        twin._trainer = _Trainer()
        twin._trainer.lightning_module = twin
    x = torch.randn(2, 4)
    for epoch in range(3):
        for _ in range(3):
            torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
            for twin in (model, eager):
                assert twin._trainer is not None
                twin._trainer.fit_loop.epoch_loop.optimizer.step.total.completed += 1
        for twin in (model, eager):
            assert twin._trainer is not None
            twin._trainer.fit_loop.epoch_progress.total.completed = epoch + 1
    assert counter.frame_count == graphs
    assert model.global_step == eager.global_step == 9


# ----------------------------------------------------------------------------- guards
def test_guards_hold_for_other_types_instances_unmarking_and_unmarked_instances() -> None:
    """Every value a user can put behind the property gets eager's numbers."""
    model = ds.mark_dynamic_attr(Scaled(), "global_step")
    compiled, eager, counter = compiled_twin(model)
    x = torch.randn(2, 4)

    def check(value: Any) -> None:
        set_completed(model, eager, value)
        torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)

    check(3)
    check(4)
    assert counter.frame_count == 1
    check(2.5)  # a float behind an int graph: the type guard recompiles (float graph)
    check(7.25)
    assert counter.frame_count == 2
    check(5)  # back to the int graph
    assert counter.frame_count == 2
    model.progress = Progress()  # another object behind the property: same graph
    eager.progress = Progress()
    check(9)
    assert counter.frame_count == 2

    ds.unmark_dynamic_attr(model, "global_step")  # unmarked: stock behaviour again
    check(9)
    check(10)
    assert counter.frame_count == 4
    ds.mark_dynamic_attr(model, "global_step")  # marked again: the first graph fits
    check(11)
    assert counter.frame_count == 4

    # an unmarked instance of the same class never reuses the dynamic graph
    plain = Scaled()
    plain.load_state_dict(model.state_dict())
    compiled_plain = torch.compile(plain, backend=counter)
    for value in (20, 21):
        plain.progress.completed = eager.progress.completed = value
        torch.testing.assert_close(compiled_plain(x), eager(x), rtol=0, atol=0)
    assert counter.frame_count == 6


def test_marking_after_a_compile_takes_effect_at_the_next_call() -> None:
    model = Lit()
    compiled, eager, counter = compiled_twin(model)
    x = torch.randn(2, 4)
    set_completed(model, eager, 0)
    torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
    ds.mark_dynamic_attr(model, "global_step")
    for step in (1, 2, 3):
        set_completed(model, eager, step)
        torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
    assert counter.frame_count == 2


def test_a_str_behind_a_marked_property_raises_the_programs_own_error() -> None:
    """The getter returns a str: eager code raises its own error with it, and so does the
    compiled code (before: ``DynscalarTypeError``, the long fuzzer profile's programs 944,
    1703 and 3618); the mark says once that it has no effect."""
    model = ds.mark_dynamic_attr(Lit(), "global_step")
    compiled = torch.compile(model, backend="eager")
    model.progress.completed = "3"  # type: ignore[assignment]
    x = torch.randn(2, 4)
    with pytest.raises(Exception) as eager_error:  # whatever eager raises
        model(x)
    warns = pytest.warns(ds.SpecializationWarning, match=r"Lit.global_step \(a property\) is")
    with warns, pytest.raises(Exception) as compiled_error:
        compiled(x)
    assert type(compiled_error.value) is type(eager_error.value)  # TypeError: str + int


def test_unmarked_properties_change_nothing() -> None:
    """No marks: a property's value is compiled exactly as stock torch compiles it."""
    model = Nested()
    compiled, eager, counter = compiled_twin(model)
    x = torch.randn(2, 4)
    for step in (0, 1, 1, 2):
        model.loop.progress.completed = eager.loop.progress.completed = step
        torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
    assert counter.frame_count == 3


# ----------------------------------------------------------------------------- mark time
class Constant(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.items = [1, 2]

    @property
    def count(self) -> int:
        return len(self.items)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.count


def test_a_marked_property_that_stays_constant_warns() -> None:
    model = ds.mark_dynamic_attr(Constant(), "count")
    compiled, eager, counter = compiled_twin(model)
    x = torch.randn(3)
    with pytest.warns(
        ds.SpecializationWarning,
        match=r"Constant.count is marked dynamic.*without reading.*len\(\)",
    ):
        torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
    assert counter.frame_count == 1


def test_a_strict_marked_property_that_stays_constant_raises() -> None:
    model = ds.mark_dynamic_attr(Constant(), "count", strict=True)
    compiled = torch.compile(model, backend="eager")
    with pytest.raises(ds.SpecializationError, match=r"Constant.count.*strict=True"):
        compiled(torch.randn(3))


class Descriptor:
    """A data descriptor whose value lives in the descriptor, not in the instance."""

    def __get__(self, obj: object, owner: type | None = None) -> int:
        return 3

    def __set__(self, obj: object, value: int) -> None:
        pass


class NonDataDescriptor:
    def __get__(self, obj: object, owner: type | None = None) -> int:
        return 4


class Odd(torch.nn.Module):
    custom = Descriptor()
    computed = NonDataDescriptor()
    write_only = property(None, lambda self, value: None)
    c_getter = property(operator.attrgetter("hidden"))

    def __init__(self) -> None:
        super().__init__()
        self.hidden = 5


@pytest.mark.parametrize(
    ("name", "match"),
    [
        ("custom", r"Odd.custom is a .*Descriptor descriptor.*Mark the plain int/float"),
        ("computed", r"Odd.computed is a .*NonDataDescriptor descriptor"),
        ("write_only", r"Odd.write_only is a property without a getter"),
        ("c_getter", r"Odd.c_getter is a property whose getter .* is not Python code"),
    ],
)
def test_descriptors_that_cannot_be_followed_are_refused_at_mark_time(
    name: str, match: str
) -> None:
    model = Odd()
    with pytest.raises(ds.UnsupportedDescriptorError, match=match):
        ds.mark_dynamic_attr(model, name)
    assert not ds.is_dynamic_attr(model, name)
    with pytest.raises(ds.UnsupportedDescriptorError, match=match):
        ds.dynamic_attrs(name)(type("Odd", (Odd,), {}))


def test_instance_value_shadowing_a_non_data_descriptor_is_a_plain_attribute() -> None:
    model = Odd()
    model.__dict__["computed"] = 6
    ds.mark_dynamic_attr(model, "computed")
    assert ds.is_dynamic_attr(model, "computed")


def test_a_bool_behind_a_marked_property_compiles_as_stock() -> None:
    """``x * self.enabled`` with a getter returning True works in eager: compiled too (one
    warning that the mark has no effect; before: ``DynscalarTypeError``)."""

    class Flag(torch.nn.Module):
        @property
        def enabled(self) -> bool:
            return True

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * self.enabled

    model = ds.mark_dynamic_attr(Flag(), "enabled")  # the getter is not run here
    counter = CountingBackend("eager")
    compiled = torch.compile(model, backend=counter)
    with pytest.warns(ds.SpecializationWarning, match=r"returned a bool \(True\)"):
        assert torch.equal(compiled(torch.ones(2)), model(torch.ones(2)))  # as eager
    assert torch.equal(compiled(torch.ones(2)), model(torch.ones(2)))
    assert counter.frame_count == 1


def test_property_marks_survive_deepcopy() -> None:
    model = ds.mark_dynamic_attr(Lit(), "global_step")
    clone = copy.deepcopy(model)
    assert ds.is_dynamic_attr(clone, "global_step")


# ----------------------------------------------------------------------------- explain
def test_explain_shows_what_a_property_mark_resolves_to() -> None:
    model = ds.mark_dynamic_attr(Nested(), "global_step")
    before = ds.explain(model, show=False)
    assert [(r.attribute, r.how, r.value) for r in before] == [
        ("global_step", "mark_dynamic_attr", COMPUTED)
    ]
    assert "<computed by its getter>" in str(before)
    assert "property" in before[0].reads and "first compile" in before[0].reads
    compiled = torch.compile(model, backend="eager")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled(torch.randn(2, 4))
    after = ds.explain(model, show=False)
    assert after[0].reads == "property -> self.loop.progress.completed"
    assert "self.loop.progress.completed" in str(after)


def test_another_marked_instance_reuses_the_graph_with_its_own_values() -> None:
    first = ds.mark_dynamic_attr(Scaled(), "global_step")
    second = ds.mark_dynamic_attr(Scaled(), "global_step")
    second.load_state_dict(first.state_dict())
    eager = copy.deepcopy(first)
    counter = CountingBackend("aot_eager")
    x = torch.randn(2, 4)
    for model, value in ((first, 3), (second, 8), (first, 5), (second, 13)):
        model.progress.completed = eager.progress.completed = value
        torch.testing.assert_close(torch.compile(model, backend=counter)(x), eager(x))
    assert counter.frame_count == 1


class ProxyBehindSetter(torch.nn.Module):
    """A property over a DynamicInt attribute, incremented through its setter."""

    def __init__(self) -> None:
        super().__init__()
        self._step = ds.DynamicInt(0)

    @property
    def step(self) -> int:
        return self._step

    @step.setter
    def step(self, value: int) -> None:
        self._step = value

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.step += 1
        return x * self.step


@pytest.mark.parametrize("mark", [False, True])
def test_a_proxy_behind_a_property_setter_stays_a_proxy(mark: bool) -> None:
    """Eager stores DynamicInt(n) + 1, a DynamicInt; so does the compiled write-back."""
    model = ProxyBehindSetter()
    eager = copy.deepcopy(model)
    if mark:
        ds.mark_dynamic_attr(model, "step")
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(model, backend=counter)
    x = torch.randn(3)
    for _ in range(STEPS):
        torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
        assert type(model._step) is type(eager._step) is ds.DynamicInt
        assert model._step == eager._step
    assert counter.frame_count == 1


class Untraceable(Lit):
    """A getter Dynamo cannot trace (a graph break inside it)."""

    @property
    def global_step(self) -> int:
        torch._dynamo.graph_break()
        return self.progress.completed

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * (self.global_step + 1)


def test_a_marked_property_whose_getter_cannot_be_traced_warns() -> None:
    """Stock torch runs the function eagerly there (no graph); the mark says it did nothing."""
    model = ds.mark_dynamic_attr(Untraceable(), "global_step")
    compiled, eager, counter = compiled_twin(model)
    x = torch.randn(2, 4)
    with pytest.warns(ds.SpecializationWarning, match=r"cannot trace its getter"):
        torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
    for step in (1, 2):
        set_completed(model, eager, step)
        torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
    stock, stock_eager, stock_counter = compiled_twin(Untraceable())
    for step in (0, 1, 2):
        set_completed(stock._orig_mod, stock_eager, step)
        torch.testing.assert_close(stock(x), stock_eager(x), rtol=0, atol=0)
    # torch 2.13: a graph break inside an inlined getter makes the whole forward run eagerly
    assert counter.frame_count == stock_counter.frame_count == 0


def test_numpy_scalars_and_proxies_behind_a_marked_property() -> None:
    """A numpy scalar is compiled as torch compiles it (warned); a proxy's own class and
    spec are guarded: each gets eager's numbers."""
    np = pytest.importorskip("numpy")
    model = ds.mark_dynamic_attr(Scaled(), "global_step")
    compiled, eager, counter = compiled_twin(model)
    x = torch.randn(2, 4)
    set_completed(model, eager, 2)
    torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
    set_completed(model, eager, np.int64(3))
    with pytest.warns(ds.SpecializationWarning, match=r"Scaled.global_step \(a property\).*numpy"):
        torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
    for value in (ds.DynamicInt(4), ds.DynamicInt(5), 6):
        set_completed(model, eager, value)
        torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
    assert counter.frame_count == 3  # int, numpy int64, DynamicInt


class _State:
    def __init__(self) -> None:
        self.value = 1.0


class FloatSetter(torch.nn.Module):
    """A float property with a setter, decayed in the compiled forward (the float-written-
    in-forward case: stock aot_eager recompiles per value, inductor can bake it in)."""

    def __init__(self) -> None:
        super().__init__()
        self.state = _State()

    @property
    def scale(self) -> float:
        return self.state.value

    @scale.setter
    def scale(self, value: float) -> None:
        self.state.value = value

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.scale = self.scale * 0.9
        return x * self.scale


@pytest.mark.parametrize(
    ("backend", "mark", "graphs"),
    [
        # stock: one graph per value (5 calls) on torch 2.13; 6 measured on 2.15.0
        # (scripts/compat.sh), whose float-tensorify pass restarts where 2.13 baked
        ("aot_eager", False, 6 if TENSORIFY_RESTARTS_INSTEAD_OF_BAKING else 5),
        ("aot_eager", True, 1),
        pytest.param("inductor", True, 1, marks=pytest.mark.inductor),
    ],
)
def test_float_property_setter_decays_like_eager(backend: str, mark: bool, graphs: int) -> None:
    model = FloatSetter()
    if mark:
        ds.mark_dynamic_attr(model, "scale")
    compiled, eager, counter = compiled_twin(model, backend)
    x = torch.randn(3)
    for _ in range(5):
        torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
        assert model.state.value == eager.state.value
        assert type(model.state.value) is float
    assert counter.frame_count == graphs


class ReadsFirst(Lit):
    """Reads the counter directly before reading it through the marked property."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * (self.progress.completed + 1)
        return y + self.global_step


def test_a_marked_property_read_after_its_attribute_was_made_constant_warns() -> None:
    model = ds.mark_dynamic_attr(ReadsFirst(), "global_step")
    compiled, eager, counter = compiled_twin(model)
    x = torch.randn(2, 4)
    with pytest.warns(ds.SpecializationWarning, match=r"already read as a constant earlier"):
        torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
    for step in (1, 2):
        set_completed(model, eager, step)
        torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
    assert counter.frame_count == 3  # as stock: one per value


# ----------------------------------------------------------------------------- user code
class CountsReads(Lit):
    """A getter with a side effect: it counts how often it runs."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    @property
    def global_step(self) -> int:
        self.reads += 1
        return self.progress.completed

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * (self.global_step + 1)


# stock: the counter changes on every call, one graph per call
@pytest.mark.parametrize(("mark", "graphs"), [(False, STEPS), (True, 1)])
def test_a_getter_with_a_side_effect_runs_as_often_as_in_eager(mark: bool, graphs: int) -> None:
    """Marking and ``explain`` never run the getter: the counter equals eager's."""
    model = CountsReads()
    if mark:
        ds.mark_dynamic_attr(model, "global_step")
        records = ds.explain(model, show=False)
        assert [(r.attribute, r.value) for r in records] == [("global_step", COMPUTED)]
    assert model.reads == 0
    compiled, eager, counter = compiled_twin(model)
    x = torch.randn(2, 4)
    for step in range(STEPS):
        set_completed(model, eager, step)
        torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
        assert model.reads == eager.reads == step + 1
        assert type(model.reads) is int
    ds.explain(model, show=False)
    assert model.reads == eager.reads == STEPS
    assert counter.frame_count == graphs


class NotAttached(torch.nn.Module):
    """Lightning's ``LightningModule.trainer``: a property that raises until ``Trainer.fit``
    attaches a trainer, and a warm-up computed from it, marked in ``__init__``."""

    def __init__(self, mark: bool) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 1)
        self._trainer: _Trainer | None = None
        self.automatic_optimization = True
        if mark:
            ds.mark_dynamic_attr(self, "warmup")  # no trainer yet: the getter would raise

    @property
    def trainer(self) -> _Trainer:
        if self._trainer is None:
            raise RuntimeError(f"{type(self).__qualname__} is not attached to a `Trainer`.")
        return self._trainer

    @property
    def warmup(self) -> float:
        return min(1, self.trainer.global_step / 100)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * self.warmup


# stock: one graph per step
@pytest.mark.parametrize(("mark", "graphs"), [(False, STEPS), (True, 1)])
def test_a_property_whose_getter_cannot_run_yet_can_be_marked(mark: bool, graphs: int) -> None:
    torch.manual_seed(0)
    model = NotAttached(mark)
    eager = NotAttached(mark=False)
    eager.load_state_dict(model.state_dict())
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(model, backend=counter)
    x = torch.randn(2, 4)
    with pytest.raises(RuntimeError, match="not attached to a `Trainer`"):
        eager(x)
    assert ds.is_dynamic_attr(model, "warmup") is mark
    for twin in (model, eager):  # Trainer.fit attaches one
        twin._trainer = _Trainer()
        twin._trainer.lightning_module = twin  # type: ignore[assignment]
    for _ in range(STEPS):
        torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
        for twin in (model, eager):
            assert twin._trainer is not None
            twin._trainer.fit_loop.epoch_loop.optimizer.step.total.completed += 1
    assert model.trainer.global_step == eager.trainer.global_step == STEPS
    assert counter.frame_count == graphs


def test_a_raising_getter_raises_in_compiled_code_as_in_eager() -> None:
    model = NotAttached(mark=True)
    compiled = torch.compile(model, backend="eager")
    with pytest.raises(RuntimeError, match="not attached to a `Trainer`"):
        compiled(torch.randn(2, 4))


class Schedule:
    """A plain object with a schedule and the index into it (a scheduler, a trainer)."""

    def __init__(self, values: list[Any]) -> None:
        self.values = values
        self.index = 0


class Indexed(torch.nn.Module):
    """A marked property whose getter indexes a list; the index changes outside forward."""

    def __init__(self, values: list[Any], where: str) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.where = where
        self.schedule = Schedule(list(values))
        self.values = list(values)
        self.index = 0

    @property
    def rate(self) -> Any:
        if self.where == "module":
            return self.values[self.index]
        return self.schedule.values[self.schedule.index]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * self.rate

    def move(self, index: int) -> None:
        self.index = self.schedule.index = index


INDEXED = [
    ("module", [0.1 * k for k in range(12)]),
    ("object", [0.1 * k for k in range(12)]),
    ("module", list(range(0, 24, 2))),
    ("object", list(range(0, 24, 2))),
]


def _indexed_graphs(
    mark: bool, where: str, values: list[Any], steps: int, edit: bool = False
) -> tuple[int, list[str]]:
    """Graphs for ``steps`` calls, the index moving (or, with ``edit``, the value at a fixed
    index changing), each call compared with eager; and the dynscalar warnings."""
    torch._dynamo.reset()
    model = Indexed(values, where)
    if mark:
        ds.mark_dynamic_attr(model, "rate")
    compiled, eager, counter = compiled_twin(model)
    x = torch.randn(2, 4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(steps):
            for twin in (model, eager):
                if edit:
                    twin.values[0] = twin.schedule.values[0] = values[step]
                else:
                    twin.move(step)
            torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
            assert model.index == eager.index and model.schedule.index == eager.schedule.index
    warned = [str(w.message) for w in caught if issubclass(w.category, ds.DynscalarWarning)]
    return counter.frame_count, warned


@pytest.mark.parametrize(("where", "values"), INDEXED)
@pytest.mark.parametrize("steps", [5, 12])
@pytest.mark.broad
def test_a_getter_indexing_a_list_never_compiles_more_than_stock(
    where: str, values: list[Any], steps: int
) -> None:
    """``return self.schedule[self.index]``: the index is forced by the getter's own code
    (a list index), so it is compiled as stock compiles it; the element stays symbolic.  A
    float schedule compiled 2 graphs per index (15 where stock compiles 8 up to
    recompile_limit) before the index fell back to stock."""
    stock, _ = _indexed_graphs(False, where, values, steps)
    marked, warned = _indexed_graphs(True, where, values, steps)
    assert stock == min(steps, 8)  # one per index, until recompile_limit
    assert marked == stock
    assert warned == []  # nothing the user marked was forced


@pytest.mark.parametrize(("where", "values"), INDEXED)
def test_a_marked_getter_keeps_list_values_symbolic(where: str, values: list[Any]) -> None:
    """The element the getter returns is what the mark makes dynamic: new values at the
    same index compile once.  Stock: an int element once per value; a float element once,
    then once more when torch's automatic dynamic sees it change."""
    stock, _ = _indexed_graphs(False, where, values, 5, edit=True)
    marked, warned = _indexed_graphs(True, where, values, 5, edit=True)
    assert (stock, marked, warned) == (2 if isinstance(values[0], float) else 5, 1, [])


class ReadsFirstInASum(Lit):
    """Reads the counter as a constant, then a marked property sums it with another value."""

    def __init__(self) -> None:
        super().__init__()
        self.offset = 1

    @property
    def global_step(self) -> int:
        return self.progress.completed + self.offset

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * (self.progress.completed + 1)
        return self.lin(y) * self.global_step


def test_a_mark_a_constant_read_defeats_warns_even_when_the_result_is_symbolic() -> None:
    """The getter's result is symbolic (``offset`` follows the mark), but the counter it
    adds was already a constant: one warning naming it; compiles as stock."""
    model = ds.mark_dynamic_attr(ReadsFirstInASum(), "global_step")
    compiled, eager, counter = compiled_twin(model)
    x = torch.randn(2, 4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(4):
            set_completed(model, eager, step)
            torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
    warned = [str(w.message) for w in caught if issubclass(w.category, ds.DynscalarWarning)]
    assert len(warned) == 1, warned
    assert "ReadsFirstInASum.global_step is marked dynamic, but its getter reads " in warned[0]
    assert "self.progress.completed (0), which the compiled code already read" in warned[0]
    assert counter.frame_count == 4  # as stock: one per counter value


def test_a_strict_mark_a_constant_read_defeats_raises() -> None:
    model = ds.mark_dynamic_attr(ReadsFirstInASum(), "global_step", strict=True)
    compiled = torch.compile(model, backend="eager")
    with pytest.raises(ds.SpecializationError, match=r"already read as a constant.*strict=True"):
        compiled(torch.randn(2, 4))
