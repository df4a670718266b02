"""Write-back: a value a compiled frame stores, hands on or returns holds what eager would.

``self.step += 1`` on a ``DynamicInt`` in compiled code leaves a ``DynamicInt`` with the
same spec, as eager Python does (the proxy's own ``__iadd__`` made it).  Dynamo replays
attribute assignments and container mutations after the graph ran with the plain values the
graph computed, and hands plain values on at a graph break and as the return value: without
write-back ``self.step`` would be a plain ``int`` after the first compiled call, and the next
call would compile it again as an unmarked constant.  Write-back applies to every replay path
(a module's instance dict, ``__slots__``, objects with ``__setattr__``, globals, lists,
tuples and dicts at any depth; the return value; the stack and live locals at a graph
break).

Eager Python stores whatever the expression produced: proxy arithmetic (``_proxy``) and the
builtins that call it (``sum``, ``pow``, ``max``, ``math.prod``, ``a.__radd__``).  Write-back
does not restate those rules: it records the Python-level calls that made each value and
runs them again on stand-in proxies.  This module holds, in the order a reader needs them:

* **traced values and the recorded call**: :class:`Call`, :class:`MethodCall`,
  :class:`ItemOf`, and the traced values as every part reads them (:func:`realized`,
  :func:`sequence_items`, :data:`SYMBOLIC`);
* **recording**, while Dynamo traces: the hooks (called by ``stages.trace``) that remember,
  for each symbolic value a call makes, the callable the user's code called and its
  arguments (:func:`builtin_call_hook`: ``max``, ``sum``, ``pow``, ``operator.iadd``;
  :func:`record_call_hook`: the polyfilled ``sum`` and ``math.prod``;
  :func:`symnode_method_hook`: ``a.__add__(1)``; :func:`constant_method_hook`: a dunder on
  a proxy compiled as a constant); inside ``dynscalar.disabled()`` the recording-only
  :func:`record_call_hook` and :func:`symnode_record_hook`.  The callable recorded is the
  one the user called, not the FX node torch lowered it to (``max``, not
  ``torch.sym_max``; ``operator.iadd``, not ``operator.add``); a call that hands back an
  existing value (``pow(a, 1)``, ``+a``) tags a copy of the variable, so other uses keep
  their meaning;
* **Python operators on proxies**, the part of ``_python``'s rules that needs the shadows:
  the operands ``_python`` specializes (``pow`` with a negative float base, a float ``//``)
  become constants standing for the proxies eager holds; ``~`` of a proxy int (``-a - 1``)
  and a dunder called on a proxy (traced as its operator);
* **shadows**: :class:`Shadows` runs the recorded calls again on stand-in proxies holding
  the trace-time values (a node no hook saw runs its FX target the same way): the class
  and spec of each shadow are what eager holds.  Each shadow is computed once per compile,
  after the ones it depends on, with an explicit stack (a chain of 10,000 operations costs
  10,000 steps and no recursion); the class of every proxy a shadow was computed from is
  guarded.  :data:`UNKNOWN`: not modelled; :data:`AMBIGUOUS`: decided at run time.

After the graph, ``stages.codegen`` puts each stored or handed-on value back as its shadow
says (a proxy rebuilt from the graph's plain value with C calls only, or reloaded where it
was read unchanged; a plain value as Dynamo has it; an ambiguous ``max``/``min`` run again
on the eager objects after the graph), and ``_rebox`` is the one helper the generated code
calls at run time.  The cost is linear in what is stored: each shadow is computed once per
compile, and each replayed call is emitted once.  ``docs/how-it-works.md`` (Write-back)
follows one value through these steps.

Examples:
    >>> from dynscalar._bridge._writeback import ItemOf, MethodCall
    >>> MethodCall("__radd__")(2, 1)
    3
    >>> ItemOf(divmod, 1)(7, 2)
    1
"""

from __future__ import annotations

import itertools
import operator
from typing import Any

import torch

from .._proxy import DynamicInt, DynamicScalar, _new
from . import _python, _torch
from ._guards import guard_proxy
from ._state import Origin, peek_state, realized

__all__ = [
    "AMBIGUOUS",
    "SELECTING",
    "SYMBOLIC",
    "UNKNOWN",
    "Call",
    "ItemOf",
    "MethodCall",
    "Shadows",
    "builtin_call_hook",
    "constant_method_hook",
    "dunder_of_proxy",
    "float_floor_division",
    "folded",
    "handed_back",
    "invert_of_proxy",
    "negative_float_power",
    "proxy_shadow",
    "record_call_hook",
    "sequence_items",
    "shadow_of",
    "symnode_method_hook",
    "symnode_record_hook",
]


# -------------------------------------------------------------- traced values and the recorded call


class Call:
    """A Python-level call that made a traced value: ``fn(*args, **kwargs)`` with the
    arguments as traced (VariableTrackers)."""

    __slots__ = ("args", "fn", "kwargs")

    def __init__(self, fn: Any, args: list[Any], kwargs: dict[str, Any]) -> None:
        self.fn = fn
        self.args = args
        self.kwargs = kwargs


class MethodCall:
    """``obj.name(*args)`` as a callable of ``obj`` (a dunder call on a proxy)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, obj: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(obj, self.name)(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<method {self.name}>"


class ItemOf:
    """``fn(*args)[index]`` as a callable: one item of a tuple a call made (``divmod`` of a
    proxy compiled as a constant hands back a tuple of constants, each replayed by its own
    item of eager's call)."""

    __slots__ = ("fn", "index")

    def __init__(self, fn: Any, index: int) -> None:
        self.fn = fn
        self.index = index

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)[self.index]

    def __repr__(self) -> str:
        return f"<item {self.index} of {self.fn!r}>"


#: max/min return one of their arguments: which one is known only at run time.
SELECTING = frozenset({max, min})


#: the symbolic scalars a traced value's example value may be
SYMBOLIC = (torch.SymInt, torch.SymFloat, torch.SymBool)


def sequence_items(variable: Any) -> list[Any] | None:
    """The items of a traced list or tuple (None for anything else)."""
    if isinstance(variable, _torch.BaseListVariable) and variable.python_type() in (list, tuple):
        return list(variable.items)
    return None


# ------------------------------------------------------------------- recording, while Dynamo traces


def _symbolic(variable: Any) -> bool:
    variable = realized(variable)
    if isinstance(variable, _torch.SymNodeVariable):
        return True
    if isinstance(variable, _torch.BaseListVariable) and isinstance(variable.items, list):
        return any(_symbolic(item) for item in variable.items)
    return False


def _from_constant(state: Any, variable: Any) -> bool:
    """True for a constant made from a proxy, or computed from one (see ``_record``)."""
    variable = realized(variable)
    key = id(variable)
    for table in (state.writeback.constants, state.writeback.variable_calls):
        tagged = table.get(key)
        if tagged is not None and tagged[0] is variable:
            return True
    if isinstance(variable, _torch.BaseListVariable) and isinstance(variable.items, list):
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
    state = peek_state(getattr(tx.output, "shape_env", None))
    if state is None or not (state.writeback.origins or state.writeback.constants):
        return result
    if fn in SELECTING and result is state.writeback.selected and result is not None:
        # ``max``/``min`` traced as comparisons (``_decompositions._select``) hand back the
        # winning operand itself; the comparisons' guards fix which one, so it is the very
        # object eager returns: nothing to replay.
        state.writeback.selected = None
        return result
    operands = [*args, *kwargs.values()]
    if isinstance(result, _torch.ConstantVariable) and state.writeback.constants:
        # arithmetic on a proxy compiled as a constant (an int outside int64, a restart)
        if any(_from_constant(state, operand) for operand in operands):
            result = _copy_of(result)
            state.writeback.variable_calls[id(result)] = (
                result,
                Call(fn, list(args), dict(kwargs)),
            )
        return result
    items = sequence_items(result) if state.writeback.constants else None
    if items and all(isinstance(realized(i), _torch.ConstantVariable) for i in items):
        # a tuple of constants (``divmod`` of a specialized float): each item replays its
        # own item of eager's call, which holds proxies
        if any(_from_constant(state, operand) for operand in operands):
            copies = [_copy_of(realized(item)) for item in items]
            for index, copy in enumerate(copies):
                call = Call(ItemOf(fn, index), list(args), dict(kwargs))
                state.writeback.variable_calls[id(copy)] = (copy, call)
            result = result.clone(items=copies)
        return result
    if not isinstance(result, _torch.SymNodeVariable) or not any(_symbolic(o) for o in operands):
        return result
    call = Call(fn, list(args), dict(kwargs))
    node = result.as_proxy().node
    made = len(graph.nodes) - before
    if made > 0 and node.graph is graph:
        for candidate in itertools.islice(reversed(graph.nodes), made):
            if candidate is node:
                state.writeback.calls[node] = call  # the outermost call that made it wins
                state.writeback.node_shadows.pop(node, None)  # an inner call's shadow, if asked for
                return result
    # An existing value handed back unchanged (`pow(a, 1)`, `+a`): tag a copy of the
    # variable, so other uses of the value keep their meaning.
    result = _copy_of(result)
    state.writeback.variable_calls[id(result)] = (result, call)
    return result


def folded(tx: Any, result: Any, fn: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """``result`` of ``fn(*args, **kwargs)`` that Dynamo folded to constants (a ``math``
    function of a proxy compiled as a constant), recorded so that write-back replays
    ``fn`` on what eager holds (``math.floor`` of a ``DynamicFloat`` is a ``DynamicInt``);
    anything else is handed back as it is."""
    items = sequence_items(result)
    constants = [result] if items is None else [realized(i) for i in items]
    if not constants or not all(isinstance(c, _torch.ConstantVariable) for c in constants):
        return result
    graph = tx.output.graph
    return _record(tx, result, fn, args, kwargs, len(graph.nodes), graph)


def handed_back(tx: Any, operand: Any, fn: Any, args: list[Any]) -> Any:
    """``operand`` as the value ``fn(*args)`` made (Python hands the operand back: an
    int's ``math.floor``), recorded so that write-back replays ``fn`` as eager does."""
    graph = tx.output.graph
    return _record(tx, operand, fn, args, {}, len(graph.nodes), graph)


def builtin_call_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``BuiltinVariable.call_function(tx, args, kwargs)``: record the builtin
    (``max``, ``sum``, ``pow``, ``operator.iadd``, ...) that made a symbolic value."""
    tx, call_args, call_kwargs = kwargs["tx"], kwargs["args"], kwargs["kwargs"]
    graph = tx.output.graph
    before = len(graph.nodes)
    fixed = negative_float_power(tx, instance.fn, call_args)
    if fixed is None:
        fixed = float_floor_division(tx, instance.fn, call_args)
    if fixed is not None:
        call_args = fixed
        args, kwargs = (tx, fixed, call_kwargs), {}
    result = invert_of_proxy(tx, instance.fn, call_args)
    if result is None:
        result = wrapped(*args, **kwargs)
    return _record(tx, result, instance.fn, call_args, call_kwargs, before, graph)


def record_call_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``PolyfilledFunctionVariable.call_function(tx, args, kwargs)``: record the
    function Dynamo replaced by a polyfill (``sum``, ``math.prod``).  Inside
    ``dynscalar.disabled()`` also around ``BuiltinVariable.call_function``, where it only
    records: the call is traced as stock Dynamo traces it."""
    tx, call_args, call_kwargs = kwargs["tx"], kwargs["args"], kwargs["kwargs"]
    graph = tx.output.graph
    before = len(graph.nodes)
    result = wrapped(*args, **kwargs)
    return _record(tx, result, instance.fn, call_args, call_kwargs, before, graph)


def symnode_method_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``SymNodeVariable.call_method(tx, name, args, kwargs)``: record dunder calls
    (``a.__add__(1)``, ``a.__radd__(1)``) as calls of the proxy's own method."""
    tx, name = kwargs["tx"], kwargs["name"]
    call_args, call_kwargs = kwargs["args"], kwargs["kwargs"]
    graph = tx.output.graph
    before = len(graph.nodes)
    result = None if call_kwargs else dunder_of_proxy(tx, instance, name, call_args)
    if result is None:
        result = wrapped(*args, **kwargs)
    return _record(tx, result, MethodCall(name), [instance, *call_args], call_kwargs, before, graph)


def symnode_record_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Inside ``dynscalar.disabled()``, around ``SymNodeVariable.call_method``: record the
    dunder calls stock Dynamo traces (nothing is routed)."""
    tx, name = kwargs["tx"], kwargs["name"]
    call_args, call_kwargs = kwargs["args"], kwargs["kwargs"]
    graph = tx.output.graph
    before = len(graph.nodes)
    result = wrapped(*args, **kwargs)
    return _record(tx, result, MethodCall(name), [instance, *call_args], call_kwargs, before, graph)


def constant_method_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``ConstantVariable.call_method(tx, name, args, kwargs)``: record dunder calls
    on a constant that stands for a proxy (a marked value compiled as a constant: an int
    whose arithmetic leaves int64, a restart), as :func:`symnode_method_hook` does for a
    symbolic one: ``self.u = self.s.__rsub__(4)`` leaves a ``DynamicInt`` in eager (the
    long fuzzer profile, program 2617)."""
    result = wrapped(*args, **kwargs)
    name = kwargs["name"]
    if not (name.startswith("__") and name.endswith("__")):
        return result
    tx, call_args, call_kwargs = kwargs["tx"], kwargs["args"], kwargs["kwargs"]
    graph = tx.output.graph
    return _record(
        tx, result, MethodCall(name), [instance, *call_args], call_kwargs, len(graph.nodes), graph
    )


# ------------------------------------------ Python operators on proxies (the rules needing shadows)
# The rules (which operands of a ``pow`` or a float ``//`` to specialize, how ``~`` and a
# dunder are traced) are Python's operator semantics and live in ``_python``; what stays here
# needs to know whether eager holds a proxy for an operand (its shadow), and is applied while
# the recording hooks above trace the call.  They are not op rules (``dynscalar.ops``: torch
# ops taking a float, in plain torch): they rewrite Dynamo's VariableTrackers for Python
# operators on symbolic scalars.


def negative_float_power(tx: Any, fn: Any, operands: Any) -> list[Any] | None:
    """The operands to trace ``pow(t, 2)`` with, where ``t`` is a dynamic float that is
    negative now (None: the call as it is): ``_python.negative_power_operands``, as
    constants standing for what eager holds."""
    at = _python.negative_power_operands(fn, operands)
    if not at:
        return None
    fixed = list(operands)
    for i in at:
        fixed[i] = _specialized(tx, realized(fixed[i]))
    return fixed


def float_floor_division(tx: Any, fn: Any, operands: Any) -> list[Any] | None:
    """The operands to trace a float ``//`` (or ``divmod``) of a marked value with (None:
    the call as it is): ``_python.floor_division_operands``, as constants standing for
    what eager holds."""
    at = _python.floor_division_operands(tx, fn, operands)
    if not at:
        return None
    values = [realized(v) for v in operands]
    return [_specialized(tx, v) if i in at else v for i, v in enumerate(values)]


def _specialized(tx: Any, variable: Any) -> Any:
    """A symbolic value as the constant it holds now (a guard on the value); the constant
    stands for what eager holds: a proxy stays tracked for write-back."""
    shadow = shadow_of(tx, variable)
    made = _torch.ConstantVariable.create(variable.evaluate_expr(tx.output))
    if isinstance(shadow, DynamicScalar):
        state = peek_state(getattr(tx.output, "shape_env", None))
        if state is not None:
            origin = Origin("", shadow._self_spec, type(shadow))
            state.writeback.constants[id(made)] = (made, origin)
    return made


def invert_of_proxy(tx: Any, fn: Any, operands: Any) -> Any | None:
    """``operator.invert(a)`` of a proxy ``a``, traced (None: not such a call)."""
    if fn is not operator.invert or len(operands) != 1:
        return None
    operand = realized(operands[0])
    if not (isinstance(operand, _torch.SymNodeVariable) and proxy_shadow(tx, operand)):
        return None
    return _python.call_operator(tx, fn, list(operands))


def dunder_of_proxy(tx: Any, instance: Any, name: str, operands: Any) -> Any | None:
    """``instance.<name>(*operands)`` on a proxy, traced as the operator it stands for
    (None: another method, or not a proxy).

    A dunder call on a proxy (``a.__iadd__(2)``, ``a.__invert__()``, ``a.__radd__(1)``)
    runs the proxy's own operator, which computes what the operator syntax computes; an int
    or float lacks some of these methods and Dynamo would graph-break on them.  Dynamo
    itself implements some builtins as dunder calls (``round(a)`` calls ``a.__round__()``):
    those inner calls take Dynamo's own path.
    """
    found = _python.operator_for(name)
    state = peek_state(getattr(tx.output, "shape_env", None))
    key = (id(instance), name)
    if found is None or state is None or key in state.writeback.routing:
        return None
    if not proxy_shadow(tx, instance):
        return None
    function, reflected = found
    ordered = [*operands, instance] if reflected else [instance, *operands]
    state.writeback.routing.add(key)  # the operator's own dunder call takes Dynamo's path
    try:
        return _python.call_operator(tx, function, ordered)
    finally:
        state.writeback.routing.discard(key)


# ------------------------------------------------------------------------ shadows: what eager holds


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
