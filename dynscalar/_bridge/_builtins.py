"""Python builtins that Dynamo lets through, or fails on, where Python raises.

``range(x)`` with a float ``x`` raises ``TypeError`` in Python.  Dynamo 2.13 (``call_range``
in ``variables/builtin.py``) guards a ``SymFloat`` argument to its current value and builds
the range anyway: with a dynamic float (``range(self.t % 3)`` where ``t`` is a
``DynamicFloat``, or a plain float that automatic dynamic made symbolic) compiled code
loops ``int(t % 3)`` times where eager raises.  The hook raises eager's ``TypeError`` inside
the traced program (an observed exception: the frame runs eagerly and raises it).
Installed only on torch 2.13's ``call_range(self, tx, *args)``: torch 2.14 converts the
arguments with ``pynumber_index``, which raises the same ``TypeError``.

``int(x)`` and ``round(x)`` of a float that is NaN or infinite raise ``ValueError`` /
``OverflowError`` in Python.  Dynamo 2.13 evaluates them on the constant (torch compiles a
NaN or infinite float as one) or on the symbol's hint (``n * (1 - r)`` overflowing for a
huge ``r``) and fails with ``InternalTorchDynamoError`` / ``TorchRuntimeError`` instead.
In a compile that holds a marked value the hooks raise Python's exception inside the
traced program, as for ``range``; a compile without marks is left to torch.
"""

from __future__ import annotations

from typing import Any

from . import _torch

__all__ = ["conversion_hook", "range_hook"]


def range_hook(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Around ``BuiltinVariable.call_range(tx, *args)``."""

    tx, *call_args = args
    for arg in call_args:
        if isinstance(arg, _torch.SymNodeVariable) and arg.python_type() is float:
            _torch.raise_observed_exception(
                TypeError, tx, args=["'float' object cannot be interpreted as an integer"]
            )
    return wrapped(*args, **kwargs)


def _non_finite(tx: Any, arg: Any) -> float | None:
    """The value of a float ``arg`` that is NaN or infinite, in a compile holding a marked
    value (None otherwise)."""
    import math

    import torch

    from ._state import peek_state

    if peek_state(getattr(tx.output, "shape_env", None)) is None:
        return None
    if isinstance(arg, _torch.SymNodeVariable):
        sym = arg.sym_num
        value = sym.node.hint if isinstance(sym, torch.SymFloat) else None
    elif arg.is_python_constant():
        value = arg.as_python_constant()
    else:
        return None
    if type(value) is float and not math.isfinite(value):
        return value
    return None


def _raise_conversion(tx: Any, value: float) -> None:
    if value != value:
        _torch.raise_observed_exception(
            ValueError, tx, args=["cannot convert float NaN to integer"]
        )
    _torch.raise_observed_exception(
        OverflowError, tx, args=["cannot convert float infinity to integer"]
    )


def conversion_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``BuiltinVariable.call_function(tx, args, kwargs)``: ``int(x)`` and
    ``round(x)`` (without ``ndigits``, which returns a float and NaN/inf in Python too).

    Not a hook on ``call_int``/``call_round`` themselves: Dynamo keeps the handlers it
    builds for a builtin in a class-level cache that holds those methods as first seen.
    """
    from ._writeback.calls import realized

    if instance.fn is int or instance.fn is round:
        tx, call_args, call_kwargs = kwargs["tx"], kwargs["args"], kwargs["kwargs"]
        if len(call_args) == 1 and not call_kwargs:
            value = _non_finite(tx, realized(call_args[0]))
            if value is not None:
                _raise_conversion(tx, value)
    return wrapped(*args, **kwargs)
