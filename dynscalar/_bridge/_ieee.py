"""Float expressions of marked values, kept in the order Python computes them.

torch models a symbolic float as a sympy expression, and sympy rewrites ``+``, ``-`` and
``*`` as real-number algebra: ``n * (1 - r)`` becomes ``n - n*r``, ``(t + 1e16) - 1e16``
becomes ``t``, ``t * 0.1 * 3`` becomes ``0.3*t``.  IEEE arithmetic does not follow those
rules, so an expression that differs from the one the user's code computes can give other
numbers.  Guards print the expression (``math.trunc(8.0 - 8.0*L['r'])`` for
``int(8 * (1 - r))``), AOTAutograd keys the symbolic values of its trace by expression
(two values with the same expression become one graph value), and the trace decides each
branch on the hint Python computed: the guard then checks a value the graph never sees.
For ``int(10 * (1 - 0.9))`` Python gives 0 and the simplified expression 1, and the
compile failed with "Guard failed on the same frame it was created".

So every ``+``, ``-``, ``*`` and unary ``-`` whose result is a float computed from a value
the bridge made symbolic builds an opaque function instead (:class:`IeeeAdd`,
:class:`IeeeMul`: ``a - b`` is ``a + (-1 * b)`` and ``-a`` is ``-1 * a``, which IEEE
defines to be the same operations), the way torch already keeps float ``/`` and ``**``
opaque (``FloatTrueDiv``, ``FloatPow``).  sympy cannot rearrange them; with numbers they
compute the Python float operation; printers write them as the Python operation, in
order, parenthesized (``math.trunc((8.0 * (1.0 - L['r'])))``); value-range and
interpreting passes read them as ``add``/``mul`` (``_torch_handler_name``).  A float
expression of values no mark made is left to torch, exactly as without dynscalar.

The hook sits on ``SymNode``'s ``_add``/``_sub``/``_mul``/``_neg``, the one place every
symbolic arithmetic goes through (Dynamo's trace and AOTAutograd's).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import sympy

from ._state import peek_state

__all__ = ["IeeeAdd", "IeeeMul", "add_hook", "mul_hook", "neg_hook", "sub_hook"]


class _Ieee(sympy.Function):  # type: ignore[misc]  # sympy is untyped
    """A binary float operation sympy must not rearrange (see module docstring)."""

    is_real = True  # as torch's FloatTrueDiv: comparisons with numbers stay expressions
    _op: Callable[[float, float], float]
    _symbol: str

    @classmethod
    def eval(cls, a: Any, b: Any) -> Any:
        if isinstance(a, sympy.Number) and isinstance(b, sympy.Number):
            return sympy.Float(cls._op(float(a), float(b)))
        return None

    def _torch_sympystr(self, printer: Any) -> str:
        """torch's printers (guards, ``ExprPrinter`` subclasses): the Python operation."""
        a, b = self.args
        if isinstance(self, IeeeMul) and a == -1:
            return f"(-{printer._print(b)})"
        if isinstance(self, IeeeAdd) and isinstance(b, IeeeMul) and b.args[0] == -1:
            return f"({printer._print(a)} - {printer._print(b.args[1])})"
        return f"({printer._print(a)} {self._symbol} {printer._print(b)})"


class IeeeAdd(_Ieee):
    """``a + b`` on Python floats."""

    _op = staticmethod(operator.add)
    _symbol = "+"
    _torch_handler_name = "add"


class IeeeMul(_Ieee):
    """``a * b`` on Python floats."""

    _op = staticmethod(operator.mul)
    _symbol = "*"
    _torch_handler_name = "mul"


def _ours(node: Any, *others: Any) -> bool:
    """True when a float result's operands involve a symbol the bridge made."""
    state = peek_state(node.shape_env)
    if state is None:
        return False
    tables = (state.floats, state.backed, state.unbacked)
    for operand in (node, *others):
        for symbol in getattr(operand.expr, "free_symbols", ()):
            if any(symbol in table for table in tables):
                return True
    return False


def _faithful(result: Any, expr: Any) -> Any:
    result._expr = expr
    result._expr_cache = None
    result._expr_ver = -1
    return result


def _binary(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Any, Any]:
    result = wrapped(*args, **kwargs)
    other = kwargs["other"]
    if result.pytype is not float or not _ours(instance, other):
        return result, None
    return result, other


def add_hook(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Around ``SymNode._add(other)``."""
    result, other = _binary(wrapped, instance, args, kwargs)
    if other is None:
        return result
    return _faithful(result, IeeeAdd(instance.expr, other.expr))


def sub_hook(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Around ``SymNode._sub(other)``: ``a + (-1 * b)``, the same IEEE operation."""
    result, other = _binary(wrapped, instance, args, kwargs)
    if other is None:
        return result
    return _faithful(result, IeeeAdd(instance.expr, IeeeMul(-1, other.expr)))


def mul_hook(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Around ``SymNode._mul(other)``."""
    result, other = _binary(wrapped, instance, args, kwargs)
    if other is None:
        return result
    return _faithful(result, IeeeMul(instance.expr, other.expr))


def neg_hook(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Around ``SymNode._neg()``: ``-1 * a``, the same IEEE operation."""
    result = wrapped(*args, **kwargs)
    if result.pytype is not float or not _ours(instance):
        return result
    return _faithful(result, IeeeMul(-1, instance.expr))
