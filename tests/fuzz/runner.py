"""Run a fuzz program compiled and eagerly, compare every call, classify and shrink.

One program, one verdict:

1. :func:`execute` runs the rendered source with a :class:`Harness`: compiled (every call
   through ``torch.compile(target, backend=<counting backend>)``) or eager, each from a
   fresh ``exec`` of the source (new classes, new instances), with warnings recorded.
2. :func:`diff_call` compares call *i* of both runs: the outcome (result tensors equal:
   exact on eager/aot_eager, tight tolerance on inductor; or both raised), every tracked
   scalar attribute afterwards (value, NaN-aware; exact ``type()``; a proxy's ``.spec``) and
   the outcome of the mark steps before the call.
3. :func:`check_program` walks the calls: a difference where the compiled call raised an
   error of :data:`tests.fuzz.contract.CONTRACT` whose condition held is *allowed* (the
   comparison goes on while the attributes still agree); the first other difference ends
   the program.  It is *torch's own* when stock torch, on the same program up to that call
   with every mark removed and run in a process that never imports dynscalar
   (:mod:`tests.fuzz.stock`), shows the same kind of difference on the same subject at
   that call, or already parts from eager at an earlier one (:func:`explain_by_stock`);
   otherwise it is *dynscalar's*.
4. :func:`shrink` reduces a dynscalar-caused failure (drop steps, statements, instances,
   marks, specs) while the same kind of dynscalar-caused difference persists.

This module does not import dynscalar at import time (the stock worker uses it too).
"""

from __future__ import annotations

import atexit
import contextlib
import copy
import json
import math
import numbers
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from ..helpers import CountingBackend
from .contract import Entry, Scalar, contract_error, rule_for
from .generator import (
    Assign,
    Call,
    Instance,
    Mark,
    Program,
    Redefine,
    Reset,
    Spec,
    Unmark,
    Value,
    render,
)

ROOT = Path(__file__).resolve().parents[2]
PROXY_NAMES = ("DynamicInt", "DynamicFloat")


# ----------------------------------------------------------------------------- running
@dataclass(frozen=True)
class Snap:
    """A scalar attribute after a call: exact type, plain value, and a proxy's spec."""

    type: str
    value: Any
    spec: str | None


@dataclass
class Outcome:
    result: Any = None  # a tensor (detached copy) when the call returned
    error: str | None = None  # "TypeError: ..." when it raised
    contract: str | None = None  # public name of a dynscalar error in the raised chain
    contract_applies: bool = False  # ... and its contract condition held at entry
    generator: int | None = None  # the default generator's state after the call (a digest)


@dataclass
class CallRecord:
    target: str
    outcome: Outcome
    attrs: dict[str, Snap]
    steps: list[str]  # outcome of each fuzz.step() since the previous call: "ok" or class name
    internal: list[str] = field(default_factory=list)  # dynscalar's internal-error reports


class MarkLost(Exception):
    """A function defined again and marked lost its mark (the first one's finalizer)."""


#: how dynscalar's safety net words a failure of its own (never expected in a program)
INTERNAL_ERROR = "dynscalar: an internal error"


@dataclass
class RunLog:
    calls: list[CallRecord] = field(default_factory=list)
    compiles: int = 0
    setup_error: str | None = None  # an exception outside fuzz.call/fuzz.step
    warnings: list[str] = field(default_factory=list)  # "Category: first line"


def _type_name(value: Any) -> str:
    t = type(value)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def snap(value: Any) -> Snap:
    """Copy what matters of a value now: a proxy's class, plain value and spec."""
    if type(value).__name__ in PROXY_NAMES:
        return Snap(type(value).__name__, value.__wrapped__, repr(value.spec))
    kind = _type_name(value)
    if isinstance(value, torch.Tensor):
        value = value.detach().clone()
    else:
        with contextlib.suppress(Exception):
            value = copy.copy(value)  # numpy arrays are mutable
    return Snap(kind, value, None)


def _reachable(path: str, value: Any, out: dict[str, Snap], depth: int) -> None:
    """Snapshots of ``value`` and of what it holds (a container: its type and length)."""
    kind = type(value)
    if depth > 4:
        return
    if kind in (list, tuple):
        out[path] = Snap(kind.__name__, len(value), None)
        for i, item in enumerate(value):
            _reachable(f"{path}[{i}]", item, out, depth + 1)
    elif kind is dict:
        out[path] = Snap("dict", len(value), None)
        for key, item in value.items():
            _reachable(f"{path}[{key!r}]", item, out, depth + 1)
    elif kind.__name__ not in PROXY_NAMES and hasattr(value, "__dict__") and not callable(value):
        if isinstance(value, (torch.Tensor, torch.nn.Module)):
            out[path] = snap(value)
            return
        out[path] = Snap(_type_name(value), None, None)
        for attr, item in vars(value).items():
            _reachable(f"{path}.{attr}", item, out, depth + 1)
    else:
        out[path] = snap(value)


def registry_mark(module: torch.nn.Module, attr: str) -> Any:
    """The spec ``mark_dynamic_attr``/``@dynamic_attrs`` declared for ``module.attr``, or None.

    A proxy value's own spec is added separately: the contract applies both.
    """
    try:
        from dynscalar._marks import lookup_mark
    except ImportError:  # the mark store moved: the public explain() (a proxy's spec wins there)
        import dynscalar

        records = dynscalar.explain(module, show=False)
        return next((r.spec for r in records if r.module == "" and r.attribute == attr), None)
    return lookup_mark(module, attr)


class Harness:
    """The ``fuzz`` object a program calls: ``track``, ``call``, ``step``."""

    def __init__(self, program: Program, backend: str | None, *, contract: bool) -> None:
        self.program = program
        self.counter = CountingBackend(backend) if backend else None
        self.contract = contract
        self.mods: dict[str, Any] = {}
        self.compiled: dict[int, tuple[Any, Any]] = {}
        self.pending: list[str] = []
        self.log = RunLog()
        self.uses = program.body_uses()
        self.caught: list[warnings.WarningMessage] = []  # the run's warnings, as they come

    def track(self, **mods: Any) -> None:
        self.mods = mods

    def reset(self) -> None:
        """``torch._dynamo.reset()`` between two calls (compiled runs only)."""
        if self.counter is not None:
            torch._dynamo.reset()

    def forget(self, fn: Any) -> None:
        """Drop the compiled wrapper of ``fn`` (it is being defined again): nothing here
        keeps the old function alive."""
        self.compiled.pop(id(fn), None)

    def expect_marked(self, fn: Any, name: str) -> None:
        """``fn``'s parameter ``name`` must still be marked (raises ``MarkLost``)."""
        if self.arg_mark(fn, name) is None:
            raise MarkLost(f"{fn.__qualname__}({name})")

    @contextlib.contextmanager
    def step(self) -> Iterator[None]:
        try:
            yield
            self.pending.append("ok")
        except Exception as exc:  # noqa: BLE001 - the comparison is the point
            self.pending.append(type(exc).__name__)

    def snapshot(self) -> dict[str, Snap]:
        """Every value reachable from the tracked instances: the scalar attributes, and
        whatever else the program stored (lists, tuples, dicts, objects, at any depth)."""
        out: dict[str, Snap] = {}
        for name, mod in self.mods.items():
            for attr in self.program.attrs:
                out[f"{name}.{attr}"] = snap(mod.__dict__.get(attr, "<missing>"))
            for attr, value in mod.__dict__.items():
                skip = attr in self.program.attrs or attr.startswith("_") or attr == "training"
                if not skip:
                    _reachable(f"{name}.{attr}", value, out, 0)
        return out

    def entry(self, fn: Any, args: tuple[Any, ...]) -> Entry:
        """The scalars a compiled call starts with and the marks that apply to each."""
        scalars = []
        if isinstance(fn, torch.nn.Module):
            for attr in self.program.attrs:
                value = fn.__dict__.get(attr)
                marks = [registry_mark(fn, attr)]
                if value is not None and type(value).__name__ in PROXY_NAMES:
                    marks.append(value.spec)
                scalars.append(
                    Scalar(attr, value, tuple(m for m in marks if m is not None), attr in self.uses)
                )
        else:
            for name, value in zip(self.program.attrs, args[1:], strict=False):
                marks = [self.arg_mark(fn, name)]
                if type(value).__name__ in PROXY_NAMES:
                    marks.append(value.spec)
                scalars.append(
                    Scalar(name, value, tuple(m for m in marks if m is not None), name in self.uses)
                )
        body = self.program.body
        return Entry(
            tuple(scalars),
            any(s.forces for s in body),
            any(s.makes_float for s in body),
            any(s.writes for s in body),
        )

    @staticmethod
    def arg_mark(fn: Any, name: str) -> Any:
        """The argument mark of parameter ``name`` of ``fn`` (None: unmarked)."""
        from dynscalar._marks import lookup_arg_mark

        return lookup_arg_mark(fn.__code__, name, None)

    def call(self, fn: Any, *args: Any) -> None:
        target = next((n for n, m in self.mods.items() if m is fn), getattr(fn, "__name__", "?"))
        entry = self.entry(fn, args) if self.contract else None
        run = fn
        if self.counter is not None:
            run = self.compiled.setdefault(id(fn), (fn, torch.compile(fn, backend=self.counter)))[1]
        outcome = Outcome()
        reported = len(self.caught)
        # every call starts from the same generator state in both runs: a random op must
        # draw eager's numbers and leave the generator where eager leaves it
        torch.manual_seed(len(self.log.calls))
        try:
            result = run(*args)
            outcome.result = result.detach().clone() if isinstance(result, torch.Tensor) else result
            outcome.generator = hash(torch.get_rng_state().numpy().tobytes())
        except Exception as exc:  # noqa: BLE001
            outcome.error = describe(exc)
            found = contract_error(exc)
            if found is not None:
                outcome.contract = type(found).__name__
                rule = rule_for(found)
                outcome.contract_applies = bool(entry and rule and rule.applies(entry))
        internal = [
            str(w.message)[:300]
            for w in self.caught[reported:]
            if str(w.message).startswith(INTERNAL_ERROR)
        ]
        if outcome.error and INTERNAL_ERROR in outcome.error:
            internal.append(outcome.error)
        record = CallRecord(target, outcome, self.snapshot(), self.pending, internal)
        self.log.calls.append(record)
        self.pending = []


def describe(exc: BaseException) -> str:
    """``Outer: message``, or ``Outer(Root): root message`` when torch wraps the real error."""
    root = exc
    for _ in range(16):
        nxt = getattr(root, "inner_exception", None) or root.__cause__
        if not isinstance(nxt, BaseException) or nxt is root:
            break
        root = nxt
    text = [line for line in str(root).strip().splitlines() if line.strip()]
    first = text[0][:200] if text else ""
    if root is exc:
        return f"{type(exc).__name__}: {first}"
    return f"{type(exc).__name__}({type(root).__name__}): {first}"


_SOURCES = Path(tempfile.mkdtemp(prefix="dynscalar-fuzz-"))
atexit.register(shutil.rmtree, _SOURCES, ignore_errors=True)


def execute(program: Program, backend: str | None, *, marks: bool = True) -> RunLog:
    """Run ``program`` (compiled with ``backend``, or eagerly when None) from fresh source."""
    source = render(program, marks=marks)
    # A real file: Dynamo, tracebacks and warnings point at program lines.
    path = _SOURCES / f"s{program.seed}_i{program.index}_{backend or 'eager'}_{int(marks)}.py"
    path.write_text(source)
    harness = Harness(program, backend, contract=marks and backend is not None)
    namespace: dict[str, Any] = {"__name__": f"fuzz_program_{program.index}"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        harness.caught = caught
        try:
            exec(compile(source, str(path), "exec"), namespace)
            namespace["program"](harness)
        except Exception as exc:  # noqa: BLE001
            harness.log.setup_error = type(exc).__name__
    harness.log.warnings = [f"{w.category.__name__}: {str(w.message)[:120]}" for w in caught]
    harness.log.compiles = harness.counter.frame_count if harness.counter else 0
    return harness.log


# ----------------------------------------------------------------------------- comparing
@dataclass(frozen=True)
class Mismatch:
    call: int
    subject: str  # "outcome", "mark steps", "program", or an attribute such as "m0.s"
    key: str  # the kind of difference, without names or values (deduplication, shrinking)
    detail: str  # what differed, with names and values

    def to_json(self) -> dict[str, Any]:
        return {"call": self.call, "subject": self.subject, "key": self.key, "detail": self.detail}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Mismatch:
        return cls(d["call"], d["subject"], d["key"], d["detail"])


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (
            isinstance(a, torch.Tensor)
            and isinstance(b, torch.Tensor)
            and _same_tensor(a, b, exact=True)
        )
    import numpy as np

    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        with contextlib.suppress(Exception):
            return bool(np.array_equal(a, b, equal_nan=True))
        return bool(np.array_equal(a, b))
    with contextlib.suppress(Exception):
        real = isinstance(a, numbers.Real) and isinstance(b, numbers.Real)
        if real and math.isnan(a) and math.isnan(b):
            return True
        return bool(a == b)
    return repr(a) == repr(b)


def _same_tensor(a: torch.Tensor, b: torch.Tensor, *, exact: bool) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if exact or not (a.is_floating_point() or a.is_complex()):
        same = a == b
        if a.is_floating_point():
            same = same | (a.isnan() & b.isnan())
        return bool(same.all())
    try:
        torch.testing.assert_close(a, b, equal_nan=True)  # float32: rtol 1.3e-6, atol 1e-5
    except AssertionError:
        return False
    return True


def _short(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return str(value.tolist())
    return repr(value)


def _snap_text(s: Snap) -> str:
    return f"{s.type} {_short(s.value)}" + (f" {s.spec}" if s.spec else "")


def diff_call(i: int, comp: CallRecord, eager: CallRecord, *, exact: bool) -> list[Mismatch]:
    """Every difference between call ``i`` of the compiled and the eager run."""
    out = []
    if comp.steps != eager.steps:
        out.append(
            Mismatch(
                i,
                "mark steps",
                "mark step outcome differs",
                f"mark steps before the call: compiled {comp.steps}, eager {eager.steps}",
            )
        )
    for run, record in (("compiled", comp), ("eager", eager)):
        if "MarkLost" in record.steps:
            out.append(
                Mismatch(
                    i,
                    "outcome",
                    "a function defined again lost its mark",
                    f"{run}: mark steps before the call {record.steps}",
                )
            )
    if comp.internal and eager.outcome.error is not None:  # the program's own error
        out.append(
            Mismatch(
                i,
                "outcome",
                "the program's own error reported as dynscalar's internal error",
                f"{comp.target}: {comp.internal[0]}",
            )
        )
    c, e = comp.outcome, eager.outcome
    if c.error is not None and e.error is not None and c.contract and not c.contract_applies:
        out.append(
            Mismatch(
                i,
                "outcome",
                f"compiled raised {c.contract} where eager raised its own error",
                f"{comp.target}: compiled raised {c.error}; eager raised {e.error}",
            )
        )
    elif c.error is not None and e.error is None:
        out.append(
            Mismatch(
                i,
                "outcome",
                f"compiled raised {c.error.split(':')[0]}, eager returned",
                f"{comp.target}: compiled raised {c.error}; eager returned {_short(e.result)}",
            )
        )
    elif c.error is None and e.error is not None:
        out.append(
            Mismatch(
                i,
                "outcome",
                f"eager raised {e.error.split(':')[0]}, compiled returned",
                f"{comp.target}: eager raised {e.error}; compiled returned {_short(c.result)}",
            )
        )
    elif c.error is None:
        a, b = c.result, e.result
        same = (
            _same_tensor(a, b, exact=exact)
            if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
            else _same_value(a, b)
        )
        if not same:
            dtypes = [getattr(r, "dtype", None) for r in (a, b)]
            key = "result dtype differs" if dtypes[0] != dtypes[1] else "result differs"
            where = f" ({dtypes[0]} and {dtypes[1]})" if dtypes[0] != dtypes[1] else ""
            detail = f"{comp.target}: compiled {_short(a)}, eager {_short(b)}{where}"
            out.append(Mismatch(i, "outcome", key, detail))
        elif c.generator != e.generator:
            detail = f"{comp.target}: the default generator is elsewhere after the call"
            out.append(Mismatch(i, "generator", "generator state after the call differs", detail))
    for name in sorted(set(comp.attrs) | set(eager.attrs)):
        cs, es = comp.attrs.get(name), eager.attrs.get(name)
        if cs is None or es is None:
            continue  # tracked in one run only: the setup differed (reported as such)
        if cs.type != es.type:
            key = f"attribute type: eager {es.type}, compiled {cs.type}"
        elif not _same_value(cs.value, es.value):
            key = f"attribute value differs ({es.type})"
        elif cs.spec != es.spec:
            key = f"attribute spec differs ({es.type})"
        else:
            continue
        detail = f"{name} after the call: compiled {_snap_text(cs)}, eager {_snap_text(es)}"
        out.append(Mismatch(i, name, key, detail))
    return out


def diff_runs(comp: RunLog, eager: RunLog, *, exact: bool) -> list[list[Mismatch]]:
    """The differences of each call; one more entry when the runs stop differently."""
    out = [
        diff_call(i, c, e, exact=exact)
        for i, (c, e) in enumerate(zip(comp.calls, eager.calls, strict=False))
    ]
    if comp.setup_error != eager.setup_error or len(comp.calls) != len(eager.calls):
        i = min(len(comp.calls), len(eager.calls))
        out.append(
            [
                Mismatch(
                    i,
                    "program",
                    "program raised outside a call",
                    f"compiled {comp.setup_error} after {len(comp.calls)} calls, "
                    f"eager {eager.setup_error} after {len(eager.calls)} calls",
                )
            ]
        )
    return out


# ----------------------------------------------------------------------------- stock torch
class StockWorker:
    """Runs unmarked programs in a subprocess that never imports dynscalar (stock torch)."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        return subprocess.Popen(
            [sys.executable, "-m", "tests.fuzz.stock"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )

    def run(self, program: Program, backend: str) -> list[list[Mismatch]]:
        """The differences stock torch shows, call by call, on ``program`` without marks."""
        request = json.dumps({"program": to_json(program), "backend": backend})
        for _attempt in range(2):
            if self.proc is None or self.proc.poll() is not None:
                self.proc = self._start()
            assert self.proc.stdin and self.proc.stdout
            try:
                self.proc.stdin.write(request + "\n")
                self.proc.stdin.flush()
                line = self.proc.stdout.readline()
            except (BrokenPipeError, OSError):
                line = ""
            if line:
                reply = json.loads(line)
                if reply.get("dynscalar_imported"):
                    raise RuntimeError("the stock-torch worker imported dynscalar")
                return [[Mismatch.from_json(m) for m in call] for call in reply["diffs"]]
            self.close()  # it crashed (e.g. a segfault in torch): restart once
        return [[Mismatch(0, "program", "stock torch crashed", "the unmarked program crashed")]]

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            assert proc.stdin is not None
            proc.stdin.close()  # the worker's loop ends
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def run_stock(program: Program, backend: str) -> list[list[Mismatch]]:
    """Compiled against eager on ``program`` with its marks removed, in this process."""
    torch._dynamo.reset()
    comp = execute(program, backend, marks=False)
    torch._dynamo.reset()
    eager = execute(program, None, marks=False)
    torch._dynamo.reset()
    return diff_runs(comp, eager, exact=backend != "inductor")


# ----------------------------------------------------------------------------- verdicts
@dataclass
class Event:
    """A difference between compiled and eager, with its cause."""

    cause: str  # "allowed", "torch" or "dynscalar"
    mismatch: Mismatch
    error: str | None = None  # allowed: the contract error class
    torch_kind: str | None = None  # torch: the difference stock torch showed

    def to_json(self) -> dict[str, Any]:
        return {
            "cause": self.cause,
            "error": self.error,
            "torch_kind": self.torch_kind,
            **self.mismatch.to_json(),
        }


@dataclass
class Verdict:
    program: Program
    backend: str
    calls: int
    compiles: int
    events: list[Event]
    warnings: list[str]
    wall_s: float

    @property
    def failure(self) -> Event | None:
        return next((e for e in self.events if e.cause == "dynscalar"), None)


def _walk(
    diffs: list[list[Mismatch]], comp: RunLog, eager: RunLog, events: list[Event]
) -> list[Mismatch]:
    """Record allowed differences in ``events``; return the first call's other differences."""
    for i, found in enumerate(diffs):
        if not found:
            continue
        c = comp.calls[i].outcome if i < len(comp.calls) else None
        e = eager.calls[i].outcome if i < len(eager.calls) else None
        if c and e and c.error and e.error and all(m.subject != "outcome" for m in found):
            # Both raised: eager may have run part of the call (assignments before the
            # error) where compiled code raised while tracing; the states part here, as
            # they do for stock torch.compile.  Nothing later can be compared.
            return []
        if c and c.contract and c.contract_applies:
            # Raised where the contract allows it (whether or not eager raised later on).
            events.append(Event("allowed", found[0], error=c.contract))
            if all(m.subject == "outcome" for m in found):
                continue  # only the outcome differs: the states still agree, keep comparing
            return []  # eager ran (part of) the call and compiled code did not: states part
        return found
    return []


def _known_torch_behaviour(mismatch: Mismatch) -> bool:
    """Stock torch writes a numpy scalar assigned in compiled code back as a 0-d ndarray
    (DESIGN.md 4b); dynscalar hands numpy scalars to torch unchanged, marked or not, so
    such a difference is torch's even where the stock re-run did not reach it (it may
    have given up on the frame earlier, on a different value)."""
    return mismatch.key.startswith("attribute type: eager numpy.") and mismatch.key.endswith(
        "compiled numpy.ndarray"
    )


def explain_by_stock(
    ours: list[Mismatch], theirs: list[list[Mismatch]]
) -> tuple[str | None, Mismatch | None]:
    """(torch's kind, None) when stock torch shows the same differences, else (None, ours).

    Stock torch explains a difference when, with the marks removed, it differs from eager
    at an earlier call (its state has parted from eager's, nothing later can be compared),
    or at the same call with the same kind of difference on the same subject.  When stock
    torch shows the same *outcome* difference at the same call (e.g. eager raised where
    compiled code returned), the attribute differences of that call follow from it.
    """
    if all(_known_torch_behaviour(m) for m in ours):
        return f"{ours[0].key} (torch writes numpy scalars back as 0-d arrays)", None
    call = ours[0].call
    for earlier in theirs[:call]:
        if earlier:
            return f"{earlier[0].key} (an earlier call)", None
    same_call = theirs[call] if call < len(theirs) else []
    for m in ours:
        if m.subject == "outcome" and any(
            t.subject == "outcome" and t.key == m.key for t in same_call
        ):
            return m.key, None
    for m in ours:
        if not any(t.subject == m.subject and t.key == m.key for t in same_call):
            return None, m
    return ours[0].key, None


def _without_calls(program: Program, drop: list[int]) -> Program:
    out: list[Any] = []
    seen = 0
    for step in program.steps:
        if isinstance(step, Call):
            seen += 1
            if seen - 1 in drop:
                continue
        out.append(step)
    return replace(program, steps=tuple(out))


def _explain_without_refused_calls(
    program: Program,
    ours: list[Mismatch],
    refused: list[int],
    backend: str,
    stock: StockWorker | None,
) -> tuple[str, None] | None:
    """Stock torch once more, without the calls where compiled dynscalar code raised an
    error of the contract (eager raised too, or the contract allowed it; either way the
    states still agreed after them, or ``_walk`` would have stopped comparing there).

    Such a call can hide a torch bug in the stock run: there stock torch gave up on the
    frame (it raised while tracing) and later calls ran eagerly, where dynscalar's error
    left the frame compiled and a later call met torch's bug.  Found by the long profile
    (``self.s += 0.5`` with a numpy int fails in stock torch's fake tensors).
    """
    dropped = sum(call < ours[0].call for call in refused)
    shifted = [replace(m, call=m.call - dropped) for m in ours]
    variant = _without_calls(program, refused).truncated(shifted[0].call + 1)
    theirs = stock.run(variant, backend) if stock else run_stock(variant, backend)
    kind, unexplained = explain_by_stock(shifted, theirs)
    if unexplained is not None or kind is None:
        return None
    return f"{kind} (stock torch, without the calls refused by the contract)", None


@contextlib.contextmanager
def _numpy_scalars_kept() -> Iterator[None]:
    """Stock torch with its numpy 0-d bug taken out: a compiled frame hands a numpy value
    back through ``torch._dynamo.utils.to_numpy_helper``, which turns a numpy *scalar*
    (``np.float64(0.5) * 2``) into a 0-d ``ndarray``; eager code then computes
    ``tensor * ndarray`` in float64 where eager had a float32 result (stock torch shows it
    with any frame that compiles such a value: ``torch.compile(lambda s: s * 2)(np.float64(
    0.5))`` returns an ``ndarray``).  Here a 0-d result becomes the numpy scalar eager
    has.  The compiled code loads the helper when it is generated, so the whole run is
    compiled again inside this context."""
    import numpy as np
    import torch._dynamo.utils as dynamo_utils

    original = dynamo_utils.to_numpy_helper

    @torch._dynamo.disable  # called from compiled code: not a frame to trace
    def helper(value: Any) -> Any:
        out = original(value)
        if isinstance(out, np.ndarray) and out.ndim == 0:
            return out[()]
        return out

    dynamo_utils.to_numpy_helper = helper
    try:
        yield
    finally:
        dynamo_utils.to_numpy_helper = original


def _explain_by_numpy_zero_d(
    program: Program, ours: list[Mismatch], backend: str
) -> tuple[str, None] | None:
    """Torch's own when the same program, compiled with dynscalar, agrees with eager at
    the failing call once torch's numpy 0-d conversion is taken out (and with it, only
    that): torch's bug, which dynscalar's graphs reach where stock's did not (a frame
    stock compiled to nothing, or gave up on).  Any other difference stays dynscalar's."""
    if not any("numpy" in m.key or "dtype" in m.key for m in ours):
        return None
    prefix = program.truncated(ours[0].call + 1)
    torch._dynamo.reset()
    with _numpy_scalars_kept():
        comp = execute(prefix, backend)
    torch._dynamo.reset()
    eager = execute(prefix, None)
    torch._dynamo.reset()
    diffs = diff_runs(comp, eager, exact=backend != "inductor")
    found = [m for call in diffs for m in call if m.call <= ours[0].call]
    if any(not _allowed_difference(comp, m) for m in found):
        return None
    return (
        f"{ours[0].key} (torch returns numpy scalars from compiled frames as 0-d arrays)",
        None,
    )


def _allowed_difference(comp: RunLog, mismatch: Mismatch) -> bool:
    """A difference at a call where compiled code raised an error the contract allows."""
    i = mismatch.call
    outcome = comp.calls[i].outcome if i < len(comp.calls) else None
    return bool(outcome and outcome.contract and outcome.contract_applies)


def check_program(program: Program, backend: str, stock: StockWorker | None) -> Verdict:
    """Run ``program`` compiled and eagerly and classify every difference."""
    start = time.perf_counter()
    exact = backend != "inductor"
    torch._dynamo.reset()
    comp = execute(program, backend)
    torch._dynamo.reset()
    eager = execute(program, None)
    events: list[Event] = []
    ours = _walk(diff_runs(comp, eager, exact=exact), comp, eager, events)
    if ours:
        prefix = program.truncated(ours[0].call + 1)
        theirs = stock.run(prefix, backend) if stock else run_stock(prefix, backend)
        kind, unexplained = explain_by_stock(ours, theirs)
        refused = [i for i, call in enumerate(comp.calls[: ours[0].call]) if call.outcome.contract]
        if unexplained is not None and refused:
            kind, unexplained = _explain_without_refused_calls(
                program, ours, refused, backend, stock
            ) or (kind, unexplained)
        if unexplained is not None:
            kind, unexplained = _explain_by_numpy_zero_d(program, ours, backend) or (
                kind,
                unexplained,
            )
        if unexplained is None:
            events.append(Event("torch", ours[0], torch_kind=kind))
        else:
            events.append(Event("dynscalar", unexplained))
    torch._dynamo.reset()
    return Verdict(
        program,
        backend,
        len(comp.calls),
        comp.compiles,
        events,
        comp.warnings,
        time.perf_counter() - start,
    )


# ----------------------------------------------------------------------------- shrinking
def _without(program: Program, **changes: Any) -> Program:
    return replace(program, **changes)


def _candidates(p: Program) -> Iterator[Program]:
    steps = p.steps
    calls = [i for i, s in enumerate(steps) if isinstance(s, Call)]
    # 1. steps, last first (keep the last call: the failure is at or before it)
    for i in reversed(range(len(steps))):
        if i == calls[-1]:
            continue
        yield _without(p, steps=steps[:i] + steps[i + 1 :])
    # 2. statements
    for i in range(len(p.body)):
        yield _without(p, body=p.body[:i] + p.body[i + 1 :])
    # 3. instances no step refers to
    used = {getattr(s, "target", None) for s in steps}
    unused = tuple(inst for inst in p.instances if inst.name not in used)
    if unused:
        yield _without(p, instances=tuple(i for i in p.instances if i.name in used))
    # 4. marks and specs
    for i, inst in enumerate(p.instances):
        if inst.mark is not None:
            yield _replace_instance(p, i, replace(inst, mark=None))
            if inst.mark[1] != Spec():
                yield _replace_instance(p, i, replace(inst, mark=(inst.mark[0], Spec())))
        for j, v in enumerate(inst.init):
            if v.is_proxy and v.spec != Spec():
                init = _put(inst.init, j, replace(v, spec=Spec()))
                yield _replace_instance(p, i, replace(inst, init=init))
        if inst.cls == "MD":
            yield _replace_instance(p, i, replace(inst, cls="M"))
    if p.class_mark is not None and not any(i.cls == "MD" for i in p.instances):
        yield _without(p, class_mark=None)
    if p.arg_mark is not None:
        yield _without(p, arg_mark=None)
        if p.arg_mark != Spec():
            yield _without(p, arg_mark=Spec())
    for i, s in enumerate(steps):
        value = getattr(s, "value", None) or getattr(s, "arg", None)
        if isinstance(value, Value) and value.is_proxy and value.spec != Spec():
            plain = replace(value, spec=Spec())
            edited = replace(s, value=plain) if isinstance(s, Assign) else Call(s.target, plain)
            yield _without(p, steps=_put(steps, i, edited))
        if isinstance(s, Mark) and s.spec != Spec():
            yield _without(p, steps=_put(steps, i, replace(s, spec=Spec())))
    # 5. a second attribute nothing uses any more
    if len(p.attrs) == 2:
        for k, attr in enumerate(p.attrs):
            if attr in p.body_uses() or any(getattr(s, "attr", None) == attr for s in steps):
                continue
            if any(
                (i.mark and attr in i.mark[0])
                or any(attr in getattr(s, "names", ()) for s in steps)
                for i in p.instances
            ) or (p.class_mark and attr in p.class_mark[0]):
                continue
            keep = 1 - k
            yield _without(
                p,
                attrs=(p.attrs[keep],),
                instances=tuple(replace(i, init=(i.init[keep],)) for i in p.instances),
            )


def _put(items: tuple[Any, ...], i: int, item: Any) -> tuple[Any, ...]:
    return (*items[:i], item, *items[i + 1 :])


def _replace_instance(p: Program, i: int, inst: Instance) -> Program:
    return _without(p, instances=_put(p.instances, i, inst))


def shrink(
    verdict: Verdict, stock: StockWorker | None, *, budget_s: float = 60.0
) -> tuple[Program, Event, bool]:
    """A smaller program with the same kind of dynscalar-caused difference.

    Returns (program, its failure event, whether shrinking finished within the budget).
    """
    event = verdict.failure
    assert event is not None
    key = event.mismatch.key
    best = verdict.program.truncated(event.mismatch.call + 1)
    deadline = time.perf_counter() + budget_s
    improved = True
    while improved:
        improved = False
        for candidate in _candidates(best):
            if time.perf_counter() > deadline:
                return best, event, False
            try:
                v = check_program(candidate, verdict.backend, stock)
            except Exception:  # noqa: BLE001 - a candidate may be ill-formed; skip it
                continue
            found = v.failure
            if found is not None and found.mismatch.key == key:
                best, event = candidate.truncated(found.mismatch.call + 1), found
                improved = True
                break
    return best, event, True


# ----------------------------------------------------------------------------- json
def to_json(program: Program) -> dict[str, Any]:
    """A JSON form of a program (the stock worker rebuilds it with :func:`from_json`)."""
    from dataclasses import asdict

    data = asdict(program)
    data["steps"] = [{"type": type(s).__name__, **asdict(s)} for s in program.steps]
    return data


def _value(d: dict[str, Any] | None) -> Value | None:
    if d is None:
        return None
    return Value(d["kind"], d["payload"], Spec(**d["spec"]))


def _init(d: dict[str, Any]) -> Value:
    return Value(d["kind"], d["payload"], Spec(**d["spec"]))


def _spec_pair(d: Any) -> tuple[tuple[str, ...], Spec] | None:
    return None if d is None else (tuple(d[0]), Spec(**d[1]))


def from_json(d: dict[str, Any]) -> Program:
    from .generator import Stmt

    steps: list[Any] = []
    for s in d["steps"]:
        kind = s.pop("type")
        if kind == "Call":
            steps.append(Call(s["target"], _value(s["arg"])))
        elif kind == "Assign":
            steps.append(Assign(s["target"], s["attr"], _value(s["value"])))  # type: ignore[arg-type]
        elif kind == "Mark":
            steps.append(Mark(s["target"], tuple(s["names"]), Spec(**s["spec"])))
        elif kind == "Unmark":
            steps.append(Unmark(s["target"], tuple(s["names"])))
        elif kind == "Reset":
            steps.append(Reset())
        else:
            steps.append(Redefine())
    return Program(
        seed=d["seed"],
        index=d["index"],
        kind=d["kind"],
        attrs=tuple(d["attrs"]),
        body=tuple(Stmt(**s) for s in d["body"]),
        x=tuple(d["x"]),
        class_mark=_spec_pair(d["class_mark"]),
        instances=tuple(
            Instance(i["name"], i["cls"], tuple(map(_init, i["init"])), _spec_pair(i["mark"]))
            for i in d["instances"]
        ),
        steps=tuple(steps),
        arg_mark=Spec(**d["arg_mark"]) if d.get("arg_mark") else None,
        tags=tuple(d.get("tags", ())),
        prop_marks=tuple(d.get("prop_marks", ())),
    )


__all__ = [
    "CountingBackend",
    "Event",
    "Harness",
    "Mismatch",
    "StockWorker",
    "Verdict",
    "check_program",
    "diff_call",
    "execute",
    "diff_runs",
    "explain_by_stock",
    "from_json",
    "run_stock",
    "shrink",
    "to_json",
]
