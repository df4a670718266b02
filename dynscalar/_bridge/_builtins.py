"""Python builtins that Dynamo lets through with a symbolic float where Python raises.

``range(x)`` with a float ``x`` raises ``TypeError`` in Python.  Dynamo 2.13 (``call_range``
in ``variables/builtin.py``) guards a ``SymFloat`` argument to its current value and builds
the range anyway: with a dynamic float (``range(self.t % 3)`` where ``t`` is a
``DynamicFloat``, or a plain float that automatic dynamic made symbolic) compiled code
loops ``int(t % 3)`` times where eager raises.  The hook raises eager's ``TypeError`` inside
the traced program (an observed exception: the frame runs eagerly and raises it).
Installed only on torch 2.13's ``call_range(self, tx, *args)``: torch 2.14 converts the
arguments with ``pynumber_index``, which raises the same ``TypeError``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["range_hook"]


def range_hook(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Around ``BuiltinVariable.call_range(tx, *args)``."""
    from torch._dynamo.variables.tensor import SymNodeVariable

    tx, *call_args = args
    for arg in call_args:
        if isinstance(arg, SymNodeVariable) and arg.python_type() is float:
            from torch._dynamo.exc import raise_observed_exception

            raise_observed_exception(
                TypeError, tx, args=["'float' object cannot be interpreted as an integer"]
            )
    return wrapped(*args, **kwargs)
