"""Ints stay ints: a marked int that reaches a generic or boxed call keeps Python's int
semantics (eager's dtype promotion and exact values).

``int_tensor ** n`` with a ``DynamicInt`` ``n`` used to be boxed with ``n`` handed over as
a float64 0-d tensor and read back as a float, once the process had learned that
``torch.pow`` forces a float (or on the python backends, once a fake call had forced it):
``1003 ** 3`` gave 1009027008.0 (float32) instead of 1009027027 (int64).  The boxed call
now hands an int over as an int64 0-d tensor and reads it back as an int; the generic
rule's call receives it as an int; admission samples an int where the call receives one.

On inductor, torch 2.13 cannot compile ``pow`` with a symbolic int exponent at all (stock
with a dynamic int alike): an integer tensor has no lowering ("Expected a value of type
'Tensor' for argument 'exponent'"), a tensor needing a gradient fails in the backward
("NYI SymInt equality").  Before this change the marked call warned of an internal error
at the first value and raised from the second on; it is now boxed there (eager's kernel,
the int as an int): one graph for every value, equal to eager.

Compile counts for three exponents (stock: plain ints in a process without dynscalar):

=============================  ===============  ======================  ==========
program                        stock            before                  after
=============================  ===============  ======================  ==========
int tensor, eager/aot_eager    2                1                       1
... pow learned as forcing     2                1, float32 (wrong)      1
int tensor, inductor           1, then raises   warning, then raises    1
float with grad, aot_eager     1, then raises   1                       1
float with grad, inductor      1, then raises   warning, then raises    1
=============================  ===============  ======================  ==========
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import pytest
import torch

import dynscalar as ds
from dynscalar._bridge import _ops
from dynscalar.ops import _apply

from .helpers import CountingBackend, run_python

BACKENDS = ["eager", "aot_eager", pytest.param("inductor", marks=pytest.mark.inductor)]
EXPONENTS = (3, 2, 5)


def _int_power(x: torch.Tensor, n: Any) -> torch.Tensor:
    return x**n


def _ints() -> torch.Tensor:
    return torch.tensor([1003, 7, -2, 0])


def _run(backend: str, make: Any, grad: bool) -> int:
    """``x ** DynamicInt(n)`` compiled for each of :data:`EXPONENTS`, beside eager: outputs
    (values and dtype) and gradients identical, no dynscalar warning; the graphs compiled."""
    counter = CountingBackend(backend)
    compiled = torch.compile(_int_power, backend=counter)
    for n in EXPONENTS:
        got_x, want_x = make().requires_grad_(grad), make().requires_grad_(grad)
        with warnings.catch_warnings():
            warnings.simplefilter("error", ds.DynscalarWarning)
            got = compiled(got_x, ds.DynamicInt(n))
        want = _int_power(want_x, n)
        assert got.dtype == want.dtype, (n, got.dtype)
        assert torch.equal(got, want), (n, got, want)
        if grad:
            got.sum().backward()
            want.sum().backward()
            assert torch.equal(got_x.grad, want_x.grad), n
    return counter.frame_count


@pytest.fixture
def learned() -> Iterator[None]:
    """The process has learned that ``torch.pow`` forces its value (on inductor: boxed
    from then on; on the python backends: traced as ``dynscalar::apply``), as a float's
    compile teaches it (``torch._dynamo.reset()`` forgets it: reset first); forgotten
    afterwards."""
    torch._dynamo.reset()
    added = [s for s in (_ops._forcing_inductor, _ops._forcing) if "torch.pow" not in s]
    for names in added:
        names.add("torch.pow")
    try:
        yield
    finally:
        for names in added:
            names.discard("torch.pow")


@pytest.mark.parametrize("backend", BACKENDS)
def test_int_tensor_to_a_marked_int_after_pow_was_learned_is_int64_and_exact(
    backend: str, learned: None
) -> None:
    """The issue's case: ``torch.pow`` learned as forcing, then ``int_tensor ** n``.
    Before: float32 and 1009027008 for ``1003 ** 3`` on every backend (one graph); now
    int64 and eager's values, one graph for three exponents."""
    assert _run(backend, _ints, grad=False) == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_int_tensor_to_a_marked_int_is_int64_and_exact(backend: str) -> None:
    """Nothing learned: eager and aot_eager trace the power symbolically (one graph, as
    before); inductor boxes it (before: an internal-error warning at 3, then torch's
    lowering error from 2 on, as stock with a dynamic int)."""
    torch._dynamo.reset()
    assert _run(backend, _ints, grad=False) == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_float_tensor_with_gradient_to_a_marked_int_is_one_graph(backend: str) -> None:
    """``x ** n`` with ``x`` requiring grad: on the python backends the generic rule's call
    (the int handed over as an int); on inductor, where stock's backward fails for a
    dynamic int ("NYI SymInt equality", from the second value on, as before with the
    mark), boxed.  Outputs and gradients equal eager's, one graph."""
    torch._dynamo.reset()

    def floats() -> torch.Tensor:
        return torch.linspace(0.5, 2.0, 6, dtype=torch.float32)

    assert _run(backend, floats, grad=True) == 1


@pytest.mark.inductor
def test_what_stock_torch_does_with_a_changing_int_power() -> None:
    """The same programs in a process that never imports dynscalar (plain ints, torch's
    automatic dynamic): eager and aot_eager compile twice for three exponents (a constant,
    then a dynamic int); aot_eager with a gradient, and inductor, raise from the second
    value on.  Marked (the tests above): one graph each, eager's numbers, no error."""
    done = run_python(
        """
        import torch
        from torch._dynamo.testing import CompileCounterWithBackend
        for backend in ("eager", "aot_eager", "inductor"):
            for dtype, grad in ((torch.int64, False), (torch.float32, True)):
                torch._dynamo.reset()
                c = CompileCounterWithBackend(backend)
                f = torch.compile(lambda x, n: x ** n, backend=c)
                seen = []
                for n in (3, 2, 5):
                    x = torch.tensor([3, 7, -2, 0]).to(dtype).requires_grad_(grad)
                    try:
                        out = f(x, n)
                        if grad:
                            out.sum().backward()
                        seen.append(str(c.frame_count))
                    except Exception:
                        seen.append("raises")
                        break
                print(backend, str(dtype), *seen)
        """
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:6] == [
        "eager torch.int64 1 2 2",
        "eager torch.float32 1 2 2",
        "aot_eager torch.int64 1 2 2",
        "aot_eager torch.float32 1 raises",
        "inductor torch.int64 1 raises",
        "inductor torch.float32 1 raises",
    ], done.stdout


def test_admission_samples_an_int_where_the_call_receives_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The boxed call's admission samples ints for an int (the traced one and the special
    ones), so a kernel that reads the int back as a float (the old ``_unboxed``) is
    refused: its outputs are float32 where eager's are int64."""
    template = _apply.Template("torch.pow", (("tensor", 0), ("scalar", 0)), (), "tensor")
    key = _apply.register(template)
    x = torch.tensor([1003, 7, -2])
    assert all(type(v) is int for case in _apply._cases([3]) for v in case)
    assert all(type(v) is float for case in _apply._cases([3.0]) for v in case)
    assert _apply.admitted(key, [x], [3], False, boxed=True) == (True, "")

    def as_floats(scalars: Any) -> list[float]:
        return [float(s.item() if isinstance(s, torch.Tensor) else s) for s in scalars]

    monkeypatch.setattr(_apply, "_unboxed", as_floats)
    monkeypatch.setattr(_apply, "_memo", {})
    ok, why = _apply.admitted(key, [x], [3], False, boxed=True)
    assert not ok and "outputs differ" in why, why
