"""Every scalar guard behind each recompile, for ``python -m dynscalar doctor``.

Why it exists: Dynamo explains a recompile with the *first* failing guard of each compiled
version only (``torch._dynamo.utils.guard_failures``, the ``recompiles`` log and the
``recompile_reasons`` artifact all come from ``get_guard_fail_reason_helper``, which stops at
the first failing leaf guard; ``recompiles_verbose`` lists more parts of that one guard, not
more guards, and torch 2.13 has no "report all guard failures" switch). A model with two
changing scalars therefore shows one of them per run. This module watches recompiles and
evaluates *every* scalar equality guard of every cached version against the frame that
missed the cache, the way Dynamo evaluates guard text when it builds its own reasons.

It also tells the scalars that *caused* a recompile from the ones that merely changed: a
version whose guards, apart from the failing scalar ones, all pass (checked on a copy of its
guard tree without those scalars, ``RootGuardManager.clone_manager``) would have served the
call had those scalars been dynamic; the causes are the failing scalars of the such versions
that failed on the fewest (once torch made a scalar dynamic itself, older versions still fail
on it, but it no longer forces anything). When every version also fails something else (a
tensor shape: a smaller last batch), the recompile is not the scalars' doing.

Private torch names used (the ``"doctor"`` entries of ``_table``, plus attributes of guard
managers read on an instance), checked by :func:`check_recompile_internals` before anything
is patched; every patch is a pass-through wrapper that returns what the original returns:

* ``convert_frame.get_and_maybe_log_recompilation_reasons(cache_entries, frame, backend,
  skip_logging)``: called once per recompile with the cached versions and the frame;
* ``convert_frame.exceeds_recompile_limit(cache_size, compile_id)``: tells when
  ``recompile_limit`` stopped compiling (the function then runs eagerly);
* ``guards.get_verbose_code_parts(code_parts, guard, recompile_hint)``: keeps the user frame
  of each scalar guard (the guard's own text keeps only a shortened file name);
* ``CacheEntry.guard_manager``/``compile_id``; ``GuardManagerWrapper.root``/``global_scope``/
  ``closure_vars``; ``GuardManager.get_leaf_guards``/``get_child_managers``/``get_source``;
  ``DictGuardManager.get_key_value_managers``; ``RootGuardManager.clone_manager``/``check``;
  ``LeafGuard.verbose_code_parts``; the leaf guard class ``EQUALS_MATCH``.
"""

from __future__ import annotations

import ast
import math
import os
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any

from .._diagnostics import BridgeError
from . import _table

__all__ = [
    "PathStep",
    "Recompile",
    "RecompileWatcher",
    "ScalarGuardFailure",
    "SourcePath",
    "check_recompile_internals",
    "is_library_file",
]

# Guard-manager attributes read on instances (C++ objects: checked on one, not by the table).
_WRAPPER_ATTRIBUTES = ("root", "global_scope", "closure_vars")
_MANAGER_METHODS = ("get_leaf_guards", "get_child_managers", "get_source", "check")
_SCALAR_GUARD = "EQUALS_MATCH"  # the leaf guard class Dynamo uses for `x == 7`
_HINT = " (HINT: "  # Dynamo appends hints to a guard's text


def check_recompile_internals() -> None:
    """Raise :class:`BridgeError` unless the Dynamo internals used here have the expected shape."""
    import torch

    version = torch.__version__
    _table.check("doctor", who="dynscalar doctor", what="the doctor")
    try:  # the table checked that these exist; their instances are checked here
        from torch._dynamo.guards import GuardManagerWrapper

        wrapper = GuardManagerWrapper()
    except (ImportError, AttributeError, TypeError) as exc:
        raise BridgeError(
            f"dynscalar doctor: a torch._dynamo internal it reads moved in torch {version}: "
            f"{exc}. Use TORCH_LOGS=recompiles instead (first failing guard per version)."
        ) from exc
    missing = [a for a in _WRAPPER_ATTRIBUTES if not hasattr(wrapper, a)]
    missing += [f"GuardManager.{m}" for m in _MANAGER_METHODS if not hasattr(wrapper.root, m)]
    if not hasattr(wrapper.root, "clone_manager"):
        missing.append("RootGuardManager.clone_manager")
    if missing:
        raise BridgeError(
            f"dynscalar doctor: torch {version} has no {', '.join(missing)} (Dynamo's guard "
            "manager changed). Please report this with your torch version."
        )


# ----------------------------------------------------------------------------- records
@dataclass(frozen=True)
class PathStep:
    """One step from a root object to a scalar: a child module, an attribute or an item."""

    kind: str  # "module" (child module by name), "attr" or "item"
    key: str | int
    container: Any  # the object the step is taken from (live during the callback)


@dataclass(frozen=True)
class SourcePath:
    """How the compiled function reaches a scalar: a local or global, then steps."""

    root_kind: str  # "local" or "global"
    root_name: str
    root: Any
    steps: tuple[PathStep, ...]
    module: str | None = None  # globals: the ``__name__`` of the module they belong to


@dataclass(frozen=True)
class ScalarGuardFailure:
    """A guard ``<source> == <number>`` of one compiled version that the new call failed."""

    version: str  # compile id of the cached version, e.g. "0/3"
    source: str  # Dynamo's expression for the value, e.g. "L['self']._modules['block'].step"
    expected: int | float  # the value that version was compiled for
    actual: Any  # the value now
    user_frame: traceback.FrameSummary | None  # innermost user frame that read the value
    path: SourcePath | None  # None when the source is not a plain chain of names
    #: read through a module's property: (steps of ``path`` up to the module, the module's
    #: class name, the property name); None for a plain read
    through: tuple[int, str, str] | None = None


@dataclass
class Recompile:
    """One recompile of one function, as :class:`RecompileWatcher` hands it over.

    ``frame_locals`` and ``caller`` are live only during the callback (cleared after it).
    """

    code: CodeType  # the code object Dynamo compiles again
    frame_locals: dict[str, Any] | None
    caller: FrameType | None  # innermost frame outside torch and dynscalar (the call site)
    versions: int  # compiled versions cached before this one
    causes: list[ScalarGuardFailure]  # the scalars that alone kept a version from serving
    changed: list[ScalarGuardFailure]  # every scalar guard that failed, caused or not
    reasons: list[str]  # Dynamo's own reasons (first failing guard of each version)
    errors: list[str] = field(default_factory=list)  # what could not be read, and why
    refused_by: str | None = None  # "recompile_limit" etc. when the limit stopped this compile
    limit: int | None = None  # that limit's value

    @property
    def avoidable(self) -> bool:
        """Whether dynamic scalars would have let a cached version serve the call."""
        return bool(self.causes)


def is_library_file(filename: str) -> bool:
    """Whether ``filename`` belongs to torch or dynscalar (never the user's line)."""
    return _abs(filename).startswith(_library_dirs())


_LIBRARY_DIRS: tuple[str, ...] = ()


def _library_dirs() -> tuple[str, ...]:
    global _LIBRARY_DIRS
    if not _LIBRARY_DIRS:
        import torch

        import dynscalar

        _LIBRARY_DIRS = tuple(
            _abs(os.path.dirname(m.__file__ or "")) + os.sep for m in (torch, dynscalar)
        )
    return _LIBRARY_DIRS


def _abs(filename: str) -> str:
    return os.path.normcase(os.path.abspath(filename))


# ----------------------------------------------------------------------------- the watcher
class RecompileWatcher:
    """Context manager: call ``on_recompile`` with a :class:`Recompile` at every recompile.

    Installs pass-through wrappers on Dynamo's recompile path (see the module docstring) and
    removes them on exit. A failure inside the watcher never reaches the compiled program: it
    is recorded in :attr:`Recompile.errors` (or :attr:`errors` when no event could be made).
    """

    def __init__(self, on_recompile: Callable[[Recompile], None]) -> None:
        self._on_recompile = on_recompile
        self._frames: dict[str, traceback.FrameSummary] = {}  # guard text -> user frame
        self._pending = threading.local()  # the event whose compile may still be refused
        self._saved: list[tuple[Any, str, Any, Any]] = []
        self.errors: list[str] = []

    def __enter__(self) -> RecompileWatcher:
        check_recompile_internals()
        self._patch(":get_and_maybe_log_recompilation_reasons", self._wrap_reasons)
        self._patch(":exceeds_recompile_limit", self._wrap_limit)
        self._patch(":get_verbose_code_parts", self._wrap_verbose)
        return self

    def __exit__(self, *exc: object) -> None:
        for owner, name, original, wrapper in reversed(self._saved):
            if getattr(owner, name, None) is wrapper:  # someone else may have patched it since
                setattr(owner, name, original)
        self._saved.clear()

    def _patch(self, target: str, make: Callable[[Any], Any]) -> None:
        owner, name = _table.find(target).resolve()
        original = getattr(owner, name)
        wrapper = make(original)
        setattr(owner, name, wrapper)
        self._saved.append((owner, name, original, wrapper))

    # -- build time: the user frame of each scalar guard
    def _wrap_verbose(self, original: Callable[..., list[str]]) -> Callable[..., list[str]]:
        frames = self._frames

        def get_verbose_code_parts(
            code_parts: Any, guard: Any, recompile_hint: str | None = None
        ) -> list[str]:
            parts = original(code_parts, guard, recompile_hint)
            try:
                if guard is not None and getattr(guard, "user_stack", None):
                    frame = _innermost_user_frame(guard.user_stack)
                    for part in parts:
                        if frame is not None and _parse_scalar_guard(part) is not None:
                            frames[_guard_key(part)] = frame
            except Exception as exc:  # noqa: BLE001 - never break guard building
                self.errors.append(f"reading a guard's user frame: {exc!r}")
            return parts

        return get_verbose_code_parts

    # -- recompile time
    def _wrap_reasons(self, original: Callable[..., list[str]]) -> Callable[..., list[str]]:
        def get_and_maybe_log_recompilation_reasons(
            cache_entries: Any, frame: Any, backend: Any, skip_logging: bool = False
        ) -> list[str]:
            reasons = original(cache_entries, frame, backend, skip_logging)
            if skip_logging:  # a query (fail_on_recompile stance), not a recompile
                return reasons
            self._pending.event = None
            try:
                event = self._inspect(list(cache_entries), frame, list(reasons))
            except Exception as exc:  # noqa: BLE001 - never break compilation
                self.errors.append(f"reading a recompile of {_code_name(frame)}: {exc!r}")
                return reasons
            self._pending.event = event
            try:
                self._on_recompile(event)
            except Exception as exc:  # noqa: BLE001
                self.errors.append(f"reporting a recompile of {_code_name(frame)}: {exc!r}")
            finally:
                event.frame_locals = None
                event.caller = None
            return reasons

        return get_and_maybe_log_recompilation_reasons

    def _wrap_limit(self, original: Callable[..., tuple[bool, str]]) -> Callable[..., Any]:
        def exceeds_recompile_limit(cache_size: Any, compile_id: Any) -> tuple[bool, str]:
            exceeded, limit_type = original(cache_size, compile_id)
            event = getattr(self._pending, "event", None)
            self._pending.event = None
            if exceeded and event is not None:
                from torch._dynamo import config

                event.refused_by = limit_type
                limit = getattr(config, limit_type, None)
                event.limit = limit if isinstance(limit, int) else None
            return exceeded, limit_type

        return exceeds_recompile_limit

    def _inspect(self, entries: list[Any], frame: Any, reasons: list[str]) -> Recompile:
        f_locals = frame.f_locals
        event = Recompile(
            code=frame.f_code,
            frame_locals=f_locals,
            caller=_call_site(),
            versions=len(entries),
            causes=[],
            changed=[],
            reasons=reasons,
        )
        avoidable: list[list[ScalarGuardFailure]] = []  # per version failing on scalars alone
        for entry in entries:
            wrapper = entry.guard_manager
            if getattr(wrapper, "closure_vars", None) is None:  # a deleted (invalidated) entry
                continue
            scope: dict[str, Any] = {"L": f_locals, "G": wrapper.global_scope["G"]}
            scope.update(wrapper.closure_vars)
            failed: list[ScalarGuardFailure] = []
            failed_sources: set[str] = set()
            for source, expected, text in _scalar_guards(wrapper.root):
                try:
                    actual = eval(source, dict(wrapper.global_scope), scope)  # as Dynamo does
                except Exception as exc:  # noqa: BLE001 - unreadable: not a scalar we can judge
                    event.errors.append(f"{source}: {exc!r}")
                    continue
                if type(actual) is type(expected) and actual == expected:
                    continue
                failed_sources.add(source)
                failed.append(
                    ScalarGuardFailure(
                        version=str(entry.compile_id),
                        source=source,
                        expected=expected,
                        actual=actual,
                        user_frame=self._frames.get(_guard_key(text)),
                        path=_source_path(source, wrapper.global_scope, scope),
                        through=_through(frame.f_code, source, wrapper.global_scope, scope),
                    )
                )
            if not failed:
                continue
            event.changed.extend(failed)
            try:
                rest = wrapper.root.clone_manager(
                    lambda m, skip=frozenset(failed_sources): m.get_source() not in skip
                )
                only_scalars = bool(rest.check(f_locals))
            except Exception as exc:  # noqa: BLE001 - cannot tell: count it as caused
                event.errors.append(f"checking the other guards of {entry.compile_id}: {exc!r}")
                only_scalars = True
            if only_scalars:
                avoidable.append(failed)
        # The versions that fewest scalars kept from serving the call name the causes: once
        # torch made a scalar dynamic itself (automatic dynamic: float attributes, function
        # arguments), versions compiled before that still fail on it, but it no longer forces
        # a recompile.
        fewest = min((len(failed) for failed in avoidable), default=0)
        for failed in avoidable:
            if len(failed) == fewest:
                event.causes.extend(f for f in failed if f.source not in _sources(event.causes))
        return event


# ----------------------------------------------------------------------------- helpers
def _through(
    code: CodeType, source: str, global_scope: dict[str, Any], scope: dict[str, Any]
) -> tuple[int, str, str] | None:
    """The module property the compiled code read ``source`` through (``_properties``)."""
    from ._properties import read_through_property

    read = read_through_property(code, source)
    if read is None:
        return None
    owner = _source_path(read.owner_source, global_scope, scope)
    if owner is None:
        return None
    return len(owner.steps), read.cls, read.name


def _sources(failures: list[ScalarGuardFailure]) -> set[str]:
    return {f.source for f in failures}


def _code_name(frame: Any) -> str:
    code = getattr(frame, "f_code", None)
    return getattr(code, "co_qualname", getattr(code, "co_name", "?"))


def _guard_key(text: str) -> str:
    return text.split(_HINT, 1)[0].rstrip()


def _parse_scalar_guard(text: str) -> tuple[str, int | float] | None:
    """``"L['self'].step == 7   # self.step += 1  # m.py:9 in forward"`` -> (source, 7)."""
    code = _guard_key(text).split("  #", 1)[0].strip()
    source, sep, literal = code.rpartition(" == ")
    if not sep or not source:
        return None
    try:
        value = ast.literal_eval(literal)
    except (ValueError, SyntaxError):
        if literal not in ("inf", "-inf"):
            return None
        value = float(literal)
    if type(value) not in (int, float) or (isinstance(value, float) and math.isnan(value)):
        return None  # bools, strings, tuples, numpy scalars...
    return source, value


def _scalar_guards(root: Any) -> Iterator[tuple[str, int | float, str]]:
    """(source, expected value, guard text) of every ``EQUALS_MATCH`` on an int or float."""
    stack = [root]  # a tree: no node is reached twice
    while stack:
        manager = stack.pop()
        if manager is None:
            continue
        for leaf in manager.get_leaf_guards():
            if type(leaf).__name__ != _SCALAR_GUARD:
                continue
            for text in leaf.verbose_code_parts():
                parsed = _parse_scalar_guard(text)
                if parsed is not None:
                    yield parsed[0], parsed[1], text
        if hasattr(manager, "get_key_value_managers"):  # DictGuardManager
            for key_manager, value_manager in manager.get_key_value_managers().values():
                stack.extend((key_manager, value_manager))
        stack.extend(reversed(manager.get_child_managers()))


def _innermost_user_frame(stack: Any) -> traceback.FrameSummary | None:
    for frame in reversed(list(stack)):
        if not is_library_file(frame.filename):
            return frame  # type: ignore[no-any-return]
    return None


def _call_site() -> FrameType | None:
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and (
        is_library_file(frame.f_code.co_filename) or frame.f_code.co_filename.startswith("<")
    ):
        frame = frame.f_back
    return frame


def _source_path(
    source: str, global_scope: dict[str, Any], scope: dict[str, Any]
) -> SourcePath | None:
    """Dynamo's source expression as a root and steps, each with the object it is taken from."""
    try:
        node = ast.parse(source, mode="eval").body
    except SyntaxError:
        return None
    steps: list[tuple[str, str | int, ast.expr]] = []  # kind, key, expression of the container
    while True:
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            key = node.slice
            if node.value.id not in ("L", "G") or not isinstance(key, ast.Constant):
                return None
            if not isinstance(key.value, str):
                return None
            root_kind, root_name, root_node = (
                "local" if node.value.id == "L" else "global",
                key.value,
                node,
            )
            break
        if isinstance(node, ast.Attribute):
            steps.append(("attr", node.attr, node.value))
            node = node.value
            continue
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            key_value = node.slice.value
            if not isinstance(key_value, (str, int)) or isinstance(key_value, bool):
                return None
            inner = node.value
            # x._modules['k'] and x.__dict__['_modules']['k']: child module k of x
            if isinstance(inner, ast.Attribute) and inner.attr == "_modules":
                steps.append(("module", key_value, inner.value))
                node = inner.value
                continue
            if (
                isinstance(inner, ast.Subscript)
                and isinstance(inner.slice, ast.Constant)
                and inner.slice.value == "_modules"
                and isinstance(inner.value, ast.Attribute)
                and inner.value.attr == "__dict__"
            ):
                steps.append(("module", key_value, inner.value.value))
                node = inner.value.value
                continue
            # x.__dict__['k']: attribute k of x
            if isinstance(inner, ast.Attribute) and inner.attr == "__dict__":
                steps.append(("attr", key_value, inner.value))
                node = inner.value
                continue
            steps.append(("item", key_value, inner))
            node = inner
            continue
        return None
    steps.reverse()
    globals_ = dict(global_scope)

    def value_of(expr: ast.expr) -> Any:
        return eval(compile(ast.Expression(expr), "<dynamo source>", "eval"), globals_, scope)

    try:
        root = value_of(root_node)
        path = tuple(PathStep(kind, key, value_of(expr)) for kind, key, expr in steps)
    except Exception:  # noqa: BLE001 - the chain changed under us: no structured path
        return None
    module = scope["G"].get("__name__") if root_kind == "global" else None
    return SourcePath(root_kind, root_name, root, path, module if isinstance(module, str) else None)
