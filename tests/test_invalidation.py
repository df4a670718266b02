"""A mark change invalidates only the graphs that read that mark.

Every compiled graph guards the marks it read by the entry it read them from (an
instance's marks dict entry; a class's or a function's entry of the mark table), never
by a global counter: marking one function, module, class or optimizer leaves every other
compiled graph valid, and the same mark made again changes nothing at all.

Each test runs compiled code beside an eager twin, compares every output (and the
attributes afterwards), and asserts the exact compile count of every compiled function.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from typing import Any

import pytest
import torch

import dynscalar as ds

from .helpers import CountingBackend

BACKENDS = ["eager", "aot_eager"]


class Counter(torch.nn.Module):
    """Reads an int and a float attribute, and increments the int in forward."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.step = 0
        self.scale = 0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.step += 1
        return self.lin(x) * self.step + self.scale


class Reader(torch.nn.Module):
    """Reads an int and a float attribute it never changes."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.k = 3
        self.s = 0.25

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * self.k + self.s


def unrelated(x: torch.Tensor, n: int, t: float) -> torch.Tensor:
    return x * n + t


def marked(x: torch.Tensor, t: float) -> torch.Tensor:
    return x * t


class Compiled:
    """A function or module compiled with its own counting backend, run beside its eager
    twin: every call compares outputs (and a module's attributes afterwards)."""

    def __init__(self, target: Callable[..., Any], backend: str) -> None:
        self.counter = CountingBackend(backend)
        self.target = target
        self.eager = copy.deepcopy(target) if isinstance(target, torch.nn.Module) else target
        self.compiled = torch.compile(target, backend=self.counter)

    def __call__(self, *args: Any) -> None:
        got, want = self.compiled(*args), self.eager(*args)
        torch.testing.assert_close(got, want, rtol=0, atol=0)
        if isinstance(self.target, torch.nn.Module):
            for name, value in vars(self.eager).items():
                if isinstance(value, (int, float)):
                    got_value = getattr(self.target, name)
                    assert type(got_value) is type(value) and got_value == value, name

    @property
    def graphs(self) -> int:
        return self.counter.frame_count


_made = itertools.count()


def _fresh_function(name: str = "scale") -> Any:
    """A function with a code object of its own (marks are keyed by code object, and
    equal code objects share them: a fresh docstring each time)."""
    namespace: dict[str, Any] = {}
    exec(f"def {name}(x, t):\n    {next(_made)!r}\n    return x * t\n", namespace)
    return namespace[name]


# ----------------------------------------------------------------------------- re-marks
REMARKS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "mark_dynamic_args(fn)": lambda o: ds.mark_dynamic_args(o["fn"], "t"),
    "@dynamic_args": lambda o: ds.dynamic_args("t")(o["fn"]),
    "unmark_dynamic_args(unmarked fn)": lambda o: ds.unmark_dynamic_args(o["other_fn"], "t"),
    "mark_dynamic_args(module)": lambda o: ds.mark_dynamic_args(o["module"], "x"),
    "mark_dynamic_attr": lambda o: ds.mark_dynamic_attr(o["module"], "step"),
    "unmark_dynamic_attr(unmarked)": lambda o: ds.unmark_dynamic_attr(o["other_module"], "k"),
    "@dynamic_attrs": lambda o: ds.dynamic_attrs("step")(o["cls"]),
    "mark_dynamic_param_groups": lambda o: ds.mark_dynamic_param_groups(o["optimizer"]),
    "unmark_dynamic_param_groups(unmarked)": lambda o: ds.unmark_dynamic_param_groups(
        o["optimizer"]
    ),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("remark", list(REMARKS))
def test_the_same_mark_again_recompiles_nothing(remark: str, backend: str) -> None:
    """Issue 29's example: a mark repeated between calls (here 12 times) used to recompile
    every compiled function and module that reads an int/float until recompile_limit;
    now unrelated code compiles once in total, exactly as stock torch.compile."""
    cls = type("Decorated", (Counter,), {})
    marks = {
        "fn": _fresh_function(),
        "other_fn": _fresh_function("other"),
        "module": Counter(),
        "other_module": Reader(),
        "cls": cls,
        "optimizer": torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1),
    }
    REMARKS[remark](marks)  # the first time: a mark like any other
    module, function = Compiled(Reader(), backend), Compiled(unrelated, backend)
    x = torch.randn(2, 3)
    for _ in range(12):
        REMARKS[remark](marks)
        module(x)
        function(x, 3, 0.5)
    assert (module.graphs, function.graphs) == (1, 1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_same_mark_again_keeps_the_marked_code_compiled(backend: str) -> None:
    fn = ds.mark_dynamic_args(_fresh_function(), "t")
    model = ds.mark_dynamic_attr(Counter(), "step", "scale")
    compiled_fn, compiled_model = Compiled(fn, backend), Compiled(model, backend)
    x = torch.randn(2, 3)
    for i in range(6):
        ds.mark_dynamic_args(fn, "t")
        ds.mark_dynamic_attr(model, "step", "scale")
        model.scale = compiled_model.eager.scale = 0.5 + i
        compiled_fn(x, 0.25 * i)
        compiled_model(x)
    assert (compiled_fn.graphs, compiled_model.graphs) == (1, 1)


# ----------------------------------------------------------------------------- functions
@pytest.mark.parametrize("backend", BACKENDS)
def test_marking_function_a_does_not_recompile_function_b(backend: str) -> None:
    a, b = _fresh_function("a"), _fresh_function("b")
    compiled_a, compiled_b = Compiled(a, backend), Compiled(b, backend)
    x = torch.randn(2, 3)
    compiled_a(x, 1.5)
    compiled_b(x, 2.5)
    ds.mark_dynamic_args(a, "t")
    for i in range(5):
        compiled_a(x, 0.5 * i)  # takes effect at the next call: one symbolic graph
        compiled_b(x, 2.5)
    assert (compiled_a.graphs, compiled_b.graphs) == (2, 1)
    ds.unmark_dynamic_args(a, "t")
    compiled_b(x, 2.5)
    assert compiled_b.graphs == 1


def _fresh_module_class(name: str, body: str, tag: str) -> Any:
    """An nn.Module class whose ``forward(self, x, n)`` returns ``body``, with a code object
    of its own (a class defined in a test shares its methods' code with every run of it,
    and equal code objects share marks: ``tag`` becomes the docstring)."""
    namespace: dict[str, Any] = {"torch": torch}
    source = (
        f"class {name}(torch.nn.Module):\n    def forward(self, x, n):\n"
        f"        {tag!r}\n        return {body}\n"
    )
    exec(source, namespace)
    return namespace[name]


@pytest.mark.parametrize("backend", BACKENDS)
def test_marking_one_forward_does_not_recompile_another_class(backend: str) -> None:
    first_cls = _fresh_module_class("First", "x * n", backend)
    second_cls = _fresh_module_class("Second", "x + n", backend)
    first, second = Compiled(first_cls(), backend), Compiled(second_cls(), backend)
    x = torch.randn(2, 3)
    first(x, 2)
    second(x, 2)
    ds.dynamic_args("n")(first_cls.forward)
    for n in (3, 4, 5):
        first(x, n)
        second(x, 2)
    assert (first.graphs, second.graphs) == (2, 1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_unmark_and_remark_with_another_spec_take_effect_at_the_next_call(backend: str) -> None:
    fn = ds.mark_dynamic_args(_fresh_function(), "t")
    compiled = Compiled(fn, backend)
    x = torch.randn(2, 3)
    for t in (1, 2, 3):
        compiled(x, t)
    assert compiled.graphs == 1
    ds.unmark_dynamic_args(fn, "t")
    compiled(x, 4)  # a static graph, as stock torch compiles a plain int it has seen change
    assert compiled.graphs == 2
    ds.mark_dynamic_args(fn, "t", min=0, max=10)
    for t in (5, 6):
        compiled(x, t)
    assert compiled.graphs == 3
    with pytest.raises(ds.OutOfRangeError, match="outside"):
        compiled.compiled(x, 11)
    ds.mark_dynamic_args(fn, "t")  # the first spec again: its graph still fits
    compiled(x, 12)
    assert compiled.graphs == 3


# ----------------------------------------------------------------------------- classes
@pytest.mark.parametrize("backend", BACKENDS)
def test_decorating_class_a_takes_effect_for_a_and_subclasses_only(backend: str) -> None:
    class A(Counter):
        pass

    class ASub(A):
        pass

    class B(Reader):
        pass

    a, sub, b = (Compiled(cls(), backend) for cls in (A, ASub, B))
    x = torch.randn(2, 3)
    for model in (a, sub, b):
        model(x)  # step 1: one static graph each
    ds.dynamic_attrs("step")(A)
    for _ in range(4):
        for model in (a, sub, b):
            model(x)
    # A and its subclass: one symbolic graph more, then every step reuses it; B: untouched
    assert (a.graphs, sub.graphs, b.graphs) == (2, 2, 1)
    assert a.target.step == sub.target.step == 5


@pytest.mark.parametrize("backend", BACKENDS)
def test_decorating_class_a_does_not_recompile_class_b(backend: str) -> None:
    class A(Reader):
        pass

    reader = Compiled(Reader(), backend)
    x = torch.randn(2, 3)
    for _ in range(3):
        ds.dynamic_attrs("k")(A)
        ds.dynamic_attrs("k", min=0, max=10)(A)
        reader(x)
    assert reader.graphs == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_class_mark_changed_later_takes_effect_at_the_next_call(backend: str) -> None:
    @ds.dynamic_attrs("step")
    class Marked(Counter):
        pass

    model = Compiled(Marked(), backend)
    x = torch.randn(2, 3)
    for _ in range(3):
        model(x)
    assert model.graphs == 1
    ds.dynamic_attrs("step", min=0, max=5)(Marked)  # another spec: one new graph
    model(x)
    model(x)
    assert model.graphs == 2
    model.target.step = 9
    with pytest.raises(ds.OutOfRangeError, match="outside"):
        model.compiled(x)  # the range is enforced
    ds.unmark_dynamic_attr(model.target, "step")  # the instance opts out: stock again
    model.target.step = model.eager.step = 10
    model(x)
    model(x)
    assert model.graphs == 4  # one static graph per value


def test_a_class_mark_recompiles_only_graphs_that_read_it() -> None:
    """Along the MRO each class is guarded by its table entry: once a class holds marks,
    a mark of another name on it leaves graphs reading other names alone.  (A class that
    holds no marks is guarded as a whole: its first mark recompiles its instances' and its
    subclasses' instances' graphs once.)"""

    @ds.dynamic_attrs("unused")
    class Base(Counter):
        pass

    @ds.dynamic_attrs("step", min=0)
    class Child(Base):
        pass

    base, child = Compiled(Base(), "eager"), Compiled(Child(), "eager")
    x = torch.randn(2, 3)
    for _ in range(3):
        base(x)
        child(x)
    assert (base.graphs, child.graphs) == (3, 1)
    ds.dynamic_attrs("step", max=100)(Base)  # Child's own mark of step decides for Child
    for _ in range(3):
        base(x)
        child(x)
    assert (base.graphs, child.graphs) == (4, 1)  # Base: 3 static graphs, then a symbolic one


# ----------------------------------------------------------------------------- optimizers
def _sgd_step(model: torch.nn.Module, lr: float) -> tuple[torch.optim.Optimizer, Compiled]:
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    return optimizer, Compiled(optimizer.step, "eager")


def test_marking_optimizer_a_does_not_recompile_optimizer_b() -> None:
    torch.manual_seed(0)
    models = [torch.nn.Linear(3, 1) for _ in range(2)]
    twins = [copy.deepcopy(m) for m in models]
    (opt_a, step_a), (opt_b, step_b) = (_sgd_step(m, 0.1) for m in models)
    eager_a, eager_b = (torch.optim.SGD(m.parameters(), lr=0.1) for m in twins)
    x = torch.randn(4, 3)

    def train(lr_a: float) -> None:
        for group in (opt_a.param_groups[0], eager_a.param_groups[0]):
            group["lr"] = lr_a
        for model, optimizer in zip(models + twins, (opt_a, opt_b, eager_a, eager_b), strict=True):
            optimizer.zero_grad()
            model(x).pow(2).sum().backward()
        step_a.compiled()
        step_b.compiled()
        eager_a.step()
        eager_b.step()
        for got, want in zip(models, twins, strict=True):
            for p, q in zip(got.parameters(), want.parameters(), strict=True):
                torch.testing.assert_close(p, q, rtol=0, atol=0)

    train(0.1)
    ds.mark_dynamic_param_groups(opt_a)
    for i in range(4):
        train(0.1 / (i + 1))  # A's learning rate is scheduled: one symbolic graph for all
        ds.mark_dynamic_param_groups(opt_a)
    assert (step_a.graphs, step_b.graphs) == (2, 1)
