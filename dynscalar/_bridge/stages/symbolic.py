"""Symbolic: what the ``ShapeEnv`` and ``SymNode`` do with a marked value's symbol
(Python's IEEE arithmetic and comparisons on floats, value ranges, guards that force a
value, data-dependent branches on unbacked ints).

The ``SymNode`` hooks pass :func:`float_gate` first, so int (shape) arithmetic runs
torch's code after one check; :func:`run_node_hook` passes :func:`run_node_gate`.

Code forcing a marked scalar to one value: avoided where the bridge can, else reported.

The hook on ``ShapeEnv.evaluate_sym_node`` sees every guard that fixes a marked value to
its current value (``int(n)``, ``range(n)``, indexing, formatting).  Before it is reported
(``_reports``), two callers may take it back: a torch call ``_ops`` is watching (traced
again through the op's rule) and a marked property's getter (``_properties``: the trace
restarts with the value read as stock torch reads it).  A predicate that pins its one
symbol (``if p == 0`` held) is one path of a dynamic value, not a specialization.

Examples:
    >>> from dynscalar._bridge.stages import symbolic
    >>> symbolic.add_hook.__name__
    'add_hook'
"""

from __future__ import annotations

import logging
import os
from typing import Any

from .. import _python, _torch
from .._ops import watching_forced
from .._properties import restart_if_forced_in_getter
from .._reports import record_specialized, report_specialization
from .._state import peek_state

log = logging.getLogger("dynscalar")

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


def evaluate_sym_node_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Detect code that forces a marked scalar to one concrete value.

    ``int(sym)``, ``range(sym)``, list indexing and string formatting all end in
    ``SymNode.guard_int``/``guard_float`` -> ``ShapeEnv.evaluate_sym_node`` on an int/float
    expression; the result is a guard fixing the symbol to its current value.  Control flow
    (``if step % 2 == 0``) evaluates a *bool* expression: a guard on a predicate, not a
    specialization, so it is ignored here.
    """
    if not _bridge_frames_hidden:
        _hide_bridge_frames()
    state = peek_state(instance)
    if state is not None and state.marks.backed:
        marks = state.marks
        sym_node = kwargs["sym_node"]
        expr = sym_node.expr
        if sym_node.pytype is bool:
            result = wrapped(*args, **kwargs)
            if _pins_one_symbol(expr, bool(result)):  # `p == 0` held: that path's pin
                state.marks.paths.update(s for s in expr.free_symbols if s in state.marks.backed)
            return result
        if not getattr(expr, "is_number", True):
            ours = [s for s in expr.free_symbols if s in state.marks.backed]
            if ours and watching_forced(ours):  # the frame is traced again without it
                return wrapped(*args, **kwargs)
            if ours and state.marks.via_property:
                restart_if_forced_in_getter(instance, ours)  # raises to restart the trace
            reported = ours and report_specialization(
                [(marks.label(s), marks.backed[s][1]) for s in ours],
                sym_node.hint,
            )
            if reported:
                state.marks.reported.update(ours)
                record_specialized(state, ours, reported)
    return wrapped(*args, **kwargs)


def _pins_one_symbol(expr: Any, result: bool) -> bool:
    """A predicate whose outcome leaves its one symbol a single value: ``Eq(s, 0.5)``
    that held, or ``Ne(s, 1.0)`` that did not (``_refs.sub``'s ``alpha != 1``)."""
    import sympy

    pins = sympy.Eq if result else sympy.Ne
    return (
        isinstance(expr, pins)
        and len(expr.free_symbols) == 1
        and any(side.is_number for side in expr.args)
    )


_bridge_frames_hidden = False


def _hide_bridge_frames() -> None:
    """Leave the bridge's files out of the location torch gives a guard.

    ShapeEnv attributes a guard to the innermost frame whose file is not in
    ``symbolic_shapes.uninteresting_files()``; without this, a guard made under this hook
    is attributed to the hook itself, and torch's recompile-limit warning ends with
    "_bridge/stages/symbolic.py:<line> in evaluate_sym_node_hook". That function returns one cached
    set; adding the bridge's files to it makes torch skip them as it skips its own. Done at
    the first call (Dynamo is fully imported then), not at install time.
    """
    global _bridge_frames_hidden
    _bridge_frames_hidden = True
    bridge = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files = {
        os.path.join(folder, name)
        for folder, _, names in os.walk(bridge)
        for name in names
        if name.endswith(".py")
    }
    try:
        _torch.uninteresting_files().update(files)
    except Exception:  # cosmetic: a torch without it names our frame
        log.debug("could not hide the bridge's frames from guard locations", exc_info=True)


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


def data_dependent_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``ShapeEnv._make_data_dependent_error``: the error names the unbacked mark, when
    torch cannot branch on an unbacked symbol."""
    error = wrapped(*args, **kwargs)
    state = peek_state(instance)
    expr = kwargs.get("expr")
    if state is None or not state.marks.unbacked or expr is None or not error.args:
        return error
    marks = state.marks
    names = sorted(
        {marks.label(s) for s in getattr(expr, "free_symbols", ()) if s in marks.unbacked}
    )
    if names:
        hint = (
            f"dynscalar: {', '.join(names)} is marked unbacked=True, so torch.compile cannot "
            "branch on its value. Use fullgraph=False (the branch becomes a graph break), "
            "mark it backed (unbacked=False: one compile per branch taken), or express the "
            "branch with torch.where / torch.cond.\n"
        )
        error.args = (hint + str(error.args[0]), *error.args[1:])
    return error


_TORCH_ADVICE = "Consider annotating your code using torch._check*(). "


def unbacked_branch_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """Put dynscalar's explanation first in the error for a branch on an unbacked mark.

    ``SymNodeVariable.evaluate_expr`` turns the data-dependent error (which
    :func:`data_dependent_hook` starts with the marked attribute and what to do) into a
    ``UserError`` whose message opens with torch's generic "Consider annotating your code
    using torch._check*()"; the reader should see which attribute and the fix first.
    """
    try:
        return wrapped(*args, **kwargs)
    except Exception as exc:
        message = exc.args[0] if exc.args and isinstance(exc.args[0], str) else ""
        if message.startswith(_TORCH_ADVICE) and message[len(_TORCH_ADVICE) :].startswith(
            "dynscalar: "
        ):
            rest = message[len(_TORCH_ADVICE) :]
            ours, _, torch_part = rest.partition("\n")
            reordered = f"{ours}\ntorch: {_TORCH_ADVICE.strip()} {torch_part}"
            exc.args = (reordered, *exc.args[1:])
            for name in ("msg", "message"):
                if isinstance(getattr(exc, name, None), str):
                    setattr(exc, name, reordered)
        raise
