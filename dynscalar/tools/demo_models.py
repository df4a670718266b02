"""The demo's models, which the benchmarks run too (one definition for both).

Examples:
    >>> import torch
    >>> model = SeedModel(4)
    >>> _ = model(torch.ones(1, 4)); model.step
    1
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["SeedModel", "TrainBlock"]


class SeedModel(torch.nn.Module):
    """A step counter incremented in forward: stock torch.compile recompiles per value."""

    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(width, width)
        self.step = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + 1
        self.step += 1
        out: torch.Tensor = self.layer(x)
        return out


class TrainBlock(torch.nn.Module):
    """A pre-norm transformer block trained with gradient accumulation over ``accum`` steps.

    ``forward(x, y)`` increments the counter, scales the loss by a linear warm-up factor
    ``min(1, step / warmup)`` (kept symbolic: ``torch.clamp(torch.full(...), max=1.0)``)
    and by ``1 / accum``, and on accumulation boundaries (``step % accum == 0``) adds an L2
    penalty on all parameters, once per optimizer step. That ``if`` is two control paths.
    (``benchmarks/workloads.py`` uses this class for its ``train`` workload.)
    """

    def __init__(
        self,
        dim: int = 64,
        heads: int = 4,
        hidden: int = 256,
        warmup: int = 50,
        accum: int = 4,
        l2: float = 1e-4,
    ) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)
        self.norm2 = torch.nn.LayerNorm(dim)
        self.mlp = torch.nn.Sequential(
            torch.nn.Linear(dim, hidden), torch.nn.GELU(), torch.nn.Linear(hidden, dim)
        )
        self.step = 0
        self.warmup = warmup
        self.accum = accum
        self.l2 = l2

    def block(self, x: torch.Tensor) -> torch.Tensor:
        """Attention then MLP, each with a residual connection."""
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attn.transpose(1, 2).reshape(b, t, d))
        out: torch.Tensor = x + self.mlp(self.norm2(x))
        return out

    def penalty(self) -> torch.Tensor:
        """Sum of squares of all parameters."""
        return sum(p.pow(2).sum() for p in self.parameters())  # type: ignore[return-value]

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        self.step += 1
        warm = torch.clamp(torch.full((), self.step / self.warmup), max=1.0)
        loss = F.mse_loss(self.block(x), y) * warm / self.accum
        if self.step % self.accum == 0:
            loss = loss + self.l2 * self.penalty()
        return loss
