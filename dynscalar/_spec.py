"""DynamicSpec: how a marked scalar should be traced, and its validation.

A spec is immutable and shared between a proxy value, the proxies derived from it
and the mark store.  Every check that can be done without torch lives here,
so that bad input fails at the line that wrote it.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

from ._diagnostics import DynscalarTypeError, DynscalarValueError, OutOfRangeError

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

__all__ = ["INT64_MAX", "INT64_MIN", "DynamicSpec"]


def _check_bound(name: str, bound: object, where: str) -> int | None:
    if bound is None:
        return None
    if isinstance(bound, bool) or not isinstance(bound, numbers.Integral):
        raise DynscalarTypeError(
            f"{where}: {name}={bound!r} must be an int or None, got {type(bound).__name__}."
        )
    bound = int(bound)
    if not INT64_MIN <= bound <= INT64_MAX:
        raise DynscalarValueError(
            f"{where}: {name}={bound} is outside the int64 range torch.compile can trace "
            f"[{INT64_MIN}, {INT64_MAX}]."
        )
    return bound


@dataclass(frozen=True)
class DynamicSpec:
    """How a marked scalar is traced by ``torch.compile`` (immutable).

    You do not build one yourself: the keyword arguments of
    ``DynamicInt``, ``mark_dynamic_attr``
    and ``dynamic_attrs`` make it, and ``value.spec`` or
    ``explain`` show it.

    Attributes:
        unbacked: ``False`` (default): a *backed* symbol, no guard on the value unless
            control flow needs one.  ``True``: an unbacked symbol, no guards at all;
            branching on it is a graph break.
        min: inclusive lower bound (ints only), or ``None``.  With ``max`` it becomes the
            symbol's value range, checked whenever a value is built, marked or enters a
            compiled region.
        max: inclusive upper bound (ints only), or ``None``.
        strict: turn the ``SpecializationWarning``
            emitted when code forces the value to a constant into a
            ``SpecializationError``.

    Examples:
        >>> from dynscalar import DynamicInt
        >>> DynamicInt(3, min=0, max=10).spec
        DynamicSpec(unbacked=False, min=0, max=10, strict=False)
    """

    unbacked: bool = False
    min: int | None = None
    max: int | None = None
    strict: bool = False

    @classmethod
    def build(
        cls,
        *,
        unbacked: object = False,
        min: object = None,  # noqa: A002 - same names as the public API
        max: object = None,  # noqa: A002
        strict: object = False,
        where: str = "dynscalar",
    ) -> DynamicSpec:
        """Validate user arguments and return a spec; ``where`` prefixes every error."""
        if not isinstance(unbacked, bool):
            raise DynscalarTypeError(f"{where}: unbacked={unbacked!r} must be True or False.")
        lo = _check_bound("min", min, where)
        hi = _check_bound("max", max, where)
        if lo is not None and hi is not None and lo > hi:
            raise DynscalarValueError(f"{where}: min={lo} is greater than max={hi}.")
        if not isinstance(strict, bool):
            raise DynscalarTypeError(f"{where}: strict={strict!r} must be True or False.")
        return cls(unbacked=unbacked, min=lo, max=hi, strict=strict).canonical()

    def canonical(self) -> DynamicSpec:
        """The one shared instance equal to this spec.

        Every spec dynscalar stores (in a proxy or a mark) is canonical, so compiled code
        can guard on a spec by identity: a cheap check that still sees every mark change.
        """
        return _CANONICAL.setdefault(self, self)

    @property
    def has_range(self) -> bool:
        """True when ``min`` or ``max`` is set."""
        return self.min is not None or self.max is not None

    def without_range(self) -> DynamicSpec:
        """The spec a derived value gets: dynamism kept, range dropped."""
        if not self.has_range:
            return self
        return DynamicSpec(unbacked=self.unbacked, strict=self.strict).canonical()

    def for_float(self) -> DynamicSpec:
        """The spec a float derived from this value gets: backed, no range (floats have neither)."""
        if not (self.unbacked or self.has_range):
            return self
        return DynamicSpec(strict=self.strict).canonical()

    def check_int(self, value: int, where: str) -> int:
        """Raise ``ValueError`` if ``value`` is outside int64 or this spec's range."""
        if not INT64_MIN <= value <= INT64_MAX:
            raise DynscalarValueError(
                f"{where}: value {value} is outside the int64 range torch.compile can trace "
                f"[{INT64_MIN}, {INT64_MAX}]; keep it a plain Python int instead."
            )
        if (self.min is not None and value < self.min) or (
            self.max is not None and value > self.max
        ):
            raise OutOfRangeError(
                f"{where}: value {value} is outside the declared range "
                f"[{'-inf' if self.min is None else self.min}, "
                f"{'inf' if self.max is None else self.max}]. Widen min/max when marking it, "
                "or keep the value inside the range."
            )
        return value

    def check_float(self, value: float, where: str) -> float:
        """Floats have no range and cannot be unbacked; reject a spec that says otherwise."""
        if self.unbacked:
            raise DynscalarValueError(
                f"{where}: floats cannot be unbacked; torch.compile brings a float in as a 0-d "
                "tensor whose value is always backed. Use a backed dynamic float (the default): "
                "it only guards where control flow needs it."
            )
        if self.has_range:
            raise DynscalarValueError(
                f"{where}: min/max apply to int scalars only; a float ({value!r}) cannot "
                "have a range. Drop min/max for this value."
            )
        return value

    def kwargs(self) -> dict[str, object]:
        """The non-default fields, as keyword arguments (used by ``repr``)."""
        out: dict[str, object] = {}
        if self.unbacked:
            out["unbacked"] = True
        if self.min is not None:
            out["min"] = self.min
        if self.max is not None:
            out["max"] = self.max
        if self.strict:
            out["strict"] = True
        return out


# Equal specs share one instance (see DynamicSpec.canonical); there are only a handful.
_CANONICAL: dict[DynamicSpec, DynamicSpec] = {}
