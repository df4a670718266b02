"""Dynamic floats: compiled equals eager (bit for bit), with exact compile counts."""

from __future__ import annotations

import copy
import math
import warnings
from typing import Any

import pytest
import torch

import dynscalar as ds
from dynscalar import DynamicFloat, DynamicInt

from .helpers import USER_AOT, CountingBackend

CALLS = 20
VALUES = [0.3 + 0.037 * i for i in range(CALLS)]


class Read(torch.nn.Module):
    """A float set from outside between calls (a temperature, a schedule factor)."""

    def __init__(self, scale: float = 0.3) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(4, 4)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x) * self.scale


class Write(Read):
    """A float written inside forward (pytorch#194976 in stock torch 2.13)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.scale = self.scale * 0.9
        return self.layer(x) * self.scale


class Branch(Read):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.scale > 0.5:
            return self.layer(x) * self.scale
        return self.layer(x) - self.scale


class Mixed(torch.nn.Module):
    """An int counter and a float factor on one module; the int also divided into a float."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(4, 4)
        self.step = 0
        self.factor = 0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.step += 1
        return self.layer(x) * self.factor + x * (self.step / 2)


def marked(model: torch.nn.Module, way: str, *names: str) -> torch.nn.Module:
    if way == "registry":
        return ds.mark_dynamic_attr(model, *names)
    for name in names:
        setattr(model, name, ds.mark_dynamic(getattr(model, name)))
    return model


def run(
    model: torch.nn.Module,
    eager: torch.nn.Module,
    backend: str,
    fullgraph: bool,
    values: list[float] | None,
    attr: str = "scale",
) -> int:
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter, fullgraph=fullgraph)
    x = torch.randn(3, 4)
    for i, value in enumerate(values or [None] * CALLS):
        if value is not None:
            current = getattr(model, attr)
            setattr(model, attr, type(current)(value) if ds.is_dynamic_scalar(current) else value)
            setattr(eager, attr, value)
        torch.testing.assert_close(
            compiled(x),
            eager(x),
            rtol=0,
            atol=0,
            equal_nan=True,
            msg=lambda m, i=i: f"call {i}: {m}",
        )
    return counter.frame_count


BACKENDS = ["eager", "aot_eager", pytest.param("inductor", marks=pytest.mark.inductor)]
FULLGRAPH = pytest.mark.parametrize("fullgraph", [True, False], ids=["fullgraph", "breaks-ok"])
WAYS = pytest.mark.parametrize("way", ["registry", "proxy"])


@FULLGRAPH
@WAYS
@pytest.mark.parametrize("backend", BACKENDS)
def test_read_attribute_compiles_once(backend: str, way: str, fullgraph: bool) -> None:
    torch.manual_seed(0)
    model = Read()
    eager = copy.deepcopy(model)
    assert run(marked(model, way, "scale"), eager, backend, fullgraph, VALUES) == 1


@FULLGRAPH
@WAYS
@pytest.mark.parametrize("backend", BACKENDS)
def test_float_written_in_forward_compiles_once_and_matches(
    backend: str, way: str, fullgraph: bool
) -> None:
    torch.manual_seed(0)
    model = Write(1.0)
    eager = copy.deepcopy(model)
    assert run(marked(model, way, "scale"), eager, backend, fullgraph, None) == 1
    assert model.scale == eager.scale  # bit-identical final value
    assert type(model.scale) is (DynamicFloat if way == "proxy" else float)


@pytest.mark.inductor
@pytest.mark.parametrize("way", ["registry", "proxy"])
def test_float_written_in_forward_under_no_grad_inductor(way: str) -> None:
    """The inference path is where stock torch 2.13 returns a stale value (pytorch#194976)."""
    torch.manual_seed(0)
    model = Write(1.0)
    eager = copy.deepcopy(model)
    with torch.no_grad():
        assert run(marked(model, way, "scale"), eager, "inductor", True, None) == 1
    assert model.scale == eager.scale


@FULLGRAPH
@WAYS
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_branch_compiles_once_per_path(backend: str, way: str, fullgraph: bool) -> None:
    torch.manual_seed(0)
    model = Branch()
    eager = copy.deepcopy(model)
    values = [0.2, 0.9, 0.3, 0.8, 0.45, 0.55] * 4
    assert run(marked(model, way, "scale"), eager, backend, fullgraph, values) == 2


def scaled(x: torch.Tensor, v: float) -> tuple[torch.Tensor, torch.Tensor]:
    return x * v, (x - v).relu() / v


@pytest.mark.parametrize("backend", BACKENDS)
def test_function_argument_compiles_once(backend: str) -> None:
    counter = CountingBackend(backend)
    compiled = torch.compile(scaled, backend=counter, fullgraph=True)
    x = torch.randn(5)
    for v in VALUES:
        torch.testing.assert_close(compiled(x, DynamicFloat(v)), scaled(x, v), rtol=0, atol=0)
    assert counter.frame_count == 1
    assert type(ds.mark_dynamic(0.5)) is DynamicFloat


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_int_divided_into_float_flows_into_graph(backend: str) -> None:
    counter = CountingBackend(backend)
    compiled = torch.compile(scaled, backend=counter, fullgraph=True)
    x = torch.randn(5)
    for n in range(1, CALLS + 1):
        half = DynamicInt(n) / 2
        assert type(half) is DynamicFloat
        torch.testing.assert_close(compiled(x, half), scaled(x, n / 2), rtol=0, atol=0)
    assert counter.frame_count == 1


@FULLGRAPH
@WAYS
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_mixed_int_and_float_marks(backend: str, way: str, fullgraph: bool) -> None:
    torch.manual_seed(0)
    model = Mixed()
    eager = copy.deepcopy(model)
    model = marked(model, way, "step", "factor")
    assert (
        run(model, eager, backend, fullgraph, [0.5 + i / 40 for i in range(CALLS)], "factor") == 1
    )
    assert model.step == eager.step == CALLS


@pytest.mark.parametrize("way", ["registry", "proxy"])
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_nan_and_inf_match_eager(backend: str, way: str) -> None:
    """NaN gets its own graph (torch guards every float input with `not isnan`); inf does not."""
    torch.manual_seed(0)
    model = Read(0.5)
    eager = copy.deepcopy(model)
    values = [0.5, math.nan, 1.5, math.inf, 2.5, -math.inf, math.nan, 0.7] * 3
    assert run(marked(model, way, "scale"), eager, backend, True, values) == 2


def test_unbacked_float_is_refused_at_marking_time() -> None:
    with pytest.raises(ValueError, match=r"DynamicFloat\(0\.5\): floats cannot be unbacked"):
        DynamicFloat(0.5, unbacked=True)
    with pytest.raises(ValueError, match=r"Read\.scale: floats cannot be unbacked"):
        ds.mark_dynamic_attr(Read(), "scale", unbacked=True)
    with pytest.raises(ValueError, match="floats cannot be unbacked"):
        ds.mark_dynamic(0.5, unbacked=True)


def test_float_derived_from_unbacked_int_is_backed() -> None:
    """DynamicInt(n, unbacked=True) / 2 is a (backed) DynamicFloat that compiles once."""
    half = DynamicInt(3, unbacked=True) / 2
    assert type(half) is DynamicFloat and half.spec == ds.DynamicSpec()
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(scaled, backend=counter, fullgraph=True)
    x = torch.randn(4)
    for n in range(1, 8):
        value = DynamicInt(n, unbacked=True) / 2
        torch.testing.assert_close(compiled(x, value), scaled(x, n / 2), rtol=0, atol=0)
    assert counter.frame_count == 1


class Clamp(Read):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.clamp(max=self.scale) * self.scale


class Fmod(Read):
    """``fmod`` takes a Python float that no dynscalar decomposition covers."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.fmod(self.scale) * self.scale


@pytest.mark.parametrize(
    "backend", ["eager", "aot_eager", pytest.param("inductor", marks=pytest.mark.inductor)]
)
def test_clamp_with_a_dynamic_bound_stays_dynamic(backend: str) -> None:
    """clamp(max=float) next to other uses of the float: one graph on every backend.  The
    backends that run the graph as Python hand the op the Python float; on inductor clamp's
    form (``clamp.Tensor`` with the float a 0-d tensor) is admitted for float32 by the
    inductor column, being no further from eager than stock inductor (which gives the -0.0
    that ``clamp.Tensor`` gives, where eager's clamp gives 0.0).  Before the column
    measured inductor itself, an eager-only check refused it: 4 graphs and a warning."""
    model = Clamp()
    eager = copy.deepcopy(model)
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graphs = run(ds.mark_dynamic_attr(model, "scale"), eager, backend, True, [0.3, 0.5, 0.9])
    ours = [str(w.message) for w in caught if issubclass(w.category, ds.DynscalarWarning)]
    assert graphs == 1
    assert not ours, ours


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_op_with_a_scalar_float_gets_the_python_float_on_a_python_backend(backend: str) -> None:
    """``fmod`` takes a Python float (a ``Scalar``) that torch's float-tensorify pass cannot
    turn into a tensor.  A backend that runs the graph as Python code hands the op the float
    itself, as eager does: one graph for every value, nothing specialized, nothing warned."""
    model = Fmod()
    eager = copy.deepcopy(model)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", ds.DynscalarWarning)
        got = run(ds.mark_dynamic_attr(model, "scale"), eager, backend, True, [0.3, 0.5, 0.7])
    assert got == 1


def test_op_torch_specializes_falls_back_to_stock() -> None:
    """The same op on a backend dynscalar does not know (a user's own AOT backend): the
    pass cannot lower it, so the value is specialized as stock torch does (exact, warned
    once).  torch 2.13/2.14 would bake the value into the compiled code (pytorch#194976);
    the bridge restarts the analysis with it specialized, as torch 2.15 does itself.  The
    first value is tried symbolically and restarted (2 graphs), later values are
    remembered as forced (1 graph each), as stock remembers its floats."""
    model = Fmod()
    eager = copy.deepcopy(model)
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = run(ds.mark_dynamic_attr(model, "scale"), eager, USER_AOT, True, [0.3, 0.5, 0.7])
    assert got == 4
    warned = [str(w.message) for w in caught if issubclass(w.category, ds.SpecializationWarning)]
    assert len(warned) == 1 and "Fmod.scale" in warned[0] and "fmod" in warned[0], warned


def test_op_torch_specializes_is_refused_for_a_strict_mark() -> None:
    model = ds.mark_dynamic_attr(Fmod(), "scale", strict=True)
    compiled = torch.compile(model, backend=USER_AOT, fullgraph=True)
    with torch.no_grad(), pytest.raises(Exception, match=r"Fmod\.scale.*strict=True") as info:
        compiled(torch.randn(3, 4))
    chain = []
    exc: BaseException | None = info.value
    while exc is not None:
        chain.append(type(exc))
        exc = exc.__cause__ or exc.__context__
    assert any(issubclass(c, ds.SpecializationError) for c in chain) or "SpecializationError" in (
        str(info.value)
    )


def test_float_torch_keeps_constant_is_reported() -> None:
    """Under inductor CUDA graphs torch's wrap_symfloat returns a constant: warn, stay exact."""
    counter = CountingBackend("eager")
    compiled = torch.compile(scaled, backend=counter, fullgraph=True)
    x = torch.randn(4)
    cudagraphs = torch._inductor.config.patch({"triton.cudagraphs": True})
    expected = pytest.warns(ds.SpecializationWarning, match="torch specialized the dynamic float")
    with cudagraphs, expected:
        for v in (0.5, 0.75, 1.25):
            torch.testing.assert_close(compiled(x, DynamicFloat(v)), scaled(x, v), rtol=0, atol=0)
    assert counter.frame_count == 3


class FreeUStyle(torch.nn.Module):
    """diffusers' FreeU reads two factors; the second only decides a branch."""

    def __init__(self) -> None:
        super().__init__()
        self.a = 1.2
        self.b = 0.4

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.a and self.b:
            return x * self.a
        return x


@pytest.mark.parametrize(
    "backend", ["eager", "aot_eager", USER_AOT], ids=["eager", "aot_eager", "user-aot"]
)
def test_restart_to_drop_an_unused_float_is_not_a_specialization(backend: Any) -> None:
    """`b` is an input the graph never uses (torch's tensorify pass would restart the
    analysis to drop it); no value guard follows, so the values of `b` share one graph and
    nothing is reported."""
    model = ds.mark_dynamic_attr(FreeUStyle(), "a", "b")
    eager = copy.deepcopy(model)
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ds.DynscalarWarning)
        for a, b in ((1.2, 0.4), (1.2, 0.5), (1.3, 0.6), (1.4, 0.7)):
            model.a, model.b = eager.a, eager.b = a, b
            x = torch.randn(3)
            torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
    # the user's AOT backend runs torch's pass, which keeps the unused input now (before,
    # it restarted to drop it: the first graph compiled twice); eager and aot_eager need
    # no pass for marked floats
    assert counter.frame_count == 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_float_starting_at_zero_stays_dynamic_after_the_unused_float_restart(
    backend: str,
) -> None:
    """label_smoothing warm-up from 0.0: the op takes the float whatever its value, so one
    graph serves every value, 0.0 included, bit for bit (the kernel is eager's own)."""
    loss = ds.mark_dynamic_attr(torch.nn.CrossEntropyLoss(), "label_smoothing")
    eager = torch.nn.CrossEntropyLoss()
    counter = CountingBackend(backend)
    compiled = torch.compile(loss, backend=counter)
    x, y = torch.randn(8, 5), torch.randint(0, 5, (8,))
    for value in (0.0, 0.05, 0.07, 0.09, 0.11):
        loss.label_smoothing = eager.label_smoothing = value
        torch.testing.assert_close(compiled(x, y), eager(x, y), rtol=0, atol=0)
    # cross_entropy's own kernel (a dynscalar custom op), with the float as it is: one graph
    assert counter.frame_count == 1


@pytest.mark.inductor
@pytest.mark.broad
def test_a_value_the_backward_guards_is_never_loaded_from_the_cache_for_another() -> None:
    """In-place ``celu_`` with a marked ``alpha`` on inductor with gradients: the backward,
    compiled at the first ``backward()``, guards the value (``celu``'s derivative formula
    computes ``1 / alpha`` as a C++ double; the out-of-place call is boxed instead, but a
    call that writes its input never is).  AOTAutograd's cache entry cannot hold that guard
    (its guard expression covers SymInt inputs), so no entry is saved for such a compile:
    every value gets its own graph, as stock inductor compiles them, and eager's numbers,
    also after ``torch._dynamo.reset()`` with the same cache directory."""

    class InPlaceCELU(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.alpha = 0.5

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.celu(x * 1, self.alpha, inplace=True)

    x0 = torch.linspace(-3.0, 3.0, 24)
    for attempt in range(2):
        torch._dynamo.reset()
        model = ds.mark_dynamic_attr(InPlaceCELU(), "alpha")
        counter = CountingBackend("inductor")
        compiled = torch.compile(model, backend=counter)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ds.SpecializationWarning)
            for alpha in (0.5, 1.0, 1.5, 2.0):
                model.alpha = alpha
                x, y = x0.clone().requires_grad_(), x0.clone().requires_grad_()
                got, want = compiled(x), torch.nn.functional.celu(y, alpha)
                got.sum().backward()
                want.sum().backward()
                torch.testing.assert_close(got, want, msg=f"attempt {attempt}, alpha {alpha}")
                torch.testing.assert_close(x.grad, y.grad)
        assert counter.frame_count == 4, attempt
