"""Errors of torch's own that a hook passes on: tagged, so the safety net lets them through.

A hook that calls torch's function sees torch's errors too (a comparison torch cannot make,
an operation of the user's program failing on fake values).  Those are the program's or
torch's, never a failure of dynscalar's: the hook tags the error (:func:`torchs_own`) and
re-raises it, and the safety net (``_safety``) passes a tagged error on unchanged.  Kept
apart from the net so that hooks tag errors without importing it.

Examples:
    >>> is_torchs_own(torchs_own(ValueError("x")))
    True
    >>> is_torchs_own(ValueError("x"))
    False
"""

from __future__ import annotations

__all__ = ["is_torchs_own", "torchs_own"]

_TORCHS = "_dynscalar_torchs_own"


def torchs_own(error: BaseException) -> BaseException:
    """Mark ``error`` as torch's own (raised by torch's function, passed on unchanged by a
    hook): the net lets it through.  Returns ``error``."""
    setattr(error, _TORCHS, True)
    return error


def is_torchs_own(error: BaseException) -> bool:
    """True for an error :func:`torchs_own` tagged."""
    return bool(getattr(error, _TORCHS, False))
