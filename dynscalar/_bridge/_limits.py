"""A mark made after torch.compile gave up on the module's frame (``recompile_limit``).

Why it exists: once a frame has compiled ``recompile_limit`` (8) versions, Dynamo stops
compiling it and runs it eagerly for the rest of the process.  Marking the scalar that
caused those recompiles changes nothing then: the cached versions fail their guards (they
were compiled for single values), no new version is compiled, and the model stays
uncompiled with no message.  ``torch._dynamo.reset()`` forgets the frame's state; the next
call compiles once, with the mark.  :func:`warn_if_past_recompile_limit` says so when the
mark is made.

Private torch name used (a missing or changed one only skips the check):
``torch._dynamo.eval_frame._debug_get_cache_entry_list(code)``, the compiled versions of a
code object.
"""

from __future__ import annotations

import logging
import sys
import warnings
from typing import Any

from .._diagnostics import DynscalarWarning
from . import _torch

log = logging.getLogger("dynscalar")

__all__ = ["warn_if_past_recompile_limit"]


def warn_if_past_recompile_limit(module: Any, names: tuple[str, ...], stacklevel: int) -> None:
    """Warn when ``module``'s forward already hit ``recompile_limit``.

    Does nothing until Dynamo is imported (nothing was compiled then).
    """
    dynamo = sys.modules.get("torch._dynamo")
    if dynamo is None:
        return
    forward = getattr(type(module), "forward", None)
    code = getattr(forward, "__code__", None)
    if code is None:
        return
    limit = dynamo.config.recompile_limit
    try:  # the compiled versions Dynamo holds for the code
        versions = len(_torch._debug_get_cache_entry_list(code))
    except Exception:  # noqa: BLE001 - a diagnostic only: skip it on a torch that moved
        return
    if versions < limit:
        return
    cls = type(module).__name__
    marked = ", ".join(f"{cls}.{name}" for name in names)
    message = (
        f"dynscalar: {cls}.forward already hit torch.compile's recompile_limit ({limit}): it "
        f"was compiled {versions} times and now runs uncompiled, and marking {marked} now "
        "does not change that (torch compiles that function no more). Call "
        "torch._dynamo.reset() after marking: the next call then compiles once, with the "
        "mark. Marking before the first compiled call avoids this."
    )
    log.info("%s marked after %s.forward hit recompile_limit (%d)", marked, cls, limit)
    warnings.warn(message, DynscalarWarning, stacklevel=stacklevel + 1)
