"""Shared test helpers: a counting backend, a compiled-vs-eager runner, fresh interpreters.

Every compile test in this suite follows one rule: run the compiled model and an eager
twin side by side on the same inputs, compare every output (and gradients when
training), and assert the exact number of graphs the backend compiled
(``CountingBackend(name).frame_count``).

Tests that need a fresh process (import-time behaviour, environment variables torch reads
once, a process that never imports dynscalar) use :func:`run_python` or
:func:`run_interpreter`.

This module does not import dynscalar at import time: the stock-torch processes of
``tests/harm_scenarios.py`` and ``tests/fuzz`` import it too.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch._dynamo.testing import CompileCounterWithBackend

#: the checkout: fresh interpreters run from here and import its dynscalar
ROOT = Path(__file__).resolve().parents[1]

#: the installed torch's (major, minor)
TORCH_RELEASE = tuple(int(part) for part in torch.__version__.split(".")[:2])

# Stock torch's own compile counts that changed in 2.15, for tests that count graphs:
#: the float-tensorify pass specializes a float it cannot lower through a restart (exact,
#: one compile per value, the backend called twice for that graph) where 2.13 and 2.14
#: baked it into the graph (pytorch#194976), and clamp_min/clamp_max became lowerable
TENSORIFY_RESTARTS_INSTEAD_OF_BAKING = TORCH_RELEASE >= (2, 15)
#: a graph that computes and returns nothing (every output an input or a constant once
#: pruned: a resume function's part before a call that graph-breaks) is no longer handed
#: to the backend (``is_noop_graph`` in torch/_dynamo/output_graph.py)
NOOP_GRAPHS_NOT_COMPILED = TORCH_RELEASE >= (2, 15)

#: A torch.compile backend that counts the graphs handed to the real backend named at
#: construction: ``frame_count`` is that number (restarts included), ``graphs`` the graphs.
CountingBackend = CompileCounterWithBackend


#: A step counter module ``M`` (and the imports it needs), for code run by :func:`run_python`.
COUNTER_SOURCE = """
import torch, dynscalar
class M(torch.nn.Module):
    def __init__(self):
        super().__init__(); self.step = 0
    def forward(self, x):
        self.step += 1
        return x * self.step
"""


def _forward(gm: torch.fx.GraphModule, example_inputs: Any) -> Callable[..., Any]:
    return gm.forward


def _user_aot() -> Any:
    from torch._dynamo.backends.common import aot_autograd

    return aot_autograd(fw_compiler=_forward)


#: An AOTAutograd backend of a user's own, which dynscalar knows nothing about (it knows
#: eager, aot_eager and inductor): there a marked float that reaches an op through torch's
#: float-tensorify pass takes stock torch's path (specialized where the pass cannot lower
#: it), as on inductor without an admitted rule, at aot_eager's compile cost.
USER_AOT = _user_aot()


def run_side_by_side(
    compiled: Callable[..., Any],
    eager: Callable[..., Any],
    calls: int,
    make_input: Callable[[int], tuple[Any, ...]] | None = None,
) -> None:
    """Call both ``calls`` times with the same inputs; outputs must match exactly."""
    for i in range(calls):
        args = make_input(i) if make_input else (torch.randn(3, 4),)
        got = compiled(*args)
        want = eager(*args)
        torch.testing.assert_close(
            got, want, rtol=1e-5, atol=1e-6, msg=lambda m, i=i: f"call {i}: {m}"
        )


def twins(model: torch.nn.Module) -> tuple[torch.nn.Module, torch.nn.Module]:
    """An eager twin with identical parameters and plain (unmarked) scalars."""
    import dynscalar

    eager = copy.deepcopy(model)
    for name, value in list(vars(eager).items()):
        if dynscalar.is_dynamic_scalar(value):
            setattr(eager, name, value.value)
    eager.__dict__.pop("_dynscalar_marks", None)
    return model, eager


def run_interpreter(
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: str | Path = ROOT,
    input: str | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """``python *args`` in a fresh interpreter (this one's ``sys.executable``), text output
    captured, the exit status left to the caller.

    It runs in ``cwd`` (the checkout by default) with the checkout first on ``PYTHONPATH``,
    so it imports the dynscalar under test whatever the current folder.  ``env`` replaces
    the environment (default: this process's).
    """
    environ = dict(os.environ if env is None else env)
    environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [environ.get("PYTHONPATH")])])
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=environ,
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def run_python(
    code: str,
    *,
    flags: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    cwd: str | Path = ROOT,
    input: str | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` (dedented) as ``python *flags -c code`` in a fresh interpreter; see
    :func:`run_interpreter` for the rest."""
    return run_interpreter(
        *flags, "-c", textwrap.dedent(code), env=env, cwd=cwd, input=input, timeout=timeout
    )


__all__ = [
    "ROOT",
    "CountingBackend",
    "run_interpreter",
    "run_python",
    "run_side_by_side",
    "twins",
]
