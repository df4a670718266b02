"""One reset for every module-level cache of dynscalar.

A cache here is state a module remembers from earlier calls that changes what later calls
do or report (a warning given once per location, a restart remembered for the next trace,
what a property read when it was last traced), or a memo that grows with the program.
Each module that owns one calls :func:`register` at import with a function that empties
it; :func:`reset_caches` calls them all.  Only modules already imported have registered,
so a reset never imports the bridge (or torch internals).

Marks are not caches: a reset leaves every mark where it is.  Neither are tables built
once and then constant, nor the per-compile state that dies with its compile.  The bridge
registers :func:`reset_caches` to run with ``torch._dynamo.reset()`` (and so with
``torch.compiler.reset()``, which calls it): a reset forgets dynscalar's memory of earlier
compiles along with torch's own.

State kept *about an object* (a function's code, a compile) is kept by the object itself:
:class:`ObjectKeyed`, never a dict or ``WeakKeyDictionary`` keyed by equality.  Code
objects compare by value (two functions compiled from the same source are equal), and
Dynamo's compile ids restart at ``(0, 0)`` after a reset: neither identifies a function or
a compile.

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
import weakref
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

__all__ = ["ObjectKeyed", "register", "reset_caches"]

K = TypeVar("K")
V = TypeVar("V")

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


class ObjectKeyed(Generic[K, V]):
    """A mapping keyed by objects themselves (identity, never equality), holding them
    weakly: an entry leaves with its object.

    ``weakref.WeakKeyDictionary`` finds an entry by ``==``: a code object equal to a
    collected one (the same source compiled again: a re-run notebook cell, generated code)
    would read, and overwrite, the other's entry.

    Examples:
        >>> source = "def f(x): return x"
        >>> cell1, cell2 = {}, {}
        >>> exec(compile(source, "cell1", "exec"), cell1)
        >>> exec(compile(source, "cell2", "exec"), cell2)
        >>> first, second = cell1["f"].__code__, cell2["f"].__code__
        >>> keyed: ObjectKeyed[object, str] = ObjectKeyed()
        >>> keyed[first] = "first"
        >>> first == second, keyed.get(first), keyed.get(second)
        (True, 'first', None)
    """

    __slots__ = ("held",)

    def __init__(self) -> None:
        #: id -> (weak reference, value); public so that a hot path can test it for
        #: emptiness without a call (``if cache.held:``)
        self.held: dict[int, tuple[weakref.ref[K], V]] = {}

    def get(self, obj: K, default: V | None = None) -> V | None:
        """The value kept for ``obj`` (``default``: none)."""
        item = self.held.get(id(obj))
        if item is None or item[0]() is not obj:
            return default
        return item[1]

    def __getitem__(self, obj: K) -> V:
        item = self.held.get(id(obj))
        if item is None or item[0]() is not obj:
            raise KeyError(obj)
        return item[1]

    def __contains__(self, obj: object) -> bool:
        item = self.held.get(id(obj))
        return item is not None and item[0]() is obj

    def __setitem__(self, obj: K, value: V) -> None:
        key = id(obj)
        items = self.held

        def drop(ref: weakref.ref[K]) -> None:  # the object is being collected
            current = items.get(key)
            if current is not None and current[0] is ref:
                items.pop(key, None)

        items[key] = (weakref.ref(obj, drop), value)

    def setdefault(self, obj: K, value: V) -> V:
        """The value kept for ``obj``, after keeping ``value`` for it if there was none."""
        item = self.held.get(id(obj))
        if item is not None and item[0]() is obj:
            return item[1]
        self[obj] = value
        return value

    def pop(self, obj: K, default: V | None = None) -> V | None:
        """Remove ``obj``'s entry; its value (``default``: none)."""
        item = self.held.get(id(obj))
        if item is None or item[0]() is not obj:
            return default
        del self.held[id(obj)]
        return item[1]

    def values(self) -> Iterator[V]:
        """The values of the live entries."""
        return iter([value for ref, value in list(self.held.values()) if ref() is not None])

    def clear(self) -> None:
        """Drop every entry."""
        self.held.clear()

    def __len__(self) -> int:
        return sum(ref() is not None for ref, _ in list(self.held.values()))

    def __bool__(self) -> bool:
        return bool(self.held)
