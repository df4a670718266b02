"""Workloads for ``bench_strategies.py``: each model with a Python step counter, and its oracle.

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
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

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


@dataclass(frozen=True)
class Workload:
    """One benchmark workload.

    ``make_inputs(steps)`` returns one argument tuple per step (deterministic, seeded);
    ``train`` workloads return a loss that the loop backpropagates, with an optimizer step
    every ``accum`` steps.
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
    )
}
