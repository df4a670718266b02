"""Every scalar guard behind each recompile, for ``python -m dynscalar doctor``.

Why it exists: Dynamo explains a recompile with the *first* failing guard of each compiled
version only (``torch._dynamo.utils.guard_failures``, the ``recompiles`` log and the
``recompile_reasons`` artifact all come from ``get_guard_fail_reason_helper``, which stops at
the first failing leaf guard; ``recompiles_verbose`` lists more parts of that one guard, not
more guards, and torch 2.13 has no "report all guard failures" switch). A model with two
changing scalars therefore shows one of them per run. This module watches recompiles and
evaluates *every* scalar guard of every cached version against the frame that missed the
cache, the way Dynamo evaluates guard text when it builds its own reasons:

* ``x == 7`` leaf guards (``EQUALS_MATCH`` on an int or float): a scalar compiled as a
  constant;
* the symbolic guards Dynamo installs as Python lambdas on the root, the epilogue guards
  that run after all others: ``x == 0.05`` where torch made a float
  dynamic and then specialized it (a scheduled learning rate), and predicates on dynamic
  scalars (``p == 0.0`` or ``p != 0.0`` where dropout takes another path at 0,
  ``(step % 2) == 0``), reported with the guard's text as :attr:`ScalarGuardFailure.guard`.

It also tells the scalars that *caused* a recompile from the ones that merely changed: a
version whose guards, apart from the failing scalar ones, all pass (checked on a copy of its
guard tree without those scalars, ``RootGuardManager.clone_manager``; the epilogue guards,
which the copy keeps, are judged part by part) would have served the call had those scalars
been dynamic; the causes are the failing scalars of the such versions that failed on the
fewest (once torch made a scalar dynamic itself, older versions still fail on it, but it no
longer forces anything). When every version also fails something else (a tensor shape: a
smaller last batch), the recompile is not the scalars' doing.

Past ``recompile_limit`` torch stops compiling the function and, by default, stops looking:
the frame is marked "run cached versions only" for good, and later calls that miss the
cache run eagerly without anyone seeing why. While the doctor watches, that mark is applied
to the one call only (``ConvertFrameReturn.apply_to_code=False``): the call still runs
eagerly, exactly as it would have, and the next miss comes back here, so a scalar that
changes only after the limit (a dropout schedule per epoch) is found in the same run.
Torch's "hit config.recompile_limit" warning is printed once per function, as without the
doctor.

Private torch names used (the entries of :data:`PRIVATES`, checked like the bridge's
table, plus attributes of guard managers read on an instance), checked by
:func:`check_recompile_internals` before anything is patched; every patch is a
pass-through wrapper that returns what the original returns (the limit's strategy kept for
one call instead of for the code object):

* ``convert_frame.get_and_maybe_log_recompilation_reasons(cache_entries, frame, backend,
  skip_logging)``: called once per recompile with the cached versions and the frame;
* ``convert_frame.exceeds_recompile_limit(cache_size, compile_id)``: tells when
  ``recompile_limit`` stopped compiling (the function then runs eagerly);
* ``convert_frame.ConvertFrame.__call__`` and ``types.ConvertFrameReturn``: the frame
  strategy torch returns for a call at the limit;
* ``guards.get_verbose_code_parts(code_parts, guard, recompile_hint)``: keeps the user frame
  of each guard (the guard's own text keeps only a shortened file name);
* ``CacheEntry.guard_manager``/``compile_id``; ``GuardManagerWrapper.root``/``global_scope``/
  ``closure_vars``; ``GuardManager.get_leaf_guards``/``get_child_managers``/``get_source``;
  ``DictGuardManager.get_key_value_managers``; ``RootGuardManager.clone_manager``/``check``/
  ``check_verbose``/``get_epilogue_lambda_guards``; ``LeafGuard.verbose_code_parts``; the
  leaf guard class ``EQUALS_MATCH``.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import logging
import math
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any

from ..._bridge import _patch, _table, _torch
from ..._bridge._paths import call_site_frame, innermost_user, parse_source
from ..._diagnostics import BridgeError

__all__ = [
    "PathStep",
    "Recompile",
    "RecompileWatcher",
    "ScalarGuardFailure",
    "SourcePath",
    "check_recompile_internals",
]

# Guard-manager attributes read on instances (C++ objects: checked on one, not by the table).
_WRAPPER_ATTRIBUTES = ("root", "global_scope", "closure_vars")
_MANAGER_METHODS = ("get_leaf_guards", "get_child_managers", "get_source", "check")
_ROOT_METHODS = ("clone_manager", "check_verbose", "get_epilogue_lambda_guards")
#: the private torch names the watcher reads and wraps (its wrappers are its own methods)
PRIVATES: tuple[_table.Private, ...] = (
    _table.Private(
        "torch._dynamo.convert_frame:get_and_maybe_log_recompilation_reasons",
        ("cache_entries", "frame", "backend", "skip_logging"),
        phase="doctor",
        why="called once per recompile with the cached versions and the frame",
    ),
    _table.Private(
        "torch._dynamo.convert_frame:exceeds_recompile_limit",
        ("cache_size", "compile_id"),
        phase="doctor",
        why="tells when recompile_limit stopped compiling",
    ),
    _table.Private(
        "torch._dynamo.convert_frame:ConvertFrame.__call__",
        ("self", "frame", "cache_entry", "hooks", "frame_state", "skip"),
        phase="doctor",
        why="the limit's run-cached-only strategy, kept for one call so later calls are seen",
    ),
    _table.Private(
        "torch._dynamo.types:ConvertFrameReturn",
        ("frame_exec_strategy", "apply_to_code", "guarded_code", "skip_reason"),
        phase="doctor",
    ),
    _table.Private("torch._dynamo.guards:GuardManagerWrapper", phase="doctor"),
    _table.Private(
        "torch._C._dynamo.guards:DictGuardManager.get_key_value_managers", phase="doctor"
    ),
    _table.Private("torch._C._dynamo.guards:EQUALS_MATCH", phase="doctor"),
)

_SCALAR_GUARD = "EQUALS_MATCH"  # the leaf guard class Dynamo uses for `x == 7`
_HINT = " (HINT: "  # Dynamo appends hints to a guard's text
_LIMIT_WARNING = "torch._dynamo hit config.%s (%s)"  # Dynamo's warning at the limit


def check_recompile_internals() -> None:
    """Raise :class:`BridgeError` unless the Dynamo internals used here have the expected shape."""
    import torch

    version = torch.__version__
    _table.check_entries(
        PRIVATES + _table.by_phase("doctor"), who="dynscalar doctor", what="the doctor"
    )
    try:  # the table checked that these exist; their instances are checked here
        wrapper = _entry(":GuardManagerWrapper").root()()
    except (ImportError, AttributeError, TypeError) as exc:
        raise BridgeError(
            f"dynscalar doctor: a torch._dynamo internal it reads moved in torch {version}: "
            f"{exc}. Use TORCH_LOGS=recompiles instead (first failing guard per version)."
        ) from exc
    missing = [a for a in _WRAPPER_ATTRIBUTES if not hasattr(wrapper, a)]
    missing += [f"GuardManager.{m}" for m in _MANAGER_METHODS if not hasattr(wrapper.root, m)]
    missing += [f"RootGuardManager.{m}" for m in _ROOT_METHODS if not hasattr(wrapper.root, m)]
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
    """A guard on a Python scalar of one compiled version that the new call failed.

    ``x == 7`` (``guard`` None): the version was compiled for that one value, ``expected``.
    A symbolic guard (``guard`` its text, ``symbolic`` True): torch traced the scalar as a
    symbol and the version holds for the values that pass it: ``x == 0.05`` after torch
    specialized a dynamic float, or a predicate (``p != 0.0``, ``0 <= p``) on a scalar that
    stays dynamic, in which case ``expected`` is None.
    """

    version: str  # compile id of the cached version, e.g. "0/3"
    source: str  # Dynamo's expression for the value, e.g. "L['self']._modules['block'].step"
    expected: int | float | None  # the value that version was compiled for (None: a predicate)
    actual: Any  # the value now
    user_frame: traceback.FrameSummary | None  # innermost user frame that read the value
    path: SourcePath | None  # None when the source is not a plain chain of names
    #: read through a module's property: (steps of ``path`` up to the module, the module's
    #: class name, the property name); None for a plain read
    through: tuple[int, str, str] | None = None
    symbolic: bool = False  # from the symbolic (lambda) guards, not an EQUALS_MATCH
    guard: str | None = None  # a symbolic guard's code (without Dynamo's comment)
    #: the guard holds for one value of the scalar only: ``x == 7``, and symbolic guards
    #: such as ``min(1.0, 0.125 + x) == 0.25`` (torch specialized an expression of it);
    #: False for predicates (``x != 0.0``, ``0 <= x``), which hold for many values
    pins: bool = True


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


# ----------------------------------------------------------------------------- the watcher
class RecompileWatcher:
    """Context manager: call ``on_recompile`` with a :class:`Recompile` at every recompile,
    and at every call past a recompile limit that missed the cache.

    Installs pass-through wrappers on Dynamo's recompile path (see the module docstring) and
    removes them on exit. A failure inside the watcher never reaches the compiled program: it
    is recorded in :attr:`Recompile.errors` (or :attr:`errors` when no event could be made).
    """

    def __init__(self, on_recompile: Callable[[Recompile], None]) -> None:
        self._on_recompile = on_recompile
        self._frames: dict[str, traceback.FrameSummary] = {}  # guard text -> user frame
        self._read_at: dict[str, traceback.FrameSummary] = {}  # source -> user frame
        self._pending = threading.local()  # the event whose compile may still be refused
        self._patches: list[_patch.Patch] = []
        self._limit_filter = _OnceAtTheLimit()
        self.errors: list[str] = []
        #: code objects whose calls past the limit could not be read (this torch keeps the
        #: limit's strategy for the whole function)
        self.unobserved: set[CodeType] = set()
        #: per cached version (by its guard manager, kept alive here so the id stays its
        #: own): its scalar guards, its epilogue guards' texts, and copies of its guard tree
        #: without given scalars.  A version's guards never change, and every call past a
        #: limit reads every version again: read once, the watcher's cost per call is small
        self._versions: dict[int, tuple[Any, list[tuple[str, Any, str]], list[str]]] = {}
        self._copies: dict[tuple[int, frozenset[str]], Any] = {}

    def __enter__(self) -> RecompileWatcher:
        check_recompile_internals()
        for target, hook in (
            (":get_and_maybe_log_recompilation_reasons", self._reasons_hook),
            (":exceeds_recompile_limit", self._limit_hook),
            (":get_verbose_code_parts", self._verbose_hook),
            (":ConvertFrame.__call__", self._convert_hook),
        ):
            entry = _entry(target)
            self._patches.append(_patch.wrap(entry, functools.partial(hook, entry)))
        logging.getLogger("torch._dynamo.convert_frame").addFilter(self._limit_filter)
        return self

    def __exit__(self, *exc: object) -> None:
        logging.getLogger("torch._dynamo.convert_frame").removeFilter(self._limit_filter)
        for patch in reversed(self._patches):
            _patch.unwrap(patch)  # left alone where someone else patched it since
        self._patches.clear()

    # -- build time: the user frame of each guard
    def _verbose_hook(
        self,
        entry: _table.Private,
        wrapped: Callable[..., list[str]],
        _instance: Any,
        args: Any,
        kwargs: Any,
    ) -> list[str]:
        parts = wrapped(*args, **kwargs)
        try:
            guard = entry.bind(args, kwargs).get("guard")
            if guard is not None and getattr(guard, "user_stack", None):
                frame = innermost_user(guard.user_stack)
                if frame is not None:
                    for part in parts:
                        if _parse_scalar_guard(part) is not None:
                            self._frames[_guard_key(part)] = frame
                    name = getattr(guard, "name", None)
                    if isinstance(name, str):  # where a source is read: paths point here
                        self._read_at.setdefault(name, frame)
        except Exception as exc:  # noqa: BLE001 - never break guard building
            self.errors.append(f"reading a guard's user frame: {exc!r}")
        return parts

    # -- recompile time
    def _reasons_hook(
        self,
        entry: _table.Private,
        wrapped: Callable[..., list[str]],
        _instance: Any,
        args: Any,
        kwargs: Any,
    ) -> list[str]:
        reasons = wrapped(*args, **kwargs)
        call = entry.bind(args, kwargs)
        cache_entries, frame = call["cache_entries"], call["frame"]
        if call.get("skip_logging", False):  # a query (fail_on_recompile stance), not a recompile
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

    def _limit_hook(
        self,
        entry: _table.Private,
        wrapped: Callable[..., tuple[bool, str]],
        _instance: Any,
        args: Any,
        kwargs: Any,
    ) -> tuple[bool, str]:
        exceeded, limit_type = wrapped(*args, **kwargs)
        event = getattr(self._pending, "event", None)
        self._pending.event = None
        self._pending.refused = exceeded
        if exceeded and event is not None:
            event.refused_by = limit_type
            limit = getattr(_torch.dynamo_config, limit_type, None)
            event.limit = limit if isinstance(limit, int) else None
        return exceeded, limit_type

    def _convert_hook(
        self,
        entry: _table.Private,
        wrapped: Callable[..., Any],
        _instance: Any,
        args: Any,
        kwargs: Any,
    ) -> Any:
        """At the limit, torch's "run cached versions only" for this call only (the next
        miss comes back to the watcher); every other result as torch returns it."""
        call = entry.bind(args, kwargs)
        frame = call["frame"]
        self._pending.refused = False
        # one frame more between Dynamo's callback and the user's frame: this hook's
        result = wrapped(**{**call, "skip": call.get("skip", 0) + 1})
        if getattr(self._pending, "refused", False):
            self._pending.refused = False
            applies = getattr(result, "apply_to_code", None)
            if applies is True:
                return dataclasses.replace(result, apply_to_code=False)
            if applies is None:  # no per-call strategy here: later calls go unseen
                self.unobserved.add(frame.f_code)
        return result

    def _inspect(self, entries: list[Any], frame: Any, reasons: list[str]) -> Recompile:
        f_locals = frame.f_locals
        event = Recompile(
            code=frame.f_code,
            frame_locals=f_locals,
            caller=call_site_frame(sys._getframe(1)),
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
            judged = self._judge(entry, wrapper, frame, event)
            if judged is None:
                continue
            failed, only_scalars = judged
            event.changed.extend(failed)
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

    def _judge(
        self, entry: Any, wrapper: Any, frame: Any, event: Recompile
    ) -> tuple[list[ScalarGuardFailure], bool] | None:
        """(the scalar guards of one version that the call fails, whether they alone do);
        None when it fails none."""
        f_locals = frame.f_locals
        scope: dict[str, Any] = {"L": f_locals, "G": wrapper.global_scope["G"]}
        scope.update(wrapper.closure_vars)
        global_scope = dict(wrapper.global_scope)

        def value_of(source: str) -> Any:
            return eval(_compiled(source), global_scope, scope)  # as Dynamo evaluates guard text

        def failure(
            source: str, expected: Any, actual: Any, text: str, guard: str | None
        ) -> ScalarGuardFailure:
            return ScalarGuardFailure(
                version=str(entry.compile_id),
                source=source,
                expected=expected,
                actual=actual,
                user_frame=self._frames.get(_guard_key(text)) or self._read_at.get(source),
                path=_source_path(source, global_scope, scope),
                through=_through(frame.f_code, source, global_scope, scope),
                symbolic=guard is not None,
                guard=guard,
                pins=guard is None or _pins(guard),
            )

        known = self._versions.get(id(wrapper))
        if known is None or known[0] is not wrapper:
            epilogue_texts = [
                text
                for leaf in wrapper.root.get_epilogue_lambda_guards()
                for text in leaf.verbose_code_parts()
            ]
            known = (wrapper, list(_scalar_guards(wrapper.root)), epilogue_texts)
            self._versions[id(wrapper)] = known
        _, scalar_guards, epilogue_texts = known
        failed: list[ScalarGuardFailure] = []
        failed_sources: set[str] = set()  # EQUALS_MATCH managers to leave out of the copy
        for source, expected, text in scalar_guards:
            try:
                actual = value_of(source)
            except Exception as exc:  # noqa: BLE001 - unreadable: not a scalar we can judge
                event.errors.append(f"{source}: {exc!r}")
                continue
            if type(actual) is type(expected) and actual == expected:
                continue
            failed_sources.add(source)
            failed.append(failure(source, expected, actual, text, None))
        # the symbolic guards: every part of the root's epilogue lambda guards
        epilogue: set[str] = set()
        other_symbolic = False  # a failing part about something else (a tensor's size)
        for text in epilogue_texts:
            epilogue.add(text)
            try:
                passed = bool(value_of(text))
            except Exception as exc:  # noqa: BLE001
                event.errors.append(f"{_guard_key(text)}: {exc!r}")
                other_symbolic = True
                continue
            if passed:
                continue
            code = _code_of(text)
            sources = _scalar_sources(code, value_of)
            if not sources:
                other_symbolic = True
                continue
            parsed = _parse_scalar_guard(text)
            pinned: int | float | None = None  # a predicate: a path of a dynamic scalar
            if parsed is not None and len(sources) == 1 and _same(parsed[0], sources[0][0]):
                pinned = parsed[1]  # `x == 0.05`: torch specialized it
            for source, actual in sources:
                if source not in _sources(failed):
                    failed.append(failure(source, pinned, actual, text, code))
        if not failed:
            return None
        try:
            skip = frozenset(failed_sources)
            rest = self._copies.get((id(wrapper), skip))
            if rest is None:
                rest = wrapper.root.clone_manager(lambda m: m.get_source() not in skip)
                self._copies[(id(wrapper), skip)] = rest
            verdict = rest.check_verbose(f_locals)
            if verdict.result:
                only_scalars = True
            else:  # the epilogue runs last: failing there, everything else passed
                parts = set(verdict.verbose_code_parts)
                only_scalars = bool(parts) and parts <= epilogue and not other_symbolic
        except Exception as exc:  # noqa: BLE001 - cannot tell: count it as caused
            event.errors.append(f"checking the other guards of {entry.compile_id}: {exc!r}")
            only_scalars = True
        return failed, only_scalars


class _OnceAtTheLimit(logging.Filter):
    """Lets torch's "hit config.recompile_limit" warning through once per function: with
    the doctor the limit's strategy holds for one call, so torch would repeat it."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[Any] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg is _LIMIT_WARNING or (
            isinstance(record.msg, str) and record.msg.startswith(_LIMIT_WARNING)
        ):
            args = record.args if isinstance(record.args, tuple) else ()
            key = args[2] if len(args) > 2 else None  # the function: 'forward' (file:line)
            if key in self._seen:
                return False
            self._seen.add(key)
        return True


# ----------------------------------------------------------------------------- helpers
def _entry(target_suffix: str) -> _table.Private:
    """The one entry of :data:`PRIVATES` (or the table's ``"doctor"`` entry the bridge reads
    too) whose target ends with ``target_suffix``."""
    found = [p for p in PRIVATES + _table.by_phase("doctor") if p.target.endswith(target_suffix)]
    if len(found) != 1:
        raise KeyError(f"{target_suffix!r} matches {len(found)} entries of the table")
    return found[0]


def _through(
    code: CodeType, source: str, global_scope: dict[str, Any], scope: dict[str, Any]
) -> tuple[int, str, str] | None:
    """The module property the compiled code read ``source`` through (``_properties``)."""
    from ..._bridge._properties import READS

    read = (READS.get(code) or {}).get(source)
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


@functools.lru_cache(maxsize=4096)
def _compiled(source: str) -> CodeType:
    """``source`` compiled for ``eval`` once (guard texts repeat at every call past a limit)."""
    return compile(source, "<guard>", "eval")


def _guard_key(text: str) -> str:
    return text.split(_HINT, 1)[0].rstrip()


def _code_of(text: str) -> str:
    """A guard's code without Dynamo's comment (``# self.step += 1  # m.py:9 in f``)."""
    return _guard_key(text).split("  #", 1)[0].strip()


@functools.lru_cache(maxsize=4096)
def _parse_scalar_guard(text: str) -> tuple[str, int | float] | None:
    """``"L['self'].step == 7   # self.step += 1  # m.py:9 in forward"`` -> (source, 7)."""
    code = _code_of(text)
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


def _pins(code: str) -> bool:
    """Whether a guard is ``<expression> == <number>`` (it holds for one value)."""
    try:
        node = ast.parse(code, mode="eval").body
    except SyntaxError:
        return False
    if not (isinstance(node, ast.Compare) and [type(op) for op in node.ops] == [ast.Eq]):
        return False
    return any(_is_number(side) for side in (node.left, *node.comparators))


def _is_number(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    if isinstance(node, ast.Name):  # Dynamo prints infinities as names
        return node.id in ("inf", "nan")
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


@functools.lru_cache(maxsize=4096)
def _same(source: str, other: str) -> bool:
    """Whether two spellings of a source are the same expression."""
    try:
        return ast.unparse(ast.parse(source, mode="eval")) == other
    except SyntaxError:
        return False


def _scalar_sources(code: str, value_of: Callable[[str], Any]) -> list[tuple[str, Any]]:
    """The scalars a symbolic guard reads, with their values now; empty when it reads
    anything else too (a tensor's ``size()``), or nothing the frame holds.

    The chains of names rooted at ``L[...]``/``G[...]`` in ``code`` are what it reads
    (``(L['self'].step % 2) == 0`` reads ``L['self'].step``).
    """
    found: list[tuple[str, Any]] = []
    for chain in _chains(code):
        try:
            value = value_of(chain)
        except Exception:  # noqa: BLE001 - not readable now: not a scalar guard
            return []
        if type(value) is bool or not isinstance(value, (int, float)):
            return []
        found.append((chain, value))
    return found


@functools.lru_cache(maxsize=4096)
def _chains(code: str) -> tuple[str, ...]:
    """The chains of names rooted at ``L[...]``/``G[...]`` in a guard's code, once each."""
    try:
        tree = ast.parse(code, mode="eval").body
    except SyntaxError:
        return ()
    chains: list[str] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            text = ast.unparse(node)
            parsed = parse_source(text)
            if parsed is not None and parsed.scope:
                chains.append(text)
                continue
        stack.extend(ast.iter_child_nodes(node))
    return tuple(dict.fromkeys(chains))


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


def _source_path(
    source: str, global_scope: dict[str, Any], scope: dict[str, Any]
) -> SourcePath | None:
    """Dynamo's source expression as a root and steps, each with the object it is taken from."""
    parsed = parse_source(source)
    if parsed is None or not parsed.scope:
        return None
    globals_ = dict(global_scope)

    def value_of(expr: str) -> Any:
        return eval(expr, globals_, scope)

    try:
        root = value_of(parsed.root_source)
        path = tuple(PathStep(s.kind, s.key, value_of(s.container)) for s in parsed.steps)
    except Exception:  # noqa: BLE001 - the chain changed under us: no structured path
        return None
    root_kind = "local" if parsed.scope == "L" else "global"
    module = scope["G"].get("__name__") if root_kind == "global" else None
    return SourcePath(
        root_kind, parsed.root, root, path, module if isinstance(module, str) else None
    )
