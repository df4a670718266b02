"""Warnings and errors dynscalar reports to users, and a once-per-key warning helper."""

from __future__ import annotations

import difflib
import threading
import warnings
from collections.abc import Iterable

from . import _caches

__all__ = [
    "BridgeError",
    "BridgeUnavailableWarning",
    "DynamicFloatSpecializedError",
    "DynscalarAttributeError",
    "DynscalarError",
    "DynscalarTypeError",
    "DynscalarValueError",
    "DynscalarWarning",
    "OutOfRangeError",
    "SpecializationError",
    "SpecializationWarning",
    "UnsupportedDescriptorError",
    "did_you_mean",
    "warn_once",
]


class DynscalarError(Exception):
    """Base class of every exception dynscalar raises.

    Each concrete error also derives from the builtin a caller would expect (``TypeError``
    for a value of the wrong kind, ``ValueError`` for a value out of range, ...), so both
    ``except DynscalarError`` and ``except ValueError`` catch it.  All of them pickle by
    their public name (errors cross process boundaries under DDP and multiprocessing).

    Examples:
        >>> import dynscalar
        >>> try:
        ...     dynscalar.DynamicInt(5, max=3)
        ... except dynscalar.DynscalarError as exc:
        ...     print(type(exc).__name__, isinstance(exc, ValueError))
        OutOfRangeError True
    """


class DynscalarTypeError(DynscalarError, TypeError):
    """A value or argument of the wrong kind: marking a tensor, a bool, a str, a non-module."""


class DynscalarValueError(DynscalarError, ValueError):
    """A value dynscalar cannot accept: outside int64, ``min > max``, a float with a range."""


class DynscalarAttributeError(DynscalarError, AttributeError):
    """Marking an attribute the module does not have."""


class UnsupportedDescriptorError(DynscalarTypeError):
    """Marking a name whose value does not live in the instance and cannot be followed.

    A ``property`` with a Python getter and a ``functools.cached_property`` can be marked
    (the mark follows the getter to the values it reads); any other descriptor (a custom
    ``__get__``, a property whose getter is not Python code, a property without a getter)
    is refused at mark time, with the attribute to mark instead.
    """


class OutOfRangeError(DynscalarValueError):
    """A marked int is outside the ``min``/``max`` declared for it.

    Raised when the value is built (``DynamicInt(5, max=3)``), marked, or enters compiled
    code; eager arithmetic never checks ranges.
    """


class SpecializationError(DynscalarValueError):
    """Raised instead of ``SpecializationWarning`` for marks
    made with ``strict=True``."""


class DynamicFloatSpecializedError(SpecializationError, RuntimeError):
    """A ``strict=True`` dynamic float reaches an op torch cannot keep symbolic.

    Without ``strict``, such a float is compiled as a constant, as stock torch does (exact,
    one compile per value, one ``SpecializationWarning``).
    Raised while compiling (torch.compile reports it inside ``BackendCompilerFailed``);
    torch 2.13/2.14 would otherwise bake the value into the compiled code (pytorch#194976).
    """


class BridgeError(DynscalarError, RuntimeError):
    """The Dynamo internals dynscalar patches are missing or have a different shape."""


class DynscalarWarning(UserWarning):
    """Base class of every warning dynscalar emits.

    Examples:
        >>> import warnings, dynscalar
        >>> # turn all of them into errors:
        >>> warnings.simplefilter("error", dynscalar.DynscalarWarning)
    """


class SpecializationWarning(DynscalarWarning):
    """A marked scalar was fixed to one value (specialized) instead of staying symbolic.

    Examples:
        >>> import warnings
        >>> # turn it into an error:
        >>> warnings.simplefilter("error", SpecializationWarning)
    """


class BridgeUnavailableWarning(DynscalarWarning, RuntimeWarning):
    """dynscalar could not install itself into this torch; marks behave like plain values."""


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """``" Did you mean 'temperature'?"`` for a misspelt (``temprature``) or shortened
    (``temp``) name among ``candidates``; ``""`` when none is close.

    Examples:
        >>> did_you_mean("temp", ["x", "temperature", "top_k"])
        " Did you mean 'temperature'?"
        >>> did_you_mean("tau", ["x", "temperature"])
        ''
    """
    known = list(dict.fromkeys(candidates))
    close = difflib.get_close_matches(name, known, n=3)
    if len(name) >= 3:  # a prefix or part of a longer name: `temp`, `steps` for `num_steps`
        lowered = name.lower()
        close += [c for c in known if c not in close and lowered in c.lower()]
    return f" Did you mean {', '.join(repr(c) for c in close[:3])}?" if close else ""


# keys already warned about by warn_once (a cache reset warns again)
_seen: set[tuple[object, ...]] = set()
_seen_lock = threading.Lock()


@_caches.register
def _forget_warnings() -> None:
    with _seen_lock:
        _seen.clear()


def warn_once(
    key: tuple[object, ...],
    message: str,
    category: type[Warning],
    stacklevel: int = 2,
    location: tuple[str, int] | None = None,
) -> None:
    """Emit ``message`` once per ``key`` for the life of the process (or until
    ``dynscalar._caches.reset_caches()``).

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


# Tracebacks name a class by its __module__: the public one, `dynscalar.DynscalarTypeError`,
# where users import it from (pickle finds each there too).
for _public in [globals()[name] for name in __all__]:
    if isinstance(_public, type):  # every exception and warning class of this module
        _public.__module__ = "dynscalar"
