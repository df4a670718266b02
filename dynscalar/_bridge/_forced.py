"""Floats torch's tensorify pass forces to constants: remembered the way stock torch does.

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

from typing import Any

from . import _torch
from ._state import lock

__all__ = ["ForcedFloats", "used_float_symbols"]


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
