"""Codegen: the bytecode Dynamo writes after the graph, where a marked value written by
the program is stored back as eager Python would hold it (write-back).

Examples:
    >>> from dynscalar._bridge.stages import codegen
    >>> codegen.codegen_suffix_hook.__name__
    'codegen_suffix_hook'
"""

from __future__ import annotations

from typing import Any

from .._writeback import codegen

__all__ = ["codegen_suffix_hook", "codegen_update_mutated_hook"]

Args = tuple[Any, ...]
Kwargs = dict[str, Any]


def codegen_suffix_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``OutputGraph.codegen_suffix``: the values stored back are planned (write-back)."""
    return codegen.codegen_suffix_hook(wrapped, instance, args, kwargs)


def codegen_update_mutated_hook(wrapped: Any, instance: Any, args: Args, kwargs: Kwargs) -> Any:
    """``SideEffects.codegen_update_mutated``: attributes and dict items stored back hold
    what eager holds (a proxy, an int, a float; write-back)."""
    return codegen.codegen_update_mutated_hook(wrapped, instance, args, kwargs)
