"""Every way of keeping a Python scalar dynamic under torch.compile, side by side.

Each (workload, strategy) pair runs in a fresh process with a fresh inductor cache and is
compared with the plain model run eagerly; strategies, workloads and the stochastic checks
are described in ``benchmarks/README.md``."""

from __future__ import annotations

import argparse
import itertools
import math
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

import dynscalar
from benchmarks import harness
from benchmarks.harness import (
    HERE,
    Compiles,
    emit,
    loadavg,
    machine_info,
    pyplot,
    split,
    write_json,
)
from benchmarks.render_strategies import DYNSCALAR, _section, label, write_plots
from benchmarks.workloads import WORKLOADS, Workload

DEFAULT_OUT = HERE / "results" / "latest"
RTOL, ATOL = 1e-4, 1e-5  # compiled vs eager: inductor reorders float math, nothing more
UPDATE_RTOL = 1e-3  # training: each parameter's total update, relative to its size
LR, MOMENTUM = 0.05, 0.9
# Stochastic workloads (dropout in training): the loss check's eager ensemble and limit.
REFERENCE_SEEDS, LOSS_WINDOWS, LOSS_Z, PROBE_DRAWS = 10, 4, 5.0, 64


# --------------------------------------------------------------------------- strategies


def _identity(value: float) -> Any:
    return value


def _seeded(make: Callable[[], torch.nn.Module]) -> torch.nn.Module:
    torch.manual_seed(0)  # every strategy's model starts with the same parameters
    return make()


def _plain(w: Workload) -> torch.nn.Module:
    return _seeded(w.plain)


@dataclass(frozen=True)
class Strategy:
    """How one strategy builds its model and configures torch (``wrap``: how the loop makes
    each value it sets; ``DynamicFloat`` for the proxy strategy)."""

    compiled: bool = True
    setup: Callable[[Workload], None] | None = None
    build: Callable[[Workload], torch.nn.Module] = _plain
    wrap: Callable[[float], Any] = _identity


def _with_value(value: Callable[[Any], Any]) -> Callable[[Workload], torch.nn.Module]:
    """Replace each dynamic attribute's value by ``value(old)`` (a proxy, torch's DynamicInt)."""

    def build(w: Workload) -> torch.nn.Module:
        model = _plain(w)
        for path, names in w.dynamic.items():
            owner = model.get_submodule(path)
            for attr in names:
                setattr(owner, attr, value(getattr(owner, attr)))
        return model

    return build


def _torch_dynamicint(step: int) -> Any:
    from torch.fx.experimental.sym_node import DynamicInt

    return DynamicInt(step)


def _registry(w: Workload) -> torch.nn.Module:
    model = _plain(w)
    for path, names in w.dynamic.items():
        dynscalar.mark_dynamic_attr(model.get_submodule(path), *names)
    return model


def _decorator(w: Workload) -> torch.nn.Module:
    if w.decorated is not None:  # the attributes live on submodules: the workload decorates
        return _seeded(w.decorated)
    cls = type(f"Dynamic{w.plain.__name__}", (w.plain,), {})
    return _seeded(dynscalar.dynamic_attrs(*w.dynamic[""])(cls))


def _dynamic_sources(w: Workload) -> None:
    # the sources Dynamo gives the attributes when torch.compile(model) traces forward
    # (TORCH_LOGS=guards: L['self'].step; on schedule L['self']._modules['drop1'].p, ...)
    torch.compiler.config.dynamic_sources = ",".join(
        "L['self']" + "".join(f"._modules['{m}']" for m in path.split(".") if m) + f".{attr}"
        for path, names in w.dynamic.items()
        for attr in names
    )


def _unspec_int(w: Workload) -> None:
    torch._dynamo.config.allow_unspec_int_on_nn_module = True


# The reader-facing names and what each does: render_strategies.NAMES and .WHAT.
STRATEGIES: dict[str, Strategy] = {
    "eager": Strategy(compiled=False),
    "stock": Strategy(),
    "unspec_int": Strategy(setup=_unspec_int),
    "dynamic_sources": Strategy(setup=_dynamic_sources),
    "torch_dynamicint": Strategy(build=_with_value(_torch_dynamicint)),
    "oracle": Strategy(build=lambda w: _seeded(w.oracle)),
    "oracle_inplace": Strategy(build=lambda w: _seeded(w.oracle_inplace or w.oracle)),
    "ds_proxy": Strategy(build=_with_value(dynscalar.mark_dynamic), wrap=dynscalar.mark_dynamic),
    "ds_registry": Strategy(build=_registry),
    "ds_decorator": Strategy(build=_decorator),
}
# oracle_inplace only on request: it differs from the oracle only for training, where it
# shows torch 2.13's wrong gradients for a buffer updated in place.
DEFAULT_STRATEGIES = [s for s in STRATEGIES if s != "oracle_inplace"]


# --------------------------------------------------------------------------- child process


def _run_loop(
    call: Callable[..., torch.Tensor],
    model: torch.nn.Module,
    workload: Workload,
    inputs: list[tuple[torch.Tensor, ...]],
    wrap: Callable[[float], Any] = _identity,
) -> tuple[list[float], list[torch.Tensor]]:
    """Run every step, timing each; training steps include backward and the optimizer, and
    a workload's schedule (the hyperparameters the loop sets before the step)."""
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM) if workload.train else None
    times, outputs = [], []
    for i, args in enumerate(inputs, start=1):
        start = time.perf_counter()
        if workload.schedule is not None:
            workload.schedule(model, i, len(inputs), wrap)
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
    """Largest error of a parameter's total update, relative to that update's size (far
    more sensitive to a wrong gradient than the parameters themselves)."""
    worst = 0.0
    for p, r, p0 in zip(model.parameters(), reference.parameters(), initial, strict=True):
        want = (r.detach() - p0).double()
        got = (p.detach() - p0).double()
        scale = want.abs().max().item()
        if scale > 0:
            worst = max(worst, (got - want).abs().max().item() / scale)
    return worst


def _compare_with_eager(
    model: torch.nn.Module,
    outputs: list[torch.Tensor],
    workload: Workload,
    inputs: list[tuple[torch.Tensor, ...]],
    prepare: Callable[[torch.nn.Module], None] | None = None,
    equal_key: str = "equal_to_eager",
) -> dict[str, Any]:
    """Run the plain model eagerly on the same inputs; compare every output, the final
    parameters and (training) each parameter's total update."""
    reference = _plain(workload)
    if prepare is not None:
        prepare(reference)
    initial = [p.detach().clone() for p in reference.parameters()]
    _, want = _run_loop(reference, reference, workload, inputs)
    diff, close = _max_abs_diff(outputs, want)
    params_diff, params_close = _max_abs_diff(
        [p.detach() for p in model.parameters()], [p.detach() for p in reference.parameters()]
    )
    update_err = _update_rel_err(model, reference, initial)
    equal = close and params_close and update_err <= UPDATE_RTOL
    if workload.has_step:
        equal &= int(model.step) == reference.step == len(inputs)
    diffs = {"max_abs_diff": max(diff, params_diff), "update_rel_err": update_err}
    return diffs | {equal_key: bool(equal)}


def _compiled_run(
    strategy: Strategy,
    workload: Workload,
    model: torch.nn.Module,
    inputs: list[tuple[torch.Tensor, ...]],
    backend: str,
) -> tuple[Callable[..., torch.Tensor], list[float], list[torch.Tensor], dict[str, Any]]:
    """Compile (or not) and run the loop; the callable and the compile counts of this run."""
    with Compiles(backend) as seen:
        call = torch.compile(model, backend=seen.counter) if strategy.compiled else model
        times, outputs = _run_loop(call, model, workload, inputs, strategy.wrap)
    return call, times, outputs, seen.counts()


def run_child(
    workload_name: str, strategy_name: str, steps: int, backend: str, threads: int = 0
) -> dict[str, Any]:
    """One strategy on one workload in this process: its result row (a stochastic workload's
    row carries its losses, the dropout probe and an exact pass with dropout off)."""
    workload, strategy = WORKLOADS[workload_name], STRATEGIES[strategy_name]
    load = (loadavg() or [None])[0]
    if threads:
        torch.set_num_threads(threads)
    if strategy.setup is not None:
        strategy.setup(workload)
    inputs = workload.make_inputs(steps)
    model = strategy.build(workload)
    call, times, outputs, counts = _compiled_run(strategy, workload, model, inputs, backend)
    row = {
        "workload": workload_name,
        "strategy": strategy_name,
        "label": label(strategy_name, workload_name),
        "backend": backend if strategy.compiled else "none",
        "steps": steps,
        "threads": torch.get_num_threads(),
        "loadavg_start": load,  # 1-minute load average when this child started
        **counts,
        "first_call_s": times[0],
        "total_s": sum(times),
        "steady_median_ms": 1e3 * statistics.median(times[len(times) // 2 :]),
        "step_times_s": times,
        "final_output": float(outputs[-1].double().sum()),
    }
    if workload.has_step:
        row["final_step"] = int(model.step)
        row["step_type_after"] = type(model.step).__name__
    row["value_types_after"] = {
        f"{path}.{attr}".lstrip("."): type(getattr(model.get_submodule(path), attr)).__name__
        for path, names in workload.dynamic.items()
        for attr in names
        if hasattr(model.get_submodule(path), attr)
    }
    if not workload.stochastic:
        return row | _compare_with_eager(model, outputs, workload, inputs)

    # Stochastic: the timed run's losses go to the parent's loss check (loss_check); the
    # dropout probe compares loss distributions at identical parameters (dropout_probe).
    row["losses"] = [float(o) for o in outputs]
    row["dropout_probe"] = dropout_probe(call, model, strategy, workload, inputs)
    # The exact pass: same loop and schedule with the random ops off, freshly compiled.
    torch._dynamo.reset()
    prepare = workload.derandomize
    model = strategy.build(workload)
    if prepare is not None:
        prepare(model)
    _, _, outputs, counts = _compiled_run(strategy, workload, model, inputs, backend)
    row |= {f"eval_{k}": counts[k] for k in ("compiles", "restarts", "fell_back_to_eager")}
    row |= _compare_with_eager(model, outputs, workload, inputs, prepare, "eval_equal")
    return row | {"equal_to_eager": False}  # set by the parent once the loss check ran


def _z(diff: float, scale: float) -> float:
    """``diff / scale``; for a zero scale 0 when ``diff`` is 0, else huge."""
    return diff / scale if scale > 0 else (0.0 if diff == 0 else 1e9)


def _welch_z(a: list[float], b: list[float]) -> float:
    """Welch's two-sample statistic for the difference of means (0 when both are constant)."""
    se = math.sqrt(statistics.variance(a) / len(a) + statistics.variance(b) / len(b))
    return _z(statistics.fmean(a) - statistics.fmean(b), se)


def _spread_z(a: list[float], b: list[float]) -> float:
    """Brown-Forsythe: Welch's statistic on the absolute deviations from each sample's
    median, a test of equal spread that does not assume normal samples."""
    ma, mb = statistics.median(a), statistics.median(b)
    return _welch_z([abs(v - ma) for v in a], [abs(v - mb) for v in b])


def dropout_probe(
    call: Callable[..., torch.Tensor],
    model: torch.nn.Module,
    strategy: Strategy,
    workload: Workload,
    inputs: list[tuple[torch.Tensor, ...]],
) -> dict[str, Any]:
    """Whether the compiled dropout uses the value the loop set, with the right scaling:
    loss distributions against an eager twin at identical parameters (benchmarks/README.md)."""
    twin = _plain(workload)
    with torch.no_grad():
        for mine, theirs in zip(twin.parameters(), model.parameters(), strict=True):
            mine.copy_(theirs)
    args, steps = inputs[-1], len(inputs)
    probes = []
    for step in (1, steps):
        samples = []
        for seed, (run, target) in enumerate(((call, model), (twin, twin))):
            workload.schedule(target, step, steps, strategy.wrap if run is call else _identity)  # type: ignore[misc]
            torch.manual_seed(2000 + seed)
            samples.append([float(run(*args).detach()) for _ in range(PROBE_DRAWS)])
        got, want = samples
        probes.append(
            {
                "step": step,
                "mean": [statistics.fmean(got), statistics.fmean(want)],
                "sd": [statistics.stdev(got), statistics.stdev(want)],
                "mean_z": _welch_z(got, want),
                "spread_z": _spread_z(got, want),
            }
        )
    worst = max(max(abs(p["mean_z"]), abs(p["spread_z"])) for p in probes)
    return {
        "draws": PROBE_DRAWS,
        "values": probes,
        "max_abs_z": worst,
        "limit": LOSS_Z,
        "pass": worst <= LOSS_Z,
    }


def run_reference(workload_name: str, steps: int, threads: int = 0) -> dict[str, Any]:
    """The eager ensemble for a stochastic workload's loss check: the plain model trained
    eagerly ``REFERENCE_SEEDS`` times, each with another random stream for the dropout
    masks (``torch.manual_seed(1000 + r)`` after the model is built)."""
    workload = WORKLOADS[workload_name]
    if threads:
        torch.set_num_threads(threads)
    inputs = workload.make_inputs(steps)
    runs = []
    for r in range(REFERENCE_SEEDS):
        model = _plain(workload)
        torch.manual_seed(1000 + r)
        _, outputs = _run_loop(model, model, workload, inputs)
        runs.append([float(o) for o in outputs])
    return {"workload": workload_name, "steps": steps, "seeds": REFERENCE_SEEDS, "losses": runs}


def _window_means(losses: list[float], windows: int) -> list[float]:
    """Means of ``windows`` consecutive, near-equal chunks of the trajectory."""
    n = len(losses)
    bounds = [round(k * n / windows) for k in range(windows + 1)]
    return [statistics.fmean(losses[a:b]) for a, b in itertools.pairwise(bounds)]


def loss_check(losses: list[float], reference: list[list[float]]) -> dict[str, Any]:
    """Whether this training-loss trajectory is one eager training could have produced:
    per-window z against the eager ensemble, each ``|z| <= LOSS_Z`` (benchmarks/README.md)."""
    windows = max(1, min(LOSS_WINDOWS, len(losses) // 3))
    runs = len(reference)
    got = _window_means(losses, windows)
    per_window = list(zip(*(_window_means(r, windows) for r in reference), strict=True))
    means = [statistics.fmean(values) for values in per_window]
    sds = [statistics.stdev(values) for values in per_window]
    inflate = math.sqrt(1 + 1 / runs)  # a prediction interval: one new run, not a mean
    zs = [_z(g - m, sd * inflate) for g, m, sd in zip(got, means, sds, strict=True)]
    worst = max(abs(z) for z in zs)
    return {
        "windows": windows,
        "run": got,
        "eager_mean": means,
        "eager_sd": sds,
        "z": zs,
        "max_abs_z": worst,
        "limit": LOSS_Z,
        "reference_runs": runs,
        "pass": worst <= LOSS_Z,
    }


# --------------------------------------------------------------------------- parent process


def _spawn(cmd: list[str], args: argparse.Namespace, failed: dict[str, Any]) -> dict[str, Any]:
    """``cmd`` in a fresh process with a fresh inductor cache: its row, else ``failed``."""
    cmd += ["--steps", str(args.steps), "--backend", args.backend, "--threads", str(args.threads)]
    return harness.child_row("benchmarks.strategies", cmd, args.timeout, failed)


def apply_loss_checks(rows: list[dict[str, Any]], references: dict[str, dict[str, Any]]) -> None:
    """Stochastic rows: ``equal_to_eager`` is the exact pass (random ops off), the loss
    check against the eager ensemble and the dropout probe together."""
    for row in rows:
        reference = references.get(row["workload"])
        if reference is not None and "error" not in row:
            row["loss_check"] = check = loss_check(row["losses"], reference["losses"])
            row["equal_to_eager"] = row["eval_equal"] and check["pass"]
            row["equal_to_eager"] &= row["dropout_probe"]["pass"]


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
    """The targets of each dynscalar strategy; a missing baseline is 'n/a'."""
    targets = []
    for row in (r for r in rows if r["strategy"] in DYNSCALAR):
        checks: list[tuple[str, Any, Any]] = [("equal to eager", row["equal_to_eager"], True)]
        if "error" not in row:
            paths = WORKLOADS[row["workload"]].control_paths
            checks += [
                ("compiles == control paths", row["compiles"], paths),
                ("total <= 0.3x stock", row.get("total_vs_stock"), 0.3),
                ("total <= 1.10x oracle", row.get("total_vs_oracle"), 1.10),
                ("steady state <= 1.05x oracle", row.get("steady_median_vs_oracle"), 1.05),
                ("first compile <= 1.10x stock's", row.get("first_call_vs_stock"), 1.10),
            ]
        for name, value, limit in checks:
            exact = isinstance(limit, bool) or name.startswith("compiles")
            met = value == limit if exact else value is not None and value <= limit
            status = "n/a" if value is None else "PASS" if met else "MISS"
            target = {"workload": row["workload"], "strategy": row["strategy"], "target": name}
            targets.append(target | {"value": value, "limit": limit, "status": status})
    return targets


def run_parent(args: argparse.Namespace) -> int:
    """Run every pair, report, write JSON and plots; exit 1 on failures or wrong numbers."""
    workloads = split(args.workloads, WORKLOADS, list(WORKLOADS))
    strategies = split(args.strategies, STRATEGIES, DEFAULT_STRATEGIES)
    out = Path(args.out)
    pyplot()  # fail now, not after the run, when matplotlib is missing
    info = machine_info()
    threads = args.threads or info["torch_threads"]
    print(
        f"dynscalar strategy benchmark: backend={args.backend}, {args.steps} steps, torch "
        f"{info['torch']}, {info['cpu']}, {info['cores']} cores ({threads} torch threads), "
        f"load {info['loadavg_start']}",
        flush=True,
    )
    if info["loadavg_start"] and info["loadavg_start"][0] > 0.5:
        print(
            f"warning: load average {info['loadavg_start'][0]:.2f}: other processes share "
            "these cores, so timings will be noisy (try a quiet machine, or --threads 1)."
        )
    skipped = {
        w: {s: why for s, why in WORKLOADS[w].not_applicable.items() if s in strategies}
        for w in workloads
    }
    pairs = [(w, s) for w in workloads for s in strategies if s not in skipped[w]]
    rows, start = [], time.perf_counter()
    for i, (w, s) in enumerate(pairs, start=1):
        t = time.perf_counter() - start
        print(f"[{i}/{len(pairs)}] {w} / {s} ({int(t // 60)}m{t % 60:04.1f}s)", flush=True)
        failed = {"workload": w, "strategy": s, "label": label(s, w)}
        rows.append(row := _spawn(["--child", w, s], args, failed))
        if "error" in row:
            print(f"  FAILED\n{row['error']}", flush=True)
        else:
            print(f"  {row['compiles']} compile(s), total {row['total_s']:.2f} s", flush=True)
    references = {}
    for w in workloads:
        if WORKLOADS[w].stochastic and any(r["workload"] == w for r in rows):
            print(f"{w}: {REFERENCE_SEEDS} eager reference runs", flush=True)
            references[w] = _spawn(["--reference", w], args, {})
            if "error" in references[w]:
                raise SystemExit(f"the eager reference runs of {w} failed:\n{references[w]}")
    apply_loss_checks(rows, references)
    add_ratios(rows)
    info["loadavg_end"] = loadavg()
    config = {"backend": args.backend, "steps": args.steps, "threads": threads}
    config |= {"workloads": workloads, "strategies": strategies, "rtol": RTOL, "atol": ATOL}
    config |= {"update_rtol": UPDATE_RTOL, "reference_seeds": REFERENCE_SEEDS}
    config |= {"loss_windows": LOSS_WINDOWS, "loss_z": LOSS_Z}
    result = {
        "machine": info,
        "config": config,
        "workloads": {
            w: {"description": WORKLOADS[w].description}
            | {"control_paths": WORKLOADS[w].control_paths}
            | ({"stochastic": True} if WORKLOADS[w].stochastic else {})
            | ({"not_applicable": skipped[w]} if skipped[w] else {})
            for w in workloads
        },
        "references": references,
        "wall_s": time.perf_counter() - start,
        "results": rows,
        "targets": check_targets(rows),
    }
    json_path = write_json(out / f"{args.name or time.strftime('%Y%m%d-%H%M%S')}.json", result)
    ok = {**result, "results": [r for r in rows if "error" not in r]}
    for w in workloads:  # each workload as the page would show it
        print("\n".join(["", *_section(ok, str(json_path), w)]).replace("<wbr>", ""))
    wrong = [f"{r['workload']}/{r['strategy']}" for r in rows if not r["equal_to_eager"]]
    if wrong:
        print("\n!!! WRONG NUMBERS OR FAILURES (not equal to eager): " + ", ".join(wrong))
    for t in result["targets"]:
        print(f"{t['status']:4}  {t['workload']:9} {t['strategy']:12} {t['target']}: {t['value']}")
    plots = write_plots(ok, out)
    print(f"\nwrote {json_path}, " + ", ".join(map(str, plots)))
    return 1 if wrong else 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=None, help="steps per run (default 200)")
    parser.add_argument("--workloads", help=f"comma list of {list(WORKLOADS)} (default all)")
    parser.add_argument("--strategies", help=f"comma list of {list(STRATEGIES)}")
    parser.add_argument("--backend", default="inductor", help="torch.compile backend")
    parser.add_argument("--threads", type=int, default=0, help="torch threads per child")
    parser.add_argument("--quick", action="store_true", help="tiny run for tests: 12 steps")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="output directory")
    parser.add_argument("--name", help="JSON file name without .json (default: a timestamp)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per child")
    parser.add_argument(
        "--child", nargs=2, metavar=("WORKLOAD", "STRATEGY"), help=argparse.SUPPRESS
    )
    parser.add_argument("--reference", metavar="WORKLOAD", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.steps is None:
        args.steps = 12 if args.quick else 200
    if args.steps < 4:
        parser.error("--steps must be at least 4")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.reference:
        emit(run_reference(args.reference, args.steps, args.threads))
        return 0
    if args.child:
        emit(run_child(*args.child, args.steps, args.backend, args.threads))
        return 0
    return run_parent(args)


if __name__ == "__main__":
    sys.exit(main())
