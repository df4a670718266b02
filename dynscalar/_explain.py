"""``explain(obj)``: which scalars of a module tree, a function or an optimizer are dynamic,
and how."""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import torch

from ._attrs import (
    class_attribute,
    compiled_original,
    is_stored,
    property_reads,
    stored_value,
)
from ._diagnostics import DynscalarTypeError
from ._marks import (
    ARG_MARKS_KEY,
    GROUP_MARKS_KEY,
    STATE_MARKS_KEY,
    auto_marked,
    class_marks_of,
    function_marks,
    instance_marks,
    lookup_mark,
    unwrap_function,
)
from ._proxy import is_dynamic_scalar
from ._spec import DynamicSpec

__all__ = ["ARGUMENT", "COMPUTED", "Explanation", "MarkRecord", "explain"]


class _Computed:
    """The value of a marked property (or of a ``cached_property`` not computed yet):
    computed by user code, which ``explain`` never runs."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<computed by its getter>"


#: ``MarkRecord.value`` of a property: ``explain`` does not run getters
COMPUTED = _Computed()


class _Argument:
    """The value of a marked argument: whatever each caller passes."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<passed by the caller>"


#: ``MarkRecord.value`` of an argument mark
ARGUMENT = _Argument()


class MarkRecord(NamedTuple):
    """One dynamic scalar: where it lives, its value, how it was marked, and its spec."""

    module: str  # dotted path in the tree ("" is the root), e.g. "encoder.layer0"
    #: the module's (or optimizer's) class; ``"function"`` for a function's arguments
    cls: str
    #: the attribute; an argument as ``forward(temperature)`` (``train_step(n)`` for a
    #: function); an optimizer's key as ``param_groups[*]['lr']``
    attribute: str
    #: the value where it is stored (an optimizer's: a list, one per param group, when they
    #: differ); ``COMPUTED`` for a property (getters are not run), ``ARGUMENT`` for an
    #: argument
    value: object
    #: "mark_dynamic_attr", "@dynamic_attrs", "DynamicInt value", "auto_dynamic",
    #: "mark_dynamic_args", "@dynamic_args", "mark_dynamic_param_groups"
    how: str
    spec: DynamicSpec
    #: what a mark on a property resolves to: the attribute chains its getter read when it
    #: was last compiled ("property -> self.progress.completed"); "" for a plain attribute
    reads: str = ""


class Explanation(list[MarkRecord]):
    """The records of ``explain``; ``str()`` gives a readable table."""

    #: what was explained, for the empty table: "module tree", "function", "optimizer"
    subject = "module tree"

    def __str__(self) -> str:
        from .tools.explain import render  # the tools' table, imported when one is printed

        return render(self)


def explain(obj: Any, *, show: bool = True) -> Explanation:
    """List the dynamic scalars of a module tree, a function or an optimizer, with specs.

    For a module (compiled or not) and its submodules: marked attributes, attributes holding
    a ``DynamicInt``/``DynamicFloat``, and the marked arguments of each ``forward``
    (``mark_dynamic_args(module, ...)`` or ``@dynamic_args``); for a function (compiled or
    not): its marked arguments; for an optimizer: its marked param-group keys and
    per-parameter state entries (``mark_dynamic_param_groups``).  Prints the table unless
    ``show=False``; returns the records either way.  Runs no user code: a marked property
    is listed with what its getter read when it was last compiled (``MarkRecord.reads``),
    and its value as ``<computed by its getter>``.

    Examples:
        >>> import torch
        >>> m = torch.nn.Linear(2, 2); m.step = 0
        >>> from dynscalar import mark_dynamic_attr, mark_dynamic_param_groups
        >>> records = explain(mark_dynamic_attr(m, "step"), show=False)
        >>> [(r.attribute, r.how) for r in records]
        [('step', 'mark_dynamic_attr')]
        >>> opt = mark_dynamic_param_groups(torch.optim.SGD(m.parameters(), lr=0.1))
        >>> [(r.attribute, r.value) for r in explain(opt, show=False)]
        [("param_groups[*]['lr']", 0.1)]
    """
    if isinstance(obj, torch.nn.Module):
        records = _explain_module(obj)
    elif isinstance(obj, torch.optim.Optimizer):
        records = _explain_optimizer(obj)
    elif not isinstance(obj, type) and unwrap_function(obj) is not None:
        records = _explain_function(obj)
    else:
        raise DynscalarTypeError(
            f"dynscalar.explain: expected a torch.nn.Module, a torch.optim.Optimizer or a "
            f"function, got {type(obj).__name__}. Pass the model, the optimizer or the function "
            "you compile (a torch.compile wrapper of one works too)."
        )
    if show:
        print(records)
    return records


def _explain_module(module: torch.nn.Module) -> Explanation:
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
        records.extend(_forward_arguments(path, sub))
    return records


def _forward_arguments(path: str, module: torch.nn.Module) -> list[MarkRecord]:
    """The marked arguments of ``module.forward``: the instance's marks win, as in the bridge."""
    forward = unwrap_function(type(module).forward)
    on_function = function_marks(forward.__code__) if forward is not None else None
    on_instance = instance_marks(module, ARG_MARKS_KEY) or {}
    marks = {n: (spec, "@dynamic_args") for n, spec in (on_function or {}).items()}
    marks.update({n: (spec, "mark_dynamic_args") for n, spec in on_instance.items()})
    cls = type(module).__name__
    return [
        MarkRecord(path, cls, f"forward({name})", ARGUMENT, how, spec)
        for name, (spec, how) in sorted(marks.items())
        if spec is not None
    ]


def _explain_function(function: Any) -> Explanation:
    inner = unwrap_function(function)
    assert inner is not None  # checked by explain
    marks = function_marks(inner.__code__) or {}
    name = inner.__qualname__
    records = Explanation(
        MarkRecord("", "function", f"{name}({arg})", ARGUMENT, "mark_dynamic_args", spec)
        for arg, spec in sorted(marks.items())
    )
    records.subject = "function"
    return records


def _explain_optimizer(optimizer: torch.optim.Optimizer) -> Explanation:
    marks = instance_marks(optimizer, GROUP_MARKS_KEY) or {}
    records = Explanation()
    records.subject = "optimizer"
    for key, spec in sorted(marks.items()):
        values = tuple(group.get(key) for group in optimizer.param_groups)
        value = values[0] if len(set(map(repr, values))) == 1 else list(values)
        records.append(
            MarkRecord(
                "",
                type(optimizer).__name__,
                f"param_groups[*][{key!r}]",
                value,
                "mark_dynamic_param_groups",
                spec,
            )
        )
    for name, spec in sorted((instance_marks(optimizer, STATE_MARKS_KEY) or {}).items()):
        held = [state.get(name) for state in optimizer.state.values() if name in state]
        value = held[0] if len(set(map(repr, held))) == 1 else held
        records.append(
            MarkRecord(
                "",
                type(optimizer).__name__,
                f"state[*][{name!r}]",
                value,
                "mark_dynamic_param_groups(state=...)",
                spec,
            )
        )
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
