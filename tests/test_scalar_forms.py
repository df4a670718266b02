"""Scalar forms on inductor (``dynscalar.ops._forms``): a marked float that an ATen op takes
as a ``Scalar`` reaches inductor's kernels as a 0-d tensor operand, where the inductor
column of the exactness matrix admits the op's form.

Before this change, stock inductor and dynscalar specialized such a value (a graph per
value): ``_foreach_add_(alpha=-lr)`` in SGD, ``prims.fma`` in Adam's ``addcmul_``,
``beta ** step``.  Compile tests compare each value's result with stock inductor's for
the value as a constant (bit for bit: the form is the arithmetic stock inductor lowers
the op to) and count graphs.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch

import dynscalar as ds
from dynscalar.ops import FORMS, _admission, _forms
from dynscalar.tools.matrix.forms import (
    GRAD_DTYPES,
    NOGRAD_DTYPES,
    VALUE,
    differentiable,
    overload,
    samples,
)

from .helpers import CountingBackend


def test_every_form_computes_what_its_op_computes_eagerly() -> None:
    """The form, run eagerly on real tensors with its scalar arguments 0-d float64 tensors,
    computes the op (up to rounding: a compound form rounds its steps as inductor's
    lowering does, not as ATen's fused CPU kernel)."""
    import torch._inductor.inductor_prims

    for form in FORMS.values():
        target = overload(form.op)
        generator = torch.Generator().manual_seed(0)
        for argument, args, kwargs in samples(form.op, torch.float64, "contiguous", generator):
            for value in (0.25, 1.5, -2.0):

                def put(a: Any, v: float = value) -> Any:
                    return v if a is VALUE else a

                call_args, call_kwargs = (
                    [put(a) for a in args],
                    {k: put(a) for k, a in kwargs.items()},
                )
                want = target(*call_args, **call_kwargs)
                form_args, form_kwargs = _forms.with_tensors(
                    form,
                    target,
                    call_args,
                    call_kwargs,
                    lambda v: torch.tensor(v, dtype=torch.float64),
                )
                got = form.apply(torch.ops, *form_args, **form_kwargs)
                flat_got = got if isinstance(got, (list, tuple)) else [got]
                flat_want = want if isinstance(want, (list, tuple)) else [want]
                assert len(flat_got) == len(flat_want), form.op
                for g, w in zip(flat_got, flat_want, strict=True):
                    torch.testing.assert_close(
                        g,
                        w,
                        rtol=1e-12,
                        atol=1e-12,
                        equal_nan=True,
                        msg=lambda m, f=form, a=argument: f"{f.op} {a}: {m}",
                    )


def test_the_inductor_column_holds_every_form_cell() -> None:
    """Each inductor column of ``dynscalar/ops/admitted.json`` has a measured cell for every
    form, dtype and gradient mode the matrix plans (``python -m tests.ops_matrix --forms
    --inductor-only``)."""
    columns = json.loads(_admission.PATH.read_text())["columns"]
    inductor = [c["cells"] for name, c in columns.items() if name.startswith("inductor ")]
    assert inductor
    for cells in inductor:
        for form in FORMS.values():
            plan = [(d, False) for d in NOGRAD_DTYPES]
            if differentiable(form):
                plan += [(d, True) for d in GRAD_DTYPES]
            for dtype, grad in plan:
                key = _admission.form_key(form, dtype, grad)
                assert key in cells, key
                assert cells[key]["cases"] > 0 or not cells[key]["admitted"], key


def _stock_and_marked(
    fn: Callable[..., Any], values: list[float], *args: Any
) -> tuple[list[Any], list[Any], int]:
    """(stock inductor's results, the marked results, the marked graphs)."""
    stock = []
    for v in values:
        torch._dynamo.reset()
        stock.append(torch.compile(fn, backend="inductor")(v, *args))
    torch._dynamo.reset()
    counter = CountingBackend("inductor")
    compiled = torch.compile(fn, backend=counter)
    marked = [compiled(ds.DynamicFloat(v), *args) for v in values]
    return stock, marked, counter.frame_count


def _assert_identical(got: Any, want: Any) -> None:
    if isinstance(want, (list, tuple)):
        for g, w in zip(got, want, strict=True):
            _assert_identical(g, w)
        return
    assert got.dtype == want.dtype and torch.equal(got.nan_to_num(), want.nan_to_num())


@pytest.mark.inductor
def test_foreach_add_with_a_marked_alpha_compiles_once_on_inductor() -> None:
    """SGD's ``torch._foreach_add_(params, grads, alpha=-lr)``: before, a graph per lr."""

    def step(lr: Any, params: list[torch.Tensor], grads: list[torch.Tensor]) -> Any:
        params = [p.clone() for p in params]
        torch._foreach_add_(params, grads, alpha=-lr)
        return params

    generator = torch.Generator().manual_seed(0)
    params = [torch.randn(4, 3, generator=generator), torch.randn(3, generator=generator)]
    grads = [torch.randn_like(p) for p in params]
    stock, marked, graphs = _stock_and_marked(step, [0.1, 0.05, 0.0125], params, grads)
    assert graphs == 1
    _assert_identical(marked, stock)


@pytest.mark.inductor
@pytest.mark.parametrize("inplace", [True, False])
def test_foreach_lerp_with_a_marked_weight_compiles_once_on_inductor(inplace: bool) -> None:
    """Adam's ``torch._foreach_lerp_(exp_avgs, grads, 1 - beta1)``: on torch 2.14 and 2.15
    inductor's decomposition made the weight a constant tensor (a graph per beta1); its form
    is traced in the call's place (2.13's Dynamo decomposes the in-place call itself)."""

    def step(beta1: Any, avgs: list[torch.Tensor], grads: list[torch.Tensor]) -> Any:
        avgs = [a.clone() for a in avgs]
        if inplace:
            torch._foreach_lerp_(avgs, grads, 1 - beta1)
            return avgs
        return torch._foreach_lerp(avgs, grads, 1 - beta1)

    generator = torch.Generator().manual_seed(0)
    avgs = [torch.randn(4, 3, generator=generator), torch.randn(3, generator=generator)]
    grads = [torch.randn_like(a) for a in avgs]
    stock, marked, graphs = _stock_and_marked(step, [0.9, 0.95, 0.85], avgs, grads)
    assert graphs == 1
    _assert_identical(marked, stock)


@pytest.mark.inductor
def test_a_branch_inductor_decomposes_on_never_loads_the_other_branchs_cache_entry() -> None:
    """Inductor decomposes ``lerp(start, end, weight)`` into the formula of one side of
    ``weight >= 0.5``, a guard made while AOTAutograd traces.  An AOTAutograd cache entry
    keeps only its SymInt guards, so an entry compiled for 1.5 was loaded for 0.25 (and
    after a restart of the process, for every value): the other branch's formula, off
    by an ulp.  Such compiles now save no entry: one graph per side, stock's numbers."""

    def lerp(weight: Any, start: torch.Tensor, end: torch.Tensor) -> torch.Tensor:
        return torch.lerp(start, end, weight)

    generator = torch.Generator().manual_seed(0)
    start, end = torch.randn(4, 6, generator=generator), torch.randn(4, 6, generator=generator)
    stock, marked, graphs = _stock_and_marked(lerp, [1.5, 0.25, 0.75, 0.1], start, end)
    assert graphs == 2  # weight >= 0.5 and weight < 0.5: two paths
    _assert_identical(marked, stock)


def _three_periods(wrap: Callable[..., torch.Tensor]) -> tuple[int, list[Any]]:
    """``wrap(DynamicFloat(period), x)`` compiled on inductor for 3 periods, each equal to
    eager: (graphs, the warnings caught)."""
    torch._dynamo.reset()
    counter = CountingBackend("inductor")
    compiled = torch.compile(wrap, backend=counter)
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(0))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for period in (0.5, 0.25, 0.75):
            assert torch.equal(compiled(ds.DynamicFloat(period), x), wrap(period, x))
    return counter.frame_count, list(caught)


@pytest.mark.inductor
def test_an_op_without_a_form_is_boxed_after_one_learned_restart() -> None:
    """``torch.remainder(x, s)`` (``aten.remainder.Scalar``) has no form: the float-tensorify
    pass would specialize the value.  The first compile learns the call and traces the
    frame again with it boxed (eager's kernel, the float a 0-d tensor: 2 backend calls),
    then one graph for every value; no warning.  Before: a graph per value (4 for 3)."""

    def wrap(period: Any, x: torch.Tensor) -> torch.Tensor:
        return torch.remainder(x, period)

    graphs, caught = _three_periods(wrap)
    assert [w for w in caught if issubclass(w.category, ds.DynscalarWarning)] == []
    assert graphs == 2


@pytest.mark.inductor
def test_an_op_neither_form_nor_box_takes_is_specialized_with_one_warning_naming_it() -> None:
    """``y.remainder_(s)`` writes its input, which a boxed call may not: the value is
    compiled as stock inductor compiles it (a graph per value), with one warning that names
    the op inside torch and a fix for code as written, not "unmark it"."""

    def wrap(period: Any, x: torch.Tensor) -> torch.Tensor:
        y = x * 1
        y.remainder_(period)
        return y

    graphs, caught = _three_periods(wrap)
    messages = [str(w.message) for w in caught if issubclass(w.category, ds.SpecializationWarning)]
    assert len(messages) == 1, messages
    assert "aten.remainder.Scalar" in messages[0] and "Unmark" not in messages[0]
    assert "0-d tensor" in messages[0]
    # the first value is tried symbolically, the pass specializes it and the analysis
    # restarts (2 graphs); torch remembers the float as forced: one graph per later value
    assert graphs == 4


@pytest.mark.inductor
def test_with_gradients_a_form_inductor_decomposes_to_stays_symbolic_and_stock_exact() -> None:
    """``x.clamp(max=s)`` on bfloat16 with gradients: inductor computes it as
    ``clamp_max`` on float32, whose float32 form with gradients is admitted; outputs and
    gradients are stock inductor's for the value as a constant (a fresh compile each: in
    one process stock inductor itself returns the 0.999 kernel's numbers for 0.25, its
    float-tensorify pass guarding inside the pass, pytorch#194976), one graph."""

    def clamp(high: Any, x: torch.Tensor) -> torch.Tensor:
        return x.clamp(max=high)

    def run(high: Any, compiled: Any) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.linspace(-2, 2, 24, dtype=torch.bfloat16).reshape(4, 6).requires_grad_()
        out = compiled(high, x)
        out.sum().backward()
        assert x.grad is not None
        return out.detach(), x.grad

    counter = CountingBackend("inductor")
    marked = torch.compile(clamp, backend=counter)
    values = (0.5, 0.999, 0.25)
    got = [run(ds.DynamicFloat(high), marked) for high in values]
    assert counter.frame_count == 1
    for high, mine in zip(values, got, strict=True):
        torch._dynamo.reset()
        want = run(high, torch.compile(clamp, backend="inductor"))
        _assert_identical(list(mine), list(want))


@pytest.mark.inductor
@pytest.mark.parametrize("values", [(0.0, 0.5, 0.0, 0.3), (0.5, 0.3, 0.0, 0.2, 0.0, 0.7)])
def test_a_path_that_pins_a_marked_float_is_no_specialization(values: tuple[float, ...]) -> None:
    """Dropout returns its input at ``p == 0``: the predicate pins p on that path, and
    torch's float-tensorify pass restarts to drop the float the graph no longer uses.
    That restart was taken for a forced float: remembered (every later value specialized
    too) and warned (4 graphs and a warning for the first values here, 3 and a warning for
    the second).  Then: one graph for p != 0, two for p == 0 (its restart).  Now the pass
    keeps the pinned input (no restart): one graph per path, no warning
    (``filterwarnings = error``)."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.0))
    ds.mark_dynamic_attr(model[1], "p")
    counter = CountingBackend("inductor")
    compiled = torch.compile(model, backend=counter)
    x = torch.randn(2, 4, generator=torch.Generator().manual_seed(0))
    for p in values:
        model[1].p = p
        out = compiled(x)
        if p == 0.0:
            assert torch.equal(out, model(x))  # the input itself: no draws
    assert counter.frame_count == 2
