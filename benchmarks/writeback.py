"""Write-back per compiled call: a forward that stores N values made from a ``DynamicInt``,
compiled with dynscalar, against the same forward run eagerly and against stock
torch.compile of the same forward holding a plain int.

    python -m benchmarks.writeback                          # N = 10, 100, 1000
    python -m benchmarks.writeback --sizes 10,100 --backend eager --out /tmp/wb.json

Workloads (each call stores a list of N values into ``self.out``):

* ``max``: ``v = max(v, c) + 1``: which operand ``max`` keeps depends on run-time values,
  so every value is replayed after the graph (the user's ``max`` and ``+`` on the eager
  objects), each once;
* ``mixed``: the same chain through ``max``, ``sum``, ``pow``, a dunder call and ``+=``;
* ``add``: ``v = v + c``: every value is known to be a ``DynamicInt`` at compile time and
  is rebuilt from the graph's output.

The three callables of a workload are timed interleaved (``harness.interleaved``: turns
rotated every round, this thread's CPU time), ratios paired round by round.  "stock" is the
same forward holding a plain ``5``: torch compiles it to constants (one graph, guarded on
the value), the floor any compiled call pays.  Its graph is compiled in this process, with
dynscalar installed and nothing of it read: tests/test_do_no_harm.py checks that this is
stock torch.  Every compiled call is compared with its eager twin (values, classes and
specs of everything stored) and every compile counted (one each) before timing.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

import torch

import dynscalar as ds
from benchmarks.harness import (
    CountingBackend,
    fresh_class,
    interleaved,
    machine_info,
    paired_ratios,
    quantiles,
    write_json,
)


class MaxChain(torch.nn.Module):
    def __init__(self, n: int, start: Any) -> None:
        super().__init__()
        self.n = n
        self.v = start
        self.out: list[Any] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        v = self.v
        out = []
        for c in range(self.n):
            v = max(v, c) + 1
            out.append(v)
        self.out = out
        return x + 1


class MixedChain(MaxChain):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        v = self.v
        out = []
        for c in range(self.n):
            k = c % 5
            if k == 0:
                v = max(v, c) + 1
            elif k == 1:
                v = sum([v, 1])
            elif k == 2:
                v = pow(v, 1) + 1
            elif k == 3:
                v = v.__radd__(1)
            else:
                v += 1
            out.append(v)
        self.out = out
        return x + 1


class AddChain(MaxChain):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        v = self.v
        out = []
        for c in range(self.n):
            v = v + c
            out.append(v)
        self.out = out
        return x + 1


WORKLOADS: dict[str, type[MaxChain]] = {"max": MaxChain, "mixed": MixedChain, "add": AddChain}


def describe(value: Any) -> Any:
    """Class, value and spec of a stored value (lists item by item)."""
    if type(value) is list:
        return [describe(item) for item in value]
    spec = value.spec if ds.is_dynamic_scalar(value) else None
    return (type(value).__name__, int(value), spec)


def callables(workload: str, n: int, backend: str) -> dict[str, Callable[[], Any]]:
    """The eager, compiled and stock calls of ``workload`` storing ``n`` values, compiled
    and checked (compiled equals eager; one graph each)."""
    cls = WORKLOADS[workload]
    x = torch.ones(4)
    eager = cls(n, ds.DynamicInt(5))
    built: dict[str, Any] = {}
    for name, start in (("compiled", ds.DynamicInt(5)), ("stock", 5)):
        model = fresh_class(cls, f"{workload}_{n}_{name}")(n, start)
        counter = CountingBackend(backend)
        built[name] = (model, torch.compile(model, backend=counter), counter)
    model, compiled, counter = built["compiled"]
    for _ in range(3):
        torch.testing.assert_close(compiled(x), eager(x), rtol=0, atol=0)
        assert describe(model.out) == describe(eager.out), f"{workload} N={n}: not eager's"
    stock_model, stock, stock_counter = built["stock"]
    stock(x)
    assert [int(v) for v in stock_model.out] == [int(v) for v in eager.out]
    assert counter.frame_count == stock_counter.frame_count == 1, "one graph each"
    return {"eager": lambda: eager(x), "compiled": lambda: compiled(x), "stock": lambda: stock(x)}


def run(workloads: list[str], sizes: list[int], backend: str, rounds: int, budget: float) -> Any:
    rows = []
    for workload in workloads:
        for n in sizes:
            fns = callables(workload, n, backend)
            number = max(1, int(budget / (n + 20)))  # calls per sample: ~equal time per size
            for fn in fns.values():  # warm up
                for _ in range(number):
                    fn()
            samples = interleaved(fns, rounds, number)
            rows.append(
                {
                    "workload": workload,
                    "n": n,
                    "calls_per_sample": number,
                    "us": {name: quantiles(s, 1e6) for name, s in samples.items()},
                    "compiled_over_eager": quantiles(
                        paired_ratios(samples["compiled"], samples["eager"])
                    ),
                    "compiled_over_stock": quantiles(
                        paired_ratios(samples["compiled"], samples["stock"])
                    ),
                }
            )
            torch._dynamo.reset()
    return rows


def _cell(q: dict[str, float], fmt: str) -> str:
    return f"{q['median']:{fmt}} ({q['p10']:{fmt}}-{q['p90']:{fmt}})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--sizes", default="10,100,1000", help="values stored per call")
    parser.add_argument("--backend", default="aot_eager")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--budget", type=float, default=2000, help="~stored values per sample")
    parser.add_argument("--out", help="write the rows and the machine as JSON here")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    workloads = [w for w in args.workloads.split(",") if w]
    sizes = [int(s) for s in args.sizes.split(",") if s]
    info = machine_info(backend=args.backend, rounds=args.rounds)
    rows = run(workloads, sizes, args.backend, args.rounds, args.budget)
    print(f"backend {args.backend}; us per call, median (p10-p90); ratios paired per round")
    head = ("workload", "N", "eager us", "compiled us", "stock us", "compiled/eager")
    print(f"{head[0]:<8} {head[1]:>5} {head[2]:>20} {head[3]:>20} {head[4]:>20} {head[5]:>18}")
    for row in rows:
        us = row["us"]
        cells = [_cell(us[k], ".1f") for k in ("eager", "compiled", "stock")]
        ratio = _cell(row["compiled_over_eager"], ".2f")
        times = " ".join(f"{cell:>20}" for cell in cells)
        print(f"{row['workload']:<8} {row['n']:>5} {times} {ratio:>18}")
    if args.out:
        write_json(args.out, {"machine": info, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
