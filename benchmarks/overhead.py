"""What dynscalar costs against the best torch can do, side by side in one run: the
sections ``percall``, ``eager``, ``compile`` and ``warm`` (each its own module), and
instruction counts with ``--callgrind``.

    python -m benchmarks.overhead                       # everything (~40 min here)
    python -m benchmarks.overhead --quick               # seconds: a plumbing check"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import torch

from benchmarks.callgrind import callgrind_available, run_callgrind
from benchmarks.compile import run_scaling, run_share
from benchmarks.eager import EAGER_CASES, run_eager
from benchmarks.harness import HERE, loadavg, machine_info, split, write_json
from benchmarks.percall import DS_PERCALL, PERCALL, run_percall
from benchmarks.render_overhead import cache_counts, qfmt, write_plots
from benchmarks.warm import WARM_VARIANTS, run_warm

DEFAULT_OUT = HERE / "results" / "overhead"
GOAL_PERCALL = 1.02
GOAL_ADD_NS = 300.0
GOAL_TORCH_CALL_NS = 1000.0
GOAL_FORWARD = 1.05
GOAL_SHARE = 0.02


def _hits(row: dict[str, Any]) -> tuple[int, int]:
    """(FX graph cache hits, AOTAutograd cache hits) of a warm row's second process."""
    counts = (-1, 0, -1) if "error" in row["warm"] else cache_counts(row["warm"])
    return counts[0], counts[2]


def goals(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Each goal: (section, goal, measured, met), for the README's table."""
    found: list[tuple[str, str, str, bool]] = []
    for backend, data in result.get("percall", {}).items():
        for r in data["rows"]:
            if r["strategy"] in DS_PERCALL and r["ratio"] is not None:
                goal = f"{backend}: {r['label']} <= {GOAL_PERCALL}x {r['reference']}"
                ok = r["ratio"]["median"] <= GOAL_PERCALL and r["equal_to_eager"]
                found.append(("percall", goal, qfmt(r["ratio"]), ok))
    eager = {r["case"]: r for r in result.get("eager", {}).get("rows", [])}
    if "add" in eager:
        q = eager["add"]["proxy_ns"]
        goal = f"`x + 1` on a DynamicInt <= {GOAL_ADD_NS:.0f} ns"
        found.append(("eager", goal, qfmt(q, " ns", ".0f"), q["median"] <= GOAL_ADD_NS))
    for case in ("tensor_mul", "torch_mul", "view", "full"):
        if case in eager:
            q = eager[case]["overhead_ns"]
            goal = f"{eager[case]['label']}: <= +{GOAL_TORCH_CALL_NS:.0f} ns over plain"
            found.append(("eager", goal, qfmt(q, " ns", ".0f"), q["median"] <= GOAL_TORCH_CALL_NS))
    if "forward" in eager:
        q = eager["forward"]["ratio"]
        goal = f"seed model eager forward, proxy attribute <= {GOAL_FORWARD}x plain"
        found.append(("eager", goal, qfmt(q), q["median"] <= GOAL_FORWARD))
    share = result.get("compile", {}).get("share")
    for backend, data in (share or {}).get("backends", {}).items():
        q = data["share_of_first_call"]
        goal = f"{backend}: bridge share of the first compile ({share['attributes']} attributes)"
        goal += f" <= {GOAL_SHARE:.0%}"
        found.append(("compile", goal, qfmt(q, "", ".2%"), q["median"] <= GOAL_SHARE))
    warm = {r["variant"]: r for r in result.get("warm", {}).get("rows", [])}
    refs = dict.fromkeys(("ds_registry", "ds_proxy", "ds_decorator"), "dynamic_sources")
    for name, ref in (refs | {"ds_args": "args_dynamic_sources"}).items():
        if name in warm and ref in warm:
            got, want = _hits(warm[name]), _hits(warm[ref])
            goal = f"{warm[name]['label']}: warm-restart hits (FX graph, AOTAutograd) = "
            ok = got == want and warm[name]["warm"].get("equal_to_eager", False)
            found.append(("warm", f"{goal}{WARM_VARIANTS[ref]}'s", f"{got} vs {want}", ok))
    for name in ("float_registry", "float_proxy"):
        if name in warm:
            got = _hits(warm[name])
            goal = f"{warm[name]['label']}: warm restart hits the AOTAutograd cache"
            ok = got[1] > 0 and warm[name]["warm"].get("equal_to_eager", False)
            found.append(("warm", goal, f"{got}", ok))
    return [
        {"section": s, "goal": g, "measured": m, "status": "PASS" if ok else "MISS"}
        for s, g, m, ok in found
    ]


SECTIONS = ("percall", "eager", "compile", "warm")
#: every option but --quick/--out/--callgrind: its default (its type is the default's type)
OPTIONS: dict[str, Any] = {
    "sections": ",".join(SECTIONS),
    "backends": "inductor,aot_eager",  # per-call section
    "strategies": ",".join(PERCALL),
    "rounds": 60,  # per-call: interleaved rounds
    "number": 200,  # per-call: calls per round
    "warmup": 200,
    "eager_rounds": 41,
    "eager_scale": 1.0,  # calls per eager sample
    "share_depth": 48,
    "share_backends": "aot_eager,inductor",
    "share_repeats": 2,
    "scaling_depth": 100,
    "scaling_ks": "1,10,100",
    "scaling_backend": "inductor",
    "scaling_repeats": 3,
    "scaling_rounds": 40,
    "warm_variants": ",".join(WARM_VARIANTS),
    "warm_backend": "inductor",
    "callgrind_scope": "all",  # "eager": the eager cases and the eager floor only
    "callgrind_calls": 200,
    "callgrind_jobs": 2,
    "threads": 1,  # torch threads (1: steadier)
    "timeout": 1800.0,  # per child process
}
QUICK = {
    "backends": "eager",
    **{"rounds": 3, "number": 20, "warmup": 5, "eager_rounds": 3, "eager_scale": 0.01},
    **{"share_depth": 2, "share_backends": "eager", "share_repeats": 1},
    **{"scaling_depth": 6, "scaling_ks": "1,3", "scaling_backend": "eager"},
    **{"scaling_repeats": 1, "scaling_rounds": 3},
    **{"warm_variants": "ds_registry", "warm_backend": "aot_eager"},
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in OPTIONS.items():
        p.add_argument("--" + name.replace("_", "-"), type=type(default), default=default)
    p.add_argument("--callgrind", action="store_true", help="instruction counts (valgrind)")
    p.add_argument("--quick", action="store_true", help="a few seconds: checks the plumbing")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--name", default="overhead")
    args = p.parse_args(argv)
    if args.quick:
        vars(args).update(QUICK)
    return args


def _names(value: str) -> list[str]:
    return [v for v in value.split(",") if v]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    sections = split(args.sections, SECTIONS, list(SECTIONS))
    backends, strategies = _names(args.backends), _names(args.strategies)
    start = time.perf_counter()
    config = {k: v for k, v in vars(args).items() if k != "out"}
    result: dict[str, Any] = {"schema": 1, "machine": machine_info(), "config": config}
    if (result["machine"]["loadavg_start"] or [0])[0] > 2.5:
        print(f"note: load average {result['machine']['loadavg_start']} - timings will be noisy")
    runs = {
        "percall": lambda: run_percall(backends, strategies, args.rounds, args.number, args.warmup),
        "eager": lambda: run_eager(list(EAGER_CASES), args.eager_rounds, args.eager_scale),
        "compile": lambda: {
            "share": run_share(args.share_depth, _names(args.share_backends), args.share_repeats),
            "scaling": run_scaling(
                args.scaling_depth,
                [int(k) for k in _names(args.scaling_ks)],
                args.scaling_backend,
                args.scaling_repeats,
                args.scaling_rounds,
                max(1, args.number // 2),
            ),
        },
        "warm": lambda: run_warm(_names(args.warm_variants), args.warm_backend, args.timeout),
    }
    loads = result["machine"]["loadavg_by_section"] = {}
    for section in sections:
        print(f"{section} ...", flush=True)
        loads[section] = [loadavg()]
        result[section] = runs[section]()
        loads[section].append(loadavg())
    result["machine"]["loadavg_end"] = loadavg()  # of the timed sections
    # last: counts do not depend on the load (per-call children compile under valgrind, which
    # takes many minutes for inductor; --callgrind-scope eager leaves them out)
    if args.callgrind and {"percall", "eager"} & set(sections) and callgrind_available():
        timed = strategies if args.callgrind_scope == "all" and "percall" in sections else []
        result["callgrind"] = run_callgrind(
            backends, timed, list(EAGER_CASES), args.callgrind_calls, args.callgrind_jobs
        )
    elif args.callgrind:
        print("callgrind: valgrind not found (or no percall/eager section), skipped")
    result["goals"] = goals(result)
    result["wall_s"] = round(time.perf_counter() - start, 1)
    result["plots"] = [p.name for p in write_plots(result, args.out)]  # makes args.out
    path = write_json(args.out / f"{args.name}.json", result)
    for g in result["goals"]:
        print(f"  {g['status']:4}  {g['goal']}: {g['measured']}")
    print(f"wrote {path} ({result['wall_s']:.0f} s)")
    rows = [r for b in result.get("percall", {}).values() for r in b["rows"]]
    failed = [(r["strategy"], r["compiles"]) for r in rows if not r["equal_to_eager"]]
    failed += [(r["strategy"], r["compiles"]) for r in rows if r["compiles"] != 1]
    if failed:
        print("WRONG NUMBERS OR RECOMPILES:", failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
