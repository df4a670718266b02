"""``math`` functions on marked values (``dynscalar/ops/_math.py``, ``_bridge/_ops.py``).

Each form is checked against its ``math`` function on special and ordinary values (bits
equal, or both raise); each compiled call is compared with eager, its exception included,
with an exact graph count for a ``DynamicInt`` and a ``DynamicFloat``.
"""

from __future__ import annotations

import math
import struct
import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch

import dynscalar as ds
from dynscalar.ops._math import FORMS

from .helpers import CountingBackend

BACKENDS = ["eager", "aot_eager"]
INF, NAN = float("inf"), float("nan")
SPECIALS = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    -0.5,
    2.0,
    -2.0,
    3.0,
    -3.0,
    2.5,
    -2.5,
    0.9,
    1 / 3,
    1e-300,
    -1e-300,
    1e300,
    -1e300,
    400.0,
    -400.0,
    INF,
    -INF,
    NAN,
]


def _bits(value: float) -> bytes:
    return struct.pack("<d", value)


def _outcome(fn: Callable[..., Any], *args: float) -> Any:
    try:
        return _bits(fn(*args))
    except (ValueError, OverflowError, ZeroDivisionError) as exc:
        return type(exc)


@pytest.mark.parametrize("fn", list(FORMS), ids=lambda f: f.__name__)
def test_each_form_computes_its_math_function_inside_its_domain(fn: Any) -> None:
    """Bit for bit (NaN payloads too) or the same exception type; outside the domain,
    ``math`` raises ``ValueError`` (the compiled call raises it through the domain check)."""
    form = FORMS[fn]
    arity = 2 if fn is math.pow else 1
    grid = [(x, y) for x in SPECIALS for y in SPECIALS] if arity == 2 else [(x,) for x in SPECIALS]
    for args in grid:
        finite = all(math.isfinite(a) for a in args)
        if form.domain is not None and finite and not form.domain(*args):
            assert _outcome(fn, *args) is ValueError, args
            continue
        assert _outcome(form.compute, *args) == _outcome(fn, *args), args


def _compiled(
    fn: Callable[[torch.Tensor, Any], torch.Tensor], backend: str, values: list[Any], kind: type
) -> int:
    """Call ``fn`` compiled on a proxy of ``kind`` holding each value, beside eager; the
    outcome (result bits or exception type and message) must be eager's."""
    counter = CountingBackend(backend)
    compiled = torch.compile(fn, backend=counter)
    x = torch.ones(3, dtype=torch.float64)
    for value in values:
        try:
            want: Any = fn(x, value)
        except Exception as exc:  # noqa: BLE001 - eager's exception is the expected outcome
            with pytest.raises(type(exc), match=str(exc)):
                compiled(x, kind(value))
            continue
        got = compiled(x, kind(value))
        assert torch.equal(got, want), (value, got, want)
    return counter.frame_count


CALLS: dict[str, Callable[[torch.Tensor, Any], torch.Tensor]] = {
    "1 - math.pow(0.9, n)": lambda x, n: x * (1.0 - math.pow(0.9, n)),
    "math.pow(n, 2)": lambda x, n: x * math.pow(n, 2),
    "math.pow(n, 0.5)": lambda x, n: x * math.pow(n, 0.5),
    "math.fabs(n)": lambda x, n: x * math.fabs(n),
    "math.degrees(n)": lambda x, n: x * math.degrees(n),
    "math.sqrt(n)": lambda x, n: x * math.sqrt(n),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", [ds.DynamicInt, ds.DynamicFloat], ids=lambda k: k.__name__)
@pytest.mark.parametrize("call", list(CALLS))
def test_a_math_function_with_a_form_compiles_once(call: str, kind: type, backend: str) -> None:
    values = [3, 4, 7, 12] if kind is ds.DynamicInt else [3.5, 4.25, 7.0, 12.75]
    assert _compiled(CALLS[call], backend, values, kind) == 1


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", [ds.DynamicInt, ds.DynamicFloat], ids=lambda k: k.__name__)
def test_math_pow_raises_where_eager_raises(kind: type, backend: str) -> None:
    """A zero base with a negative exponent and a negative base with a non-integer exponent
    raise ``ValueError: math domain error`` whether the graph was compiled for them or for
    a value in the domain; a negative base with an integer exponent is a power."""

    def inverse(x: torch.Tensor, n: Any) -> torch.Tensor:
        return x * math.pow(n, -1.0)

    def cube_root(x: torch.Tensor, n: Any) -> torch.Tensor:
        return x * math.pow(n, 1 / 3)

    def cube(x: torch.Tensor, n: Any) -> torch.Tensor:
        return x * math.pow(n, 3)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SpecializationWarning)  # a constant where it raises
        # in the domain first: one graph, guarded on the domain; a value outside it fails
        # the guard, raises while tracing (no graph) and the graph serves the values after
        assert _compiled(inverse, backend, [2, 0, 4, 0], kind) == 1
        assert _compiled(cube_root, backend, [8, -8, 27], kind) == 1
        # a negative base: torch's symbolic `**` refuses one, so it is a constant (one graph)
        assert _compiled(cube, backend, [2, -2, 3], kind) == 2
        # out of the domain at the first call: Dynamo gives up on a frame that raised while
        # tracing and runs it eagerly from then on, as it does for a plain value
        assert _compiled(inverse, backend, [0, 2, 5], kind) == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_math_pow_overflow_raises_overflow_error(backend: str) -> None:
    def power(x: torch.Tensor, n: Any) -> torch.Tensor:
        return x * math.pow(10.0, n)

    counter = CountingBackend(backend)
    compiled = torch.compile(power, backend=counter)
    x = torch.ones(2, dtype=torch.float64)
    assert torch.equal(compiled(x, ds.DynamicInt(3)), power(x, 3))
    with pytest.raises(OverflowError):  # the graph's `**` raises it, as math.pow does
        compiled(x, ds.DynamicInt(400))
    assert counter.frame_count == 1


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ["exp", "log", "log10", "expm1", "atan2"])
def test_math_functions_without_a_form_specialize_as_stock_does(name: str, backend: str) -> None:
    fn = getattr(math, name)

    def call(x: torch.Tensor, n: Any) -> torch.Tensor:
        return x * (fn(n, 2.0) if name == "atan2" else fn(n))

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graphs = _compiled(call, backend, [1.5, 2.5, 3.5], ds.DynamicFloat)
    assert graphs == 3
    assert any(issubclass(w.category, ds.SpecializationWarning) for w in caught)


class Debiased(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.step = ds.DynamicInt(0)
        self.correction = 0.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.step += 1
        self.correction = 1.0 - math.pow(0.9, self.step)
        return x / self.correction


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_math_result_is_written_back_as_the_plain_float_eager_stores(backend: str) -> None:
    model, eager = Debiased(), Debiased()
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    x = torch.ones(2, dtype=torch.float64)
    for _ in range(4):
        torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
        assert type(model.step) is ds.DynamicInt and model.step == eager.step
        assert type(model.correction) is float and model.correction == eager.correction
    assert counter.frame_count == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_unmarked_values_keep_stock_behaviour(backend: str) -> None:
    """Plain ints: Dynamo's automatic dynamic makes the second value symbolic, and
    ``math.pow`` forces it, as without dynscalar (one graph per value)."""

    def debias(x: torch.Tensor, n: int) -> torch.Tensor:
        return x * (1.0 - math.pow(0.9, n))

    counter = CountingBackend(backend)
    compiled = torch.compile(debias, backend=counter)
    x = torch.ones(2, dtype=torch.float64)
    for n in (1, 2, 3, 4):
        assert torch.equal(compiled(x, n), debias(x, n))
    assert counter.frame_count == 4


@pytest.mark.inductor
def test_inductor_keeps_math_pow_specialized() -> None:
    """Inductor computes ``**`` as a tensor op, which returns ``inf`` where ``math.pow``
    raises ``OverflowError``: there the value is specialized, as stock torch does."""

    def debias(x: torch.Tensor, n: Any) -> torch.Tensor:
        return x * (1.0 - math.pow(0.9, n))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SpecializationWarning)
        assert _compiled(debias, "inductor", [1, 2, 3], ds.DynamicInt) == 3


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_strict_mark_a_math_function_forces_raises_specialization_error(backend: str) -> None:
    """torch forces the value inside its fake call of ``math.log`` and wraps the error in
    ``TorchRuntimeError``; the user gets the ``SpecializationError`` (found by the fuzzer)."""

    def f(x: torch.Tensor, n: Any) -> torch.Tensor:
        return x + math.log(abs(n) + 1)

    compiled = torch.compile(f, backend=backend)
    with pytest.raises(ds.SpecializationError, match=r"math\.log"):
        compiled(torch.ones(2), ds.DynamicFloat(-1.25, strict=True))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_strict_marks_error_is_not_caught_by_the_compiled_code(backend: str) -> None:
    """From torch 2.14 on, an error raised while an op runs on fake tensors becomes a
    ``RuntimeError`` of the traced program; a ``except RuntimeError`` there must not swallow
    the strict mark's ``SpecializationError`` (eager raises nothing, so the compiled code
    would otherwise take the handler's path)."""

    def f(x: torch.Tensor, n: Any) -> torch.Tensor:
        try:
            return x + math.log(abs(n) + 1)
        except RuntimeError:
            return x

    compiled = torch.compile(f, backend=backend)
    with pytest.raises(ds.SpecializationError, match=r"math\.log"):
        compiled(torch.ones(2), ds.DynamicFloat(-1.25, strict=True))
