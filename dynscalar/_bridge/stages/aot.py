"""AOT: the backend's compile of a graph holding marked values (the float phase, restarts,
AOTAutograd's cache), under the safety net.

Examples:
    >>> from dynscalar._bridge.stages import aot
    >>> aot.backend_compile_hook.__name__
    'backend_compile_hook'
"""

from __future__ import annotations

from typing import Any

from .. import _floats, _safety

__all__ = [
    "backend_compile_hook",
    "backend_compile_off",
    "cache_key_hook",
    "cache_save_hook",
    "check_cacheable_hook",
    "tensorify_hook",
]

Args = tuple[Any, ...]
Kwargs = dict[str, Any]
_CALL = ("gm", "example_inputs")  # OutputGraph.call_user_compiler's parameters


def backend_compile_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``OutputGraph.call_user_compiler(gm, example_inputs)``, two concerns in this order:

    1. the safety net (``_safety``): a backend failing on a graph with marked values has
       the frame traced again as stock, a comparison algebra would decide otherwise than
       Python turns the compile off;
    2. the float phase (``_floats``): marked floats torch already guards by value are
       warned; then the backend compiles.
    """

    def floats(*a: Any, **k: Any) -> Any:
        named = {**dict(zip(_CALL, a, strict=False)), **k} if a else k
        return _floats.compile_hook(wrapped, instance, (), named)

    return _safety.backend_compile_hook(floats, instance, args, kwargs)


def backend_compile_off(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``OutputGraph.call_user_compiler`` in a frame the net turned off (``_safety``)."""
    return _safety.backend_compile_off(wrapped, instance, args, kwargs)


def tensorify_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``tensorify_python_scalars``: the float-tensorify pass over a graph with marked
    floats, specializing with a restart where it would bake a value in (``_floats``)."""
    return _floats.tensorify_hook(wrapped, instance, args, kwargs)


def cache_key_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``autograd_cache_key``: marked floats' graphs keyed as their values need (``_floats``)."""
    return _floats.cache_key_hook(wrapped, instance, args, kwargs)


def check_cacheable_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``check_cacheable``: whether AOTAutograd may cache the graph (``_floats``)."""
    return _floats.check_cacheable_hook(wrapped, instance, args, kwargs)


def cache_save_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``AOTAutogradCache.save``: what a warm restart needs is saved too (``_floats``)."""
    return _floats.cache_save_hook(wrapped, instance, args, kwargs)
