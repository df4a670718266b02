"""Workloads for ``benchmarks.strategies``: each model with a Python step counter, and its oracle.

Every workload has two model classes with identical parameters (both are built after
``torch.manual_seed(0)`` and create their parameters in the same order):

* the *plain* model keeps ``self.step`` as a Python ``int`` incremented in ``forward`` (what
  users write; every strategy except the oracle starts from it);
* the *oracle* keeps the counter in a registered 0-d ``int64`` buffer, the upstream advice
  for "a counter that must not recompile": updated in place (``self.step.add_(1)``) for
  inference, reassigned for training (the in-place form gets wrong gradients on torch 2.13,
  see :class:`TrainBlockOracle`). Same math, expressed on tensors; where the plain model
  branches on the counter, the oracle multiplies by a 0/1 mask instead.

Control paths (distinct graphs a perfectly dynamic counter needs): ``seed`` and ``pointwise``
have one, ``train`` has two (accumulation boundary or not).

The ``schedule`` workload has no counter: its training loop sets two float hyperparameters of
torch.nn modules every step (``nn.Dropout.p`` and ``nn.CrossEntropyLoss.label_smoothing``);
its oracle keeps both in 0-d tensor buffers (:class:`ScheduledClassifierOracle`). One
control path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

import dynscalar

# The seed and train models are also the demo's (python -m dynscalar demo --workload train).
from dynscalar._demo import SeedModel, TrainBlock


class SeedOracle(SeedModel):
    """The seed model with its counter in a 0-d int64 buffer."""

    def __init__(self, width: int = 64) -> None:
        super().__init__(width)
        del self.step
        self.register_buffer("step", torch.zeros((), dtype=torch.int64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + 1
        self.step.add_(1)
        return self.layer(x)


class PointwiseBlock(torch.nn.Module):
    """A chain of sin/cos/mul/add on a 64x1024 tensor with a phase that follows the step.

    Pure pointwise work: inductor fuses the whole chain into one kernel and beats eager
    (one kernel per op) by about 2x on a small CPU.
    """

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


class PointwiseOracle(PointwiseBlock):
    """``phase`` is ``step_buffer / period``: a float32 0-d tensor, the same value as the
    plain model's Python float rounded to float32 (so eager results are identical)."""

    def __init__(self, period: int = 100, rounds: int = 6) -> None:
        super().__init__(period, rounds)
        del self.step
        self.register_buffer("step", torch.zeros((), dtype=torch.int64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.step.add_(1)
        return self._chain(x, self.step / self.period)


class TrainBlockOracle(TrainBlock):
    """The counter in a buffer; the ``step % accum`` branch becomes a 0/1 mask.

    ``loss + mask * (l2 * penalty)`` has exactly the plain model's numerics: with mask 1,
    ``1.0 * t == t``; with mask 0, ``loss + 0.0 == loss`` and the penalty's gradient is
    multiplied by 0 before it is added to the parameter gradients. The price is computing
    the penalty (and its backward) on every step instead of one step in ``accum``. The
    alternatives change more: ``.item()`` graph-breaks and syncs, ``torch.cond`` needs both
    branches to return the same structure and is not what users write.

    The buffer is *reassigned* (``self.step = self.step + 1``), not updated in place: on
    torch 2.13, AOTAutograd's partitioner recomputes ``warm`` in the backward from the
    buffer after the in-place update was written back, so the gradients use step + 1
    (silently wrong; pytorch/pytorch#197039, "Don't recompute reads of mutated inputs or
    mutable buffers"). :class:`TrainBlockOracleInPlace` keeps the in-place form to show it.
    """

    def __init__(self, **kwargs: float) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        del self.step
        self.register_buffer("step", torch.zeros((), dtype=torch.int64))

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


def schedule(step: int, steps: int) -> tuple[float, float]:
    """``(dropout p, label smoothing)`` for step ``step`` (1-based) of ``steps``.

    ``p`` is new on every step; the smoothing warms up like the train workload's factor,
    ``SMOOTHING * min(1, step / warm)`` with ``warm = steps // 2``, so it is never 0.0 and
    ``cross_entropy``'s ``if label_smoothing > 0`` takes one path throughout (one control
    path). A warm-up that starts at exactly 0.0 is a second path.
    """
    p = P_START + (P_END - P_START) * (step - 1) / max(steps - 1, 1)
    return p, SMOOTHING * min(1.0, step / max(steps // 2, 1))


class ScheduledClassifier(torch.nn.Module):
    """The train workload's transformer block (dim 64, 4 heads, MLP 256) as a classifier.

    Pre-norm attention (its output through an ``nn.Dropout``, ``drop1``) and MLP, then
    mean-pooled over the sequence, through a second ``nn.Dropout`` (``drop2``, classifier
    dropout) into a ``Linear(64, 10)`` head; ``forward(x, y)`` returns the
    ``nn.CrossEntropyLoss`` (``criterion``) of the logits. :meth:`set_schedule` is what the
    training loop calls before every step. ``dropout_cls``/``criterion_cls`` let a subclass
    build the modules from decorated classes (the ``@dynamic_attrs`` strategy).
    """

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
    """Both hyperparameters in 0-d float64 buffers, used as tensors.

    Dropout: ``x * (rand_like(x) < 1 - p) / (1 - p)`` while the module is in training mode,
    the identity otherwise: ATen's algorithm (keep with probability ``1 - p``, scale by
    ``1 / (1 - p)``) with a uniform draw instead of ``bernoulli_`` -- the same distribution,
    another random stream (as any compiled dropout). Not kept: ATen's check that
    ``0 <= p <= 1`` (a tensor has no Python value to check without a sync).

    Loss: ATen's label-smoothed cross-entropy for class indices (LossNLL.cpp) written with
    the tensor: ``nll * (1 - s) + smooth * (s / classes)``, the scalars rounded to float32
    as ATen rounds a ``double`` Scalar. ATen skips the smoothing term when ``s == 0``; here
    it is multiplied by 0.0 (``nll * 1.0 + x * 0.0 == nll`` for a finite ``x``), so one graph
    covers both cases -- the same trick as the train workload's 0/1 mask.
    """

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
        smooth = -logp.sum(1)
        smooth = smooth.sum() / (y != -100).sum()
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
    """The training loop's per-step schedule (``wrap``: how each value is made)."""
    p, smoothing = schedule(step, steps)
    model.set_schedule(wrap(p), wrap(smoothing))  # type: ignore[operator]


def eval_dropout(model: torch.nn.Module) -> None:
    """Put every ``nn.Dropout`` in eval mode (the rest of the model stays in training)."""
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.eval()


def classification_inputs(steps: int) -> list[tuple[torch.Tensor, ...]]:
    """Batches of 8 sequences (32 x 64) with a class label each: Gaussian noise plus a small
    class-dependent offset (``0.1 * centre[label]`` on every token) that the model can learn
    within a few hundred steps; deterministic (fixed seeds)."""
    centres = torch.randn(CLASSES, 64, generator=torch.Generator().manual_seed(99))
    gen = torch.Generator().manual_seed(1234)
    out = []
    for _ in range(steps):
        y = torch.randint(0, CLASSES, (8,), generator=gen)
        x = torch.randn(8, 32, 64, generator=gen) + 0.1 * centres[y][:, None, :]
        out.append((x, y))
    return out


@dataclass(frozen=True)
class Workload:
    """One benchmark workload.

    ``make_inputs(steps)`` returns one argument tuple per step (deterministic, seeded);
    ``train`` workloads return a loss that the loop backpropagates, with an optimizer step
    every ``accum`` steps. ``dynamic`` names the scalars a strategy keeps dynamic: submodule
    path (``""``: the model) -> attribute names; ``sources`` are the same attributes as
    Dynamo names them under ``torch.compile(model)`` (for ``dynamic_sources``).

    ``schedule(model, step, steps, wrap)``, when set, is what the training loop does before
    every step (set hyperparameters; ``wrap`` makes each value, e.g. ``DynamicFloat``).
    ``stochastic`` workloads use random ops in training mode (dropout), so their outputs
    cannot be compared element-wise with eager: ``benchmarks.strategies`` checks them in two
    passes instead; ``derandomize(model)`` turns the random ops off for the exact pass.
    ``not_applicable``: strategy -> why it does not apply to this workload.
    """

    name: str
    description: str
    plain: Callable[[], torch.nn.Module]
    oracle: Callable[[], torch.nn.Module]
    oracle_inplace: Callable[[], torch.nn.Module]
    make_inputs: Callable[[int], list[tuple[torch.Tensor, ...]]]
    control_paths: int
    train: bool = False
    accum: int = 1
    dynamic: dict[str, tuple[str, ...]] = field(default_factory=lambda: {"": ("step",)})
    sources: tuple[str, ...] = ("L['self'].step",)
    decorated: Callable[[], torch.nn.Module] | None = None
    schedule: Callable[[torch.nn.Module, int, int, Callable[[float], Any]], None] | None = None
    stochastic: bool = False
    derandomize: Callable[[torch.nn.Module], None] | None = None
    not_applicable: dict[str, str] = field(default_factory=dict)
    has_step: bool = True


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
            description="seed model: Linear(64, 64), self.step += 1 in forward (inference)",
            plain=SeedModel,
            oracle=SeedOracle,
            oracle_inplace=SeedOracle,
            make_inputs=_seeded(lambda g: (torch.randn(8, 64, generator=g),)),
            control_paths=1,
        ),
        Workload(
            name="pointwise",
            description="pointwise-heavy: 6 rounds of sin/cos/mul/add on 64x1024, "
            "phase = step / 100 (inference)",
            plain=PointwiseBlock,
            oracle=PointwiseOracle,
            oracle_inplace=PointwiseOracle,
            make_inputs=_seeded(lambda g: (torch.randn(64, 1024, generator=g),)),
            control_paths=1,
        ),
        Workload(
            name="train",
            description="transformer block (dim 64, 4 heads, seq 32, batch 8) trained with "
            "SGD: warm-up from step, `if step % 4 == 0` L2 penalty, optimizer step every 4",
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
            description="the transformer block as a 10-class classifier trained with SGD; every "
            f"step the loop sets both nn.Dropout modules' p ({P_START} -> {P_END}, annealed "
            f"over the run) and nn.CrossEntropyLoss's label_smoothing (warm-up "
            f"{SMOOTHING} * min(1, step / (steps // 2)))",
            plain=ScheduledClassifier,
            oracle=ScheduledClassifierOracle,
            oracle_inplace=ScheduledClassifierOracle,
            make_inputs=classification_inputs,
            control_paths=1,
            train=True,
            dynamic={"drop1": ("p",), "drop2": ("p",), "criterion": ("label_smoothing",)},
            sources=(
                "L['self']._modules['drop1'].p",
                "L['self']._modules['drop2'].p",
                "L['self']._modules['criterion'].label_smoothing",
            ),
            decorated=decorated_classifier,
            schedule=set_schedule,
            stochastic=True,
            derandomize=eval_dropout,
            not_applicable={
                "unspec_int": "ints only: the flag changes how int attributes of nn modules "
                "are wrapped; p and label_smoothing are floats",
                "torch_dynamicint": "ints only: DynamicInt is an int subclass (DynamicInt(0.3) "
                "is refused) and torch 2.13 has no float counterpart",
                "oracle_inplace": "the oracle's buffers are set outside forward; nothing to "
                "update in place inside it",
            },
            has_step=False,
        ),
    )
}
