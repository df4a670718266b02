"""Shadows: what eager Python holds for each traced value.

Eager Python stores whatever the proxy's own methods (and the builtins calling them)
return.  The bridge does not restate that rule: the recorder (``record``) keeps, for every
value a traced call makes from a symbolic scalar, the Python-level callable and its
arguments (``max``, ``sum``, ``operator.iadd``, ``a.__radd__``, ...: what the user's code
called, not the FX node torch lowered it to), and :class:`Shadows` *runs* those callables
on stand-in proxies that hold the trace-time values (the "shadow" of each graph value).
Whatever class and spec the shadow has is what eager code stores.  Nodes no hook saw (a
polyfill's internals, torch functions) are shadowed by running their FX target the same
way.  A shadow is :data:`UNKNOWN` where it cannot be computed and :data:`AMBIGUOUS` where
it depends on run-time values (``max`` of a proxy and a plain value).
"""

from __future__ import annotations

from typing import Any

import torch

from ..._proxy import DynamicInt, DynamicScalar, _new
from .. import _torch
from .._guards import guard_proxy
from .._state import Origin, peek_state
from .calls import SELECTING, SYMBOLIC, Call, realized, sequence_items

__all__ = ["AMBIGUOUS", "UNKNOWN", "Shadows", "proxy_shadow", "shadow_of"]


class _Unknown:
    """A shadow that cannot be computed (a tensor, an object the bridge does not model)."""


UNKNOWN: Any = _Unknown()


class _Ambiguous:
    """A shadow whose class or spec depends on run-time values (``max`` of two proxies
    with different specs, or of a proxy and a plain value)."""


AMBIGUOUS: Any = _Ambiguous()
_MISSING: Any = object()  # not computed yet


def _hint(node: Any) -> Any:
    """The trace-time value of a symbolic scalar node (a stand-in for an unbacked one)."""
    value = node.meta.get("example_value", node.meta.get("val"))
    if isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        hint = value.node.hint
        if hint is not None:
            return hint
        if isinstance(value, torch.SymInt):
            return 2  # unbacked: the class and spec of results do not depend on it
        return 2.5 if isinstance(value, torch.SymFloat) else True
    return UNKNOWN


def _kind(value: Any) -> tuple[type, Any]:
    return (type(value), value._self_spec if isinstance(value, DynamicScalar) else None)


class Shadows:
    """Shadow values of one compile's traced scalars (see the module docstring).

    Each shadow is computed once per compile: the memo lives in the compile's state, so
    the hooks that ask while tracing (is this operand a proxy?) and every codegen pass
    share it.  A shadow is a *unit*'s - an FX node, or a variable a call tagged or that
    stands for a proxy compiled as a constant - and depends on the units its call (or FX
    node) reads; :meth:`_evaluate` walks them with an explicit stack, never recursion, so
    a chain of 10,000 operations costs 10,000 steps and no Python frames.
    """

    def __init__(self, state: Any) -> None:
        self.state = state
        self.origins: dict[Any, Origin] = state.writeback.origins
        self.calls: dict[Any, Call] = state.writeback.calls
        self.variable_calls: dict[int, tuple[Any, Call]] = state.writeback.variable_calls
        self.constants: dict[int, tuple[Any, Origin]] = state.writeback.constants
        self.nodes: dict[Any, Any] = state.writeback.node_shadows
        self.variables: dict[int, tuple[Any, Any]] = state.writeback.variable_shadows

    def guard_classes(self, variable: Any) -> None:
        """The shadow of ``variable`` decides what compiled code does (a proxy written back,
        a dunder call only the proxy has): guard the class of every proxy it was computed
        from, where a plain value may be found too.  Each unit is visited once per compile
        (``CompileState.writeback.class_guarded``), so guarding N values costs N steps in all."""
        seen = self.state.writeback.class_guarded
        pending = self._units_in([realized(variable)])
        while pending:
            unit = pending.pop()
            if id(unit) in seen:
                continue
            seen[id(unit)] = unit  # kept alive: ids stay unique for the compile
            origin = self.origins.get(unit) if isinstance(unit, torch.fx.Node) else None
            if origin is not None and origin.proxy is not None and origin.source is not None:
                guard_proxy(origin.source)
            pending.extend(self._dependencies(unit))

    # -- a VariableTracker
    def of_variable(self, variable: Any) -> Any:
        """What eager code holds for the traced ``variable``."""
        variable = realized(variable)
        for unit in self._units_in([variable]):
            self._evaluate(unit)
        return self._value(variable)

    def call_of(self, variable: Any) -> Call | None:
        """The Python-level call that made ``variable``, if a hook saw it."""
        variable = realized(variable)
        tagged = self.variable_calls.get(id(variable))
        if tagged is not None and tagged[0] is variable:
            return tagged[1]
        if isinstance(variable, _torch.SymNodeVariable):
            return self.calls.get(variable.as_proxy().node)
        return None

    def unit_of(self, variable: Any) -> Any:
        """The memo key of a realized variable's shadow (None: computed from its value)."""
        key = id(variable)
        constant = self.constants.get(key)
        if constant is not None and constant[0] is variable and constant[1].proxy is not None:
            return variable
        tagged = self.variable_calls.get(key)
        if tagged is not None and tagged[0] is variable:
            return variable
        if isinstance(variable, _torch.SymNodeVariable):
            return variable.as_proxy().node
        return None

    def _units_in(self, values: list[Any]) -> list[Any]:
        """The units of ``values`` and of the items of the lists and tuples among them."""
        found: list[Any] = []
        pending = list(reversed(values))
        while pending:
            variable = realized(pending.pop())
            unit = self.unit_of(variable)
            if unit is not None:
                found.append(unit)
            else:
                items = sequence_items(variable)
                if items is not None:
                    pending.extend(reversed(items))
        return found

    def _value(self, variable: Any) -> Any:
        """The shadow of a realized variable whose units are evaluated."""
        unit = self.unit_of(variable)
        if unit is not None:
            found = self._known(unit)
            return UNKNOWN if found is _MISSING else found
        if variable.is_python_constant():
            try:
                return variable.as_python_constant()
            except Exception:  # noqa: BLE001 - not a constant after all
                return UNKNOWN
        items = sequence_items(variable)
        if items is not None:
            return variable.python_type()([self._value(realized(item)) for item in items])
        return UNKNOWN

    # -- the memo
    def _known(self, unit: Any) -> Any:
        if isinstance(unit, torch.fx.Node):
            return self.nodes.get(unit, _MISSING)
        hit = self.variables.get(id(unit))
        return hit[1] if hit is not None and hit[0] is unit else _MISSING

    def _store(self, unit: Any, shadow: Any) -> None:
        if isinstance(unit, torch.fx.Node):
            self.nodes[unit] = shadow
        else:
            self.variables[id(unit)] = (unit, shadow)

    def _evaluate(self, root: Any) -> Any:
        """The shadow of ``root``, after those of every unit it depends on (post-order)."""
        found = self._known(root)
        if found is not _MISSING:
            return found
        stack = [root]
        expanded: set[int] = set()
        while stack:
            unit = stack[-1]
            if self._known(unit) is not _MISSING:
                stack.pop()
            elif id(unit) not in expanded:
                expanded.add(id(unit))  # a unit seen again unexpanded would be a cycle
                stack.extend(
                    dep
                    for dep in self._dependencies(unit)
                    if id(dep) not in expanded and self._known(dep) is _MISSING
                )
            else:
                stack.pop()
                self._store(unit, self._compute(unit))
        return self._known(root)

    def _dependencies(self, unit: Any) -> list[Any]:
        if not isinstance(unit, torch.fx.Node):
            tagged = self.variable_calls.get(id(unit))
            if tagged is None or tagged[0] is not unit:
                return []  # a proxy compiled as a constant
            return self._units_in([*tagged[1].args, *tagged[1].kwargs.values()])
        if unit in self.origins:
            return []
        call = self.calls.get(unit)
        if call is not None:
            return self._units_in([*call.args, *call.kwargs.values()])
        if unit.op == "call_function":
            return _fx_nodes([*unit.args, *unit.kwargs.values()])
        return []

    def _compute(self, unit: Any) -> Any:
        """The shadow of ``unit``, the units it depends on being evaluated."""
        if not isinstance(unit, torch.fx.Node):
            tagged = self.variable_calls.get(id(unit))
            if tagged is not None and tagged[0] is unit:
                return self._apply_call(tagged[1])
            read_from = self.constants[id(unit)][1]
            kind: Any = read_from.proxy
            try:
                return _new(kind, unit.as_python_constant(), read_from.spec.canonical())
            except Exception:  # noqa: BLE001 - not a plain constant after all
                return UNKNOWN
        origin = self.origins.get(unit)
        call = self.calls.get(unit)
        hint = _hint(unit)
        if origin is not None:
            result = hint
            if origin.proxy is not None and hint is not UNKNOWN:
                plain = int(hint) if origin.proxy is DynamicInt else float(hint)
                result = _new(origin.proxy, plain, origin.spec.canonical())
        elif call is not None:
            result = self._apply_call(call)
        elif unit.op == "call_function" and hint is not UNKNOWN:
            # A node no hook saw: its FX target on the shadows of its arguments.
            args = [self._of_arg(arg) for arg in unit.args]
            kwargs = {key: self._of_arg(value) for key, value in unit.kwargs.items()}
            flat = _flatten([*args, *kwargs.values()])
            if any(isinstance(item, DynamicScalar) or item is AMBIGUOUS for item in flat):
                result = self.apply(unit.target, args, kwargs)
            else:
                result = hint
        else:
            result = hint
        if isinstance(result, SYMBOLIC):
            result = UNKNOWN
        return result

    def _apply_call(self, call: Call) -> Any:
        args = [self._value(realized(arg)) for arg in call.args]
        kwargs = {key: self._value(realized(value)) for key, value in call.kwargs.items()}
        return self.apply(call.fn, args, kwargs)

    def apply(self, fn: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        flat = _flatten([*args, *kwargs.values()])
        if any(item is AMBIGUOUS for item in flat):
            return AMBIGUOUS
        if any(item is UNKNOWN for item in flat):
            return UNKNOWN
        if fn in SELECTING and not kwargs:
            candidates = list(args[0]) if len(args) == 1 else args
            if len({_kind(c) for c in candidates}) > 1:
                return AMBIGUOUS
        try:
            return fn(*args, **kwargs)
        except Exception:  # noqa: BLE001 - the traced call succeeded: stand-in values only
            return UNKNOWN

    def _of_arg(self, arg: Any) -> Any:
        if isinstance(arg, torch.fx.Node):
            found = self.nodes.get(arg, _MISSING)
            return UNKNOWN if found is _MISSING else found
        if isinstance(arg, (list, tuple)):  # FX's immutable_list/immutable_tuple too
            items = [self._of_arg(item) for item in arg]
            return items if isinstance(arg, list) else tuple(items)
        if arg is None or isinstance(arg, (bool, int, float, str)):
            return arg
        return UNKNOWN


def _fx_nodes(values: Any) -> list[Any]:
    """The FX nodes among ``values`` and in the lists and tuples they hold."""
    node_type = torch.fx.Node
    found: list[Any] = []
    pending = list(values)
    while pending:
        value = pending.pop()
        if isinstance(value, node_type):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            pending.extend(value)
    return found


def _flatten(values: Any) -> list[Any]:
    flat: list[Any] = []
    for value in values:
        if type(value) in (list, tuple):
            flat.extend(_flatten(value))
        else:
            flat.append(value)
    return flat


def shadow_of(tx: Any, variable: Any) -> Any:
    """What eager code holds for the traced ``variable`` (``UNKNOWN`` outside a marked
    compile)."""
    state = peek_state(getattr(tx.output, "shape_env", None))
    if state is None or not (state.writeback.origins or state.writeback.constants):
        return UNKNOWN
    shadows = Shadows(state)
    shadow = shadows.of_variable(variable)
    if isinstance(shadow, DynamicScalar) or shadow is AMBIGUOUS:
        shadows.guard_classes(variable)  # the trace takes a proxy's path
    return shadow


def proxy_shadow(tx: Any, variable: Any) -> bool:
    """True when eager code holds a proxy for the traced ``variable``."""
    state = peek_state(getattr(tx.output, "shape_env", None))
    if state is None or not state.writeback.origins:
        return False
    shadows = Shadows(state)
    if not isinstance(shadows.of_variable(variable), DynamicScalar):
        return False
    shadows.guard_classes(variable)  # the trace takes a proxy's path
    return True
