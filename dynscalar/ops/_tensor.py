"""What inductor traces for a rule: each op written in plain torch ops, the float an operand.

A marked float reaching one of these ops on inductor must become a tensor for inductor's
kernels (its float-tensorify pass turns a float that is an operand of ``mul``/``add``/
``sub``/``div`` or a comparison into a 0-d tensor input).  Each function here has the
Python signature of the torch callable it stands for, follows ATen's algorithm (the
comments name the ATen source), and is traced by Dynamo in that callable's place
(``Rule.inductor``) where the exactness matrix admits it for inductor: no further from
eager than stock inductor's own code for the same op with the value as a constant.
Random ops draw what stock inductor draws for the op on the device: ATen's ``bernoulli_``
kernel on the CPU where stock runs it, inductor's own random numbers where stock does.

This module uses public torch API only; it is plain Python and runs eagerly too.
"""

# ruff: noqa: A002 - the signatures mirror torch's bindings, whose first parameter is `input`
from __future__ import annotations

import math
from typing import Any

import torch

Tensor = torch.Tensor


def _check(condition: Any, message: str) -> None:
    """ATen's TORCH_CHECK: a ``RuntimeError`` (a guard on the predicate when traced)."""
    if not condition:
        raise RuntimeError(message)


def _scalar_like(x: Tensor, value: Any) -> Tensor:
    """A 0-d tensor of ``x``'s dtype holding ``value`` (ATen casts a Scalar the same way)."""
    out: Tensor = x.new_zeros(()) + value
    return out


def _upcast(input: Tensor) -> Tensor:
    """ATen's CPU kernels compute half and bfloat16 in float32 (the op math type)."""
    if input.dtype in (torch.float16, torch.bfloat16):
        return input.float()
    return input


def _like(out: Tensor, input: Tensor) -> Tensor:
    """Round a result computed in the op math type back to the input's dtype, once."""
    return out if out.dtype == input.dtype else out.to(input.dtype)


def _reduce(loss: Tensor, reduction: int) -> Tensor:
    """ATen's apply_loss_reduction: 0 none, 1 mean, 2 sum."""
    if reduction == 1:
        return loss.mean()
    if reduction == 2:
        return loss.sum()
    return loss


# ----------------------------------------------------------------------------- dropout
# Random forms draw what stock inductor draws for the op on the device (the matrix measures
# masks and generator state against stock inductor, per op):
# * aten::dropout: stock inductor computes it as torch._decomp's native_dropout
#   (``rand_like(input) > p``, inductor's own random numbers; on every device);
# * aten::dropout_, feature and alpha dropout and bernoulli: ATen's composite ``_dropout_impl``
#   (aten/src/ATen/native/Dropout.cpp: noise = bernoulli(1 - p) in the input's dtype,
#   feature dropout one draw per (N, C) channel, divided by (1 - p); alpha dropout scales
#   by a = 1/sqrt((alpha^2 p + 1)(1 - p)) and adds b).  Its ``bernoulli_`` is ATen's kernel
#   on the CPU (inductor's fallback: eager's masks and generator), inductor's
#   decomposition (``rand_like(float32) < p``) elsewhere.
_ALPHA = 1.7580993408473766


def _bernoulli_draw(like: Tensor, p: Any, generator: Any = None) -> Tensor:
    """``like.bernoulli_(p)`` as stock inductor runs it on ``like``'s device, ``p``
    symbolic.  On the CPU: ATen's kernel, ``p`` a 0-d float64 tensor operand
    (``bernoulli_.Tensor``, which draws as the double overload does on a 0-d float64 ``p``:
    the same masks and generator state, measured); elsewhere torch's decomposition."""
    if not 0 <= p <= 1:  # the message only on failure: formatting p would force it
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    if like.device.type == "cpu":
        box = like.new_zeros((), dtype=torch.float64) + p
        return like.bernoulli_(box, generator=generator)
    # torch/_decomp/decompositions_for_rng.py, bernoulli_ (inductor off the CPU)
    if generator is None:
        uniform = torch.rand_like(like, dtype=torch.float32)
    else:
        uniform = torch.empty_like(like, dtype=torch.float32).uniform_(generator=generator)
    return like.copy_(uniform < p)


def bernoulli_(input: Tensor, p: Any = 0.5, *, generator: Any = None) -> Tensor:
    # aten/src/ATen/native/cpu/DistributionKernels.cpp, bernoulli_scalar_kernel_default
    return _bernoulli_draw(input, p, generator)


def bernoulli(input: Tensor, p: Any = 0.5, *, generator: Any = None) -> Tensor:
    # Distributions.cpp, bernoulli(self, double p): a fresh contiguous tensor, bernoulli_(p)
    # (inductor's CPU lowering of aten.bernoulli.p: bernoulli_ of a fresh copy)
    fresh = torch.empty_like(input, memory_format=torch.contiguous_format)
    return _bernoulli_draw(fresh, p, generator)


def _noise(input: Tensor, p: Any, feature: bool) -> Tensor:
    # _dropout_impl: at::empty(shape, input.options()).bernoulli_(1 - p)
    if feature:
        if input.dim() < 2:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        shape = (input.shape[0], input.shape[1]) + (1,) * (input.dim() - 2)
        return _bernoulli_draw(input.new_empty(shape), 1 - p)
    return _bernoulli_draw(torch.empty_like(input), 1 - p)


def _native_dropout(input: Tensor, p: Any) -> Tensor:
    # torch/_decomp/decompositions.py, native_dropout (0 < p < 1): inductor's own random
    # numbers, as stock inductor draws them for aten::dropout
    if not input.dtype.is_floating_point:
        raise RuntimeError("result type Float can't be cast to the desired output type Long")
    keep = torch.rand_like(input) > p
    out: Tensor = keep * input * (1.0 / (1.0 - p))
    return out


def _dropout_impl(
    input: Tensor, p: Any, train: bool, feature: bool, alpha: bool, native: bool = False
) -> Tensor:
    if p < 0 or p > 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    if p == 0 or not train or input.numel() == 0:
        return input
    if p == 1:
        return input * input.new_zeros(())
    if native:
        return _native_dropout(input, p)
    noise = _noise(input, p, feature)
    if alpha:
        a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
        b = (noise - 1) * (_ALPHA * a) + _ALPHA * a * p
        alpha_out: Tensor = input * (noise * a) + b
        return alpha_out
    out: Tensor = input * (noise / (1 - p))
    return out


def dropout(input: Tensor, p: Any, train: bool) -> Tensor:
    # aten::dropout: torch._decomp's native_dropout under stock inductor
    return _dropout_impl(input, p, train, feature=False, alpha=False, native=True)


def feature_dropout(input: Tensor, p: Any, train: bool) -> Tensor:
    return _dropout_impl(input, p, train, feature=True, alpha=False)


def alpha_dropout(input: Tensor, p: Any, train: bool) -> Tensor:
    return _dropout_impl(input, p, train, feature=False, alpha=True)


def feature_alpha_dropout(input: Tensor, p: Any, train: bool) -> Tensor:
    return _dropout_impl(input, p, train, feature=True, alpha=True)


def _inplace(fn: Any) -> Any:
    def inplace(input: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        out = fn(input, *args, **kwargs)
        return input if out is input else input.copy_(out)

    inplace.__name__ = fn.__name__ + "_"
    return inplace


def _aten_dropout(input: Tensor, p: Any, train: bool) -> Tensor:
    return _dropout_impl(input, p, train, feature=False, alpha=False)


# aten::dropout_ has no Python decomposition: stock inductor traces ATen's _dropout_impl
dropout_ = _inplace(_aten_dropout)
dropout_.__name__ = "dropout_"
feature_dropout_ = _inplace(feature_dropout)
alpha_dropout_ = _inplace(alpha_dropout)
feature_alpha_dropout_ = _inplace(feature_alpha_dropout)


# ----------------------------------------------------------------------------- norms


def layer_norm(
    input: Tensor,
    normalized_shape: Any,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: Any = 1e-5,
    cudnn_enable: bool = True,
) -> Tensor:
    dims = tuple(range(-len(normalized_shape), 0))
    x = _upcast(input)
    var, mean = torch.var_mean(x, dim=dims, unbiased=False, keepdim=True)
    out = (x - mean) * torch.rsqrt(var + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out.to(input.dtype)


def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: Any = 1e-5,
    cudnn_enabled: bool = True,
) -> Tensor:
    n, c = input.shape[0], input.shape[1]
    x = _upcast(input).reshape(n, num_groups, -1)
    var, mean = torch.var_mean(x, dim=-1, unbiased=False, keepdim=True)
    # ATen's CPU kernel: y = x * scale + bias with scale = rstd * gamma per channel
    trailing = (1,) * (input.dim() - 2)
    per_channel = (n, c, *trailing)
    rstd = (1 / torch.sqrt(var + eps)).repeat_interleave(c // num_groups, 1)
    scale = rstd.reshape(per_channel)
    if weight is not None:
        scale = scale * weight.reshape((1, c, *trailing))
    shift = -scale * mean.repeat_interleave(c // num_groups, 1).reshape(per_channel)
    if bias is not None:
        shift = shift + bias.reshape((1, c, *trailing))
    out = _upcast(input) * scale + shift
    return out.to(input.dtype)


def rms_norm(
    input: Tensor, normalized_shape: Any, weight: Tensor | None = None, eps: Any = None
) -> Tensor:
    # aten/src/ATen/native/layer_norm.cpp, rms_norm_symint (composite): the same ops
    dims = tuple(range(-len(normalized_shape), 0))
    x = _upcast(input)
    if eps is None:
        eps = torch.finfo(x.dtype).eps
    out = (x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + eps)).type_as(input)
    if weight is not None:
        out = out * weight
    return out


def batch_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    training: bool,
    momentum: Any,
    eps: Any,
    cudnn_enabled: bool,
) -> Tensor:
    # aten/src/ATen/native/Normalization.cpp: batch statistics in training (biased variance
    # to normalize, unbiased for the running estimate), running statistics otherwise.
    c = input.shape[1]
    affine = (1, c) + (1,) * (input.dim() - 2)
    x = _upcast(input)
    if training:
        dims = (0, *range(2, input.dim()))
        var, mean = torch.var_mean(x, dim=dims, unbiased=False)
        if running_mean is not None and running_var is not None:
            n = input.numel() // c
            with torch.no_grad():
                running_mean.copy_(mean * momentum + running_mean * (1 - momentum))
                unbiased = var * (n / max(n - 1, 1))
                running_var.copy_(unbiased * momentum + running_var * (1 - momentum))
    else:
        assert running_mean is not None and running_var is not None
        mean, var = running_mean, running_var
    # ATen's CPU kernels: y = x * alpha + beta, alpha = weight / sqrt(var + eps)
    alpha = 1 / torch.sqrt(var + eps)
    if weight is not None:
        alpha = alpha * weight
    beta = -mean * alpha if bias is None else bias - mean * alpha
    out = x * alpha.reshape(affine) + beta.reshape(affine)
    return out.to(input.dtype)


def instance_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    use_input_stats: bool,
    momentum: Any,
    eps: Any,
    cudnn_enabled: bool,
) -> Tensor:
    # aten/src/ATen/native/Normalization.cpp, instance_norm: batch_norm over (1, N*C, ...)
    b, c = input.shape[0], input.shape[1]
    shaped = input.contiguous().reshape((1, b * c, *input.shape[2:]))

    def repeat(t: Tensor | None) -> Tensor | None:
        return None if t is None else t.repeat(b)

    mean_, var_ = repeat(running_mean), repeat(running_var)
    out = batch_norm(
        shaped, repeat(weight), repeat(bias), mean_, var_, use_input_stats, momentum, eps, False
    )
    with torch.no_grad():
        if running_mean is not None and mean_ is not None:
            running_mean.copy_(mean_.reshape(b, c).mean(0))
        if running_var is not None and var_ is not None:
            running_var.copy_(var_.reshape(b, c).mean(0))
    return out.reshape(input.shape)


# ----------------------------------------------------------------------------- losses
def cross_entropy_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    reduction: int = 1,
    ignore_index: int = -100,
    label_smoothing: Any = 0.0,
) -> Tensor:
    # aten/src/ATen/native/LossNLL.cpp: cross_entropy_loss_symint and its helpers
    class_dim = 0 if input.dim() == 1 else 1
    n_classes = input.shape[class_dim]
    logp = torch.log_softmax(input, class_dim)
    shape = [1] * input.dim()
    shape[class_dim] = n_classes
    if input.shape == target.shape:  # class probabilities
        _check(ignore_index < 0, "ignore_index is not supported for floating point target")
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / n_classes
        product = logp * target
        if weight is not None:
            product = product * weight.reshape(shape)
        if reduction == 1:
            return -product.sum() / (input.numel() // n_classes)
        if reduction == 2:
            return -product.sum()
        return -product.sum(class_dim)
    reductions = ("none", "mean", "sum")
    nll = torch.nn.functional.nll_loss(
        logp, target, weight, ignore_index=ignore_index, reduction=reductions[reduction]
    )
    if not label_smoothing > 0:
        return nll
    ignore_mask = target == ignore_index
    if weight is not None:
        smooth = -(logp * weight.reshape(shape)).sum(class_dim)
    else:
        smooth = -logp.sum(class_dim)
    smooth = smooth.masked_fill(ignore_mask, 0.0)
    if reduction == 1:
        if weight is not None:
            picked = weight.gather(0, target.masked_fill(ignore_mask, 0).flatten())
            smoothed = smooth.sum() / picked.masked_fill(ignore_mask.flatten(), 0).sum()
        else:
            smoothed = smooth.sum() / (~ignore_mask).sum()
    elif reduction == 2:
        smoothed = smooth.sum()
    else:
        smoothed = smooth
    mixed: Tensor = nll * (1 - label_smoothing) + smoothed * (label_smoothing / n_classes)
    return mixed


def huber_loss(input: Tensor, target: Tensor, reduction: int = 1, delta: Any = 1.0) -> Tensor:
    # aten/src/ATen/native/cpu/PointwiseOpsKernel.cpp, huber_kernel
    _check(delta > 0, "huber_loss does not support non-positive values for delta.")
    z = (input - target).abs()
    loss = torch.where(z < delta, z * z * 0.5, (z - delta * 0.5) * delta)
    return _reduce(loss, reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, reduction: int = 1, beta: Any = 1.0) -> Tensor:
    # aten/src/ATen/native/Loss.cpp and cpu/PointwiseOpsKernel.cpp, smooth_l1_kernel
    _check(beta >= 0, "smooth_l1_loss does not support negative values for beta.")
    z = (input - target).abs()
    if beta == 0:
        return _reduce(z, reduction)
    loss = torch.where(z < beta, z * z * 0.5 / beta, z - beta * 0.5)
    return _reduce(loss, reduction)


def margin_ranking_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: Any = 0.0, reduction: int = 1
) -> Tensor:
    loss = ((-target) * (input1 - input2) + margin).clamp_min(0)
    return _reduce(loss, reduction)


def hinge_embedding_loss(
    input: Tensor, target: Tensor, margin: Any = 1.0, reduction: int = 1
) -> Tensor:
    zeros = torch.zeros_like(input)
    margin_clamp = ((-input) + margin).clamp_min(0)
    output = torch.where(target != 1, margin_clamp, zeros) + torch.where(target != -1, input, zeros)
    return _reduce(output, reduction)


def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: Any = 1.0,
    p: float = 2.0,
    eps: float = 1e-6,
    swap: bool = False,
    reduction: int = 1,
) -> Tensor:
    dist_pos = torch.pairwise_distance(anchor, positive, p, eps)
    dist_neg = torch.pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = torch.min(dist_neg, torch.pairwise_distance(positive, negative, p, eps))
    return _reduce((dist_pos + margin - dist_neg).clamp_min(0), reduction)


def cosine_embedding_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: Any = 0.0, reduction: int = 1
) -> Tensor:
    dim = target.dim()
    prod_sum = (input1 * input2).sum(dim)
    mag1 = (input1 * input1).sum(dim) + 1e-12
    mag2 = (input2 * input2).sum(dim) + 1e-12
    cos = prod_sum / (mag1 * mag2).sqrt()
    zeros = torch.zeros_like(cos)
    output = torch.where(target == 1, 1 - cos, zeros) + torch.where(
        target == -1, (cos - margin).clamp_min(0), zeros
    )
    return _reduce(output, reduction)


def poisson_nll_loss(
    input: Tensor,
    target: Tensor,
    log_input: bool,
    full: bool,
    eps: Any,
    reduction: int,
) -> Tensor:
    # aten/src/ATen/native/Loss.cpp, poisson_nll_loss
    if log_input:
        loss = torch.exp(input) - target * input
    else:
        loss = input - target * torch.log(input + eps)
    if full:
        # the compiler evaluates ATen's operands right to left: the half-log term first
        # (the order in which autograd then sums the target's gradient)
        half_log = 0.5 * torch.log(2 * math.pi * target)
        stirling = target * torch.log(target) - target + half_log
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return _reduce(loss, reduction)


def pairwise_distance(
    x1: Tensor, x2: Tensor, p: Any = 2.0, eps: Any = 1e-6, keepdim: bool = False
) -> Tensor:
    # aten/src/ATen/native/Distance.cpp, pairwise_distance: norm(x1 - x2 + eps, p) over the
    # innermost dimension of the broadcast result (at::norm is linalg_vector_norm). Only
    # eps is kept symbolic here (Rule.inductor_scalars): linalg_vector_norm's `ord` is a
    # Scalar the tensorify pass cannot lower, so a marked p is traced boxed instead.
    innermost = max(x1.dim(), x2.dim()) - 1
    distance: Tensor = torch.linalg.vector_norm(x1 - x2 + eps, p, dim=innermost, keepdim=keepdim)
    return distance


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: Any = 1e-8) -> Tensor:
    # aten/src/ATen/native/Distance.cpp, cosine_similarity: normalize each, then multiply
    shape = torch.broadcast_shapes(x1.shape, x2.shape)  # type: ignore[no-untyped-call]
    x1, x2 = x1.expand(shape), x2.expand(shape)
    norm1 = torch.linalg.vector_norm(x1, 2, dim=dim, keepdim=True).clone()
    norm2 = torch.linalg.vector_norm(x2, 2, dim=dim, keepdim=True).clone()
    with torch.no_grad():
        norm1.copy_(torch.maximum(norm1, _scalar_like(norm1, eps)))
        norm2.copy_(torch.maximum(norm2, _scalar_like(norm2, eps)))
    similarity: Tensor = ((x1 / norm1) * (x2 / norm2)).sum(dim)
    return similarity


def _safe_softmax(x: Tensor, dim: int) -> Tensor:
    # aten/src/ATen/native/SoftMax.cpp, _safe_softmax: rows that are all -inf give 0, not
    # nan. Its own derivative (softmax_backward of that output) gives them a 0 gradient;
    # here the softmax of those rows is taken of zeros, so autograd meets no nan either.
    masked_rows = (x == float("-inf")).all(dim, keepdim=True)
    zero = torch.zeros((), dtype=x.dtype, device=x.device)
    out = torch.softmax(torch.where(masked_rows, zero, x), dim)
    return torch.where(masked_rows, zero, out)


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
) -> Tensor:
    # Without dropout ATen picks a fused kernel (CPU: the flash kernel, whose online
    # softmax rounds its own way and gives a row with a NaN score zero weights); with
    # dropout its math fallback, which draws.  So dropout_p == 0 is a path: there the op
    # itself with the constant 0.0, stock inductor's own graph; otherwise the math
    # fallback with the value an operand of dropout (Rule.inductor_scalars: only
    # dropout_p is marked here, a marked scale is traced boxed instead).
    if dropout_p == 0:
        out: Tensor = torch.ops.aten.scaled_dot_product_attention.default(
            query, key, value, attn_mask, 0.0, is_causal, scale=scale, enable_gqa=enable_gqa
        )
        return out
    return _sdpa_math(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def _sdpa_math(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None,
    dropout_p: Any,
    is_causal: bool,
    scale: Any,
    enable_gqa: bool,
) -> Tensor:
    # aten/src/ATen/native/transformers/attention.cpp, _scaled_dot_product_attention_math
    # (the math fallback; the caller converts a boolean mask to 0 / -inf first)
    _check(
        not (is_causal and attn_mask is not None),
        "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True",
    )
    dtype = query.dtype
    q, k, v = _upcast(query), _upcast(key), _upcast(value)  # half/bfloat16 in float32
    # sdp::calculate_scale, then its square root applied to q and k; a negative scale
    # scales q by -sqrt(|scale|)
    negative = scale is not None and scale < 0
    softmax_scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    factor = math.sqrt(-softmax_scale if negative else softmax_scale)
    q = q * ((0.0 - factor) if negative else factor)
    if is_causal:
        length, source = query.shape[-2], key.shape[-2]
        attn_mask = torch.ones(length, source, dtype=torch.bool, device=query.device).tril()
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        # sdp::convert_boolean_attn_mask: where(~mask, -inf, 0) in the query's dtype
        zero = torch.zeros((), dtype=dtype, device=query.device)
        attn_mask = torch.where(attn_mask.logical_not(), float("-inf"), zero)
    if enable_gqa:  # pre_process_group_query_attention_input
        k = k.repeat_interleave(q.shape[-3] // k.shape[-3], -3)
        v = v.repeat_interleave(q.shape[-3] // v.shape[-3], -3)
    attn = q @ (k.transpose(-2, -1) * factor)
    if attn_mask is not None:
        attn = attn + attn_mask
    attn = _safe_softmax(attn, -1)
    attn = dropout(attn, dropout_p, True)  # raises for a value outside [0, 1], as ATen's
    return _like(attn @ v, query)


# Tensor.pow(dynamic float) is traced in _methods as torch.pow(x, <0-d tensor exponent>)
