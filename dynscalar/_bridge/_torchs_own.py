"""Errors of torch's own: raised by torch's function inside a hook's call, or passed on by a
hook, so the safety net leaves them to torch's caller.

A hook that calls torch's function sees torch's errors too (a comparison torch cannot make,
an operation of the user's program failing on fake values, a cache key torch cannot
compute, the user's backend failing).  Those are the program's or torch's, never a failure
of dynscalar's: the table's wrapper (``_patch.hook_of``) hands each hook torch's function
through :func:`by_torch`, which notes what torch raised (:func:`raised_by_torch`), and the
safety net (``_safety``) passes it on unchanged where stock torch would meet it, so torch's
caller handles it as stock handles it (a cache key torch fails to compute is a silent
cache bypass).  An error that began in dynscalar's own code, which torch calls back (an op
rule's kernel, a nested hook), stays dynscalar's.  A hook tags an error itself where it
passes one on (:func:`torchs_own`); the net lets a tagged error through everywhere.  Kept
apart from the net so that hooks tag errors without importing it.

Examples:
    >>> is_torchs_own(torchs_own(ValueError("x")))
    True
    >>> is_torchs_own(ValueError("x"))
    False
    >>> def fails():
    ...     raise KeyError("torch's")
    >>> try:
    ...     by_torch(fails)()
    ... except KeyError as error:
    ...     raised_by_torch(error)
    True
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

__all__ = ["begun_in_dynscalar", "by_torch", "is_torchs_own", "raised_by_torch", "torchs_own"]

_TORCHS = "_dynscalar_torchs_own"
_RAISED = "_dynscalar_raised_by_torch"
#: dynscalar's package directory: an error whose innermost frame is below it is ours
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def torchs_own(error: BaseException) -> BaseException:
    """Mark ``error`` as torch's own (raised by torch's function, passed on unchanged by a
    hook): the net lets it through.  Returns ``error``."""
    setattr(error, _TORCHS, True)
    return error


def is_torchs_own(error: BaseException) -> bool:
    """True for an error :func:`torchs_own` tagged."""
    return bool(getattr(error, _TORCHS, False))


def raised_by_torch(error: BaseException) -> bool:
    """True for an error that torch's wrapped function raised (:func:`by_torch`): torch's,
    the user's code or the user's backend's, not begun in dynscalar's code."""
    return bool(getattr(error, _RAISED, False))


def by_torch(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` (torch's, wrapped by a hook), noting what it raises as torch's
    (:func:`raised_by_torch`) unless the error began in dynscalar's own code."""

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except Exception as error:
            if not begun_in_dynscalar(error):
                setattr(error, _RAISED, True)
            raise

    return call


def begun_in_dynscalar(error: BaseException) -> bool:
    """Some exception of ``error``'s chain (its causes and contexts) was raised in a
    dynscalar module: an op rule's kernel torch called, a hook's own failure."""
    seen: set[int] = set()
    chain: BaseException | None = error
    while chain is not None and id(chain) not in seen:
        seen.add(id(chain))
        tb = chain.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        if tb is not None and tb.tb_frame.f_code.co_filename.startswith(_PACKAGE):
            return True
        chain = chain.__cause__ or (None if chain.__suppress_context__ else chain.__context__)
    return False
