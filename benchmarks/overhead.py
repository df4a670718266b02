"""What dynscalar costs against the best torch can do, side by side in one run.

Sections (each its own module): ``percall`` (:mod:`benchmarks.percall`), ``eager``
(:mod:`benchmarks.eager`), ``compile`` (:mod:`benchmarks.compile`: the bridge's share of a
first compile and scaling with the number of marks) and ``warm`` (:mod:`benchmarks.warm`);
``--callgrind`` adds instruction counts (:mod:`benchmarks.callgrind`).  Timings are
interleaved and reported as medians with the p10-p90 spread.

    python -m benchmarks.overhead                       # everything (~40 min here)
    python -m benchmarks.overhead --quick               # seconds: a plumbing check
    python -m benchmarks.overhead --sections percall --backends aot_eager --rounds 40
    python -m benchmarks.overhead --callgrind           # + instruction counts

Writes ``<out>/overhead.json`` and the page's figures (default out:
``benchmarks/results/overhead``, git-ignored); ``python -m benchmarks.render`` turns the
published JSON into docs/overhead.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import torch

from benchmarks import harness
from benchmarks.callgrind import callgrind_available, run_callgrind
from benchmarks.compile import run_scaling, run_share
from benchmarks.eager import EAGER_SPECS, run_eager
from benchmarks.harness import HERE, loadavg, machine_info, write_json
from benchmarks.percall import DS_PERCALL, PERCALL, run_percall
from benchmarks.render_overhead import write_plots
from benchmarks.warm import WARM_VARIANTS, run_warm

DEFAULT_OUT = HERE / "results" / "overhead"
GOAL_PERCALL = 1.02
GOAL_ADD_NS = 300.0
GOAL_TORCH_CALL_NS = 1000.0
GOAL_FORWARD = 1.05
GOAL_SHARE = 0.02


def _fmt(q: dict[str, float] | None, unit: str = "x", digits: int = 3) -> str:
    if not q:
        return "-"
    return f"{q['median']:.{digits}f}{unit} ({q['p10']:.{digits}f}-{q['p90']:.{digits}f})"


def goals(result: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def add(section: str, goal: str, measured: str, ok: bool | None) -> None:
        status = "n/a" if ok is None else ("PASS" if ok else "MISS")
        out.append({"section": section, "goal": goal, "measured": measured, "status": status})

    for backend, data in result.get("percall", {}).items():
        for row in data["rows"]:
            if row["strategy"] not in DS_PERCALL or row["ratio"] is None:
                continue
            add(
                "percall",
                f"{backend}: {row['label']} <= {GOAL_PERCALL}x {row['reference']}",
                _fmt(row["ratio"]),
                row["ratio"]["median"] <= GOAL_PERCALL and row["equal_to_eager"],
            )
    eager = {r["case"]: r for r in result.get("eager", {}).get("rows", [])}
    if "add" in eager:
        q = eager["add"]["proxy_ns"]
        add(
            "eager",
            f"`x + 1` on a DynamicInt <= {GOAL_ADD_NS:.0f} ns",
            _fmt(q, " ns", 0),
            q["median"] <= GOAL_ADD_NS,
        )
    for case in ("tensor_mul", "torch_mul", "view", "full"):
        if case in eager:
            q = eager[case]["overhead_ns"]
            add(
                "eager",
                f"{eager[case]['label']}: <= +{GOAL_TORCH_CALL_NS:.0f} ns over plain",
                _fmt(q, " ns", 0),
                q["median"] <= GOAL_TORCH_CALL_NS,
            )
    if "forward" in eager:
        q = eager["forward"]["ratio"]
        add(
            "eager",
            f"seed model eager forward, proxy attribute <= {GOAL_FORWARD}x plain",
            _fmt(q),
            q["median"] <= GOAL_FORWARD,
        )
    share = result.get("compile", {}).get("share")
    if share:
        for backend, data in share["backends"].items():
            q = data["share_of_first_call"]
            add(
                "compile",
                f"{backend}: bridge share of the first compile ({share['attributes']} "
                f"attributes) <= {GOAL_SHARE:.0%}",
                f"{q['median']:.2%} ({q['p10']:.2%}-{q['p90']:.2%})",
                q["median"] <= GOAL_SHARE,
            )
    warm = {r["variant"]: r for r in result.get("warm", {}).get("rows", [])}

    def hits(row: dict[str, Any]) -> tuple[int, int]:
        w = row["warm"]
        if "error" in w:
            return (-1, -1)
        return (
            w["fxgraph"].get("fxgraph_cache_hit", 0),
            w["aot_autograd"].get("autograd_cache_hit", 0),
        )

    for name, ref in (
        ("ds_registry", "dynamic_sources"),
        ("ds_proxy", "dynamic_sources"),
        ("ds_decorator", "dynamic_sources"),
        ("ds_args", "args_dynamic_sources"),
    ):
        if name in warm and ref in warm:
            got, want = hits(warm[name]), hits(warm[ref])
            add(
                "warm",
                f"{warm[name]['label']}: warm-restart hits (FX graph, AOTAutograd) = "
                f"{WARM_VARIANTS[ref][0]}'s",
                f"{got} vs {want}",
                got == want and warm[name]["warm"].get("equal_to_eager", False),
            )
    for name in ("float_registry", "float_proxy"):
        if name in warm:
            got = hits(warm[name])
            add(
                "warm",
                f"{warm[name]['label']}: warm restart hits the AOTAutograd cache",
                f"{got}",
                got[1] > 0 and warm[name]["warm"].get("equal_to_eager", False),
            )
    return out


SECTIONS = ("percall", "eager", "compile", "warm")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sections", default=",".join(SECTIONS))
    p.add_argument("--backends", default="inductor,aot_eager", help="per-call section")
    p.add_argument("--strategies", default=",".join(PERCALL))
    p.add_argument("--rounds", type=int, default=60, help="per-call: interleaved rounds")
    p.add_argument("--number", type=int, default=200, help="per-call: calls per round")
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--eager-rounds", type=int, default=41)
    p.add_argument("--eager-scale", type=float, default=1.0, help="calls per eager sample")
    p.add_argument("--share-depth", type=int, default=48)
    p.add_argument("--share-backends", default="aot_eager,inductor")
    p.add_argument("--share-repeats", type=int, default=2)
    p.add_argument("--scaling-depth", type=int, default=100)
    p.add_argument("--scaling-ks", default="1,10,100")
    p.add_argument("--scaling-backend", default="inductor")
    p.add_argument("--scaling-repeats", type=int, default=3)
    p.add_argument("--scaling-rounds", type=int, default=40)
    p.add_argument("--warm-variants", default=",".join(WARM_VARIANTS))
    p.add_argument("--warm-backend", default="inductor")
    p.add_argument("--callgrind", action="store_true", help="instruction counts (valgrind)")
    p.add_argument(
        "--callgrind-scope",
        choices=("all", "eager"),
        default="all",
        help="eager: instruction counts of the eager cases and the eager floor only",
    )
    p.add_argument("--callgrind-calls", type=int, default=200)
    p.add_argument("--callgrind-jobs", type=int, default=2)
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1: steadier)")
    p.add_argument(
        "--timer", choices=("cpu", "wall"), default="cpu", help="per-call and eager timings"
    )
    p.add_argument("--timeout", type=float, default=1800, help="per child process")
    p.add_argument("--quick", action="store_true", help="a few seconds: checks the plumbing")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--name", default="overhead")
    args = p.parse_args(argv)
    if args.quick:
        args.backends = "eager"
        args.rounds, args.number, args.warmup = 3, 20, 5
        args.eager_rounds, args.eager_scale = 3, 0.01
        args.share_depth, args.share_backends, args.share_repeats = 2, "eager", 1
        args.scaling_depth, args.scaling_ks, args.scaling_backend = 6, "1,3", "eager"
        args.scaling_repeats, args.scaling_rounds = 1, 3
        args.warm_variants, args.warm_backend = "ds_registry", "aot_eager"
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    harness.TIMER["name"] = args.timer
    sections = [s for s in args.sections.split(",") if s]
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        raise SystemExit(f"unknown sections {sorted(unknown)}; choose from {SECTIONS}")
    start = time.perf_counter()
    config = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    config.pop("out")
    result: dict[str, Any] = {"schema": 1, "machine": machine_info(), "config": config}
    if result["machine"]["loadavg_start"] and result["machine"]["loadavg_start"][0] > 2.5:
        print(f"note: load average {result['machine']['loadavg_start']} - timings will be noisy")
    backends = [b for b in args.backends.split(",") if b]
    strategies = [s for s in args.strategies.split(",") if s]
    loads = result["machine"]["loadavg_by_section"] = {}
    if "percall" in sections:
        print("per compiled call ...", flush=True)
        loads["percall"] = [loadavg()]
        result["percall"] = run_percall(backends, strategies, args.rounds, args.number, args.warmup)
        loads["percall"].append(loadavg())
    if "eager" in sections:
        print("eager ...", flush=True)
        loads["eager"] = [loadavg()]
        result["eager"] = run_eager(list(EAGER_SPECS), args.eager_rounds, args.eager_scale)
        loads["eager"].append(loadavg())
    if "compile" in sections:
        print("compile time ...", flush=True)
        loads["compile"] = [loadavg()]
        share_backends = [b for b in args.share_backends.split(",") if b]
        result["compile"] = {
            "share": run_share(args.share_depth, share_backends, args.share_repeats),
            "scaling": run_scaling(
                args.scaling_depth,
                [int(k) for k in args.scaling_ks.split(",")],
                args.scaling_backend,
                args.scaling_repeats,
                args.scaling_rounds,
                max(1, args.number // 2),
            ),
        }
        loads["compile"].append(loadavg())
    if "warm" in sections:
        print("warm restart ...", flush=True)
        loads["warm"] = [loadavg()]
        variants = [v for v in args.warm_variants.split(",") if v]
        result["warm"] = run_warm(variants, args.warm_backend, args.timeout)
        loads["warm"].append(loadavg())
    result["machine"]["loadavg_end"] = loadavg()  # of the timed sections
    # Last: counts do not depend on the load.  Per-call children compile under valgrind (slow:
    # an inductor compile takes many minutes there); ``--callgrind-scope eager`` leaves them out.
    if args.callgrind and ("percall" in sections or "eager" in sections):
        if callgrind_available():
            print("callgrind ...", flush=True)
            result["callgrind"] = run_callgrind(
                backends,
                strategies if args.callgrind_scope == "all" and "percall" in sections else [],
                list(EAGER_SPECS),
                args.callgrind_calls,
                args.callgrind_jobs,
            )
        else:
            print("callgrind: valgrind not found, skipped")
    result["goals"] = goals(result)
    result["wall_s"] = round(time.perf_counter() - start, 1)
    result["plots"] = [p.name for p in write_plots(result, args.out)]  # makes args.out
    path = write_json(args.out / f"{args.name}.json", result)
    for g in result["goals"]:
        print(f"  {g['status']:4}  {g['goal']}: {g['measured']}")
    print(f"wrote {path} ({result['wall_s']:.0f} s)")
    failed = [
        r
        for b in result.get("percall", {}).values()
        for r in b["rows"]
        if not r["equal_to_eager"] or r["compiles"] != 1
    ]
    if failed:
        print("WRONG NUMBERS OR RECOMPILES:", [(r["strategy"], r["compiles"]) for r in failed])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
