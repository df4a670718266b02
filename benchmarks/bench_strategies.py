"""Benchmark: ways of keeping a Python step counter dynamic under torch.compile, side by side.

Each (workload, strategy) pair runs in a fresh Python process with a fresh, empty
``TORCHINDUCTOR_CACHE_DIR``, so every compile is cold and no strategy profits from another's
cache. The parent collects one JSON line per child, prints a Markdown table per workload and
a PASS/MISS line per target, and writes ``<out>/<name>.json``, ``<out>/cumulative_time.png``
and ``<out>/compiles.png``.

Strategies (see ``STRATEGIES``):

* ``eager``: no torch.compile.
* ``stock``: ``torch.compile(model)``; the int attribute is a constant, one compile per value
  until ``recompile_limit`` (8), then eager for the rest of the run.
* ``unspec_int``: ``torch._dynamo.config.allow_unspec_int_on_nn_module = True``.
* ``dynamic_sources``: ``torch.compiler.config.dynamic_sources = "L['self'].step"``.
* ``torch_dynamicint``: ``model.step = torch.fx.experimental.sym_node.DynamicInt(0)``.
* ``oracle``: the counter in a 0-d int64 buffer (``workloads.py``): updated in place for
  inference; reassigned (``self.step = self.step + 1``) for training, because the in-place
  form gets silently wrong gradients on torch 2.13 (opt-in strategy ``oracle_inplace``
  shows it). The ``step % k`` branch becomes a 0/1 mask with the same numerics.
* ``ds_proxy`` / ``ds_registry`` / ``ds_decorator``: ``dynscalar.DynamicInt(0)``,
  ``dynscalar.mark_dynamic_attr(model, "step")``, ``@dynscalar.dynamic_attrs("step")``.

Every child also runs the plain model eagerly on the same inputs after its timed loop and
compares outputs (training: every loss, the final parameters and the counter);
``equal_to_eager`` is false, and the report says so loudly, when they differ.

Timing: ``time.perf_counter`` around each call (training: forward, backward and the
optimizer step when there is one). ``first_call_s`` is the first call (the cold compile);
``steady_median_ms`` the median of the last half of the steps; ``total_s`` the sum.

    python benchmarks/bench_strategies.py                      # full run: inductor, 200 steps
    python benchmarks/bench_strategies.py --backend aot_eager --steps 20
    python benchmarks/bench_strategies.py --workloads train --strategies stock,oracle,ds_registry
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from render_docs import NAMES, write_plots  # noqa: E402
from workloads import WORKLOADS, Workload  # noqa: E402

import dynscalar  # noqa: E402  (installs the Dynamo bridge hook before Dynamo loads)
from dynscalar._demo import import_pyplot  # noqa: E402

DEFAULT_OUT = HERE / "results" / "latest"
RTOL, ATOL = 1e-4, 1e-5  # compiled vs eager: inductor reorders float math, nothing more
UPDATE_RTOL = 1e-3  # training: each parameter's total update, relative to its size
LR, MOMENTUM = 0.05, 0.9


# --------------------------------------------------------------------------- strategies


@dataclass(frozen=True)
class Strategy:
    """How one strategy builds its model and configures torch in its child process."""

    label: str
    compiled: bool = True
    setup: Callable[[], None] | None = None
    build: Callable[[Workload], torch.nn.Module] | None = None


def _seeded(make: Callable[[], torch.nn.Module]) -> torch.nn.Module:
    torch.manual_seed(0)  # every strategy's model starts with the same parameters
    return make()


def _plain(w: Workload) -> torch.nn.Module:
    return _seeded(w.plain)


def _oracle(w: Workload) -> torch.nn.Module:
    return _seeded(w.oracle)


def _oracle_inplace(w: Workload) -> torch.nn.Module:
    return _seeded(w.oracle_inplace)


def _with_step(value: Callable[[int], Any]) -> Callable[[Workload], torch.nn.Module]:
    def build(w: Workload) -> torch.nn.Module:
        model = _plain(w)
        model.step = value(model.step)
        return model

    return build


def _torch_dynamicint(step: int) -> Any:
    from torch.fx.experimental.sym_node import DynamicInt

    return DynamicInt(step)


def _registry(w: Workload) -> torch.nn.Module:
    return dynscalar.mark_dynamic_attr(_plain(w), "step")


def _decorator(w: Workload) -> torch.nn.Module:
    plain_cls = w.plain
    cls = dynscalar.dynamic_attrs("step")(type(f"Dynamic{plain_cls.__name__}", (plain_cls,), {}))
    return _seeded(cls)


def _unspec_int() -> None:
    torch._dynamo.config.allow_unspec_int_on_nn_module = True


def _dynamic_sources() -> None:
    # The source Dynamo gives the attribute when torch.compile(model) traces forward(self, ...)
    # (TORCH_LOGS=guards on the seed model: source=L['self'].step, type guard, no value guard).
    torch.compiler.config.dynamic_sources = "L['self'].step"


STRATEGIES: dict[str, Strategy] = {
    # Labels are the reader-facing names the docs use (render_docs.NAMES).
    "eager": Strategy(NAMES["eager"], compiled=False, build=_plain),
    "stock": Strategy(NAMES["stock"], build=_plain),
    "unspec_int": Strategy(NAMES["unspec_int"], setup=_unspec_int, build=_plain),
    "dynamic_sources": Strategy(NAMES["dynamic_sources"], setup=_dynamic_sources, build=_plain),
    "torch_dynamicint": Strategy(NAMES["torch_dynamicint"], build=_with_step(_torch_dynamicint)),
    "oracle": Strategy(NAMES["oracle"], build=_oracle),
    "oracle_inplace": Strategy(NAMES["oracle_inplace"], build=_oracle_inplace),
    "ds_proxy": Strategy(NAMES["ds_proxy"], build=_with_step(dynscalar.DynamicInt)),
    "ds_registry": Strategy(NAMES["ds_registry"], build=_registry),
    "ds_decorator": Strategy(NAMES["ds_decorator"], build=_decorator),
}
DYNSCALAR = ("ds_proxy", "ds_registry", "ds_decorator")
# oracle_inplace only on request: it differs from the oracle only for training, where it
# shows torch 2.13's wrong gradients for a buffer updated in place.
DEFAULT_STRATEGIES = [s for s in STRATEGIES if s != "oracle_inplace"]


# --------------------------------------------------------------------------- child process


class CountingBackend:
    """A torch.compile backend that counts the Dynamo graphs handed to the real backend."""

    def __init__(self, name: str) -> None:
        from torch._dynamo.backends.registry import lookup_backend

        self.real = lookup_backend(name)
        self.graphs = 0

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        self.graphs += 1
        return self.real(gm, example_inputs)


class RecompileLimitWatch(logging.Handler):
    """Counts Dynamo's "hit config.recompile_limit" warnings (the frame then runs eager)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.hits = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "recompile_limit" in record.getMessage():
            self.hits += 1


def _run_loop(
    call: Callable[..., torch.Tensor],
    model: torch.nn.Module,
    workload: Workload,
    inputs: list[tuple[torch.Tensor, ...]],
) -> tuple[list[float], list[torch.Tensor]]:
    """Run every step, timing each; training steps include backward and the optimizer."""
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM) if workload.train else None
    times, outputs = [], []
    for i, args in enumerate(inputs, start=1):
        start = time.perf_counter()
        out = call(*args)
        if opt is not None:
            out.backward()
            if i % workload.accum == 0:
                opt.step()
                opt.zero_grad()
        times.append(time.perf_counter() - start)
        outputs.append(out.detach())
    return times, outputs


def _max_abs_diff(got: list[torch.Tensor], want: list[torch.Tensor]) -> tuple[float, bool]:
    """Largest absolute difference, and whether every pair is within RTOL/ATOL."""
    diff, close = 0.0, True
    for g, w in zip(got, want, strict=True):
        diff = max(diff, (g.double() - w.double()).abs().max().item())
        close &= torch.allclose(g, w, rtol=RTOL, atol=ATOL)
    return diff, close


def _update_rel_err(
    model: torch.nn.Module, reference: torch.nn.Module, initial: list[torch.Tensor]
) -> float:
    """Largest error of a parameter's total update, relative to that update's size.

    Far more sensitive than comparing parameters: a wrong gradient scale changes each
    update by a large fraction but the parameters only by ``lr`` times that.
    """
    worst = 0.0
    for got, want, start in zip(model.parameters(), reference.parameters(), initial, strict=True):
        delta = (want.detach() - start).double()
        scale = delta.abs().max().item()
        if scale > 0:
            worst = max(worst, ((got.detach() - start).double() - delta).abs().max().item() / scale)
    return worst


def run_child(
    workload_name: str, strategy_name: str, steps: int, backend: str, threads: int = 0
) -> dict[str, Any]:
    """Run one strategy on one workload in this process; return its result row."""
    workload, strategy = WORKLOADS[workload_name], STRATEGIES[strategy_name]
    if threads:
        torch.set_num_threads(threads)
    if strategy.setup is not None:
        strategy.setup()
    inputs = workload.make_inputs(steps)
    model = strategy.build(workload)  # type: ignore[misc]
    counter = CountingBackend(backend)
    watch = RecompileLimitWatch()
    logging.getLogger("torch._dynamo").addHandler(watch)
    call = torch.compile(model, backend=counter) if strategy.compiled else model
    times, outputs = _run_loop(call, model, workload, inputs)

    reference = _plain(workload)
    initial = [p.detach().clone() for p in reference.parameters()]
    _, want = _run_loop(reference, reference, workload, inputs)
    diff, close = _max_abs_diff(outputs, want)
    params_diff, params_close = _max_abs_diff(
        [p.detach() for p in model.parameters()], [p.detach() for p in reference.parameters()]
    )
    update_err = _update_rel_err(model, reference, initial)
    final_step = int(model.step)
    half = times[len(times) // 2 :]
    return {
        "workload": workload_name,
        "strategy": strategy_name,
        "label": strategy.label,
        "backend": backend if strategy.compiled else "none",
        "steps": steps,
        "threads": torch.get_num_threads(),
        "compiles": counter.graphs,
        "recompile_limit_hits": watch.hits,
        "fell_back_to_eager": watch.hits > 0,
        "first_call_s": times[0],
        "total_s": sum(times),
        "steady_median_ms": 1e3 * statistics.median(half),
        "step_times_s": times,
        "max_abs_diff": max(diff, params_diff),
        "update_rel_err": update_err,
        "final_step": final_step,
        "step_type_after": type(model.step).__name__,
        "final_output": float(outputs[-1].double().sum()),
        "equal_to_eager": bool(
            close
            and params_close
            and update_err <= UPDATE_RTOL
            and final_step == reference.step == steps
        ),
    }


# --------------------------------------------------------------------------- parent process


def machine_info() -> dict[str, Any]:
    """CPU model, cores, torch and Python versions, load average."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "dynscalar": dynscalar.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


def spawn_child(workload: str, strategy: str, args: argparse.Namespace) -> dict[str, Any]:
    """Run one pair in a fresh process with a fresh inductor cache; return its row."""
    with tempfile.TemporaryDirectory(prefix="dynscalar-bench-") as cache:
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache}
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", workload, strategy]
        cmd += ["--steps", str(args.steps), "--backend", args.backend]
        cmd += ["--threads", str(args.threads)]
        start = time.perf_counter()
        try:
            proc = subprocess.run(
                cmd, env=env, capture_output=True, text=True, timeout=args.timeout, check=False
            )
        except subprocess.TimeoutExpired:
            return _failed(workload, strategy, f"timed out after {args.timeout:.0f} s")
    wall = time.perf_counter() - start
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        return _failed(workload, strategy, proc.stderr[-3000:] or f"exit {proc.returncode}")
    row = json.loads(lines[-1])
    row["process_wall_s"] = wall
    return row


def _failed(workload: str, strategy: str, error: str) -> dict[str, Any]:
    return {
        "workload": workload,
        "strategy": strategy,
        "label": STRATEGIES[strategy].label,
        "error": error,
        "equal_to_eager": False,
    }


def add_ratios(rows: list[dict[str, Any]]) -> None:
    """Ratios of total, steady-state and first-call time to the oracle's and stock's."""
    by_key = {(r["workload"], r["strategy"]): r for r in rows if "error" not in r}
    for row in by_key.values():
        for base in ("oracle", "stock"):
            ref = by_key.get((row["workload"], base))
            for metric in ("total_s", "steady_median_ms", "first_call_s"):
                ratio = row[metric] / ref[metric] if ref and ref[metric] > 0 else None
                row[f"{metric.rsplit('_', 1)[0]}_vs_{base}"] = ratio


def check_targets(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Issue 6's targets for each dynscalar strategy; a missing baseline is 'n/a'."""
    targets = []
    for row in rows:
        if row["strategy"] not in DYNSCALAR:
            continue
        w = WORKLOADS[row["workload"]]
        checks: list[tuple[str, float | None, float]] = []
        if "error" not in row:
            checks = [
                ("compiles == control paths", row["compiles"], w.control_paths),
                ("total <= 0.3x stock", row.get("total_vs_stock"), 0.3),
                ("total <= 1.10x oracle", row.get("total_vs_oracle"), 1.10),
                ("steady state <= 1.05x oracle", row.get("steady_median_vs_oracle"), 1.05),
                ("first compile <= 1.10x stock's", row.get("first_call_vs_stock"), 1.10),
            ]
        targets.append(
            {
                "workload": row["workload"],
                "strategy": row["strategy"],
                "target": "equal to eager",
                "value": row["equal_to_eager"],
                "limit": True,
                "status": "PASS" if row["equal_to_eager"] else "MISS",
            }
        )
        for name, value, limit in checks:
            if value is None:
                status = "n/a"
            elif name.startswith("compiles"):
                status = "PASS" if value == limit else "MISS"
            else:
                status = "PASS" if value <= limit else "MISS"
            targets.append(
                {
                    "workload": row["workload"],
                    "strategy": row["strategy"],
                    "target": name,
                    "value": value,
                    "limit": limit,
                    "status": status,
                }
            )
    return targets


def _fmt(value: float | None, spec: str = ".2f", suffix: str = "") -> str:
    return "—" if value is None else f"{value:{spec}}{suffix}"


def format_table(rows: list[dict[str, Any]], workload: str) -> str:
    """One Markdown table for one workload."""
    lines = [
        "| strategy | compiles | first call (s) | total (s) | steady median (ms/step) "
        "| total / oracle | steady / oracle | total / stock | equal to eager |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in (r for r in rows if r["workload"] == workload):
        if "error" in r:
            lines.append(f"| {r['label']} | FAILED: {r['error'].splitlines()[-1][:80]} |||||||")
            continue
        compiles = str(r["compiles"]) + (", then eager" if r["fell_back_to_eager"] else "")
        lines.append(
            f"| {r['label']} | {compiles} | {r['first_call_s']:.2f} | {r['total_s']:.2f} "
            f"| {r['steady_median_ms']:.3f} | {_fmt(r.get('total_vs_oracle'), '.2f', 'x')} "
            f"| {_fmt(r.get('steady_median_vs_oracle'), '.2f', 'x')} "
            f"| {_fmt(r.get('total_vs_stock'), '.2f', 'x')} "
            f"| {'yes' if r['equal_to_eager'] else '**NO: WRONG NUMBERS**'} |"
        )
    return "\n".join(lines)


def format_targets(targets: list[dict[str, Any]]) -> str:
    """One PASS/MISS line per target."""
    lines = []
    for t in targets:
        value = t["value"]
        shown = f"{value:.2f}" if isinstance(value, float) else str(value)
        lines.append(
            f"{t['status']:4}  {t['workload']:9} {t['strategy']:12} {t['target']:30} "
            f"(measured {shown}, target {t['limit']})"
        )
    return "\n".join(lines)


def _pyplot() -> Any:
    try:
        return import_pyplot()
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise SystemExit(str(exc)) from exc


def plot(result: dict[str, Any], out: Path) -> list[Path]:
    """``total_time.png`` and ``cumulative_time.png``: the docs' plots (render_docs.py)."""
    _pyplot()
    ok = {**result, "results": [r for r in result["results"] if "error" not in r]}
    return write_plots(ok, out)


def _elapsed(seconds: float) -> str:
    return f"{int(seconds // 60)}m{seconds % 60:04.1f}s"


def run_parent(args: argparse.Namespace) -> int:
    """Run every pair, report, write JSON and plots; exit 1 on failures or wrong numbers."""
    workloads = _split(args.workloads, WORKLOADS, list(WORKLOADS))
    strategies = _split(args.strategies, STRATEGIES, DEFAULT_STRATEGIES)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    _pyplot()  # fail now, not after the run, when matplotlib is missing
    info = machine_info()
    print(
        f"dynscalar strategy benchmark: backend={args.backend}, {args.steps} steps, "
        f"torch {info['torch']}, {info['cpu']}, {info['cores']} cores "
        f"({args.threads or info['torch_threads']} torch threads), load {info['loadavg_start']}",
        flush=True,
    )
    load = info["loadavg_start"]
    if load and load[0] > 0.5:
        print(
            f"warning: load average {load[0]:.2f} before the run: other processes share these "
            "cores, so timings will be noisy (single steps stall for ~300 ms on a busy 2-core "
            "machine). Run on a quiet machine, or try --threads 1.",
            flush=True,
        )
    rows, start = [], time.perf_counter()
    pairs = [(w, s) for w in workloads for s in strategies]
    for i, (w, s) in enumerate(pairs, start=1):
        print(
            f"[{i}/{len(pairs)}] {w} / {s}: started at {_elapsed(time.perf_counter() - start)}",
            flush=True,
        )
        row = spawn_child(w, s, args)
        rows.append(row)
        if "error" in row:
            print(f"[{i}/{len(pairs)}] {w} / {s}: FAILED\n{row['error']}", flush=True)
        else:
            print(
                f"[{i}/{len(pairs)}] {w} / {s}: {row['compiles']} compile(s)"
                f"{' then eager' if row['fell_back_to_eager'] else ''}, total "
                f"{row['total_s']:.2f} s, process {row['process_wall_s']:.1f} s, equal to eager: "
                f"{row['equal_to_eager']} (elapsed {_elapsed(time.perf_counter() - start)})",
                flush=True,
            )
    add_ratios(rows)
    targets = check_targets(rows)
    info["loadavg_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    wall = time.perf_counter() - start

    for w in workloads:
        print(
            f"\n### {w}: {WORKLOADS[w].description} "
            f"({WORKLOADS[w].control_paths} control path(s))\n"
        )
        print(format_table(rows, w))
    wrong = [r for r in rows if not r["equal_to_eager"]]
    if wrong:
        print(
            "\n!!! WRONG NUMBERS OR FAILURES (not equal to eager): "
            + ", ".join(f"{r['workload']}/{r['strategy']}" for r in wrong)
        )
    if targets:
        print("\nTargets (dynscalar strategies):\n" + format_targets(targets))

    result = {
        "machine": info,
        "config": {
            "backend": args.backend,
            "steps": args.steps,
            "threads": args.threads or torch.get_num_threads(),
            "workloads": workloads,
            "strategies": strategies,
            "rtol": RTOL,
            "atol": ATOL,
            "update_rtol": UPDATE_RTOL,
        },
        "workloads": {
            w: {
                "description": WORKLOADS[w].description,
                "control_paths": WORKLOADS[w].control_paths,
            }
            for w in workloads
        },
        "wall_s": wall,
        "results": rows,
        "targets": targets,
    }
    json_path = out / f"{args.name or time.strftime('%Y%m%d-%H%M%S')}.json"
    json_path.write_text(json.dumps(result, indent=1))
    pngs = plot(result, out)
    print(f"\nwrote {json_path}, " + ", ".join(map(str, pngs)) + f" in {_elapsed(wall)}")
    return 1 if wrong else 0


def _split(value: str | None, known: dict[str, Any], default: list[str]) -> list[str]:
    names = default if not value else [v.strip() for v in value.split(",") if v.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown name(s) {unknown}; choose from {list(known)}")
    return names


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=None, help="steps per run (default 200)")
    parser.add_argument("--workloads", help=f"comma list of {list(WORKLOADS)} (default all)")
    parser.add_argument(
        "--strategies", help=f"comma list of {list(STRATEGIES)} (default: all but oracle_inplace)"
    )
    parser.add_argument("--backend", default="inductor", help="torch.compile backend")
    parser.add_argument(
        "--threads",
        type=int,
        default=0,
        help="torch.set_num_threads in each child (default 0: torch's default)",
    )
    parser.add_argument("--quick", action="store_true", help="tiny run for tests: 12 steps")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="output directory")
    parser.add_argument("--name", help="JSON file name without .json (default: a timestamp)")
    parser.add_argument(
        "--timeout", type=float, default=1800, help="seconds per child process (default 1800)"
    )
    parser.add_argument(
        "--child", nargs=2, metavar=("WORKLOAD", "STRATEGY"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.steps is None:
        args.steps = 12 if args.quick else 200
    if args.steps < 4:
        parser.error("--steps must be at least 4")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        row = run_child(args.child[0], args.child[1], args.steps, args.backend, args.threads)
        print(json.dumps(row), flush=True)
        return 0
    return run_parent(args)


if __name__ == "__main__":
    sys.exit(main())
