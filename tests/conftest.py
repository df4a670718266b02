"""Shared test helpers: a counting backend and a compiled-vs-eager runner.

Every compile test in this suite follows one rule: run the compiled model and an eager
twin side by side on the same inputs, compare every output (and gradients when
training), and assert the exact number of graphs the backend compiled.
"""

from __future__ import annotations

import copy
import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

# One inductor cache for the whole session (cold inductor compiles cost ~5-12 s here).
os.environ.setdefault(
    "TORCHINDUCTOR_CACHE_DIR", os.path.join(tempfile.gettempdir(), "dynscalar-test-inductor")
)

import torch

import dynscalar

# Fixture projects are scripts the doctor runs in a subprocess, not test modules (and with
# --doctest-modules, importing them would run them).
collect_ignore_glob = ["fixtures/*"]


@dataclass
class CountingBackend:
    """A torch.compile backend that counts the graphs handed to the real backend."""

    name: str
    graphs: int = 0
    calls: list[Any] = field(default_factory=list)

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        from torch._dynamo.backends.registry import lookup_backend

        self.graphs += 1
        return lookup_backend(self.name)(gm, example_inputs)


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> Iterator[None]:
    """Each test starts from stock Dynamo state and empty dynscalar caches (marks are not
    caches: they stay on the objects the test made)."""
    from dynscalar._caches import reset_caches

    torch._dynamo.reset()
    reset_caches()
    yield
    torch._dynamo.reset()
    reset_caches()


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
    eager = copy.deepcopy(model)
    for name, value in list(vars(eager).items()):
        if dynscalar.is_dynamic_scalar(value):
            setattr(eager, name, value.value)
    eager.__dict__.pop("_dynscalar_marks", None)
    return model, eager
