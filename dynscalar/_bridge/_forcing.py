"""Code forcing a marked scalar to one value: avoided where the bridge can, else reported.

The hook on ``ShapeEnv.evaluate_sym_node`` sees every guard that fixes a marked value to
its current value (``int(n)``, ``range(n)``, indexing, formatting).  Before it is reported
(``_reports``), two callers may take it back: a torch call ``_ops`` is watching (traced
again through the op's rule) and a marked property's getter (``_properties``: the trace
restarts with the value read as stock torch reads it).  A predicate that pins its one
symbol (``if p == 0`` held) is one path of a dynamic value, not a specialization.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from . import _torch
from ._ops import watching_forced
from ._properties import restart_if_forced_in_getter
from ._reports import record_specialized, report_specialization
from ._state import peek_state

log = logging.getLogger("dynscalar")

__all__ = ["evaluate_sym_node_hook"]


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
    if state is not None and state.backed:
        sym_node = kwargs["sym_node"]
        expr = sym_node.expr
        if sym_node.pytype is bool:
            result = wrapped(*args, **kwargs)
            if _pins_one_symbol(expr, bool(result)):  # `p == 0` held: that path's pin
                state.paths.update(s for s in expr.free_symbols if s in state.backed)
            return result
        if not getattr(expr, "is_number", True):
            ours = [s for s in expr.free_symbols if s in state.backed]
            if ours and watching_forced(ours):  # the frame is traced again without it
                return wrapped(*args, **kwargs)
            if ours and state.via_property:
                restart_if_forced_in_getter(instance, ours)  # raises to restart the trace
            reported = ours and report_specialization(
                [(state.labels.get(s, state.backed[s][0]), state.backed[s][1]) for s in ours],
                sym_node.hint,
            )
            if reported:
                state.reported.update(ours)
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
    bridge = os.path.dirname(os.path.abspath(__file__))
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
