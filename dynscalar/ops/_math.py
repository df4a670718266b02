"""``math`` functions on marked values: the Python arithmetic that computes math's result.

A ``math`` function takes Python numbers: Dynamo 2.13 traces ``math.f(x)`` on a symbolic
value through ``torch._sym_f`` where torch defines one (``sqrt``, ``cos``, ``sin``,
``tan``, their inverse and hyperbolic forms, ``log2``: ``torch/__init__.py``,
``fx/experimental/sym_node.py``), and otherwise as an FX node whose fake call converts the
value with ``__float__``, which forces it to a constant: one compile per value.

One rule for the others (``_bridge/_ops.py`` applies it): ``math.f(*args)`` with a marked
argument is traced as its :class:`Form`, ``compute(*floats)`` on the arguments converted
to float as ``math`` converts them (``PyFloat_AsDouble``), where ``compute`` is Python
float arithmetic that returns what ``math.f`` returns, bit for bit, for every finite
argument inside ``domain``.  ``domain`` is traced too: Dynamo guards the graph on it, so
the graph never runs for values where ``math.f`` raises.  Values where it raises at trace
time are compiled as stock torch compiles them (constants; the compiled call raises
eager's error).  A function with no such form stays specialized:

* ``pow(x, y)`` is ``x ** y``: CPython's ``float_pow`` and ``math.pow`` both return the
  C library's ``pow`` and share the C99 special cases for infinities and NaN; they differ
  only where ``math.pow`` raises ``ValueError`` (a zero base with a negative exponent, a
  negative base with a non-integer exponent; ``**`` raises ``ZeroDivisionError`` or
  returns a complex number there), which ``domain`` excludes.  Overflow raises
  ``OverflowError`` either way;
* ``fabs(x)`` is ``abs(x)`` of the float; ``degrees(x)`` is ``x * (180.0 / pi)``, the
  constant CPython multiplies by (``radToDeg``);
* ``exp``, ``log``, ``log10``, ``log1p``, ``expm1``, ``atan2``, ``hypot`` and the rest
  have none: no arithmetic on Python floats returns the C library's ``exp``/``log``
  (``math.e ** x`` is not ``exp(x)``), and torch 2.13 has no symbolic ``exp``/``log`` for
  Python numbers (no ``SymFloat`` method; its guard printer cannot print them).

Every form is checked against its ``math`` function on special and ordinary values by
``tests/test_math_rule.py``.

Examples:
    >>> import math
    >>> form = FORMS[math.pow]
    >>> form.compute(0.9, 3.0) == math.pow(0.9, 3.0), form.domain(-8.0, 1 / 3)
    (True, False)
"""

from __future__ import annotations

import functools
import math
import random
import struct
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import torch

__all__ = ["FORMS", "Form", "apply", "numpy_exact", "numpy_form", "to_numpy"]

#: CPython's ``radToDeg`` (Modules/mathmodule.c): ``math.degrees(x)`` is ``x * radToDeg``
_RAD_TO_DEG = 180.0 / math.pi


@dataclass(frozen=True)
class Form:
    """What ``math.<name>`` computes, as Python float arithmetic Dynamo keeps symbolic."""

    name: str
    #: the arithmetic on floats that returns ``math.<name>``'s result inside ``domain``
    compute: Callable[..., float]
    #: the finite arguments ``compute`` is exact for (None: all of them)
    domain: Callable[..., bool] | None = None

    def functions(self) -> tuple[types.FunctionType, types.FunctionType | None]:
        """``compute`` and ``domain`` as the Python functions Dynamo inlines."""
        domain = cast("types.FunctionType | None", self.domain)
        return cast("types.FunctionType", self.compute), domain


def _pow_domain(x: float, y: float) -> bool:
    # math.pow raises ValueError for 0 ** negative (a pole) and negative ** non-integer
    return not (x == 0.0 and y < 0.0) and not (x < 0.0 and y != math.floor(y))


FORMS: dict[Callable[..., float], Form] = {
    math.pow: Form("pow", lambda x, y: x**y, _pow_domain),
    # a Python function, not the builtin: Dynamo inlines the form
    math.fabs: Form("fabs", lambda x: abs(x)),
    math.degrees: Form("degrees", lambda x: x * _RAD_TO_DEG),
}


def apply(compute: Callable[..., float], domain: Callable[..., bool] | None, *args: Any) -> float:
    """``compute(*floats)`` where ``domain`` holds (traced by Dynamo: the conditions become
    guards on the marked values); raises what ``math`` raises outside it.

    Examples:
        >>> form = FORMS[math.pow]
        >>> apply(form.compute, form.domain, 2, 3)
        8.0
    """
    floats = [float(a) for a in args]
    if domain is not None and not domain(*floats):
        raise ValueError("math domain error")
    return compute(*floats)


def _finite(x: float) -> bool:
    return -math.inf < x < math.inf


def _unit(x: float) -> bool:
    return -1.0 <= x <= 1.0


def _non_negative(x: float) -> bool:
    return 0.0 <= x < math.inf


def _positive(x: float) -> bool:
    return 0.0 < x < math.inf


#: numpy's scalar functions traced symbolically: (the ``math`` twin torch traces as
#: ``torch._sym_<name>``, which calls it at run time; where numpy and it return a value)
_NUMPY: dict[str, tuple[Callable[[float], float], Callable[[float], bool]]] = {
    "sin": (lambda x: math.sin(x), _finite),
    "cos": (lambda x: math.cos(x), _finite),
    "tan": (lambda x: math.tan(x), _finite),
    "arcsin": (lambda x: math.asin(x), _unit),
    "arccos": (lambda x: math.acos(x), _unit),
    "arctan": (lambda x: math.atan(x), _finite),
    "tanh": (lambda x: math.tanh(x), _finite),
    "sqrt": (lambda x: math.sqrt(x), _non_negative),
    "log2": (lambda x: math.log2(x), _positive),
}


def numpy_form(fn: Any) -> Form | None:
    """The form of a numpy function called on one Python float (``np.sin``): its ``math``
    twin, inside the domain where both return a number; None for any other function.

    Examples:
        >>> import numpy as np
        >>> numpy_form(np.sin).name, numpy_form(np.exp)
        ('sin', None)
    """
    name = getattr(fn, "__name__", None)
    if name not in _NUMPY or _numpy_function(name) is not fn:
        return None
    compute, domain = _NUMPY[name]
    return Form(name, compute, domain)


def _numpy_function(name: str) -> Any:
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - torch runs without numpy
        return None
    return getattr(np, name, None)


def _bits(x: Any) -> bytes:
    return struct.pack("<d", float(x))


@functools.cache
def _samples() -> tuple[float, ...]:
    """Arguments numpy's and ``math``'s results are compared on: ordinary and tiny, huge,
    subnormal and special values of both signs (the same ones in every process)."""
    rng = random.Random(0)
    drawn = [rng.uniform(-10.0, 10.0) for _ in range(1500)]
    drawn += [rng.uniform(-1.0, 1.0) for _ in range(1500)]
    drawn += [rng.choice((1.0, -1.0)) * 10.0 ** rng.uniform(-310.0, 308.0) for _ in range(1500)]
    special = [0.0, -0.0, 0.5, 1.0, -1.0, 2.0, math.pi, math.pi / 2, 1e-310, 5e-324, 1e22, 1e308]
    return tuple(special + drawn)


@functools.cache
def _agrees(name: str) -> bool:
    numpy_fn, (compute, domain) = _numpy_function(name), _NUMPY[name]
    return all(_bits(numpy_fn(x)) == _bits(compute(x)) for x in _samples() if domain(x))


def numpy_exact(fn: Any, value: float) -> bool:
    """Whether numpy's ``fn`` returns what its ``math`` twin returns, bit for bit, on
    ``value`` and on every sample argument inside the domain (:func:`_samples`; measured
    once per process: numpy picks its kernels by the CPU it runs on, so no table shipped
    with the package can say).  On torch 2.13, numpy 2.4, x86-64 with AVX-512: ``sin``,
    ``cos`` and ``sqrt`` agree; ``tan``, ``arcsin``, ``arccos``, ``arctan``, ``tanh`` and
    ``log2`` differ on some arguments, so they stay as stock torch traces them.

    Examples:
        >>> import numpy as np
        >>> numpy_exact(np.sqrt, 2.0)
        True
    """
    form = numpy_form(fn)
    if form is None:
        return False
    return _agrees(form.name) and _bits(fn(value)) == _bits(form.compute(value))


def to_numpy(compute: Callable[[float], float], domain: Callable[[float], bool], x: Any) -> Any:
    """``numpy_f(x)`` as Dynamo represents numpy's result: a 0-d float64 array holding
    ``compute(x)`` (Dynamo traces the domain check as a guard, ``compute`` as
    ``torch._sym_<name>``).

    Examples:
        >>> form = numpy_form(__import__("numpy").sqrt)
        >>> to_numpy(form.compute, form.domain, 4.0)
        array(2.)
    """
    return torch.scalar_tensor(apply(compute, domain, x), dtype=torch.float64).numpy()
