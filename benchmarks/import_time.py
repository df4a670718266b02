"""What ``import dynscalar`` costs, with torch's own import in the same fresh process
(``python -X importtime``) as the reference, and the modules it loads."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from typing import Any

from benchmarks import harness
from benchmarks.harness import ROOT, child_env, machine_info, quantiles, write_json

GOAL = 0.015  # of torch's own import time (issue: the bridge loads lazily)

_MODULES = (
    "import sys, json, torch, dynscalar; print(json.dumps(sorted(m for m in sys.modules "
    "if m.startswith('dynscalar'))))"
)


def _cumulative_us(stderr: str, module: str) -> int:
    """The cumulative microseconds ``-X importtime`` reports for a top-level ``module``."""
    for line in stderr.splitlines():
        parts = [p.strip() for p in line.removeprefix("import time:").split("|")]
        if len(parts) == 3 and parts[2] == module:
            return int(parts[1])
    raise ValueError(f"{module} not in -X importtime output")


def measure(rounds: int) -> dict[str, Any]:
    env = child_env()  # bytecode written and read, as installed
    kw: dict[str, Any] = dict(env=env, capture_output=True, text=True, check=True, cwd=ROOT)
    run = [sys.executable, "-X", "importtime", "-c", "import torch; import dynscalar"]
    subprocess.run(run, **kw)  # write .pyc
    torch_us, ours_us = [], []
    for _ in range(rounds):
        stderr = subprocess.run(run, **kw).stderr
        torch_us.append(_cumulative_us(stderr, "torch"))
        ours_us.append(_cumulative_us(stderr, "dynscalar"))
    modules = json.loads(subprocess.run([sys.executable, "-c", _MODULES], **kw).stdout)
    ratios = [o / t for o, t in zip(ours_us, torch_us, strict=True)]
    return {
        "machine": machine_info(rounds=rounds),
        "torch_ms": quantiles(torch_us, 1e-3),
        "dynscalar_ms": quantiles(ours_us, 1e-3),
        "ratio": quantiles(ratios),
        "goal": GOAL,
        "modules": modules,
        "bridge_modules": [m for m in modules if m.startswith("dynscalar._bridge")],
    }


def table(result: dict[str, Any]) -> str:
    """The result as a Markdown table (median, p10-p90)."""

    def cell(q: dict[str, float], fmt: str) -> str:
        return f"{q['median']:{fmt}} ({q['p10']:{fmt}}-{q['p90']:{fmt}})"

    bridge = ", ".join(f"`{m}`" for m in result["bridge_modules"])
    goal = f"(goal: at most {result['goal']:.1%})"
    rows = [
        ("`import torch`", f"{cell(result['torch_ms'], '.0f')} ms"),
        ("`import dynscalar` after it", f"{cell(result['dynscalar_ms'], '.1f')} ms"),
        ("dynscalar / torch", f"{cell(result['ratio'], '.2%')} {goal}"),
        ("dynscalar modules loaded", f"{len(result['modules'])}, of the bridge: {bridge}"),
    ]
    return "\n".join(harness.table(" | median (p10-p90)", rows))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--out", help="write the result as JSON here")
    args = parser.parse_args(argv)
    result = measure(args.rounds)
    if args.out:
        write_json(args.out, result)
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
