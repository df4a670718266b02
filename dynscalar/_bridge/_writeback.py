"""Write-back: a value a compiled frame stores holds what eager would have stored.

Dynamo replays attribute assignments and container mutations after the compiled graph
ran, with plain values (the graph computes ints and floats, not proxies).  Eager code
stores whatever the Python expression produced: proxy arithmetic (``dynscalar/_proxy.py``)
and the builtins that call it (``sum``, ``pow``, ``max``, ``math.prod``, ``a.__radd__``).

The bridge does not restate those rules.  While tracing, it records the Python-level call
that made each symbolic value (:func:`builtin_call_hook`, :func:`polyfilled_call_hook`,
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

It applies to every replay path - a module's instance dict, ``__slots__``, objects with
``__setattr__``, globals, lists, tuples and dicts - because they all reconstruct the value
the same way.  A proxy that torch turned into a constant at trace time (a NaN/inf
``DynamicFloat``, an int outside int64) is written back plain; docs/behaves-like.md lists it.
"""

from __future__ import annotations

import ast
import builtins
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
    "polyfilled_call_hook",
    "rebox",
    "symnode_method_hook",
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


class _Shadows:
    """Shadow values of one compile's traced scalars (see the comment above)."""

    def __init__(self, state: Any) -> None:
        self.state = state
        self.origins: dict[Any, Origin] = state.origins
        self.calls: dict[Any, _Call] = state.calls
        self.variable_calls: dict[int, tuple[Any, _Call]] = state.variable_calls
        self.constants: dict[int, tuple[Any, Origin]] = state.constants
        self.memo: dict[Any, Any] = {}
        #: proxies read where a plain value may be found too, that these shadows used
        self.read_proxies: list[Origin] = []

    def guard_classes(self) -> None:
        """The shadows computed so far decide what compiled code does (a proxy written back,
        a dunder call only the proxy has): guard the class of every proxy they read."""
        from ._guards import guard_proxy

        for origin in self.read_proxies:
            guard_proxy(origin.source)

    # -- a VariableTracker
    def of_variable(self, variable: Any) -> Any:
        from torch._dynamo.variables.lists import BaseListVariable
        from torch._dynamo.variables.tensor import SymNodeVariable

        variable = _realized(variable)
        constant = self.constants.get(id(variable))
        if constant is not None and constant[0] is variable and constant[1].proxy is not None:
            origin = constant[1]
            kind: Any = origin.proxy
            try:
                return _new(kind, variable.as_python_constant(), origin.spec.canonical())
            except Exception:  # noqa: BLE001 - not a plain constant after all
                return _UNKNOWN
        call = self.call_of(variable)
        if call is not None:
            return self.of_call(call)
        if isinstance(variable, SymNodeVariable):
            return self.of_node(variable.as_proxy().node)
        if variable.is_python_constant():
            try:
                return variable.as_python_constant()
            except Exception:  # noqa: BLE001 - not a constant after all
                return _UNKNOWN
        if isinstance(variable, BaseListVariable) and type(variable.python_type()) is type:
            kind = variable.python_type()
            if kind in (list, tuple):
                items = [self.of_variable(item) for item in variable.items]
                return kind(items)
        return _UNKNOWN

    def call_of(self, variable: Any) -> _Call | None:
        """The Python-level call that made ``variable``, if a hook saw it."""
        from torch._dynamo.variables.tensor import SymNodeVariable

        tagged = self.variable_calls.get(id(variable))
        if tagged is not None and tagged[0] is variable:
            return tagged[1]
        if isinstance(variable, SymNodeVariable):
            return self.calls.get(variable.as_proxy().node)
        return None

    # -- a call
    def of_call(self, call: _Call) -> Any:
        args = [self.of_variable(arg) for arg in call.args]
        kwargs = {key: self.of_variable(value) for key, value in call.kwargs.items()}
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

    # -- an FX node
    def of_node(self, node: Any) -> Any:
        import torch

        if node in self.memo:
            return self.memo[node]
        self.memo[node] = _UNKNOWN  # FX graphs have no cycles; this only stops recursion
        origin = self.origins.get(node)
        call = self.calls.get(node)
        hint = _hint(node)
        if origin is not None:
            result = hint
            if origin.proxy is not None and origin.source is not None:
                self.read_proxies.append(origin)
            if origin.proxy is not None and hint is not _UNKNOWN:
                plain = int(hint) if origin.proxy is DynamicInt else float(hint)
                result = _new(origin.proxy, plain, origin.spec.canonical())
        elif call is not None:
            result = self.of_call(call)
        elif node.op == "call_function" and hint is not _UNKNOWN:
            # A node no hook saw: its FX target on the shadows of its arguments.
            args = [self._of_arg(arg) for arg in node.args]
            kwargs = {key: self._of_arg(value) for key, value in node.kwargs.items()}
            flat = _flatten([*args, *kwargs.values()])
            if any(isinstance(item, DynamicScalar) or item is _AMBIGUOUS for item in flat):
                result = self.apply(node.target, args, kwargs)
            else:
                result = hint
        else:
            result = hint
        if isinstance(result, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            result = _UNKNOWN
        self.memo[node] = result
        return result

    def _of_arg(self, arg: Any) -> Any:
        import torch

        if isinstance(arg, torch.fx.Node):
            return self.of_node(arg)
        if isinstance(arg, (list, tuple)):  # FX's immutable_list/immutable_tuple too
            items = [self._of_arg(item) for item in arg]
            return items if isinstance(arg, list) else tuple(items)
        if arg is None or isinstance(arg, (bool, int, float, str)):
            return arg
        return _UNKNOWN


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
_variable_classes: dict[str, type] = {}


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

        def __init__(self, inner: Any, shadows: _Shadows) -> None:
            super().__init__()
            self.inner = inner
            self.shadows = shadows

        def reconstruct(self, codegen: Any) -> None:
            _emit_eager(codegen, self.inner, self.shadows)

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
    """What to reconstruct in place of an assigned ``variable`` (None: Dynamo's own)."""
    from torch._dynamo.variables.tensor import SymNodeVariable

    call = shadows.call_of(variable)
    constant = id(variable) in shadows.constants
    if call is None and not constant and not isinstance(variable, SymNodeVariable):
        return None
    shadow = shadows.of_variable(variable)
    classes = _classes()
    if shadow is _AMBIGUOUS or isinstance(shadow, DynamicScalar):
        # what is stored depends on the proxies read: their class is guarded
        read = _Shadows(shadows.state)
        read.of_variable(variable)
        read.guard_classes()
    if shadow is _AMBIGUOUS:
        return classes["replay"](variable, shadows)
    if isinstance(shadow, DynamicScalar):
        same = call is None and (constant or variable.as_proxy().node in shadows.origins)
        return classes["rebox"](variable, type(shadow), shadow._self_spec, same)
    return None  # plain (or not modelled): Dynamo reconstructs the plain value


def _emit_eager(codegen: Any, variable: Any, shadows: _Shadows) -> None:
    """Push the object eager code holds for ``variable``: re-run the user's call (``max``,
    ``min``) on the eager objects of its arguments when the result depends on values."""
    from torch._dynamo.bytecode_transformation import create_call_function, create_instruction
    from torch._dynamo.variables.lists import BaseListVariable

    shadow = shadows.of_variable(variable)
    if shadow is not _AMBIGUOUS:
        codegen(_plan(variable, shadows) or variable)
        return
    call = shadows.call_of(variable)
    if call is None or call.kwargs:
        raise DynscalarError(
            "dynscalar: a value computed with max()/min() of dynamic scalars with different "
            "specs is assigned after further arithmetic; which operand eager Python would "
            "keep depends on run-time values and this expression cannot be rebuilt. Assign "
            "the max()/min() result to a variable first, or compare with int()/float()."
        )

    def emit_arg(arg: Any) -> None:
        arg = _realized(arg)
        kind = arg.python_type() if isinstance(arg, BaseListVariable) else None
        if kind in (list, tuple):
            for item in arg.items:
                emit_arg(item)
            op = "BUILD_LIST" if kind is list else "BUILD_TUPLE"
            codegen.append_output(create_instruction(op, arg=len(arg.items)))
        else:
            _emit_eager(codegen, arg, shadows)

    fn = call.fn
    codegen.add_push_null(lambda: codegen.append_output(codegen.create_load_const_unchecked(fn)))
    for arg in call.args:
        emit_arg(arg)
    codegen.extend_output(create_call_function(len(call.args), False))


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
    live locals the resumed code receives) are what eager Python held, proxies included.

    Before, a local ``a = self.step`` crossed a graph break as a plain int: the resumed
    frame then compiled it as an unmarked constant, once per value.
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
    from torch._dynamo.variables.lazy import LazyVariableTracker

    if isinstance(variable, LazyVariableTracker) and variable.is_realized():
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


def polyfilled_call_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``PolyfilledFunctionVariable.call_function(tx, args, kwargs)``: record the
    function Dynamo replaced by a polyfill (``sum``, ``math.prod``)."""
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
        shadows.guard_classes()  # the trace takes a proxy's path
    return shadow


def _proxy_shadow(tx: Any, variable: Any) -> bool:
    """True when eager code holds a proxy for the traced ``variable``."""
    state = peek_state(getattr(tx.output, "shape_env", None))
    if state is None or not state.origins:
        return False
    shadows = _Shadows(state)
    if not isinstance(shadows.of_variable(variable), DynamicScalar):
        return False
    shadows.guard_classes()  # the trace takes a proxy's path
    return True


def _unpack3(args: tuple[Any, ...], kwargs: dict[str, Any], names: tuple[str, ...]) -> Any:
    values = list(args) + [kwargs[name] for name in names[len(args) :]]
    return values[0], values[1], values[2] or {}


def _unpack4(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    names = ("tx", "name", "args", "kwargs")
    values = list(args) + [kwargs[name] for name in names[len(args) :]]
    return values[0], values[1], values[2], values[3] or {}
