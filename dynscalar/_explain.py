"""``explain(module)``: which scalars of a module tree are dynamic, and how."""

from __future__ import annotations

import functools
from typing import NamedTuple

import torch

from ._diagnostics import DynscalarTypeError
from ._marks import auto_marked, class_marks_of, instance_marks, lookup_mark
from ._proxy import is_dynamic_scalar
from ._registry import (
    class_attribute,
    compiled_original,
    is_stored,
    property_reads,
    stored_value,
)
from ._spec import DynamicSpec

__all__ = ["COMPUTED", "Explanation", "MarkRecord", "explain"]


class _Computed:
    """The value of a marked property (or of a ``cached_property`` not computed yet):
    computed by user code, which ``explain`` never runs."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<computed by its getter>"


#: ``MarkRecord.value`` of a property: ``explain`` does not run getters
COMPUTED = _Computed()


class MarkRecord(NamedTuple):
    """One dynamic scalar: where it lives, its value, how it was marked, and its spec."""

    module: str  # dotted path in the tree ("" is the root), e.g. "encoder.layer0"
    cls: str
    attribute: str
    #: the value where it is stored; ``COMPUTED`` for a property (getters are not run)
    value: object
    how: str  # "mark_dynamic_attr", "@dynamic_attrs", "DynamicInt value", ...
    spec: DynamicSpec
    #: what a mark on a property resolves to: the attribute chains its getter read when it
    #: was last compiled ("property -> self.progress.completed"); "" for a plain attribute
    reads: str = ""


class Explanation(list[MarkRecord]):
    """The records of [`explain`][dynscalar.explain]; ``str()`` gives a readable table."""

    def __str__(self) -> str:
        if not self:
            return "dynscalar: no dynamic scalars in this module tree."
        rows: list[tuple[str, ...]] = [("module", "attribute", "value", "how", "spec", "reads")]
        for r in self:
            spec = ", ".join(f"{k}={v}" for k, v in r.spec.kwargs().items()) or "backed"
            path = f"{r.module or '<root>'} ({r.cls})"
            rows.append((path, r.attribute, repr(r.value), r.how, spec, r.reads))
        if not any(r.reads for r in self):
            rows = [row[:5] for row in rows]
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines = [
            "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows
        ]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(line.rstrip() for line in lines)


def explain(module: torch.nn.Module, *, show: bool = True) -> Explanation:
    """List the dynamic scalars of ``module`` and its submodules with their specs.

    Prints the table unless ``show=False``; returns the records either way.  Runs no user
    code: a marked property is listed with what its getter read when it was last compiled
    (``MarkRecord.reads``), and its value as ``<computed by its getter>``.

    Examples:
        >>> import torch
        >>> m = torch.nn.Linear(2, 2); m.step = 0
        >>> from dynscalar import mark_dynamic_attr
        >>> records = explain(mark_dynamic_attr(m, "step"), show=False)
        >>> [(r.attribute, r.how) for r in records]
        [('step', 'mark_dynamic_attr')]
    """
    if not isinstance(module, torch.nn.Module):
        raise DynscalarTypeError(
            f"dynscalar.explain: expected a torch.nn.Module, got {type(module).__name__}."
        )
    records = Explanation()
    for path, sub in compiled_original(module).named_modules():
        own = instance_marks(sub) or {}
        inherited = class_marks_of(type(sub))
        names = sorted(
            set(own) | set(inherited) | {n for n, v in vars(sub).items() if is_dynamic_scalar(v)}
        )
        for name in names:
            value = _value(sub, name)
            found = lookup_mark(sub, name)  # the attribute's mark wins, as in the bridge
            if found is not None:
                spec = found
                if name in own:
                    how = "auto_dynamic" if auto_marked(sub, name) else "mark_dynamic_attr"
                else:
                    how = "@dynamic_attrs"
            elif is_dynamic_scalar(value):
                spec, how = value.spec, f"{type(value).__name__} value"
            else:
                continue
            reads = _resolves_to(sub, name)
            records.append(MarkRecord(path, type(sub).__name__, name, value, how, spec, reads))
    if show:
        print(records)
    return records


def _value(module: torch.nn.Module, name: str) -> object:
    """``module.name`` where it is stored, without running a getter (``COMPUTED``)."""
    value = stored_value(module, name)
    if isinstance(value, (property, functools.cached_property)):
        return COMPUTED
    return value if is_stored(value) else None


def _resolves_to(module: torch.nn.Module, name: str) -> str:
    """What a mark on ``module.name`` reads when ``name`` is not a plain attribute."""
    attribute = class_attribute(type(module), name)
    if isinstance(attribute, functools.cached_property):
        return f"cached_property -> self.__dict__[{name!r}]"
    if not isinstance(attribute, property):
        return ""
    reads = property_reads(module, name)
    if reads is None:
        code = getattr(attribute.fget, "__code__", None)
        at = f"; getter at {code.co_filename}:{code.co_firstlineno}" if code else ""
        return f"property (resolved at the first compile{at})"
    if not reads:
        return "property -> nothing symbolic (its getter returned a constant)"
    return "property -> " + ", ".join(reads)
