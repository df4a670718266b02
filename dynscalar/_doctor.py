"""``python -m dynscalar doctor SCRIPT [ARGS...]``: which Python scalars cause recompiles.

The doctor runs the user's script exactly as ``python SCRIPT ARGS...`` would (its folder
first on ``sys.path``, ``__name__ == "__main__"``, its own ``sys.argv``, an absolute
``__file__``) while :class:`dynscalar._bridge._recompiles.RecompileWatcher` hands over every
recompile with *all* the scalar guards that failed (Dynamo itself reports only the first
failing guard of each compiled version).  A scalar counts for a recompile when it alone kept
a cached version from serving the call: marking it dynamic would have avoided the recompile.
Recompiles that also needed something else (a tensor shape: a smaller last batch) are counted
apart, never blamed on a scalar.

Each scalar is named the way user code reaches it (``model.block``, ``model[1]``, the
variable at the call site when there is one) and gets runnable code: ``mark_dynamic_attr``
for module attributes, ``mark_dynamic_args`` on what the call site calls for function
arguments (callers keep passing plain values; :func:`argument_fix`), and
``x = dynscalar.mark_dynamic(x)`` for other values.
"""

from __future__ import annotations

import ast
import builtins
import json
import keyword
import linecache
import math
import os
import shlex
import sys
import traceback
import types
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._bridge._recompiles import Recompile, ScalarGuardFailure, SourcePath

__all__ = [
    "ArgumentSite",
    "CallSite",
    "Culprit",
    "DoctorReport",
    "FixBlock",
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

    scalar: str  # "Net.step", "train_step(n)", "cfg.SCALE"
    kind: str  # "attribute" (of a module), "argument", "value" (anything else reachable)
    type: str  # "int" or "float"
    function: str  # the compiled function it made recompile: "Net.forward"
    source: str  # Dynamo's expression for it: "L['self'].step"
    where: tuple[str, int, str] | None  # file, line and code of the line that uses it
    fix: list[str]  # runnable code for this scalar alone (without `import dynscalar`)
    path: str | None = None  # how user code reaches it: "model.block.calls"
    imports: tuple[str, ...] = ()  # what `fix` needs imported besides dynscalar
    owner: str | None = None  # attributes: the module expression ("model.block")
    attribute: str | None = None
    argument: tuple[str, CallSite | None] | None = None  # arguments: parameter, call site
    recompiles: int = 0
    values: list[Any] = field(default_factory=list)  # the new value at each recompile
    reads: str | None = None  # read through a property: the value it reads ("model.a.b")


@dataclass(frozen=True)
class FixBlock:
    """Code to paste in one place; ``call`` when it replaces a call statement."""

    placement: str  # "after `model` is created, before the first call, add"
    code: list[str]  # starts with `import dynscalar`
    call: CallSite | None = None


@dataclass
class DoctorReport:
    """Everything the doctor found in one run of a script."""

    script: str
    args: list[str]
    exit_code: int = 0
    crash: str | None = None  # "RuntimeError: loss is nan"
    culprits: list[Culprit] = field(default_factory=list)
    recompiles: int = 0  # recompiles Dynamo made
    other_recompiles: int = 0  # those no scalar alone caused (tensor shapes and the rest)
    limits: dict[str, tuple[str, int | None]] = field(default_factory=dict)  # function -> limit
    notes: list[str] = field(default_factory=list)  # what the doctor could not read
    rerun: str = ""


# ----------------------------------------------------------------------------- collecting
class _Collector:
    """Turns each recompile into culprits while the objects it names are still alive."""

    def __init__(self, report: DoctorReport) -> None:
        self.report = report
        self._by_key: dict[tuple[str, ...], Culprit] = {}
        # per recompile: the event (read again at the end: a limit refusal is known only
        # after the callback), the function's name, and (culprit, new value) per cause
        self._events: list[tuple[Recompile, str, list[tuple[Culprit, Any]]]] = []

    def __call__(self, event: Recompile) -> None:
        function = _function_name(event)
        caused: list[tuple[Culprit, Any]] = []
        for failure in event.causes:
            culprit = self._culprit(event, failure, function)
            if all(c is not culprit for c, _ in caused):
                caused.append((culprit, failure.actual))
        self._events.append((event, function, caused))
        self.report.notes.extend(event.errors)

    def finish(self) -> None:
        """Count recompiles; one that a limit refused is reported as the limit instead."""
        report = self.report
        for event, function, caused in self._events:
            if event.refused_by is not None:
                report.limits.setdefault(function, (event.refused_by, event.limit))
                continue
            report.recompiles += 1
            if not caused:
                report.other_recompiles += 1
            for culprit, value in caused:
                culprit.recompiles += 1
                culprit.values.append(value)
        report.culprits = [c for c in report.culprits if c.recompiles]
        report.culprits.sort(key=lambda c: -c.recompiles)  # stable: first seen first on ties

    def _culprit(self, event: Recompile, failure: ScalarGuardFailure, function: str) -> Culprit:
        described = _describe(event, failure, function)
        key = (described.kind, described.scalar, described.path or "", function)
        existing = self._by_key.get(key)
        if existing is None:
            self._by_key[key] = existing = described
            self.report.culprits.append(described)
        elif existing.where is None:
            existing.where = described.where
        return existing


def _describe(event: Recompile, failure: ScalarGuardFailure, function: str) -> Culprit:
    """Name one failing scalar the way user code reaches it, with its fix."""
    base: dict[str, Any] = {
        "type": type(failure.expected).__name__,
        "function": function,
        "source": failure.source,
        "where": None if failure.user_frame is None else _where(failure.user_frame),
    }
    path = failure.path
    if path is None:  # not a chain of names (a closure cell, a call): say what to do
        shown = _display_source(failure.source)
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
    owner = root
    for step in path.steps[:-1]:
        owner = _step_expression(owner, step.kind, step.key, step.container)
    if path.steps:
        last = path.steps[-1]
        target = _step_expression(owner, last.kind, last.key, last.container)
        container = last.container
    else:  # a global of the compiled function's module
        target, container = root, None
    import torch

    if path.steps and last.kind == "attr" and isinstance(container, torch.nn.Module):
        return Culprit(
            scalar=f"{type(container).__name__}.{last.key}",
            kind="attribute",
            fix=[f"dynscalar.mark_dynamic_attr({owner}, {_string(str(last.key))})"],
            path=target,
            imports=imports,
            owner=owner,
            attribute=str(last.key),
            **base,
        )
    if path.steps and last.kind == "attr" and not isinstance(container, types.ModuleType):
        scalar = f"{type(container).__name__}.{last.key}"
    else:
        scalar = target
    return Culprit(
        scalar=scalar,
        kind="value",
        fix=[f"{target} = dynscalar.mark_dynamic({target})"],
        path=None if target == scalar else target,
        imports=imports,
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
    owner = root
    for step in path.steps[:steps]:
        owner = _step_expression(owner, step.kind, step.key, step.container)
    target = root
    for step in path.steps:
        target = _step_expression(target, step.kind, step.key, step.container)
    return Culprit(
        scalar=f"{cls}.{name}",
        kind="attribute",
        fix=[f"dynscalar.mark_dynamic_attr({owner}, {_string(name)})"],
        path=f"property {_step_expression(owner, 'attr', name, None)}",
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
    if isinstance(owner, torch.nn.Module):
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
    found = _name_at_call_site(event.caller, root) if path.steps else None
    if found is not None:
        return found, ()
    import torch

    if isinstance(root, torch.nn.Module) and path.root_name in ("self", "fn"):
        return DEFAULT_MODEL_NAME, ()
    return path.root_name, ()


def _name_at_call_site(caller: types.FrameType | None, root: Any) -> str | None:
    """A variable of the call site bound to ``root`` (else to its compiled wrapper)."""
    if caller is None:
        return None
    wrapped: str | None = None
    for namespace in (caller.f_locals, caller.f_globals):
        for name, value in namespace.items():
            if name.startswith("_"):
                continue
            if value is root:
                return name
            if wrapped is None and getattr(value, "_orig_mod", None) is root:
                wrapped = f"{name}._orig_mod"  # `model = torch.compile(model)`
    return wrapped


def _step_expression(expr: str, kind: str, key: str | int, container: Any) -> str:
    import torch

    text = str(key)
    if kind == "module":
        if isinstance(container, (torch.nn.Sequential, torch.nn.ModuleList)) and text.isdigit():
            return f"{expr}[{int(text)}]"
        if isinstance(container, torch.nn.ModuleDict):
            return f"{expr}[{_string(text)}]"
        if text.isidentifier() and not keyword.iskeyword(text):
            return f"{expr}.{text}"
        return f"{expr}.get_submodule({_string(text)})"
    if kind == "attr":
        if text.isidentifier() and not keyword.iskeyword(text):
            return f"{expr}.{text}"
        return f"getattr({expr}, {_string(text)})"
    return f"{expr}[{_string(key) if isinstance(key, str) else key!r}]"


def _string(text: str) -> str:
    """A double-quoted Python string literal, like the rest of the suggested code."""
    return json.dumps(text) if text.isascii() and text.isprintable() else repr(text)


def _display_source(source: str) -> str:
    """Dynamo's ``L['self'].step`` the way its own messages print it (``self.step``)."""
    for prefix in ("L['", "G['"):
        while prefix in source:
            start = source.index(prefix)
            end = source.index("']", start)
            source = source[:start] + source[start + 3 : end] + source[end + 2 :]
    return source


def _where(frame: traceback.FrameSummary) -> tuple[str, int, str]:
    line = frame.line or linecache.getline(frame.filename, frame.lineno or 0)
    return frame.filename, frame.lineno or 0, line.strip()


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
    collector.finish()
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
        lines.append(
            f"  {culprit.scalar} ({culprit.type}{detail}): "
            f"{_plural(culprit.recompiles, 'recompile')} of {culprit.function}"
        )
        if culprit.reads is not None:
            lines.append(f"      reads {culprit.reads}")
        if culprit.where is not None:
            filename, lineno, code = culprit.where
            lines.append(f"      {_relative(filename)}:{lineno}: {code}")
    notes = [
        f"{function} reached torch._dynamo.config.{limit_type}"
        f"{'' if limit is None else f' ({limit})'}:\n  calls that need a new compile run eagerly."
        for function, (limit_type, limit) in report.limits.items()
    ]
    if report.other_recompiles:
        notes.append(
            f"{_plural(report.other_recompiles, 'more recompile')} had other causes "
            "(tensor shapes or other guards);\n  TORCH_LOGS=recompiles shows them."
        )
    if notes:
        lines += ["", *notes]
    if culprits:
        for block in fix_blocks(report):
            lines += ["", f"Fix: {block.placement}:", ""]
            lines += [f"    {line}" for line in block.code]
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


def format_json(report: DoctorReport) -> str:
    """The doctor's report as JSON, for tools and CI."""
    data = {
        "script": report.script,
        "args": report.args,
        "exit_code": report.exit_code,
        "crash": report.crash,
        "recompiles": report.recompiles,
        "other_recompiles": report.other_recompiles,
        "scalars": [
            {
                "scalar": c.scalar,
                "kind": c.kind,
                "type": c.type,
                "path": c.path,
                "reads": c.reads,
                "function": c.function,
                "source": c.source,
                "where": None
                if c.where is None
                else {"file": c.where[0], "line": c.where[1], "code": c.where[2]},
                "recompiles": c.recompiles,
                "values": [_jsonable(v) for v in c.values],
                "fix": ["import dynscalar", *c.imports, *c.fix],
            }
            for c in report.culprits
        ],
        "limits": {
            function: {"limit": limit_type, "value": value}
            for function, (limit_type, value) in report.limits.items()
        },
        "fixes": [
            {
                "where": block.placement,
                "code": "\n".join(block.code),
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
