"""Scalar forms: what inductor traces for an ATen op that receives a marked float as a ``Scalar``.

On inductor a marked float must reach every kernel as a tensor.  Torch's float-tensorify
pass does that for a float that is a positional operand of ``mul``/``add``/``sub``/``div``/
``pow`` or a comparison, and specializes it anywhere else: ``_foreach_add(alpha=-lr)``
(SGD), ``prims.fma(a, 1 - beta2, b)`` (Adam's ``addcmul_``), ``pow.Scalar(beta1, step)``,
``clamp(min=...)``, ``full(size, value)``.  Each op of :data:`FORMS` has a *form*: the
same computation with the float given as a 0-d tensor operand, written with the ATen ops
stock inductor lowers the op itself to, in the same order (the comments name the lowering
in ``torch/_inductor/lowering.py``):

* an overload that takes the argument as a Tensor (``clamp`` -> ``clamp.Tensor``,
  ``_foreach_mul.Scalar`` -> ``_foreach_mul.Tensor``);
* ``alpha`` folded into the other operand (``add(a, b, alpha=s)`` -> ``add(a, mul(b, s))``,
  inductor's ``make_pointwise`` does the same with a constant ``alpha``);
* the prims inductor lowers as they are (``prims.fma``), which take a tensor anywhere;
* a factory as ones times the value (``full(size, s)`` -> ``mul(full(size, 1.0), s)``).

A form is a function of the op's own parameters, with ``ops`` the op namespace it calls
(``torch.ops`` when run eagerly, the bridge's graph builder when it rewrites a graph) and
each of the form's ``arguments`` that is given a 0-d tensor (:func:`with_tensors`: the
marked float, and a plain number beside it, ``clamp(x, min=s, max=1.0)``).  Where the op
takes another path for some values (``pow(x, 2.0)`` squares), the form compiles those
values as stock does, a predicate guard making each one more path (``special``).
Whether inductor may use a form for a dtype and ``requires_grad`` is the inductor column
of the exactness matrix (``_admission``): the form no further from eager than stock
inductor with the value as a constant, on every sampled value.  Everything else is
specialized as stock inductor specializes it.

Plain torch only; nothing here is registered or run at import.

Examples:
    >>> import torch
    >>> form = FORMS["aten::add.Tensor"]
    >>> a, b = torch.ones(2), torch.full((2,), 2.0)
    >>> form.apply(torch.ops, a, b, alpha=torch.tensor(0.5))
    tensor([2., 2.])
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CALLABLES",
    "FORMS",
    "ScalarForm",
    "computation_dtype",
    "form_for",
    "slots",
    "traced",
    "with_tensors",
]


@dataclass(frozen=True)
class ScalarForm:
    """An ATen overload with ``Scalar`` arguments, and what inductor traces instead."""

    #: the overload as its schema names it: ``"aten::_foreach_add.List"``
    op: str
    #: the ``Scalar`` parameters a marked float may reach
    arguments: tuple[str, ...]
    #: the form: called as ``fn(ops, *args, **kwargs)`` with the op's own arguments, each
    #: moved argument a 0-d tensor (its value in the op's computation dtype)
    fn: Callable[..., Any]
    #: why it computes what the op computes, in a few words (the docs' table)
    why: str
    #: argument -> the values at which the op's own kernels take another path (ATen's
    #: ``pow(x, 2)`` is ``x * x``): there the op is compiled with the value itself, a
    #: predicate guard on it (``Eq(e, 2.0)``) making it one more path, never one per value
    special: tuple[tuple[str, tuple[float, ...]], ...] = ()
    #: traced by Dynamo in the call's place with or without gradients (else only with
    #: them): inductor's decomposition of the op reads the value as a number before any
    #: graph pass could rewrite it (torch 2.14's ``_foreach_lerp.Scalar`` makes it a
    #: constant tensor)
    dynamo: bool = False

    def special_values(self, argument: str) -> tuple[float, ...]:
        """The values of ``argument`` at which the op takes another path."""
        return next((values for name, values in self.special if name == argument), ())

    def apply(self, ops: Any, *args: Any, **kwargs: Any) -> Any:
        """The form on ``args``/``kwargs`` (moved arguments as 0-d tensors)."""
        return self.fn(ops, *args, **kwargs)


def _overload(name: str) -> Callable[..., Any]:
    """A form that calls the overload ``"aten::clamp.Tensor"`` with the same arguments."""
    namespace, _, rest = name.partition("::")
    packet, _, overload = rest.partition(".")

    def call(ops: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(getattr(getattr(ops, namespace), packet), overload or "default")(
            *args, **kwargs
        )

    return call


# lowering.py make_pointwise(allow_alpha=True): `inputs[-1] = mul(inputs[-1], alpha)`
def _add(ops: Any, self: Any, other: Any, *, alpha: Any = 1) -> Any:
    return ops.aten.add.Tensor(self, ops.aten.mul.Tensor(other, alpha))


def _sub(ops: Any, self: Any, other: Any, *, alpha: Any = 1) -> Any:
    return ops.aten.sub.Tensor(self, ops.aten.mul.Tensor(other, alpha))


# register_foreach_pointwise(aten._foreach_add.List, add, allow_alpha=True): per tensor
# add(self_i, other_i, alpha) as above
def _foreach_add(ops: Any, self: Any, other: Any, *, alpha: Any = 1) -> Any:
    return ops.aten._foreach_add.List(self, ops.aten._foreach_mul.Tensor(other, alpha))


def _scaled(ops: Any, other: Any, alpha: Any) -> Any:
    """``other * alpha``, or ``other`` itself where alpha is the default 1."""
    return other if isinstance(alpha, int) and alpha == 1 else ops.aten.mul.Tensor(other, alpha)


# add.Scalar(self, other, alpha): ATen wraps `other` as a 0-d tensor and calls add.Tensor
def _add_scalar(ops: Any, self: Any, other: Any, alpha: Any = 1) -> Any:
    return ops.aten.add.Tensor(self, _scaled(ops, other, alpha))


def _sub_scalar(ops: Any, self: Any, other: Any, alpha: Any = 1) -> Any:
    return ops.aten.sub.Tensor(self, _scaled(ops, other, alpha))


# rsub.Scalar(self, other, alpha) = other - alpha * self
def _rsub_scalar(ops: Any, self: Any, other: Any, alpha: Any = 1) -> Any:
    return ops.aten.sub.Tensor(other, _scaled(ops, self, alpha))


def _foreach_sub(ops: Any, self: Any, other: Any, *, alpha: Any = 1) -> Any:
    return ops.aten._foreach_sub.List(self, ops.aten._foreach_mul.Tensor(other, alpha))


# lowering.py addcmul (CPU): add(self, mul(value, mul(tensor1, tensor2)))
def _foreach_addcmul(ops: Any, self: Any, tensor1: Any, tensor2: Any, value: Any = 1) -> Any:
    product = ops.aten._foreach_mul.List(tensor1, tensor2)
    return ops.aten._foreach_add.List(self, ops.aten._foreach_mul.Tensor(product, value))


# lowering.py addcdiv (CPU): add(self, mul(value, truediv(tensor1, tensor2)))
def _foreach_addcdiv(ops: Any, self: Any, tensor1: Any, tensor2: Any, value: Any = 1) -> Any:
    quotient = ops.aten._foreach_div.List(tensor1, tensor2)
    return ops.aten._foreach_add.List(self, ops.aten._foreach_mul.Tensor(quotient, value))


def _addcmul(ops: Any, self: Any, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Any:
    product = ops.aten.mul.Tensor(tensor1, tensor2)
    return ops.aten.add.Tensor(self, ops.aten.mul.Tensor(product, value))


def _addcdiv(ops: Any, self: Any, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Any:
    quotient = ops.aten.div.Tensor(tensor1, tensor2)
    return ops.aten.add.Tensor(self, ops.aten.mul.Tensor(quotient, value))


# decomposition.py _foreach_lerp_scalar (torch 2.14): per tensor fma(w, end - start, start),
# or fma(-(1 - w), end - start, end) where |w| >= 0.5; _lerp_tensor is that formula with
# the side chosen per value by `where` instead of by the number
def _foreach_lerp(ops: Any, self: Any, tensors1: Any, weight: Any) -> Any:
    return [ops.aten.lerp.Tensor(s, e, weight) for s, e in zip(self, tensors1, strict=True)]


# register_foreach_pointwise(aten._foreach_pow.ScalarAndTensor, pow): pow(self, e_i) each
def _foreach_pow_base(ops: Any, self: Any, exponent: Any) -> Any:
    return [ops.aten.pow.Tensor_Tensor(self, e) for e in exponent]


# lowering.py full: a constant of the dtype everywhere; ones times the 0-d value is that
def _full(
    ops: Any,
    size: Any,
    fill_value: Any,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    pin_memory: Any = None,
) -> Any:
    ones = ops.aten.full.default(
        size, 1.0, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory
    )
    return ops.aten.mul.Tensor(ones, fill_value)


_TWIN = "the overload that takes the value as a Tensor"
#: exponents ATen's pow(Tensor, Scalar) computes otherwise (Pow.cpp: 0 fills ones, 1
#: copies; cpu/PowKernel.cpp: 2 squares, 3 cubes, 0.5 sqrt, -0.5 rsqrt, -1 reciprocal,
#: -2 reciprocal of the square), which inductor's pow lowering also special-cases
_POW_EXPONENTS = (0.0, 1.0, 2.0, 3.0, 0.5, -0.5, -1.0, -2.0)
_ALPHA = "alpha folded into the other operand, as inductor's lowering does"
_COMPOUND = "the arithmetic inductor's lowering of the op performs, in its order"


def _twin(op: str, arguments: tuple[str, ...], overload: str, **more: Any) -> ScalarForm:
    """A form that calls ``overload``, the op's twin that takes the value as a Tensor."""
    return ScalarForm(op, arguments, _overload(overload), _TWIN, **more)


#: ATen overload (as its schema names it) -> its form
FORMS: dict[str, ScalarForm] = {
    form.op: form
    for form in (
        _twin("aten::clamp", ("min", "max"), "aten::clamp.Tensor"),
        _twin("aten::clamp_min", ("min",), "aten::clamp_min.Tensor"),
        _twin("aten::clamp_max", ("max",), "aten::clamp_max.Tensor"),
        _twin("aten::lerp.Scalar", ("weight",), "aten::lerp.Tensor"),
        _twin(
            "aten::pow.Tensor_Scalar",
            ("exponent",),
            "aten::pow.Tensor_Tensor",
            special=(("exponent", _POW_EXPONENTS),),
        ),
        _twin("aten::pow.Scalar", ("self",), "aten::pow.Tensor_Tensor"),
        _twin("aten::fill.Scalar", ("value",), "aten::fill.Tensor"),
        _twin("aten::masked_fill.Scalar", ("value",), "aten::masked_fill.Tensor"),
        _twin("aten::where.ScalarOther", ("other",), "aten::where.self"),
        _twin("aten::_foreach_mul.Scalar", ("scalar",), "aten::_foreach_mul.Tensor"),
        _twin("aten::_foreach_div.Scalar", ("scalar",), "aten::_foreach_div.Tensor"),
        _twin("aten::_foreach_add.Scalar", ("scalar",), "aten::_foreach_add.Tensor"),
        _twin("aten::mul.Scalar", ("other",), "aten::mul.Tensor"),
        _twin("aten::div.Scalar", ("other",), "aten::div.Tensor"),
        ScalarForm("aten::add.Scalar", ("other", "alpha"), _add_scalar, _ALPHA),
        ScalarForm("aten::sub.Scalar", ("other", "alpha"), _sub_scalar, _ALPHA),
        ScalarForm("aten::rsub.Scalar", ("other", "alpha"), _rsub_scalar, _ALPHA),
        ScalarForm("aten::add.Tensor", ("alpha",), _add, _ALPHA),
        ScalarForm("aten::sub.Tensor", ("alpha",), _sub, _ALPHA),
        ScalarForm("aten::_foreach_add.List", ("alpha",), _foreach_add, _ALPHA),
        ScalarForm("aten::_foreach_sub.List", ("alpha",), _foreach_sub, _ALPHA),
        ScalarForm("aten::addcmul", ("value",), _addcmul, _COMPOUND),
        ScalarForm("aten::addcdiv", ("value",), _addcdiv, _COMPOUND),
        ScalarForm("aten::_foreach_addcmul.Scalar", ("value",), _foreach_addcmul, _COMPOUND),
        ScalarForm("aten::_foreach_addcdiv.Scalar", ("value",), _foreach_addcdiv, _COMPOUND),
        ScalarForm(
            "aten::_foreach_lerp.Scalar",
            ("weight",),
            _foreach_lerp,
            "lerp.Tensor per tensor: the decomposition's formula, its side chosen by where",
            dynamo=True,
        ),
        ScalarForm("aten::_foreach_pow.ScalarAndTensor", ("self",), _foreach_pow_base, _COMPOUND),
        ScalarForm(
            "prims::fma", ("a", "b", "c"), _overload("prims::fma"), "inductor lowers fma itself"
        ),
        ScalarForm("aten::full", ("fill_value",), _full, "ones times the value: x * 1.0 == x"),
    )
}


def computation_dtype(dtype: Any) -> Any:
    """The dtype ATen's kernels compute ``dtype`` in, and hold a Scalar argument in:
    float32 for half and bfloat16, the dtype itself otherwise (``opmath_type``)."""
    import torch

    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def form_for(target: Any) -> ScalarForm | None:
    """The form of an FX node's target (an ``OpOverload``), if it has one."""
    schema = getattr(target, "_schema", None)
    if schema is None:
        return None
    name = schema.name + (f".{schema.overload_name}" if schema.overload_name else "")
    return FORMS.get(name)


def slots(target: Any, args: Any, kwargs: Any) -> dict[str, tuple[str, Any]]:
    """Where each argument of a call of the overload ``target`` is: parameter name ->
    ``("args", index)`` or ``("kwargs", name)`` (parameters left to their defaults absent)."""
    names = [a.name for a in target._schema.arguments]
    found: dict[str, tuple[str, Any]] = {n: ("args", i) for i, n in enumerate(names[: len(args)])}
    found.update({n: ("kwargs", n) for n in kwargs})
    return found


def with_tensors(
    form: ScalarForm,
    target: Any,
    args: Any,
    kwargs: Any,
    as_tensor: Callable[[Any], Any],
    is_scalar: Callable[[Any], bool] = lambda v: isinstance(v, (int, float)),
) -> tuple[list[Any], dict[str, Any]]:
    """The call's arguments with each of ``form.arguments`` that holds a scalar
    (``is_scalar``) replaced by ``as_tensor(value)``, ready for :meth:`ScalarForm.apply`."""
    args, kwargs = list(args), dict(kwargs)
    for name, (kind, at) in slots(target, args, kwargs).items():
        if name not in form.arguments:
            continue
        if kind == "args" and is_scalar(args[at]):
            args[at] = as_tensor(args[at])
        elif kind == "kwargs" and is_scalar(kwargs[at]):
            kwargs[at] = as_tensor(kwargs[at])
    return args, kwargs


_POW = ("aten::pow.Tensor_Scalar", ("self", "exponent"))
_LERP = ("aten::lerp.Scalar", ("self", "end", "weight"))
_FOREACH_LERP = ("aten::_foreach_lerp.Scalar", ("self", "tensors1", "weight"))
_CLAMP = ("aten::clamp", ("self", "min", "max"))

#: torch callables (as the bridge names them) -> the ATen overloads with a form they reach
#: with a float, each with its parameters in the callable's order.  With gradients,
#: AOTAutograd traces an op's autograd formula, which can read a ``Scalar`` as a number
#: (``lerp``'s ``1 - weight.toDouble()``, ``pow``'s ``exponent - 1``) and so force it before
#: any graph pass; there the bridge traces the form in the call's place (:func:`traced`),
#: so the formula is the tensor overload's.  A form marked ``dynamo`` is traced so without
#: gradients too, where Dynamo would put the op in its graph with the float.
CALLABLES: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    **dict.fromkeys(
        ("torch.pow", "Tensor.pow", "Tensor.__pow__", "Tensor.pow_", "Tensor.__ipow__"),
        (_POW, ("aten::pow.Scalar", ("self", "exponent"))),
    ),
    "Tensor.__rpow__": (("aten::pow.Scalar", ("exponent", "self")),),
    **dict.fromkeys(("torch.lerp", "Tensor.lerp", "Tensor.lerp_"), (_LERP,)),
    **dict.fromkeys(("torch._foreach_lerp", "torch._foreach_lerp_"), (_FOREACH_LERP,)),
    **dict.fromkeys(
        ("torch.clamp", "torch.clip", "Tensor.clamp", "Tensor.clip", "Tensor.clamp_"), (_CLAMP,)
    ),
    **dict.fromkeys(
        ("torch.clamp_min", "Tensor.clamp_min", "Tensor.clamp_min_"),
        (("aten::clamp_min", ("self", "min")),),
    ),
    **dict.fromkeys(
        ("torch.clamp_max", "Tensor.clamp_max", "Tensor.clamp_max_"),
        (("aten::clamp_max", ("self", "max")),),
    ),
    **dict.fromkeys(
        ("torch.addcmul", "Tensor.addcmul", "Tensor.addcmul_"),
        (("aten::addcmul", ("self", "tensor1", "tensor2", "value")),),
    ),
    **dict.fromkeys(
        ("torch.addcdiv", "Tensor.addcdiv", "Tensor.addcdiv_"),
        (("aten::addcdiv", ("self", "tensor1", "tensor2", "value")),),
    ),
}


def traced(
    target: Any,
    fn: Callable[..., Any],
    tensor_arguments: tuple[str, ...],
    special: tuple[tuple[str, tuple[float, ...]], ...],
    names: tuple[str, ...],
    positional: int,
    inplace: bool,
    *values: Any,
) -> Any:
    """What Dynamo traces for a call of the overload ``target`` (``values`` its arguments in
    schema order, named ``names``, the first ``positional`` of them positional) whose form
    is ``fn``: at a special value of a marked float (``special``: argument -> values), the
    op itself with that value (a predicate guard each); otherwise ``fn`` with each number
    among ``tensor_arguments`` a 0-d tensor of the computation dtype of the call's first
    tensor.  ``inplace``: the result is copied into the first argument, which is returned
    (``lerp_``; a foreach op's list: each of its tensors, None returned as ATen does)."""
    import torch

    arguments = dict(zip(names, values, strict=True))
    flat = [t for v in values for t in (v if isinstance(v, (list, tuple)) else [v])]
    like = next(v for v in flat if isinstance(v, torch.Tensor))
    pinned = dict(arguments)
    hits = 0
    for name, candidates in special:
        for candidate in candidates:
            if arguments[name] == candidate:  # a predicate guard
                pinned[name] = candidate
                hits += 1
                break
    if special and hits == len(special):
        chosen, call = pinned, target
    else:
        chosen, call = dict(arguments), None
        compute = computation_dtype(like.dtype)
        for name in tensor_arguments:
            value = chosen.get(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                chosen[name] = torch.scalar_tensor(1.0, dtype=compute, device=like.device) * value
    args = [chosen[n] for n in names[:positional]]
    kwargs = {n: chosen[n] for n in names[positional:]}
    out = call(*args, **kwargs) if call is not None else fn(torch.ops, *args, **kwargs)
    if inplace and isinstance(values[0], (list, tuple)):
        for tensor, result in zip(values[0], out, strict=True):
            tensor.copy_(result)
        return None
    if inplace:
        return like.copy_(out)
    return out
