"""Specialization reports: a marked scalar forced to one value, at the user's line."""

from __future__ import annotations

from typing import Any

from .._diagnostics import SpecializationError, SpecializationWarning, warn_once
from .._spec import DynamicSpec
from ._state import compile_state, peek_state

__all__ = ["evaluate_sym_node_hook", "passthrough", "remember", "user_location"]


def remember(shape_env: Any, symbol: Any, where: str, spec: DynamicSpec) -> None:
    """Record a backed symbol made for a marked scalar (read by evaluate_sym_node_hook)."""
    compile_state(shape_env).backed[symbol] = (where, spec)


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
    state = peek_state(instance)
    ours = state.backed if state is not None else None
    if ours:
        sym_node = args[0] if args else kwargs["sym_node"]
        expr = sym_node.expr
        if sym_node.pytype is not bool and not getattr(expr, "is_number", True):
            hits = [ours[s] for s in expr.free_symbols if s in ours]
            if hits and _report_specialization(hits, sym_node.hint):
                state.reported.update(s for s in expr.free_symbols if s in ours)  # type: ignore[union-attr]
    return wrapped(*args, **kwargs)


def user_location() -> tuple[str, int, str]:
    from torch._guards import TracingContext

    try:
        frames = TracingContext.extract_stack()
    except Exception:  # noqa: BLE001 - no tracing context: no location, still report
        frames = []
    if not frames:
        return ("<unknown>", 0, "")
    frame = frames[-1]
    return (frame.filename, frame.lineno or 0, (frame.line or "").strip())


def _report_specialization(hits: list[tuple[str, DynamicSpec]], value: object) -> bool:
    """Warn (or raise, for strict marks) at the user's line; False when no user code runs."""
    filename, lineno, line = user_location()
    if not lineno:
        # No user frame: a backend pass (e.g. the float-tensorify pass) is evaluating the
        # symbol, not user code.  _floats reports those cases itself.
        return False
    names = sorted({where for where, _ in hits})
    code = f" (`{line}`)" if line else ""
    message = (
        f"dynscalar: {', '.join(names)} is forced to one value ({value!r}) at "
        f"{filename}:{lineno}{code}; torch.compile now guards on its exact value and "
        "recompiles for each new one. Keep it symbolic: use a tensor op instead of Python "
        "(torch.arange(n) instead of range(n)), avoid int()/float(), f-strings and list "
        "indexing on it inside the compiled region, or move that code out of it."
    )
    if any(spec.strict for _, spec in hits):
        raise passthrough(SpecializationError(message + " (strict=True on the mark)"))
    # once per attribute and code location (several attributes: the first one not yet seen)
    for where in names:
        key = ("specialized", where, filename, lineno)
        warn_once(key, message, SpecializationWarning, location=(filename, lineno))
    return True


_passthrough_types: dict[type, type] = {}


def passthrough(exc: Exception) -> Exception:
    """Re-type ``exc`` so Dynamo re-raises it as is, with or without ``fullgraph``.

    Dynamo wraps unknown exceptions raised while tracing into ``InternalTorchDynamoError``,
    and treats ``UserError`` as a soft failure (the frame silently runs eagerly without
    ``fullgraph``), which would hide a range violation.  ``ConstraintViolationError`` is
    re-raised unchanged in both modes (torch/_dynamo/convert_frame.py, ``_compile``).  The
    returned exception is also a ``ValueError``/``TypeError``, so ``except ValueError``
    in user code still catches it.
    """
    from torch.fx.experimental.symbolic_shapes import ConstraintViolationError

    base = type(exc)
    cls = _passthrough_types.get(base)
    if cls is None:
        namespace = {
            "__module__": base.__module__,
            "__qualname__": base.__qualname__,
            # Pickles (and so crosses processes) as the public class it re-types.
            "__reduce__": lambda self: (base, self.args),
        }
        cls = type(base.__name__, (base, ConstraintViolationError), namespace)
        _passthrough_types[base] = cls
    return cls(*exc.args)  # type: ignore[no-any-return]
