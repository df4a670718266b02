"""Tensor methods and foreach ops whose Scalar argument would specialize a dynamic float.

``param.add_(grad, alpha=-lr)`` (SGD), ``p.addcdiv_(m, d, value=-step)``,
``torch._foreach_add_(params, grads, alpha=-lr)``: ATen's ``alpha``/``value`` Scalars are
not lowered by the float-tensorify pass, which restarts analysis with the value
specialized (one compile per learning rate).  When the Scalar is a dynscalar float, the
bridge traces the same arithmetic with the value as a plain operand of ``mul``/``div``,
which the pass turns into a graph input:

* ``t.add(o, alpha=a)`` -> ``t.add(o * a)`` (``sub`` likewise), in-place forms kept;
* ``t.addcmul(t1, t2, value=v)`` -> ``t.add(t1 * v * t2)``;
* ``t.addcdiv(t1, t2, value=v)`` -> ``t.add(t1 * v / t2)``;
* ``t.pow(p)`` -> ``torch.pow(t, <0-d tensor p>)`` (LocalResponseNorm's ``beta``, LPPool);
* ``t.clamp(lo, hi)`` (and ``clip``, ``clamp_min``/``clamp_max``, in-place forms) and
  ``t.bernoulli_(p)``: ``_nn.METHOD_DECOMPOSITIONS``;
* ``torch._foreach_add(_)(xs, ys, alpha=a)`` and ``torch._foreach_addcmul(_)/addcdiv(_)``
  with a Scalar ``value``: the same, per tensor;
* ``torch._foreach_mul(_)/div(_)(xs, s)``, ``torch._foreach_pow(s, steps)`` and
  ``torch._foreach_lerp(_)(xs, ys, w)`` (Adam's ``lr`` and ``betas``): per tensor, through
  ``_nn``'s ``pow``/``lerp`` (which keep torch's op where they cannot be exact).

ATen evaluates ``self + alpha * other`` in one kernel, which may fuse the multiply-add
(FMA): results can differ from eager in the last bit (``TOLERANCES`` in ``_nn``: 1e-6).
"""

from __future__ import annotations

import operator
from typing import Any

import torch

from . import _nn
from ._nn import METHOD_DECOMPOSITIONS, probe_kernels
from ._state import is_dynamic_float

__all__ = ["FOREACH_DECOMPOSITIONS", "tensor_method_hook"]

# method -> (keyword of the Scalar, how it combines its tensor operands)
_METHODS: dict[str, tuple[str, str]] = {
    "add": ("alpha", "scale"),
    "add_": ("alpha", "scale"),
    "sub": ("alpha", "scale"),
    "sub_": ("alpha", "scale"),
    "addcmul": ("value", "mul"),
    "addcmul_": ("value", "mul"),
    "addcdiv": ("value", "div"),
    "addcdiv_": ("value", "div"),
}


def tensor_method_hook(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Around ``TensorVariable.call_method(tx, name, args, kwargs)``."""

    def split(tx: Any, name: str, args: Any, kwargs: Any) -> tuple[Any, str, Any, Any]:
        return tx, name, args, kwargs

    tx, name, call_args, call_kwargs = split(*args, **kwargs)
    replacement = METHOD_DECOMPOSITIONS.get(name)
    if replacement is not None and any(
        is_dynamic_float(tx, a) for a in (*call_args, *call_kwargs.values())
    ):
        # `x.clamp(1 - eps, 1 + eps)`, `x.new_empty(s).bernoulli_(keep)` (timm's DropPath):
        # the float would be forced to a constant; trace _nn's decomposition instead
        from torch._dynamo.variables.functions import UserFunctionVariable

        probe_kernels()  # asked of the kernels once, outside the trace
        return tx.inline_user_function_return(
            UserFunctionVariable(replacement), [instance, *call_args], dict(call_kwargs)
        )
    if name in ("pow", "pow_") and call_args and is_dynamic_float(tx, call_args[0]):
        # `x.pow(p)`: ATen's Tensor_Scalar overload is not lowered by the tensorify pass;
        # the Tensor_Tensor one (the exponent as a 0-d tensor of x's dtype) is
        from torch._dynamo.variables.functions import UserFunctionVariable

        exponent: Any = _tensor_exponent_ if name == "pow_" else _tensor_exponent
        return tx.inline_user_function_return(
            UserFunctionVariable(exponent), [instance, call_args[0]], {}
        )
    rule = _METHODS.get(name)
    if rule is None:
        return wrapped(*args, **kwargs)
    keyword, combine = rule
    positional = 1 if combine == "scale" else 2  # the Scalar may also come positionally
    scalar = call_kwargs.get(keyword)
    if scalar is None and len(call_args) > positional:
        scalar = call_args[positional]
    if scalar is None or not is_dynamic_float(tx, scalar):
        return wrapped(*args, **kwargs)
    from torch._dynamo.variables.builtin import BuiltinVariable

    def apply(op: Any, left: Any, right: Any) -> Any:
        return BuiltinVariable(op).call_function(tx, [left, right], {})

    if combine == "scale":
        operand = apply(operator.mul, call_args[0], scalar)
    else:
        product = apply(operator.mul, call_args[0], scalar)
        divide = operator.truediv if combine == "div" else operator.mul
        operand = apply(divide, product, call_args[1])
    plain = name[:3] + ("_" if name.endswith("_") else "")  # add/add_/sub/sub_
    return wrapped(tx, plain, [operand], {})


def _tensor_exponent(x: Any, exponent: Any) -> Any:
    return torch.pow(x, x.new_zeros(()) + exponent)


def _tensor_exponent_(x: Any, exponent: Any) -> Any:
    return x.pow_(x.new_zeros(()) + exponent)


# ----------------------------------------------------------------------------- foreach
def _each(other: Any, count: int) -> list[Any]:
    """A list operand as is; a Scalar or a single tensor, once per tensor of the list."""
    if isinstance(other, (list, tuple)):
        return list(other)
    return [other] * count


def _foreach_add(self: Any, other: Any, alpha: Any = 1) -> Any:
    return [s + o * alpha for s, o in zip(self, _each(other, len(self)), strict=True)]


def _foreach_add_(self: Any, other: Any, alpha: Any = 1) -> None:
    for s, o in zip(self, _each(other, len(self)), strict=True):
        s.add_(o * alpha)


def _foreach_addcmul(self: Any, tensor1: Any, tensor2: Any, value: Any = 1) -> Any:
    values = _each(value, len(self))
    return [s + a * v * b for s, a, b, v in zip(self, tensor1, tensor2, values, strict=True)]


def _foreach_addcmul_(self: Any, tensor1: Any, tensor2: Any, value: Any = 1) -> None:
    for s, a, b, v in zip(self, tensor1, tensor2, _each(value, len(self)), strict=True):
        s.add_(a * v * b)


def _foreach_addcdiv(self: Any, tensor1: Any, tensor2: Any, value: Any = 1) -> Any:
    values = _each(value, len(self))
    return [s + a * v / b for s, a, b, v in zip(self, tensor1, tensor2, values, strict=True)]


def _foreach_addcdiv_(self: Any, tensor1: Any, tensor2: Any, value: Any = 1) -> None:
    for s, a, b, v in zip(self, tensor1, tensor2, _each(value, len(self)), strict=True):
        s.add_(a * v / b)


def _foreach_mul(self: Any, other: Any) -> Any:
    return [s * o for s, o in zip(self, _each(other, len(self)), strict=True)]


def _foreach_mul_(self: Any, other: Any) -> None:
    for s, o in zip(self, _each(other, len(self)), strict=True):
        s.mul_(o)


def _foreach_div(self: Any, other: Any) -> Any:
    return [s / o for s, o in zip(self, _each(other, len(self)), strict=True)]


def _foreach_div_(self: Any, other: Any) -> None:
    for s, o in zip(self, _each(other, len(self)), strict=True):
        s.div_(o)


def _foreach_pow(self: Any, exponent: Any) -> Any:
    # Adam's bias corrections: torch._foreach_pow(beta1, steps), a Scalar base
    if not isinstance(self, (list, tuple)):
        return [_nn.pow(self, e) for e in exponent]
    exponents = _each(exponent, len(self))
    return [torch.pow(s, _nn._bound(s, e)) for s, e in zip(self, exponents, strict=True)]


def _foreach_lerp(self: Any, tensors1: Any, weight: Any) -> Any:
    weights = _each(weight, len(self))
    return [_nn.lerp(s, e, w) for s, e, w in zip(self, tensors1, weights, strict=True)]


def _foreach_lerp_(self: Any, tensors1: Any, weight: Any) -> None:
    for s, e, w in zip(self, tensors1, _each(weight, len(self)), strict=True):
        _nn.lerp_(s, e, w)


#: foreach op -> the per-tensor function traced in its place (see _decompositions)
FOREACH_DECOMPOSITIONS: dict[Any, Any] = {
    torch._foreach_add: _foreach_add,
    torch._foreach_add_: _foreach_add_,
    torch._foreach_addcmul: _foreach_addcmul,
    torch._foreach_addcmul_: _foreach_addcmul_,
    torch._foreach_addcdiv: _foreach_addcdiv,
    torch._foreach_addcdiv_: _foreach_addcdiv_,
    torch._foreach_mul: _foreach_mul,
    torch._foreach_mul_: _foreach_mul_,
    torch._foreach_div: _foreach_div,
    torch._foreach_div_: _foreach_div_,
    torch._foreach_pow: _foreach_pow,
    torch._foreach_lerp: _foreach_lerp,
    torch._foreach_lerp_: _foreach_lerp_,
}
