"""Write-back: a value a compiled frame stores holds what eager would have stored.

Dynamo replays attribute assignments and container mutations after the compiled graph
ran, with plain values (the graph computes ints and floats, not proxies).  Eager code
stores whatever the Python expression produced: proxy arithmetic (``dynscalar/_proxy.py``)
and the builtins that call it (``sum``, ``pow``, ``max``, ``math.prod``, ``a.__radd__``).

The bridge does not restate those rules.  While tracing, it records the Python-level call
that made each symbolic value (:func:`builtin_call_hook`, :func:`record_call_hook`,
:func:`symnode_method_hook`: ``max``, ``operator.iadd``, ``a.__add__``, not the FX node
torch lowers them to).  When Dynamo generates the replay code
(``SideEffects.codegen_update_mutated``), each stored value (an attribute, or an item of a
list, tuple or dict being written back, at any depth) gets a *shadow*: the recorded calls
run again on stand-in proxies of the marked inputs holding their trace-time values.  The
shadow's class and spec are what eager Python stores:

* a proxy: the value is rebuilt as that proxy with C calls only (:func:`_inline_rebox`);
  a proxy stored unchanged is reloaded from where it was read (the very object);
* plain: Dynamo's own plain value;
* depends on run-time values (``max``/``min`` of a proxy and a plain value, or of proxies
  with different specs): the generated code runs the same ``max``/``min`` on the eager
  objects of its operands after the graph, as eager Python did.

The cost is linear in what is stored: each shadow is computed once per compile, without
recursion (:class:`_Shadows`), and each replayed call is emitted once, into a local that
every later use loads (the codegen section).

It applies to every replay path - a module's instance dict, ``__slots__``, objects with
``__setattr__``, globals, lists, tuples and dicts - because they all reconstruct the value
the same way.  A proxy that torch turned into a constant at trace time (a NaN/inf
``DynamicFloat``, an int outside int64) is written back plain; docs/behaves-like.md lists it.
"""

from __future__ import annotations

import ast
import builtins
import functools
import types
from typing import Any

from .. import _caches
from .._diagnostics import DynscalarError
from .._proxy import (
    DynamicFloat,
    DynamicInt,
    DynamicScalar,
    _alloc,
    _new,
    _set_spec,
    _set_wrapped,
)
from .._spec import DynamicSpec
from ._sources import PLAIN_MEMBER
from ._state import Origin, peek_state

__all__ = [
    "builtin_call_hook",
    "codegen_suffix_hook",
    "codegen_update_mutated_hook",
    "rebox",
    "record_call_hook",
    "symnode_method_hook",
    "symnode_record_hook",
]

# ----------------------------------------------------------------------------- the rule
# Eager Python stores whatever the proxy's own methods (and the builtins calling them)
# return.  The bridge does not restate that rule: it records, for every value a traced call
# makes from a symbolic scalar, the Python-level callable and its arguments (``max``, ``sum``,
# ``operator.iadd``, ``a.__radd__``, ...: what the user's code called, not the FX node torch
# lowered it to), and at write-back time *runs* those callables on stand-in proxies that
# hold the trace-time values (the "shadow" of each graph value).  Whatever class and spec
# the shadow result has is what eager code stores.  Nodes no hook saw (a polyfill's
# internals, torch functions) are shadowed by running their FX target the same way.


class _Call:
    """A Python-level call that made a traced value: ``fn(*args, **kwargs)`` with the
    arguments as traced (VariableTrackers)."""

    __slots__ = ("args", "fn", "kwargs")

    def __init__(self, fn: Any, args: list[Any], kwargs: dict[str, Any]) -> None:
        self.fn = fn
        self.args = args
        self.kwargs = kwargs


class _MethodCall:
    """``obj.name(*args)`` as a callable of ``obj`` (a dunder call on a proxy)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, obj: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(obj, self.name)(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<method {self.name}>"


# max/min return one of their arguments: which one is known only at run time.
_SELECTING = frozenset({max, min})


class _Unknown:
    """A shadow that cannot be computed (a tensor, an object the bridge does not model)."""


_UNKNOWN: Any = _Unknown()


class _Ambiguous:
    """A shadow whose class or spec depends on run-time values (``max`` of two proxies
    with different specs, or of a proxy and a plain value)."""


_AMBIGUOUS: Any = _Ambiguous()
_MISSING: Any = object()  # not computed yet


def _hint(node: Any) -> Any:
    """The trace-time value of a symbolic scalar node (a stand-in for an unbacked one)."""
    import torch

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
    return _UNKNOWN


def _kind(value: Any) -> tuple[type, Any]:
    return (type(value), value._self_spec if isinstance(value, DynamicScalar) else None)


@functools.cache
def _types() -> Any:
    """Dynamo's variable classes and FX's node class, imported once (hot paths ask often)."""
    import torch
    from torch._dynamo.variables.lazy import LazyVariableTracker
    from torch._dynamo.variables.lists import BaseListVariable
    from torch._dynamo.variables.tensor import SymNodeVariable

    return types.SimpleNamespace(
        Node=torch.fx.Node,
        SymNode=SymNodeVariable,
        List=BaseListVariable,
        Lazy=LazyVariableTracker,
        symbolic=(torch.SymInt, torch.SymFloat, torch.SymBool),
    )


class _Shadows:
    """Shadow values of one compile's traced scalars (see the comment above).

    Each shadow is computed once per compile: the memo lives in the compile's state, so
    the hooks that ask while tracing (is this operand a proxy?) and every codegen pass
    share it.  A shadow is a *unit*'s - an FX node, or a variable a call tagged or that
    stands for a proxy compiled as a constant - and depends on the units its call (or FX
    node) reads; :meth:`_evaluate` walks them with an explicit stack, never recursion, so
    a chain of 10,000 operations costs 10,000 steps and no Python frames.
    """

    def __init__(self, state: Any) -> None:
        self.state = state
        self.origins: dict[Any, Origin] = state.origins
        self.calls: dict[Any, _Call] = state.calls
        self.variable_calls: dict[int, tuple[Any, _Call]] = state.variable_calls
        self.constants: dict[int, tuple[Any, Origin]] = state.constants
        self.nodes: dict[Any, Any] = state.node_shadows
        self.variables: dict[int, tuple[Any, Any]] = state.variable_shadows

    def guard_classes(self, variable: Any) -> None:
        """The shadow of ``variable`` decides what compiled code does (a proxy written back,
        a dunder call only the proxy has): guard the class of every proxy it was computed
        from, where a plain value may be found too.  Each unit is visited once per compile
        (``CompileState.class_guarded``), so guarding N values costs N steps in all."""
        from ._guards import guard_proxy

        seen = self.state.class_guarded
        pending = self._units_in([_realized(variable)])
        while pending:
            unit = pending.pop()
            if id(unit) in seen:
                continue
            seen[id(unit)] = unit  # kept alive: ids stay unique for the compile
            origin = self.origins.get(unit) if isinstance(unit, _types().Node) else None
            if origin is not None and origin.proxy is not None and origin.source is not None:
                guard_proxy(origin.source)
            pending.extend(self._dependencies(unit))

    # -- a VariableTracker
    def of_variable(self, variable: Any) -> Any:
        """What eager code holds for the traced ``variable``."""
        variable = _realized(variable)
        for unit in self._units_in([variable]):
            self._evaluate(unit)
        return self._value(variable)

    def call_of(self, variable: Any) -> _Call | None:
        """The Python-level call that made ``variable``, if a hook saw it."""
        variable = _realized(variable)
        tagged = self.variable_calls.get(id(variable))
        if tagged is not None and tagged[0] is variable:
            return tagged[1]
        if isinstance(variable, _types().SymNode):
            return self.calls.get(variable.as_proxy().node)
        return None

    def _unit(self, variable: Any) -> Any:
        """The memo key of a realized variable's shadow (None: computed from its value)."""
        key = id(variable)
        constant = self.constants.get(key)
        if constant is not None and constant[0] is variable and constant[1].proxy is not None:
            return variable
        tagged = self.variable_calls.get(key)
        if tagged is not None and tagged[0] is variable:
            return variable
        if isinstance(variable, _types().SymNode):
            return variable.as_proxy().node
        return None

    def _units_in(self, values: list[Any]) -> list[Any]:
        """The units of ``values`` and of the items of the lists and tuples among them."""
        found: list[Any] = []
        pending = list(reversed(values))
        while pending:
            variable = _realized(pending.pop())
            unit = self._unit(variable)
            if unit is not None:
                found.append(unit)
            else:
                items = _sequence_items(variable)
                if items is not None:
                    pending.extend(reversed(items))
        return found

    def _value(self, variable: Any) -> Any:
        """The shadow of a realized variable whose units are evaluated."""
        unit = self._unit(variable)
        if unit is not None:
            found = self._known(unit)
            return _UNKNOWN if found is _MISSING else found
        if variable.is_python_constant():
            try:
                return variable.as_python_constant()
            except Exception:  # noqa: BLE001 - not a constant after all
                return _UNKNOWN
        items = _sequence_items(variable)
        if items is not None:
            return variable.python_type()([self._value(_realized(item)) for item in items])
        return _UNKNOWN

    # -- the memo
    def _known(self, unit: Any) -> Any:
        if isinstance(unit, _types().Node):
            return self.nodes.get(unit, _MISSING)
        hit = self.variables.get(id(unit))
        return hit[1] if hit is not None and hit[0] is unit else _MISSING

    def _store(self, unit: Any, shadow: Any) -> None:
        if isinstance(unit, _types().Node):
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
        if not isinstance(unit, _types().Node):
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
        if not isinstance(unit, _types().Node):
            tagged = self.variable_calls.get(id(unit))
            if tagged is not None and tagged[0] is unit:
                return self._apply_call(tagged[1])
            read_from = self.constants[id(unit)][1]
            kind: Any = read_from.proxy
            try:
                return _new(kind, unit.as_python_constant(), read_from.spec.canonical())
            except Exception:  # noqa: BLE001 - not a plain constant after all
                return _UNKNOWN
        origin = self.origins.get(unit)
        call = self.calls.get(unit)
        hint = _hint(unit)
        if origin is not None:
            result = hint
            if origin.proxy is not None and hint is not _UNKNOWN:
                plain = int(hint) if origin.proxy is DynamicInt else float(hint)
                result = _new(origin.proxy, plain, origin.spec.canonical())
        elif call is not None:
            result = self._apply_call(call)
        elif unit.op == "call_function" and hint is not _UNKNOWN:
            # A node no hook saw: its FX target on the shadows of its arguments.
            args = [self._of_arg(arg) for arg in unit.args]
            kwargs = {key: self._of_arg(value) for key, value in unit.kwargs.items()}
            flat = _flatten([*args, *kwargs.values()])
            if any(isinstance(item, DynamicScalar) or item is _AMBIGUOUS for item in flat):
                result = self.apply(unit.target, args, kwargs)
            else:
                result = hint
        else:
            result = hint
        if isinstance(result, _types().symbolic):
            result = _UNKNOWN
        return result

    def _apply_call(self, call: _Call) -> Any:
        args = [self._value(_realized(arg)) for arg in call.args]
        kwargs = {key: self._value(_realized(value)) for key, value in call.kwargs.items()}
        return self.apply(call.fn, args, kwargs)

    def apply(self, fn: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        flat = _flatten([*args, *kwargs.values()])
        if any(item is _AMBIGUOUS for item in flat):
            return _AMBIGUOUS
        if any(item is _UNKNOWN for item in flat):
            return _UNKNOWN
        if fn in _SELECTING and not kwargs:
            candidates = list(args[0]) if len(args) == 1 else args
            if len({_kind(c) for c in candidates}) > 1:
                return _AMBIGUOUS
        try:
            return fn(*args, **kwargs)
        except Exception:  # noqa: BLE001 - the traced call succeeded: stand-in values only
            return _UNKNOWN

    def _of_arg(self, arg: Any) -> Any:
        if isinstance(arg, _types().Node):
            found = self.nodes.get(arg, _MISSING)
            return _UNKNOWN if found is _MISSING else found
        if isinstance(arg, (list, tuple)):  # FX's immutable_list/immutable_tuple too
            items = [self._of_arg(item) for item in arg]
            return items if isinstance(arg, list) else tuple(items)
        if arg is None or isinstance(arg, (bool, int, float, str)):
            return arg
        return _UNKNOWN


def _sequence_items(variable: Any) -> list[Any] | None:
    """The items of a traced list or tuple (None for anything else)."""
    if isinstance(variable, _types().List) and variable.python_type() in (list, tuple):
        return list(variable.items)
    return None


def _fx_nodes(values: Any) -> list[Any]:
    """The FX nodes among ``values`` and in the lists and tuples they hold."""
    node_type = _types().Node
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


# ----------------------------------------------------------------------------- run time
# A compiled call that assigns a proxy attribute builds the proxy right after the graph ran
# (``_inline_rebox``: no Python frame).  ``rebox`` is the same as one Python call, for values
# replayed from a source other than the proxy's ``__wrapped__``: a dict hit on one string
# constant (its hash is cached in the string) for the class and canonical spec, then the
# proxy built as ``_proxy`` builds arithmetic results.
_KINDS: dict[str, type[DynamicScalar]] = {"DynamicInt": DynamicInt, "DynamicFloat": DynamicFloat}
_MADE: dict[str, tuple[type, DynamicSpec]] = {}  # key -> class, spec (a memo of _made)
_caches.register(_MADE.clear)


def _key(cls: type, spec: DynamicSpec) -> str:
    """The constant the generated code passes to :func:`rebox` for a proxy class and spec."""
    return repr((cls.__name__, spec.unbacked, spec.min, spec.max, spec.strict))


def _made(key: str) -> tuple[type, DynamicSpec]:
    kind, unbacked, lo, hi, strict = ast.literal_eval(key)
    made = _MADE[key] = (_KINDS[kind], DynamicSpec(unbacked, lo, hi, strict).canonical())
    return made


def rebox(value: Any, key: str) -> Any:
    """Run time: the proxy eager would have stored for the plain ``value`` (called by the
    code Dynamo generates; ``key``, from :func:`_key`, is a constant of that code)."""
    made = _MADE.get(key)
    cls, spec = made if made is not None else _made(key)
    kind = type(value)
    if cls is DynamicInt:
        if kind is not int:
            if issubclass(kind, DynamicScalar):  # replayed from its source: the object itself
                return value
            value = int(value)
    elif kind is not float:
        if issubclass(kind, DynamicScalar):
            return value
        value = float(value)
    obj: DynamicScalar = _alloc(cls)
    _set_wrapped(obj, value)
    _set_spec(obj, spec)
    return obj


def _inline_rebox(codegen: Any, inner: Any, cls: type, spec: DynamicSpec) -> None:
    """Emit what :func:`rebox` does, for a value the graph computed, as C calls only::

        obj = _alloc(cls); _set_wrapped(obj, int(<inner>)); obj._self_spec = spec; push obj

    (``float`` for a ``DynamicFloat``; ``int()``/``float()`` of an exact int/float returns
    it unchanged).  A call to ``rebox`` is a Python frame entered through Dynamo's frame
    callback; this is none.  ``__wrapped__`` is stored through its descriptor: wrapt's
    ``__setattr__`` would search every class of the proxy's MRO for the name first.
    """
    from torch._dynamo.bytecode_transformation import (
        create_call_function,
        create_dup_top,
        create_instruction,
        create_rot_n,
        create_swap,
    )

    def load(value: Any) -> Any:  # an object in co_consts, as Dynamo loads its own helpers
        return codegen.create_load_const_unchecked(value)

    convert = int if cls is DynamicInt else float
    codegen.add_push_null(lambda: codegen.append_output(load(_set_wrapped)))  # [set]
    codegen.add_push_null(lambda: codegen.append_output(load(_alloc)))
    codegen.append_output(load(cls))
    codegen.extend_output(create_call_function(1, False))  # [set, obj]
    codegen.append_output(create_dup_top())
    codegen.extend_output(create_rot_n(4))  # [obj, set, obj] (set: callable and NULL)
    codegen.add_push_null(lambda: codegen.append_output(load(convert)))
    codegen(inner)
    codegen.extend_output(create_call_function(1, False))  # [obj, set, obj, value]
    codegen.extend_output(create_call_function(2, False))  # [obj, None]
    codegen.append_output(create_instruction("POP_TOP"))  # [obj]
    codegen.append_output(create_dup_top())
    codegen.append_output(load(spec))
    codegen.extend_output(create_swap(2))  # [obj, spec, obj]
    codegen.append_output(codegen.create_store_attr("_self_spec"))  # [obj]


def _skip_rebox_tracing() -> None:
    # rebox runs inside the code Dynamo generates, with Dynamo's frame callback active:
    # skip_code marks the code object once so Dynamo never traces it.
    from torch._dynamo.eval_frame import skip_code

    skip_code(rebox.__code__)


# ----------------------------------------------------------------------------- codegen
# What the generated code reconstructs in place of each stored value is planned once per
# compile and the same VariableTracker is handed to every codegen pass: Dynamo counts
# each one's uses in its first pass and keeps a value used twice in a temporary local in
# the second (``PyCodegen.tempvars``), so a proxy stored in two places is one object, as
# in eager.  A value replayed at run time (a ``max``/``min`` whose winner eager decides)
# is computed once per pass into a local of its own and loaded from there by every later
# use - as an item of a list, or as the operand of the next replayed call - so the code
# grows with the number of replayed calls, never with the length of the chains behind them.
_variable_classes: dict[str, type] = {}


class _Slot:
    """A value replayed at run time: the call that makes it, and the local holding it."""

    __slots__ = ("call", "name", "variable")

    def __init__(self, variable: Any, call: _Call) -> None:
        self.variable = variable
        self.call = call
        self.name: str | None = None  # one local for every codegen pass of the compile


def _classes() -> dict[str, type]:
    """The VariableTrackers write-back puts in place of assigned values (built lazily)."""
    if _variable_classes:
        return _variable_classes
    from torch._dynamo.variables.base import VariableTracker

    class _Rebox(VariableTracker):
        """Reconstructs as the proxy ``cls(<inner>, spec)`` eager code holds."""

        def __init__(self, inner: Any, cls: type, spec: DynamicSpec, same: bool) -> None:
            super().__init__()
            self.inner = inner
            self.cls = cls
            self.spec = spec
            self.same = same  # the proxy read unchanged: eager stores the very object

        def reconstruct(self, codegen: Any) -> None:
            _reconstruct_rebox(codegen, self.inner, self.cls, self.spec, self.same)

    class _Replay(VariableTracker):
        """Reconstructs by running the user's call on the eager objects at run time."""

        def __init__(self, slot: _Slot, shadows: _Shadows) -> None:
            super().__init__()
            self.slot = slot
            self.shadows = shadows

        def reconstruct(self, codegen: Any) -> None:
            _emit_replays(codegen, self.slot, self.shadows)

    _variable_classes.update(rebox=_Rebox, replay=_Replay)
    _skip_rebox_tracing()
    return _variable_classes


def _reconstruct_rebox(codegen: Any, inner: Any, cls: type, spec: DynamicSpec, same: bool) -> None:
    from torch._dynamo.bytecode_transformation import create_call_function

    source: Any = getattr(inner, "source", None)
    plain_read = getattr(source, "member", None) in ("__wrapped__", PLAIN_MEMBER)
    if same and plain_read:
        # A proxy assigned unchanged (`self.a, self.b = self.b, self.a`): its value's
        # source is `<proxy>.real`.  Eager stores the very object: reload it.
        codegen(source.base)
        return
    if source is not None and not plain_read:
        # Any other source: rebox returns a proxy found there unchanged.
        key = _key(cls, spec)
        _made(key)  # the first call finds it
        codegen.add_push_null(lambda: codegen.load_import_from(__name__, "rebox"))
        codegen(inner)
        codegen.append_output(codegen.create_load_const(key))
        codegen.extend_output(create_call_function(2, False))
        return
    _inline_rebox(codegen, inner, cls, spec.canonical())


def _plan(variable: Any, shadows: _Shadows) -> Any | None:
    """What to reconstruct in place of an assigned ``variable`` (None: Dynamo's own),
    the same object for every pass of the compile."""
    planned = shadows.state.planned
    hit = planned.get(id(variable))
    if hit is not None and hit[0] is variable:
        return hit[1]
    plan = _make_plan(variable, shadows)
    planned[id(variable)] = (variable, plan)
    return plan


def _make_plan(variable: Any, shadows: _Shadows) -> Any | None:
    call = shadows.call_of(variable)
    constant = id(variable) in shadows.constants
    if call is None and not constant and not isinstance(variable, _types().SymNode):
        return None
    shadow = shadows.of_variable(variable)
    classes = _classes()
    if shadow is _AMBIGUOUS or isinstance(shadow, DynamicScalar):
        # what is stored depends on the proxies read: their class is guarded
        shadows.guard_classes(variable)
    if shadow is _AMBIGUOUS:
        return classes["replay"](_slot(variable, shadows), shadows)
    if isinstance(shadow, DynamicScalar):
        same = call is None and (constant or variable.as_proxy().node in shadows.origins)
        return classes["rebox"](variable, type(shadow), shadow._self_spec, same)
    return None  # plain (or not modelled): Dynamo reconstructs the plain value


def _slot(variable: Any, shadows: _Shadows) -> _Slot:
    """The run-time replay of the value ``variable`` holds (one per value and compile)."""
    variable = _realized(variable)
    unit = shadows._unit(variable)
    replays = shadows.state.replays
    hit = replays.get(id(unit))
    if hit is not None and hit[0] is unit:
        return hit[1]  # type: ignore[no-any-return]
    call = shadows.call_of(variable)
    if unit is None or call is None or call.kwargs:
        raise DynscalarError(
            "dynscalar: a value computed with max()/min() of dynamic scalars with different "
            "specs is assigned after further arithmetic; which operand eager Python would "
            "keep depends on run-time values and this expression cannot be rebuilt. Assign "
            "the max()/min() result to a variable first, or compare with int()/float()."
        )
    slot = _Slot(variable, call)
    replays[id(unit)] = (unit, slot)
    return slot


def _emit_replays(codegen: Any, root: _Slot, shadows: _Shadows) -> None:
    """Push the object eager code holds for ``root``'s value: re-run the user's call
    (``max``, ``min``, and the arithmetic applied to their results) on the eager objects
    of its operands, after every replayed operand not yet computed in this pass, each
    once, into its local (post-order with an explicit stack: no recursion)."""
    from torch._dynamo.bytecode_transformation import create_call_function

    tempvars = codegen.tempvars
    if tempvars.get(root) is None:
        order: list[_Slot] = []
        ordered: set[int] = set()
        expanded: set[int] = set()
        stack: list[tuple[_Slot, bool]] = [(root, False)]
        while stack:
            slot, ready = stack.pop()
            if id(slot) in ordered:
                continue
            if ready:
                ordered.add(id(slot))
                order.append(slot)
                continue
            if id(slot) in expanded or tempvars.get(slot) is not None:
                continue  # computed earlier in this pass (or a cycle, which a trace has not)
            expanded.add(id(slot))
            stack.append((slot, True))
            for operand in reversed(_ambiguous_operands(slot.call, shadows)):
                stack.append((_slot(operand, shadows), False))
        for slot in order:
            call = slot.call
            codegen.add_push_null(
                lambda fn=call.fn: codegen.append_output(codegen.create_load_const_unchecked(fn))
            )
            for arg in call.args:
                _emit_operand(codegen, arg, shadows)
            codegen.extend_output(create_call_function(len(call.args), False))
            if slot.name is None:
                slot.name = codegen.new_var("dynscalar_replay")
            tempvars[slot] = slot.name
            codegen.append_output(codegen.create_store(slot.name))
    codegen.append_output(codegen.create_load(tempvars[root]))


def _ambiguous_operands(call: _Call, shadows: _Shadows) -> list[Any]:
    """The operands of ``call`` (items of list and tuple operands included) that are
    themselves replayed."""
    found: list[Any] = []
    pending = list(reversed(call.args))
    while pending:
        arg = _realized(pending.pop())
        items = _sequence_items(arg)
        if items is not None:
            pending.extend(reversed(items))
        elif shadows.of_variable(arg) is _AMBIGUOUS:
            found.append(arg)
    return found


def _emit_operand(codegen: Any, arg: Any, shadows: _Shadows) -> None:
    """Push the eager object of one operand of a replayed call: a replayed value from its
    local, a list or tuple item by item, anything else as write-back stores it."""
    from torch._dynamo.bytecode_transformation import create_instruction

    arg = _realized(arg)
    items = _sequence_items(arg)
    if items is not None:
        for item in items:
            _emit_operand(codegen, item, shadows)
        op = "BUILD_LIST" if arg.python_type() is list else "BUILD_TUPLE"
        codegen.append_output(create_instruction(op, arg=len(items)))
        return
    if shadows.of_variable(arg) is _AMBIGUOUS:
        slot = _slot(arg, shadows)
        codegen.append_output(codegen.create_load(codegen.tempvars[slot]))
        return
    codegen(_plan(arg, shadows) or arg)


def _replace_in(
    container: Any,
    shadows: _Shadows,
    replaced: list[tuple[Any, Any, Any]],
    seen: set[int],
) -> None:
    """Put re-boxing variables in place of the proxy values held by ``container`` (a list,
    tuple or dict being written back), recursively; ``replaced`` records how to undo it."""
    from torch._dynamo.variables.dicts import ConstDictVariable
    from torch._dynamo.variables.lists import BaseListVariable

    if id(container) in seen:
        return
    seen.add(id(container))
    slots: Any
    if isinstance(container, BaseListVariable) and isinstance(container.items, list):
        slots = container.items
        keys: Any = range(len(slots))
    elif isinstance(container, ConstDictVariable) and isinstance(container.items, dict):
        slots = container.items
        keys = list(slots)
    else:
        return
    for key in keys:
        item = slots[key]
        new = _plan(item, shadows)
        if new is not None:
            slots[key] = new
            replaced.append((slots, key, item))
        else:
            _replace_in(item, shadows, replaced, seen)


def _guard_rebuilt_dicts(tx: Any, side_effects: Any) -> None:
    """Guard the keys, in order, of every existing dict the compiled code rebuilds.

    Dynamo writes a dict that lost a key (``pop``, ``del``, ``popitem``, ``clear``) back as
    ``clear()`` and ``update()`` with the items it held while tracing, and guards only the
    keys the code looked at.  Compiled code reused for the same dict holding another key
    since (an optimizer's ``state[p]`` that gained ``momentum_buffer`` in another frame)
    would drop that key, where eager Python keeps it.  A mark removes the value guards
    that recompiled such code (a learning rate), so in a compile with marked values the
    rebuilt dicts' keys are guarded as Dynamo guards a dict it iterates
    (``DICT_KEYS_MATCH``, with their order): other keys compile again, exactly.
    """
    from torch._dynamo.guards import GuardBuilder, install_guard
    from torch._dynamo.variables.dicts import ConstDictVariable
    from torch._guards import GuardSource

    for variable in side_effects._get_modified_vars():
        rebuilt = variable if type(variable) is ConstDictVariable else None
        if rebuilt is None:  # a dict subclass (defaultdict, OrderedDict): its inner dict
            inner = getattr(variable, "_base_vt", None)
            rebuilt = inner if type(inner) is ConstDictVariable else None
        if rebuilt is None or not rebuilt.should_reconstruct_all:
            continue
        source = rebuilt.source or variable.source
        if source is None:  # a dict the frame made: nothing to keep
            continue
        if source.guard_source is GuardSource.TEMP_LOCAL:
            # a dict Dynamo holds in a temporary local (``**kwargs`` handed on at a graph
            # break): no guard can read it, and no object outlives the call to keep keys of
            continue
        tx.output.guard_on_key_order.add(source)
        install_guard(source.make_guard(GuardBuilder.DICT_KEYS_MATCH))


def codegen_update_mutated_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``SideEffects.codegen_update_mutated(cg)``: the values written back (assigned
    attributes, and the items of lists, tuples and dicts they hold or that were mutated in
    place) become what eager Python would have stored."""
    cg = args[0] if args else kwargs["cg"]
    state = peek_state(getattr(cg.tx.output, "shape_env", None))
    if state is None or not (state.origins or state.constants):
        return wrapped(*args, **kwargs)
    _guard_rebuilt_dicts(cg.tx, instance)
    shadows = _Shadows(state)
    replaced: list[tuple[Any, Any, Any]] = []
    seen: set[int] = set()
    for assigned in instance.store_attr_mutations.values():
        for name, value in list(assigned.items()):
            new = _plan(value, shadows)
            if new is not None:
                assigned[name] = new
                replaced.append((assigned, name, value))
            else:
                _replace_in(value, shadows, replaced, seen)
    for variable in instance._get_modified_vars():
        _replace_in(variable, shadows, replaced, seen)
    try:
        return wrapped(*args, **kwargs)
    finally:  # the side effects outlive this codegen pass: leave them as Dynamo made them
        for slots, key, value in reversed(replaced):
            slots[key] = value


def codegen_suffix_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``OutputGraph.codegen_suffix(tx, stack_values, cg, log_side_effects)``: the
    values a compiled frame hands on (its return value, and at a graph break the stack and
    live locals the resumed code receives) are what eager Python held, proxies included:
    a local ``a = self.step`` handed on as a plain int would be compiled by the resumed
    frame as an unmarked constant, once per value.
    """
    names = ("tx", "stack_values", "cg", "log_side_effects")
    values = dict(zip(names, args, strict=False)) | kwargs
    tx, stack = values["tx"], values["stack_values"]
    state = peek_state(getattr(instance, "shape_env", None))
    if state is None or not (state.origins or state.constants) or not stack:
        return wrapped(*args, **kwargs)
    if getattr(tx, "export", False):
        return wrapped(*args, **kwargs)
    shadows = _Shadows(state)
    replaced: list[tuple[Any, Any, Any]] = []
    seen: set[int] = set()
    new_stack = list(stack)
    for index, value in enumerate(new_stack):
        new = _plan(value, shadows)
        if new is not None:
            new_stack[index] = new
        else:
            _replace_in(value, shadows, replaced, seen)
    if len(args) > 1:
        args = (args[0], new_stack, *args[2:])
    else:
        kwargs = {**kwargs, "stack_values": new_stack}
    try:
        return wrapped(*args, **kwargs)
    finally:
        for slots, key, value in reversed(replaced):
            slots[key] = value


# ----------------------------------------------------------------------------- tracing
def _realized(variable: Any) -> Any:
    """The variable behind a realized ``LazyVariableTracker`` (others unchanged)."""
    if isinstance(variable, _types().Lazy) and variable.is_realized():
        return variable.unwrap()
    return variable


def _symbolic(variable: Any) -> bool:
    from torch._dynamo.variables.lists import BaseListVariable
    from torch._dynamo.variables.tensor import SymNodeVariable

    variable = _realized(variable)
    if isinstance(variable, SymNodeVariable):
        return True
    if isinstance(variable, BaseListVariable) and isinstance(variable.items, list):
        return any(_symbolic(item) for item in variable.items)
    return False


def _from_constant(state: Any, variable: Any) -> bool:
    """True for a constant made from a proxy, or computed from one (see ``_record``)."""
    from torch._dynamo.variables.lists import BaseListVariable

    variable = _realized(variable)
    key = id(variable)
    for table in (state.constants, state.variable_calls):
        tagged = table.get(key)
        if tagged is not None and tagged[0] is variable:
            return True
    if isinstance(variable, BaseListVariable) and isinstance(variable.items, list):
        return any(_from_constant(state, item) for item in variable.items)
    return False


def _copy_of(variable: Any) -> Any:
    """``variable.clone()``, also for a ``SymNodeVariable``: torch 2.13's ``clone`` passes
    every instance attribute to ``__init__``, which does not take the ``_tensor_var``
    cache a ``SymNodeVariable`` sets itself (``TypeError: ... unexpected keyword argument
    '_tensor_var'``; met in AdamW's ``1 - beta1`` with marked betas)."""
    fields = dict(variable.__dict__)
    if "_tensor_var" not in fields:
        return variable.clone()
    del fields["_tensor_var"]
    return type(variable)(**fields)  # its own tensor form is made again when asked


def _record(tx: Any, result: Any, fn: Any, args: Any, kwargs: Any, before: int, graph: Any) -> Any:
    """Remember that ``fn(*args, **kwargs)`` (a Python-level call) made ``result``."""
    from torch._dynamo.variables.constant import ConstantVariable
    from torch._dynamo.variables.tensor import SymNodeVariable

    state = peek_state(getattr(tx.output, "shape_env", None))
    if state is None or not (state.origins or state.constants):
        return result
    if fn in _SELECTING and result is state.selected and result is not None:
        # ``max``/``min`` traced as comparisons (``_decompositions._select``) hand back the
        # winning operand itself; the comparisons' guards fix which one, so it is the very
        # object eager returns: nothing to replay.
        state.selected = None
        return result
    operands = [*args, *kwargs.values()]
    if isinstance(result, ConstantVariable) and state.constants:
        # arithmetic on a proxy compiled as a constant (an int outside int64, a restart)
        if any(_from_constant(state, operand) for operand in operands):
            result = _copy_of(result)
            state.variable_calls[id(result)] = (result, _Call(fn, list(args), dict(kwargs)))
        return result
    if not isinstance(result, SymNodeVariable) or not any(_symbolic(o) for o in operands):
        return result
    call = _Call(fn, list(args), dict(kwargs))
    node = result.as_proxy().node
    made = len(graph.nodes) - before
    if made > 0 and node.graph is graph:
        for index, candidate in enumerate(reversed(graph.nodes)):
            if index >= made:
                break
            if candidate is node:
                state.calls[node] = call  # the outermost call that made it wins
                state.node_shadows.pop(node, None)  # an inner call's shadow, if asked for
                return result
    # An existing value handed back unchanged (`pow(a, 1)`, `+a`): tag a copy of the
    # variable, so other uses of the value keep their meaning.
    result = _copy_of(result)
    state.variable_calls[id(result)] = (result, call)
    return result


def builtin_call_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``BuiltinVariable.call_function(tx, args, kwargs)``: record the builtin
    (``max``, ``sum``, ``pow``, ``operator.iadd``, ...) that made a symbolic value."""
    tx, call_args, call_kwargs = _unpack3(args, kwargs, ("tx", "args", "kwargs"))
    graph = tx.output.graph
    before = len(graph.nodes)
    if instance.fn in _POWERS and len(call_args) >= 2:
        fixed = _negative_float_power(tx, list(call_args))
        if fixed is not None:
            call_args = fixed
            args, kwargs = (tx, fixed, call_kwargs), {}
    if _is_invert_of_proxy(tx, instance.fn, call_args):
        result = _call_operator(tx, instance.fn, list(call_args))
    else:
        result = wrapped(*args, **kwargs)
    return _record(tx, result, instance.fn, call_args, call_kwargs, before, graph)


def _powers() -> frozenset[Any]:
    import operator

    return frozenset({pow, operator.pow, operator.ipow})


_POWERS = _powers()


def _negative_float_power(tx: Any, operands: list[Any]) -> list[Any] | None:
    """``pow(t, 2)`` with a dynamic float ``t`` that is negative now: torch refuses symbolic
    float powers with a negative base (``SymFloat.__pow__`` checks ``self >= 0`` to avoid
    complex results; ``__rpow__`` checks the base when the exponent is symbolic), and the
    compile fails where eager Python computes the power.  The float is specialized instead
    (exact, a value guard: one compile per such value, reported as a specialization)."""
    import torch
    from torch._dynamo.variables.constant import ConstantVariable
    from torch._dynamo.variables.tensor import SymNodeVariable

    base, exponent = _realized(operands[0]), _realized(operands[1])

    def negative(variable: Any) -> bool:
        if isinstance(variable, SymNodeVariable):
            hint = getattr(getattr(variable.sym_num, "node", None), "hint", None)
            return hint is not None and hint < 0
        return variable.is_python_constant() and _is_negative(variable.as_python_constant())

    def float_symbol(variable: Any) -> bool:
        return isinstance(variable, SymNodeVariable) and isinstance(
            variable.sym_num, torch.SymFloat
        )

    def constant(variable: Any) -> Any:
        # the constant stands for what eager holds: a proxy stays tracked for write-back
        shadow = _shadow_of(tx, variable)
        made = ConstantVariable.create(variable.evaluate_expr(tx.output))
        if isinstance(shadow, DynamicScalar):
            state = peek_state(getattr(tx.output, "shape_env", None))
            if state is not None:
                origin = Origin("", shadow._self_spec, type(shadow))
                state.constants[id(made)] = (made, origin)
        return made

    if float_symbol(base) and negative(base):
        operands[0] = constant(base)
    elif float_symbol(exponent) and negative(base) and not isinstance(base, SymNodeVariable):
        operands[1] = constant(exponent)
    elif isinstance(base, SymNodeVariable) and float_symbol(exponent) and negative(base):
        operands[0] = constant(base)
    else:
        return None
    return operands


def _is_negative(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0


def _is_invert_of_proxy(tx: Any, fn: Any, call_args: Any) -> bool:
    import operator

    from torch._dynamo.variables.tensor import SymNodeVariable

    if fn is not operator.invert or len(call_args) != 1:
        return False
    operand = _realized(call_args[0])
    return isinstance(operand, SymNodeVariable) and _proxy_shadow(tx, operand)


def record_call_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``PolyfilledFunctionVariable.call_function(tx, args, kwargs)``: record the
    function Dynamo replaced by a polyfill (``sum``, ``math.prod``).  Inside
    ``dynscalar.disabled()`` also around ``BuiltinVariable.call_function``, where it only
    records: the call is traced as stock Dynamo traces it."""
    tx, call_args, call_kwargs = _unpack3(args, kwargs, ("tx", "args", "kwargs"))
    graph = tx.output.graph
    before = len(graph.nodes)
    result = wrapped(*args, **kwargs)
    return _record(tx, result, instance.fn, call_args, call_kwargs, before, graph)


def symnode_method_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``SymNodeVariable.call_method(tx, name, args, kwargs)``: record dunder calls
    (``a.__add__(1)``, ``a.__radd__(1)``) as calls of the proxy's own method."""
    tx, name, call_args, call_kwargs = _unpack4(args, kwargs)
    graph = tx.output.graph
    before = len(graph.nodes)
    found = _operator_for(name) if not call_kwargs else None
    key = (id(instance), name)
    if found is not None and key not in _routing and _proxy_shadow(tx, instance):
        # A dunder call on a proxy (`a.__iadd__(2)`, `a.__invert__()`, `a.__radd__(1)`) runs
        # the proxy's own operator, which computes what the operator syntax computes; an int
        # or float lacks some of these methods and Dynamo would graph-break on them.  Dynamo
        # itself implements some builtins as dunder calls (`round(a)` calls `a.__round__()`):
        # those inner calls take Dynamo's own path.

        function, reflected = found
        operands = [*call_args, instance] if reflected else [instance, *call_args]
        _routing.add(key)
        try:
            result = _call_operator(tx, function, operands)
        finally:
            _routing.discard(key)
    else:
        result = wrapped(*args, **kwargs)
    return _record(
        tx, result, _MethodCall(name), [instance, *call_args], call_kwargs, before, graph
    )


def symnode_record_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Inside ``dynscalar.disabled()``, around ``SymNodeVariable.call_method``: record the
    dunder calls stock Dynamo traces (nothing is routed)."""
    tx, name, call_args, call_kwargs = _unpack4(args, kwargs)
    graph = tx.output.graph
    before = len(graph.nodes)
    result = wrapped(*args, **kwargs)
    return _record(
        tx, result, _MethodCall(name), [instance, *call_args], call_kwargs, before, graph
    )


def _operator_for(name: str) -> tuple[Any, bool] | None:
    """(function, reflected) that Python's operator syntax calls for the dunder ``name``:
    ``__add__`` -> ``operator.add``, ``__radd__`` -> ``operator.add`` reflected,
    ``__iadd__`` -> ``operator.iadd``, ``__neg__`` -> ``operator.neg``, ``__floor__`` ->
    ``math.floor`` ... (None for other names)."""
    import math
    import operator

    if not (name.startswith("__") and name.endswith("__")) or not hasattr(DynamicScalar, name):
        return None
    core = name[2:-2]
    for candidate, reflected in ((core, False), (core[1:], core.startswith("r"))):
        for module in (operator, math, builtins):
            function = getattr(module, candidate, None) or getattr(module, candidate + "_", None)
            if callable(function) and not isinstance(function, type):
                if module is builtins and candidate not in ("divmod", "pow", "round", "abs"):
                    continue
                if candidate.startswith("i") and reflected:
                    continue
                return function, reflected
    return None


def _call_operator(tx: Any, function: Any, operands: list[Any]) -> Any:
    """Trace ``function(*operands)``; ``~`` on an int as ``-a - 1`` (Dynamo 2.13 cannot
    trace ``operator.invert`` on a SymInt and gives up on the whole frame)."""
    import operator

    from torch._dynamo.variables.base import VariableTracker
    from torch._dynamo.variables.constant import ConstantVariable
    from torch._dynamo.variables.tensor import SymNodeVariable

    if function is operator.invert and len(operands) == 1:
        (operand,) = operands
        if isinstance(operand, SymNodeVariable) and operand.python_type() is int:
            negated = _call_operator(tx, operator.neg, [operand])
            return _call_operator(tx, operator.sub, [negated, ConstantVariable.create(1)])
    return VariableTracker.build(tx, function).call_function(tx, operands, {})


_routing: set[tuple[int, str]] = set()  # dunder calls being routed (tracing is one thread)


def _shadow_of(tx: Any, variable: Any) -> Any:
    """What eager code holds for the traced ``variable`` (``_UNKNOWN`` outside a marked
    compile)."""
    state = peek_state(getattr(tx.output, "shape_env", None))
    if state is None or not (state.origins or state.constants):
        return _UNKNOWN
    shadows = _Shadows(state)
    shadow = shadows.of_variable(variable)
    if isinstance(shadow, DynamicScalar) or shadow is _AMBIGUOUS:
        shadows.guard_classes(variable)  # the trace takes a proxy's path
    return shadow


def _proxy_shadow(tx: Any, variable: Any) -> bool:
    """True when eager code holds a proxy for the traced ``variable``."""
    state = peek_state(getattr(tx.output, "shape_env", None))
    if state is None or not state.origins:
        return False
    shadows = _Shadows(state)
    if not isinstance(shadows.of_variable(variable), DynamicScalar):
        return False
    shadows.guard_classes(variable)  # the trace takes a proxy's path
    return True


def _unpack3(args: tuple[Any, ...], kwargs: dict[str, Any], names: tuple[str, ...]) -> Any:
    values = list(args) + [kwargs[name] for name in names[len(args) :]]
    return values[0], values[1], values[2] or {}


def _unpack4(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    names = ("tx", "name", "args", "kwargs")
    values = list(args) + [kwargs[name] for name in names[len(args) :]]
    return values[0], values[1], values[2], values[3] or {}
