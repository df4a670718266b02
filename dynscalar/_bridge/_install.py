"""Installing the bridge into Dynamo (lazily, idempotently), or degrading when it cannot be.

``import dynscalar`` registers :func:`on_dynamo_import` as a post-import hook on
``torch._dynamo``.  It checks every private callable the bridge patches (``_checks``)
before touching anything, applies all patches or none (a failure half-way undoes the
ones already applied), and never lets an exception escape into ``import torch._dynamo``:
whatever goes wrong, dynscalar degrades to specializing its marks (exact results, one
compile per value) with one :class:`~dynscalar.BridgeUnavailableWarning`.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable, Mapping
from typing import Any

import wrapt

from .._compat import TORCH_VERSION
from .._diagnostics import BridgeError, BridgeUnavailableWarning, warn_once
from .._proxy import DynamicScalar
from ._builtins import range_hook
from ._checks import check_internals
from ._decompositions import builtin_decomposition_hook, in_graph_call_hook
from ._ints import data_dependent_hook, unbacked_branch_hook
from ._methods import tensor_method_hook
from ._properties import property_get_hook
from ._reports import evaluate_sym_node_hook
from ._state import lock
from ._wrap import wrap_hook, wrap_plain
from ._writeback import (
    builtin_call_hook,
    codegen_suffix_hook,
    codegen_update_mutated_hook,
    polyfilled_call_hook,
    symnode_method_hook,
)

log = logging.getLogger("dynscalar")

__all__ = ["install", "install_fallback", "is_installed", "on_dynamo_import"]

_installed = False
_fallback_installed = False


def is_installed() -> bool:
    """True once the bridge is active in this process."""
    return _installed


def _patches() -> list[tuple[Any, str, Callable[..., Any]]]:
    """(owner, attribute, wrapper) for every function the bridge wraps with wrapt."""
    from torch._dynamo import output_graph, side_effects
    from torch._dynamo.variables import builder
    from torch._dynamo.variables.builtin import BuiltinVariable
    from torch._dynamo.variables.functions import PolyfilledFunctionVariable, PropertyVariable
    from torch._dynamo.variables.tensor import SymNodeVariable, TensorVariable
    from torch._dynamo.variables.torch import TorchInGraphFunctionVariable
    from torch.fx.experimental import symbolic_shapes

    return [
        (TorchInGraphFunctionVariable, "call_function", in_graph_call_hook),
        (TensorVariable, "call_method", tensor_method_hook),
        (builder.VariableBuilder, "_wrap", wrap_hook),
        (PropertyVariable, "tp_descr_get_impl", property_get_hook),
        (symbolic_shapes.ShapeEnv, "_make_data_dependent_error", data_dependent_hook),
        (symbolic_shapes.ShapeEnv, "evaluate_sym_node", evaluate_sym_node_hook),
        (SymNodeVariable, "evaluate_expr", unbacked_branch_hook),
        (side_effects.SideEffects, "codegen_update_mutated", codegen_update_mutated_hook),
        (output_graph.OutputGraph, "codegen_suffix", codegen_suffix_hook),
        # one wrapper: write-back's record around the decompositions' rewrite
        (BuiltinVariable, "call_function", _chained(builtin_call_hook, builtin_decomposition_hook)),
        (SymNodeVariable, "call_method", symnode_method_hook),
        (PolyfilledFunctionVariable, "call_function", polyfilled_call_hook),
    ]


def _chained(outer: Callable[..., Any], inner: Callable[..., Any]) -> Callable[..., Any]:
    """One wrapt wrapper doing ``outer`` around ``inner`` (each ``(wrapped, instance, args,
    kwargs)``): a function is wrapped once, so undoing it is one step."""

    def chained(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        def call_inner(*a: Any, **k: Any) -> Any:
            return inner(wrapped, instance, a, k)

        return outer(call_inner, instance, args, kwargs)

    return chained


def _version_patches() -> list[tuple[Any, str, Callable[..., Any]]]:
    """Patches for bugs of one torch version, applied only where that version's code is.

    ``range(SymFloat)`` (``_builtins``): torch 2.13's ``call_range(self, tx, *args)``; from
    2.14 on it takes ``**kwargs`` too and converts with ``pynumber_index``, which raises.
    """
    from torch._dynamo import exc
    from torch._dynamo.variables.builtin import BuiltinVariable

    patches: list[tuple[Any, str, Callable[..., Any]]] = []
    call_range = inspect.signature(inspect.unwrap(BuiltinVariable.call_range)).parameters
    if tuple(call_range) == ("self", "tx", "args") and hasattr(exc, "raise_observed_exception"):
        patches.append((BuiltinVariable, "call_range", range_hook))
    return patches


def _skip_proxy_frames() -> None:
    """Never compile a proxy's own methods as frames of their own.

    When a compiled function falls back to eager for good ("Skipping the function and
    falling back to eager"), Python runs it with Dynamo's frame callback still active, and
    every Python frame it calls is a candidate for compilation - including a proxy's
    ``__torch_function__`` and operators.  Those are dynscalar internals with nothing to
    gain from compiling, and torch 2.13 compiles ``__torch_function__`` without a guard on
    its ``func`` argument: the graph built for ``tensor + proxy`` was reused for
    ``tensor * proxy`` (found by the fuzzer).  ``skip_code`` marks each code object once
    (the frame runs as plain Python); traced code never calls them (the bridge turns
    proxies into symbolic values before any method is looked up).
    """
    import types

    from torch._dynamo.eval_frame import skip_code

    from .. import _proxy

    def functions_of(namespace: Mapping[str, Any]) -> list[Any]:
        found = []
        for value in namespace.values():
            if isinstance(value, (classmethod, staticmethod)):
                value = value.__func__
            if isinstance(value, property):
                found += [f for f in (value.fget, value.fset, value.fdel) if f is not None]
            elif isinstance(value, types.FunctionType):
                found.append(value)
        return found

    functions = functions_of(vars(_proxy))
    for cls in (_proxy.DynamicScalar, _proxy.DynamicInt, _proxy.DynamicFloat):
        functions += functions_of(vars(cls))
    for function in functions:
        if function.__module__ == _proxy.__name__:
            skip_code(function.__code__)


def install() -> None:
    """Install the bridge into Dynamo (idempotent, thread-safe, all or nothing).

    Called automatically when ``torch._dynamo`` is imported; calling it by hand is only
    needed to surface a :class:`~dynscalar.BridgeError` early.
    """
    global _installed
    with lock:
        if _installed:
            return
        check_internals()
        undo: list[Callable[[], None]] = []
        try:
            for owner, name, hook in _patches() + _version_patches():
                original = owner.__dict__[name]
                wrapt.wrap_function_wrapper(owner, name, hook)
                undo.append(functools.partial(setattr, owner, name, original))
            _skip_proxy_frames()
        except BaseException:
            for step in reversed(undo):
                step()
            raise
        _installed = True
        log.info("dynscalar bridge installed into torch %s", TORCH_VERSION)


def install_fallback() -> bool:
    """When the full bridge cannot be installed: specialize proxies instead of crashing.

    Stock Dynamo fails on a wrapt proxy ("No constant base type found in MRO"), so a
    proxy must still be turned into its plain value.  This needs only
    ``VariableBuilder._wrap(self, value)``; returns False if even that moved.
    """
    global _fallback_installed
    with lock:
        if _fallback_installed or _installed:
            return True
        try:
            from torch._dynamo.variables import builder

            params = tuple(
                inspect.signature(inspect.unwrap(builder.VariableBuilder._wrap)).parameters
            )
            if params != ("self", "value"):
                return False
            wrapt.wrap_function_wrapper(builder.VariableBuilder, "_wrap", _fallback_hook)
        except Exception:  # noqa: BLE001 - anything: no fallback, and the caller says so
            return False
        _fallback_installed = True
        return True


def _fallback_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    value = args[0] if args else kwargs["value"]
    if not isinstance(value, DynamicScalar):
        return wrapped(*args, **kwargs)
    try:
        return wrap_plain(wrapped, instance, value)
    except ImportError:  # no AttrSource/guards: the value without a source swap
        return wrapped(value.__wrapped__)


def on_dynamo_import(_module: object) -> None:
    """Post-import hook for ``torch._dynamo``: install, or warn once why not.

    Never raises: ``import torch._dynamo`` must not fail because dynscalar is imported.
    """
    try:
        install()
    except Exception as exc:  # noqa: BLE001 - any failure degrades, with the reason
        reason = (
            str(exc)
            if isinstance(exc, BridgeError)
            else f"dynscalar: installing the bridge into torch {TORCH_VERSION} failed "
            f"({type(exc).__name__}: {exc}). Please report this with your torch version."
        )
        degraded = install_fallback()
        log.info("dynscalar bridge not installed (%s); fallback active: %s", reason, degraded)
        warn_once(
            ("bridge",),
            f"{reason} dynscalar marks will be specialized like plain values (one compile "
            "per value); eager behaviour is unchanged."
            + (
                ""
                if degraded
                else " DynamicInt/DynamicFloat values cannot be compiled at all "
                "on this torch: pass int(x)/float(x) to compiled code."
            ),
            BridgeUnavailableWarning,
            stacklevel=3,
        )
