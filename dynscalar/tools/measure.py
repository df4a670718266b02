"""``python -m dynscalar measure``: the exactness cells a program needs, measured on the user's
own torch release and device, kept in the per-user cache the library reads.

The shipped ``dynscalar/ops/admitted.json`` holds the cells measured for the releases and
devices the project ran; a cell it lacks (a newer torch, a GPU) is specialized as stock
torch specializes it, with a ``SpecializationWarning`` naming this command.  The command:

1. runs ``SCRIPT ARGS...`` in a child process, as ``python SCRIPT ARGS...`` would (the
   doctor's runner), and collects the cells the bridge looked up and found in neither the
   shipped file nor the cache (``_admission.missing``);
2. measures each with the exactness harness (``dynscalar.tools.matrix``), in this process,
   on the device the cell names, with a progress bar and an estimate of the time left;
3. merges the verdicts into ``measured.json`` in the cache folder
   (``_admission.user_cache_dir``: ``$DYNSCALAR_CACHE_DIR``, else
   ``$XDG_CACHE_HOME/dynscalar``, else ``~/.cache/dynscalar``), one column per backend,
   torch release and device.

The next run of the script reads them where the shipped file has no cell: an admitted
cell makes the value dynamic, a refused one keeps it specialized.  ``--rules`` and
``--forms`` measure whole columns instead of a script's cells (``scripts/gpu_check.py``
measures the CUDA columns so); ``--list`` prints the plan and its estimate only.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

__all__ = ["Cell", "collect", "main", "measure", "plan_columns", "write"]

#: seconds one cell takes when the shipped file has no timing of it (CPU, 2 cores)
_GUESS_S = {"python": 1.0, "inductor": 20.0}


@dataclass(frozen=True)
class Cell:
    """One cell to measure: its column (``"python torch-2.15 cuda"``) and key (as
    ``_admission.key`` / ``form_key`` write it)."""

    column: str
    key: str

    @property
    def backend(self) -> str:
        return self.column.split(" ")[0]

    @property
    def device(self) -> str:
        return self.column.split(" ")[2]

    @property
    def is_form(self) -> bool:
        parts = self.key.split(" ")
        return len(parts) - parts[-1].startswith("autocast-") == 3


# ----------------------------------------------------------------------------- collecting
def collect(script: str, args: list[str], timeout: float | None = None) -> tuple[int, list[Cell]]:
    """Run ``script`` in a child process; (its exit code, the cells it found unmeasured)."""
    with tempfile.TemporaryDirectory() as folder:
        found = Path(folder) / "missing.json"
        command = [sys.executable, "-m", "dynscalar.tools.measure", "--collect", str(found)]
        done = subprocess.run([*command, script, *args], timeout=timeout, check=False)
        if not found.exists():
            return done.returncode, []
        cells = [Cell(c, k) for c, k in json.loads(found.read_text())]
    return done.returncode, sorted(set(cells), key=lambda c: (c.column, c.key))


def _collect_main(out: str, script: str, args: list[str]) -> int:
    """The child: run the script, then write the missing cells (also when it fails)."""
    import dynscalar  # noqa: F401  (the bridge in place before the script imports torch)
    from dynscalar.ops import _admission

    from .doctor.run import _run_script

    try:
        code, _ = _run_script(script, args)
    finally:
        Path(out).write_text(json.dumps(sorted(_admission.missing)))
    return code


# ----------------------------------------------------------------------------- planning
def plan_columns(
    rules: list[str] | None,
    forms: list[str] | None,
    backends: tuple[str, ...],
    dtypes: tuple[Any, ...] | None,
    device: str,
) -> list[Cell]:
    """Whole columns: the cells of ``rules`` (None: every rule) on ``backends``, and of
    ``forms`` (None: none; ``[]``: every form) on inductor, for ``dtypes`` (None: the
    matrix's own) on ``device``."""
    from dynscalar.ops import _admission, _forms

    from .matrix import forms as form_matrix
    from .matrix import run

    cells: list[Cell] = []
    for backend in backends:
        column = _admission.column(backend, device)
        own = run.DTYPES if backend == "python" else run.INDUCTOR_DTYPES
        for rule, name in run.cells(rules):
            for dtype in dtypes or own:
                for grad in (False, True) if rule.differentiable else (False,):
                    cells.append(Cell(column, _admission.key(rule, name, dtype, grad)))
    if forms is not None:  # dtype by dtype, in the order given: the first ones first
        column = _admission.column("inductor", device)
        own = (*form_matrix.NOGRAD_DTYPES, *form_matrix.GRAD_DTYPES)
        for dtype in dtypes or tuple(dict.fromkeys(own)):
            for form in _forms.FORMS.values():
                if forms and form.op not in forms:
                    continue
                for grad in (False, True):
                    kept = form_matrix.GRAD_DTYPES if grad else form_matrix.NOGRAD_DTYPES
                    if dtype in kept and (not grad or form_matrix.differentiable(form)):
                        cells.append(Cell(column, _admission.form_key(form, dtype, grad)))
    return cells


def _estimate(cell: Cell) -> float:
    """Seconds: the shipped file's timing of the same cell in any column of its backend
    (the inductor column keeps one), else a guess."""
    from dynscalar.ops import _admission

    for name, column in _admission._columns().items():
        if name.startswith(cell.backend + " "):
            seconds = column["cells"].get(cell.key, {}).get("seconds")
            if seconds:
                return float(seconds)
    return _GUESS_S[cell.backend]


# ----------------------------------------------------------------------------- measuring
def measure_cell(cell: Cell) -> dict[str, Any]:
    """One cell's verdict, as the admitted file keeps it."""
    import torch

    from dynscalar import ops
    from dynscalar.ops import _forms

    from .matrix import forms, harness, run

    parts = cell.key.split(" ")
    autocast = None
    if parts[-1].startswith("autocast-"):  # a cell under torch.autocast
        autocast = getattr(torch, parts.pop().removeprefix("autocast-"))
    dtype = getattr(torch, parts[-2])
    grad = parts[-1] == "grad"
    start = time.perf_counter()
    if autocast is not None and cell.backend == "inductor":
        raise NotImplementedError("inductor cells under autocast are not measured yet")
    if cell.is_form:
        result = forms.form_cell(_forms.FORMS[parts[0]], dtype, grad, cell.device)
    elif cell.backend == "inductor":
        result = run.inductor_cell(ops.RULES[parts[0]], parts[1], dtype, grad, cell.device)
    else:
        rule = ops.RULES[parts[0]]
        admitted, why = harness.verdict(rule, parts[1], dtype, grad, autocast, cell.device)
        result = {"admitted": admitted, "why": why}
    result["seconds"] = round(time.perf_counter() - start, 1)
    return result


def _cells(count: int) -> str:
    return f"{count} cell" if count == 1 else f"{count} cells"


def _duration(seconds: float) -> str:
    seconds = max(0, math.ceil(seconds))
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


def measure(
    cells: list[Cell],
    stream: TextIO | None = None,
    done: Callable[[Cell, dict[str, Any]], object] | None = None,
) -> dict[Cell, dict[str, Any]]:
    """Every cell's verdict, with a progress bar and the time left on ``stream`` (stderr):
    the estimate is the shipped timings, scaled by how this machine compares so far.
    ``done(cell, verdict)`` is called after each cell (the command stores it then: an
    interrupted run keeps what it measured)."""
    from .matrix import forms, run  # noqa: F401  (imported before the clock starts)

    stream = stream or sys.stderr
    estimates = [_estimate(c) for c in cells]
    total = sum(estimates)
    done_estimate = done_actual = 0.0
    results: dict[Cell, dict[str, Any]] = {}
    tty = stream.isatty()
    for index, (cell, estimate) in enumerate(zip(cells, estimates, strict=True)):
        scale = done_actual / done_estimate if done_estimate else 1.0
        left = (total - done_estimate) * scale
        width = 24
        filled = int(width * index / max(len(cells), 1))
        bar = "#" * filled + "-" * (width - filled)
        line = (
            f"[{bar}] {index}/{_cells(len(cells))}, ~{_duration(left)} left: "
            f"{cell.key} ({cell.backend}, {cell.device})"
        )
        print(f"\r{line:<120}" if tty else line, end="" if tty else "\n", file=stream, flush=True)
        start = time.perf_counter()
        try:
            results[cell] = measure_cell(cell)
        except Exception as error:  # noqa: BLE001 - reported, not stored: no verdict
            results[cell] = {"admitted": False, "why": f"not measured: {error!r}"[:300]}
        else:
            if done is not None:
                done(cell, results[cell])
        done_actual += time.perf_counter() - start
        done_estimate += estimate
    print(
        f"\r[{'#' * 24}] {len(cells)}/{_cells(len(cells))} in {_duration(done_actual)}",
        file=stream,
        flush=True,
    )
    return results


def write(results: dict[Cell, dict[str, Any]], folder: Path | None = None) -> Path:
    """Merge ``results`` into ``measured.json`` in the cache folder; its path."""
    import torch

    from dynscalar.ops import _admission

    path = (folder or _admission.user_cache_dir()) / "measured.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(path.read_text()) if path.exists() else {}
    columns = data.get("columns", {})
    for cell, result in results.items():
        column = columns.setdefault(cell.column, {"torch": torch.__version__, "cells": {}})
        column["torch"] = torch.__version__
        column["cells"][cell.key] = result
    data = {
        "about": "Cells measured on this machine by python -m dynscalar measure, read by "
        "dynscalar.ops._admission where the shipped admitted.json lacks a cell.",
        "columns": {
            name: {**c, "cells": dict(sorted(c["cells"].items()))}
            for name, c in sorted(columns.items())
        },
    }
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(temporary, path)  # a reader never sees half a file
    return path


# ----------------------------------------------------------------------------- command
def add_arguments(parser: Any) -> None:
    parser.add_argument("--list", action="store_true", help="print the cells and estimate only")
    parser.add_argument("--rules", help="measure these rules' columns (comma-separated, or all)")
    parser.add_argument(
        "--forms", help="measure these scalar forms' inductor cells (comma-separated, or all)"
    )
    parser.add_argument(
        "--backend",
        default="python,inductor",
        help="with --rules: python (eager/aot_eager), inductor, or both (the default)",
    )
    parser.add_argument("--dtypes", help="with --rules/--forms: comma-separated (float32,...)")
    parser.add_argument("--device", default="cpu", help="with --rules/--forms: cpu, cuda, ...")
    parser.add_argument("--json", metavar="FILE", help="also write the verdicts to FILE")
    parser.add_argument("script", metavar="SCRIPT", nargs="?", help="the script to run")
    parser.add_argument(
        "args", metavar="ARGS", nargs=argparse.REMAINDER, help="arguments for the script"
    )


def run_command(args: Any) -> int:
    """``python -m dynscalar measure``: 0 when every planned cell was measured; 2 for a
    usage error."""
    import torch

    from dynscalar.ops import _admission

    if args.rules or args.forms:
        dtypes = None
        if args.dtypes:
            dtypes = tuple(getattr(torch, d) for d in args.dtypes.split(","))
        rules = None if args.rules in (None, "all") else args.rules.split(",")
        forms = None if not args.forms else [] if args.forms == "all" else args.forms.split(",")
        backends = tuple(args.backend.split(",")) if args.rules else ()
        try:
            cells = plan_columns(rules, forms, backends, dtypes, args.device)
        except (AttributeError, KeyError) as error:
            print(f"measure: unknown name {error}", file=sys.stderr)
            return 2
    elif args.script:
        if not os.path.exists(args.script):
            print(f"measure: can't open file '{args.script}'", file=sys.stderr)
            return 2
        print(f"measure: running {args.script} to find the cells it needs", file=sys.stderr)
        code, cells = collect(args.script, list(args.args))
        if code:
            print(f"measure: {args.script} exited with {code}", file=sys.stderr)
    else:
        print("measure: give SCRIPT [ARGS...], or --rules/--forms", file=sys.stderr)
        return 2
    unmeasurable = [c for c in cells if c.device == "meta"]  # no numbers to compare
    if unmeasurable:
        print(f"measure: skipping {_cells(len(unmeasurable))} on meta tensors", file=sys.stderr)
        cells = [c for c in cells if c not in unmeasurable]
    total = sum(_estimate(c) for c in cells)
    print(
        f"measure: {_cells(len(cells))} for torch {torch.__version__}, ~{_duration(total)} "
        f"(estimated); cache: {_admission.user_cache_dir() / 'measured.json'}",
        file=sys.stderr,
    )
    if args.list or not cells:
        for cell in cells:
            print(f"{cell.column}: {cell.key}")
        return 0
    results = measure(cells, done=lambda cell, verdict: write({cell: verdict}))
    path = _admission.user_cache_dir() / "measured.json"
    admitted = sum(bool(r.get("admitted")) for r in results.values())
    print(f"measure: {admitted} of {_cells(len(results))} exact; wrote {path}", file=sys.stderr)
    for cell, result in results.items():
        verdict = "exact" if result.get("admitted") else f"not exact: {result.get('why')}"
        print(f"{cell.column}: {cell.key}: {verdict}")
    if args.json:
        shown = {f"{c.column}: {c.key}": r for c, r in results.items()}
        Path(args.json).write_text(json.dumps(shown, indent=1) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    """The collecting child: ``python -m dynscalar.tools.measure --collect OUT SCRIPT ...``."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 3 or argv[0] != "--collect":
        print("usage: python -m dynscalar measure [...] SCRIPT [ARGS...]", file=sys.stderr)
        return 2
    return _collect_main(argv[1], argv[2], argv[3:])


if __name__ == "__main__":
    raise SystemExit(main())
