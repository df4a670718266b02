"""Marks on properties: a mark on a property follows its getter to the values it reads.

``mark_dynamic_attr(model, "global_step")`` where ``global_step`` is a property (Lightning's
``LightningModule.global_step`` reads ``self.trainer.fit_loop....total.completed``):
Dynamo inlines the getter (``PropertyVariable.tp_descr_get_impl``) and reads the values it
returns through their own sources (``L['self'].progress.completed``), whose owner is a plain
object that carries no mark.  So the hook on ``tp_descr_get_impl`` keeps, per thread, the
stack of module properties being inlined; while one is active,

* every int/float the tracer wraps (``stages.build``) without a mark of its own gets the innermost
  marked property's mark (:func:`property_mark`), with the property's mark-state guards:
  the instance's marks entry for the property name, or its absence and the class marks
  along the MRO, exactly as for an attribute.  Unmarked properties of modules get those
  guards too, so a mark made after a compile takes effect at the next call;
* a value given the property's mark that the getter's own code then forces to one value
  (``return self.schedule[self.index]``: a list index) would only cost graphs stock torch
  does not compile, so the trace restarts with that value read as stock reads it
  (:func:`restart_if_forced_in_getter`); the element it selects keeps the mark;
* a number the frame already read as a constant, read again by a marked getter, comes
  back from Dynamo's cache without reaching ``stages.build``: the mark cannot change it, and
  :func:`builder_call_hook` says so once (``strict=True``: raises);
* the getter's result, when it is still lazy (Dynamo wraps a constant read lazily and
  realizes it where it is used, which is after the getter returned), is realized before
  the scope closes, so it is made while the property's mark is visible;
* a marked property whose result is still a constant number (computed with ``len()``, a
  literal, or read as a constant earlier in the frame) is reported: a
  :class:`~dynscalar.SpecializationWarning`, or with ``strict=True`` a
  :class:`~dynscalar.SpecializationError`; so is a marked property whose getter Dynamo
  cannot trace (a graph break inside it).  A mark never silently does nothing.

Marking a property never runs its getter (``_attrs`` validates statically): what the
getter reads, and what it returns, is learned here, while tracing.

What each marked property resolved to (the attribute chains made symbolic) is recorded in
the mark store for :func:`dynscalar.explain`; which source every module property's number
came from, per compiled code object, for the doctor (``READS``).
Nothing here realizes a variable Dynamo left lazy, except a marked property's number.
"""

from __future__ import annotations

import logging
import numbers
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from types import CodeType
from typing import Any, NamedTuple

import torch

from .. import _caches
from .._attrs import record_property_reads
from .._marks import lookup_mark
from .._proxy import DynamicScalar
from .._spec import DynamicSpec
from . import _torch
from ._floats import restart_frame, symbol_source_names
from ._guards import guard_mark_state
from ._reports import refuse, user_line
from ._state import compile_state

__all__ = [
    "PropertyRead",
    "builder_call_hook",
    "note_number_wrapped",
    "property_get_hook",
    "property_mark",
    "READS",
    "restart_if_forced_in_getter",
]

log = logging.getLogger("dynscalar")


class _Local(threading.local):
    """Per thread: the module properties whose getters are being inlined (innermost
    last), and how many numbers the ``VariableBuilder._wrap`` hook has met
    (:func:`note_number_wrapped`)."""

    def __init__(self) -> None:
        self.stack: list[_Scope] = []
        self.wrapped = 0


_local = _Local()


class PropertyRead(NamedTuple):
    """The module property through which compiled code read a number (for the doctor)."""

    owner_source: str  # Dynamo's expression for the module: "L['self']"
    cls: str  # the module's class name: "Lit"
    name: str  # the property: "global_step"


# compiled frame's code -> {source of a number a module property returned: that property},
# for every module property traced (marked or not): the doctor names a recompile on
# ``L['self'].progress.completed`` by the property user code reads it through.  Kept by the
# code object itself (code objects compare by value: an equal one is another function).
READS: _caches.ObjectKeyed[CodeType, dict[str, PropertyRead]] = _caches.ObjectKeyed()
_caches.register(READS.clear)


def _remember_read(tx: Any, scope: _Scope, result: Any) -> None:
    """Record which source the property's (numeric) result was read from; the outermost
    module property wins (it is recorded last)."""

    source = getattr(result, "source", None)
    if source is None:
        return
    realized, value = _peek(result)
    number = _is_number(value) or type(realized).__name__ == "SymNodeVariable"
    root = getattr(tx.output, "root_tx", None)
    code = getattr(root, "f_code", None)
    if not number or code is None:
        return
    read = PropertyRead(str(scope.owner_source.name), type(scope.owner).__name__, scope.name)
    READS.setdefault(code, {})[str(source.name)] = read


def _peek(result: Any) -> tuple[Any, Any]:
    """(the variable a getter returned, realized, and its ``value`` if it has one); (None,
    the value) while Dynamo keeps it lazy, read without realizing it."""
    if isinstance(result, _torch.LazyVariableTracker):
        if not result.is_realized():
            return None, result.peek_value()
        result = result.unwrap()
    return result, getattr(result, "value", None)


@dataclass
class _Scope:
    """A property of an ``nn.Module`` whose getter is being inlined."""

    output: Any  # the compile's OutputGraph: a scope answers only its own compile
    owner_source: Any
    owner: Any
    name: str
    descriptor: Any  # the property object whose getter is inlined
    reads: list[str] = field(default_factory=list)
    used: bool = False  # a value read inside was given this property's mark
    constant_reads: list[str] = field(default_factory=list)  # already constants: reported

    @property
    def where(self) -> str:
        return f"{type(self.owner).__name__}.{self.name}"


def _property_name(cls: type, descriptor: object) -> str | None:
    """The name under which ``cls`` (through its MRO) holds ``descriptor``."""
    fget = getattr(descriptor, "fget", None)
    guess = getattr(fget, "__name__", None)
    for klass in cls.__mro__:
        namespace = klass.__dict__
        if isinstance(guess, str) and namespace.get(guess) is descriptor:
            return guess
    for klass in cls.__mro__:
        for name, value in klass.__dict__.items():
            if value is descriptor:
                return name
    return None


def property_get_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``PropertyVariable.tp_descr_get_impl(tx, obj, owner)``: open a scope for a module's
    property while its getter is inlined (see module docstring)."""
    tx, obj = kwargs["tx"], kwargs.get("obj")
    owner = getattr(obj, "value", None)
    owner_source = getattr(obj, "source", None)
    if owner_source is None or not isinstance(owner, torch.nn.Module):
        return wrapped(*args, **kwargs)
    name = _property_name(type(owner), instance.descriptor)
    if name is None:
        return wrapped(*args, **kwargs)
    scope = _Scope(tx.output, owner_source, owner, name, instance.descriptor)
    stack = _local.stack
    stack.append(scope)
    try:
        try:
            result = wrapped(*args, **kwargs)
        except Exception as exc:
            _report_untraceable(scope, exc)
            raise
        spec = lookup_mark(owner, name)
        if spec is not None:
            _settle(scope, result, spec)
        try:
            _remember_read(tx, scope, result)
        except Exception:  # for the doctor only: never fail a compile
            log.debug("dynscalar: could not record what %s read", scope.where, exc_info=True)
    finally:
        stack.pop()
    return result


def _report_untraceable(scope: _Scope, exc: Exception) -> None:
    """A marked property whose getter Dynamo cannot trace (a graph break inside it): its
    value comes from eager code, not from the mark, so say so."""

    spec = lookup_mark(scope.owner, scope.name)
    if spec is None or not isinstance(exc, _torch.Unsupported):
        return
    reason = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    message = (
        f"dynscalar: {scope.where} is marked dynamic, but torch.compile cannot trace its "
        f"getter ({reason}); the getter runs eagerly at a graph break (or the compiled "
        "function falls back to eager), and the value it returns is not symbolic there. "
        "Make the getter traceable, or mark the attribute it reads instead."
    )
    once = ("property-trace", scope.where)
    refuse(message, spec.strict, once=once, location=user_line(), cause=exc)


def _settle(scope: _Scope, result: Any, spec: DynamicSpec) -> None:
    """Realize a lazy number the getter returned (inside the scope), then check that the
    marked property's value is symbolic, and record what it read."""

    realized, value = _peek(result)
    if realized is None and _is_number(value):
        result.realize()
        realized, value = _peek(result)
    if scope.used:
        record_property_reads(scope.owner, scope.name, tuple(dict.fromkeys(scope.reads)))
    # still lazy: not a number, looked at without realizing it (no guards of ours)
    if realized is not None and not isinstance(realized, _torch.ConstantVariable):
        return
    if not _is_number(value):  # a bool, str or None: the mark cannot take effect
        if not isinstance(value, (bool, str, type(None))):
            return  # an object, module, tensor...: not ours to judge here
        # A getter computes its value at every call: what it returns now is the program's
        # business, and eager code goes on with it (``y * self.flag``) or raises its own
        # error (``y * '33'``).  So the trace goes on as stock torch traces it, and the
        # user's error stays the user's (the long fuzzer profile, programs 944, 1703,
        # 3618, where this raised DynscalarTypeError); the mark says once that it did
        # nothing here.
        refuse(
            f"dynscalar: {scope.where} (a property) is marked dynamic but its getter "
            f"returned a {type(value).__name__} ({value!r}), not an int or float; the mark "
            "has no effect on it, and torch.compile treats it as stock torch does.",
            False,
            once=("property-not-a-number", scope.where, type(value)),
            location=user_line(),
        )
        return
    if scope.constant_reads:
        return  # told at the read (builder_call_hook)
    written = _written_earlier(scope)
    if written:
        names = ", ".join(f"self.{n}" for n in written)
        holder, _, attribute = written[0].rpartition(".")
        fix = (  # an object that is not a module holds a dynamic value instead
            f"model.{holder}.{attribute} = dynscalar.mark_dynamic(model.{holder}.{attribute})"
            if holder
            else f"mark_dynamic_attr(model, {attribute!r})"
        )
        why = (
            f"its getter reads {names}, which this forward assigned before reading the "
            "property: that is a value the compiled code computes, not one it is called "
            "with, and the attribute's own value when the call starts is compiled as "
            f"stock torch compiles it (one compile per value). Mark the attribute itself ({fix})"
        )
    elif getattr(realized, "source", None) is not None:
        why = (
            "the attribute it reads was already read as a constant earlier in the compiled "
            "code, so torch.compile specializes it (one compile per value). Read the "
            "property before the attribute, or mark the attribute itself"
        )
    else:
        why = (
            "its getter computed it without reading an int/float attribute. A literal (a "
            "default returned while something is not set up yet, like Lightning's "
            "global_step without a trainer) compiles once and needs nothing; a value from "
            "len() or another call recompiles for each new value: keep it in a plain "
            "attribute and mark that"
        )
    message = (
        f"dynscalar: {scope.where} is marked dynamic, but in compiled code its getter "
        f"returned a constant ({value!r}): {why}."
    )
    refuse(message, spec.strict, once=("property", scope.where), location=user_line())


def _written_earlier(scope: _Scope) -> list[str]:
    """Attributes that the getter's code names, of the property's module or of an object
    it holds under a name the getter reads (``self.sched.t``), and that the compiled frame
    assigned before the getter ran: Dynamo reads them from its pending side effects, never
    through the builder, so no mark reaches them.  Named as the getter reads them."""
    code = getattr(getattr(scope.descriptor, "fget", None), "__code__", None)
    mutations = getattr(getattr(scope.output, "side_effects", None), "store_attr_mutations", {})
    if code is None or not mutations:
        return []
    owners = {id(scope.owner): ""}
    for name in code.co_names:
        held = vars(scope.owner).get(name)
        if held is not None and not isinstance(held, numbers.Number):
            owners.setdefault(id(held), f"{name}.")
    return [
        f"{owners[id(value)]}{name}"
        for variable, stored in mutations.items()
        if id(value := getattr(variable, "value", None)) in owners
        for name in stored
        if name in code.co_names
    ]


def property_mark(builder: Any) -> tuple[DynamicSpec, str, str] | None:
    """The mark a number read now gets from the properties being inlined: (spec, where,
    why) of the innermost marked one, with the mark-state guards of every property scope
    up to it; None when no marked property is being inlined."""
    output = builder.tx.output
    for scope in reversed(_local.stack):
        if scope.output is not output:
            continue
        guard_mark_state(builder.tx, scope.owner_source, scope.owner, scope.name)
        spec = lookup_mark(scope.owner, scope.name)
        if spec is None:
            continue
        name = str(builder.source.name)
        if name in _forced_in_getters():
            return None  # the getter's own code forces it: compiled as stock compiles it
        compile_state(output.shape_env).marks.via_property.add(name)
        scope.used = True
        scope.reads.append(_relative(name, str(scope.owner_source.name)))
        why = f"read by the marked property {scope.where}"
        return spec, f"{scope.where} (a property)", why
    return None


def _marked_scope(output: Any) -> tuple[_Scope, DynamicSpec] | None:
    """The innermost marked property being inlined in the compile of ``output``."""
    for scope in reversed(_local.stack):
        if scope.output is output:
            spec = lookup_mark(scope.owner, scope.name)
            if spec is not None:
                return scope, spec
    return None


# ----------------------------------------------------------------------------- constants
def note_number_wrapped() -> None:
    """Called by the ``VariableBuilder._wrap`` hook for every number it meets (see
    :func:`builder_call_hook`)."""
    _local.wrapped += 1


def builder_call_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``VariableBuilder.__call__(value)``: while a marked property's getter is inlined, a
    number the compiled code already read as a constant earlier in the frame comes back
    from Dynamo's cache without reaching ``stages.build``, so the mark cannot make it symbolic:
    say so once (``strict=True``: raise), whatever the getter computes from it."""
    if not _local.stack:
        return wrapped(*args, **kwargs)
    value = kwargs["value"]
    if not _is_number(value):
        return wrapped(*args, **kwargs)
    before = _local.wrapped
    result = wrapped(*args, **kwargs)
    if _local.wrapped != before:
        return result  # made now, under the mark (or deliberately not)

    found = _marked_scope(instance.tx.output)
    if found is None or not isinstance(result, _torch.ConstantVariable):
        return result
    name = str(instance.source.name)
    if name in _forced_in_getters():
        return result  # the getter's own code forced it: read as stock torch reads it
    scope, spec = found
    source = _relative(name, str(scope.owner_source.name))
    if source in scope.constant_reads:
        return result
    scope.constant_reads.append(source)
    message = (
        f"dynscalar: {scope.where} is marked dynamic, but its getter reads {source} "
        f"({value!r}), which the compiled code already read as a constant earlier in the "
        "frame, so torch.compile specializes it (one compile per value) and the mark "
        "cannot change that. Read the property before reading that attribute directly, or "
        "mark the attribute itself."
    )
    once = ("property-constant", scope.where, source)
    refuse(message, spec.strict, once=once, location=user_line())
    return result


# ----------------------------------------------------------------------------- restarts
# (the compile's CompileContext, weakly; source names): values a marked getter's own code
# forced to one value in this compile (one CompileContext spans its restarted attempts,
# which read them as stock torch does; a new compile has a new one)
_forced: tuple[Callable[[], object], frozenset[str]] = (lambda: None, frozenset())


def _forced_in_getters() -> frozenset[str]:
    context, names = _forced
    if not names:
        return names
    current = _torch.CompileContext.try_get()
    return names if current is not None and context() is current else frozenset()


def restart_if_forced_in_getter(shape_env: Any, symbols: list[Any]) -> None:
    """Called when code forces ``symbols`` (ours) to one value.  When the code forcing
    them is a marked property's getter and the values got the property's mark there
    (``return self.schedule[self.i]``: ``i`` as a list index), the mark cannot keep them
    symbolic and would only cost extra graphs (a symbolic input, then torch's restarts),
    so the trace restarts with those values read as stock torch reads them: no warning, no
    graph stock would not compile.  Not inside a torch op (a fake-tensor call turns any
    exception into a graph break): there the value is specialized and reported as usual."""
    global _forced
    if not any(scope.output.shape_env is shape_env for scope in _local.stack):
        return
    state = compile_state(shape_env)
    names = {
        name
        for symbol in symbols
        for name in symbol_source_names(shape_env, symbol)
        if name in state.marks.via_property
    }
    if not names or _torch.is_in_torch_dispatch_mode():
        return
    context = _torch.CompileContext.try_get()
    if context is None:
        return
    _forced = (weakref.ref(context), _forced_in_getters() | names)
    log.info(
        "%s: forced to one value by a marked property's getter; read as stock torch reads it",
        ", ".join(sorted(names)),
    )
    restart_frame()


def _relative(source_name: str, owner_name: str) -> str:
    """``L['self'].progress.completed`` seen from ``L['self']``: ``self.progress.completed``."""
    if source_name.startswith(owner_name):
        return "self" + source_name[len(owner_name) :]
    return source_name


def _is_number(value: object) -> bool:
    """int, float, a proxy, or another real number (numpy scalars: the bridge compiles
    them as torch does and says so); not bool."""
    kinds = (int, float, DynamicScalar, numbers.Real)
    return isinstance(value, kinds) and not isinstance(value, bool)
