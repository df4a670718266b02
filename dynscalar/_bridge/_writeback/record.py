"""Recording: the Python-level call that made each symbolic value, while Dynamo traces.

The hooks on ``BuiltinVariable.call_function`` (:func:`builtin_call_hook`),
``PolyfilledFunctionVariable.call_function`` (:func:`record_call_hook`: Dynamo replaces
``sum`` and ``math.prod`` by polyfills) and ``SymNodeVariable.call_method``
(:func:`symnode_method_hook`; ``ConstantVariable.call_method``, :func:`constant_method_hook`,
for a proxy compiled as a constant) remember, for each symbolic value a call makes, the callable
the user's code called and its arguments: ``max`` and not the ``torch.sym_max`` node torch
lowers it to, ``operator.iadd`` and not the ``operator.add`` node Dynamo desugars ``+=``
into.  The shadows (``shadows``) run those calls again.  Inside ``dynscalar.disabled()``
the table keeps :func:`record_call_hook` and :func:`symnode_record_hook`, which only
record; the active hooks also trace the arithmetic of ``arith`` where eager computes what
Dynamo would not.
"""

from __future__ import annotations

import itertools
from typing import Any

from .. import _torch
from .._state import peek_state
from . import arith
from .calls import SELECTING, Call, ItemOf, MethodCall, realized, sequence_items

__all__ = [
    "builtin_call_hook",
    "constant_method_hook",
    "folded",
    "handed_back",
    "record_call_hook",
    "symnode_method_hook",
    "symnode_record_hook",
]


def _symbolic(variable: Any) -> bool:
    variable = realized(variable)
    if isinstance(variable, _torch.SymNodeVariable):
        return True
    if isinstance(variable, _torch.BaseListVariable) and isinstance(variable.items, list):
        return any(_symbolic(item) for item in variable.items)
    return False


def _from_constant(state: Any, variable: Any) -> bool:
    """True for a constant made from a proxy, or computed from one (see ``_record``)."""
    variable = realized(variable)
    key = id(variable)
    for table in (state.writeback.constants, state.writeback.variable_calls):
        tagged = table.get(key)
        if tagged is not None and tagged[0] is variable:
            return True
    if isinstance(variable, _torch.BaseListVariable) and isinstance(variable.items, list):
        return any(_from_constant(state, item) for item in variable.items)
    return False


def _copy_of(variable: Any) -> Any:
    """``variable.clone()``, also for a ``SymNodeVariable``: torch 2.13's ``clone`` passes
    every instance attribute to ``__init__``, which does not take the ``_tensor_var``
    cache a ``SymNodeVariable`` sets itself (``TypeError: ... unexpected keyword argument
    '_tensor_var'``; met in AdamW's ``1 - beta1`` with marked betas)."""
    fields = dict(variable.__dict__)
    if "_tensor_var" not in fields:
        return variable.clone()
    del fields["_tensor_var"]
    return type(variable)(**fields)  # its own tensor form is made again when asked


def _record(tx: Any, result: Any, fn: Any, args: Any, kwargs: Any, before: int, graph: Any) -> Any:
    """Remember that ``fn(*args, **kwargs)`` (a Python-level call) made ``result``."""
    state = peek_state(getattr(tx.output, "shape_env", None))
    if state is None or not (state.writeback.origins or state.writeback.constants):
        return result
    if fn in SELECTING and result is state.writeback.selected and result is not None:
        # ``max``/``min`` traced as comparisons (``_decompositions._select``) hand back the
        # winning operand itself; the comparisons' guards fix which one, so it is the very
        # object eager returns: nothing to replay.
        state.writeback.selected = None
        return result
    operands = [*args, *kwargs.values()]
    if isinstance(result, _torch.ConstantVariable) and state.writeback.constants:
        # arithmetic on a proxy compiled as a constant (an int outside int64, a restart)
        if any(_from_constant(state, operand) for operand in operands):
            result = _copy_of(result)
            state.writeback.variable_calls[id(result)] = (
                result,
                Call(fn, list(args), dict(kwargs)),
            )
        return result
    items = sequence_items(result) if state.writeback.constants else None
    if items and all(isinstance(realized(i), _torch.ConstantVariable) for i in items):
        # a tuple of constants (``divmod`` of a specialized float): each item replays its
        # own item of eager's call, which holds proxies
        if any(_from_constant(state, operand) for operand in operands):
            copies = [_copy_of(realized(item)) for item in items]
            for index, copy in enumerate(copies):
                call = Call(ItemOf(fn, index), list(args), dict(kwargs))
                state.writeback.variable_calls[id(copy)] = (copy, call)
            result = result.clone(items=copies)
        return result
    if not isinstance(result, _torch.SymNodeVariable) or not any(_symbolic(o) for o in operands):
        return result
    call = Call(fn, list(args), dict(kwargs))
    node = result.as_proxy().node
    made = len(graph.nodes) - before
    if made > 0 and node.graph is graph:
        for candidate in itertools.islice(reversed(graph.nodes), made):
            if candidate is node:
                state.writeback.calls[node] = call  # the outermost call that made it wins
                state.writeback.node_shadows.pop(node, None)  # an inner call's shadow, if asked for
                return result
    # An existing value handed back unchanged (`pow(a, 1)`, `+a`): tag a copy of the
    # variable, so other uses of the value keep their meaning.
    result = _copy_of(result)
    state.writeback.variable_calls[id(result)] = (result, call)
    return result


def folded(tx: Any, result: Any, fn: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """``result`` of ``fn(*args, **kwargs)`` that Dynamo folded to constants (a ``math``
    function of a proxy compiled as a constant), recorded so that write-back replays
    ``fn`` on what eager holds (``math.floor`` of a ``DynamicFloat`` is a ``DynamicInt``);
    anything else is handed back as it is."""
    items = sequence_items(result)
    constants = [result] if items is None else [realized(i) for i in items]
    if not constants or not all(isinstance(c, _torch.ConstantVariable) for c in constants):
        return result
    graph = tx.output.graph
    return _record(tx, result, fn, args, kwargs, len(graph.nodes), graph)


def handed_back(tx: Any, operand: Any, fn: Any, args: list[Any]) -> Any:
    """``operand`` as the value ``fn(*args)`` made (Python hands the operand back: an
    int's ``math.floor``), recorded so that write-back replays ``fn`` as eager does."""
    graph = tx.output.graph
    return _record(tx, operand, fn, args, {}, len(graph.nodes), graph)


def builtin_call_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``BuiltinVariable.call_function(tx, args, kwargs)``: record the builtin
    (``max``, ``sum``, ``pow``, ``operator.iadd``, ...) that made a symbolic value."""
    tx, call_args, call_kwargs = kwargs["tx"], kwargs["args"], kwargs["kwargs"]
    graph = tx.output.graph
    before = len(graph.nodes)
    fixed = arith.negative_float_power(tx, instance.fn, call_args)
    if fixed is None:
        fixed = arith.float_floor_division(tx, instance.fn, call_args)
    if fixed is not None:
        call_args = fixed
        args, kwargs = (tx, fixed, call_kwargs), {}
    result = arith.invert_of_proxy(tx, instance.fn, call_args)
    if result is None:
        result = wrapped(*args, **kwargs)
    return _record(tx, result, instance.fn, call_args, call_kwargs, before, graph)


def record_call_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``PolyfilledFunctionVariable.call_function(tx, args, kwargs)``: record the
    function Dynamo replaced by a polyfill (``sum``, ``math.prod``).  Inside
    ``dynscalar.disabled()`` also around ``BuiltinVariable.call_function``, where it only
    records: the call is traced as stock Dynamo traces it."""
    tx, call_args, call_kwargs = kwargs["tx"], kwargs["args"], kwargs["kwargs"]
    graph = tx.output.graph
    before = len(graph.nodes)
    result = wrapped(*args, **kwargs)
    return _record(tx, result, instance.fn, call_args, call_kwargs, before, graph)


def symnode_method_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``SymNodeVariable.call_method(tx, name, args, kwargs)``: record dunder calls
    (``a.__add__(1)``, ``a.__radd__(1)``) as calls of the proxy's own method."""
    tx, name = kwargs["tx"], kwargs["name"]
    call_args, call_kwargs = kwargs["args"], kwargs["kwargs"]
    graph = tx.output.graph
    before = len(graph.nodes)
    result = None if call_kwargs else arith.dunder_of_proxy(tx, instance, name, call_args)
    if result is None:
        result = wrapped(*args, **kwargs)
    return _record(tx, result, MethodCall(name), [instance, *call_args], call_kwargs, before, graph)


def symnode_record_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Inside ``dynscalar.disabled()``, around ``SymNodeVariable.call_method``: record the
    dunder calls stock Dynamo traces (nothing is routed)."""
    tx, name = kwargs["tx"], kwargs["name"]
    call_args, call_kwargs = kwargs["args"], kwargs["kwargs"]
    graph = tx.output.graph
    before = len(graph.nodes)
    result = wrapped(*args, **kwargs)
    return _record(tx, result, MethodCall(name), [instance, *call_args], call_kwargs, before, graph)


def constant_method_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``ConstantVariable.call_method(tx, name, args, kwargs)``: record dunder calls
    on a constant that stands for a proxy (a marked value compiled as a constant: an int
    whose arithmetic leaves int64, a restart), as :func:`symnode_method_hook` does for a
    symbolic one: ``self.u = self.s.__rsub__(4)`` leaves a ``DynamicInt`` in eager (the
    long fuzzer profile, program 2617)."""
    result = wrapped(*args, **kwargs)
    name = kwargs["name"]
    if not (name.startswith("__") and name.endswith("__")):
        return result
    tx, call_args, call_kwargs = kwargs["tx"], kwargs["args"], kwargs["kwargs"]
    graph = tx.output.graph
    return _record(
        tx, result, MethodCall(name), [instance, *call_args], call_kwargs, len(graph.nodes), graph
    )
