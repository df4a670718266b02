"""What dynscalar costs against the best torch can do (issue 15), side by side in one run.

Four sections, each interleaved (A B A B ... over many rounds, the order rotated every
round) and reported as medians with the p10-p90 spread, so that noise shows:

* ``percall``: one compiled call of the seed model (``Linear(64, 64)``, ``self.step += 1``)
  for every way of marking - a ``DynamicInt`` attribute, ``mark_dynamic_attr``,
  ``@dynamic_attrs``, ``mark_dynamic_args`` / ``@dynamic_args`` (the step passed as an
  argument) - against ``torch.compiler.config.dynamic_sources`` compiled by stock torch (the
  bridge's hooks taken out for that compile), and a static graph for reference; per
  backend.  Ratios are paired per round against ``dynamic_sources`` on the same model shape.
  With ``--callgrind`` each strategy also runs under valgrind: instructions per call, which
  do not depend on the machine's load.
* ``eager``: ``DynamicInt + 1``, torch calls receiving a proxy, and the seed model's eager
  forward with a proxy attribute, each against the plain value.
* ``compile``: the bridge's own time (its hooks' self time) in the first compile of a
  48-layer transformer-style stack with over 1,000 attributes, and how compile time and
  per-call time grow with 1, 10 and 100 marked scalars across a deep model (plotted),
  against the same scalars made dynamic by ``dynamic_sources`` and against none.
* ``warm``: a second process with the same ``TORCHINDUCTOR_CACHE_DIR``: inductor's FX graph
  cache and the AOTAutograd cache hits for marked models against the same model with
  ``dynamic_sources`` in a process without dynscalar, and for dynamic floats with
  dynscalar's own AOTAutograd cache-key component against the former bypass.

    python benchmarks/bench_overhead.py                       # everything (~40 min here)
    python benchmarks/bench_overhead.py --quick               # seconds: a plumbing check
    python benchmarks/bench_overhead.py --sections percall --backends aot_eager --rounds 40
    python benchmarks/bench_overhead.py --callgrind           # + instruction counts
    python benchmarks/bench_overhead.py --callgrind --callgrind-scope eager  # eager ones only
    python benchmarks/render_overhead.py benchmarks/results/overhead/overhead.json

Writes ``<out>/overhead.json`` and ``<out>/overhead_*.png`` (default out:
``benchmarks/results/overhead``, git-ignored).  Run the published measurement when the
machine is quiet: the JSON records the load average before and after.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_OUT = HERE / "results" / "overhead"
sys.path.insert(0, str(ROOT))

import dynscalar as ds  # noqa: E402  (installs the bridge hook before Dynamo loads)
from dynscalar._demo import SeedModel, cpu_model, import_pyplot  # noqa: E402

REFERENCE = "dynamic_sources"
GOAL_PERCALL = 1.02
GOAL_ADD_NS = 300.0
GOAL_TORCH_CALL_NS = 1000.0
GOAL_FORWARD = 1.05
GOAL_SHARE = 0.02


# =============================================================================== helpers
def quantiles(values: list[float]) -> dict[str, float]:
    """Median and the p10-p90 spread of ``values``."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return {"median": ordered[0], "p10": ordered[0], "p90": ordered[0]}
    deciles = statistics.quantiles(ordered, n=10, method="inclusive")
    return {"median": statistics.median(ordered), "p10": deciles[0], "p90": deciles[-1]}


#: "cpu": this thread's CPU time (time.thread_time), which a busy machine inflates far less
#: than wall-clock time (a process that loses its core for a while does not count the wait);
#: "wall": time.perf_counter.  Set from --timer.
TIMER = {"name": "cpu"}


def _timer() -> Callable[[], float]:
    return time.thread_time if TIMER["name"] == "cpu" else time.perf_counter


def interleaved(
    fns: dict[str, Callable[[], Any]], rounds: int, number: int
) -> dict[str, list[float]]:
    """Seconds per call of each function: ``rounds`` samples of ``number`` calls each,
    the functions taking turns, in an order rotated every round."""
    names = list(fns)
    samples: dict[str, list[float]] = {name: [] for name in names}
    timer = _timer()
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            fn = fns[name]
            start = timer()
            for _ in range(number):
                fn()
            samples[name].append((timer() - start) / number)
    return samples


def paired_ratios(samples: list[float], reference: list[float]) -> list[float]:
    return [a / b for a, b in zip(samples, reference, strict=True)]


def loadavg() -> list[float] | None:
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None


def machine_info() -> dict[str, Any]:
    import wrapt

    c_ext = type(wrapt.BaseObjectProxy).__module__ == "builtins"
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "wrapt": f"{wrapt.__version__} ({'C extension' if c_ext else 'pure Python'})",
        "dynscalar": ds.__version__,
        "torch_threads": torch.get_num_threads(),
    }


class CountingBackend:
    """A backend that counts the graphs it compiles (by name: 'eager', 'aot_eager', ...)."""

    def __init__(self, name: str) -> None:
        from torch._dynamo.backends.registry import lookup_backend

        self.name, self.graphs, self._real = name, 0, lookup_backend(name)

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        self.graphs += 1
        return self._real(gm, example_inputs)


@contextlib.contextmanager
def stock_torch() -> Iterator[None]:
    """dynscalar's bridge taken out of Dynamo for what runs inside: stock torch's guards and
    bytecode for the reference strategies (it is put back afterwards)."""
    from dynscalar._bridge._install import _patches

    saved = []
    for owner, name, _hook in _patches():
        current = owner.__dict__[name]
        saved.append((owner, name, current))
        setattr(owner, name, current.__wrapped__)
    try:
        yield
    finally:
        for owner, name, current in saved:
            setattr(owner, name, current)


@contextlib.contextmanager
def cold_caches() -> Iterator[None]:
    """A first compile as in a fresh process: inductor's in-memory caches cleared and an
    empty cache directory (``torch._inductor.utils.fresh_cache``, torch's own test helper)."""
    from torch._inductor.utils import fresh_cache

    with fresh_cache():
        yield


def fresh_class(cls: type, tag: str, **namespace: Any) -> type:
    """A subclass with its own copy of ``forward``'s code object.

    Dynamo caches compiled code per code object; strategies sharing one ``forward`` would
    each pay for the others' guards on every call.
    """
    fwd = cls.forward  # type: ignore[attr-defined]
    code = fwd.__code__.replace(co_name=f"forward_{tag}")
    forward = types.FunctionType(
        code, fwd.__globals__, "forward", fwd.__defaults__, fwd.__closure__
    )
    return type(f"{cls.__name__}_{tag}", (cls,), {"forward": forward, **namespace})


# ================================================================== per compiled call
class SeedArgs(torch.nn.Module):
    """The seed model with the counter passed in and returned (argument marks)."""

    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(width, width)

    def forward(self, x: torch.Tensor, step: int) -> tuple[torch.Tensor, int]:
        x = x + 1
        return self.layer(x), step + 1


class SeedStatic(torch.nn.Module):
    """The seed model without a counter: a static graph, the floor of a compiled call."""

    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + 1
        out: torch.Tensor = self.layer(x)
        return out


@dataclass(frozen=True)
class PerCall:
    label: str
    kind: str  # "attr" (self.step += 1), "args" (step passed and returned), "static"
    reference: str  # the strategy whose ratio is "the best torch can do" for this shape
    build: Callable[[str], tuple[torch.nn.Module, contextlib.AbstractContextManager[Any]]]


def _seed(tag: str) -> torch.nn.Module:
    module: torch.nn.Module = fresh_class(SeedModel, tag)()
    return module


@contextlib.contextmanager
def _stock_sources(names: str) -> Iterator[None]:
    """Stock torch compiling with ``dynamic_sources=names``."""
    with stock_torch(), torch.compiler.config.patch(dynamic_sources=names):
        yield


def _build_dynamic_sources(tag: str) -> tuple[torch.nn.Module, Any]:
    return _seed(tag), _stock_sources("L['self'].step")


def _build_dynamic_sources_bridge(tag: str) -> tuple[torch.nn.Module, Any]:
    return _seed(tag), torch.compiler.config.patch(dynamic_sources="L['self'].step")


def _build_proxy(tag: str) -> tuple[torch.nn.Module, Any]:
    model = _seed(tag)
    model.step = ds.DynamicInt(0)
    return model, contextlib.nullcontext()


def _build_registry(tag: str) -> tuple[torch.nn.Module, Any]:
    return ds.mark_dynamic_attr(_seed(tag), "step"), contextlib.nullcontext()


def _build_decorator(tag: str) -> tuple[torch.nn.Module, Any]:
    return ds.dynamic_attrs("step")(fresh_class(SeedModel, tag))(), contextlib.nullcontext()


def _build_args_sources(tag: str) -> tuple[torch.nn.Module, Any]:
    return fresh_class(SeedArgs, tag)(), _stock_sources("L['step']")


def _build_args(tag: str) -> tuple[torch.nn.Module, Any]:
    return ds.mark_dynamic_args(fresh_class(SeedArgs, tag)(), "step"), contextlib.nullcontext()


def _build_args_decorator(tag: str) -> tuple[torch.nn.Module, Any]:
    cls = fresh_class(SeedArgs, tag)
    ds.dynamic_args("step")(cls.forward)  # function marks: keyed by the code object
    return cls(), contextlib.nullcontext()


def _build_static(tag: str) -> tuple[torch.nn.Module, Any]:
    return fresh_class(SeedStatic, tag)(), contextlib.nullcontext()


PERCALL: dict[str, PerCall] = {
    "dynamic_sources": PerCall(
        "torch: compiler.config.dynamic_sources", "attr", REFERENCE, _build_dynamic_sources
    ),
    "ds_proxy": PerCall("dynscalar.DynamicInt attribute", "attr", REFERENCE, _build_proxy),
    "ds_registry": PerCall("dynscalar.mark_dynamic_attr", "attr", REFERENCE, _build_registry),
    "ds_decorator": PerCall("@dynscalar.dynamic_attrs", "attr", REFERENCE, _build_decorator),
    "args_dynamic_sources": PerCall(
        "torch: dynamic_sources on the argument",
        "args",
        "args_dynamic_sources",
        _build_args_sources,
    ),
    "ds_args": PerCall(
        "dynscalar.mark_dynamic_args (module)", "args", "args_dynamic_sources", _build_args
    ),
    "ds_args_decorator": PerCall(
        "@dynscalar.dynamic_args (function)", "args", "args_dynamic_sources", _build_args_decorator
    ),
    "dynamic_sources_bridge": PerCall(
        "dynamic_sources, dynscalar imported (unmarked model)",
        "attr",
        REFERENCE,
        _build_dynamic_sources_bridge,
    ),
    "static": PerCall(
        "static graph (no counter), for reference", "static", REFERENCE, _build_static
    ),
}
DS_PERCALL = ("ds_proxy", "ds_registry", "ds_decorator", "ds_args", "ds_args_decorator")


@dataclass
class Runner:
    """A compiled strategy ready to be timed, with its eager twin for the final check."""

    name: str
    call: Callable[[], Any]
    check: Callable[[], bool]
    counter: CountingBackend
    context: contextlib.AbstractContextManager[Any]

    def compile(self) -> None:
        """The first call compiles: by stock torch or through the bridge, as the strategy
        says.  Called after every strategy is built: building a decorated class or marking
        a function bumps the marks epoch, which would recompile graphs compiled before."""
        with self.context:
            self.call()


def make_runner(name: str, backend: str, width: int = 64) -> Runner:
    strategy = PERCALL[name]
    torch.manual_seed(0)
    model, context = strategy.build(name)
    eager = copy.deepcopy(model)
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    x = torch.randn(8, width)
    state = {"step": 0}

    if strategy.kind == "args":

        def call() -> Any:
            out, state["step"] = compiled(x, state["step"])
            return out

        def check() -> bool:
            ok = True
            for i in range(3):
                xi = torch.randn(8, width)
                got, s1 = compiled(xi, i)
                want, s2 = eager(xi, i)
                ok &= bool(torch.allclose(got, want, rtol=1e-5, atol=1e-6) and s1 == s2 == i + 1)
            return ok

    else:

        def call() -> Any:
            return compiled(x)

        def check() -> bool:
            if strategy.kind == "attr":  # same counter value on both before comparing
                eager.step = model.step
            ok = True
            for _ in range(3):
                xi = torch.randn(8, width)
                ok &= bool(torch.allclose(compiled(xi), eager(xi), rtol=1e-5, atol=1e-6))
            if strategy.kind == "attr":
                ok &= type(model.step) is type(eager.step) and model.step == eager.step
            return ok

    return Runner(name, call, check, counter, context)


def run_percall(
    backends: list[str], strategies: list[str], rounds: int, number: int, warmup: int
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for backend in backends:
        torch._dynamo.reset()
        runners = {name: make_runner(name, backend) for name in strategies}
        for runner in runners.values():
            runner.compile()
        for runner in runners.values():
            for _ in range(warmup):
                runner.call()
        samples = interleaved({n: r.call for n, r in runners.items()}, rounds, number)
        rows = []
        for name, runner in runners.items():
            strategy = PERCALL[name]
            ref = samples.get(strategy.reference)
            ratio = quantiles(paired_ratios(samples[name], ref)) if ref else None
            attr_ref = samples.get(REFERENCE)
            rows.append(
                {
                    "strategy": name,
                    "label": strategy.label,
                    "reference": strategy.reference,
                    "compiles": runner.counter.graphs,
                    "equal_to_eager": runner.check(),
                    "us": {k: v * 1e6 for k, v in quantiles(samples[name]).items()},
                    "ratio": ratio,
                    "ratio_vs_attr_reference": (
                        quantiles(paired_ratios(samples[name], attr_ref)) if attr_ref else None
                    ),
                    "samples_us": [round(v * 1e6, 3) for v in samples[name]],
                }
            )
        out[backend] = {"rounds": rounds, "calls_per_round": number, "rows": rows}
        torch._dynamo.reset()
    return out


# ----------------------------------------------------------------------- callgrind
def callgrind_available() -> bool:
    return shutil.which("valgrind") is not None and shutil.which("callgrind_control") is not None


def _callgrind_total(path: Path) -> int:
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise RuntimeError(f"no totals in {path}")


def run_callgrind_child(args: list[str], workdir: Path, timeout: float) -> int:
    """Run ``bench_overhead.py --child-callgrind ...`` under callgrind; instructions counted
    between the child's two toggles (valgrind instruments only after warm-up)."""
    out_file = workdir / f"callgrind.{abs(hash(tuple(args)))}.out"
    cmd = [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        "--collect-atstart=no",
        f"--callgrind-out-file={out_file}",
        sys.executable,
        str(Path(__file__).resolve()),
        "--child-callgrind",
        *args,
    ]
    # Its own inductor cache: under valgrind the CPU reports AVX2 (no AVX-512), and kernels
    # inductor compiles there, loaded later from a shared cache by a native process, crashed
    # it ("double free or corruption", torch 2.13, in stock torch's dynamic_sources graph).
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(workdir / "inductor-cache")}
    result = subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, check=False, env=env
    )
    if result.returncode != 0:
        raise RuntimeError(f"callgrind child {args} failed:\n{result.stderr[-3000:]}")
    return _callgrind_total(out_file)


def child_callgrind(kind: str, name: str, backend: str, number: int) -> None:
    """In a valgrind child: warm up, switch instrumentation on, count ``number`` calls."""
    torch.set_num_threads(1)
    if kind == "percall":
        runner = make_runner(name, backend)
        runner.compile()
        fn = runner.call
    elif kind == "floor":
        fn = FLOOR_CASES[name][1]()
    else:
        fn = EAGER_CASES[name][1 if backend == "proxy" else 0]()
    for _ in range(50):
        fn()
    subprocess.run(
        ["callgrind_control", "--instr=on", str(os.getpid())], check=True, capture_output=True
    )
    for _ in range(20):  # instrumented, not counted: caches settle
        fn()
    torch._C._valgrind_toggle()
    for _ in range(number):
        fn()
    torch._C._valgrind_toggle()


def run_callgrind(
    backends: list[str], strategies: list[str], eager_cases: list[str], number: int, jobs: int
) -> dict[str, Any]:
    """Instructions per call of every per-call strategy (none when ``strategies`` is empty)
    and eager case, and the pieces of the eager floor (``jobs`` processes at once)."""
    from concurrent.futures import ThreadPoolExecutor

    tasks = [("percall", s, b) for b in backends for s in strategies]
    tasks += [("eager", c, v) for c in eager_cases for v in ("plain", "proxy")]
    tasks += [("floor", c, "proxy") for c in FLOOR_CASES]
    with tempfile.TemporaryDirectory(prefix="dynscalar-cg-") as tmp:

        def one(task: tuple[str, str, str]) -> int:
            total = run_callgrind_child([*task, str(number)], Path(tmp), 3600)
            return round(total / number)

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            counts = dict(zip(tasks, pool.map(one, tasks), strict=True))
    percall: dict[str, Any] = {}
    for backend in backends:
        rows = percall[backend] = {}
        for name in strategies:
            ref = counts.get(("percall", PERCALL[name].reference, backend))
            n = counts[("percall", name, backend)]
            rows[name] = {"instructions": n, "ratio": round(n / ref, 4) if ref else None}
    eager = {
        case: {
            "plain": counts[("eager", case, "plain")],
            "proxy": counts[("eager", case, "proxy")],
        }
        for case in eager_cases
    }
    floor = {case: counts[("floor", case, "proxy")] for case in FLOOR_CASES}
    return {"calls": number, "percall": percall, "eager": eager, "floor": floor}


def _floor_call() -> Callable[[], Any]:
    return lambda: None


def _floor_dispatch() -> Callable[[], Any]:
    class Number:
        __slots__ = ()

        def __add__(self, other: Any) -> Any:
            return 8

    a = Number()
    return lambda: a + 1


def _floor_alloc() -> Callable[[], Any]:
    from dynscalar._proxy import DynamicInt, _alloc

    return lambda: _alloc(DynamicInt)


def _floor_store_value() -> Callable[[], Any]:
    from dynscalar._proxy import _set_wrapped

    p = ds.DynamicInt(7)
    return lambda: _set_wrapped(p, 7)


def _floor_store_spec() -> Callable[[], Any]:
    p = ds.DynamicInt(7)
    spec = p.spec

    def store() -> None:
        p._self_spec = spec  # type: ignore[attr-defined]

    return store


def _floor_read() -> Callable[[], Any]:
    p = ds.DynamicInt(7)
    return lambda: p.__wrapped__


def _floor_torch_function() -> Callable[[], Any]:
    t = torch.ones(8, 8)
    result = t * 2

    class Hooked:
        """Not a number to torch: torch.mul hands it to a hook that returns at once."""

        __slots__ = ()

        @classmethod
        def __torch_function__(
            cls, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            return result

    h = Hooked()
    return lambda: torch.mul(t, h)


#: Pieces of ``DynamicInt + 1`` measured alone under callgrind (the eager floor), and the
#: floor of a torch call receiving an object that is not a number to torch's C parser:
#: name -> (what it is, factory of the measured call)
FLOOR_CASES: dict[str, tuple[str, Callable[[], Callable[[], Any]]]] = {
    "call": ("the measuring loop and an empty call (subtracted from the others)", _floor_call),
    "dispatch": ("a Python-level `__add__` returning an int (operator dispatch)", _floor_dispatch),
    "read": ("reading `proxy.__wrapped__`", _floor_read),
    "alloc": ("allocating and freeing a wrapt proxy (`BaseObjectProxy.__new__`)", _floor_alloc),
    "store_value": ("storing the value through wrapt's `__wrapped__` setter", _floor_store_value),
    "store_spec": ("storing the spec slot", _floor_store_spec),
    "torch_function": (
        "`torch.mul(t, h)` where `h` has a `__torch_function__` that returns at once",
        _floor_torch_function,
    ),
}


# ============================================================================ eager
def _eager_add() -> tuple[Callable[[], Callable[[], Any]], Callable[[], Callable[[], Any]]]:
    def plain() -> Callable[[], Any]:
        i = 7
        return lambda: i + 1

    def proxy() -> Callable[[], Any]:
        i = ds.DynamicInt(7)
        return lambda: i + 1

    return plain, proxy


def _eager_tensor_mul() -> tuple[Callable[[], Callable[[], Any]], Callable[[], Callable[[], Any]]]:
    def plain() -> Callable[[], Any]:
        t, f = torch.ones(8, 8), 0.5
        return lambda: t * f

    def proxy() -> Callable[[], Any]:
        t, f = torch.ones(8, 8), ds.DynamicFloat(0.5)
        return lambda: t * f

    return plain, proxy


def _eager_torch_mul() -> tuple[Callable[[], Callable[[], Any]], Callable[[], Callable[[], Any]]]:
    def plain() -> Callable[[], Any]:
        t, i = torch.ones(8, 8), 2
        return lambda: torch.mul(t, i)

    def proxy() -> Callable[[], Any]:
        t, i = torch.ones(8, 8), ds.DynamicInt(2)
        return lambda: torch.mul(t, i)

    return plain, proxy


def _eager_view() -> tuple[Callable[[], Callable[[], Any]], Callable[[], Callable[[], Any]]]:
    def plain() -> Callable[[], Any]:
        t, i = torch.ones(8, 8), 2
        return lambda: t.view(i, -1)

    def proxy() -> Callable[[], Any]:
        t, i = torch.ones(8, 8), ds.DynamicInt(2)
        return lambda: t.view(i, -1)

    return plain, proxy


def _eager_full() -> tuple[Callable[[], Callable[[], Any]], Callable[[], Callable[[], Any]]]:
    def plain() -> Callable[[], Any]:
        f = 0.5
        return lambda: torch.full((8,), f)

    def proxy() -> Callable[[], Any]:
        f = ds.DynamicFloat(0.5)
        return lambda: torch.full((8,), f)

    return plain, proxy


def _eager_forward() -> tuple[Callable[[], Callable[[], Any]], Callable[[], Callable[[], Any]]]:
    x = torch.randn(8, 64)

    def make(proxy: bool) -> Callable[[], Any]:
        torch.manual_seed(0)
        model = SeedModel().eval()
        if proxy:
            model.step = ds.DynamicInt(0)

        def forward() -> Any:
            with torch.no_grad():
                return model(x)

        return forward

    return (lambda: make(False)), (lambda: make(True))


EAGER_CASES: dict[str, Any] = {}
_EAGER_SPECS: dict[str, tuple[str, Callable[[], Any], int]] = {
    # name: (label, factory, calls per sample at --number 1.0)
    "add": ("`x + 1` (DynamicInt vs int)", _eager_add, 20_000),
    "tensor_mul": ("`t * x`, 8x8 tensor (DynamicFloat vs float)", _eager_tensor_mul, 2_000),
    "torch_mul": ("`torch.mul(t, x)` (DynamicInt vs int)", _eager_torch_mul, 2_000),
    "view": ("`t.view(x, -1)` (DynamicInt vs int)", _eager_view, 2_000),
    "full": ("`torch.full((8,), x)` (DynamicFloat vs float)", _eager_full, 2_000),
    "forward": ("seed model eager forward (DynamicInt `step` vs int)", _eager_forward, 300),
}
for _name, (_label, _factory, _n) in _EAGER_SPECS.items():
    EAGER_CASES[_name] = _factory()


def run_eager(cases: list[str], rounds: int, scale: float) -> dict[str, Any]:
    rows = []
    for name in cases:
        label, _factory, base = _EAGER_SPECS[name]
        plain_make, proxy_make = EAGER_CASES[name]
        fns = {"plain": plain_make(), "proxy": proxy_make()}
        number = max(1, int(base * scale))
        for fn in fns.values():  # warm up
            for _ in range(max(1, number // 10)):
                fn()
        samples = interleaved(fns, rounds, number)
        plain, proxy = samples["plain"], samples["proxy"]
        rows.append(
            {
                "case": name,
                "label": label,
                "calls_per_sample": number,
                "plain_ns": {k: v * 1e9 for k, v in quantiles(plain).items()},
                "proxy_ns": {k: v * 1e9 for k, v in quantiles(proxy).items()},
                "overhead_ns": {
                    k: v * 1e9
                    for k, v in quantiles(
                        [b - a for a, b in zip(plain, proxy, strict=True)]
                    ).items()
                },
                "ratio": quantiles(paired_ratios(proxy, plain)),
            }
        )
    return {"rounds": rounds, "rows": rows}


# ========================================================================== compile
class Block(torch.nn.Module):
    """A pre-norm transformer block: attention and MLP, each with a scaled residual."""

    def __init__(self, dim: int, heads: int, hidden: int) -> None:
        super().__init__()
        self.norm1 = torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)
        self.norm2 = torch.nn.LayerNorm(dim)
        self.fc1 = torch.nn.Linear(dim, hidden)
        self.act = torch.nn.GELU()
        self.fc2 = torch.nn.Linear(hidden, dim)
        self.drop = torch.nn.Dropout(0.1)
        self.heads = heads
        self.gamma = 1.0  # residual scale: an unmarked float attribute read in forward

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.gamma * self.drop(self.proj(a.transpose(1, 2).reshape(b, t, d)))
        return x + self.gamma * self.drop(self.fc2(self.act(self.fc1(self.norm2(x)))))


class Stack(torch.nn.Module):
    """``depth`` transformer blocks, a step counter and a float warm-up factor (both marked
    in the ``compile`` section: one dynamic int, one dynamic float)."""

    def __init__(self, depth: int, dim: int = 64, heads: int = 4, hidden: int = 128) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block(dim, heads, hidden) for _ in range(depth))
        self.head = torch.nn.Linear(dim, dim)
        self.step = 0
        self.warm = 0.01

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.step += 1
        for block in self.blocks:
            x = block(x)
        return self.head(x) * self.warm + self.step


def count_attributes(model: torch.nn.Module) -> int:
    """Everything reachable as ``module.name`` on every module: instance attributes,
    parameters, buffers and submodules."""
    return sum(
        len([k for k in vars(m) if not k.startswith("_")])
        + len(m._parameters)
        + len(m._buffers)
        + len(m._modules)
        for m in model.modules()
    )


class HookTimer:
    """Time spent in the bridge's own code during a compile, by hook.

    A stack of regions: entering a hook opens a bridge region, and entering what the hook
    wraps (torch's original), or Dynamo realizing a lazy variable (work Dynamo does anyway,
    here or later), opens a torch region; elapsed time goes to the region on top.  So a
    hook's time excludes torch's work it triggers, and a hook nested in that work (the
    ``_wrap`` hook inside a realization) is counted once, as itself.
    """

    def __init__(self) -> None:
        self.self_s: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._stack: list[str | None] = []
        self._last = time.perf_counter()

    def _switch(self) -> None:
        now = time.perf_counter()
        if self._stack and self._stack[-1] is not None:
            label = self._stack[-1]
            self.self_s[label] = self.self_s.get(label, 0.0) + now - self._last
        self._last = now

    def _enter(self, label: str | None) -> None:
        self._switch()
        self._stack.append(label)

    def _leave(self) -> None:
        self._switch()
        self._stack.pop()

    def timed(self, label: str, hook: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
            def torch_part(*a: Any, **k: Any) -> Any:
                self._enter(None)
                try:
                    return wrapped(*a, **k)
                finally:
                    self._leave()

            self.calls[label] = self.calls.get(label, 0) + 1
            self._enter(label)
            try:
                return hook(torch_part, instance, args, kwargs)
            finally:
                self._leave()

        return wrapper

    def region(self, label: str | None, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if label is not None:
                self.calls[label] = self.calls.get(label, 0) + 1
            self._enter(label)
            try:
                return fn(*args, **kwargs)
            finally:
                self._leave()

        return wrapper

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """Swap every bridge hook for a timed copy; the float AOT hooks too once installed."""
        import wrapt
        from torch._dynamo.variables.lazy import LazyVariableTracker

        from dynscalar._bridge._install import _patches

        restore: list[tuple[Any, str, Any]] = []
        targets = [(owner, name) for owner, name, _hook in _patches()] + _aot_hook_targets()
        for owner, name in targets:
            # a class's __dict__: getattr would bind the wrapper (wrapt's descriptor protocol)
            current = vars(owner).get(name)
            if not isinstance(current, wrapt.FunctionWrapper):
                continue
            restore.append((owner, name, current))
            label = f"{getattr(owner, '__name__', owner)}.{name}"
            hook = self.timed(label, current._self_wrapper)
            setattr(owner, name, wrapt.FunctionWrapper(current.__wrapped__, hook))
        realize = vars(LazyVariableTracker)["realize"]
        restore.append((LazyVariableTracker, "realize", realize))
        LazyVariableTracker.realize = self.region(None, realize)  # type: ignore[method-assign]
        try:
            yield
        finally:
            for owner, name, current in reversed(restore):
                setattr(owner, name, current)


def _aot_hook_targets() -> list[tuple[Any, str]]:
    """The float path's AOT hooks (wrapped at the first dynamic float)."""
    from torch._functorch._aot_autograd import autograd_cache, graph_compile

    return [
        (graph_compile, "tensorify_python_scalars"),
        (autograd_cache, "check_cacheable"),
        (autograd_cache, "autograd_cache_key"),
    ]


@contextlib.contextmanager
def _stock_stack() -> Iterator[None]:
    with torch._dynamo.config.patch(specialize_float=False), _stock_sources("L['self'].step"):
        yield


def _compile_stack(depth: int, backend: str, tag: str, bridge: bool) -> dict[str, Any]:
    """First call of a fresh ``Stack``: marked (bridge) or with dynamic_sources (stock)."""
    from torch._dynamo.utils import compilation_time_metrics

    torch.manual_seed(0)
    model = fresh_class(Stack, tag)(depth).eval()
    if bridge:
        ds.mark_dynamic_attr(model, "step", "warm")
        context: Any = contextlib.nullcontext()
    else:  # stock torch: the int via dynamic_sources, the float via specialize_float=False
        context = _stock_stack()
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    x = torch.randn(2, 16, 64)
    if bridge:  # the float path's AOT hooks are wrapped at the first dynamic float: now
        from dynscalar._bridge._floats import ensure_aot_hooks

        assert ensure_aot_hooks()
    compilation_time_metrics.clear()
    timer = HookTimer()
    with torch.no_grad(), context, timer.installed() if bridge else contextlib.nullcontext():
        start = time.perf_counter()
        compiled(x)
        first = time.perf_counter() - start
    backend_s = sum(compilation_time_metrics.get("OutputGraph.call_user_compiler", []))
    bridge_s = sum(timer.self_s.values())
    return {
        "tag": tag,
        "bridge": bridge,
        "first_call_s": first,
        "backend_compile_s": backend_s,
        "trace_s": first - backend_s,
        "bridge_self_s": bridge_s,
        "share_of_first_call": bridge_s / first if bridge else None,
        "share_of_trace": bridge_s / (first - backend_s) if bridge and first > backend_s else None,
        "hooks": {
            k: {"self_s": round(v, 6), "calls": timer.calls[k]}
            for k, v in sorted(timer.self_s.items(), key=lambda kv: -kv[1])
        },
        "compiles": counter.graphs,
    }


def run_share(depth: int, backends: list[str], repeats: int) -> dict[str, Any]:
    out: dict[str, Any] = {
        "depth": depth,
        "attributes": count_attributes(Stack(depth)),
        "modules": sum(1 for _ in Stack(depth).modules()),
        "backends": {},
    }
    for backend in backends:
        runs: list[dict[str, Any]] = []
        for r in range(repeats):  # bridge and stock alternate
            order = (True, False) if r % 2 == 0 else (False, True)
            for bridge in order:
                torch._dynamo.reset()
                tag = f"share_{backend}_{'ds' if bridge else 'stock'}_{r}"
                runs.append(_compile_stack(depth, backend, tag, bridge))
        marked = [r for r in runs if r["bridge"]]
        stock = [r for r in runs if not r["bridge"]]
        out["backends"][backend] = {
            "runs": runs,
            "share_of_first_call": quantiles([r["share_of_first_call"] for r in marked]),
            "share_of_trace": quantiles(
                [r["share_of_trace"] for r in marked if r["share_of_trace"]]
            ),
            "first_call_s": quantiles([r["first_call_s"] for r in marked]),
            "stock_first_call_s": quantiles([r["first_call_s"] for r in stock]),
            "first_call_vs_stock": quantiles(
                [m["first_call_s"] / s["first_call_s"] for m, s in zip(marked, stock, strict=True)]
            ),
        }
    torch._dynamo.reset()
    return out


class Offset(torch.nn.Module):
    def __init__(self, offset: int) -> None:
        super().__init__()
        self.offset = offset

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.offset


class OffsetStack(torch.nn.Module):
    """``depth`` blocks that each add an int attribute: ``k`` of them are made dynamic."""

    def __init__(self, depth: int) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList(Offset(i) for i in range(depth))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x


def _scaling_model(how: str, k: int, depth: int, tag: str) -> tuple[torch.nn.Module, Any]:
    model = fresh_class(OffsetStack, tag)(depth)
    blocks = list(model.blocks)[:k]
    if how == "ds_registry":
        for block in blocks:
            ds.mark_dynamic_attr(block, "offset")
        return model, contextlib.nullcontext()
    if how == "ds_proxy":
        for block in blocks:
            block.offset = ds.DynamicInt(block.offset)
        return model, contextlib.nullcontext()
    if how == "dynamic_sources":
        names = ",".join(f"L['self']._modules['blocks']._modules['{i}'].offset" for i in range(k))
        return model, _stock_sources(names)
    if how == "static":  # nothing dynamic: every offset a constant (stock torch)
        return model, stock_torch()
    raise ValueError(how)


def run_scaling(
    depth: int, ks: list[int], backend: str, repeats: int, rounds: int, number: int
) -> dict[str, Any]:
    hows = ["ds_registry", "ds_proxy", "dynamic_sources"]
    variants = [(h, k) for k in ks for h in hows] + [("static", 0)]
    compile_s: dict[str, list[float]] = {f"{h}:{k}": [] for h, k in variants}
    compiled: dict[str, Callable[[], Any]] = {}
    compiles: dict[str, int] = {}
    x = torch.randn(8, 64)
    for r in range(repeats):
        shift = r % len(variants)
        for how, k in variants[shift:] + variants[:shift]:
            key = f"{how}:{k}"
            torch.manual_seed(0)
            model, context = _scaling_model(how, k, depth, f"scale_{how}_{k}_{r}")
            counter = CountingBackend(backend)
            fn = torch.compile(model, backend=counter)
            with cold_caches(), context:
                start = time.perf_counter()
                fn(x)
                compile_s[key].append(time.perf_counter() - start)
            compiled[key], compiles[key] = (lambda fn=fn: fn(x)), counter.graphs
    for fn in compiled.values():
        for _ in range(10):
            fn()
    samples = interleaved(compiled, rounds, number)
    ref = samples["static:0"]
    rows = []
    for how, k in variants:
        key = f"{how}:{k}"
        rows.append(
            {
                "how": how,
                "k": k,
                "compile_s": quantiles(compile_s[key]),
                "call_us": {n: v * 1e6 for n, v in quantiles(samples[key]).items()},
                "call_vs_static": quantiles(paired_ratios(samples[key], ref)),
                "compiles": compiles[key],
            }
        )
    torch._dynamo.reset()
    return {"depth": depth, "backend": backend, "ks": ks, "rows": rows}


# ============================================================================= warm
WARM_VARIANTS: dict[str, tuple[str, str]] = {
    # name: (label, what the second process runs if not the same variant)
    "dynamic_sources": ("torch: dynamic_sources (no dynscalar)", ""),
    "ds_registry": ("dynscalar.mark_dynamic_attr", ""),
    "ds_proxy": ("dynscalar.DynamicInt attribute", ""),
    "ds_decorator": ("@dynscalar.dynamic_attrs", ""),
    "args_dynamic_sources": ("torch: dynamic_sources on the argument (no dynscalar)", ""),
    "ds_args": ("dynscalar.mark_dynamic_args", ""),
    "cross_stock_then_registry": (
        "cache written by torch (dynamic_sources), read by mark_dynamic_attr",
        "dynamic_sources>ds_registry",
    ),
    "float_stock": ("float written in forward, torch alone", ""),
    "float_registry": ("dynamic float, dynscalar's AOT cache key (now)", ""),
    "float_proxy": ("DynamicFloat attribute, dynscalar's AOT cache key (now)", ""),
    "float_registry_bypass": ("dynamic float, AOTAutograd cache bypassed (before)", ""),
    "cross_float_stock_then_registry": (
        "cache written by torch (float written in forward), read by a dynamic float",
        "float_stock>float_registry",
    ),
}


def _warm_child(variant: str, backend: str, cache: str, timeout: float) -> dict[str, Any]:
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache}
    env.pop("TORCH_COMPILE_DYNAMIC_SOURCES", None)
    cmd = [sys.executable, str(HERE / "_warm_child.py"), variant, backend]
    result = subprocess.run(
        cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if result.returncode != 0:
        return {"variant": variant, "error": result.stderr[-2000:]}
    row: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return row


def run_warm(variants: list[str], backend: str, timeout: float) -> dict[str, Any]:
    rows = []
    for name in variants:
        label, plan = WARM_VARIANTS[name]
        cold_variant, warm_variant = plan.split(">") if plan else (name, name)
        with tempfile.TemporaryDirectory(prefix="dynscalar-warm-") as cache:
            cold = _warm_child(cold_variant, backend, cache, timeout)
            warm = _warm_child(warm_variant, backend, cache, timeout)
        rows.append({"variant": name, "label": label, "cold": cold, "warm": warm})
        print(f"  warm {name}: {_hits(warm)}", flush=True)
    return {"backend": backend, "rows": rows}


def _hits(row: dict[str, Any]) -> str:
    if "error" in row:
        return "error"
    fx, aot = row["fxgraph"], row["aot_autograd"]
    fx_hit, fx_miss = fx.get("fxgraph_cache_hit", 0), fx.get("fxgraph_cache_miss", 0)
    aot_hit, aot_miss = aot.get("autograd_cache_hit", 0), aot.get("autograd_cache_miss", 0)
    return (
        f"fx graph cache hit {fx_hit} miss {fx_miss}, aot cache hit {aot_hit} miss {aot_miss}"
        f" bypass {aot.get('autograd_cache_bypass', 0)}, first call {row['first_call_s']:.2f} s"
    )


# ============================================================================ goals
def _fmt(q: dict[str, float] | None, unit: str = "x", digits: int = 3) -> str:
    if not q:
        return "-"
    return f"{q['median']:.{digits}f}{unit} ({q['p10']:.{digits}f}-{q['p90']:.{digits}f})"


def goals(result: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def add(section: str, goal: str, measured: str, ok: bool | None) -> None:
        status = "n/a" if ok is None else ("PASS" if ok else "MISS")
        out.append({"section": section, "goal": goal, "measured": measured, "status": status})

    for backend, data in result.get("percall", {}).items():
        for row in data["rows"]:
            if row["strategy"] not in DS_PERCALL or row["ratio"] is None:
                continue
            add(
                "percall",
                f"{backend}: {row['label']} <= {GOAL_PERCALL}x {row['reference']}",
                _fmt(row["ratio"]),
                row["ratio"]["median"] <= GOAL_PERCALL and row["equal_to_eager"],
            )
    eager = {r["case"]: r for r in result.get("eager", {}).get("rows", [])}
    if "add" in eager:
        q = eager["add"]["proxy_ns"]
        add(
            "eager",
            f"`x + 1` on a DynamicInt <= {GOAL_ADD_NS:.0f} ns",
            _fmt(q, " ns", 0),
            q["median"] <= GOAL_ADD_NS,
        )
    for case in ("tensor_mul", "torch_mul", "view", "full"):
        if case in eager:
            q = eager[case]["overhead_ns"]
            add(
                "eager",
                f"{eager[case]['label']}: <= +{GOAL_TORCH_CALL_NS:.0f} ns over plain",
                _fmt(q, " ns", 0),
                q["median"] <= GOAL_TORCH_CALL_NS,
            )
    if "forward" in eager:
        q = eager["forward"]["ratio"]
        add(
            "eager",
            f"seed model eager forward, proxy attribute <= {GOAL_FORWARD}x plain",
            _fmt(q),
            q["median"] <= GOAL_FORWARD,
        )
    share = result.get("compile", {}).get("share")
    if share:
        for backend, data in share["backends"].items():
            q = data["share_of_first_call"]
            add(
                "compile",
                f"{backend}: bridge share of the first compile ({share['attributes']} "
                f"attributes) <= {GOAL_SHARE:.0%}",
                f"{q['median']:.2%} ({q['p10']:.2%}-{q['p90']:.2%})",
                q["median"] <= GOAL_SHARE,
            )
    warm = {r["variant"]: r for r in result.get("warm", {}).get("rows", [])}

    def hits(row: dict[str, Any]) -> tuple[int, int]:
        w = row["warm"]
        if "error" in w:
            return (-1, -1)
        return (
            w["fxgraph"].get("fxgraph_cache_hit", 0),
            w["aot_autograd"].get("autograd_cache_hit", 0),
        )

    for name, ref in (
        ("ds_registry", "dynamic_sources"),
        ("ds_proxy", "dynamic_sources"),
        ("ds_decorator", "dynamic_sources"),
        ("ds_args", "args_dynamic_sources"),
    ):
        if name in warm and ref in warm:
            got, want = hits(warm[name]), hits(warm[ref])
            add(
                "warm",
                f"{warm[name]['label']}: warm-restart hits (FX graph, AOTAutograd) = "
                f"{WARM_VARIANTS[ref][0]}'s",
                f"{got} vs {want}",
                got == want and warm[name]["warm"].get("equal_to_eager", False),
            )
    for name in ("float_registry", "float_proxy"):
        if name in warm:
            got = hits(warm[name])
            add(
                "warm",
                f"{warm[name]['label']}: warm restart hits the AOTAutograd cache",
                f"{got}",
                got[1] > 0 and warm[name]["warm"].get("equal_to_eager", False),
            )
    return out


# ============================================================================ plots
def plot(result: dict[str, Any], out: Path) -> list[str]:
    plt = import_pyplot()
    written = []
    percall = result.get("percall")
    if percall:
        fig, axes = plt.subplots(1, len(percall), figsize=(6.5 * len(percall), 4.2), squeeze=False)
        for ax, (backend, data) in zip(axes[0], percall.items(), strict=True):
            rows = [r for r in data["rows"] if r["ratio"]]
            y = range(len(rows))
            med = [r["ratio"]["median"] for r in rows]
            lo = [r["ratio"]["median"] - r["ratio"]["p10"] for r in rows]
            hi = [r["ratio"]["p90"] - r["ratio"]["median"] for r in rows]
            ax.barh(
                list(y),
                [m - 1 for m in med],
                left=1,
                xerr=[lo, hi],
                capsize=3,
                color=["tab:gray" if r["strategy"] not in DS_PERCALL else "tab:blue" for r in rows],
            )
            ax.axvline(1.0, color="black", lw=0.8)
            ax.axvline(
                GOAL_PERCALL, color="tab:red", lw=0.8, ls="--", label=f"goal {GOAL_PERCALL}x"
            )
            ax.set_yticks(list(y))
            ax.set_yticklabels([r["label"] for r in rows], fontsize=7)
            ax.invert_yaxis()
            ax.set(
                title=f"per compiled call, {backend}",
                xlabel="time / torch dynamic_sources (median, p10-p90)",
            )
            ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / "overhead_percall.png", dpi=110)
        plt.close(fig)
        written.append("overhead_percall.png")
    scaling = result.get("compile", {}).get("scaling")
    if scaling:
        fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
        static = next(r for r in scaling["rows"] if r["how"] == "static")
        for how, label in (
            ("ds_registry", "mark_dynamic_attr"),
            ("ds_proxy", "DynamicInt values"),
            ("dynamic_sources", "torch dynamic_sources"),
        ):
            rows = [r for r in scaling["rows"] if r["how"] == how]
            ks = [r["k"] for r in rows]
            for ax, key in ((left, "compile_s"), (right, "call_us")):
                ax.errorbar(
                    ks,
                    [r[key]["median"] for r in rows],
                    yerr=[
                        [r[key]["median"] - r[key]["p10"] for r in rows],
                        [r[key]["p90"] - r[key]["median"] for r in rows],
                    ],
                    marker="o",
                    capsize=3,
                    label=label,
                )
        left.axhline(static["compile_s"]["median"], color="gray", ls=":", label="nothing dynamic")
        right.axhline(static["call_us"]["median"], color="gray", ls=":", label="nothing dynamic")
        for ax in (left, right):
            ax.set_xscale("log")
            ax.set_xlabel(f"dynamic scalars (of {scaling['depth']} int attributes)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
        left.set(title=f"first compile, {scaling['backend']}", ylabel="seconds")
        right.set(title=f"compiled call, {scaling['backend']}", ylabel="microseconds")
        fig.tight_layout()
        fig.savefig(out / "overhead_scaling.png", dpi=110)
        plt.close(fig)
        written.append("overhead_scaling.png")
    eager = result.get("eager")
    if eager:
        rows = eager["rows"]
        fig, ax = plt.subplots(figsize=(7, 0.45 * len(rows) + 1.4))
        med = [r["overhead_ns"]["median"] / 1000 for r in rows]
        ax.barh(
            range(len(rows)),
            med,
            xerr=[
                [(r["overhead_ns"]["median"] - r["overhead_ns"]["p10"]) / 1000 for r in rows],
                [(r["overhead_ns"]["p90"] - r["overhead_ns"]["median"]) / 1000 for r in rows],
            ],
            capsize=3,
        )
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([r["label"] for r in rows], fontsize=7)
        ax.invert_yaxis()
        ax.set(title="eager: proxy minus plain (median, p10-p90)", xlabel="microseconds")
        ax.grid(alpha=0.3, axis="x")
        fig.tight_layout()
        fig.savefig(out / "overhead_eager.png", dpi=110)
        plt.close(fig)
        written.append("overhead_eager.png")
    return written


# ============================================================================= main
SECTIONS = ("percall", "eager", "compile", "warm")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sections", default=",".join(SECTIONS))
    p.add_argument("--backends", default="inductor,aot_eager", help="per-call section")
    p.add_argument("--strategies", default=",".join(PERCALL))
    p.add_argument("--rounds", type=int, default=60, help="per-call: interleaved rounds")
    p.add_argument("--number", type=int, default=200, help="per-call: calls per round")
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--eager-rounds", type=int, default=41)
    p.add_argument("--eager-scale", type=float, default=1.0, help="calls per eager sample")
    p.add_argument("--share-depth", type=int, default=48)
    p.add_argument("--share-backends", default="aot_eager,inductor")
    p.add_argument("--share-repeats", type=int, default=2)
    p.add_argument("--scaling-depth", type=int, default=100)
    p.add_argument("--scaling-ks", default="1,10,100")
    p.add_argument("--scaling-backend", default="inductor")
    p.add_argument("--scaling-repeats", type=int, default=3)
    p.add_argument("--scaling-rounds", type=int, default=40)
    p.add_argument("--warm-variants", default=",".join(WARM_VARIANTS))
    p.add_argument("--warm-backend", default="inductor")
    p.add_argument("--callgrind", action="store_true", help="instruction counts (valgrind)")
    p.add_argument(
        "--callgrind-scope",
        choices=("all", "eager"),
        default="all",
        help="eager: instruction counts of the eager cases and the eager floor only",
    )
    p.add_argument("--callgrind-calls", type=int, default=200)
    p.add_argument("--callgrind-jobs", type=int, default=2)
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1: steadier)")
    p.add_argument(
        "--timer", choices=("cpu", "wall"), default="cpu", help="per-call and eager timings"
    )
    p.add_argument("--timeout", type=float, default=1800, help="per child process")
    p.add_argument("--quick", action="store_true", help="a few seconds: checks the plumbing")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--name", default="overhead")
    p.add_argument("--child-callgrind", nargs=4, metavar=("KIND", "NAME", "VARIANT", "N"))
    args = p.parse_args(argv)
    if args.quick:
        args.backends = "eager"
        args.rounds, args.number, args.warmup = 3, 20, 5
        args.eager_rounds, args.eager_scale = 3, 0.01
        args.share_depth, args.share_backends, args.share_repeats = 2, "eager", 1
        args.scaling_depth, args.scaling_ks, args.scaling_backend = 6, "1,3", "eager"
        args.scaling_repeats, args.scaling_rounds = 1, 3
        args.warm_variants, args.warm_backend = "ds_registry", "aot_eager"
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    TIMER["name"] = args.timer
    if args.child_callgrind:
        kind, name, variant, number = args.child_callgrind
        child_callgrind(kind, name, variant, int(number))
        return 0
    sections = [s for s in args.sections.split(",") if s]
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        raise SystemExit(f"unknown sections {sorted(unknown)}; choose from {SECTIONS}")
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    result: dict[str, Any] = {
        "schema": 1,
        "machine": {**machine_info(), "loadavg_start": loadavg()},
        "config": {
            k: (str(v) if isinstance(v, Path) else v)
            for k, v in vars(args).items()
            if k not in ("out", "child_callgrind")
        },
    }
    if result["machine"]["loadavg_start"] and result["machine"]["loadavg_start"][0] > 2.5:
        print(f"note: load average {result['machine']['loadavg_start']} - timings will be noisy")
    backends = [b for b in args.backends.split(",") if b]
    strategies = [s for s in args.strategies.split(",") if s]
    loads = result["machine"]["loadavg_by_section"] = {}
    if "percall" in sections:
        print("per compiled call ...", flush=True)
        loads["percall"] = [loadavg()]
        result["percall"] = run_percall(backends, strategies, args.rounds, args.number, args.warmup)
        loads["percall"].append(loadavg())
    if "eager" in sections:
        print("eager ...", flush=True)
        loads["eager"] = [loadavg()]
        result["eager"] = run_eager(list(_EAGER_SPECS), args.eager_rounds, args.eager_scale)
        loads["eager"].append(loadavg())
    if "compile" in sections:
        print("compile time ...", flush=True)
        loads["compile"] = [loadavg()]
        share_backends = [b for b in args.share_backends.split(",") if b]
        result["compile"] = {
            "share": run_share(args.share_depth, share_backends, args.share_repeats),
            "scaling": run_scaling(
                args.scaling_depth,
                [int(k) for k in args.scaling_ks.split(",")],
                args.scaling_backend,
                args.scaling_repeats,
                args.scaling_rounds,
                max(1, args.number // 2),
            ),
        }
        loads["compile"].append(loadavg())
    if "warm" in sections:
        print("warm restart ...", flush=True)
        loads["warm"] = [loadavg()]
        variants = [v for v in args.warm_variants.split(",") if v]
        result["warm"] = run_warm(variants, args.warm_backend, args.timeout)
        loads["warm"].append(loadavg())
    result["machine"]["loadavg_end"] = loadavg()  # of the timed sections
    # Last: counts do not depend on the load.  Per-call children compile under valgrind (slow:
    # an inductor compile takes many minutes there); ``--callgrind-scope eager`` leaves them out.
    if args.callgrind and ("percall" in sections or "eager" in sections):
        if callgrind_available():
            print("callgrind ...", flush=True)
            result["callgrind"] = run_callgrind(
                backends,
                strategies if args.callgrind_scope == "all" and "percall" in sections else [],
                list(_EAGER_SPECS),
                args.callgrind_calls,
                args.callgrind_jobs,
            )
        else:
            print("callgrind: valgrind not found, skipped")
    result["goals"] = goals(result)
    result["wall_s"] = round(time.perf_counter() - start, 1)
    result["plots"] = plot(result, args.out)
    path = args.out / f"{args.name}.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    for g in result["goals"]:
        print(f"  {g['status']:4}  {g['goal']}: {g['measured']}")
    print(f"wrote {path} ({result['wall_s']:.0f} s)")
    failed = [
        r
        for b in result.get("percall", {}).values()
        for r in b["rows"]
        if not r["equal_to_eager"] or r["compiles"] != 1
    ]
    if failed:
        print("WRONG NUMBERS OR RECOMPILES:", [(r["strategy"], r["compiles"]) for r in failed])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
