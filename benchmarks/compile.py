"""Compile overhead: the bridge's share of a first compile (``share``), and compile and
call time with 1, 10 and 100 marked scalars against stock torch (``scaling``)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch

import dynscalar as ds
from benchmarks.compile_time import Stack  # the model of the first-compile benchmark
from benchmarks.harness import CountingBackend, fresh_class, interleaved, paired_ratios, quantiles


class HookTimer:
    """Time spent in the bridge's own code during a compile, by hook (self time: torch's
    work a hook triggers is a region of its own)."""

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

    def timed(self, label: str, hook: Callable[..., Any]) -> Callable[..., Any]:
        """A wrapt hook timed as ``label``; what it wraps (torch's part) timed as torch."""

        def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
            return self.region(label, hook)(self.region(None, wrapped), instance, args, kwargs)

        return wrapper

    def region(self, label: str | None, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if label is not None:
                self.calls[label] = self.calls.get(label, 0) + 1
            self._switch()
            self._stack.append(label)
            try:
                return fn(*args, **kwargs)
            finally:
                self._switch()
                self._stack.pop()

        return wrapper

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """Swap every applied bridge patch (``applied_patches()``) for a timed copy."""
        import wrapt
        from torch._dynamo.variables.lazy import LazyVariableTracker

        from benchmarks.harness import applied_patches

        restore: list[tuple[Any, str, Any]] = []
        for owner, name in applied_patches():
            # a class's __dict__: getattr would bind the wrapper (wrapt's descriptor protocol)
            current = vars(owner)[name]
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


def apply_float_hooks() -> None:
    """The float path's hooks are applied at the first dynamic float Dynamo meets: meet one."""
    torch.compile(lambda x, p: x * p, backend="eager")(torch.ones(2), ds.DynamicFloat(0.5))
    torch._dynamo.reset()


def _compile_stack(depth: int, backend: str, tag: str, bridge: bool) -> dict[str, Any]:
    """First call of a fresh ``Stack``: marked (bridge) or with dynamic_sources (stock)."""
    from torch._dynamo.utils import compilation_time_metrics

    torch.manual_seed(0)
    model = fresh_class(Stack, tag)(depth).eval()
    timer = HookTimer()
    if bridge:
        apply_float_hooks()
        ds.mark_dynamic_attr(model, "step", "warm")
        contexts = [timer.installed()]
    else:  # stock torch: the int via dynamic_sources, the float via specialize_float=False
        sources = torch.compiler.config.patch(dynamic_sources="L['self'].step")
        contexts = [ds.disabled(), sources, torch._dynamo.config.patch(specialize_float=False)]
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    x = torch.randn(2, 16, 64)
    compilation_time_metrics.clear()
    with torch.no_grad(), contextlib.ExitStack() as stack:
        for context in contexts:
            stack.enter_context(context)
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
        "compiles": counter.frame_count,
    }


def run_share(depth: int, backends: list[str], repeats: int) -> dict[str, Any]:
    """First compiles of ``Stack(depth)``, marked and stock alternating, per backend."""
    modules = list(Stack(depth).modules())
    # everything reachable as ``module.name``: attributes, parameters, buffers, submodules
    attributes = sum(
        len([k for k in vars(m) if not k.startswith("_")])
        + sum(map(len, (m._parameters, m._buffers, m._modules)))
        for m in modules
    )
    out: dict[str, Any] = {}
    for backend in backends:
        runs: list[dict[str, Any]] = []
        for r in range(repeats):  # bridge and stock alternate
            for bridge in (True, False) if r % 2 == 0 else (False, True):
                torch._dynamo.reset()
                tag = f"share_{backend}_{'ds' if bridge else 'stock'}_{r}"
                runs.append(_compile_stack(depth, backend, tag, bridge))
        marked = [r for r in runs if r["bridge"]]
        stock = [r for r in runs if not r["bridge"]]
        out[backend] = {
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
    return {"depth": depth, "attributes": attributes, "modules": len(modules), "backends": out}


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


def _scaling_model(how: str, k: int, depth: int, tag: str) -> tuple[torch.nn.Module, str]:
    """The model, and the dynamic_sources a stock variant compiles with."""
    model = fresh_class(OffsetStack, tag)(depth)
    blocks = list(model.blocks)[:k]
    if how == "ds_registry":
        for block in blocks:
            ds.mark_dynamic_attr(block, "offset")
    elif how == "ds_proxy":
        for block in blocks:
            block.offset = ds.DynamicInt(block.offset)
    elif how == "dynamic_sources":
        return model, ",".join(
            f"L['self']._modules['blocks']._modules['{i}'].offset" for i in range(k)
        )
    return model, ""  # "static": nothing dynamic, every offset a constant (stock torch)


def run_scaling(
    depth: int, ks: list[int], backend: str, repeats: int, rounds: int, number: int
) -> dict[str, Any]:
    """Compile and call time of ``OffsetStack(depth)`` with ``k`` of ``ks`` offsets dynamic,
    the stock variants in a phase of their own inside ``dynscalar.disabled()``."""
    from torch._inductor.utils import fresh_cache

    compile_s: dict[str, list[float]] = {}
    compiles: dict[str, int] = {}

    def phase(variants: list[tuple[str, int]]) -> dict[str, list[float]]:
        """First compiles (``repeats`` each, in turns), then the calls timed together."""
        compiled: dict[str, Callable[[], Any]] = {}
        x = torch.randn(8, 64)
        for r in range(repeats):
            shift = r % len(variants)
            for how, k in variants[shift:] + variants[:shift]:
                key = f"{how}:{k}"
                torch.manual_seed(0)
                model, sources = _scaling_model(how, k, depth, f"scale_{how}_{k}_{r}")
                counter = CountingBackend(backend)
                fn = torch.compile(model, backend=counter)
                # a first compile as in a fresh process
                with fresh_cache(), torch.compiler.config.patch(dynamic_sources=sources):
                    start = time.perf_counter()
                    fn(x)
                    compile_s.setdefault(key, []).append(time.perf_counter() - start)
                compiled[key], compiles[key] = (lambda fn=fn: fn(x)), counter.frame_count
        for fn in compiled.values():
            for _ in range(10):
                fn()
        return interleaved(compiled, rounds, number)

    hows = ["ds_registry", "ds_proxy", "dynamic_sources"]
    variants = [(h, k) for k in ks for h in hows] + [("static", 0)]
    stock = [v for v in variants if v[0] in ("dynamic_sources", "static")]
    with ds.disabled():
        samples = phase(stock)
    samples |= phase([v for v in variants if v not in stock])
    ref = samples["static:0"]
    rows = [
        {
            "how": how,
            "k": k,
            "compile_s": quantiles(compile_s[f"{how}:{k}"]),
            "call_us": quantiles(samples[f"{how}:{k}"], 1e6),
            "call_vs_static": quantiles(paired_ratios(samples[f"{how}:{k}"], ref)),
            "compiles": compiles[f"{how}:{k}"],
        }
        for how, k in variants
    ]
    torch._dynamo.reset()
    return {"depth": depth, "backend": backend, "ks": ks, "rows": rows, "stock_phase": True}
