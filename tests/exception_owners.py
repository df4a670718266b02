"""Programs in which torch, the user's code or the user's backend raises inside a function
dynscalar wraps, run three ways for ``tests/test_exception_owners.py``:

    python -m tests.exception_owners stock|unmarked|marked

``stock`` never imports dynscalar; ``unmarked`` imports it and marks nothing; ``marked``
marks each scenario's value.  The run prints one JSON line: per scenario the outputs, the
error that reached the program (type and first lines, object addresses removed), every
warning (category and first line), the graphs handed to the backend and the AOTAutograd
cache bypasses torch counted.
"""

from __future__ import annotations

import json
import re
import sys
import warnings
from typing import Any

import torch


class DinoLoss(torch.nn.Module):
    """lightly's DINO loss: a centre buffer updated with ``self.center.data = ...`` inside
    the compiled forward.  torch's AOTAutograd cache key cannot be computed for its graph
    (an ``AttributeError`` torch catches: the cache is bypassed)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("center", torch.zeros(1, 8))
        self.center_momentum = 0.9

    def forward(self, teacher: torch.Tensor, student: torch.Tensor) -> torch.Tensor:
        t = torch.softmax(teacher - self.center, dim=-1)
        loss = -(t * torch.log_softmax(student, dim=-1)).sum(dim=-1).mean()
        batch_center = teacher.mean(dim=0, keepdim=True)
        self.center.data = self.center * self.center_momentum + batch_center * (
            1 - self.center_momentum
        )
        return loss


def dino(mark: str) -> list[Any]:
    torch.manual_seed(0)
    inputs = [(torch.randn(4, 8), torch.randn(4, 8)) for _ in range(3)]
    model, twin = DinoLoss(), DinoLoss()
    if mark == "marked":
        import dynscalar

        dynscalar.mark_dynamic_attr(model, "center_momentum")
    backend = _counter("inductor")
    compiled = torch.compile(model, backend=backend)
    outputs = []
    for step, (teacher, student) in enumerate(inputs):
        model.center_momentum = twin.center_momentum = 0.9 + 0.01 * step
        got, want = compiled(teacher, student), twin(teacher, student)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(model.center, twin.center, rtol=1e-5, atol=1e-6)
        outputs.append(got.tolist())
    return outputs


class Scaled(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = 0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale


def _refusing(gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
    raise RuntimeError("the user's backend refuses every graph")


def user_backend(mark: str) -> list[Any]:
    """A backend of the user's own that raises: Dynamo reports ``BackendCompilerFailed``."""
    model = Scaled()
    if mark == "marked":
        import dynscalar

        dynscalar.mark_dynamic_attr(model, "scale")
    backend = _counter(_refusing)
    torch.compile(model, backend=backend)(torch.ones(3))
    return []


def int_pow(mark: str) -> list[Any]:
    """``int_tensor ** n`` on inductor with ``n`` a symbolic int: inductor's lowering
    raises (``aten::pow() Expected a value of type 'Tensor' for argument 'exponent'``).
    Stock meets it once automatic dynamic makes the changed argument symbolic; a marked
    ``n`` reaches eager's kernel boxed."""

    def f(x: torch.Tensor, n: int) -> torch.Tensor:
        return x**n

    backend = _counter("inductor")
    compiled = torch.compile(f, backend=backend)
    outputs = []
    for n in (3, 4):
        value: Any = n
        if mark == "marked":
            import dynscalar

            value = dynscalar.DynamicInt(n)
        got = compiled(torch.arange(5), value)
        assert torch.equal(got, f(torch.arange(5), n)) and got.dtype == torch.int64
        outputs.append(got.tolist())
    return outputs


#: in this order: the first compile of the process (the user backend's) applies the float path
SCENARIOS = {"user_backend": user_backend, "dino": dino, "int_pow": int_pow}


#: the scenario's counting backend (read after an error too)
_backends: list[Any] = []


def _counter(backend: Any) -> Any:
    from torch._dynamo.testing import CompileCounterWithBackend

    _backends.append(CompileCounterWithBackend(backend))
    return _backends[-1]


def _line(text: str) -> str:
    """The first line, without object addresses (they differ between processes)."""
    return re.sub(r" at 0x[0-9a-f]+", "", text.splitlines()[0] if text else "")


def run(scenario: str, mark: str) -> dict[str, Any]:
    """One scenario, in a process that imported dynscalar unless ``mark`` is ``"stock"``."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    _backends.clear()
    report: dict[str, Any] = {"error": None, "outputs": []}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            report["outputs"] = SCENARIOS[scenario](mark)
        except Exception as error:  # noqa: BLE001 - what reaches the program is the result
            message = " | ".join(str(error).splitlines()[:2])
            report["error"] = [type(error).__name__, _line(message)]
    report["graphs"] = _backends[0].frame_count
    report["warnings"] = sorted({f"{w.category.__name__}: {_line(str(w.message))}" for w in caught})
    report["cache_bypass"] = counters["aot_autograd"]["autograd_cache_bypass"]
    return report


def main(mark: str) -> dict[str, Any]:
    """Every scenario, one after another, in this process."""
    if mark != "stock":
        import dynscalar  # noqa: F401 - imported (and marking, for "marked") is the case
    reports = {name: run(name, mark) for name in SCENARIOS}
    reports["dynscalar imported"] = "dynscalar" in sys.modules  # type: ignore[assignment]
    return reports


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
