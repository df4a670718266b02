"""Compiles under stock torch.compile and with dynscalar, for the scalars models carry.

Each case calls a compiled function or module 12 times with a new value each time and
counts the graphs Dynamo compiles (backend aot_eager; inductor compiles the same graphs).
The docs' FAQ ("When not to use dynscalar") shows this output; tests/test_examples.py
checks that examples/output/stock_vs_marked.txt is what this script prints.

    python examples/stock_vs_marked.py > examples/output/stock_vs_marked.txt
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch

import dynscalar

CALLS = 12


class Counter(torch.nn.Module):
    """An int attribute incremented in forward (the seed model)."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(8, 8)
        self.step = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.step += 1
        return self.layer(x) * self.step


class Scaled(torch.nn.Module):
    """A float attribute that the training loop sets before each call."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(8, 8)
        self.scale = 1.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x) * self.scale


class Decay(torch.nn.Module):
    """A float attribute written inside forward."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(8, 8)
        self.scale = 1.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.scale = self.scale * 0.9
        return self.layer(x) * self.scale


def by_argument(x: torch.Tensor, n: Any) -> torch.Tensor:
    return x * n + 1


def count(make: Callable[[], Any], call: Callable[[Any, int], Any], **compile_kw: Any) -> str:
    """Compile ``make()``, call it CALLS times with a new value each time; count the graphs."""
    from torch._dynamo.backends.registry import lookup_backend

    graphs = 0
    limited = False
    aot_eager = lookup_backend("aot_eager")

    def backend(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        nonlocal graphs
        graphs += 1
        return aot_eager(gm, example_inputs)

    torch._dynamo.reset()
    target = make()
    compiled = torch.compile(target, backend=backend, **compile_kw)
    with _watch_recompile_limit() as hits:
        for i in range(1, CALLS + 1):
            call(compiled, i)
        limited = bool(hits)
    plural = "" if graphs == 1 else "s"
    return f"{graphs} compile{plural}" + (", then eager" if limited else "")


@contextlib.contextmanager
def _watch_recompile_limit() -> Iterator[list[str]]:
    import logging

    hits: list[str] = []

    class Handler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "recompile_limit" in record.getMessage():
                hits.append(record.getMessage())

    handler = Handler(logging.WARNING)
    log = logging.getLogger("torch._dynamo")
    log.addHandler(handler)
    try:
        yield hits
    finally:
        log.removeHandler(handler)


@contextlib.contextmanager
def config(**kw: Any) -> Iterator[None]:
    with torch._dynamo.config.patch(**kw):
        yield


def main() -> None:
    x = torch.randn(2, 8)

    def set_scale(value: float) -> Callable[[Any, int], Any]:
        def call(m: Any, i: int) -> Any:
            m._orig_mod.scale = value * i
            return m(x)

        return call

    def marked(cls: type[torch.nn.Module], *names: str) -> Callable[[], Any]:
        return lambda: dynscalar.mark_dynamic_attr(cls(), *names)

    rows: list[tuple[str, str, str]] = []
    rows.append(
        (
            "int attribute, self.step += 1 in forward",
            count(Counter, lambda m, i: m(x)),
            count(marked(Counter, "step"), lambda m, i: m(x)),
        )
    )
    with config(allow_unspec_int_on_nn_module=True):
        unspec = count(Counter, lambda m, i: m(x))
    dyn_true = count(Counter, lambda m, i: m(x), dynamic=True)
    rows.append(
        (
            "int function argument, f(x, n)",
            count(lambda: by_argument, lambda f, i: f(x, i)),
            count(lambda: by_argument, lambda f, i: f(x, dynscalar.DynamicInt(i))),
        )
    )
    rows.append(
        (
            "float attribute set by the loop",
            count(Scaled, set_scale(0.5)),
            count(marked(Scaled, "scale"), set_scale(0.5)),
        )
    )
    rows.append(
        (
            "float function argument, f(x, 0.5 * i)",
            count(lambda: by_argument, lambda f, i: f(x, 0.5 * i)),
            count(lambda: by_argument, lambda f, i: f(x, dynscalar.DynamicFloat(0.5 * i))),
        )
    )
    rows.append(
        (
            "float attribute written in forward",
            count(Decay, lambda m, i: m(x)),
            count(marked(Decay, "scale"), lambda m, i: m(x)),
        )
    )

    print(f"torch {torch.__version__}, backend aot_eager, {CALLS} calls with a new value each\n")
    header = ("scalar", "stock torch.compile", "dynscalar")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(3)]
    for line in [header, tuple("-" * w for w in widths), *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip())
    print(
        "\nother stock knobs on the int attribute (self.step += 1):\n"
        f"  torch._dynamo.config.allow_unspec_int_on_nn_module = True: {unspec}\n"
        f"  torch.compile(model, dynamic=True): {dyn_true}"
    )


if __name__ == "__main__":
    main()
