"""The hook on ``VariableBuilder._wrap``: which values become symbolic graph inputs.

For every value Dynamo reads, before its own type dispatch:

1. a ``DynamicInt``/``DynamicFloat`` (any source: argument, attribute, global), or a plain
   int/float attribute of an ``nn.Module`` that is marked (instance mark, else class mark,
   else ``auto_dynamic``) becomes a SymInt/SymFloat input (``_ints``/``_floats``);
2. every int/float attribute of a module, marked or not, gets the mark-state guards of
   ``_guards``, so a graph is reused only for instances marked the way it was compiled;
3. a marked value that cannot be symbolic is either refused with a clear error (a bool,
   str, None or tensor in a marked attribute; an int outside int64 or outside ``min``/
   ``max``) or, for other int/float subclasses such as numpy scalars, compiled as a
   constant with a :class:`~dynscalar.SpecializationWarning`.

The effective spec: a registry mark on the attribute wins over the spec a proxy value
carries; an attribute without a mark (or whose instance opted out of a class mark) that
holds a proxy uses the proxy's spec.
"""

from __future__ import annotations

import logging
import numbers
import warnings
from typing import Any

from .._args import ARG_MARKS_KEY, lookup_arg_mark
from .._auto import auto_spec
from .._diagnostics import DynscalarError, SpecializationError, SpecializationWarning, warn_once
from .._proxy import DynamicScalar
from .._registry import check_marked_value, lookup_mark
from .._spec import DynamicSpec
from ._floats import wrap_float
from ._guards import guard_mark_state, guard_marks_epoch, guard_proxy
from ._ints import wrap_int
from ._reports import instance_path, passthrough, user_location
from ._sources import swapped_source

log = logging.getLogger("dynscalar")

__all__ = ["wrap_hook", "wrap_plain"]

# Attribute values whose owner is looked up in the registry: the scalars themselves, and
# the types a mark must not sit on (so a bad mark fails clearly, not silently).
_CHECKED_TYPES = frozenset({int, float, bool, str, type(None)})


def _owner_and_name(builder: Any) -> tuple[Any, str] | None:
    """For an attribute source ``<base>.name`` return ``(owner object, name)``."""
    from torch._dynamo.source import AttrSource

    source = builder.source
    if type(source) is not AttrSource:
        return None
    try:
        owner = builder.tx.output.resolve_source_value(source.base)
    except Exception:  # noqa: BLE001 - any source Dynamo cannot resolve is simply not ours
        return None
    return owner, source.member


def _describe(
    builder: Any, owner_name: tuple[Any, str] | None, argument: tuple[Any, str, Any] | None
) -> str:
    if owner_name is not None:
        return f"{type(owner_name[0]).__name__}.{owner_name[1]}"
    if argument is not None:
        code, name = argument[0], argument[1]
        return f"{getattr(code, 'co_qualname', code.co_name)}({name})"  # co_qualname: 3.11+
    return str(builder.source.name)


def _argument(builder: Any) -> tuple[Any, str, Any] | None:
    """For a parameter of the compiled frame: ``(code, parameter name, its self or None)``."""
    from torch._dynamo.source import LocalSource

    source = builder.source
    if type(source) is not LocalSource or not source.is_input:
        return None
    tx = builder.tx
    code = getattr(tx, "f_code", None)
    if code is None:
        return None
    if source.local_name not in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]:
        return None
    self_obj = getattr(tx, "f_locals", {}).get("self")
    return code, source.local_name, self_obj


def _is_number_subclass(kind: type) -> bool:
    """Real numbers other than exact int/float and bool: numpy scalars, IntEnum members, ..."""
    if kind is bool or kind is int or kind is float:
        return False
    if issubclass(kind, (int, float)):
        return True
    return kind.__module__ == "numpy" and issubclass(kind, numbers.Real)


def wrap_hook(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    value = args[0] if args else kwargs["value"]
    kind = type(value)
    proxied = issubclass(kind, DynamicScalar)
    other_number = not proxied and _is_number_subclass(kind)
    numeric = proxied or kind is int or kind is float or other_number
    if not (numeric or kind in _CHECKED_TYPES or _is_tensor(value)):
        return wrapped(*args, **kwargs)
    owner_name = _owner_and_name(instance)
    mark: DynamicSpec | None = None
    why = "marked with mark_dynamic_attr or @dynamic_attrs"
    argument = _argument(instance) if owner_name is None and numeric else None
    if argument is not None:
        code, name, self_obj = argument
        mark = lookup_arg_mark(code, name, self_obj)
        why = "marked with mark_dynamic_args or @dynamic_args"
        if _is_module(self_obj):  # instance marks, then the function's (epoch)
            from torch._dynamo.source import LocalSource

            guard_mark_state(LocalSource("self", is_input=True), self_obj, name, ARG_MARKS_KEY)
        else:
            guard_marks_epoch()
    elif owner_name is not None and _is_module(owner_name[0]):
        owner, name = owner_name
        mark = lookup_mark(owner, name)
        if mark is None and (kind is int or kind is float):
            mark = auto_spec(owner, name, value)
            why = "auto_dynamic saw its value change"
        if numeric:
            # after auto_spec: the guards describe the marks as this graph saw them
            guard_mark_state(instance.source.base, owner, name)
    spec: DynamicSpec | None = mark
    if spec is None and proxied:
        spec = value.spec
        why = f"the value is a {kind.__name__}"
    if spec is None:
        return wrapped(*args, **kwargs)

    where = _describe(instance, owner_name, argument)
    if getattr(instance.tx, "export", False):
        return _specialize_for_export(wrapped, instance, value, where)
    plain = value.__wrapped__ if proxied else value
    if _is_number_subclass(type(plain)):
        return _specialize_subclass(wrapped, instance, value, spec, where)
    try:
        check_marked_value(plain, spec, where)  # bad type or out of range: clear error here
    except DynscalarError as exc:
        raise passthrough(exc) from None
    path = instance_path(instance.source.name)
    label = f"{path} ({where})" if path != where else where
    log.info("%s (value %r) becomes a symbolic graph input: %s", label, plain, why)
    if isinstance(plain, float):
        return wrap_float(instance, value, spec, where, label)
    return wrap_int(instance, value, spec, where, label)


def _specialize_subclass(
    wrapped: Any, builder: Any, value: Any, spec: DynamicSpec, where: str
) -> Any:
    """A marked attribute holding e.g. ``np.float64``: compiled like an unmarked value.

    dynscalar makes Python ``int``/``float`` values symbolic; torch's own path handles other
    number types exactly (as a constant guarded by value and type, or for numpy scalars as
    an unspecialized input), so the result is right, only not governed by the mark.
    """
    kind = type(value)
    message = (
        f"dynscalar: {where} is marked dynamic but holds a {kind.__module__}."
        f"{kind.__qualname__} ({value!r}); only Python int/float values follow the mark, so "
        "torch.compile treats it like an unmarked value of that type (it may specialize it: "
        f"one compile per value). Store {'int' if isinstance(value, numbers.Integral) else 'float'}"
        "(value) instead."
    )
    if spec.strict:
        raise passthrough(SpecializationError(message + " (strict=True on the mark)"))
    filename, lineno, _ = user_location()
    location = (filename, lineno) if lineno else None
    warn_once(("subclass", where, kind), message, SpecializationWarning, location=location)
    return wrap_plain(wrapped, builder, value)


def wrap_plain(wrapped: Any, builder: Any, value: Any) -> Any:
    """Stock handling (a constant with a guard) for a value; a proxy is read as its plain
    value through ``<source>.__wrapped__``, with its class guarded."""
    if not isinstance(value, DynamicScalar):
        return wrapped(value)
    from torch._dynamo.source import AttrSource

    guard_proxy(builder.source)
    with swapped_source(builder, AttrSource(builder.source, "__wrapped__")):
        return wrapped(value.__wrapped__)


def _specialize_for_export(wrapped: Any, builder: Any, value: Any, where: str) -> Any:
    """torch.export (strict) cannot take a module attribute as a new graph input.

    The mark is honoured as a constant with a guard, like torch does for plain ints, and the
    user is told: the exported program is correct for this value only.
    """

    log.info("%s specialized for torch.export", where)
    warnings.warn(  # every export: it is a one-off, and each program is specialized anew
        f"dynscalar: torch.export specializes {where} to {getattr(value, 'value', value)!r}; "
        "the exported program is valid for this value only. Pass the value as a tensor "
        "input (or an int input with torch.export dynamic_shapes) to keep it dynamic.",
        SpecializationWarning,
        stacklevel=4,
    )
    return wrap_plain(wrapped, builder, value)


def _is_tensor(value: object) -> bool:
    import torch

    return isinstance(value, torch.Tensor)


def _is_module(owner: object) -> bool:
    import torch

    return isinstance(owner, torch.nn.Module)
