"""A compiled *function* ``f(x, n)`` called with a changing scalar argument, per strategy
and case, each in a fresh process, compared with eager exactly (benchmarks/README.md)."""

from __future__ import annotations

import argparse
import inspect
import itertools
import statistics
import sys
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from benchmarks import harness
from benchmarks.harness import (
    Compiles,
    emit,
    loadavg,
    machine_info,
    words,
    write_json,
)
from benchmarks.render_strategies import _arguments_section

SHAPE = (64, 64)


# --------------------------------------------------------------------------- cases


def arith(x: torch.Tensor, n: int) -> torch.Tensor:
    return x * n + n


def branch(x: torch.Tensor, n: int) -> torch.Tensor:
    if n % 2:
        return x * n + 1
    return x - n


def scale(x: torch.Tensor, p: float) -> torch.Tensor:
    return x * p


@dataclass(frozen=True)
class Case:
    """One function, the name of its scalar parameter and the values it is called with."""

    function: Callable[[torch.Tensor, Any], torch.Tensor]
    arg: str
    kind: str  # "int" or "float"
    control_paths: int
    description: str

    def values(self, count: int) -> list[int | float]:
        # From 2: Dynamo specializes 0 and 1 whatever the marks (torch's 0/1 rule).
        if self.kind == "int":
            return [2 + i for i in range(count)]
        return [round(0.15 + 0.1 * i, 2) for i in range(count)]


CASES = {
    "arith": Case(arith, "n", "int", 1, "an int used arithmetically, `x * n + n`"),
    "branch": Case(branch, "n", "int", 2, "an int with a branch, `x * n + 1 if n % 2 else x - n`"),
    "float": Case(scale, "p", "float", 1, "a float, `x * p`"),
}


# --------------------------------------------------------------------------- strategies

WORDS = words("arguments")  # reader-facing names: templates/arguments.json
NAMES: dict[str, str] = WORDS["names"]
DYNSCALAR = ("ds_value", "ds_args", "ds_decorator")
TORCH_2_14 = "torch_dynamic_spec"
STRATEGIES = ("stock", "dynamic_true", *DYNSCALAR, TORCH_2_14)


def _as_is(value: Any) -> Any:
    return value


def build(strategy: str, case: Case, backend: Any) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The compiled callable, and how a plain value is passed to it."""
    f = case.function
    if strategy == "stock":
        return torch.compile(f, backend=backend), _as_is
    if strategy == "dynamic_true":
        return torch.compile(f, backend=backend, dynamic=True), _as_is
    if strategy == TORCH_2_14:
        # added in torch 2.14: a spec per parameter; IntVar is its only scalar variable
        from torch.fx.experimental.dynamic_spec import IntVar

        spec = {case.arg: IntVar(case.arg)}
        compile_: Any = torch.compile  # dynamic_shapes=: torch 2.14's signature, not 2.13's
        return compile_(f, backend=backend, dynamic_shapes=spec), _as_is
    import dynscalar  # only dynscalar's strategies install its bridge

    if strategy == "ds_value":
        return torch.compile(f, backend=backend), dynscalar.mark_dynamic
    if strategy == "ds_args":
        return torch.compile(dynscalar.mark_dynamic_args(f, case.arg), backend=backend), _as_is
    if strategy == "ds_decorator":  # under @dynamic_args: a copy of f with its own code
        code = f.__code__.replace(co_name=f"{f.__name__}_")
        copy = types.FunctionType(code, f.__globals__, code.co_name)
        return torch.compile(dynscalar.dynamic_args(case.arg)(copy), backend=backend), _as_is
    raise SystemExit(f"unknown strategy {strategy!r}; choose from {list(STRATEGIES)}")


# --------------------------------------------------------------------------- child process


def run_child(
    case_name: str, strategy: str, values: int, rounds: int, backend: str
) -> dict[str, Any]:
    """Compile ``f`` with one strategy, call it on every value ``rounds`` times, compare
    each output with eager exactly; return the result row."""
    case = CASES[case_name]
    torch.manual_seed(0)
    x = torch.randn(*SHAPE)
    plain_values = case.values(values)
    row: dict[str, Any] = {
        "case": case_name,
        "strategy": strategy,
        "label": NAMES[strategy],
        "torch": torch.__version__,
        "backend": backend,
        "values": plain_values,
    }
    with Compiles(backend) as seen:
        try:
            call, wrap = build(strategy, case, seen.counter)
            times, mismatches, max_diff = [], [], 0.0
            for _ in range(rounds):
                for v in plain_values:
                    arg = wrap(v)
                    start = time.perf_counter()
                    out = call(x, arg)
                    times.append(time.perf_counter() - start)
                    want = case.function(x, v)
                    max_diff = max(max_diff, (out.double() - want.double()).abs().max().item())
                    try:
                        torch.testing.assert_close(out, want, rtol=0, atol=0)
                    except AssertionError:
                        mismatches.append(v)
        except Exception as exc:  # noqa: BLE001 - a strategy that fails is a result to report
            row.update(error=f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}")
            return row | {"equal_to_eager": False, "compiles": seen.counts()["compiles"]}
    row.update(
        seen.counts(),
        equal_to_eager=not mismatches,
        mismatched_values=sorted(set(mismatches)),
        max_abs_diff=max_diff,
        calls=len(times),
        first_call_s=times[0],
        steady_median_us=statistics.median(times[-len(plain_values) :]) * 1e6,
        call_times_s=times,
    )
    return row


# --------------------------------------------------------------------------- parent process


def run_parent(args: argparse.Namespace) -> int:
    """Run every pair, print the table, write the JSON; exit 1 on wrong numbers."""
    cases = harness.split(args.cases, CASES, list(CASES))
    strategies = harness.split(args.strategies, STRATEGIES, list(STRATEGIES[:-1]))
    # torch 2.13 ships the dynamic_spec module, but its torch.compile takes no dynamic_shapes
    has_spec = "dynamic_shapes" in inspect.signature(torch.compile).parameters
    python_2_14 = args.torch_2_14 or (sys.executable if has_spec else None)
    if python_2_14 and TORCH_2_14 not in strategies and not args.strategies:
        strategies.append(TORCH_2_14)
    if TORCH_2_14 in strategies and not python_2_14:
        raise SystemExit(f"{TORCH_2_14} needs --torch-2-14 PYTHON (no dynamic_shapes here)")
    info = machine_info()
    print(
        f"dynscalar argument benchmark: backend={args.backend}, {args.values} values x "
        f"{args.rounds} rounds, torch {info['torch']}, load {info['loadavg_start']}",
        flush=True,
    )
    rows, start = [], time.perf_counter()
    options = ["--values", str(args.values), "--rounds", str(args.rounds)]
    options += ["--backend", args.backend]
    for case, s in itertools.product(cases, strategies):
        # each pair in a fresh process of its Python, with this tree's benchmarks and dynscalar
        python = python_2_14 if s == TORCH_2_14 else sys.executable
        failed = {"case": case, "strategy": s, "label": NAMES[s]}
        cmd = ["--child", case, s, *options]
        row = harness.child_row("benchmarks.arguments", cmd, args.timeout, failed, python=python)
        rows.append(row)
        done = f"{row.get('compiles')} compile(s), equal to eager: {row['equal_to_eager']}"
        print(f"{case} / {s}: {row['error'].splitlines()[-1] if 'error' in row else done}")
    info["loadavg_end"] = loadavg()
    config = {"backend": args.backend, "values": args.values, "rounds": args.rounds}
    config |= {"shape": list(SHAPE), "strategies": strategies, "cases": cases}
    result = {
        "kind": "arguments",
        "machine": info,
        "config": config | {"torch_2_14_python": args.torch_2_14},
        "cases": {
            c: {"description": CASES[c].description, "arg": CASES[c].arg, "kind": CASES[c].kind}
            | {"control_paths": CASES[c].control_paths, "values": CASES[c].values(args.values)}
            for c in cases
        },
        "what": {s: WORDS["what"][s] for s in strategies},
        "names": {s: NAMES[s] for s in strategies},
        "wall_s": time.perf_counter() - start,
        "results": rows,
    }
    print("\n".join(_arguments_section(result, str(args.out))).replace("<wbr>", ""))
    print(f"\nwrote {write_json(args.out, result)}")
    return 1 if any(not r["equal_to_eager"] and "error" not in r for r in rows) else 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="aot_eager", help="torch.compile backend")
    parser.add_argument("--values", type=int, default=None, help="distinct values (default 8)")
    parser.add_argument("--rounds", type=int, default=None, help="passes over them (default 5)")
    parser.add_argument("--cases", help=f"comma list of {list(CASES)} (default all)")
    parser.add_argument("--strategies", help=f"comma list of {list(STRATEGIES)}")
    parser.add_argument(
        "--torch-2-14",
        metavar="PYTHON",
        help="a Python whose torch has dynamic_spec (2.14): runs the torch_dynamic_spec strategy",
    )
    parser.add_argument("--quick", action="store_true", help="tiny run for tests: 4 values x 2")
    parser.add_argument("--out", default="arguments.json", help="the JSON to write")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per child process")
    parser.add_argument("--child", nargs=2, metavar=("CASE", "STRATEGY"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.values = args.values or (4 if args.quick else 8)
    args.rounds = args.rounds or (2 if args.quick else 5)
    if args.values < 2:
        parser.error("--values must be at least 2")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        emit(run_child(args.child[0], args.child[1], args.values, args.rounds, args.backend))
        return 0
    return run_parent(args)


if __name__ == "__main__":
    sys.exit(main())
