"""The exactness matrix: a rule is used only where it computes what eager computes.

A cell is (rule, callable, dtype, requires_grad, checkpointed); it runs the callable's
``"python"`` entry (``_kernels``, or the rule's custom op) eagerly, beside the torch
callable itself, on
every layout (contiguous, transposed, sliced with a step, 0-d, empty) and every special
value of the rule's floats (±0.0, NaN, ±inf, 0 and 1, the op's usual values), with tensors
that hold ±0.0, NaN and ±inf too, and compares bit for bit:

* the outputs (dtype, shape, strides, every bit but a NaN's payload) and the inputs the
  op writes (running statistics);
* with ``requires_grad``, the gradients of every floating-point tensor input;
* the default generator's state afterwards (the same random numbers consumed), and the
  outputs of random ops for the same seed;
* errors: eager raising means the rule must raise the same exception type.

A random rule (``Rule.random``) also has *checkpointed* cells: both sides run inside
``torch.utils.checkpoint.checkpoint(..., use_reentrant=False)``, whose backward recomputes
them from the generator state the forward started from.  They show that the rule's
outputs and gradients are a function of the inputs and that state alone, and that its
backward leaves the generator where eager's does: what torch's own replay needs (compiled,
AOTAutograd replays each tagged random op from its saved state; ``tests/test_replay.py``
compiles it).  A random rule is admitted only where its checkpointed cell agrees too.

A cell is admitted only if every case agrees.  Where one does not, the bridge compiles
the value as stock torch does (specialized, one ``SpecializationWarning`` with the reason
:func:`admitted` returns).  Cells are computed on first use, once per process, on small
tensors (milliseconds), with the user's random state saved and restored around them.
``python -m tests.ops_matrix`` computes every cell and writes the coverage page.

Examples:
    >>> import torch
    >>> from dynscalar.ops import RULES
    >>> admitted(RULES["layer_norm"], "torch.layer_norm", torch.float32, False)
    (True, '')
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from ._table import Rule

__all__ = [
    "LAYOUTS",
    "Outcome",
    "admitted",
    "cell",
    "python_entry",
    "resolve_callable",
]

Tensor = torch.Tensor

LAYOUTS = ("contiguous", "transposed", "stepped", "0-d", "empty")
_SPECIAL = (0.0, -0.0, math.nan, math.inf)
_SEED = 1234


@dataclass(frozen=True)
class Outcome:
    """One case of a cell: where it ran and whether the rule agreed with eager."""

    layout: str
    values: tuple[Any, ...]
    agrees: bool
    detail: str = ""


# ----------------------------------------------------------------------------- callables
def resolve_callable(name: str) -> Any:
    """``"torch.dropout"`` -> the function; ``"Tensor.bernoulli_"`` -> the method name."""
    if name.startswith("Tensor."):
        return name.removeprefix("Tensor.")
    owner: Any = torch
    for part in name.split(".")[1:]:
        owner = getattr(owner, part)
    return owner


def python_entry(rule: Rule, callable_name: str) -> Callable[..., Any]:
    """What a ``"python"`` backend traces for ``callable_name`` under ``rule``."""
    from . import _custom, _kernels

    short = callable_name.rpartition(".")[2]
    if rule.python == "custom":
        return _custom.entry_for(rule)
    _kernels.prepare()
    if short.endswith("_") and hasattr(_kernels, short):
        return getattr(_kernels, short)  # type: ignore[no-any-return]
    return getattr(_kernels, rule.python)  # type: ignore[no-any-return]


def _call_torch(callable_name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    target = resolve_callable(callable_name)
    if isinstance(target, str):
        return getattr(args[0], target)(*args[1:], **kwargs)
    return target(*args, **kwargs)


# ----------------------------------------------------------------------------- samples
def _fill(shape: tuple[int, ...], dtype: torch.dtype, generator: torch.Generator) -> Tensor:
    if dtype == torch.bool:
        return torch.rand(shape, generator=generator) > 0.5
    if dtype == torch.int64:
        return torch.randint(-5, 6, shape, generator=generator)
    data = torch.randn(shape, generator=generator, dtype=torch.float64)
    flat = data.view(-1)
    for index, special in enumerate((0.0, -0.0, math.nan, math.inf, -math.inf)):
        if flat.numel() > 8 * (index + 1):
            flat[8 * (index + 1) - 1] = special
    return data.to(dtype)


def make(
    shape: tuple[int, ...], dtype: torch.dtype, layout: str, generator: torch.Generator
) -> Tensor | None:
    """A tensor of ``shape`` in ``layout`` (None where the layout does not fit the shape)."""
    if layout == "0-d":
        return _fill((), dtype, generator) if not shape else None
    if not shape:
        return _fill((), dtype, generator) if layout == "contiguous" else None
    if layout == "contiguous":
        return _fill(shape, dtype, generator)
    if layout == "empty":
        return _fill((0, *shape[1:]), dtype, generator)
    if layout == "transposed":
        if len(shape) < 2:
            return None
        base = _fill(tuple(reversed(shape)), dtype, generator)
        return base.permute(*reversed(range(len(shape))))
    if layout == "stepped":
        base = _fill((*shape[:-1], shape[-1] * 2), dtype, generator)
        return base[..., ::2]
    raise ValueError(layout)


#: rule name -> samples(x) yielding (args, kwargs, the marked values) for the torch callable
Samples = Callable[[Tensor, torch.Generator], Iterator[tuple[tuple[Any, ...], dict[str, Any]]]]


def _values(*usual: float) -> tuple[float, ...]:
    return (*usual, *_SPECIAL)


def _like(x: Tensor, generator: torch.Generator) -> Tensor:
    return _fill(tuple(x.shape), x.dtype, generator)


def _dropout_samples(x: Tensor, g: torch.Generator) -> Iterator[Any]:
    for p in _values(0.25, 0.5, 1.0, 1.5):
        for train in (True, False):
            yield (x, p, train), {}


def _bernoulli_samples(x: Tensor, g: torch.Generator) -> Iterator[Any]:
    base = x.abs() if x.is_floating_point() else x
    for p in _values(0.3, 1.0, 1.5):
        yield (base, p), {}


def _norm_last(x: Tensor) -> list[int]:
    return [x.shape[-1]] if x.dim() else []


def _affine(x: Tensor, size: int, g: torch.Generator) -> tuple[Tensor | None, Tensor | None]:
    if not x.is_floating_point():
        return None, None
    w = _fill((size,), x.dtype, g).abs() + 0.5
    b = _fill((size,), x.dtype, g)
    return w, b


def _layer_norm_samples(x: Tensor, g: torch.Generator) -> Iterator[Any]:
    shape = _norm_last(x)
    w, b = _affine(x, shape[0] if shape else 1, g)
    for eps in _values(1e-5, 0.1):
        yield (x, shape, w if shape else None, b if shape else None, eps), {}


def _rms_norm_samples(x: Tensor, g: torch.Generator) -> Iterator[Any]:
    shape = _norm_last(x)
    w, _ = _affine(x, shape[0] if shape else 1, g)
    for eps in _values(1e-5, 0.1):
        yield (x, shape, w if shape else None, eps), {}


def _channels(x: Tensor) -> int:
    return x.shape[1] if x.dim() >= 2 else 1


def _group_norm_samples(x: Tensor, g: torch.Generator) -> Iterator[Any]:
    c = _channels(x)
    w, b = _affine(x, c, g)
    groups = 2 if c % 2 == 0 else 1
    for eps in _values(1e-5, 0.1):
        yield (x, groups, w, b, eps), {}


def _batch_norm_samples(x: Tensor, g: torch.Generator) -> Iterator[Any]:
    c = _channels(x)
    w, b = _affine(x, c, g)
    stats = x.dtype if x.is_floating_point() else torch.float32
    for training in (True, False):
        for momentum, eps in ((0.1, 1e-5), (0.0, 1e-5), (1.0, 0.1), (0.1, 0.0), (math.nan, 1e-5)):
            mean = _fill((c,), stats, g).nan_to_num(0.0, 0.0, 0.0)
            var = _fill((c,), stats, g).abs().nan_to_num(1.0, 1.0, 1.0) + 0.5
            yield (x, w, b, mean, var, training, momentum, eps, False), {}


def _instance_norm_samples(x: Tensor, g: torch.Generator) -> Iterator[Any]:
    c = _channels(x)
    w, b = _affine(x, c, g)
    stats = x.dtype if x.is_floating_point() else torch.float32
    for use_input_stats in (True, False):
        for momentum, eps in ((0.1, 1e-5), (1.0, 0.1), (0.1, 0.0)):
            mean = _fill((c,), stats, g).nan_to_num(0.0, 0.0, 0.0)
            var = _fill((c,), stats, g).abs().nan_to_num(1.0, 1.0, 1.0) + 0.5
            yield (x, w, b, mean, var, use_input_stats, momentum, eps, False), {}


def _targets(x: Tensor, g: torch.Generator) -> Tensor:
    classes = x.shape[1] if x.dim() >= 2 else (x.shape[0] if x.dim() == 1 else 1)
    batch = x.shape[0] if x.dim() >= 2 else 1
    shape = (batch, *x.shape[2:]) if x.dim() >= 2 else ()
    return torch.randint(0, max(classes, 1), shape, generator=g)


def _cross_entropy_samples(x: Tensor, g: torch.Generator) -> Iterator[Any]:
    target = _targets(x, g)
    for smoothing in _values(0.1, 1.0):
        yield (x, target, None, 1, -100, smoothing), {}
    for reduction in (0, 2):
        yield (x, target, None, reduction, -100, 0.1), {}
    if x.is_floating_point():  # class probabilities
        probabilities = _like(x, g).abs().nan_to_num(0.5, 0.5, 0.5)
        for smoothing in (0.0, 0.2):
            yield (x, probabilities, None, 1, -100, smoothing), {}


def _pointwise_loss_samples(*values: float) -> Samples:
    def samples(x: Tensor, g: torch.Generator) -> Iterator[Any]:
        target = _like(x, g)
        for value in _values(*values):
            yield (x, target, 1, value), {}
        for reduction in (0, 2):
            yield (x, target, reduction, values[0]), {}

    return samples


def _margin_ranking_samples(x: Tensor, g: torch.Generator) -> Iterator[Any]:
    other, sign = _like(x, g), torch.ones_like(x)
    for margin in _values(0.5, 1.0):
        yield (x, other, sign, margin, 1), {}


def _hinge_samples(x: Tensor, g: torch.Generator) -> Iterator[Any]:
    target = torch.where(_like(x, g) > 0, 1, -1).to(x.dtype) if x.dtype != torch.bool else x
    for margin in _values(1.0, 0.5):
        for reduction in (0, 1):
            yield (x, target, margin, reduction), {}


def _triplet_samples(x: Tensor, g: torch.Generator) -> Iterator[Any]:
    positive, negative = _like(x, g), _like(x, g)
    for margin in _values(1.0, 0.5):
        yield (x, positive, negative, margin, 2.0, 1e-6, False, 1), {}
    for p, eps in ((1.0, 1e-6), (3.0, 0.0), (2.0, 0.1)):
        yield (x, positive, negative, 1.0, p, eps, True, 0), {}


def _cosine_embedding_samples(x: Tensor, g: torch.Generator) -> Iterator[Any]:
    other = _like(x, g)
    batch = x.shape[0] if x.dim() >= 1 else 1
    target = torch.where(torch.rand(batch, generator=g) > 0.5, 1.0, -1.0)
    if x.dim() < 2:
        target = target[0] if x.dim() == 0 else target[:1]
    for margin in _values(0.0, 0.5):
        yield (x, other, target, margin, 1), {}


def _poisson_samples(x: Tensor, g: torch.Generator) -> Iterator[Any]:
    target = _like(x, g).abs() if x.is_floating_point() else x
    for eps in _values(1e-8, 0.5):
        for log_input, full in ((True, False), (False, False), (False, True)):
            yield (x, target, log_input, full, eps, 1), {}


def _cosine_similarity_samples(x: Tensor, g: torch.Generator) -> Iterator[Any]:
    other = _like(x, g)
    dim = 1 if x.dim() >= 2 else 0
    for eps in _values(1e-8, 0.5):
        yield (x, other, dim, eps), {}


def _pairwise_samples(x: Tensor, g: torch.Generator) -> Iterator[Any]:
    other = _like(x, g)
    for p, eps in ((2.0, 1e-6), (1.0, 0.0), (3.0, -0.0), (math.inf, 1e-6), (2.0, math.nan)):
        for keepdim in (False, True):
            yield (x, other, p, eps, keepdim), {}


def _sdpa_samples(x: Tensor, g: torch.Generator) -> Iterator[Any]:
    key, value = _like(x, g), _like(x, g)
    for scale in (None, 0.5, 0.0, -0.25, math.inf):
        yield (x, key, value), {"dropout_p": 0.0, "scale": scale}
    yield (x, key, value), {"dropout_p": 0.0, "is_causal": True, "scale": 0.5}
    # attention dropout (ATen's math path, which draws): its usual values, the edges and
    # the values ATen refuses
    for p in _values(0.25, 0.5, 1.0, 1.5):
        yield (x, key, value), {"dropout_p": p}
    yield (x, key, value), {"dropout_p": 0.25, "is_causal": True, "scale": 0.5}


#: rule -> the shape of its first tensor, and the calls to compare
SAMPLES: dict[str, tuple[tuple[int, ...], Samples]] = {
    "dropout": ((4, 6), _dropout_samples),
    "feature_dropout": ((4, 6, 3), _dropout_samples),
    "alpha_dropout": ((4, 6), _dropout_samples),
    "feature_alpha_dropout": ((4, 6, 3), _dropout_samples),
    "bernoulli_p": ((4, 6), _bernoulli_samples),
    "layer_norm": ((4, 6), _layer_norm_samples),
    "group_norm": ((3, 4, 5), _group_norm_samples),
    "rms_norm": ((4, 6), _rms_norm_samples),
    "batch_norm": ((5, 4, 3), _batch_norm_samples),
    "instance_norm": ((3, 4, 5), _instance_norm_samples),
    "cross_entropy_loss": ((5, 4), _cross_entropy_samples),
    "huber_loss": ((4, 6), _pointwise_loss_samples(1.0, 0.5)),
    "smooth_l1_loss": ((4, 6), _pointwise_loss_samples(1.0, 0.5)),
    "margin_ranking_loss": ((4, 6), _margin_ranking_samples),
    "hinge_embedding_loss": ((4, 6), _hinge_samples),
    "triplet_margin_loss": ((4, 6), _triplet_samples),
    "cosine_embedding_loss": ((4, 6), _cosine_embedding_samples),
    "poisson_nll_loss": ((4, 6), _poisson_samples),
    "cosine_similarity": ((4, 6), _cosine_similarity_samples),
    "pairwise_distance": ((4, 6), _pairwise_samples),
    "scaled_dot_product_attention": ((2, 3, 4, 5), _sdpa_samples),
}


# ----------------------------------------------------------------------------- comparing
def _same(got: Any, want: Any) -> str:
    """'' if ``got`` is ``want`` bit for bit (NaN payloads aside), else what differs."""
    if isinstance(want, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(want):
            return f"{type(got).__name__} instead of {type(want).__name__}"
        return next((d for g, w in zip(got, want, strict=True) if (d := _same(g, w))), "")
    if not isinstance(want, Tensor) or not isinstance(got, Tensor):
        if isinstance(want, Tensor) or isinstance(got, Tensor) or type(got) is not type(want):
            return f"{type(got).__name__} instead of {type(want).__name__}"
        return "" if got == want or (got != got and want != want) else f"{got!r} != {want!r}"
    if not isinstance(got, Tensor):
        return f"{type(got).__name__} instead of a tensor"
    if got.dtype != want.dtype or got.shape != want.shape:
        return f"{got.dtype}{tuple(got.shape)} instead of {want.dtype}{tuple(want.shape)}"
    if got.numel() > 1 and got.stride() != want.stride():
        return f"strides {got.stride()} instead of {want.stride()}"
    if not want.is_floating_point():
        return "" if torch.equal(got, want) else "values differ"
    g, w = got.detach().double(), want.detach().double()
    nan = g.isnan() & w.isnan()
    same = (g == w) & (g.signbit() == w.signbit())
    if bool((same | nan).all()):
        return ""
    diff = (g - w).abs().nan_to_num(math.inf)
    return f"values differ (max |Δ| {float(diff.max()):.3g})"


def _run(fn: Callable[[], Any]) -> tuple[Any, BaseException | None]:
    try:
        return fn(), None
    except Exception as error:  # noqa: BLE001 - eager's error is part of what is compared
        return None, error


def _clone(value: Any) -> Any:
    if isinstance(value, Tensor):
        return value.detach().clone(memory_format=torch.preserve_format)
    if isinstance(value, list):
        return [_clone(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_clone(v) for v in value)
    return value


def _leaves(rule: Rule, args: tuple[Any, ...], grad: bool) -> tuple[Any, ...]:
    """Copies of ``args``; with ``grad``, the floating-point tensors the op does not write
    require grad."""
    from ._custom import aten_overload

    copied = _clone(args)
    if not grad or not rule.differentiable:
        return tuple(copied)
    names = [a.name for a in aten_overload(rule)._schema.arguments]
    written = {names.index(n) for n in rule.mutates}
    return tuple(
        a.requires_grad_(True)
        if isinstance(a, Tensor) and a.is_floating_point() and i not in written
        else a
        for i, a in enumerate(copied)
    )


def _compare(
    rule: Rule,
    callable_name: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    grad: bool,
    checkpointed: bool = False,
) -> str:
    """'' if the rule's python entry agrees with the torch callable on this call (each
    side inside an activation checkpoint if ``checkpointed``)."""
    entry = python_entry(rule, callable_name)
    results = []
    for side in ("torch", "rule"):
        inputs = _leaves(rule, args, grad)
        torch.manual_seed(_SEED)

        def direct(inputs: tuple[Any, ...] = inputs, side: str = side) -> Any:
            if side == "torch":
                return _call_torch(callable_name, inputs, dict(kwargs))
            return entry(*inputs, **kwargs)

        def call(direct: Callable[[], Any] = direct) -> Any:
            if checkpointed:  # the backward recomputes it from the saved generator state
                return torch.utils.checkpoint.checkpoint(direct, use_reentrant=False)
            return direct()

        out, error = _run(call)
        gradients: Any = None
        if error is None and grad and isinstance(out, Tensor) and out.requires_grad:
            upstream = _fill(tuple(out.shape), out.dtype, torch.Generator().manual_seed(7))
            upstream = upstream.nan_to_num(1.0, 1.0, 1.0)

            def backward(out: Tensor = out, upstream: Tensor = upstream) -> None:
                torch.autograd.backward(out, upstream)

            _, grad_error = _run(backward)
            if grad_error is not None:
                gradients = type(grad_error)
            else:
                gradients = [
                    a.grad
                    for a in inputs
                    if isinstance(a, Tensor) and a.is_leaf and a.requires_grad
                ]
        results.append((out, error, gradients, inputs, torch.get_rng_state()))
    (t_out, t_err, t_grad, t_in, t_rng), (r_out, r_err, r_grad, r_in, r_rng) = results
    if t_err is not None or r_err is not None:
        if t_err is None or r_err is None or not isinstance(r_err, type(t_err)):
            return f"eager {_name(t_err)}, rule {_name(r_err)}"
        return ""
    for what, got, want in (
        ("output", r_out, t_out),
        ("gradient", r_grad, t_grad),
        (
            "written inputs",
            [a for a in r_in if isinstance(a, Tensor)],
            [a for a in t_in if isinstance(a, Tensor)],
        ),
    ):
        difference = _same(got, want)
        if difference:
            return f"{what}: {difference}"
    if not torch.equal(r_rng, t_rng):
        return "random state afterwards differs"
    return ""


def _name(error: BaseException | None) -> str:
    return "returns" if error is None else type(error).__name__


def cell(
    rule: Rule, callable_name: str, dtype: torch.dtype, grad: bool, checkpointed: bool = False
) -> list[Outcome]:
    """Every case of one cell of the matrix (eager runs; the random state is restored)."""
    shape, samples = SAMPLES[rule.name]
    outcomes = []
    with torch.random.fork_rng(devices=[]), torch.enable_grad():
        for layout in LAYOUTS:
            generator = torch.Generator().manual_seed(_SEED)
            x = make(shape, dtype, layout, generator)
            if x is None:
                continue
            for args, kwargs in samples(x, generator):
                values = tuple(v for v in (*args, *kwargs.values()) if isinstance(v, float))
                detail = _compare(rule, callable_name, args, kwargs, grad, checkpointed)
                outcomes.append(Outcome(layout, values, not detail, detail))
    return outcomes


def checkpointed_cells(rule: Rule) -> tuple[bool, ...]:
    """The ``checkpointed`` values a rule's cells are measured with: a random rule's are
    measured inside an activation checkpoint too (forward only, and with a backward)."""
    return (False, True) if rule.random else (False,)


_memo: dict[tuple[str, str, torch.dtype, bool], tuple[bool, str]] = {}
_memo_lock = threading.Lock()


def admitted(rule: Rule, callable_name: str, dtype: torch.dtype, grad: bool) -> tuple[bool, str]:
    """(whether the rule's python entry is exact for ``callable_name`` on tensors of
    ``dtype``, checkpointed or not, the first disagreement if not); computed once per
    process."""
    key = (rule.name, callable_name, dtype, grad)
    found = _memo.get(key)
    if found is not None:
        return found
    with _memo_lock:
        found = _memo.get(key)
        if found is None:
            found = _admitted(rule, callable_name, dtype, grad)
            _memo[key] = found
    return found


def _admitted(rule: Rule, callable_name: str, dtype: torch.dtype, grad: bool) -> tuple[bool, str]:
    if rule.name not in SAMPLES:
        return False, "no samples in the exactness matrix"
    for checkpointed in checkpointed_cells(rule):
        outcomes = cell(rule, callable_name, dtype, grad, checkpointed)
        bad = next((o for o in outcomes if not o.agrees), None)
        if bad is not None:
            where = " inside an activation checkpoint" if checkpointed else ""
            return (
                False,
                f"{bad.detail}{where} ({bad.layout} {str(dtype).removeprefix('torch.')} input, "
                f"values {', '.join(repr(v) for v in bad.values)})",
            )
    return True, ""
