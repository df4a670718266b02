"""Attribute marks: which plain int/float attributes of a module Dynamo traces symbolically.

The public API for attributes (``mark_dynamic_attr``, ``unmark_dynamic_attr``,
``is_dynamic_attr``, ``@dynamic_attrs``): it validates what is marked and says clearly
what is wrong; the marks themselves are kept by the mark store, ``dynscalar._marks``
(on the module instance, so ``copy.deepcopy``, ``pickle`` and ``torch.save`` keep them;
class marks in the store's table, per class, inherited by subclasses).  An instance can
unmark a class-marked attribute; that is recorded as ``None`` in its marks.  Marking
never runs user code: a name is checked where its value is stored, and a property's
getter is left for the compile that reads it.

Examples:
    >>> import torch
    >>> m = torch.nn.Linear(2, 2); m.step = 0
    >>> is_dynamic_attr(mark_dynamic_attr(m, "step"), "step")
    True
"""

from __future__ import annotations

import functools
import keyword
import threading
import types
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

import torch

from . import _caches
from ._diagnostics import (
    DynscalarAttributeError,
    DynscalarTypeError,
    UnsupportedDescriptorError,
    did_you_mean,
)
from ._marks import class_marks_of, edit_class_marks, edit_marks, lookup_mark
from ._proxy import coerce_float, is_dynamic_scalar
from ._spec import DynamicSpec

__all__ = [
    "check_names",
    "class_attribute",
    "dynamic_attrs",
    "is_stored",
    "is_dynamic_attr",
    "mark_dynamic_attr",
    "property_reads",
    "record_property_reads",
    "stored_value",
    "unmark_dynamic_attr",
]

ModuleT = TypeVar("ModuleT", bound=torch.nn.Module)
ClassT = TypeVar("ClassT", bound=type)


# ----------------------------------------------------------------------------- modules
def _check_module(module: object, api: str) -> torch.nn.Module:
    """The module marks live on; ``torch.compile(model)``'s wrapper stands for ``model``."""
    if not isinstance(module, torch.nn.Module):
        raise DynscalarTypeError(
            f"dynscalar.{api}: expected a torch.nn.Module, got {type(module).__name__}. For a "
            "plain value use dynscalar.mark_dynamic(value) or DynamicInt/DynamicFloat."
        )
    return compiled_original(module)


def compiled_original(module: torch.nn.Module) -> torch.nn.Module:
    """``model`` for ``torch.compile(model)`` (an ``OptimizedModule``), else ``module``.

    Dynamo traces the original module, never the wrapper, so a mark placed on the wrapper
    would silently do nothing.  (Detected by shape, not by importing torch._dynamo.)
    """
    original = module._modules.get("_orig_mod")
    if type(module).__name__ == "OptimizedModule" and isinstance(original, torch.nn.Module):
        return original
    return module


def check_names(
    names: tuple[object, ...], api: str, module: torch.nn.Module | None = None
) -> tuple[str, ...]:
    """``names`` as given to ``dynscalar.<api>``: at least one, each an identifier (a str).

    Shared by every marking API (attributes, arguments, param-group keys).  With the
    ``module`` of an attribute API, a dotted path (``"1.p"``) is answered with the mark of
    the submodule that holds the name (``mark_dynamic_attr(module[1], 'p')``).

    Examples:
        >>> check_names(("step", "lr"), "mark_dynamic_attr")
        ('step', 'lr')
    """
    if not names:
        raise DynscalarTypeError(
            f"dynscalar.{api}: name at least one attribute, e.g. {api}(module, 'step')."
        )
    for name in names:
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
            hint = ""
            if module is not None and isinstance(name, str) and "." in name.strip("."):
                path, _, attr = name.rpartition(".")
                hint = (
                    f" {name!r} is a path: mark the submodule that holds {attr!r}, "
                    f"{api}({submodule_expr(module, path)}, {attr!r})."
                )
            raise DynscalarTypeError(
                f"dynscalar.{api}: attribute names must be identifiers given as str, "
                f"got {name!r}.{hint}"
            )
    return tuple(names)  # type: ignore[arg-type]


def submodule_expr(module: torch.nn.Module | None, path: str, root: str = "module") -> str:
    """A Python expression for ``module.get_submodule(path)``, written as a user would.

    Examples:
        >>> import torch
        >>> model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.1))
        >>> submodule_expr(model, "1"), submodule_expr(None, "blocks.0.drop")
        ('module[1]', 'module.blocks[0].drop')
    """
    expr, current = root, module
    for part in path.split("."):
        indexed = (torch.nn.Sequential, torch.nn.ModuleList)
        if isinstance(current, torch.nn.ModuleDict):
            expr += f"[{part!r}]"
        elif part.isdigit() and (current is None or isinstance(current, indexed)):
            expr += f"[{part}]"
        elif part.isidentifier() and not keyword.iskeyword(part):
            expr += f".{part}"
        else:
            return f"{root}.get_submodule({path!r})"
        current = None if current is None else current._modules.get(part)
    return expr


def _holders(module: torch.nn.Module, name: str) -> list[tuple[str, torch.nn.Module]]:
    """The submodules of ``module`` that hold an int/float attribute ``name``."""
    found = []
    for path, sub in module.named_modules():
        if not path or name in sub._modules or name in sub._parameters or name in sub._buffers:
            continue
        value = stored_value(sub, name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            found.append((path, sub))
    return found


def _holders_hint(module: torch.nn.Module, name: str) -> str:
    holders = _holders(module, name)
    if not holders:
        return ""
    shown = [f"{submodule_expr(module, path)} ({type(sub).__name__})" for path, sub in holders]
    first = submodule_expr(module, holders[0][0])
    if len(shown) == 1:
        which = f"Its submodule {shown[0]} has one"
    else:
        more = f" and {len(shown) - 3} more" if len(shown) > 3 else ""
        which = f"Its submodules {', '.join(shown[:3])}{more} have one"
    return f" {which}: mark it where it lives, e.g. mark_dynamic_attr({first}, {name!r})" + (
        " (once per submodule)." if len(shown) > 1 else "."
    )


def _candidates(module: torch.nn.Module) -> list[str]:
    names = set(vars(module))
    names.update(module._parameters, module._buffers, module._modules)
    return sorted(n for n in names if not n.startswith("_"))


_MISSING: Any = object()


def class_attribute(cls: type, name: str) -> Any:
    """``name`` as the class defines it (the first class of the MRO holding it), unbound;
    a private sentinel when no class does."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return _MISSING


def is_followed_property(attribute: object) -> bool:
    """True for a property whose getter is Python code: Dynamo inlines it, and a mark on
    its name follows it to the values it reads."""
    return isinstance(attribute, property) and isinstance(attribute.fget, types.FunctionType)


def check_descriptor(cls: type, name: str, instance_dict: dict[str, Any] | None) -> str:
    """Refuse marking ``cls.name`` where its value does not live in the instance and the
    mark could not follow it; return how it is read ("" for a plain attribute, else
    "property" or "cached_property").

    ``instance_dict`` is the instance's ``__dict__`` (None for a class mark): a value
    stored there shadows a non-data descriptor, as in Python.
    """
    attribute = class_attribute(cls, name)
    if attribute is _MISSING:
        return ""
    where = f"{cls.__name__}.{name}"
    fix = (
        f"Mark the plain int/float attribute it reads instead (mark_dynamic_attr(owner, "
        f"'attr') on the module that holds it), or keep the value in a plain attribute of "
        f"{cls.__name__} and mark that."
    )
    if isinstance(attribute, property):
        if attribute.fget is None:
            raise UnsupportedDescriptorError(
                f"dynscalar: {where} is a property without a getter; there is no value to "
                f"mark dynamic. {fix}"
            )
        if not is_followed_property(attribute):
            raise UnsupportedDescriptorError(
                f"dynscalar: {where} is a property whose getter ({attribute.fget!r}) is not "
                f"Python code, so torch.compile cannot follow it to the value it reads. {fix}"
            )
        return "property"
    if isinstance(attribute, functools.cached_property):
        return "cached_property"  # computed once, then a plain value in the instance dict
    kind = type(attribute)
    if isinstance(attribute, (types.FunctionType, staticmethod, classmethod)) or not hasattr(
        kind, "__get__"
    ):
        return ""  # a method (refused by the value check) or a class-level default value
    data = hasattr(kind, "__set__") or hasattr(kind, "__delete__")
    if not data and instance_dict is not None and name in instance_dict:
        return ""  # the instance's own value shadows a non-data descriptor
    raise UnsupportedDescriptorError(
        f"dynscalar: {where} is a {kind.__module__}.{kind.__qualname__} descriptor: its value "
        "is computed by that descriptor, not stored in the instance, and dynscalar can "
        "follow only a property with a Python getter or a functools.cached_property. "
        f"{fix}"
    )


def _validate_attr(module: torch.nn.Module, name: str, spec: DynamicSpec) -> None:
    """Raise a clear error unless ``module.name`` is an int/float that can be traced.

    Static: the value is looked up where it lives (the instance dict, else the class), and
    no user code runs - a property's getter or a ``cached_property`` not computed yet is
    checked when a compile reads it, as are names a custom ``__getattr__`` provides.
    """
    cls = type(module).__name__
    where = f"{cls}.{name}"
    if name in module._parameters:
        kind = "a parameter"
    elif name in module._buffers:
        kind = "a buffer"
    elif name in module._modules:
        raise DynscalarTypeError(
            f"dynscalar: {where} is a submodule, not a scalar. Mark the scalar attribute on "
            f"the submodule instead, e.g. mark_dynamic_attr(module.{name}, 'step')."
        )
    else:
        kind = ""
    if kind:
        raise DynscalarTypeError(
            f"dynscalar: {where} is {kind} (a tensor); tensors are already graph inputs. Use "
            f"torch._dynamo.mark_dynamic(module.{name}, dim) for dynamic shapes."
        )
    read = check_descriptor(type(module), name, module.__dict__)
    if read == "property" or (read == "cached_property" and name not in module.__dict__):
        return  # computed by user code: never run here (eager would not run it now)
    value = stored_value(module, name)
    if value is _MISSING:
        if type(module).__getattr__ is not torch.nn.Module.__getattr__:
            return  # a custom __getattr__ may provide it: user code, not run here
        hint = _holders_hint(module, name)
        if hint:
            raise DynscalarAttributeError(
                f"dynscalar: {cls} has no attribute {name!r} to mark dynamic.{hint}"
            )
        hint = did_you_mean(name, _candidates(module))
        raise DynscalarAttributeError(
            f"dynscalar: {cls} has no attribute {name!r} to mark dynamic.{hint} Set the "
            f"attribute (e.g. in __init__) before marking it."
        )
    check_marked_value(value, spec, where)


def stored_value(module: object, name: str) -> Any:
    """``module.name`` where it is stored - the instance dict, else a class of the MRO -
    without running any getter; a private sentinel when neither holds it (a property is
    returned as the ``property`` object itself)."""
    instance_dict = getattr(module, "__dict__", {})
    if name in instance_dict:
        return instance_dict[name]
    return class_attribute(type(module), name)


def is_stored(value: object) -> bool:
    """False for :func:`stored_value`'s sentinel."""
    return value is not _MISSING


def check_marked_value(value: object, spec: DynamicSpec, where: str) -> None:
    """Validate the current value of a marked attribute (used at mark and at trace time)."""
    if is_dynamic_scalar(value):
        value = value.__wrapped__
    if isinstance(value, bool):
        raise DynscalarTypeError(
            f"dynscalar: {where} is a bool; flags select code paths, so each value compiles "
            "once anyway. Leave it unmarked, or store an int if it really counts something."
        )
    if isinstance(value, torch.Tensor):
        raise DynscalarTypeError(
            f"dynscalar: {where} is a torch.Tensor; tensors are already graph inputs. Use "
            "torch._dynamo.mark_dynamic(tensor, dim) for dynamic shapes."
        )
    if isinstance(value, int):
        spec.check_int(value, where)
        return
    if isinstance(value, float):
        spec.check_float(value, where)
        coerce_float(value, where)
        return
    raise DynscalarTypeError(
        f"dynscalar: {where} is {type(value).__name__} ({value!r}), not an int or float; only "
        "Python int/float attributes can be marked dynamic."
    )


def mark_dynamic_attr(
    module: ModuleT,
    *names: str,
    unbacked: bool = False,
    min: int | None = None,  # noqa: A002
    max: int | None = None,  # noqa: A002
    strict: bool = False,
) -> ModuleT:
    """Trace the int/float attributes ``names`` of ``module`` as symbolic graph inputs.

    The attributes stay plain Python ints/floats; the mark is stored on the module
    (it survives ``deepcopy``, ``pickle`` and ``torch.save``).  Returns ``module``.

    A name may be a ``property`` with a Python getter (Lightning's ``global_step`` and
    ``current_epoch``): in compiled code the mark follows the getter, and every int/float
    it reads becomes symbolic.  A ``functools.cached_property`` is read from the instance
    once computed.  Marking never runs a getter (it may not be able to run yet, and eager
    code would not run it there): what it returns is checked when a compile reads it.  Any
    other descriptor whose value does not live in the instance raises
    ``UnsupportedDescriptorError``.

    Examples:
        >>> import torch
        >>> m = torch.nn.Linear(2, 2); m.step = 0
        >>> marked = mark_dynamic_attr(m, "step")
        >>> marked is m, type(m.step) is int, is_dynamic_attr(m, "step")
        (True, True, True)
    """
    target = _check_module(module, "mark_dynamic_attr")
    checked = check_names(names, "mark_dynamic_attr", target)
    spec = DynamicSpec.build(
        unbacked=unbacked,
        min=min,
        max=max,
        strict=strict,
        where=f"dynscalar.mark_dynamic_attr({type(target).__name__})",
    )
    for name in checked:
        _validate_attr(target, name, spec)
    edit_marks(target.__dict__, lambda marks: marks.update(dict.fromkeys(checked, spec)))
    from ._bridge._limits import warn_if_past_recompile_limit

    warn_if_past_recompile_limit(target, checked, stacklevel=2)
    return module


def unmark_dynamic_attr(module: ModuleT, *names: str) -> ModuleT:
    """Undo ``mark_dynamic_attr`` (or a class's
    ``dynamic_attrs``) for ``names``.

    A ``DynamicInt``/``DynamicFloat`` value stored in the attribute is replaced by its plain
    value, so the attribute is specialized again like any int.  Returns ``module``.

    Examples:
        >>> import torch
        >>> m = mark_dynamic_attr(torch.nn.Linear(2, 2), "in_features")
        >>> is_dynamic_attr(unmark_dynamic_attr(m, "in_features"), "in_features")
        False
    """
    target = _check_module(module, "unmark_dynamic_attr")
    checked = check_names(names, "unmark_dynamic_attr", target)
    class_marks = class_marks_of(type(target))

    def unmark(marks: dict[str, DynamicSpec | None]) -> None:
        for name in checked:
            if name in class_marks:
                marks[name] = None  # tombstone: the class marks it, this instance does not
            else:
                marks.pop(name, None)
            value = target.__dict__.get(name)
            if is_dynamic_scalar(value):
                target.__dict__[name] = value.__wrapped__

    edit_marks(target.__dict__, unmark)
    return module


def is_dynamic_attr(module: torch.nn.Module, name: str) -> bool:
    """True if ``module.name`` is traced symbolically: marked, or holding a dynamic scalar.

    Examples:
        >>> import torch
        >>> from dynscalar import DynamicInt
        >>> m = torch.nn.Linear(2, 2); m.step = DynamicInt(0)
        >>> is_dynamic_attr(m, "step"), is_dynamic_attr(m, "in_features")
        (True, False)
    """
    target = _check_module(module, "is_dynamic_attr")
    if lookup_mark(target, name) is not None:
        return True
    return is_dynamic_scalar(target.__dict__.get(name))


def dynamic_attrs(
    *names: str,
    unbacked: bool = False,
    min: int | None = None,  # noqa: A002
    max: int | None = None,  # noqa: A002
    strict: bool = False,
) -> Callable[[ClassT], ClassT]:
    """Class decorator: ``names`` are dynamic on every instance of an ``nn.Module`` subclass.

    Subclasses inherit the marks; an instance can opt out with
    ``unmark_dynamic_attr``.

    Examples:
        >>> import torch
        >>> @dynamic_attrs("step")
        ... class Counter(torch.nn.Module):
        ...     def __init__(self):
        ...         super().__init__(); self.step = 0
        >>> is_dynamic_attr(Counter(), "step")
        True
    """
    checked = check_names(names, "dynamic_attrs")
    spec = DynamicSpec.build(
        unbacked=unbacked, min=min, max=max, strict=strict, where="dynscalar.dynamic_attrs"
    )

    def decorate(cls: ClassT) -> ClassT:
        if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
            what = cls.__name__ if isinstance(cls, type) else type(cls).__name__
            raise DynscalarTypeError(
                f"dynscalar.dynamic_attrs: {what} is not a torch.nn.Module subclass. Decorate "
                "an nn.Module class, or use DynamicInt/DynamicFloat values for other objects."
            )
        for name in checked:
            check_descriptor(cls, name, None)
        edit_class_marks(cls, lambda own: own.update(dict.fromkeys(checked, spec)))
        return cls

    return decorate


# What a marked property resolved to when it was last traced: module -> {property name:
# the attribute chains (relative to the module, "self.progress.completed") its getter read
# and the bridge made symbolic}.  Written by the bridge at trace time, read by ``explain``;
# a record of past traces, not a mark, so a cache reset forgets it.
_property_reads: weakref.WeakKeyDictionary[torch.nn.Module, dict[str, tuple[str, ...]]] = (
    weakref.WeakKeyDictionary()
)
_property_reads_lock = threading.Lock()


@_caches.register
def _forget_property_reads() -> None:
    with _property_reads_lock:
        _property_reads.clear()


def record_property_reads(module: torch.nn.Module, name: str, reads: tuple[str, ...]) -> None:
    """Remember what the property ``name`` of ``module`` read in its last trace."""
    with _property_reads_lock:
        _property_reads.setdefault(module, {})[name] = reads


def property_reads(module: torch.nn.Module, name: str) -> tuple[str, ...] | None:
    """What the property ``name`` of ``module`` read in its last trace (None: not traced)."""
    return _property_reads.get(module, {}).get(name)
