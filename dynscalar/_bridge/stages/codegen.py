"""Codegen: the bytecode Dynamo writes after the graph, where each value leaving the frame
is reconstructed as eager Python would hold it (write-back).

Codegen: what the generated code reconstructs in place of each value leaving the frame.

Two hooks run while Dynamo generates the code after the graph:
:func:`codegen_update_mutated_hook` (attributes assigned, and the lists, tuples and dicts
written back) and :func:`codegen_suffix_hook` (the return value, and the stack and live
locals handed on at a graph break).  Each value whose shadow is a proxy is put back as one
(``_Rebox``: built inline with C calls, or by :func:`~._rebox.rebox`, or reloaded where it
was read unchanged); each whose shadow is ambiguous is replayed (``_Replay``: the user's
``max``/``min`` run again on the eager objects after the graph).

What the generated code reconstructs in place of each stored value is planned once per
compile and the same VariableTracker is handed to every codegen pass: Dynamo counts
each one's uses in its first pass and keeps a value used twice in a temporary local in
the second (``PyCodegen.tempvars``), so a proxy stored in two places is one object, as
in eager.  A value replayed at run time (a ``max``/``min`` whose winner eager decides)
is computed once per pass into a local of its own and loaded from there by every later
use - as an item of a list, or as the operand of the next replayed call - so the code
grows with the number of replayed calls, never with the length of the chains behind them.

Examples:
    >>> from dynscalar._bridge.stages import codegen
    >>> codegen.codegen_suffix_hook.__name__
    'codegen_suffix_hook'
"""

from __future__ import annotations

from typing import Any

from ..._diagnostics import DynscalarError
from ..._proxy import DynamicInt, DynamicScalar, _alloc, _set_wrapped
from ..._spec import DynamicSpec
from .. import _rebox, _torch
from .._callers import RECORD_LOCAL, record_call
from .._guards import PLAIN_MEMBER
from .._state import peek_state, realized
from .._writeback import AMBIGUOUS, Call, Shadows, sequence_items

__all__ = [
    "codegen_suffix_hook",
    "codegen_update_mutated_hook",
]

_variable_classes: dict[str, type] = {}


class _Slot:
    """A value replayed at run time: the call that makes it, and the local holding it."""

    __slots__ = ("call", "name", "variable")

    def __init__(self, variable: Any, call: Call) -> None:
        self.variable = variable
        self.call = call
        self.name: str | None = None  # one local for every codegen pass of the compile


def _classes() -> dict[str, type]:
    """The VariableTrackers write-back puts in place of assigned values (built lazily)."""
    if _variable_classes:
        return _variable_classes

    class _Rebox(_torch.VariableTracker):  # type: ignore[misc]
        """Reconstructs as the proxy ``cls(<inner>, spec)`` eager code holds."""

        def __init__(self, inner: Any, cls: type, spec: DynamicSpec, same: bool) -> None:
            super().__init__()
            self.inner = inner
            self.cls = cls
            self.spec = spec
            self.same = same  # the proxy read unchanged: eager stores the very object

        def reconstruct(self, codegen: Any) -> None:
            _reconstruct_rebox(codegen, self.inner, self.cls, self.spec, self.same)

    class _Replay(_torch.VariableTracker):  # type: ignore[misc]
        """Reconstructs by running the user's call on the eager objects at run time."""

        def __init__(self, slot: _Slot, shadows: Shadows) -> None:
            super().__init__()
            self.slot = slot
            self.shadows = shadows

        def reconstruct(self, codegen: Any) -> None:
            _emit_replays(codegen, self.slot, self.shadows)

    _variable_classes.update(rebox=_Rebox, replay=_Replay)
    _rebox.skip_tracing()
    return _variable_classes


def _reconstruct_rebox(codegen: Any, inner: Any, cls: type, spec: DynamicSpec, same: bool) -> None:
    source: Any = getattr(inner, "source", None)
    plain_read = getattr(source, "member", None) in ("__wrapped__", PLAIN_MEMBER)
    if same and plain_read:
        # A proxy assigned unchanged (`self.a, self.b = self.b, self.a`): its value's
        # source is `<proxy>.real`.  Eager stores the very object: reload it.
        codegen(source.base)
        return
    if source is not None and not plain_read:
        # Any other source: rebox returns a proxy found there unchanged.
        key = _rebox.key_of(cls, spec)
        _rebox.resolve(key)  # the first call finds it
        codegen.add_push_null(lambda: codegen.load_import_from(_rebox.__name__, "rebox"))
        codegen(inner)
        codegen.append_output(codegen.create_load_const(key))
        codegen.extend_output(_torch.create_call_function(2, False))
        return
    _inline_rebox(codegen, inner, cls, spec.canonical())


def _inline_rebox(codegen: Any, inner: Any, cls: type, spec: DynamicSpec) -> None:
    """Emit what :func:`~._rebox.rebox` does, for a value the graph computed, as C calls only::

        obj = _alloc(cls); _set_wrapped(obj, int(<inner>)); obj._self_spec = spec; push obj

    (``float`` for a ``DynamicFloat``; ``int()``/``float()`` of an exact int/float returns
    it unchanged).  A call to ``rebox`` is a Python frame entered through Dynamo's frame
    callback; this is none.  ``__wrapped__`` is stored through its descriptor: wrapt's
    ``__setattr__`` would search every class of the proxy's MRO for the name first.
    """

    def load(value: Any) -> Any:  # an object in co_consts, as Dynamo loads its own helpers
        return codegen.create_load_const_unchecked(value)

    convert = int if cls is DynamicInt else float
    codegen.add_push_null(lambda: codegen.append_output(load(_set_wrapped)))  # [set]
    codegen.add_push_null(lambda: codegen.append_output(load(_alloc)))
    codegen.append_output(load(cls))
    codegen.extend_output(_torch.create_call_function(1, False))  # [set, obj]
    codegen.append_output(_torch.create_dup_top())
    codegen.extend_output(_torch.create_rot_n(4))  # [obj, set, obj] (set: callable and NULL)
    codegen.add_push_null(lambda: codegen.append_output(load(convert)))
    codegen(inner)
    codegen.extend_output(_torch.create_call_function(1, False))  # [obj, set, obj, value]
    codegen.extend_output(_torch.create_call_function(2, False))  # [obj, None]
    codegen.append_output(_torch.create_instruction("POP_TOP"))  # [obj]
    codegen.append_output(_torch.create_dup_top())
    codegen.append_output(load(spec))
    codegen.extend_output(_torch.create_swap(2))  # [obj, spec, obj]
    codegen.append_output(codegen.create_store_attr("_self_spec"))  # [obj]


def _plan(variable: Any, shadows: Shadows) -> Any | None:
    """What to reconstruct in place of an assigned ``variable`` (None: Dynamo's own),
    the same object for every pass of the compile."""
    planned = shadows.state.writeback.planned
    hit = planned.get(id(variable))
    if hit is not None and hit[0] is variable:
        return hit[1]
    plan = _make_plan(variable, shadows)
    planned[id(variable)] = (variable, plan)
    return plan


def _make_plan(variable: Any, shadows: Shadows) -> Any | None:
    call = shadows.call_of(variable)
    constant = id(variable) in shadows.constants
    if call is None and not constant and not isinstance(variable, _torch.SymNodeVariable):
        return None
    shadow = shadows.of_variable(variable)
    classes = _classes()
    if shadow is AMBIGUOUS or isinstance(shadow, DynamicScalar):
        # what is stored depends on the proxies read: their class is guarded
        shadows.guard_classes(variable)
    if shadow is AMBIGUOUS:
        return classes["replay"](_slot(variable, shadows), shadows)
    if isinstance(shadow, DynamicScalar):
        same = call is None and (constant or variable.as_proxy().node in shadows.origins)
        return classes["rebox"](variable, type(shadow), shadow._self_spec, same)
    return None  # plain (or not modelled): Dynamo reconstructs the plain value


def _slot(variable: Any, shadows: Shadows) -> _Slot:
    """The run-time replay of the value ``variable`` holds (one per value and compile)."""
    variable = realized(variable)
    unit = shadows.unit_of(variable)
    replays = shadows.state.writeback.replays
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


def _emit_replays(codegen: Any, root: _Slot, shadows: Shadows) -> None:
    """Push the object eager code holds for ``root``'s value: re-run the user's call
    (``max``, ``min``, and the arithmetic applied to their results) on the eager objects
    of its operands, after every replayed operand not yet computed in this pass, each
    once, into its local (post-order with an explicit stack: no recursion)."""
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
            codegen.extend_output(_torch.create_call_function(len(call.args), False))
            if slot.name is None:
                slot.name = codegen.new_var("dynscalar_replay")
            tempvars[slot] = slot.name
            codegen.append_output(codegen.create_store(slot.name))
    codegen.append_output(codegen.create_load(tempvars[root]))


def _ambiguous_operands(call: Call, shadows: Shadows) -> list[Any]:
    """The operands of ``call`` (items of list and tuple operands included) that are
    themselves replayed."""
    found: list[Any] = []
    pending = list(reversed(call.args))
    while pending:
        arg = realized(pending.pop())
        items = sequence_items(arg)
        if items is not None:
            pending.extend(reversed(items))
        elif shadows.of_variable(arg) is AMBIGUOUS:
            found.append(arg)
    return found


def _emit_operand(codegen: Any, arg: Any, shadows: Shadows) -> None:
    """Push the eager object of one operand of a replayed call: a replayed value from its
    local, a list or tuple item by item, anything else as write-back stores it."""
    arg = realized(arg)
    items = sequence_items(arg)
    if items is not None:
        for item in items:
            _emit_operand(codegen, item, shadows)
        op = "BUILD_LIST" if arg.python_type() is list else "BUILD_TUPLE"
        codegen.append_output(_torch.create_instruction(op, arg=len(items)))
        return
    if shadows.of_variable(arg) is AMBIGUOUS:
        slot = _slot(arg, shadows)
        codegen.append_output(codegen.create_load(codegen.tempvars[slot]))
        return
    codegen(_plan(arg, shadows) or arg)


def _replace_in(
    container: Any,
    shadows: Shadows,
    replaced: list[tuple[Any, Any, Any]],
    seen: set[int],
) -> None:
    """Put re-boxing variables in place of the proxy values held by ``container`` (a list,
    tuple or dict being written back), recursively; ``replaced`` records how to undo it."""
    if id(container) in seen:
        return
    seen.add(id(container))
    slots: Any
    if isinstance(container, _torch.BaseListVariable) and isinstance(container.items, list):
        slots = container.items
        keys: Any = range(len(slots))
    elif isinstance(container, _torch.ConstDictVariable) and isinstance(container.items, dict):
        slots = container.items
        keys = list(slots)
    else:
        return
    for key in keys:
        _replace_at(slots, key, shadows, replaced, seen)


def _replace_at(
    slots: Any, key: Any, shadows: Shadows, replaced: list[tuple[Any, Any, Any]], seen: set[int]
) -> None:
    """``slots[key]`` made what eager stores there: its plan, put in place and recorded in
    ``replaced`` (to be put back after codegen), else the values it holds, replaced."""
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
    for variable in side_effects._get_modified_vars():
        rebuilt = variable if type(variable) is _torch.ConstDictVariable else None
        if rebuilt is None:  # a dict subclass (defaultdict, OrderedDict): its inner dict
            inner = getattr(variable, "_base_vt", None)
            rebuilt = inner if type(inner) is _torch.ConstDictVariable else None
        if rebuilt is None or not rebuilt.should_reconstruct_all:
            continue
        source = rebuilt.source or variable.source
        if source is None:  # a dict the frame made: nothing to keep
            continue
        if source.guard_source is _torch.GuardSource.TEMP_LOCAL:
            # a dict Dynamo holds in a temporary local (``**kwargs`` handed on at a graph
            # break): no guard can read it, and no object outlives the call to keep keys of
            continue
        tx.output.guard_on_key_order.add(source)
        _torch.install_guard(source.make_guard(_torch.GuardBuilder.DICT_KEYS_MATCH))


def codegen_update_mutated_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``SideEffects.codegen_update_mutated(cg)``: the values written back (assigned
    attributes, and the items of lists, tuples and dicts they hold or that were mutated in
    place) become what eager Python would have stored."""
    cg = kwargs["cg"]
    state = peek_state(getattr(cg.tx.output, "shape_env", None))
    if state is None or not (state.writeback.origins or state.writeback.constants):
        return wrapped(*args, **kwargs)
    _guard_rebuilt_dicts(cg.tx, instance)
    shadows = Shadows(state)
    replaced: list[tuple[Any, Any, Any]] = []
    seen: set[int] = set()
    for assigned in instance.store_attr_mutations.values():
        for name in list(assigned):
            _replace_at(assigned, name, shadows, replaced, seen)
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
    tx, stack = kwargs["tx"], kwargs["stack_values"]
    state = peek_state(getattr(instance, "shape_env", None))
    if (
        state is None
        or not (state.writeback.origins or state.writeback.constants)
        or not stack
        or getattr(tx, "export", False)
    ):
        return wrapped(*args, **kwargs)
    record = record_call(tx, _marked_value(state))
    result = _hand_on(wrapped, kwargs, state)
    if record is not None and kwargs.get("log_side_effects"):  # the pass whose code is kept
        # the call made right after this code: the marked values it hands on (_callers)
        cg = kwargs["cg"]
        cg.append_output(cg.create_load_const_unchecked(record))
        cg.append_output(cg.create_store(instance.new_var(RECORD_LOCAL)))
    return result


def _marked_value(state: Any) -> Any:
    """``marked(variable)``: (spec, where) of a plain marked value itself (the graph input
    its mark made), None for anything else (a value computed from it, a proxy)."""

    def marked(variable: Any) -> tuple[DynamicSpec, str] | None:
        variable = realized(variable)
        if not isinstance(variable, _torch.SymNodeVariable):
            return None
        origin = state.writeback.origins.get(variable.as_proxy().node)
        if origin is None or origin.proxy is not None:
            return None
        return origin.spec, origin.where

    return marked


def _hand_on(wrapped: Any, kwargs: dict[str, Any], state: Any) -> Any:
    """The stack and locals handed on, as eager Python holds them (see the hook)."""
    stack = kwargs["stack_values"]
    shadows = Shadows(state)
    replaced: list[tuple[Any, Any, Any]] = []
    seen: set[int] = set()
    new_stack = list(stack)
    for index, value in enumerate(new_stack):
        new = _plan(value, shadows)
        if new is not None:
            new_stack[index] = new  # the hook's own list: nothing to put back
        else:
            _replace_in(value, shadows, replaced, seen)
    try:
        return wrapped(**{**kwargs, "stack_values": new_stack})
    finally:
        for slots, key, value in reversed(replaced):
            slots[key] = value
