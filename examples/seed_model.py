"""The seed example: a step counter incremented in forward.

Stock torch.compile guards on ``self.step == <value>`` and recompiles for every call
until ``recompile_limit`` (8) is hit, then runs eagerly.  Marked dynamic, it compiles once.

    python examples/seed_model.py
"""

from __future__ import annotations

import torch

import dynscalar


class Seed(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(4, 4)
        self.step = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + 1
        self.step += 1
        return self.layer(x)


def count_compiles(model: torch.nn.Module, calls: int = 20) -> int:
    graphs = 0

    def backend(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]):
        nonlocal graphs
        graphs += 1
        return gm.forward

    torch._dynamo.reset()
    compiled = torch.compile(model, backend=backend)
    for _ in range(calls):
        compiled(torch.randn(2, 4))
    return graphs


if __name__ == "__main__":
    print("stock torch.compile:        ", count_compiles(Seed()), "compiles")
    marked = dynscalar.mark_dynamic_attr(Seed(), "step")
    print("mark_dynamic_attr(m, 'step'):", count_compiles(marked), "compile; step =", marked.step)
