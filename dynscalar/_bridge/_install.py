"""Installing the bridge into Dynamo (lazily, idempotently), or degrading when it cannot be."""

from __future__ import annotations

import inspect
import logging
from typing import Any

import wrapt

from .._compat import TORCH_VERSION
from .._diagnostics import BridgeUnavailableWarning, warn_once
from .._proxy import DynamicScalar
from ._checks import BridgeError, check_internals
from ._ints import _data_dependent_hook
from ._reports import _evaluate_sym_node_hook
from ._state import _lock
from ._wrap import _wrap_hook, _wrap_plain
from ._writeback import _make_setattr

log = logging.getLogger("dynscalar")

__all__ = ["install", "install_fallback", "is_installed", "on_dynamo_import"]

_installed = False
_fallback_installed = False


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
