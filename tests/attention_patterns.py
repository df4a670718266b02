"""Attention patterns of real libraries, written out so they run without the library.

* :class:`TimmAttention`: ``timm/models/vision_transformer.py`` (timm 1.0, ``Attention``):
  a fused path, ``F.scaled_dot_product_attention(q, k, v, dropout_p=self.attn_drop.p if
  self.training else 0.)``, and the explicit one (``softmax``, then ``self.attn_drop``);
  the probability lives in the ``nn.Dropout`` module ``attn_drop``;
* :class:`HFAttention`: Hugging Face transformers' ``LlamaAttention`` with
  ``sdpa_attention_forward`` (``transformers/integrations/sdpa_attention.py``): the float
  attribute ``attention_dropout`` passed as ``dropout_p`` in training, ``scale`` the
  constant ``head_dim ** -0.5``, causal;
* :func:`checkpointed`: a module's forward inside ``torch.utils.checkpoint.checkpoint``
  (non-reentrant, reentrant, or with a selective-checkpoint policy that saves the matrix
  products, ``create_selective_checkpoint_contexts``), as transformers' and timm's
  ``gradient_checkpointing`` wrap their blocks.

Plain torch only: ``tests/harm_scenarios.py`` runs them in a process that never imports
dynscalar.
"""

from __future__ import annotations

import functools
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils import checkpoint as ckpt

__all__ = ["REGIONS", "Checkpointed", "HFAttention", "TimmAttention", "checkpointed"]


class TimmAttention(nn.Module):
    """timm's ViT ``Attention`` (qkv in one projection, ``attn_drop`` a Dropout module)."""

    def __init__(
        self, dim: int = 8, num_heads: int = 2, attn_drop: float = 0.0, fused: bool = True
    ) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim**-0.5
        self.fused_attn = fused
        self.qkv = nn.Linear(dim, dim * 3, bias=True)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: Tensor) -> Tensor:
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        if self.fused_attn:
            x = F.scaled_dot_product_attention(
                q, k, v, dropout_p=self.attn_drop.p if self.training else 0.0
            )
        else:
            q = q * self.scale
            attn = q @ k.transpose(-2, -1)
            attn = attn.softmax(dim=-1)
            attn = self.attn_drop(attn)
            x = attn @ v
        x = x.transpose(1, 2).reshape(b, n, c)
        out: Tensor = self.proj(x)
        return out


def _sdpa_attention_forward(
    module: nn.Module,
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attention_mask: Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[Tensor, None]:
    is_causal = query.shape[2] > 1 and attention_mask is None and module.is_causal
    out = F.scaled_dot_product_attention(
        query,
        key,
        value,
        attn_mask=attention_mask,
        dropout_p=dropout,
        scale=scaling,
        is_causal=is_causal,
    )
    return out.transpose(1, 2).contiguous(), None


class HFAttention(nn.Module):
    """transformers' ``LlamaAttention`` through ``sdpa_attention_forward`` (no rotary
    embedding: it does not touch the dropout)."""

    def __init__(self, hidden: int = 8, heads: int = 2, attention_dropout: float = 0.0) -> None:
        super().__init__()
        self.head_dim = hidden // heads
        self.scaling = self.head_dim**-0.5
        self.attention_dropout = attention_dropout
        self.is_causal = True
        self.q_proj = nn.Linear(hidden, hidden, bias=False)
        self.k_proj = nn.Linear(hidden, hidden, bias=False)
        self.v_proj = nn.Linear(hidden, hidden, bias=False)
        self.o_proj = nn.Linear(hidden, hidden, bias=False)

    def forward(self, hidden_states: Tensor, **kwargs: Any) -> Tensor:
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        q = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        k = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        v = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        out, _ = _sdpa_attention_forward(
            self,
            q,
            k,
            v,
            None,
            dropout=0.0 if not self.training else self.attention_dropout,
            scaling=self.scaling,
            **kwargs,
        )
        result: Tensor = self.o_proj(out.reshape(*input_shape, -1).contiguous())
        return result


def _save_products(ctx: Any, op: Any, *args: Any, **kwargs: Any) -> ckpt.CheckpointPolicy:
    """A selective-checkpoint policy: keep the matrix products, recompute the rest."""
    if op in (torch.ops.aten.mm.default, torch.ops.aten.addmm.default, torch.ops.aten.bmm.default):
        return ckpt.CheckpointPolicy.MUST_SAVE
    return ckpt.CheckpointPolicy.PREFER_RECOMPUTE


#: region name -> keyword arguments of ``torch.utils.checkpoint.checkpoint`` (None: none)
REGIONS: dict[str, dict[str, Any] | None] = {
    "none": None,
    "checkpoint": {"use_reentrant": False},
    "reentrant": {"use_reentrant": True},
    "selective": {
        "use_reentrant": False,
        "context_fn": functools.partial(ckpt.create_selective_checkpoint_contexts, _save_products),
    },
}


class Checkpointed(nn.Module):
    """``inner``'s forward inside an activation-checkpoint region (``REGIONS[region]``),
    then a nonlinearity outside it (its backward needs the region's output)."""

    def __init__(self, inner: nn.Module, region: str) -> None:
        super().__init__()
        self.inner = inner
        self.region = region

    def forward(self, x: Tensor) -> Tensor:
        options = REGIONS[self.region]
        y = self.inner(x) if options is None else ckpt.checkpoint(self.inner, x, **options)
        out: Tensor = y.sin()
        return out


def checkpointed(inner: nn.Module, region: str) -> nn.Module:
    """``inner`` inside the checkpoint region ``region`` (``"none"``: as it is)."""
    return Checkpointed(inner, region)
