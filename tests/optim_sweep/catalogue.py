"""The sweep's rows: every torch.optim optimizer, each implementation, each scheduler.

An optimizer configuration (:data:`OPTIMIZERS`) is an optimizer class with the
hyperparameters that reach its momentum paths (SGD with momentum and Nesterov, RMSprop
centered with momentum), run with each implementation it has on CPU (``foreach``, the
single-tensor loop, ``fused``).  A scheduler (:data:`SCHEDULERS`) changes some float
hyperparameters of the param groups: the keys it changes are the keys marked
(``mark_dynamic_param_groups``), as a user following the recipe would mark them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.optim import lr_scheduler

__all__ = ["OPTIMIZERS", "SCHEDULERS", "Optim", "Row", "Sched", "rows"]


@dataclass(frozen=True)
class Optim:
    """An optimizer configuration."""

    name: str
    cls: type[torch.optim.Optimizer]
    kwargs: dict[str, Any] = field(default_factory=dict)
    #: the param-group key that holds its momentum (cycled by OneCycleLR/CyclicLR), if any
    momentum: str | None = None
    #: the implementations it has on CPU
    impls: tuple[str, ...] = ("foreach", "single")
    #: parameters must be 2-d matrices (Muon)
    matrices_only: bool = False


OPTIMIZERS: tuple[Optim, ...] = (
    Optim("SGD", torch.optim.SGD, {"lr": 0.05}, impls=("foreach", "single", "fused")),
    Optim(
        "SGD(momentum)",
        torch.optim.SGD,
        {"lr": 0.05, "momentum": 0.9},
        "momentum",
        ("foreach", "single", "fused"),
    ),
    Optim(
        "SGD(nesterov)",
        torch.optim.SGD,
        {"lr": 0.05, "momentum": 0.9, "nesterov": True},
        "momentum",
    ),
    Optim("Adam", torch.optim.Adam, {"lr": 0.01}, "betas", ("foreach", "single", "fused")),
    Optim("AdamW", torch.optim.AdamW, {"lr": 0.01}, "betas", ("foreach", "single", "fused")),
    Optim("Adamax", torch.optim.Adamax, {"lr": 0.01}, "betas"),
    Optim("NAdam", torch.optim.NAdam, {"lr": 0.01}, "betas"),
    Optim("RAdam", torch.optim.RAdam, {"lr": 0.01}, "betas"),
    Optim("Adagrad", torch.optim.Adagrad, {"lr": 0.05}, impls=("foreach", "single", "fused")),
    Optim("Adadelta", torch.optim.Adadelta, {"lr": 1.0}),
    Optim("RMSprop", torch.optim.RMSprop, {"lr": 0.01}),
    Optim(
        "RMSprop(momentum)",
        torch.optim.RMSprop,
        {"lr": 0.01, "momentum": 0.9, "centered": True},
        "momentum",
    ),
    Optim("Rprop", torch.optim.Rprop, {"lr": 0.01}),
    Optim("ASGD", torch.optim.ASGD, {"lr": 0.01}),
    Optim("Adafactor", torch.optim.Adafactor, {"lr": 0.01}),
    Optim("Muon", torch.optim.Muon, {"lr": 0.02}, "momentum", ("default",), matrices_only=True),
)


@dataclass(frozen=True)
class Sched:
    """A scheduler: ``make(optimizer, optim)`` and the keys it changes."""

    name: str
    make: Callable[[torch.optim.Optimizer, Optim], Any]
    #: it cycles the momentum key too (OneCycleLR, CyclicLR)
    cycles_momentum: bool = False
    #: its step() takes the metric (ReduceLROnPlateau)
    takes_metric: bool = False

    def keys(self, optim: Optim) -> tuple[str, ...]:
        """The param-group keys this scheduler changes for ``optim``: the keys to mark."""
        if self.cycles_momentum and optim.momentum:
            return ("lr", optim.momentum)
        return ("lr",)


def _lr(opt: torch.optim.Optimizer) -> float:
    return float(opt.param_groups[0]["lr"])


def _cyclic(opt: torch.optim.Optimizer, optim: Optim) -> Any:
    cycle = optim.momentum is not None
    extra: dict[str, Any] = {}
    if cycle and optim.momentum == "betas":
        extra = {"base_momentum": 0.85, "max_momentum": 0.95}
    return lr_scheduler.CyclicLR(
        opt,
        base_lr=_lr(opt) / 4,
        max_lr=_lr(opt),
        step_size_up=2,
        cycle_momentum=cycle,
        **extra,
    )


def _one_cycle(opt: torch.optim.Optimizer, optim: Optim) -> Any:
    return lr_scheduler.OneCycleLR(
        opt, max_lr=_lr(opt), total_steps=12, cycle_momentum=optim.momentum is not None
    )


SCHEDULERS: tuple[Sched, ...] = (
    Sched("LambdaLR", lambda o, _: lr_scheduler.LambdaLR(o, lambda e: 0.9**e)),
    Sched("MultiplicativeLR", lambda o, _: lr_scheduler.MultiplicativeLR(o, lambda e: 0.95)),
    Sched("StepLR", lambda o, _: lr_scheduler.StepLR(o, step_size=1, gamma=0.8)),
    Sched("MultiStepLR", lambda o, _: lr_scheduler.MultiStepLR(o, [1, 2, 3, 4, 5], gamma=0.8)),
    Sched("ConstantLR", lambda o, _: lr_scheduler.ConstantLR(o, factor=0.5, total_iters=3)),
    Sched("LinearLR", lambda o, _: lr_scheduler.LinearLR(o, start_factor=0.2, total_iters=4)),
    Sched("ExponentialLR", lambda o, _: lr_scheduler.ExponentialLR(o, gamma=0.9)),
    Sched("PolynomialLR", lambda o, _: lr_scheduler.PolynomialLR(o, total_iters=4, power=2.0)),
    Sched("CosineAnnealingLR", lambda o, _: lr_scheduler.CosineAnnealingLR(o, T_max=10)),
    Sched(
        "CosineAnnealingWarmRestarts",
        lambda o, _: lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=3),
    ),
    Sched("CyclicLR", _cyclic, cycles_momentum=True),
    Sched("OneCycleLR", _one_cycle, cycles_momentum=True),
    Sched(
        "SequentialLR",
        lambda o, _: lr_scheduler.SequentialLR(
            o,
            [
                lr_scheduler.LinearLR(o, start_factor=0.25, total_iters=2),
                lr_scheduler.ExponentialLR(o, gamma=0.9),
            ],
            milestones=[2],
        ),
    ),
    Sched(
        "ChainedScheduler",
        lambda o, _: lr_scheduler.ChainedScheduler(
            [
                lr_scheduler.ConstantLR(o, factor=0.5, total_iters=2),
                lr_scheduler.ExponentialLR(o, gamma=0.9),
            ]
        ),
    ),
    Sched(
        "ReduceLROnPlateau",
        lambda o, _: lr_scheduler.ReduceLROnPlateau(o, factor=0.5, patience=0),
        takes_metric=True,
    ),
)

#: the schedulers every configuration runs with on inductor (the full list on aot_eager):
#: one that changes the learning rate only, and the two that cycle momentum too
INDUCTOR_SCHEDULERS = ("CosineAnnealingLR", "OneCycleLR", "CyclicLR")
#: the configurations every scheduler runs with on inductor
INDUCTOR_OPTIMIZERS = ("SGD(momentum)", "AdamW")


@dataclass(frozen=True)
class Row:
    """One run: an optimizer configuration, an implementation, a scheduler, a backend."""

    optim: Optim
    impl: str
    sched: Sched
    backend: str

    @property
    def key(self) -> str:
        return f"{self.optim.name} {self.impl} {self.sched.name} {self.backend}"


def rows(backends: tuple[str, ...] = ("aot_eager", "inductor")) -> list[Row]:
    """The whole sweep, in a stable order."""
    found = []
    for backend in backends:
        for optim in OPTIMIZERS:
            for impl in optim.impls:
                for sched in SCHEDULERS:
                    if backend == "inductor" and not (
                        sched.name in INDUCTOR_SCHEDULERS or optim.name in INDUCTOR_OPTIMIZERS
                    ):
                        continue
                    found.append(Row(optim, impl, sched, backend))
    return found


def find(key: str) -> Row:
    """The row whose :attr:`Row.key` is ``key``."""
    for row in rows():
        if row.key == key:
            return row
    raise KeyError(key)
