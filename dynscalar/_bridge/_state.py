"""State shared by the bridge modules: the install lock and what one compile has marked.

The hook on ``torch._dynamo.reset()`` (which ``torch.compiler.reset()`` calls) resets
dynscalar's module-level caches (``dynscalar._caches``) with torch's own state, so nothing
dynscalar remembers of an earlier compile outlives the compiled code it was about.

Per-compile state lives in a table keyed (weakly) by the compile's ``ShapeEnv``, never in
the ShapeEnv's own attributes: torch can replay a ShapeEnv's recorded events and compare
its fields (``torch.fx.experimental._config.check_shape_env_recorded_events``), and an
attribute of ours would fail that check ("field set mismatch").
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field
from typing import Any

from .. import _caches
from .._spec import DynamicSpec
from . import _torch

__all__ = [
    "Aot",
    "CompileState",
    "Lookups",
    "Marks",
    "Ops",
    "Python",
    "WriteBack",
    "Origin",
    "compile_state",
    "is_dynamic_float",
    "is_dynamic_value",
    "lookup_state",
    "lock",
    "peek_state",
    "realized",
    "reset_hook",
]

lock = threading.RLock()


@dataclass(frozen=True)
class Origin:
    """Where a graph value came from, for write-back: what eager would hold there.

    ``proxy`` is the proxy class (``DynamicInt``/``DynamicFloat``) when the value was read
    from a proxy, ``None`` when it was a plain (attribute-marked or auto-dynamic) value.
    """

    where: str
    spec: DynamicSpec
    proxy: type | None
    #: where the proxy was read, when its graph input also takes the plain value there
    #: (``_guards.guard_proxy_or_plain``): write-back guards its class where it shows
    source: Any = None


@dataclass
class Marks:
    """What the marks made symbolic in one compile, and what is reported of them (the
    build and symbolic stages, ``_reports``)."""

    #: backed int/float symbol -> (attribute description, spec): specialization reports
    backed: dict[Any, tuple[str, DynamicSpec]] = field(default_factory=dict)
    #: unbacked int symbol -> its label (``model.step (M.step)``, a ``_reports.Label``):
    #: data-dependent error messages
    unbacked: dict[Any, Any] = field(default_factory=dict)
    #: float symbol -> attribute description: the AOT float passes
    floats: dict[Any, str] = field(default_factory=dict)
    #: symbol -> "instance path (Class.attr)" for warnings (``_reports.Label``: named when
    #: a message first uses it)
    labels: dict[Any, Any] = field(default_factory=dict)
    #: backed symbol -> Dynamo's name for the marked value (``L['self'].step``): the
    #: specializations the doctor reads (``_reports.SPECIALIZED``)
    sources: dict[Any, str] = field(default_factory=dict)
    #: the code of the frame being compiled (its root), once a marked value is read
    code: Any = None
    #: float symbol -> where the user's code read it (warnings from backend passes)
    read_at: dict[Any, Any] = field(default_factory=dict)
    #: source names of values given a property's mark while its getter ran (_properties)
    via_property: set[str] = field(default_factory=set)
    #: sources through which a proxy's plain value became a graph input (``<src>.real``)
    read_through: set[Any] = field(default_factory=set)
    #: symbols whose specialization by user code was already reported
    reported: set[Any] = field(default_factory=set)
    #: symbols a predicate pinned to one value (``if p == 0``, a form's special value):
    #: one path of a dynamic value, not a specialization to report
    paths: set[Any] = field(default_factory=set)

    def label(self, symbol: Any) -> str:
        """How messages name the marked value of ``symbol`` (``model.step (M.step)``):
        its label, named now if no message did yet, else its attribute description."""
        found = self.labels.get(symbol, self.unbacked.get(symbol))
        if found is None:
            found = self.backed[symbol][0] if symbol in self.backed else self.floats[symbol]
        return str(found)


@dataclass
class Lookups:
    """What the build stage remembers while it looks for marks, in every compile that reads
    an int/float while marks exist (``stages.build``, ``_guards``); kept here without
    making the compile a marked one (:attr:`CompileState.active`)."""

    #: source -> weak reference to the object it points to in the frame being traced (a
    #: trace never replaces the objects its frame reaches; it records mutations)
    owners: dict[Any, Any] = field(default_factory=dict)
    #: the guard set the "no marks" guards below were installed in (Dynamo builds a new
    #: set when it rolls a trace back) and key -> the guard installed there (``_guards``)
    guard_set: Any = None
    guards: dict[Any, Any] = field(default_factory=dict)
    #: an unbacked marked int is being made now: torch's size constraint is skipped
    #: (``stages.build.size_constraint_hook``)
    unsized: bool = False


@dataclass
class WriteBack:
    """What write-back needs to store eager's objects back (``_writeback``, ``stages.codegen``)."""

    #: FX node of a marked value's graph input -> its origin: write-back
    origins: dict[Any, Origin] = field(default_factory=dict)
    #: FX node -> the Python-level call that made it (``_writeback.Call``): write-back
    calls: dict[Any, Any] = field(default_factory=dict)
    #: id of a variable returned unchanged by a call -> (variable, call): write-back
    variable_calls: dict[int, tuple[Any, Any]] = field(default_factory=dict)
    #: id of a constant made from a proxy the bridge could not make symbolic (an int
    #: outside int64, a restart) -> (variable, origin): write-back
    constants: dict[int, tuple[Any, Origin]] = field(default_factory=dict)
    #: FX node -> its shadow, what eager Python holds for it (computed once): write-back
    node_shadows: dict[Any, Any] = field(default_factory=dict)
    #: id of a tagged or constant variable -> (variable, its shadow): write-back
    variable_shadows: dict[int, tuple[Any, Any]] = field(default_factory=dict)
    #: units (id -> unit) whose proxies' classes write-back has guarded (``_writeback``)
    class_guarded: dict[int, Any] = field(default_factory=dict)
    #: id of a stored variable -> (variable, what codegen puts in its place): write-back
    planned: dict[int, tuple[Any, Any]] = field(default_factory=dict)
    #: id of a value replayed at run time (node or variable) -> (it, its slot): write-back
    replays: dict[int, tuple[Any, Any]] = field(default_factory=dict)
    #: the operand a max/min traced as comparisons handed back (write-back: not replayed)
    selected: Any = None
    #: (id of a proxy variable, dunder name) being traced as its operator now: the
    #: operator's own dunder call inside takes Dynamo's path (``_writeback.dunder_of_proxy``)
    routing: set[tuple[int, str]] = field(default_factory=set)


@dataclass
class Python:
    """Python's semantics on symbolic values (``_python``)."""

    #: sympy expression -> its height (``_python``: max/min of deep expressions)
    heights: dict[Any, int] = field(default_factory=dict)


@dataclass
class Ops:
    """Op routing (``_ops``): the calls traced as stock, and where the graph goes."""

    #: callable name -> (the float symbols, the call's template key, example tensors,
    #: values and gradient mode) of each call traced as Dynamo traces it on inductor
    #: (``_ops``: a call that forces one of them is traced boxed next time)
    stock_calls: dict[str, list[Any]] = field(default_factory=dict)
    #: the kind of backend the graph goes to (``_backends.Kind``), once asked
    backend: str | None = None


@dataclass
class Aot:
    """The backend's compile (``stages.aot``)."""

    #: how many shape-env guards Dynamo's trace had made when the backend first ran: a
    #: guard after them was made by AOTAutograd (``stages.aot.cache_save_hook``)
    traced_guards: int | None = None


@dataclass
class CompileState:
    """Everything the bridge keeps about one compile (one ShapeEnv), by owner.

    ``active`` says whether a mark took part in the compile (:func:`compile_state` sets it;
    :func:`peek_state` sees only active states): the stage hooks' gates read it, so the
    lookups every compile makes (``lookups``, through :func:`lookup_state`) leave an
    unmarked compile on stock's path.
    """

    active: bool = False
    marks: Marks = field(default_factory=Marks)
    writeback: WriteBack = field(default_factory=WriteBack)
    python: Python = field(default_factory=Python)
    ops: Ops = field(default_factory=Ops)
    aot: Aot = field(default_factory=Aot)
    lookups: Lookups = field(default_factory=Lookups)

    @property
    def marked(self) -> bool:
        """Whether a marked value became symbolic in this compile."""
        marks = self.marks
        return bool(marks.backed or marks.unbacked or marks.floats)


_states: weakref.WeakKeyDictionary[Any, CompileState] = weakref.WeakKeyDictionary()


def lookup_state(shape_env: Any) -> CompileState:
    """The state of the compile ``shape_env`` belongs to, created on first use without
    making it active (what the build stage's lookups keep, in any compile)."""
    with lock:
        state = _states.get(shape_env)
        if state is None:
            state = _states[shape_env] = CompileState()
        return state


def compile_state(shape_env: Any) -> CompileState:
    """The state of the compile ``shape_env`` belongs to, created on first use; a mark
    takes part in that compile (``active``)."""
    state = lookup_state(shape_env)
    state.active = True
    return state


def peek_state(shape_env: Any, *, active: bool = True) -> CompileState | None:
    """The state of ``shape_env``'s compile, or None when nothing was marked in it
    (``active=False``: also a state only :func:`lookup_state` made); never creates one."""
    if shape_env is None:
        return None
    state = _states.get(shape_env)
    return state if state is not None and (state.active or not active) else None


def _marked_symbols(tx: Any, variable: Any, floats_only: bool) -> bool:
    import torch

    if not isinstance(variable, _torch.SymNodeVariable):
        return False
    sym = variable.sym_num
    if floats_only and not isinstance(sym, torch.SymFloat):
        return False
    state = peek_state(getattr(tx.output, "shape_env", None))
    if state is None:
        return False
    marks = state.marks
    tables = (marks.floats,) if floats_only else (marks.floats, marks.backed, marks.unbacked)
    return any(s in table for s in sym.node.expr.free_symbols for table in tables)


def realized(variable: Any) -> Any:
    """The variable behind a realized ``LazyVariableTracker`` (others unchanged)."""
    if isinstance(variable, _torch.LazyVariableTracker) and variable.is_realized():
        return variable.unwrap()
    return variable


def is_dynamic_float(tx: Any, variable: Any) -> bool:
    """True for a traced SymFloat made from a dynscalar mark (in ``tx``'s compile)."""
    return _marked_symbols(tx, variable, floats_only=True)


def is_dynamic_value(tx: Any, variable: Any) -> bool:
    """True for a traced SymInt/SymFloat over a symbol a dynscalar mark made."""
    return _marked_symbols(tx, variable, floats_only=False)


def reset_hook(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Around ``torch._dynamo.reset()``: torch's reset, then dynscalar's
    (``_caches.reset_caches``: once-per-location warnings, remembered restarts and forced
    floats, the safety net's turned-off compiles, property reads, ...).  Marks stay."""
    try:
        return wrapped(*args, **kwargs)
    finally:
        _caches.reset_caches()
