"""Int expressions of marked ints that would leave int64 in compiled code.

A marked int is a SymInt; what the code computes from it (``self.s * 2 + 1``) is an
expression of that symbol.  Eager Python ints never overflow.  Inductor passes such an
expression to its kernels as a C ``int64``: with ``s = 2**62`` the compiled
``x * (s * 2 + 1)`` wraps around and returns numbers of the wrong sign, with no error (and
compiling with such a value fails in fake tensors).  So, in the AOT pass (every backend
but ``eager``, whose graph computes with Python ints):

* an int expression of a marked int whose current value fits int64 gets a guard that it
  still does (``-2**63 <= 2*s0 + 1 <= 2**63 - 1``), evaluated in Python on every call;
* when it does not fit (the guard failed and this is the recompile, or the first value
  already overflows), the marked ints involved are compiled like unmarked values for
  this one compile: a constant guarded by value, exact, with a ``SpecializationWarning``
  (``strict=True``: ``SpecializationError``).  The analysis restarts once to do that.

Expressions with a float or an unbacked symbol are left alone (no hint to check).
"""

from __future__ import annotations

import logging
from typing import Any

from .._spec import INT64_MAX, INT64_MIN
from ._state import CompileState, lock

log = logging.getLogger("dynscalar")

__all__ = ["forget_overflows", "guard_int64", "overflow_reason"]

#: source name of a marked int (without ``.__wrapped__``) -> why the restarted trace reads
#: it as a constant; filled before a restart, taken by that trace (an AOT cache hit skips
#: the pass that would otherwise empty it)
_overflowing: dict[str, str] = {}


def overflow_reason(source_name: str) -> str | None:
    """Why the marked int read through ``source_name`` is compiled as a constant in this
    trace, if it is (taken: the next compile reads it symbolically again)."""
    with lock:
        return _overflowing.pop(source_name, None)


def forget_overflows() -> None:
    with lock:
        _overflowing.clear()


def _hints(shape_env: Any) -> Any:
    """symbol -> current value (``backed_var_to_val`` from torch 2.13 on)."""
    hints = getattr(shape_env, "backed_var_to_val", None)
    return shape_env.var_to_val if hints is None else hints


def _source_names(shape_env: Any, symbol: Any) -> list[str]:
    suffix = ".__wrapped__"
    names = []
    for source in shape_env.var_to_sources.get(symbol, ()):
        name = source.name() if callable(source.name) else source.name
        names.append(name[: -len(suffix)] if name.endswith(suffix) else name)
    return names


def guard_int64(gm: Any, shape_env: Any, state: CompileState) -> None:
    """Guard every int expression of our backed int symbols in ``gm`` to fit int64; restart
    with the symbols specialized when one does not fit now."""
    import sympy
    import torch

    ints = {s for s in state.backed if s not in state.floats}
    if not ints:
        return
    seen: set[Any] = set()
    for node in gm.graph.nodes:
        value = node.meta.get("val")
        if not isinstance(value, torch.SymInt):
            continue
        expr = value.node.expr
        free = expr.free_symbols
        if isinstance(expr, sympy.Symbol) or expr in seen or not free or not free <= ints:
            continue  # the symbols themselves are int64 (checked when the call starts)
        seen.add(expr)
        current = int(expr.xreplace(_hints(shape_env)))
        if INT64_MIN <= current <= INT64_MAX:
            shape_env.evaluate_expr(sympy.Le(expr, INT64_MAX))
            shape_env.evaluate_expr(sympy.Ge(expr, INT64_MIN))
            continue
        from torch._dynamo.exc import TensorifyScalarRestartAnalysis

        with lock:
            for symbol in free:
                where = state.backed[symbol][0]
                for name in _source_names(shape_env, symbol):
                    _overflowing[name] = (
                        f"holds a value for which the compiled code computes {current} "
                        "(outside int64, where compiled code would overflow)"
                    )
                log.info("%s: %s = %d leaves int64; specializing", where, expr, current)
        raise TensorifyScalarRestartAnalysis
