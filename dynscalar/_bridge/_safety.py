"""The safety net: a failure inside dynscalar never reaches the user as a Dynamo crash.

Every hook of the table runs under the net: the table's wrapper (``_patch.hook_of``) runs
the hook and hands its failure to :func:`handle` (one frame per hook call), which says
what runs instead (the net names a hook by its path; the wrapper runs it).  An exception
keeps its owner: what torch's wrapped function raised (``_torchs_own.by_torch``: torch's,
the user's code's or backend's) goes on to torch's caller unchanged, which handles it as
stock does (a cache key torch cannot compute is a silent bypass), except while Dynamo
traces marked values, where the frame is traced again as below (the report waits for the
stock attempt, so an error stock raises too reaches the user as stock's).  When a hook
raises and the exception is not one Dynamo itself uses for control flow (a graph break,
a restart, a traced user exception) nor one of dynscalar's own deliberate errors
(``DynscalarError``: a bad value, a strict specialization), the failure is dynscalar's.
While Dynamo traces a frame, the frame is marked *off* and Dynamo is asked to trace it again
(``TensorifyScalarRestartAnalysis``, the restart torch's own float pass uses, which keeps
torch's memory of forced floats).  While a frame is off, every hook runs its degraded
form (``Private.degraded_hook``: a proxy is read as its plain value), or write-back's the
form it has inside ``dynscalar.disabled()`` (a value made from a proxy is stored as the
proxy eager stores), or passes straight through, so the frame compiles exactly as stock
torch compiles the plain values: the same graphs, the same guards, eager's numbers and
eager's classes.  The hooks that failed do not run there.  One ``DynscalarWarning`` names the
marked values involved, the hook and the error; a frame whose marks include a
``strict=True`` one raises :class:`~dynscalar.BridgeError` instead.

That report waits for the frame's stock attempt: it is made once the backend has compiled
the stock graph (the hook on ``OutputGraph.call_user_compiler`` in its off form).  Where
the stock attempt fails too, the failure was the program's own (a ``TypeError`` in the
user's code, which Dynamo reports while it traces, marked values or not): it reaches the
user exactly as stock torch raises it, never as dynscalar's internal error, ``strict``
or not.

A frame is off for the compile that failed (its restarts included); its next compile
(a guard failure, a new value) tries dynscalar's handling again.  What the net remembers
is kept by the compile itself (its ``CompileContext``, one object per compile, which the
restarted attempts share), never by the frame's code object or compile id: code objects
compare by value and compile ids restart at ``(0, 0)`` after ``torch._dynamo.reset()``,
so an unrelated compile of an equal function would have been taken as off.

A hook of a backend pass (the float-tensorify pass, the AOTAutograd cache key) and one
outside any compile (the ``torch.export`` wrapper, ``torch._dynamo.reset``) warn at once
and call torch's original directly (or the entry's off form, where torch's function
cannot take what the bridge already built: value ranges of a comparison kept as
Python's): tracing the frame again from there would compile one more graph than stock,
so the graph keeps what Dynamo traced (marked values symbolic) and torch's pass treats
them as it treats its own floats.

Examples:
    >>> from dynscalar._bridge import _safety
    >>> _safety.is_control_flow(KeyError("x"))
    False
"""

from __future__ import annotations

import logging
from typing import Any

from .._diagnostics import BridgeError, DynscalarError, DynscalarWarning
from . import _torch
from ._floats import restart_frame, take_restart, tracer
from ._python import comparison_output
from ._reports import STRICT_INVOLVED, dynscalar_error_in, refuse
from ._state import peek_state
from ._torchs_own import is_torchs_own, raised_by_torch, torchs_own
from ._turned_off import OFF, Failure, abandon, failed_here

log = logging.getLogger("dynscalar")

__all__ = [
    "OFF",
    "backend_compile_off",
    "handle",
    "is_control_flow",
    "off_path",
]


def _compile() -> Any:
    """The compile running now (its ``CompileContext``); None outside a compile."""

    if getattr(tracer(), "f_code", None) is None:
        return None
    return _torch.CompileContext.try_get()


def _report(failed: Failure) -> None:
    """Warn about ``failed`` (once per hook and error, wherever in the compile it happens),
    or raise it for a strict mark (``_reports.refuse``, the one strict/warn policy)."""
    failed.reported = True
    refuse(
        failed.message,
        failed.strict,
        once=("safety", failed.entry, type(failed.error).__name__, str(failed.error)),
        error=BridgeError,
        why=STRICT_INVOLVED,
        category=DynscalarWarning,
        cause=failed.error,
    )


def _control_flow_types() -> tuple[type[BaseException], ...]:
    return (
        _torch.Unsupported,  # graph breaks, also inside inlined user code
        _torch.RestartAnalysis,  # restarts, the net's own included
        _torch.SkipFrame,
        _torch.ObservedException,  # a user exception Dynamo traces
        _torch.UserError,
        _torch.ResetRequired,
        _torch.RecompileError,
        _torch.GuardOnDataDependentSymNode,  # a branch on an unbacked value: a graph break
        _torch.ConstraintViolationError,  # dynscalar's own errors, re-typed to pass through
    )


def is_control_flow(error: BaseException) -> bool:
    """True for exceptions that are not failures: Dynamo's control flow (graph breaks,
    restarts, traced user exceptions), dynscalar's deliberate errors, and torch's own
    errors a hook passes on (:func:`torchs_own`)."""
    if not isinstance(error, Exception) or isinstance(error, DynscalarError):
        return True
    if is_torchs_own(error):
        return True
    if isinstance(error, RecursionError | MemoryError):
        return False
    try:
        return isinstance(error, _control_flow_types())
    except ImportError:  # no Dynamo to speak of: not a compile
        return False


def _refusal_observed(error: BaseException) -> BaseException | None:
    """The refusal of a strict mark that Dynamo turned into an exception of the traced
    program; None for any other error.

    From torch 2.14 on, an error raised while an op runs on fake tensors (where a strict
    mark's ``SpecializationError`` is raised when the op forces the value, ``math.log(n)``)
    becomes a ``FakeTensorObservedException``: a ``RuntimeError`` the traced code could
    catch, else ``TorchRuntimeError`` (``_get_fake_value_impl`` in torch/_dynamo/utils.py).
    A refusal (re-typed by :func:`~dynscalar._bridge._reports.passthrough`) is an error of
    the compile, never one of the program, so it reaches the user as itself, as on 2.13.
    """
    if not isinstance(error, _torch.ObservedException):
        return None
    found = dynscalar_error_in(error)
    return found if isinstance(found, _torch.ConstraintViolationError) else None


def _marks_in_compile() -> tuple[list[str], bool]:
    """The marked values the current compile made symbolic, and whether one is strict."""
    output = getattr(tracer(), "output", None)
    state = peek_state(getattr(output, "shape_env", None))
    if state is None:
        return [], False
    marks = state.marks
    labels = sorted({marks.label(s) for s in (*marks.labels, *marks.unbacked)})
    strict = any(spec.strict for _, spec in state.marks.backed.values())
    return labels, strict


def off_path(entry: Any) -> Any:
    """What a call of ``entry``'s wrapper runs while some compile is turned off: elsewhere
    :data:`NOT_OFF` (the caller runs the hook); in that compile, traced as stock, the path
    of the entry's off form, else of the form it has inside ``disabled()`` (write-back's
    recording and codegen: what eager stores, a proxy included, in a compile that reads
    proxies as plain values) unless that is one of the hooks that failed, else of its
    degraded form (None: torch's function alone)."""
    failed = failed_here()
    if failed is None:
        return NOT_OFF
    path: str | None = entry.off_hook
    if path is None and entry.disabled_hook not in failed.hooks:
        path = entry.disabled_hook
    return path or entry.degraded_hook


#: :func:`off_path`'s answer where the running compile is not turned off
NOT_OFF = object()


def handle(entry: Any, error: Exception) -> str | None:
    """A hook of ``entry`` raised ``error``: re-raise what is not a failure of dynscalar's
    (control flow, a deliberate dynscalar error, a refusal), else turn the frame off (it is
    traced again as stock: this raises), or, where it cannot be traced again, return what
    runs the call as stock torch does: the path of the entry's off form (None: torch's
    function)."""
    if not is_torchs_own(error):  # not on its way out of torch's run_node
        take_restart()  # a restart asked for where torch wraps exceptions (``_python``)
    refusal = _refusal_observed(error)
    if refusal is not None:
        raise refusal from None
    if is_control_flow(error):
        raise error
    deliberate = dynscalar_error_in(error)
    if deliberate is not None:
        raise deliberate from None
    current = _compile()
    if raised_by_torch(error) and not (
        current is not None and entry.phase == "dynamo" and _marks_in_compile()[0]
    ):
        # torch's own error (or the program's, or its backend's), where no mark is traced
        # or outside Dynamo's trace: torch's caller handles it as stock does (a cache key
        # torch cannot compute is a cache bypass), never reported as dynscalar's
        raise error
    failed = _failure(entry.name, error, (entry.hook,) if entry.hook else ())
    if current is None or entry.phase != "dynamo":
        # Not tracing (the export wrapper), or a backend pass (the float-tensorify pass):
        # torch's own function (or the entry's off form), as stock runs it.  A backend
        # pass cannot trace the frame again without compiling one more graph; the graph
        # it has is what Dynamo traced.
        _report(failed)  # nothing is traced again to wait for
        return entry.off_hook  # type: ignore[no-any-return]
    _turn_off(current, failed, error)
    raise AssertionError("unreachable: _turn_off raises")  # pragma: no cover


def backend_compile_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``OutputGraph.call_user_compiler(gm, example_inputs)``: a backend that fails
    to compile a graph in which dynscalar made values symbolic (an ATen formula that cannot
    take a symbolic float, "NYI log symbolic float") has the frame traced again as stock
    torch does, like a failing hook; a graph without marked values fails as in stock.
    Before a backend that computes symbolic outputs as real algebra (not a ``"python"``
    one) compiles, a comparison kept as Python's among the graph's outputs turns the
    compile off the same way (:class:`KnownLimit`)."""
    state = peek_state(getattr(instance, "shape_env", None))
    current = _compile()
    if state is not None and state.ops.backend != "python" and current is not None:
        expr = comparison_output(kwargs["gm"])
        if expr is not None:
            limit = KnownLimit(
                f"a comparison Python decides otherwise than algebra ({expr}) leaves the "
                "graph as a value (a branch on an unbacked mark), and this backend computes "
                "it as real algebra"
            )
            _turn_off(current, _failure(_BACKEND, limit), limit)
    try:
        return wrapped(*args, **kwargs)
    except Exception as error:
        by_torch = raised_by_torch(error)  # the backend's own error, not begun in dynscalar
        cause = getattr(error, "inner_exception", None) or error.__cause__ or error
        if (
            state is None
            or not state.marked
            or current is None
            or _restarting(error)
            or isinstance(error, DynscalarError)
            or isinstance(cause, DynscalarError)  # a deliberate error of dynscalar's
        ):
            raise torchs_own(error) from error.__cause__
        failed = _failure(
            _BACKEND, cause if isinstance(cause, Exception) else error, by_backend=by_torch
        )
        _turn_off(current, failed, error)
        raise  # not reached: _turn_off raises


_BACKEND = "the backend's compile (OutputGraph.call_user_compiler)"


def backend_compile_off(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``OutputGraph.call_user_compiler`` in a compile the net turned off: the stock graph
    is compiled, then the failure that turned the compile off is reported.  A stock attempt
    that fails before this point (the user's own error while tracing, a backend failing on
    the stock graph too) reports nothing of dynscalar's: the error is the program's."""
    compiled = wrapped(*args, **kwargs)
    found = failed_here()
    if found is not None and not found.reported:
        _report(found)  # the marked attempt failed where stock compiles: said now (strict raises)
    return compiled


def _turn_off(context: Any, failed: Failure, error: Exception) -> None:
    """Trace the compile again as stock torch does (from the frame's first instruction,
    ``_floats.restart_frame``), its failure reported once the stock attempt compiles
    (:func:`backend_compile_off`)."""
    OFF[context] = failed
    abandon()
    restart_frame(error)


def _restarting(error: BaseException) -> bool:
    """A restart travelling through the backend (torch's float pass, the net's own)."""
    chain: BaseException | None = error
    while chain is not None:
        if isinstance(chain, _torch.RestartAnalysis):
            return True
        chain = chain.__cause__
    return False


class KnownLimit(Exception):
    """A compile dynscalar knows it cannot make exact: the safety net compiles the frame as
    stock torch compiles the plain values, with the reason (not an internal error)."""


def _failure(
    entry: str, error: Exception, hooks: tuple[str, ...] = (), by_backend: bool = False
) -> Failure:
    """What is known of a failure in ``entry``'s hook: the message (not reported yet) and
    whether a ``strict=True`` mark is involved in the compile.  ``error`` is named as
    its owner's: the backend's (``by_backend``: raised by the backend on the graph with
    the marks symbolic), torch's (raised by torch's function the hook wrapped), else an
    internal error of dynscalar's."""
    try:
        labels, strict = _marks_in_compile()
    except Exception:  # noqa: BLE001 - the report must not fail in turn
        labels, strict = [], False
    values = ", ".join(labels) if labels else "the marked values"
    known = isinstance(error, KnownLimit)
    first = f"{type(error).__name__}: {error}".splitlines()[0][:300]
    if known:
        what = f"{error} while compiling {values}"
    elif by_backend:
        known = True  # the backend's own error, which a mark made it meet: not ours
        what = f"the backend raised {first} (its own error) on the graph with {values} symbolic"
    elif raised_by_torch(error):
        what = f"torch's {entry} raised {first} while compiling {values}"
    else:
        what = f"an internal error in its hook on {entry} ({first}) while compiling {values}"
    message = (
        f"dynscalar: {what}; this frame is compiled as stock torch.compile compiles the "
        "plain values instead (results are eager's; a changing value may recompile)."
    )
    if not known:
        message += " Please report this with your torch version."
    log.info("%s", message, exc_info=None if known else error)
    return Failure(entry, message, error, strict, hooks)
