"""Argument marks: a function's (or a module's ``forward``'s) int/float parameters, dynamic.

The value a caller passes stays a plain ``int``/``float`` (no proxy, so C code such as
``torch.tensor([t])`` or ``json.dumps`` accepts it), and ``torch.compile`` traces it as a
symbolic graph input from the first compile.

Where the marks live (kept by the mark store, ``dynscalar._marks``):

* for a function (or a method, via ``@dynamic_args``): keyed by its code object itself
  (identity: a function defined again from the same source keeps marks of its own), so
  every call of that function is covered, whichever wrapper Dynamo compiles it through;
  held weakly, so marking a function never keeps it alive;
* for a module instance: on the instance, covering its ``forward``; other instances of
  the class are unaffected, and the marks survive ``deepcopy``/``pickle`` like attribute
  marks.

Marks apply to the arguments of the frame torch.compile compiles (the function you pass
to ``torch.compile``, or a compiled module's ``forward``).  A value that reaches a marked
function through an *inlined* call was already turned into a constant or a symbol by the
caller's frame: mark it there.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import Any, TypeVar

import torch

from ._attrs import check_names, compiled_original
from ._diagnostics import DynscalarTypeError, did_you_mean
from ._marks import ARG_MARKS_KEY, edit_function_marks, edit_marks, unwrap_function
from ._spec import DynamicSpec

__all__ = ["dynamic_args", "mark_dynamic_args", "unmark_dynamic_args"]

Target = TypeVar("Target")


def _function_of(target: object, api: str) -> types.FunctionType:
    """The Python function behind ``target`` (a function, a method, a torch.compile wrapper)."""
    function = unwrap_function(target)  # through torch.compile and functools.wraps wrappers
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
            hint = did_you_mean(name, [p for p in parameters if p != "self"])
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
    checked = check_names(names, "mark_dynamic_args")
    spec = DynamicSpec.build(
        unbacked=unbacked, min=min, max=max, strict=strict, where="dynscalar.mark_dynamic_args"
    )
    if isinstance(fn_or_module, torch.nn.Module):
        module = compiled_original(fn_or_module)
        forward = unwrap_function(type(module).forward) or type(module).forward
        _check_parameters(forward, checked, f"{type(module).__name__}.forward")
        edit_marks(
            module.__dict__,
            lambda marks: marks.update(dict.fromkeys(checked, spec)),
            key=ARG_MARKS_KEY,
        )
        return fn_or_module
    function = _function_of(fn_or_module, "mark_dynamic_args")
    _check_parameters(function, checked, f"{function.__qualname__}()")
    edit_function_marks(function.__code__, lambda marks: marks.update(dict.fromkeys(checked, spec)))
    return fn_or_module


def unmark_dynamic_args(fn_or_module: Target, *names: str) -> Target:
    """Undo ``mark_dynamic_args`` or
    ``dynamic_args`` for ``names``.

    Examples:
        >>> import dynscalar
        >>> def scale(x, t):
        ...     return x * t
        >>> _ = dynscalar.mark_dynamic_args(scale, "t")
        >>> dynscalar.unmark_dynamic_args(scale, "t") is scale
        True
    """
    checked = check_names(names, "unmark_dynamic_args")

    def unmark(marks: dict[str, Any]) -> None:
        for name in checked:
            marks.pop(name, None)

    if isinstance(fn_or_module, torch.nn.Module):
        edit_marks(compiled_original(fn_or_module).__dict__, unmark, key=ARG_MARKS_KEY)
    else:
        edit_function_marks(_function_of(fn_or_module, "unmark_dynamic_args").__code__, unmark)
    return fn_or_module


def dynamic_args(
    *names: str,
    unbacked: bool = False,
    min: int | None = None,  # noqa: A002
    max: int | None = None,  # noqa: A002
    strict: bool = False,
) -> Callable[[Target], Target]:
    """Decorator form of ``mark_dynamic_args``, e.g. on a
    module's ``forward``.

    Examples:
        >>> import torch, dynscalar
        >>> class Denoiser(torch.nn.Module):
        ...     @dynscalar.dynamic_args("timestep")
        ...     def forward(self, x, timestep):
        ...         return x * timestep
    """
    check_names(names, "dynamic_args")

    def decorate(function: Target) -> Target:
        return mark_dynamic_args(
            function, *names, unbacked=unbacked, min=min, max=max, strict=strict
        )

    return decorate
