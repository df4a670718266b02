"""What the recorder keeps and every write-back module reads: the Python-level call that
made a traced value, and the traced values themselves as Dynamo hands them over.

Examples:
    >>> from dynscalar._bridge._writeback.calls import ItemOf, MethodCall
    >>> MethodCall("__radd__")(2, 1)
    3
    >>> ItemOf(divmod, 1)(7, 2)
    1
"""

from __future__ import annotations

from typing import Any

import torch

from .. import _torch

__all__ = [
    "SELECTING",
    "SYMBOLIC",
    "Call",
    "ItemOf",
    "MethodCall",
    "realized",
    "sequence_items",
]


class Call:
    """A Python-level call that made a traced value: ``fn(*args, **kwargs)`` with the
    arguments as traced (VariableTrackers)."""

    __slots__ = ("args", "fn", "kwargs")

    def __init__(self, fn: Any, args: list[Any], kwargs: dict[str, Any]) -> None:
        self.fn = fn
        self.args = args
        self.kwargs = kwargs


class MethodCall:
    """``obj.name(*args)`` as a callable of ``obj`` (a dunder call on a proxy)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, obj: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(obj, self.name)(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<method {self.name}>"


class ItemOf:
    """``fn(*args)[index]`` as a callable: one item of a tuple a call made (``divmod`` of a
    proxy compiled as a constant hands back a tuple of constants, each replayed by its own
    item of eager's call)."""

    __slots__ = ("fn", "index")

    def __init__(self, fn: Any, index: int) -> None:
        self.fn = fn
        self.index = index

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)[self.index]

    def __repr__(self) -> str:
        return f"<item {self.index} of {self.fn!r}>"


#: max/min return one of their arguments: which one is known only at run time.
SELECTING = frozenset({max, min})


#: the symbolic scalars a traced value's example value may be
SYMBOLIC = (torch.SymInt, torch.SymFloat, torch.SymBool)


def realized(variable: Any) -> Any:
    """The variable behind a realized ``LazyVariableTracker`` (others unchanged)."""
    if isinstance(variable, _torch.LazyVariableTracker) and variable.is_realized():
        return variable.unwrap()
    return variable


def sequence_items(variable: Any) -> list[Any] | None:
    """The items of a traced list or tuple (None for anything else)."""
    if isinstance(variable, _torch.BaseListVariable) and variable.python_type() in (list, tuple):
        return list(variable.items)
    return None
