"""The exactness matrix: op rules are used only where they compute what eager computes.

* every rule of ``dynscalar.ops.RULES`` has samples, callables torch has, and a custom op
  whose schema is ATen's with the rule's floats as Scalars;
* ``dynscalar/ops/admitted.json`` is current: its ``python`` column is the published run's
  verdicts, and cells computed now are the file's (a slice by default, every cell with
  ``-m broad``); the page is rendered from the published JSON and that file;
* the matrix catches a rule that is not bit-identical (a rounding, a stride, a random
  stream, a gradient), and such a rule is not used: the value is compiled as stock torch
  compiles it, with one warning naming the op and the reason; so is a cell the file does
  not hold (another dtype, torch release or device);
* the library reads the file and never imports the harness.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest
import torch

import dynscalar as ds
from dynscalar import ops
from dynscalar.ops import _admission, _custom, _kernels
from dynscalar.tools.matrix import harness
from dynscalar.tools.matrix.run import DTYPES, python_column
from tests.ops_matrix import render_docs as page

from .helpers import CountingBackend, run_python


def _published() -> dict[str, Any]:
    return json.loads(page.JSON_PATH.read_text())


def _admitted() -> dict[str, Any]:
    return json.loads(_admission.PATH.read_text())  # type: ignore[no-any-return]


def _python_cells() -> dict[str, Any]:
    """The file's python column for the installed torch (the one the suite checks)."""
    name = _admission.column("python", "cpu")
    columns = _admitted()["columns"]
    if name not in columns:
        pytest.fail(f"{_admission.PATH.name} has no {name!r}: python -m tests.ops_matrix")
    return columns[name]["cells"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", sorted(ops.RULES))
def test_every_rule_has_samples_callables_and_a_custom_op(name: str) -> None:
    rule = ops.RULES[name]
    assert name in harness.SAMPLES
    for callable_name in rule.callables:
        assert ops.resolve_callable(callable_name) is not None
    if rule.python == "custom":
        op = _custom.op_for(rule)
        for scalar in rule.scalars:
            argument = next(a for a in op._schema.arguments if a.name == scalar)
            assert str(argument.type) in ("number", "Optional[number]")  # Scalar


def test_the_python_column_is_the_published_runs_verdicts() -> None:
    """Every cell of every rule, callable, measured dtype and gradient mode, as the
    published run decided it (same torch release)."""
    published = _published()
    name = _admission.column("python", "cpu", published["torch"])
    assert _admitted()["columns"][name]["cells"] == harness.verdicts(published["entries"])
    assert published["dtypes"] == [str(d).removeprefix("torch.") for d in DTYPES]


def test_the_admitted_file_is_current_for_a_slice_of_cells() -> None:
    """float32 without gradients, each rule's first callable, computed now: the file's."""
    cells = _python_cells()
    for rule in ops.RULES.values():
        callable_name = rule.callables[0]
        found = harness.verdict(rule, callable_name, torch.float32, False)
        stored = cells[_admission.key(rule, callable_name, torch.float32, False)]
        assert found == (stored["admitted"], stored["why"]), (rule.name, found)


@pytest.mark.broad
def test_the_admitted_file_is_current() -> None:
    """Every cell of the python column, computed now (one to two minutes): the file's."""
    assert harness.verdicts(python_column()) == _python_cells()


def test_the_page_is_rendered_from_the_published_json() -> None:
    assert page.render(_published(), _admitted()) == page.PAGE_PATH.read_text()


def test_every_rule_is_admitted_for_float32_on_python_backends() -> None:
    published = _published()["entries"]
    for entry in published:
        if entry["dtype"] == "float32":
            assert entry["admitted"], entry


def test_the_library_reads_the_file_and_never_imports_the_harness() -> None:
    """A marked dropout ``p`` compiled: admitted (no warning) from the file alone."""
    result = run_python(
        """
        import sys, warnings
        import torch
        import dynscalar
        f = torch.compile(lambda x, p: torch.nn.functional.dropout(x, p), backend="aot_eager")
        with warnings.catch_warnings():
            warnings.simplefilter("error", dynscalar.SpecializationWarning)
            f(torch.ones(4, 4), dynscalar.DynamicFloat(0.25))
        print(sorted(n for n in sys.modules if n.startswith(("tests", "dynscalar.ops._matrix"))
                     or n.endswith("harness")))
        """
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split("\n")[-2] == "[]", result.stdout


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
    outcomes = harness.cell(rule, "torch.dropout", torch.float32, False)
    assert any(not o.agrees and "values differ" in o.detail for o in outcomes)


def test_the_matrix_catches_a_different_random_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """A dropout mask drawn into a contiguous buffer: a transposed input differs."""

    def contiguous(input: torch.Tensor, p: Any, feature: bool, alpha: bool) -> Any:
        noise = torch.empty(input.shape, dtype=input.dtype).bernoulli_(1 - float(p))
        noise.div_(1 - float(p))
        return input.mul(noise), noise

    monkeypatch.setattr(_kernels, "_noise_impl", contiguous)
    outcomes = harness.cell(ops.RULES["dropout"], "torch.dropout", torch.float32, False)
    bad = [o for o in outcomes if not o.agrees]
    assert bad and {o.layout for o in bad} <= {"transposed", "stepped"}


@pytest.mark.inductor
def test_the_inductor_column_measures_random_draws_against_stock_inductor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A random case that draws (``0 < p < 1``) is measured against stock inductor: the
    feature-dropout form passes (ATen's ``bernoulli_`` on the CPU, as stock runs it); a
    form drawing with ``rand_like`` (the one before) draws other masks and leaves the
    generator elsewhere, and is refused."""
    from dynscalar.ops import _tensor
    from dynscalar.tools.matrix import run

    rule = ops.RULES["feature_dropout"]
    x = harness.make((4, 6, 3), torch.float32, "contiguous", torch.Generator().manual_seed(0))

    def call(*args: Any, **kwargs: Any) -> Any:
        return harness._call_torch("torch.feature_dropout", args, kwargs)

    admit = (_admission, "admitted", lambda *a, **k: (True, ""))
    with monkeypatch.context() as patched:
        patched.setattr(*admit)
        assert run._random_case(rule, call, (x, 0.25, True), {}, grad=True) == ""

    def rand_like_draw(like: torch.Tensor, p: Any, generator: Any = None) -> torch.Tensor:
        return like.copy_(torch.rand_like(like, dtype=torch.float64) < p)

    with monkeypatch.context() as patched:
        patched.setattr(*admit)
        patched.setattr(_tensor, "_bernoulli_draw", rand_like_draw)
        why = run._random_case(rule, call, (x, 0.25, True), {}, grad=True)
    assert why.startswith("outputs are not stock inductor's"), why
    torch._dynamo.reset()


def _with_cells(monkeypatch: pytest.MonkeyPatch, change: Any) -> None:
    """The admitted file as ``change(columns)`` leaves a copy of it."""
    columns = json.loads(json.dumps(_admitted()["columns"]))
    change(columns)
    monkeypatch.setattr(_admission, "_columns", lambda: columns)


def _layer_norm_eps(device: str = "cpu") -> tuple[list[str], int]:
    """A LayerNorm with a marked ``eps`` compiled at three values: (the specialization
    warnings, the graphs); each result is eager's."""
    model = ds.mark_dynamic_attr(torch.nn.LayerNorm(6, device=device), "eps")
    eager = torch.nn.LayerNorm(6, device=device)
    counter = CountingBackend("aot_eager")
    compiled = torch.compile(model, backend=counter)
    x = torch.randn(3, 6, device=device)
    with warnings.catch_warnings(record=True) as caught, torch.no_grad():
        warnings.simplefilter("always")
        for eps in (1e-5, 1e-3, 1e-2):
            model.eps = eager.eps = eps
            got, want = compiled(x), eager(x)
            if device != "meta":
                assert torch.equal(got, want)
    messages = [str(w.message) for w in caught if issubclass(w.category, ds.SpecializationWarning)]
    return messages, counter.frame_count


def test_a_rule_the_matrix_refuses_is_compiled_as_stock_torch_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Refused for the call's dtype: specialized (one graph per value), exact, one warning
    naming the op and why."""
    key = _admission.key(ops.RULES["layer_norm"], "torch.layer_norm", torch.float32, False)

    def refuse(columns: dict[str, Any]) -> None:
        cell = {"admitted": False, "why": "injected: values differ"}
        columns[_admission.column("python", "cpu")]["cells"][key] = cell

    _with_cells(monkeypatch, refuse)
    messages, graphs = _layer_norm_eps()
    assert len(messages) == 1 and "torch.layer_norm" in messages[0] and "injected" in messages[0]
    assert graphs == 3


def test_a_cell_the_file_does_not_hold_is_not_admitted(monkeypatch: pytest.MonkeyPatch) -> None:
    key = _admission.key(ops.RULES["layer_norm"], "torch.layer_norm", torch.float32, False)
    _with_cells(monkeypatch, lambda c: c[_admission.column("python", "cpu")]["cells"].pop(key))
    messages, graphs = _layer_norm_eps()
    assert len(messages) == 1, messages
    assert "not measured for float32 without gradients on python" in messages[0]
    assert graphs == 3


def test_a_torch_release_the_file_does_not_hold_is_not_admitted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(torch, "__version__", "2.99.0+cpu")
    rule = ops.RULES["layer_norm"]
    ok, why = _admission.admitted(rule, "torch.layer_norm", torch.float32, False, "python")
    assert not ok and why.startswith("not measured for torch 2.99 on cpu: python cells"), why


def test_a_rule_without_a_gradient_is_decided_by_its_cell_without_one() -> None:
    """Inputs that require grad reach a rule with no gradient (``bernoulli``) as the
    matrix measures it: the cases are the same, none of its inputs requires grad."""
    rule = ops.RULES["bernoulli_p"]
    assert not rule.differentiable
    found = _admission.admitted(rule, "torch.bernoulli", torch.float32, True, "python")
    assert found == (True, "")


def test_a_tensor_on_another_device_is_not_decided_by_cpu_cells() -> None:
    """The file holds CPU cells; a meta (or CUDA) tensor's call is specialized as stock
    torch specializes it, the warning saying the device was not measured."""
    rule = ops.RULES["dropout"]
    assert _admission.admitted(rule, "torch.dropout", torch.float32, False, "python")[0]
    ok, why = _admission.admitted(rule, "torch.dropout", torch.float32, False, "python", "cuda")
    assert not ok and "on cuda: python cells measured for torch" in why, why
    messages, graphs = _layer_norm_eps("meta")
    assert len(messages) == 1 and "on meta: python cells measured" in messages[0], messages
    assert graphs == 3
