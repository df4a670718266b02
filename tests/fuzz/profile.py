"""Profiles: run many programs, shrink dynscalar-caused failures, summarize as JSON.

A profile is a seed, a range of program indices and a rule that picks each program's backend
(:func:`backend_for`): even indices run on ``eager``, odd ones on ``aot_eager``, and every
``inductor_every``-th on ``inductor``.  The pytest quick profile and ``python -m tests.fuzz``
both go through :func:`run_profile`.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch

from .generator import SHAPES, generate, render, without_harness
from .runner import ROOT, StockWorker, Verdict, check_program, shrink

__all__ = ["PROFILES", "Profile", "Report", "backend_for", "run_profile"]


@dataclass(frozen=True)
class Profile:
    programs: int
    inductor_every: int  # 0: no inductor programs
    shrink_budget_s: float  # all shrinking together
    shrink_each_s: float  # one failure kind


PROFILES = {
    "quick": Profile(programs=200, inductor_every=0, shrink_budget_s=24, shrink_each_s=8),
    "long": Profile(programs=5000, inductor_every=100, shrink_budget_s=900, shrink_each_s=90),
}


def backend_for(index: int, inductor_every: int = 0) -> str:
    if inductor_every and index % inductor_every == inductor_every - 1:
        return "inductor"
    return "eager" if index % 2 == 0 else "aot_eager"


@dataclass
class Minimal:
    key: str
    backend: str
    index: int  # the program it was shrunk from
    source: str  # standalone script
    complete: bool  # shrinking finished within its budget
    detail: str


@dataclass
class Report:
    seed: int
    verdicts: list[Verdict]
    minimal: dict[str, Minimal]  # one per kind of difference
    wall_s: float

    def failures(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.failure is not None]

    def summary(self, profile: str) -> dict[str, Any]:
        """The JSON summary: configuration, totals, disagreements by cause, failures."""
        allowed: Counter[str] = Counter()
        theirs: Counter[str] = Counter()
        warns: Counter[str] = Counter()
        backends: Counter[str] = Counter()
        ours = 0
        for v in self.verdicts:
            backends[v.backend] += 1
            warns.update(w.split(":")[0] for w in v.warnings)
            for e in v.events:
                if e.cause == "allowed":
                    allowed[e.error or "?"] += 1
                elif e.cause == "torch":
                    theirs[e.torch_kind or "?"] += 1
                else:
                    ours += 1
        indices = [v.program.index for v in self.verdicts]
        shapes: Counter[str] = Counter()
        shapes_failing: Counter[str] = Counter()
        for v in self.verdicts:
            shapes.update(v.program.tags)
            if v.failure is not None:
                shapes_failing.update(v.program.tags)
        return {
            "profile": profile,
            "seed": self.seed,
            "indices": [min(indices), max(indices)] if indices else [],
            "command": f"python -m tests.fuzz --profile {profile} --seed {self.seed}"
            + (f" --programs {len(indices)}" if len(indices) != PROFILES[profile].programs else ""),
            "machine": _machine(),
            "wall_s": round(self.wall_s, 1),
            "programs": len(self.verdicts),
            "backends": dict(sorted(backends.items())),
            "calls": sum(v.calls for v in self.verdicts),
            "compiles": sum(v.compiles for v in self.verdicts),
            "programs_without_difference": sum(not v.events for v in self.verdicts),
            "shapes": {
                tag: {"programs": shapes[tag], "dynscalar": shapes_failing[tag]} for tag in SHAPES
            },
            "disagreements": {
                "dynscalar": ours,
                "allowed": dict(sorted(allowed.items())),
                "torch": dict(theirs.most_common()),
            },
            "warnings": dict(warns.most_common()),
            "examples": {
                "allowed": _examples(self.verdicts, "allowed", lambda e: e.error or "?"),
                "torch": _examples(self.verdicts, "torch", lambda e: e.torch_kind or "?"),
            },
            "failures": [
                {
                    "index": v.program.index,
                    "backend": v.backend,
                    "call": v.failure.mismatch.call,
                    "key": v.failure.mismatch.key,
                    "detail": v.failure.mismatch.detail,
                }
                for v in self.failures()
                if v.failure is not None
            ],
            "minimal": [
                {
                    "key": m.key,
                    "backend": m.backend,
                    "from_index": m.index,
                    "complete": m.complete,
                    "detail": m.detail,
                    "source": m.source,
                }
                for m in self.minimal.values()
            ],
        }

    def failure_text(self) -> str:
        """Every dynscalar-caused disagreement, then one minimal program per kind."""
        lines = [f"{len(self.failures())} dynscalar-caused disagreement(s):"]
        for v in self.failures():
            f = v.failure
            assert f is not None
            lines.append(
                f"  seed {self.seed} index {v.program.index} ({v.backend}) call "
                f"{f.mismatch.call}: {f.mismatch.key} -- {f.mismatch.detail}"
            )
            lines.append(
                f"    rerun: python -m tests.fuzz --seed {self.seed} --index {v.program.index} "
                f"--backend {v.backend}"
            )
        for key, m in self.minimal.items():
            done = "" if m.complete else " (not fully shrunk: time budget)"
            lines += [
                "",
                f"--- minimal program for [{key}] on {m.backend}, from index {m.index}{done}",
                f"--- {m.detail}",
                f"--- as a standalone script: python -m tests.fuzz --seed {self.seed} "
                f"--index {m.index} --backend {m.backend}",
                without_harness(m.source),
            ]
        return "\n".join(lines)


def _examples(
    verdicts: list[Verdict], cause: str, kind: Callable[[Any], str], most: int = 5
) -> dict[str, list[dict[str, Any]]]:
    """Up to ``most`` programs per kind of difference: index, backend, call, what differed."""
    out: dict[str, list[dict[str, Any]]] = {}
    for v in verdicts:
        for e in v.events:
            if e.cause == cause and len(out.setdefault(kind(e), [])) < most:
                out[kind(e)].append(
                    {"index": v.program.index, "backend": v.backend, **e.mismatch.to_json()}
                )
    return dict(sorted(out.items()))


def _machine() -> dict[str, Any]:
    try:
        commit = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--exclude", "*"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout.strip()
    except OSError:
        commit = ""
    import numpy

    from dynscalar.tools.machine import cpu_model

    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "python": platform.python_version(),
        "commit": commit,
    }


def run_profile(
    seed: int,
    indices: Iterable[int],
    *,
    backend: Callable[[int], str],
    shrink_budget_s: float,
    shrink_each_s: float,
    progress: Callable[[str], None] | None = None,
    stop_after_s: float | None = None,
) -> Report:
    """Check every program; shrink the first failure of each kind within the budget.

    With ``stop_after_s``, no program starts after that many seconds: the report covers
    the programs checked (its summary's ``programs`` and ``command`` say how many)."""
    start = time.perf_counter()
    stock = StockWorker()
    verdicts: list[Verdict] = []
    minimal: dict[str, Minimal] = {}  # one per kind of difference
    budget_end = None
    try:
        for n, index in enumerate(indices):
            if stop_after_s is not None and time.perf_counter() - start > stop_after_s:
                if progress:
                    progress(f"stopped after {n} programs ({stop_after_s:.0f} s reached)")
                break
            v = check_program(generate(seed, index), backend(index), stock)
            verdicts.append(v)
            if progress and v.failure is not None:  # triage can start during a long run
                progress(f"program {index} ({v.backend}): {v.failure.mismatch.key}")
            if progress and (n + 1) % 50 == 0:
                bad = sum(x.failure is not None for x in verdicts)
                progress(
                    f"{n + 1} programs, {bad} with a dynscalar-caused disagreement, "
                    f"{time.perf_counter() - start:.0f} s"
                )
        budget_end = time.perf_counter() + shrink_budget_s
        for v in verdicts:
            f = v.failure
            if f is None or f.mismatch.key in minimal:
                continue
            left = budget_end - time.perf_counter()
            if left > 0:
                program, event, complete = shrink(v, stock, budget_s=min(shrink_each_s, left))
            else:
                program, event, complete = v.program.truncated(f.mismatch.call + 1), f, False
            minimal[f.mismatch.key] = Minimal(
                f.mismatch.key,
                v.backend,
                v.program.index,
                render(program, script=True, backend=v.backend),
                complete,
                event.mismatch.detail,
            )
    finally:
        stock.close()
    return Report(seed, verdicts, minimal, time.perf_counter() - start)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
