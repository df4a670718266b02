"""Sources: how guards and graph inputs read a marked value."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from . import _torch

__all__ = [
    "PLAIN_MEMBER",
    "plain_source",
    "record_for_automatic_dynamic",
    "source_name",
    "swapped_source",
]

#: A proxy's plain value is read as ``<source>.real``: ``int.real`` and ``float.real`` are
#: the value itself, and a proxy forwards the attribute to the value it holds.  So the graph
#: input made for a ``DynamicInt`` reads a plain ``int`` found there later just the same
#: (``_guards.guard_proxy_or_plain`` says which values may be found there).
PLAIN_MEMBER = "real"


def plain_source(source: Any) -> Any:
    """The source of the plain value of the proxy (or plain value) at ``source``."""

    return _torch.AttrSource(source, PLAIN_MEMBER)


def source_name(source: Any) -> str:
    """A source's name (``L['self'].step``): a property in torch 2.13, a method elsewhere."""
    name = source.name() if callable(source.name) else source.name
    return str(name)


@contextlib.contextmanager
def swapped_source(builder: Any, source: Any) -> Iterator[None]:
    """Let ``builder`` read the value through ``source`` for one call, then restore it.

    A proxy is read through ``<source>.real`` (:data:`PLAIN_MEMBER`): guards on that
    source check the plain value's own type, and graph inputs (also inductor's kernel
    arguments) receive the plain value, never the proxy object.
    """
    original = builder.source
    builder.source = source
    builder.name = source.name
    try:
        yield
    finally:
        builder.source = original
        builder.name = original.name


def record_for_automatic_dynamic(builder: Any, plain: int | float) -> None:
    """Record ``plain`` as the value last seen at the builder's own source, as Dynamo does
    for a plain int/float it wraps (``pgo.process_automatic_dynamic``).

    A proxy is read through ``<source>.real``, so Dynamo's record of the frame's
    values (its automatic dynamic) would have nothing for ``<source>``: when a plain value
    arrives there later (``fn(DynamicInt(1))``, then ``fn(2)``), stock torch's rule - a
    value that changed is compiled dynamic - could not see the change, and the plain value
    would cost one static compile more than stock.
    """

    _torch.process_automatic_dynamic(
        builder.tx,
        builder.name,
        _torch.FrameStateSizeEntry.make_scalar(plain),  # floats too
        is_unspecialized_nn_module=builder.source.guard_source.is_unspecialized_nn_module(),
    )
