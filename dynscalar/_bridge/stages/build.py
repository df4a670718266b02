"""Build: a frame starts, a value becomes a variable (a symbol where it is marked, with its
guards and sources), ``torch._dynamo.reset()`` forgets it all.

Examples:
    >>> from dynscalar._bridge.stages import build
    >>> build.wrap_hook.__name__
    'wrap_hook'
"""

from __future__ import annotations

from typing import Any

from .. import _install, _properties, _state, _wrap

__all__ = [
    "builder_call_hook",
    "compile_start_hook",
    "floats_pending",
    "reset_hook",
    "wrap_degraded",
    "wrap_hook",
    "wrap_off",
]

Args = tuple[Any, ...]
Kwargs = dict[str, Any]


def compile_start_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``ConvertFrameAssert.__call__``: the float phase's patches go in before the first
    frame compiles (``_install``)."""
    return _install.compile_start_hook(wrapped, instance, args, kwargs)


def floats_pending(instance: Any, args: Args, kwargs: Kwargs) -> bool:
    """The gate of :func:`compile_start_hook`: whether the float phase is still to apply."""
    return _install.floats_pending(instance, args, kwargs)


def builder_call_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``VariableBuilder.__call__(value)``: a value read through a property getter is noted
    with the property (``_properties``)."""
    return _properties.builder_call_hook(wrapped, instance, args, kwargs)


def wrap_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``VariableBuilder._wrap(value)``: a marked value becomes a symbolic graph input, its
    mark guarded where it lives (``_wrap``, ``_guards``, ``_sources``, ``_ints``)."""
    return _wrap.wrap_hook(wrapped, instance, args, kwargs)


def wrap_degraded(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``VariableBuilder._wrap`` where the bridge is not installed, and inside
    ``disabled()``: a proxy is read as its plain value."""
    return _wrap.wrap_degraded(wrapped, instance, args, kwargs)


def wrap_off(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``VariableBuilder._wrap`` in a frame the safety net traces as stock torch does."""
    return _wrap.wrap_off(wrapped, instance, args, kwargs)


def reset_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``torch._dynamo.reset()``: dynscalar's caches are reset with torch's (``_state``)."""
    return _state.reset_hook(wrapped, instance, args, kwargs)
