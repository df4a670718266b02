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

import math
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

__all__ = ["FORMS", "Form", "apply"]

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
