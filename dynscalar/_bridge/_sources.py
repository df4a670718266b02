"""Sources: how guards and graph inputs read a marked value."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def _swapped_source(builder: Any, source: Any) -> Iterator[None]:
    """Let ``builder`` read the value through ``source`` for one call, then restore it."""
    original = builder.source
    builder.source = source
    builder.name = source.name
    try:
        yield
    finally:
        builder.source = original
        builder.name = original.name


def _plain_source(builder: Any, value: Any) -> Any:
    """A source that yields the plain int/float of a proxy: ``int(x)`` or ``x.__wrapped__``."""
    from torch._dynamo.source import AttrSource, DynamicScalarSource

    if isinstance(value.__wrapped__, int):
        return DynamicScalarSource(builder.source, True)
    return AttrSource(builder.source, "__wrapped__")  # DynamicScalarSource would call int()
