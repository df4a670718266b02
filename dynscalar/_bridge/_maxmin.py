"""``max``/``min`` of a marked value, where Dynamo cannot take the operands as they are.

* A bool operand: Dynamo's fake call of ``torch.sym_max(SymInt, bool)`` fails where Python
  compares; the bool is passed as the int it equals.
* A NaN operand: resolved as Python's comparisons resolve it (sympy refuses to compare).
* An operand whose expression is already :data:`DEEP` levels high: compared as Python does
  instead of nesting further (:func:`_select`), so chains of ``max(v, c) + 1`` never reach
  sympy's recursion limit.
"""

from __future__ import annotations

import operator
from typing import Any

from . import _torch
from ._state import is_dynamic_value


def max_min_operands(wrapped: Any, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``max(step, True)`` / ``min(step, nan)`` with a marked ``step``: Dynamo's fake call of
    ``torch.sym_max(SymInt, bool)`` (or with NaN) fails to compile where Python compares.
    The bool is passed as the int it equals (the value and every comparison are the same;
    which object eager returns is decided again at write-back, ``_writeback``); a NaN is
    resolved as Python's comparisons resolve it.  An operand whose expression is already
    deep is compared instead (:func:`_select`)."""

    tx, call_args, call_kwargs = kwargs["tx"], kwargs["args"], kwargs["kwargs"]
    items = list(call_args)
    if len(items) == 1 and isinstance(items[0], _torch.BaseListVariable):  # min([s, t, 4])
        items = list(items[0].items)
    if call_kwargs or len(items) < 2 or not any(is_dynamic_value(tx, a) for a in items):
        return wrapped(*args, **kwargs)
    if any(_is_nan_constant(a) for a in items):
        # every comparison with NaN is False: Python keeps the first item when it is NaN,
        # and never picks a NaN that comes later (sympy refuses to compare with NaN)
        if _is_nan_constant(items[0]):
            return items[0]
        items = [a for a in items if not _is_nan_constant(a)]
        if len(items) == 1:  # min(t, nan) is t: traced as min(t, t), a call Dynamo records
            items = [items[0], items[0]]
    operands = [
        _torch.ConstantVariable.create(int(a.value)) if _is_bool_constant(a) else a for a in items
    ]
    if _too_deep(tx, items):
        return _select(tx, fn, items)
    return wrapped(tx, operands, {})


#: The height of a symbolic expression past which ``max``/``min`` compare instead of
#: nesting: sympy walks expressions recursively (``Expr.is_number``: two Python frames a
#: level), and ``max(v, c) + 1`` repeated adds two levels each time: from ~150 repetitions
#: stock torch's own dynamic ints fail with ``RecursionError``, and long before that every
#: new expression costs time in proportion to its height.
DEEP = 48


def _too_deep(tx: Any, items: list[Any]) -> bool:
    """True when one operand's expression is at least :data:`DEEP` high and every operand
    is a backed symbolic number or an int/float constant (so each comparison can be
    decided, statically or by a guard)."""

    from ._state import compile_state

    deep = False
    heights = compile_state(tx.output.shape_env).heights
    for item in items:
        if isinstance(item, _torch.SymNodeVariable):
            node = getattr(item.sym_num, "node", None)
            if node is None or node.hint is None:  # unbacked: no comparison is decidable
                return False
            deep = deep or _height(node.expr, heights) >= DEEP
        elif not (item.is_python_constant() and type(item.as_python_constant()) in (int, float)):
            return False
    return deep


def _height(expr: Any, memo: dict[Any, int]) -> int:
    """The height of the sympy expression ``expr`` (an atom: 1), walked without recursion."""
    stack = [expr]
    while stack:
        top = stack[-1]
        if top in memo:
            stack.pop()
            continue
        pending = [arg for arg in top.args if arg not in memo]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        memo[top] = 1 + max((memo[arg] for arg in top.args), default=0)
    return memo[expr]


def _select(tx: Any, fn: Any, items: list[Any]) -> Any:
    """``max``/``min`` as Python computes them: the first item, replaced by each later one
    that compares greater (``max``) or smaller (``min``).  Each comparison is traced as the
    user's ``if`` would be: decided statically where it can be, else a guard on the
    predicate (never on a value).  Returns the winning operand itself, which write-back
    then stores as it is (``CompileState.selected``): the very object eager returns."""

    from ._state import compile_state

    compare = _torch.BuiltinVariable(operator.gt if fn is max else operator.lt)
    best = items[0]
    for item in items[1:]:
        result: Any = compare.call_function(tx, [item, best], {})
        if result.is_python_constant():
            wins = bool(result.as_python_constant())
        else:
            wins = bool(result.evaluate_expr(tx.output))
        if wins:
            best = item
    compile_state(tx.output.shape_env).selected = best
    return best


def _is_nan_constant(variable: Any) -> bool:
    value = (
        getattr(variable, "value", None) if isinstance(variable, _torch.ConstantVariable) else None
    )
    return type(value) is float and value != value


def _is_bool_constant(variable: Any) -> bool:
    return isinstance(variable, _torch.ConstantVariable) and type(variable.value) is bool
