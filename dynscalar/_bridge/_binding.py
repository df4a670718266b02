"""A hook's arguments by parameter name.

A hook receives the wrapped function's arguments as wrapt hands them on, ``(args,
kwargs)``, with each one passed either way (``call_function(tx, args, kwargs)`` or
``call_function(tx, args=..., kwargs=...)``).  :func:`bound` reads them by name.
"""

from __future__ import annotations

from typing import Any

__all__ = ["bound"]


def bound(args: tuple[Any, ...], kwargs: dict[str, Any], names: tuple[str, ...]) -> tuple[Any, ...]:
    """The values of the wrapped function's leading parameters ``names`` (after ``self``,
    in order), each taken from ``args`` where passed by position, else from ``kwargs``.

    Examples:
        >>> from dynscalar._bridge._binding import bound
        >>> bound(("tx",), {"kwargs": {}, "args": [1]}, ("tx", "args", "kwargs"))
        ('tx', [1], {})
        >>> bound(("tx", "stack", "cg", True), {}, ("tx", "stack"))
        ('tx', 'stack')
    """
    return tuple(
        args[index] if index < len(args) else kwargs[name] for index, name in enumerate(names)
    )
