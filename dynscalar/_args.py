"""Argument marks: a function's (or a module's ``forward``'s) int/float parameters, dynamic.

The value a caller passes stays a plain ``int``/``float`` (no proxy, so C code such as
``torch.tensor([t])`` or ``json.dumps`` accepts it), and ``torch.compile`` traces it as a
symbolic graph input from the first compile.

Where the marks live:

* for a function (or a method, via ``@dynamic_args``): keyed by its code object, so every
  call of that function is covered, whichever wrapper Dynamo compiles it through;
* for a module instance: on the instance (``module.__dict__[ARG_MARKS_KEY]``), covering
  its ``forward``; other instances of the class are unaffected, and the marks survive
  ``deepcopy``/``pickle`` like attribute marks.

Marks apply to the arguments of the frame torch.compile compiles (the function you pass
to ``torch.compile``, or a compiled module's ``forward``).  A value that reaches a marked
function through an *inlined* call was already turned into a constant or a symbol by the
caller's frame: mark it there.
"""

from __future__ import annotations

import difflib
import inspect
import types
from collections.abc import Callable
from typing import Any, TypeVar

import torch

from ._diagnostics import DynscalarTypeError
from ._registry import MARKS_EPOCH, _check_names, _write_lock, compiled_original, edit_marks
from ._spec import DynamicSpec

__all__ = [
    "ARG_MARKS_KEY",
    "dynamic_args",
    "lookup_arg_mark",
    "mark_dynamic_args",
    "unmark_dynamic_args",
]

ARG_MARKS_KEY = "_dynscalar_arg_marks"

#: code object of a marked function -> {parameter name: spec}; replaced copy-on-write
_FUNCTION_MARKS: dict[types.CodeType, dict[str, DynamicSpec]] = {}

#: code of a decorator's wrapper (``wrapper(self, *args, **kwargs)``, functools.wraps) ->
#: the function it wraps: Dynamo may compile the wrapper, whose frame holds the marked
#: arguments in ``args``/``kwargs``.
_WRAPPERS: dict[types.CodeType, types.FunctionType] = {}


def _unwrapped(function: Any) -> types.FunctionType | None:
    """The innermost Python function of a ``__wrapped__`` chain; wrappers are remembered."""
    chain: list[types.FunctionType] = []
    seen = 0
    while function is not None and seen < 10:
        inner = getattr(function, "__func__", function)
        if isinstance(inner, types.FunctionType):
            chain.append(inner)
        function = getattr(function, "_torchdynamo_orig_callable", None) or getattr(
            function, "__wrapped__", None
        )
        seen += 1
    if not chain:
        return None
    innermost = chain[-1]
    for wrapper in chain[:-1]:
        _WRAPPERS[wrapper.__code__] = innermost
    return innermost


def _closure_target(code: types.CodeType, closure: Any) -> types.FunctionType | None:
    """For a forwarding wrapper made by a closure (``def inner(*args, **kwargs): return
    fn(*args, **kwargs)``: torch.compile's ``wrap_inline`` around ``@torch.no_grad()``
    functions, most decorators), the marked function its cell ``fn`` leads to."""
    if not closure or code.co_argcount or code.co_kwonlyargcount:
        return None
    for cell in closure:
        try:
            content = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if not callable(content) or isinstance(content, type):
            continue
        inner = _unwrapped(content)
        if inner is not None and inner.__code__ in _FUNCTION_MARKS:
            return inner
    return None


def wrapped_parameter(
    code: types.CodeType,
    position: int | None = None,
    keyword: str | None = None,
    closure: Any = None,
) -> tuple[types.CodeType, str] | None:
    """In a wrapper's frame, the wrapped function's parameter behind ``args[position]`` or
    ``kwargs[keyword]``: ``(the wrapped function's code, parameter name)``.

    The wrapper is assumed to pass its named parameters first, then ``*args`` in order
    (``def wrapper(self, *args, **kwargs): return fn(self, *args, **kwargs)``); it is
    found through the ``__wrapped__`` chain of what was marked, or, for a ``(*args,
    **kwargs)`` wrapper, through its ``closure`` (the frame's cells).
    """
    inner = _WRAPPERS.get(code) or _closure_target(code, closure)
    if inner is None:
        return None
    if keyword is not None:
        return inner.__code__, keyword
    named = inner.__code__.co_varnames[: inner.__code__.co_argcount]
    index = code.co_argcount + (position or 0)
    return (inner.__code__, named[index]) if index < len(named) else None


Target = TypeVar("Target")


def _function_of(target: object, api: str) -> types.FunctionType:
    """The Python function behind ``target`` (a function, a method, a torch.compile wrapper)."""
    function = _unwrapped(target)  # through torch.compile and functools.wraps wrappers
    if function is None:
        raise DynscalarTypeError(
            f"dynscalar.{api}: expected a Python function or a torch.nn.Module, got "
            f"{type(target).__name__}. Mark the function torch.compile compiles (or the "
            "module), e.g. dynscalar.mark_dynamic_args(step_fn, 'timestep')."
        )
    return function


def _check_parameters(function: Callable[..., Any], names: tuple[str, ...], what: str) -> None:
    """Each name must be a named parameter (positional or keyword) of ``function``, or
    arrive through its ``**kwargs`` (Hugging Face forwards take most arguments that way)."""
    signature = inspect.signature(function).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature):
        return
    parameters = [
        p.name
        for p in signature
        if p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]
    for name in names:
        if name not in parameters or name == "self":
            close = difflib.get_close_matches(name, parameters, n=3)
            hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            raise DynscalarTypeError(
                f"dynscalar: {what} has no parameter {name!r} to mark dynamic.{hint} Its "
                f"parameters are {', '.join(p for p in parameters if p != 'self') or 'none'}; "
                "values passed through *args cannot be marked by name."
            )


def mark_dynamic_args(
    fn_or_module: Target,
    *names: str,
    unbacked: bool = False,
    min: int | None = None,  # noqa: A002 - mirrors torch's mark_dynamic(min=, max=)
    max: int | None = None,  # noqa: A002
    strict: bool = False,
) -> Target:
    """Trace the int/float parameters ``names`` of a function or module as symbolic inputs.

    The caller keeps passing plain ints/floats; the first compile is already symbolic
    (backed by default: compiles = control-flow paths).  For a module the marks cover its
    ``forward`` on this instance.  Returns ``fn_or_module``.

    Examples:
        >>> import torch, dynscalar
        >>> def scale(x, t):
        ...     return x * t
        >>> f = torch.compile(dynscalar.mark_dynamic_args(scale, "t"), backend="eager")
        >>> [f(torch.ones(1), t).item() for t in (2, 3)]
        [2.0, 3.0]
    """
    checked = _check_names(names, "mark_dynamic_args")
    spec = DynamicSpec.build(
        unbacked=unbacked, min=min, max=max, strict=strict, where="dynscalar.mark_dynamic_args"
    )
    if isinstance(fn_or_module, torch.nn.Module):
        module = compiled_original(fn_or_module)
        forward = _unwrapped(type(module).forward) or type(module).forward
        _check_parameters(forward, checked, f"{type(module).__name__}.forward")
        edit_marks(
            module.__dict__,
            lambda marks: marks.update(dict.fromkeys(checked, spec)),
            key=ARG_MARKS_KEY,
        )
        return fn_or_module
    function = _function_of(fn_or_module, "mark_dynamic_args")
    _check_parameters(function, checked, f"{function.__qualname__}()")
    with _write_lock:
        marks = dict(_FUNCTION_MARKS.get(function.__code__) or {})
        marks.update(dict.fromkeys(checked, spec))
        _FUNCTION_MARKS[function.__code__] = marks
        MARKS_EPOCH.value += 1
    return fn_or_module


def unmark_dynamic_args(fn_or_module: Target, *names: str) -> Target:
    """Undo [`mark_dynamic_args`][dynscalar.mark_dynamic_args] or
    [`dynamic_args`][dynscalar.dynamic_args] for ``names``.

    Examples:
        >>> import dynscalar
        >>> def scale(x, t):
        ...     return x * t
        >>> _ = dynscalar.mark_dynamic_args(scale, "t")
        >>> dynscalar.unmark_dynamic_args(scale, "t") is scale
        True
    """
    checked = _check_names(names, "unmark_dynamic_args")
    if isinstance(fn_or_module, torch.nn.Module):
        module = compiled_original(fn_or_module)

        def unmark(marks: dict[str, DynamicSpec | None]) -> None:
            for name in checked:
                marks.pop(name, None)

        edit_marks(module.__dict__, unmark, key=ARG_MARKS_KEY)
        return fn_or_module
    function = _function_of(fn_or_module, "unmark_dynamic_args")
    with _write_lock:
        marks = {
            name: spec
            for name, spec in (_FUNCTION_MARKS.get(function.__code__) or {}).items()
            if name not in checked
        }
        _FUNCTION_MARKS[function.__code__] = marks
        MARKS_EPOCH.value += 1
    return fn_or_module


def dynamic_args(
    *names: str,
    unbacked: bool = False,
    min: int | None = None,  # noqa: A002
    max: int | None = None,  # noqa: A002
    strict: bool = False,
) -> Callable[[Target], Target]:
    """Decorator form of [`mark_dynamic_args`][dynscalar.mark_dynamic_args], e.g. on a
    module's ``forward``.

    Examples:
        >>> import torch, dynscalar
        >>> class Denoiser(torch.nn.Module):
        ...     @dynscalar.dynamic_args("timestep")
        ...     def forward(self, x, timestep):
        ...         return x * timestep
    """
    _check_names(names, "dynamic_args")

    def decorate(function: Target) -> Target:
        return mark_dynamic_args(
            function, *names, unbacked=unbacked, min=min, max=max, strict=strict
        )

    return decorate


def lookup_arg_mark(code: types.CodeType, name: str, self_obj: object) -> DynamicSpec | None:
    """The mark of parameter ``name`` of the frame running ``code`` (``self_obj``: its self)."""
    if self_obj is not None:
        try:
            instance_marks = object.__getattribute__(self_obj, "__dict__").get(ARG_MARKS_KEY)
        except AttributeError:
            instance_marks = None
        if instance_marks and name in instance_marks:
            return instance_marks[name]  # type: ignore[no-any-return]
    marks = _FUNCTION_MARKS.get(code)
    return marks.get(name) if marks else None


def has_arg_marks(code: types.CodeType) -> bool:
    """True when parameters of ``code`` are marked for every caller (function marks)."""
    return bool(_FUNCTION_MARKS.get(code))
