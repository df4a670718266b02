"""Compiled never differs from eager: guards, write-back, marks changed later.

Each test runs a compiled model and an eager twin on the same inputs and the same
attribute assignments, compares every output and the attribute afterwards (value, exact
class, and a proxy's spec), and asserts the exact number of compiled graphs.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import dynscalar as ds
from dynscalar import DynamicFloat, DynamicInt, DynamicSpec

from .helpers import USER_AOT, CountingBackend, run_python

BACKENDS = ["eager", "aot_eager"]


class Scale(torch.nn.Module):
    """Reads a scalar attribute."""

    def __init__(self, s: Any) -> None:
        super().__init__()
        self.s = s

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.s


def same_scalar(got: Any, want: Any) -> None:
    """Equal value, exact class, and equal spec for proxies."""
    assert type(got) is type(want), (got, want)
    assert got == want or (got != got and want != want), (got, want)
    if ds.is_dynamic_scalar(want):
        assert got.spec == want.spec, (got, want)


def step_both(
    compiled: Callable[..., Any], model: torch.nn.Module, eager: torch.nn.Module, **assign: Any
) -> None:
    """Assign the same values on both, call both, compare outputs and attributes."""
    for name, value in assign.items():
        setattr(model, name, value)
        setattr(eager, name, value)
    x = torch.randn(2, 3)
    got, want = compiled(x), eager(x)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    for name in vars(eager):
        if not name.startswith("_") and not isinstance(getattr(eager, name), torch.Tensor):
            same_scalar(getattr(model, name), getattr(eager, name))


# ----------------------------------------------------------------------------- value types
FLOATS_AFTER_INTS = [4, 2.5, 2.75, DynamicFloat(0.25), DynamicFloat(0.5)]


def run_values(model: torch.nn.Module, values: list[Any], backend: str) -> int:
    eager = copy.deepcopy(model)
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    step_both(compiled, model, eager)
    for value in values:
        step_both(compiled, model, eager, s=value)
    return counter.frame_count


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("spec", [{}, {"unbacked": True}, {"min": 0, "max": 10}])
def test_registry_int_graph_is_never_reused_for_a_float(spec: dict[str, Any], backend: str) -> None:
    """An int-compiled graph reused for a float would compute `x * self.s` as 2.0 for 2.5.

    A float under an int-only spec (unbacked, min/max) follows the proxy rule for floats
    derived from such ints: a backed dynamic float."""
    model = ds.mark_dynamic_attr(Scale(3), "s", **spec)
    # the int graph; a float graph (2.5, 2.75); a DynamicFloat graph (0.25, 0.5)
    assert run_values(model, FLOATS_AFTER_INTS, backend) == 3


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("unbacked", [False, True], ids=["backed", "unbacked"])
def test_proxy_int_graph_is_never_reused_for_a_float(unbacked: bool, backend: str) -> None:
    model = Scale(DynamicInt(3, unbacked=unbacked))
    values = [DynamicInt(4, unbacked=unbacked), *FLOATS_AFTER_INTS[1:]]
    # the DynamicInt graph; 2.5 static and 2.75 automatic-dynamic (stock torch for an
    # unmarked float attribute); the DynamicFloat graph
    assert run_values(model, values, backend) == 4


@pytest.mark.parametrize("backend", BACKENDS)
def test_auto_dynamic_int_graph_is_never_reused_for_a_float(backend: str) -> None:
    model = ds.auto_dynamic(Scale(3))
    # static 3; 4 promotes to dynamic; 2.5 is a new type under the same mark (a float
    # graph, 2.75 reuses it); the DynamicFloat graph
    assert run_values(model, FLOATS_AFTER_INTS, backend) == 4


def test_int_outside_int64_in_a_marked_attribute_is_compiled_like_unmarked() -> None:
    """Met when tracing: compiled like an unmarked int (a constant), with one warning.

    (A big int that reaches an already compiled symbolic graph is torch's case, as for its
    own dynamic ints: exact on eager/aot_eager, "expected int arg" from inductor kernels.)
    """

    class Huge(Scale):  # a class of its own: the warning is once per attribute and type
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * (self.s % 7)  # Python arithmetic on the big int, then a small one

    model = ds.mark_dynamic_attr(Huge(3), "s")
    model.s = 2**70
    eager = copy.deepcopy(model)
    counter = CountingBackend("eager")
    compiled = torch.compile(model, backend=counter)
    with pytest.warns(ds.SpecializationWarning, match=r"Huge\.s is marked .* outside the int64"):
        step_both(compiled, model, eager)
    step_both(compiled, model, eager, s=2**71)  # another constant
    step_both(compiled, model, eager, s=3)  # back in range: the mark applies
    step_both(compiled, model, eager, s=4)
    assert counter.frame_count == 3
    strict = Huge(5)
    ds.mark_dynamic_attr(strict, "s", strict=True)
    strict.s = 2**70
    with pytest.raises(ds.SpecializationError, match="outside the int64"):
        torch.compile(strict, backend="eager")(torch.ones(2))


class Doubled(Scale):
    """An int expression of the marked int (`2 * s + 1`) reaches a tensor op."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * (self.s * 2 + 1)


def overflow_run(backend: str, values: list[int], quiet: bool = True) -> int:
    class Overflow(Doubled):  # a class per run: the warning is once per attribute and type
        pass

    Overflow.__name__ = f"Overflow_{backend}_{'_'.join(map(str, values))}"

    model = ds.mark_dynamic_attr(Overflow(values[0]), "s")
    eager = copy.deepcopy(model)
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    with warnings.catch_warnings():
        if quiet:
            warnings.simplefilter("ignore", ds.SpecializationWarning)
        for value in values:
            for m in (model, eager):
                m.s = value
            x = torch.tensor([0.25, -2.0], dtype=torch.float64)
            torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
            same_scalar(model.s, eager.s)
    return counter.frame_count


@pytest.mark.parametrize(
    "backend",
    ["aot_eager", pytest.param("inductor", marks=[pytest.mark.inductor, pytest.mark.broad])],
)
def test_int_expression_leaving_int64_is_compiled_as_a_constant(backend: str) -> None:
    """Found by the fuzzer: `2 * s + 1` with s = 2**62 wrapped around in inductor's int64
    kernel argument (the sign flipped, no error).  The symbolic graph is guarded to keep
    the expression in int64; a value that leaves it compiles as a constant, exactly."""
    with pytest.warns(ds.SpecializationWarning, match=r"computes 92233720368547758\d\d \(outside"):
        overflow_run(backend, [2**62], quiet=False)
    # 4 and 5 share the symbolic graph; 2**62 and 2**62 + 7 (the second guard fails) each
    # compile a constant graph after one restart (the backend saw the symbolic attempt too)
    graphs = overflow_run(backend, [4, 5, 2**62, 6, 2**62 + 7, 7])
    assert graphs == {"aot_eager": 5, "inductor": 5}[backend]


def test_int_expression_leaving_int64_on_the_eager_backend_stays_symbolic() -> None:
    """The eager backend runs the graph with Python ints: nothing overflows, no guard."""
    assert overflow_run("eager", [4, 2**62, 5]) == 1


class Phase(Scale):
    """A float derived from the marked int, then a float `%` (a cyclic schedule)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * ((self.s + 0.5) % 1.5)


def test_a_float_made_of_a_marked_int_stays_a_python_float_on_a_python_backend() -> None:
    """`(step + 0.5) % 1.5` of a marked int on aot_eager: the graph computes the float in
    Python, as eager does; no pass turns it into a tensor, nothing is specialized."""
    model = ds.mark_dynamic_attr(Phase(1), "s")
    eager = copy.deepcopy(model)
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(model, backend=counter)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ds.DynscalarWarning)
        step_both(compiled, model, eager)
        for value in (2, 3, 2):
            step_both(compiled, model, eager, s=value)
    assert counter.frame_count == 1


@pytest.mark.parametrize(
    "backend",
    [USER_AOT, pytest.param("inductor", marks=[pytest.mark.inductor, pytest.mark.broad])],
    ids=["user-aot", "inductor"],
)
def test_float_op_the_tensorify_pass_cannot_lower_on_a_marked_int(backend: Any) -> None:
    """Found by the fuzzer: torch 2.13's float-tensorify pass has no float `%` (python_mod)
    and failed the compile with AttributeError for `(step + 0.5) % 1.5` of a marked int.
    Where the pass runs, the int is compiled as a constant instead: exact, one graph per
    value, warned."""

    class PhaseOf(Phase):  # a class per backend: the warning is once per attribute and type
        pass

    PhaseOf.__name__ = f"Phase_{backend if isinstance(backend, str) else 'user_aot'}"
    model = ds.mark_dynamic_attr(PhaseOf(1), "s")
    eager = copy.deepcopy(model)
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    with pytest.warns(ds.SpecializationWarning, match=r"float-tensorify pass cannot compile"):
        step_both(compiled, model, eager)
    for value in (2, 3, 2):
        step_both(compiled, model, eager, s=value)
    # per new value: the symbolic attempt the pass rejects, then the constant graph
    assert counter.frame_count == 6


def shifted_phase(x: torch.Tensor, n: Any) -> torch.Tensor:
    y = x.clone()
    n += 0.5
    return y + n % 2


@pytest.mark.parametrize("backend", [*BACKENDS, USER_AOT], ids=[*BACKENDS, "user-aot"])
def test_float_op_the_tensorify_pass_cannot_lower_on_an_int_argument(backend: Any) -> None:
    """The same for a `DynamicInt` argument (seed 0, index 1499 of the long profile): the
    restarted trace folds `n += 0.5`, another path than the first trace took, which Dynamo
    rejected (SpeculationLogDivergence) until the bridge cleared the speculation log."""
    counter = CountingBackend(backend)
    compiled = torch.compile(shifted_phase, backend=counter)
    x = torch.tensor([-2.0, -1.5, -0.5, -0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SpecializationWarning)
        for n in (7, 8, 7):
            got = compiled(x, DynamicInt(n))
            torch.testing.assert_close(got, shifted_phase(x, n), rtol=0, atol=0)
    # eager and aot_eager run the graph as Python code: Python floats, symbolic, one graph;
    # the user's AOT backend runs torch's pass: per new value the rejected symbolic
    # attempt and the constant graph
    assert counter.frame_count == (4 if backend is USER_AOT else 1)


class Loop(Scale):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.s % 3):
            x = x + 1
        return x


@pytest.mark.parametrize("backend", BACKENDS)
def test_range_of_a_dynamic_float_raises_like_eager(backend: str) -> None:
    """Found by the fuzzer: Dynamo guards a SymFloat passed to `range` to its value and
    loops `int(value)` times; Python raises TypeError, and so does the compiled call."""
    counter = CountingBackend(backend)
    for value in (-2, DynamicFloat(-1.25)):
        model, eager = Loop(value), Loop(value)
        compiled = torch.compile(model, backend=counter)
        x = torch.ones(2)
        if isinstance(value, int):
            torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
            continue
        with pytest.raises(TypeError, match="'float' object cannot be interpreted as an integer"):
            eager(x)
        with pytest.raises(TypeError, match="'float' object cannot be interpreted as an integer"):
            compiled(x)
    assert counter.frame_count == 1  # the int's; the float's trace raises before any graph


@pytest.mark.parametrize("value", ["3", True, None], ids=["str", "bool", "None"])
def test_non_number_in_a_marked_attribute_is_a_clear_error(value: Any) -> None:
    model = ds.mark_dynamic_attr(Scale(3), "s")
    compiled = torch.compile(model, backend=CountingBackend("eager"))
    compiled(torch.ones(2))
    model.s = value
    with pytest.raises(ds.DynscalarTypeError, match=r"Scale\.s is"):
        compiled(torch.ones(2))


@pytest.mark.parametrize("backend", BACKENDS)
def test_numpy_scalar_in_a_marked_attribute_is_compiled_like_unmarked(backend: str) -> None:
    class NumpyScale(Scale):  # a class per test: the warning is once per attribute and type
        pass

    NumpyScale.__name__ = f"NumpyScale_{backend}"
    model = ds.mark_dynamic_attr(NumpyScale(3), "s")
    eager = copy.deepcopy(model)
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    step_both(compiled, model, eager)
    with pytest.warns(ds.SpecializationWarning, match=r"\.s is marked .* numpy\.float64") as w:
        step_both(compiled, model, eager, s=np.float64(1.5))
    assert w[0].filename == __file__  # at the user's line, not inside torch
    with pytest.warns(ds.SpecializationWarning, match=r"holds a numpy\.int64 .* Store int\("):
        step_both(compiled, model, eager, s=np.int64(7))
    step_both(compiled, model, eager, s=np.int64(8))  # warned once per attribute and type
    # the int graph; np.float64(1.5) static (on aot_eager torch's float-tensorify pass
    # first tries it as an input, then restarts: two backend compiles, as for an unmarked
    # attribute); numpy ints are unspecialized inputs in stock torch: one graph for 7 and 8
    assert counter.frame_count == {"eager": 3, "aot_eager": 4}[backend]


def test_numpy_scalar_in_a_strict_mark_raises() -> None:
    model = ds.mark_dynamic_attr(Scale(0.5), "s", strict=True)
    compiled = torch.compile(model, backend=CountingBackend("eager"))
    model.s = np.float32(0.5)
    with pytest.raises(ds.SpecializationError, match="strict=True"):
        compiled(torch.ones(2))


@pytest.mark.parametrize("backend", BACKENDS)
def test_function_argument_proxy_then_float(backend: str) -> None:
    def f(x: torch.Tensor, n: Any) -> torch.Tensor:
        return x * n + 1

    counter = CountingBackend(backend)
    compiled = torch.compile(f, backend=counter)
    x = torch.randn(3)
    for n in (DynamicInt(2), 2.5, DynamicInt(5), DynamicFloat(0.5), 3.5, DynamicFloat(1.5)):
        torch.testing.assert_close(compiled(x, n), f(x, n), rtol=0, atol=0)
    # DynamicInt graph; 2.5 changed from the 2 seen before, so automatic dynamic makes it a
    # symbolic float at once (as stock torch does for a changed plain value); DynamicFloat
    # graph; 3.5 reuses the plain-float graph
    assert counter.frame_count == 3


# ----------------------------------------------------------------------------- instances
@pytest.mark.parametrize("backend", BACKENDS)
def test_unmarked_instance_never_reuses_a_marked_graph(backend: str) -> None:
    """An unmarked M(0.5) must not run the marked M(3)'s int graph."""
    marked = ds.mark_dynamic_attr(Scale(3), "s")
    counter = CountingBackend(backend)
    x = torch.randn(4)
    torch.testing.assert_close(torch.compile(marked, backend=counter)(x), x * 3)
    plain = Scale(0.5)
    torch.testing.assert_close(torch.compile(plain, backend=counter)(x), x * 0.5)
    plain_int = Scale(7)
    torch.testing.assert_close(torch.compile(plain_int, backend=counter)(x), x * 7)
    assert counter.frame_count == 3  # marked; unmarked float (static); unmarked int (static)


@pytest.mark.parametrize("backend", BACKENDS)
def test_instances_marked_differently_share_nothing_they_should_not(backend: str) -> None:
    backed = ds.mark_dynamic_attr(Scale(3), "s")
    ranged = ds.mark_dynamic_attr(Scale(3), "s", min=0, max=5)
    twin = ds.mark_dynamic_attr(Scale(4), "s")  # same spec as `backed`: shares its graph
    counter = CountingBackend(backend)
    x = torch.randn(4)
    for model in (backed, ranged, twin, backed, ranged):
        torch.testing.assert_close(torch.compile(model, backend=counter)(x), x * model.s)
    assert counter.frame_count == 2
    ranged.s = 6
    with pytest.raises(ds.OutOfRangeError, match=r"value 6 is outside the declared range"):
        torch.compile(ranged, backend=counter)(x)
    backed.s = 6  # no range on this one
    torch.testing.assert_close(torch.compile(backed, backend=counter)(x), x * 6)


# ----------------------------------------------------------------------------- marks later
@pytest.mark.parametrize("backend", BACKENDS)
def test_narrowing_a_range_after_compiling_is_enforced(backend: str) -> None:
    model = ds.mark_dynamic_attr(Scale(3), "s")
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    compiled(torch.ones(2))
    ds.mark_dynamic_attr(model, "s", max=5)
    model.s = 7
    with pytest.raises(ds.OutOfRangeError, match=r"Scale\.s: value 7 is outside"):
        compiled(torch.ones(2))
    model.s = 5
    torch.testing.assert_close(compiled(torch.ones(2)), torch.full((2,), 5.0))
    assert counter.frame_count == 2


def test_registry_mark_on_a_proxy_attribute_takes_effect() -> None:
    """mark_dynamic_attr(..., max=10) on an attribute holding a DynamicInt takes effect: the
    attribute's mark wins over the spec the value carries."""
    model = Scale(DynamicInt(3))
    ds.mark_dynamic_attr(model, "s", max=10)
    compiled = torch.compile(model, backend=CountingBackend("eager"))
    torch.testing.assert_close(compiled(torch.ones(2)), torch.full((2,), 3.0))
    model.s = DynamicInt(11)
    with pytest.raises(ds.OutOfRangeError, match=r"value 11 is outside the declared range"):
        compiled(torch.ones(2))


@pytest.mark.parametrize("backend", BACKENDS)
def test_unmark_and_remark_take_effect_at_the_next_call(backend: str) -> None:
    model = ds.mark_dynamic_attr(Scale(1), "s")
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    for value in (1, 2, 3):
        model.s = value
        compiled(torch.ones(2))
    assert counter.frame_count == 1
    ds.unmark_dynamic_attr(model, "s")
    for value in (4, 5):  # static again: one graph per value, like stock torch
        model.s = value
        torch.testing.assert_close(compiled(torch.ones(2)), torch.full((2,), float(value)))
    assert counter.frame_count == 3
    ds.mark_dynamic_attr(model, "s", strict=True)
    for value in (6, 7, 8):  # a new spec: one new symbolic graph
        model.s = value
        torch.testing.assert_close(compiled(torch.ones(2)), torch.full((2,), float(value)))
    assert counter.frame_count == 4
    ds.mark_dynamic_attr(model, "s")  # back to the first spec: its graph is reused
    model.s = 9
    compiled(torch.ones(2))
    assert counter.frame_count == 4


def test_marking_after_an_unmarked_compile_takes_effect_at_the_next_call() -> None:
    model = Scale(1)
    counter = CountingBackend("eager")
    compiled = torch.compile(model, backend=counter)
    compiled(torch.ones(2))
    ds.mark_dynamic_attr(model, "s", strict=True)
    compiled(torch.ones(2))  # same value: still recompiles, under the mark
    for value in (2, 3, 4):
        model.s = value
        compiled(torch.ones(2))
    assert counter.frame_count == 2


def test_decorating_a_class_after_compiling_takes_effect() -> None:
    class Late(Scale):
        pass

    model = Late(1)
    counter = CountingBackend("eager")
    compiled = torch.compile(model, backend=counter)
    compiled(torch.ones(2))
    ds.dynamic_attrs("s")(Late)
    for value in (2, 3, 4):
        model.s = value
        torch.testing.assert_close(compiled(torch.ones(2)), torch.full((2,), float(value)))
    assert counter.frame_count == 2


# ----------------------------------------------------------------------------- write-back
class Writes(torch.nn.Module):
    """Assigns its scalar in one of several body forms."""

    def __init__(self, s: Any, form: str) -> None:
        super().__init__()
        self.s = s
        self.form = form

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.form == "literal":
            self.s = 0
        elif self.form == "arithmetic":
            self.s = self.s * 2 + 1
        elif self.form == "augmented":
            self.s += 1
        elif self.form == "conditional":
            self.s = self.s + 1 if self.s < 3 else 0
        elif self.form == "reflected":
            self.s = 10 - self.s
        elif self.form == "divide":
            self.s = self.s / 4
        elif self.form == "plain":
            self.s = float(self.s) + 1
        elif self.form == "augmented-then-arithmetic":
            self.s += 1
            self.s = self.s * 2
        return x * self.s


FORMS = [
    "literal",
    "arithmetic",
    "augmented",
    "conditional",
    "reflected",
    "divide",
    "plain",
    "augmented-then-arithmetic",
]
VALUES = {
    "DynamicInt": lambda: DynamicInt(1, min=-(10**6), max=10**6),
    "DynamicInt-unbacked": lambda: DynamicInt(1, unbacked=True),
    "DynamicFloat": lambda: DynamicFloat(0.5),
    "registry": lambda: 1,
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("value", list(VALUES))
@pytest.mark.parametrize("form", FORMS)
def test_write_back_equals_eager_on_modules(form: str, value: str, backend: str) -> None:
    model = Writes(VALUES[value](), form)
    if value == "registry":
        ds.mark_dynamic_attr(model, "s")
    eager = copy.deepcopy(model)
    compiled = torch.compile(model, backend=CountingBackend(backend))
    for _ in range(4):
        step_both(compiled, model, eager)


class Holder:
    """A plain object (not a module) holding a proxy."""

    def __init__(self, s: Any) -> None:
        self.s = s


class Slotted:
    __slots__ = ("s",)

    def __init__(self, s: Any) -> None:
        self.s = s


@dataclasses.dataclass
class Config:
    s: Any


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", [Holder, Slotted, Config], ids=["object", "slots", "dataclass"])
@pytest.mark.parametrize("form", ["augmented", "arithmetic", "literal"])
def test_write_back_equals_eager_on_other_objects(kind: type, form: str, backend: str) -> None:
    def step(holder: Any, x: torch.Tensor) -> torch.Tensor:
        if form == "augmented":
            holder.s += 1
        elif form == "arithmetic":
            holder.s = holder.s * 3
        else:
            holder.s = 5
        return x * holder.s

    counter = CountingBackend(backend)
    compiled = torch.compile(step, backend=counter)
    got, want = kind(DynamicInt(1, max=10**6)), kind(DynamicInt(1, max=10**6))
    for _ in range(3):
        x = torch.randn(3)
        torch.testing.assert_close(compiled(got, x), step(want, x), rtol=0, atol=0)
        same_scalar(got.s, want.s)
    assert counter.frame_count == (2 if form == "arithmetic" else 1)  # arithmetic drops the range


class Swaps(torch.nn.Module):
    """Assigns proxies it read, unchanged: Dynamo replays them from their sources."""

    def __init__(self, a: Any, b: Any) -> None:
        super().__init__()
        self.a, self.b = a, b

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.a, self.b = self.b, self.a
        self.c = self.a + 1  # computed by the graph: a new proxy
        return x * self.a


@pytest.mark.parametrize("backend", BACKENDS)
def test_write_back_of_a_proxy_read_unchanged_stores_that_object(backend: str) -> None:
    """Eager stores the very object; the compiled replay must too (not an equal copy)."""
    a, b = DynamicInt(2, max=100), DynamicInt(5, strict=True)
    model = Swaps(a, b)
    eager = Swaps(a, b)
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    for _ in range(3):
        step_both(compiled, model, eager)
        assert model.a is eager.a and model.b is eager.b
    assert model.a is b and model.b is a
    assert counter.frame_count == 2  # the specs trade places: one graph per arrangement


class Counts(torch.nn.Module):
    """Increments a marked counter it never uses in a tensor op (the seed model's shape)."""

    def __init__(self, step: Any) -> None:
        super().__init__()
        self.step = step

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.step += 1
        return x + 1


INT64_MAX = 2**63 - 1


@pytest.mark.parametrize(
    "backend", ["aot_eager", pytest.param("inductor", marks=pytest.mark.inductor)]
)
@pytest.mark.parametrize("how", ["DynamicInt", "registry"])
def test_int_expression_only_written_back_gets_no_int64_guard(how: str, backend: str) -> None:
    """`step + 1` only reaches the outputs: the graph's Python code computes it with Python
    ints, so it is not guarded to stay in int64 (that guard is a Python function Dynamo
    calls on every call).  Past int64 it is still exact, as eager, with the same graph."""
    model = Counts(DynamicInt(1) if how == "DynamicInt" else 1)
    if how == "registry":
        ds.mark_dynamic_attr(model, "step")
    eager = copy.deepcopy(model)
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    step_both(compiled, model, eager)
    start = DynamicInt(INT64_MAX - 1) if how == "DynamicInt" else INT64_MAX - 1
    step_both(compiled, model, eager, step=start)
    step_both(compiled, model, eager)  # step = INT64_MAX: step + 1 leaves int64
    assert model.step == INT64_MAX + 1
    assert counter.frame_count == 1
    guards = [g for entry in _cache_entries(model) for g in _guard_code(entry)]
    assert not [g for g in guards if "9223372036854775807" in g], guards


def test_int_expression_written_back_is_guarded_under_cpp_wrapper() -> None:
    """Inductor's C++ wrapper computes int outputs as int64: there the guard stays (read
    from inductor's config by the AOT pass, so aot_eager shows it too)."""
    import torch._inductor.config as inductor_config

    model = ds.mark_dynamic_attr(Counts(1), "step")
    eager = copy.deepcopy(model)
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(model, backend=counter)
    with inductor_config.patch(cpp_wrapper=True), warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SpecializationWarning)
        step_both(compiled, model, eager)
        step_both(compiled, model, eager, step=INT64_MAX - 1)  # fits: same graph
        assert counter.frame_count == 1
        step_both(compiled, model, eager)  # step + 1 leaves int64: the guard fails
    assert counter.frame_count > 1
    assert model.step == INT64_MAX + 1


def _cache_entries(model: torch.nn.Module) -> list[Any]:
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list

    return list(_debug_get_cache_entry_list(type(model).forward.__code__))


def _guard_code(entry: Any) -> list[str]:
    """The text of every guard of a compiled entry (torch's guard manager printout)."""
    return str(entry.guard_manager).splitlines() if hasattr(entry, "guard_manager") else []


def test_proxy_arithmetic_rule_is_the_write_back_rule() -> None:
    """One rule (dynscalar/_proxy.py): in-place keeps the spec, other operators drop the range."""
    a = DynamicInt(1, min=0, max=5, strict=True)
    b = a
    b += 1
    assert b.spec == a.spec
    assert (a + 1).spec == DynamicSpec(strict=True)
    assert (1 + a).spec == DynamicSpec(strict=True)
    assert type(a / 2) is DynamicFloat and (a / 2).spec == DynamicSpec(strict=True)
    assert type(float(a)) is float and type(int(a)) is int


# ----------------------------------------------------------------------------- robustness
def test_strict_raises_every_time() -> None:
    class Ranges(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.n = 3

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * sum(range(self.n))

    loose = ds.mark_dynamic_attr(Ranges(), "n")  # warns once at this line first
    with pytest.warns(ds.SpecializationWarning):
        torch.compile(loose, backend="eager")(torch.ones(2))
    for _attempt in range(3):
        torch._dynamo.reset()
        model = ds.mark_dynamic_attr(Ranges(), "n", strict=True)
        compiled = torch.compile(model, backend=CountingBackend("eager"))
        for _call in range(2):
            with pytest.raises(ds.SpecializationError, match="strict=True"):
                compiled(torch.ones(2))


def test_shape_env_event_replay_check_passes() -> None:
    """torch's check_shape_env_recorded_events replays ShapeEnv events and compares fields."""
    from torch.fx.experimental import _config as fx_config

    class Both(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.step = 0
            self.scale = 0.5
            self.count = DynamicInt(2, unbacked=True)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.step += 1
            return x * self.step * self.scale + self.count

    model = ds.mark_dynamic_attr(Both(), "step", "scale")
    eager = copy.deepcopy(model)
    counter = CountingBackend("aot_eager")
    with fx_config.patch(check_shape_env_recorded_events=True):
        compiled = torch.compile(model, backend=counter, fullgraph=True)
        for _ in range(3):
            step_both(compiled, model, eager)
    assert counter.frame_count == 1


PUBLIC_ERRORS = [
    ds.DynscalarError,
    ds.DynscalarTypeError,
    ds.DynscalarValueError,
    ds.DynscalarAttributeError,
    ds.OutOfRangeError,
    ds.SpecializationError,
    ds.DynamicFloatSpecializedError,
    ds.BridgeError,
]


@pytest.mark.parametrize("cls", PUBLIC_ERRORS, ids=lambda c: c.__name__)
def test_errors_are_public_picklable_and_keep_their_builtin_base(cls: type) -> None:
    assert getattr(ds, cls.__name__) is cls and issubclass(cls, ds.DynscalarError)
    error = cls("dynscalar: Net.step: something")
    restored = pickle.loads(pickle.dumps(error))
    assert type(restored) is cls and restored.args == error.args


def test_builtin_bases_as_documented() -> None:
    assert issubclass(ds.DynscalarTypeError, TypeError)
    assert issubclass(ds.DynscalarValueError, ValueError)
    assert issubclass(ds.DynscalarAttributeError, AttributeError)
    assert issubclass(ds.OutOfRangeError, ValueError)
    assert issubclass(ds.SpecializationError, ValueError)
    assert issubclass(ds.DynamicFloatSpecializedError, RuntimeError)
    assert issubclass(ds.BridgeError, RuntimeError)
    for warning in (ds.SpecializationWarning, ds.BridgeUnavailableWarning):
        assert issubclass(warning, ds.DynscalarWarning)


def test_compile_time_error_pickles_as_its_public_class() -> None:
    """Errors raised while compiling cross process boundaries (DDP, multiprocessing)."""
    model = ds.mark_dynamic_attr(Scale(3), "s", max=5)
    compiled = torch.compile(model, backend="eager")
    model.s = 9
    with pytest.raises(ds.OutOfRangeError) as caught:
        compiled(torch.ones(2))
    assert isinstance(caught.value, ValueError)
    restored = pickle.loads(pickle.dumps(caught.value))
    assert type(restored) is ds.OutOfRangeError and "value 9" in str(restored)


def test_any_install_failure_degrades_with_one_warning() -> None:
    """Not only BridgeError: e.g. inspect.signature raising ValueError while checking."""
    code = """
    import inspect, warnings
    real = inspect.signature
    def broken(obj, *a, **k):
        if getattr(obj, "__name__", "") == "wrap_symint":
            raise ValueError("no signature found")
        return real(obj, *a, **k)
    inspect.signature = broken
    import dynscalar, torch
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import torch._dynamo  # must not fail
    inspect.signature = real
    ours = [w for w in caught if issubclass(w.category, dynscalar.BridgeUnavailableWarning)]
    assert len(ours) == 1, [str(w.message) for w in caught]
    assert "ValueError: no signature found" in str(ours[0].message), ours[0].message
    import dynscalar._bridge._install as bridge
    assert not bridge.is_installed()
    from torch._dynamo.side_effects import SideEffects
    assert not hasattr(SideEffects.__dict__["codegen_update_mutated"], "__wrapped__")
    m = dynscalar.mark_dynamic_attr(torch.nn.Linear(2, 2), "in_features")
    x = torch.randn(3, 2)
    torch.testing.assert_close(torch.compile(m, backend="eager")(x), m(x))
    print("ok")
    """
    result = run_python(code)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "ok"


def test_warnings_are_dynscalar_warnings() -> None:
    class Filtered(Scale):
        pass

    with warnings.catch_warnings():
        warnings.simplefilter("error", ds.DynscalarWarning)
        model = ds.mark_dynamic_attr(Filtered(3), "s")
        compiled = torch.compile(model, backend="eager")
        model.s = np.float64(0.5)
        with pytest.raises(Exception, match=r"SpecializationWarning: dynscalar: Filtered\.s"):
            compiled(torch.ones(2))


def test_proxy_methods_are_never_compiled_as_frames_of_their_own() -> None:
    """A compiled forward that falls back to eager for good runs as Python with Dynamo's
    callback active; the proxy's __torch_function__ then must not be compiled (torch 2.13
    reused a graph for `tensor + proxy` on `tensor * proxy`: found by the fuzzer)."""

    class Mixed(torch.nn.Module):
        def __init__(self, s: Any, t: Any) -> None:
            super().__init__()
            self.s = s
            self.t = t

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.s -= 4  # a str here makes Dynamo give up on this code for good
            y = x + max(self.t, 2)
            return y * (self.t / 4)

    x = torch.tensor([2.0, -1.5, -2.0, -1.5])
    broken = Mixed("3", 1.0)
    with pytest.raises(TypeError):
        torch.compile(broken, backend="eager")(x)
    model = Mixed(6, DynamicFloat(7.75))
    compiled = torch.compile(model, backend="eager")
    for _ in range(2):
        eager = Mixed(model.s, model.t)
        torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
