"""The hook on ``VariableBuilder._wrap``: which values become symbolic graph inputs."""

from __future__ import annotations

import logging
import warnings
from typing import Any

from .._auto import auto_spec
from .._diagnostics import SpecializationWarning
from .._proxy import DynamicScalar
from .._registry import check_marked_value, lookup_mark
from ._floats import _wrap_float
from ._ints import _wrap_int
from ._reports import _passthrough
from ._sources import _plain_source, _swapped_source

log = logging.getLogger("dynscalar")


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


def _describe(builder: Any, owner_name: tuple[Any, str] | None) -> str:
    if owner_name is not None:
        return f"{type(owner_name[0]).__name__}.{owner_name[1]}"
    return str(builder.source.name)


def _wrap_hook(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    value = args[0] if args else kwargs["value"]
    kind = type(value)
    if issubclass(kind, DynamicScalar):
        owner_name = _owner_and_name(instance)
        spec = value.spec
        why = f"the value is a {kind.__name__}"
    elif kind in _CHECKED_TYPES or isinstance(value, _tensor_type()):
        owner_name = _owner_and_name(instance)
        if owner_name is None:
            return wrapped(*args, **kwargs)
        spec = lookup_mark(*owner_name)
        why = "marked with mark_dynamic_attr or @dynamic_attrs"
        if spec is None and (kind is int or kind is float):
            spec = auto_spec(*owner_name, value)
            why = "auto_dynamic saw its value change"
        if spec is None:
            return wrapped(*args, **kwargs)
    else:
        return wrapped(*args, **kwargs)
    where = _describe(instance, owner_name)
    if getattr(instance.tx, "export", False):
        return _specialize_for_export(wrapped, instance, value, where)
    try:
        check_marked_value(value, spec, where)  # bad type or out of range: clear error here
    except (TypeError, ValueError) as exc:
        raise _passthrough(exc) from None
    if log.isEnabledFor(logging.DEBUG):
        log.debug("%s (value %r) becomes a symbolic graph input: %s", where, value, why)
    if isinstance(value, float):  # also True for a DynamicFloat (wrapt forwards __class__)
        return _wrap_float(instance, value, spec, where)
    return _wrap_int(instance, int(value), spec, where)


def _wrap_plain(wrapped: Any, builder: Any, value: Any) -> Any:
    """Stock handling (a constant with a guard) for a proxy's plain value: specialized."""
    if not isinstance(value, DynamicScalar):
        return wrapped(value)
    with _swapped_source(builder, _plain_source(builder, value)):
        return wrapped(value.__wrapped__)


def _specialize_for_export(wrapped: Any, builder: Any, value: Any, where: str) -> Any:
    """torch.export (strict) cannot take a module attribute as a new graph input.

    The mark is honoured as a constant with a guard, like torch does for plain ints, and the
    user is told: the exported program is correct for this value only.
    """

    warnings.warn(  # every export: it is a one-off, and each program is specialized anew
        f"dynscalar: torch.export specializes {where} to {getattr(value, 'value', value)!r}; "
        "the exported program is valid for this value only. Pass the value as a tensor "
        "input (or an int input with torch.export dynamic_shapes) to keep it dynamic.",
        SpecializationWarning,
        stacklevel=4,
    )
    return _wrap_plain(wrapped, builder, value)


# Attribute values whose owner is looked up in the registry: the scalars themselves, and
# the types a mark must not sit on (so a bad decorator mark fails clearly, not silently).
_CHECKED_TYPES = frozenset({int, float, bool, str, type(None)})


def _tensor_type() -> type:
    import torch

    return torch.Tensor
