"""Marked values torch's AOT pass turns into constants: the ints it restarts the analysis
for, and the floats its tensorify pass forces.

## Restarts: marked ints compiled as constants, after one restart of the analysis

A marked int is a SymInt; what the code computes from it (``self.s * 2 + 1``,
``(self.s + 0.5) % 1.0``) is an expression of that symbol.  Two kinds of expression cannot
be compiled exactly, and both are found in the AOT pass (``tensorify_python_scalars``,
which runs for every backend but ``eager``, whose graph computes with Python ints and
floats):

* **int64 overflow.**  Eager Python ints never overflow.  Inductor passes an int
  expression to its kernels as a C ``int64``: with ``s = 2**62`` the compiled
  ``x * (s * 2 + 1)`` wrapped around and returned numbers of the wrong sign, with no
  error.  Every int expression of a marked int whose current value fits int64 gets a guard
  that it still does (``-2**63 <= 2*s0 + 1 <= 2**63 - 1``), evaluated in Python on every
  call; when it does not fit (the guard failed and this is the recompile, or the first
  value already overflows), the analysis restarts.  Expressions that only reach the
  graph's outputs (``self.step += 1``) are left unguarded: the graph's Python code computes
  them with Python ints (not under inductor's ``cpp_wrapper``, where they are guarded too).
* **Float ops the tensorify pass cannot lower** on a float derived from a marked int
  (``(step + 0.5) % 1.0``: torch 2.13's ``TensorReferenceAnalysis`` has no ``python_mod``,
  and the pass failed with ``AttributeError``).  For a marked *float* the float path
  already specializes it (``stages.aot``); for an int the analysis restarts.

On the restart the marked ints involved are compiled like unmarked values for that one
compile: a constant guarded by value, exact, with a ``SpecializationWarning``
(``strict=True``: ``SpecializationError``).  The restart is torch's own
``TensorifyScalarRestartAnalysis``.  Expressions with an unbacked symbol are left alone
(no current value to check).

## Forced floats: remembered the way stock torch does

Stock torch keeps the *names* of the floats its float-tensorify pass had to specialize
(``TensorifyState.force_specializations``: ``{"zf0", ...}``) until a reset or a restart of
another kind.  The next compile's floats get the same names in the same order, so a float
torch cannot keep symbolic is specialized at once in later compiles: one graph per value,
not two (a symbolic attempt, then the restart).

Names are positional, not tied to a value: a dynscalar float named ``zf1`` in one compile
may be an unmarked float's ``zf1`` in the next, and a marked float that a graph did not use
(``label_smoothing`` starting at 0.0) is specialized by the pass only to drop the input.
So for the floats the bridge made, and only for them:

* what the pass forced *while the graph used the value* is remembered under the value's
  own source (``file:line:function L['eps']``), kept as a string in the same set, so it
  lives exactly as long as stock's memory (``torch._dynamo.reset()`` clears both);
* within one compile, names a restart specialized are kept for the restarted attempts
  (marked with the compile id), as the pass needs;
* after the compile, the names of the bridge's floats are taken out of the set, and a name
  stock remembered for some other compile's float, which one of the bridge's floats
  happened to take in this compile, is put back.

Every other name is left to torch: an unmarked float torch forced is remembered exactly as
without dynscalar (a mark never adds compiles for values that are not marked).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, NoReturn

from .. import _caches
from .._spec import INT64_MAX, INT64_MIN
from . import _torch
from ._guards import source_name
from ._state import CompileState, lock, peek_state

log = logging.getLogger("dynscalar")

__all__ = [
    "ask_restart",
    "ForcedFloats",
    "forget_restarts",
    "guard_int64",
    "restart_frame",
    "restart_reason",
    "specialize_ints_and_restart",
    "symbol_source_names",
    "take_restart",
    "tracer",
    "used_float_symbols",
]

#: the compile (its CompileContext, which the restarted attempts share) -> source name
#: of a marked int (a proxy's position) -> why its restarted trace reads it as a constant;
#: filled before a restart, taken by that trace.  Kept by the compile, never by the source
#: name alone: another frame's compile reads ``L['self'].step`` too.
_specialize_next: _caches.ObjectKeyed[Any, dict[str, str]] = _caches.ObjectKeyed()


def restart_reason(source_name: str) -> str | None:
    """Why the marked int read through ``source_name`` is compiled as a constant in this
    trace, if it is (taken: the next compile reads it symbolically again)."""
    if not _specialize_next:
        return None
    context = _torch.CompileContext.try_get()
    with lock:
        pending = _specialize_next.get(context) if context is not None else None
        return pending.pop(source_name, None) if pending else None


@_caches.register
def forget_restarts() -> None:
    """Drop every restart remembered for a next trace."""
    with lock:
        _specialize_next.clear()
        _restart_asked.clear()


def _hints(shape_env: Any) -> Any:
    """symbol -> current value (``backed_var_to_val`` from torch 2.13 on)."""
    hints = getattr(shape_env, "backed_var_to_val", None)
    return shape_env.var_to_val if hints is None else hints


def symbol_source_names(shape_env: Any, symbol: Any) -> list[str]:
    """The names of the sources a symbol was made for (a proxy's: where the proxy is,
    without the ``.real`` its plain value is read through)."""
    state = peek_state(shape_env)
    read_through = state.marks.read_through if state is not None else set()
    return [
        source_name(source.base if source in read_through else source)
        for source in shape_env.var_to_sources.get(symbol, ())
    ]


def marked_ints(state: CompileState) -> set[Any]:
    """The backed int symbols the bridge made in this compile."""
    return {s for s in state.marks.backed if s not in state.marks.floats}


def specialize_ints_and_restart(
    shape_env: Any, state: CompileState, symbols: Iterable[Any], reason: str
) -> NoReturn:
    """Restart the analysis with the marked ints ``symbols`` compiled as constants."""

    _specialize_next_trace(shape_env, state, symbols, reason)
    restart_frame()


def _specialize_next_trace(
    shape_env: Any, state: CompileState, symbols: Iterable[Any], reason: str
) -> None:
    context = _torch.CompileContext.try_get()
    with lock:
        pending = _specialize_next.setdefault(context, {}) if context is not None else {}
        for symbol in symbols:
            for name in symbol_source_names(shape_env, symbol):
                pending[name] = reason
            log.info("%s %s; specializing it", state.marks.backed[symbol][0], reason)


#: the compile whose trace asked for a restart from where torch wraps every exception
#: (an operation run on fake values): the safety net raises it where Dynamo sees it
_restart_asked: list[Any] = []


def ask_restart(shape_env: Any, state: CompileState, symbols: Iterable[Any], reason: str) -> None:
    """:func:`specialize_ints_and_restart`, from inside torch's ``run_node``, which wraps
    any exception in a ``RuntimeError`` (a restart would become a failed compile): the
    specialization is remembered, and :func:`take_restart` raises the restart where the
    failure reaches the safety net."""
    _specialize_next_trace(shape_env, state, symbols, reason)
    with lock:
        _restart_asked[:] = [_torch.CompileContext.try_get()]


def take_restart() -> None:
    """Raise the restart :func:`ask_restart` asked for in this compile, if any."""
    if not _restart_asked:
        return
    with lock:
        asked = _restart_asked[:]
        _restart_asked.clear()
    context = _torch.CompileContext.try_get()
    if context is not None and asked and asked[0] is context:
        restart_frame()


def tracer() -> Any:
    """The tracer of the frame Dynamo is compiling now (the root of any inlined calls)."""

    try:
        tx = _torch.InstructionTranslator.current_tx()
    except (AssertionError, AttributeError, IndexError):  # not tracing
        return None
    return getattr(getattr(tx, "output", None), "root_tx", None) or tx


def restart_frame(cause: BaseException | None = None) -> NoReturn:
    """Trace the frame Dynamo is compiling again from its first instruction: for a reason
    of the bridge's own, or (``cause``) for the safety net.  torch's float pass restarts
    with ``TensorifyScalarRestartAnalysis``, which keeps torch's memory of forced floats
    (other restarts clear it); the speculation log, which replays an earlier attempt's
    graph-break decisions, is cleared, since this attempt takes other paths (a constant
    where a SymInt was: ``n += 0.5`` is folded), which Dynamo would report as
    ``SpeculationLogDivergence`` - as Dynamo clears it itself for
    ``UnspecializeRestartAnalysis`` (``convert_frame.py``)."""

    log_ = getattr(tracer(), "speculation_log", None)
    if log_ is not None:
        log_.clear()
    if cause is None:
        raise _torch.TensorifyScalarRestartAnalysis
    raise _torch.TensorifyScalarRestartAnalysis from cause


def guard_int64(gm: Any, shape_env: Any, state: CompileState) -> None:
    """Guard every int expression of our backed int symbols in ``gm`` to fit int64; restart
    with the symbols specialized when one does not fit now."""
    import sympy
    import torch

    ints = marked_ints(state)
    if not ints:
        return
    seen: set[Any] = set()
    exact = _returned_only(gm)
    for node in gm.graph.nodes:
        value = node.meta.get("val")
        if not isinstance(value, torch.SymInt) or node in exact:
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
        specialize_ints_and_restart(
            shape_env,
            state,
            free,
            f"holds a value for which the compiled code computes {current} (outside int64, "
            "where compiled code would overflow)",
        )


def _returned_only(gm: Any) -> set[Any]:
    """Int expressions whose value only reaches the graph's outputs, through int arithmetic
    at most (``self.step += 1``).  The generated Python code computes them with Python ints,
    exact at any size, so they need no int64 guard - a Python guard function that cost about
    1 us per call (benchmarks/percall.py).  Not under inductor's C++ wrapper
    (``cpp_wrapper``), which computes them as int64, nor while exporting."""
    import torch

    if getattr(_torch.inductor_config, "cpp_wrapper", False) or torch.compiler.is_exporting():
        return set()
    found: set[Any] = set()
    for node in reversed(list(gm.graph.nodes)):
        if node.op != "call_function" or not isinstance(
            node.meta.get("val"), (torch.SymInt, torch.SymBool)
        ):
            continue
        if node.users and all(user.op == "output" or user in found for user in node.users):
            found.add(node)
    return found


def _float_symbols(gm: Any) -> set[Any]:
    """The symbols float values of ``gm`` are computed from."""
    import torch

    found: set[Any] = set()
    for node in gm.graph.nodes:
        value = node.meta.get("val")
        if isinstance(value, torch.SymFloat):
            found |= value.node.expr.free_symbols
    return found


def ints_in_floats(gm: Any, state: CompileState) -> set[Any]:
    """Our backed int symbols that float values of ``gm`` are computed from."""
    ints = marked_ints(state)
    return _float_symbols(gm) & ints if ints else set()


def unbacked_in_floats(gm: Any, state: CompileState) -> list[str]:
    """Descriptions of our unbacked int symbols that float values of ``gm`` are computed
    from (they cannot be specialized: an unbacked symbol has no value to guard on)."""
    return sorted(state.marks.label(s) for s in _float_symbols(gm) & state.marks.unbacked.keys())


# ------------------------------------------------------------------------------ forced floats
class ForcedFloats:
    """The bridge's view of ``TensorifyState.force_specializations`` (one per process)."""

    _RESTART = "dynscalar-restart:"  # prefix of the names kept for a restarted compile

    def __init__(self) -> None:
        self._keys: dict[Any, str] = {}  # symbol of this compile -> its source key
        self._set_aside: set[str] = set()  # stock's names our floats took for one compile
        self._added: set[str] = set()  # names on_wrap specialized for this compile
        self._ops: dict[str, list[str]] = {}  # source key -> the ops that forced it (warnings)
        #: names a restart of a compile dropped after a path pinned them (compile id, name);
        #: kept here, not in torch's set, which other kinds of restart clear
        self._paths: set[tuple[str, str]] = set()

    @staticmethod
    def _names() -> set[str]:
        names: set[str] = _torch.TensorifyState.force_specializations
        return names

    @staticmethod
    def _restart_marker(name: str) -> str:
        return f"{ForcedFloats._RESTART}{_torch.CompileContext.current_compile_id()}:{name}"

    def on_wrap(self, symbol: Any, key: str) -> None:
        """A marked float became ``symbol``: specialize it now if torch forced it before."""
        name = str(symbol)
        with lock:
            names = self._names()
            self._keys[symbol] = key
            if key in names or self._restart_marker(name) in names:
                if name not in names:
                    self._added.add(name)
                names.add(name)  # the output graph drops it before the AOT pass
            elif name in names:
                names.discard(name)  # stock's memory of another float with this name
                self._set_aside.add(name)

    @staticmethod
    def _path_key(name: str) -> tuple[str, str]:
        return (str(_torch.CompileContext.current_compile_id()), name)

    def on_restart(
        self, symbols: Any, used: set[Any], ops: list[str], paths: Any = frozenset()
    ) -> None:
        """The pass restarts with some of ``symbols`` specialized: remember those it forced
        (``ops``: the ops that could not take them, for the warning after the restart).
        A symbol in ``paths`` was pinned by a predicate (``p == 0``: that path's value);
        the pass drops it as an unused input, which is neither forced nor a warning."""
        with lock:
            names = self._names()
            for symbol in symbols:
                name = str(symbol)
                if symbol in paths:
                    self._paths.add(self._path_key(name))
                if name not in names:
                    continue
                names.add(self._restart_marker(name))
                if symbol in paths:
                    continue
                key = self._keys.get(symbol)
                if symbol in used and key is not None:
                    names.add(key)
                    self._ops[key] = ops

    def is_path(self, symbol: Any) -> bool:
        """``symbol`` was dropped by a restart of this compile after a path pinned it."""
        return self._path_key(str(symbol)) in self._paths

    def ops(self, symbol: Any) -> list[str]:
        """The ops that forced ``symbol``'s value, if torch forced it in this process."""
        key = self._keys.get(symbol)
        return self._ops.get(key, []) if key is not None else []

    def forget(self) -> None:
        """Forget every float torch forced for the bridge (a cache reset): the next compile
        tries each marked float symbolically again.  Stock's own names are left to torch."""
        import sys

        with lock:
            remembered = set(self._ops)  # every source key on_restart put in stock's set
            self._keys.clear()
            self._ops.clear()
            self._paths.clear()
            if "torch._dynamo.symbolic_convert" not in sys.modules:
                return  # torch never compiled here, so it remembers nothing of ours
            names = self._names()
            names.difference_update(remembered)
            names.difference_update({n for n in names if n.startswith(self._RESTART)})

    def on_success(self, symbols: Any) -> None:
        """The compile is over: our names out, stock's names back."""
        with lock:
            names = self._names()
            for symbol in symbols:
                name = str(symbol)
                names.discard(name)
                names.discard(self._restart_marker(name))
                self._paths.discard(self._path_key(name))
            names.update(self._set_aside)
            self._set_aside.clear()
            self._added.clear()

    def abandon(self) -> None:
        """The compile attempt was given up (the safety net traces the frame again as stock
        torch would): stock's names go back as they were before it."""
        if not (self._set_aside or self._added):
            return
        with lock:
            names = self._names()
            names.difference_update(self._added)
            names.update(self._set_aside)
            self._set_aside.clear()
            self._added.clear()


def used_float_symbols(gm: Any, shape_env: Any, forced: bool = True) -> set[Any]:
    """Float symbols the graph needs: an op of ``gm`` computes with them (not the
    ``.item()`` that makes them), or the trace already forced them to a value (a torch
    function taking a Python float: ``torch.nan_to_num(x, nan=v)``).  Other floats a
    restart specializes are inputs the graph never used, dropped, not forced.  ``forced``
    False: the ops' symbols alone."""
    import torch

    used: set[Any] = {
        s
        for s, value in getattr(shape_env, "replacements", {}).items()
        if forced and value.is_number
    }
    local_scalar = torch.ops.aten._local_scalar_dense.default
    for node in gm.graph.nodes:
        if node.op not in ("call_function", "call_method") or node.target is local_scalar:
            continue
        for arg in node.all_input_nodes:
            val = arg.meta.get("val")
            if isinstance(val, (torch.SymFloat, torch.SymInt, torch.SymBool)):
                used.update(val.node.expr.free_symbols)
    return used
