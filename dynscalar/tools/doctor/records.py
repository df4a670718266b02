"""The doctor's records: what it found in one run of a script, and the code that fixes it."""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ArgumentSite", "CallSite", "Culprit", "DoctorReport", "FixBlock", "PathTaken"]


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


@dataclass
class Culprit:
    """One Python scalar whose new values made torch.compile recompile."""

    scalar: str  # "Net.step", "train_step(n)", "SGD.param_groups[0]['lr']", "cfg.SCALE"
    #: "attribute" (of a module), "argument", "param_group" (an optimizer's hyperparameter),
    #: "value" (anything else reachable), "specialized" (marked, yet compiled for one
    #: value: ``note`` says what forced it and what to do; no marking code)
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
    owner_class: builtins.type | None = None  # attributes: the class of the module holding it
    #: attributes of several instances of one class (a Dropout in each of 24 blocks) that
    #: one compiled function reads: (path, owner) of each instance, this one's first
    instances: list[tuple[str, str]] = field(default_factory=list)


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
    owner_class: builtins.type | None = None  # attributes: the class of the module holding it
    #: the paths of several instances of one class whose attribute took the same path in
    #: one recompile (a Dropout in each of 24 blocks), this one's first
    instances: list[str] = field(default_factory=list)


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
    recompiles: int = 0  # recompiles Dynamo made (what TORCH_LOGS=recompiles lists)
    other_recompiles: int = 0  # those no scalar alone caused (tensor shapes and the rest)
    culprit_recompiles: int = 0  # those a culprit caused (not only a path taken)
    path_recompiles: int = 0  # those where a dynamic scalar took another path
    eager_calls: int = 0  # calls past a recompile limit that no cached version served
    other_eager_calls: int = 0  # those no scalar alone caused
    culprit_eager_calls: int = 0  # those a culprit kept from a cached version
    path_eager_calls: int = 0  # those where a dynamic scalar took another path
    limits: dict[str, tuple[str, int | None]] = field(default_factory=dict)  # function -> limit
    #: functions at a limit whose later calls the doctor could not read
    unread: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the doctor could not read
    rerun: str = ""
