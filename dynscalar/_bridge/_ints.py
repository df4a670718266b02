"""Marked ints as backed or unbacked SymInt graph inputs, with their ranges."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from .._spec import DynamicSpec
from ._reports import _remember
from ._sources import _swapped_source
from ._state import _UNBACKED_KEY

log = logging.getLogger("dynscalar")


@contextlib.contextmanager
def _no_size_constraint(shape_env: Any) -> Iterator[None]:
    """Unbacked *scalars* are not sizes: skip torch's ``>= 0`` size constraint."""
    shape_env._constrain_range_for_size = lambda *args, **kwargs: None
    try:
        yield
    finally:
        del shape_env._constrain_range_for_size


def _wrap_int(builder: Any, value: int, spec: DynamicSpec, where: str) -> Any:
    from torch._dynamo.source import DynamicScalarSource
    from torch.fx.experimental.symbolic_shapes import DimDynamic
    from torch.utils._sympy.numbers import int_oo

    shape_env = builder.tx.output.shape_env
    with _swapped_source(builder, DynamicScalarSource(builder.source, True)):
        if spec.unbacked:
            with _no_size_constraint(shape_env):
                var = builder.wrap_symint(value, dynamism=DimDynamic.UNBACKED)
        else:
            var = builder.wrap_symint(value, dynamism=DimDynamic.DYNAMIC)
    symbol = var.sym_num.node.expr
    if spec.unbacked:
        shape_env.__dict__.setdefault(_UNBACKED_KEY, {})[symbol] = where
    else:
        _remember(shape_env, symbol, where, spec)
    if spec.has_range:
        lo = -int_oo if spec.min is None else spec.min
        hi = int_oo if spec.max is None else spec.max
        shape_env.constrain_symbol_range(symbol, compiler_min=lo, compiler_max=hi)
    log.debug(
        "%s -> %s %s (value %d, range [%s, %s])",
        where,
        "unbacked" if spec.unbacked else "backed",
        symbol,
        value,
        spec.min,
        spec.max,
    )
    return var


def _data_dependent_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Name the marked attribute when torch cannot branch on an unbacked symbol."""
    error = wrapped(*args, **kwargs)
    ours = instance.__dict__.get(_UNBACKED_KEY)
    expr = args[0] if args else kwargs.get("expr")
    if not ours or expr is None or not error.args:
        return error
    names = sorted({ours[s] for s in getattr(expr, "free_symbols", ()) if s in ours})
    if names:
        hint = (
            f"dynscalar: {', '.join(names)} is marked unbacked=True, so torch.compile cannot "
            "branch on its value. Use fullgraph=False (the branch becomes a graph break), "
            "mark it backed (unbacked=False: one compile per branch taken), or express the "
            "branch with torch.where / torch.cond.\n"
        )
        error.args = (hint + str(error.args[0]), *error.args[1:])
    return error
