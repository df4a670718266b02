"""Trace: the calls Dynamo's trace meets where a marked value takes part (builtins, torch
functions, tensor, SymNode and constant methods, polyfills, properties, ``range``).

Examples:
    >>> from dynscalar._bridge.stages import trace
    >>> trace.builtin_call_hook.__name__
    'builtin_call_hook'
"""

from __future__ import annotations

from typing import Any

from .. import _ops, _properties, _python, _writeback

__all__ = [
    "builtin_call_hook",
    "constant_method_hook",
    "in_graph_call_hook",
    "numpy_call_hook",
    "property_get_hook",
    "range_hook",
    "record_call_hook",
    "symnode_method_hook",
    "symnode_record_hook",
    "tensor_method_hook",
]

Args = tuple[Any, ...]
Kwargs = dict[str, Any]
_CALL = ("tx", "args", "kwargs")  # BuiltinVariable.call_function's parameters


def builtin_call_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``BuiltinVariable.call_function(tx, args, kwargs)`` (``max``, ``pow``, ``int``,
    ``operator.iadd``, ...): three concerns, in this order, each calling the next:

    1. write-back (``_writeback``): Python's arithmetic where Dynamo's differs
       (a float's negative power and floor division, ``~`` of a proxy), and the call
       recorded for write-back once the rest made its result;
    2. op routing (``_ops``): ``max``/``min`` operands, ``value ** tensor`` as ``torch.pow``;
    3. Python's exceptions (``_python``): ``int``/``round`` of NaN or infinity, division
       by zero; then torch's function.
    """

    # a concern passing the call on positionally: the next one reads its arguments by name
    def raising(*a: Any, **k: Any) -> Any:
        named = {**dict(zip(_CALL, a, strict=False)), **k} if a else k
        return _python.python_raises_hook(wrapped, instance, (), named)

    def routed(*a: Any, **k: Any) -> Any:
        named = {**dict(zip(_CALL, a, strict=False)), **k} if a else k
        return _ops.builtin_call_hook(raising, instance, (), named)

    return _writeback.builtin_call_hook(routed, instance, args, kwargs)


def record_call_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``PolyfilledFunctionVariable.call_function`` (``sum``, ``math.prod``), and
    ``BuiltinVariable.call_function`` inside ``disabled()``: the call recorded for
    write-back, traced as stock."""
    return _writeback.record_call_hook(wrapped, instance, args, kwargs)


def symnode_method_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``SymNodeVariable.call_method`` (``a.__add__(1)``): recorded for write-back."""
    return _writeback.symnode_method_hook(wrapped, instance, args, kwargs)


def symnode_record_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``SymNodeVariable.call_method`` inside ``disabled()``: recorded, traced as stock."""
    return _writeback.symnode_record_hook(wrapped, instance, args, kwargs)


def constant_method_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``ConstantVariable.call_method`` of a constant made from a proxy: recorded."""
    return _writeback.constant_method_hook(wrapped, instance, args, kwargs)


def in_graph_call_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``TorchInGraphFunctionVariable.call_function``: a torch function taking a marked
    float follows its op rule, form or boxed call (``_ops``)."""
    return _ops.in_graph_call_hook(wrapped, instance, args, kwargs)


def tensor_method_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``TensorVariable.call_method``: a tensor method taking a marked float (``_ops``)."""
    return _ops.tensor_method_hook(wrapped, instance, args, kwargs)


def numpy_call_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``NumpyVariable.call_function``: ``np.sin`` of a marked float traced as its ``math``
    twin where numpy's result is the same bit for bit (``_ops``)."""
    return _ops.numpy_call_hook(wrapped, instance, args, kwargs)


def range_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``BuiltinVariable.call_range`` (torch 2.13's signature): ``range()`` of a float
    raises ``TypeError`` as Python does (``_python``)."""
    return _python.range_hook(wrapped, instance, args, kwargs)


def property_get_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``PropertyVariable.tp_descr_get_impl``: a marked property's getter (``_properties``)."""
    return _properties.property_get_hook(wrapped, instance, args, kwargs)
