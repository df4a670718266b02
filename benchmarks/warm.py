"""Warm restarts: each variant compiles in two processes on one ``TORCHINDUCTOR_CACHE_DIR``;
the row holds both first calls, compiles, equality with eager and torch's cache counters."""

from __future__ import annotations

import copy
import sys
import tempfile
import time
from typing import Any

import torch

import dynscalar as ds
from benchmarks.harness import CountingBackend, emit, run_child, words
from benchmarks.render_overhead import cache_counts
from dynscalar.tools.demo_models import SeedModel as IntSeed  # Linear(64, 64) and self.step += 1

STOCK = {"dynamic_sources", "args_dynamic_sources", "float_stock"}
#: name -> (cold, warm) when the second process runs another variant
PLANS = {
    "cross_stock_then_registry": ("dynamic_sources", "ds_registry"),
    "cross_float_stock_then_registry": ("float_stock", "float_registry"),
}
WARM_VARIANTS: dict[str, str] = words("overhead")["warm_labels"]  # name -> label


class ArgSeed(torch.nn.Module):
    """The seed model with the counter passed in and returned (argument marks)."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(64, 64)

    def forward(self, x: torch.Tensor, step: int) -> tuple[torch.Tensor, int]:
        return self.layer(x + 1), step + 1


class FloatSeed(torch.nn.Module):
    """A float read and written in forward (a decaying scale): a stock AOTAutograd cache
    entry for this graph shape can hold the value baked in."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(64, 64)
        self.scale = 0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.layer(x) * self.scale
        self.scale = self.scale * 0.99
        return out


def _bypass_cache() -> None:
    """The alternative to dynscalar's own AOTAutograd cache key: bypass the cache for every
    graph with a float input that the tensorify pass turned into a tensor."""
    import wrapt
    from torch._functorch._aot_autograd import autograd_cache

    from benchmarks.compile import apply_float_hooks
    from benchmarks.harness import applied_patches

    apply_float_hooks()
    if (autograd_cache, "autograd_cache_key") in applied_patches():
        autograd_cache.autograd_cache_key = vars(autograd_cache)["autograd_cache_key"].__wrapped__

    def bypass(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        wrapped(*args, **kwargs)
        gm = args[0] if args else kwargs["gm"]
        for node in gm.graph.find_nodes(op="placeholder"):
            if getattr(node.meta.get("example_value"), "item_memo", None) is not None:
                raise autograd_cache.BypassAOTAutogradCache("a dynamic float input")

    wrapt.wrap_function_wrapper(autograd_cache, "check_cacheable", bypass)


def build(variant: str) -> tuple[torch.nn.Module, bool]:
    """The model for ``variant`` and whether it takes the step as an argument."""
    torch.manual_seed(0)
    if variant in STOCK:
        if variant == "dynamic_sources":
            torch.compiler.config.dynamic_sources = "L['self'].step"
            return IntSeed(), False
        if variant == "args_dynamic_sources":
            torch.compiler.config.dynamic_sources = "L['step']"
            return ArgSeed(), True
        return FloatSeed(), False
    if variant == "ds_registry":
        return ds.mark_dynamic_attr(IntSeed(), "step"), False
    if variant == "ds_proxy":
        model = IntSeed()
        model.step = ds.DynamicInt(0)
        return model, False
    if variant == "ds_decorator":
        return ds.dynamic_attrs("step")(type("Decorated", (IntSeed,), {}))(), False
    if variant == "ds_args":
        return ds.mark_dynamic_args(ArgSeed(), "step"), True
    if variant in ("float_registry", "float_registry_bypass"):
        if variant.endswith("_bypass"):
            _bypass_cache()
        return ds.mark_dynamic_attr(FloatSeed(), "scale"), False
    if variant == "float_proxy":
        model = FloatSeed()
        model.scale = ds.DynamicFloat(0.5)
        return model, False
    raise SystemExit(f"unknown variant {variant!r}")


def child(variant: str, backend: str) -> dict[str, Any]:
    """One process of a warm-restart pair: four training steps, timed and checked."""
    torch.set_num_threads(1)
    if variant in STOCK:
        ds.disabled().__enter__()  # this process only measures stock torch
    model, args = build(variant)
    eager = copy.deepcopy(model)
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    times, equal = [], True
    for step in range(4):  # a training step: the AOTAutograd entry is saved with the backward
        x = torch.randn(8, 64)
        start = time.perf_counter()
        got = compiled(x, step) if args else compiled(x)
        (got[0] if args else got).sum().backward()
        times.append(time.perf_counter() - start)
        want = eager(x, step) if args else eager(x)
        (want[0] if args else want).sum().backward()
        if args:
            equal &= got[1] == want[1]
            got, want = got[0], want[0]
        equal &= bool(torch.allclose(got, want, rtol=1e-5, atol=1e-6))
    for p, q in zip(model.parameters(), eager.parameters(), strict=True):
        equal &= bool(torch.allclose(p.grad, q.grad, rtol=1e-4, atol=1e-5))
    from torch._dynamo.utils import counters

    fx, aot = counters["inductor"], counters["aot_autograd"]
    return {
        "variant": variant,
        "backend": backend,
        "first_call_s": times[0],
        "later_call_ms": 1e3 * min(times[1:]),
        "compiles": counter.frame_count,
        "equal_to_eager": bool(equal),
        "fxgraph": {k: v for k, v in fx.items() if "fxgraph" in k},
        "aot_autograd": {k: v for k, v in aot.items() if "autograd_cache" in k},
    }


def _child(variant: str, backend: str, cache: str, timeout: float) -> dict[str, Any]:
    row, error, _ = run_child(
        "benchmarks.warm",
        ["--child", variant, backend],
        timeout,
        cache=cache,
        env={"TORCH_COMPILE_DYNAMIC_SOURCES": ""},
    )
    return row if row is not None else {"variant": variant, "error": error[-2000:]}


def run_warm(variants: list[str], backend: str, timeout: float) -> dict[str, Any]:
    rows = []
    for name in variants:
        cold_variant, warm_variant = PLANS.get(name, (name, name))
        with tempfile.TemporaryDirectory(prefix="dynscalar-warm-") as cache:
            cold = _child(cold_variant, backend, cache, timeout)
            warm = _child(warm_variant, backend, cache, timeout)
        rows.append({"variant": name, "label": WARM_VARIANTS[name], "cold": cold, "warm": warm})
        print(f"  warm {name}: {hits(warm)}", flush=True)
    return {"backend": backend, "rows": rows}


def hits(row: dict[str, Any]) -> str:
    """A warm child's cache counters and first call, for the terminal."""
    if "error" in row:
        return "error"
    fx_hit, fx_miss, aot_hit, aot_miss, bypass = cache_counts(row)
    return (
        f"fx graph cache hit {fx_hit} miss {fx_miss}, aot cache hit {aot_hit} miss {aot_miss}"
        f" bypass {bypass}, first call {row['first_call_s']:.2f} s"
    )


if __name__ == "__main__" and sys.argv[1:2] == ["--child"]:
    emit(child(sys.argv[2], sys.argv[3]))
