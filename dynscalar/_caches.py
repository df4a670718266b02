"""One reset for every module-level cache of dynscalar.

A cache here is state a module remembers from earlier calls that changes what later calls
do or report (a warning given once per location, a restart remembered for the next trace,
what a property read when it was last traced), or a memo that grows with the program.
Each module that owns one calls :func:`register` at import with a function that empties
it; :func:`reset_caches` calls them all.  Only modules already imported have registered,
so a reset never imports the bridge (or torch internals).

Marks are not caches: a reset leaves every mark where it is.  Neither are tables built
once and then constant, nor the per-compile state that dies with its compile.

Examples:
    >>> from dynscalar import _caches
    >>> remembered = {"seen"}
    >>> _ = _caches.register(remembered.clear)
    >>> _caches.reset_caches()
    >>> remembered
    set()
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["register", "reset_caches"]

_clears: list[Callable[[], None]] = []
_lock = threading.Lock()

ClearT = Callable[[], None]


def register(clear: ClearT) -> ClearT:
    """Add ``clear`` (no arguments; empties one cache) to what :func:`reset_caches` calls.

    Returns ``clear``, so it also works as a decorator on a module's own clear function.

    Examples:
        >>> seen: set[str] = set()
        >>> clear = register(seen.clear)
    """
    with _lock:
        _clears.append(clear)
    return clear


def reset_caches() -> None:
    """Empty every registered cache (once-per-location warnings warn again, remembered
    restarts and forced floats are forgotten, ...); marks are kept.

    Examples:
        >>> reset_caches()
    """
    with _lock:
        clears = list(_clears)
    for clear in clears:
        clear()
