"""Marked ints as backed or unbacked SymInt graph inputs, with their ranges.

* backed (default): ``DimDynamic.DYNAMIC`` - no guard on the value unless control flow
  needs one, and then the guard is on the predicate;
* unbacked: ``DimDynamic.UNBACKED`` without torch's size-like constraint (which would
  reject negative values with "Guard failed on the same frame it was created");
* ``min``/``max``: ``ShapeEnv.constrain_symbol_range``; Dynamo turns that into a range
  guard, and a value outside the range re-enters the bridge, which raises.

A plain int is read through its own source (``L['self'].step``), exactly like torch's
``dynamic_sources``; a proxy through ``<source>.real`` (``_sources.plain_source``), guarded
to hold an exact ``int`` or a proxy of its class and spec (``_guards``): the graph computes
with the plain value, so a plain int found there later reuses it, unless write-back shows
the class (then it is guarded too).  ``wrap_symint`` puts ``TYPE_MATCH`` on the source it
reads, so the graph is only reused for an exact ``int`` value.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from .._proxy import DynamicInt, DynamicScalar
from .._spec import DynamicSpec
from . import _torch
from ._backends import backend_kind
from ._guards import guard_proxy_or_plain
from ._reports import Label, remember
from ._sources import plain_source, source_name, swapped_source
from ._state import Origin, compile_state, peek_state

log = logging.getLogger("dynscalar")

__all__ = ["data_dependent_hook", "unbacked_branch_hook", "wrap_int"]


@contextlib.contextmanager
def _no_size_constraint(shape_env: Any) -> Iterator[None]:
    """Unbacked *scalars* are not sizes: torch's ``>= 0`` size constraint is skipped while
    one is made (``stages.build.size_constraint_hook``)."""
    marks = compile_state(shape_env).marks
    marks.unsized = True
    try:
        yield
    finally:
        marks.unsized = False


def wrap_int(builder: Any, value: Any, spec: DynamicSpec, where: str, label: Label) -> Any:
    """A SymInt graph input for ``value`` (an exact int, or a ``DynamicInt``)."""

    proxied = isinstance(value, DynamicScalar)
    position = source = builder.source
    shape_env = builder.tx.output.shape_env
    if proxied:
        guard_proxy_or_plain(source, type(value), value._self_spec)
        source = plain_source(source)
        compile_state(shape_env).marks.read_through.add(source)
    plain = int(value.__wrapped__) if proxied else value
    dynamism = _torch.DimDynamic.UNBACKED if spec.unbacked else _torch.DimDynamic.DYNAMIC
    sizes = _no_size_constraint(shape_env) if spec.unbacked else contextlib.nullcontext()
    with swapped_source(builder, source), sizes:
        var = builder.wrap_symint(plain, dynamism=dynamism)
    sym_num = getattr(var, "sym_num", None)
    if sym_num is None:  # torch returned a constant (e.g. a constant source): exact, static
        return var
    symbol = sym_num.node.expr
    state = compile_state(shape_env)
    if state.ops.backend is None:
        state.ops.backend = backend_kind(builder.tx)
    if spec.unbacked:
        state.marks.unbacked[symbol] = label
    else:
        remember(
            shape_env,
            symbol,
            where,
            spec,
            label,
            source_name(position),
            builder.tx.output.root_tx.f_code,
        )
    state.writeback.origins[var.as_proxy().node] = (
        Origin(where, value.spec, DynamicInt, position) if proxied else Origin(where, spec, None)
    )
    if spec.has_range:
        lo = -_torch.int_oo if spec.min is None else spec.min
        hi = _torch.int_oo if spec.max is None else spec.max
        shape_env.constrain_symbol_range(symbol, compiler_min=lo, compiler_max=hi)
    log.debug(
        "%s -> %s %s (value %d, range [%s, %s])",
        label,
        "unbacked" if spec.unbacked else "backed",
        symbol,
        plain,
        spec.min,
        spec.max,
    )
    return var


def data_dependent_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Name the marked attribute when torch cannot branch on an unbacked symbol."""
    error = wrapped(*args, **kwargs)
    state = peek_state(instance)
    ours = state.marks.unbacked if state is not None else None
    expr = kwargs.get("expr")
    if not ours or expr is None or not error.args:
        return error
    names = sorted({str(ours[s]) for s in getattr(expr, "free_symbols", ()) if s in ours})
    if names:
        hint = (
            f"dynscalar: {', '.join(names)} is marked unbacked=True, so torch.compile cannot "
            "branch on its value. Use fullgraph=False (the branch becomes a graph break), "
            "mark it backed (unbacked=False: one compile per branch taken), or express the "
            "branch with torch.where / torch.cond.\n"
        )
        error.args = (hint + str(error.args[0]), *error.args[1:])
    return error


_TORCH_ADVICE = "Consider annotating your code using torch._check*(). "


def unbacked_branch_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Put dynscalar's explanation first in the error for a branch on an unbacked mark.

    ``SymNodeVariable.evaluate_expr`` turns the data-dependent error (which
    :func:`data_dependent_hook` starts with the marked attribute and what to do) into a
    ``UserError`` whose message opens with torch's generic "Consider annotating your code
    using torch._check*()"; the reader should see which attribute and the fix first.
    """
    try:
        return wrapped(*args, **kwargs)
    except Exception as exc:
        message = exc.args[0] if exc.args and isinstance(exc.args[0], str) else ""
        if message.startswith(_TORCH_ADVICE) and message[len(_TORCH_ADVICE) :].startswith(
            "dynscalar: "
        ):
            rest = message[len(_TORCH_ADVICE) :]
            ours, _, torch_part = rest.partition("\n")
            reordered = f"{ours}\ntorch: {_TORCH_ADVICE.strip()} {torch_part}"
            exc.args = (reordered, *exc.args[1:])
            for name in ("msg", "message"):
                if isinstance(getattr(exc, name, None), str):
                    setattr(exc, name, reordered)
        raise
