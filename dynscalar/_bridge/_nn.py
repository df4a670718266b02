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
different rounding order.  Random ops (dropout, bernoulli) consume the default generator
as ATen's CPU kernel does (one double uniform per element), so eager and aot_eager draw
the same numbers for the same seed; inductor draws from its own stream, as it always does.

This module uses public torch API only; it is plain Python and runs eagerly too (the
tests compare each function with its op in eager mode).
"""

# ruff: noqa: A002 - the signatures mirror torch's bindings, whose first parameter is `input`
from __future__ import annotations

import math
from typing import Any

import torch

__all__ = ["DECOMPOSITIONS", "METHOD_DECOMPOSITIONS", "TOLERANCES"]

Tensor = torch.Tensor

#: op name -> (rtol, atol, why), for ops whose decomposition is not bit-identical to eager.
TOLERANCES: dict[str, tuple[float, float, str]] = {}


def _check(condition: Any, message: str) -> None:
    """ATen's TORCH_CHECK: a ``RuntimeError`` (a guard on the predicate when traced)."""
    if not condition:
        raise RuntimeError(message)


def _close(name: str, rtol: float, atol: float, why: str) -> None:
    TOLERANCES[name] = (rtol, atol, why)


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
# aten/src/ATen/native/Dropout.cpp, _dropout_impl: noise = bernoulli(1 - p) in the input's
# dtype (feature dropout: one draw per (N, C) channel), divided by (1 - p); alpha dropout
# scales by a = 1/sqrt((alpha^2 p + 1)(1 - p)) and adds b.
_ALPHA = 1.7580993408473766


def _bernoulli_draw(like: Tensor, p: Any, generator: Any = None) -> Tensor:
    """ATen's CPU ``bernoulli_(double p)``: one double uniform per element, in memory order
    (``bernoulli_distribution<double>``: ``uniform < p``), stored in ``like``'s dtype.

    Same generator use as eager's kernel, so the same numbers for the same seed, where
    torch runs that kernel (``bernoulli_matches_eager()``; builds that draw bernoulli
    through MKL on Intel CPUs use another stream, and inductor always draws its own).
    """
    if not 0 <= p <= 1:  # the message only on failure: formatting p would force it
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    if generator is None:
        uniform = torch.rand_like(like, dtype=torch.float64)
    else:
        uniform = torch.empty_like(like, dtype=torch.float64).uniform_(generator=generator)
    keep: Tensor = uniform < p
    return keep.to(like.dtype)


def bernoulli_matches_eager() -> bool:
    """Whether ``_bernoulli_draw`` gives eager's numbers on this build and CPU (asked of the
    kernel with a private generator: the default generator is not touched).  torch's CPU
    ``bernoulli_(float)`` draws through MKL's own stream on Intel CPUs in MKL builds, and
    from one double uniform per element everywhere else."""
    g = torch.Generator().manual_seed(0)
    want = torch.empty(256).bernoulli_(0.5, generator=g)
    g.manual_seed(0)
    got = (torch.empty(256, dtype=torch.float64).uniform_(generator=g) < 0.5).float()
    return bool(torch.equal(got, want))


def bernoulli_(input: Tensor, p: Any = 0.5, *, generator: Any = None) -> Tensor:
    # aten/src/ATen/native/cpu/DistributionKernels.cpp, bernoulli_scalar_kernel_default
    return input.copy_(_bernoulli_draw(input, p, generator))


def bernoulli(input: Tensor, p: Any = 0.5, *, generator: Any = None) -> Tensor:
    # Distributions.cpp, bernoulli(self, double p): empty_like(self).bernoulli_(p)
    return _bernoulli_draw(input, p, generator)


def _noise(input: Tensor, p: Any, feature: bool) -> Tensor:
    # _dropout_impl: at::empty(shape, input.options()).bernoulli_(1 - p)
    if feature:
        shape = (input.shape[0], input.shape[1]) + (1,) * (input.dim() - 2)
        return _bernoulli_draw(input.new_empty(shape), 1 - p)
    return _bernoulli_draw(torch.empty_like(input, memory_format=torch.contiguous_format), 1 - p)


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
        alpha_out: Tensor = input * (noise * a) + b
        return alpha_out
    out: Tensor = input * (noise / (1 - p))
    return out


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


# ----------------------------------------------------------------------------- clamp
# aten/src/ATen/native/TensorCompare.cpp and cpu/TensorCompareKernel.cpp: the Scalar bounds
# are cast to the input's dtype, NaN propagates, max wins if min > max; the gradient passes
# where min <= x <= max (clamp_backward).  clamp.Tensor with 0-d bounds of the input's
# dtype computes and differentiates the same, and the tensorify pass lowers the bounds.
# float32/float64 only: how half and bfloat16 kernels compare with a Scalar bound changed
# between torch releases (2.14's clamp_min compares in float32), so those keep torch's op.
def _bound(input: Tensor, value: Any) -> Any:
    if value is None or isinstance(value, torch.Tensor):
        return value
    return _scalar_like(input, value)


def clamp_gradient_at_bounds() -> bool:
    """Whether the installed torch passes clamp's gradient where x equals a Scalar bound
    (2.13's clamp_backward: ``min <= x <= max``; 2.15 passes it strictly inside).  Asked of
    the kernel once, at the first dynamic clamp bound (``_methods``/``_decompositions``),
    and kept in a module global the traced decomposition reads."""
    global CLAMP_GRADIENT_AT_BOUNDS
    if CLAMP_GRADIENT_AT_BOUNDS is None:
        with torch.enable_grad():  # the first trace may run under torch.no_grad()
            x = torch.tensor([0.5, 1.5], requires_grad=True)
            (grad,) = torch.autograd.grad(torch.clamp(x, 0.5, 1.5).sum(), x)
        CLAMP_GRADIENT_AT_BOUNDS = bool(grad[0] == 1)
    return CLAMP_GRADIENT_AT_BOUNDS


CLAMP_GRADIENT_AT_BOUNDS: bool | None = None


def probe_kernels() -> None:
    """Ask the installed kernels, once, what the decompositions must match (the clamp
    gradient at a bound, softshrink's rounding of lambd).  Called by the hooks before a
    decomposition is traced: traced code reads the answers from module globals, and no
    kernel runs at import."""
    clamp_gradient_at_bounds()
    softshrink_rounds_lambd()


def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:
    if not _exact_dtype(input):  # an int tensor with a float bound promotes: as torch
        return torch.clamp(input, min, max)
    low, high = _bound(input, min), _bound(input, max)
    # the value: clamp.Tensor; the gradient: x itself where ATen's clamp_backward passes it
    at_bounds = clamp_gradient_at_bounds()  # set before tracing: traced, it reads a global
    inside = torch.ones_like(input, dtype=torch.bool)
    if low is not None:
        inside = inside & ((input >= low) if at_bounds else (input > low))
    if high is not None:
        inside = inside & ((input <= high) if at_bounds else (input < high))
    return torch.where(inside, input, torch.clamp(input.detach(), low, high))


def clamp_(input: Tensor, min: Any = None, max: Any = None) -> Tensor:
    if not _exact_dtype(input):
        return input.clamp_(min, max)
    return input.copy_(clamp(input, min, max))


def clamp_min(input: Tensor, min: Any) -> Tensor:
    return clamp(input, min, None)


def clamp_min_(input: Tensor, min: Any) -> Tensor:
    return clamp_(input, min, None)


def clamp_max(input: Tensor, max: Any) -> Tensor:
    return clamp(input, None, max)


def clamp_max_(input: Tensor, max: Any) -> Tensor:
    return clamp_(input, None, max)


# ----------------------------------------------------------------------------- lerp, pow
# BinaryOps.cpp / Lerp.cpp / Pow.cpp: a Scalar weight, base or exponent is cast to the
# tensor's dtype (float32/float64: also the op math type), so the same op with the value as
# a 0-d tensor of that dtype computes the same numbers.  Half and bfloat16 compute in
# float32 with a float32 Scalar: those keep torch's op (specialized, warned).
def _exact_dtype(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.dtype in (torch.float32, torch.float64)


def lerp(input: Tensor, end: Tensor, weight: Any) -> Tensor:
    return torch.lerp(input, end, _bound(input, weight) if _exact_dtype(input) else weight)


def lerp_(input: Tensor, end: Tensor, weight: Any) -> Tensor:
    return input.lerp_(end, _bound(input, weight) if _exact_dtype(input) else weight)


def pow(input: Any, exponent: Any) -> Tensor:  # noqa: A001 - torch.pow's name
    # Adam's bias correction `beta1 ** step`: pow(Scalar, Tensor).  Same values; the
    # gradient with respect to the exponent multiplies by log(base), which ATen takes of
    # the double Scalar: a differentiable exponent keeps torch's op (specialized, warned).
    if (
        not isinstance(input, torch.Tensor)
        and _exact_dtype(exponent)
        and not exponent.requires_grad
    ):
        return torch.pow(_scalar_like(exponent, input), exponent)
    return torch.pow(input, exponent)  # a tensor base: Tensor.pow's rule (_methods)


#: the clamp decompositions: the hooks call clamp_gradient_at_bounds() before tracing one
CLAMPS = frozenset({clamp, clamp_, clamp_min, clamp_min_, clamp_max, clamp_max_})


#: Tensor method -> the function traced in its place (self first), see _methods
METHOD_DECOMPOSITIONS: dict[str, Any] = {
    "clamp": clamp,
    "clip": clamp,
    "clamp_": clamp_,
    "clip_": clamp_,
    "clamp_min": clamp_min,
    "clamp_min_": clamp_min_,
    "clamp_max": clamp_max,
    "clamp_max_": clamp_max_,
    "bernoulli": bernoulli,
    "bernoulli_": bernoulli_,
    "lerp": lerp,
    "lerp_": lerp_,
    "__rpow__": lambda exponent, base: pow(base, exponent),
}


# ----------------------------------------------------------------------------- activations
# aten/src/ATen/native/cpu/Activation.cpp: element-wise formulas. Most kernels compute half
# and bfloat16 in float32 with the Scalar cast to float32 and round once (_upcast/_like);
# hardshrink and hardtanh (clamp) cast the Scalar to the input's dtype instead.
def leaky_relu(input: Tensor, negative_slope: Any = 0.01) -> Tensor:
    # leaky_relu_kernel: x > 0 ? x : x * negval
    x = _upcast(input)
    return _like(torch.where(x > 0, x, x * negative_slope), input)


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
    # elu_kernel: x <= 0 ? expm1(x * negiptcoef) * negcoef : x * poscoef, with
    # negcoef = alpha * scale multiplied in the op math type
    x = _upcast(input)
    negcoef = _scalar_like(x, alpha) * _scalar_like(x, scale)
    negative_part = x <= 0
    # the exponential of the negative part only: a large positive input would make an inf
    # there, whose gradient (inf * 0) is nan although torch.where does not select it
    safe = torch.where(negative_part, x, 0)
    negative = torch.expm1(safe * input_scale) * negcoef
    return _like(torch.where(negative_part, negative, x * scale), input)


_close(
    "elu",
    1e-6,
    1e-7,
    "outputs exact; gradients: autograd multiplies negcoef, exp(x * input_scale) and "
    "input_scale in another order than ATen's elu_backward",
)


def celu(input: Tensor, alpha: Any = 1.0) -> Tensor:
    return elu(input, alpha, 1.0, 1.0 / alpha)


_close(
    "celu",
    1e-6,
    1e-7,
    "as elu (ATen's celu is elu with input_scale = 1/alpha; its derivative takes 1/alpha "
    "through float32)",
)


def softplus(input: Tensor, beta: Any = 1.0, threshold: Any = 20.0) -> Tensor:
    # softplus_kernel: x * beta > threshold ? x : log1p(exp(x * beta)) / beta
    x = _upcast(input)
    scaled = x * beta
    linear = scaled > threshold
    # exp only below the threshold: above it exp(x * beta) can overflow to inf, whose
    # gradient (inf / inf) is nan although torch.where does not select it
    safe = torch.where(linear, 0, scaled)
    return _like(torch.where(linear, x, torch.log1p(torch.exp(safe)) / beta), input)


_close(
    "softplus",
    1e-6,
    1e-7,
    "ATen's vectorized kernel evaluates log1p(exp(x * beta)) its own way; its backward "
    "computes z / (z + 1), autograd the chain of exp and log1p",
)


def hardtanh(input: Tensor, min_val: Any = -1.0, max_val: Any = 1.0) -> Tensor:
    # Activation.cpp, hardtanh_out: clamp(x, min_val, max_val) with the bounds cast to the
    # input's dtype (max_val wins if min_val > max_val); hardtanh_backward_kernel passes the
    # gradient only where min_val < x < max_val, compared in the op math type. Inside that
    # range the clamp is x itself; outside it the clamped value is a constant of the graph,
    # so the gradient is 0 there, at the bounds too (ReLU6 at 0), as in ATen.
    x = _upcast(input)
    inside = (x > min_val) & (x < max_val)
    low, high = _scalar_like(input, min_val), _scalar_like(input, max_val)
    return torch.where(inside, input, torch.clamp(input.detach(), low, high))


def threshold(input: Tensor, threshold: Any, value: Any) -> Tensor:
    # threshold_kernel: x <= threshold ? value : x, compared in the op math type
    return torch.where(_upcast(input) <= threshold, _scalar_like(input, value), input)


def hardshrink(input: Tensor, lambd: Any = 0.5) -> Tensor:
    # hardshrink_kernel: -lambd <= x <= lambd ? 0 : x, lambd cast to the input's dtype
    lam = _scalar_like(input, lambd)
    return torch.where((input >= -lam) & (input <= lam), torch.zeros_like(input), input)


def softshrink_rounds_lambd() -> bool:
    """Whether the installed softshrink_kernel casts lambd to a half/bfloat16 input's dtype
    before computing in float32 (torch 2.14 and later do; 2.13 computes with the float).
    Asked of the kernel once, by :func:`probe_kernels` before the first decomposition is
    traced: bfloat16 rounds 0.3 up to 0.30078125."""
    global SOFTSHRINK_ROUNDS_LAMBD
    if SOFTSHRINK_ROUNDS_LAMBD is None:
        x = torch.tensor([0.30078125], dtype=torch.bfloat16)
        SOFTSHRINK_ROUNDS_LAMBD = bool(torch.nn.functional.softshrink(x, 0.3).item() == 0.0)
    return SOFTSHRINK_ROUNDS_LAMBD


SOFTSHRINK_ROUNDS_LAMBD: bool | None = None


def softshrink(input: Tensor, lambd: Any = 0.5) -> Tensor:
    # softshrink_kernel: x > lambd ? x - lambd : (x < -lambd ? x + lambd : x * 0), in the
    # op math type (x * 0 keeps nan and the sign of zero, as ATen does)
    x = _upcast(input)
    if x is not input and SOFTSHRINK_ROUNDS_LAMBD:  # set by probe_kernels() before tracing
        lambd = _scalar_like(input, lambd).float()
    out = _like(torch.where(x > lambd, x - lambd, torch.where(x < -lambd, x + lambd, x * 0)), input)
    if x is not input:
        # shrink_backward_kernel compares in the input's dtype (lambd cast to it): for half
        # and bfloat16 an x equal to that rounded lambd gets no gradient
        lam = _scalar_like(input, lambd)
        out = torch.where((input < -lam) | (input > lam), out, out.detach())
    return out


# ----------------------------------------------------------------------------- norms
_NORM_WHY = (
    "forward: ATen's fused kernel folds mean, rstd, weight and bias differently (<= 1e-6 "
    "relative); gradients: autograd differentiates the decomposition, ATen uses its fused "
    "backward formula, a few float32 ulp apart on large, cancelling sums: torch's float32 "
    "default"
)


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


_close(
    "layer_norm",
    1.3e-6,
    1e-5,
    _NORM_WHY,
)


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


_close(
    "group_norm",
    1.3e-6,
    1e-5,
    _NORM_WHY,
)


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


_close(
    "batch_norm",
    1.3e-6,
    1e-5,
    _NORM_WHY + "; running statistics: ATen updates them in float32 and double",
)


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


_close("instance_norm", 1.3e-6, 1e-5, "as batch_norm (ATen's instance_norm is batch_norm)")


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


_close("cross_entropy_loss", 1e-6, 1e-7, "the smoothing term is summed in a different order")


def huber_loss(input: Tensor, target: Tensor, reduction: int = 1, delta: Any = 1.0) -> Tensor:
    # aten/src/ATen/native/cpu/PointwiseOpsKernel.cpp, huber_kernel
    _check(delta > 0, "huber_loss does not support non-positive values for delta.")
    z = (input - target).abs()
    loss = torch.where(z < delta, z * z * 0.5, (z - delta * 0.5) * delta)
    return _reduce(loss, reduction)


_close(
    "huber_loss",
    1e-6,
    0.0,
    "outputs exact; gradients: ATen's backward kernel scales by norm = 1/N, autograd of "
    "mean() divides by N (a few ulp)",
)


def smooth_l1_loss(input: Tensor, target: Tensor, reduction: int = 1, beta: Any = 1.0) -> Tensor:
    # aten/src/ATen/native/Loss.cpp and cpu/PointwiseOpsKernel.cpp, smooth_l1_kernel
    _check(beta >= 0, "smooth_l1_loss does not support negative values for beta.")
    z = (input - target).abs()
    if beta == 0:
        return _reduce(z, reduction)
    loss = torch.where(z < beta, z * z * 0.5 / beta, z - beta * 0.5)
    return _reduce(loss, reduction)


_close("smooth_l1_loss", 1e-6, 0.0, "as huber_loss")


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
    _check(p == 1 or p == 2, "only p == 1 and p == 2 supported")
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
    # innermost dimension of the broadcast result (at::norm is linalg_vector_norm). A marked
    # p still specializes: linalg_vector_norm's `ord` is a Scalar the tensorify pass cannot
    # lower.
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
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p, True)
    return _like(attn @ v, query)


_close(
    "scaled_dot_product_attention",
    1e-5,
    1e-6,
    "eager uses a fused (flash) kernel on CPU: another summation order in softmax and matmul",
)


# Tensor.pow(dynamic float) is traced in _methods as torch.pow(x, <0-d tensor exponent>)
_close(
    "pow",
    1e-6,
    1e-6,
    "`torch.pow` with a 0-d tensor exponent: ATen's Scalar-exponent kernel rounds some "
    "results one float32 ulp differently (measured: |Δ| ≤ 4.8e-7)",
)


def _table() -> dict[Any, Any]:
    nn = torch._C._nn
    table: dict[Any, Any] = {
        torch.clamp: clamp,
        torch.clip: clamp,
        torch.clamp_: clamp_,
        torch.clip_: clamp_,
        torch.clamp_min: clamp_min,
        torch.clamp_min_: clamp_min_,
        torch.clamp_max: clamp_max,
        torch.clamp_max_: clamp_max_,
        torch.bernoulli: bernoulli,
        torch.lerp: lerp,
        torch.pow: pow,
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
        torch.pairwise_distance: pairwise_distance,
        torch.poisson_nll_loss: poisson_nll_loss,
        nn.scaled_dot_product_attention: scaled_dot_product_attention,
    }
    return table


#: torch op -> the function traced in its place when a dynamic float reaches it.
DECOMPOSITIONS: dict[Any, Any] = _table()
