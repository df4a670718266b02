"""Route torch calls that receive a dynamic float to decompositions that keep it symbolic.

Hooked: ``TorchInGraphFunctionVariable.call_function``, where Dynamo turns a call to a
torch function into a graph node.  When one of the arguments is a SymFloat made from a
dynscalar mark (``_state.CompileState.floats``):

* a torch op listed in ``_nn.DECOMPOSITIONS`` (``torch.dropout``, ``torch.layer_norm``,
  ``torch._C._nn.cross_entropy_loss``, ...) is traced as its decomposition instead
  (``InstructionTranslator.inline_user_function_return``, the way Dynamo's own polyfills
  are inlined);
* a Python function of ``torch.nn.functional`` that Dynamo would put in the graph as a
  whole (``F.dropout``, ``F.multi_head_attention_forward``, ...) is traced through, so the
  float reaches the torch op inside it, which the rule above handles.

Every other call, and every call without a dynscalar float, goes to Dynamo unchanged.
An op without a decomposition keeps torch's behaviour: exact, specialized, warned.

Hooked too: ``BuiltinVariable.call_function``, for ``pow`` of a dynamic float and a tensor,
and for ``max``/``min`` of a marked value whose operands Dynamo cannot take as they are (a
bool, a NaN, an expression too deep for sympy: :func:`_max_min_operands`).
"""

from __future__ import annotations

import logging
import operator
import types
from typing import Any

from . import _nn
from ._methods import FOREACH_DECOMPOSITIONS
from ._nn import DECOMPOSITIONS
from ._state import is_dynamic_float, is_dynamic_value

log = logging.getLogger("dynscalar")

__all__ = ["builtin_decomposition_hook", "in_graph_call_hook"]


def _our_float(tx: Any, args: Any, kwargs: Any) -> bool:
    from torch._dynamo.variables.lazy import LazyVariableTracker

    found = False
    for value in (*args, *kwargs.values()):
        if isinstance(value, LazyVariableTracker):
            if not value.is_realized() and not isinstance(value.peek_value(), float):
                continue  # realize only floats (a DynamicFloat is one too): no other guards
            value = value.realize()  # makes a marked float's SymFloat
        found = found or is_dynamic_float(tx, value)
    return found


def _traced_through(fn: Any) -> bool:
    """A Python function of torch.nn.functional (its body calls the torch op)."""
    return isinstance(fn, types.FunctionType) and fn.__module__ == "torch.nn.functional"


def in_graph_call_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``TorchInGraphFunctionVariable.call_function(tx, args, kwargs)``."""

    def split(tx: Any, args: Any, kwargs: Any) -> tuple[Any, Any, Any]:
        return tx, args, kwargs

    tx, call_args, call_kwargs = split(*args, **kwargs)
    fn = instance.value
    try:
        replacement = DECOMPOSITIONS.get(fn) or FOREACH_DECOMPOSITIONS.get(fn)
    except TypeError:  # an unhashable callable: never ours
        replacement = None
    if replacement is None and not _traced_through(fn):
        return wrapped(*args, **kwargs)
    if not _our_float(tx, call_args, call_kwargs):
        return wrapped(*args, **kwargs)
    from torch._dynamo.variables.functions import UserFunctionVariable

    target = replacement if replacement is not None else fn
    _nn.probe_kernels()  # asked of the kernels once, outside the trace
    log.debug(
        "%s receives a dynamic float: tracing %s",
        getattr(fn, "__qualname__", fn),
        "its decomposition" if replacement is not None else "through it",
    )
    return tx.inline_user_function_return(
        UserFunctionVariable(target), list(call_args), dict(call_kwargs)
    )


#: Python operators on (dynamic float, tensor) that ATen computes with a Scalar operand the
#: float-tensorify pass cannot lower: ``beta1 ** step`` (Adam's bias correction) is
#: ``pow.Scalar``.  Traced as ``_nn``'s decomposition instead.
_BUILTINS: dict[Any, Any] = {operator.pow: _nn.pow}


def builtin_decomposition_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``BuiltinVariable.call_function(tx, args, kwargs)``."""
    if instance.fn is max or instance.fn is min:
        return _max_min_operands(wrapped, instance.fn, args, kwargs)
    replacement = _BUILTINS.get(instance.fn)
    if replacement is None:
        return wrapped(*args, **kwargs)

    def split(tx: Any, args: Any, kwargs: Any) -> tuple[Any, Any, Any]:
        return tx, args, kwargs

    tx, call_args, call_kwargs = split(*args, **kwargs)
    if call_kwargs or len(call_args) != 2 or not is_dynamic_float(tx, call_args[0]):
        return wrapped(*args, **kwargs)
    from torch._dynamo.variables.functions import UserFunctionVariable
    from torch._dynamo.variables.tensor import TensorVariable

    if not isinstance(call_args[1], TensorVariable):
        return wrapped(*args, **kwargs)
    return tx.inline_user_function_return(UserFunctionVariable(replacement), list(call_args), {})


def _max_min_operands(wrapped: Any, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``max(step, True)`` / ``min(step, nan)`` with a marked ``step``: Dynamo's fake call of
    ``torch.sym_max(SymInt, bool)`` (or with NaN) fails to compile where Python compares.
    The bool is passed as the int it equals (the value and every comparison are the same;
    which object eager returns is decided again at write-back, ``_writeback``); a NaN is
    resolved as Python's comparisons resolve it.  An operand whose expression is already
    deep is compared instead (:func:`_select`)."""
    from torch._dynamo.variables.constant import ConstantVariable
    from torch._dynamo.variables.lists import BaseListVariable

    def split(tx: Any, args: Any, kwargs: Any) -> tuple[Any, Any, Any]:
        return tx, args, kwargs

    tx, call_args, call_kwargs = split(*args, **kwargs)
    items = list(call_args)
    if len(items) == 1 and isinstance(items[0], BaseListVariable):  # min([s, t, 4])
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
    operands = [ConstantVariable.create(int(a.value)) if _is_bool_constant(a) else a for a in items]
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
    from torch._dynamo.variables.tensor import SymNodeVariable

    from ._state import compile_state

    deep = False
    heights = compile_state(tx.output.shape_env).heights
    for item in items:
        if isinstance(item, SymNodeVariable):
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
    from torch._dynamo.variables.builtin import BuiltinVariable

    from ._state import compile_state

    compare = BuiltinVariable(operator.gt if fn is max else operator.lt)
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
    from torch._dynamo.variables.constant import ConstantVariable

    value = getattr(variable, "value", None) if isinstance(variable, ConstantVariable) else None
    return type(value) is float and value != value


def _is_bool_constant(variable: Any) -> bool:
    from torch._dynamo.variables.constant import ConstantVariable

    return isinstance(variable, ConstantVariable) and type(variable.value) is bool
