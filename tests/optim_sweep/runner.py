"""One sweep row: ``torch.compile(opt.step)`` beside an eager twin, stock and marked.

Each row runs three ways on its backend, each from a fresh Dynamo:

* **paths**: nothing marked, no scheduler (every value constant): the graphs the step
  needs for its control-flow paths (state creation, then the steady step);
* **stock**: nothing marked, the scheduler changing its values (stock torch: a graph per
  value until ``recompile_limit``, then eager);
* **marked**: the keys the scheduler changes marked with ``mark_dynamic_param_groups``.

Every run steps an eager twin (same seed, same scheduler) and records the compiled run's
largest distance from it, over the parameters and the optimizer's state (relative:
``|a - b| / (1 + |b|)``), after every step.
"""

from __future__ import annotations

import copy
import time
import warnings
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

import dynscalar
from dynscalar._caches import reset_caches

from ..helpers import CountingBackend
from .catalogue import Row

#: steps per run: the first creates the optimizer's state; the rest show a graph per
#: value (stock) or one per path (marked)
STEPS = 5
#: the device the model, its data and so the optimizer's state live on (the GPU check,
#: ``scripts/gpu_check.py``, sets "cuda")
DEVICE = "cpu"


@dataclass
class Run:
    """One way of running a row."""

    graphs: int = 0
    distance: float = 0.0  # the largest relative distance from eager over the run
    groups_equal: bool = True  # the param groups' values equal the eager twin's
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0


def _model(row: Row) -> torch.nn.Module:
    torch.manual_seed(0)
    bias = not row.optim.matrices_only
    return torch.nn.Sequential(
        torch.nn.Linear(8, 6, bias=bias), torch.nn.Tanh(), torch.nn.Linear(6, 4, bias=bias)
    )


def _optimizer(row: Row, model: torch.nn.Module) -> torch.optim.Optimizer:
    kwargs = dict(row.optim.kwargs)
    if row.impl in ("foreach", "single", "fused"):
        kwargs["foreach"] = row.impl == "foreach"
        if row.impl == "fused":
            kwargs = {**kwargs, "foreach": False, "fused": True}
    return row.optim.cls(model.parameters(), **kwargs)


def _tensors(model: torch.nn.Module, opt: torch.optim.Optimizer) -> list[torch.Tensor]:
    found = [p.detach() for p in model.parameters()]
    for p in model.parameters():
        for value in opt.state.get(p, {}).values():
            if isinstance(value, torch.Tensor):
                found.append(value.detach())
    return found


def _distance(got: list[torch.Tensor], want: list[torch.Tensor]) -> float:
    if len(got) != len(want):
        return float("inf")
    worst = 0.0
    for g, w in zip(got, want, strict=True):
        if g.shape != w.shape:
            return float("inf")
        g64, w64 = g.double(), w.double()
        diff = ((g64 - w64).abs() / (1 + w64.abs())).nan_to_num(float("inf"))
        both_nan = g64.isnan() & w64.isnan()
        diff = diff.masked_fill(both_nan, 0.0)
        if diff.numel():
            worst = max(worst, float(diff.max()))
    return worst


def _groups(opt: torch.optim.Optimizer) -> list[dict[str, Any]]:
    return [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups]


def run(row: Row, way: str) -> Run:
    """Run ``row`` one ``way`` (``"paths"``, ``"stock"`` or ``"marked"``)."""
    torch._dynamo.reset()
    reset_caches()
    result = Run()
    start = time.perf_counter()
    model = _model(row).to(DEVICE)
    twin = copy.deepcopy(model)
    opt, opt_twin = _optimizer(row, model), _optimizer(row, twin)
    scheduled = way != "paths"
    sched = row.sched.make(opt, row.optim) if scheduled else None
    sched_twin = row.sched.make(opt_twin, row.optim) if scheduled else None
    if way == "marked":
        dynscalar.mark_dynamic_param_groups(opt, *row.sched.keys(row.optim))
    counter = CountingBackend(row.backend)
    step = torch.compile(opt.step, backend=counter)
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(16, 8, generator=generator).to(DEVICE)
    target = torch.randn(16, 4, generator=generator).to(DEVICE)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            for _ in range(STEPS):
                losses = []
                for m, o, s, st in ((model, opt, sched, step), (twin, opt_twin, sched_twin, None)):
                    o.zero_grad()
                    loss = (m(x) - target).pow(2).mean()
                    loss.backward()
                    if st is None:
                        o.step()
                    else:
                        st()
                    losses.append(float(loss))
                    if s is not None:
                        s.step(losses[-1]) if row.sched.takes_metric else s.step()
                result.distance = max(
                    result.distance,
                    _distance(_tensors(model, opt), _tensors(twin, opt_twin)),
                )
                result.groups_equal = result.groups_equal and _groups(opt) == _groups(opt_twin)
        except Exception as error:  # noqa: BLE001 - recorded: the sweep reports it
            result.error = f"{type(error).__name__}: {str(error)[:300]}"
    result.graphs = counter.frame_count
    result.warnings = sorted(
        {
            f"{w.category.__name__}: {str(w.message)[:400]}"
            for w in caught
            if issubclass(w.category, (dynscalar.DynscalarWarning,))
        }
    )
    result.seconds = round(time.perf_counter() - start, 2)
    torch._dynamo.reset()
    return result


#: (optimizer, impl, backend) -> its paths run: the same for every scheduler
_paths: dict[tuple[str, str, str], dict[str, Any]] = {}


def run_row(row: Row, ways: tuple[str, ...] = ("paths", "stock", "marked")) -> dict[str, Any]:
    """The row's record for the published JSON (the paths run is shared by the rows of
    one optimizer, implementation and backend: it runs no scheduler)."""
    record: dict[str, Any] = {
        "optimizer": row.optim.name,
        "impl": row.impl,
        "scheduler": row.sched.name,
        "backend": row.backend,
        "keys": list(row.sched.keys(row.optim)),
    }
    for way in ways:
        if way == "paths":
            key = (row.optim.name, row.impl, row.backend)
            if key not in _paths:
                _paths[key] = asdict(run(row, way))
            record[way] = _paths[key]
        else:
            record[way] = asdict(run(row, way))
    return record
