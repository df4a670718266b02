"""What a user's type checker must reject: tests/test_typing.py runs mypy on this file.

Every line ending in ``# E: <code>`` must produce exactly that mypy error, and no other line
may produce one; an expected error that disappears means the typing regressed (for
example, a DynamicFloat became acceptable as an int).  Nothing here is ever executed.
"""

from __future__ import annotations

import dynscalar as ds
from dynscalar import DynamicFloat, DynamicInt


def takes_int(n: int) -> int:
    return n


def negative() -> None:
    step = DynamicInt(3)
    scale = DynamicFloat(0.5)
    takes_int(scale)  # E: arg-type
    a: DynamicInt = step / 2  # E: assignment
    b: DynamicInt = step + 0.5  # E: assignment
    c: DynamicInt = scale * 2  # E: assignment
    d: DynamicInt = ds.mark_dynamic(0.5)  # E: assignment
    e: DynamicFloat = ds.mark_dynamic(3)  # E: assignment
    step = step + 0.5  # E: assignment
    step += 0.5  # E: misc
    DynamicInt(0.5)  # E: arg-type
    DynamicInt("3")  # E: arg-type
    DynamicFloat("0.5")  # E: arg-type
    DynamicFloat(0.5, min=0)  # E: call-arg
    ds.mark_dynamic(0.5, min=0)  # E: call-overload
    ds.mark_dynamic("3")  # E: call-overload
    step.value.hex()  # E: attr-defined
    len(scale.spec)  # E: arg-type
    print(a, b, c, d, e)
