"""``python -m dynscalar demo``: the seed model, stock torch.compile vs each way of marking.

Runs each strategy in a fresh process with a fresh inductor cache on the same inputs, checks
every output against an eager twin, and prints compile counts and times as a table; ``--plot PATH``
also draws them (matplotlib, imported only then).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from ._proxy import DynamicInt
from ._registry import dynamic_attrs, mark_dynamic_attr


class SeedModel(torch.nn.Module):
    """A step counter incremented in forward: stock torch.compile recompiles per value."""

    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(width, width)
        self.step = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + 1
        self.step += 1
        out: torch.Tensor = self.layer(x)
        return out


@dataclass
class Row:
    strategy: str
    compiles: int
    first_call_s: float
    total_s: float
    median_step_ms: float
    equal_to_eager: bool
    step_times_s: list[float] = dataclasses.field(default_factory=list)


def _strategies() -> dict[str, Callable[[SeedModel], torch.nn.Module]]:
    def stock(model: SeedModel) -> torch.nn.Module:
        return model

    def proxy(model: SeedModel) -> torch.nn.Module:
        model.step = DynamicInt(model.step)
        return model

    def registry(model: SeedModel) -> torch.nn.Module:
        return mark_dynamic_attr(model, "step")

    def decorator(model: SeedModel) -> torch.nn.Module:
        cls = dynamic_attrs("step")(type("DynamicSeedModel", (SeedModel,), {}))
        marked: torch.nn.Module = cls(model.layer.in_features)
        marked.load_state_dict(model.state_dict())
        return marked

    return {
        "stock torch.compile": stock,
        "dynscalar.DynamicInt": proxy,
        "dynscalar.mark_dynamic_attr": registry,
        "@dynscalar.dynamic_attrs": decorator,
    }


def run_strategy(name: str, steps: int, backend: str, width: int = 64) -> Row:
    """Run one strategy in this process; compare every output with an eager twin."""
    from torch._dynamo.backends.registry import lookup_backend

    torch.manual_seed(0)
    inputs = [torch.randn(8, width) for _ in range(steps)]
    base = SeedModel(width)
    eager = copy.deepcopy(base)
    model = _strategies()[name](base)
    graphs = 0
    real_backend = lookup_backend(backend)

    def counting(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        nonlocal graphs
        graphs += 1
        return real_backend(gm, example_inputs)

    compiled = torch.compile(model, backend=counting)
    times, equal = [], True
    for x in inputs:
        start = time.perf_counter()
        out = compiled(x)
        times.append(time.perf_counter() - start)
        equal &= torch.allclose(out, eager(x), rtol=1e-5, atol=1e-6)
    equal = equal and bool(model.step == eager.step)
    return Row(
        strategy=name,
        compiles=graphs,
        first_call_s=times[0],
        total_s=sum(times),
        median_step_ms=1e3 * statistics.median(times[len(times) // 2 :]),
        equal_to_eager=bool(equal),
        step_times_s=times,
    )


def run_demo(steps: int = 30, backend: str = "inductor") -> list[Row]:
    """Each strategy in a fresh process with a fresh inductor cache, one row each."""
    rows = []
    for name in _strategies():
        with tempfile.TemporaryDirectory(prefix="dynscalar-demo-") as cache:
            env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache}
            cmd = [sys.executable, "-m", "dynscalar._demo", name, str(steps), backend]
            result = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"demo strategy {name!r} failed:\n{result.stderr[-4000:]}")
        row = Row(**json.loads(result.stdout.strip().splitlines()[-1]))
        print(f"  {name}: {row.compiles} compile(s), {row.total_s:.2f} s", flush=True)
        rows.append(row)
    return rows


def format_table(rows: list[Row]) -> str:
    """A Markdown table of the demo results."""
    header = (
        "| strategy | compiles | first call (s) | total (s) | steady median (ms/step) "
        "| equal to eager |\n|---|---:|---:|---:|---:|---|"
    )
    lines = [
        f"| {r.strategy} | {r.compiles} | {r.first_call_s:.2f} | {r.total_s:.2f} "
        f"| {r.median_step_ms:.3f} | {'yes' if r.equal_to_eager else 'NO'} |"
        for r in rows
    ]
    return "\n".join([header, *lines])


def import_pyplot() -> Any:
    """matplotlib's pyplot on the non-interactive Agg backend, or a clear error."""
    try:
        import matplotlib
    except ImportError as exc:
        raise ImportError(
            "plotting needs matplotlib, which dynscalar does not install by default: "
            "pip install 'dynscalar[bench]' (or pip install matplotlib)"
        ) from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_rows(rows: list[Row], path: str | os.PathLike[str]) -> None:
    """Two panels in one image: cumulative wall time per call, and compiles per strategy."""
    plt = import_pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for row in rows:
        cumulative, total = [], 0.0
        for t in row.step_times_s:
            total += t
            cumulative.append(total)
        left.plot(range(1, len(cumulative) + 1), cumulative, label=row.strategy)
    left.set(title="cumulative wall time", xlabel="call", ylabel="seconds")
    left.grid(alpha=0.3)
    left.legend(fontsize=8)
    bars = right.bar(range(len(rows)), [r.compiles for r in rows])
    for bar, row in zip(bars, rows, strict=True):
        right.annotate(
            str(row.compiles),
            (bar.get_x() + bar.get_width() / 2, bar.get_height()),
            ha="center",
            va="bottom",
        )
    right.set_xticks(range(len(rows)))
    right.set_xticklabels([r.strategy for r in rows], rotation=20, ha="right", fontsize=8)
    right.set(title="compiles (Dynamo graphs)", ylabel="graphs")
    fig.suptitle("dynscalar demo: seed model, self.step += 1 in forward")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":  # one strategy, in a child process of run_demo
    import dynscalar  # noqa: F401  (installs the bridge hook before Dynamo loads)

    _name, _steps, _backend = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    print(json.dumps(dataclasses.asdict(run_strategy(_name, _steps, _backend))))
