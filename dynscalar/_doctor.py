"""``python -m dynscalar doctor SCRIPT [ARGS...]``: which Python scalars cause recompiles.

The doctor runs the user's script exactly as ``python SCRIPT ARGS...`` would (its folder
first on ``sys.path``, ``__name__ == "__main__"``, its own ``sys.argv``, an absolute
``__file__``) while :class:`dynscalar._bridge._recompiles.RecompileWatcher` hands over every
recompile, and every call past a recompile limit that missed the cache, with *all* the
scalar guards that failed (Dynamo itself reports only the first failing guard of each
compiled version, and nothing past the limit).  A scalar counts for a recompile when it
alone kept a cached version from serving the call: marking it dynamic would have avoided
the recompile.  Recompiles that also needed something else (a tensor shape: a smaller last
batch) are counted apart, never blamed on a scalar; a scalar that is already dynamic and
took another control-flow path (dropout's ``p == 0``) is a path, not a culprit.

Each scalar is named the way user code reaches it (``model.block``, ``model[1]``,
``opt.param_groups[0]['lr']``, the variable at the call site when there is one) and gets
runnable code: ``mark_dynamic_attr`` for module attributes, ``mark_dynamic_param_groups``
for an optimizer's hyperparameters (with torch's tensor learning rate as the alternative),
``mark_dynamic_args`` on what the call site calls for function arguments (callers keep
passing plain values; :func:`argument_fix`), and ``x = dynscalar.mark_dynamic(x)`` for
other values.
"""

from __future__ import annotations

import ast
import builtins
import json
import linecache
import math
import os
import shlex
import sys
import textwrap
import traceback
import types
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ._bridge._paths import (
    name_at_call_site,
    parse_source,
    quoted,
    render_step,
    root_name,
    user_path,
)

if TYPE_CHECKING:
    from ._bridge._recompiles import Recompile, ScalarGuardFailure, SourcePath

__all__ = [
    "ArgumentSite",
    "CallSite",
    "Culprit",
    "DoctorReport",
    "FixBlock",
    "PathTaken",
    "argument_fix",
    "fix_blocks",
    "format_json",
    "format_report",
    "rerun_command",
    "run_doctor",
]

DEFAULT_MODEL_NAME = "model"  # when the call site has no variable for the compiled module


# ----------------------------------------------------------------------------- records
@dataclass(frozen=True)
class CallSite:
    """A call of a compiled function in user code, and where each argument's value lies."""

    filename: str
    lineno: int
    statement: str  # the whole simple statement holding the call, dedented
    callee: str  # how the statement names what it calls: "step_fn", "model"
    arguments: dict[str, tuple[int, int]]  # parameter -> span of its value in `statement`

    def wrapped(self, parameters: list[str], wrap: str = "dynscalar.mark_dynamic") -> str:
        """The statement with each of ``parameters``' values wrapped in ``wrap(...)``."""
        text = self.statement
        for start, end in sorted((self.arguments[p] for p in parameters), reverse=True):
            text = f"{text[:start]}{wrap}({text[start:end]}){text[end:]}"
        return text


@dataclass(frozen=True)
class ArgumentSite:
    """The function-argument culprits of one compiled function at one call site."""

    function: str  # display name: "train_step", "Net.forward"
    parameters: tuple[str, ...]  # the culprit parameters
    call: CallSite | None  # None when the call could not be read


def argument_fix(site: ArgumentSite) -> list[str]:
    """Code (without ``import dynscalar``) that makes ``site.parameters`` dynamic.

    An argument mark (:func:`dynscalar.mark_dynamic_args`) on what the call site calls
    (``site.call.callee``: a compiled function, or a compiled module), so callers keep
    passing plain values; without a readable call site, on the function itself.
    """
    target = site.call.callee if site.call is not None else site.function
    names = ", ".join(_string(name) for name in site.parameters)
    return [f"dynscalar.mark_dynamic_args({target}, {names})"]


@dataclass
class Culprit:
    """One Python scalar whose new values made torch.compile recompile."""

    scalar: str  # "Net.step", "train_step(n)", "SGD.param_groups[0]['lr']", "cfg.SCALE"
    #: "attribute" (of a module), "argument", "param_group" (an optimizer's hyperparameter),
    #: "value" (anything else reachable)
    kind: str
    type: str  # "int" or "float"
    function: str  # the compiled function it made recompile: "Net.forward"
    source: str  # Dynamo's expression for it: "L['self'].step"
    where: tuple[str, int, str] | None  # file, line and code of the line that uses it
    fix: list[str]  # runnable code for this scalar alone (without `import dynscalar`)
    path: str | None = None  # how user code reaches it: "model.block.calls"
    imports: tuple[str, ...] = ()  # what `fix` needs imported besides dynscalar
    #: attributes: the module expression ("model.block"); param groups: the optimizer's
    owner: str | None = None
    attribute: str | None = None  # the attribute, or the param-group key ("lr")
    argument: tuple[str, CallSite | None] | None = None  # arguments: parameter, call site
    recompiles: int = 0
    #: calls past the function's recompile limit it kept from a cached version (run eagerly)
    eager_calls: int = 0
    values: list[Any] = field(default_factory=list)  # the new value at each of them
    reads: str | None = None  # read through a property: the value it reads ("model.a.b")
    note: str | None = None  # what to expect once it is fixed (dropout's path at p == 0)
    first: Any = None  # the value the first compiled version was compiled for
    alternative: tuple[str, ...] = ()  # another fix, in words (torch's tensor learning rate)


@dataclass
class PathTaken:
    """A dynamic scalar whose new value took another path of the compiled code (a guard on
    a predicate, ``p == 0.0`` where dropout returns its input at 0): compiled once per path,
    by design; nothing to fix."""

    scalar: str  # "Dropout.p"
    type: str
    function: str
    source: str
    guard: str  # the guard that no longer held, in the user's names: "model.drop.p == 0.0"
    where: tuple[str, int, str] | None
    path: str | None = None
    recompiles: int = 0
    eager_calls: int = 0
    values: list[Any] = field(default_factory=list)
    note: str | None = None


@dataclass(frozen=True)
class FixBlock:
    """Code to paste in one place; ``call`` when it replaces a call statement."""

    placement: str  # "after `model` is created, before the first call, add"
    code: list[str]  # starts with `import dynscalar`
    call: CallSite | None = None
    notes: tuple[str, ...] = ()  # alternatives, printed after the code


@dataclass
class DoctorReport:
    """Everything the doctor found in one run of a script."""

    script: str
    args: list[str]
    exit_code: int = 0
    crash: str | None = None  # "RuntimeError: loss is nan"
    culprits: list[Culprit] = field(default_factory=list)
    paths: list[PathTaken] = field(default_factory=list)
    recompiles: int = 0  # recompiles Dynamo made
    other_recompiles: int = 0  # those no scalar alone caused (tensor shapes and the rest)
    eager_calls: int = 0  # calls past a recompile limit that no cached version served
    other_eager_calls: int = 0  # those no scalar alone caused
    limits: dict[str, tuple[str, int | None]] = field(default_factory=dict)  # function -> limit
    #: functions at a limit whose later calls the doctor could not read
    unread: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the doctor could not read
    rerun: str = ""


# ----------------------------------------------------------------------------- collecting
_DROPOUT_CULPRIT = (
    "dropout returns its input at p == 0 without drawing random numbers: once marked, "
    "p == 0 and p != 0 are two paths (a compile each), every other value shares one"
)
_DROPOUT_PATH = (
    "dropout returns its input at p == 0 without drawing random numbers: p == 0 and "
    "p != 0 are two paths, compiled once each"
)


class _Collector:
    """Turns each recompile into culprits while the objects it names are still alive."""

    def __init__(self, report: DoctorReport) -> None:
        self.report = report
        self._by_key: dict[tuple[str, ...], Culprit | PathTaken] = {}
        # per recompile: the event (read again at the end: a limit refusal is known only
        # after the callback), the function's name, and (record, new value) per cause
        self._events: list[tuple[Recompile, str, list[tuple[Culprit | PathTaken, Any]]]] = []

    def __call__(self, event: Recompile) -> None:
        function = _function_name(event)
        caused: list[tuple[Culprit | PathTaken, Any]] = []
        for failure in event.causes:
            record = self._record(event, failure, function)
            if all(c is not record for c, _ in caused):
                caused.append((record, failure.actual))
        self._events.append((event, function, caused))
        self.report.notes.extend(event.errors)

    def finish(self, unread: frozenset[types.CodeType] | set[types.CodeType] = frozenset()) -> None:
        """Count recompiles, and calls a limit kept from compiling (they ran eagerly);
        ``unread``: the code objects whose later calls past the limit could not be read."""
        report = self.report
        for event, function, caused in self._events:
            refused = event.refused_by is not None
            if refused:
                report.limits.setdefault(function, (str(event.refused_by), event.limit))
                if event.code in unread and function not in report.unread:
                    report.unread.append(function)
                report.eager_calls += 1
                report.other_eager_calls += not caused
            else:
                report.recompiles += 1
                report.other_recompiles += not caused
            for record, value in caused:
                if refused:
                    record.eager_calls += 1
                else:
                    record.recompiles += 1
                record.values.append(value)
        report.culprits = [c for c in report.culprits if c.recompiles or c.eager_calls]
        report.paths = [p for p in report.paths if p.recompiles or p.eager_calls]
        for records in (report.culprits, report.paths):  # stable: first seen first on ties
            records.sort(key=lambda r: (-r.recompiles, -r.eager_calls))
        for culprit in report.culprits:
            if culprit.note == _DROPOUT_CULPRIT and 0 not in (culprit.first, *culprit.values):
                culprit.note = None  # p never was 0: one path

    def _record(
        self, event: Recompile, failure: ScalarGuardFailure, function: str
    ) -> Culprit | PathTaken:
        described = _describe(event, failure, function)
        taken = _path_taken(event, failure, described)
        key = (
            "path" if taken else "culprit",
            described.kind,
            described.scalar,
            described.path or "",
            function,
        )
        existing = self._by_key.get(key)
        if existing is None:
            record: Culprit | PathTaken = taken or described
            self._by_key[key] = existing = record
            if isinstance(record, PathTaken):
                self.report.paths.append(record)
            else:
                self.report.culprits.append(record)
        elif existing.where is None:
            existing.where = described.where
        return existing


def _path_taken(
    event: Recompile, failure: ScalarGuardFailure, culprit: Culprit
) -> PathTaken | None:
    """The failure as a path of a dynamic scalar, or None when the scalar was compiled for
    one value (a culprit): a predicate torch guards on a symbol (``p != 0.0``), or
    ``x == value`` on a value dynscalar keeps dynamic (``Eq(p, 0)`` prints as ``p == 0.0``)."""
    if not failure.symbolic or failure.guard is None:
        return None
    if failure.pins and not _marked(event, failure, culprit):
        return None  # torch made it dynamic, then specialized it (a scheduled lr)
    shown = culprit.path or culprit.scalar
    note = _DROPOUT_PATH if _is_dropout_p(failure) else None
    return PathTaken(
        scalar=culprit.scalar,
        type=culprit.type,
        function=culprit.function,
        source=failure.source,
        guard=failure.guard.replace(failure.source, shown),
        where=culprit.where,
        path=culprit.path,
        note=note,
    )


def _marked(event: Recompile, failure: ScalarGuardFailure, culprit: Culprit) -> bool:
    """Whether dynscalar keeps the value at ``failure.source`` dynamic (a mark, a proxy)."""
    from ._marks import lookup_arg_mark, lookup_group_mark, lookup_mark

    if failure.source.endswith(".__wrapped__"):  # the plain value inside a DynamicInt
        return True
    path = failure.path
    if path is None or not path.steps:
        if culprit.kind == "argument" and culprit.argument is not None:
            f_locals = event.frame_locals or {}
            return (
                lookup_arg_mark(event.code, culprit.argument[0], f_locals.get("self")) is not None
            )
        return False
    group = _param_group(path)
    if group is not None:
        return lookup_group_mark(path.steps[group[0]].container, group[2]) is not None
    last = path.steps[-1]
    return last.kind == "attr" and lookup_mark(last.container, str(last.key)) is not None


def _is_dropout_p(failure: ScalarGuardFailure) -> bool:
    """``p`` of a torch.nn dropout module (``Dropout``, ``AlphaDropout``, ...)."""
    import torch

    path = failure.path
    if path is None or not path.steps:
        return False
    last = path.steps[-1]
    nn = torch.nn
    dropouts = (
        nn.Dropout,
        nn.Dropout1d,
        nn.Dropout2d,
        nn.Dropout3d,
        nn.AlphaDropout,
        nn.FeatureAlphaDropout,
    )
    return last.kind == "attr" and last.key == "p" and isinstance(last.container, dropouts)


def _describe(event: Recompile, failure: ScalarGuardFailure, function: str) -> Culprit:
    """Name one failing scalar the way user code reaches it, with its fix."""
    where = failure.user_frame
    base: dict[str, Any] = {
        "type": type(failure.actual if failure.expected is None else failure.expected).__name__,
        "function": function,
        "source": failure.source,
        "where": _where(where) if where is not None else _call_where(event.caller),
        "first": failure.expected,
    }
    path = failure.path
    if path is None:  # not a chain of names (a closure cell, a call): say what to do
        shown = user_path(failure.source)
        return Culprit(
            scalar=shown,
            kind="value",
            fix=[f"# {shown}: store dynscalar.mark_dynamic(value) there instead of the value"],
            **base,
        )
    through = failure.through
    if through is not None and through[0] < len(path.steps):
        return _describe_property(event, failure, path, through, base)
    code = event.code
    if path.root_kind == "local" and not path.steps and path.root_name in _parameters(code):
        name = path.root_name
        call = _read_call(event.caller, code, [name])
        return Culprit(
            scalar=f"{function}({name})",
            kind="argument",
            fix=argument_fix(ArgumentSite(function, (name,), call)),
            argument=(name, call),
            **base,
        )
    root, imports = _root_expression(event, path)
    group = _param_group(path)
    if group is not None:
        return _describe_param_group(path, group, root, imports, base)
    owner = shown_owner = root
    for step in path.steps[:-1]:
        owner = _step_expression(owner, step.kind, step.key, step.container)
        shown_owner = render_step(shown_owner, step.kind, step.key, step.container)
    if path.steps:
        last = path.steps[-1]
        target = _step_expression(owner, last.kind, last.key, last.container)
        shown = render_step(shown_owner, last.kind, last.key, last.container)
        container = last.container
    else:  # a global of the compiled function's module
        target = shown = root
        container = None
    import torch

    if path.steps and last.kind == "attr" and isinstance(container, torch.nn.Module):
        return Culprit(
            scalar=f"{type(container).__name__}.{last.key}",
            kind="attribute",
            fix=[f"dynscalar.mark_dynamic_attr({owner}, {_string(str(last.key))})"],
            path=shown,
            imports=imports,
            owner=owner,
            attribute=str(last.key),
            note=_DROPOUT_CULPRIT if _is_dropout_p(failure) else None,
            **base,
        )
    if path.steps and last.kind == "attr" and not isinstance(container, types.ModuleType):
        scalar = f"{type(container).__name__}.{last.key}"
    else:
        scalar = shown
    return Culprit(
        scalar=scalar,
        kind="value",
        fix=[f"{target} = dynscalar.mark_dynamic({target})"],
        path=None if shown == scalar else shown,
        imports=imports,
        **base,
    )


def _param_group(path: SourcePath) -> tuple[int, int, str] | None:
    """For ``<optimizer>.param_groups[i][key]`` (or ``[key][j]``, an item of ``betas``):
    (index of the ``param_groups`` step, i, key); else None."""
    import torch

    steps = path.steps
    for index, step in enumerate(steps[:-2]):
        group, key = steps[index + 1], steps[index + 2]
        if (
            step.kind == "attr"
            and step.key == "param_groups"
            and isinstance(step.container, torch.optim.Optimizer)
            and group.kind == "item"
            and isinstance(group.key, int)
            and key.kind == "item"
            and isinstance(key.key, str)
            and len(steps) - index - 3 <= 1  # at most one item more: a tuple's element
        ):
            return index, group.key, key.key
    return None


def _describe_param_group(
    path: SourcePath,
    group: tuple[int, int, str],
    root: str,
    imports: tuple[str, ...],
    base: dict[str, Any],
) -> Culprit:
    """An optimizer hyperparameter a compiled ``opt.step()`` reads: marked by key for every
    param group (``mark_dynamic_param_groups``)."""
    index, _, key = group
    owner = shown = root
    for step in path.steps[:index]:
        owner = _step_expression(owner, step.kind, step.key, step.container)
        shown = render_step(shown, step.kind, step.key, step.container)
    optimizer = path.steps[index].container
    tail = ""
    for step in path.steps[index:]:
        shown = render_step(shown, step.kind, step.key, step.container)
        tail = render_step(tail, step.kind, step.key, step.container)
    alternative: tuple[str, ...] = ()
    if key == "lr":
        start = optimizer.defaults.get("lr") if isinstance(optimizer.defaults, dict) else None
        value = repr(start) if isinstance(start, float) else "..."
        cls = type(optimizer).__name__
        alternative = (
            "Or torch's own way for a learning rate: create the optimizer with a tensor,",
            f"{cls}(..., lr=torch.tensor({value})); torch's schedulers update it in place and",
            "the step compiles once. Prefer it when you create the optimizer yourself and",
            'nothing assigns a float to group["lr"]; prefer the mark when a library creates',
            'the optimizer, code assigns floats to group["lr"], the optimizer refuses a',
            "tensor lr (Adam/AdamW, foreach=True on a CPU), or other keys are scheduled.",
        )
    return Culprit(
        scalar=f"{type(optimizer).__name__}{tail}",
        kind="param_group",
        alternative=alternative,
        fix=[f"dynscalar.mark_dynamic_param_groups({owner}, {_string(key)})"],
        path=shown,
        imports=imports,
        owner=owner,
        attribute=key,
        **base,
    )


def _describe_property(
    event: Recompile,
    failure: ScalarGuardFailure,
    path: SourcePath,
    through: tuple[int, str, str],
    base: dict[str, Any],
) -> Culprit:
    """A number the compiled code read through a module's property (Lightning's
    ``global_step`` reads ``trainer.fit_loop...completed``): named by the property, fixed by
    marking the property, which follows its getter to that number."""
    steps, cls, name = through
    root, imports = _root_expression(event, path)
    owner = shown_owner = root
    for step in path.steps[:steps]:
        owner = _step_expression(owner, step.kind, step.key, step.container)
        shown_owner = render_step(shown_owner, step.kind, step.key, step.container)
    target = root
    for step in path.steps:
        target = render_step(target, step.kind, step.key, step.container)
    return Culprit(
        scalar=f"{cls}.{name}",
        kind="attribute",
        fix=[f"dynscalar.mark_dynamic_attr({owner}, {_string(name)})"],
        path=f"property {render_step(shown_owner, 'attr', name, None)}",
        reads=target,
        imports=imports,
        owner=owner,
        attribute=name,
        **base,
    )


def _parameters(code: types.CodeType) -> tuple[str, ...]:
    return tuple(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])


def _function_name(event: Recompile) -> str:
    """``Net.forward`` (the instance's class), ``train_step``, ``Sequential.forward``."""
    code = event.code
    name = code.co_name
    if name.startswith("torch_dynamo_resume_in_"):  # the part after a graph break
        original, _, line = name[len("torch_dynamo_resume_in_") :].rpartition("_at_")
        name = f"{original} (after line {line})"
    import torch

    f_locals = event.frame_locals or {}
    owner = f_locals.get("self")
    if isinstance(owner, (torch.nn.Module, torch.optim.Optimizer)):
        return f"{type(owner).__name__}.{name}"
    wrapped = f_locals.get("fn")
    if name == "inner" and isinstance(wrapped, torch.nn.Module):  # torch.compile's wrapper
        return f"{type(wrapped).__name__}.forward"
    return str(getattr(code, "co_qualname", name)) if name == code.co_name else name


def _root_expression(event: Recompile, path: SourcePath) -> tuple[str, tuple[str, ...]]:
    """How user code names the root object, and what it needs imported."""
    root = path.root
    if isinstance(root, types.ModuleType):  # `import cfg` ... cfg.SCALE
        return root.__name__, (f"import {root.__name__}",)
    if path.root_kind == "global":
        module = path.module
        if module and module != "__main__" and not path.steps:
            return f"{module}.{path.root_name}", (f"import {module}",)
        return path.root_name, ()
    found = name_at_call_site(event.caller, root) if path.steps else None
    if found is not None:
        name, through_wrapper = found
        # `model = torch.compile(model)` leaves only the wrapper: its _orig_mod is the module
        return (f"{name}._orig_mod" if through_wrapper else name), ()
    parsed = parse_source(path_source(path))
    return (root_name(parsed, root) if parsed is not None else path.root_name), ()


def path_source(path: SourcePath) -> str:
    """The root of ``path`` as Dynamo's source (``L['self']``)."""
    return f"{'L' if path.root_kind == 'local' else 'G'}[{path.root_name!r}]"


def _step_expression(expr: str, kind: str, key: str | int, container: Any) -> str:
    """One step, in the doctor's code (string keys in double quotes)."""
    return render_step(expr, kind, key, container, quote=_string)


def _string(text: str) -> str:
    """A double-quoted Python string literal, like the rest of the suggested code."""
    return quoted(text)


def _where(frame: traceback.FrameSummary) -> tuple[str, int, str]:
    line = frame.line or linecache.getline(frame.filename, frame.lineno or 0)
    return frame.filename, frame.lineno or 0, line.strip()


def _call_where(caller: types.FrameType | None) -> tuple[str, int, str] | None:
    """The call of the compiled function, for a value no user line reads (torch's optimizer
    reads its learning rate in torch's code)."""
    if caller is None:
        return None
    filename, lineno = caller.f_code.co_filename, caller.f_lineno
    return filename, lineno, linecache.getline(filename, lineno).strip()


# ----------------------------------------------------------------------------- call sites
_COMPOUND = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.If,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    *((ast.TryStar,) if hasattr(ast, "TryStar") else ()),  # Python 3.11
    *((ast.Match,) if hasattr(ast, "Match") else ()),
)


def _read_call(
    caller: types.FrameType | None, code: types.CodeType, names: list[str]
) -> CallSite | None:
    """The statement of the call site, with the span of each argument in ``names``."""
    if caller is None or not hasattr(caller.f_code, "co_positions"):  # Python < 3.11
        return None
    try:
        positions = list(caller.f_code.co_positions())
        lineno, end_lineno, col, end_col = positions[caller.f_lasti // 2]
        filename = caller.f_code.co_filename
        source = "".join(linecache.getlines(filename))
        if not source or None in (lineno, end_lineno, col, end_col):
            return None
        tree = ast.parse(source)
    except (SyntaxError, ValueError, IndexError):
        return None
    call = next(
        (
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and (node.lineno, node.end_lineno, node.col_offset, node.end_col_offset)
            == (lineno, end_lineno, col, end_col)
        ),
        None,
    )
    statement = None if call is None else _innermost_simple_statement(tree, call)
    if call is None or statement is None or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    positional = list(code.co_varnames[: code.co_argcount])
    if positional and positional[0] == "self":
        positional = positional[1:]  # model(x, t) calls forward(self, x, t)
    values: dict[str, ast.expr] = {}
    for name in names:
        value = next((k.value for k in call.keywords if k.arg == name), None)
        if value is None and name in positional:
            index = positional.index(name)
            value = call.args[index] if index < len(call.args) else None
        if value is None:  # not passed here (a default, **kwargs)
            return None
        values[name] = value

    lines = source.splitlines(keepends=True)

    def offset(line: int, column: int) -> int:  # ast columns count UTF-8 bytes
        before = sum(len(text) for text in lines[: line - 1])
        return before + len(lines[line - 1].encode()[:column].decode(errors="replace"))

    line_start = offset(statement.lineno, 0)
    indent = offset(statement.lineno, statement.col_offset) - line_start
    end = offset(statement.end_lineno or statement.lineno, statement.end_col_offset or 0)
    text = source[line_start:end]
    if any(line[:indent].strip() for line in text.splitlines()):
        return None  # a continuation line indented less than the statement: leave it
    spans = {}
    for name, value in values.items():
        start = offset(value.lineno, value.col_offset) - line_start
        stop = offset(value.end_lineno or value.lineno, value.end_col_offset or 0) - line_start
        spans[name] = (_dedent_position(text, start, indent), _dedent_position(text, stop, indent))
    return CallSite(
        filename=filename,
        lineno=statement.lineno,
        statement="".join(line[indent:] for line in text.splitlines(keepends=True)),
        callee=ast.get_source_segment(source, call.func) or "",
        arguments=spans,
    )


def _dedent_position(text: str, position: int, indent: int) -> int:
    """Where ``position`` of ``text`` lands once every line loses ``indent`` characters."""
    return position - indent * (text.count("\n", 0, position) + 1)


def _innermost_simple_statement(tree: ast.AST, target: ast.expr) -> ast.stmt | None:
    def contains(node: ast.stmt) -> bool:
        begins = (node.lineno, node.col_offset) <= (target.lineno, target.col_offset)
        ends = (node.end_lineno or 0, node.end_col_offset or 0) >= (
            target.end_lineno or 0,
            target.end_col_offset or 0,
        )
        return begins and ends

    return next(
        (
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.stmt) and not isinstance(node, _COMPOUND) and contains(node)
        ),
        None,  # simple statements do not nest: the first one found is the one
    )


# ----------------------------------------------------------------------------- running
def _run_script(script: str, args: list[str]) -> tuple[int, str | None]:
    """Run ``script`` as ``python script args...`` would; return (exit code, crash summary)."""
    import runpy

    path = os.path.abspath(script)
    folder = os.path.dirname(os.path.realpath(path)) if os.path.isfile(path) else path
    saved_argv, saved_path = sys.argv, list(sys.path)
    saved_main = sys.modules.get("__main__")
    sys.argv = [script, *args]
    if not getattr(sys.flags, "safe_path", False):  # python -P adds no folder
        sys.path[:1] = [folder]  # replaces the doctor's own entry (the current folder)
    try:
        if os.path.isfile(path):
            _exec_main(path)
        else:  # a folder or zip with __main__.py: runpy puts it first on sys.path itself
            del sys.path[:1]
            runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:
        return _exit_code(exc), None
    except BaseException as exc:  # noqa: BLE001 - any crash is reported, as python would
        _print_exception(exc.with_traceback(_script_frames(exc, path)))
        message = str(exc)
        return (
            130 if isinstance(exc, KeyboardInterrupt) else 1,
            f"{type(exc).__name__}: {message}" if message else type(exc).__name__,
        )
    finally:
        sys.stdout.flush()
        sys.argv = saved_argv
        if sys.path[:1] == [folder]:
            sys.path[:1] = saved_path[:1]
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
    return 0, None


def _exec_main(path: str) -> None:
    import importlib.machinery

    with open(path, "rb") as handle:
        source = handle.read()
    module = types.ModuleType("__main__")
    module.__dict__.update(
        __file__=path,
        __loader__=importlib.machinery.SourceFileLoader("__main__", path),
        __spec__=None,
        __package__=None,
        __builtins__=builtins,
    )
    sys.modules["__main__"] = module
    exec(compile(source, path, "exec", dont_inherit=True), module.__dict__)


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)  # python prints any other exit value and exits 1
    return 1


def _script_frames(exc: BaseException, path: str) -> types.TracebackType | None:
    """The traceback python would show: from the script's first frame on, not the doctor's."""
    tb = exc.__traceback__
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != path:
        tb = tb.tb_next
    return tb


def _print_exception(exc: BaseException) -> None:
    sys.stdout.flush()
    sys.excepthook(type(exc), exc, exc.__traceback__)


def rerun_command(
    script: str, args: list[str], *, as_json: bool = False, output: str | None = None
) -> str:
    """The command line that runs the doctor again the same way."""
    options = (["--json"] if as_json else []) + (["-o", output] if output else [])
    return shlex.join(["python", "-m", "dynscalar", "doctor", *options, script, *args])


def run_doctor(
    script: str,
    args: list[str],
    *,
    as_json: bool = False,
    output: str | None = None,
    rerun: str | None = None,
) -> int:
    """Run ``script`` with ``args``; write the report; return the script's exit code.

    Exit code 2 without running anything when the script does not exist or the doctor
    cannot read this torch's recompiles.
    """
    import dynscalar  # noqa: F401  (bridge hook in place before the script imports torch)

    from ._bridge._recompiles import RecompileWatcher
    from ._diagnostics import BridgeError

    path = os.path.abspath(script)
    if not os.path.exists(path):  # what python says, with the doctor's name
        print(
            f"dynscalar doctor: can't open file {path!r}: [Errno 2] No such file or directory",
            file=sys.stderr,
        )
        return 2
    report = DoctorReport(script=script, args=list(args))
    report.rerun = rerun or rerun_command(script, args, as_json=as_json, output=output)
    collector = _Collector(report)
    watcher = RecompileWatcher(collector)
    try:
        with watcher:
            report.exit_code, report.crash = _run_script(script, args)
    except BridgeError as exc:  # raised before the script runs: internals moved
        print(str(exc), file=sys.stderr)
        return 2
    collector.finish(watcher.unobserved)
    report.notes[:0] = [
        f"calls of {name} after its recompile limit ran eagerly without being read (this "
        "torch keeps the limit's strategy for the whole function): a scalar that changed "
        "only then is missing here"
        for name in report.unread
    ]
    report.notes.extend(watcher.errors)
    text = format_json(report) if as_json else format_report(report)
    if output is None:
        print(text, file=sys.stderr, flush=True)
    else:
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
    return report.exit_code


# ----------------------------------------------------------------------------- formatting
def _relative(filename: str) -> str:
    try:
        relative = os.path.relpath(filename)
    except ValueError:  # another drive (Windows)
        return filename
    return filename if relative.startswith(os.pardir) else relative


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def fix_blocks(report: DoctorReport) -> list[FixBlock]:
    """The code that fixes every culprit, grouped by where it goes."""
    blocks: list[FixBlock] = []
    culprits = report.culprits
    owners: dict[str, list[str]] = {}  # module expression -> attributes to mark
    imports: list[str] = []
    for culprit in culprits:
        if culprit.kind == "attribute" and culprit.owner and culprit.attribute:
            names = owners.setdefault(culprit.owner, [])
            names += [] if culprit.attribute in names else [culprit.attribute]
            imports += [i for i in culprit.imports if i not in imports]
    if owners:
        roots = list(dict.fromkeys(_root_of(owner) for owner in owners))
        quoted = " and ".join(f"`{root}`" for root in roots)
        # `model = torch.compile(model)` leaves only the wrapper: mark its _orig_mod after it
        done = "compiled" if any("._orig_mod" in owner for owner in owners) else "created"
        code = ["import dynscalar", *imports]
        code += [
            f"dynscalar.mark_dynamic_attr({owner}, {', '.join(_string(n) for n in names)})"
            for owner, names in owners.items()
        ]
        blocks.append(
            FixBlock(
                f"after {quoted} {'is' if len(roots) == 1 else 'are'} {done}, "
                "before the first call, add",
                code,
            )
        )
    optimizers: dict[str, list[Culprit]] = {}  # optimizer expression -> its culprits
    for culprit in culprits:
        if culprit.kind == "param_group" and culprit.owner and culprit.attribute:
            optimizers.setdefault(culprit.owner, []).append(culprit)
    for owner, group in optimizers.items():
        keys = list(dict.fromkeys(c.attribute for c in group if c.attribute))
        notes = tuple(dict.fromkeys(line for c in group for line in c.alternative))
        code = ["import dynscalar", *dict.fromkeys(i for c in group for i in c.imports)]
        code.append(
            f"dynscalar.mark_dynamic_param_groups({owner}, {', '.join(_string(k) for k in keys)})"
        )
        placement = f"after `{_root_of(owner)}` is created, before the first call, add"
        blocks.append(FixBlock(placement, code, notes=notes))
    sites: dict[tuple[str, str], list[Culprit]] = {}
    for culprit in culprits:
        if culprit.kind == "argument" and culprit.argument is not None:
            call = culprit.argument[1]
            at = "" if call is None else f"{call.filename}:{call.lineno}:{call.statement}"
            sites.setdefault((culprit.function, at), []).append(culprit)
    for (function, _), group in sites.items():
        parameters = tuple(dict.fromkeys(c.argument[0] for c in group if c.argument))
        calls = [c.argument[1] for c in group if c.argument is not None and c.argument[1]]
        merged = None
        if calls:  # one statement: the spans of every culprit argument in it
            spans: dict[str, tuple[int, int]] = {}
            for call in calls:
                spans.update(call.arguments)
            merged = replace(calls[0], arguments=spans)
        code = ["import dynscalar", *argument_fix(ArgumentSite(function, parameters, merged))]
        if merged is not None:
            placement = f"after `{merged.callee}` is created, before the first call, add"
        else:
            placement = f"after `{function}` is defined, before the first call, add"
        blocks.append(FixBlock(placement, code))
    values = [c for c in culprits if c.kind == "value"]
    if values:
        code = ["import dynscalar"]
        for culprit in values:
            code += [line for line in (*culprit.imports, *culprit.fix) if line not in code]
        blocks.append(FixBlock("after each assignment of the value, add", code))
    return blocks


def _root_of(expression: str) -> str:
    for index, char in enumerate(expression):
        if char in ".[(":
            return expression[:index]
    return expression


#: the longest line of the report (a code block of the docs shows 80 characters)
WIDTH = 80


def _counts(recompiles: int, eager_calls: int, function: str) -> str:
    """``7 recompiles of Net.forward, 28 calls run eagerly at the limit``."""
    parts = [f"{_plural(recompiles, 'recompile')} of {function}"] if recompiles else []
    if eager_calls:
        of = "" if recompiles else f" of {function}"
        parts.append(f"{_plural(eager_calls, 'call')}{of} run eagerly at the limit")
    return ", ".join(parts)


def _headline(name: str, counts: str) -> list[str]:
    """``name counts`` on one line, or the counts on the next where that is too long."""
    line = f"{name} {counts}"
    return [line] if len(line) <= WIDTH else [name, f"      {counts}"]


def _wrapped(text: str, indent: str) -> list[str]:
    """``text`` in lines of at most :data:`WIDTH` characters, never breaking ``p == 0``."""
    kept = text.replace(" == ", "\0==\0").replace(" != ", "\0!=\0")
    lines = textwrap.wrap(kept, width=WIDTH, initial_indent=indent, subsequent_indent=indent)
    return [line.replace("\0", " ") for line in lines]


def format_report(report: DoctorReport) -> str:
    """The doctor's report as text."""
    culprits = report.culprits
    found = (
        f"{_plural(len(culprits), 'Python scalar')} caused recompiles:"
        if culprits
        else "no recompiles were caused by Python scalars."
    )
    if report.crash is not None:
        lines = [
            f"dynscalar doctor: {report.script} stopped with {report.crash} "
            f"(exit code {report.exit_code}).",
            f"Before that, {found}",
        ]
    else:
        lines = [f"dynscalar doctor: {found}"]
    if culprits:
        lines.append("")
    for culprit in culprits:
        detail = f", {culprit.path}" if culprit.path else ""
        lines += _headline(
            f"  {culprit.scalar} ({culprit.type}{detail}):",
            _counts(culprit.recompiles, culprit.eager_calls, culprit.function),
        )
        if culprit.reads is not None:
            lines.append(f"      reads {culprit.reads}")
        if culprit.where is not None:
            filename, lineno, code = culprit.where
            lines.append(f"      {_relative(filename)}:{lineno}: {code}")
        if culprit.note is not None:
            lines += _wrapped(culprit.note, "      ")
    if report.paths:
        taken = sum(p.recompiles for p in report.paths)
        eager = sum(p.eager_calls for p in report.paths)
        what = " and ".join(
            text
            for text in (
                _plural(taken, "recompile") if taken else "",
                f"{_plural(eager, 'call')} run eagerly at the limit" if eager else "",
            )
            if text
        )
        lines += [
            "",
            f"{what} took another path of a dynamic scalar (by design: nothing to fix):",
            "",
        ]
        for path in report.paths:
            detail = f", {path.path}" if path.path else ""
            lines += _headline(
                f"  {path.scalar} ({path.type}{detail}):",
                _counts(path.recompiles, path.eager_calls, path.function),
            )
            lines.append(f"      `{path.guard}` no longer held")
            if path.where is not None:
                filename, lineno, code = path.where
                lines.append(f"      {_relative(filename)}:{lineno}: {code}")
            if path.note is not None:
                lines += _wrapped(path.note, "      ")
    notes = [
        f"{function} reached torch._dynamo.config.{limit_type}"
        f"{'' if limit is None else f' ({limit})'}:\n  calls needing a new compile run "
        + (
            "eagerly; why later ones missed was not read."
            if function in report.unread
            else "eagerly; the doctor read why each missed."
        )
        for function, (limit_type, limit) in report.limits.items()
    ]
    if report.other_recompiles or report.other_eager_calls:
        what = " and ".join(
            text
            for text in (
                _plural(report.other_recompiles, "more recompile")
                if report.other_recompiles
                else "",
                f"{_plural(report.other_eager_calls, 'call')} run eagerly at the limit"
                if report.other_eager_calls
                else "",
            )
            if text
        )
        notes.append(
            f"{what} had other causes (tensor shapes or other guards);\n"
            "  TORCH_LOGS=recompiles shows them."
        )
    if notes:
        lines += ["", *notes]
    if culprits:
        for block in fix_blocks(report):
            lines += ["", f"Fix: {block.placement}:", ""]
            lines += [f"    {line}" for line in block.code]
            if block.notes:
                lines += ["", *(f"  {line}" for line in block.notes)]
        lines += ["", "Then run the doctor again to check:", f"    {report.rerun}"]
    if report.notes:
        more = f" (and {len(report.notes) - 1} more)" if len(report.notes) > 1 else ""
        lines += ["", f"dynscalar doctor could not read everything: {report.notes[0]}{more}"]
    return "\n".join(lines)


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, (int, float, str)) or value is None:
        return value
    return repr(value)


def _where_json(where: tuple[str, int, str] | None) -> dict[str, Any] | None:
    """A culprit's or path's line of code as JSON: ``file``, ``line`` and ``code``."""
    return None if where is None else {"file": where[0], "line": where[1], "code": where[2]}


def format_json(report: DoctorReport) -> str:
    """The doctor's report as JSON, for tools and CI."""
    data = {
        "script": report.script,
        "args": report.args,
        "exit_code": report.exit_code,
        "crash": report.crash,
        "recompiles": report.recompiles,
        "other_recompiles": report.other_recompiles,
        "eager_calls": report.eager_calls,
        "other_eager_calls": report.other_eager_calls,
        "scalars": [
            {
                "scalar": c.scalar,
                "kind": c.kind,
                "type": c.type,
                "path": c.path,
                "reads": c.reads,
                "function": c.function,
                "source": c.source,
                "where": _where_json(c.where),
                "recompiles": c.recompiles,
                "eager_calls": c.eager_calls,
                "values": [_jsonable(v) for v in c.values],
                "fix": ["import dynscalar", *c.imports, *c.fix],
                "note": c.note,
            }
            for c in report.culprits
        ],
        "paths": [
            {
                "scalar": p.scalar,
                "type": p.type,
                "path": p.path,
                "function": p.function,
                "source": p.source,
                "guard": p.guard,
                "where": _where_json(p.where),
                "recompiles": p.recompiles,
                "eager_calls": p.eager_calls,
                "values": [_jsonable(v) for v in p.values],
                "note": p.note,
            }
            for p in report.paths
        ],
        "limits": {
            function: {"limit": limit_type, "value": value, "read": function not in report.unread}
            for function, (limit_type, value) in report.limits.items()
        },
        "fixes": [
            {
                "where": block.placement,
                "code": "\n".join(block.code),
                "notes": " ".join(block.notes) or None,
                "replaces": None
                if block.call is None
                else {
                    "file": block.call.filename,
                    "line": block.call.lineno,
                    "code": block.call.statement,
                },
            }
            for block in fix_blocks(report)
        ],
        "rerun": report.rerun,
        "notes": report.notes,
    }
    return json.dumps(data, indent=2)
