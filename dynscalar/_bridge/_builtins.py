"""Python builtins that Dynamo lets through, or fails on, where Python raises.

``range(x)`` with a float ``x`` raises ``TypeError`` in Python.  Dynamo 2.13 (``call_range``
in ``variables/builtin.py``) guards a ``SymFloat`` argument to its current value and builds
the range anyway: with a dynamic float (``range(self.t % 3)`` where ``t`` is a
``DynamicFloat``, or a plain float that automatic dynamic made symbolic) compiled code
loops ``int(t % 3)`` times where eager raises.  The hook raises eager's ``TypeError`` inside
the traced program (an observed exception: the frame runs eagerly and raises it).
Installed only on torch 2.13's ``call_range(self, tx, *args)``: torch 2.14 converts the
arguments with ``pynumber_index``, which raises the same ``TypeError``.

``int(x)`` and ``round(x)`` of a float that is NaN or infinite raise ``ValueError`` /
``OverflowError`` in Python.  Dynamo 2.13 evaluates them on the constant (torch compiles a
NaN or infinite float as one) or on the symbol's hint (``n * (1 - r)`` overflowing for a
huge ``r``) and fails with ``InternalTorchDynamoError`` / ``TorchRuntimeError`` instead.
In a compile that holds a marked value the hooks raise Python's exception inside the
traced program, as for ``range``; a compile without marks is left to torch.

Division by zero: ``w / w_sum``, ``//``, ``%``, ``divmod`` and their in-place forms, with a
marked value (or one computed from it) as an operand, raise ``ZeroDivisionError`` in Python
where the divisor is zero (``pow``: a zero base with a negative exponent).  Dynamo traces the
division into the graph, which raised at run time, outside the user's ``try`` (schedulefree's
``try: c = w / w_sum except ZeroDivisionError: c = 0`` in its first steps).  The hook asks
the question Python asks, on the symbolic divisor (``w_sum == 0``): a guarded predicate, like
the user's own ``if`` (one graph per path), and where it holds raises Python's exception, with
Python's message, inside the traced program, where the user's ``except`` catches it.  An
unbacked divisor has no value to ask about (its mark promises no guards): left to torch.

Float floor division of a marked value is specialized before it gets here
(``_writeback/arith.py``, ``float_floor_division``: torch's symbolic form is not Python's).
"""

from __future__ import annotations

import operator
from typing import Any

from . import _torch

__all__ = ["python_raises_hook", "range_hook"]

#: builtins that raise ZeroDivisionError for a zero second operand
_DIVISIONS = frozenset(
    {
        operator.truediv,
        operator.floordiv,
        operator.mod,
        operator.itruediv,
        operator.ifloordiv,
        operator.imod,
        divmod,
    }
)
#: builtins that raise ZeroDivisionError for a zero base and a negative exponent
_POWERS = frozenset({operator.pow, operator.ipow, pow})


def range_hook(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Around ``BuiltinVariable.call_range(tx, *args)``."""

    tx, *call_args = args
    for arg in call_args:
        if isinstance(arg, _torch.SymNodeVariable) and arg.python_type() is float:
            _torch.raise_observed_exception(
                TypeError, tx, args=["'float' object cannot be interpreted as an integer"]
            )
    return wrapped(*args, **kwargs)


def _non_finite(tx: Any, arg: Any) -> float | None:
    """The value of a float ``arg`` that is NaN or infinite, in a compile holding a marked
    value (None otherwise)."""
    import math

    import torch

    from ._state import peek_state

    if peek_state(getattr(tx.output, "shape_env", None)) is None:
        return None
    if isinstance(arg, _torch.SymNodeVariable):
        sym = arg.sym_num
        value = sym.node.hint if isinstance(sym, torch.SymFloat) else None
    elif arg.is_python_constant():
        value = arg.as_python_constant()
    else:
        return None
    if type(value) is float and not math.isfinite(value):
        return value
    return None


def _raise_conversion(tx: Any, value: float) -> None:
    if value != value:
        _torch.raise_observed_exception(
            ValueError, tx, args=["cannot convert float NaN to integer"]
        )
    _torch.raise_observed_exception(
        OverflowError, tx, args=["cannot convert float infinity to integer"]
    )


def _number(variable: Any) -> tuple[Any, Any] | None:
    """(the symbolic value or None, its Python value) of an int/float operand; None for
    anything else (a tensor, an unbacked symbol without a value)."""
    import torch

    if isinstance(variable, _torch.SymNodeVariable):
        sym = variable.sym_num
        hint = sym.node.hint if isinstance(sym, torch.SymInt | torch.SymFloat) else None
        return (sym, hint) if type(hint) in (int, float) else None
    if variable.is_python_constant():
        value = variable.as_python_constant()
        return (None, value) if type(value) in (int, float, bool) else None
    return None


def _holds(operand: tuple[Any, Any], test: Any) -> bool:
    """``test`` of the operand's value: on a symbolic value a guarded predicate (the path
    the trace takes), on a constant Python's answer."""
    sym, value = operand
    return bool(test(sym if sym is not None else value))


def _marked(tx: Any, variable: Any) -> bool:
    """A symbolic value made from a mark, as it was made: a guard the trace installed
    since (``Eq(s, 0)`` after a first division by zero) can have replaced the symbol by a
    number in its current expression, and torch then fails on ``7 // 0`` itself."""
    from ._state import peek_state

    if not isinstance(variable, _torch.SymNodeVariable):
        return False
    state = peek_state(getattr(tx.output, "shape_env", None))
    if state is None:
        return False
    tables = (state.floats, state.backed, state.unbacked)
    made = variable.sym_num.node._expr.free_symbols
    return any(symbol in table for symbol in made for table in tables)


def _symbolic_zero(fn: Any, divisor: Any) -> bool:
    """An unmarked symbolic divisor that is 0 now, in a process where dynscalar traces: torch
    divides the fake values and the compile fails (``TorchRuntimeError``: "Dynamo failed to
    run FX node ... ZeroDivisionError": its hint is computed by dividing), so asking
    Python's question instead changes no program stock torch compiles.  Met where a marked
    value's graph guards ``n != 0`` and a plain 0 then compiles with automatic dynamic (the
    long fuzzer profile, program 1666)."""
    import torch

    if fn in _POWERS or not isinstance(divisor, _torch.SymNodeVariable) or _unbacked(divisor):
        return False
    sym = divisor.sym_num
    return isinstance(sym, torch.SymInt | torch.SymFloat) and sym.node.hint == 0


def _unbacked(variable: Any) -> bool:
    """A symbolic value with an unbacked symbol in it (no value to guard on)."""
    if not isinstance(variable, _torch.SymNodeVariable):
        return False
    unbacked = (_torch.SymT.UNBACKED_INT, _torch.SymT.UNBACKED_FLOAT)
    symbols = variable.sym_num.node.expr.free_symbols
    return any(_torch.symbol_is_type(s, unbacked) for s in symbols)


def _zero_division(tx: Any, fn: Any, call_args: Any) -> None:
    """Raise Python's ``ZeroDivisionError`` in the traced program where ``fn`` of the
    operands raises it in Python (see the module docstring); else return."""
    from ._writeback.calls import realized

    if len(call_args) != 2:
        return
    left, right = (realized(a) for a in call_args)
    if not (_marked(tx, left) or _marked(tx, right) or _symbolic_zero(fn, right)):
        return
    divisor = left if fn in _POWERS else right
    if _unbacked(divisor):
        # no guard can be made: Python's question asked as the user's own ``if`` would be,
        # which on an unbacked value is a graph break (or, with fullgraph, a clear error)
        zero = _torch.ConstantVariable.create(0)
        asked = _torch.BuiltinVariable(operator.eq).call_function(tx, [divisor, zero], {})
        if isinstance(asked, _torch.SymNodeVariable):
            asked.evaluate_expr(tx.output)
        return  # decided without a guard (a range without 0): torch divides
    a, b = _number(left), _number(right)
    if a is None or b is None:
        return
    try:
        fn(a[1], b[1])
    except ZeroDivisionError as error:
        message: str | None = str(error)
    except Exception:  # noqa: BLE001 - other errors (overflow): Dynamo's own handling
        return
    else:
        message = None
    if fn in _POWERS:
        raises = _holds(a, lambda v: v == 0) and _holds(b, lambda v: v < 0)
    else:
        raises = _holds(b, lambda v: v == 0)
    if raises and message is not None:
        _torch.raise_observed_exception(ZeroDivisionError, tx, args=[message])


def python_raises_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``BuiltinVariable.call_function(tx, args, kwargs)``: where Python raises for
    the values, the traced program raises it too: ``int(x)`` and ``round(x)`` (without
    ``ndigits``, which returns a float and NaN/inf in Python too) of a NaN or infinite
    float, and division by zero.

    Not a hook on ``call_int``/``call_round`` themselves: Dynamo keeps the handlers it
    builds for a builtin in a class-level cache that holds those methods as first seen.
    """
    from ._writeback.calls import realized

    fn = instance.fn
    if fn is int or fn is round:
        tx, call_args, call_kwargs = kwargs["tx"], kwargs["args"], kwargs["kwargs"]
        if len(call_args) == 1 and not call_kwargs:
            value = _non_finite(tx, realized(call_args[0]))
            if value is not None:
                _raise_conversion(tx, value)
    elif (fn in _DIVISIONS or fn in _POWERS) and not kwargs["kwargs"]:
        _zero_division(kwargs["tx"], fn, kwargs["args"])
    return wrapped(*args, **kwargs)
