"""Python operators on proxies: the part of their rules that needs write-back's shadows.

The rules themselves (which operands of a ``pow`` or a float ``//`` to specialize, how
``~`` and a dunder are traced) are Python's operator semantics and live in ``_python``.
What stays here needs to know what eager Python holds for an operand (its shadow: is it a
proxy?), which only write-back knows, and is applied while the recorder's hooks
(``record``) trace the call:

* the operands ``_python`` specializes (``pow`` with a negative dynamic float base, a
  float ``//`` or ``divmod`` of a marked value) become constants that stand for the
  proxies eager holds (:func:`_specialized`: ``self.t //= 2`` stays a ``DynamicFloat``);
* ``~`` of a proxy int (:func:`invert_of_proxy`): traced as ``-a - 1``;
* a dunder called on a proxy, ``a.__radd__(1)`` (:func:`dunder_of_proxy`): traced as the
  operator it stands for, which the proxy's own method computes.

They are not op rules (``dynscalar.ops``: torch ops taking a float, in plain torch): they
rewrite Dynamo's VariableTrackers for Python operators on symbolic scalars.
"""

from __future__ import annotations

import operator
from typing import Any

from ..._proxy import DynamicScalar
from .. import _python, _torch
from .._state import Origin, peek_state
from .calls import realized
from .shadows import proxy_shadow, shadow_of

__all__ = [
    "dunder_of_proxy",
    "float_floor_division",
    "invert_of_proxy",
    "negative_float_power",
]

_routing: set[tuple[int, str]] = set()  # dunder calls being routed (tracing is one thread)


def negative_float_power(tx: Any, fn: Any, operands: Any) -> list[Any] | None:
    """The operands to trace ``pow(t, 2)`` with, where ``t`` is a dynamic float that is
    negative now (None: the call as it is): ``_python.negative_power_operands``, as
    constants standing for what eager holds."""
    at = _python.negative_power_operands(fn, operands)
    if not at:
        return None
    fixed = list(operands)
    for i in at:
        fixed[i] = _specialized(tx, realized(fixed[i]))
    return fixed


def float_floor_division(tx: Any, fn: Any, operands: Any) -> list[Any] | None:
    """The operands to trace a float ``//`` (or ``divmod``) of a marked value with (None:
    the call as it is): ``_python.floor_division_operands``, as constants standing for
    what eager holds."""
    at = _python.floor_division_operands(tx, fn, operands)
    if not at:
        return None
    values = [realized(v) for v in operands]
    return [_specialized(tx, v) if i in at else v for i, v in enumerate(values)]


def _specialized(tx: Any, variable: Any) -> Any:
    """A symbolic value as the constant it holds now (a guard on the value); the constant
    stands for what eager holds: a proxy stays tracked for write-back."""
    shadow = shadow_of(tx, variable)
    made = _torch.ConstantVariable.create(variable.evaluate_expr(tx.output))
    if isinstance(shadow, DynamicScalar):
        state = peek_state(getattr(tx.output, "shape_env", None))
        if state is not None:
            origin = Origin("", shadow._self_spec, type(shadow))
            state.writeback.constants[id(made)] = (made, origin)
    return made


def invert_of_proxy(tx: Any, fn: Any, operands: Any) -> Any | None:
    """``operator.invert(a)`` of a proxy ``a``, traced (None: not such a call)."""
    if fn is not operator.invert or len(operands) != 1:
        return None
    operand = realized(operands[0])
    if not (isinstance(operand, _torch.SymNodeVariable) and proxy_shadow(tx, operand)):
        return None
    return _python.call_operator(tx, fn, list(operands))


def dunder_of_proxy(tx: Any, instance: Any, name: str, operands: Any) -> Any | None:
    """``instance.<name>(*operands)`` on a proxy, traced as the operator it stands for
    (None: another method, or not a proxy).

    A dunder call on a proxy (``a.__iadd__(2)``, ``a.__invert__()``, ``a.__radd__(1)``)
    runs the proxy's own operator, which computes what the operator syntax computes; an int
    or float lacks some of these methods and Dynamo would graph-break on them.  Dynamo
    itself implements some builtins as dunder calls (``round(a)`` calls ``a.__round__()``):
    those inner calls take Dynamo's own path.
    """
    found = _python.operator_for(name)
    key = (id(instance), name)
    if found is None or key in _routing or not proxy_shadow(tx, instance):
        return None
    function, reflected = found
    ordered = [*operands, instance] if reflected else [instance, *operands]
    _routing.add(key)
    try:
        return _python.call_operator(tx, function, ordered)
    finally:
        _routing.discard(key)
