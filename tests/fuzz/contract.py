"""The contract: which dynscalar errors compiled code may raise where eager code succeeds.

Eager code never checks a mark; compiled code does, when a marked value enters it.  A
difference between a compiled call and its eager twin is *allowed by contract* only when the
compiled call raised one of the errors in :data:`CONTRACT` (possibly wrapped by torch, e.g. in
``BackendCompilerFailed``) **and** that error's condition held for the values the call
started with.  Every other difference is either torch's own (stock torch disagrees with eager
on the same program with the marks removed) or a dynscalar bug.

This table is the one place the fuzzer and ``docs/fuzzing.md`` take the contract from.
It names error classes by their public names so this module does not import dynscalar.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["CONTRACT", "Entry", "Rule", "Scalar", "contract_error", "rule_for"]


@dataclass(frozen=True)
class Scalar:
    """A scalar a compiled call starts with: a module attribute or a function argument."""

    name: str
    value: Any  # as held before the call: a proxy stays a proxy
    marks: tuple[Any, ...]  # the DynamicSpecs that apply: registry mark, the proxy's own spec
    read: bool  # the compiled code reads it


@dataclass(frozen=True)
class Entry:
    """What a compiled call met when it started."""

    scalars: tuple[Scalar, ...]
    forces: bool  # the code forces a value: range(...), int(...)
    makes_float: bool  # the code makes floats from its scalars: true division, float operands
    writes: bool = False  # the code assigns a scalar (it may re-enter compiled code after a
    # graph break holding the value the call wrote)

    def marked(self) -> list[tuple[Scalar, Any]]:
        """(scalar, plain value) of every read scalar that carries a mark."""
        return [(s, _plain(s.value)) for s in self.scalars if s.read and s.marks]


def _plain(value: Any) -> Any:
    return value.__wrapped__ if type(value).__name__ in ("DynamicInt", "DynamicFloat") else value


def _is_int(v: Any) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_float(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, numbers.Integral)


def _is_number(v: Any) -> bool:
    """An int or float in the numbers-tower sense (numpy scalars included), not a bool."""
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _outside(spec: Any, v: int) -> bool:
    return (spec.min is not None and v < spec.min) or (spec.max is not None and v > spec.max)


def _out_of_range(e: Entry) -> bool:
    if e.writes and any(
        m.min is not None or m.max is not None for s, _ in e.marked() for m in s.marks
    ):
        return True  # a value the call wrote re-enters compiled code after a graph break
    return any(_is_int(v) and any(_outside(m, int(v)) for m in s.marks) for s, v in e.marked())


def _not_a_number(e: Entry) -> bool:
    return any(not _is_number(v) for _, v in e.marked())


def _strict(e: Entry) -> bool:
    return any(any(m.strict for m in s.marks) for s, _ in e.marked())


def _dynamic_float(e: Entry) -> bool:
    return any(_is_float(v) or (e.makes_float and _is_number(v)) for _, v in e.marked())


@dataclass(frozen=True)
class Rule:
    error: str  # public class name in dynscalar
    condition: str  # the documented condition (docs/fuzzing.md prints it)
    applies: Callable[[Entry], bool]


CONTRACT: tuple[Rule, ...] = (
    Rule(
        "OutOfRangeError",
        "a marked int read by the compiled code is outside its mark's `min`/`max` when it "
        "enters compiled code: when the call starts (a registry mark or the proxy's own spec), "
        "or when compiled code resumes after a graph break holding a value the call wrote",
        _out_of_range,
    ),
    Rule(
        "DynscalarTypeError",
        "a marked attribute read by the compiled code holds a bool, str, None, tensor or other "
        "value that is not a number (`numbers.Real`; numpy scalars are numbers)",
        _not_a_number,
    ),
    Rule(
        "SpecializationError",
        "a value read by the compiled code has a `strict=True` mark and would be specialized: the "
        "code forces it (`range(...)`, `int(...)`), it holds a number that is not a Python "
        "int/float (a numpy scalar) or an int outside int64, or torch cannot keep it symbolic "
        "in an op (e.g. a float `%` the tensorify pass cannot lower)",
        _strict,
    ),
    Rule(
        "DynamicFloatSpecializedError",
        "a marked float is read by the compiled code, or a marked number is turned into a float "
        "by it (true division, float operands)",
        _dynamic_float,
    ),
)

_BY_NAME = {rule.error: rule for rule in CONTRACT}


def rule_for(error: BaseException) -> Rule | None:
    """The contract rule for an exception's class (its nearest listed base), if any."""
    for klass in type(error).__mro__:
        if klass.__module__.startswith("dynscalar") and klass.__name__ in _BY_NAME:
            return _BY_NAME[klass.__name__]
    return None


def _chain(error: BaseException) -> list[BaseException]:
    """``error`` and everything it wraps: ``__cause__``, ``__context__``, ``inner_exception``."""
    seen: list[BaseException] = []
    todo: list[BaseException] = [error]
    while todo and len(seen) < 32:
        exc = todo.pop(0)
        if any(exc is s for s in seen):
            continue
        seen.append(exc)
        for nxt in (getattr(exc, "inner_exception", None), exc.__cause__, exc.__context__):
            if isinstance(nxt, BaseException):
                todo.append(nxt)
    return seen


def contract_error(error: BaseException) -> BaseException | None:
    """The first dynscalar error in ``error``'s chain (torch may wrap it), if any."""
    for exc in _chain(error):
        if any(
            k.__name__ == "DynscalarError" and k.__module__.startswith("dynscalar")
            for k in type(exc).__mro__
        ):
            return exc
    return None
