"""Per-call cost of a marked argument handed to a function that graph-breaks itself.

``outer(x, n)`` is compiled with ``n`` marked (``mark_dynamic_args``) and passes ``n`` to
``inner(y, k)``, whose own graph break makes it a frame Dynamo compiles on its own; the
mark follows ``n`` there (``dynscalar/_bridge/_callers.py``).  The same two functions,
compiled without a mark (stock torch's path: a constant, then automatic dynamic), are timed
beside them in one process, taking turns call by call (``harness.interleaved``), once
both have compiled every value: what is left per call is the guards and the graphs.

    python -m benchmarks.callers                      # eager backend, ~1 minute
    python -m benchmarks.callers --backend aot_eager --rounds 40 --out /tmp/callers.json

Each case is a pair of fresh functions (their own code objects, so stock and marked never
share compiled code).  Printed per case: the median time per call of each, and the marked
one's time over stock's, median and p10-p90 of the paired ratios.  Every call is compared
with eager first (exactly).
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
from collections.abc import Callable
from typing import Any

import torch

import dynscalar
from benchmarks.harness import (
    CountingBackend,
    interleaved,
    loadavg,
    machine_info,
    paired_ratios,
    quantiles,
    write_json,
)

SOURCE = """
import torch

def inner_{tag}(y, k):
    torch._dynamo.graph_break()
    return y * k + k

def outer_{tag}(x, n):
    y = x + n
    return inner_{tag}(y, n) * 2
"""

#: case -> the values the argument takes, cycled (small ints are shared objects in CPython)
CASES: dict[str, list[Any]] = {
    "int": [1000 + i for i in range(8)],
    "small int": list(range(3, 11)),
    "float": [0.5 + i / 8 for i in range(8)],
}


def _functions(tag: str) -> Callable[..., Any]:
    namespace: dict[str, Any] = {}
    exec(compile(SOURCE.format(tag=tag), f"<callers {tag}>", "exec"), namespace)
    return namespace[f"outer_{tag}"]  # type: ignore[no-any-return]


def run_case(case: str, backend: str, rounds: int, number: int) -> dict[str, Any]:
    values = CASES[case]
    compiled: dict[str, Callable[..., Any]] = {}
    graphs: dict[str, int] = {}
    x = torch.ones(16)
    for strategy in ("stock", "marked"):
        outer = _functions(f"{strategy}_{case.replace(' ', '_')}")
        if strategy == "marked":
            dynscalar.mark_dynamic_args(outer, "n")
        counter = CountingBackend(backend)
        fn = torch.compile(outer, backend=counter)
        for _ in range(2):  # every value compiled (stock: constant, then dynamic)
            for value in values:
                got, want = fn(x, value), outer(x, value)
                if not torch.equal(got, want):
                    raise AssertionError(f"{case} {strategy}: {got} != eager {want}")
        compiled[strategy], graphs[strategy] = fn, counter.frame_count

    cycles = {name: itertools.cycle(values) for name in compiled}

    def call(name: str) -> Callable[[], Any]:
        fn, cycle = compiled[name], cycles[name]
        return lambda: fn(x, next(cycle))

    samples = interleaved({name: call(name) for name in compiled}, rounds, number)
    ratios = paired_ratios(samples["marked"], samples["stock"])
    return {
        "case": case,
        "graphs": graphs,
        "us_per_call": {name: quantiles(s, scale=1e6) for name, s in samples.items()},
        "marked_over_stock": quantiles(ratios),
        "rounds": rounds,
        "number": number,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.callers", description=__doc__)
    parser.add_argument("--backend", default="eager", choices=["eager", "aot_eager"])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--number", type=int, default=40, help="calls per sample")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--out", help="write the results as JSON here")
    args = parser.parse_args(argv)
    load = loadavg()
    if load and load[0] > 0.5:
        print(f"note: load average {load[0]:.2f}; timings are noisier", file=sys.stderr)
    rows = [
        run_case(case, args.backend, args.rounds, args.number) for case in args.cases.split(",")
    ]
    print(f"backend {args.backend}, {args.rounds} rounds of {args.number} calls, interleaved")
    print(f"{'case':<10} {'graphs s/m':>10} {'stock us':>9} {'marked us':>10}  marked/stock")
    for row in rows:
        stock, marked = row["us_per_call"]["stock"], row["us_per_call"]["marked"]
        ratio = row["marked_over_stock"]
        print(
            f"{row['case']:<10} {row['graphs']['stock']:>4}/{row['graphs']['marked']:<5} "
            f"{stock['median']:>9.1f} {marked['median']:>10.1f}  "
            f"{ratio['median']:.3f}x ({ratio['p10']:.3f}-{ratio['p90']:.3f})"
        )
    if args.out:
        write_json(
            args.out,
            {
                "machine": machine_info(backend=args.backend),
                "dynscalar": dynscalar.__file__,
                "rows": rows,
                "median_of_medians": statistics.median(
                    r["marked_over_stock"]["median"] for r in rows
                ),
            },
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
