"""Instructions per call under valgrind's callgrind (counts that do not depend on the load),
one child per strategy or eager case."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import torch
import wrapt

import dynscalar as ds
from benchmarks import eager
from benchmarks.harness import run_child
from benchmarks.percall import PERCALL, make_runner


def callgrind_available() -> bool:
    return shutil.which("valgrind") is not None and shutil.which("callgrind_control") is not None


def _instructions(task: tuple[str, str, str], number: int, workdir: Path) -> int:
    """Instructions per call counted between the child's two toggles (``number`` calls)."""
    args = [*task, str(number)]
    out_file = workdir / f"callgrind.{abs(hash(tuple(args)))}.out"
    valgrind = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no"]
    # Its own inductor cache: under valgrind the CPU reports AVX2 (no AVX-512), and kernels
    # compiled there, loaded later from a shared cache by a native process, crash it.
    _, error, _ = run_child(
        "benchmarks.callgrind",
        args,
        3600,
        cache=str(workdir / "inductor-cache"),
        wrapper=[*valgrind, f"--callgrind-out-file={out_file}"],
        allow_empty=True,
    )
    if error:
        raise RuntimeError(f"callgrind child {args} failed:\n{error}")
    for line in out_file.read_text(errors="replace").splitlines():
        if line.startswith(("summary:", "totals:")):
            return round(int(line.split()[1]) / number)
    raise RuntimeError(f"no totals in {out_file}")


def child(kind: str, name: str, variant: str, number: int) -> None:
    """In a valgrind child: warm up, switch instrumentation on, count ``number`` calls."""
    torch.set_num_threads(1)
    if kind == "percall":
        if PERCALL[name].stock:
            ds.disabled().__enter__()  # this process only measures stock torch
        runner = make_runner(name, variant)
        runner.compile()
        fn = runner.call
    elif kind == "floor":
        fn = _floor()[name]
    else:
        fn = eager.make(name, variant == "proxy")
    for _ in range(50):
        fn()
    subprocess.run(
        ["callgrind_control", "--instr=on", str(os.getpid())], check=True, capture_output=True
    )
    for _ in range(20):  # instrumented, not counted: caches settle
        fn()
    torch._C._valgrind_toggle()
    for _ in range(number):
        fn()
    torch._C._valgrind_toggle()


def run_callgrind(
    backends: list[str], strategies: list[str], eager_cases: list[str], number: int, jobs: int
) -> dict[str, Any]:
    """Instructions per call of every per-call strategy (none when ``strategies`` is empty)
    and eager case, and the pieces of the eager floor (``jobs`` processes at once)."""
    tasks = [("percall", s, b) for b in backends for s in strategies]
    tasks += [("eager", c, v) for c in eager_cases for v in ("plain", "proxy")]
    tasks += [("floor", c, "proxy") for c in FLOOR_CASES]
    with (
        tempfile.TemporaryDirectory(prefix="dynscalar-cg-") as tmp,
        ThreadPoolExecutor(max_workers=jobs) as pool,
    ):
        per_call = pool.map(lambda task: _instructions(task, number, Path(tmp)), tasks)
        counts = dict(zip(tasks, per_call, strict=True))
    percall: dict[str, Any] = {}
    for backend in backends:
        rows = percall[backend] = {}
        for name in strategies:
            ref = counts.get(("percall", PERCALL[name].reference, backend))
            n = counts[("percall", name, backend)]
            rows[name] = {"instructions": n, "ratio": round(n / ref, 4) if ref else None}
    eager = {c: {v: counts[("eager", c, v)] for v in ("plain", "proxy")} for c in eager_cases}
    floor = {case: counts[("floor", case, "proxy")] for case in FLOOR_CASES}
    return {"calls": number, "percall": percall, "eager": eager, "floor": floor}


#: Pieces of ``DynamicInt + 1`` measured alone (the eager floor; "call" is the measuring
#: loop, subtracted from the others), and a torch call on an object with a
#: ``__torch_function__`` that returns at once
FLOOR_CASES = ("call", "dispatch", "read", "alloc", "store_value", "store_spec", "torch_function")


def _floor() -> dict[str, Callable[[], Any]]:
    """The measured call of each of ``FLOOR_CASES``."""

    class Number:
        __slots__ = ()

        def __add__(self, other: Any) -> Any:
            return 8

    class Hooked:
        """Not a number to torch: torch.mul hands it to a hook that returns at once."""

        __slots__ = ()

        @classmethod
        def __torch_function__(
            cls, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            return result

    a, h, p, t = Number(), Hooked(), ds.DynamicInt(7), torch.ones(8, 8)
    result, spec = t * 2, p.spec
    setter = next(  # wrapt's own __wrapped__ descriptor
        k.__dict__["__wrapped__"] for k in type(p).__mro__ if "__wrapped__" in k.__dict__
    ).__set__

    def store_spec() -> None:
        p._self_spec = spec  # type: ignore[attr-defined]  # the slot the spec lives in

    return {
        "call": lambda: None,
        "dispatch": lambda: a + 1,
        "read": lambda: p.__wrapped__,
        # wrapt's allocation of a proxy object, as DynamicInt's constructor does it
        "alloc": lambda: wrapt.BaseObjectProxy.__new__(ds.DynamicInt),
        "store_value": lambda: setter(p, 7),
        "store_spec": store_spec,
        "torch_function": lambda: torch.mul(t, h),
    }


if __name__ == "__main__":
    kind, name, variant, number = sys.argv[1:5]
    child(kind, name, variant, int(number))
