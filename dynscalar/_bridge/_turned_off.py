"""The compiles the safety net turned off: which, why, and what hooks tell the net about them.

The net (``_safety``) decides; this is its state, kept below the hooks so that a hook
talks to the net without importing it: a module that changes torch's state during a
compile registers how to undo it when the attempt is abandoned (:func:`on_abandon`), and
the hook on ``VariableBuilder._wrap`` notes a ``strict=True`` mark met in a compile traced
as stock (:func:`note_strict`).  A compile is known by its ``CompileContext`` (one object
per compile, shared by its restarted attempts), never by its code object or compile id.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import _caches
from .._caches import ObjectKeyed
from . import _torch

__all__ = [
    "OFF",
    "Failure",
    "abandon",
    "failed_here",
    "note_strict",
    "on_abandon",
]


#: what to undo when a compile attempt is given up (state the bridge changed in torch)
_abandon: list[Callable[[], None]] = []


def on_abandon(undo: Callable[[], None]) -> Callable[[], None]:
    """Call ``undo`` whenever the net gives up a compile attempt (before it is traced
    again as stock torch would): a module that changes torch's global state during a
    compile registers how to put it back.  Returns ``undo``.

    Examples:
        >>> undo = on_abandon(lambda: None)
    """
    _abandon.append(undo)
    return undo


def abandon() -> None:
    """Undo what the modules registered with :func:`on_abandon` changed (the net gives up
    the compile attempt now)."""
    for undo in _abandon:
        undo()


@dataclass
class Failure:
    """A failure of dynscalar's in one compile, and what is known of it for the report."""

    entry: str  # the hook's entry (its name in messages)
    message: str
    error: Exception
    strict: bool  # a strict=True mark is involved (met when it failed, or in the retrace)
    hooks: tuple[str, ...] = ()  # the hook functions that ran when it failed: not run again
    reported: bool = False


#: the compile (its CompileContext) traced with dynscalar's handling off -> the failure;
#: for the table's wrappers, ``if OFF.held:`` costs no call
OFF: ObjectKeyed[Any, Failure] = ObjectKeyed()
_caches.register(OFF.clear)


def failed_here() -> Failure | None:
    """The failure that turned the running compile off (None: it is not off)."""
    if not OFF:
        return None
    context = _torch.CompileContext.try_get()
    return OFF.get(context) if context is not None else None


def note_strict() -> None:
    """A value marked ``strict=True`` was met in the compile the net traces as stock: its
    report raises (:class:`~dynscalar.BridgeError`) instead of warning."""
    found = failed_here()
    if found is not None:
        found.strict = True
