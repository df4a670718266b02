"""A training loop whose learning-rate-like warm-up factor follows the step counter.

The counter lives on the model and is incremented in forward; ``@dynamic_attrs("step")``
makes every instance trace it symbolically, so the whole run compiles once and the
loss curve matches eager exactly.

    python examples/warmup_training.py [--backend inductor] [--steps 50]
"""

from __future__ import annotations

import argparse
import copy

import torch

import dynscalar


@dynscalar.dynamic_attrs("step")
class WarmupMLP(torch.nn.Module):
    def __init__(self, warmup: int = 20) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(16, 64), torch.nn.GELU(), torch.nn.Linear(64, 1)
        )
        self.step = 0
        self.warmup = warmup

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.step += 1
        # ramps linearly from 1/warmup to 1.0, then stays there
        factor = torch.clamp(torch.full((), self.step / self.warmup), max=1.0)
        return self.net(x) * factor


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="aot_eager")
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()

    torch.manual_seed(0)
    model = WarmupMLP()
    eager = copy.deepcopy(model)
    graphs = 0

    def counting(gm: torch.fx.GraphModule, inputs: list[torch.Tensor]):
        nonlocal graphs
        graphs += 1
        from torch._dynamo.backends.registry import lookup_backend

        return lookup_backend(args.backend)(gm, inputs)

    compiled = torch.compile(model, backend=counting)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    opt_eager = torch.optim.AdamW(eager.parameters(), lr=1e-2)
    max_diff = 0.0
    for _ in range(args.steps):
        x, y = torch.randn(32, 16), torch.randn(32, 1)
        for m, o in ((compiled, opt), (eager, opt_eager)):
            loss = torch.nn.functional.mse_loss(m(x), y)
            loss.backward()
            o.step()
            o.zero_grad()
            if m is compiled:
                compiled_loss = loss.item()
            else:
                max_diff = max(max_diff, abs(compiled_loss - loss.item()))
    print(
        f"{args.steps} steps, {graphs} compile(s), step={model.step}, "
        f"max |loss - eager loss| = {max_diff:.2e}"
    )


if __name__ == "__main__":
    main()
