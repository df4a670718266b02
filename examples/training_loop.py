"""A training loop with a warm-up counter, a temperature schedule and gradient accumulation.

The model counts micro-batches in ``self.step`` (incremented in forward) and scales its loss
by a warm-up factor computed from it; the loop anneals ``model.temperature`` (a float) on
every micro-batch and steps the optimizer every ``accum`` micro-batches, adding weight decay
on the last micro-batch of each group. One ``mark_dynamic_attr`` line keeps the whole run at
one compile per code path, with losses identical to eager; the same loop under stock
``torch.compile`` is run next to it for comparison.

    python examples/training_loop.py                      # aot_eager: quick, a few seconds
    python examples/training_loop.py --backend inductor   # same compile counts

docs/tutorial.md shows this code block by block (written there for the plain ``python``
prompt, without the blank lines inside class and function bodies); its output is
examples/output/training_loop.txt (regenerate: ``python examples/training_loop.py >
examples/output/training_loop.txt``; tests/test_examples.py checks that the file is what the
script prints).
"""

from __future__ import annotations

import argparse
import copy
import math
from typing import Any

import torch
import torch.nn.functional as F
from torch._dynamo.testing import CompileCounterWithBackend  # counts the graphs compiled

import dynscalar


# --8<-- [start:model]
class Classifier(torch.nn.Module):
    def __init__(self, warmup: int = 16, accum: int = 4) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 10)
        )
        self.step = 0  # micro-batches seen so far; forward increments it
        self.warmup = warmup  # micro-batches of linear loss warm-up
        self.accum = accum  # micro-batches per optimizer step
        self.temperature = 2.0  # softmax temperature, annealed by the loop

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        self.step += 1
        warm = min(1.0, self.step / self.warmup)  # linear warm-up, then 1.0
        logits = self.net(x) / self.temperature
        loss = F.cross_entropy(logits, y) * warm / self.accum
        if self.step % self.accum == 0:  # last micro-batch of a group
            decay = sum(p.pow(2).sum() for p in self.parameters())
            loss = loss + 1e-4 * decay
        return loss


# --8<-- [end:model]


# --8<-- [start:loop]
def temperature_at(i: int, total: int) -> float:
    """Cosine schedule from 2.0 down to 1.0."""
    return 1.0 + 0.5 * (1.0 + math.cos(math.pi * i / total))


def train(model: Classifier, step_fn: Any, batches: list[Any]) -> list[float]:
    """One micro-batch per call, an optimizer step every ``accum`` calls."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for i, (x, y) in enumerate(batches, start=1):
        # a new float on every call:
        model.temperature = temperature_at(i, len(batches))
        loss = step_fn(x, y)
        loss.backward()
        if i % model.accum == 0:  # gradient accumulation
            opt.step()
            opt.zero_grad()
        losses.append(loss.item())
    return losses


# --8<-- [end:loop]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="aot_eager")
    parser.add_argument("--micro-batches", type=int, default=48)
    args = parser.parse_args()

    gen = torch.Generator().manual_seed(0)
    teacher = torch.randn(32, 10, generator=gen)  # labels a linear model can learn
    inputs = [torch.randn(16, 32, generator=gen) for _ in range(args.micro_batches)]
    batches = [(x, (x @ teacher).argmax(dim=1)) for x in inputs]
    torch.manual_seed(0)
    template = Classifier()

    # --8<-- [start:mark]
    model = copy.deepcopy(template)
    model = dynscalar.mark_dynamic_attr(model, "step", "temperature")
    counter = CompileCounterWithBackend(args.backend)
    losses = train(model, torch.compile(model, backend=counter), batches)
    # --8<-- [end:mark]

    eager = copy.deepcopy(template)
    eager_losses = train(eager, eager, batches)

    groups = args.micro_batches // template.accum
    print(
        f"{args.micro_batches} micro-batches, {groups} optimizer steps "
        f"(accumulating {template.accum}), backend {args.backend}\n"
    )
    print("micro-batch  temperature  warm-up  cross-entropy")
    for i in range(1, args.micro_batches + 1):
        if i == 1 or i % 8 == 7:  # not the last micro-batch of a group: no weight decay term
            warm = min(1.0, i / template.warmup)
            temp = temperature_at(i, args.micro_batches)
            ce = losses[i - 1] * template.accum / warm  # undo the loss scaling for display
            print(f"{i:11d}  {temp:11.3f}  {warm:7.2f}  {ce:13.3f}")
    same = all(
        math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-7)
        for a, b in zip(losses, eager_losses, strict=True)
    )
    same &= all(
        torch.allclose(p, q, rtol=1e-5, atol=1e-7)
        for p, q in zip(model.parameters(), eager.parameters(), strict=True)
    )
    graphs = counter.frame_count
    print(f"\nmarked with dynscalar: {graphs} compiles (one per path: step % 4 == 0 or not)")
    step, temp = model.step, model.temperature
    print(
        f"after training: model.step = {step} ({type(step).__name__}), "
        f"model.temperature = {temp:.3f} ({type(temp).__name__})"
    )
    print(f"losses and weights equal to eager: {'yes' if same else 'NO'}")

    torch._dynamo.reset()
    stock = copy.deepcopy(template)
    stock_counter = CompileCounterWithBackend(args.backend)
    train(stock, torch.compile(stock, backend=stock_counter), batches)
    limit = torch._dynamo.config.recompile_limit
    tail = ", then eager (recompile_limit)" if stock_counter.frame_count >= limit else ""
    print(f"stock torch.compile: {stock_counter.frame_count} compiles{tail}")


if __name__ == "__main__":
    main()
