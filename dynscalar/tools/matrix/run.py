"""Running the exactness matrix: every cell of the ``"python"`` column, and the inductor column.

The ``"python"`` column runs every cell of the harness (``harness.cell``) and keeps each
case for the page; its verdicts go to ``dynscalar/ops/admitted.json``, which the library
reads.  The inductor column (an inductor compile per case, about an hour):
:func:`inductor_cell` compiles the rule's tensor form (``dynscalar.ops._tensor``)
and the op itself with the value as a constant (stock inductor) beside eager, and admits
the cell where the tensor form is, in every case, no further from eager than stock.  A
random rule's case that draws (``0 < p < 1``) is measured against stock inductor instead
(:func:`_random_case`): from the same seed, the form's outputs, hence its masks, its
gradients and the generator state afterwards must be stock inductor's.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from typing import Any

import torch

from dynscalar import ops
from dynscalar.ops import _admission
from dynscalar.ops._compare import same
from dynscalar.tools.matrix.privates import FUNCTORCH_CONFIG

from . import harness

#: the dtypes of the ``"python"`` column (every dtype the matrix is measured on)
DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int64, torch.bool)
#: the autocast dtypes of the ``"python"`` column's autocast cells, and the input dtypes
#: they are measured on (autocast casts floating-point tensors only)
AUTOCAST_DTYPES = (torch.bfloat16, torch.float16)
AUTOCAST_INPUTS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
#: the dtypes measured on inductor
INDUCTOR_DTYPES = (torch.float32, torch.bfloat16)


def cells(rules: list[str] | None = None) -> Iterator[tuple[ops.Rule, str]]:
    """(rule, callable) in table order, limited to ``rules`` when given."""
    for name, rule in ops.RULES.items():
        if rules is None or name in rules:
            for callable_name in rule.callables:
                yield rule, callable_name


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _variants(rule: ops.Rule) -> list[tuple[bool, bool]]:
    """(requires_grad, checkpointed) of a rule's cells, in the page's order."""
    grads = (False, True) if rule.differentiable else (False,)
    return [(g, c) for c in harness.checkpointed_cells(rule) for g in grads]


def python_column(
    rules: list[str] | None = None,
    dtypes: tuple[torch.dtype, ...] = DTYPES,
    autocast: tuple[torch.dtype, ...] = AUTOCAST_DTYPES,
) -> list[dict[str, Any]]:
    """Every ``"python"`` cell (of ``dtypes``, and under each of ``autocast`` of the
    floating-point ones among them): its cases, how many agree, the first that does not."""
    plain = [
        harness.entry(rule, callable_name, dtype, grad, checkpointed)
        for rule, callable_name in cells(rules)
        for dtype in dtypes
        for grad, checkpointed in _variants(rule)
    ]
    return plain + [
        harness.entry(rule, callable_name, dtype, grad, checkpointed, cast)
        for cast in autocast
        for rule, callable_name in cells(rules)
        for dtype in dtypes
        if dtype in AUTOCAST_INPUTS
        for grad, checkpointed in _variants(rule)
    ]


# ----------------------------------------------------------------------------- inductor
def _distance(got: Any, want: Any) -> float:
    """The largest |got - want| over a call's outputs (NaN where eager has NaN: 0; NaN or a
    shape/dtype mismatch elsewhere: inf)."""
    if isinstance(want, (tuple, list)):
        return max((_distance(g, w) for g, w in zip(got, want, strict=True)), default=0.0)
    if want is None or got is None:  # a gradient that does not exist: both or neither
        return 0.0 if got is None and want is None else math.inf
    if not isinstance(want, torch.Tensor) or not want.is_floating_point():
        return 0.0 if torch.equal(torch.as_tensor(got), torch.as_tensor(want)) else math.inf
    if got.shape != want.shape or got.dtype != want.dtype:
        return math.inf
    g, w = got.detach().double(), want.detach().double()
    diff = (g - w).abs().masked_fill(g.isnan() & w.isnan(), 0.0).nan_to_num(math.inf, math.inf)
    return float(diff.max()) if diff.numel() else 0.0


def _marked_floats(rule: ops.Rule, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[float]:
    """The float arguments :func:`_marked` marks."""
    marked_args, marked_kwargs = _marked(rule, args, kwargs)
    import dynscalar

    return [
        float(v)
        for v in (*marked_args, *marked_kwargs.values())
        if isinstance(v, dynscalar.DynamicFloat)
    ]


def _marked(
    rule: ops.Rule, values: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The call with every float argument a ``DynamicFloat`` (the rule's values), except
    at parameters the rule's inductor form does not keep symbolic (``inductor_scalars``)."""
    import dynscalar
    from dynscalar.ops._custom import aten_overload

    names = [a.name for a in aten_overload(rule)._schema.arguments]
    kept = rule.inductor_scalars

    def mark(name: str | None, v: Any) -> Any:
        if kept is not None and name not in kept:
            return v
        return dynscalar.DynamicFloat(v) if type(v) is float else v

    positional = tuple(mark(names[i] if i < len(names) else None, v) for i, v in enumerate(values))
    return positional, {k: mark(k, v) for k, v in kwargs.items()}


def inductor_cell(
    rule: ops.Rule, callable_name: str, dtype: torch.dtype, grad: bool, device: str = "cpu"
) -> dict[str, Any]:
    """One inductor cell: per case, stock inductor's distance from eager (the op with the
    value as a constant) and the marked call's (the rule's tensor form, traced with the value
    symbolic), outputs and gradients; admitted where the rule is never further (a random
    case that draws: where it draws what stock inductor draws, :func:`_random_case`).  Its
    tensors on ``device``."""
    from unittest import mock

    if ops.inductor_entry(rule, callable_name) is None or rule.name not in harness.SAMPLES:
        return {"admitted": False, "why": "no tensor form", "cases": 0}
    shape, samples = harness.SAMPLES[rule.name]
    random = rule.random
    worst = ""
    cases = 0

    def call(*args: Any, **kwargs: Any) -> Any:
        return harness._call_torch(callable_name, args, kwargs)

    with (
        harness.rng_devices(device),
        mock.patch.object(_admission, "admitted", lambda *a, **k: (True, "")),
        # rules admitted by force here: no AOTAutograd cache entry may outlive it
        FUNCTORCH_CONFIG.root().patch(enable_autograd_cache=False),
    ):
        generator = torch.Generator().manual_seed(0)
        x = harness.make(shape, dtype, "contiguous", generator)
        assert x is not None
        for args, kwargs in samples(x, generator):
            args, kwargs = harness.moved(args, device), harness.moved(kwargs, device)
            floats = _marked_floats(rule, args, kwargs)
            if random and any(0 < v < 1 for v in floats):
                cases += 1
                differs = _random_case(rule, call, args, kwargs, grad)
                if differs:
                    worst = worst or f"values {floats}: {differs}"
                continue
            if any(not math.isfinite(v) for v in floats):
                continue  # a NaN or inf value is a constant of the graph, marked or not
            cases += 1
            distances: list[Any] = []
            for side in ("stock", "rule"):
                torch.compiler.reset()
                compiled = torch.compile(call, backend="inductor")
                inputs = harness._leaves(rule, args, grad)
                eager_inputs = harness._leaves(rule, args, grad)
                marked = _marked(rule, inputs, kwargs) if side == "rule" else (inputs, kwargs)
                try:
                    want = call(*eager_inputs, **kwargs)
                except Exception:  # noqa: BLE001 - eager raises: nothing to measure
                    distances.append(0.0)
                    continue
                try:
                    got = compiled(*marked[0], **marked[1])
                except Exception as error:  # noqa: BLE001 - a compile error is a difference
                    distances.append(type(error).__name__)
                    continue
                distance = _distance(got, want)
                if grad and isinstance(got, torch.Tensor) and got.requires_grad:
                    got.sum().backward()  # type: ignore[no-untyped-call]
                    want.sum().backward()
                    grads = [
                        a.grad for a in inputs if isinstance(a, torch.Tensor) and a.requires_grad
                    ]
                    wants = [
                        a.grad
                        for a in eager_inputs
                        if isinstance(a, torch.Tensor) and a.requires_grad
                    ]
                    distance = max(distance, _distance(grads, wants))
                distances.append(distance)
            stock, ours = distances
            if isinstance(stock, str):
                continue  # stock inductor cannot compile it either
            if isinstance(ours, str) or ours > stock:
                worst = worst or f"values {floats}: rule {ours}, stock {stock}"
    torch.compiler.reset()
    why = worst or ("" if cases else "no deterministic case")
    return {"admitted": not why, "why": why, "cases": cases}


def _random_case(
    rule: ops.Rule, call: Any, args: tuple[Any, ...], kwargs: dict[str, Any], grad: bool
) -> str:
    """A random case (a value that draws), measured against stock inductor, not eager: the
    op with the value a constant and the rule's form with it marked, each compiled (and
    run once), then run from the same seed.  '' where the form's outputs (hence its masks)
    and gradients are stock's bit for bit and it leaves the generator where stock does
    (stock inductor runs ATen's ``bernoulli_`` on the CPU for some ops, its own random
    numbers for others: the form must draw what stock draws for this op); '' too where
    stock inductor cannot compile it."""
    results = []
    for side in ("stock", "rule"):
        torch.compiler.reset()
        compiled = torch.compile(call, backend="inductor")

        def run(compiled: Any = compiled, side: str = side) -> tuple[Any, Any, Any]:
            inputs = harness._leaves(rule, args, grad)
            marked = _marked(rule, inputs, kwargs) if side == "rule" else (inputs, kwargs)
            torch.manual_seed(harness._SEED)
            out = compiled(*marked[0], **marked[1])
            state = torch.get_rng_state()
            grads = None
            if grad and isinstance(out, torch.Tensor) and out.requires_grad:
                out.sum().backward()  # type: ignore[no-untyped-call]
                grads = [a.grad for a in inputs if isinstance(a, torch.Tensor) and a.requires_grad]
            return out, grads, state

        try:
            run()  # compiles (what the compile draws, if anything, is not measured)
            results.append(run())
        except Exception as error:  # noqa: BLE001 - a compile error is a difference
            if side == "stock":
                return ""  # stock inductor cannot compile it either
            return f"rule {type(error).__name__}"
    (s_out, s_grads, s_state), (r_out, r_grads, r_state) = results
    for what, got, want in (("outputs", r_out, s_out), ("gradients", r_grads, s_grads)):
        difference = same(got, want)
        if difference:
            return f"{what} are not stock inductor's ({difference})"
    if not torch.equal(r_state, s_state):
        return "the generator state afterwards is not stock inductor's"
    return ""


def inductor_plan(
    rules: list[str] | None = None,
) -> Iterator[tuple[ops.Rule, str, torch.dtype, bool]]:
    """(rule, callable, dtype, grad) of every inductor cell, in the column's order."""
    for rule, callable_name in cells(rules):
        for dtype in INDUCTOR_DTYPES:
            for grad in (False, True) if rule.differentiable else (False,):
                yield rule, callable_name, dtype, grad


def python_keys() -> set[str]:
    """The cells of a complete ``"python"`` column (what :func:`python_column` measures:
    every dtype, and the floating-point ones under each autocast dtype too)."""
    plain = {
        _admission.key(rule, callable_name, dtype, grad)
        for rule, callable_name in cells()
        for dtype in DTYPES
        for grad in {g for g, _ in _variants(rule)}
    }
    return plain | {
        _admission.key(rule, callable_name, dtype, grad, dtype_name(cast))
        for cast in AUTOCAST_DTYPES
        for rule, callable_name in cells()
        for dtype in AUTOCAST_INPUTS
        for grad in {g for g, _ in _variants(rule)}
    }


def inductor_column(rules: list[str] | None = None) -> dict[str, Any]:
    cells_: dict[str, Any] = {}
    for rule, callable_name, dtype, grad in inductor_plan(rules):
        start = time.perf_counter()
        result = inductor_cell(rule, callable_name, dtype, grad)
        result["seconds"] = round(time.perf_counter() - start, 1)
        cells_[_admission.key(rule, callable_name, dtype, grad)] = result
        print(_admission.key(rule, callable_name, dtype, grad), result, flush=True)
    return cells_
