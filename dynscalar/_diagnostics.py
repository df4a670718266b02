"""Warnings and errors dynscalar reports to users, and a once-per-key warning helper."""

from __future__ import annotations

import threading
import warnings

__all__ = [
    "BridgeUnavailableWarning",
    "DynamicFloatSpecializedError",
    "SpecializationError",
    "SpecializationWarning",
    "warn_once",
]


class SpecializationWarning(UserWarning):
    """A marked scalar was fixed to one value (specialized) instead of staying symbolic.

    Examples:
        >>> import warnings
        >>> warnings.simplefilter("error", SpecializationWarning)  # turn it into an error
    """


class SpecializationError(ValueError):
    """Raised instead of :class:`SpecializationWarning` for marks made with ``strict=True``."""


class DynamicFloatSpecializedError(RuntimeError):
    """A dynamic float reaches an op torch cannot keep symbolic: torch would bake its value in.

    Raised while compiling (torch.compile reports it inside ``BackendCompilerFailed``) rather
    than letting compiled code return numbers computed with a stale value (pytorch#194976).
    """


class BridgeUnavailableWarning(RuntimeWarning):
    """dynscalar could not install itself into this torch; marks behave like plain values."""


_seen: set[tuple[object, ...]] = set()
_seen_lock = threading.Lock()


def warn_once(
    key: tuple[object, ...],
    message: str,
    category: type[Warning],
    stacklevel: int = 2,
    location: tuple[str, int] | None = None,
) -> None:
    """Emit ``message`` once per ``key`` for the life of the process.

    ``location`` (filename, line) attributes the warning to that line of user code instead
    of a caller frame (``warnings.warn_explicit``).
    """
    with _seen_lock:
        if key in _seen:
            return
        _seen.add(key)
    if location is None:
        warnings.warn(message, category, stacklevel=stacklevel + 1)
    else:
        warnings.warn_explicit(message, category, *location)
