"""Workloads for ``benchmarks.strategies``: each model with its Python scalars, and its oracle
(the same math with the scalars in 0-d tensor buffers); described in ``benchmarks/README.md``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

import dynscalar
from benchmarks.harness import words

# The seed and train models are also the demo's (python -m dynscalar demo --workload train).
from dynscalar.tools.demo_models import SeedModel, TrainBlock


class StepBuffer(torch.nn.Module):
    """An oracle's base before its model's class: the model's ``step`` in a 0-d int64 buffer."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        del self.step
        self.register_buffer("step", torch.zeros((), dtype=torch.int64))


class SeedOracle(StepBuffer, SeedModel):
    """The seed model with its counter in a 0-d int64 buffer."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + 1
        self.step.add_(1)
        return self.layer(x)


class PointwiseBlock(torch.nn.Module):
    """A chain of sin/cos/mul/add on a 64x1024 tensor with a phase that follows the step
    (one fused kernel under inductor)."""

    def __init__(self, period: int = 100, rounds: int = 6) -> None:
        super().__init__()
        self.step = 0
        self.period = period
        self.rounds = rounds

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.step += 1
        return self._chain(x, self.step / self.period)

    def _chain(self, x: torch.Tensor, phase: float | torch.Tensor) -> torch.Tensor:
        y = x
        for _ in range(self.rounds):
            y = torch.sin(y + phase) * torch.cos(y * 0.5) + 0.25 * y
        return y


class PointwiseOracle(StepBuffer, PointwiseBlock):
    """``phase`` is ``step_buffer / period``: a float32 0-d tensor, the same value as the
    plain model's Python float rounded to float32 (so eager results are identical)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.step.add_(1)
        return self._chain(x, self.step / self.period)


class TrainBlockOracle(StepBuffer, TrainBlock):
    """The counter in a buffer, reassigned (the in-place form gets wrong gradients on torch
    2.13, pytorch/pytorch#197039); the ``step % accum`` branch as a 0/1 mask with the plain
    model's numerics (benchmarks/README.md)."""

    def tick(self) -> torch.Tensor:
        """Advance the counter; return its new value."""
        self.step = self.step + 1
        return self.step

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        step = self.tick()
        warm = torch.clamp(step / self.warmup, max=1.0)
        loss = F.mse_loss(self.block(x), y) * warm / self.accum
        boundary = (step % self.accum == 0).to(loss.dtype)
        return loss + boundary * (self.l2 * self.penalty())


class TrainBlockOracleInPlace(TrainBlockOracle):
    """The upstream advice to the letter (``self.step.add_(1)``): wrong gradients on 2.13."""

    def tick(self) -> torch.Tensor:
        return self.step.add_(1)


# ----------------------------------------------------------------------------- schedule
# The loop sets two float hyperparameters of torch.nn modules every step: the dropout
# probability of every nn.Dropout (annealed P_START -> P_END over the run) and the label
# smoothing of an nn.CrossEntropyLoss (warmed up linearly to SMOOTHING over the first half of
# the run, then held). No counter in the model: the values come from the loop.
P_START, P_END, SMOOTHING, CLASSES = 0.3, 0.05, 0.1, 10
WORDS = words("strategies")  # descriptions: templates/strategies.json


class ScheduledClassifier(torch.nn.Module):
    """The train workload's transformer block as a 10-class classifier with two
    ``nn.Dropout`` (``drop1``, ``drop2``) and an ``nn.CrossEntropyLoss`` (``criterion``)."""

    dropout_cls: type[torch.nn.Module] = torch.nn.Dropout
    criterion_cls: type[torch.nn.Module] = torch.nn.CrossEntropyLoss

    def __init__(self, dim: int = 64, heads: int = 4, hidden: int = 256) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)
        self.drop1 = self.dropout_cls(P_START)
        self.norm2 = torch.nn.LayerNorm(dim)
        self.mlp = torch.nn.Sequential(
            torch.nn.Linear(dim, hidden), torch.nn.GELU(), torch.nn.Linear(hidden, dim)
        )
        self.drop2 = self.dropout_cls(P_START)
        self.norm3 = torch.nn.LayerNorm(dim)
        self.head = torch.nn.Linear(dim, CLASSES)
        self.criterion = self.criterion_cls(label_smoothing=0.0)

    def set_schedule(self, p: float, smoothing: float) -> None:
        """What the training loop does every step: set ``p`` and ``label_smoothing``."""
        for module in self.modules():
            if isinstance(module, torch.nn.Dropout):
                module.p = p
        self.criterion.label_smoothing = smoothing

    def dropout(self, module: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
        return module(x)  # type: ignore[no-any-return]

    def loss(self, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.criterion(logits, y)  # type: ignore[no-any-return]

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.dropout(self.drop1, self.proj(attn.transpose(1, 2).reshape(b, t, d)))
        x = x + self.mlp(self.norm2(x))
        logits = self.head(self.dropout(self.drop2, self.norm3(x).mean(dim=1)))
        return self.loss(logits, y)


class ScheduledClassifierOracle(ScheduledClassifier):
    """Both hyperparameters in 0-d float64 buffers: dropout written as ATen's algorithm with
    a uniform draw, the label-smoothed loss as ATen's formula, one graph for every value."""

    def __init__(self, dim: int = 64, heads: int = 4, hidden: int = 256) -> None:
        super().__init__(dim, heads, hidden)
        self.register_buffer("drop_p", torch.tensor(P_START, dtype=torch.float64))
        self.register_buffer("smoothing", torch.tensor(0.0, dtype=torch.float64))

    def set_schedule(self, p: float, smoothing: float) -> None:
        with torch.no_grad():
            self.drop_p.fill_(p)
            self.smoothing.fill_(smoothing)

    def dropout(self, module: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
        if not module.training:
            return x
        keep = 1 - self.drop_p
        return x * ((torch.rand_like(x) < keep).to(x.dtype) / keep.to(x.dtype))

    def loss(self, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        logp = torch.log_softmax(logits, 1)
        nll = F.nll_loss(logp, y)
        smooth = -logp.sum(1).sum() / (y != -100).sum()
        s = self.smoothing
        return nll * (1 - s).to(nll.dtype) + smooth * (s / logits.shape[1]).to(nll.dtype)


def decorated_classifier() -> torch.nn.Module:
    """The ``@dynamic_attrs`` form: the model built from decorated Dropout/CrossEntropyLoss
    subclasses (the decorator goes on a class; ``p`` and ``label_smoothing`` live on
    torch.nn's own classes, so a user decorates a subclass of each)."""
    dropout = dynscalar.dynamic_attrs("p")(type("ScheduledDropout", (torch.nn.Dropout,), {}))
    criterion = dynscalar.dynamic_attrs("label_smoothing")(
        type("ScheduledCrossEntropyLoss", (torch.nn.CrossEntropyLoss,), {})
    )
    cls = type(
        "DecoratedScheduledClassifier",
        (ScheduledClassifier,),
        {"dropout_cls": dropout, "criterion_cls": criterion},
    )
    return cls()


def set_schedule(
    model: torch.nn.Module, step: int, steps: int, wrap: Callable[[float], Any] = float
) -> None:
    """The training loop's schedule at step ``step`` (1-based) of ``steps`` (``wrap``: how each
    value is made); the smoothing warms up from above 0.0, so ``cross_entropy`` takes one path
    throughout."""
    p = P_START + (P_END - P_START) * (step - 1) / max(steps - 1, 1)
    smoothing = SMOOTHING * min(1.0, step / max(steps // 2, 1))
    model.set_schedule(wrap(p), wrap(smoothing))  # type: ignore[operator]


def eval_dropout(model: torch.nn.Module) -> None:
    """Put every ``nn.Dropout`` in eval mode (the rest of the model stays in training)."""
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.eval()


CENTRES = torch.randn(CLASSES, 64, generator=torch.Generator().manual_seed(99))


def labelled_batch(gen: torch.Generator) -> tuple[torch.Tensor, ...]:
    """8 sequences (32 x 64) with a class label each: Gaussian noise plus a small
    class-dependent offset (``0.1 * centre[label]`` on every token) that the model can learn
    within a few hundred steps."""
    y = torch.randint(0, CLASSES, (8,), generator=gen)
    return torch.randn(8, 32, 64, generator=gen) + 0.1 * CENTRES[y][:, None, :], y


@dataclass(frozen=True)
class Workload:
    """One benchmark workload: its models, inputs, control paths and the scalars a strategy
    keeps dynamic (``dynamic``: submodule path -> attributes)."""

    name: str
    plain: Callable[[], torch.nn.Module]
    oracle: Callable[[], torch.nn.Module]
    make_inputs: Callable[[int], list[tuple[torch.Tensor, ...]]]
    control_paths: int
    train: bool = False
    accum: int = 1
    dynamic: dict[str, tuple[str, ...]] = field(default_factory=lambda: {"": ("step",)})
    decorated: Callable[[], torch.nn.Module] | None = None
    oracle_inplace: Callable[[], torch.nn.Module] | None = None  # default: the oracle
    schedule: Callable[[torch.nn.Module, int, int, Callable[[float], Any]], None] | None = None
    stochastic: bool = False
    derandomize: Callable[[torch.nn.Module], None] | None = None
    not_applicable: dict[str, str] = field(default_factory=dict)
    has_step: bool = True

    @property
    def description(self) -> str:
        text = WORDS["workload_descriptions"][self.name]
        return str(text).format(P_START=P_START, P_END=P_END, SMOOTHING=SMOOTHING)


def _seeded(make: Callable[[torch.Generator], list[tuple[torch.Tensor, ...]]]) -> Callable:
    def inputs(steps: int) -> list[tuple[torch.Tensor, ...]]:
        gen = torch.Generator().manual_seed(1234)
        return [make(gen) for _ in range(steps)]

    return inputs


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload(
            name="seed",
            plain=SeedModel,
            oracle=SeedOracle,
            make_inputs=_seeded(lambda g: (torch.randn(8, 64, generator=g),)),
            control_paths=1,
        ),
        Workload(
            name="pointwise",
            plain=PointwiseBlock,
            oracle=PointwiseOracle,
            make_inputs=_seeded(lambda g: (torch.randn(64, 1024, generator=g),)),
            control_paths=1,
        ),
        Workload(
            name="train",
            plain=TrainBlock,
            oracle=TrainBlockOracle,
            oracle_inplace=TrainBlockOracleInPlace,
            make_inputs=_seeded(
                lambda g: (torch.randn(8, 32, 64, generator=g), torch.randn(8, 32, 64, generator=g))
            ),
            control_paths=2,
            train=True,
            accum=4,
        ),
        Workload(
            name="schedule",
            plain=ScheduledClassifier,
            oracle=ScheduledClassifierOracle,
            make_inputs=_seeded(labelled_batch),
            control_paths=1,
            train=True,
            dynamic={"drop1": ("p",), "drop2": ("p",), "criterion": ("label_smoothing",)},
            decorated=decorated_classifier,
            schedule=set_schedule,
            stochastic=True,
            derandomize=eval_dropout,
            not_applicable=WORDS["not_applicable"]["schedule"],
            has_step=False,
        ),
    )
}
