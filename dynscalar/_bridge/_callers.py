"""Argument marks followed into the frames a marked value reaches.

A graph break splits a compiled function into frames Dynamo compiles one by one: a
function called with a marked argument runs (and is compiled) as a frame of its own when
it graph-breaks itself (``self._codebook(x, sample_codebook_temp=t)`` in
vector-quantize-pytorch, Hugging Face's loss taking ``num_items_in_batch``), and so do the
resume functions of those frames.  There the value is an argument of a function nobody
marked: stock torch compiles it as a constant, once per value.

The value is the object the marked function received: while a frame it reaches is
compiled, the frame that holds the mark is running further up the stack, holding the same
object under the marked name.  :func:`caller_mark` walks the Python stack (at most
``_DEPTH`` frames) for such a frame: its code, or the code Dynamo compiled it from
(``torch._dynamo.utils.orig_code_map``, and a resume function's original), carries argument
marks (the function's, a module's ``forward`` for its instance, a decorator wrapper's or a
forwarding closure's for the function it wraps), and the value of a marked argument *is*
(identity) the value being compiled.  The compiled graph then takes it as a marked input,
and :func:`guard_caller_mark` makes the graph check it again on every call: a value no
marked frame holds (the same function called from elsewhere with a plain number) fails
the guard and compiles as stock torch compiles it, unless it equals the value the graph
was traced with (stock's constant graph for that value would be reused too).

Identity is exact for floats and for ints outside CPython's small-int cache (-5..256); a
small int held by a marked frame and passed elsewhere under another name is the same
object and is taken as marked: the graph stays correct for every value (it is symbolic),
only compiled once where stock would compile per value.
"""

from __future__ import annotations

import sys
import types
from typing import Any, NamedTuple

from .._marks import (
    ARG_MARKS_KEY,
    function_marks,
    instance_marks,
    lookup_arg_mark,
    wrapped_parameter,
)
from .._spec import DynamicSpec
from . import _torch

__all__ = ["CallerMark", "caller_mark", "guard_caller_mark"]

#: frames looked at above the compiled one: a marked value is usually passed a few levels
#: down (a module call is three frames: ``_wrapped_call_impl``, ``_call_impl``, ``forward``)
_DEPTH = 32
_CO_VARARGS, _CO_VARKEYWORDS = 0x04, 0x08


class CallerMark(NamedTuple):
    """The mark a running frame holds for a value: its spec and where (``f(t)``)."""

    spec: DynamicSpec
    where: str


def _original(code: types.CodeType) -> types.CodeType:
    """The code a running frame stands for: Dynamo's compiled code is run in place of the
    original (``orig_code_map``), and a resume function continues its original."""

    from ._wrap import _resumed

    code = _torch.orig_code_map.get(code) or code
    return _resumed(code)  # type: ignore[no-any-return]


def _label(code: types.CodeType, name: str) -> str:
    return f"{getattr(code, 'co_qualname', code.co_name)}({name})"  # co_qualname: 3.11+


def _cells(code: types.CodeType, f_locals: Any) -> tuple[Any, ...] | None:
    """The frame's closure cells, rebuilt from its locals (the frame does not expose them)."""
    if not code.co_freevars:
        return None
    return tuple(types.CellType(f_locals[n]) for n in code.co_freevars if n in f_locals)


def _in_frame(frame: types.FrameType, value: Any) -> CallerMark | None:
    """The mark ``frame`` holds for ``value`` (identity), if any."""
    code = _original(frame.f_code)
    own = function_marks(code)
    named = code.co_argcount + code.co_kwonlyargcount
    wrapper = bool(code.co_flags & (_CO_VARARGS | _CO_VARKEYWORDS)) and (
        code.co_freevars or wrapped_parameter(code, position=0) is not None
    )
    if not own and code.co_name != "forward" and not wrapper:
        return None  # nothing here can hold a mark: no locals read
    f_locals = frame.f_locals
    self_obj = f_locals.get("self")
    marks = dict(own or {})
    if self_obj is not None:
        marks.update(instance_marks(self_obj, ARG_MARKS_KEY) or {})
    varargs = code.co_varnames[named] if code.co_flags & _CO_VARARGS else None
    varkw_at = named + (1 if varargs else 0)
    varkw = code.co_varnames[varkw_at] if code.co_flags & _CO_VARKEYWORDS else None
    extra = f_locals.get(varkw) if varkw else None
    for name, spec in marks.items():
        if spec is None:
            continue
        if f_locals.get(name) is value or (isinstance(extra, dict) and extra.get(name) is value):
            return CallerMark(spec, _label(code, name))
    if wrapper:
        return _through_wrapper(code, f_locals, varargs, extra, value)
    return None


def _through_wrapper(
    code: types.CodeType, f_locals: Any, varargs: str | None, extra: Any, value: Any
) -> CallerMark | None:
    """A decorator's ``wrapper(*args, **kwargs)`` or a forwarding closure compiled in place
    of a marked function: the marks of the function it forwards ``args``/``kwargs`` to."""
    closure = _cells(code, f_locals)
    args = f_locals.get(varargs) if varargs else None
    found: tuple[Any, str] | None = None
    if isinstance(extra, dict):
        for key, item in extra.items():
            if item is value and isinstance(key, str):
                found = wrapped_parameter(code, keyword=key, closure=closure)
                break
    if found is None and isinstance(args, tuple):
        for index, item in enumerate(args):
            if item is value:
                found = wrapped_parameter(code, position=index, closure=closure)
                break
    if found is None:
        return None
    inner, name = found
    self_obj = f_locals.get("self")
    if self_obj is None and isinstance(args, tuple) and args:
        self_obj = args[0]  # a method's wrapper receives the module in args[0]
    spec = lookup_arg_mark(inner, name, self_obj)
    return CallerMark(spec, _label(inner, name)) if spec is not None else None


def caller_mark(value: Any, start: types.FrameType | None) -> CallerMark | None:
    """The mark of a running frame that holds ``value`` as a marked argument: ``start`` or
    the nearest one above it (None: none)."""
    frame = start
    for _ in range(_DEPTH):
        if frame is None:
            return None
        found = _in_frame(frame, value)
        if found is not None:
            return found
        frame = frame.f_back
    return None


def guard_caller_mark(source: Any, traced: Any, spec: DynamicSpec, where: str) -> None:
    """Guard the graph compiled for a value marked by a caller (``source``: where the
    compiled frame receives it; ``traced``: its value while tracing) to run for values a
    running frame holds with the same mark, or equal to ``traced``."""
    from ._guards import guard_lambda
    from ._sources import source_name

    getframe = sys._getframe

    def check(value: Any) -> bool:
        if value == traced:
            return True
        found = caller_mark(value, getframe(1))
        return found is not None and found.spec is spec

    text = f"{source_name(source)} == {traced!r} or is {where} (marked) in a calling frame"
    guard_lambda(source, check, text, ("caller-mark", source))
