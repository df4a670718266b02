"""Per compiled call: one call of the seed model for every way of marking its counter,
against torch's ``dynamic_sources``; stock strategies timed in a phase of their own
inside ``dynscalar.disabled()``, ratios paired round by round."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

import dynscalar as ds
from benchmarks.harness import (
    CountingBackend,
    fresh_class,
    interleaved,
    paired_ratios,
    quantiles,
    words,
)
from benchmarks.warm import ArgSeed as SeedArgs
from dynscalar.tools.demo_models import SeedModel

REFERENCE = "dynamic_sources"


class SeedStatic(torch.nn.Module):
    """The seed model without a counter: a static graph, the floor of a compiled call."""

    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.layer(x + 1)
        return out


@dataclass(frozen=True)
class PerCall:
    kind: str  # "attr" (self.step += 1), "args" (step passed and returned), "static"
    reference: str  # the strategy whose ratio is "the best torch can do" for this shape
    build: Callable[[str], torch.nn.Module]
    stock: bool = False  # compiled and timed inside dynscalar.disabled()
    sources: str = ""  # torch.compiler.config.dynamic_sources while compiling


def _seed(tag: str) -> torch.nn.Module:
    module: torch.nn.Module = fresh_class(SeedModel, tag)()
    return module


def _proxy(tag: str) -> torch.nn.Module:
    model = _seed(tag)
    model.step = ds.DynamicInt(0)
    return model


def _args_decorator(tag: str) -> torch.nn.Module:
    cls = fresh_class(SeedArgs, tag)
    ds.dynamic_args("step")(cls.forward)  # function marks: keyed by the code object
    module: torch.nn.Module = cls()
    return module


LABELS: dict[str, str] = words("overhead")["percall_labels"]  # templates/overhead.json
ARGS = "args_dynamic_sources"
PERCALL: dict[str, PerCall] = {
    "dynamic_sources": PerCall("attr", REFERENCE, _seed, True, "L['self'].step"),
    "ds_proxy": PerCall("attr", REFERENCE, _proxy),
    "ds_registry": PerCall("attr", REFERENCE, lambda tag: ds.mark_dynamic_attr(_seed(tag), "step")),
    "ds_decorator": PerCall(
        "attr", REFERENCE, lambda tag: ds.dynamic_attrs("step")(fresh_class(SeedModel, tag))()
    ),
    ARGS: PerCall("args", ARGS, lambda tag: fresh_class(SeedArgs, tag)(), True, "L['step']"),
    "ds_args": PerCall(
        "args", ARGS, lambda tag: ds.mark_dynamic_args(fresh_class(SeedArgs, tag)(), "step")
    ),
    "ds_args_decorator": PerCall("args", ARGS, _args_decorator),
    "dynamic_sources_bridge": PerCall("attr", REFERENCE, _seed, sources="L['self'].step"),
    "static": PerCall("static", REFERENCE, lambda tag: fresh_class(SeedStatic, tag)()),
}
DS_PERCALL = ("ds_proxy", "ds_registry", "ds_decorator", "ds_args", "ds_args_decorator")


@dataclass
class Runner:
    """A compiled strategy ready to be timed, with its eager twin for the final check."""

    call: Callable[[], Any]
    check: Callable[[], bool]
    counter: CountingBackend
    sources: str

    def compile(self) -> None:
        """The first call compiles (under the strategy's ``dynamic_sources``).  Called once
        every strategy of a phase is built; marks on one strategy's class or function never
        recompile another's graph."""
        with torch.compiler.config.patch(dynamic_sources=self.sources):
            self.call()


def make_runner(name: str, backend: str) -> Runner:
    """``name``'s model compiled with ``backend``, its timed call and its check."""
    strategy = PERCALL[name]
    torch.manual_seed(0)
    model = strategy.build(name)
    eager = copy.deepcopy(model)
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    x = torch.randn(8, 64)
    state = {"step": 0}
    args = strategy.kind == "args"

    def call_plain() -> Any:  # the timed calls: no branch in them
        return compiled(x)

    def call_args() -> Any:
        out, state["step"] = compiled(x, state["step"])
        return out

    def check() -> bool:
        """Three fresh inputs against eager, and the counter (same value on both first)."""
        if strategy.kind == "attr":
            eager.step = model.step
        ok = True
        for i in range(3):
            xi = torch.randn(8, 64)
            (got, s1), (want, s2) = (
                m(xi, i) if args else (m(xi), i + 1) for m in (compiled, eager)
            )
            ok &= bool(torch.allclose(got, want, rtol=1e-5, atol=1e-6) and s1 == s2 == i + 1)
        if strategy.kind == "attr":
            ok &= type(model.step) is type(eager.step) and model.step == eager.step
        return ok

    return Runner(call_args if args else call_plain, check, counter, strategy.sources)


def _phase(
    backend: str, names: list[str], rounds: int, number: int, warmup: int
) -> dict[str, tuple[Runner, list[float], bool]]:
    """Each strategy's runner, seconds per call (timed together) and check against eager."""
    runners = {name: make_runner(name, backend) for name in names}
    for runner in runners.values():
        runner.compile()
    for runner in runners.values():
        for _ in range(warmup):
            runner.call()
    samples = interleaved({n: r.call for n, r in runners.items()}, rounds, number) if names else {}
    return {name: (runner, samples[name], runner.check()) for name, runner in runners.items()}


def run_percall(
    backends: list[str], strategies: list[str], rounds: int, number: int, warmup: int
) -> dict[str, Any]:
    """Per backend: a row per strategy, its time per call and ratios to its reference."""
    out: dict[str, Any] = {}
    stock = [s for s in strategies if PERCALL[s].stock]
    for backend in backends:
        with ds.disabled():
            done = _phase(backend, stock, rounds, number, warmup)
        done |= _phase(backend, [s for s in strategies if s not in stock], rounds, number, warmup)
        samples = {name: times for name, (_, times, _) in done.items()}
        rows = []
        for name in strategies:
            runner, times, equal = done[name]
            ref, attr_ref = samples.get(PERCALL[name].reference), samples.get(REFERENCE)
            rows.append(
                {
                    "strategy": name,
                    "label": LABELS[name],
                    "reference": PERCALL[name].reference,
                    "compiles": runner.counter.frame_count,
                    "equal_to_eager": equal,
                    "us": quantiles(times, 1e6),
                    "ratio": quantiles(paired_ratios(times, ref)) if ref else None,
                    "ratio_vs_attr_reference": (
                        quantiles(paired_ratios(times, attr_ref)) if attr_ref else None
                    ),
                    "samples_us": [round(v * 1e6, 3) for v in times],
                }
            )
        out[backend] = {
            "rounds": rounds,
            "calls_per_round": number,
            "rows": rows,
            "stock_phase": True,
        }
        torch._dynamo.reset()
    return out
