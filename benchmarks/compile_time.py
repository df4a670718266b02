"""First-compile time against stock torch: each compile in a fresh process, interleaved.

Four configurations compile the same ``Stack`` (pre-norm transformer blocks, a step
counter and a float warm-up factor) and time its first compiled call:

* ``stock``: a process that never imports dynscalar;
* ``imported``: ``import dynscalar``, nothing marked (goal: at most 3% over stock);
* ``marked``: ``step`` and ``warm`` marked with ``mark_dynamic_attr`` (goal: at most 10%
  over stock);
* ``knobs``: stock torch with the same two values made dynamic by its own settings
  (``dynamic_sources`` for the int, ``specialize_float=False`` for the float), never
  importing dynscalar: what the marked compile would cost without dynscalar's bridge.

Each round runs every configuration once per backend, in an order rotated every round;
ratios are paired within a round (the same machine state), reported as median and
p10-p90.  Inductor's FX-graph and AOT caches are off in every child, and its kernel cache
is one directory warmed before the first round: the time is tracing, lowering and code
generation, not the C++ compiler.

    python -m benchmarks.compile_time --rounds 5 --out benchmarks/published/compile_time.json
    python -m benchmarks.compile_time --child marked aot_eager 24   # one child, JSON line
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from typing import Any

import torch
import torch.nn.functional as F

from benchmarks.harness import (
    PUBLISHED,
    machine_info,
    paired_ratios,
    quantiles,
    run_child,
    table,
    write_json,
)

CONFIGS = ("stock", "imported", "marked", "knobs")
BACKENDS = ("eager", "aot_eager", "inductor")
#: blocks per backend: inductor's lowering of 24 blocks takes minutes on 2 cores
DEPTHS = {"eager": 24, "aot_eager": 24, "inductor": 6}
GOALS = {"imported": 1.03, "marked": 1.10}
PATH = PUBLISHED / "compile_time.json"
_INDUCTOR_ENV = {"TORCHINDUCTOR_FX_GRAPH_CACHE": "0", "TORCHINDUCTOR_AUTOGRAD_CACHE": "0"}


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
    """``depth`` transformer blocks, a step counter and a float warm-up factor (marked in the
    ``marked`` configuration here and in ``benchmarks.compile``: one dynamic int, one dynamic
    float)."""

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


def child(config: str, backend: str, depth: int) -> dict[str, Any]:
    """One first compile in this (fresh) process; dynscalar imported only where the
    configuration says so."""
    torch.manual_seed(0)
    model = Stack(depth).eval()
    x = torch.randn(2, 16, 64)
    settings: list[Any] = []
    if config in ("imported", "marked"):
        import dynscalar

        if config == "marked":
            dynscalar.mark_dynamic_attr(model, "step", "warm")
    elif config == "knobs":
        settings = [
            torch.compiler.config.patch(dynamic_sources="L['self'].step"),
            torch._dynamo.config.patch(specialize_float=False),
        ]
    compiled = torch.compile(model, backend=backend)
    with torch.no_grad(), contextlib.ExitStack() as stack:
        for setting in settings:
            stack.enter_context(setting)
        start = time.perf_counter()
        compiled(x)
        first = time.perf_counter() - start
    from torch._dynamo.utils import counters

    imported = any(name == "dynscalar" or name.startswith("dynscalar.") for name in sys.modules)
    return {
        "config": config,
        "backend": backend,
        "depth": depth,
        "first_call_s": first,
        "graphs": counters["stats"]["unique_graphs"],
        "dynscalar_imported": imported,
    }


def measure(rounds: int, backends: list[str], depths: dict[str, int]) -> dict[str, Any]:
    """``rounds`` interleaved rounds of every configuration per backend."""
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="dynscalar-compile-time-") as cache:

        def one(config: str, backend: str) -> dict[str, Any]:
            args = ["--child", config, backend, str(depths[backend])]
            env = _INDUCTOR_ENV if backend == "inductor" else {}
            row, error, _ = run_child("benchmarks.compile_time", args, 1200, cache=cache, env=env)
            if row is None:
                raise RuntimeError(f"{config} on {backend} failed: {error}")
            return row  # type: ignore[no-any-return]

        for backend in backends:  # warm-up: imports' bytecode, inductor's kernel cache
            for config in CONFIGS:
                one(config, backend)
        for r in range(rounds):
            for backend in backends:
                shift = r % len(CONFIGS)
                for config in CONFIGS[shift:] + CONFIGS[:shift]:
                    runs.append({**one(config, backend), "round": r})
    return {"machine": machine_info(rounds=rounds), "runs": runs, **summarize(runs, backends)}


def summarize(runs: list[dict[str, Any]], backends: list[str]) -> dict[str, Any]:
    """Per backend: each configuration's seconds, and its ratios to stock (and marked's to
    the knobs), paired by round."""
    out: dict[str, Any] = {}
    for backend in backends:
        by = {
            c: [
                r["first_call_s"]
                for r in sorted(runs, key=lambda r: r["round"])
                if r["backend"] == backend and r["config"] == c
            ]
            for c in CONFIGS
        }
        graphs = {
            c: sorted({r["graphs"] for r in runs if r["backend"] == backend and r["config"] == c})
            for c in CONFIGS
        }
        out[backend] = {
            "seconds": {c: quantiles(v) for c, v in by.items()},
            "ratio_to_stock": {
                c: quantiles(paired_ratios(by[c], by["stock"])) for c in ("imported", "marked")
            },
            "marked_to_knobs": quantiles(paired_ratios(by["marked"], by["knobs"])),
            "graphs": graphs,
        }
    return {"backends": out, "goals": GOALS}


def render(result: dict[str, Any]) -> str:
    """The result as a Markdown table: median (p10-p90) per backend."""

    def cell(q: dict[str, float], fmt: str, unit: str = "") -> str:
        return f"{q['median']:{fmt}}{unit} ({q['p10']:{fmt}}-{q['p90']:{fmt}})"

    rows = []
    for backend, r in result["backends"].items():
        depth = next(x["depth"] for x in result["runs"] if x["backend"] == backend)
        rows.append(
            (
                f"{backend} ({depth} block{'s' if depth != 1 else ''})",
                cell(r["seconds"]["stock"], ".2f", " s"),
                cell(r["ratio_to_stock"]["imported"], ".3f") + "x",
                cell(r["ratio_to_stock"]["marked"], ".3f") + "x",
                cell(r["marked_to_knobs"], ".3f") + "x",
            )
        )
    head = (
        " | stock first call | imported, unmarked / stock (goal <= "
        f"{GOALS['imported']:.2f}x) | marked / stock (goal <= {GOALS['marked']:.2f}x) "
        "| marked / torch's knobs"
    )
    return "\n".join(table(head, rows))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", nargs=3, metavar=("CONFIG", "BACKEND", "DEPTH"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--depth", type=int, help="blocks on every backend (default: DEPTHS)")
    parser.add_argument("--out", help="write the result as JSON here")
    args = parser.parse_args(argv)
    if args.child:
        config, backend, depth = args.child
        print(json.dumps(child(config, backend, int(depth))))
        return 0
    backends = args.backends.split(",")
    depths = {b: args.depth or DEPTHS[b] for b in backends}
    result = measure(args.rounds, backends, depths)
    if args.out:
        write_json(args.out, result)
    print(render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
