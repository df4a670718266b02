"""Python arithmetic on marked values that Dynamo would trace differently from eager.

Four cases, each decided by what eager Python holds (the operand's shadow: is it a proxy?)
and applied while the recorder's hooks trace the call:

* ``pow`` with a negative dynamic float base (:func:`negative_float_power`): torch refuses
  the symbolic power; the float is specialized, as stock torch would;
* a float ``//`` or ``divmod`` of a marked value (:func:`float_floor_division`): torch's
  symbolic form is not Python's; the operands are specialized;
* ``~`` of a proxy int (:func:`invert_of_proxy`): traced as ``-a - 1``;
* a dunder called on a proxy, ``a.__radd__(1)`` (:func:`dunder_of_proxy`): traced as the
  operator it stands for, which the proxy's own method computes.

They are not op rules (``dynscalar.ops``: torch ops taking a float, in plain torch): they
rewrite Dynamo's VariableTrackers for Python operators on symbolic scalars, and need the
shadows of their operands.

Examples:
    >>> import operator
    >>> from dynscalar._bridge._writeback.arith import operator_for
    >>> operator_for("__radd__") == (operator.add, True)
    True
"""

from __future__ import annotations

import builtins
import math
import operator
from typing import Any

from ..._proxy import DynamicScalar
from .. import _torch
from .._state import Origin, peek_state
from .calls import realized
from .shadows import proxy_shadow, shadow_of

__all__ = [
    "dunder_of_proxy",
    "float_floor_division",
    "invert_of_proxy",
    "negative_float_power",
    "operator_for",
]

_POWERS = frozenset({pow, operator.pow, operator.ipow})
_routing: set[tuple[int, str]] = set()  # dunder calls being routed (tracing is one thread)


def negative_float_power(tx: Any, fn: Any, operands: Any) -> list[Any] | None:
    """The operands to trace ``pow(t, 2)`` with, where ``t`` is a dynamic float that is
    negative now (None: the call as it is).  Torch refuses symbolic float powers with a
    negative base (``SymFloat.__pow__`` checks ``self >= 0`` to avoid complex results;
    ``__rpow__`` checks the base when the exponent is symbolic), and the compile fails
    where eager Python computes the power.  The float is specialized instead (exact, a
    value guard: one compile per such value, reported as a specialization)."""
    import torch

    if fn not in _POWERS or len(operands) < 2:
        return None
    fixed = list(operands)
    symbolic = _torch.SymNodeVariable
    base, exponent = realized(fixed[0]), realized(fixed[1])

    def negative(variable: Any) -> bool:
        if isinstance(variable, symbolic):
            hint = getattr(getattr(variable.sym_num, "node", None), "hint", None)
            return hint is not None and hint < 0
        return variable.is_python_constant() and _is_negative(variable.as_python_constant())

    def float_symbol(variable: Any) -> bool:
        return isinstance(variable, symbolic) and isinstance(variable.sym_num, torch.SymFloat)

    def constant(variable: Any) -> Any:
        return _specialized(tx, variable)

    if float_symbol(base) and negative(base):
        fixed[0] = constant(base)
    elif float_symbol(exponent) and negative(base) and not isinstance(base, symbolic):
        fixed[1] = constant(exponent)
    elif isinstance(base, symbolic) and float_symbol(exponent) and negative(base):
        fixed[0] = constant(base)
    elif (
        negative(base)
        and negative(exponent)
        and (isinstance(base, symbolic) or isinstance(exponent, symbolic))
    ):
        # an int to a negative int power is a float: the same refusal (``t ** -1`` with a
        # negative marked int ``t``; the long fuzzer profile, programs 2617, 3106, 3621)
        for i, variable in ((0, base), (1, exponent)):
            if isinstance(variable, symbolic):
                fixed[i] = constant(variable)
    else:
        return None
    return fixed


def _specialized(tx: Any, variable: Any) -> Any:
    """A symbolic value as the constant it holds now (a guard on the value); the constant
    stands for what eager holds: a proxy stays tracked for write-back."""
    shadow = shadow_of(tx, variable)
    made = _torch.ConstantVariable.create(variable.evaluate_expr(tx.output))
    if isinstance(shadow, DynamicScalar):
        state = peek_state(getattr(tx.output, "shape_env", None))
        if state is not None:
            origin = Origin("", shadow._self_spec, type(shadow))
            state.constants[id(made)] = (made, origin)
    return made


#: builtins whose float form torch computes as ``floor(a / b)``
_FLOOR_DIVISIONS = frozenset({operator.floordiv, operator.ifloordiv, divmod})


def float_floor_division(tx: Any, fn: Any, operands: Any) -> list[Any] | None:
    """The operands to trace a float ``//`` (or ``divmod``) with, where one is a marked
    value: each symbolic one specialized (None: the call as it is).

    torch defines ``a // b`` on a symbolic float as ``floor(a / b)``
    (``SymFloat.__floordiv__``), which is not Python's: ``4 // 0.1`` is ``39.0`` in Python
    (the remainder is computed first, ``fmod``) and ``floor(4 / 0.1)`` is ``40.0``.  Dynamo's
    trace and AOTAutograd's graph both compute torch's form (the long fuzzer profile,
    programs 965 and 3059: wrong numbers on aot_eager).  Python's algorithm has no exact
    symbolic form, so the operands are specialized (a guard on each value, as stock torch
    compiles every float; reported as a specialization) and the result is Python's, on
    constants that stand for the proxies eager holds (``self.t //= 2`` stays a
    ``DynamicFloat``).  A zero divisor is left to the division-by-zero rule (``_builtins``),
    which asks ``b == 0`` without specializing; an unbacked operand has no value."""
    import torch

    if fn not in _FLOOR_DIVISIONS or len(operands) != 2:
        return None
    symbolic = _torch.SymNodeVariable
    values = [realized(v) for v in operands]
    syms = [v.sym_num for v in values if isinstance(v, symbolic)]
    if not syms or not any(_marked_symbol(tx, s) for s in syms):
        return None

    def number(variable: Any) -> Any:
        if isinstance(variable, symbolic):
            return getattr(getattr(variable.sym_num, "node", None), "hint", None)
        return variable.as_python_constant() if variable.is_python_constant() else None

    numbers = [number(v) for v in values]
    if any(type(n) not in (int, float) for n in numbers) or float not in map(type, numbers):
        return None  # not a float division (or no value to read: unbacked, a tensor)
    if numbers[1] == 0:
        return None  # Python raises ZeroDivisionError: the zero rule's question
    if not all(isinstance(s, torch.SymInt | torch.SymFloat) for s in syms):
        return None
    return [_specialized(tx, v) if isinstance(v, symbolic) else v for v in values]


def _marked_symbol(tx: Any, sym: Any) -> bool:
    """A symbolic value made from a mark (its expression as made, before guards)."""
    state = peek_state(getattr(tx.output, "shape_env", None))
    if state is None:
        return False
    node = getattr(sym, "node", None)
    made = getattr(getattr(node, "_expr", None), "free_symbols", ())
    tables = (state.floats, state.backed, state.unbacked)
    return any(symbol in table for symbol in made for table in tables)


def _is_negative(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0


def invert_of_proxy(tx: Any, fn: Any, operands: Any) -> Any | None:
    """``operator.invert(a)`` of a proxy ``a``, traced (None: not such a call)."""
    if fn is not operator.invert or len(operands) != 1:
        return None
    operand = realized(operands[0])
    if not (isinstance(operand, _torch.SymNodeVariable) and proxy_shadow(tx, operand)):
        return None
    return _call_operator(tx, fn, list(operands))


def dunder_of_proxy(tx: Any, instance: Any, name: str, operands: Any) -> Any | None:
    """``instance.<name>(*operands)`` on a proxy, traced as the operator it stands for
    (None: another method, or not a proxy).

    A dunder call on a proxy (``a.__iadd__(2)``, ``a.__invert__()``, ``a.__radd__(1)``)
    runs the proxy's own operator, which computes what the operator syntax computes; an int
    or float lacks some of these methods and Dynamo would graph-break on them.  Dynamo
    itself implements some builtins as dunder calls (``round(a)`` calls ``a.__round__()``):
    those inner calls take Dynamo's own path.
    """
    found = operator_for(name)
    key = (id(instance), name)
    if found is None or key in _routing or not proxy_shadow(tx, instance):
        return None
    function, reflected = found
    ordered = [*operands, instance] if reflected else [instance, *operands]
    _routing.add(key)
    try:
        return _call_operator(tx, function, ordered)
    finally:
        _routing.discard(key)


def operator_for(name: str) -> tuple[Any, bool] | None:
    """(function, reflected) that Python's operator syntax calls for the dunder ``name``:
    ``__add__`` -> ``operator.add``, ``__radd__`` -> ``operator.add`` reflected,
    ``__iadd__`` -> ``operator.iadd``, ``__neg__`` -> ``operator.neg``, ``__floor__`` ->
    ``math.floor`` ... (None for other names)."""
    if not (name.startswith("__") and name.endswith("__")) or not hasattr(DynamicScalar, name):
        return None
    core = name[2:-2]
    for candidate, reflected in ((core, False), (core[1:], core.startswith("r"))):
        for module in (operator, math, builtins):
            function = getattr(module, candidate, None) or getattr(module, candidate + "_", None)
            if callable(function) and not isinstance(function, type):
                if module is builtins and candidate not in ("divmod", "pow", "round", "abs"):
                    continue
                if candidate.startswith("i") and reflected:
                    continue
                return function, reflected
    return None


def _call_operator(tx: Any, function: Any, operands: list[Any]) -> Any:
    """Trace ``function(*operands)``; ``~`` on an int as ``-a - 1`` (Dynamo 2.13 cannot
    trace ``operator.invert`` on a SymInt and gives up on the whole frame)."""
    if function is operator.invert and len(operands) == 1:
        (operand,) = operands
        if isinstance(operand, _torch.SymNodeVariable) and operand.python_type() is int:
            negated = _call_operator(tx, operator.neg, [operand])
            return _call_operator(tx, operator.sub, [negated, _torch.ConstantVariable.create(1)])
    return _torch.VariableTracker.build(tx, function).call_function(tx, operands, {})
