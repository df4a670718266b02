"""The bridge: the only module that touches ``torch._dynamo`` internals.

Why it exists: Dynamo decides how to trace a Python value in ``VariableBuilder._wrap``.
Exact ``int`` attributes of a module become constants guarded by value (one compile per
value), and a wrapt proxy is not an exact type at all, so stock Dynamo fails on it
("No constant base type found in MRO").  The bridge wraps ``_wrap`` and, for a
``DynamicInt`` or a registry-marked int attribute, asks ``wrap_symint`` for a symbolic
graph input instead:

* backed (default): ``DimDynamic.DYNAMIC`` - no guard on the value unless control flow
  needs one, and then the guard is on the predicate;
* unbacked: ``DimDynamic.UNBACKED`` without torch's size-like constraint (which would
  reject negative values with "Guard failed on the same frame it was created");
* ``min``/``max``: ``ShapeEnv.constrain_symbol_range``; Dynamo turns that into a range
  guard, and a value outside the range re-enters the bridge, which raises ``ValueError``.

The symbol's source is ``DynamicScalarSource(attr_source)``, i.e. ``int(L['self'].step)``,
so guards and graph inputs read a plain int even when the attribute holds a proxy.

Write-back: after a compiled frame Dynamo stores mutated attributes with
``torch._dynamo.utils.object_setattr_ignore_descriptor`` (looked up at call time).  The
bridge replaces it with a version that re-wraps the plain result in the proxy class and
spec the attribute held before, so ``self.step += 1`` keeps a ``DynamicInt`` a
``DynamicInt``.  Registry-marked attributes need nothing: they stay plain ints.

Installation is lazy (a post-import hook on ``torch._dynamo``), idempotent and checks
the signatures it patches first; see :func:`install`.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import threading
import warnings
from collections.abc import Iterator
from typing import Any

import wrapt

from ._compat import MIN_TORCH, TORCH_SUPPORTED, TORCH_VERSION
from ._diagnostics import BridgeUnavailableWarning, SpecializationWarning, warn_once
from ._proxy import DynamicInt, DynamicScalar
from ._registry import check_marked_value, lookup_mark
from ._spec import DynamicSpec

log = logging.getLogger("dynscalar")

__all__ = ["BridgeError", "install", "is_installed"]


class BridgeError(RuntimeError):
    """The Dynamo internals dynscalar patches are missing or have a different shape."""


_lock = threading.RLock()
_installed = False
_fallback_installed = False

# name -> expected parameter names of the private callables the bridge relies on.
_EXPECTED_SIGNATURES: dict[str, tuple[str, ...]] = {
    "VariableBuilder._wrap": ("self", "value"),
    "VariableBuilder.wrap_symint": ("self", "value", "dynamism", "context"),
    "OutputGraph.resolve_source_value": ("self", "source"),
    "utils.object_setattr_ignore_descriptor": ("obj", "name", "value"),
    "ShapeEnv.constrain_symbol_range": ("self", "s", "compiler_min", "compiler_max"),
    "ShapeEnv._make_data_dependent_error": ("self", "expr", "unhinted_expr", "expr_sym_node_id"),
}


def _internals() -> dict[str, Any]:
    from torch._dynamo import output_graph, source, utils
    from torch._dynamo.variables import builder
    from torch.fx.experimental import symbolic_shapes

    return {
        "VariableBuilder._wrap": builder.VariableBuilder._wrap,
        "VariableBuilder.wrap_symint": builder.VariableBuilder.wrap_symint,
        "OutputGraph.resolve_source_value": output_graph.OutputGraph.resolve_source_value,
        "utils.object_setattr_ignore_descriptor": utils.object_setattr_ignore_descriptor,
        "ShapeEnv.constrain_symbol_range": symbolic_shapes.ShapeEnv.constrain_symbol_range,
        "ShapeEnv._make_data_dependent_error": symbolic_shapes.ShapeEnv._make_data_dependent_error,
        "DynamicScalarSource": source.DynamicScalarSource,
        "AttrSource": source.AttrSource,
    }


def check_internals() -> None:
    """Raise :class:`BridgeError` unless every patched internal has the expected shape."""
    if not TORCH_SUPPORTED:
        raise BridgeError(
            f"dynscalar needs torch>={MIN_TORCH}; torch {TORCH_VERSION} is installed."
        )
    try:
        found = _internals()
    except (ImportError, AttributeError) as exc:
        raise BridgeError(f"dynscalar: a torch._dynamo internal moved: {exc}") from exc
    for name, expected in _EXPECTED_SIGNATURES.items():
        func = inspect.unwrap(found[name])
        params = tuple(inspect.signature(func).parameters)
        if params != expected:
            raise BridgeError(
                f"dynscalar: torch {TORCH_VERSION} changed {name}{params}; the bridge was "
                f"written for {name}{expected}. Please report this with your torch version."
            )
    fields = getattr(found["DynamicScalarSource"], "__dataclass_fields__", {})
    if tuple(fields) != ("base", "is_int"):
        raise BridgeError(
            f"dynscalar: torch {TORCH_VERSION} changed DynamicScalarSource fields to "
            f"{tuple(fields)}; expected ('base', 'is_int')."
        )


def is_installed() -> bool:
    """True once the bridge is active in this process."""
    return _installed


def install() -> None:
    """Install the bridge into Dynamo (idempotent, thread-safe).

    Called automatically when ``torch._dynamo`` is imported; calling it by hand is only
    needed to surface a :class:`BridgeError` early.
    """
    global _installed
    with _lock:
        if _installed:
            return
        check_internals()
        from torch._dynamo import utils
        from torch._dynamo.variables import builder
        from torch.fx.experimental import symbolic_shapes

        wrapt.wrap_function_wrapper(builder.VariableBuilder, "_wrap", _wrap_hook)
        wrapt.wrap_function_wrapper(
            symbolic_shapes.ShapeEnv, "_make_data_dependent_error", _data_dependent_hook
        )
        original_setattr = utils.object_setattr_ignore_descriptor
        utils.object_setattr_ignore_descriptor = _make_setattr(original_setattr)
        _installed = True
        log.debug("dynscalar bridge installed into torch %s", TORCH_VERSION)


# --------------------------------------------------------------------------- tracing
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
    elif kind in _CHECKED_TYPES or isinstance(value, _tensor_type()):
        owner_name = _owner_and_name(instance)
        if owner_name is None:
            return wrapped(*args, **kwargs)
        spec = lookup_mark(*owner_name)
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
    if isinstance(value, float):
        raise NotImplementedError(
            f"dynscalar: {where} is a dynamic float; dynamic floats are not traced yet. "
            "Unmark it for now."
        )
    return _wrap_int(instance, int(value), spec, where)


def _specialize_for_export(wrapped: Any, builder: Any, value: Any, where: str) -> Any:
    """torch.export (strict) cannot take a module attribute as a new graph input.

    The mark is honoured as a constant with a guard, like torch does for plain ints, and the
    user is told: the exported program is correct for this value only.
    """
    from torch._dynamo.source import DynamicScalarSource

    warnings.warn(  # every export: it is a one-off, and each program is specialized anew
        f"dynscalar: torch.export specializes {where} to {getattr(value, 'value', value)!r}; "
        "the exported program is valid for this value only. Pass the value as a tensor "
        "input (or an int input with torch.export dynamic_shapes) to keep it dynamic.",
        SpecializationWarning,
        stacklevel=4,
    )
    if not isinstance(value, DynamicScalar):
        return wrapped(value)
    plain = value.__wrapped__
    attr_source = builder.source
    builder.source = DynamicScalarSource(attr_source, isinstance(plain, int))
    builder.name = builder.source.name
    try:
        return wrapped(plain)
    finally:
        builder.source = attr_source
        builder.name = attr_source.name


@contextlib.contextmanager
def _no_size_constraint(shape_env: Any) -> Iterator[None]:
    """Unbacked *scalars* are not sizes: skip torch's ``>= 0`` size constraint."""
    shape_env._constrain_range_for_size = lambda *args, **kwargs: None
    try:
        yield
    finally:
        del shape_env._constrain_range_for_size


def _wrap_int(builder: Any, value: int, spec: DynamicSpec, where: str) -> Any:
    from torch._dynamo.source import DynamicScalarSource
    from torch.fx.experimental.symbolic_shapes import DimDynamic
    from torch.utils._sympy.numbers import int_oo

    shape_env = builder.tx.output.shape_env
    attr_source = builder.source
    builder.source = DynamicScalarSource(attr_source, True)
    builder.name = builder.source.name
    try:
        if spec.unbacked:
            with _no_size_constraint(shape_env):
                var = builder.wrap_symint(value, dynamism=DimDynamic.UNBACKED)
        else:
            var = builder.wrap_symint(value, dynamism=DimDynamic.DYNAMIC)
    finally:
        builder.source = attr_source
        builder.name = attr_source.name
    symbol = var.sym_num.node.expr
    if spec.unbacked:
        shape_env.__dict__.setdefault(_UNBACKED_KEY, {})[symbol] = where
    if spec.has_range:
        lo = -int_oo if spec.min is None else spec.min
        hi = int_oo if spec.max is None else spec.max
        shape_env.constrain_symbol_range(symbol, compiler_min=lo, compiler_max=hi)
    log.debug(
        "%s -> %s %s (value %d, range [%s, %s])",
        where,
        "unbacked" if spec.unbacked else "backed",
        symbol,
        value,
        spec.min,
        spec.max,
    )
    return var


# Attribute values whose owner is looked up in the registry: the scalars themselves, and
# the types a mark must not sit on (so a bad decorator mark fails clearly, not silently).
_CHECKED_TYPES = frozenset({int, float, bool, str, type(None)})


def _tensor_type() -> type:
    import torch

    return torch.Tensor


_UNBACKED_KEY = "_dynscalar_unbacked_symbols"
_passthrough_types: dict[type, type] = {}


def _passthrough(exc: Exception) -> Exception:
    """Re-type ``exc`` so Dynamo re-raises it as is, with or without ``fullgraph``.

    Dynamo wraps unknown exceptions raised while tracing into ``InternalTorchDynamoError``,
    and treats ``UserError`` as a soft failure (the frame silently runs eagerly without
    ``fullgraph``), which would hide a range violation.  ``ConstraintViolationError`` is
    re-raised unchanged in both modes (torch/_dynamo/convert_frame.py, ``_compile``).  The
    returned exception is also a ``ValueError``/``TypeError``, so ``except ValueError``
    in user code still catches it.
    """
    from torch.fx.experimental.symbolic_shapes import ConstraintViolationError

    base = type(exc)
    cls = _passthrough_types.get(base)
    if cls is None:
        cls = type(base.__name__, (base, ConstraintViolationError), {"__module__": "dynscalar"})
        _passthrough_types[base] = cls
    return cls(str(exc))  # type: ignore[no-any-return]


def _data_dependent_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Name the marked attribute when torch cannot branch on an unbacked symbol."""
    error = wrapped(*args, **kwargs)
    ours = instance.__dict__.get(_UNBACKED_KEY)
    expr = args[0] if args else kwargs.get("expr")
    if not ours or expr is None or not error.args:
        return error
    names = sorted({ours[s] for s in getattr(expr, "free_symbols", ()) if s in ours})
    if names:
        hint = (
            f"dynscalar: {', '.join(names)} is marked unbacked=True, so torch.compile cannot "
            "branch on its value. Use fullgraph=False (the branch becomes a graph break), "
            "mark it backed (unbacked=False: one compile per branch taken), or express the "
            "branch with torch.where / torch.cond.\n"
        )
        error.args = (hint + str(error.args[0]), *error.args[1:])
    return error


# --------------------------------------------------------------------------- write-back
def _make_setattr(original: Any) -> Any:
    import torch._dynamo

    @torch._dynamo.disable  # runs between compiled frames; never trace it
    def object_setattr_ignore_descriptor(obj: Any, name: str, value: Any) -> None:
        try:
            old = object.__getattribute__(obj, "__dict__").get(name)
        except AttributeError:
            old = None
        if isinstance(old, DynamicScalar) and type(value) in (int, float):
            value = _rewrap(old, value)
        original(obj, name, value)

    object_setattr_ignore_descriptor.__wrapped_original__ = original  # type: ignore[attr-defined]
    return object_setattr_ignore_descriptor


def _rewrap(old: DynamicScalar, value: int | float) -> Any:
    """The plain value Dynamo wrote back, as the proxy eager would have produced."""
    from ._proxy import _derive

    if type(old) is DynamicInt and type(value) is int:
        return _derive(value, old.spec, same_variable=True)
    return _derive(value, old.spec)


def install_fallback() -> bool:
    """When the full bridge cannot be installed: specialize proxies instead of crashing.

    Stock Dynamo fails on a wrapt proxy ("No constant base type found in MRO"), so a
    proxy must still be turned into its plain value.  This needs only
    ``VariableBuilder._wrap(self, value)``; returns False if even that moved.
    """
    global _fallback_installed
    with _lock:
        if _fallback_installed or _installed:
            return True
        try:
            from torch._dynamo.variables import builder

            params = tuple(
                inspect.signature(inspect.unwrap(builder.VariableBuilder._wrap)).parameters
            )
        except (ImportError, AttributeError, TypeError, ValueError):
            return False
        if params != ("self", "value"):
            return False
        wrapt.wrap_function_wrapper(builder.VariableBuilder, "_wrap", _fallback_hook)
        _fallback_installed = True
        return True


def _fallback_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    value = args[0] if args else kwargs["value"]
    if not isinstance(value, DynamicScalar):
        return wrapped(*args, **kwargs)
    try:
        from torch._dynamo.source import DynamicScalarSource
    except ImportError:
        return wrapped(value.__wrapped__)
    plain = value.__wrapped__
    attr_source = instance.source
    instance.source = DynamicScalarSource(attr_source, isinstance(plain, int))
    instance.name = instance.source.name
    try:
        return wrapped(plain)
    finally:
        instance.source = attr_source
        instance.name = attr_source.name


def on_dynamo_import(_module: object) -> None:
    """Post-import hook for ``torch._dynamo``: install, or warn once why not."""
    try:
        install()
    except BridgeError as exc:
        degraded = install_fallback()
        warn_once(
            ("bridge",),
            f"{exc} dynscalar marks will be specialized like plain values (one compile per "
            "value); eager behaviour is unchanged."
            + (
                ""
                if degraded
                else " DynamicInt/DynamicFloat values cannot be compiled at all "
                "on this torch: pass int(x)/float(x) to compiled code."
            ),
            BridgeUnavailableWarning,
            stacklevel=3,
        )
