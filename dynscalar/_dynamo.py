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
import importlib
import inspect
import logging
import math
import threading
import warnings
from collections.abc import Iterator
from typing import Any

import wrapt

from ._auto import auto_spec
from ._compat import MIN_TORCH, TORCH_SUPPORTED, TORCH_VERSION
from ._diagnostics import (
    BridgeUnavailableWarning,
    DynamicFloatSpecializedError,
    SpecializationError,
    SpecializationWarning,
    warn_once,
)
from ._proxy import DynamicScalar, _derive
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
    "ShapeEnv.evaluate_sym_node": ("self", "sym_node", "size_oblivious", "fallback_value"),
    "eval_frame.skip_code": ("code",),
}

# The float path needs more, in modules that import torch._inductor; importing those from
# the torch._dynamo post-import hook can hit a partially initialized module (torch.compile
# imports torch._inductor.standalone_compile, which imports torch._dynamo), so they are
# checked and patched at the first dynamic float Dynamo meets.
_FLOAT_SIGNATURES: dict[str, tuple[str, ...]] = {
    "VariableBuilder.wrap_symfloat": ("self", "value"),
    "VariableBuilder.install_guards": ("self", "guards"),
    "graph_compile.tensorify_python_scalars": ("gm", "shape_env", "fake_mode"),
    "autograd_cache.check_cacheable": ("gm",),
}

# Other private names the float path relies on (checked for existence only).
_FLOAT_NAMES = (
    "torch._functorch._aot_autograd.autograd_cache.BypassAOTAutogradCache",
    "torch._dynamo.exc.TensorifyScalarRestartAnalysis",
    "torch._dynamo.symbolic_convert.TensorifyState",
    "torch.fx.passes._tensorify_python_scalars.SUPPORTED_OPS",
    "torch.fx.passes._tensorify_python_scalars.SUPPORTED_METHOD_OPS",
    "torch._dynamo.config.specialize_float",
    "torch._dynamo.config.assume_static_by_default",
)


def _core_internals() -> dict[str, Any]:
    from torch._dynamo import eval_frame, output_graph, source, utils
    from torch._dynamo.variables import builder
    from torch.fx.experimental import symbolic_shapes

    return {
        "VariableBuilder._wrap": builder.VariableBuilder._wrap,
        "VariableBuilder.wrap_symint": builder.VariableBuilder.wrap_symint,
        "OutputGraph.resolve_source_value": output_graph.OutputGraph.resolve_source_value,
        "utils.object_setattr_ignore_descriptor": utils.object_setattr_ignore_descriptor,
        "ShapeEnv.constrain_symbol_range": symbolic_shapes.ShapeEnv.constrain_symbol_range,
        "ShapeEnv._make_data_dependent_error": symbolic_shapes.ShapeEnv._make_data_dependent_error,
        "ShapeEnv.evaluate_sym_node": symbolic_shapes.ShapeEnv.evaluate_sym_node,
        "DynamicScalarSource": source.DynamicScalarSource,
        "eval_frame.skip_code": eval_frame.skip_code,
    }


def _float_internals() -> dict[str, Any]:
    from torch._dynamo.variables import builder
    from torch._functorch._aot_autograd import autograd_cache, graph_compile

    return {
        "VariableBuilder.wrap_symfloat": builder.VariableBuilder.wrap_symfloat,
        "VariableBuilder.install_guards": builder.VariableBuilder.install_guards,
        "graph_compile.tensorify_python_scalars": graph_compile.tensorify_python_scalars,
        "autograd_cache.check_cacheable": autograd_cache.check_cacheable,
    }


def _check_signatures(found: dict[str, Any], expected: dict[str, tuple[str, ...]]) -> None:
    for name, params_expected in expected.items():
        params = tuple(inspect.signature(inspect.unwrap(found[name])).parameters)
        if params != params_expected:
            raise BridgeError(
                f"dynscalar: torch {TORCH_VERSION} changed {name}{params}; the bridge was "
                f"written for {name}{params_expected}. Please report this with your torch version."
            )


def check_internals() -> None:
    """Raise :class:`BridgeError` unless the int path's internals have the expected shape."""
    if not TORCH_SUPPORTED:
        raise BridgeError(
            f"dynscalar needs torch>={MIN_TORCH}; torch {TORCH_VERSION} is installed."
        )
    try:
        found = _core_internals()
    except (ImportError, AttributeError) as exc:
        raise BridgeError(f"dynscalar: a torch._dynamo internal moved: {exc}") from exc
    _check_signatures(found, _EXPECTED_SIGNATURES)
    fields = getattr(found["DynamicScalarSource"], "__dataclass_fields__", {})
    if tuple(fields) != ("base", "is_int"):
        raise BridgeError(
            f"dynscalar: torch {TORCH_VERSION} changed DynamicScalarSource fields to "
            f"{tuple(fields)}; expected ('base', 'is_int')."
        )


def check_float_internals() -> None:
    """Raise :class:`BridgeError` unless the float path's internals have the expected shape."""
    try:
        found = _float_internals()
    except (ImportError, AttributeError) as exc:
        raise BridgeError(f"dynscalar: a torch internal for dynamic floats moved: {exc}") from exc
    _check_signatures(found, _FLOAT_SIGNATURES)
    for dotted in _FLOAT_NAMES:
        module_name, _, attr = dotted.rpartition(".")
        try:
            owner = importlib.import_module(module_name)
        except ImportError as exc:
            raise BridgeError(f"dynscalar: torch {TORCH_VERSION} has no {module_name}") from exc
        if not hasattr(owner, attr):
            raise BridgeError(f"dynscalar: torch {TORCH_VERSION} has no {dotted}")


_float_hooks: BridgeError | bool = False


def _ensure_float_hooks(where: str) -> None:
    """Patch the AOT pipeline for dynamic floats, once, at the first float Dynamo meets."""
    global _float_hooks
    with _lock:
        if _float_hooks is False:
            try:
                check_float_internals()
            except BridgeError as exc:
                _float_hooks = exc
            else:
                from torch._functorch._aot_autograd import autograd_cache, graph_compile

                # module globals, looked up at call time by the AOT pipeline
                wrapt.wrap_function_wrapper(
                    graph_compile, "tensorify_python_scalars", _tensorify_hook
                )
                wrapt.wrap_function_wrapper(
                    autograd_cache, "check_cacheable", _check_cacheable_hook
                )
                _float_hooks = True
        if isinstance(_float_hooks, BridgeError):
            # The stock float path can bake a written value into inductor code
            # (pytorch#194976): refuse rather than risk wrong numbers.
            raise _passthrough(
                NotImplementedError(
                    f"{_float_hooks} {where} is a dynamic float, which cannot be compiled "
                    "exactly on this torch; unmark it or pass float(value)."
                )
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
        wrapt.wrap_function_wrapper(
            symbolic_shapes.ShapeEnv, "evaluate_sym_node", _evaluate_sym_node_hook
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


@contextlib.contextmanager
def _swapped_source(builder: Any, source: Any) -> Iterator[None]:
    """Let ``builder`` read the value through ``source`` for one call, then restore it."""
    original = builder.source
    builder.source = source
    builder.name = source.name
    try:
        yield
    finally:
        builder.source = original
        builder.name = original.name


def _plain_source(builder: Any, value: Any) -> Any:
    """A source that yields the plain int/float of a proxy: ``int(x)`` or ``x.__wrapped__``."""
    from torch._dynamo.source import AttrSource, DynamicScalarSource

    if isinstance(value.__wrapped__, int):
        return DynamicScalarSource(builder.source, True)
    return AttrSource(builder.source, "__wrapped__")  # DynamicScalarSource would call int()


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
    with _swapped_source(builder, DynamicScalarSource(builder.source, True)):
        if spec.unbacked:
            with _no_size_constraint(shape_env):
                var = builder.wrap_symint(value, dynamism=DimDynamic.UNBACKED)
        else:
            var = builder.wrap_symint(value, dynamism=DimDynamic.DYNAMIC)
    symbol = var.sym_num.node.expr
    if spec.unbacked:
        shape_env.__dict__.setdefault(_UNBACKED_KEY, {})[symbol] = where
    else:
        _remember(shape_env, symbol, where, spec)
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
_SYMBOLS_KEY = "_dynscalar_symbols"


def _remember(shape_env: Any, symbol: Any, where: str, spec: DynamicSpec) -> None:
    """Record a backed symbol made for a marked scalar (read by _evaluate_sym_node_hook)."""
    shape_env.__dict__.setdefault(_SYMBOLS_KEY, {})[symbol] = (where, spec)


def _evaluate_sym_node_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Detect code that forces a marked scalar to one concrete value.

    ``int(sym)``, ``range(sym)``, list indexing and string formatting all end in
    ``SymNode.guard_int``/``guard_float`` -> ``ShapeEnv.evaluate_sym_node`` on an int/float
    expression; the result is a guard fixing the symbol to its current value.  Control flow
    (``if step % 2 == 0``) evaluates a *bool* expression: a guard on a predicate, not a
    specialization, so it is ignored here.
    """
    ours = instance.__dict__.get(_SYMBOLS_KEY)
    if ours:
        sym_node = args[0] if args else kwargs["sym_node"]
        expr = sym_node.expr
        if sym_node.pytype is not bool and not getattr(expr, "is_number", True):
            hits = [ours[s] for s in expr.free_symbols if s in ours]
            if hits:
                _report_specialization(hits, sym_node.hint)
    return wrapped(*args, **kwargs)


def _user_location() -> tuple[str, int, str]:
    from torch._guards import TracingContext

    try:
        frames = TracingContext.extract_stack()
    except Exception:  # noqa: BLE001 - no tracing context: no location, still report
        frames = []
    if not frames:
        return ("<unknown>", 0, "")
    frame = frames[-1]
    return (frame.filename, frame.lineno or 0, (frame.line or "").strip())


def _report_specialization(hits: list[tuple[str, DynamicSpec]], value: object) -> None:
    filename, lineno, line = _user_location()
    if not lineno:
        # No user frame: a backend pass (e.g. the float-tensorify pass) is evaluating the
        # symbol, not user code.  _tensorify_hook reports those cases itself.
        return
    names = sorted({where for where, _ in hits})
    code = f" (`{line}`)" if line else ""
    message = (
        f"dynscalar: {', '.join(names)} is forced to one value ({value!r}) at "
        f"{filename}:{lineno}{code}; torch.compile now guards on its exact value and "
        "recompiles for each new one. Keep it symbolic: use a tensor op instead of Python "
        "(torch.arange(n) instead of range(n)), avoid int()/float(), f-strings and list "
        "indexing on it inside the compiled region, or move that code out of it."
    )
    if any(spec.strict for _, spec in hits):
        raise _passthrough(SpecializationError(message + " (strict=True on the mark)"))
    # once per attribute and code location (several attributes: the first one not yet seen)
    for where in names:
        key = ("specialized", where, filename, lineno)
        warn_once(key, message, SpecializationWarning, location=(filename, lineno))


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


# --------------------------------------------------------------------------- floats
_FLOAT_KEY = "_dynscalar_float_symbols"


def _wrap_float(builder: Any, value: Any, spec: DynamicSpec, where: str) -> Any:
    """A marked float as a backed SymFloat (unbacked specs never get here: check_float)."""
    import torch
    import torch._dynamo.config as dynamo_config
    from torch._dynamo.guards import GuardBuilder
    from torch._dynamo.source import AttrSource

    _ensure_float_hooks(where)
    proxied = isinstance(value, DynamicScalar)
    plain = float(value.__wrapped__) if proxied else float(value)
    source = builder.source
    if proxied:
        # Next call must still hold a DynamicFloat; then read the plain float through
        # wrapt's `__wrapped__` attribute: a plain AttrSource, so guards (GetAttrGuardAccessor)
        # and the graph-arg fetch `torch._as_tensor_fullprec(L['v'].__wrapped__)` both work.
        builder.install_guards(GuardBuilder.TYPE_MATCH)
        source = AttrSource(source, "__wrapped__")
    # wrap_symfloat returns a constant unless both are off (builder.py:3298-3316); the
    # patch is scoped to this one call and restored on exit.
    config = dynamo_config.patch(specialize_float=False, assume_static_by_default=False)
    with _swapped_source(builder, source), config:
        var = builder.wrap_symfloat(plain)
    sym = getattr(var, "sym_num", None)  # ConstantVariable for NaN/inf: no symbol
    if isinstance(sym, torch.SymFloat):
        shape_env = builder.tx.output.shape_env
        table = shape_env.__dict__.setdefault(_FLOAT_KEY, {})
        for s in sym.node.expr.free_symbols:
            table[s] = where
            _remember(shape_env, s, where, spec)
    elif math.isfinite(plain):
        # wrap_symfloat still returns a constant under inductor cudagraphs, its killswitch,
        # constant sources or functorch grad tracking: exact, but one compile per value.
        warn_once(
            ("constant-float", where),
            f"dynscalar: torch specialized the dynamic float {where} to {plain!r} (it does so "
            "under inductor CUDA graphs, mode='reduce-overhead', and inside torch.func "
            "transforms); results are exact but each new value recompiles.",
            SpecializationWarning,
        )
    log.debug("%s -> %s (value %r)", where, type(var).__name__, plain)
    return var


def _scalar_tensor_prepass(gm: Any, shape_env: Any, fake_mode: Any) -> int:
    """``scalar_tensor(f(s))`` -> ``mul.Tensor(scalar_tensor(1.0), f(s))`` for our float symbols.

    Dynamo returns a float computed in the graph (``self.scale = self.scale * 0.9``) as
    ``torch.scalar_tensor(sym, dtype=float64)`` + ``.item()`` in bytecode (codegen.py:323-344).
    The tensorify pass has no rule for ``scalar_tensor``, so its final sweep burns the value in
    with ``guard_scalar`` (_tensorify_python_scalars.py:402-430).  ``mul.Tensor`` with a
    SymFloat operand is lowered by the pass, and ``x * 1.0 == x`` exactly (NaN, inf, -0.0).
    """
    import torch
    from torch.utils._sympy.symbol import SymT, symbol_is_type

    ours = shape_env.__dict__.get(_FLOAT_KEY) if shape_env is not None else None
    if not ours:
        return 0
    aten = torch.ops.aten
    graph = gm.graph
    count = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not aten.scalar_tensor.default:
            continue
        arg = node.args[0] if node.args else None
        sym = arg.meta.get("val") if isinstance(arg, torch.fx.Node) else None
        out = node.meta.get("val")
        if not isinstance(sym, torch.SymFloat) or out is None:
            continue
        free = sym.node.expr.free_symbols
        if not free or not all(symbol_is_type(s, SymT.FLOAT) for s in free):
            continue
        if not any(s in ours for s in free) or out.dtype not in (torch.float32, torch.float64):
            continue
        kwargs = dict(node.kwargs)
        with graph.inserting_before(node):
            one = graph.call_function(aten.scalar_tensor.default, (1.0,), kwargs)
            prod = graph.call_function(aten.mul.Tensor, (one, arg))
        with fake_mode:
            one.meta["val"] = aten.scalar_tensor.default(1.0, **kwargs)
            prod.meta["val"] = aten.scalar_tensor.default(1.0, **kwargs)
        node.replace_all_uses_with(prod)
        graph.erase_node(node)
        count += 1
    if count:
        graph.lint()
        gm.recompile()
    return count


def _unsupported_uses(gm: Any, ours: dict[Any, str]) -> list[str]:
    """Ops taking a SymFloat over our symbols that the pass cannot lower (error text only)."""
    import torch
    from torch.fx.passes import _tensorify_python_scalars as tps

    found = set()
    for node in gm.graph.nodes:
        if node.op not in ("call_function", "call_method"):
            continue
        table = tps.SUPPORTED_OPS if node.op == "call_function" else tps.SUPPORTED_METHOD_OPS
        if node.target in table or not hasattr(node.meta.get("val"), "dtype"):
            continue
        for a in (*node.args, *node.kwargs.values()):
            v = a.meta.get("val") if isinstance(a, torch.fx.Node) else None
            if isinstance(v, torch.SymFloat) and any(s in ours for s in v.node.expr.free_symbols):
                found.add(str(node.target))
                break
    return sorted(found)


def _tensorify_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    def split(gm: Any, shape_env: Any, fake_mode: Any) -> tuple[Any, Any, Any]:
        return gm, shape_env, fake_mode

    gm, shape_env, fake_mode = split(*args, **kwargs)
    ours = shape_env.__dict__.get(_FLOAT_KEY) if shape_env is not None else None
    if not ours:
        return wrapped(*args, **kwargs)
    from torch._dynamo.exc import TensorifyScalarRestartAnalysis

    _scalar_tensor_prepass(gm, shape_env, fake_mode)
    ops = _unsupported_uses(gm, ours)
    n_guards = len(shape_env.guards)
    try:
        result = wrapped(*args, **kwargs)
    except TensorifyScalarRestartAnalysis:
        # exact, but torch re-traces with the value specialized: one compile per value
        from torch._dynamo.symbolic_convert import TensorifyState

        names = sorted({w for s, w in ours.items() if TensorifyState.should_specialize(str(s))})
        if names:
            # Exact results, but one compile per value from now on; torch >= 2.15 takes this
            # path where 2.13/2.14 baked the value in (the pytorch#194976 fix).
            warn_once(
                ("tensorify", *names, *ops),
                f"dynscalar: {', '.join(names)} is used by {', '.join(ops) or 'an op'}, which "
                "torch.compile cannot keep symbolic; torch specializes it (exact results, one "
                "compile per value). Pass a 0-d tensor to that op to keep it dynamic.",
                SpecializationWarning,
            )
        raise
    baked = sorted(
        {ours[s] for g in shape_env.guards[n_guards:] for s in g.expr.free_symbols if s in ours}
    )
    if baked:
        raise DynamicFloatSpecializedError(
            f"dynscalar: dynamic float {', '.join(baked)} is used by "
            f"{', '.join(ops) or 'an operation'}, which torch.compile cannot keep symbolic "
            "together with its other uses; torch would bake the current value into the compiled "
            "code (pytorch#194976: wrong results with inductor). Pass the value as a 0-d tensor "
            "for that op (e.g. x.clamp(max=torch.tensor(scale))), or unmark it."
        )
    return result


# AOTAutograd cache bypass for graphs with a dynscalar float input.  The AOTAutograd cache
# key is computed on the Dynamo graph with placeholder names normalized
# (autograd_cache.py, sanitize_gm_for_cache / normalize_placeholder_names), so a marked
# float's graph has the same key as stock torch's automatic-dynamic graph for the same
# unmarked float.  Stock torch can store an entry with the value baked in there
# (pytorch#194976), and a hit would skip the tensorify pass and _tensorify_hook.  Inductor's
# FX graph cache is keyed after the pass and stays on.
def _has_dynamic_float_input(gm: Any) -> bool:
    """A placeholder whose fake tensor's .item() is one of the bridge's float symbols."""
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            break
        ev = node.meta.get("example_value")
        memo = getattr(ev, "item_memo", None)
        if memo is None:
            continue
        shape_env = ev.fake_mode.shape_env
        ours = shape_env.__dict__.get(_FLOAT_KEY, {}) if shape_env is not None else {}
        if any(s in ours for s in memo.node.expr.free_symbols):
            return True
    return False


def _check_cacheable_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    wrapped(*args, **kwargs)
    gm = args[0] if args else kwargs["gm"]
    if _has_dynamic_float_input(gm):
        from torch._functorch._aot_autograd.autograd_cache import BypassAOTAutogradCache

        raise BypassAOTAutogradCache("dynscalar: graph has a dynamic float input")


# --------------------------------------------------------------------------- write-back
def _make_setattr(original: Any) -> Any:
    from torch._dynamo.eval_frame import skip_code

    def object_setattr_ignore_descriptor(obj: Any, name: str, value: Any) -> None:
        try:
            old = object.__getattribute__(obj, "__dict__").get(name)
        except AttributeError:
            old = None
        if isinstance(old, DynamicScalar) and type(value) in (int, float):
            # the proxy eager would have produced: `self.step += 1` keeps class and spec
            value = _derive(value, old.spec, same_variable=True)
        original(obj, name, value)

    # It runs right after a compiled frame, with Dynamo's frame callback still active: Dynamo
    # must not trace it.  skip_code marks the code object once (a C-level check per call);
    # torch._dynamo.disable would wrap every call in a context manager (~5 us per step).
    skip_code(object_setattr_ignore_descriptor.__code__)
    object_setattr_ignore_descriptor.__wrapped_original__ = original  # type: ignore[attr-defined]
    return object_setattr_ignore_descriptor


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
        return _wrap_plain(wrapped, instance, value)
    except ImportError:  # no DynamicScalarSource/AttrSource: the value without a source swap
        return wrapped(value.__wrapped__)


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
