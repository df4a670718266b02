"""What a ``"python"`` backend traces for a rule whose op has value-dependent paths.

Each function here has the Python signature of the torch callable it stands for and is
traced by Dynamo in its place when a marked float reaches it (``Rule.python``).  Paths that
ATen takes on the value itself are written as Python conditions on it, which Dynamo turns
into guards on the predicate (two paths, two graphs at most, no specialization):

* dropout returns its input itself at ``p == 0``, in eval mode and for an empty input,
  and multiplies by zero at ``p == 1``, drawing nothing; those paths call ATen's op with a
  constant (the value does not matter there, only that it is 0 or 1);
* otherwise a dynscalar custom op runs eager's own kernels with the Python float: the
  same ATen calls in the same order as ``_dropout_impl`` (aten/src/ATen/native/Dropout.cpp),
  the same random numbers from the same generator, and the noise kept for the gradient
  (eager's ``mul`` backward: ``grad * noise``);
* where ATen takes its fused kernel instead (``torch.dropout`` out of place, on a CUDA or
  XPU tensor: ``is_fused_kernel_acceptable``), ``dynscalar::dropout_fused`` calls that
  kernel, ``native_dropout``, with the Python float, and its gradient is
  ``native_dropout_backward`` of the mask at ``1 / (1 - p)``, as eager's autograd formula
  computes it (in a custom op too, so ``p`` stays symbolic in the backward);
* ``scaled_dot_product_attention`` is one custom op for every ``dropout_p`` (ATen skips
  dropout at 0 on the Python float itself): it returns the generator state it started
  from, and its gradient recomputes it from that state (``_custom``), so a non-zero
  ``dropout_p`` is dynamic too;
* ``bernoulli``/``bernoulli_`` with a generator argument (a generator cannot be a custom
  op's argument) call ATen's op with the marked float: specialized as stock torch
  specializes it.

Every function takes the bridge's two keywords: ``autocast``, the autocast state the call
was traced under (its custom ops run their kernels under it), and ``requiring``, which
inputs require grad (the attention op runs its kernel with exactly those requiring grad,
as ATen picks its kernel by it; dropout's and bernoulli's kernels depend on neither).

Every op here that draws is tagged ``nondeterministic_seeded``, as ATen's random ops are:
where AOTAutograd recomputes one for the backward (activation checkpointing), it replays
the forward's draws from the saved generator state (``docs/how-it-works.md``).

Run eagerly (``python -m tests.ops_matrix``, tests), every function computes what the
op it stands for computes; the exactness matrix (``dynscalar/tools/matrix``) compares them case
by case.
"""

# ruff: noqa: A002 - the signatures mirror torch's bindings, whose first parameter is `input`
from __future__ import annotations

import math
from typing import Any

import torch

from ._custom import autocast_region, define, op_for, with_autocast
from ._table import RULES

__all__ = [
    "prepare",
    "alpha_dropout",
    "bernoulli",
    "bernoulli_",
    "dropout",
    "feature_alpha_dropout",
    "feature_dropout",
    "scaled_dot_product_attention",
]

Tensor = torch.Tensor
aten: Any = torch.ops.aten

_ALPHA = 1.7580993408473766  # alpha_dropout's constant (Dropout.cpp)


# ----------------------------------------------------------------------------- dropout
def _noise_impl(input: Tensor, p: Any, feature: bool, alpha: bool) -> tuple[Tensor, Tensor]:
    """Dropout.cpp's ``_dropout_impl`` for ``0 < p < 1`` in training: (output, the noise the
    output is ``input`` times).  Eager: the same ATen calls in the same order."""
    p = float(p)
    if feature and input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    noise = _empty_noise(input, feature)
    noise.bernoulli_(1 - p)
    if alpha:
        a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
        b = noise.add(-1).mul_(_ALPHA * a).add_(_ALPHA * a * p)
        noise.mul_(a)
        return input.mul(noise).add_(b), noise
    noise.div_(1 - p)
    return input.mul(noise), noise


def _noise(
    input: Tensor, p: Any, feature: bool, alpha: bool, *, autocast: str | None = None
) -> tuple[Tensor, Tensor]:
    # looked up at each call: the op is registered once per process, its kernel stays
    # replaceable (tests check that the exactness matrix catches a wrong one)
    with autocast_region(autocast):
        return _noise_impl(input, p, feature, alpha)


def _noise_fake(
    input: Tensor, p: Any, feature: bool, alpha: bool, *, autocast: str | None = None
) -> tuple[Tensor, Tensor]:
    with autocast_region(autocast):
        noise = _empty_noise(input, feature)
        return input.mul(noise), noise


def _empty_noise(input: Tensor, feature: bool) -> Tensor:
    """``_dropout_impl``'s noise tensor, not yet drawn: one value per (N, C) channel for
    feature dropout, else one per element."""
    if feature:
        return input.new_empty((input.shape[0], input.shape[1]) + (1,) * (input.dim() - 2))
    return torch.empty_like(input)


def _noise_setup(
    ctx: Any,
    inputs: tuple[Any, ...],
    output: tuple[Tensor, Tensor],
    keyword_only_inputs: dict[str, Any] | None = None,
) -> None:
    ctx.save_for_backward(output[1])


def _noise_backward(ctx: Any, grad: Tensor, _grad_noise: Any) -> tuple[Any, ...]:
    (noise,) = ctx.saved_tensors
    return grad * noise, None, None, None  # eager's mul backward: grad * other (no autocast)


#: devices where ATen's ``dropout`` calls its fused kernel (``is_fused_kernel_acceptable``)
_FUSED = ("cuda", "xpu")


def _fused_impl(input: Tensor, p: Any) -> tuple[Tensor, Tensor]:
    out, mask = aten.native_dropout.default(input, float(p), True)
    return out, mask


def _fused_fake(input: Tensor, p: Any) -> tuple[Tensor, Tensor]:
    return torch.empty_like(input), torch.empty_like(input, dtype=torch.bool)


def _fused_setup(ctx: Any, inputs: tuple[Any, ...], output: tuple[Tensor, Tensor]) -> None:
    ctx.p = inputs[1]
    ctx.save_for_backward(output[1])


def _fused_backward(ctx: Any, grad: Tensor, _grad_mask: Any) -> tuple[Any, ...]:
    (mask,) = ctx.saved_tensors
    return torch.ops.dynscalar.dropout_fused_backward.default(grad, mask, ctx.p), None


def _fused_backward_impl(grad: Tensor, mask: Tensor, p: Any) -> Tensor:
    # derivatives.yaml: native_dropout_backward(grad, result1, 1.0 / (1.0 - p)), in double
    out: Tensor = aten.native_dropout_backward.default(grad, mask, 1.0 / (1.0 - float(p)))
    return out


def _fused_backward_fake(grad: Tensor, mask: Tensor, p: Any) -> Tensor:
    return torch.empty_like(grad)


def prepare() -> None:
    """Define the custom ops the functions below call (before Dynamo traces one of them:
    defining an op is not traceable)."""
    define(
        "dropout_noise",
        with_autocast("(Tensor input, Scalar p, bool feature, bool alpha) -> (Tensor, Tensor)"),
        _noise,
        _noise_fake,
        _noise_backward,
        _noise_setup,
        random=True,
    )
    define(
        "bernoulli_like",
        with_autocast("(Tensor input, Scalar p) -> Tensor"),
        _bernoulli_like_impl,
        _bernoulli_like_fake,
        random=True,
    )
    define(
        "dropout_fused_backward",
        "(Tensor grad, Tensor mask, Scalar p) -> Tensor",
        _fused_backward_impl,
        _fused_backward_fake,
    )
    define(
        "dropout_fused",
        "(Tensor input, Scalar p) -> (Tensor, Tensor)",
        _fused_impl,
        _fused_fake,
        _fused_backward,
        _fused_setup,
        random=True,
    )
    op_for(RULES["bernoulli_p"])
    op_for(RULES["scaled_dot_product_attention"])


def _dropout(
    input: Tensor,
    p: Any,
    train: bool,
    feature: bool,
    alpha: bool,
    op: Any,
    autocast: str | None = None,
    fused: bool = False,
) -> Tensor:
    if not 0 <= p <= 1:  # ATen's check; the message only on failure (formatting p forces it)
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    out: Tensor
    if p == 0 or not train or input.numel() == 0:
        out = op(input, 0.0, train)  # ATen returns the input itself: the value is unused
    elif p == 1:
        out = op(input, 1.0, train)  # input times a zero scalar, no draws
    elif fused and input.device.type in _FUSED:  # ATen's fused kernel draws otherwise
        out, _ = torch.ops.dynscalar.dropout_fused.default(input, p)
    else:
        noise = torch.ops.dynscalar.dropout_noise.default
        out, _ = noise(input, p, feature, alpha, autocast=autocast)
    return out


def _inplace(out: Tensor, input: Tensor) -> Tensor:
    return out if out is input else input.copy_(out)


def dropout(
    input: Tensor, p: Any, train: bool, *, requiring: Any = None, autocast: str | None = None
) -> Tensor:
    return _dropout(input, p, train, False, False, aten.dropout.default, autocast, fused=True)


def feature_dropout(
    input: Tensor, p: Any, train: bool, *, requiring: Any = None, autocast: str | None = None
) -> Tensor:
    return _dropout(input, p, train, True, False, aten.feature_dropout.default, autocast)


def alpha_dropout(
    input: Tensor, p: Any, train: bool, *, requiring: Any = None, autocast: str | None = None
) -> Tensor:
    return _dropout(input, p, train, False, True, aten.alpha_dropout.default, autocast)


def feature_alpha_dropout(
    input: Tensor, p: Any, train: bool, *, requiring: Any = None, autocast: str | None = None
) -> Tensor:
    return _dropout(input, p, train, True, True, aten.feature_alpha_dropout.default, autocast)


def dropout_(
    input: Tensor, p: Any, train: bool, *, requiring: Any = None, autocast: str | None = None
) -> Tensor:
    out = _dropout(input, p, train, False, False, aten.dropout_.default, autocast)
    return _inplace(out, input)


def feature_dropout_(
    input: Tensor, p: Any, train: bool, *, requiring: Any = None, autocast: str | None = None
) -> Tensor:
    out = _dropout(input, p, train, True, False, aten.feature_dropout_.default, autocast)
    return _inplace(out, input)


def alpha_dropout_(
    input: Tensor, p: Any, train: bool, *, requiring: Any = None, autocast: str | None = None
) -> Tensor:
    out = _dropout(input, p, train, False, True, aten.alpha_dropout_.default, autocast)
    return _inplace(out, input)


def feature_alpha_dropout_(
    input: Tensor, p: Any, train: bool, *, requiring: Any = None, autocast: str | None = None
) -> Tensor:
    out = _dropout(input, p, train, True, True, aten.feature_alpha_dropout_.default, autocast)
    return _inplace(out, input)


# ----------------------------------------------------------------------------- bernoulli
def _bernoulli_like_impl(input: Tensor, p: Any, *, autocast: str | None = None) -> Tensor:
    # Tensor.bernoulli_(p) draws into the tensor's own memory: a copy with its strides
    with autocast_region(autocast):
        return input.clone().bernoulli_(float(p))


def _bernoulli_like_fake(input: Tensor, p: Any, *, autocast: str | None = None) -> Tensor:
    return torch.empty_like(input)


def bernoulli(
    input: Tensor,
    p: Any = 0.5,
    *,
    generator: Any = None,
    requiring: Any = None,
    autocast: str | None = None,
) -> Tensor:
    out: Tensor
    if generator is not None:  # a generator cannot be a custom op's argument
        out = aten.bernoulli.p(input, p, generator=generator)
    else:
        out = torch.ops.dynscalar.bernoulli_p.default(input, p, autocast=autocast)
    return out


def bernoulli_(
    input: Tensor,
    p: Any = 0.5,
    *,
    generator: Any = None,
    requiring: Any = None,
    autocast: str | None = None,
) -> Tensor:
    if generator is not None:
        out: Tensor = aten.bernoulli_.float(input, p, generator=generator)
        return out
    like = torch.ops.dynscalar.bernoulli_like.default(input, p, autocast=autocast)
    return input.copy_(like)


# ----------------------------------------------------------------------------- attention
def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: Any = 0.0,
    is_causal: bool = False,
    *,
    scale: Any = None,
    enable_gqa: bool = False,
    requiring: list[bool] | None = None,
    autocast: str | None = None,
) -> Tensor:
    # one graph for every value: ATen takes its own paths on the Python float at run time
    # (no dropout at 0), and the op keeps the generator state it started from, so its
    # gradient replays the forward's draws (the op is tagged random: where torch recomputes
    # it for the backward, torch replays them too)
    op = torch.ops.dynscalar.scaled_dot_product_attention.default
    out, _ = op(
        query,
        key,
        value,
        attn_mask,
        dropout_p,
        is_causal,
        scale=scale,
        enable_gqa=enable_gqa,
        requiring=requiring,
        autocast=autocast,
    )
    return out  # type: ignore[no-any-return]
