"""Build: a frame starts, a value becomes a variable (a symbol where it is marked, with its
guards and sources), ``torch._dynamo.reset()`` forgets it all.

The hook on ``VariableBuilder._wrap`` (:func:`wrap_hook`) decides which values become
symbolic graph inputs.

For every value Dynamo reads, before its own type dispatch:

1. a ``DynamicInt``/``DynamicFloat`` (any source: argument, attribute, global), or a plain
   int/float attribute of an ``nn.Module`` that is marked (instance mark, else class mark,
   else ``auto_dynamic``) becomes a SymInt/SymFloat input (:func:`wrap_int`,
   ``stages.aot.wrap_float``);
2. every int/float attribute of a module, marked or not, gets the mark-state guards of
   ``_guards``, so a graph is reused only for instances marked the way it was compiled;
3. a marked value that cannot be symbolic is either refused with a clear error (a bool,
   str, None or tensor in a marked attribute; an int outside int64 or outside ``min``/
   ``max``) or, for other int/float subclasses such as numpy scalars, compiled as a
   constant with a :class:`~dynscalar.SpecializationWarning`.

The effective spec: a mark on the attribute wins over the spec a proxy value
carries; an attribute without a mark (or whose instance opted out of a class mark) that
holds a proxy uses the proxy's spec.

Marked ints (:func:`wrap_int`; floats: ``stages.aot.wrap_float``) become backed or unbacked
SymInt graph inputs, with their ranges:

* backed (default): ``DimDynamic.DYNAMIC`` - no guard on the value unless control flow
  needs one, and then the guard is on the predicate;
* unbacked: ``DimDynamic.UNBACKED`` without torch's size-like constraint (which would
  reject negative values with "Guard failed on the same frame it was created");
* ``min``/``max``: ``ShapeEnv.constrain_symbol_range``; Dynamo turns that into a range
  guard, and a value outside the range re-enters the bridge, which raises.

A plain int is read through its own source (``L['self'].step``), exactly like torch's
``dynamic_sources``; a proxy through ``<source>.real`` (``_guards.plain_source``), guarded
to hold an exact ``int`` or a proxy of its class and spec (``_guards``): the graph computes
with the plain value, so a plain int found there later reuses it, unless write-back shows
the class (then it is guarded too).  ``wrap_symint`` puts ``TYPE_MATCH`` on the source it
reads, so the graph is only reused for an exact ``int`` value.

Examples:
    >>> from dynscalar._bridge.stages import build
    >>> build.wrap_hook.__name__
    'wrap_hook'
"""

from __future__ import annotations

import contextlib
import functools
import logging
import numbers
import os
import weakref
from collections.abc import Iterator
from typing import Any, NamedTuple

import torch

from ..._attrs import check_marked_value
from ..._auto import auto_spec
from ..._diagnostics import BridgeUnavailableWarning, DynscalarError, warn_once
from ..._marks import (
    ARG_MARKS_KEY,
    GROUP_MARKS_KEY,
    STATE_MARKS_KEY,
    auto_marked,
    group_holders,
    lookup_arg_mark,
    lookup_group_mark,
    lookup_mark,
    lookup_state_mark,
    wrapped_parameter,
)
from ..._proxy import DynamicInt, DynamicScalar
from ..._spec import INT64_MAX, INT64_MIN, DynamicSpec
from .. import _install, _properties, _state, _torch
from .._backends import backend_kind
from .._callers import caller_mark, records_made, resumed_code, star_names
from .._floats import restart_reason
from .._guards import (
    guard_function_marks,
    guard_mark_state,
    guard_proxy,
    guard_proxy_or_plain,
    plain_source,
    record_for_automatic_dynamic,
    source_name,
    swapped_source,
)
from .._install import ensure_phase, phase_problem
from .._properties import note_number_wrapped, property_mark
from .._reports import Label, passthrough, refuse, remember, user_line
from .._state import Origin, compile_state, lookup_state
from .._turned_off import note_strict
from .aot import wrap_float

log = logging.getLogger("dynscalar")

__all__ = [
    "builder_call_hook",
    "compile_start_hook",
    "floats_pending",
    "reset_hook",
    "size_constraint_hook",
    "unsized_gate",
    "wrap_degraded",
    "wrap_hook",
    "wrap_off",
    "wrap_plain",
]

# Attribute values whose owner is looked up in the mark store: the scalars themselves, and
# the types a mark must not sit on (so a bad mark fails clearly, not silently).
_CHECKED_TYPES = frozenset({int, float, bool, str, type(None)})


class _Found(NamedTuple):
    """A stored mark found for the value being wrapped (``spec`` None: unmarked)."""

    spec: DynamicSpec | None
    where: str  # for messages: "Net.step", "train_step(n)", "SGD.param_groups[0]['lr']"
    why: str


def _resolve(builder: Any, source: Any) -> Any:
    """The object ``source`` points to in the frame being traced (None if it has none).

    What ``OutputGraph.resolve_source_value`` returns, without its cost: that evaluates
    the source's whole chain anew with ``eval`` (one per level, ``L['self']._modules[
    'blocks']._modules['47']...``), for every attribute of every module.  Here objects are
    remembered (weakly) for the compile (``CompileState.lookups``: a trace never replaces the
    objects its frame reaches; it records mutations as side effects), and the usual levels
    - an attribute, a dict item, a module wrapper - are one ``getattr`` or subscript on the
    remembered parent.
    """
    output = builder.tx.output
    try:
        return _value_of(source, lookup_state(output.shape_env).lookups.owners, output)
    except Exception:  # noqa: BLE001 - then as Dynamo resolves it
        pass
    try:
        return output.resolve_source_value(source)
    except Exception:  # noqa: BLE001 - any source Dynamo cannot resolve is simply not ours
        return None


def _value_of(source: Any, cache: dict[Any, Any], output: Any) -> Any:
    ref = cache.get(source)
    value = ref() if ref is not None else None
    if value is not None:
        return value
    kind = type(source)
    if kind is _torch.AttrSource and "." not in source.member:
        value = getattr(_value_of(source.base, cache, output), source.member)
    elif kind is _torch.DictGetItemSource and type(source.index) in (str, int):
        value = _value_of(source.base, cache, output)[source.index]
    elif kind in _module_wrappers():  # same object, another guard source
        value = _value_of(source.base, cache, output)
    else:  # as Dynamo evaluates it
        value = output.resolve_source_value(source)
    # weakly: the compile's state outlives the trace, the user's modules must not; a value
    # without weakrefs (a module's ``_modules`` dict) is found again from its owner
    with contextlib.suppress(TypeError):
        cache[source] = weakref.ref(value)
    return value


@functools.cache
def _module_wrappers() -> frozenset[type]:
    return frozenset(
        {
            _torch.NNModuleSource,
            _torch.UnspecializedNNModuleSource,
            _torch.UnspecializedBuiltinNNModuleSource,
        }
    )


def _find_mark(builder: Any, value: Any, numeric: bool) -> _Found | None:
    """The mark for ``value``: the mark store's for where it is read from, else - for a
    number read while a marked property's getter is inlined - that property's
    (``_properties``).  Guards installed."""
    found = _find_stored_mark(builder, value, numeric)
    if numeric and (found is None or found.spec is None):
        marked = property_mark(builder)
        if marked is not None:
            return _Found(*marked)
    return found


def _find_stored_mark(builder: Any, value: Any, numeric: bool) -> _Found | None:
    """The mark store's mark for where ``value`` is read from, with its guards installed.

    Three places hold marks: a module's attributes (``mark_dynamic_attr``,
    ``@dynamic_attrs``, ``auto_dynamic``), the compiled frame's parameters
    (``mark_dynamic_args``) and an optimizer's param-group keys
    (``mark_dynamic_param_groups``).  None when the value is read from none of them.
    """

    source = builder.source
    kind = type(source)
    if kind is _torch.AttrSource:
        owner = _resolve(builder, source.base)
        name = source.member
        where = f"{type(owner).__name__}.{name}"
        if not isinstance(owner, torch.nn.Module):  # marks live on modules; the name helps
            return _Found(None, where, "") if owner is not None else None
        spec = lookup_mark(owner, name)
        why = "marked with mark_dynamic_attr or @dynamic_attrs"
        if spec is None and type(value) in (int, float):
            spec = auto_spec(owner, name, value)
            why = "auto_dynamic saw its value change"
        elif spec is not None and type(value) not in (int, float) and auto_marked(owner, name):
            # auto_dynamic marked the attribute for an int/float it saw change; a value it
            # would never have marked (a bool, str, None, tensor, proxy, numpy scalar) is
            # compiled as eager-equivalent stock torch would, not refused (the guards below
            # still see the mark, so the int/float graph is not reused for it).
            spec = None
        if numeric:  # after auto_spec: the guards describe the marks as this graph saw them
            guard_mark_state(builder.tx, source.base, owner, name)
        return _Found(spec, where, why)
    if not numeric:
        return None
    parameter = _parameter(builder, source)
    if parameter is not None:
        code, name = parameter
        self_obj, self_source = _frame_self(builder.tx)
        # the instance's argument marks, then the function's
        if not (
            isinstance(self_obj, torch.nn.Module)
            and guard_mark_state(builder.tx, self_source, self_obj, name, ARG_MARKS_KEY)
        ):
            guard_function_marks(builder.tx, code, name)
        where = f"{getattr(code, 'co_qualname', code.co_name)}({name})"  # co_qualname: 3.11+
        spec = lookup_arg_mark(code, name, self_obj)
        if spec is None:
            passed = _passed_marked(builder, value, where)
            if passed is not None:
                return passed
        return _Found(spec, where, "marked with mark_dynamic_args or @dynamic_args")
    if _is_input(source):  # L['args'][0] of a function without marks of its own
        passed = _passed_marked(builder, value, str(source.name))
        if passed is not None:
            return passed
    if kind is _torch.GetItemSource and type(source.base) is _torch.DictGetItemSource:
        key = source.base  # an element of a tuple hyperparameter: group["betas"][0]
        if isinstance(key.index, str) and isinstance(source.index, int):
            found = _param_group_mark(builder, key)
            if found is not None:
                return found._replace(where=f"{found.where}[{source.index}]")
        return None
    if kind is _torch.DictGetItemSource and isinstance(source.index, str):
        return _state_mark(builder, source) or _param_group_mark(builder, source)
    return None


def _passed_marked(builder: Any, value: Any, where: str) -> _Found | None:
    """An argument of the compiled frame that its compiled caller handed on, at a graph
    break, as a marked value (``_callers``: the call's record, by the place in the call
    the parameter was bound from): the caller's mark.  No guard checks the caller again:
    the graph is symbolic, correct for any value passed there."""
    if type(value) not in (int, float) or not records_made():
        return None
    tx = builder.tx
    code: Any = getattr(tx, "f_code", None)
    place = _place(builder.source, code) if code is not None else None
    start = _caller_of_compiled_frame(tx) if place is not None else None
    if place is None or start is None:
        return None
    found = caller_mark(code, getattr(tx, "f_locals", {}), place, start)
    if found is None:
        return None
    resumed = resumed_code(code)
    if resumed is not code and place[0] == "name":  # a local handed on to a resume function
        where = f"{getattr(resumed, 'co_qualname', resumed.co_name)}({place[1]})"
    # an unmarked value passed here later compiles as stock torch does: it has seen this one
    record_for_automatic_dynamic(builder, value)
    return _Found(found.spec, where, f"passed in as {found.where}, a marked value")


def _place(source: Any, code: Any) -> tuple[str, Any] | None:
    """Where an argument of the frame running ``code`` sits in its call: ``("name", n)``,
    ``("args", i)`` for ``L['args'][i]``, ``("kwargs", k)`` for ``L['kwargs']['k']``."""
    kind = type(source)
    if kind is _torch.LocalSource and source.is_input:
        return ("name", source.local_name)
    base: Any = getattr(source, "base", None)
    if type(base) is not _torch.LocalSource or not base.is_input:
        return None
    varargs, varkw = star_names(code)
    if kind is _torch.GetItemSource and base.local_name == varargs:
        return ("args", source.index) if isinstance(source.index, int) else None
    if kind is _torch.DictGetItemSource and base.local_name == varkw:
        return ("kwargs", source.index) if isinstance(source.index, str) else None
    return None


#: the bridge's files: its wrapper and hooks sit between Dynamo's frame callbacks
_BRIDGE = os.path.dirname(os.path.dirname(__file__)) + os.sep


def _caller_of_compiled_frame(tx: Any) -> Any:
    """The Python frame that called the frame Dynamo is compiling: the first frame out of
    Dynamo's frame callback (``convert_frame``'s ``__call__``, and the bridge's wrapper and
    hook around it), past the compiled frame itself where CPython links it already."""
    import sys

    callback = _torch.convert_frame.__file__
    frame: Any = sys._getframe(2)
    inner = None
    while frame is not None:
        if (
            inner is not None
            and inner.f_code.co_filename == callback
            and inner.f_code.co_name == "__call__"
            and frame.f_code.co_filename != callback
            and not frame.f_code.co_filename.startswith(_BRIDGE)
        ):
            break
        inner, frame = frame, frame.f_back
    if frame is not None and frame.f_code is tx.output.root_tx.f_code:
        frame = frame.f_back
    return frame


def _param_group_mark(builder: Any, source: Any) -> _Found | None:
    """The mark of ``optimizer.param_groups[i][key]`` (``source``), guards installed.

    Marks follow the param-group dicts (``dynscalar._optim``): the optimizer read through
    decides when it holds a mark for ``key``; otherwise an optimizer it holds over the
    same dict does (a wrapper's base optimizer), each guarded by its own marks entry."""

    groups = source.base
    if not (isinstance(groups, _torch.GetItemSource) and isinstance(groups.index, int)):
        return None
    found = _optimizer_of(builder, groups, "param_groups")
    if found is None:
        return None
    attribute, optimizer = found
    key = source.index
    where = f"{type(optimizer).__name__}.param_groups[{groups.index}][{key!r}]"
    why = "marked with mark_dynamic_param_groups"
    if guard_mark_state(builder.tx, attribute.base, optimizer, key, GROUP_MARKS_KEY):
        return _Found(lookup_group_mark(optimizer, key), where, why)
    group = _resolve(builder, groups)
    for path, holder in group_holders(optimizer, [group]) if isinstance(group, dict) else ():
        holder_source = attribute.base
        for name in path:
            holder_source = _torch.AttrSource(holder_source, name)
        if guard_mark_state(builder.tx, holder_source, holder, key, GROUP_MARKS_KEY):
            held_by = ".".join((type(optimizer).__name__, *path))
            return _Found(lookup_group_mark(holder, key), f"{where} (held by {held_by})", why)
    return _Found(None, where, why)


def _optimizer_of(builder: Any, item: Any, member: str) -> tuple[Any, Any] | None:
    """(the ``optimizer.<member>`` source, the optimizer) where ``item`` is an item read from
    an optimizer's ``member`` (``param_groups``, ``state``); None otherwise."""
    attribute = item.base
    if type(attribute) is not _torch.AttrSource or attribute.member != member:
        return None
    optimizer = _resolve(builder, attribute.base)
    return (attribute, optimizer) if isinstance(optimizer, torch.optim.Optimizer) else None


def _state_mark(builder: Any, source: Any) -> _Found | None:
    """The mark of a per-parameter state entry ``optimizer.state[p][name]`` (``source``),
    guards installed; None for a source of another shape.  The optimizer read through
    holds the mark: ``mark_dynamic_param_groups`` puts it on the optimizers it holds over
    the same param groups too (a wrapper shares its base optimizer's ``state``)."""
    entry = source.base
    found = (
        _optimizer_of(builder, entry, "state") if type(entry) is _torch.DictGetItemSource else None
    )
    if found is None:
        return None
    attribute, optimizer = found
    name = source.index
    where = f"{type(optimizer).__name__}.state[...][{name!r}]"
    guard_mark_state(builder.tx, attribute.base, optimizer, name, STATE_MARKS_KEY)
    return _Found(
        lookup_state_mark(optimizer, name),
        where,
        "marked with mark_dynamic_param_groups(state=...)",
    )


def _frame_self(tx: Any) -> tuple[Any, Any]:
    """The compiled frame's ``self`` and its source: ``L['self']``, or ``L['args'][0]`` in
    a decorator's ``wrapper(*args, **kwargs)`` around a method (transformers wraps its
    forwards so: ``deprecate_kwarg``'s ``wrapped_func``)."""

    f_locals = getattr(tx, "f_locals", {})
    if "self" in f_locals:
        return f_locals["self"], _torch.LocalSource("self", is_input=True)
    varargs = star_names(tx.f_code)[0]
    if varargs is not None and not tx.f_code.co_argcount:
        args = f_locals.get(varargs)
        if isinstance(args, tuple) and args and isinstance(args[0], torch.nn.Module):
            base = _torch.LocalSource(varargs, is_input=True)
            return args[0], _torch.GetItemSource(base, 0)
    return None, None


def _parameter(builder: Any, source: Any) -> tuple[Any, str] | None:
    """For an argument of the compiled frame: (code of the function it is a parameter of,
    parameter name).  Reads through a decorator's ``wrapper(self, *args, **kwargs)`` frame
    to the function it wraps (``_marks.wrapped_parameter``), takes ``kwargs['name']`` of a
    function with ``**kwargs`` as its parameter ``name``, and reads a resume function
    (Dynamo's frame after a graph break) as the function it resumes."""

    tx = builder.tx
    code = getattr(tx, "f_code", None)
    if code is None:
        return None
    code = resumed_code(code)
    place = _place(source, code)
    if place is None:
        return None
    kind, key = place
    if kind == "name":
        named = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        return (code, key) if key in named else None
    closure = getattr(tx, "closure", None)
    if kind == "args":
        return wrapped_parameter(code, position=key, closure=closure)
    found = wrapped_parameter(code, keyword=key, closure=closure)
    return found if found is not None else (code, key)


def _is_argument(source: Any) -> bool:
    """A value the compiled frame receives: ``L['n']``, ``L['args'][0]``, ``L['kwargs']['n']``."""

    return isinstance(source, _torch.LocalSource) or isinstance(
        getattr(source, "base", None), _torch.LocalSource
    )


def _is_input(source: Any) -> bool:
    """An argument the compiled frame is called with: ``L['n']``, ``L['args'][0]``,
    ``L['kwargs']['n']`` (not a local it made itself)."""

    if type(source) in (_torch.GetItemSource, _torch.DictGetItemSource):
        source = source.base
    return type(source) is _torch.LocalSource and bool(source.is_input)


def _is_number_subclass(kind: type) -> bool:
    """Real numbers other than exact int/float and bool: numpy scalars, IntEnum members, ..."""
    if kind is bool or kind is int or kind is float:
        return False
    if issubclass(kind, (int, float)):
        return True
    return kind.__module__ == "numpy" and issubclass(kind, numbers.Real)


def wrap_hook(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    value = kwargs["value"]
    kind = type(value)
    proxied = issubclass(kind, DynamicScalar)
    other_number = not proxied and _is_number_subclass(kind)
    numeric = proxied or kind is int or kind is float or other_number
    if not (numeric or kind in _CHECKED_TYPES or isinstance(value, torch.Tensor)):
        return wrapped(*args, **kwargs)
    if numeric:
        note_number_wrapped()
    found = _find_mark(instance, value, numeric)
    spec, where, why = found if found is not None else (None, str(instance.source.name), "")
    if spec is None and proxied:  # the attribute's mark wins over the value's own spec
        spec = value.spec
        why = f"the value is a {kind.__name__}"
    if spec is None:
        return wrapped(*args, **kwargs)

    if getattr(instance.tx, "export", False):
        return _specialize_for_export(wrapped, instance, value, spec, where)
    plain = value.__wrapped__ if proxied else value
    kind = type(plain)
    if _is_number_subclass(kind):
        name = f"{kind.__module__}.{kind.__qualname__}"
        store = "int" if isinstance(plain, numbers.Integral) else "float"
        reason = f"holds a {name} ({plain!r}); only Python int/float values follow the mark"
        return _compile_unmarked(wrapped, instance, value, spec, where, reason, store)
    if kind is int and not INT64_MIN <= plain <= INT64_MAX:
        reason = f"holds {plain}, outside the int64 range torch.compile can trace symbolically"
        return _compile_unmarked(wrapped, instance, value, spec, where, reason, "")
    restart = restart_reason(str(instance.source.name)) if kind is int else None
    if restart is not None:  # the AOT pass restarted this compile to specialize it
        return _compile_unmarked(wrapped, instance, value, spec, where, restart, "", constant=True)
    if kind is float and (spec.unbacked or spec.has_range):
        # unbacked and min/max describe ints: a float follows the proxy-arithmetic rule
        # (a float derived from a ranged or unbacked int is a backed dynamic float)
        spec = spec.for_float()
    try:
        check_marked_value(plain, spec, where)  # bad type or out of range: clear error here
    except DynscalarError as exc:
        raise passthrough(exc) from None
    label = Label(instance.source.name, where, instance.tx.output.root_tx)
    log.info("%s (value %r) becomes a symbolic graph input: %s", label, plain, why)
    if proxied and _is_argument(instance.source):
        record_for_automatic_dynamic(instance, plain)
    if isinstance(plain, float):
        problem = phase_problem("floats")  # the AOT hooks, applied at the first marked value
        if problem is not None:
            # The stock float path can bake a written value into inductor code
            # (pytorch#194976): compiled as an unmarked float is, with one warning.
            reason = f"the float path's torch internals moved ({problem})"
            return _compile_unmarked(wrapped, instance, value, spec, where, reason, "")
        return wrap_float(instance, value, spec, where, label)
    # the AOT hooks also turn a float pass failure on an unbacked int into a clear error
    if not ensure_phase("floats") and not spec.unbacked:
        warn_once(
            ("no-int64-guards",),
            "dynscalar: the AOT pass that guards int expressions against int64 overflow could "
            "not be installed on this torch; with inductor, marked ints near the int64 limits "
            "may overflow in compiled code.",
            BridgeUnavailableWarning,
        )
    return wrap_int(instance, value, spec, where, label)


def _compile_unmarked(
    wrapped: Any,
    builder: Any,
    value: Any,
    spec: DynamicSpec,
    where: str,
    reason: str,
    store: str,
    *,
    constant: bool = False,
) -> Any:
    """A marked value dynscalar cannot make symbolic, compiled like an unmarked value.

    numpy scalars, int/float subclasses and ints outside int64: torch's own path handles
    them exactly (a constant guarded by value and type, or for numpy scalars an
    unspecialized input), so the result is eager's, only not governed by the mark.  One
    ``SpecializationWarning``; ``strict=True`` raises ``SpecializationError`` instead.
    """
    message = (
        f"dynscalar: {where} is marked dynamic but {reason}, so torch.compile treats it like "
        "an unmarked value (it may specialize it: one compile per value)."
        + (f" Store {store}(value) instead." if store else "")
    )
    refuse(message, spec.strict, once=("unmarked", where, type(value)), location=user_line())
    # constant: not stock's path (automatic dynamic would make a changing value a SymInt)
    result = wrap_constant(builder, value) if constant else wrap_plain(wrapped, builder, value)
    if isinstance(value, DynamicScalar):  # write-back: eager arithmetic on it gives proxies
        state = compile_state(builder.tx.output.shape_env)
        origin = Origin(where, value._self_spec, type(value))
        state.writeback.constants[id(result)] = (result, origin)
    return result


def wrap_constant(builder: Any, value: Any) -> Any:
    """A constant guarded by value (``CONSTANT_MATCH``), as Dynamo builds for a static int;
    a proxy is read through ``<source>.__wrapped__``, with its class and spec guarded."""

    source = builder.source
    if isinstance(value, DynamicScalar):
        guard_proxy(source)
        source = _torch.AttrSource(source, "__wrapped__")
        value = value.__wrapped__
    with swapped_source(builder, source):
        builder.install_guards(_torch.GuardBuilder.CONSTANT_MATCH)
    return _torch.ConstantVariable.create(value=value, source=source)


def wrap_plain(wrapped: Any, builder: Any, value: Any) -> Any:
    """Stock handling (a constant with a guard) for a value; a proxy is read as its plain
    value through ``<source>.__wrapped__``, with its class guarded."""
    if not isinstance(value, DynamicScalar):
        return wrapped(value)

    guard_proxy(builder.source)
    with swapped_source(builder, _torch.AttrSource(builder.source, "__wrapped__")):
        return wrapped(value.__wrapped__)


def wrap_degraded(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """The hook on ``VariableBuilder._wrap`` when the bridge is not installed (its
    internals moved) and inside ``dynscalar.disabled()``: a proxy becomes its plain value,
    as stock torch compiles that value; anything else is left to Dynamo untouched.

    The value is remembered as read from a proxy (``_state.CompileState``), as
    :func:`_compile_unmarked` remembers a constant: inside ``disabled()`` write-back's hooks
    then store what eager stores (``self.step += 1`` leaves a ``DynamicInt``)."""
    value = kwargs["value"]
    if not isinstance(value, DynamicScalar):
        return wrapped(*args, **kwargs)
    try:
        result = wrap_plain(wrapped, instance, value)
    except ImportError:  # no AttrSource/guards: the value without a source swap
        return wrapped(value.__wrapped__)
    _remember_proxy(instance, value, result)
    return result


def _remember_proxy(builder: Any, value: DynamicScalar, result: Any) -> None:
    """Record that ``result`` (a constant, or the symbolic input torch's automatic dynamic
    made) was read from the proxy ``value``, for write-back."""
    try:
        state = compile_state(builder.tx.output.shape_env)
        origin = Origin(str(builder.source.name), value._self_spec, type(value))
        if isinstance(result, _torch.ConstantVariable):
            state.writeback.constants[id(result)] = (result, origin)
        elif isinstance(result, _torch.SymNodeVariable):
            state.writeback.origins[result.as_proxy().node] = origin
    except (ImportError, AttributeError):  # internals moved: the value is written back plain
        return


def wrap_off(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The hook on ``VariableBuilder._wrap`` in a frame the safety net compiles as stock
    torch does (``_safety``): :func:`wrap_degraded`, and a value marked ``strict=True`` (on
    its module attribute, or a proxy's own spec) makes the failure's report raise instead
    of warn, once the stock attempt has shown the failure was dynscalar's."""
    value = kwargs["value"]
    if isinstance(value, DynamicScalar | int | float) and not isinstance(value, bool):
        spec = _strict_spec(instance, value)
        if spec is not None and spec.strict:
            note_strict()
    return wrap_degraded(wrapped, instance, args, kwargs)


def _strict_spec(builder: Any, value: Any) -> DynamicSpec | None:
    """The mark of ``value`` as far as it can be read without Dynamo's help."""

    source = builder.source
    if type(source) is _torch.AttrSource:
        owner = _resolve(builder, source.base)
        if isinstance(owner, torch.nn.Module):
            spec = lookup_mark(owner, source.member)
            if spec is not None:
                return spec
    parameter = _parameter(builder, source) if _is_argument(source) else None
    if parameter is not None:  # an argument mark (the instance's, then the function's)
        spec = lookup_arg_mark(*parameter, _frame_self(builder.tx)[0])
        if spec is not None:
            return spec
    return value.spec if isinstance(value, DynamicScalar) else None


def _specialize_for_export(
    wrapped: Any, builder: Any, value: Any, spec: DynamicSpec, where: str
) -> Any:
    """torch.export (strict) cannot take a module attribute as a new graph input.

    The mark is honoured as a constant with a guard, like torch does for plain ints, and the
    user is told: the exported program is correct for this value only.  A ``strict=True``
    mark refuses to be specialized: :class:`~dynscalar.SpecializationError`.
    """
    plain = getattr(value, "value", value)
    message = (
        f"dynscalar: torch.export specializes {where} to {plain!r}; the exported program is "
        "valid for this value only. Pass the value as a tensor input (or an int input with "
        "torch.export dynamic_shapes) to keep it dynamic."
    )
    # every export: it is a one-off, and each program is specialized anew
    refuse(message, spec.strict, once=None, stacklevel=4)
    log.info("%s specialized for torch.export", where)
    return wrap_plain(wrapped, builder, value)


Args = tuple[Any, ...]
Kwargs = dict[str, Any]


def compile_start_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``ConvertFrameAssert.__call__`` (a frame about to compile), until the float phase is
    checked: check and apply it here, before any trace starts (its modules import
    ``torch._inductor``, still initializing when ``torch._dynamo`` is imported), so no
    patch ever goes in from inside a trace hook.  Its hooks on torch's symbolic arithmetic
    pass a gate first (``Private.gate``): a compile without a mark runs torch's code."""
    ensure_phase("floats")
    return wrapped(*args, **kwargs)


def floats_pending(instance: Any, args: Args, kwargs: Kwargs) -> bool:
    """The gate of :func:`compile_start_hook`: whether the float phase is still to apply."""
    return _install.floats_pending(instance, args, kwargs)


def unsized_gate(instance: Any, args: Args, kwargs: Kwargs) -> bool:
    """The gate of :func:`size_constraint_hook`: an unbacked marked int is being made."""
    state = _state.peek_state(instance, active=False)
    return state is not None and state.lookups.unsized


def size_constraint_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> None:
    """``ShapeEnv._constrain_range_for_size`` while an unbacked marked int is made
    (:func:`wrap_int`): skipped, the value is a scalar, not a size (no ``>= 0``)."""
    return None


def builder_call_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``VariableBuilder.__call__(value)``: a value read through a property getter is noted
    with the property (``_properties``)."""
    return _properties.builder_call_hook(wrapped, instance, args, kwargs)


def reset_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``torch._dynamo.reset()``: dynscalar's caches are reset with torch's (``_state``)."""
    return _state.reset_hook(wrapped, instance, args, kwargs)


# ---------------------------------------------------------------------------- marked ints
@contextlib.contextmanager
def _no_size_constraint(shape_env: Any) -> Iterator[None]:
    """Unbacked *scalars* are not sizes: torch's ``>= 0`` size constraint is skipped while
    one is made (:func:`size_constraint_hook`; the compile is not made active by it)."""
    lookups = lookup_state(shape_env).lookups
    lookups.unsized = True
    try:
        yield
    finally:
        lookups.unsized = False


def wrap_int(builder: Any, value: Any, spec: DynamicSpec, where: str, label: Label) -> Any:
    """A SymInt graph input for ``value`` (an exact int, or a ``DynamicInt``)."""

    proxied = isinstance(value, DynamicScalar)
    position = source = builder.source
    shape_env = builder.tx.output.shape_env
    if proxied:
        guard_proxy_or_plain(source, type(value), value._self_spec)
        source = plain_source(source)
        compile_state(shape_env).marks.read_through.add(source)
    plain = int(value.__wrapped__) if proxied else value
    dynamism = _torch.DimDynamic.UNBACKED if spec.unbacked else _torch.DimDynamic.DYNAMIC
    sizes = _no_size_constraint(shape_env) if spec.unbacked else contextlib.nullcontext()
    with swapped_source(builder, source), sizes:
        var = builder.wrap_symint(plain, dynamism=dynamism)
    sym_num = getattr(var, "sym_num", None)
    if sym_num is None:  # torch returned a constant (e.g. a constant source): exact, static
        return var
    symbol = sym_num.node.expr
    state = compile_state(shape_env)
    if state.ops.backend is None:
        state.ops.backend = backend_kind(builder.tx)
    if spec.unbacked:
        state.marks.unbacked[symbol] = label
    else:
        remember(
            shape_env,
            symbol,
            where,
            spec,
            label,
            source_name(position),
            builder.tx.output.root_tx.f_code,
        )
    state.writeback.origins[var.as_proxy().node] = (
        Origin(where, value.spec, DynamicInt, position) if proxied else Origin(where, spec, None)
    )
    if spec.has_range:
        lo = -_torch.int_oo if spec.min is None else spec.min
        hi = _torch.int_oo if spec.max is None else spec.max
        shape_env.constrain_symbol_range(symbol, compiler_min=lo, compiler_max=hi)
    log.debug(
        "%s -> %s %s (value %d, range [%s, %s])",
        label,
        "unbacked" if spec.unbacked else "backed",
        symbol,
        plain,
        spec.min,
        spec.max,
    )
    return var
