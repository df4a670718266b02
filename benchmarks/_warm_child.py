"""One process of ``bench_overhead.py``'s warm-restart section: compile, call, report.

    python benchmarks/_warm_child.py VARIANT BACKEND

Prints one JSON line: the first call's time, compiles, whether outputs equal eager, and
torch's cache counters (inductor's FX graph cache, the AOTAutograd cache).  Stock variants
(``dynamic_sources``, ``float_stock``) never import dynscalar: they are what torch does on
its own.  The parent runs each variant twice on one ``TORCHINDUCTOR_CACHE_DIR``.
"""

from __future__ import annotations

import copy
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

# this checkout's dynscalar, not whichever one the environment has installed (the script's
# own folder, benchmarks/, is what Python puts first on sys.path)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

STOCK = {"dynamic_sources", "args_dynamic_sources", "float_stock"}


class IntSeed(torch.nn.Module):
    """The seed model: ``Linear(64, 64)`` and ``self.step += 1``."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(64, 64)
        self.step = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + 1
        self.step += 1
        out: torch.Tensor = self.layer(x)
        return out


class ArgSeed(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(64, 64)

    def forward(self, x: torch.Tensor, step: int) -> tuple[torch.Tensor, int]:
        return self.layer(x + 1), step + 1


class FloatSeed(torch.nn.Module):
    """A float read and written in forward (a decaying scale): the case the AOTAutograd
    cache bypass was made for (a stock entry could hold the value baked in)."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(64, 64)
        self.scale = 0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.layer(x) * self.scale
        self.scale = self.scale * 0.99
        return out


def _bypass_like_before() -> None:
    """What dynscalar did before its cache key: bypass the AOTAutograd cache for graphs with
    a dynamic float input (to compare warm restarts)."""
    import wrapt
    from torch._functorch._aot_autograd import autograd_cache

    from dynscalar._bridge import _floats

    assert _floats.ensure_aot_hooks()
    current = autograd_cache.autograd_cache_key
    if isinstance(current, wrapt.FunctionWrapper):  # undo the cache-key hook
        autograd_cache.autograd_cache_key = current.__wrapped__

    def bypass(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        wrapped(*args, **kwargs)
        if _floats._has_dynamic_float_input(args[0] if args else kwargs["gm"]):
            raise autograd_cache.BypassAOTAutogradCache("dynscalar: dynamic float (before)")

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
    import dynscalar as ds

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
            _bypass_like_before()
        return ds.mark_dynamic_attr(FloatSeed(), "scale"), False
    if variant == "float_proxy":
        model = FloatSeed()
        model.scale = ds.DynamicFloat(0.5)
        return model, False
    raise SystemExit(f"unknown variant {variant!r}")


def main() -> None:
    variant, backend = sys.argv[1], sys.argv[2]
    torch.set_num_threads(1)
    model, args = build(variant)
    eager = copy.deepcopy(model)
    graphs = 0
    from torch._dynamo.backends.registry import lookup_backend

    real = lookup_backend(backend)

    def counting(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        nonlocal graphs
        graphs += 1
        return real(gm, example_inputs)

    compiled = torch.compile(model, backend=counting)
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

    print(
        json.dumps(
            {
                "variant": variant,
                "backend": backend,
                "first_call_s": times[0],
                "later_call_ms": 1e3 * min(times[1:]),
                "compiles": graphs,
                "equal_to_eager": bool(equal),
                "fxgraph": {k: v for k, v in counters["inductor"].items() if "fxgraph" in k},
                "aot_autograd": {
                    k: v for k, v in counters["aot_autograd"].items() if "autograd_cache" in k
                },
            }
        )
    )


if __name__ == "__main__":
    main()
