"""Python's semantics on marked values: comparisons where IEEE and real algebra part, and
division by zero.

A marked float is a sympy symbol while Dynamo traces, and sympy decides relations as real
algebra: ``Ne(e, e)`` is ``False`` for any expression, a real expression is below ``oo``,
and ``Lt(e, nan)`` fails.  Python decides them on IEEE floats (``dynscalar/_bridge/_python.py``
keeps them as Python's).  A division by a marked value that is zero raises
``ZeroDivisionError`` in Python, inside the user's ``try`` (``_bridge/_python.py`` too).

Every compile is compared with eager, and with stock torch's count (``disabled()``, the
plain values).  "Before" is main at 976cfbe, measured with the same programs.
"""

from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch

import dynscalar as ds

from .helpers import CountingBackend

BACKENDS = ["eager", "aot_eager"]


def _nan_branch(x: torch.Tensor, t: float) -> torch.Tensor:
    v = t * math.inf
    return x * 2 if v != v else x * 3


def _nan_equal(x: torch.Tensor, t: float) -> torch.Tensor:
    return x * 2 if (t * math.nan) == (t * math.nan) else x * 3


def _count(fn: Callable[..., Any], values: list[Any], backend: str, wrap: Any) -> int:
    """Graphs compiled calling ``fn`` with each value (``wrap``ped), each call compared
    with eager on the plain value."""
    counter = CountingBackend(backend)
    compiled = torch.compile(fn, backend=counter)
    x = torch.ones(2)
    for value in values:
        assert torch.equal(compiled(x, wrap(value)), fn(x, value)), value
    return counter.frame_count


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("fn", "stock", "marked"),
    [(_nan_branch, {"eager": 2, "aot_eager": 3}, 2), (_nan_equal, None, 1)],
    ids=["v != v", "nan == nan"],
)
def test_a_nan_made_from_a_marked_float_compares_as_in_python(
    backend: str, fn: Any, stock: Any, marked: int
) -> None:
    """``t = DynamicFloat(0.0)``: ``t * inf`` is NaN, ``t * nan`` too.  Before: compiled
    took the ``else`` of ``v != v`` and the ``if`` of ``nan == nan`` for every value (one
    graph: sympy settled ``Ne(e, e)`` as False, no guard).  Stock torch compiles 0.0 as a
    constant, then makes the float dynamic and is wrong the same way on the third call
    (``v != v``: eager 2s, stock 3s).  Now: one graph per path, eager's numbers."""
    values = [0.0, 1.0, 0.0, -2.5]
    if stock is not None:
        with ds.disabled():
            counter = CountingBackend(backend)
            compiled = torch.compile(fn, backend=counter)
            outs = [compiled(torch.ones(2), v) for v in values]
        assert counter.frame_count == stock[backend]
        assert not torch.equal(outs[2], fn(torch.ones(2), values[2]))  # stock's own error
        torch._dynamo.reset()
    assert _count(fn, values, backend, ds.DynamicFloat) == marked


#: expressions of a marked value that are NaN, infinite or -0.0 for some values
EXPRESSIONS: dict[str, Callable[[Any], Any]] = {
    "t * inf": lambda t: t * math.inf,
    "t + nan": lambda t: t + math.nan,
    "t * 1e308 * 10": lambda t: t * 1e308 * 10,
    "(t * 1e308 * 10) - (t * 1e308 * 10)": lambda t: (t * 1e308 * 10) - (t * 1e308 * 10),
    "t * -0.0": lambda t: t * -0.0,
}
OPERATORS = [operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]
#: what each expression is compared with: itself, zero, -0.0, inf, nan, the value
OTHERS: dict[str, Any] = {
    "itself": None,
    "0.0": 0.0,
    "-0.0": -0.0,
    "inf": math.inf,
    "nan": math.nan,
    "t": "t",
}
VALUES = [0.0, 1.0, -1.0, -0.0, 2.5, 1e308]


def _comparison(expression: Callable[[Any], Any], op: Any, other: Any) -> Callable[..., Any]:
    def fn(x: torch.Tensor, t: float) -> torch.Tensor:
        v = expression(t)
        w = v if other is None else (t if other == "t" else other)
        return x + 1 if op(v, w) else x - 1

    return fn


def _compare_all(
    backend: str, expressions: list[str], others: list[str], values: list[float] = VALUES
) -> None:
    for name in expressions:
        for op in OPERATORS:
            for other in others:
                torch._dynamo.reset()
                fn = _comparison(EXPRESSIONS[name], op, OTHERS[other])
                counter = CountingBackend(backend)
                compiled = torch.compile(fn, backend=counter)
                outcomes = set()
                for t in values:
                    want = fn(torch.zeros(1), t)
                    got = compiled(torch.zeros(1), ds.DynamicFloat(t))
                    assert torch.equal(got, want), (name, op.__name__, other, t)
                    outcomes.add(float(want))
                # a graph per outcome at most: the comparison is a guarded path
                assert counter.frame_count <= len(outcomes), (name, op.__name__, other)


def test_comparisons_of_nan_inf_and_negative_zero_are_pythons() -> None:
    """A sample of the matrix below.  Before (the whole matrix, 2016 comparisons on
    eager): 224 failed (every expression against nan, ``Lt(e, nan)``: TorchRuntimeError
    or an internal-error fallback) and the NaN self-comparisons took the other branch."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", ds.DynscalarWarning)
        _compare_all("eager", ["t * inf"], ["itself", "nan", "-0.0"], [0.0, 1.0, -1.0])


@pytest.mark.broad
@pytest.mark.parametrize("backend", BACKENDS)
def test_every_comparison_of_the_matrix_is_pythons(backend: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", ds.DynscalarWarning)
        _compare_all(backend, list(EXPRESSIONS), list(OTHERS))


def test_a_plain_marked_float_compared_with_a_number_keeps_torchs_guards() -> None:
    """``t > 0.5`` on the marked symbol itself: torch's relation (a finite float), one
    graph per path, as before."""

    def fn(x: torch.Tensor, t: float) -> torch.Tensor:
        return x + 1 if t > 0.5 else x - 1

    assert _count(fn, [0.25, 0.75, 0.3, 0.9], "eager", ds.DynamicFloat) == 2


# ----------------------------------------------------------------------------- division
def _weights(x: torch.Tensor, w: float, w_sum: float) -> torch.Tensor:
    """schedulefree's RAdam in its first steps: ``w_sum`` is still 0.0."""
    try:
        c = w / w_sum
    except ZeroDivisionError:
        c = 0
    return x * c


def _floor(x: torch.Tensor, n: int) -> torch.Tensor:
    try:
        c = 10 // n
    except ZeroDivisionError:
        c = -1
    return x * c


@pytest.mark.parametrize("backend", BACKENDS)
def test_division_by_a_zero_marked_float_is_caught_by_the_users_try(backend: str) -> None:
    """Before: the first call failed into the safety net (an "internal error" warning,
    compiled as stock), and once the float was dynamic the compiled graph divided by zero
    at run time, outside the ``try`` (``ZeroDivisionError`` on the third call).  Stock:
    the same on eager; on aot_eager its tensorified division returns ``inf`` (eager: 0).
    Now: two paths, two graphs, eager's numbers."""
    values = [0.0, 2.0, 0.0, 4.0, -0.0]

    def run(wrap: Any) -> tuple[int, list[Any]]:
        counter = CountingBackend(backend)
        compiled = torch.compile(_weights, backend=counter)
        outs = []
        for w_sum in values:
            try:
                outs.append(compiled(torch.ones(2), 1.5, wrap(w_sum)))
            except ZeroDivisionError as error:
                outs.append(error)
        return counter.frame_count, outs

    with ds.disabled():
        stock, stock_outs = run(float)
    assert stock == 2
    eager = [_weights(torch.ones(2), 1.5, w_sum) for w_sum in values]
    assert not all(  # torch's own hole: a ZeroDivisionError, or inf where eager has 0
        isinstance(o, torch.Tensor) and torch.equal(o, e)
        for o, e in zip(stock_outs, eager, strict=True)
    )
    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ds.DynscalarWarning)
        marked, outs = run(ds.DynamicFloat)
    assert marked == 2
    for w_sum, out in zip(values, outs, strict=True):
        assert torch.equal(out, _weights(torch.ones(2), 1.5, w_sum)), w_sum


@pytest.mark.parametrize("backend", BACKENDS)
def test_floor_division_by_a_zero_marked_int_is_caught(backend: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", ds.DynscalarWarning)
        assert _count(_floor, [0, 3, 0, 5, -2], backend, ds.DynamicInt) == 2


def _divisions(x: torch.Tensor, n: float) -> torch.Tensor:
    out = x.clone()
    for op in (operator.truediv, operator.floordiv, operator.mod):
        try:
            out = out + op(7, n)
        except ZeroDivisionError as error:
            out = out + len(str(error))  # the message is Python's
    try:
        out = out * n**-1
    except ZeroDivisionError:
        out = -out
    return out


@pytest.mark.parametrize("wrap", [ds.DynamicInt, ds.DynamicFloat], ids=["int", "float"])
def test_every_division_raises_pythons_error_with_pythons_message(wrap: Any) -> None:
    # (a negative base's power is torch's to refuse: SymFloat.__pow__ checks the sign)
    values: list[Any] = [0, 2, 5] if wrap is ds.DynamicInt else [0.0, -0.0, 2.5, 3.5]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ds.DynscalarWarning)
        if wrap is ds.DynamicFloat:  # a float ``//`` specializes (see the floor test below)
            warnings.simplefilter("ignore", ds.SpecializationWarning)
        graphs = _count(_divisions, values, "eager", wrap)
    assert graphs == (2 if wrap is ds.DynamicInt else 3)  # floats: zero, then per value


@pytest.mark.parametrize("wrap", [ds.DynamicInt, ds.DynamicFloat], ids=["int", "float"])
def test_divmod_by_a_zero_marked_value_is_caught(wrap: Any) -> None:
    """(Dynamo 2.13 cannot trace ``divmod`` of a symbolic value at all: the frame runs
    eagerly there, marked or not, so only the zero path is compiled here.)"""

    def fn(x: torch.Tensor, n: float) -> torch.Tensor:
        try:
            q, r = divmod(7, n)
        except ZeroDivisionError as error:
            q, r = len(str(error)), 0
        return x * q + r

    values: list[Any] = [0, 0] if wrap is ds.DynamicInt else [0.0, -0.0]
    assert _count(fn, values, "eager", wrap) == 1


def test_a_division_by_zero_outside_a_try_raises_as_in_python() -> None:
    def fn(x: torch.Tensor, t: float) -> torch.Tensor:
        return x * (1 / t)

    compiled = torch.compile(fn, backend=CountingBackend("eager"))
    assert torch.equal(compiled(torch.ones(2), ds.DynamicFloat(2.0)), fn(torch.ones(2), 2.0))
    with pytest.raises(ZeroDivisionError, match="float division by zero"):
        compiled(torch.ones(2), ds.DynamicFloat(0.0))


def test_a_division_by_an_unbacked_zero_is_caught_by_the_users_try() -> None:
    """An unbacked mark promises no guards: the zero test is asked as the user's own
    ``if`` would be (Dynamo's data-dependent branch; the frame runs eagerly).  Before: the
    graph divided at run time, outside the ``try``."""

    def fn(x: torch.Tensor, n: int) -> torch.Tensor:
        try:
            return x * (1 / n)
        except ZeroDivisionError:
            return x - 1

    compiled = torch.compile(fn, backend=CountingBackend("eager"))
    for n in (2, 0, 4):
        got = compiled(torch.ones(2), ds.DynamicInt(n, unbacked=True))
        assert torch.equal(got, fn(torch.ones(2), n)), n


@pytest.mark.parametrize(
    "backend", ["aot_eager", pytest.param("inductor", marks=pytest.mark.inductor)]
)
def test_a_nan_comparison_of_an_unbacked_mark_takes_pythons_branch(backend: str) -> None:
    """No guard can be made on an unbacked value: Dynamo breaks the graph at the branch and
    returns the comparison from the graph.  Inductor computes that output as real algebra
    (``Eq(e, e)`` is ``True``: the long fuzzer profile's program 699 took the ``if``); the
    frame is compiled as stock compiles the plain values, with one warning saying why.
    Stock torch with ``mark_unbacked`` takes the wrong branch too."""

    def fn(x: torch.Tensor, n: int) -> torch.Tensor:
        y = x.clone()
        if (n * math.nan) == (n * math.nan):
            y = y * 3
        return y

    marked = ds.mark_dynamic_args(fn, "n", unbacked=True)
    counter = CountingBackend(backend)
    compiled = torch.compile(marked, backend=counter)
    x = torch.tensor([0.25, -2.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in (4, 7):
            assert torch.equal(compiled(x, n), x), n  # NaN == NaN is False: no `y * 3`
    messages = [str(w.message) for w in caught if issubclass(w.category, ds.DynscalarWarning)]
    if backend == "inductor":
        assert len(messages) == 1 and "leaves the graph as a value" in messages[0], messages
        assert counter.frame_count == 2  # the plain values, as stock compiles them: per value
    else:
        assert messages == []
        assert counter.frame_count == 1  # the graph before the branch; the rest is empty


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_mark_forced_to_its_value_then_compared_with_nan_is_pythons(backend: str) -> None:
    """``math.log(self.s)`` forces the marked int (a guard replaces its symbol by 4); then
    ``self.s + math.nan < 5`` compares two numbers, which sympy cannot order ("Invalid NaN
    comparison": the compile failed with ``TorchRuntimeError`` where eager returns; the long
    fuzzer profile's program 660).  Two numbers compare as Python compares them."""

    class M(torch.nn.Module):
        def __init__(self, s: Any) -> None:
            super().__init__()
            self.s = s

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = x + math.log(self.s)
            if self.s + math.nan < 5:
                return y * 2
            return y / 2

    model, eager = M(ds.DynamicInt(4)), M(ds.DynamicInt(4))
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    x = torch.tensor([0.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ds.DynscalarWarning)  # no safety-net fallback
        warnings.simplefilter("ignore", ds.SpecializationWarning)  # math.log forces s
        for value in (4, 6):
            model.s, eager.s = ds.DynamicInt(value), ds.DynamicInt(value)
            assert torch.equal(compiled(x), eager(x)), value
    assert counter.frame_count == 2  # forced by math.log: a graph per value


@pytest.mark.parametrize("backend", BACKENDS)
def test_arithmetic_on_a_forced_mark_overflows_as_in_python(backend: str) -> None:
    """``math.log(self.t)`` forces the marked float (a guard replaces its symbol by 0.5);
    then ``v = self.t * 1e308 * 10`` is ``inf`` in Python, and ``v - v >= 0`` is False
    (NaN).  sympy multiplied its numbers with arbitrary precision (5e308, finite) and
    decided ``v - v`` as 0: the compiled forward took the branch (the long fuzzer profile,
    program 4369: wrong numbers on aot_eager).  Before: 4.0 too much on both backends."""

    class M(torch.nn.Module):
        def __init__(self, t: Any) -> None:
            super().__init__()
            self.t = t

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = x + math.log(self.t)
            v = self.t * 1e308 * 10
            if v - v >= 0:
                y = y + 4
            return y

    model, eager = M(0.5), M(0.5)
    ds.mark_dynamic_attr(model, "t")
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    x = torch.tensor([0.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ds.DynscalarWarning)  # no safety-net fallback
        warnings.simplefilter("ignore", ds.SpecializationWarning)  # math.log forces t
        for value in (0.5, 1e-300):  # inf (NaN branch), then finite (v - v == 0)
            model.t = eager.t = value
            assert torch.equal(compiled(x), eager(x)), value
    assert counter.frame_count == 2  # forced by math.log: a graph per value, as stock


def _floor_divisions(x: torch.Tensor, n: float) -> torch.Tensor:
    try:
        y = x + 4 // n
    except ZeroDivisionError:
        y = x + 7
    q, r = divmod(n, 0.3)
    return y + q + r + (n // 0.1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_float_floor_division_of_a_mark_is_pythons(backend: str) -> None:
    """torch computes ``a // b`` on a symbolic float as ``floor(a / b)``: ``4 // 0.1`` was
    40.0 compiled, 39.0 in Python (the long fuzzer profile, programs 965 and 3059: wrong
    numbers on aot_eager).  Python's algorithm has no exact symbolic form: the operands are
    specialized (a guard on the value, as stock compiles every float), with the warning
    that says so."""
    counter = CountingBackend(backend)
    fn = ds.dynamic_args("n")(_floor_divisions)
    compiled = torch.compile(fn, backend=counter)
    x = torch.tensor([0.0, 2.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for value in (0.1, 0.7, 0.1):
            assert torch.equal(compiled(x, value), _floor_divisions(x, value)), value
    forced = [w for w in caught if issubclass(w.category, ds.SpecializationWarning)]
    assert forced, "a specialization is announced"
    assert counter.frame_count == 2  # one per value, as stock torch compiles floats


class _Divmod(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.f = ds.DynamicFloat(7.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.r = divmod(self.f, 3)
        return x * self.r[0] + self.r[1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_float_divmod_of_a_mark_stores_the_proxies_eager_holds(backend: str) -> None:
    """A float ``divmod`` of a mark is specialized (Python's numbers, above), and the tuple
    it stores holds ``DynamicFloat``s, as eager's does (after the first fix it held plain
    floats: the write-back table's two ``divmod(f, 3)`` rows)."""
    model, eager = _Divmod(), _Divmod()
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    x = torch.tensor([1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SpecializationWarning)
        for value in (7.5, 4.25):
            model.f = ds.DynamicFloat(value)
            eager.f = ds.DynamicFloat(value)
            assert torch.equal(compiled(x), eager(x)), value
            assert model.r == eager.r
            assert [type(v) for v in model.r] == [ds.DynamicFloat, ds.DynamicFloat]
    assert counter.frame_count == 2  # specialized: one graph per value, as stock


class _FloorOfSpecialized(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.s = ds.DynamicFloat(-1.25)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.s //= 2  # specialized (Python's float //): a constant standing for the proxy
        self.s = self.s + 1
        self.u = math.floor(self.s)
        return x * self.u


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_math_function_of_a_specialized_mark_stores_what_eager_stores(backend: str) -> None:
    """``math.floor`` of a proxy compiled as a constant is folded by Dynamo (a torch C
    binding, ``TorchInGraphFunctionVariable``), and write-back stored a plain ``int`` where
    eager's ``DynamicFloat.__floor__`` gives a ``DynamicInt`` (the long fuzzer profile,
    program 543): the folded result is recorded as the call that made it."""
    model, eager = _FloorOfSpecialized(), _FloorOfSpecialized()
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    x = torch.tensor([1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SpecializationWarning)
        for value in (-1.25, 6.5):
            model.s = ds.DynamicFloat(value)
            eager.s = ds.DynamicFloat(value)
            assert torch.equal(compiled(x), eager(x)), value
            assert type(model.u) is type(eager.u) is ds.DynamicInt and model.u == eager.u
            assert type(model.s) is type(eager.s) and model.s == eager.s
    assert counter.frame_count == 2  # specialized: one graph per value, as stock


def test_torchs_own_nan_comparison_error_is_not_reported_as_dynscalars() -> None:
    """Once a marked float has installed the comparison hooks in the process, an unmarked
    float (another instance of its class is marked) that is NaN and then 2.5
    (``self.s + math.nan < 2``) met torch's own comparison error ("Invalid NaN
    comparison"), reported as "dynscalar: an internal error in its hook on SymNode._lt ...
    Please report this" (the long fuzzer profile, program 1721, after program 1720 in the
    same process).  No internal error now: an error of torch's own passes on as torch's.
    Two numbers one of them NaN now compare as Python (program 1290), so calls 3 and 4
    raise eager's ``TypeError`` (``range`` of a float) where stock fails the compile."""

    class M(torch.nn.Module):
        def __init__(self, s: Any) -> None:
            super().__init__()
            self.s = s

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = x + self.s % 3
            if self.s + math.nan < 2:
                y = y * 2
            for _ in range(self.s % 3):  # eager raises: a float
                y = y + 1
            return y

    torch.compile(lambda x, t: x * t, backend="aot_eager")(torch.ones(2), ds.DynamicFloat(0.5))
    torch._dynamo.reset()

    def run() -> tuple[list[str], int]:
        counter = CountingBackend("aot_eager")
        ds.mark_dynamic_attr(M(5), "s", max=11)  # another instance: the class is marked
        model = M(math.nan)
        compiled = torch.compile(model, backend=counter)
        outcomes = []
        for value in (math.nan, math.nan, 2.5, 2.5):
            model.s = value
            try:
                outcomes.append(str(compiled(torch.ones(2)).tolist()))
            except Exception as error:  # noqa: BLE001 - torch's own, as stock raises it
                outcomes.append(type(error).__name__)
        torch._dynamo.reset()
        return outcomes, counter.frame_count

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = run()
    internal = [str(w.message) for w in caught if "internal error" in str(w.message)]
    assert internal == []
    with ds.disabled():
        stock = run()
    # the NaN calls: torch's own failure, as stock; 2.5: eager's TypeError (``range`` of a
    # float) where stock fails the compile ("Invalid NaN comparison", TorchRuntimeError)
    assert ours[0][:2] == stock[0][:2] and ours[1] == stock[1]
    assert ours[0][2:] == ["TypeError", "TypeError"]


def _reciprocal(x: torch.Tensor, n: Any) -> torch.Tensor:
    y = x.clone()
    try:
        y = y * (1 / n)
    except ZeroDivisionError:
        y = y - 1
    return y


def test_a_plain_zero_after_a_marked_divisor_is_caught_by_the_users_try() -> None:
    """A marked divisor's graph guards ``n != 0``; a plain 0 then compiles as a symbolic
    int (automatic dynamic: the value changed) that torch divides while tracing, and the
    compile failed (``TorchRuntimeError``) where eager takes the ``except`` (the long fuzzer
    profile, program 1666).  A symbolic divisor that is 0 asks Python's question too:
    torch would fail there anyway."""
    counter = CountingBackend("eager")
    compiled = torch.compile(_reciprocal, backend=counter)
    x = torch.tensor([0.0, 2.0])
    for value in (6442450944, ds.DynamicInt(6), 0):
        assert torch.equal(compiled(x, value), _reciprocal(x, int(value))), value
    assert counter.frame_count == 3


def test_a_plain_float_that_became_symbolic_compares_with_nan_as_python() -> None:
    """After a ``DynamicFloat`` at the same attribute, a plain float is symbolic
    (automatic dynamic); ``self.s + math.nan < 6`` is then a comparison of numbers that
    sympy cannot order, and the compile failed ("Invalid NaN comparison",
    ``TorchRuntimeError``) where eager returns (the long fuzzer profile, program 1290)."""

    class M(torch.nn.Module):
        def __init__(self, s: Any) -> None:
            super().__init__()
            self.s = s

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = x * 2 if self.s + math.nan < 6 else x / 2
            self.u = math.prod([self.s, 2])
            return y

    model, eager = M(-0.0), M(-0.0)
    counter = CountingBackend("eager")
    compiled = torch.compile(model, backend=counter)
    x = torch.tensor([0.0, 2.0])
    for value in (ds.DynamicFloat(1e10), 5, 1e10):
        model.s, eager.s = value, value
        assert torch.equal(compiled(x), eager(x)), value
        assert type(model.u) is type(eager.u) and model.u == eager.u, value
    assert counter.frame_count == 3


def test_torchs_assertion_on_a_marked_int_expression_specializes_it() -> None:
    """``math.floor((s // 2) * 0.5)`` with ``s == -1``: torch's ``Mod`` asserts a
    non-negative dividend (``AssertionError(-1)``; stock torch with ``dynamic=True`` fails
    the same), and the compile fell into the safety net ("internal error", with a strict
    mark ``BridgeError``; the long fuzzer profile, program 1796).  The marked int is
    specialized instead (a restart; one ``SpecializationWarning``)."""

    def fn(x: torch.Tensor, s: int) -> torch.Tensor:
        return x + math.floor((s // 2) * 0.5)

    counter = CountingBackend("eager")
    compiled = torch.compile(fn, backend=counter)
    x = torch.tensor([0.0, 2.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for value in (-1, -1, 6):
            assert torch.equal(compiled(x, ds.DynamicInt(value)), fn(x, value)), value
    messages = [str(w.message) for w in caught if issubclass(w.category, ds.DynscalarWarning)]
    assert not any("internal error" in m for m in messages), messages
    assert any("assertion of torch's own" in m for m in messages), messages
    assert counter.frame_count == 2  # -1 specialized; 6 symbolic
