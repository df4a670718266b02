"""``python -m dynscalar demo``: stock torch.compile against each way of marking a step counter.

Each strategy runs in a fresh process with a fresh inductor cache on the same inputs, and
every output is checked against an eager twin. Two workloads:

* ``seed`` (default): the README's model, ``Linear(64, 64)`` with ``self.step += 1`` in
  forward. Shows the compile counts; the model is too small for compiled code to be faster.
* ``train``: the benchmark's training workload (a transformer block trained with SGD and
  gradient accumulation, a warm-up factor from the counter, ``if step % 4 == 0`` in forward),
  where the 8 recompiles of stock torch.compile cost about as much as the whole dynscalar run.

The table's times: the first call (the cold compile), the total of the ``--steps`` calls,
and the steady per-call time, the median of ``--steady`` further calls after the last
compile, with their interquartile range. Each strategy's process runs torch with one
thread (``--threads``): on a machine whose cores other jobs share, a second thread that is
not scheduled makes a small op wait for it, and per-call times of a tiny model then jump
from a tenth of a millisecond to ten or more (measured on 2 shared cores: 2 threads, one
call in ten took ~12 ms; 1 thread, none did).

Progress is shown live while each strategy compiles and runs (rich, when it is installed and
the output is a terminal; plain lines otherwise). ``--runs N`` repeats every strategy N times,
in a rotated order, and reports medians; ``--plot PATH`` draws the result (matplotlib).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from .._attrs import dynamic_attrs, mark_dynamic_attr
from .._bridge import _torch
from .._proxy import DynamicInt
from .demo_models import SeedModel, TrainBlock
from .machine import cpu_model

# ----------------------------------------------------------------------------- workloads


@dataclass(frozen=True)
class DemoWorkload:
    """What ``--workload`` selects: the model, its inputs, and how a step is run."""

    description: str
    model: Callable[[], torch.nn.Module]
    inputs: Callable[[torch.Generator], tuple[torch.Tensor, ...]]
    default_steps: int
    default_steady: int
    train: bool = False
    accum: int = 1


WORKLOADS: dict[str, DemoWorkload] = {
    "seed": DemoWorkload(
        description="seed model: Linear(64, 64), self.step += 1 in forward",
        model=SeedModel,
        inputs=lambda g: (torch.randn(8, 64, generator=g),),
        default_steps=30,
        default_steady=300,
    ),
    "train": DemoWorkload(
        description="transformer block trained with SGD: warm-up from self.step, "
        "`if step % 4 == 0` in forward, optimizer step every 4",
        model=TrainBlock,
        inputs=lambda g: (torch.randn(8, 32, 64, generator=g), torch.randn(8, 32, 64, generator=g)),
        default_steps=200,
        default_steady=60,
        train=True,
        accum=4,
    ),
}
LR, MOMENTUM = 0.05, 0.9  # the benchmark's optimizer
RTOL, ATOL = 1e-4, 1e-5  # compiled vs eager: inductor reorders float math, nothing more


# ----------------------------------------------------------------------------- strategies


def _strategies() -> dict[str, Callable[[torch.nn.Module], torch.nn.Module]]:
    def stock(model: torch.nn.Module) -> torch.nn.Module:
        return model

    def proxy(model: torch.nn.Module) -> torch.nn.Module:
        model.step = DynamicInt(model.step)  # type: ignore[arg-type, assignment]
        return model

    def registry(model: torch.nn.Module) -> torch.nn.Module:
        return mark_dynamic_attr(model, "step")

    def decorator(model: torch.nn.Module) -> torch.nn.Module:
        plain = type(model)
        cls = dynamic_attrs("step")(type(f"Dynamic{plain.__name__}", (plain,), {}))
        torch.manual_seed(0)
        marked: torch.nn.Module = cls()
        marked.load_state_dict(model.state_dict())
        return marked

    return {
        "stock torch.compile": stock,
        "dynscalar.DynamicInt": proxy,
        "dynscalar.mark_dynamic_attr": registry,
        "@dynscalar.dynamic_attrs": decorator,
    }


STRATEGY_NAMES = list(_strategies())


@dataclass
class Row:
    """One strategy's result (the median over runs when there were several)."""

    strategy: str
    compiles: int
    first_call_s: float
    total_s: float
    median_step_ms: float  # the median of the steady calls
    equal_to_eager: bool
    step_times_s: list[float] = dataclasses.field(default_factory=list)
    fell_back_to_eager: bool = False
    runs: int = 1
    totals_s: list[float] = dataclasses.field(default_factory=list)
    #: every steady call's time (ms), after the timed steps: the median and spread come
    #: from these (pooled over runs)
    steady_ms: list[float] = dataclasses.field(default_factory=list)

    @property
    def steady_quartiles(self) -> tuple[float, float]:
        """The 25th and 75th percentiles of the steady calls (ms); the median twice when
        there are too few calls for quartiles."""
        if len(self.steady_ms) < 4:
            return self.median_step_ms, self.median_step_ms
        q1, _, q3 = statistics.quantiles(self.steady_ms, n=4)
        return q1, q3

    @property
    def steady_text(self) -> str:
        """``0.21 (0.20-0.23)``: the median and interquartile range of the steady calls."""
        q1, q3 = self.steady_quartiles
        return f"{self.median_step_ms:.2f} ({q1:.2f}-{q3:.2f})"

    @property
    def compiles_text(self) -> str:
        """``"8, then eager"`` when Dynamo hit ``recompile_limit``, else the count."""
        return f"{self.compiles}, then eager" if self.fell_back_to_eager else str(self.compiles)

    @property
    def compiles_phrase(self) -> str:
        """``"1 compile"``, ``"2 compiles"``, ``"8 compiles, then eager"``."""
        text = f"{self.compiles} compile{'' if self.compiles == 1 else 's'}"
        return text + (", then eager" if self.fell_back_to_eager else "")


class _RecompileLimitWatch(logging.Handler):
    """Counts Dynamo's "hit config.recompile_limit" warnings (the frame then runs eager)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.hits = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "recompile_limit" in record.getMessage():
            self.hits += 1


EVENT = "@dynscalar-demo "  # prefix of the child's progress lines on stdout


def _emit(**event: Any) -> None:
    print(EVENT + json.dumps(event), flush=True)


def _loop(
    call: Callable[..., torch.Tensor],
    model: torch.nn.Module,
    workload: DemoWorkload,
    inputs: list[tuple[torch.Tensor, ...]],
    report: int = 0,
) -> tuple[list[float], list[torch.Tensor]]:
    """Every call timed on its own; the first ``report`` calls reported as progress."""
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM) if workload.train else None
    times, outputs = [], []
    for i, args in enumerate(inputs, start=1):
        start = time.perf_counter()
        out = call(*args)
        if opt is not None:
            out.backward()  # type: ignore[no-untyped-call]
            if i % workload.accum == 0:
                opt.step()
                opt.zero_grad()
        times.append(time.perf_counter() - start)
        outputs.append(out.detach())
        if i <= report:
            _emit(event="call", i=i, seconds=times[-1])
    return times, outputs


def run_strategy(
    name: str,
    steps: int,
    backend: str,
    width: int = 64,
    workload: str = "seed",
    steady: int | None = None,
) -> Row:
    """Run one strategy in this process; compare every output with an eager twin.

    ``steps`` calls are the timed run (first call, total); ``steady`` more calls (default:
    the workload's) give the steady per-call time. ``width`` is kept for callers of the seed
    workload; the train workload ignores it.
    """
    w = WORKLOADS[workload]
    steady = w.default_steady if steady is None else steady
    gen = torch.Generator().manual_seed(1234)
    inputs = [w.inputs(gen) for _ in range(steps + steady)]
    torch.manual_seed(0)
    base = SeedModel(width) if workload == "seed" else w.model()
    eager = copy.deepcopy(base)
    model = _strategies()[name](base)
    graphs = 0
    real_backend = _torch.lookup_backend(backend)

    def counting(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        nonlocal graphs
        graphs += 1
        _emit(event="compile", graphs=graphs)
        return real_backend(gm, example_inputs)

    watch = _RecompileLimitWatch()
    logging.getLogger("torch._dynamo").addHandler(watch)
    compiled = torch.compile(model, backend=counting)
    all_times, outputs = _loop(compiled, model, w, inputs, report=steps)
    _, want = _loop(eager, eager, w, inputs)
    times, steady_s = all_times[:steps], all_times[steps:]
    if not steady_s:  # no steady calls asked for: the second half of the run
        steady_s = times[len(times) // 2 :]
    equal = all(
        torch.allclose(g, e, rtol=RTOL, atol=ATOL) for g, e in zip(outputs, want, strict=True)
    )
    equal &= all(
        torch.allclose(p, q, rtol=RTOL, atol=ATOL)
        for p, q in zip(model.parameters(), eager.parameters(), strict=True)
    )
    equal &= bool(model.step == eager.step == len(inputs))
    return Row(
        strategy=name,
        compiles=graphs,
        first_call_s=times[0],
        total_s=sum(times),
        median_step_ms=1e3 * statistics.median(steady_s),
        equal_to_eager=bool(equal),
        step_times_s=times,
        fell_back_to_eager=watch.hits > 0,
        totals_s=[sum(times)],
        steady_ms=[1e3 * t for t in steady_s],
    )


# ----------------------------------------------------------------------------- progress


class Progress(Protocol):
    """What run_demo reports while a strategy runs."""

    def start(self, name: str, run: int, steps: int) -> None: ...
    def call(self, name: str, run: int, i: int, seconds: float) -> None: ...
    def compile(self, name: str, run: int, graphs: int) -> None: ...
    def done(self, name: str, run: int, row: Row) -> None: ...


def _load() -> str:
    """``, load 1.52``: the 1-minute load average, which the timings depend on."""
    try:
        return f", load {os.getloadavg()[0]:.2f}"
    except (AttributeError, OSError):  # not on this platform
        return ""


class PlainProgress:
    """One line when a strategy starts, after its first (compiling) call, and when it ends;
    while a first call compiles, a line every ``HEARTBEAT_S`` seconds (a cold inductor
    compile takes a minute or more on a small machine)."""

    HEARTBEAT_S = 20.0

    def __init__(self, runs: int, out: Any = None) -> None:
        self.runs, self.out = runs, out or sys.stdout
        self.started: dict[tuple[str, int], float] = {}
        self._compiling: threading.Event | None = None

    def _heartbeat(self, name: str, run: int, done: threading.Event) -> None:
        start = time.perf_counter()
        while not done.wait(self.HEARTBEAT_S):
            waited = time.perf_counter() - start
            self._print(f"{self._tag(name, run)}: still compiling ({waited:.0f} s) ...")

    def _tag(self, name: str, run: int) -> str:
        return f"  {name}" + (f" (run {run}/{self.runs})" if self.runs > 1 else "")

    def _print(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def start(self, name: str, run: int, steps: int) -> None:
        self.started[name, run] = time.perf_counter()
        self._print(f"{self._tag(name, run)}: compiling and running {steps} calls ...")
        self._stop_heartbeat()
        self._compiling = threading.Event()
        threading.Thread(
            target=self._heartbeat, args=(name, run, self._compiling), daemon=True
        ).start()

    def _stop_heartbeat(self) -> None:
        if self._compiling is not None:
            self._compiling.set()
            self._compiling = None

    def call(self, name: str, run: int, i: int, seconds: float) -> None:
        if i == 1:
            self._stop_heartbeat()
            self._print(f"{self._tag(name, run)}: first call (compile) took {seconds:.1f} s")

    def compile(self, name: str, run: int, graphs: int) -> None:
        pass

    def done(self, name: str, run: int, row: Row) -> None:
        self._stop_heartbeat()
        wall = time.perf_counter() - self.started[name, run]
        self._print(
            f"{self._tag(name, run)}: done: {row.compiles_phrase}; calls took "
            f"{row.total_s:.1f} s ({wall:.0f} s with process start)"
        )


class RichProgress:
    """A live rich progress bar per strategy: compiling, calls done, compiles so far."""

    def __init__(self, runs: int, console: Any = None) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self.runs = runs
        self.console = console or Console()
        self.bar = Progress(
            SpinnerColumn(finished_text="[green]✓"),
            TextColumn("{task.description:<34}"),
            BarColumn(bar_width=24),
            MofNCompleteColumn(),
            TextColumn("calls"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[status]}"),
            console=self.console,
        )
        self.tasks: dict[tuple[str, int], Any] = {}
        self.graphs: dict[tuple[str, int], int] = {}

    def __enter__(self) -> RichProgress:
        self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()

    def start(self, name: str, run: int, steps: int) -> None:
        label = name + (f" (run {run}/{self.runs})" if self.runs > 1 else "")
        self.tasks[name, run] = self.bar.add_task(
            label, total=steps, status="starting a fresh process ..."
        )

    def compile(self, name: str, run: int, graphs: int) -> None:
        self.graphs[name, run] = graphs
        self.bar.update(self.tasks[name, run], status=f"compiling graph {graphs} ...")

    def call(self, name: str, run: int, i: int, seconds: float) -> None:
        graphs = self.graphs.get((name, run), 0)
        self.bar.update(
            self.tasks[name, run],
            completed=i,
            status=f"{graphs} compile(s) so far"
            + (f"; first call took {seconds:.1f} s" if i == 1 else ""),
        )

    def done(self, name: str, run: int, row: Row) -> None:
        self.bar.update(
            self.tasks[name, run],
            completed=len(row.step_times_s),
            status=f"{row.compiles_phrase}, calls took {row.total_s:.1f} s",
        )


def _rich_available() -> bool:
    try:
        import rich  # noqa: F401
    except ImportError:
        return False
    return True


# ----------------------------------------------------------------------------- running


def _spawn(
    name: str,
    steps: int,
    backend: str,
    workload: str,
    run: int,
    progress: Progress,
    steady: int,
    threads: int,
) -> Row:
    """One strategy in a fresh process with a fresh inductor cache, reporting as it goes."""
    with tempfile.TemporaryDirectory(prefix="dynscalar-demo-") as cache:
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache}
        cmd = [sys.executable, "-m", "dynscalar.tools.demo", name, str(steps), backend, workload]
        cmd += [str(steady), str(threads)]
        progress.start(name, run, steps)
        with subprocess.Popen(
            cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        ) as proc:
            row = None
            assert proc.stdout is not None and proc.stderr is not None
            for line in proc.stdout:
                if not line.startswith(EVENT):
                    continue
                event = json.loads(line[len(EVENT) :])
                if event["event"] == "call":
                    progress.call(name, run, event["i"], event["seconds"])
                elif event["event"] == "compile":
                    progress.compile(name, run, event["graphs"])
                elif event["event"] == "result":
                    row = Row(**event["row"])
            stderr = proc.stderr.read()
    if proc.returncode != 0 or row is None:
        raise RuntimeError(f"demo strategy {name!r} failed:\n{stderr[-4000:]}")
    progress.done(name, run, row)
    return row


def _median_row(runs: list[Row]) -> Row:
    """Medians over repeated runs of one strategy.

    The step times are those of the run with the median total, so that the cumulative curve
    ends at the total the table shows.
    """
    if len(runs) == 1:
        return runs[0]
    median_run = sorted(runs, key=lambda r: r.total_s)[(len(runs) - 1) // 2]
    steady = [t for r in runs for t in r.steady_ms]
    return Row(
        strategy=runs[0].strategy,
        compiles=max(r.compiles for r in runs),
        first_call_s=statistics.median(r.first_call_s for r in runs),
        total_s=statistics.median(r.total_s for r in runs),
        median_step_ms=statistics.median(steady)
        if steady
        else statistics.median(r.median_step_ms for r in runs),
        equal_to_eager=all(r.equal_to_eager for r in runs),
        step_times_s=median_run.step_times_s,
        fell_back_to_eager=any(r.fell_back_to_eager for r in runs),
        runs=len(runs),
        totals_s=[r.total_s for r in runs],
        steady_ms=steady,
    )


def run_demo(
    steps: int = 30,
    backend: str = "inductor",
    workload: str = "seed",
    runs: int = 1,
    progress: Progress | None = None,
    steady: int | None = None,
    threads: int = 1,
) -> list[Row]:
    """Each strategy ``runs`` times, each time in a fresh process with a fresh inductor cache.

    Run ``k`` rotates the strategy order by ``k`` places, so no strategy always goes first
    (the first process of a session also warms the OS file cache). One row per strategy.
    ``steady`` (default: the workload's) calls after the timed ``steps`` give the steady
    per-call time; ``threads``: torch's intra-op threads in each strategy's process.
    """
    progress = progress or PlainProgress(runs)
    steady = WORKLOADS[workload].default_steady if steady is None else steady
    results: dict[str, list[Row]] = {name: [] for name in STRATEGY_NAMES}
    for run in range(1, runs + 1):
        shift = (run - 1) % len(STRATEGY_NAMES)
        for name in STRATEGY_NAMES[shift:] + STRATEGY_NAMES[:shift]:
            results[name].append(
                _spawn(name, steps, backend, workload, run, progress, steady, threads)
            )
    return [_median_row(results[name]) for name in STRATEGY_NAMES]


# ----------------------------------------------------------------------------- reporting

COLUMNS = (
    "strategy",
    "compiles",
    "first call (s)",
    "total (s)",
    "steady ms/call (IQR)",
    "equal to eager",
)


def _cells(row: Row) -> list[str]:
    return [
        row.strategy,
        row.compiles_text,
        f"{row.first_call_s:.1f}",
        f"{row.total_s:.1f}",
        row.steady_text,
        "yes" if row.equal_to_eager else "NO: WRONG NUMBERS",
    ]


def seed_note(rows: list[Row]) -> str:
    """The note under the seed workload's table, worded from that table: how the stock row's
    steady calls (eager, once it fell back) compare with the compiled rows' (ms/call, as
    the table rounds them)."""
    text = "The seed model is tiny: most of each total is the cold first compile."
    stock, compiled = rows[0], [r.median_step_ms for r in rows[1:]]
    if stock.fell_back_to_eager and compiled:
        eager, low, high = (
            f"{v:.2f}" for v in (stock.median_step_ms, min(compiled), max(compiled))
        )
        span = low if low == high else f"{low}-{high}"
        if float(eager) < float(low):
            relation = "faster than the compiled ones"
            why = ": on a model this small, a compiled call's overhead outweighs what it saves"
        elif float(eager) > float(high):
            relation, why = "slower than the compiled ones", ""
        else:
            relation, why = "about as fast as the compiled ones", ""
        text += (
            f" The eager calls stock torch.compile fell back to ({eager} ms steady) are "
            f"{relation} ({span} ms){why}."
        )
    return text + (
        " For a workload where the recompiles cost, run: python -m dynscalar demo --workload train"
    )


def format_table(rows: list[Row]) -> str:
    """The result as a plain-text table with aligned columns (numbers right-aligned)."""
    table = [list(COLUMNS), *(_cells(r) for r in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(COLUMNS))]
    right = {2, 3, 4}

    def fmt(line: list[str]) -> str:
        return "  ".join(
            cell.rjust(w) if i in right else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(line, widths, strict=True))
        ).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([fmt(table[0]), rule, *(fmt(line) for line in table[1:])])


def print_rich_table(rows: list[Row], console: Any, caption: str) -> None:
    """The same table drawn by rich (a terminal)."""
    from rich.table import Table

    table = Table(caption=caption, caption_justify="left")
    for i, name in enumerate(COLUMNS):
        table.add_column(name, justify="right" if i in (2, 3, 4) else "left")
    for row in rows:
        cells = _cells(row)
        if not row.equal_to_eager:
            cells[-1] = f"[bold red]{cells[-1]}"
        elif row.fell_back_to_eager:
            cells[1] = f"[yellow]{cells[1]}"
        table.add_row(*cells)
    console.print(table)


def runs_label(runs: int) -> str:
    """How many cold runs each number is: said on the table and on the plot."""
    if runs == 1:
        return "single cold run per strategy"
    return f"median of {runs} cold runs per strategy"


def steady_label(rows: list[Row]) -> str:
    """What the steady column is: how many calls, after what."""
    calls = min((len(r.steady_ms) for r in rows), default=0)
    return (
        f"steady: median of {calls} calls after the timed ones (the interquartile range in "
        "brackets)"
    )


def import_pyplot() -> Any:
    """matplotlib's pyplot on the non-interactive Agg backend, or a clear error."""
    try:
        import matplotlib
    except ImportError as exc:
        raise ImportError(
            "plotting needs matplotlib, which dynscalar does not install by default: "
            "pip install matplotlib (in a clone of the repository: pip install -e '.[bench]')"
        ) from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


STYLES = {
    "stock torch.compile": {"color": "#c0392b", "linestyle": "--"},
    "dynscalar.DynamicInt": {"color": "#1f77b4"},
    "dynscalar.mark_dynamic_attr": {"color": "#2ca02c"},
    "@dynscalar.dynamic_attrs": {"color": "#9467bd", "linestyle": ":"},
}


def plot_rows(
    rows: list[Row],
    path: str | os.PathLike[str],
    title: str = "dynscalar demo: seed model, self.step += 1 in forward",
    backend: str = "inductor",
) -> None:
    """Three panels, every axis from 0: cumulative time per call, where the time went, compiles.

    The subtitle says what ran: the runs, each in a fresh process, and on inductor with a
    fresh inductor cache (the other backends use no such cache)."""
    plt = import_pyplot()
    runs = max(r.runs for r in rows)
    fig, (left, middle, right) = plt.subplots(
        1, 3, figsize=(14, 4.4), gridspec_kw={"width_ratios": [1.25, 1, 1]}
    )
    for row in rows:
        cumulative, total = [0.0], 0.0
        for t in row.step_times_s:
            total += t
            cumulative.append(total)
        left.plot(
            range(len(cumulative)),
            cumulative,
            label=row.strategy,
            linewidth=2,
            **STYLES.get(row.strategy, {}),
        )
    left.set(
        title="cumulative wall time" + (" (the median run)" if runs > 1 else ""),
        xlabel="call",
        ylabel="seconds",
    )
    left.set_xlim(left=0)
    left.set_ylim(bottom=0)
    left.grid(alpha=0.3)
    left.legend(fontsize=8, loc="lower right")

    names = [r.strategy for r in rows]
    ys = range(len(rows))
    first = [r.first_call_s for r in rows]
    rest = [r.total_s - r.first_call_s for r in rows]
    middle.barh(ys, first, color="#bbbbbb", label="first call (cold compile)")
    middle.barh(ys, rest, left=first, color="#4c72b0", label="all other calls (and recompiles)")
    for y, r in zip(ys, rows, strict=True):
        middle.annotate(f" {r.total_s:.1f} s", (r.total_s, y), va="center", fontsize=8)
    middle.set_yticks(list(ys), names, fontsize=8)
    middle.invert_yaxis()
    middle.set_xlim(0, max(r.total_s for r in rows) * 1.25)
    middle.set(title="where the time went", xlabel="seconds")
    middle.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    middle.grid(axis="x", alpha=0.3)

    bars = right.barh(
        ys,
        [r.compiles for r in rows],
        color=["#c0392b" if r.fell_back_to_eager else "#2ca02c" for r in rows],
    )
    for bar, r in zip(bars, rows, strict=True):
        right.annotate(
            f" {r.compiles_text}",
            (bar.get_width(), bar.get_y() + bar.get_height() / 2),
            va="center",
            fontsize=8,
        )
    right.set_yticks(list(ys), names, fontsize=8)
    right.invert_yaxis()
    right.set_xlim(0, max(r.compiles for r in rows) * 1.6)
    right.set(title="compiles (Dynamo graphs)", xlabel="graphs")
    right.xaxis.get_major_locator().set_params(integer=True)
    right.grid(axis="x", alpha=0.3)

    fresh = "fresh process, fresh inductor cache" if backend == "inductor" else "fresh process"
    fig.suptitle(f"{title}\n{runs_label(runs)} ({fresh}; backend {backend})", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ----------------------------------------------------------------------------- command line


def add_arguments(demo: argparse.ArgumentParser) -> None:
    """The ``demo`` subcommand's options."""
    demo.add_argument(
        "--workload",
        choices=list(WORKLOADS),
        default="seed",
        help="seed: the README's model (default); train: the benchmark's training workload, "
        "where stock torch.compile's recompiles cost the most",
    )
    demo.add_argument(
        "--steps", type=int, help="timed calls per strategy (default 30 for seed, 200 for train)"
    )
    demo.add_argument(
        "--steady",
        type=int,
        metavar="N",
        help="calls after the timed ones whose median (and interquartile range) is the steady "
        "per-call time (default 300 for seed, 60 for train)",
    )
    demo.add_argument(
        "--threads",
        type=int,
        default=1,
        metavar="N",
        help="torch threads in each strategy's process (default 1: steady on a shared machine)",
    )
    demo.add_argument(
        "--backend", default="inductor", help="torch.compile backend (default inductor)"
    )
    demo.add_argument(
        "--runs",
        type=int,
        default=1,
        help="cold runs per strategy; numbers are medians over them (default 1)",
    )
    demo.add_argument(
        "--plot",
        metavar="PATH",
        help="also save a PNG (cumulative time, where the time went, compiles); needs matplotlib",
    )


def main(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``python -m dynscalar demo``: run, show progress and the table, optionally plot."""
    steps = args.steps or WORKLOADS[args.workload].default_steps
    steady = WORKLOADS[args.workload].default_steady if args.steady is None else args.steady
    if steps < 2:
        parser.error("--steps must be at least 2")
    if steady < 0 or args.threads < 1:
        parser.error("--steady must be at least 0 and --threads at least 1")
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if args.plot:
        try:
            import_pyplot()  # fail before the run, not after it
        except ImportError as exc:
            parser.error(str(exc))
    workload = WORKLOADS[args.workload]
    live = sys.stdout.isatty() and _rich_available()
    header = (
        f"dynscalar demo: {workload.description}\n"
        f"{steps} timed calls and {steady} steady ones per strategy, backend {args.backend}, "
        f"{runs_label(args.runs)}; torch {torch.__version__}, {cpu_model()} "
        f"({os.cpu_count()} cores, {args.threads} torch thread{'s' * (args.threads != 1)}"
        f"{_load()})"
    )
    if live:
        from rich.console import Console

        console = Console()
        console.print(header, highlight=False)
        with RichProgress(args.runs, console) as progress:
            rows = run_demo(
                steps, args.backend, args.workload, args.runs, progress, steady, args.threads
            )
        print_rich_table(rows, console, caption=f"{runs_label(args.runs)}; {steady_label(rows)}")
    else:
        if sys.stdout.isatty():  # a terminal without rich
            header += "\n(pip install rich for live progress bars)"
        print(header, flush=True)
        rows = run_demo(
            steps, args.backend, args.workload, args.runs, steady=steady, threads=args.threads
        )
        print()
        print(format_table(rows))
        print(f"({runs_label(args.runs)}; {steady_label(rows)})")
    if args.plot:
        title = (
            f"dynscalar demo: {args.workload} workload, {steps} calls, {args.backend}; "
            f"torch {torch.__version__}, {cpu_model()}, {os.cpu_count()} cores"
        )
        plot_rows(rows, args.plot, title=title, backend=args.backend)
        print(f"\nplot written to {args.plot}")
    notes = []
    stock = rows[0]
    if stock.fell_back_to_eager:
        notes.append(
            "stock torch.compile recompiled for every new step value until "
            f"torch._dynamo.config.recompile_limit ({stock.compiles}) was hit, then ran the "
            "model eagerly (uncompiled) for the remaining calls."
        )
    if args.workload == "seed":
        notes.append(seed_note(rows))
    for note in notes:
        if live:
            console.print("\n" + note, highlight=False)
        else:
            print("\n" + note)
    return 0 if all(r.equal_to_eager for r in rows) else 1


if __name__ == "__main__":  # one strategy, in a child process of run_demo
    import dynscalar  # noqa: F401  (installs the bridge hook before Dynamo loads)

    _name, _steps, _backend, _workload, _steady, _threads = sys.argv[1:7]
    torch.set_num_threads(int(_threads))  # before anything compiles: inductor's kernels use it
    _row = run_strategy(_name, int(_steps), _backend, workload=_workload, steady=int(_steady))
    _emit(event="result", row=dataclasses.asdict(_row))
