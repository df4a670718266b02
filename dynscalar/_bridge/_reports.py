"""Specialization reports: a marked scalar forced to one value, told at the user's line.

Each report names the value by its instance path (``model.blocks.0.drop.p``, as
``named_modules`` spells it) and its attribute (``Dropout.p``), points at the innermost
line of the user's own code (not torch's or dynscalar's files), and gives advice that fits
where the value was forced: in the user's code (``range(n)``, ``int(n)``, f-strings), or
inside torch (an op that takes a Python float and has no decomposition).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import threading
import warnings
import weakref
from collections.abc import Iterator
from types import FrameType
from typing import Any, NamedTuple

from .. import _caches
from .._diagnostics import DynscalarError, SpecializationError, SpecializationWarning, warn_once
from .._spec import DynamicSpec
from . import _torch
from ._paths import call_site_frame, innermost_user, user_path
from ._state import compile_state

log = logging.getLogger("dynscalar")

__all__ = [
    "Label",
    "Location",
    "at_line",
    "passthrough",
    "SPECIALIZED",
    "record_specialized",
    "refuse",
    "remember",
    "report_specialization",
    "specializing",
    "traced_location",
    "user_line",
    "user_location",
]


_local = threading.local()


@contextlib.contextmanager
def specializing(op: str, reason: str) -> Iterator[None]:
    """While Dynamo traces ``op`` with a marked float it will force (``_ops``): the reason a
    specialization report gives."""
    previous = getattr(_local, "op", None)
    _local.op = (op, reason)
    try:
        yield
    finally:
        _local.op = previous


def remember(
    shape_env: Any,
    symbol: Any,
    where: str,
    spec: DynamicSpec,
    label: Label,
    source: str | None = None,
    code: Any = None,
) -> None:
    """Record a backed symbol made for a marked scalar (read by evaluate_sym_node_hook).

    ``where`` is ``Class.attr`` (error messages); ``label`` adds the instance path;
    ``source`` is Dynamo's name for the value and ``code`` the compiled frame's code (what
    :func:`record_specialized` files a specialization under).
    """
    state = compile_state(shape_env)
    state.marks.backed[symbol] = (where, spec)
    state.marks.labels[symbol] = label
    if source is not None:
        state.marks.sources[symbol] = source
    if code is not None:
        state.marks.code = code


#: compiled frame's code -> {Dynamo's name of a marked value -> why torch compiled it for
#: one value}, kept by the code object itself (two functions defined from the same source
#: compare equal); the doctor reads it (``tools.doctor.analysis``)
SPECIALIZED: _caches.ObjectKeyed[Any, dict[str, str]] = _caches.ObjectKeyed()
_caches.register(SPECIALIZED.clear)


def record_specialized(state: Any, symbols: Any, why: str) -> None:
    """File ``why`` as the reason torch compiled the marked ``symbols`` for one value, under
    the frame the compile belongs to (the doctor reads it: a recompile on a marked value is
    then a specialization to fix, not a path)."""
    code = state.marks.code
    if code is None:
        return
    sources = [state.marks.sources[s] for s in symbols if s in state.marks.sources]
    if not sources:
        return
    found = SPECIALIZED.setdefault(code, {})
    for source in sources:
        found.setdefault(source, why)


def _named(source_name: str, tx: Any) -> str:
    f_locals = getattr(tx, "f_locals", None)
    caller = _call_site() if f_locals is not None else None
    return user_path(source_name, f_locals=f_locals, caller=caller)


def _call_site() -> Any:
    """The user's call of the function being compiled: the innermost frame outside torch
    and dynscalar below Dynamo's compile (``convert_frame``), so that a user's own backend
    or a logging handler between is not taken for it."""
    frame = sys._getframe(1)
    outer: FrameType | None = frame
    while outer is not None and not outer.f_code.co_filename.endswith(_CONVERT_FRAME):
        outer = outer.f_back
    return call_site_frame(outer if outer is not None else frame)


_CONVERT_FRAME = os.path.join("_dynamo", "convert_frame.py")


class Label:
    """A marked value as messages name it, ``model.step (M.step)``: the path the user's
    code writes for it (``L['self'].__dict__['_modules']['blocks']._modules['0'].p`` ->
    ``model.blocks[0].p``, ``L['self'].param_groups[0]['lr']`` ->
    ``opt.param_groups[0]['lr']``: :func:`dynscalar._bridge._paths.user_path`, the
    compiled module or optimizer named as the call site names it, else ``model`` or
    ``optimizer``) and the attribute, computed when a message first uses it.

    Made for every marked value a compile wraps; most are never printed.  Holds the
    traced frame's translator weakly, so the compile's state (which outlives the compile)
    keeps no user frame or locals alive; named from the text alone once that is gone.

    Example:
        >>> str(Label("L['self']._modules['drop'].p", "Dropout.p", None))
        'model.drop.p (Dropout.p)'
    """

    __slots__ = ("_source", "_text", "_tx", "_where")

    def __init__(self, source_name: str, where: str, tx: Any) -> None:
        self._source, self._where, self._text = source_name, where, ""
        self._tx = weakref.ref(tx) if tx is not None else None

    def __str__(self) -> str:
        if not self._text:
            path = _named(self._source, self._tx() if self._tx is not None else None)
            self._text = f"{path} ({self._where})" if path != self._where else self._where
            self._tx = None
        return self._text

    __repr__ = __str__


def at_line(filename: str, lineno: int, line: str) -> str:
    """``model.py:9: `x * s` ``, or ``<stdin>:3`` where no source line is available."""
    return f"{filename}:{lineno}: `{line}`" if line else f"{filename}:{lineno}"


class Location(NamedTuple):
    """A traced source line."""

    filename: str
    lineno: int
    line: str


def traced_location() -> tuple[Location | None, Location | None]:
    """(innermost traced line of user code, innermost traced line overall)."""

    frames: list[Any]
    try:
        frames = list(_torch.TracingContext.extract_stack())
    except Exception:  # noqa: BLE001 - no tracing context: no location, still report
        frames = []
    located = [
        Location(f.filename, f.lineno or 0, (f.line or "").strip()) for f in frames if f.lineno
    ]
    if not located:
        return None, None
    return innermost_user(located), located[-1]


def user_location() -> tuple[str, int, str]:
    """The innermost traced line outside torch and dynscalar (``("<unknown>", 0, "")``)."""
    user, innermost = traced_location()
    found = user or innermost
    return tuple(found) if found is not None else ("<unknown>", 0, "")  # type: ignore[return-value]


def user_line() -> tuple[str, int] | None:
    """(filename, line) of :func:`user_location` to attribute a warning to; None if unknown."""
    filename, lineno, _ = user_location()
    return (filename, lineno) if lineno else None


STRICT_MARK = "strict=True on the mark"
STRICT_INVOLVED = "a strict=True mark is involved"  # a failure of dynscalar's own


def refuse(
    message: str,
    strict: bool,
    *,
    once: tuple[object, ...] | None,
    location: tuple[str, int] | None = None,
    error: type[DynscalarError] = SpecializationError,
    why: str = STRICT_MARK,
    category: type[Warning] = SpecializationWarning,
    stacklevel: int = 2,
    cause: BaseException | None = None,
    in_dynamo: bool = True,
) -> None:
    """The one policy for a mark dynscalar cannot honour: a ``strict=True`` mark raises,
    any other warns.

    Strict: raises ``error("<message> (<why>)")`` (from ``cause`` when given), re-typed by
    :func:`passthrough` so Dynamo lets it through (``in_dynamo=False``: raised as is, for
    code that runs outside a trace).  Otherwise: one ``category`` warning with ``message``
    per ``once`` key (:func:`~dynscalar._diagnostics.warn_once`, at ``location`` when
    given), or with ``once=None`` a warning each time, ``stacklevel`` frames above the
    caller as :func:`warnings.warn` counts them.

    Examples:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as seen:
        ...     warnings.simplefilter("always")
        ...     refuse("n is fixed", False, once=None, in_dynamo=False)
        >>> str(seen[0].message)
        'n is fixed'
        >>> refuse("n is fixed", True, once=None, in_dynamo=False)
        Traceback (most recent call last):
        ...
        dynscalar.SpecializationError: n is fixed (strict=True on the mark)
    """
    if strict:
        refused: Exception = error(f"{message} ({why})")
        if in_dynamo:
            refused = passthrough(refused)
        if cause is None:
            raise refused
        raise refused from cause
    if once is None:
        warnings.warn(message, category, stacklevel=stacklevel + 1)
    else:
        warn_once(once, message, category, stacklevel=stacklevel + 1, location=location)


def report_specialization(hits: list[tuple[str, DynamicSpec]], value: object) -> str | None:
    """Warn (or raise, for strict marks) at the user's line; returns why the value is
    forced, and what to do (None when no user code runs)."""
    user, innermost = traced_location()
    if innermost is None:
        # No traced frame: a backend pass (e.g. the float-tensorify pass) is evaluating the
        # symbol, not user code.  stages.aot reports those cases itself.
        return None
    at = user or innermost
    names = sorted({label for label, _ in hits})
    code = f" (`{at.line}`)" if at.line else ""
    op: tuple[str, str] | None = getattr(_local, "op", None)  # while ``specializing``
    if op is not None:
        # an op with a rule that does not apply here: stock torch's specialization
        advice = (
            f"It reaches {op[0]}, which takes it as a Python number; dynscalar's rule for "
            f"that op does not apply here ({op[1]}), so it is compiled as stock torch "
            "compiles it: results are exact, but each new value recompiles."
        )
    elif user is not None and innermost != user:
        # forced inside torch's own code, e.g. an op that takes a Python float
        inside = at_line(os.path.basename(innermost.filename), innermost.lineno, innermost.line)
        advice = (
            f"It happens inside torch ({inside}), which takes it as a Python number "
            "and has no dynscalar decomposition: results are exact, but each new value "
            "recompiles. Keep the value in a 0-d tensor where that call reads it, or compile "
            "with backend='aot_eager', which keeps it dynamic for every op."
        )
    else:
        advice = _advice_for(at)
    message = (
        f"dynscalar: {', '.join(names)} is forced to one value ({value!r}) at "
        f"{at.filename}:{at.lineno}{code}; torch.compile now guards on its exact value and "
        f"recompiles for each new one. {advice}"
    )
    log.info("%s specialized to %r at %s:%d", ", ".join(names), value, at.filename, at.lineno)
    strict = any(spec.strict for _, spec in hits)
    # once per attribute and code location (several attributes: the first one not yet seen)
    for name in names:
        once = ("specialized", name, at.filename, at.lineno)
        refuse(message, strict, once=once, location=(at.filename, at.lineno))
    return f"forced at {at.filename}:{at.lineno}{code}. {advice}"


def _advice_for(at: Location) -> str:
    """Advice for the construct found on the user's line (dynscalar/_constructs.py)."""
    from .._constructs import constructs_in, numpy_advice

    found = constructs_in(at.line, _indexed_type(at))
    if not found:
        return (
            "Keep it symbolic: do that computation with tensor ops, or move the line out of "
            "the compiled code (`python -m dynscalar specializations` lists which Python "
            "constructs force a value on this torch)."
        )
    first = found[0]
    if first.key == "numpy math":
        return f"What forces it there: {numpy_advice(at.line)}"
    return f"What forces it there: {first.shown}. {first.advice}"


_SUBSCRIPTED = re.compile(r"([A-Za-z_][\w.]*)\s*\[")


def _indexed_type(at: Location) -> type | None:
    """The type of the container subscripted on the user's line, when the line is in the
    frame being compiled and the container is a global or an attribute chain of a local
    (``self.table[self.step]``); None when it cannot tell (best effort, never raises)."""
    match = _SUBSCRIPTED.search(at.line)
    if match is None:
        return None
    try:
        tx = _torch.InstructionTranslator.current_tx()
        code = tx.f_code
        if os.path.abspath(code.co_filename) != os.path.abspath(at.filename):
            return None
        lines = [line for _, _, line in code.co_lines() if line is not None]
        if not lines or not min(lines) <= at.lineno <= max(lines):
            return None
        root, *attrs = match.group(1).split(".")
        if root in tx.symbolic_locals:
            variable: Any = tx.symbolic_locals[root]
            peek = getattr(variable, "peek_value", None)
            value = peek() if peek is not None and not variable.is_realized() else variable.value
        elif root in tx.f_globals:
            value = tx.f_globals[root]
        else:
            return None
        for attr in attrs:
            value = getattr(value, attr)
        return type(value)
    except Exception:  # noqa: BLE001 - only picks the advice; the warning is given anyway
        return None


_passthrough_types: dict[type, type] = {}


def dynscalar_error_in(error: BaseException) -> DynscalarError | None:
    """The first ``DynscalarError`` in ``error``'s chain (itself, torch's
    ``inner_exception``, ``__cause__``, ``__context__``), breadth first: a deliberate error
    of dynscalar's that torch wrapped on its way out (``TorchRuntimeError``,
    ``BackendCompilerFailed``)."""
    seen: list[BaseException] = []
    todo: list[BaseException] = [error]
    while todo and len(seen) < 32:
        current = todo.pop(0)
        if any(current is s for s in seen):
            continue
        seen.append(current)
        if isinstance(current, DynscalarError):
            return current
        links = (getattr(current, "inner_exception", None), current.__cause__, current.__context__)
        todo += [link for link in links if isinstance(link, BaseException)]
    return None


def passthrough(exc: Exception) -> Exception:
    """Re-type ``exc`` so Dynamo re-raises it as is, with or without ``fullgraph``.

    Dynamo wraps unknown exceptions raised while tracing into ``InternalTorchDynamoError``,
    and treats ``UserError`` as a soft failure (the frame silently runs eagerly without
    ``fullgraph``), which would hide a range violation.  ``ConstraintViolationError`` is
    re-raised unchanged in both modes (torch/_dynamo/convert_frame.py, ``_compile``).  The
    returned exception is also a ``ValueError``/``TypeError``, so ``except ValueError``
    in user code still catches it.
    """

    base = type(exc)
    cls = _passthrough_types.get(base)
    if cls is None:
        namespace = {
            "__module__": base.__module__,
            "__qualname__": base.__qualname__,
            # Pickles (and so crosses processes) as the public class it re-types.
            "__reduce__": lambda self: (base, self.args),
        }
        cls = type(base.__name__, (base, _torch.ConstraintViolationError), namespace)
        _passthrough_types[base] = cls
    return cls(*exc.args)  # type: ignore[no-any-return]
