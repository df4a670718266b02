"""Decompositions of torch ops whose float hyperparameter Dynamo would force to a constant.

A dynamic float that reaches a torch op whose schema parameter is ``float`` (dropout ``p``,
``layer_norm``'s ``eps``, ``batch_norm``'s ``momentum``, ``cross_entropy``'s
``label_smoothing``) is specialized by torch's argument parser; some ``Scalar``
parameters (leaky_relu's slope, elu's alpha) reach ATen ops the float-tensorify pass
cannot lower, which specializes them too.  When a *dynscalar* float reaches one of the ops
below, the bridge (``_decompositions``) traces the function here instead: the same
computation written with ops in which the value is a Scalar operand of ``mul``/``add``/
``sub``/``div``/comparisons, which the tensorify pass turns into a 0-d tensor input.  The
graph then takes the value as an input: one compile across values.

Every function has the Python signature of the op it replaces and follows ATen's
algorithm operation by operation (the comments name the ATen source), so the result is
bit-identical to eager where ATen computes the same expression element by element, and
equal within the tolerance ``TOLERANCES`` states where ATen uses a fused kernel with a
different rounding order.  Random ops (dropout) draw from a different random stream than
eager, as compiled dropout always does: the same distribution and the same scaling.

This module uses public torch API only; it is plain Python and runs eagerly too (the
tests compare each function with its op in eager mode).
"""

# ruff: noqa: A002 - the signatures mirror torch's bindings, whose first parameter is `input`
from __future__ import annotations

import math
from typing import Any

import torch

__all__ = ["DECOMPOSITIONS", "TOLERANCES"]

Tensor = torch.Tensor

#: op name -> (rtol, atol, why), for ops whose decomposition is not bit-identical to eager.
TOLERANCES: dict[str, tuple[float, float, str]] = {}


def _close(name: str, rtol: float, atol: float, why: str) -> None:
    TOLERANCES[name] = (rtol, atol, why)


def _scalar_like(x: Tensor, value: Any) -> Tensor:
    """A 0-d tensor of ``x``'s dtype holding ``value`` (ATen casts a Scalar the same way)."""
    return x.new_zeros(()) + value


def _reduce(loss: Tensor, reduction: int) -> Tensor:
    """ATen's apply_loss_reduction: 0 none, 1 mean, 2 sum."""
    if reduction == 1:
        return loss.mean()
    if reduction == 2:
        return loss.sum()
    return loss


# ----------------------------------------------------------------------------- dropout
# aten/src/ATen/native/Dropout.cpp, _dropout_impl: noise = bernoulli(1 - p) in the input's
# dtype (feature dropout: one draw per (N, C) channel), divided by (1 - p); alpha dropout
# scales by a = 1/sqrt((alpha^2 p + 1)(1 - p)) and adds b.
_ALPHA = 1.7580993408473766


def _noise(input: Tensor, p: Any, feature: bool) -> Tensor:
    if feature:
        shape = (input.shape[0], input.shape[1]) + (1,) * (input.dim() - 2)
        uniform = torch.rand(shape, dtype=input.dtype, device=input.device)
    else:
        uniform = torch.rand_like(input)
    return (uniform < 1 - p).to(input.dtype)


def _dropout_impl(input: Tensor, p: Any, train: bool, feature: bool, alpha: bool) -> Tensor:
    if p < 0 or p > 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    if p == 0 or not train or input.numel() == 0:
        return input
    if p == 1:
        return input * input.new_zeros(())
    noise = _noise(input, p, feature)
    if alpha:
        a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
        b = (noise - 1) * (_ALPHA * a) + _ALPHA * a * p
        return input * (noise * a) + b
    return input * (noise / (1 - p))


def dropout(input: Tensor, p: Any, train: bool) -> Tensor:
    return _dropout_impl(input, p, train, feature=False, alpha=False)


def feature_dropout(input: Tensor, p: Any, train: bool) -> Tensor:
    return _dropout_impl(input, p, train, feature=True, alpha=False)


def alpha_dropout(input: Tensor, p: Any, train: bool) -> Tensor:
    return _dropout_impl(input, p, train, feature=False, alpha=True)


def feature_alpha_dropout(input: Tensor, p: Any, train: bool) -> Tensor:
    return _dropout_impl(input, p, train, feature=True, alpha=True)


def _inplace(fn: Any) -> Any:
    def inplace(input: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return input.copy_(fn(input, *args, **kwargs))

    inplace.__name__ = fn.__name__ + "_"
    return inplace


# ----------------------------------------------------------------------------- activations
# aten/src/ATen/native/cpu/Activation.cpp: element-wise formulas with the Scalar cast to
# the input's dtype.
def leaky_relu(input: Tensor, negative_slope: Any = 0.01) -> Tensor:
    return torch.where(input > 0, input, input * negative_slope)


def rrelu(
    input: Tensor,
    lower: Any = 0.125,
    upper: Any = 1.0 / 3.0,
    training: bool = False,
    generator: Any = None,
) -> Tensor:
    if training:  # slopes drawn uniformly from [lower, upper] for negative inputs
        slopes = torch.rand_like(input) * (upper - lower) + lower
        return torch.where(input >= 0, input, input * slopes)
    return leaky_relu(input, (lower + upper) / 2)


def elu(input: Tensor, alpha: Any = 1.0, scale: Any = 1.0, input_scale: Any = 1.0) -> Tensor:
    negative = torch.expm1(input * input_scale) * (alpha * scale)
    return torch.where(input <= 0, negative, input * scale)


_close("elu", 1e-6, 1e-7, "ATen's vectorized kernel folds alpha*scale and uses its own expm1")


def celu(input: Tensor, alpha: Any = 1.0) -> Tensor:
    return elu(input, alpha, 1.0, 1.0 / alpha)


_close("celu", 1e-6, 1e-7, "as elu (ATen's celu is elu with input_scale = 1/alpha)")


def softplus(input: Tensor, beta: Any = 1.0, threshold: Any = 20.0) -> Tensor:
    scaled = input * beta
    return torch.where(scaled > threshold, input, torch.log1p(torch.exp(scaled)) / beta)


_close("softplus", 1e-6, 1e-7, "ATen's vectorized kernel evaluates log1p(exp(x*beta)) its own way")


def hardtanh(input: Tensor, min_val: Any = -1.0, max_val: Any = 1.0) -> Tensor:
    low, high = _scalar_like(input, min_val), _scalar_like(input, max_val)
    return torch.where(input < low, low, torch.where(input > high, high, input))


def threshold(input: Tensor, threshold: Any, value: Any) -> Tensor:
    return torch.where(input <= threshold, _scalar_like(input, value), input)


def hardshrink(input: Tensor, lambd: Any = 0.5) -> Tensor:
    return torch.where((input >= -lambd) & (input <= lambd), input * 0, input)


def softshrink(input: Tensor, lambd: Any = 0.5) -> Tensor:
    return torch.where(
        input > lambd, input - lambd, torch.where(input < -lambd, input + lambd, input * 0)
    )


# ----------------------------------------------------------------------------- norms
def _upcast(input: Tensor) -> Tensor:
    """ATen normalizes half and bfloat16 inputs in float32."""
    if input.dtype in (torch.float16, torch.bfloat16):
        return input.float()
    return input


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


_close("layer_norm", 1e-6, 1e-6, "ATen's fused kernel folds mean, rstd and weight differently")


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


_close("group_norm", 1e-6, 1e-6, "ATen's fused kernel folds mean, rstd and weight differently")


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


_close("batch_norm", 1e-6, 1e-6, "ATen folds (x - mean) * rstd * weight + bias into x * a + b")


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


_close("instance_norm", 1e-6, 1e-6, "as batch_norm (ATen's instance_norm is batch_norm)")


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
        torch._check(
            ignore_index < 0, lambda: "ignore_index is not supported for floating point target"
        )
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
    return nll * (1 - label_smoothing) + smoothed * (label_smoothing / n_classes)


_close("cross_entropy_loss", 1e-6, 1e-7, "the smoothing term is summed in a different order")


def huber_loss(input: Tensor, target: Tensor, reduction: int = 1, delta: Any = 1.0) -> Tensor:
    # aten/src/ATen/native/cpu/PointwiseOpsKernel.cpp, huber_kernel
    torch._check(delta > 0, lambda: "huber_loss does not support non-positive values for delta.")
    z = (input - target).abs()
    loss = torch.where(z < delta, z * z * 0.5, (z - delta * 0.5) * delta)
    return _reduce(loss, reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, reduction: int = 1, beta: Any = 1.0) -> Tensor:
    # aten/src/ATen/native/Loss.cpp and cpu/PointwiseOpsKernel.cpp, smooth_l1_kernel
    torch._check(beta >= 0, lambda: "smooth_l1_loss does not support negative values for beta.")
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


def multi_margin_loss(
    input: Tensor,
    target: Tensor,
    p: Any = 1,
    margin: Any = 1,
    weight: Tensor | None = None,
    reduction: int = 1,
) -> Tensor:
    # aten/src/ATen/native/LossMultiMargin.cpp: z = margin - x[y] + x[d] over d != y
    torch._check(p == 1 or p == 2, lambda: "only p == 1 and p == 2 supported")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    y = target.reshape(-1, 1)
    z = ((-x.gather(1, y)) + margin + x).clamp_min(0)
    h = z if p == 1 else z * z
    if weight is not None:
        h = h * weight[y]
    h = h.masked_fill(torch.nn.functional.one_hot(y.reshape(-1), x.shape[1]).bool(), 0)
    loss = h.sum(1) / x.shape[1]
    if input.dim() != 2 and reduction == 0:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


_close("multi_margin_loss", 1e-6, 1e-7, "ATen sums over classes sequentially, torch.sum pairwise")


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: Any = 1e-8) -> Tensor:
    # aten/src/ATen/native/Distance.cpp, cosine_similarity: normalize each, then multiply
    x1, x2 = torch.broadcast_tensors(x1, x2)
    norm1 = torch.linalg.vector_norm(x1, 2, dim=dim, keepdim=True).clone()
    norm2 = torch.linalg.vector_norm(x2, 2, dim=dim, keepdim=True).clone()
    with torch.no_grad():
        norm1.copy_(torch.maximum(norm1, _scalar_like(norm1, eps)))
        norm2.copy_(torch.maximum(norm2, _scalar_like(norm2, eps)))
    return ((x1 / norm1) * (x2 / norm2)).sum(dim)


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
    # aten/src/ATen/native/transformers/attention.cpp, _scaled_dot_product_attention_math
    length, source = query.shape[-2], key.shape[-2]
    if enable_gqa:
        key = key.repeat_interleave(query.shape[-3] // key.shape[-3], -3)
        value = value.repeat_interleave(query.shape[-3] // value.shape[-3], -3)
    factor = math.sqrt(1.0 / math.sqrt(query.shape[-1]) if scale is None else scale)
    scores = (query * factor) @ (key.transpose(-2, -1) * factor)
    if is_causal:
        causal = torch.ones(length, source, dtype=torch.bool, device=query.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask
    weights = torch.softmax(scores, -1)
    weights = torch.nan_to_num(weights, nan=0.0) if attn_mask is not None or is_causal else weights
    weights = dropout(weights, dropout_p, True)
    return weights @ value


_close(
    "scaled_dot_product_attention",
    1e-5,
    1e-6,
    "eager uses a fused (flash) kernel on CPU: another summation order in softmax and matmul",
)


def _table() -> dict[Any, Any]:
    nn = torch._C._nn
    table: dict[Any, Any] = {
        torch.dropout: dropout,
        torch.feature_dropout: feature_dropout,
        torch.alpha_dropout: alpha_dropout,
        torch.feature_alpha_dropout: feature_alpha_dropout,
        torch.dropout_: _inplace(dropout),
        torch.feature_dropout_: _inplace(feature_dropout),
        torch.alpha_dropout_: _inplace(alpha_dropout),
        torch.feature_alpha_dropout_: _inplace(feature_alpha_dropout),
        nn.leaky_relu: leaky_relu,
        nn.leaky_relu_: _inplace(leaky_relu),
        torch.rrelu: rrelu,
        torch.rrelu_: _inplace(rrelu),
        nn.elu: elu,
        nn.elu_: _inplace(elu),
        torch.celu: celu,
        torch.celu_: _inplace(celu),
        nn.softplus: softplus,
        nn.hardtanh: hardtanh,
        nn.hardtanh_: _inplace(hardtanh),
        torch.threshold: threshold,
        torch.threshold_: _inplace(threshold),
        torch.hardshrink: hardshrink,
        nn.softshrink: softshrink,
        torch.layer_norm: layer_norm,
        torch.group_norm: group_norm,
        torch.rms_norm: rms_norm,
        torch.batch_norm: batch_norm,
        torch.instance_norm: instance_norm,
        nn.cross_entropy_loss: cross_entropy_loss,
        nn.huber_loss: huber_loss,
        nn.smooth_l1_loss: smooth_l1_loss,
        torch.margin_ranking_loss: margin_ranking_loss,
        torch.hinge_embedding_loss: hinge_embedding_loss,
        torch.triplet_margin_loss: triplet_margin_loss,
        torch.cosine_embedding_loss: cosine_embedding_loss,
        nn.multi_margin_loss: multi_margin_loss,
        torch.cosine_similarity: cosine_similarity,
        nn.scaled_dot_product_attention: scaled_dot_product_attention,
    }
    return table


#: torch op -> the function traced in its place when a dynamic float reaches it.
DECOMPOSITIONS: dict[Any, Any] = _table()
