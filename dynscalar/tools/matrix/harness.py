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

A cell measured under ``torch.autocast`` (``autocast=torch.bfloat16``) runs both sides'
forward calls inside ``torch.autocast("cpu", dtype=...)`` and hands the rule's entry the
autocast state as the bridge does (``autocast="cpu:bfloat16"``); gradients are taken
outside it, as a training step takes them.  Its cells are their own (``... grad
autocast-bfloat16``): eager's autocast casts each op's inputs by that op's policy.

A cell is admitted only if every case agrees.  ``python -m tests.ops_matrix`` measures
every cell and writes the verdicts (:func:`verdict`) into ``dynscalar/ops/admitted.json``;
``python -m dynscalar measure`` measures the cells a user's program lacks, on the user's
torch and device (a cell's tensors are made on the CPU and moved there in their layout,
:func:`moved`), into the user's cache.  Those files are all the library reads
(``dynscalar.ops._admission``): nothing here runs while a user's program compiles.  Where
a cell is not admitted, the bridge compiles the value as stock torch does (specialized,
one ``SpecializationWarning`` with the reason).

Examples:
    >>> import torch
    >>> from dynscalar.ops import RULES
    >>> verdict(RULES["layer_norm"], "torch.layer_norm", torch.float32, False)
    (True, '')
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from dynscalar.ops import RULES, Rule, _admission, python_entry, resolve_callable
from dynscalar.ops._compare import fill as _fill
from dynscalar.ops._compare import same as _same

__all__ = [
    "LAYOUTS",
    "SAMPLES",
    "Outcome",
    "cell",
    "checkpointed_cells",
    "entry",
    "make",
    "moved",
    "rng_devices",
    "verdict",
    "verdicts",
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
def _call_torch(callable_name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    target = resolve_callable(callable_name)
    if isinstance(target, str):
        return getattr(args[0], target)(*args[1:], **kwargs)
    return target(*args, **kwargs)


# ----------------------------------------------------------------------------- samples
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


def moved(value: Any, device: str) -> Any:
    """``value`` with every tensor in it on ``device``, in the same layout (strides); as it
    is on the CPU, where samples are made (the same numbers on every device)."""
    if isinstance(value, Tensor):
        if value.device.type == torch.device(device).type:
            return value
        out = torch.empty_strided(value.size(), value.stride(), dtype=value.dtype, device=device)
        return out.copy_(value).requires_grad_(value.requires_grad)
    if isinstance(value, (list, tuple)):
        return type(value)(moved(v, device) for v in value)
    if isinstance(value, dict):
        return {k: moved(v, device) for k, v in value.items()}
    return value


def rng_devices(device: str) -> Any:
    """``torch.random.fork_rng`` for ``device``'s generator (as well as the CPU's)."""
    kind = torch.device(device).type
    if kind == "cpu":
        return torch.random.fork_rng(devices=[])
    module: Any = torch.get_device_module(kind)
    return torch.random.fork_rng(devices=[module.current_device()], device_type=kind)


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
    if x.dim() < 2:
        return
    # masks at p = 0 and p > 0: boolean and float (ATen's CPU flash kernel takes them where
    # they need no gradient), a float mask that needs one (a learned bias: the math path)
    size = x.shape[-2]
    masks = {
        "bool": torch.rand((size, size), generator=g) > 0.3,
        "float": _fill((size, size), x.dtype, g).nan_to_num(0.0, 1.0, -1.0),
    }
    for p in (0.0, 0.25):
        for mask in masks.values():
            yield (x, key, value), {"attn_mask": mask, "dropout_p": p}
        yield (x, key, value, _clone(masks["float"]), p), {}


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
    from dynscalar.ops._custom import aten_overload

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
    autocast: torch.dtype | None = None,
) -> str:
    """'' if the rule's python entry agrees with the torch callable on this call (each
    side inside an activation checkpoint if ``checkpointed``, its forward under
    ``torch.autocast`` to ``autocast`` if given)."""
    from dynscalar.ops._custom import _device, generator_for, requiring_for

    entry = python_entry(rule, callable_name)
    generator = generator_for([*args, *kwargs.values()])  # of the device the op draws on
    device_type = getattr(_device([*args, *kwargs.values()]), "type", "cpu")
    cast = None if autocast is None else str(autocast).removeprefix("torch.")
    state = None if cast is None else f"{device_type}:{cast}"
    results = []
    for side in ("torch", "rule"):
        inputs = _leaves(rule, args, grad)
        torch.manual_seed(_SEED)

        def direct(inputs: tuple[Any, ...] = inputs, side: str = side) -> Any:
            if side == "torch":
                return _call_torch(callable_name, inputs, dict(kwargs))
            # the bridge's keywords: the autocast state, the inputs that require grad
            extra: dict[str, Any] = {"requiring": requiring_for(rule, inputs, kwargs)}
            if state is not None:
                extra["autocast"] = state
            return entry(*inputs, **kwargs, **extra)

        def call(direct: Callable[[], Any] = direct) -> Any:
            with torch.autocast(device_type, dtype=autocast, enabled=autocast is not None):
                if checkpointed:  # the backward recomputes it from the saved generator state
                    return torch.utils.checkpoint.checkpoint(direct, use_reentrant=False)
                return direct()

        out, error = _run(call)
        gradients: Any = None
        if error is None and grad and isinstance(out, Tensor) and out.requires_grad:
            upstream = _fill(tuple(out.shape), out.dtype, torch.Generator().manual_seed(7))
            upstream = upstream.nan_to_num(1.0, 1.0, 1.0).to(out.device)

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
        results.append((out, error, gradients, inputs, generator.get_state()))
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
    rule: Rule,
    callable_name: str,
    dtype: torch.dtype,
    grad: bool,
    checkpointed: bool = False,
    autocast: torch.dtype | None = None,
    device: str = "cpu",
) -> list[Outcome]:
    """Every case of one cell of the matrix (eager runs; the random state is restored), its
    tensors on ``device``."""
    shape, samples = SAMPLES[rule.name]
    outcomes = []
    with rng_devices(device), torch.enable_grad():
        for layout in LAYOUTS:
            generator = torch.Generator().manual_seed(_SEED)
            x = make(shape, dtype, layout, generator)
            if x is None:
                continue
            for args, kwargs in samples(x, generator):
                args, kwargs = moved(args, device), moved(kwargs, device)
                values = tuple(v for v in (*args, *kwargs.values()) if isinstance(v, float))
                detail = _compare(rule, callable_name, args, kwargs, grad, checkpointed, autocast)
                outcomes.append(Outcome(layout, values, not detail, detail))
    return outcomes


def checkpointed_cells(rule: Rule) -> tuple[bool, ...]:
    """The ``checkpointed`` values a rule's cells are measured with: a random rule's are
    measured inside an activation checkpoint too (forward only, and with a backward)."""
    return (False, True) if rule.random else (False,)


def entry(
    rule: Rule,
    callable_name: str,
    dtype: torch.dtype,
    grad: bool,
    checkpointed: bool,
    autocast: torch.dtype | None = None,
    device: str = "cpu",
) -> dict[str, Any]:
    """One cell measured, as the published JSON keeps it: its cases, how many agree, the
    first that does not."""
    start = time.perf_counter()
    outcomes = cell(rule, callable_name, dtype, grad, checkpointed, autocast, device)
    bad = [o for o in outcomes if not o.agrees]
    return {
        "rule": rule.name,
        "callable": callable_name,
        "dtype": str(dtype).removeprefix("torch."),
        "grad": grad,
        "checkpointed": checkpointed,
        "autocast": None if autocast is None else str(autocast).removeprefix("torch."),
        "cases": len(outcomes),
        "agree": len(outcomes) - len(bad),
        "admitted": not bad,
        "layouts": sorted({o.layout for o in outcomes}),
        "first_disagreement": None
        if not bad
        else {
            "layout": bad[0].layout,
            "values": [repr(v) for v in bad[0].values],
            "detail": bad[0].detail,
        },
        "seconds": round(time.perf_counter() - start, 3),
    }


def verdicts(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The ``python`` column's cells from measured entries: a cell (rule, callable, dtype,
    grad) is admitted where every case agrees, checkpointed or not; else the reason is the
    first case that does not (the unchecked entry's first)."""
    cells: dict[str, dict[str, Any]] = {}
    for e in sorted(entries, key=lambda e: e["checkpointed"]):
        rule = RULES[e["rule"]]
        name = _admission.key(rule, e["callable"], e["dtype"], e["grad"], e.get("autocast"))
        found = cells.setdefault(name, {"admitted": True, "why": ""})
        bad = e["first_disagreement"]
        if found["admitted"] and bad is not None:
            where = " inside an activation checkpoint" if e["checkpointed"] else ""
            if e.get("autocast"):
                where += f" under autocast ({e['autocast']})"
            found["admitted"] = False
            found["why"] = (
                f"{bad['detail']}{where} ({bad['layout']} {e['dtype']} input, "
                f"values {', '.join(bad['values'])})"
            )
    return cells


def verdict(
    rule: Rule,
    callable_name: str,
    dtype: torch.dtype,
    grad: bool,
    autocast: torch.dtype | None = None,
    device: str = "cpu",
) -> tuple[bool, str]:
    """(whether the rule's python entry is exact for ``callable_name`` on tensors of
    ``dtype`` on ``device`` (under ``autocast`` if given), checkpointed or not, the first
    disagreement if not)."""
    measured = [
        entry(rule, callable_name, dtype, grad, c, autocast, device)
        for c in checkpointed_cells(rule)
    ]
    (found,) = verdicts(measured).values()
    return found["admitted"], found["why"]
