"""What every experiment shares: counting, machine info, timing, JSON, child processes and
the pages' templates."""

from __future__ import annotations

import json
import logging
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import torch
from torch._dynamo.testing import CompileCounterWithBackend

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "benchmarks"
PUBLISHED = HERE / "published"


#: A backend by name (``eager``, ``aot_eager``, ``inductor``) whose ``frame_count`` counts
#: the graphs handed to it (torch's own test helper).
CountingBackend = CompileCounterWithBackend


class Compiles(logging.Handler):
    """While entered: the graphs Dynamo keeps (a graph thrown away by a tensorify restart
    is not one), the restarts and Dynamo's "hit config.recompile_limit" warnings;
    ``counter`` is the backend to compile with."""

    def __init__(self, backend: str) -> None:
        super().__init__(logging.WARNING)
        self.counter = CountingBackend(backend)
        self.hits = 0
        self.before = self.graphs()

    @staticmethod
    def graphs() -> int:
        from torch._dynamo.utils import counters

        return int(counters["stats"]["unique_graphs"])

    def emit(self, record: logging.LogRecord) -> None:
        if "recompile_limit" in record.getMessage():
            self.hits += 1

    def __enter__(self) -> Compiles:
        logging.getLogger("torch._dynamo").addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        logging.getLogger("torch._dynamo").removeHandler(self)

    def counts(self) -> dict[str, Any]:
        """Compiles, restarts and recompile-limit hits so far (``fell_back_to_eager``)."""
        compiles = self.graphs() - self.before
        counts = {"compiles": compiles, "restarts": self.counter.frame_count - compiles}
        return counts | {"recompile_limit_hits": self.hits, "fell_back_to_eager": self.hits > 0}


def loadavg() -> list[float] | None:
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None


#: An absolute path to a Python file: its folders up to the package it lies in (an installed
#: package's ``site-packages``, or the repository's top-level folder) are the machine's.
_MACHINE_PATH = re.compile(
    r"(?:[A-Za-z]:)?[/\\](?:[^\s/\\:`'\"()]+[/\\])*?"
    r"(?:site-packages[/\\]|(?=(?:dynscalar|tests|benchmarks|examples|scripts)[/\\]))"
    r"(?P<rest>[\w.]+[/\\][^\s:`'\"()]*\.py)"
)


def package_relative(text: str) -> str:
    """``text`` with absolute paths of Python files made relative to their package:
    ``/home/me/.venv/lib/python3.11/site-packages/torch/nn/functional.py:2030`` becomes
    ``torch/nn/functional.py:2030``, ``/home/me/dynscalar/dynscalar/ops/_kernels.py``
    becomes ``dynscalar/ops/_kernels.py`` (the pages show no maintainer's machine).

    Examples:
        >>> package_relative("at /w/.venv/lib/python3.11/site-packages/torch/nn/f.py:20 (x)")
        'at torch/nn/f.py:20 (x)'
        >>> package_relative("at /w/main/tests/nn_coverage/catalogue.py:88")
        'at tests/nn_coverage/catalogue.py:88'
    """
    return _MACHINE_PATH.sub(lambda m: m.group("rest").replace("\\", "/"), text)


def shared_cores(machine: dict[str, Any]) -> bool:
    """Whether other jobs ran on the machine when a run started (a 1-minute load average
    above 0.5 before the run's own work): its times are noisy, its compile counts are not.
    The pages say this in words; the load averages stay in the run's JSON."""
    start = machine.get("loadavg_start")
    return bool(start) and float(start[0]) > 0.5


def machine_info(**extra: Any) -> dict[str, Any]:
    """CPU, cores, torch threads, versions and the load average now."""
    import wrapt

    import dynscalar
    from dynscalar.tools.machine import cpu_model

    c_ext = type(wrapt.BaseObjectProxy).__module__ == "builtins"
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "dynscalar": dynscalar.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "wrapt": f"{wrapt.__version__} ({'C extension' if c_ext else 'pure Python'})",
        "loadavg_start": loadavg(),
        **extra,
    }


# ----------------------------------------------------------------------------- timing
def interleaved(
    fns: dict[str, Callable[[], Any]], rounds: int, number: int
) -> dict[str, list[float]]:
    """Seconds per call of each function: ``rounds`` samples of ``number`` calls each,
    the functions taking turns in an order rotated every round; this thread's CPU time (a
    process that loses its core does not count the wait)."""
    names = list(fns)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            fn = fns[name]
            start = time.thread_time()
            for _ in range(number):
                fn()
            samples[name].append((time.thread_time() - start) / number)
    return samples


def quantiles(values: list[float], scale: float = 1.0) -> dict[str, float]:
    """Median and the p10-p90 spread of ``values`` (each times ``scale``)."""
    if len(values) == 1:
        out = dict.fromkeys(("median", "p10", "p90"), values[0])
    else:
        deciles = statistics.quantiles(values, n=10, method="inclusive")
        out = {"median": statistics.median(values), "p10": deciles[0], "p90": deciles[-1]}
    return {k: v * scale for k, v in out.items()}


def paired_ratios(samples: list[float], reference: list[float]) -> list[float]:
    return [a / b for a, b in zip(samples, reference, strict=True)]


def fresh_class(cls: type, tag: str, **namespace: Any) -> type:
    """A subclass with its own copy of ``forward``'s code object: Dynamo caches compiled
    code per code object, so strategies sharing one would pay for each other's guards."""
    fwd = cls.forward  # type: ignore[attr-defined]
    code = fwd.__code__.replace(co_name=f"forward_{tag}")
    forward = types.FunctionType(
        code, fwd.__globals__, "forward", fwd.__defaults__, fwd.__closure__
    )
    return type(f"{cls.__name__}_{tag}", (cls,), {"forward": forward, **namespace})


# ----------------------------------------------------------------------- JSON, children
def read_json(path: Path) -> Any:
    return json.loads(Path(path).read_text())


def write_json(path: Path, data: Any) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path


def source_name(path: Path) -> str:
    """How a page cites a JSON: relative to the repository, else its file name."""
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def emit(row: Any) -> None:
    """A child's answer: one JSON line on stdout."""
    print(json.dumps(row), flush=True)


def child_env(**extra: str) -> dict[str, str]:
    """This process's environment with ``extra``, this tree first on ``PYTHONPATH``, and
    bytecode written and read as an installed package's is: without it
    (``PYTHONDONTWRITEBYTECODE`` set, as on this project's machines) every child compiles
    dynscalar's ~40 modules from source, ~0.1 s that stock torch (byte-compiled by pip)
    never pays, which read as dynscalar's cost in the first-compile ratios."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env |= extra
    return env | {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))}


def run_child(
    module: str,
    args: list[str],
    timeout: float,
    python: str = sys.executable,
    cache: str | None = None,
    env: dict[str, str] | None = None,
    wrapper: list[str] = (),  # type: ignore[assignment]
    allow_empty: bool = False,
) -> tuple[Any, str, float]:
    """Run ``python -m module *args`` from the repository root with an inductor cache
    (a fresh empty one unless ``cache``); return (last stdout line as JSON or None, the
    error text, wall seconds)."""
    with tempfile.TemporaryDirectory(prefix="dynscalar-bench-") as fresh:
        full = child_env(**(env or {}), TORCHINDUCTOR_CACHE_DIR=cache or fresh)
        start = time.perf_counter()
        try:
            proc = subprocess.run(
                [*wrapper, python, "-m", module, *args],
                cwd=ROOT,
                env=full,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return None, f"timed out after {timeout:.0f} s", time.perf_counter() - start
    wall = time.perf_counter() - start
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not (lines or allow_empty):
        return None, proc.stderr[-3000:] or f"exit {proc.returncode}", wall
    return (json.loads(lines[-1]) if lines else None), "", wall


def child_row(
    module: str, args: list[str], timeout: float, failed: dict[str, Any], **kw: Any
) -> dict[str, Any]:
    """A child's result row with its process's wall seconds, or ``failed`` with the error
    (``kw``: as for ``run_child``)."""
    row, error, wall = run_child(module, args, timeout, **kw)
    if row is None:
        return failed | {"error": error[-2000:], "equal_to_eager": False}
    return {**row, "process_wall_s": wall}


def split(value: str | None, known: Any, default: list[str]) -> list[str]:
    """A comma list of names, each one of ``known``."""
    names = default if not value else [v.strip() for v in value.split(",") if v.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown name(s) {unknown}; choose from {list(known)}")
    return names


def pyplot(**rc: Any) -> Any:
    """matplotlib's pyplot on Agg with ``rc`` set, or a clear exit without matplotlib."""
    try:
        import matplotlib
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise SystemExit("the plots need matplotlib: pip install -e '.[bench]'") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update(rc)
    return plt


def save_figure(fig: Any, path: Path, dpi: int = 100) -> None:
    """Save and close ``fig``, its smallest text (px) in the PNG's metadata: figures are
    drawn 680 px wide (the docs' column at 1280 px), and scripts/screenshot_docs.py fails a
    page whose figures show text under 9 px."""
    from matplotlib.text import Text

    fig.canvas.draw()
    sizes = [
        t.get_fontsize()
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip() and t.get_window_extent().width > 0
    ]
    fig.savefig(
        path,
        dpi=dpi,
        metadata={"Software": None, "dynscalar-min-text-px": f"{min(sizes) * dpi / 72:.1f}"},
    )
    pyplot().close(fig)


def spread(qs: list[dict[str, float]], scale: float = 1.0) -> list[list[float]]:
    """Error bars (below, above the median) from p10-p90 quantiles, times ``scale``."""
    return [
        [(q["median"] - q["p10"]) * scale for q in qs],
        [(q["p90"] - q["median"]) * scale for q in qs],
    ]


# ------------------------------------------------------------------------------ pages
def marked(name: str, body: str) -> str:
    """``body`` between the lines ``<!-- name:start -->`` and ``<!-- name:end -->``."""
    return f"<!-- {name}:start -->\n{body}<!-- {name}:end -->\n"


def replace_block(text: str, block: str) -> str:
    """``text`` with the block between ``block``'s first and last lines (its markers)
    replaced by ``block``."""
    lines = block.splitlines(keepends=True)
    a, b = text.index(lines[0]), text.index(lines[-1]) + len(lines[-1])
    return text[:a] + block + text[b:]


def template(name: str, **fields: Any) -> list[str]:
    """The lines of the page fragment ``benchmarks/templates/<name>.md``, its ``{fields}``
    filled in (``str.format``): the renderers' fixed prose lives there."""
    return (HERE / "templates" / f"{name}.md").read_text().format(**fields).split("\n")[:-1]


def words(name: str) -> dict[str, Any]:
    """The tables of reader-facing words in ``benchmarks/templates/<name>.json``."""
    return read_json(HERE / "templates" / f"{name}.json")  # type: ignore[no-any-return]


def row(*cells: Any) -> str:
    """One row of a Markdown table (an empty cell is one space wide)."""
    return "|" + "".join(f" {c} |" if str(c) else " |" for c in cells)


def table(head: str, rows: Iterable[Iterable[Any]] = ()) -> list[str]:
    """A Markdown table: ``head`` names the columns, ``"strategy | us>"`` (``>``: aligned
    right), then a line per row of cells."""
    names = [n.strip() for n in head.split("|")]
    rule = "|" + "".join("---:|" if n.endswith(">") else "---|" for n in names)
    return [row(*(n.removesuffix(">") for n in names)), rule, *(row(*r) for r in rows)]


def span(values: list[float], fmt: str = ".0f") -> str:
    """``lo-hi`` of ``values`` as formatted, or one value when both ends print the same."""
    lo, hi = format(min(values), fmt), format(max(values), fmt)
    return lo if lo == hi else f"{lo}-{hi}"


def applied_patches() -> list[tuple[Any, str]]:
    """(owner, attribute) of every bridge patch in place (the installed ones, and the
    degraded ones while in place); ``vars(owner)[attribute]`` is its ``wrapt.FunctionWrapper``
    (the benchmarks time the hooks through this)."""
    from dynscalar._bridge import _install, _patch

    with _install.lock:
        return [
            (p.owner, p.attribute)
            for p in _patch.APPLIED + _install._degraded
            if vars(p.owner).get(p.attribute) is p.wrapper
        ]
