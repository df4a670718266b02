"""What the doctor adds to a call past a recompile limit.

A model of 8 pre-norm blocks whose step counter changes on every call (unmarked) reaches
``recompile_limit`` after 8 compiles; every later call misses the cache and runs eagerly.
Without the doctor torch runs it straight away; under the doctor's watcher
(:class:`dynscalar.tools.doctor.watcher.RecompileWatcher`, what ``python -m dynscalar
doctor`` installs) the call is read first: every scalar guard of every cached version is
evaluated against it.  Each round times ``--calls`` calls past the limit both ways, in an
order that alternates every round; reported: the median per-call time of each and their
paired difference and ratio.

    python -m benchmarks.doctor_overhead --rounds 5
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
import time
from typing import Any

import torch

from benchmarks.harness import machine_info, paired_ratios, quantiles


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(32)
        self.lin = torch.nn.Linear(32, 32)
        self.drop = torch.nn.Dropout(0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.drop(self.lin(self.norm(x)))


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block() for _ in range(8))
        self.step = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.step += 1
        for block in self.blocks:
            x = block(x)
        return x * self.step


def per_call_ms(doctor: bool, calls: int) -> float:
    """Milliseconds per call past the limit, with or without the doctor's watcher."""
    from dynscalar.tools.doctor.analysis import Collector
    from dynscalar.tools.doctor.records import DoctorReport
    from dynscalar.tools.doctor.watcher import RecompileWatcher

    torch._dynamo.reset()
    torch.manual_seed(0)
    model = Net()
    compiled = torch.compile(model, backend="eager")
    x = torch.randn(4, 32)
    watching = RecompileWatcher(Collector(DoctorReport("bench", []))) if doctor else None
    with watching or contextlib.nullcontext():
        for _ in range(10):  # 8 compiles, then the limit
            compiled(x)
        start = time.perf_counter()
        for _ in range(calls):
            compiled(x)
        return (time.perf_counter() - start) / calls * 1e3


def measure(rounds: int, calls: int) -> dict[str, Any]:
    logging.getLogger("torch._dynamo").setLevel(logging.ERROR)  # the limit's warning
    torch.set_num_threads(1)
    times: dict[str, list[float]] = {"stock": [], "doctor": []}
    for r in range(rounds):
        for doctor in (False, True) if r % 2 == 0 else (True, False):
            times["doctor" if doctor else "stock"].append(per_call_ms(doctor, calls))
    added = [d - s for d, s in zip(times["doctor"], times["stock"], strict=True)]
    return {
        "machine": machine_info(rounds=rounds, calls=calls),
        "ms_per_call": {k: quantiles(v) for k, v in times.items()},
        "added_ms": quantiles(added),
        "ratio": quantiles(paired_ratios(times["doctor"], times["stock"])),
        "runs": times,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args(argv)
    result = measure(args.rounds, args.calls)
    q = result["ms_per_call"]
    print(json.dumps(result))
    print(
        f"per call past the limit: stock {q['stock']['median']:.2f} ms, under the doctor "
        f"{q['doctor']['median']:.2f} ms (+{result['added_ms']['median']:.2f} ms, "
        f"{result['ratio']['median']:.2f}x); load {result['machine']['loadavg_start']}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
