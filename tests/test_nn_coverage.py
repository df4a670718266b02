"""torch.nn float hyperparameters under dynscalar: the coverage table, row by row.

Every row of ``tests.nn_coverage`` (the same catalogue and runner that write
``docs/nn-coverage.md``) compiles on ``eager`` and ``aot_eager`` exactly as often as the
catalogue says and equals eager within the row's tolerance; a few rows also on inductor.
The second half checks the decompositions of ``dynscalar/_bridge/_nn.py`` against the ATen
ops they replace, eagerly, across dtypes and at their edges.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from dynscalar._bridge import _nn
from tests.nn_coverage import catalogue as cov
from tests.nn_coverage import render_docs as page
from tests.nn_coverage import runner

ROOT = Path(__file__).resolve().parents[1]


ROWS = cov.catalogue()


@pytest.fixture(autouse=True, scope="module")
def _one_thread() -> Iterator[None]:
    """One torch thread: on a shared 2-core machine two made tiny steps ~80x slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _published() -> dict[str, Any]:
    return json.loads(page.JSON_PATH.read_text())


def _check(row: Any, result: Any, backend: str) -> None:
    assert result.error is None, result.error
    assert result.failures == [], result.failures
    assert result.compiles == row.expected(backend), result.per_call
    if backend in row.specialized:
        assert result.warnings, "a specialized row warns"
        assert all(w.startswith("SpecializationWarning") for w in result.warnings)
    else:
        assert result.warnings == []
        if row.compiles == 1:
            assert result.per_call[0] == result.compiles, "nothing compiles after the first value"


# --------------------------------------------------------------------------- the table's rows


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("row", ROWS, ids=lambda row: row.id)
def test_row(row: Any, backend: str) -> None:
    _check(row, runner.run_row(row, backend), backend)


INDUCTOR_ROWS = ["dropout", "layernorm", "crossentropy-ignore", "batchnorm1d-momentum-train"]


@pytest.mark.inductor
@pytest.mark.parametrize("row_id", INDUCTOR_ROWS)
def test_row_on_inductor(row_id: str) -> None:
    """The published run's inductor tolerance for the row (measured against stock there)."""
    row = cov.ROWS[row_id]
    entry = {e["id"]: e for e in _published()["rows"]}[row_id]
    tol = entry["inductor_tolerance"]
    _check(row, runner.run_row(row, "inductor", tolerance=(tol["rtol"], tol["atol"])), "inductor")


def test_catalogue_and_published_table_agree() -> None:
    """Same rows, values and attributes; the published compiles are the catalogue's."""
    data = _published()
    assert [e["id"] for e in data["rows"]] == [row.id for row in ROWS]
    for row, entry in zip(ROWS, data["rows"], strict=True):
        assert entry["attrs"] == list(row.attrs) and entry["values"] == list(row.values)
        assert entry["tolerance"] == list(runner.eager_tolerance(row)), row.id
        for backend, result in entry["backends"].items():
            assert result["compiles"] == row.expected(backend), (row.id, backend)
            assert result["equal"], (row.id, backend, result["failures"])
    assert data["tolerances"] == {op: list(v) for op, v in sorted(_nn.TOLERANCES.items())}


def test_published_page_is_rendered_from_the_published_json() -> None:
    assert page.render(_published()) == page.PAGE_PATH.read_text()


def test_published_table_meets_the_coverage_target() -> None:
    """>= 90% of rows compile once on aot_eager and on inductor; every row equal to eager."""
    data = _published()
    rows = data["rows"]
    for backend in ("aot_eager", "inductor"):
        once = sum(page.compiled_once(e["backends"][backend]) for e in rows)
        assert once >= 0.9 * len(rows), (backend, once, len(rows))
    assert all(e["status"] != "NOT EQUAL" and e["status"] != "error" for e in rows)


def test_render_is_stable() -> None:
    data = _published()
    assert page.render(json.loads(json.dumps(data))) == page.render(data)


def test_command_line_measures_rows_and_merges_them(tmp_path: Path) -> None:
    """``python -m tests.nn_coverage``: the JSON and the page for the rows asked for, and
    ``--merge`` re-measures a row into an existing JSON in catalogue order."""
    from tests.nn_coverage.__main__ import main

    out, md = tmp_path / "nn.json", tmp_path / "nn.md"
    common = ["--backends", "eager", "--no-stock", "--out", str(out), "--page", str(md)]
    assert main([*common, "--rows", "elu,dropout"]) == 0
    data = json.loads(out.read_text())
    assert [e["id"] for e in data["rows"]] == ["elu", "dropout"]
    assert all(e["status"] == "dynamic, equal" for e in data["rows"])
    assert md.read_text() == page.render(data, "nn.json")
    assert main([*common, "--rows", "leakyrelu", "--merge"]) == 0
    merged = json.loads(out.read_text())
    assert [e["id"] for e in merged["rows"]] == ["dropout", "leakyrelu", "elu"]
    assert merged["partial_runs"][0]["rows"] == ["leakyrelu"]
    with pytest.raises(SystemExit):
        main([*common, "--merge"])


# --------------------------------------------------------------------------- decompositions


def _inputs(*shapes: tuple[int, ...], scale: float = 1.0) -> Callable[[torch.dtype], list[Any]]:
    def make(dtype: torch.dtype) -> list[Any]:
        g = torch.Generator().manual_seed(1)
        return [(torch.randn(s, generator=g) * scale).to(dtype) for s in shapes]

    return make


ACT = _inputs((64, 33), scale=3.0)

# (name, op, decomposition, inputs, tolerance key)
CASES: list[tuple[str, Callable[..., Any], Callable[..., Any], Any, str | None]] = [
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.17), lambda x: _nn.leaky_relu(x, 0.17), ACT, None),
    ("rrelu", lambda x: F.rrelu(x, 0.1, 0.3), lambda x: _nn.rrelu(x, 0.1, 0.3), ACT, None),
    ("elu", lambda x: F.elu(x, 0.7), lambda x: _nn.elu(x, 0.7), ACT, "elu"),
    ("celu", lambda x: F.celu(x, 0.7), lambda x: _nn.celu(x, 0.7), ACT, "celu"),
    (
        "softplus",
        lambda x: F.softplus(x, 1.3, 5.0),
        lambda x: _nn.softplus(x, 1.3, 5.0),
        ACT,
        "softplus",
    ),
    (
        "hardtanh",
        lambda x: F.hardtanh(x, -0.7, 1.3),
        lambda x: _nn.hardtanh(x, -0.7, 1.3),
        ACT,
        None,
    ),
    (
        "threshold",
        lambda x: F.threshold(x, 0.3, -2.0),
        lambda x: _nn.threshold(x, 0.3, -2.0),
        ACT,
        None,
    ),
    ("hardshrink", lambda x: F.hardshrink(x, 0.3), lambda x: _nn.hardshrink(x, 0.3), ACT, None),
    ("softshrink", lambda x: F.softshrink(x, 0.3), lambda x: _nn.softshrink(x, 0.3), ACT, None),
    (
        "layer_norm",
        lambda x, w, b: F.layer_norm(x, (16,), w, b, 1e-3),
        lambda x, w, b: _nn.layer_norm(x, (16,), w, b, 1e-3),
        _inputs((8, 5, 16), (16,), (16,)),
        "layer_norm",
    ),
    (
        "group_norm",
        lambda x, w, b: F.group_norm(x, 3, w, b, 1e-3),
        lambda x, w, b: _nn.group_norm(x, 3, w, b, 1e-3),
        _inputs((8, 6, 5, 3), (6,), (6,)),
        "group_norm",
    ),
    (
        "rms_norm",
        lambda x, w: F.rms_norm(x, (16,), w, 1e-3),
        lambda x, w: _nn.rms_norm(x, (16,), w, 1e-3),
        _inputs((8, 5, 16), (16,)),
        "rms_norm",
    ),
    (
        "pairwise_distance",
        lambda a, b: F.pairwise_distance(a, b, 3.0, 0.1, True),
        lambda a, b: _nn.pairwise_distance(a, b, 3.0, 0.1, True),
        _inputs((16, 8), (8,)),
        None,
    ),
    (
        "poisson_nll_loss",
        lambda a, b: F.poisson_nll_loss(a.abs() + 0.1, b.abs() * 4, False, True, eps=0.1),
        lambda a, b: _nn.poisson_nll_loss(a.abs() + 0.1, b.abs() * 4, False, True, 0.1, 1),
        _inputs((16, 4), (16, 4)),
        None,
    ),
    (
        "huber_loss",
        lambda a, b: F.huber_loss(a, b, delta=0.7),
        lambda a, b: _nn.huber_loss(a, b, 1, 0.7),
        _inputs((64, 9), (64, 9), scale=2.0),
        "huber_loss",
    ),
    (
        "clamp",
        lambda x: torch.clamp(x, 0.9, 1.1),
        lambda x: _nn.clamp(x, 0.9, 1.1),
        _inputs((64, 9), scale=0.2),
        None,
    ),
    ("clamp_min", lambda x: x.clamp_min(-0.3), lambda x: _nn.clamp_min(x, -0.3), ACT, None),
    ("clamp_max", lambda x: x.clamp_max(0.7), lambda x: _nn.clamp_max(x, 0.7), ACT, None),
    (
        "lerp",
        lambda a, b: torch.lerp(a, b, 0.13),
        lambda a, b: _nn.lerp(a, b, 0.13),
        _inputs((64, 9), (64, 9)),
        None,
    ),
    (
        "lerp_large_weight",
        lambda a, b: torch.lerp(a, b, 0.7),
        lambda a, b: _nn.lerp(a, b, 0.7),
        _inputs((64, 9), (64, 9)),
        None,
    ),
    (
        "sdpa",
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, scale=0.3),
        lambda q, k, v: _nn.scaled_dot_product_attention(q, k, v, scale=0.3),
        _inputs((2, 3, 5, 8), (2, 3, 6, 8), (2, 3, 6, 8)),
        "scaled_dot_product_attention",
    ),
]

#: element-wise ops whose ATen kernels round half/bfloat16 once: exact there too
REDUCED_EXACT = {
    "leaky_relu",
    "rrelu",
    "elu",
    "celu",
    "softplus",
    "hardtanh",
    "threshold",
    "hardshrink",
    "softshrink",
}


def _run(fn: Callable[..., Any], inputs: list[Any]) -> tuple[torch.Tensor, list[torch.Tensor]]:
    leaves = [x.detach().clone().requires_grad_() for x in inputs]
    out = fn(*leaves)
    g = torch.Generator().manual_seed(2)
    (out * torch.randn(out.shape, generator=g).to(out.dtype)).sum().backward()
    return out.detach(), [x.grad for x in leaves]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_decomposition_matches_op(case: Any, dtype: torch.dtype) -> None:
    _, op, dec, make, key = case
    rtol, atol = (_nn.TOLERANCES[key][:2]) if key in _nn.TOLERANCES else (0.0, 0.0)
    inputs = make(dtype)
    (want, want_grads), (got, got_grads) = _run(op, inputs), _run(dec, inputs)
    torch.testing.assert_close(got, want, rtol=rtol, atol=atol)
    for a, b in zip(got_grads, want_grads, strict=True):
        torch.testing.assert_close(a, b, rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("case", [c for c in CASES if c[0] in REDUCED_EXACT], ids=lambda c: c[0])
def test_elementwise_decomposition_rounds_like_aten_in_half_precision(
    case: Any, dtype: torch.dtype
) -> None:
    """Computed in float32 and rounded once (scalars compared as ATen compares them)."""
    name, op, dec, make, _ = case
    inputs = make(dtype)
    (want, want_grads), (got, got_grads) = _run(op, inputs), _run(dec, inputs)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    if name not in ("elu", "celu", "softplus"):  # their gradients: see TOLERANCES
        torch.testing.assert_close(got_grads, want_grads, rtol=0, atol=0)


def test_threshold_compares_like_aten_in_bfloat16() -> None:
    """0.30078125 is bfloat16(0.3): ATen compares in float32, so it is above 0.3."""
    x = torch.tensor([0.30078125, 0.25], dtype=torch.bfloat16)
    assert torch.equal(_nn.threshold(x, 0.3, -2.0), F.threshold(x, 0.3, -2.0))


@pytest.mark.parametrize("fn", [lambda x: _nn.elu(x, 0.7), lambda x: _nn.softplus(x, 2.0, 20.0)])
def test_large_inputs_have_finite_gradients(fn: Callable[..., Any]) -> None:
    """exp() of the branch torch.where does not select must not overflow into a nan gradient."""
    x = torch.tensor([-200.0, -1.0, 0.0, 1.0, 50.0, 100.0, 200.0], requires_grad=True)
    fn(x).sum().backward()
    assert x.grad is not None and bool(x.grad.isfinite().all()), x.grad


@pytest.mark.parametrize("bounds", [(0.0, 6.0), (-1.0, 1.0)])
def test_hardtanh_gradient_is_zero_at_the_bounds(bounds: tuple[float, float]) -> None:
    """hardtanh_backward: 0 where x <= min_val or x >= max_val (ReLU6 at 0)."""
    x = torch.tensor([bounds[0], -0.5, 0.5, bounds[1], 7.0])
    (want, want_grad), (got, got_grad) = (
        _run(lambda t: F.hardtanh(t, *bounds), [x]),
        _run(lambda t: _nn.hardtanh(t, *bounds), [x]),
    )
    assert torch.equal(got, want) and torch.equal(got_grad[0], want_grad[0])


def test_hardtanh_clamps_like_aten_when_min_exceeds_max() -> None:
    x = torch.tensor([-2.0, 0.5, 2.0])
    assert torch.equal(_nn.hardtanh(x, 1.0, 0.0), torch._C._nn.hardtanh(x, 1.0, 0.0))


@pytest.mark.parametrize("scale", [-0.3, 0.3])
def test_sdpa_scale_of_either_sign(scale: float) -> None:
    q, k, v = _inputs((2, 3, 5, 8), (2, 3, 6, 8), (2, 3, 6, 8))(torch.float32)
    rtol, atol, _ = _nn.TOLERANCES["scaled_dot_product_attention"]
    torch.testing.assert_close(
        _nn.scaled_dot_product_attention(q, k, v, scale=scale),
        F.scaled_dot_product_attention(q, k, v, scale=scale),
        rtol=rtol,
        atol=atol,
    )


def test_sdpa_fully_masked_row_is_zero_with_zero_gradient() -> None:
    """ATen's _safe_softmax: an all -inf row gives 0 and a 0 gradient, not nan."""
    q, k, v = _inputs((1, 1, 3, 4), (1, 1, 3, 4), (1, 1, 3, 4))(torch.float32)
    mask = torch.ones(3, 3, dtype=torch.bool)
    mask[0] = False
    (want, want_grads), (got, got_grads) = (
        _run(lambda *t: F.scaled_dot_product_attention(*t, attn_mask=mask, scale=0.5), [q, k, v]),
        _run(lambda *t: _nn.scaled_dot_product_attention(*t, attn_mask=mask, scale=0.5), [q, k, v]),
    )
    rtol, atol, _ = _nn.TOLERANCES["scaled_dot_product_attention"]
    torch.testing.assert_close(got, want, rtol=rtol, atol=atol)
    torch.testing.assert_close(got_grads, want_grads, rtol=rtol, atol=atol)
    assert not math.isnan(float(sum(g.sum() for g in got_grads)))


def test_clamp_gradient_at_the_bounds_is_the_installed_torchs_and_max_wins() -> None:
    """clamp_backward passes the gradient where min <= x <= max on torch 2.13 and strictly
    inside on 2.15 (asked of the kernel); min > max gives max."""
    x = torch.tensor([0.5, 0.9, 1.0, 1.1, 1.5])
    (want, want_grad), (got, got_grad) = (
        _run(lambda t: torch.clamp(t, 0.9, 1.1), [x]),
        _run(lambda t: _nn.clamp(t, 0.9, 1.1), [x]),
    )
    assert torch.equal(got, want) and torch.equal(got_grad[0], want_grad[0])
    assert torch.equal(_nn.clamp(x, 1.2, 0.8), torch.clamp(x, 1.2, 0.8))
    nan = torch.tensor([float("nan"), 2.0])
    torch.testing.assert_close(_nn.clamp(nan, 0.0, 1.0), torch.clamp(nan, 0.0, 1.0), equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_pow_of_a_scalar_base_matches_aten(dtype: torch.dtype) -> None:
    """Adam's ``beta ** step``: the same values; a differentiable exponent keeps torch's op
    (ATen's exponent gradient takes log of the double Scalar)."""
    e = torch.linspace(-4.0, 9.0, 27, dtype=dtype)
    assert torch.equal(_nn.pow(0.999, e), torch.pow(0.999, e))
    grad_e = e.clone().requires_grad_()
    (want, want_grad), (got, got_grad) = (
        _run(lambda t: torch.pow(0.999, t), [grad_e]),
        _run(lambda t: _nn.pow(0.999, t), [grad_e]),
    )
    assert torch.equal(got, want) and torch.equal(got_grad[0], want_grad[0])


@pytest.mark.parametrize("dtype", [torch.int64, torch.bfloat16, torch.float16], ids=str)
def test_clamp_of_other_dtypes_is_torchs_own(dtype: torch.dtype) -> None:
    """Int tensors promote with a float bound; half precision compares as the installed
    kernel does (2.14 changed clamp_min's): both keep torch's op."""
    x = torch.linspace(-3, 3, 13).to(dtype)
    for lo, hi in ((-1.5, 1.3), (-0.3, None), (None, 0.7)):
        assert torch.equal(_nn.clamp(x, lo, hi), torch.clamp(x, lo, hi))


# --------------------------------------------------------------------------- random ops
#: where torch's CPU kernel draws bernoulli(p) from one double uniform per element (not
#: through MKL's stream), the decompositions draw exactly eager's numbers
ATEN_BERNOULLI_DRAWS_DOUBLES = _nn.bernoulli_matches_eager()


def _drawn(fn: Callable[[], torch.Tensor], seed: int = 3) -> torch.Tensor:
    torch.manual_seed(seed)
    return fn()


RANDOM_CASES: list[tuple[str, Callable[[torch.Tensor], Any], Callable[[torch.Tensor], Any]]] = [
    ("bernoulli_", lambda x: x.clone().bernoulli_(0.3), lambda x: _nn.bernoulli_(x.clone(), 0.3)),
    ("bernoulli", lambda x: torch.bernoulli(x, 0.7), lambda x: _nn.bernoulli(x, 0.7)),
    ("dropout", lambda x: F.dropout(x, 0.3), lambda x: _nn.dropout(x, 0.3, True)),
    (
        "dropout2d",
        lambda x: F.dropout2d(x, 0.3),
        lambda x: _nn.feature_dropout(x, 0.3, True),
    ),
    (
        "alpha_dropout",
        lambda x: F.alpha_dropout(x, 0.3, True),
        lambda x: _nn.alpha_dropout(x, 0.3, True),
    ),
    (
        "feature_alpha_dropout",
        lambda x: F.feature_alpha_dropout(x, 0.3, True),
        lambda x: _nn.feature_alpha_dropout(x, 0.3, True),
    ),
]


@pytest.mark.skipif(
    not ATEN_BERNOULLI_DRAWS_DOUBLES,
    reason="this torch build draws bernoulli through MKL on this CPU (docs/how-it-works.md)",
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
@pytest.mark.parametrize("case", RANDOM_CASES, ids=lambda c: c[0])
def test_random_decomposition_draws_eagers_numbers(case: Any, dtype: torch.dtype) -> None:
    _, op, dec = case
    x = torch.randn(6, 5, 4, 3).to(dtype)
    assert torch.equal(_drawn(lambda: dec(x)), _drawn(lambda: op(x)))


def test_bernoulli_in_place_on_a_transposed_tensor_draws_in_memory_order() -> None:
    if not ATEN_BERNOULLI_DRAWS_DOUBLES:
        pytest.skip("this torch build draws bernoulli through MKL on this CPU")
    x = torch.empty(8, 6).t()
    assert torch.equal(
        _drawn(lambda: _nn.bernoulli_(x.clone(), 0.4)), _drawn(lambda: x.clone().bernoulli_(0.4))
    )
    want = _drawn(lambda: x.bernoulli_(0.4).clone())
    assert torch.equal(_drawn(lambda: _nn.bernoulli_(x, 0.4).clone()), want)
