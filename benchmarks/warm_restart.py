"""The first training step of a warm restart, stock torch against marked dropout.

A block with ``nn.MultiheadAttention(dropout=0.1)`` and an ``nn.Dropout(0.1)`` runs one
training step (forward and backward) on inductor in a fresh process with a fresh
``TORCHINDUCTOR_CACHE_DIR`` (cold), then again in a second fresh process on that cache
(warm: what a restarted training script meets).  Two configurations:

* ``stock``: a process that never imports dynscalar (the probabilities are constants);
* ``marked``: ``Dropout.p`` and ``MultiheadAttention.dropout`` marked with
  ``mark_dynamic_attr`` (the graphs with dynscalar's random rules).

Each round runs both pairs, in an order rotated every round; the warm first step's ratio is
paired within a round (the same machine state), reported as median and p10-p90, with
torch's cache counters in the warm process.

    python -m benchmarks.warm_restart --rounds 3 --out benchmarks/published/warm_restart.json
    python -m benchmarks.warm_restart --child marked    # one process, JSON line
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from typing import Any

import torch

from benchmarks.harness import (
    PUBLISHED,
    machine_info,
    paired_ratios,
    quantiles,
    run_child,
    table,
    write_json,
)

CONFIGS = ("stock", "marked")
PATH = PUBLISHED / "warm_restart.json"


class Block(torch.nn.Module):
    """Self-attention with attention dropout, then a dropout and a projection."""

    def __init__(self, dim: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.inp = torch.nn.Linear(dim, dim)
        self.attn = torch.nn.MultiheadAttention(dim, heads, dropout=0.1, batch_first=True)
        self.drop = torch.nn.Dropout(0.1)
        self.out = torch.nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        a, _ = self.attn(h, h, h, need_weights=False)
        return self.out(self.drop(h + a))


def _unsaved_rule() -> None:
    """``marked_unsaved`` (not run by default): the rule before graphs whose float guards all
    come from Dynamo's trace kept their AOTAutograd entries, for a before/after check."""
    from dynscalar._bridge.stages import aot as _floats

    guarded = _floats._float_guarded
    _floats._float_guarded = lambda env, floats, traced: guarded(env, floats, None)  # type: ignore[assignment]


def child(config: str) -> dict[str, Any]:
    """One training step in this (fresh) process; dynscalar imported only when marked."""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = Block()
    if config != "stock":
        import dynscalar

        dynscalar.mark_dynamic_attr(model.drop, "p")
        dynscalar.mark_dynamic_attr(model.attn, "dropout")
        if config == "marked_unsaved":
            _unsaved_rule()
    compiled = torch.compile(model, backend="inductor")
    x = torch.randn(8, 32, 64)
    start = time.perf_counter()
    compiled(x).sum().backward()
    first = time.perf_counter() - start
    from torch._dynamo.utils import counters

    return {
        "config": config,
        "first_step_s": first,
        "graphs": counters["stats"]["unique_graphs"],
        "fxgraph": {k: v for k, v in counters["inductor"].items() if "fxgraph_cache" in k},
        "aot_autograd": {
            k: v for k, v in counters["aot_autograd"].items() if "autograd_cache" in k
        },
        "dynscalar_imported": "dynscalar" in sys.modules,
    }


def _pair(config: str) -> dict[str, Any]:
    """A cold process, then a warm one on its cache."""
    with tempfile.TemporaryDirectory(prefix="dynscalar-warm-restart-") as cache:
        rows = []
        for _ in ("cold", "warm"):
            row, error, _ = run_child(
                "benchmarks.warm_restart", ["--child", config], 1200, cache=cache
            )
            if row is None:
                raise RuntimeError(f"{config} failed: {error}")
            rows.append(row)
    return {"config": config, "cold": rows[0], "warm": rows[1]}


def measure(rounds: int, configs: tuple[str, ...] = CONFIGS) -> dict[str, Any]:
    """``rounds`` interleaved rounds of a cold and a warm process per configuration."""
    runs = []
    for r in range(rounds):
        shift = r % len(configs)
        for config in configs[shift:] + configs[:shift]:
            runs.append({**_pair(config), "round": r})
            warm = runs[-1]["warm"]
            print(
                f"  round {r} {config}: warm first step {warm['first_step_s']:.2f} s, "
                f"{warm['aot_autograd']}",
                file=sys.stderr,
                flush=True,
            )
    return {"machine": machine_info(rounds=rounds), "runs": runs, **summarize(runs, configs)}


def summarize(runs: list[dict[str, Any]], configs: tuple[str, ...]) -> dict[str, Any]:
    """Per configuration: cold and warm first steps, the warm one's ratio to stock's (paired
    by round), and the warm process's cache counters (each run's, when they agree)."""
    ordered = sorted(runs, key=lambda r: r["round"])
    out: dict[str, Any] = {}
    warm = {c: [r["warm"]["first_step_s"] for r in ordered if r["config"] == c] for c in configs}
    for c in configs:
        mine = [r for r in ordered if r["config"] == c]
        out[c] = {
            "cold_s": quantiles([r["cold"]["first_step_s"] for r in mine]),
            "warm_s": quantiles(warm[c]),
            "warm_to_stock": quantiles(paired_ratios(warm[c], warm["stock"])),
            "counters": sorted(
                {json.dumps([r["warm"]["fxgraph"], r["warm"]["aot_autograd"]]) for r in mine}
            ),
        }
    return {"configs": out}


def _counts(counters: str) -> str:
    fx, aot = json.loads(counters)
    hit, miss = (fx.get(f"fxgraph_cache_{k}", 0) for k in ("hit", "miss"))
    a = [aot.get(f"autograd_cache_{k}", 0) for k in ("hit", "miss", "bypass")]
    return f"{hit} / {miss}; {a[0]} / {a[1]} / {a[2]}"


def machine_words(machine: dict[str, Any]) -> str:
    """The machine and its load, in words (the load averages stay in the JSON)."""
    load = machine.get("loadavg_start") or [0.0]
    busy = (
        f", shared with other jobs (a load of about {round(float(load[0]))} on "
        f"{machine['cores']} cores: the times are noisy, the cache counters are not)"
        if float(load[0]) > 0.5
        else ""
    )
    return (
        f"Measured on {machine['cpu']}, {machine['cores']} cores{busy}; torch "
        f"{machine['torch']}, Python {machine['python']}."
    )


def render(result: dict[str, Any]) -> str:
    """The result as a Markdown table: median (p10-p90) per configuration."""

    def cell(q: dict[str, float], fmt: str, unit: str = "") -> str:
        return f"{q['median']:{fmt}}{unit} ({q['p10']:{fmt}}-{q['p90']:{fmt}})"

    labels = {
        "stock": "stock torch (constant probabilities)",
        "marked": "`Dropout.p` and `MultiheadAttention.dropout` marked",
        "marked_unsaved": "marked, no AOTAutograd entry saved",
    }
    rows = [
        (
            labels.get(c, c),
            cell(r["cold_s"], ".2f", " s"),
            cell(r["warm_s"], ".2f", " s"),
            cell(r["warm_to_stock"], ".2f") + "x",
            ", ".join(_counts(x) for x in r["counters"]),
        )
        for c, r in result["configs"].items()
    ]
    head = (
        " | first step, cold | first step, warm restart | warm / stock's warm "
        "| warm process: FX graph cache hit / miss; AOTAutograd hit / miss / bypass"
    )
    return "\n".join(table(head, rows))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", metavar="CONFIG")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--out", help="write the result as JSON here")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child)))
        return 0
    result = measure(args.rounds, tuple(args.configs.split(",")))
    if args.out:
        write_json(args.out, result)
    print(render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
