"""Symbolic: what the ``ShapeEnv`` and ``SymNode`` do with a marked value's symbol
(Python's IEEE arithmetic and comparisons on floats, value ranges, guards that force a
value, data-dependent branches on unbacked ints).

The ``SymNode`` hooks pass :func:`float_gate` first, so int (shape) arithmetic runs
torch's code after one check; :func:`run_node_hook` passes :func:`run_node_gate`.

Examples:
    >>> from dynscalar._bridge.stages import symbolic
    >>> symbolic.add_hook.__name__
    'add_hook'
"""

from __future__ import annotations

from typing import Any

from .. import _forcing, _ints, _python
from .._state import peek_state

__all__ = [
    "add_hook",
    "bound_hook",
    "data_dependent_hook",
    "eq_hook",
    "evaluate_sym_node_hook",
    "float_gate",
    "ge_hook",
    "gt_hook",
    "le_hook",
    "lt_hook",
    "mul_hook",
    "ne_hook",
    "neg_hook",
    "run_node_gate",
    "run_node_hook",
    "sub_hook",
    "unbacked_branch_hook",
]

Args = tuple[Any, ...]
Kwargs = dict[str, Any]


def float_gate(node: Any, args: Args, kwargs: Kwargs) -> bool:
    """Whether the hooks on ``SymNode`` arithmetic and comparisons run: only with a float
    operand (they act on float results alone)."""
    if node.pytype is float:
        return True
    other = args[0] if args else kwargs.get("other")
    return getattr(other, "pytype", None) is float


def add_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``SymNode._add``: a float sum rounds as IEEE addition does (``_python``)."""
    return _python.add_hook(wrapped, instance, args, kwargs)


def sub_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``SymNode._sub``: as IEEE subtraction (``_python``)."""
    return _python.sub_hook(wrapped, instance, args, kwargs)


def mul_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``SymNode._mul``: as IEEE multiplication (``_python``)."""
    return _python.mul_hook(wrapped, instance, args, kwargs)


def neg_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``SymNode._neg`` (``_python``)."""
    return _python.neg_hook(wrapped, instance, args, kwargs)


def eq_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``SymNode._eq``: a float comparison as Python decides it (NaN included)."""
    return _python.eq_hook(wrapped, instance, args, kwargs)


def ne_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``SymNode._ne`` (``_python``)."""
    return _python.ne_hook(wrapped, instance, args, kwargs)


def lt_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``SymNode._lt`` (``_python``)."""
    return _python.lt_hook(wrapped, instance, args, kwargs)


def le_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``SymNode._le`` (``_python``)."""
    return _python.le_hook(wrapped, instance, args, kwargs)


def gt_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``SymNode._gt`` (``_python``)."""
    return _python.gt_hook(wrapped, instance, args, kwargs)


def ge_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``SymNode._ge`` (``_python``)."""
    return _python.ge_hook(wrapped, instance, args, kwargs)


def bound_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``bound_sympy``: the value range of an expression holding Python's float functions
    (``_python``); also its form in a frame traced as stock."""
    return _python.bound_hook(wrapped, instance, args, kwargs)


def run_node_gate(instance: Any, args: Args, kwargs: Kwargs) -> bool:
    """Whether :func:`run_node_hook` runs: for a comparison of the user's program, or in
    a compile that holds a mark; Dynamo passes its ``OutputGraph`` as the tracer."""
    node = args[1] if len(args) > 1 else kwargs.get("node")
    if getattr(node, "target", None) in _python.USER_COMPARISONS:
        return True
    tracer = args[0] if args else kwargs.get("tracer")
    return peek_state(getattr(tracer, "shape_env", None)) is not None


def run_node_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``torch._dynamo.utils.run_node``: a runtime assertion on a marked value, and the
    user's float comparisons (``_python``)."""
    return _python.run_node_hook(wrapped, instance, args, kwargs)


def evaluate_sym_node_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``ShapeEnv.evaluate_sym_node``: a guard that fixes a marked value to one value is
    noted, reported or refused (``_forcing``)."""
    return _forcing.evaluate_sym_node_hook(wrapped, instance, args, kwargs)


def data_dependent_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``ShapeEnv._make_data_dependent_error``: the error names the unbacked mark (``_ints``)."""
    return _ints.data_dependent_hook(wrapped, instance, args, kwargs)


def unbacked_branch_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``SymNodeVariable.evaluate_expr``: a branch on an unbacked mark (``_ints``)."""
    return _ints.unbacked_branch_hook(wrapped, instance, args, kwargs)
