"""Run the differential fuzzer from the command line.

    python -m tests.fuzz --profile long --seed 0 --json out.json   # >= 5000 programs
    python -m tests.fuzz --profile quick                           # the CI profile (200)
    python -m tests.fuzz --seed 0 --index 17                       # one program, verdict
    python -m tests.fuzz --seed 0 --index 17 --script > prog.py    # standalone script

Then ``python -m tests.fuzz.render_docs out.json`` writes ``docs/fuzzing.md``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.fuzz",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--profile", choices=["quick", "long"], default="quick")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--programs", type=int, help="override the profile's program count")
    parser.add_argument("--start", type=int, default=0, help="first program index")
    parser.add_argument("--index", type=int, help="check one program and print it")
    parser.add_argument(
        "--backend",
        choices=["eager", "aot_eager", "inductor"],
        help="one backend for all programs (default: the profile's split)",
    )
    parser.add_argument("--script", action="store_true", help="print the standalone script")
    parser.add_argument(
        "--published",
        action="store_true",
        help="with --index: the program as the published run made it (without the shapes "
        "added since: integer tensors, random ops)",
    )
    parser.add_argument("--no-shrink", action="store_true")
    parser.add_argument("--json", type=Path, help="write the summary here")
    parser.add_argument(
        "--stop-after",
        type=float,
        metavar="SECONDS",
        help="start no program after SECONDS: the summary covers the programs checked",
    )
    args = parser.parse_args(argv)

    import torch._logging

    torch._logging.set_logs(dynamo=logging.ERROR)  # type: ignore[attr-defined]  # graph-break chatter: not a verdict

    from .generator import generate, render
    from .profile import PROFILES, backend_for, log, run_profile
    from .runner import StockWorker, check_program, shrink

    profile = PROFILES[args.profile]

    def backend(index: int) -> str:
        return args.backend or backend_for(index, profile.inductor_every)

    if args.index is not None:
        program = generate(args.seed, args.index, later_shapes=not args.published)
        if args.script:
            print(render(program, script=True, backend=backend(args.index)), end="")
            return 0
        print(render(program))
        stock = StockWorker()
        try:
            verdict = check_program(program, backend(args.index), stock)
            print(
                f"# backend {verdict.backend}: {verdict.calls} calls, {verdict.compiles} compiles"
            )
            for event in verdict.events:
                extra = event.error or event.torch_kind or ""
                print(
                    f"# call {event.mismatch.call}: {event.cause} ({extra}) "
                    f"{event.mismatch.key} -- {event.mismatch.detail}"
                )
            if not verdict.events:
                print("# compiled and eager agree on every call")
            if verdict.failure is not None and not args.no_shrink:
                small, event, _ = shrink(verdict, stock, budget_s=120)
                print(f"\n# minimal program: {event.mismatch.detail}")
                print(render(small, script=True, backend=verdict.backend), end="")
        finally:
            stock.close()
        return 1 if verdict.failure is not None else 0

    count = args.programs if args.programs is not None else profile.programs
    report = run_profile(
        args.seed,
        range(args.start, args.start + count),
        backend=backend,
        shrink_budget_s=0 if args.no_shrink else profile.shrink_budget_s,
        shrink_each_s=profile.shrink_each_s,
        progress=log,
        stop_after_s=args.stop_after,
    )
    summary = report.summary(args.profile)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1) + "\n")
    d = summary["disagreements"]
    print(
        f"programs {summary['programs']} ({summary['backends']}), calls {summary['calls']}, "
        f"compiles {summary['compiles']}, without any difference "
        f"{summary['programs_without_difference']}, {summary['wall_s']} s"
    )
    print(f"dynscalar-caused: {d['dynscalar']}")
    print(f"allowed by contract: {sum(d['allowed'].values())} {d['allowed']}")
    print(f"torch's own: {sum(d['torch'].values())}")
    for kind, n in d["torch"].items():
        print(f"  {n:5d}  {kind}")
    if report.failures():
        print(report.failure_text())
    return 1 if report.failures() else 0


if __name__ == "__main__":
    sys.exit(main())
