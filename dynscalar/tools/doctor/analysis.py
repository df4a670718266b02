"""Each recompile the watcher hands over, turned into culprits (a scalar whose new value alone
made torch.compile recompile) and paths (a dynamic scalar that took another branch), each
named the way user code reaches it."""

from __future__ import annotations

import linecache
import traceback
import types
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..._bridge._paths import name_at_call_site, parse_source, render_step, root_name, user_path
from .call_sites import read_call
from .fixes import argument_fix, code_string, step_expression
from .records import ArgumentSite, Culprit, DoctorReport, PathTaken

if TYPE_CHECKING:
    from .watcher import Recompile, ScalarGuardFailure, SourcePath

__all__ = ["Collector"]


_DROPOUT_CULPRIT = (
    "dropout returns its input at p == 0 without drawing random numbers: once marked, "
    "p == 0 and p != 0 are two paths (a compile each), every other value shares one"
)
_DROPOUT_PATH = (
    "dropout returns its input at p == 0 without drawing random numbers: p == 0 and "
    "p != 0 are two paths, compiled once each"
)


class Collector:
    """Turns each recompile into culprits while the objects it names are still alive."""

    def __init__(self, report: DoctorReport) -> None:
        self.report = report
        self._by_key: dict[tuple[str, ...], Culprit | PathTaken] = {}
        # per recompile: the event (read again at the end: a limit refusal is known only
        # after the callback), the function's name, and (record, new value) per cause
        self._events: list[tuple[Recompile, str, list[tuple[Culprit | PathTaken, Any]]]] = []

    @property
    def seen(self) -> int:
        """How many cache misses (recompiles, calls past a limit) were read so far."""
        return len(self._events)

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
        ``unread``: the code objects whose later calls past the limit could not be read.

        Recompiles are counted as ``TORCH_LOGS=recompiles`` lists them: every cache miss
        torch tried to compile, the one a limit refused included (torch logs its reasons,
        then the limit); the calls after it that needed a new compile ran eagerly without a
        word from torch (``eager_calls``).  A recompile counts once for each culprit it had
        and once in all: the instances of one class merged into one culprit
        (:meth:`_merge_instances`) count it once, not once per instance."""
        report = self.report
        merged: dict[int, Culprit | PathTaken] = {**self._merge_instances()}
        merged.update(self._merge_path_instances())
        limited: set[types.CodeType] = set()  # functions torch stopped compiling
        for event, function, causes in self._events:
            caused: list[tuple[Culprit | PathTaken, Any]] = []
            for record, value in causes:
                record = merged.get(id(record), record)
                if all(c is not record for c, _ in caused):
                    caused.append((record, value))
            listed = event.code not in limited  # by TORCH_LOGS=recompiles
            blamed = any(isinstance(record, Culprit) for record, _ in caused)
            took = any(isinstance(record, PathTaken) for record, _ in caused)
            if event.refused_by is not None:
                limited.add(event.code)
                report.limits.setdefault(function, (str(event.refused_by), event.limit))
                if event.code in unread and function not in report.unread:
                    report.unread.append(function)
            if listed:
                report.recompiles += 1
                report.other_recompiles += not caused
                report.culprit_recompiles += blamed
                report.path_recompiles += took
            else:
                report.eager_calls += 1
                report.other_eager_calls += not caused
                report.culprit_eager_calls += blamed
                report.path_eager_calls += took
            for record, value in caused:
                if listed:
                    record.recompiles += 1
                else:
                    record.eager_calls += 1
                record.values.append(value)
        report.culprits = [c for c in report.culprits if c.recompiles or c.eager_calls]
        report.paths = [p for p in report.paths if p.recompiles or p.eager_calls]
        for records in (report.culprits, report.paths):  # stable: first seen first on ties
            records.sort(key=lambda r: (-r.recompiles, -r.eager_calls))
        for culprit in report.culprits:
            if culprit.note == _DROPOUT_CULPRIT and 0 not in (culprit.first, *culprit.values):
                culprit.note = None  # p never was 0: one path

    def _merge_instances(self) -> dict[int, Culprit]:
        """One culprit for an attribute of several instances of one class in one compiled
        function (``Dropout.p`` of 24 blocks), listing every instance; returns, by id, the
        culprit each merged one became."""
        merged: dict[int, Culprit] = {}
        firsts: dict[tuple[str, str, type], Culprit] = {}
        kept: list[Culprit] = []
        for culprit in self.report.culprits:
            cls = culprit.owner_class
            if culprit.kind != "attribute" or cls is None or culprit.reads is not None:
                kept.append(culprit)
                continue
            key = (culprit.scalar, culprit.function, cls)
            first = firsts.setdefault(key, culprit)
            if first is culprit:
                kept.append(culprit)
                continue
            if not first.instances:
                first.instances.append((first.path or "", first.owner or ""))
            first.instances.append((culprit.path or "", culprit.owner or ""))
            merged[id(culprit)] = first
        self.report.culprits = kept
        return merged

    def _merge_path_instances(self) -> dict[int, PathTaken]:
        """One path for an attribute of several instances of one class that took the same
        path in one compiled function (``p == 0.0`` of the Dropout of each of 6 blocks),
        listing every instance, as :meth:`_merge_instances` does for culprits; returns, by
        id, the path each merged one became."""
        merged: dict[int, PathTaken] = {}
        firsts: dict[tuple[str, str, type, str], PathTaken] = {}
        kept: list[PathTaken] = []
        for path in self.report.paths:
            cls = path.owner_class
            if cls is None or not path.path:
                kept.append(path)
                continue
            key = (path.scalar, path.function, cls, path.guard.replace(path.path, "{}"))
            first = firsts.setdefault(key, path)
            if first is path:
                kept.append(path)
                continue
            if not first.instances:
                first.instances.append(first.path or "")
            first.instances.append(path.path)
            merged[id(path)] = first
        self.report.paths = kept
        return merged

    def _record(
        self, event: Recompile, failure: ScalarGuardFailure, function: str
    ) -> Culprit | PathTaken:
        described = _describe(event, failure, function)
        because = _specialized(event, failure, described)
        if because is not None:
            # marked, and still compiled for one value: a fix to make, not a path
            described = replace(
                described,
                kind="specialized",
                fix=[],
                alternative=(),
                note=f"marked, but torch compiled it for one value: it {because}",
            )
        taken = None if because is not None else _path_taken(event, failure, described)
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


def _specialized(event: Recompile, failure: ScalarGuardFailure, culprit: Culprit) -> str | None:
    """Why torch compiled a marked value for one value (an op inside torch that forced it,
    a Python construct), as the bridge filed it when it warned; None for a value that is
    not marked, or whose guard is a path of a dynamic value (``p == 0.0``)."""
    from ..._bridge._reports import SPECIALIZED

    if not failure.pins or not _marked(event, failure, culprit):
        return None
    return (SPECIALIZED.get(event.code) or {}).get(failure.source)


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
        owner_class=culprit.owner_class if culprit.kind == "attribute" else None,
    )


def _marked(event: Recompile, failure: ScalarGuardFailure, culprit: Culprit) -> bool:
    """Whether dynscalar keeps the value at ``failure.source`` dynamic (a mark, a proxy)."""
    from ..._marks import lookup_arg_mark, lookup_group_mark, lookup_mark

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
    """A dropout probability, whatever kind of dropout reads it: ``p`` of a torch.nn
    dropout module (``Dropout``, ``AlphaDropout``, ...), ``MultiheadAttention.dropout``, or
    a float attribute of a module named for dropout (``attn_dropout``, ``dropout_p``,
    ``drop_rate``), which code hands to ``F.dropout`` or to SDPA's ``dropout_p``: each
    returns its input at 0 without drawing random numbers."""
    import torch

    path = failure.path
    if path is None or not path.steps:
        return False
    last = path.steps[-1]
    if last.kind != "attr" or not isinstance(last.container, torch.nn.Module):
        return False
    nn = torch.nn
    dropouts = (
        nn.Dropout,
        nn.Dropout1d,
        nn.Dropout2d,
        nn.Dropout3d,
        nn.AlphaDropout,
        nn.FeatureAlphaDropout,
    )
    if isinstance(last.container, dropouts):
        return last.key == "p"
    if isinstance(last.container, nn.MultiheadAttention):
        return last.key == "dropout"
    value = failure.actual if failure.expected is None else failure.expected
    return isinstance(value, float) and "drop" in str(last.key).lower()


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
        call = read_call(event.caller, code, [name])
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
        owner = step_expression(owner, step.kind, step.key, step.container)
        shown_owner = render_step(shown_owner, step.kind, step.key, step.container)
    if path.steps:
        last = path.steps[-1]
        target = step_expression(owner, last.kind, last.key, last.container)
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
            fix=[f"dynscalar.mark_dynamic_attr({owner}, {code_string(str(last.key))})"],
            path=shown,
            imports=imports,
            owner=owner,
            attribute=str(last.key),
            note=_DROPOUT_CULPRIT if _is_dropout_p(failure) else None,
            owner_class=type(container),
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
        owner = step_expression(owner, step.kind, step.key, step.container)
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
        fix=[f"dynscalar.mark_dynamic_param_groups({owner}, {code_string(key)})"],
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
        owner = step_expression(owner, step.kind, step.key, step.container)
        shown_owner = render_step(shown_owner, step.kind, step.key, step.container)
    target = root
    for step in path.steps:
        target = render_step(target, step.kind, step.key, step.container)
    return Culprit(
        scalar=f"{cls}.{name}",
        kind="attribute",
        fix=[f"dynscalar.mark_dynamic_attr({owner}, {code_string(name)})"],
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
    parsed = parse_source(_path_source(path))
    return (root_name(parsed, root) if parsed is not None else path.root_name), ()


def _path_source(path: SourcePath) -> str:
    """The root of ``path`` as Dynamo's source (``L['self']``)."""
    return f"{'L' if path.root_kind == 'local' else 'G'}[{path.root_name!r}]"


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
