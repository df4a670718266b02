"""Sources: how guards and graph inputs read a marked value."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

__all__ = ["swapped_source"]


@contextlib.contextmanager
def swapped_source(builder: Any, source: Any) -> Iterator[None]:
    """Let ``builder`` read the value through ``source`` for one call, then restore it.

    A proxy is read through ``<source>.__wrapped__`` (wrapt's attribute holding the plain
    int/float): guards on that source check the plain value's own type, and graph inputs
    (also inductor's kernel arguments) receive the plain value, never the proxy object.
    """
    original = builder.source
    builder.source = source
    builder.name = source.name
    try:
        yield
    finally:
        builder.source = original
        builder.name = original.name
