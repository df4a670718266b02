"""The inductor column of the scalar forms (``dynscalar.ops._forms``): measured, not assumed.

A cell is (form, dtype, ``requires_grad``).  For each sampled call of the ATen op with a
float argument, it compiles two graphs on inductor beside eager:

* **stock**: the op with every sampled value as a constant (what stock inductor compiles
  once per value), all values in one graph;
* **form**: the op with the value a marked float, so the bridge rewrites it into its form
  (the value a 0-d tensor operand): one graph for every value.

and compares each with eager, outputs and (with ``requires_grad``) gradients.  A cell is
admitted where the form is, in every case, no further from eager than stock inductor.
NaN and infinite values are constants of the graph, marked or not, and are not sampled.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import torch

import dynscalar
from dynscalar._caches import reset_caches
from dynscalar.ops import _admission, _forms
from dynscalar.tools.matrix.privates import COMPILE_COUNTER, FUNCTORCH_CONFIG

from . import harness
from .run import _distance

#: the values each call is sampled with (finite: NaN and inf are graph constants)
VALUES = (0.25, 1.5, -2.0, 0.0, -0.0, 2.0, 0.5, 1.0, -1.0, 3.0, 0.1, 0.9, 0.999, 1e-8, 1e3)
#: inductor's arithmetic does not depend on a tensor's layout (its loads do): contiguous
LAYOUTS = ("contiguous",)
#: dtypes measured without and with gradients
NOGRAD_DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.float64)
GRAD_DTYPES = (torch.float32, torch.bfloat16)

Tensor = torch.Tensor
#: one sampled call: (``call(value, *tensors)``, the tensors)
Call = tuple[Callable[..., Any], tuple[Any, ...]]


class _Value:
    """Where the sampled float goes in a call's arguments."""

    def __repr__(self) -> str:
        return "VALUE"


VALUE = _Value()


def _t(shape: tuple[int, ...], dtype: torch.dtype, layout: str, g: torch.Generator) -> Tensor:
    made = harness.make(shape, dtype, layout, g)
    assert made is not None
    return made


def overload(op: str) -> Any:
    """The ``OpOverload`` a form's ``op`` names."""
    namespace, _, rest = op.partition("::")
    packet, _, name = rest.partition(".")
    return getattr(getattr(getattr(torch.ops, namespace), packet), name or "default")


def samples(
    op: str, dtype: torch.dtype, layout: str, g: torch.Generator
) -> Iterator[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    """(the argument the float goes to, args, kwargs) of sampled calls of ``op``, with
    :data:`VALUE` where the float goes."""
    x, y, z = (_t((4, 6), dtype, layout, g) for _ in range(3))
    xs, ys, zs = ([_t((4, 6), dtype, layout, g), _t((3,), dtype, "contiguous", g)] for _ in "xyz")
    mask = _t((4, 6), torch.bool, layout, g)
    v = VALUE
    if op == "aten::clamp":
        yield "min", (x, v), {}
        yield "max", (x, None, v), {}
        yield "min", (x, v, 0.5), {}
    elif op in ("aten::clamp_min", "aten::clamp_max"):
        yield op.rpartition("_")[2], (x, v), {}
    elif op == "aten::lerp.Scalar":
        yield "weight", (x, y, v), {}
    elif op == "aten::pow.Tensor_Scalar":
        yield "exponent", (x, v), {}
        yield "exponent", (x.abs() + 0.5, v), {}
    elif op == "aten::pow.Scalar":
        yield "self", (v, x), {}
    elif op in ("aten::fill.Scalar",):
        yield "value", (x, v), {}
    elif op == "aten::masked_fill.Scalar":
        yield "value", (x, mask, v), {}
    elif op == "aten::where.ScalarOther":
        yield "other", (mask, x, v), {}
    elif op == "aten::_foreach_lerp.Scalar":
        yield "weight", (xs, ys, v), {}
    elif op.startswith("aten::_foreach_") and op.endswith(".Scalar") and "addc" not in op:
        yield "scalar", (xs, v), {}
    elif op in ("aten::mul.Scalar", "aten::div.Scalar"):
        yield "other", (x, v), {}
    elif op in ("aten::add.Scalar", "aten::sub.Scalar", "aten::rsub.Scalar"):
        yield "other", (x, v), {}
        yield "alpha", (x, 0.5, v), {}
    elif op in ("aten::add.Tensor", "aten::sub.Tensor"):
        yield "alpha", (x, y), {"alpha": v}
    elif op in ("aten::_foreach_add.List", "aten::_foreach_sub.List"):
        yield "alpha", (xs, ys), {"alpha": v}
    elif op in ("aten::addcmul", "aten::addcdiv"):
        yield "value", (x, y, z), {"value": v}
    elif op in ("aten::_foreach_addcmul.Scalar", "aten::_foreach_addcdiv.Scalar"):
        yield "value", (xs, ys, zs, v), {}
    elif op == "aten::_foreach_pow.ScalarAndTensor":
        yield "self", (v, xs), {}
    elif op == "prims::fma":
        yield "b", (x, v, z), {}
        yield "a", (v, y, z), {}
    elif op == "aten::full":
        yield "fill_value", ((4, 6), v), {"dtype": dtype}
    else:
        raise KeyError(f"no samples for {op}")


def template(op: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Call:
    """(``call(value, *tensors)``, the tensors): the sampled call of ``op`` with its tensors
    as inputs (a compiled ``call`` takes them as graph inputs, not as constants)."""
    target = overload(op)
    tensors: list[Tensor] = []

    def lift(a: Any) -> Any:
        if isinstance(a, Tensor):
            tensors.append(a)
            return ("tensor", len(tensors) - 1)
        if isinstance(a, list):
            return [lift(i) for i in a]
        return a

    shape_args, shape_kwargs = [lift(a) for a in args], {k: lift(a) for k, a in kwargs.items()}

    def call(value: Any, *inputs: Any) -> Any:
        def put(a: Any) -> Any:
            if a is VALUE:
                return value
            if isinstance(a, tuple) and len(a) == 2 and a[0] == "tensor":
                return inputs[a[1]]
            if isinstance(a, list):
                return [put(i) for i in a]
            return a

        return target(*[put(a) for a in shape_args], **{k: put(a) for k, a in shape_kwargs.items()})

    return call, tuple(tensors)


def _stock(call: Callable[..., Any]) -> Callable[..., Any]:
    def every_value(*tensors: Any) -> Any:
        return [call(v, *tensors) for v in VALUES]

    return every_value


def _leaves(tensors: tuple[Any, ...], grad: bool) -> tuple[Any, ...]:
    copied = tuple(t.detach().clone() for t in tensors)
    if grad:
        for t in copied:
            if t.is_floating_point():
                t.requires_grad_(True)
    return copied


def _grads(out: Any, tensors: tuple[Any, ...]) -> list[Any]:
    flat = out if isinstance(out, (list, tuple)) else [out]
    leaves = [t for t in tensors if t.requires_grad]
    total = sum(o.double().nan_to_num(0.0, 0.0, 0.0).sum() for o in flat if o.requires_grad)
    if not isinstance(total, Tensor) or not leaves:
        return []
    return list(torch.autograd.grad(total, leaves, allow_unused=True, retain_graph=True))


def _measure(
    call: Callable[..., Any], tensors: tuple[Any, ...], grad: bool, paths: int
) -> list[Any]:
    """Per value: (stock distance, form distance), each a float or an error's name; the
    form's compile must take at most ``paths`` graphs for all the values."""
    eager: list[Any] = []
    for v in VALUES:
        inputs = _leaves(tensors, grad)
        try:
            out = call(v, *inputs)
            eager.append((out, _grads(out, inputs) if grad else []))
        except Exception:  # noqa: BLE001 - eager refuses the value: nothing to compare
            eager.append(None)
    results: list[Any] = []
    torch.compiler.reset()
    stock = torch.compile(_stock(call), backend="inductor")
    inputs = _leaves(tensors, grad)
    try:
        outs = stock(*inputs)
        stock_got: list[Any] = [(o, None) for o in outs]
        if grad:
            stock_got = [(o, _grads(o, inputs)) for o in outs]
    except Exception as error:  # noqa: BLE001 - stock inductor fails too: not measured
        stock_got = [type(error).__name__] * len(VALUES)
    torch.compiler.reset()
    reset_caches()  # once-per-process warnings warn again: each one is read below
    counter = COMPILE_COUNTER.root()("inductor")
    marked = torch.compile(call, backend=counter)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", dynscalar.DynscalarWarning)
        _marked_run(marked, call, tensors, grad, eager, stock_got, results)
    torch.compiler.reset()
    fell_back = any(issubclass(w.category, dynscalar.DynscalarWarning) for w in caught)
    if fell_back or counter.frame_count > paths:
        # torch specialized the value (its warning; a graph per value), or the bridge fell
        # back: what ran is not the form
        why = f"specialized: {counter.frame_count} graphs for {len(VALUES)} values"
        return [(v, 0.0, why) for v, _, _ in results]
    return results


def _marked_run(
    marked: Any,
    call: Callable[..., Any],
    tensors: tuple[Any, ...],
    grad: bool,
    eager: list[Any],
    stock_got: list[Any],
    results: list[Any],
) -> None:
    for index, v in enumerate(VALUES):
        want = eager[index]
        if want is None:
            continue
        inputs = _leaves(tensors, grad)
        form: float | str
        try:
            out = marked(dynscalar.DynamicFloat(v), *inputs)
            form = _distance(out, want[0])
            if grad:
                form = max(form, _distance(_grads(out, inputs), want[1]))
        except Exception as error:  # noqa: BLE001 - a compile error is a difference
            form = type(error).__name__
        got = stock_got[index]
        if isinstance(got, str):
            results.append((v, got, form))
            continue
        distance = _distance(got[0], want[0])
        if grad:
            distance = max(distance, _distance(got[1], want[1]))
        results.append((v, distance, form))


def form_cell(
    form: _forms.ScalarForm, dtype: torch.dtype, grad: bool, device: str = "cpu"
) -> dict[str, Any]:
    """One cell: admitted where the form is never further from eager than stock inductor
    (its tensors on ``device``)."""
    worst = ""
    cases = 0
    admit = mock.patch.object(_admission, "form_admitted", lambda *a, **k: (True, ""))
    # forms admitted by force here: no AOTAutograd cache entry may outlive the measurement
    no_cache = FUNCTORCH_CONFIG.root().patch(enable_autograd_cache=False)
    with harness.rng_devices(device), admit, no_cache:
        for layout in LAYOUTS:
            generator = torch.Generator().manual_seed(0)
            for argument, args, kwargs in samples(form.op, dtype, layout, generator):
                args, kwargs = harness.moved(args, device), harness.moved(kwargs, device)
                if form.op == "aten::full" and device != "cpu":
                    kwargs = {**kwargs, "device": device}
                call, tensors = template(form.op, args, kwargs)
                # a special value is a path and may restart once (its float input
                # goes unused); a decomposition can branch on the value (lerp's weight
                # >= 0.5 or <= -0.5): a graph per value means the form was not traced
                special = sum(v in form.special_values(argument) for v in VALUES)
                paths = 3 + 2 * special
                for value, stock, ours in _measure(call, tensors, grad, paths):
                    if isinstance(stock, str):
                        continue  # stock inductor cannot compile it either
                    cases += 1
                    if isinstance(ours, str) or ours > stock:
                        worst = worst or (
                            f"{argument}={value!r} ({layout}): form {ours}, stock {stock}"
                        )
    why = worst or ("" if cases else "no case stock inductor compiles")
    return {"admitted": not why, "why": why, "cases": cases}


def differentiable(form: _forms.ScalarForm) -> bool:
    """Forms measured with gradients: the non-foreach ops that take tensors."""
    return "_foreach_" not in form.op and form.op not in ("aten::full", "aten::fill.Scalar")


def form_plan(
    ops: list[str] | None = None,
) -> Iterator[tuple[_forms.ScalarForm, torch.dtype, bool]]:
    """(form, dtype, grad) of every cell of the forms (``ops``: limited to these overload
    names), in the column's order."""
    for form in _forms.FORMS.values():
        if ops is not None and form.op not in ops:
            continue
        yield from ((form, d, False) for d in NOGRAD_DTYPES)
        if differentiable(form):
            yield from ((form, d, True) for d in GRAD_DTYPES)


def form_column(ops: list[str] | None = None) -> dict[str, Any]:
    """Every cell of the forms (``ops``: limited to these overload names)."""
    cells: dict[str, Any] = {}
    for form, dtype, grad in form_plan(ops):
        start = time.perf_counter()
        result = form_cell(form, dtype, grad)
        result["seconds"] = round(time.perf_counter() - start, 1)
        key = _admission.form_key(form, dtype, grad)
        cells[key] = result
        print(key, result, flush=True)
    return cells


__all__ = [
    "VALUE",
    "VALUES",
    "form_cell",
    "form_column",
    "form_plan",
    "overload",
    "samples",
    "template",
]
