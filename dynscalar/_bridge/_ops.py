"""Where a marked float reaches a torch op: apply the op's rule, or do what stock torch does.

Hooked: ``TorchInGraphFunctionVariable.call_function`` (torch functions) and
``TensorVariable.call_method`` (tensor methods), where Dynamo turns a call into a graph
node.  A call is the bridge's business only when one of its arguments is a SymFloat made
from a dynscalar mark (``_state.is_dynamic_float``); every other call goes to Dynamo as is.

* An op with a rule (``dynscalar.ops.RULES``: the ops whose ``float`` parameter torch
  would force) is traced as the rule's entry for the compile's backend (``_backends``):
  on a ``"python"`` backend its custom op or kernel (eager's own kernels), on inductor its
  tensor form; each only where the exactness matrix admits it for the call's dtype and
  ``requires_grad``.  Otherwise the call goes to Dynamo unchanged, which specializes the
  value as stock torch does, and one ``SpecializationWarning`` names the op and why.
* A Python function of ``torch.nn.functional`` that Dynamo puts in the graph as a whole
  (``F.dropout``, ``F.multi_head_attention_forward``) is traced through, so the float
  reaches the torch op inside it, which the rule above handles.
* Ops whose float is a ``Scalar`` need nothing here: Dynamo traces it, and the AOT
  hooks (``_floats``) keep it a Python float on ``"python"`` backends.

``max``/``min`` of a marked value and a bool or NaN (``_max_min_operands``) are also fixed
up here: Dynamo's fake call of ``torch.sym_max(SymInt, bool)`` fails where Python compares.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import types
from collections.abc import Iterator
from typing import Any

from .. import ops
from ._backends import backend_kind
from ._state import compile_state, is_dynamic_float, is_dynamic_value

log = logging.getLogger("dynscalar")

__all__ = ["builtin_call_hook", "in_graph_call_hook", "specializing", "tensor_method_hook"]

_local = threading.local()


@contextlib.contextmanager
def specializing(op: str, reason: str) -> Iterator[None]:
    """While Dynamo traces ``op`` with a marked float it will force: the reason a
    specialization report gives (``_reports``)."""
    previous = getattr(_local, "op", None)
    _local.op = (op, reason)
    try:
        yield
    finally:
        _local.op = previous


def current_specialization() -> tuple[str, str] | None:
    """(op, reason) of the op being traced with a value the bridge lets torch force."""
    found: tuple[str, str] | None = getattr(_local, "op", None)
    return found


def _realize_floats(tx: Any, values: Any) -> bool:
    """True if one of ``values`` is a marked float (a lazy float is realized, which makes
    its SymFloat; nothing else is realized, so no other guards are installed)."""
    from torch._dynamo.variables.lazy import LazyVariableTracker

    found = False
    for value in values:
        if isinstance(value, LazyVariableTracker):
            if not value.is_realized() and not isinstance(value.peek_value(), float):
                continue
            value = value.realize()
        found = is_dynamic_float(tx, value) or found
    return found


def _traced_through(fn: Any) -> bool:
    """A Python function of torch.nn.functional (its body calls the torch op)."""
    return isinstance(fn, types.FunctionType) and fn.__module__ == "torch.nn.functional"


def _first_tensor(values: Any) -> Any:
    """The example value (a fake tensor) of the first tensor among traced ``values``."""
    from torch._dynamo.variables.tensor import TensorVariable

    for value in values:
        if isinstance(value, TensorVariable):
            return value.as_proxy().node.meta.get("example_value")
    return None


def _kind(tx: Any) -> str:
    state = compile_state(tx.output.shape_env)
    if state.backend is None:
        state.backend = backend_kind(tx)
    return state.backend


def _entry(rule: Any, name: str, tx: Any, values: list[Any]) -> tuple[Any, str]:
    """(what to trace for ``name``, '') or (None, why the value is specialized)."""
    from ..ops._matrix import admitted

    kind = _kind(tx)
    example = _first_tensor(values)
    if example is None:
        return None, "none of its arguments is a tensor"
    dtype, grad = example.dtype, bool(example.requires_grad)
    if kind == "python":
        ok, why = admitted(rule, name, dtype, grad)
        return (ops.python_entry(rule, name), "") if ok else (None, why)
    if kind == "inductor":
        entry = ops.inductor_entry(rule, name)
        if entry is None:
            return None, "it has no tensor form for inductor"
        ok, why = _inductor_admitted(rule, name, dtype, grad)
        return (entry, "") if ok else (None, why)
    return None, "the backend is neither inductor nor one that runs the graph as Python code"


def _inductor_admitted(rule: Any, name: str, dtype: Any, grad: bool) -> tuple[bool, str]:
    from ..ops._inductor import admitted

    return admitted(rule, name, dtype, grad)


def _apply(rule: Any, name: str, tx: Any, values: list[Any], trace: Any, stock: Any) -> Any:
    entry, why = _entry(rule, name, tx, values)
    if entry is not None:
        log.debug("%s receives a dynamic float: tracing %s", name, entry.__name__)
        return trace(entry)
    log.info("%s receives a dynamic float, specialized as stock torch does: %s", name, why)
    with specializing(name, why):
        return stock()


def in_graph_call_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``TorchInGraphFunctionVariable.call_function(tx, args, kwargs)``."""
    tx, call_args, call_kwargs = _bind(args, kwargs)
    fn = instance.value
    found = ops.rule_for(fn)
    if found is None and not _traced_through(fn):
        return wrapped(*args, **kwargs)
    values = [*call_args, *call_kwargs.values()]
    if not _realize_floats(tx, values):
        return wrapped(*args, **kwargs)

    def trace(target: Any) -> Any:
        return _trace(tx, target, list(call_args), dict(call_kwargs))

    if found is None:  # torch.nn.functional: reach the op inside
        return trace(fn)
    rule, name = found
    return _apply(rule, name, tx, values, trace, lambda: wrapped(*args, **kwargs))


def tensor_method_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``TensorVariable.call_method(tx, name, args, kwargs)``."""

    def bind(tx: Any, name: str, args: Any, kwargs: Any) -> tuple[Any, str, Any, Any]:
        return tx, name, args, kwargs

    tx, method, call_args, call_kwargs = bind(*args, **kwargs)
    found = ops.rule_for_method(method)
    if found is None:
        return wrapped(*args, **kwargs)
    values = [*call_args, *call_kwargs.values()]
    if not _realize_floats(tx, values):
        return wrapped(*args, **kwargs)

    def trace(target: Any) -> Any:
        return _trace(tx, target, [instance, *call_args], dict(call_kwargs))

    rule, name = found
    return _apply(rule, name, tx, [instance, *values], trace, lambda: wrapped(*args, **kwargs))


def _trace(tx: Any, target: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Trace ``target(*args, **kwargs)``: a Python function is inlined (as Dynamo inlines
    its own polyfills), a custom op becomes a graph node."""
    if isinstance(target, types.FunctionType):
        from torch._dynamo.variables.functions import UserFunctionVariable

        return tx.inline_user_function_return(UserFunctionVariable(target), args, kwargs)
    from torch._dynamo.variables.base import VariableTracker

    return VariableTracker.build(tx, target).call_function(tx, args, kwargs)


def _bind(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any, Any]:
    def bind(tx: Any, args: Any, kwargs: Any) -> tuple[Any, Any, Any]:
        return tx, args, kwargs

    return bind(*args, **kwargs)


# ----------------------------------------------------------------------------- max/min
def builtin_call_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``BuiltinVariable.call_function(tx, args, kwargs)``: ``max``/``min`` operands."""
    if instance.fn is max or instance.fn is min:
        return _max_min_operands(wrapped, args, kwargs)
    return wrapped(*args, **kwargs)


def _max_min_operands(wrapped: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``max(step, True)`` / ``min(step, nan)`` with a marked ``step``: Dynamo's fake call of
    ``torch.sym_max(SymInt, bool)`` (or with NaN) fails to compile where Python compares.
    The bool is passed as the int it equals (the value and every comparison are the same;
    which object eager returns is decided again at write-back, ``_writeback``); a NaN is
    resolved as Python's comparisons resolve it."""
    from torch._dynamo.variables.constant import ConstantVariable
    from torch._dynamo.variables.lists import BaseListVariable

    tx, call_args, call_kwargs = _bind(args, kwargs)
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
    return wrapped(tx, operands, {})


def _is_nan_constant(variable: Any) -> bool:
    from torch._dynamo.variables.constant import ConstantVariable

    value = getattr(variable, "value", None) if isinstance(variable, ConstantVariable) else None
    return type(value) is float and value != value


def _is_bool_constant(variable: Any) -> bool:
    from torch._dynamo.variables.constant import ConstantVariable

    return isinstance(variable, ConstantVariable) and type(variable.value) is bool
