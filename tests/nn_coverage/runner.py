"""Running a catalogue row: compiled (marked or stock) beside an eager twin, value by value,
on one backend; and the whole table."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import math
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor, nn

import dynscalar
from dynscalar._caches import reset_caches

from ..helpers import CountingBackend
from .catalogue import Row
from .render_docs import BACKENDS, FLOAT32_DEFAULT, SIGMAS, WRONG, compiled_once

STAT_CALLS = 200  # calls per value for the per-element mean check


# --------------------------------------------------------------------------- running a row


def _owner(model: nn.Module, path: str) -> tuple[nn.Module, str]:
    prefix, _, leaf = path.rpartition(".")
    return (model.get_submodule(prefix) if prefix else model), leaf


def _set(model: nn.Module, row: Row, value: float) -> None:
    for path in row.attrs:
        owner, leaf = _owner(model, path)
        setattr(owner, leaf, value)


def _flat(out: Any) -> list[Tensor]:
    if isinstance(out, Tensor):
        return [out]
    return [t for t in out if isinstance(t, Tensor)]


def _max_abs(got: Tensor, want: Tensor) -> float:
    if got.shape != want.shape or got.numel() == 0:
        return 0.0 if got.shape == want.shape else math.inf
    both_nan = got.isnan() & want.isnan()
    diff = (got.double() - want.double()).abs().masked_fill(both_nan, 0.0)
    return float(diff.max())


@dataclass
class Result:
    """One row on one backend, and its differences from eager against its tolerance."""

    backend: str
    marked: bool
    compiles: int = 0
    per_call: list[int] = field(default_factory=list)  # graphs compiled so far, after each value
    # for each value: the first of its path (Row.special: pow's special exponents on inductor)
    new_path: list[bool] = field(default_factory=list)
    rtol: float = 0.0
    atol: float = 0.0
    max_abs: dict[str, float] = field(
        default_factory=lambda: {"output": 0.0, "grad": 0.0, "buffer": 0.0}
    )
    # the smallest atol that would pass with this rtol (for measuring stock inductor)
    needed_atol: float = 0.0
    failures: list[str] = field(default_factory=list)
    check: str = ""  # the random rows' distribution check, in words
    stat: float | None = None  # its largest deviation, in standard deviations/errors
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0

    def add(self, kind: str, name: str, got: Tensor, want: Tensor) -> None:
        """Compare ``got`` with ``want``: the largest difference and any failure."""
        self.max_abs[kind] = max(self.max_abs[kind], _max_abs(got, want))
        if got.shape == want.shape and got.numel():
            excess = (got.double() - want.double()).abs() - self.rtol * want.double().abs()
            excess = excess.masked_fill(got.isnan() & want.isnan(), 0.0)
            self.needed_atol = max(self.needed_atol, float(excess.max()))
        try:
            torch.testing.assert_close(got, want, rtol=self.rtol, atol=self.atol, equal_nan=True)
        except AssertionError as exc:
            first = str(exc).strip().splitlines()
            self.failures.append(f"{name}: {' '.join(first[:3])}")

    @property
    def equal(self) -> bool:
        return self.error is None and not self.failures

    def to_json(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        return out | {"equal": self.equal, "seconds": round(self.seconds, 2)}


def eager_tolerance(row: Row) -> tuple[float, float]:
    """Exact: on eager and aot_eager a rule is used only where it is bit-identical to
    eager's kernel (``dynscalar/ops/admitted.json``), stock torch's specialization elsewhere."""
    return 0.0, 0.0


def inductor_tolerance(stock: Result | dict[str, Any] | None) -> dict[str, Any]:
    """torch's float32 default, unless stock inductor (unmarked) needed more on this row
    and its difference is rounding (below ``WRONG``)."""
    rtol, atol = FLOAT32_DEFAULT
    if stock is None:
        return {"rtol": rtol, "atol": atol, "source": "float32 default"}
    got = stock.to_json() if isinstance(stock, Result) else stock
    needed, worst = got["needed_atol"], max(got["max_abs"].values(), default=0.0)
    if worst >= WRONG:
        return {"rtol": rtol, "atol": atol, "source": "float32 default; stock inductor wrong"}
    if needed > atol:
        return {"rtol": rtol, "atol": needed, "source": "stock inductor"}
    return {"rtol": rtol, "atol": atol, "source": "float32 default"}


@contextlib.contextmanager
def _recording(result: Result) -> Iterator[None]:
    """dynscalar's warnings of this run (each run reports its own: caches reset)."""
    reset_caches()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    seen: list[str] = []
    for w in caught:
        if issubclass(w.category, dynscalar.DynscalarWarning):
            text = f"{w.category.__name__}: {str(w.message).splitlines()[0]}"
            if text not in seen:
                seen.append(text)
    result.warnings = seen


def _prepare(row: Row, marked: bool) -> tuple[nn.Module, nn.Module]:
    torch.manual_seed(0)
    model = row.build().train(row.train)
    eager = copy.deepcopy(model)
    if marked:
        for path in row.attrs:
            owner, leaf = _owner(model, path)
            dynscalar.mark_dynamic_attr(owner, leaf)
    return model, eager


def _inputs(row: Row, seed: int) -> tuple[Tensor, ...]:
    g = torch.Generator().manual_seed(1000 + seed)
    return row.inputs(g)


def _leaves(inputs: tuple[Tensor, ...], row: Row) -> list[Tensor]:
    return [
        x.detach().clone().requires_grad_(i in row.grad and x.is_floating_point())
        for i, x in enumerate(inputs)
    ]


def _step(
    fn: Callable[..., Any], model: nn.Module, inputs: list[Tensor], seed: int
) -> tuple[list[Tensor], list[Tensor]]:
    """Outputs, then the gradients of inputs and parameters for fixed cotangents."""
    for p in model.parameters():
        p.grad = None
    outs = _flat(fn(*inputs))
    g = torch.Generator().manual_seed(2000 + seed)
    loss = sum(
        (o * torch.randn(o.shape, generator=g, dtype=o.dtype)).sum()
        for o in outs
        if o.requires_grad
    )
    grads: list[Tensor] = []
    if isinstance(loss, Tensor):
        loss.backward()
        for x in inputs:
            if x.requires_grad:
                grads.append(x.grad if x.grad is not None else torch.zeros_like(x))
        for p in model.parameters():
            if p.requires_grad:
                grads.append(p.grad if p.grad is not None else torch.zeros_like(p))
    return [o.detach() for o in outs], grads


@dataclass
class Pass:
    """One value's run: the compiled and eager sides and where their differences go."""

    row: Row
    compiled: Any
    model: nn.Module
    eager: nn.Module
    cmp: Result
    value: float
    seed: int
    inputs: tuple[Tensor, ...]

    def step(self, compiled: bool) -> tuple[list[Tensor], list[Tensor]]:
        fn, owner = (self.compiled, self.model) if compiled else (self.eager, self.eager)
        return _step(fn, owner, _leaves(self.inputs, self.row), self.seed)


def _check_exact(p: Pass, calls: int) -> float:
    outs_c, grads_c = p.step(True)
    outs_e, grads_e = p.step(False)
    for j, (a, b) in enumerate(zip(outs_c, outs_e, strict=True)):
        p.cmp.add("output", f"value {p.value}: output {j}", a, b)
    for j, (a, b) in enumerate(zip(grads_c, grads_e, strict=True)):
        p.cmp.add("grad", f"value {p.value}: gradient {j}", a, b)
    buffers_e = dict(p.eager.named_buffers())
    for name, buf in p.model.named_buffers():
        p.cmp.add("buffer", f"value {p.value}: buffer {name}", buf, buffers_e[name])
    return 0.0


def _dropped(row: Row, out: Tensor) -> Tensor:
    """Dropped elements (inputs are positive: dropped is 0, or negative for alpha dropout)."""
    return out < 0 if row.alpha else out == 0


def _check_dropout(p: Pass, calls: int) -> float:
    """The dropped fraction against ``p``; the values where both sides agree, against eager."""
    row, value, cmp = p.row, p.value, p.cmp
    (out_c,), (grad_c,) = p.step(True)
    (out_e,), (grad_e,) = p.step(False)
    drop_c, drop_e = _dropped(row, out_c), _dropped(row, out_e)
    if row.feature:  # one draw per (N, C) channel: whole channels dropped or kept
        per_c = drop_c.flatten(2)
        if not bool((per_c.all(-1) | ~per_c.any(-1)).all()):
            cmp.failures.append(f"value {value}: channels partly dropped")
        drop_c, drop_e = drop_c.flatten(2).all(-1), drop_e.flatten(2).all(-1)
        agree = (drop_c == drop_e)[(...,) + (None,) * (out_c.dim() - 2)].expand_as(out_c)
    else:
        agree = drop_c == drop_e
    fraction = float(drop_c.float().mean())
    sd = math.sqrt(value * (1 - value) / drop_c.numel())
    sigmas = abs(fraction - value) / sd if sd else (0.0 if fraction == value else math.inf)
    if sigmas > SIGMAS:
        cmp.failures.append(f"value {value}: dropped fraction {fraction} is {sigmas:.1f} sd off")
    if not bool(agree.any()):
        cmp.failures.append(f"value {value}: no element kept by both")
    cmp.add("output", f"value {value}: output where both agree", out_c[agree], out_e[agree])
    cmp.add("grad", f"value {value}: gradient where both agree", grad_c[agree], grad_e[agree])
    return sigmas


def _check_means(p: Pass, calls: int) -> float:
    """Per-element means of outputs and gradients over ``calls`` calls, against eager's."""
    samples: list[list[Tensor]] = [[], []]
    for side in (0, 1):
        for _ in range(calls):
            outs, grads = p.step(side == 0)
            samples[side].append(torch.cat([t.flatten() for t in outs + grads]).double())
    a, b = torch.stack(samples[0]), torch.stack(samples[1])
    se = (a.var(0) / calls + b.var(0) / calls).sqrt()
    # beyond the backend's tolerance: a quantity that is 0 in exact arithmetic (the
    # gradient of attention's key bias) is rounding noise whose mean depends on the
    # kernels' summation order, not on the random stream
    floor = p.cmp.atol + p.cmp.rtol * b.mean(0).abs()
    gap = ((a.mean(0) - b.mean(0)).abs() - floor).clamp_min(0)
    constant = se == 0
    z = float(torch.where(constant, torch.zeros_like(gap), gap / se.clamp_min(1e-300)).max())
    if z > SIGMAS:
        p.cmp.failures.append(f"value {p.value}: a mean is {z:.1f} standard errors off")
    if bool(constant.any()):  # elements no dropout reaches: equal as on exact rows
        p.cmp.add("output", f"value {p.value}: constant elements", a[0][constant], b[0][constant])
    return z


CHECKS = {"exact": _check_exact, "dropout": _check_dropout, "mean": _check_means}


def _described(row: Row, worst: float, calls: int) -> str:
    """The random rows' distribution check, in words."""
    if row.kind == "dropout":
        unit = "channels" if row.feature else "elements"
        kept = "kept and dropped" if row.alpha else "kept"
        return (
            f"dropped {unit} within {SIGMAS:g} sd of p (worst {worst:.1f} sd); "
            f"{kept} values vs eager where both agree"
        )
    return (
        f"per-element means of outputs and gradients over {calls} calls per value within "
        f"{SIGMAS:g} standard errors beyond the tolerance (worst {worst:.1f})"
    )


def run_row(
    row: Row,
    backend: str,
    *,
    marked: bool = True,
    tolerance: tuple[float, float] | None = None,
    calls: int = STAT_CALLS,
) -> Result:
    """Compile ``row`` on ``backend`` and run its 4 values beside an eager twin."""
    if tolerance is None:
        tolerance = eager_tolerance(row) if backend != "inductor" else FLOAT32_DEFAULT
    rtol, atol = tolerance
    result = Result(backend, marked, rtol=rtol, atol=atol, new_path=row.new_paths(backend))
    start = time.perf_counter()
    torch._dynamo.reset()
    try:
        with _recording(result):
            model, eager = _prepare(row, marked)
            counter = CountingBackend(backend)
            compiled = torch.compile(model, backend=counter)

            worst = 0.0
            for i, value in enumerate(row.values):
                _set(model, row, value)
                _set(eager, row, value)
                p = Pass(row, compiled, model, eager, result, value, i, _inputs(row, i))
                worst = max(worst, CHECKS[row.kind](p, calls))
                result.per_call.append(counter.frame_count)
                result.compiles = counter.frame_count
            if row.kind != "exact":
                result.check, result.stat = _described(row, worst, calls), worst
    except Exception as exc:  # noqa: BLE001 - recorded in the table, never hidden
        result.error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}"
    finally:
        torch._dynamo.reset()
    result.seconds = time.perf_counter() - start
    return result


# --------------------------------------------------------------------------- the whole table


def status(row: Row, results: dict[str, dict[str, Any]]) -> str:
    """``dynamic, equal``: on every backend no recompile after the first value, and equal."""
    if any(r["error"] for r in results.values()):
        return "error"
    if not all(r["equal"] for r in results.values()):
        return "NOT EQUAL"
    if all(compiled_once(r) for r in results.values()):
        return "dynamic, equal"
    if any(r["warnings"] for r in results.values()):
        return "specialized (warned), equal"
    return "recompiles, equal"


def run_table(
    rows: list[Row], backends: list[str], *, stock: bool = True, log: Any = print
) -> dict[str, Any]:
    """Every row on ``backends`` (and unmarked on stock torch), its status, logged."""
    out: list[dict[str, Any]] = []
    for row in rows:
        entry: dict[str, Any] = {"id": row.id, "expected": {b: row.expected(b) for b in BACKENDS}}
        entry |= {k: getattr(row, k) for k in ("module", "attrs", "values", "mode", "kind", "op")}
        entry |= {"note": row.note, "tolerance": list(eager_tolerance(row)), "backends": {}}
        entry["stock"] = {}
        if stock:
            entry["stock"]["aot_eager"] = run_row(row, "aot_eager", marked=False).to_json()
        for backend in backends:
            tol = None
            if backend == "inductor":
                base = run_row(row, "inductor", marked=False) if stock else None
                if base is not None:
                    entry["stock"]["inductor"] = base.to_json()
                entry["inductor_tolerance"] = inductor_tolerance(base)
                tol = (entry["inductor_tolerance"]["rtol"], entry["inductor_tolerance"]["atol"])
            entry["backends"][backend] = run_row(row, backend, tolerance=tol).to_json()
        entry["status"] = status(row, entry["backends"])
        summary = " ".join(
            f"{b}={r['compiles']}{'' if r['equal'] else '!'}" for b, r in entry["backends"].items()
        )
        stock_aot = entry["stock"].get("aot_eager", {}).get("compiles", "-")
        log(f"{row.id:28s} stock={stock_aot} {summary}  {entry['status']}", flush=True)
        out.append(entry)
    return {"rows": out}
