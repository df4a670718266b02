"""Random rules draw what eager draws, and replay it where torch replays its own draws.

A marked dropout probability (``nn.Dropout``, feature and alpha dropout, ``bernoulli``,
attention dropout in ``F.scaled_dot_product_attention``, ``nn.MultiheadAttention``,
``nn.TransformerEncoderLayer``, timm's and Hugging Face's attention) compiles once across
its values, and the compiled model equals its eager twin bit for bit on ``eager`` and
``aot_eager``: outputs (so the masks), the gradients of inputs and parameters, and the
default generator's state afterwards - also where the backward recomputes the forward
(``torch.utils.checkpoint``, non-reentrant and reentrant, and a selective-checkpoint
policy), which AOTAutograd does by replaying each random op from the generator state it
saved (``docs/how-it-works.md``).

One exception is torch's, not dynscalar's: on the ``eager`` backend, Dynamo runs a
checkpoint region with ``preserve_rng_state=False`` (``tag_activation_checkpoint_impl``,
counting on inductor's own replay), so the recompute draws again, for ATen's dropout as
for dynscalar's rules.  There the marked model equals the unmarked compiled one (stock
torch) bit for bit, and both differ from eager.

Inductor draws what stock inductor draws (``tests/test_random_forms.py``): there the dropout paths
compile once too, ``dropout_p == 0`` is exact, and the random outputs are compared with
eager's by their statistics (``tests/nn_coverage/runner.py``).
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

import dynscalar as ds
from dynscalar.ops import _custom, _kernels

from .attention_patterns import HFAttention, TimmAttention, checkpointed
from .helpers import CountingBackend

P = (0.1, 0.3, 0.5, 0.7)


# ----------------------------------------------------------------------------- harness
class Bernoulli(nn.Module):
    """``h * torch.bernoulli(h, p)``: the mask a gradient needs (``torch.bernoulli.p``)."""

    def __init__(self, p: float) -> None:
        super().__init__()
        self.p = p

    def forward(self, h: Tensor) -> Tensor:
        return h * torch.bernoulli(h.detach(), 1 - self.p)


class Block(nn.Module):
    """A linear layer and a random op with a ``p`` attribute (the op module ``drop``)."""

    def __init__(self, drop: nn.Module, features: int = 8) -> None:
        super().__init__()
        self.lin = nn.Linear(features, features)
        self.drop = drop

    def forward(self, x: Tensor) -> Tensor:
        out: Tensor = self.drop(self.lin(x).abs() + 0.5)
        return out


OPS: dict[str, Callable[[], nn.Module]] = {
    "dropout": lambda: nn.Dropout(0.1),
    "feature_dropout": lambda: nn.Dropout1d(0.1),
    "alpha_dropout": lambda: nn.AlphaDropout(0.1),
    "feature_alpha_dropout": lambda: nn.FeatureAlphaDropout(0.1),
    "bernoulli": lambda: Bernoulli(0.1),
}


def _owner(model: nn.Module, path: str) -> tuple[Any, str]:
    prefix, _, leaf = path.rpartition(".")
    return (model.get_submodule(prefix) if prefix else model), leaf


@dataclass
class Run:
    """One side's results for one value: what eager's must equal."""

    out: Tensor
    grads: list[Tensor]
    rng: Tensor


def _side(fn: Callable[..., Any], model: nn.Module, x: Tensor, seed: int) -> Run:
    for p in model.parameters():
        p.grad = None
    leaf = x.detach().clone().requires_grad_(True)
    torch.manual_seed(seed)
    out = fn(leaf)
    cotangent = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed))
    (out * cotangent).sum().backward()
    grads = [leaf.grad] + [p.grad for p in model.parameters() if p.grad is not None]
    return Run(out.detach(), [g.clone() for g in grads if g is not None], torch.get_rng_state())


def _same(got: Run, want: Run, what: str) -> None:
    assert torch.equal(got.out, want.out), f"{what}: outputs differ"
    assert len(got.grads) == len(want.grads), what
    for i, (a, b) in enumerate(zip(got.grads, want.grads, strict=True)):
        assert torch.equal(a, b), f"{what}: gradient {i} differs"
    assert torch.equal(got.rng, want.rng), f"{what}: the generator's state afterwards differs"


def run_values(
    build: Callable[[], nn.Module],
    attrs: tuple[str, ...],
    values: tuple[float, ...],
    shape: tuple[int, ...],
    backend: str,
    marked: bool = True,
) -> tuple[int, list[Run], list[Run]]:
    """Compile ``build()`` (training mode) with ``attrs`` marked, run it and an eager twin
    on each value with the same seed: (graphs compiled, compiled runs, eager runs)."""
    torch.manual_seed(0)
    model = build().train()
    eager = copy.deepcopy(model)
    if marked:
        for path in attrs:
            owner, leaf = _owner(model, path)
            ds.mark_dynamic_attr(owner, leaf)
    counter = CountingBackend(backend)
    compiled = torch.compile(model, backend=counter)
    got, want = [], []
    for i, value in enumerate(values):
        for path in attrs:
            for m in (model, eager):
                owner, leaf = _owner(m, path)
                setattr(owner, leaf, value)
        x = torch.randn(shape, generator=torch.Generator().manual_seed(100 + i))
        got.append(_side(compiled, model, x, seed=i))
        want.append(_side(eager, eager, x, seed=i))
    return counter.frame_count, got, want


# ----------------------------------------------------------------------------- (a)
REGION_CASES = [
    *[("dropout", region, backend) for region in ("none", "checkpoint", "reentrant", "selective")
      for backend in ("eager", "aot_eager")],
    *[(op, region, "aot_eager") for op in OPS if op != "dropout"
      for region in ("checkpoint", "selective")],
    *[(op, "checkpoint", "eager") for op in OPS if op != "dropout"],
]  # fmt: skip


@pytest.mark.parametrize(("op", "region", "backend"), REGION_CASES)
def test_random_rule_replays_inside_checkpoint_regions(op: str, region: str, backend: str) -> None:
    """One graph for every value; on aot_eager (and wherever no region recomputes) every
    bit of eager's outputs, gradients and generator state."""
    shape = (4, 3, 8) if op.startswith("feature") else (4, 8)

    def build() -> nn.Module:
        return checkpointed(Block(OPS[op]()), region)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graphs, got, want = run_values(build, ("inner.drop.p",), P, shape, backend)
    assert not [w for w in caught if issubclass(w.category, ds.DynscalarWarning)]
    assert graphs == 1
    if backend == "eager" and region != "none":
        # Dynamo's eager backend recomputes the region without restoring the generator
        # (stock torch: ATen's dropout draws again too); the marked model is stock's
        stock_graphs, stock, _ = run_values(build, ("inner.drop.p",), P, shape, backend, False)
        assert stock_graphs == len(P)
        for i, (g, s) in enumerate(zip(got, stock, strict=True)):
            _same(g, s, f"value {P[i]} vs stock")
        assert any(not torch.equal(g.grads[0], w.grads[0]) for g, w in zip(got, want, strict=True))
        return
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        _same(g, w, f"value {P[i]}")


def test_two_equal_draws_in_one_graph_are_not_merged() -> None:
    """AOTAutograd's common-subexpression pass knows random ops by a list: the rule's ops
    are on it, so ``dropout(x, p) , dropout(x, p)`` draws twice, as eager does."""

    class Twice(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(8, 8)
            self.p = 0.5

        def forward(self, x: Tensor) -> Tensor:
            h = self.lin(x)
            a = F.dropout(h, self.p)
            b = F.dropout(h, self.p)
            c = h * torch.bernoulli(h.detach(), self.p)
            d = h * torch.bernoulli(h.detach(), self.p)
            return torch.cat([a, b, c, d])

    graphs, got, want = run_values(Twice, ("p",), (0.3, 0.5), (4, 8), "aot_eager")
    assert graphs == 1
    for g, w in zip(got, want, strict=True):
        _same(g, w, "twice")
        a, b = g.out[:4], g.out[4:8]
        assert not torch.equal(a, b)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_an_unused_draw_moves_the_generator_as_stock_does(backend: str) -> None:
    """A draw whose result is unused: the rule's ops are impure like ATen's (tagged), so
    the generator afterwards is where the unmarked compiled function leaves it (on the
    eager backend where eager does; AOTAutograd deletes such a draw, ATen's too)."""

    def f(x: Tensor, p: float) -> Tensor:
        F.dropout(x, p)
        torch.bernoulli(x, p)
        return x * 2

    def states(marked: bool) -> list[Tensor]:
        torch._dynamo.reset()
        counter = CountingBackend(backend)
        compiled = torch.compile(f, backend=counter)
        if marked:
            ds.mark_dynamic_args(compiled, "p")
        try:
            out = []
            for i, p in enumerate((0.2, 0.4)):
                torch.manual_seed(i)
                compiled(torch.rand(4, 8, requires_grad=True), p).sum().backward()
                out.append(torch.get_rng_state())
        finally:
            if marked:
                ds.unmark_dynamic_args(compiled, "p")
        # stock: one graph per value; on aot_eager the first one twice (a restart of
        # torch's float-tensorify pass)
        assert counter.frame_count == (1 if marked else {"eager": 2, "aot_eager": 3}[backend])
        return out

    stock, marked = states(False), states(True)
    assert all(torch.equal(a, b) for a, b in zip(marked, stock, strict=True))
    if backend == "eager":
        torch.manual_seed(1)
        f(torch.rand(4, 8), 0.4)
        assert torch.equal(marked[1], torch.get_rng_state())


def test_random_custom_ops_are_tagged_and_never_merged() -> None:
    """What torch's replay and passes read: the tag on every op that draws, and torch's
    list of random ops for the common-subexpression pass."""
    from torch._functorch.compile_utils import rand_ops

    _kernels.prepare()
    seeded = torch.Tag.nondeterministic_seeded
    random = {p._qualified_op_name for p in _custom.random_ops()}
    assert random >= {
        "dynscalar::dropout_noise",
        "dynscalar::bernoulli_like",
        "dynscalar::bernoulli_p",
        "dynscalar::scaled_dot_product_attention",
    }
    for packet in _custom.random_ops():
        assert seeded in packet.default.tags
        assert any(packet is listed for listed in rand_ops)
    assert seeded not in torch.ops.dynscalar.scaled_dot_product_attention_vjp.default.tags


# ----------------------------------------------------------------------------- (b)
class SDPA(nn.Module):
    """``F.scaled_dot_product_attention`` with ``dropout_p`` an attribute."""

    def __init__(self, causal: bool = False, masked: bool = False) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 24)
        self.dropout_p = 0.1
        self.causal = causal
        self.masked = masked

    def forward(self, x: Tensor) -> Tensor:
        q, k, v = self.proj(x).view(2, 5, 3, 2, 4).permute(2, 0, 3, 1, 4).unbind(0)
        mask = torch.ones(5, 5, dtype=torch.bool).tril() if self.masked else None
        return F.scaled_dot_product_attention(
            q, k, v, mask, dropout_p=self.dropout_p, is_causal=self.causal
        )


SDPA_VALUES = (0.1, 0.3, 0.0, 0.5, 0.2)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("region", ["none", "checkpoint", "selective"])
def test_sdpa_dropout_is_dynamic_and_exact(backend: str, region: str) -> None:
    """One graph for every ``dropout_p``, 0 included (ATen picks its path at run time);
    the gradient recomputes the op from the generator state its forward started from."""

    def build() -> nn.Module:
        return checkpointed(SDPA(), region)

    graphs, got, want = run_values(build, ("inner.dropout_p",), SDPA_VALUES, (2, 5, 8), backend)
    assert graphs == 1
    if backend == "eager" and region != "none":
        stock_graphs, stock, _ = run_values(
            build, ("inner.dropout_p",), SDPA_VALUES, (2, 5, 8), backend, False
        )
        assert stock_graphs >= len(SDPA_VALUES)
        for g, s in zip(got, stock, strict=True):
            _same(g, s, "vs stock")
        return
    for value, g, w in zip(SDPA_VALUES, got, want, strict=True):
        _same(g, w, f"dropout_p={value}")


@pytest.mark.parametrize(("causal", "masked"), [(True, False), (False, True)])
def test_sdpa_dropout_with_masks(causal: bool, masked: bool) -> None:
    graphs, got, want = run_values(
        lambda: SDPA(causal, masked), ("dropout_p",), SDPA_VALUES, (2, 5, 8), "aot_eager"
    )
    assert graphs == 1
    for g, w in zip(got, want, strict=True):
        _same(g, w, f"causal={causal} masked={masked}")


# ----------------------------------------------------------------------------- (c)
TRANSFORMER = ("self_attn.dropout", "dropout.p", "dropout1.p", "dropout2.p")


class MHA(nn.Module):
    """``nn.MultiheadAttention`` self-attention (``need_weights``: its explicit softmax and
    ``F.dropout``; without: ``scaled_dot_product_attention``)."""

    def __init__(self, need_weights: bool) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(8, 2, dropout=0.1, batch_first=True)
        self.need_weights = need_weights

    def forward(self, x: Tensor) -> Tensor:
        out, _ = self.attn(x, x, x, need_weights=self.need_weights)
        return out


LIBRARY_CASES: dict[str, tuple[Callable[[], nn.Module], tuple[str, ...]]] = {
    "mha-weights": (lambda: MHA(True), ("attn.dropout",)),
    "mha-sdpa": (lambda: MHA(False), ("attn.dropout",)),
    "transformer-encoder-layer": (
        lambda: nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.1, batch_first=True),
        TRANSFORMER,
    ),
    "timm-fused": (lambda: TimmAttention(attn_drop=0.1), ("attn_drop.p",)),
    "timm-explicit": (lambda: TimmAttention(attn_drop=0.1, fused=False), ("attn_drop.p",)),
    "hf-sdpa": (lambda: HFAttention(attention_dropout=0.1), ("attention_dropout",)),
}
LIBRARY_VALUES = (0.1, 0.2, 0.3, 0.5)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("case", sorted(LIBRARY_CASES))
def test_attention_dropout_of_libraries_compiles_once_and_equals_eager(
    case: str, backend: str
) -> None:
    build, attrs = LIBRARY_CASES[case]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graphs, got, want = run_values(build, attrs, LIBRARY_VALUES, (3, 5, 8), backend)
    assert not [w for w in caught if issubclass(w.category, ds.DynscalarWarning)]
    assert graphs == 1
    for value, g, w in zip(LIBRARY_VALUES, got, want, strict=True):
        _same(g, w, f"{case} p={value}")


def test_hf_attention_checkpointed_as_gradient_checkpointing_does() -> None:
    """transformers' ``gradient_checkpointing`` wraps each layer in a non-reentrant
    checkpoint: the attention dropout's draws are replayed in the recompute."""
    graphs, got, want = run_values(
        lambda: checkpointed(HFAttention(attention_dropout=0.1), "checkpoint"),
        ("inner.attention_dropout",),
        LIBRARY_VALUES,
        (3, 5, 8),
        "aot_eager",
    )
    assert graphs == 1
    for g, w in zip(got, want, strict=True):
        _same(g, w, "checkpointed HF attention")


# ----------------------------------------------------------------------------- inductor
INDUCTOR_CASES: dict[str, tuple[Callable[[], nn.Module], tuple[str, ...]]] = {
    "hf-sdpa": LIBRARY_CASES["hf-sdpa"],
    "timm-fused": LIBRARY_CASES["timm-fused"],
}


@pytest.mark.inductor
def test_attention_dropout_on_inductor_compiles_once_per_path() -> None:
    """Inductor: the training values share one graph (the math fallback with the value an
    operand of dropout, inductor's own draws); in eval mode Hugging Face passes 0.0, one
    more graph, equal to eager bit for bit (stock inductor's graph: ATen's own op)."""
    torch.manual_seed(0)
    model = HFAttention(attention_dropout=0.1).train()
    eager = copy.deepcopy(model)
    ds.mark_dynamic_attr(model, "attention_dropout")
    counter = CountingBackend("inductor")
    compiled = torch.compile(model, backend=counter)
    x = torch.randn(3, 5, 8)
    for p in LIBRARY_VALUES:
        model.attention_dropout = eager.attention_dropout = p
        out = compiled(x)
        assert out.shape == (3, 5, 8) and bool(out.isfinite().all())
    assert counter.frame_count == 1
    model.eval()
    eager.eval()
    assert torch.equal(compiled(x), eager(x))
    assert counter.frame_count == 2


@pytest.mark.broad
@pytest.mark.inductor
@pytest.mark.parametrize("case", sorted(INDUCTOR_CASES))
def test_attention_dropout_on_inductor_matches_eager_statistics(case: str) -> None:
    """Inductor: the training values share one graph (attention dropout is the math
    fallback with the value an operand); its draws are inductor's own, as stock's are, so
    per-element means of outputs and gradients over many calls are compared with eager's
    (``tests/nn_coverage/runner.py``); in eval mode the module passes 0.0 and equals eager."""
    from tests.nn_coverage import runner
    from tests.nn_coverage.catalogue import Row

    build, attrs = INDUCTOR_CASES[case]
    row = Row(
        case,
        case,
        attrs,
        LIBRARY_VALUES,
        build,
        lambda g: (torch.randn(3, 5, 8, generator=g),),
        train=True,
        kind="mean",
    )
    result = runner.run_row(row, "inductor", calls=100)
    assert result.error is None, result.error
    assert result.failures == [], result.failures
    assert result.warnings == []
    assert result.per_call == [1, 1, 1, 1]
    eval_row = Row(case, case, attrs, LIBRARY_VALUES, build, row.inputs)
    result = runner.run_row(eval_row, "inductor")
    assert result.error is None and result.failures == [], (result.error, result.failures)
    assert result.per_call == [1, 1, 1, 1]
