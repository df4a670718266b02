"""What a user's type checker sees of dynscalar: mypy checks this file in CI (strict).

Each ``check(assert_type(expr, T), T)`` states the static type (``assert_type``: mypy fails
if it differs) and checks that the runtime value has exactly that class, so the typing
cannot drift from what the code does.  ``python tests/static_typing/usage.py`` runs it;
tests/test_typing.py does both.  What must NOT type-check is in ``negative.py``.
"""

from __future__ import annotations

import math

import torch
from typing_extensions import assert_type

import dynscalar as ds
from dynscalar import DynamicFloat, DynamicInt, DynamicSpec


def check(value: object, expected: type) -> None:
    assert type(value) is expected, f"{value!r}: {type(value).__name__}, not {expected.__name__}"


def takes_int(n: int) -> int:
    return n


def takes_float(x: float) -> float:
    return x


class Seed(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.step = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.step += 1
        return x * self.step


def usage() -> None:
    step = DynamicInt(3)
    scale = DynamicFloat(0.5)

    # A DynamicInt is accepted where an int is expected, a DynamicFloat where a float is.
    takes_int(step)
    takes_float(scale)
    takes_float(step)  # an int is a float to a type checker, as for plain ints
    n: int = step
    x: float = scale
    check(n, DynamicInt)
    check(x, DynamicFloat)

    # mark_dynamic returns the kind of its argument.
    check(assert_type(ds.mark_dynamic(3), DynamicInt), DynamicInt)
    check(assert_type(ds.mark_dynamic(3, min=0, max=10), DynamicInt), DynamicInt)
    check(assert_type(ds.mark_dynamic(0.5), DynamicFloat), DynamicFloat)
    check(assert_type(ds.mark_dynamic(step), DynamicInt), DynamicInt)

    # Arithmetic keeps dynamic-ness, with the runtime's kinds.
    check(assert_type(step + 1, DynamicInt), DynamicInt)
    check(assert_type(1 + step, DynamicInt), DynamicInt)
    check(assert_type(step * step, DynamicInt), DynamicInt)
    check(assert_type(step - True, DynamicInt), DynamicInt)
    check(assert_type(step // 2, DynamicInt), DynamicInt)
    check(assert_type(step % 2, DynamicInt), DynamicInt)
    check(assert_type(step << 1, DynamicInt), DynamicInt)
    check(assert_type(step & 1, DynamicInt), DynamicInt)
    check(assert_type(-step, DynamicInt), DynamicInt)
    check(assert_type(abs(step), DynamicInt), DynamicInt)
    check(assert_type(step / 2, DynamicFloat), DynamicFloat)
    check(assert_type(step + 0.5, DynamicFloat), DynamicFloat)
    # A plain float on the LEFT of a DynamicInt: float.__mul__ accepts ints, so a checker
    # stops there and says float; at run time float.__mul__ declines the proxy, which then
    # answers with a DynamicFloat (a float, so the static type is still right).
    check(assert_type(2.0 * step, float), DynamicFloat)
    check(assert_type(step + scale, DynamicFloat), DynamicFloat)
    check(assert_type(scale * 0.9, DynamicFloat), DynamicFloat)
    check(assert_type(scale * 2, DynamicFloat), DynamicFloat)
    check(assert_type(1 - scale, DynamicFloat), DynamicFloat)
    check(assert_type(scale / step, DynamicFloat), DynamicFloat)
    check(assert_type(-scale, DynamicFloat), DynamicFloat)
    q, r = assert_type(divmod(step, 2), tuple[DynamicInt, DynamicInt])
    check(q, DynamicInt)
    check(r, DynamicInt)
    check(assert_type(round(scale), DynamicInt), DynamicInt)
    check(assert_type(round(scale, 1), DynamicFloat), DynamicFloat)
    check(assert_type(math.floor(scale), DynamicInt), DynamicInt)
    check(assert_type(math.trunc(step), DynamicInt), DynamicInt)
    check(assert_type(step < 5, bool), bool)
    check(assert_type(scale == 0.5, bool), bool)

    # In-place operators give a new value of the same kind (immutable, like int).
    counter = DynamicInt(0, min=0)
    counter += 1
    check(assert_type(counter, DynamicInt), DynamicInt)
    decay = DynamicFloat(1.0)
    decay *= 0.9
    check(assert_type(decay, DynamicFloat), DynamicFloat)

    # With a tensor, the tensor decides (as for a plain int).
    check(assert_type(step + torch.ones(2), torch.Tensor), torch.Tensor)
    check(assert_type(torch.ones(2) * scale, torch.Tensor), torch.Tensor)

    # Plain-int uses and the proxy's own API.
    assert_type(list(range(step)), list[int])
    assert_type(step.value, int)
    assert_type(scale.value, float)
    assert_type(step.spec, DynamicSpec)
    assert ds.is_dynamic_scalar(step)

    # The module API keeps the module's own type.
    model = assert_type(ds.mark_dynamic_attr(Seed(), "step"), Seed)
    assert_type(ds.unmark_dynamic_attr(model, "step"), Seed)
    assert_type(ds.auto_dynamic(Seed()), Seed)
    marked_cls = assert_type(ds.dynamic_attrs("step")(Seed), type[Seed])
    assert ds.is_dynamic_attr(marked_cls(), "step")
    compiled = torch.compile(model, backend="eager")
    compiled(torch.ones(2))


if __name__ == "__main__":
    usage()
    print("ok")
