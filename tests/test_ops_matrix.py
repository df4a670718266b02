"""The exactness matrix: op rules are used only where they compute what eager computes.

* every rule of ``dynscalar.ops.RULES`` has samples, callables torch has, and a custom op
  whose schema is ATen's with the rule's floats as Scalars;
* a fast slice of the matrix agrees with the published run (so the op-coverage page, which
  is rendered from it, says what the code does), and the page is rendered from the JSON;
* the matrix catches a rule that is not bit-identical (a rounding, a stride, a random
  stream, a gradient), and such a rule is not used: the value is compiled as stock torch
  compiles it, with one warning naming the op and the reason;
* the inductor pairs (``clamp`` -> ``clamp.Tensor``) are admitted only where exact.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest
import torch

import dynscalar as ds
from dynscalar import ops
from dynscalar.ops import _custom, _kernels, _matrix
from tests.ops_matrix import render_docs as page
from tests.ops_matrix.run import python_column

from .helpers import CountingBackend


def _published() -> dict[str, Any]:
    return json.loads(page.JSON_PATH.read_text())


@pytest.mark.parametrize("name", sorted(ops.RULES))
def test_every_rule_has_samples_callables_and_a_custom_op(name: str) -> None:
    rule = ops.RULES[name]
    assert name in _matrix.SAMPLES
    for callable_name in rule.callables:
        assert _matrix.resolve_callable(callable_name) is not None
    if rule.python == "custom":
        op = _custom.op_for(rule)
        for scalar in rule.scalars:
            argument = next(a for a in op._schema.arguments if a.name == scalar)
            assert str(argument.type) in ("number", "Optional[number]")  # Scalar


@pytest.mark.broad
def test_a_fast_slice_agrees_with_the_published_run() -> None:
    """float32 and bfloat16 cells of every rule, computed now, are the published ones."""

    def key(e: dict[str, Any]) -> tuple[Any, ...]:
        return (e["rule"], e["callable"], e["dtype"], e["grad"], e["checkpointed"])

    published = {key(e): e for e in _published()["entries"]}
    for entry in python_column(dtypes=(torch.float32, torch.bfloat16)):
        want = published[key(entry)]
        assert (entry["cases"], entry["agree"]) == (want["cases"], want["agree"]), entry


def test_the_page_is_rendered_from_the_published_json() -> None:
    inductor = json.loads(page.INDUCTOR_PATH.read_text()) if page.INDUCTOR_PATH.exists() else {}
    assert page.render(_published(), inductor) == page.PAGE_PATH.read_text()


def test_every_rule_is_admitted_for_float32_on_python_backends() -> None:
    published = _published()["entries"]
    for entry in published:
        if entry["dtype"] == "float32":
            assert entry["admitted"], entry


# ----------------------------------------------------------------------------- catching
def test_the_matrix_catches_a_rounding_difference(monkeypatch: pytest.MonkeyPatch) -> None:
    """A dropout whose scale is off in the last bits (a rounding of its own)."""
    original = _kernels._noise_impl

    def rounded(input: torch.Tensor, p: Any, feature: bool, alpha: bool) -> Any:
        _, noise = original(input, p, feature, alpha)
        noise = noise * (1.0 + 2.0**-20)
        return input.mul(noise), noise

    monkeypatch.setattr(_kernels, "_noise_impl", rounded)
    rule = ops.RULES["dropout"]
    outcomes = _matrix.cell(rule, "torch.dropout", torch.float32, False)
    assert any(not o.agrees and "values differ" in o.detail for o in outcomes)


def test_the_matrix_catches_a_different_random_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """A dropout mask drawn into a contiguous buffer: a transposed input differs."""

    def contiguous(input: torch.Tensor, p: Any, feature: bool, alpha: bool) -> Any:
        noise = torch.empty(input.shape, dtype=input.dtype).bernoulli_(1 - float(p))
        noise.div_(1 - float(p))
        return input.mul(noise), noise

    monkeypatch.setattr(_kernels, "_noise_impl", contiguous)
    outcomes = _matrix.cell(ops.RULES["dropout"], "torch.dropout", torch.float32, False)
    bad = [o for o in outcomes if not o.agrees]
    assert bad and {o.layout for o in bad} <= {"transposed", "stepped"}


def test_a_rule_the_matrix_refuses_is_compiled_as_stock_torch_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Refused for the call's dtype: specialized (one graph per value), exact, one warning
    naming the op and why."""
    monkeypatch.setattr(_matrix, "_memo", {})
    key = (ops.RULES["layer_norm"].name, "torch.layer_norm", torch.float32, False)
    _matrix._memo[key] = (False, "injected: values differ")
    model = ds.mark_dynamic_attr(torch.nn.LayerNorm(6), "eps")
    eager = torch.nn.LayerNorm(6)
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(model, backend=counter)
    x = torch.randn(3, 6)
    with warnings.catch_warnings(record=True) as caught, torch.no_grad():
        warnings.simplefilter("always")
        for eps in (1e-5, 1e-3, 1e-2):
            model.eps = eager.eps = eps
            assert torch.equal(compiled(x), eager(x))
    messages = [str(w.message) for w in caught if issubclass(w.category, ds.SpecializationWarning)]
    assert len(messages) == 1 and "torch.layer_norm" in messages[0] and "injected" in messages[0]
    assert counter.frame_count == 3
