"""Marked values followed into the frames they are handed to at a graph break.

A graph break splits a compiled function into frames Dynamo compiles one by one: a
function called with a marked argument runs (and is compiled) as a frame of its own when
it graph-breaks itself (``self._codebook(x, sample_codebook_temp=t)`` in
vector-quantize-pytorch, Hugging Face's loss taking ``num_items_in_batch``).  There the
value is an argument of a function nobody marked: stock torch compiles it as a constant,
once per value.

What Dynamo knows is where each value on its stack came from.  When a compile that made
values symbolic breaks at a call, :func:`record_call` (from write-back's hook on
``OutputGraph.codegen_suffix``) looks at the call's operands: an operand that *is* a
marked value (its variable is the graph input the mark made, not a value computed from
it) is written down with its spec, by its place in the call (positional index or keyword),
together with the call's shape (how many positional operands, which keywords, whether the
callable binds a ``self``).  The record is a constant the compiled code stores in a local
of its own just before it makes the call.

When Dynamo then compiles the callee, :func:`caller_mark` maps the callee's parameter
back to the place in that call it was bound from: by Python's binding rules where the
compiled caller called it directly, and through frames that forward their ``*args`` and
``**kwargs`` (``Module.__call__``'s ``_wrapped_call_impl`` and ``_call_impl``, decorator
wrappers) by lining up their argument tuples with the callee's.  Only a parameter bound
from a recorded place takes the mark: a value that merely equals, or is the same object
as, a marked one (CPython shares small ints and constants) is not marked, and a caller's
``strict=True`` never reaches a value nobody marked.

No guard is added for it: the graph compiled for the parameter is symbolic, so it is
correct for every value, whoever passes it.  A later caller that passes a plain number
runs it (stock torch would compile that value once, then make it dynamic); checking the
caller on every call would cost a Python guard that walks frames, and only recompile.
"""

from __future__ import annotations

import dis
import sys
import types
from typing import Any, NamedTuple

import torch

from .._spec import DynamicSpec
from . import _torch

__all__ = [
    "CallRecord",
    "CallerMark",
    "caller_mark",
    "record_call",
    "records_made",
    "resumed_code",
    "star_names",
]

#: the local a compiled frame's code stores its call record in (``OutputGraph.new_var``
#: adds a number)
RECORD_LOCAL = "___dynscalar_call"
#: forwarding frames looked through between the callee and the compiled caller
#: (``Module.__call__`` is two: ``_wrapped_call_impl``, ``_call_impl``)
_DEPTH = 8
_CO_VARARGS, _CO_VARKEYWORDS = 0x04, 0x08
_CALL_FUNCTION_EX = dis.opmap["CALL_FUNCTION_EX"]


#: whether any compiled code of this process records a call (compiles without one never
#: look at their callers)
_made = [False]


def records_made() -> bool:
    """True once a compiled frame in this process hands a marked value on at a call."""
    return _made[0]


class CallerMark(NamedTuple):
    """The mark a caller handed on for a value: its spec and where (``f(t)``)."""

    spec: DynamicSpec
    where: str


class CallRecord(NamedTuple):
    """The call a compiled frame makes right after its graph: which operands are marked
    values (positional index or keyword -> (spec, where)), and the call's shape; and which
    live locals it hands to its resume function are (name -> (spec, where))."""

    positional: dict[int, tuple[DynamicSpec, str]]
    keywords: dict[str, tuple[DynamicSpec, str]]
    npos: int  # positional operands
    bound: int  # 1 where the callable binds ``self`` itself (a bound method, a module)
    locals: dict[str, tuple[DynamicSpec, str]]


# ----------------------------------------------------------------------------- recording
def _call_operands(tx: Any, stack: list[Any]) -> tuple[Any, list[Any], dict[str, Any]] | None:
    """(callable, positional operands, keyword operands) of the call ``tx`` breaks at, from
    the stack values handed on (their last items are the call's operands), as Dynamo's own
    ``_call`` reads them; None for an instruction that is not a call."""
    inst: Any = getattr(tx, "current_instruction", None)
    name = getattr(inst, "opname", None)
    if name == "CALL_FUNCTION_EX":
        has_kwargs = bool(inst.arg & 1)
        if len(stack) < 2 + has_kwargs:
            return None
        kwargs_vt = stack[-1] if has_kwargs else None
        args_vt = stack[-2] if has_kwargs else stack[-1]
        fn = stack[-3] if has_kwargs else stack[-2]
        items = getattr(args_vt, "items", None)
        if not isinstance(items, list | tuple):
            return None
        keywords: dict[str, Any] = {}
        if kwargs_vt is not None:
            pairs = getattr(kwargs_vt, "items", None)
            if not isinstance(pairs, dict):
                return None
            for key, value in pairs.items():
                constant: Any = getattr(key, "vt", key)
                if not constant.is_python_constant():
                    return None
                keywords[constant.as_python_constant()] = value
        return fn, list(items), keywords
    if name not in ("CALL", "CALL_KW", "CALL_FUNCTION", "CALL_FUNCTION_KW"):
        return None
    argc = inst.arg or 0
    if name in ("CALL_KW", "CALL_FUNCTION_KW"):  # the names are the top of the stack
        names_vt, stack = stack[-1], stack[:-1]
        if not names_vt.is_python_constant():
            return None
        kw_names = tuple(names_vt.as_python_constant())
    else:
        kw_names = _kw_names(tx, inst)
    if name.startswith("CALL_FUNCTION"):  # 3.10: [fn, args...]
        if len(stack) < argc + 1:
            return None
        fn, operands = stack[-argc - 1], list(stack[len(stack) - argc :])
    else:  # 3.11+: [NULL, fn, args...] or [fn, self, args...] (3.13: NULL and fn swapped)
        if len(stack) < argc + 2:
            return None
        first, second = stack[-argc - 2], stack[-argc - 1]
        operands = list(stack[len(stack) - argc :])
        null = _torch.NullVariable
        if sys.version_info >= (3, 13):
            fn = first
            operands = operands if isinstance(second, null) else [second, *operands]
        elif isinstance(first, null):
            fn = second
        else:
            fn, operands = first, [second, *operands]
    split = len(operands) - len(kw_names)
    return fn, operands[:split], dict(zip(kw_names, operands[split:], strict=True))


def _binds_self(fn: Any) -> int | None:
    """1 where calling ``fn`` binds a ``self`` before the operands (a bound method, a
    module), 0 for a function; None for anything else (builtins, classes,
    ``functools.partial``): not followed.  A lazy variable is read, not realized (that
    would guard what the frame never used)."""
    lazy = _torch.LazyVariableTracker
    if isinstance(fn, lazy) and not fn.is_realized():
        obj = fn.peek_value()
        if isinstance(obj, types.FunctionType):
            return 0
        if isinstance(obj, types.MethodType | torch.nn.Module):
            return 1
        return None
    if isinstance(fn, lazy):
        fn = fn.unwrap()
    kind = type(fn).__name__
    if kind in ("UserFunctionVariable", "NestedUserFunctionVariable"):
        return 0
    if kind == "UserMethodVariable" or "NNModuleVariable" in kind:
        return 1
    return None


def record_call(tx: Any, marked: Any) -> CallRecord | None:
    """What the graph break ``tx`` is at hands on of the marked values (``marked(variable)``:
    its (spec, where), or None for anything that is not a marked value itself): the
    operands of the call it breaks at (the top of ``tx``'s own stack), and the live locals
    of the frame that its resume function receives under their names.  None when it hands
    on none."""
    by_position: dict[int, tuple[DynamicSpec, str]] = {}
    by_keyword: dict[str, tuple[DynamicSpec, str]] = {}
    npos = bound = 0
    found = _call_operands(tx, list(getattr(tx, "stack", ())))
    if found is not None and (binds := _binds_self(found[0])) is not None:
        _, positional, keywords = found
        by_position = {i: m for i, v in enumerate(positional) if (m := marked(v)) is not None}
        by_keyword = {k: m for k, v in keywords.items() if (m := marked(v)) is not None}
        npos, bound = len(positional), binds
    by_name: dict[str, tuple[DynamicSpec, str]] = {}
    if getattr(tx, "parent", None) is None:  # the root frame: its resume function's locals
        for name, variable in getattr(tx, "symbolic_locals", {}).items():
            if (m := marked(variable)) is not None:
                by_name[name] = m
    if not (by_position or by_keyword or by_name):
        return None
    _made[0] = True
    return CallRecord(by_position, by_keyword, npos, bound, by_name)


# ----------------------------------------------------------------------------- following
class _Incoming(NamedTuple):
    """How a frame was called: its positional vector (named positional parameters not
    bound by keyword, then ``*args``), and its keyword parameters (named ones bound by
    keyword, then ``**kwargs``)."""

    positional: list[Any]
    keywords: dict[str, Any]
    named_positional: int  # how many of ``positional`` are named parameters


def star_names(code: types.CodeType) -> tuple[str | None, str | None]:
    """The names of ``code``'s ``*args`` and ``**kwargs`` parameters (None: it has none)."""
    at = code.co_argcount + code.co_kwonlyargcount
    varargs = code.co_varnames[at] if code.co_flags & _CO_VARARGS else None
    at += varargs is not None
    return varargs, code.co_varnames[at] if code.co_flags & _CO_VARKEYWORDS else None


def _incoming(code: types.CodeType, f_locals: Any, by_keyword: set[str]) -> _Incoming:
    names = code.co_varnames[: code.co_argcount]
    named = [n for n in names if n not in by_keyword and n in f_locals]
    positional = [f_locals[n] for n in named]
    keywords = {  # named parameters bound by keyword, then keyword-only ones
        n: f_locals[n]
        for i, n in enumerate(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])
        if n in f_locals and (i >= code.co_argcount or n in by_keyword)
    }
    varargs, varkw = star_names(code)
    extra = f_locals.get(varargs) if varargs else None
    positional += list(extra) if isinstance(extra, tuple) else []
    extra = f_locals.get(varkw) if varkw else None
    keywords.update(extra if isinstance(extra, dict) else {})
    return _Incoming(positional, keywords, len(named))


def _record_of(frame: types.FrameType) -> CallRecord | None:
    """The call record a compiled frame stored before its call (None: none)."""
    for name, value in frame.f_locals.items():
        if name.startswith(RECORD_LOCAL) and isinstance(value, CallRecord):
            return value
    return None


def _forwards(frame: types.FrameType) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """The ``*args`` tuple and ``**kwargs`` dict of a frame that is calling on with them
    (``fn(*args, **kwargs)``: ``CALL_FUNCTION_EX``); None for any other frame."""
    code = frame.f_code
    if not code.co_flags & (_CO_VARARGS | _CO_VARKEYWORDS):
        return None
    lasti = frame.f_lasti
    if lasti < 0 or code.co_code[lasti] != _CALL_FUNCTION_EX:
        return None
    varargs, varkw = star_names(code)
    f_locals = frame.f_locals
    args = f_locals.get(varargs, ()) if varargs else ()
    kwargs = f_locals.get(varkw, {}) if varkw else {}
    if not isinstance(args, tuple) or not isinstance(kwargs, dict):
        return None
    return args, kwargs


def _through(child: _Incoming, index: int, args: tuple[Any, ...]) -> int | None:
    """The index in a forwarding frame's ``args`` that the child's positional ``index``
    was passed from: the one offset (the child may bind a ``self``, or the frame pass its
    own named parameters first) at which every forwarded item is the child's own."""
    found: set[int] = set()
    for offset in range(3):
        window = child.positional[offset : offset + len(args)]
        if len(window) == len(args) and all(a is b for a, b in zip(window, args, strict=True)):
            found.add(index - offset)
    if len(found) != 1:
        return None
    at = found.pop()
    return at if 0 <= at < len(args) else None


def _resumes(code: types.CodeType) -> bool:
    """Whether ``code`` (or the code Dynamo compiled it into) is a resume function: the
    rest of a frame after a graph break, whose parameters are that frame's live locals."""
    original = _torch.orig_code_map.get(code) or code
    return resumed_code(original) is not original


def resumed_code(code: Any) -> Any:
    """The code a Dynamo resume function (``torch_dynamo_resume_in_f_at_N``) continues,
    else ``code``.

    After a graph break, Dynamo compiles the rest of the frame as a new function whose
    parameters are the live locals under their own names: a marked argument keeps its mark
    there (the mark is on the original code)."""

    meta = _torch.ContinueExecutionCache.generated_code_metadata.get(code)
    return getattr(meta, "code", None) or code


def _kw_names(tx: Any, inst: Any) -> tuple[str, ...]:
    """The keyword names of the ``CALL`` ``inst`` (3.11, 3.12), from the ``KW_NAMES``
    instruction right before it (``PRECALL`` between them on 3.11), as CPython reads them.
    Not ``tx.kw_names``: Dynamo clears that when the call raised, which is how a graph break
    inside an inlined callee reaches the caller's break handling (torch 2.15)."""
    instructions = getattr(tx, "instructions", None)
    index = getattr(tx, "indexof", {}).get(inst)
    if not instructions or index is None:
        return ()
    for before in reversed(instructions[max(0, index - 2) : index]):
        if before.opname == "KW_NAMES":
            return tuple(tx.code_options["co_consts"][before.arg])
        if before.opname != "PRECALL":
            break
    return ()


def caller_mark(
    code: types.CodeType, f_locals: Any, place: tuple[str, Any], start: types.FrameType | None
) -> CallerMark | None:
    """The mark the compiled caller handed on for the parameter at ``place`` of the frame
    being compiled (its ``code`` and ``f_locals``; ``("name", "k")`` for a named parameter,
    ``("args", i)`` for ``*args[i]``, ``("kwargs", "k")`` for ``**kwargs['k']``), from the
    record of the call it was bound from; ``start``: the frame that called it.

    On the way up: a resume function's parameter is the local of the same name in the
    frame that resumes it: marked where that frame's record says it handed a marked value
    on as that local, else followed further only where it is the very object the frame was
    called with (one of its parameters, not reassigned before the break); a frame
    forwarding ``*args``/``**kwargs`` passes the item at the matching place
    (:func:`_through`); the first other frame must hold the record.
    """
    frame = start
    child_code, child_locals = code, f_locals
    kind, key = place
    for _ in range(_DEPTH):
        if frame is None:
            return None
        if _resumes(child_code):
            if kind != "name":
                return None
            record = _record_of(frame)
            handed = record.locals.get(key) if record is not None else None
            if handed is not None:  # a marked value the compiled frame handed on as this local
                return CallerMark(*handed)
            if frame.f_locals.get(key, _MISSING) is not child_locals.get(key):
                return None  # not the object the frame was called with
            inputs = frame.f_code.co_varnames[
                : frame.f_code.co_argcount + frame.f_code.co_kwonlyargcount
            ]
            if key not in inputs:  # a value the function made itself, not one it was passed
                return None
        else:
            record = _record_of(frame)
            if record is not None:
                return _from_record(record, child_code, child_locals, kind, key)
            forwarded = _forwards(frame)
            if forwarded is None:
                return None
            moved = _forwarded_place(child_code, child_locals, kind, key, *forwarded)
            if moved is None:
                return None
            kind, key = moved
        child_code, child_locals = frame.f_code, frame.f_locals
        frame = frame.f_back
    return None


_MISSING = object()


def _forwarded_place(
    code: types.CodeType,
    f_locals: Any,
    kind: str,
    key: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> tuple[str, Any] | None:
    """The place in a forwarding frame's ``*args``/``**kwargs`` that the parameter at
    (``kind``, ``key``) of the frame it calls (``code``, ``f_locals``) was passed from."""
    incoming = _incoming(code, f_locals, set(kwargs))
    if kind == "kwargs" or (kind == "name" and key in incoming.keywords):
        if key not in kwargs or kwargs[key] is not incoming.keywords.get(key):
            return None
        return "kwargs", key
    if kind == "name":
        positional = [n for n in code.co_varnames[: code.co_argcount] if n not in kwargs]
        if key not in positional:  # keyword-only, not forwarded by keyword
            return None
        index = positional.index(key)
    else:
        index = incoming.named_positional + key
    at = _through(incoming, index, args)
    return None if at is None else ("args", at)


def _from_record(
    record: CallRecord, code: types.CodeType, f_locals: Any, kind: str, key: Any
) -> CallerMark | None:
    """The recorded mark of the call operand the parameter at (``kind``, ``key``) of the
    frame the recorded call made (its ``code`` and ``f_locals``) was bound from."""
    if kind == "kwargs" or (kind == "name" and key in record.keywords):
        found = record.keywords.get(key)
    else:
        if kind == "name":
            names = code.co_varnames[: code.co_argcount]
            if key not in names:  # a keyword-only parameter not passed by keyword
                return None
            index = names.index(key)
        else:  # *args[key]: after the named positional parameters
            index = code.co_argcount + key
        slot = index - record.bound
        found = record.positional.get(slot) if 0 <= slot < record.npos else None
    return None if found is None else CallerMark(*found)
