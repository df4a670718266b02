"""DynamicInt / DynamicFloat behave like the int / float they hold, everywhere.

Each test states one rule of docs/behaves-like.md.  Property tests (hypothesis) compare a
proxy with its plain value: same result (or the same exception type), and the result type
the propagation rules promise.  Where a proxy cannot behave like its value, the docs page
gives the reason and a test here pins the documented behaviour (the error users will see)
together with the documented workaround.

The suite runs twice in CI: with wrapt's C extension and with WRAPT_DISABLE_EXTENSIONS=true.
"""

from __future__ import annotations

import contextlib
import copy
import decimal
import json
import math
import numbers
import operator
import os
import pickle
import statistics
import struct
import sys
import warnings
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from dynscalar import DynamicFloat, DynamicInt, DynamicSpec, is_dynamic_scalar

# Hypothesis imports this module (and libcst) only when a property test fails, to suggest a
# patch; libcst's import warns (mypy_extensions.TypedDict is deprecated), which
# `filterwarnings = error` turns into a pytest INTERNALERROR that hides the failure.
with warnings.catch_warnings(), contextlib.suppress(ImportError):  # libcst is optional
    warnings.simplefilter("ignore", DeprecationWarning)
    import hypothesis.extra._patching  # noqa: F401

FAST = settings(max_examples=30, deadline=None)

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
SMALL_INTS = st.integers(min_value=-1000, max_value=1000)
INTS = st.one_of(SMALL_INTS, INT64)
FLOATS = st.floats(allow_nan=True, allow_infinity=True)
FINITE = st.floats(allow_nan=False, allow_infinity=False)


def proxy(value: int | float) -> DynamicInt | DynamicFloat:
    return DynamicInt(value) if type(value) is int else DynamicFloat(value)


def plain(value: Any) -> Any:
    """The plain value of a result, also inside divmod's tuple."""
    if is_dynamic_scalar(value):
        return value.value
    if type(value) is tuple:
        return tuple(plain(item) for item in value)
    return value


PROMISED_TYPE = {int: DynamicInt, float: DynamicFloat, bool: bool, complex: complex}


def outcome(fn: Callable[..., Any], *args: Any) -> tuple[str, Any]:
    try:
        return "value", fn(*args)
    except Exception as error:  # noqa: BLE001 - the exception type is the outcome
        return "raises", type(error)


def assert_behaves_like(got: tuple[str, Any], want: tuple[str, Any]) -> None:
    """Same exception type, or the same value (repr: exact for floats, nan and -0.0) and the
    promised type: int -> DynamicInt, float -> DynamicFloat, tuples item by item."""
    assert got[0] == want[0], f"proxy {got}, plain {want}"
    if got[0] == "raises":
        assert got[1] is want[1]
        return
    result, expected = got[1], want[1]
    assert repr(plain(result)) == repr(expected)
    if type(expected) is tuple:
        assert type(result) is tuple
        assert [type(r) for r in result] == [PROMISED_TYPE[type(e)] for e in expected]
    else:
        assert type(result) is PROMISED_TYPE[type(expected)]


# ----------------------------------------------------------------------------- operators
ARITHMETIC = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "divmod": divmod,
    "**": operator.pow,
}
BITWISE = {
    "<<": operator.lshift,
    ">>": operator.rshift,
    "&": operator.and_,
    "|": operator.or_,
    "^": operator.xor,
}
COMPARISON = {
    "<": operator.lt,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    ">=": operator.ge,
}
INPLACE = {
    "+": operator.iadd,
    "-": operator.isub,
    "*": operator.imul,
    "/": operator.itruediv,
    "//": operator.ifloordiv,
    "%": operator.imod,
    "**": operator.ipow,
    "<<": operator.ilshift,
    ">>": operator.irshift,
    "&": operator.iand,
    "|": operator.ior,
    "^": operator.ixor,
}
ALL_BINARY = {**ARITHMETIC, **BITWISE, **COMPARISON}


def operands(name: str, left: st.SearchStrategy[Any]) -> st.SearchStrategy[tuple[Any, Any]]:
    """Operand pairs; exponents and shift counts stay small so results stay small."""
    if name == "**":
        return st.tuples(left, st.one_of(st.integers(-4, 40), st.floats(-4, 4)))
    if name in ("<<", ">>"):
        return st.tuples(left, st.integers(-2, 70))
    return st.tuples(left, st.one_of(INTS, FLOATS))


def check_all_forms(name: str, op: Callable[[Any, Any], Any], a: Any, b: Any) -> None:
    want = outcome(op, a, b)
    assert_behaves_like(outcome(op, proxy(a), b), want)  # proxy op plain
    assert_behaves_like(outcome(op, a, proxy(b)), want)  # plain op proxy (reflected)
    assert_behaves_like(outcome(op, proxy(a), proxy(b)), want)
    if name in INPLACE:
        value = proxy(a)
        assert_behaves_like(outcome(INPLACE[name], value, b), want)
        assert value.value == a or a != a  # in-place built a new object; the old one kept


@pytest.mark.parametrize("name", sorted(ALL_BINARY))
@FAST
@given(data=st.data())
def test_binary_operator_with_int_proxy_equals_plain(name: str, data: st.DataObject) -> None:
    """`x op y`, `y op x`, `x op x2` and `x op= y` give the plain result; ints stay
    DynamicInt, floats become DynamicFloat, comparisons give bool, errors are the same."""
    a, b = data.draw(operands(name, INTS))
    check_all_forms(name, ALL_BINARY[name], a, b)


@pytest.mark.parametrize("name", sorted(ALL_BINARY))
@FAST
@given(data=st.data())
def test_binary_operator_with_float_proxy_equals_plain(name: str, data: st.DataObject) -> None:
    """The same for DynamicFloat, including nan, inf, -0.0 and the TypeError of `0.5 & 1`."""
    a, b = data.draw(operands(name, FLOATS))
    check_all_forms(name, ALL_BINARY[name], a, b)


@FAST
@given(base=INTS, exponent=st.integers(-3, 200), modulus=SMALL_INTS)
def test_pow_with_modulo_equals_plain(base: int, exponent: int, modulus: int) -> None:
    """`pow(x, e, m)` with the proxy as base, and with proxies as exponent and modulus too."""
    want = outcome(pow, base, exponent, modulus)
    assert_behaves_like(outcome(pow, proxy(base), exponent, modulus), want)
    assert_behaves_like(outcome(pow, proxy(base), proxy(exponent), modulus), want)
    assert_behaves_like(outcome(pow, proxy(base), exponent, proxy(modulus)), want)


def test_pow_with_modulo_and_a_plain_base_is_documented_as_unsupported() -> None:
    """Before Python 3.14, three-argument pow only asks the base's type; a plain int base
    refuses a proxy exponent or modulus (docs: "pow(plain, proxy, m)")."""
    if sys.version_info >= (3, 14):
        assert pow(2, DynamicInt(10), 1000) == 24
        return
    with pytest.raises(TypeError, match="unsupported operand"):
        pow(2, DynamicInt(10), 1000)
    with pytest.raises(TypeError, match="unsupported operand"):
        pow(2, 10, DynamicInt(1000))
    assert pow(2, int(DynamicInt(10)), 1000) == 24  # the workaround


UNARY = {
    "-x": operator.neg,
    "+x": operator.pos,
    "abs": abs,
    "~x": operator.invert,
    "round": round,
    "math.trunc": math.trunc,
    "math.floor": math.floor,
    "math.ceil": math.ceil,
}


@pytest.mark.parametrize("name", sorted(UNARY))
@FAST
@given(value=st.one_of(INTS, FLOATS))
def test_unary_operator_equals_plain(name: str, value: int | float) -> None:
    """abs/neg/pos/invert, round() and math.trunc/floor/ceil: plain result, promised type
    (round(float) -> DynamicInt), same error (round(nan) -> ValueError, ~float -> TypeError)."""
    assert_behaves_like(outcome(UNARY[name], proxy(value)), outcome(UNARY[name], value))


@FAST
@given(value=st.one_of(INTS, FLOATS), ndigits=st.integers(-5, 5))
def test_round_with_digits_equals_plain(value: int | float, ndigits: int) -> None:
    """round(x, n): a float stays DynamicFloat, an int stays DynamicInt; n may be a proxy."""
    want = outcome(round, value, ndigits)
    assert_behaves_like(outcome(round, proxy(value), ndigits), want)
    assert_behaves_like(outcome(round, proxy(value), DynamicInt(ndigits)), want)


@FAST
@given(value=st.one_of(INTS, FLOATS))
def test_conversions_leave_dynamic_and_equal_plain(value: int | float) -> None:
    """int(), float(), complex(), bool() and operator.index() return plain values."""
    x = proxy(value)
    for convert in (int, float, complex, bool, operator.index):
        got, want = outcome(convert, x), outcome(convert, value)
        assert got[0] == want[0]
        if got[0] == "value":
            assert type(got[1]) is type(want[1]) and repr(got[1]) == repr(want[1])
        else:
            assert got[1] is want[1]


@FAST
@given(value=st.one_of(INTS, st.floats(allow_nan=False)))
def test_hash_equals_plain_and_keys_are_interchangeable(value: int | float) -> None:
    """hash(x) == hash(value): a proxy finds a plain key and a plain value finds a proxy key."""
    x = proxy(value)
    assert hash(x) == hash(value)
    assert {x: "found"}[value] == "found"
    assert {value: "found"}[x] == "found"
    assert len({x, value}) == 1 and x in {value} and value in {x}


def test_hash_of_nan_follows_the_wrapped_object() -> None:
    """nan hashes by identity (Python 3.10+); a proxy hashes like the float object it holds."""
    nan = float("nan")
    assert hash(DynamicFloat(nan)) == hash(nan)


# ----------------------------------------------------------------------------- type propagation
i, f = DynamicInt(6), DynamicFloat(1.5)
TENSOR = torch.tensor([1.0, 2.0])

PROPAGATION = [
    ("int + int", lambda: i + 1, DynamicInt),
    ("int + int, reflected", lambda: 1 + i, DynamicInt),
    ("int - int", lambda: i - 1, DynamicInt),
    ("int * int", lambda: 2 * i, DynamicInt),
    ("int // int", lambda: i // 4, DynamicInt),
    ("int % int", lambda: 20 % i, DynamicInt),
    ("int ** int", lambda: i**2, DynamicInt),
    ("int ** negative int", lambda: i**-1, DynamicFloat),
    ("int << int", lambda: 1 << i, DynamicInt),
    ("int & int", lambda: i & 3, DynamicInt),
    ("-int", lambda: -i, DynamicInt),
    ("abs(int)", lambda: abs(-i), DynamicInt),
    ("~int", lambda: ~i, DynamicInt),
    ("int / int", lambda: i / 4, DynamicFloat),
    ("int / int, reflected", lambda: 3 / i, DynamicFloat),
    ("int * float", lambda: i * 0.5, DynamicFloat),
    ("float * int", lambda: 0.5 * i, DynamicFloat),
    ("DynamicInt * DynamicFloat", lambda: i * f, DynamicFloat),
    ("DynamicFloat * DynamicInt", lambda: f * i, DynamicFloat),
    ("float + float", lambda: f + 0.25, DynamicFloat),
    ("float // float", lambda: f // 0.5, DynamicFloat),
    ("float + int, reflected", lambda: 1 + f, DynamicFloat),
    ("round(float)", lambda: round(f), DynamicInt),
    ("round(float, 1)", lambda: round(f, 1), DynamicFloat),
    ("math.floor(float)", lambda: math.floor(f), DynamicInt),
    ("int < int", lambda: i < 7, bool),
    ("int == float", lambda: i == 6.0, bool),
    ("float >= proxy", lambda: f >= i, bool),
    ("proxy == str", lambda: i == "6", bool),
    ("int * tensor", lambda: i * TENSOR, torch.Tensor),
    ("tensor * int", lambda: TENSOR * i, torch.Tensor),
    ("float - tensor", lambda: f - TENSOR, torch.Tensor),
    ("tensor / float", lambda: TENSOR / f, torch.Tensor),
    ("int < tensor", lambda: i < TENSOR, torch.Tensor),
    ("int(proxy)", lambda: int(f), int),
    ("float(proxy)", lambda: float(i), float),
    ("operator.index(proxy)", lambda: operator.index(i), int),
]


@pytest.mark.parametrize(
    ("expression", "make", "kind"), PROPAGATION, ids=[p[0] for p in PROPAGATION]
)
def test_result_type_propagation(expression: str, make: Callable[[], Any], kind: type) -> None:
    """Arithmetic stays dynamic (int -> DynamicInt, float -> DynamicFloat, true division and
    mixing with a float -> DynamicFloat, from either side); comparisons give bool; with a
    tensor the result is a tensor; explicit conversions leave dynamic."""
    assert type(make()) is kind


def test_divmod_gives_a_tuple_of_proxies() -> None:
    q, r = divmod(i, 4)
    assert (type(q), type(r), q, r) == (DynamicInt, DynamicInt, 1, 2)
    q, r = divmod(f, 1.0)
    assert (type(q), type(r), q, r) == (DynamicFloat, DynamicFloat, 1.0, 0.5)


def test_derived_values_keep_dynamism_and_drop_the_range() -> None:
    """`unbacked` is inherited by every derived int (floats are always backed: torch has no
    unbacked float input); `min`/`max` describe one variable, so arithmetic drops them, while
    `x += 1` is the same variable and keeps them."""
    x = DynamicInt(3, unbacked=True, min=0, max=10)
    for derived in (x + 1, 1 + x, -x, divmod(x, 2)[0], round(x), x**2):
        assert derived.spec == DynamicSpec(unbacked=True)
    for derived in (x * 2.0, x / 2, 2.0 * x):
        assert type(derived) is DynamicFloat and derived.spec == DynamicSpec()
    y = x
    y += 1
    assert y.spec == x.spec and y == 4 and x == 3


# ----------------------------------------------------------------------------- Python & stdlib
def test_str_is_the_plain_value_and_repr_names_the_class() -> None:
    assert (str(DynamicInt(7)), str(DynamicFloat(0.5))) == ("7", "0.5")
    assert repr(DynamicInt(7)) == "DynamicInt(7)"
    assert repr(DynamicFloat(0.5)) == "DynamicFloat(0.5)"
    assert repr(DynamicInt(7, unbacked=True, max=9)) == "DynamicInt(7, unbacked=True, max=9)"
    assert f"{DynamicInt(7)}" == "7" and f"{DynamicInt(7)!r}" == "DynamicInt(7)"
    printf_style = "%s %d %.1f" % (DynamicInt(7), DynamicInt(7), DynamicFloat(0.5))  # noqa: UP031
    assert printf_style == "7 7 0.5"


FORMAT_SPECS = ["", "d", "05d", "+d", "x", "#b", "o", ",", "_", ">8", "^9", "e", ".3f", "g", "%"]


@FAST
@given(value=st.one_of(INTS, FLOATS), spec=st.sampled_from(FORMAT_SPECS))
def test_format_spec_equals_plain(value: int | float, spec: str) -> None:
    """format(x, spec) and f"{x:spec}" give the plain value's text, or the same error."""
    x = proxy(value)
    want = outcome(format, value, spec)
    assert outcome(format, x, spec) == want
    assert outcome(lambda: f"{x:{spec}}") == want


@pytest.mark.parametrize(("fmt", "value"), [("q", 7), ("i", -3), ("B", 255), ("d", 0.5)])
def test_struct_pack_equals_plain(fmt: str, value: int | float) -> None:
    assert struct.pack(fmt, proxy(value)) == struct.pack(fmt, value)
    assert struct.pack("d", DynamicInt(3)) == struct.pack("d", 3)
    assert struct.pack("e", DynamicFloat(0.5)) == struct.pack("e", 0.5)


def test_json_dumps_is_documented_as_unsupported() -> None:
    """json's encoders test for an exact int/float (C: PyLong_Check; Python: int.__repr__);
    docs: pass `default=` or plain values."""
    with pytest.raises(TypeError, match="not JSON serializable"):
        json.dumps({"step": DynamicInt(3)})
    with pytest.raises(TypeError, match="not JSON serializable"):
        json.dumps([DynamicFloat(0.5)])
    data = {"step": DynamicInt(3), "lr": [DynamicFloat(0.5)]}
    assert json.dumps(data, default=lambda o: o.value) == '{"step": 3, "lr": [0.5]}'


@FAST
@given(n=st.integers(0, 40), seq=st.lists(st.integers(), max_size=50))
def test_index_range_and_slicing_equal_plain(n: int, seq: list[int]) -> None:
    """operator.index, range, slicing, list/tuple/str indexing and repetition."""
    x = DynamicInt(n)
    assert operator.index(x) == n and type(operator.index(x)) is int
    assert list(range(x)) == list(range(n))
    assert range(0, 100, x or 1) == range(0, 100, n or 1)
    assert seq[x:] == seq[n:] and seq[:x] == seq[:n] and seq[-x:] == seq[-n:]
    assert seq[:: x or 1] == seq[:: n or 1]
    assert outcome(lambda: seq[x]) == outcome(lambda: seq[n])
    assert outcome(lambda: tuple(seq)[-x]) == outcome(lambda: tuple(seq)[-n])
    assert "ab" * x == "ab" * n and [0] * x == [0] * n
    assert bytes(x) == bytes(n) and bytearray(x) == bytearray(n)
    assert hex(x) == hex(n) and bin(x) == bin(n) and oct(x) == oct(n)


MATH_1 = [math.sqrt, math.exp, math.log, math.sin, math.atan, math.isfinite, math.isnan]
MATH_1 += [math.fabs, math.gamma, math.erf, math.degrees]


@pytest.mark.parametrize("fn", MATH_1, ids=lambda fn: fn.__name__)
@FAST
@given(value=st.one_of(SMALL_INTS, FLOATS))
def test_math_functions_equal_plain(fn: Callable[[Any], Any], value: int | float) -> None:
    got, want = outcome(fn, proxy(value)), outcome(fn, value)
    assert got[0] == want[0] and repr(got[1]) == repr(want[1])


@FAST
@given(a=st.integers(0, 300), b=st.integers(0, 300), x=FINITE, y=FINITE)
def test_integer_and_two_argument_math_functions_equal_plain(
    a: int, b: int, x: float, y: float
) -> None:
    A, B, X, Y = DynamicInt(a), DynamicInt(b), DynamicFloat(x), DynamicFloat(y)
    assert math.gcd(A, B) == math.gcd(a, b) and math.lcm(A, b) == math.lcm(a, b)
    assert math.comb(A, B) == math.comb(a, b) and math.perm(A, B) == math.perm(a, b)
    assert math.isqrt(A) == math.isqrt(a) and math.factorial(A % 50) == math.factorial(a % 50)
    for fn in (math.atan2, math.copysign, math.hypot, math.isclose, math.remainder, math.fmod):
        got, want = outcome(fn, X, Y), outcome(fn, x, y)
        assert got[0] == want[0] and repr(got[1]) == repr(want[1])
    assert outcome(math.fsum, [X, A, Y]) == outcome(math.fsum, [x, a, y])
    assert outcome(math.pow, X, A % 8) == outcome(math.pow, x, a % 8)


def test_math_ldexp_with_a_proxy_exponent_is_documented_as_unsupported() -> None:
    """math.ldexp checks its exponent with PyLong_Check; docs: pass int(e)."""
    assert math.ldexp(DynamicFloat(0.5), 3) == 4.0  # a proxy mantissa is fine
    with pytest.raises(TypeError, match="Expected an int as second argument"):
        math.ldexp(0.5, DynamicInt(3))
    assert math.ldexp(0.5, int(DynamicInt(3))) == 4.0


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: decimal.Decimal(DynamicInt(3)), "conversion from DynamicInt to Decimal"),
        (lambda: timedelta(seconds=DynamicInt(3)), "unsupported type for timedelta"),
        (lambda: statistics.mean([DynamicInt(3), DynamicInt(5)]), "expected an int"),
    ],
    ids=["decimal.Decimal", "datetime.timedelta", "statistics.mean"],
)
def test_other_exact_type_checks_are_documented_as_unsupported(
    call: Callable[[], Any], error: str
) -> None:
    """C code that tests for an exact int/float refuses a proxy (docs: "exact type checks")."""
    with pytest.raises(TypeError, match=error):
        call()


def test_numbers_abcs_and_isinstance() -> None:
    """isinstance sees the wrapped value: DynamicInt is Integral, DynamicFloat is Real and
    not Integral; type() and is_dynamic_scalar tell a proxy from a plain value."""
    x, y = DynamicInt(3), DynamicFloat(0.5)
    for abc in (numbers.Number, numbers.Complex, numbers.Real, numbers.Rational):
        assert isinstance(x, abc)
    assert isinstance(x, numbers.Integral) and isinstance(x, int) and not isinstance(x, float)
    assert isinstance(y, numbers.Real) and isinstance(y, float)
    assert not isinstance(y, numbers.Integral) and not isinstance(y, int)
    assert not isinstance(x, bool)
    assert type(x) is DynamicInt and is_dynamic_scalar(x) and not is_dynamic_scalar(3)


def test_int_and_float_methods_are_forwarded() -> None:
    x, y = DynamicInt(10), DynamicFloat(0.75)
    assert x.bit_length() == 4 and x.to_bytes(2, "big") == (10).to_bytes(2, "big")
    assert (x.numerator, x.denominator, x.real, x.imag) == (10, 1, 10, 0)
    assert y.as_integer_ratio() == (3, 4) and y.hex() == (0.75).hex()
    assert not y.is_integer() and y.conjugate() == 0.75


@pytest.mark.parametrize("value", [DynamicInt(3, unbacked=True, min=-1, max=9), DynamicFloat(0.5)])
def test_copy_deepcopy_and_pickle_keep_class_value_and_spec(value: Any) -> None:
    """copy/deepcopy return the (immutable) proxy itself, also inside containers; pickle
    (every protocol) rebuilds the same class, value and spec."""
    assert copy.copy(value) is value and copy.deepcopy(value) is value
    assert copy.deepcopy([value, {"k": value}])[1]["k"] is value
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        restored = pickle.loads(pickle.dumps([value], protocol=protocol))[0]
        assert type(restored) is type(value) and restored == value
        assert restored.spec == value.spec


def test_pickle_restores_a_value_that_left_its_range() -> None:
    """`x += 5` keeps the spec without re-checking the range (eager code is never stopped);
    pickling reproduces that value, and the compiled path rejects it as it would the original."""
    x = DynamicInt(8, max=10)
    x += 5
    restored = pickle.loads(pickle.dumps(x))
    assert restored == 13 and restored.spec == DynamicSpec(max=10)


# ----------------------------------------------------------------------------- torch
def test_torch_tensor_of_a_proxy_is_documented_as_unsupported() -> None:
    """torch.tensor/as_tensor take `data` as a raw object and infer its dtype with exact type
    checks, never consulting __torch_function__.  Docs: torch.tensor(int(x)) or x.value."""
    # C wrapt: "Could not infer dtype of DynamicInt"; pure-Python wrapt defines __getitem__,
    # so torch first treats the proxy as a sequence: "object of type 'int' has no len()".
    refused = "Could not infer dtype of Dynamic|object of type '(int|float)' has no len"
    for factory in (torch.tensor, torch.as_tensor):
        with pytest.raises((RuntimeError, TypeError), match=refused):
            factory(DynamicInt(3))
        with pytest.raises((RuntimeError, TypeError), match=refused):
            factory([DynamicFloat(0.5)])
    assert torch.equal(torch.tensor(int(DynamicInt(3))), torch.tensor(3))
    assert torch.equal(torch.as_tensor([DynamicFloat(0.5).value]), torch.tensor([0.5]))


def same_tensor(got: Any, want: Any) -> None:
    assert type(got) is torch.Tensor
    torch.testing.assert_close(got, want, equal_nan=True, rtol=0, atol=0)


T = torch.arange(12.0).reshape(3, 4)
I3, I2, F5 = DynamicInt(3), DynamicInt(2), DynamicFloat(0.5)

TORCH_CALLS = [
    ("torch.full(size, int)", lambda n, p: torch.full((n,), n)),
    ("torch.full(size, float)", lambda n, p: torch.full((2, n), p)),
    ("torch.arange(x)", lambda n, p: torch.arange(n)),
    ("torch.arange(0, x, float)", lambda n, p: torch.arange(0, n, p)),
    ("torch.zeros((x, 2))", lambda n, p: torch.zeros((n, 2))),
    ("torch.ones(2, x)", lambda n, p: torch.ones(2, n)),
    ("torch.zeros(x)", lambda n, p: torch.zeros(n)),
    ("torch.linspace", lambda n, p: torch.linspace(0, p, n)),
    ("tensor.new_full", lambda n, p: T.new_full((n,), p)),
    ("tensor.pow(x)", lambda n, p: T.pow(p)),
    ("clamp(max=int)", lambda n, p: T.clamp(max=n)),
    ("clamp(min=float)", lambda n, p: T.clamp(min=p)),
    ("F.dropout(p=x), eval", lambda n, p: F.dropout(T, p=p, training=False)),
    ("view(x, -1)", lambda n, p: T.view(n, -1)),
    ("reshape((-1, x))", lambda n, p: T.reshape((-1, n))),
    ("tensor[x]", lambda n, p: T[n - 1]),
    ("tensor[:x]", lambda n, p: T[:n]),
    ("tensor[x, 1:x]", lambda n, p: T[n - 2, 1:n]),
    ("F.pad", lambda n, p: F.pad(T, (n, n - 1))),
    ("F.pad value=float", lambda n, p: F.pad(T, (1, 1), value=p)),
    ("softmax(dim=x)", lambda n, p: T.softmax(dim=n - 2)),
    ("torch.cat(dim=x)", lambda n, p: torch.cat([T, T], dim=n - 2)),
    ("chunk(x)", lambda n, p: torch.stack(T.chunk(n, dim=0))),
    ("unsqueeze(x)", lambda n, p: T.unsqueeze(n - 1)),
    ("transpose(x, y)", lambda n, p: T.transpose(n - 3, n - 2)),
    ("F.interpolate(scale_factor=x)", lambda n, p: F.interpolate(T[None], scale_factor=p * 4)),
    ("tensor.add(alpha=x)", lambda n, p: T.add(T, alpha=p)),
    ("torch.where(c, t, x)", lambda n, p: torch.where(T > 5, T, p)),
]


@pytest.mark.parametrize("make", [c[1] for c in TORCH_CALLS], ids=[c[0] for c in TORCH_CALLS])
def test_torch_call_with_proxies_equals_plain(make: Callable[[Any, Any], Any]) -> None:
    """torch functions accept proxies where they take an int, a float or a size."""
    same_tensor(make(I3, F5), make(3, 0.5))


def test_dropout_with_a_proxy_probability_draws_the_same_mask() -> None:
    torch.manual_seed(0)
    want = F.dropout(torch.ones(64), p=0.25)
    torch.manual_seed(0)
    same_tensor(F.dropout(torch.ones(64), p=DynamicFloat(0.25)), want)


TENSOR_OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv]
TENSOR_OPS += [operator.mod, operator.pow, operator.lt, operator.eq, operator.ge]


@pytest.mark.parametrize("op", TENSOR_OPS, ids=lambda op: op.__name__)
@FAST
@given(value=st.one_of(st.integers(-5, 5), st.floats(-4, 4)))
def test_tensor_op_scalar_and_scalar_op_tensor_equal_plain(
    op: Callable[[Any, Any], Any], value: int | float
) -> None:
    t = torch.tensor([-2.0, 0.5, 3.0])
    same_tensor(op(t, proxy(value)), op(t, value))
    same_tensor(op(proxy(value), t), op(value, t))
    ints = torch.tensor([-3, 1, 7])
    if type(value) is int and value != 0 and op is not operator.pow:
        same_tensor(op(ints, proxy(value)), op(ints, value))  # dtype follows the plain int


def test_varargs_size_starting_with_a_proxy_is_documented_as_unsupported() -> None:
    """torch's parser gives every object with __torch_function__ to the first parameter
    (`size`) before it tries the varargs form, so `torch.zeros(x, 2)` reads as one size
    argument plus an extra one.  Docs: pass the sizes as a tuple."""
    with pytest.raises(TypeError, match="positional argument"):
        torch.zeros(I3, 2)
    with pytest.raises(TypeError, match="positional argument"):
        T.new_zeros(I3, 2)
    same_tensor(torch.zeros((I3, 2)), torch.zeros(3, 2))
    same_tensor(torch.zeros(2, I3), torch.zeros(2, 3))  # a later position is fine


@pytest.mark.parametrize(
    "call",
    [
        lambda t, d: t.sum(dim=d),
        lambda t, d: t.mean(dim=d),
        lambda t, d: t.amax(dim=d),
        lambda t, d: t.roll(d),
    ],
    ids=["sum(dim=x)", "mean(dim=x)", "amax(dim=x)", "roll(x)"],
)
def test_bare_proxy_as_int_list_dim_is_documented_as_unsupported(
    call: Callable[[torch.Tensor, Any], torch.Tensor],
) -> None:
    """For an `int[1]` parameter torch's parser accepts anything with __index__ but its
    unpacking assumes an exact int, a list or a tuple: an INTERNAL ASSERT.  Docs: pass
    int(x) or (x,)."""
    x = DynamicInt(1)
    with pytest.raises(RuntimeError, match="PyList_Check"):
        call(T, x)
    same_tensor(call(T, int(x)), call(T, 1))
    same_tensor(call(T, (x,)), call(T, 1))


def test_numpy_accepts_proxies() -> None:
    """np.array([x]) has the plain dtype; np.zeros(x) and numpy indexing take a DynamicInt."""
    assert np.array([DynamicInt(3)]).dtype == np.array([3]).dtype
    assert np.array([DynamicFloat(0.5)]).dtype == np.float64
    assert np.array([DynamicInt(3), DynamicFloat(0.5)]).tolist() == [3.0, 0.5]
    assert np.array(DynamicInt(3)).shape == () and np.array(DynamicInt(3)) == 3
    assert np.zeros(DynamicInt(3)).shape == (3,) and np.ones((2, DynamicInt(3))).shape == (2, 3)
    assert np.arange(10)[DynamicInt(4)] == 4
    assert np.float64(DynamicFloat(0.5)) == 0.5


def test_wrapt_implementation_follows_the_environment() -> None:
    """CI runs this suite with the C extension and with WRAPT_DISABLE_EXTENSIONS=true; this
    pins that the variable really switches the implementation under test."""
    from wrapt import __wrapt__

    # wrapt's own flag: the C type's __module__ differs between wrapt releases
    c_extension = __wrapt__._using_c_extension
    assert c_extension is not bool(os.environ.get("WRAPT_DISABLE_EXTENSIONS"))
