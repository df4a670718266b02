"""The generic rule: any torch call with a marked float, as one opaque custom op.

On a ``"python"`` backend a marked float reaches most ops as it is: Dynamo traces it, the
graph hands the op the Python float.  Some ops still force it, not in Dynamo but inside
torch's own C++ while AOTAutograd traces: a composite (``celu`` computes ``1 / alpha``),
or a derivative formula (``pow``'s backward takes ``log(base)``, ``lerp``'s ``1 - weight``)
- silently specializing the value, or failing the compile ("NYI log symbolic float").
:func:`op` makes any such call opaque to AOTAutograd: ``dynscalar::apply(key, tensors,
scalars)`` runs the call described by ``key`` (:class:`Template`: the callable and where
each tensor and float goes among constants) with the Python floats, eagerly; its
gradient, ``dynscalar::apply_vjp``, runs the call again under autograd and returns ATen's
own gradients.  So the numbers are eager's, by construction, for deterministic calls.

Whether a call is admitted is checked when Dynamo traces it (:func:`admitted`): the only
check dynscalar runs in a user's process, since the call is any torch call and no file
can list them ahead (the op rules' cells are data, ``_admission``).  The call is run both
ways, once per process for each kind of call, on CPU tensors like the traced ones (their
dtype and strides; their shapes too when small, else each size capped at 3), with the
traced value and special ones, comparing outputs, gradients and the random state
afterwards (``_compare``).  A random op whose
gradient needs its draws (a recompute draws again) fails that check and keeps stock's
path; so does a call eager refuses in every case (no evidence).

Examples:
    >>> t = Template("torch.mul", (("tensor", 0), ("scalar", 0)), (), "tensor")
    >>> t.key().startswith("torch.mul:")
    True
"""

from __future__ import annotations

import functools
import hashlib
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ._compare import fill, same
from ._custom import (
    as_eager,
    autocast_region,
    define,
    hint,
    laid_out,
    meta_gradients,
    outside_modes,
    required,
    requiring_grad,
    size_hint,
)
from ._table import resolve_callable

__all__ = [
    "Template",
    "admitted",
    "box_dtype",
    "boxed_op",
    "boxed_paths",
    "op",
    "precompute",
    "register",
    "remember_hints",
    "traced_number",
]

Tensor = torch.Tensor

#: key -> the call it stands for (registered when Dynamo traces the call)
_TEMPLATES: dict[str, Template] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class Template:
    """One call: ``callable_name`` (``"torch.pow"``, ``"Tensor.lerp"``) with positional and
    keyword arguments, each ``("tensor", i)``, ``("tensors", i, n)`` (a list of ``n``
    tensors from ``i``), ``("scalar", j)`` or ``("constant", value)``; ``out`` is
    ``"tensor"``, ``"tuple"`` or ``"list"``; ``autocast`` the autocast state the call was
    traced under (``"cpu:bfloat16"``, ``_custom.autocast_state``), which the call runs under
    wherever it runs: eager's kernel casts its inputs as eager's call does."""

    callable_name: str
    args: tuple[tuple[Any, ...], ...]
    kwargs: tuple[tuple[str, tuple[Any, ...]], ...]
    out: str
    autocast: str | None = None

    def key(self) -> str:
        digest = hashlib.sha1(repr(self).encode()).hexdigest()[:16]
        return f"{self.callable_name}:{digest}"

    def build(
        self, tensors: Sequence[Any], scalars: Sequence[Any]
    ) -> tuple[list[Any], dict[str, Any]]:
        def value(slot: tuple[Any, ...]) -> Any:
            kind = slot[0]
            if kind == "tensor":
                return tensors[slot[1]]
            if kind == "tensors":
                return list(tensors[slot[1] : slot[1] + slot[2]])
            if kind == "scalar":
                return scalars[slot[1]]
            return slot[1]

        return [value(a) for a in self.args], {k: value(v) for k, v in self.kwargs}

    def call(self, tensors: Sequence[Any], scalars: Sequence[Any]) -> Any:
        args, kwargs = self.build(tensors, scalars)
        target = resolve_callable(self.callable_name)
        with autocast_region(self.autocast):
            if isinstance(target, str):  # a tensor method
                return getattr(args[0], target)(*args[1:], **kwargs)
            return target(*args, **kwargs)


def register(template: Template) -> str:
    """Remember ``template`` under its key (what the graph carries); returns the key."""
    key = template.key()
    with _lock:
        _TEMPLATES.setdefault(key, template)
    return key


def _flat(out: Any) -> list[Tensor]:
    return [out] if isinstance(out, Tensor) else list(out)


def _fresh(outs: list[Tensor], inputs: Sequence[Any]) -> list[Tensor]:
    """A custom op may not return its inputs or views of them: copies where it would."""
    bases = {id(t) for t in inputs if isinstance(t, Tensor)}
    return [
        o.clone() if id(o) in bases or (o._base is not None and id(o._base) in bases) else o
        for o in outs
    ]


def _impl(
    key: str, tensors: list[Tensor], scalars: list[Any], *, requiring: list[bool] | None = None
) -> list[Tensor]:
    """The call, as eager makes it (``requiring``: the tensors that require grad there)."""
    values = _unboxed(scalars)
    out = as_eager(lambda ts: _TEMPLATES[key].call(ts, values), tensors, requiring, None)
    return _fresh(_flat(out), tensors)


def _fake(
    key: str, tensors: list[Tensor], scalars: list[Any], *, requiring: list[bool] | None = None
) -> list[Tensor]:
    values = _fake_values(key, scalars)
    out = as_eager(lambda ts: _TEMPLATES[key].call(ts, values), tensors, requiring, None)
    return _fresh(_flat(out), tensors)


def _unboxed(scalars: Sequence[Any]) -> list[int | float]:
    """The numbers as the Python ints and floats eager's call receives, where
    :func:`boxed_op` hands them over as 0-d tensors (int64 for an int, float64 for a
    float: ``.item()`` is the number itself, every double and int64 held exactly).  An int
    stays an int: ``int_tensor ** 3`` is int64 and exact, ``** 3.0`` would be float32."""
    return [_number(s.item() if isinstance(s, Tensor) else s) for s in scalars]


def _number(value: Any) -> int | float:
    """``value`` as eager sees it: a Python int stays an int, anything else is a float."""
    return value if type(value) is int else float(value)


def traced_number(value: Any) -> int | float:
    """A traced scalar's trace-time value, of its own kind (a SymInt's is an int)."""
    if isinstance(value, torch.SymInt):
        found = value.node.hint
        return _INT_HINT if found is None else int(found)
    if type(value) is int:
        return value
    return hint(value)


#: the value an unbacked SymInt's fake call computes with (no trace-time value; not 0 or
#: 1, at which ops take paths of their own)
_INT_HINT = 2


def box_dtype(value: Any) -> torch.dtype:
    """The dtype :func:`boxed_op` hands a number over in: int64 for an int (traced or
    not), float64 for a float."""
    return torch.int64 if isinstance(value, torch.SymInt) or type(value) is int else torch.float64


#: key -> the scalars' values when the boxed call was traced (its fake call's values: the
#: output's shape, dtype and strides never depend on them, or the call is no template)
_boxed_hints: dict[str, list[int | float]] = {}


def _fake_values(key: str, scalars: Sequence[Any]) -> list[int | float]:
    """The numbers a fake call computes with: a boxed call's values when it was traced
    (:func:`remember_hints`), else each traced scalar's trace-time value."""
    if scalars and isinstance(scalars[0], Tensor):
        default = [0.5 if s.is_floating_point() else _INT_HINT for s in scalars]
        return list(_boxed_hints.get(key, default))
    return [traced_number(s) for s in scalars]


def _positions(key: str, tensors: Sequence[Any], scalars: Sequence[Any]) -> list[int]:
    """Which tensors get a gradient from the call (eager's autograd gives the others
    ``None``): found on meta tensors, so it costs no data; memoized by dtypes and ranks."""
    candidates = [i for i, t in enumerate(tensors) if t.is_floating_point()]
    if not candidates:
        return []
    # empty or not: ATen returns early on empty inputs (no gradient edge)
    memo_key = (key, tuple((t.dtype, t.dim(), 0 in map(size_hint, t.shape)) for t in tensors))
    found = _defined.get(memo_key)
    if found is not None:
        return found
    template = _TEMPLATES[key]
    with outside_modes[0]():  # AOTAutograd traces the backward under its modes
        values = [traced_number(s) for s in scalars]
        found = meta_gradients(lambda meta: template.call(meta, values), tensors, candidates)
    _defined[memo_key] = found
    return found


def precompute(key: str, tensors: Sequence[Any], scalars: Sequence[Any]) -> None:
    """Find, before AOTAutograd traces the call, which tensors get a gradient (AOTAutograd
    traces gradients below autograd, where the meta run sees no autograd)."""
    _positions(key, tensors, scalars)


_defined: dict[Any, list[int]] = {}


def _needed(
    key: str, tensors: Sequence[Any], scalars: Sequence[Any], requiring: list[bool] | None
) -> list[int]:
    """The tensors a gradient is computed for: those with a gradient from the call that
    required grad in the forward (``requiring``; None: every one with a gradient)."""
    return required(_positions(key, tensors, scalars), requiring)


def _vjp_impl(
    key: str,
    grads: list[Tensor],
    tensors: list[Tensor],
    scalars: list[Any],
    *,
    requiring: list[bool] | None = None,
) -> list[Tensor]:
    positions = _needed(key, tensors, scalars, requiring)
    inputs = [t.detach() for t in tensors]
    with torch.enable_grad():
        for i, tensor in enumerate(inputs):  # as in the forward: ATen picks kernels by it
            if i in positions or (requiring is not None and requiring[i]):
                tensor.requires_grad_(True)
        outs = _flat(_TEMPLATES[key].call(inputs, _unboxed(scalars)))
        pairs = [(o, g) for o, g in zip(outs, grads, strict=True) if o.requires_grad]
        found = torch.autograd.grad(
            [o for o, _ in pairs],
            [inputs[i] for i in positions],
            [g for _, g in pairs],
            allow_unused=True,
        )
    return [
        torch.zeros_like(inputs[i]) if g is None else g
        for i, g in zip(positions, found, strict=True)
    ]


def _boxed_vjp_impl(
    key: str,
    grads: list[Tensor],
    tensors: list[Tensor],
    scalars: list[Any],
    *,
    requiring: list[bool] | None = None,
) -> list[Tensor]:
    """:func:`_vjp_impl`, each gradient with the strides its fake implementation promises
    (``empty_like``): inductor asserts them (a flash-attention backward returns transposed
    gradients); the values are copied unchanged."""
    positions = _needed(key, tensors, scalars, requiring)
    found = _vjp_impl(key, grads, tensors, scalars, requiring=requiring)
    return [laid_out(tensors[i], g) for i, g in zip(positions, found, strict=True)]


def _vjp_fake(
    key: str,
    grads: list[Tensor],
    tensors: list[Tensor],
    scalars: list[Any],
    *,
    requiring: list[bool] | None = None,
) -> list[Tensor]:
    hints = _fake_values(key, scalars)
    return [torch.empty_like(tensors[i]) for i in _needed(key, tensors, hints, requiring)]


def _setup(
    boxed: bool,
    ctx: Any,
    inputs: tuple[Any, ...],
    output: Any,
    keyword_only_inputs: dict[str, Any] | None = None,
) -> None:
    key, tensors, scalars = inputs
    ctx.key, ctx.n = key, len(tensors)
    ctx.hints = _fake_values(key, scalars) if boxed else list(scalars)
    ctx.outputs = [(o.shape, o.dtype, o.device) for o in output]
    ctx.save_for_backward(*tensors, *(scalars if boxed else ()))


def _backward(boxed: bool, ctx: Any, grads: Any) -> tuple[Any, ...]:
    """The gradient of each tensor (None where eager gives none) from the op's ``_vjp``
    custom op, ``grads`` of the outputs filled with zeros where missing."""
    saved = list(ctx.saved_tensors)
    tensors, boxes = saved[: ctx.n], saved[ctx.n :]
    upstream = [
        torch.zeros(shape, dtype=dtype, device=device) if g is None else g
        for g, (shape, dtype, device) in zip(grads, ctx.outputs, strict=True)
    ]
    vjp = _define(boxed, vjp=True)
    requiring = requiring_grad(ctx.needs_input_grad[1], len(tensors))
    found = iter(
        vjp(ctx.key, upstream, tensors, boxes if boxed else ctx.hints, requiring=requiring)
    )
    out: list[Any] = [None] * len(tensors)
    for i in _needed(ctx.key, tensors, ctx.hints, requiring):
        out[i] = next(found)
    return None, out, [None] * len(boxes) if boxed else None


def _define(boxed: bool, vjp: bool = False) -> Any:
    """``dynscalar::apply`` (``boxed``: ``apply_boxed``, each number a 0-d tensor) or its
    ``_vjp``, defined on first use (the op with its gradient)."""
    name, kind = ("apply_boxed", "Tensor") if boxed else ("apply", "Scalar")
    gradient = define(
        f"{name}_vjp",
        f"(str key, Tensor[] grads, Tensor[] tensors, {kind}[] scalars, *, "
        "bool[]? requiring=None) -> Tensor[]",
        _boxed_vjp_impl if boxed else _vjp_impl,
        _vjp_fake,
    )
    if vjp:
        return gradient
    return define(
        name,
        f"(str key, Tensor[] tensors, {kind}[] scalars, *, bool[]? requiring=None) -> Tensor[]",
        _impl,
        _fake,
        functools.partial(_backward, boxed),
        functools.partial(_setup, boxed),
    )


def op() -> Any:
    """``torch.ops.dynscalar.apply.default`` (defined on first use, with its gradient)."""
    return _define(boxed=False)


def boxed_op() -> Any:
    """``torch.ops.dynscalar.apply_boxed.default``: :func:`op` with each number a 0-d
    tensor (float64 for a float, int64 for an int: :func:`box_dtype`), for inductor.
    Inductor lowers a custom op as a call of its eager implementation (a fallback kernel)
    and a float it hands a custom op as a ``Scalar`` is specialized by its float-tensorify
    pass; a float made a 0-d tensor (``scalar_tensor(f, dtype=float64)``) is one of that
    pass's tensors.  The implementation reads the Python number back with ``.item()`` (an
    int stays an int) and makes the call :func:`op` makes: eager's kernel, bit for bit, at
    every value."""
    return _define(boxed=True)


def remember_hints(key: str, values: Sequence[int | float]) -> None:
    """The values a boxed call was traced with (its fake implementation's numbers)."""
    with _lock:
        _boxed_hints[key] = list(values)


# ----------------------------------------------------------------------------- check
_SPECIAL = (0.0, -0.0, 1.0, 0.5, math.nan, math.inf)
#: the special values sampled for an int, one beside each of :data:`_SPECIAL` (the call
#: receives an int there, as in eager)
_SPECIAL_INTS = (0, -1, 1, 2, 3, 7)


def _cases(values: Sequence[int | float]) -> list[list[int | float]]:
    """The traced values, then each special value in every position: an int's among the
    ints, a float's among the floats."""
    return [list(values)] + [
        [i if type(v) is int else f for v in values]
        for f, i in zip(_SPECIAL, _SPECIAL_INTS, strict=True)
    ]


def _kinds(values: Sequence[Any]) -> tuple[bool, ...]:
    """Which of ``values`` are ints (what an admission depends on besides the tensors)."""
    return tuple(type(v) is int for v in values)


def _sample(like: Tensor, generator: torch.Generator, small: bool) -> Tensor:
    """A real tensor like the traced ``like``: random floats (with ±0.0, NaN and ±inf among
    them), and zeros for integer and bool tensors (targets, indices and masks then stay
    valid whatever their sizes)."""
    shape = tuple(size_hint(d) for d in like.shape)
    if not small:
        shape = tuple(min(d, 3) for d in shape)
    if like.is_floating_point():
        data = fill(shape, like.dtype, generator)
    else:
        data = torch.zeros(shape, dtype=like.dtype)
    if like.dim() >= 2 and not like.is_contiguous():  # the traced tensor's layout: permuted
        order = sorted(range(like.dim()), key=lambda d: -like.stride()[d])
        data = (
            data.permute(*order).contiguous().permute(*[order.index(d) for d in range(like.dim())])
        )
    return data


_memo: dict[tuple[Any, ...], tuple[bool, str]] = {}


def admitted(
    key: str,
    tensors: Sequence[Any],
    values: Sequence[int | float],
    grad: bool,
    *,
    boxed: bool = False,
) -> tuple[bool, str]:
    """Whether the call ``key`` is exact as :func:`op` (``boxed``: as :func:`boxed_op`, whose
    gradients are laid out as their inputs, values compared bit for bit) for tensors like
    ``tensors`` (fake tensors: their dtype, strides and shapes are used) and numbers like
    ``values`` (an int is sampled as an int, a float as a float: eager's call receives
    them so)."""
    memo_key = _memo_key(key, tensors, values, grad, boxed)
    small = memo_key[4]
    found = _memo.get(memo_key)
    if found is not None:
        return found
    template = _TEMPLATES[key]
    evidence = False
    why = ""
    paths: list[float] = []
    writes = False
    with torch.random.fork_rng(devices=[]), torch.enable_grad():
        generator = torch.Generator().manual_seed(0)
        base = [_sample(t, generator, small) for t in tensors]
        cases = _cases(values)
        for case in cases:
            results: list[tuple[Any, Any, Any, Any]] = []
            for side in ("torch", "rule"):
                inputs = [t.detach().clone() for t in base]
                if grad:
                    for t in inputs:
                        if t.is_floating_point():
                            t.requires_grad_(True)
                torch.manual_seed(1)
                try:
                    if side == "torch":
                        out = template.call(inputs, case)
                    else:
                        requiring = [t.requires_grad for t in inputs] if grad else None
                        if boxed:
                            boxes = [torch.tensor(v, dtype=box_dtype(v)) for v in case]
                            out = boxed_op()(key, inputs, boxes, requiring=requiring)
                        else:
                            out = op()(key, inputs, case, requiring=requiring)
                        if template.out != "list":
                            out = out[0] if template.out == "tensor" else tuple(out)
                    gradients: Any = None
                    flat = _flat(out)
                    needing = [o for o in flat if o.requires_grad]
                    if grad and needing:
                        upstream = [torch.ones_like(o) for o in needing]
                        leaves = [t for t in inputs if t.requires_grad]
                        gradients = list(
                            torch.autograd.grad(needing, leaves, upstream, allow_unused=True)
                        )
                        if boxed:
                            gradients = [
                                g if g is None else laid_out(leaf, g)
                                for g, leaf in zip(gradients, leaves, strict=True)
                            ]
                    results.append((flat, gradients, torch.get_rng_state(), None))
                    if side == "torch" and same(list(inputs), base):
                        writes = True  # batch_norm's running statistics, an out= tensor
                except Exception as error:  # noqa: BLE001 - eager's error is compared
                    results.append((None, None, None, type(error)))
            (t_out, t_grad, t_rng, t_err), (r_out, r_grad, r_rng, r_err) = results
            differs = ""
            if writes:
                # a custom op may not write its inputs (its schema says it does not, and
                # the graph would keep the old values): the call stays Dynamo's
                why = "the call writes its inputs"
                break
            if t_err is not None or r_err is not None:
                if t_err is None or r_err is None:
                    eager, rule = ("raises" if e else "returns" for e in (t_err, r_err))
                    differs = f"eager {eager}, the custom op {rule}"
            else:
                evidence = True
                if same(r_out, t_out):
                    differs = f"outputs differ (values {case})"
                elif grad and same(r_grad, t_grad):
                    differs = f"gradients differ (values {case})"
                elif not torch.equal(r_rng, t_rng):
                    differs = "the random state afterwards differs (a random op)"
            if not differs:
                continue
            special = case is not cases[0] and len(case) == 1 and math.isfinite(case[0])
            if boxed and special and case[0] not in values:
                # eager's call takes another path there (a norm of order 0 has no gradient):
                # a path of its own, kept from the boxed graph by a predicate guard
                paths.append(case[0])
                continue
            why = differs
            break
    if not why and not evidence:
        why = "eager refuses every sample call"
    found = (not why, why)
    _memo[memo_key] = found
    _paths[memo_key] = tuple(paths) if found[0] else ()
    return found


#: the memo keys of :func:`admitted` -> the sampled special values at which a boxed call
#: differs from eager's (each a path the graph must not take)
_paths: dict[tuple[Any, ...], tuple[float, ...]] = {}


def boxed_paths(
    key: str, tensors: Sequence[Any], values: Sequence[int | float], grad: bool
) -> tuple[float, ...]:
    """After :func:`admitted` (``boxed=True``) said yes: the values the boxed graph must be
    kept from by a predicate guard (``p != 0``), each compiled as stock compiles it."""
    return _paths.get(_memo_key(key, tensors, values, grad, True), ())


def _memo_key(
    key: str, tensors: Sequence[Any], values: Sequence[Any], grad: bool, boxed: bool
) -> tuple[Any, ...]:
    """What :func:`admitted`'s answer depends on: the call, its tensors' dtypes, ranks and
    contiguity, which numbers are ints, the gradient mode, whether the samples keep the
    tensors' sizes (``small``: up to 4096 elements in all) and the op checked."""
    small = sum(math.prod(int(d) for d in t.shape) for t in tensors) <= 4096
    layouts = tuple((t.dtype, t.dim(), t.is_contiguous()) for t in tensors)
    return (key, layouts, _kinds(values), grad, small, boxed)
